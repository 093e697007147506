"""Run by `make nbval` after nbval re-executed the smoke notebooks: the runs they trained, in the store named by
$LMC_REGRESSION_RUNS, must match tests/nbval/runs.json within the tolerance of tests/regression.py."""

import json
import os
from pathlib import Path

import pytest

from regression import ATOL, RTOL, compare, snapshot

REFERENCES = Path(__file__).parent / "nbval" / "runs.json"


def test_the_smoke_runs_match_their_references():
    store = os.environ.get("LMC_REGRESSION_RUNS")
    if not store:
        pytest.fail("set LMC_REGRESSION_RUNS to the run store the nbval execution used (`make nbval` does)")
    ours = snapshot(Path(store))
    assert ours, f"{store} holds no finished run: the notebooks trained nothing"
    problems = compare(json.loads(REFERENCES.read_text()), ours)
    assert not problems, (
        f"{len(problems)} values beyond the tolerance (rtol {RTOL:g}, atol {ATOL:g}); if the change is "
        "intended, run `make references`:\n" + "\n".join(problems[:40])
    )
