"""The code a run executes, and a digest of it.

A run executes its training procedure (the shared trainer, or a chapter's own procedure), its model family and its
data kind. :func:`closure` starts from those modules and follows every ``lmcompanion`` import, transitively, so the
seeding, checkpoint and distributed code the trainer imports are part of every trainer run, and a table or verdict
function is part of none. The registries (``lmcompanion.models``, ``lmcompanion.data``: name -> module tables) are
neither fingerprinted nor followed: the run names its resolved family and data modules directly, so registering a
new family does not invalidate the runs of the others.

:func:`digest` hashes the normalized source of those modules: comments, docstrings and formatting are dropped
(via the AST), so editing prose keeps cached runs valid while any change to code invalidates them. The digest is the
same on every Python from 3.11 on (the pack made here is checked on a GPU machine's Python).

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
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return _dump(tree)


def _dump(node) -> str:
    """The tree as text, the same on every Python that parses it to the same tree. ``ast.dump`` is not: 3.12 writes
    the new empty ``type_params=[]`` of every function and class, and 3.13 leaves every empty or None field out, so
    a digest of it changed the run keys from one Python to the next (a pack made on 3.11 was refused on a GPU
    machine's 3.12). Here empty and None fields are always left out: a field a newer Python adds, empty in code
    that does not use it, changes nothing. An f-string's literal parts are joined and empty ones dropped (3.12 ends
    a nested format spec with an empty one; 3.11 does not)."""
    if isinstance(node, ast.JoinedStr):
        parts: list = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                if parts and isinstance(parts[-1], str):
                    parts[-1] += v.value
                elif v.value:
                    parts.append(v.value)
            else:
                parts.append(v)
        return f"JoinedStr([{', '.join(repr(p) if isinstance(p, str) else _dump(p) for p in parts)}])"
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            fields.append(f"{name}={_dump(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return f"[{', '.join(_dump(v) for v in node)}]"
    return repr(node)


def digest(modules) -> str:
    """A short digest of the normalized code of ``modules``."""
    h = hashlib.sha256()
    for name in sorted(modules):
        h.update(name.encode())
        h.update(_normalized(name).encode())
    return h.hexdigest()[:12]


__all__ = ["REGISTRIES", "closure", "digest", "imports_of"]
