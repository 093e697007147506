"""The README's steps for adding a chapter, followed for a toy chapter in a copy of the repository: declared,
written, listed by ``contents --write``, executed at ``smoke`` by the project's runner, and built into a page
(the intro, the prologue whose verdict rule the intro cites, the toy chapter and the scorecard; warnings as
errors). About a minute: the slow tier."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import REPO

BIN = Path(sys.executable).parent

DECLARATION = """\
title = "Toy chapter"
order = 7
write_up = "none: a chapter added by the README's steps"
claims = "nothing; it lists the book's chapters"
summary = "a toy chapter, added by the README's steps in a test"
notebooks = ["01_toy"]
# the modules of lmcompanion.experiments that register its runs: none, it trains nothing
experiments = []
"""

NOTEBOOK = """\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The book's chapters
#
# A toy page: it reads nothing trained, and lists the chapters as they declare themselves.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper

# %%
import pandas as pd

from lmcompanion.chapters import toy

pd.DataFrame(toy.analysis.chapters(), columns=["order", "name", "title"])
"""

# Step 4: the chapter's shape. It trains nothing, so it decides no row; its one ledger claim says why it is untested.
PACKAGE = {
    "rows.py": '"""The toy chapter\'s rows as data: none (it trains nothing)."""\n\nSPECS: list = []\n',
    "claims.py": '"""The toy chapter\'s ledger."""\n\nfrom ...ledger import Claim\n\n'
    'CLAIMS = [Claim("toy", "a chapter lists the book\'s chapters", "Toy", reason="a toy: nothing to test")]\n',
    "analysis.py": '"""The toy chapter\'s analyses."""\n\nfrom ... import contents\n\n\n'
    "def chapters() -> list[tuple[int, str, str]]:\n"
    "    return [(c.order, c.name, c.title) for c in contents.chapters()]\n",
    "__init__.py": '"""The toy chapter."""\n\nfrom ...claims import register as register_rows\n'
    "from ...ledger import register\nfrom . import analysis\nfrom .claims import CLAIMS\nfrom .rows import SPECS\n\n"
    'ROWS = register_rows("toy", SPECS)\nregister("toy", CLAIMS)\n\n'
    '__all__ = ["CLAIMS", "ROWS", "analysis"]\n',
}

LANDING = "# Toy chapter\n\nA chapter added by following the README's steps. Its one page lists the book's chapters.\n"

# The build: the intro, the prologue (the intro cites its verdict rule), the toy chapter, the generated pages.
TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: Prologue
    chapters:
      - file: book/prologue/index
        sections:
          - file: notebooks/prologue/baseline
  - caption: Toy chapter
    chapters:
      - file: book/toy/index
        sections:
          - file: notebooks/toy/01_toy
  - caption: Scorecard
    chapters:
      - file: book/generated/scorecard
      - file: book/generated/claims
      - file: book/generated/build
"""


def _copy_of_the_repository(to: Path) -> Path:
    """The repository's tracked files, as a fresh clone has them."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (REPO / rel).is_file():
            (to / rel).parent.mkdir(parents=True, exist_ok=True)
            (to / rel).write_bytes((REPO / rel).read_bytes())
    return to


def _readme_steps() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("## Adding a chapter", 1)[1].split("\n## ", 1)[0]


def _run(args: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{shlex.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_a_chapter_added_by_the_readme_s_steps_builds_its_page(tmp_path):
    steps = _readme_steps()
    for said in (
        "src/lmcompanion/chapters/<name>/chapter.toml",
        "notebooks/<name>/<notebook>.py",
        "book/<name>/index.md",
        "python -m lmcompanion contents --write",
        "make test",
    ):
        assert said in steps, f"the README's steps no longer say {said!r}"
    repo = _copy_of_the_repository(tmp_path / "repo")
    env = {
        **os.environ,
        "PYTHONPATH": str(repo / "src"),
        "OMP_NUM_THREADS": "1",
        "LMC_PROGRESS": "0",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    python = [sys.executable, "-m", "lmcompanion"]

    # steps 1, 4, 5 and 6: the declaration, the chapter's package, the notebook, the landing page
    (repo / "src/lmcompanion/chapters/toy").mkdir()
    (repo / "src/lmcompanion/chapters/toy/chapter.toml").write_text(DECLARATION, encoding="utf-8")
    for name, text in PACKAGE.items():  # step 4
        (repo / "src/lmcompanion/chapters/toy" / name).write_text(text, encoding="utf-8")
    (repo / "notebooks/toy").mkdir()
    (repo / "notebooks/toy/01_toy.py").write_text(NOTEBOOK, encoding="utf-8")
    (repo / "book/toy").mkdir()
    (repo / "book/toy/index.md").write_text(LANDING, encoding="utf-8")

    # step 5's command, as the README gives it, for this notebook: the smoke reference, by the project's runner
    command = re.search(r"python -m lmcompanion run-notebook .*?\.ipynb", steps.replace("\\\n", " "), re.S).group(0)
    command = command.replace("<name>", "toy").replace("<notebook>", "01_toy")
    (repo / "tests/nbval/toy").mkdir()
    _run([sys.executable, *shlex.split(command)[1:]], repo, env)
    reference = repo / "tests/nbval/toy/01_toy.ipynb"
    assert "Toy chapter" in reference.read_text(encoding="utf-8")  # the kernel imported the copy's package

    # step 7: the table of contents and the chapter tables, written from the declarations
    assert "rewrote" in _run([*python, "contents", "--write"], repo, env)
    _run([*python, "contents"], repo, env)  # and they agree now
    toc = (repo / "_toc.yml").read_text(encoding="utf-8")
    assert "file: book/toy/index" in toc and "file: notebooks/toy/01_toy" in toc
    assert toc.index("book/hourglass/index") < toc.index("book/toy/index") < toc.index("Scorecard")
    assert "| Toy chapter | none: a chapter added by the README's steps |" in (repo / "book/intro.md").read_text()
    assert "| Toy chapter | a toy chapter, added by the README's steps in a test | `notebooks/toy/` |" in (
        repo / "README.md"
    ).read_text(encoding="utf-8")

    # the declaration checks: one shape, nothing declared twice, the book's files agree
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_contents.py"], repo, env)

    # the book, restricted to the intro, the prologue and the toy chapter, built from the smoke executions as
    # `make smoke-book` builds it
    for rel in ("toy/01_toy.ipynb", "prologue/baseline.ipynb"):
        (repo / "notebooks" / rel).write_bytes((repo / "tests/nbval" / rel).read_bytes())
    _run([*python, "pages", "notebooks", "book/generated", "--sources", "notebooks"], repo, env)
    with tarfile.open(repo / "book/generated/lmcompanion-source.tar.gz", "w:gz") as tar:
        tar.add(repo / "src/lmcompanion/chapters/toy", arcname="src/lmcompanion/chapters/toy")
    (repo / "_toc_toy.yml").write_text(TOC, encoding="utf-8")
    _run(
        [
            str(BIN / "jupyter-book"),
            "build",
            ".",
            "--toc",
            "_toc_toy.yml",
            "-W",
            "-n",
            "--keep-going",
            "--path-output",
            str(tmp_path / "out"),
        ],
        repo,
        env,
    )
    html = tmp_path / "out/_build/html"
    page = (html / "notebooks/toy/01_toy.html").read_text(encoding="utf-8")
    assert "The book’s chapters" in page or "The book's chapters" in page
    assert "Toy chapter" in page and "hourglass" in page  # the table the notebook printed
    assert (html / "book/toy/index.html").is_file()
    assert "Toy chapter" in (html / "book/intro.html").read_text(encoding="utf-8")
