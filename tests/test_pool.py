"""The pool that `make book` trains the book's runs with (``train-chapter all --jobs N``): every planned run is
trained once, a run only after the runs it reads, each exactly as one process alone trains it; a failure stops only
the runs that read the failed one."""

from __future__ import annotations

import json

import pytest
import torch

from lmcompanion import experiments
from lmcompanion.cli import main
from lmcompanion.errors import ConfigError
from lmcompanion.experiments.plan import PlannedRun
from lmcompanion.experiments.pool import train_all
from lmcompanion.train.store import RunStore

from regression import close

MATCHER = "retrieval/flat_d512_c32"  # reads the mixer chapter's mixer/flat_d512 run (its embedder)


def _metrics(path) -> list[dict]:
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines() if line]


def test_every_planned_run_is_trained_once_and_a_reader_after_what_it_reads(tmp_path, data_dir):
    runs = experiments.plan([MATCHER, "ar_ed/baseline"], "smoke", seeds=1, device="cpu")
    assert [r.name for r in runs] == ["mixer/flat_d512", MATCHER, "ar_ed/baseline"]
    store = RunStore(tmp_path / "runs")
    order = []
    outcomes = train_all(runs, 2, store=store, on_done=lambda o: order.append(o.run.name))
    assert [o.run.id for o in outcomes] == [r.id for r in runs]  # one outcome per run, in the plan's order
    assert all(o.error is None and not o.reused and o.path is not None for o in outcomes)
    assert order.index("mixer/flat_d512") < order.index(MATCHER)
    assert all(r.get(store) is not None for r in runs)
    assert sorted(p.name for p in store.root.iterdir()) == sorted(o.path.name for o in outcomes)

    again = train_all(runs, 2, store=store)  # everything is in the store now: nothing is trained twice
    assert all(o.reused and o.seconds == 0 for o in again)


def test_a_run_trained_in_the_pool_is_the_run_one_process_trains(tmp_path, data_dir):
    [planned] = experiments.plan(["ar_ed/baseline"], "smoke", seeds=[1], device="cpu")
    [pooled] = train_all([planned], 2, store=RunStore(tmp_path / "pool"))
    here = planned.train(RunStore(tmp_path / "here"))
    assert pooled.path.name == here.path.name  # the same key
    ours, ref = _metrics(pooled.path), _metrics(here.path)
    assert [r.keys() for r in ours] == [r.keys() for r in ref]
    assert all(close(a[k], b[k]) for a, b in zip(ours, ref) for k in a if k != "step")
    # and a different run is not within that tolerance: the comparison can fail
    [other] = train_all(
        experiments.plan(["ar_ed/baseline"], "smoke", seeds=[2], device="cpu"), 1, store=RunStore(tmp_path / "pool")
    )
    assert not all(close(a[k], b[k]) for a, b in zip(_metrics(other.path), ref) for k in a if k != "step")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the failing run asks for a GPU this machine must not have")
def test_a_failed_run_stops_only_the_runs_that_read_it(tmp_path, data_dir):
    embedder, matcher = experiments.plan([MATCHER], "smoke", seeds=1, device="cpu")
    broken = PlannedRun(embedder.config.replace(device="cuda"), embedder.procedure, "smoke")  # fails in the worker
    reader = PlannedRun(matcher.config, matcher.procedure, "smoke", needs=(broken,))
    [fine] = experiments.plan(["ar_ed/baseline"], "smoke", seeds=1, device="cpu")
    outcomes = {o.run.id: o for o in train_all([broken, reader, fine], 2, store=RunStore(tmp_path / "runs"))}
    assert "CUDA" in outcomes[broken.id].error
    assert "a run it reads failed" in outcomes[reader.id].error
    assert outcomes[fine.id].error is None and outcomes[fine.id].path.is_dir()


def test_bad_job_counts_stop_early(tmp_path, capsys):
    runs = experiments.plan(["ar_ed/baseline"], "smoke", seeds=1, device="cpu")
    for jobs in (0, -1, 1.5):
        with pytest.raises(ConfigError, match="jobs must be a positive"):
            train_all(runs, jobs, store=RunStore(tmp_path))
    with pytest.raises(ConfigError, match="threads must be a positive"):
        train_all(runs, 1, threads=0, store=RunStore(tmp_path))
    assert main(["train-chapter", "all", "--profile", "smoke", "--jobs", "0"]) == 2
    assert "argument --jobs: expected a whole number >= 1, got '0'" in capsys.readouterr().err


def test_a_budget_starts_no_run_after_it(tmp_path, data_dir):
    runs = experiments.plan(["ar_ed/baseline"], "smoke", seeds=2, device="cpu")
    assert train_all(runs, 2, store=RunStore(tmp_path), budget_s=-1) == []
    assert not any(tmp_path.iterdir())


def test_train_chapter_all_plans_every_chapter_once(capsys):
    assert main(["train-chapter", "all", "--profile", "smoke", "--plan"]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()[:-1]]
    every = {r.id for chapter in experiments.chapters() for r in experiments.plan(chapter, "smoke")}
    assert len(ids) == len(set(ids)) and set(ids) == every


def test_a_run_that_reads_what_a_run_in_flight_reads_starts_after_another_ready_run():
    """Two matchers of one embedder make the same embeddings, once, under a lock: started together, one process
    would wait on the other. The pool starts another ready run first, and the matcher when nothing else is ready."""
    from lmcompanion.experiments.pool import _next_ready

    c32, c128, other = (
        experiments.planned(n, "smoke", 0, device="cpu")
        for n in ("retrieval/flat_d1024_c32", "retrieval/flat_d1024_c128", "retrieval/llama_d512_c32")
    )
    assert c32.needs and c32.needs[0].id == c128.needs[0].id != other.needs[0].id
    done = {n.id: type("O", (), {"path": "x"})() for r in (c32, c128, other) for n in r.needs}
    assert _next_ready([c128, other], done, [c32]) is other
    assert _next_ready([c128], done, [c32]) is c128  # nothing else is ready: it starts anyway
    assert _next_ready([c128, other], done, []) is c128  # the plan's order otherwise
    assert _next_ready([c128], {}, []) is None  # its embedder is not finished
