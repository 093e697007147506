"""A 2-process CPU DDP run (gloo, through torchrun) matches the 1-process run with the same global batch."""

import json
import os
import subprocess
import sys

import torch

from lmcompanion.train import RunStore

from conftest import REPO, tiny_run

SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from conftest import tiny_run
from lmcompanion.train import RunStore
RunStore({root!r}).run(tiny_run(steps=6, batch_size=4, grad_accum=2, eval_interval=3))
"""


def test_two_process_ddp_matches_one_process(tmp_path):
    cfg = tiny_run(steps=6, batch_size=4, grad_accum=2, eval_interval=3)
    single = RunStore(tmp_path / "one").run(cfg)
    script = tmp_path / "ddp_run.py"
    script.write_text(SCRIPT.format(tests=str(REPO / "tests"), root=str(tmp_path / "two")))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    double = RunStore(tmp_path / "two").get(cfg)
    assert double is not None and double.env["world_size"] == 2
    assert double.path.name == single.path.name  # the same config: DDP splits each step, it does not change it
    a = [json.loads(x) for x in (single.path / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (double.path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in a] == [r["step"] for r in b]
    for ra, rb in zip(a, b):
        for key in ra:
            if key != "step":
                assert abs(ra[key] - rb[key]) < 1e-5, (key, ra[key], rb[key])
    wa, wb = single.load_model().state_dict(), double.load_model().state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-5) for k in wa)
