"""The regression checks hold across machines and still catch regressions: both directions, proved.

- nbval compares outputs exactly after ``tests/nbval_sanitize.cfg`` (decimal numbers and verdict words removed);
- ``tests/check_runs.py`` compares every number the smoke runs recorded with ``tests/nbval/runs.json`` within
  ``regression.RTOL`` / ``regression.ATOL``.
"""

import configparser
import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from lmcompanion.train import RunStore

import regression
from conftest import REPO, tiny_run


def _sanitize(text: str) -> str:
    """Apply tests/nbval_sanitize.cfg as nbval does (each section's regex, in order)."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO / "tests" / "nbval_sanitize.cfg")
    for section in cfg.sections():
        text = re.sub(cfg[section]["regex"], cfg[section]["replace"], text)
    return text


def test_the_sanitizer_absorbs_a_rounding_boundary_and_keeps_exact_numbers():
    # the failure reported from an AMD EPYC (AVX2): 3.05 against 3.06 in deepsight/02_loss_types cell 3
    assert _sanitize("3.05 [3.05, 3.06]") == _sanitize("3.06 [3.05, 3.06]")
    assert _sanitize("p = 0.050 | holds") == _sanitize(
        "p = 0.100 | inconclusive at this scale (the data lean toward the claim)"
    )
    # every verdict text the rule can produce sanitizes whole, whichever side of a boundary it lands on
    from lmcompanion import learning, verdicts

    v = verdicts.claim("x", "", [3.5, 3.6, 3.55], [3.4, 3.45, 3.42])
    at_chance = verdicts.gate(
        v, [learning.Arm("a", "chance", 3.0, (3.5, 3.6, 3.55)), learning.Arm("b", "chance", 3.0, (3.4, 3.45, 3.42))]
    )
    assert at_chance.verdict.startswith("not decided at this scale (a, b have not learned")
    assert _sanitize(f"p = 1.000 | {at_chance.verdict} |") == _sanitize("p = 0.050 | does not hold |")
    # the gate's mark flips with the distances it reads, and the arms it names with them
    assert _sanitize(at_chance.learned) == _sanitize(at_chance.learned.replace("✗", "✓"))
    assert _sanitize("1.2e-09") == _sanitize("3.4e-08")
    # the book's own scientific form (lmcompanion.formats), whose power of ten moves with the value as Python's does
    assert _sanitize("| 4.84×10⁻⁹ |") == _sanitize("| 1.20×10⁻⁸ |") == _sanitize("| 0.00123 |") == "| <num> |"
    assert _sanitize("9.25 [8.83, 9.67] ×10⁻⁴") == _sanitize("0.00123 [0.00120, 0.00125]") == "<num> [<num>, <num>]"
    # and so does a verdict scaled by at_scale
    scaled = [
        verdicts.at_scale(v, "smoke", (5.3e-6, 5.3e-6)).verdict
        for v in (
            at_chance,
            verdicts.claim("x", "", [1, 1.1, 1.2], [2, 2.1, 2.2]),
            verdicts.claim("x", "", [2, 2.1, 2.2], [1, 1.1, 1.2]),
        )
    ]
    assert scaled[0].startswith("not decided at `smoke` scale") and scaled[2].startswith("does not hold at")
    assert {_sanitize(f"| {s} |") for s in scaled} == {"| <verdict> |"}
    # the chance cell follows its verdict across a boundary (text and HTML), whichever verdict it lands on
    for fails, other in [
        (verdicts.claim("x", "", [2, 3, 4], [1, 1.5, 1.2]), verdicts.claim("x", "", [2, 3, 4], [1, 5, 1.2])),
        (verdicts.below("x", "", [1e-3, 2e-3, 3e-3], 1e-6), verdicts.below("x", "", [1e-9, 1e-3, 1e-2], 1e-6)),
    ]:
        assert fails.verdict == verdicts.FAILS and other.verdict != verdicts.FAILS
        assert "opposite" in fails.chance
        for esc in (str, lambda t: t.replace("<", "&lt;")):
            assert _sanitize(esc(f"{fails.chance} | {fails.verdict} |")) == _sanitize(
                esc(f"{other.chance} | {other.verdict} |")
            )
    assert verdicts.below("x", "", [1e-3, 1.1e-3, 0.9e-3], 1e-6).chance.startswith("p < 0.001")
    # what stays exact: parameter counts, integers, text, structure
    assert _sanitize("16,036,800 params") != _sanitize("16,036,801 params")
    assert _sanitize("steps 30") != _sanitize("steps 31")
    assert _sanitize("train (final) | val (final)") != _sanitize("train (final) | val (best)")


@pytest.fixture(scope="module")
def reference_and_lr_change(tmp_path_factory):
    """A reference run, and the same run with a learning rate 10% higher."""
    cfg = tiny_run(steps=30, eval_interval=5, warmup_steps=3)
    ref_dir, lr_dir = tmp_path_factory.mktemp("ref"), tmp_path_factory.mktemp("lr")
    RunStore(ref_dir).run(cfg)
    other = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, lr=cfg.train.lr * 1.1))
    RunStore(lr_dir).run(other)
    reference = regression.snapshot(ref_dir)
    changed = regression.snapshot(lr_dir)
    # the same run id (the lr is part of the config digest): compare the numbers, as a silent change would look
    changed = dict(zip(reference, changed.values()))
    return reference, changed


def _perturbed(snapshot: dict, relative: float) -> dict:
    return {
        rid: [{k: (v * (1 + relative) if k != "step" else v) for k, v in r.items()} for r in records]
        for rid, records in snapshot.items()
    }


@pytest.mark.parametrize("relative", [1e-6, 3e-5, 2.2e-4, -2.2e-4])
def test_a_small_float_perturbation_passes(reference_and_lr_change, relative):
    """As large as the largest difference measured between CPUs and thread counts (2.1e-4, docs/reliability.md)."""
    reference, _ = reference_and_lr_change
    assert regression.compare(reference, _perturbed(reference, relative)) == []


def test_a_real_change_another_learning_rate_fails(reference_and_lr_change):
    reference, changed = reference_and_lr_change
    problems = regression.compare(reference, changed)
    assert len(problems) > 10, problems  # most values move by far more than the tolerance
    assert any("eval/val" in p for p in problems)


def test_only_the_two_amplifying_runs_get_the_looser_tolerance():
    refs = json.loads((REPO / "tests" / "nbval" / "runs.json").read_text())
    loose = sorted(rid for rid in refs if regression.tolerance(rid) > regression.RTOL)
    assert loose and all(re.match(r"retrieval_autoencoder_d512(_c32-match)?-s\d+@", rid) for rid in loose), loose
    rid = next(r for r in loose if r.startswith("retrieval_autoencoder_d512-s"))
    other = next(r for r in refs if regression.tolerance(r) == regression.RTOL)
    # 7e-3, the largest difference measured for them, passes for them and fails for any other run; 2e-2 fails both
    assert regression.compare({rid: refs[rid]}, _perturbed({rid: refs[rid]}, 7e-3)) == []
    assert regression.compare({other: refs[other]}, _perturbed({other: refs[other]}, 7e-3)) != []
    assert regression.compare({rid: refs[rid]}, _perturbed({rid: refs[rid]}, 2e-2)) != []


def test_a_missing_or_extra_run_fails(reference_and_lr_change):
    reference, _ = reference_and_lr_change
    ((rid, records),) = reference.items()
    assert "not trained by the notebooks" in regression.compare(reference, {})[0]
    assert "not in the references" in regression.compare({}, reference)[0]
    assert "differ in shape" in regression.compare(reference, {rid: records[:-1]})[0]


def test_the_references_cover_every_smoke_run():
    refs = json.loads((REPO / "tests" / "nbval" / "runs.json").read_text())
    assert refs and all(records for records in refs.values())
    assert all(re.fullmatch(r".+-s\d+@[0-9a-f]{12}", rid) for rid in refs)


_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from conftest import tiny_run
from lmcompanion.train import RunStore
import regression
RunStore(sys.argv[1]).run(tiny_run(steps=30, eval_interval=5, warmup_steps=3))
print(json.dumps(regression.snapshot(sys.argv[1])))
"""


@pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"),
    reason="needs a CPU with AVX2 kernels to compare against",
)
def test_a_run_agrees_within_the_tolerance_across_instruction_sets_and_threads(tmp_path):
    """The same run on this machine's AVX-512 (or AVX2) kernels with 2 threads, and forced to AVX2 (or no vector)
    kernels with 1 thread: the numbers differ, but within the tolerance."""
    forced = "avx2" if torch.backends.cpu.get_cpu_capability() == "AVX512" else "default"
    settings = {
        "native": {"OMP_NUM_THREADS": "2"},
        "forced": {
            "OMP_NUM_THREADS": "1",
            "ATEN_CPU_CAPABILITY": forced,
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "ONEDNN_MAX_CPU_ISA": "AVX2",
        },
    }
    snapshots = {}
    for name, env in settings.items():
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT.format(tests=str(REPO / "tests")), str(tmp_path / name)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        snapshots[name] = json.loads(out.stdout.strip().splitlines()[-1])
    assert regression.compare(snapshots["native"], snapshots["forced"]) == []
