"""requirements/lock.txt must agree with pyproject.toml and the Makefile (checked offline by tests/lock.py)."""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import lock  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def test_the_lock_agrees_with_pyproject_and_the_makefile():
    assert lock.problems() == [], "\n".join(lock.problems())


def test_the_lock_pins_every_package_once_with_hashes_and_no_cuda():
    pins = lock.read_lock().pins
    assert len(pins) > 50 and all(p.version and p.hashes for p in pins.values())
    assert not [n for n in pins if lock.TORCH_ONLY.match(n)]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "file, old, new, message",
    [
        (
            "pyproject.toml",
            '"bm25s>=0.2",',
            '"bm25s>=0.2", "rich>=13",',
            "rich is declared in pyproject.toml but not in the lock",
        ),
        ("pyproject.toml", '"bm25s>=0.2",', "", "takes bm25s from pyproject.toml, which no longer declares it"),
        ("pyproject.toml", '"pandas>=2.1"', '"pandas>=2.1,<3"', "outside pyproject.toml's pandas"),
        ("pyproject.toml", '"pytest>=8",', '"pytest>=8", "pytest-timeout",', "pytest-timeout is declared"),
        ("pyproject.toml", 'requires-python = ">=3.11,<3.12"', 'requires-python = ">=3.12"', "requires-python"),
        ("Makefile", "TORCH ?= torch==2.13.0", "TORCH ?= torch==2.14.1", "the Makefile installs TORCH=torch==2.14.1"),
        (
            "requirements/lock.txt",
            "nbformat==",
            "# nbformat==",
            "nbformat is declared in pyproject.toml but not in the lock",
        ),
    ],
)
def test_the_check_names_a_disagreement(tmp_path, file, old, new, message):
    for name in ("pyproject.toml", "Makefile", "requirements/lock.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    _edit(tmp_path / file, old, new)
    found = lock.problems(tmp_path / "requirements/lock.txt", tmp_path / "pyproject.toml", tmp_path / "Makefile")
    assert any(message in p for p in found), found
    assert all("make lock" in p or "pinned" in p or "hash" in p for p in found)


def test_environment_yml_installs_the_lock_for_its_python():
    text = (REPO / "environment.yml").read_text()
    pip_lines = [line.strip()[2:] for line in text.split("  - pip:\n", 1)[1].splitlines() if line.strip()]
    assert pip_lines == ["-r requirements/lock.txt"]  # torch and the package: `make ... VENV=$CONDA_PREFIX`
    assert f"  - python={lock.makefile_var(REPO / 'Makefile', 'LOCK_PYTHON')}\n" in text
