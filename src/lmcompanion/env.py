"""Provenance: the environment a run used, and a fingerprint of the code that produced it."""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import importlib.util
import os
import platform
import subprocess

import torch

from . import __version__, paths


def git_state() -> dict:
    """Commit of the source checkout and whether it had uncommitted changes (None outside git)."""
    root = paths.repo_root()
    if root is None:
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: str, world: int = 1) -> dict:
    """What a run ran on: versions, hardware, commit, time."""
    info = {
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "lmcompanion": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "world_size": world,
        **git_state(),
    }
    if device == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
        info["cuda"] = torch.version.cuda
    return info


def _spec(name: str):
    """The import spec of a module name, or None for names that are not modules (e.g. a class)."""
    try:
        return importlib.util.find_spec(name)
    except (ModuleNotFoundError, ValueError):
        return None


def _tree(module: str) -> ast.Module | None:
    spec = _spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    with open(spec.origin, encoding="utf-8") as f:
        return ast.parse(f.read())


def project_imports(module: str, seen: set[str] | None = None) -> set[str]:
    """``module`` and every lmcompanion module it imports, transitively (a model that imports another's
    building blocks is fingerprinted with them)."""
    seen = set() if seen is None else seen
    if module in seen:
        return seen
    seen.add(module)
    tree = _tree(module)
    if tree is None:
        return seen
    package = module if _spec(module).submodule_search_locations else module.rpartition(".")[0]
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith("lmcompanion") and _spec(name) is not None:
                project_imports(name, seen)
    return seen


def _normalized_source(module: str) -> str:
    """The module's code with comments, docstrings and formatting removed (so prose edits keep runs valid)."""
    tree = _tree(module)
    if tree is None:
        return ""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


# Modules whose behaviour changes what any run computes.
COMMON_MODULES = (
    "lmcompanion.config",
    "lmcompanion.data.corpora",
    "lmcompanion.data.synthetic",
    "lmcompanion.data.tokenizers",
    "lmcompanion.data.lm",
    "lmcompanion.models.base",
    "lmcompanion.models.layers",
    "lmcompanion.train.trainer",
    "lmcompanion.train.schedules",
)


def code_fingerprint(*modules: str) -> str:
    """Digest of the normalized code of the common modules plus ``modules`` (a model family's file, ...) and
    of the project modules they import."""
    names: set[str] = set(COMMON_MODULES)
    for module in modules:
        project_imports(module, names)
    names = {n for n in names if _tree(n) is not None and not n.startswith("lmcompanion.experiments")}
    h = hashlib.sha256()
    for name in sorted(names):
        h.update(name.encode())
        h.update(_normalized_source(name).encode())
    return h.hexdigest()[:12]
