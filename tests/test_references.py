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
