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


def _normalized_source(module: str) -> str:
    """The module's code with comments, docstrings and formatting removed (so prose edits keep runs valid)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
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
    """Digest of the normalized code of the common modules plus ``modules`` (a model family's file, ...)."""
    h = hashlib.sha256()
    for name in sorted(set(COMMON_MODULES) | set(modules)):
        h.update(name.encode())
        h.update(_normalized_source(name).encode())
    return h.hexdigest()[:12]
