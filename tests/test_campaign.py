"""The GPU campaign (lmcompanion.campaign): its plan and budget, its rehearsal on a CPU at the smoke profile (end to
end, cut off and resumed), the --max-minutes stop, and the pack (verified on arrival; the gpu pack under 48 MiB and
giving, by itself, the run keys a CPU build computes)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from lmcompanion import campaign, experiments, recorded
from lmcompanion.cli import main
from lmcompanion.errors import LMCError, Terminated
from lmcompanion.train import RunStore

from conftest import REPO

CHAPTERS = ("ar_ed", "deepsight", "mixer", "retrieval", "hourglass", "formal_ed")
QUIET = dict(log=lambda *a, **k: None)


def _step_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:3].strip().isdigit()]


def test_plan_prints_every_step_with_its_minutes_and_a_total_line(capsys):
    assert main(["campaign", "--profile", "smoke", "--device", "cpu", "--plan", "--budget-min", "1.9"]) == 0
    text = capsys.readouterr().out
    all_steps = campaign.steps("smoke", device="cpu")
    plan, left = campaign.within(all_steps, 1.9)
    assert plan and left, "the budget should leave some steps for a second slot"
    lines = _step_lines(text)
    assert [line.split()[2] for line in lines] == [s.name for s in all_steps]  # every step, in priority order
    assert [float(line.split()[3]) for line in lines] == pytest.approx([s.minutes for s in all_steps], abs=0.006)
    assert all(line.split()[4] == "min" for line in lines)
    total = next(line for line in text.splitlines() if line.startswith("total "))
    assert float(total.split()[1]) == pytest.approx(sum(s.minutes for s in plan), abs=0.06) and float(total.split()[1]) <= 1.9
    assert "left for a second slot, in this order" in text
    assert text.index("total ") < text.index(left[0].name)  # what is left comes after the total, in order


def test_the_default_gpu_plan_fits_25_minutes_trains_the_notebooks_runs_and_leaves_the_rest_in_order(data_dir,
                                                                                                      monkeypatch):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    all_steps = campaign.steps("gpu", device="cpu")
    plan, left = campaign.within(all_steps, campaign.DEFAULT_BUDGET_MIN)
    assert sum(s.minutes for s in plan) <= 25
    kinds = [s.kind for s in all_steps]
    assert kinds[0] == "check" and kinds[1:1 + len(campaign.BENCH) + 1] == ["bench"] * (len(campaign.BENCH) + 1)
    assert set(kinds[2 + len(campaign.BENCH):]) == {"run"}
    assert [s.priority for s in all_steps] == list(range(1, len(all_steps) + 1))
    runs = [s for s in all_steps if s.kind == "run"]
    # one road: each group's runs are the plan's (each arm's seeds as registered: three, four for the arms of claims
    # of equality; the runs they read first), and together the plan's runs of every group
    planned = set()
    for g in campaign.GROUPS:
        group_plan = experiments.plan(list(g.names), "gpu", device="cpu")
        assert {s.name for s in runs if s.group is g} <= {r.id for r in group_plan}
        planned |= {r.id for r in group_plan}
        for name in g.names:
            seeds = {r.seed for r in group_plan if r.name == name}
            assert seeds == set(experiments.seeds_of(name, "gpu")) and len(seeds) >= 3, (name, seeds)
    assert {s.name for s in runs} == planned
    assert len({s.name for s in runs}) == len(runs)
    # tier 1 (a decisive comparison per chapter) comes first, cheapest first, then tier 2 cheapest first
    cost = {g: sum(s.minutes for s in runs if s.group is g) for g in campaign.GROUPS}
    for tier in (1, 2):
        costs = [cost[g] for g in campaign.GROUPS if g.tier == tier]
        assert costs == sorted(costs), f"tier {tier} is not cheapest first: {costs}"
    assert [g.tier for g in campaign.GROUPS] == sorted(g.tier for g in campaign.GROUPS)
    # the slot decides the headline comparison of four chapters, all its seeds; the rest is left in order
    complete = {s.group.chapter for s in plan if s.claims}
    assert complete == {"mixer", "hourglass", "retrieval", "ar_ed"}
    assert left and left[0].group.chapter == "deepsight" and left[0].group.tier == 1


def test_the_groups_train_every_headline_arm_and_their_claims_are_the_chapters_rows():
    from lmcompanion import experiments

    grouped = {n for g in campaign.GROUPS for n in g.names}
    assert set(experiments.headline_arms()) <= grouped  # every chapter's headline, declared in the registry
    assert [g.names for g in campaign.GROUPS if g.tier == 1] == [
        experiments.headlines(g.chapter)[0].arms for g in campaign.GROUPS if g.tier == 1]
    decided = campaign.group_claims()
    assert all(decided[g] for g in campaign.GROUPS), [g.label for g in campaign.GROUPS if not decided[g]]
    # each claim is a verdict row of its chapter (by its text), listed once, with the group that completes its arms
    for g in campaign.GROUPS:
        rows = dict(campaign._arm_claims(g.chapter))
        for text in decided[g]:
            assert text in rows, (g.chapter, text)
            if text in rows:
                assert set(rows[text]) <= {n for h in campaign.GROUPS[:campaign.GROUPS.index(g) + 1] for n in h.names}
                assert set(rows[text]) & set(g.names), (g.label, text)
    texts = [t for g in campaign.GROUPS for t in decided[g]]
    assert len(texts) == len(set(texts))


def _cut_off_at(monkeypatch, name):
    real = campaign._execute

    def execute(step, *args, **kwargs):
        if step.name == name:
            raise Terminated(signal.SIGTERM)  # as SIGTERM stops a run: its step and checkpoint done, then the raise
        return real(step, *args, **kwargs)

    monkeypatch.setattr(campaign, "_execute", execute)
    return real


def test_the_smoke_rehearsal_runs_the_whole_plan_records_every_chapter_and_a_cut_off_loses_one_step(
        tmp_path, monkeypatch, capsys):
    # `make nbval` runs this test over the run store its notebooks have just trained: the campaign's smoke runs are
    # the runs the notebooks read (tests/test_plan.py), so they are reused, not trained twice (the rehearsal then
    # takes well under a minute instead of several); what it rehearses is the plan, the check, the benches, the
    # recording, the cut-off and the resumption. Training itself is what nbval has just checked.
    store = os.environ.get("LMC_REHEARSAL_RUNS")
    if not store:
        pytest.skip("run by `make nbval` over the notebooks' run store (set LMC_REHEARSAL_RUNS to a smoke store)")
    monkeypatch.setenv("LMC_RUNS_DIR", store)
    # every step of the plan, each arm with one seed (the smoke profile's two would double the runs and rehearse no
    # other code)
    out, tgz = tmp_path / "rehearsal", tmp_path / "campaign.tgz"
    args = ["campaign", "--profile", "smoke", "--device", "cpu", "--seeds", "1", "-o", str(out), "--archive", str(tgz)]
    all_steps = campaign.steps("smoke", device="cpu", seeds=1)
    assert {s.run.name for s in all_steps if s.kind == "run"} == {
        s.run.name for s in campaign.steps("smoke", device="cpu") if s.kind == "run"}  # every arm of the full plan
    runs = [s for s in all_steps if s.kind == "run"]
    cut = runs[6]
    real = _cut_off_at(monkeypatch, cut.name)
    assert main(args) == 128 + signal.SIGTERM  # "stopped by SIGTERM ... run the same command to resume"
    first = capsys.readouterr()
    progress = json.loads((out / "campaign" / "smoke" / "progress.json").read_text())
    before = all_steps[:all_steps.index(cut)]
    assert progress["steps"][cut.name]["status"] == "interrupted"
    assert all(progress["steps"][s.name]["status"] == "done" for s in before), first.out
    with tarfile.open(tgz) as tar:  # the archive holds what is finished
        names = set(tar.getnames())
    assert "rehearsal/campaign/smoke/check.json" in names
    assert f"rehearsal/smoke/{recorded.file_name({'experiment': runs[0].run.name, 'seed': runs[0].run.seed})}" in names

    monkeypatch.setattr(campaign, "_execute", real)
    t0 = time.monotonic()
    assert main(args) == 0
    text = capsys.readouterr().out
    for s in before:
        assert f"{s.name}: done earlier, skipped" in text
    progress = json.loads((out / "campaign" / "smoke" / "progress.json").read_text())
    assert all(progress["steps"][s.name]["attempts"] == 1 for s in before)
    assert progress["steps"][cut.name]["attempts"] == 2 and progress["steps"][cut.name]["status"] == "done"
    assert len(progress["commands"]) == 2
    assert "campaign complete" in text
    # every planned run is recorded with its config, and every chapter has recorded runs
    assert all(campaign.is_recorded(out, s.run) for s in runs)
    files = {p.name for p in (out / "smoke").glob("*.json")}
    assert len(files) == len(runs)
    for chapter in CHAPTERS:
        assert any(f.startswith(f"{chapter}__") for f in files), f"no recorded run of {chapter}"
    # the check and the benches, as files
    check = json.loads((out / "campaign" / "smoke" / "check.json").read_text())
    assert check["ok"], json.dumps({k: v.get("error") for k, v in check["items"].items()})
    assert set(check["items"]) == {"autocast_and_fused_adamw", "compile_against_eager", "sdpa", "torchrun_gloo"}
    assert check["items"]["autocast_and_fused_adamw"]["forced_bf16_on_cpu"]["linear_outputs"] == ["bfloat16"]
    assert check["items"]["torchrun_gloo"]["backend"] == "gloo" and check["items"]["torchrun_gloo"]["all_reduce"] == 1
    assert all(c["default"] != ["(none found)"] for c in check["items"]["sdpa"]["calls"])
    bench = json.loads((out / "campaign" / "smoke" / "bench.json").read_text())
    assert set(bench["results"]) == {s.name for s in all_steps if s.kind == "bench"}
    assert all(r["tokens/s"] > 0 for r in bench["results"].values())
    # the recorded files import (the campaign's reports beside them are not recorded runs)
    assert len(recorded.import_dir(out, RunStore(tmp_path / "store"))) == len(runs)
    # the same command once more: nothing to do
    assert main(args) == 0
    assert "campaign complete" in capsys.readouterr().out


def test_max_minutes_stops_the_command_with_exit_75_and_restores_the_signal_handler(tmp_path, monkeypatch):
    real = campaign._execute
    old = signal.getsignal(signal.SIGTERM)

    def slow(step, *args, **kwargs):
        if step.kind == "check":
            time.sleep(30)  # the deadline's SIGTERM ends this
        return real(step, *args, **kwargs)

    monkeypatch.setattr(campaign, "_execute", slow)
    t0 = time.monotonic()
    status = campaign.run("smoke", device="cpu", out=tmp_path / "out", max_minutes=0.05, **QUIET)
    assert status == campaign.MORE_TO_DO and time.monotonic() - t0 < 25
    assert signal.getsignal(signal.SIGTERM) == old
    progress = json.loads((tmp_path / "out" / "campaign" / "smoke" / "progress.json").read_text())
    assert not any(v["status"] == "done" for v in progress["steps"].values())


def _wheels(tmp_path):
    folder = tmp_path / "wheels" / "py312-x86_64"
    folder.mkdir(parents=True)
    blob = b"PK\x05\x06" + bytes(18)  # an empty zip
    (folder / "demo-1.0-py3-none-any.whl").write_bytes(blob)
    (folder.parent / "SHA256SUMS").write_text(f"{hashlib.sha256(blob).hexdigest()}  py312-x86_64/demo-1.0-py3-none-any.whl\n")
    return folder


def test_a_pack_is_verified_on_arrival_and_a_damaged_one_stops_with_a_message(tmp_path, monkeypatch, capsys):
    pack = tmp_path / "pack"
    manifest = campaign.make_pack(pack, "smoke", wheels=_wheels(tmp_path), **QUIET)
    listed = set(manifest["files"])
    assert {p.relative_to(pack).as_posix() for p in pack.rglob("*") if p.is_file()} == listed | {"manifest.json",
                                                                                                "SHA256SUMS"}
    sums = dict(reversed(line.split("  ")) for line in (pack / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == listed | {"manifest.json"}
    assert any(f.startswith("cache/tokens/synthetic/") for f in listed)  # the smoke runs' token caches
    assert manifest["run_keys"] and manifest["bytes"] < campaign.PACK_LIMIT
    # on arrival: verified, restored into a fresh cache, and the keys computed there agree with the pack's
    for var in ("LMC_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "unused")
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "arrival"))
    got = campaign.unpack(pack, **QUIET)
    assert os.environ["HF_HUB_OFFLINE"] == "1" and campaign.check_keys(got, "smoke") == len(manifest["run_keys"])
    # damaged: a changed byte, a truncated file, a missing one
    victim = next(f for f in sorted(listed) if f.startswith("cache/"))
    data = (pack / victim).read_bytes()
    (pack / victim).write_bytes(bytes([data[0] ^ 1]) + data[1:])
    with pytest.raises(LMCError, match=f"damaged: {victim} does not match its SHA-256"):
        campaign.verify_pack(pack)
    (pack / victim).write_bytes(data[:-1])
    with pytest.raises(LMCError, match=f"{victim} has"):
        campaign.verify_pack(pack)
    (pack / victim).unlink()
    capsys.readouterr()
    assert main(["campaign", "--profile", "smoke", "--from-pack", str(pack), "--plan"]) == 2
    assert f"{victim} is missing" in capsys.readouterr().err
    with pytest.raises(LMCError, match="not a campaign pack"):
        campaign.verify_pack(tmp_path)


def test_the_gpu_pack_is_under_48_mib_and_gives_by_itself_the_keys_and_tokens_of_a_cpu_build(tmp_path, data_dir,
                                                                                              monkeypatch):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    wheels = campaign.default_wheels()
    if not list(wheels.glob("*.whl")):
        pytest.skip(f"no wheels in {wheels}")
    pack = tmp_path / "pack"
    manifest = campaign.make_pack(pack, "gpu", **QUIET)
    size = sum(p.stat().st_size for p in pack.rglob("*") if p.is_file())
    assert size <= 48 << 20
    by_kind = {k: sorted(f for f, v in manifest["files"].items() if v["kind"] == k) for k in ("wheel", "data", "cache")}
    assert len(by_kind["wheel"]) == len(list(wheels.glob("*.whl")))
    assert by_kind["data"] == ["data/tiktoken/gpt2.tiktoken.gz", "data/tinyshakespeare/input.txt.gz",
                               "data/tinystories/TinyStories-train.head-2MiB.txt.gz",
                               "data/tinystories/TinyStories-validation.first-stories.txt.gz",
                               "data/wikipedia/enwiki-pages.wikiextractor-AA-wiki_00-19.txt.gz"]
    for corpus in ("tokens/wikipedia/", "tokens/shakespeare_char/", "stories/tinystories/"):
        assert any(f.startswith(f"cache/{corpus}") for f in by_kind["cache"]), corpus
    # a fresh process with the pack alone: no LMC_DATA_DIR, an empty cache, the hub off; no text is tokenized again
    code = """if True:
        import sys
        from lmcompanion import campaign, data, experiments
        from lmcompanion.data import stories, tokenizers
        manifest = campaign.unpack(sys.argv[1], log=lambda *a: None)
        n = campaign.check_keys(manifest, "gpu")
        def refuse(*a, **k):
            raise AssertionError("tokenized again: the pack's token cache was not used")
        tokenizers.build = stories.StoryTokenizer.train = refuse
        for name in ("ar_ed/baseline", "deepsight/baseline", "mixer/flat_d512", "hourglass/vanilla"):
            data.build_source(experiments.config(name, "gpu", device="cpu"))
        print(n)
    """
    env = {k: v for k, v in os.environ.items() if k != "LMC_DATA_DIR"}
    env.update(LMC_CACHE_DIR=str(tmp_path / "arrival"), LMC_RUNS_DIR=str(tmp_path / "runs"), HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-c", code, str(pack)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.split()[-1]) == len(manifest["run_keys"]) > 80


def test_the_check_builds_every_family_and_compares_compiled_with_eager_without_dropout():
    """The check's steps need a batch source for every family: a retrieval matcher's is made by its procedure from
    another run's embeddings, which no run has made when the check comes first (it once failed with a ConfigError),
    so random embeddings stand in; and dropout is off, since eager and compiled code draw different masks (the
    hourglass's 0.1 once put their losses 0.5% apart at fp32)."""
    from lmcompanion.train import trainer

    matcher = experiments.config("retrieval/flat_d1024_c32", "smoke", device="cpu")
    s = trainer.setup(matcher, source=campaign._check_source(matcher))
    batch = s.source.train_batches(0)[0]
    assert batch["x"].shape[-1] == matcher.model.n_embed and bool(s.model(**batch).loss.isfinite())
    assert campaign._check_source(experiments.config("mixer/flat_d512", "smoke", device="cpu")) is None
    hg = experiments.config("hourglass/vanilla", "smoke", device="cpu")
    assert hg.model.dropout > 0 and campaign._without_dropout(hg).model.dropout == 0.0
    assert campaign._without_dropout(hg).model.replace(dropout=hg.model.dropout, enc_dropout=hg.model.enc_dropout) \
        == hg.model  # nothing else changes
