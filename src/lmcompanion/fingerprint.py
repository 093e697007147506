"""The code a run executes, and a digest of it.

A run executes its training procedure (the shared trainer, or a chapter's own procedure), its model family and its
data kind. :func:`closure` starts from those modules and follows every ``lmcompanion`` import, transitively, so the
seeding, checkpoint and distributed code the trainer imports are part of every trainer run, and a table or verdict
function is part of none. The registries (``lmcompanion.models``, ``lmcompanion.data``: name -> module tables) are
neither fingerprinted nor followed: the run names its resolved family and data modules directly, so registering a
new family does not invalidate the runs of the others.

:func:`digest` hashes the normalized source of those modules: comments, docstrings and formatting are dropped
(via the AST), so editing prose keeps cached runs valid while any change to code invalidates them.

``tests/test_fingerprint.py`` checks the static closure against the modules whose functions actually run during a
training run (traced with ``sys.setprofile``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util

PACKAGE = "lmcompanion"
REGISTRIES = frozenset({"lmcompanion", "lmcompanion.models", "lmcompanion.data"})


@functools.lru_cache(maxsize=2048)
def _spec(name: str):
    """The import spec of a module name, or None for names that are not modules (e.g. a class)."""
    try:
        return importlib.util.find_spec(name)
    except (ModuleNotFoundError, ValueError):
        return None


@functools.lru_cache(maxsize=512)
def _source(module: str) -> str | None:
    spec = _spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    with open(spec.origin, encoding="utf-8") as f:
        return f.read()


def imports_of(module: str) -> set[str]:
    """The ``lmcompanion`` modules that ``module`` imports (anywhere in its body)."""
    source = _source(module)
    if source is None:
        return set()
    return set(_imports_in(module, source))


@functools.lru_cache(maxsize=512)
def _imports_in(module: str, source: str) -> frozenset[str]:
    """imports_of, cached by the module's name and its source text (so a changed source is parsed again)."""
    is_package = bool(_spec(module).submodule_search_locations)
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            # `from X import y`: the module X.y when y is a submodule, else X itself (y is defined in X)
            names = [f"{base}.{a.name}" if _spec(f"{base}.{a.name}") is not None else base for a in node.names]
        found.update(n for n in names if n.split(".")[0] == PACKAGE and _spec(n) is not None)
    return frozenset(found)


def closure(*roots: str) -> tuple[str, ...]:
    """``roots`` and every ``lmcompanion`` module they import, transitively; registries excluded (see above)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen or module in REGISTRIES:
            continue
        seen.add(module)
        todo.extend(imports_of(module))
    return tuple(sorted(m for m in seen if _source(m) is not None))


def _normalized(module: str) -> str:
    """The module's code with comments, docstrings and formatting removed."""
    return _normalized_source(_source(module) or "")


@functools.lru_cache(maxsize=512)
def _normalized_source(source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def digest(modules) -> str:
    """A short digest of the normalized code of ``modules``."""
    h = hashlib.sha256()
    for name in sorted(modules):
        h.update(name.encode())
        h.update(_normalized(name).encode())
    return h.hexdigest()[:12]


__all__ = ["REGISTRIES", "closure", "digest", "imports_of"]
