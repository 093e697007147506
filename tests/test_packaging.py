"""The package's metadata is true: every import declared and nothing declared unused, each extra sufficient for what
it is for, the version written once, the license file present, the manual's counts right."""

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import lmcompanion

REPO = Path(__file__).resolve().parents[1]
META = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = META["project"]

# Import names whose distribution is named otherwise (the rest: the import name, canonicalized).
DISTRIBUTION = {
    "huggingface_hub": "huggingface-hub",
    "tiktoken_ext": "tiktoken",
    "myst_nb": "myst-nb",
    "yaml": "pyyaml",
    "PIL": "pillow",
    "sklearn": "scikit-learn",
    "markdown_it": "markdown-it-py",
}
# Declared but never imported by the package, each for a reason this test checks in the file that relies on it.
USED_ELSEWHERE = {
    "ipykernel": ("src/lmcompanion/runner.py", 'KERNEL = "python3"'),  # the kernel papermill and nbval start
    "ipywidgets": ("src/lmcompanion/train/trainer.py", "tqdm.auto"),  # tqdm's notebook progress bars
    "jupyter-book": ("Makefile", "jupyter-book build"),
    "sphinx-mathjax-offline": ("_config.yml", "sphinx-mathjax-offline"),
    "linkify-it-py": ("_config.yml", "linkify"),  # MyST's linkify extension imports linkify_it
    "nbval": ("Makefile", "--nbval"),
    "pytest": ("Makefile", "pytest"),
    "pytest-xdist": ("Makefile", "--numprocesses"),  # make unit and make nbval on every core
    "ruff": ("Makefile", "ruff check"),  # make lint: the formatter and the linter
}


def _requirements(names) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in names}


CORE = _requirements(PROJECT["dependencies"])
EXTRAS = {extra: _requirements(reqs) for extra, reqs in PROJECT["optional-dependencies"].items()}


def _imports(paths, module_level_only=False) -> dict[str, set[str]]:
    """Third-party distribution -> the files that import it (absolute imports, not the stdlib, not the package)."""
    out: dict[str, set[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text())
        nodes = tree.body if module_level_only else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("lmcompanion", "__future__") or top in LOCAL:
                    continue
                dist = canonicalize_name(DISTRIBUTION.get(top, top))
                out.setdefault(dist, set()).add(str(path.relative_to(REPO)))
    return out


LOCAL = {p.stem for p in (REPO / "tests").glob("*.py")}  # the tests' own helper modules (conftest, regression, lock)
PACKAGE = sorted((REPO / "src" / "lmcompanion").rglob("*.py"))


def test_every_import_of_the_package_is_declared():
    declared = CORE.union(*EXTRAS.values())
    missing = {d: sorted(f) for d, f in _imports(PACKAGE).items() if d not in declared}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_module_level_imports_need_only_the_core_dependencies():
    """An extra's module is imported inside the function that needs it, so the CLI works with the core alone."""
    outside = {d: sorted(f) for d, f in _imports(PACKAGE, module_level_only=True).items() if d not in CORE}
    assert not outside, f"imported at module level but not a core dependency: {outside}"


def test_nothing_is_declared_that_nothing_uses():
    imported = set(_imports(PACKAGE)) | set(_imports(sorted((REPO / "tests").glob("*.py"))))
    for dist, (file, needle) in USED_ELSEWHERE.items():
        assert needle in (REPO / file).read_text(), f"{dist} is declared for {file}, which no longer uses it"
    unused = sorted(CORE.union(*EXTRAS.values()) - imported - set(USED_ELSEWHERE))
    assert not unused, f"declared in pyproject.toml but never imported: {unused}"


PAGE_CHECK = REPO / "tests" / "page_check.py"  # make page-check: its own extra, not part of make test


def test_the_test_extra_runs_the_tests_without_the_book_extra():
    """Unit tests and nbval need the core, the test extra and nothing from the book extra alone."""
    files = sorted(set((REPO / "tests").glob("*.py")) - {PAGE_CHECK}) + sorted((REPO / "notebooks").rglob("*.py"))
    needed = _imports(files)
    need_extra = {d: sorted(f)[:3] for d, f in needed.items() if d not in CORE | EXTRAS["test"]}
    assert not need_extra, f"imported by the tests or notebooks, not in the core or the test extra: {need_extra}"
    # running notebooks (test_runner, nbval): jupytext reads them, papermill runs them on ipykernel; the verdict
    # notebooks glue their tables with myst_nb; without ipywidgets tqdm.auto warns on stderr, which nbval compares
    assert {"jupytext", "papermill", "ipykernel", "ipywidgets", "myst-nb", "nbval", "pytest"} <= EXTRAS["test"]


def test_the_page_check_needs_only_its_extra_and_the_core():
    needed = _imports([PAGE_CHECK])
    assert set(needed) <= CORE | EXTRAS["page-check"], needed
    assert "selenium" in needed and "selenium" in EXTRAS["page-check"]
    assert "page-check" in (REPO / "Makefile").read_text()


def test_the_version_is_written_once():
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    assert META["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lmcompanion.__version__"}
    citation = (REPO / "CITATION.cff").read_text()
    assert re.search(r'^version: "?([^"\n]+)"?$', citation, re.M).group(1) == lmcompanion.__version__


def test_the_license_the_metadata_names_is_there():
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert re.search(r"^license: MIT$", (REPO / "CITATION.cff").read_text(), re.M)


def test_the_manual_counts_the_smoke_notebooks():
    """The README and docs/ (the manual) say how many smoke notebooks there are, and say it right."""
    count = len(list((REPO / "tests" / "nbval").rglob("*.ipynb")))
    assert count == len(list((REPO / "notebooks").rglob("*.py")))
    manual = "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
    said = re.findall(r"(\d+\+?) smoke(?:-profile)? notebooks|all (\d+) in", manual)
    assert said, "neither the README nor docs/ says how many smoke notebooks there are"
    assert all(n == str(count) for pair in said for n in pair if n), (said, count)


@pytest.mark.parametrize("python", ["3.11"])
def test_requires_python_is_what_was_tried(python):
    """docs/setup.md says which Pythons were tried; requires-python admits those and no others."""
    spec = Requirement(f"python{PROJECT['requires-python']}").specifier
    assert spec.contains(f"{python}.0") and not spec.contains("3.12.0") and not spec.contains("3.10.0")
