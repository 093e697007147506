"""Refactors keep every run: the plans at ``smoke`` and ``cpu`` give the runs, keys and code digests recorded in
``tests/run_keys.json`` (``tests/scripts/run_keys.py --write`` records them again, for a change meant to change runs).

A key covers the data's fingerprint, which is the digest of the corpus files found here; where a run's data
fingerprint differs from the recorded one (another copy of the corpora, or the hub), its key is not compared, but its
code digest still is."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "run_keys.py"


def _script():
    spec = importlib.util.spec_from_file_location("run_keys_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def keys():
    script = _script()
    return json.loads(script.RECORD.read_text(encoding="utf-8")), script.run_keys()


@pytest.mark.parametrize("profile", ["smoke", "cpu"])
def test_the_plans_give_the_recorded_runs(keys, profile):
    recorded, now = keys[0][profile], keys[1][profile]
    assert sorted(now) == sorted(recorded), (
        f"runs planned at {profile} changed: new {sorted(set(now) - set(recorded))[:5]}, gone "
        f"{sorted(set(recorded) - set(now))[:5]}; if meant, run `python tests/scripts/run_keys.py --write`"
    )
    code = [r for r in now if now[r]["code"] != recorded[r]["code"]]
    assert not code, f"the code digest of {len(code)} runs at {profile} changed, e.g. {code[:3]}"
    same_data = [r for r in now if now[r]["data"] == recorded[r]["data"]]
    changed = [r for r in same_data if now[r]["key"] != recorded[r]["key"]]
    assert not changed, f"the key of {len(changed)} runs at {profile} changed on the same data, e.g. {changed[:3]}"


def test_the_record_can_fail():
    """The comparison is not vacuous: the record holds runs of every chapter with experiments at both profiles."""
    from lmcompanion import experiments

    recorded = json.loads(_script().RECORD.read_text(encoding="utf-8"))
    for profile in ("smoke", "cpu"):
        chapters = {r["chapter"] for r in recorded[profile].values()}
        assert chapters == set(experiments.chapters()), (profile, chapters)
