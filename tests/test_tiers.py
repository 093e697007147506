"""The slow tier (tests/conftest.py SLOW, `make test-slow`) names tests that exist, so that none drops out of CI by a
rename; and `make test` leaves out exactly that tier, which CI runs after it."""

import ast
import re

from conftest import REPO, SLOW, SLOWEST_FIRST


def _tests_of(path):
    return {
        n.name
        for n in ast.parse(path.read_text()).body
        if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
    }


def test_every_name_of_the_slow_tier_and_the_order_is_a_test_that_exists():
    missing = [
        entry
        for entry in SLOW + SLOWEST_FIRST
        if entry.split("::")[1].split("[")[0] not in _tests_of(REPO / "tests" / entry.split("::")[0])
    ]
    assert not missing, f"tests/conftest.py names tests that do not exist (renamed?): {missing}"
    assert len(set(SLOW)) == len(SLOW)


def test_make_test_leaves_out_the_slow_tier_and_ci_runs_it():
    makefile = (REPO / "Makefile").read_text()
    unit = re.search(r"^unit:.*?(?=^\S)", makefile, re.M | re.S).group(0)
    slow = re.search(r"^test-slow:.*?(?=^\S)", makefile, re.M | re.S).group(0)
    assert '-m "not slow"' in unit and "-m slow" in slow and "LMC_REHEARSAL_RUNS" in slow
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M) and re.search(r"^make test-slow$", ci, re.M)
