"""The committed nbval references (tests/nbval) must be executions of the current notebook sources."""

import ast

import nbformat
import pytest

from lmcompanion.runner import code_of, parameters_of, read_source

from conftest import REPO

SOURCES = sorted((REPO / "notebooks").rglob("*.py"))
REQUIRED = {"profile", "device", "seed"}


def test_there_are_notebooks():
    assert SOURCES


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_reference_is_an_up_to_date_smoke_execution(src):
    ref = REPO / "tests" / "nbval" / src.relative_to(REPO / "notebooks").with_suffix(".ipynb")
    assert ref.exists(), f"no nbval reference for {src.name}: run `make references`"
    executed = nbformat.read(ref, as_version=4)
    source = read_source(src)
    assert code_of(executed) == code_of(source), f"{ref} is stale: the source changed; run `make references`"
    md = [c.source for c in executed.cells if c.cell_type == "markdown"]
    assert md == [c.source for c in source.cells if c.cell_type == "markdown"], f"{ref} is stale: run `make references`"

    def ignored(nb):  # the code of the cells whose outputs nbval ignores (timings, provenance)
        return [c.source for c in nb.cells if "nbval-ignore-output" in c.metadata.get("tags", [])]

    assert ignored(executed) == ignored(source), f"{ref} is stale: its cell tags differ; run `make references`"
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    values = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(injected[0].source).body}
    assert values.get("profile") == "smoke", f"{ref} was not executed at the smoke profile"
    unexecuted = [i for i, c in enumerate(executed.cells) if c.cell_type == "code" and c.get("execution_count") is None]
    assert not unexecuted, f"{ref}: cells {unexecuted} were never executed; run `make references`"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_notebook_has_the_standard_parameters(src):
    params = parameters_of(read_source(src))
    assert REQUIRED <= set(params), f"{src.name} lacks parameters {REQUIRED - set(params)}"
    assert params["profile"] == "cpu", "the book's default profile is cpu"


def test_no_compared_cell_of_a_reference_shows_what_the_machine_s_clock_decided():
    """A row decided by time measured on the machine that executes the page (a side-by-side timing, or runs read at
    equal wall-clock time) reads differently on another machine: it belongs in a cell nbval does not compare
    (``nbval-ignore-output``), as the pages' "measured on this machine" tables are. Checked over every reference, so
    that a new page cannot put one in a compared cell (mixer/03_scaling once did, and failed on another machine)."""
    import json

    refs = sorted((REPO / "tests" / "nbval").glob("*/*.ipynb"))
    assert refs
    wrong, seen = [], 0
    for path in refs:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            outputs = [o for o in cell.get("outputs", []) if not o.get("metadata", {}).get("scrapbook")]
            text = "".join(json.dumps(o.get("data", {})) + str(o.get("text", "")) for o in outputs)
            if "measured on this machine" in text or "timed side by side" in text:
                seen += 1
                if "nbval-ignore-output" not in cell.metadata.get("tags", []):
                    wrong.append(f"{path.relative_to(REPO)} cell {i}")
    assert seen, "no reference shows a row decided by the clock: the test cannot fail"
    assert not wrong, f"compared cells showing rows decided by this machine's clock: {wrong}"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_figure_cell_never_reads_a_page_s_first_arms(src):
    """A page's first ``S.arms`` call may show a note (the illustrations' protocol, at cpu only, so the smoke
    references cannot show it); in a figure's cell that second output would give the figure's name twice, which
    stops the book's build (`-W`). So a figure's cell calls ``S.arms`` only after an earlier cell did."""
    read = False
    for cell in read_source(src).cells:
        if cell.cell_type != "code":
            continue
        figure = "figure" in cell.metadata.get("mystnb", {})
        calls = "S.arms(" in cell.source
        assert not (figure and calls and not read), f"{src.name}: a figure's cell reads the page's first arms"
        read = read or calls
