"""The GPU campaign (lmcompanion.campaign): its plan cut into slots (each within its minutes, led by the check of the
families it trains, slot 1 with the GPT-2-small bench and headline runs), the measured minutes the next plan reads,
the restore of a slot's archive (checked, committed naming the slot and the device), the --max-minutes stop, a
recorded GPU run's MFU, its rehearsal on a CPU at the smoke profile (end to end in one slot, cut off and resumed;
`make slot-rehearsal` rehearses several slots from fresh clones), and the pack (verified on arrival; the gpu pack
under 48 MiB and giving, by itself, the run keys a CPU build computes)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from lmcompanion import campaign, data, experiments, recorded
from lmcompanion.cli import main
from lmcompanion.errors import LMCError, Terminated
from lmcompanion.train import RunStore

from conftest import REPO

CHAPTERS = tuple(experiments.chapters())
QUIET = dict(log=lambda *a, **k: None)


def _step_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:3].strip().isdigit() or line[:3] == "  -"]  # -: a check


def test_plan_prints_slots_within_the_budget_each_step_with_its_minutes_and_whether_measured(tmp_path, capsys):
    out = tmp_path / "recorded"
    assert (
        main(["campaign", "--profile", "smoke", "--device", "cpu", "--plan", "--budget-min", "1.9", "-o", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    found = campaign.plan.plan("smoke", device="cpu", out=out, budget_min=1.9)
    assert len(found.slots) > 1, "the budget should cut the plan into several slots"
    lines = _step_lines(text)
    every = [s for slot in found.slots for s in slot.steps]
    assert [line.split()[2] for line in lines] == [s.name for s in every]  # every step, slot by slot, in order
    shown = [re.search(r"(\d+\.\d+) min  (counted|measured) ", line) for line in lines]
    assert [float(m.group(1)) for m in shown] == pytest.approx([s.minutes for s in every], abs=0.006)
    assert all(" min  counted " in line for line in lines)  # nothing measured yet: every estimate is counted
    # each step of the campaign once, the check and the lanes' measurement aside (one per slot that trains families no
    # earlier check covered; the lanes measured once, at the head of the first slot)
    assert sorted(s.name for s in every if s.kind not in ("check", "lanes")) == sorted(s.name for s in found.all_steps)
    assert [s.kind for s in every].count("lanes") == 1
    measuring = next(slot for slot in found.slots if slot.runs)  # the first slot that trains runs measures the lanes
    assert [s.kind for s in measuring.steps[:2]] == ["check", "lanes"]
    for slot in found.slots:
        total = next(line for line in text.splitlines() if line.startswith(f"slot {slot.number} total "))
        assert float(total.split()[3]) == pytest.approx(slot.minutes, abs=0.06)
        assert (
            slot.minutes <= 1.9 + 1e-9
            or "OVER" in total
            and len([s for s in slot.steps if s.kind not in ("check", "lanes")]) == 1
        )
    assert text.index("slot 1 (next") < text.index("slot 2\n")


def test_the_gpu_plan_s_first_slot_fits_8_minutes_checks_its_families_benches_gpt2_small_and_decides_headlines(
    data_dir, monkeypatch
):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    all_steps = campaign.steps("gpu", device="cpu")
    kinds = [s.kind for s in all_steps]
    runs = [s for s in all_steps if s.kind == "run"]
    assert all_steps[0].name == "bench/gpt2_small" and "check" not in kinds
    assert set(kinds[1 : 1 + len(runs)]) == {"run"} and set(kinds[1 + len(runs) :]) == {"bench"}  # chapter benches last
    assert [s.priority for s in all_steps] == list(range(1, len(all_steps) + 1))
    # the whole book: every arm of every chapter that runs at gpu, each with its seeds as registered: the headline
    # comparisons' arms five (as at cpu), every other arm three (four for the arms of a claim of equality, one where it
    # runs the first seed only), the runs they read first; and together exactly the plan's runs of every chapter
    planned = set()
    for g in campaign.GROUPS:
        group_plan = experiments.plan(list(g.names), "gpu", device="cpu")
        assert {s.name for s in runs if s.group is g} <= {r.id for r in group_plan}
        planned |= {r.id for r in group_plan}
        for name in g.names:
            seeds = {r.seed for r in group_plan if r.name == name}
            assert seeds == set(experiments.seeds_of(name, "gpu")), (name, seeds)
            if g.tier == 1:
                assert len(seeds) == experiments.HEADLINE_SEEDS["gpu"] == 5, name
            elif seeds and "gpu" not in experiments.get(name).first_seed_only:
                assert len(seeds) >= 3, (name, seeds)
    assert (
        {s.name for s in runs}
        == planned
        == {r.id for c in experiments.chapters() for r in experiments.plan(c, "gpu", device="cpu")}
    )
    assert len({s.name for s in runs}) == len(runs)
    # tier 1 (the registry's headline comparison of each chapter) comes first, cheapest first, then tier 2, then the
    # illustrations
    cost = {g: sum(s.minutes for s in runs if s.group is g) for g in campaign.GROUPS}
    for tier in (1, 2):
        costs = [cost[g] for g in campaign.GROUPS if g.tier == tier]
        assert costs == sorted(costs), f"tier {tier} is not cheapest first: {costs}"
    assert [g.tier for g in campaign.GROUPS] == sorted(g.tier for g in campaign.GROUPS)
    # the slots at the assumed lane speed (four lanes, twice one lane's throughput): each at most 8 estimated wall
    # minutes but for a run longer than a slot alone, every step once
    speed = campaign.lanes.Speed(campaign.lanes.ASSUMED, False)
    slots = campaign.slots(all_steps, campaign.DEFAULT_SLOT_MIN, device="cuda", speedup=speed.at(4))
    assert campaign.DEFAULT_SLOT_MIN == 8 and speed.at(4) == 2.0
    assert all(slot.minutes <= 8 + 1e-9 or len(slot.runs) == 1 for slot in slots)
    every = [s for slot in slots for s in slot.steps if s.kind != "check"]
    assert [s.name for s in every if s.kind == "run"] == [s.name for s in runs]  # the runs in priority order
    assert sorted(s.name for s in every) == sorted(s.name for s in all_steps)
    # slot 1: the check of the families it trains (about 1.5 minutes), the GPT-2-small bench, then the cheapest runs
    # that decide headline claims; a chapter's bench only at the end of a slot
    first = slots[0]
    check, bench = first.steps[:2]
    assert check.kind == "check" and check.minutes <= 1.5 + 1e-9 and check.torchrun
    assert {r.config.model.family for r in check.covers} == {s.run.config.model.family for s in first.runs}
    assert bench.name == "bench/gpt2_small"
    assert first.steps[2].kind == "run" and first.steps[2].group.tier == 1
    for slot in slots:
        rest = [s for s in slot.steps if s.kind != "check"]
        chapter = [i for i, s in enumerate(rest) if s.kind == "bench" and s.name != "bench/gpt2_small"]
        assert all(s.kind == "bench" for s in rest[chapter[0] :]) if chapter else True, [s.name for s in rest]
        assert all(s.kind != "check" for s in slot.steps[1:])
        assert slot is first or all(s.name != "bench/gpt2_small" for s in rest)
        later = [s for slot in slots[: slots.index(slot)] for s in slot.steps if s.kind == "check"]
        if slot.steps[0].kind == "check":  # a later check covers only families no earlier one did
            new = {r.config.model.family for r in slot.steps[0].covers}
            assert not new & {r.config.model.family for c in later for r in c.covers}
    decided = {(s.group.chapter, s.group.tier) for s in first.steps if s.claims}
    assert {("mixer", 1), ("hourglass", 1)} <= decided  # two headline comparisons decided in 8 minutes
    # the loans the whole book takes at that speed: one slot per loan, each tier complete no later than the next
    the_plan = campaign.Plan("gpu", "cuda", all_steps, slots, [], [], 8.0, 4, speed)
    lines = campaign.plan.loans(the_plan)
    assert (
        lines[0].startswith(f"loans: {len(slots)} loan(s) of a GPU machine (15 device minutes each")
        and "at 4 lane(s) (ASSUMED speed-up 2.00x)" in lines[0]
    )
    after = [int(re.search(r"after loan (\d+) of", line).group(1)) for line in lines[1:]]
    assert len(after) == 3 and after == sorted(after) and after[-1] == len(slots)


def test_the_groups_train_every_headline_arm_and_their_claims_are_the_chapters_rows():
    from lmcompanion import experiments

    grouped = {n for g in campaign.GROUPS for n in g.names}
    assert set(experiments.headline_arms()) <= grouped  # every chapter's headline, declared in the registry
    assert [g.names for g in campaign.GROUPS if g.tier == 1] == [
        experiments.headlines(g.chapter)[0].arms for g in campaign.GROUPS if g.tier == 1
    ]
    decided = campaign.group_claims()
    # every group of tiers 1 and 2 completes claims (tier 3 illustrates: a group completes a claim only where a row
    # compares its arms)
    assert all(decided[g] for g in campaign.GROUPS if g.tier < 3), [g.label for g in campaign.GROUPS if not decided[g]]
    illustrating = {n for g in campaign.GROUPS if g.tier == 3 for n in g.names}
    assert illustrating and not illustrating & set(experiments.headline_arms())
    assert {n for g in campaign.GROUPS for n in g.names} == set(experiments.names())  # every arm of the book
    # each claim is a verdict row of its chapter (by its text), listed once, with the group that completes its arms
    for g in campaign.GROUPS:
        rows = dict(campaign.plan._arm_claims(g.chapter))
        for text in decided[g]:
            assert text in rows, (g.chapter, text)
            if text in rows:
                assert set(rows[text]) <= {n for h in campaign.GROUPS[: campaign.GROUPS.index(g) + 1] for n in h.names}
                assert set(rows[text]) & set(g.names), (g.label, text)
    texts = [t for g in campaign.GROUPS for t in decided[g]]
    assert len(texts) == len(set(texts))


def _cut_off_at(monkeypatch, step):
    """SIGTERM as the run of ``step`` comes back from its lane (here reused from the store: no lane trains)."""
    real = campaign.runner._record

    def record(done, *args, **kwargs):
        if (done.config.name, done.config.seed) == (step.run.name, step.run.seed):
            raise Terminated(signal.SIGTERM)
        return real(done, *args, **kwargs)

    monkeypatch.setattr(campaign.runner, "_record", record)
    return real


def test_the_smoke_rehearsal_runs_the_whole_plan_records_every_chapter_and_a_cut_off_loses_one_step(
    tmp_path, monkeypatch, capsys
):
    # `make test-slow` runs this test over a smoke run store the pool has just trained, as `make nbval` trains the
    # notebooks' own: the campaign's smoke runs are the runs the notebooks read (tests/test_plan.py), so they are
    # reused, not trained twice; what it rehearses is the plan, the check, the benches, the recording, the cut-off and
    # the resumption. Training itself is what nbval checks.
    store = os.environ.get("LMC_REHEARSAL_RUNS")
    if not store:
        pytest.skip("run by `make test-slow` over a smoke run store (set LMC_REHEARSAL_RUNS to a smoke store)")
    monkeypatch.setenv("LMC_RUNS_DIR", store)
    # every step of the plan, each arm with one seed (the smoke profile's two would double the runs and rehearse no
    # other code)
    out, tgz = tmp_path / "rehearsal", tmp_path / "campaign.tgz"
    # one slot large enough for every step (slots are rehearsed from a fresh clone by `make slot-rehearsal`)
    args = [
        "campaign",
        "--profile",
        "smoke",
        "--device",
        "cpu",
        "--seeds",
        "1",
        "-o",
        str(out),
        "--archive",
        str(tgz),
        "--budget-min",
        "600",
    ]
    all_steps = campaign.steps("smoke", device="cpu", seeds=1)
    assert {s.run.name for s in all_steps if s.kind == "run"} == {
        s.run.name for s in campaign.steps("smoke", device="cpu") if s.kind == "run"
    }  # every arm of the full plan
    runs = [s for s in all_steps if s.kind == "run"]
    cut = runs[6]
    real = _cut_off_at(monkeypatch, cut)
    assert main(args) == 128 + signal.SIGTERM  # "stopped by SIGTERM ... run the same command to resume"
    first = capsys.readouterr()
    progress = json.loads((out / "campaign" / "smoke" / "progress.json").read_text())
    before = all_steps[: all_steps.index(cut)]
    assert progress["steps"][cut.name]["status"] == "interrupted"
    assert all(progress["steps"][s.name]["status"] == "done" for s in before), first.out
    assert progress["steps"]["check"]["status"] == "done" and progress["steps"]["lanes"]["status"] == "done"
    assert (
        re.search(r"^\[1/\d+\] check check ", first.out, re.M)
        and re.search(r"^\[2/\d+\] lanes lanes ", first.out, re.M)
        and re.search(r"^\[3/\d+\] bench bench/gpt2_small ", first.out, re.M)
    ), first.out  # the check, the lanes, GPT-2 small
    with tarfile.open(tgz) as tar:  # the archive holds what is finished
        names = set(tar.getnames())
    assert "rehearsal/campaign/smoke/check.json" in names
    assert f"rehearsal/smoke/{recorded.file_name({'experiment': runs[0].run.name, 'seed': runs[0].run.seed})}" in names

    monkeypatch.setattr(campaign.runner, "_record", real)
    assert main(args) == 0
    text = capsys.readouterr().out
    started = re.findall(r"^\[\d+/\d+\] \w+ (\S+)", text, re.M)
    assert not {"check", "lanes", "bench/gpt2_small"} & set(started)  # what is done is not run again
    again = re.findall(r"^    recorded \S+/smoke/(\S+)\.json: ", text, re.M)
    name_of = {s.name: recorded.file_name({"experiment": s.run.name, "seed": s.run.seed})[:-5] for s in runs}
    assert again[0] == name_of[cut.name], again[:3]  # the next slot starts with the run that was cut off
    assert not set(again) & {name_of[s.name] for s in before if s.kind == "run"}
    progress = json.loads((out / "campaign" / "smoke" / "progress.json").read_text())
    assert progress["steps"][cut.name]["status"] == "done"
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
    compiled = check["items"]["compile_against_eager"]["families"].values()
    assert all(c["graphs_compiled"] >= 1 and c["recompiled_for_another_seed"] == 0 for c in compiled)  # once a shape
    lanes = campaign.lanes.read(out, "smoke")["devices"]["cpu"]
    assert set(lanes["speedup"]) == {str(n) for n in campaign.lanes.levels_for("cpu")} and lanes["speedup"]["1"] == 1
    bench = json.loads((out / "campaign" / "smoke" / "bench.json").read_text())
    assert set(bench["results"]) == {s.name for s in all_steps if s.kind == "bench"}
    assert all(r["tokens/s"] > 0 for r in bench["results"].values())
    # the recorded files import (the campaign's reports beside them are not recorded runs)
    imported = RunStore(tmp_path / "store")
    assert len(recorded.import_dir(out, imported)) == len(runs)
    # every chapter's rows are decided, or labelled with why not, from the recorded runs alone (metrics, no
    # weights), as a book built at another profile shows them: the first GPU slot's hourglass runs stopped make book
    # on a row whose measure evaluates the model (the smoke book never shows recorded runs of its own profile)
    from lmcompanion import claims, nb, verdicts

    for chapter in CHAPTERS:
        found = recorded.arms(experiments.chapter_names(chapter), store=imported)["smoke"]
        assert found.runs and not found.stale, chapter
        rows = claims.verdicts(chapter, claims.Context(found.runs))
        assert rows, chapter
        assert len(verdicts.table(nb.scaled(chapter, rows, "smoke"))) == len(rows)  # the appendix's table of them
        assert nb.recorded_table({"smoke": found}).loc["smoke", "runs"] == sum(map(len, found.runs.values()))
        needs = [v for v in rows if "needs the run's files" in v.ours]
        assert all("carries metrics, not files" in v.verdict for v in needs)
        if chapter in ("hourglass", "retrieval"):  # the rows scored on the last token, the metric baselines on the
            assert not needs, [v.claim for v in needs]  # embeddings: measured with each run (campaign.measures)
        computed = [v for v in rows if v.ours == "computed on its page"]
        assert all("carries metrics, not files" in v.verdict for v in computed)
        assert bool(computed) == (chapter == "formal_ed"), chapter  # its checks read what its page computes
    # the same command once more: nothing to do
    assert main(args) == 0
    assert "campaign complete" in capsys.readouterr().out


def test_max_minutes_stops_the_command_with_exit_75_and_restores_the_signal_handler(tmp_path, monkeypatch):
    real = campaign.runner._execute
    old = signal.getsignal(signal.SIGTERM)

    def slow(step, *args, **kwargs):
        if step.kind == "check":
            time.sleep(30)  # the deadline's SIGTERM ends this
        return real(step, *args, **kwargs)

    monkeypatch.setattr(campaign.runner, "_execute", slow)
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
    (folder.parent / "SHA256SUMS").write_text(
        f"{hashlib.sha256(blob).hexdigest()}  py312-x86_64/demo-1.0-py3-none-any.whl\n"
    )
    return folder


def test_a_pack_is_verified_on_arrival_and_a_damaged_one_stops_with_a_message(tmp_path, monkeypatch, capsys):
    pack = tmp_path / "pack"
    manifest = campaign.make_pack(pack, "smoke", wheels=_wheels(tmp_path), **QUIET)
    listed = set(manifest["files"])
    assert {p.relative_to(pack).as_posix() for p in pack.rglob("*") if p.is_file()} == listed | {
        "manifest.json",
        "SHA256SUMS",
    }
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
    # a key that differs names its part: here the code, as a pack made on another Python once was (3.11 against 3.12)
    some = next(iter(manifest["run_keys"]))
    other = {
        **got,
        "run_keys": {**got["run_keys"], some: "0" * 12},
        "run_parts": {**got["run_parts"], some: {**got["run_parts"][some], "code": "f" * 12}},
    }
    with pytest.raises(LMCError, match=rf"1 of the run keys .*{re.escape(some)}: .* by its code fingerprint \("):
        campaign.check_keys(other, "smoke")
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


def test_the_wheels_a_pack_leaves_out_are_never_imported_by_a_campaign_ipython_or_a_kernel():
    blocked = "".join(f"sys.modules[{name!r}] = None\n" for name in campaign.pack.NOT_PACKED)  # import -> ImportError
    code = (
        "import sys\n" + blocked + "import IPython, ipykernel.kernelapp, ipykernel.ipkernel, papermill\n"
        "from IPython.core.completer import IPCompleter\nimport lmcompanion.campaign, lmcompanion.nb\n"
        "from lmcompanion import cli\nprint('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
    assert set(campaign.pack.NOT_PACKED) == {"debugpy", "jedi"}  # a new entry needs its own reason and this check


def test_the_gpu_pack_is_under_48_mib_and_gives_by_itself_the_keys_and_tokens_of_a_cpu_build(
    tmp_path, data_dir, monkeypatch
):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    wheels = campaign.default_wheels()
    if not list(wheels.glob("*.whl")):
        pytest.skip(f"no wheels in {wheels}")
    pack = tmp_path / "pack"
    manifest = campaign.make_pack(pack, "gpu", **QUIET)
    size = sum(p.stat().st_size for p in pack.rglob("*") if p.is_file())
    assert size <= 48 << 20
    by_kind = {k: sorted(f for f, v in manifest["files"].items() if v["kind"] == k) for k in ("wheel", "data", "cache")}
    every = sorted(w.name for w in wheels.glob("*.whl"))
    assert sorted(f.split("/")[-1] for f in by_kind["wheel"]) == [
        w for w in every if w.split("-")[0] not in campaign.pack.NOT_PACKED
    ]
    assert len(by_kind["wheel"]) == len(every) - len(campaign.pack.NOT_PACKED)
    assert by_kind["data"] == sorted(
        [
            "data/tiktoken/gpt2.tiktoken.gz",
            "data/tinyshakespeare/input.txt.gz",
            "data/tinystories/TinyStories-train.head-2MiB.txt.gz",
            "data/tinystories/TinyStories-validation.first-stories.txt.gz",
            "data/wikipedia/enwiki-pages.wikiextractor-AA-wiki_00-19.txt.gz",
            "data/SHA256SUMS.gz",
        ]
    )  # the Wikipedia files by their digests, the first one
    # also as text: the Wikipedia-lead retrieval runs read the first file's articles
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
        from lmcompanion.data import retrieval
        assert len(retrieval.lead_pairs(experiments.config("retrieval/wiki_flat_d1024_c32", "gpu", device="cpu").data.n_pairs)) == 8000
        print(n)
    """
    env = {k: v for k, v in os.environ.items() if k != "LMC_DATA_DIR"}
    env.update(
        LMC_CACHE_DIR=str(tmp_path / "arrival"),
        LMC_RUNS_DIR=str(tmp_path / "runs"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        PYTHONPATH=str(REPO / "src"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(pack)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.split()[-1]) == len(manifest["run_keys"]) > 80


def test_the_check_builds_every_family_and_compares_compiled_with_eager_without_dropout():
    """The check's steps need a batch source for every family: a retrieval matcher's is made by its procedure from
    another run's embeddings, which no run has made when the check comes first (it once failed with a ConfigError),
    so random embeddings stand in; and dropout is off, since eager and compiled code draw different masks (the
    hourglass's 0.1 once put their losses 0.5% apart at fp32)."""
    from lmcompanion.train import trainer

    matcher = experiments.config("retrieval/flat_d1024_c32", "smoke", device="cpu")
    s = trainer.setup(matcher, source=data.kinds.check_source(matcher))
    batch = s.source.train_batches(0)[0]
    assert batch["x"].shape[-1] == matcher.model.n_embed and bool(s.model(**batch).loss.isfinite())
    assert data.kinds.check_source(experiments.config("mixer/flat_d512", "smoke", device="cpu")) is None
    hg = experiments.config("hourglass/vanilla", "smoke", device="cpu")
    assert hg.model.dropout > 0 and campaign.check._without_dropout(hg).model.dropout == 0.0
    assert (
        campaign.check._without_dropout(hg).model.replace(dropout=hg.model.dropout, enc_dropout=hg.model.enc_dropout)
        == hg.model
    )  # nothing else changes


# --- slots, measured minutes and the restore of a slot's archive (fast: no training, no planning of the gpu plan) ---


def _fake_step(name, kind, minutes, family="mixer", compiled=False):
    from types import SimpleNamespace

    cfg = SimpleNamespace(model=SimpleNamespace(family=family), train=SimpleNamespace(compile=compiled))
    return campaign.Step(name, kind, minutes, 0, SimpleNamespace(config=cfg, name=name))


def test_slots_fit_their_minutes_lead_with_the_check_of_new_families_and_end_with_the_benches_that_fit():
    from lmcompanion.campaign import check

    gpt2 = _fake_step("bench/gpt2_small", "bench", 1.0, "baseline", True)
    runs = (
        [_fake_step(f"m{i}", "run", 1.0) for i in range(3)]
        + [_fake_step(f"a{i}", "run", 2.0, "ar_ed", True) for i in range(3)]
        + [_fake_step("big", "run", 9.0, "ar_ed")]
    )
    benches = [_fake_step("bench/x", "bench", 0.3), _fake_step("bench/y", "bench", 5.0)]
    slots = campaign.slots([gpt2, *runs, *benches], 6.0, device="cuda")
    names = [[s.name for s in slot.steps] for slot in slots]
    first_check = (check.CHECK_BASE_S + check.CHECK_TORCHRUN_S + check.CHECK_COMPILE_S) / 60
    assert first_check == 1.5 and slots[0].steps[0].minutes == pytest.approx(first_check)
    # slot 1: the check (mixer, compared eagerly as none compiles), GPT-2 small, the runs while they fit, a bench
    assert names[0] == ["check", "bench/gpt2_small", "m0", "m1", "m2", "bench/x"]
    assert slots[0].steps[0].families == ("mixer",) and slots[0].steps[0].torchrun
    # slot 2: a new family, so a check of it alone (its compiled family; no second torchrun), then its runs
    assert names[1] == ["check", "a0", "a1"] and slots[1].steps[0].families == ("ar_ed",)
    assert not slots[1].steps[0].torchrun and slots[1].steps[0].minutes == pytest.approx(1.0)
    assert names[2] == ["a2"]  # the family is checked: no check; the next run would not fit
    assert names[3] == ["big"] and slots[3].minutes > 6  # alone, and the plan says it is over
    assert names[4] == ["bench/y"]
    assert all(slot.minutes <= 6 + 1e-9 for slot in slots if len(slot.steps) > 1)
    assert [slot.number for slot in slots] == [1, 2, 3, 4, 5]
    # families checked by earlier slots are not checked again; the numbering goes on
    again = campaign.slots(runs[1:3], 6.0, checked={"mixer"}, torchrun_done=True, first=4)
    assert [[s.name for s in slot.steps] for slot in again] == [["m1", "m2"]] and again[0].number == 4


def test_the_plan_reads_measured_minutes_and_says_which_estimates_are_measured(tmp_path, capsys):
    out = tmp_path / "recorded"
    counted = campaign.plan.plan("smoke", device="cpu", seeds=1, out=out, budget_min=3)
    run = next(s for s in counted.all_steps if s.kind == "run")
    assert not run.measured and all(not s.measured for slot in counted.slots for s in slot.steps)
    minutes = campaign.Minutes(out, "smoke")
    minutes.add(campaign.reports.run_key(run.run), "cpu", 0.75, what=run.name)
    minutes.add(campaign.reports.run_key(run.run), "cpu", 0.25, what=run.name)
    minutes.add(campaign.reports.run_key(run.run), "cuda", 9.0)  # another device's: not this plan's
    for part, m in (("check/base", 0.1), ("check/compile", 0.2), ("check/torchrun", 0.3)):
        minutes.add(part, "cpu", m)
    minutes.save()
    found = campaign.plan.plan("smoke", device="cpu", seeds=1, out=out, budget_min=3)
    same = [s for s in found.all_steps if s.kind == "run" and s.run.name == run.run.name]
    assert same and all(s.measured and s.minutes == pytest.approx(0.5) for s in same)  # every seed of that config
    assert all(s.counted == pytest.approx(run.minutes) for s in same)
    check = found.slots[0].steps[0]
    assert check.kind == "check" and check.measured and check.minutes == pytest.approx(0.1 + 0.2 + 0.3)
    others = [s for s in found.all_steps if s.kind == "run" and s.run.name != run.run.name]
    assert others and not any(s.measured for s in others)
    assert (
        main(
            [
                "campaign",
                "--profile",
                "smoke",
                "--device",
                "cpu",
                "--seeds",
                "1",
                "--plan",
                "--budget-min",
                "3",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert re.search(rf"{re.escape(run.name)}\s+0\.50 min  measured ", text)
    shown = [s for slot in found.slots for s in slot.steps]
    n = sum(s.measured for s in shown)  # the runs of that config and each check (a later slot's too: all its parts)
    assert n >= 1 + len(same) and f"estimates: {n} measured by earlier slots, {len(shown) - n} counted" in text
    # a damaged minutes file stops with a message naming it and the fix
    (out / "campaign" / "smoke" / "minutes.json").write_text('{"measured": {"x": {"cpu": {"minutes": [-1]}}}}')
    with pytest.raises(LMCError, match="minutes.json is not a valid campaign minutes file"):
        campaign.plan.plan("smoke", device="cpu", seeds=1, out=out)


def test_the_plan_assumes_the_lane_speed_until_a_slot_measures_it_then_reads_it_and_says_which(tmp_path, capsys):
    out = tmp_path / "recorded"
    assumed = campaign.plan.plan("smoke", device="cpu", seeds=1, out=out, budget_min=3, lanes=4)
    assert not assumed.speed.measured and assumed.lanes == 4
    first = assumed.slots[0]
    assert [s.kind for s in first.steps[:2]] == ["check", "lanes"]  # measured once, at the head of the first slot
    assert not any(s.kind == "lanes" for slot in assumed.slots[1:] for s in slot.steps)
    assert first.speedup == assumed.speed.at(4) == campaign.lanes.ASSUMED[4]
    assert first.minutes == pytest.approx(campaign.plan.wall(first.steps, first.speedup))
    assert (
        main(
            [
                "campaign",
                "--profile",
                "smoke",
                "--device",
                "cpu",
                "--seeds",
                "1",
                "--plan",
                "--budget-min",
                "3",
                "--lanes",
                "4",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "lanes: 4 lane(s), ASSUMED 2.00x the throughput of one (stated, not measured" in text
    assert re.search(
        rf"^loans: {len(assumed.slots)} loan\(s\) of a GPU machine .* at 4 lane\(s\) \(ASSUMED ", text, re.M
    )
    # measured by a slot (lanes.json beside minutes.json): every later plan reads it, and measures nothing again
    campaign.lanes.file(out, "smoke", "cpu", {"speedup": {"1": 1.0, "2": 1.9, "4": 3.5, "8": 3.52}, "gpu": None})
    found = campaign.plan.plan("smoke", device="cpu", seeds=1, out=out, budget_min=3, lanes=4)
    assert found.speed.measured and found.slots[0].speedup == 3.5
    assert not any(s.kind == "lanes" for slot in found.slots for s in slot.steps)
    assert len(found.slots) <= len(assumed.slots)
    assert campaign.plan.lanes_of(None, found.speed, "cuda") == 4  # 8 lanes gain under 2% more: four
    assert campaign.plan.lanes_of(None, found.speed, "cpu") == min(4, os.cpu_count())  # a CPU lane needs a core
    assert (
        main(
            [
                "campaign",
                "--profile",
                "smoke",
                "--device",
                "cpu",
                "--seeds",
                "1",
                "--plan",
                "--budget-min",
                "3",
                "--lanes",
                "4",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "lanes: 4 lane(s), 3.50x the throughput of one (measured on this device" in capsys.readouterr().out
    # a run a time limit cut off is the first run of the next slot
    runs = [s for s in found.all_steps if s.kind == "run"]
    progress = {"format": campaign.PROGRESS_FORMAT, "steps": {runs[5].name: {"status": "interrupted"}}, "commands": []}
    (out / "campaign" / "smoke" / "progress.json").write_text(json.dumps(progress))
    again = campaign.plan.plan("smoke", device="cpu", seeds=1, out=out, budget_min=3, lanes=4)
    assert again.slots[0].runs[0].name == runs[5].name
    # a lanes file that is not one stops with a message naming it
    (out / "campaign" / "smoke" / "lanes.json").write_text('{"devices": {"cpu": {"speedup": {"4": -1}}}}')
    with pytest.raises(LMCError, match="lanes.json is not a valid campaign lanes file"):
        campaign.plan.plan("smoke", device="cpu", seeds=1, out=out)


def test_a_slot_s_wall_counts_its_runs_at_the_lanes_speed_and_a_run_in_lanes_files_its_minutes_alone():
    steps = [
        _fake_step("check", "check", 1.0),
        *(_fake_step(n, "run", 2.0) for n in "abc"),
        _fake_step("bench/x", "bench", 0.5),
    ]
    assert campaign.plan.wall(steps, 2.0) == pytest.approx(1.5 + 6.0 / 2)  # side by side
    assert campaign.plan.wall(steps, 8.0) == pytest.approx(1.5 + 2.0)  # never shorter than its longest run alone
    speed = campaign.lanes.Speed({1: 1.0, 2: 1.8, 4: 3.0}, True)
    assert (speed.at(1), speed.at(3), speed.at(8), speed.best) == (1.0, pytest.approx(2.4), 3.0, 4)
    assert campaign.lanes.Speed({1: 1.0, 2: 1.99, 4: 2.0}, True).best == 2  # within 2%: the fewer lanes
    assert campaign.lanes.concurrency([(0, 10), (0, 10), (5, 15)], 0, 10) == pytest.approx(2.5)
    assert campaign.lanes.concurrency([(0, 10)], 0, 10) == 1.0
    assert campaign.lanes.alone_minutes(600, 2, speed) == pytest.approx(9.0)  # 10 min beside another at 1.8x


def test_a_freed_lane_takes_the_next_run_of_the_shape_it_compiled_and_a_new_shape_takes_a_fresh_lane():
    from lmcompanion.experiments.pool import _lane_for, _next_ready, shape

    a0, a1, b0, b1 = (
        experiments.planned(n, "gpu", seed, device="cpu")
        for n, seed in (
            ("ar_ed/baseline", 0),
            ("ar_ed/baseline", 1),
            ("deepsight/baseline", 0),
            ("deepsight/baseline", 1),
        )
    )
    assert a0.config.train.compile and shape(a0.config) == shape(a1.config) != shape(b0.config)  # not the seed
    pending = [b0, a1, b1]
    assert _next_ready(pending, {}, [], shapes=[shape(a0.config)]) is a1  # the freed lane compiled its shape
    assert _next_ready(pending, {}, [], shapes=[None]) is b0  # a fresh lane: the plan's order
    assert _lane_for(a1, [0, 1], [shape(b0.config), shape(a0.config)], pending) == 1
    assert _lane_for(b1, [0, 1], [shape(a0.config), None], pending) == 1  # a new shape: the lane that compiled nothing
    assert shape(experiments.config("ar_ed/baseline", "smoke", device="cpu")) is None  # cpu builds keep their order


def test_a_slot_s_runs_go_to_lanes_each_recorded_with_its_figures_and_a_failed_lane_fails_its_run_only(
    tmp_path, monkeypatch, capsys
):
    from lmcompanion.experiments import pool

    out = tmp_path / "out"
    monkeypatch.setattr(campaign.runner, "_execute", lambda step, *a, **k: None)  # no check, lanes or bench here
    seen = {}

    def train_all(runs, jobs, *, on_start, on_done, may_start, callbacks, **kw):
        seen.update(jobs=jobs, callbacks=callbacks, runs=runs)
        first, second, third = runs[:3]
        for r in (first, second):
            assert may_start(r)
            on_start(r)
        done = first.train(RunStore(tmp_path / "store"))
        on_done(pool.Outcome(first, done.path, 2.0, facts={"compile_s": 1.5, "graphs": 2}))
        on_done(pool.Outcome(second, error="RuntimeError: CUDA error: an illegal memory access was encountered"))
        on_start(third)
        raise Terminated(signal.SIGTERM)  # a signal with the third run in flight

    monkeypatch.setattr(campaign.runner.pool, "train_all", train_all)
    with pytest.raises(Terminated):
        campaign.run("smoke", device="cpu", out=out, seeds=1, lanes=2, callbacks=(print,), **QUIET)
    first, second, third = seen["runs"][:3]
    assert seen["jobs"] == 2 and seen["callbacks"] == (print,)
    progress = json.loads((out / "campaign" / "smoke" / "progress.json").read_text())
    steps = progress["steps"]
    assert steps[first.id]["status"] == "done" and steps[third.id]["status"] == "interrupted"
    assert steps[second.id]["status"] == "failed" and "illegal memory access" in steps[second.id]["error"]
    assert all(steps.get(r.id, {"attempts": 0})["attempts"] == 0 for r in seen["runs"][3:])
    record = json.loads((out / "smoke" / recorded.file_name({"experiment": first.name, "seed": 0})).read_text())
    assert record["summary"]["compile_s"] == 1.5 and record["summary"]["graphs_compiled"] == 2
    assert record["summary"]["lanes_busy"] >= 1 and record["summary"]["tokens_per_s"] > 0
    assert recorded.validate(record, "x") == first.config
    command = progress["commands"][-1]
    assert command["lanes"] == 2 and command["lane_groups"][0]["runs"] == 1
    assert command["lane_groups"][0]["tokens"] == record["summary"]["tokens"]
    minutes = campaign.Minutes(out, "smoke")
    assert minutes.get(campaign.reports.run_key(first), "cpu") > 0
    again = campaign.plan.plan("smoke", device="cpu", seeds=1, out=out)  # the next slot: the cut-off run first
    assert again.slots[0].runs[0].name == third.id and second.id in {s.name for s in again.failed}
    assert main(["campaign", "--lanes", "0", "--plan"]) == 2
    assert "argument --lanes: expected a number of lanes, a whole number from 1 to 64" in capsys.readouterr().err


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def recorded_smoke_run(tmp_path_factory):
    """A finished smoke run, recorded (its file name and bytes)."""
    run = RunStore(tmp_path_factory.mktemp("elsewhere")).run(experiments.config("ar_ed/baseline", "smoke"))
    folder = tmp_path_factory.mktemp("recorded")
    path = recorded.write([run], folder)[0]
    return path.name, path.read_bytes()


def _slot_archive(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return path


def test_a_slot_s_archive_is_checked_restored_and_committed_naming_the_slot_and_the_device(
    tmp_path, recorded_smoke_run, capsys
):
    name, blob = recorded_smoke_run
    repo = tmp_path / "repo"
    out = repo / "book" / "recorded"
    (out / "campaign" / "smoke").mkdir(parents=True)
    earlier = [{"device": "cpu", "slot": 1, "gpu": None}]
    (out / "campaign" / "smoke" / "progress.json").write_text(json.dumps({"commands": earlier, "steps": {}}))
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
    _git(repo, "add", "book")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "slot 1")
    progress = {
        "format": campaign.PROGRESS_FORMAT,
        "commands": earlier + [{"device": "cuda", "slot": 2, "gpu": "NVIDIA H100 80GB HBM3"}],
        "steps": {"x": {"status": "done"}},
    }
    minutes = {"format": campaign.MINUTES_FORMAT, "measured": {"run/x": {"cuda": {"minutes": [1.5]}}}}
    lanes = {"format": campaign.lanes.FORMAT, "devices": {"cuda": {"speedup": {"1": 1.0, "4": 2.6}}}}
    good = {
        f"recorded/smoke/{name}": blob,
        "recorded/campaign/smoke/progress.json": json.dumps(progress).encode(),
        "recorded/campaign/smoke/minutes.json": json.dumps(minutes).encode(),
        "recorded/campaign/smoke/lanes.json": json.dumps(lanes).encode(),
    }
    # refused before anything is written: a member that is neither a recorded run nor a report, a name that leaves
    # the folder, a run under another name, a report that fails its format, an archive older than what is here
    older = {**good, "recorded/campaign/smoke/progress.json": json.dumps({"commands": []}).encode()}
    bad_minutes = {**good, "recorded/campaign/smoke/minutes.json": b'{"measured": {"x": {"cuda": {"minutes": [1e9]}}}}'}
    bad_lanes = {**good, "recorded/campaign/smoke/lanes.json": b'{"devices": {"cuda": {"speedup": {"0": 1}}}}'}
    for i, (members, needle) in enumerate(
        (
            ({**good, "recorded/run.sh": b"echo"}, "neither a recorded run"),
            ({**good, "recorded/smoke/../../x.json": blob}, "leaves its folder"),
            ({**good, "recorded/smoke/mixer__flat_d512-s0.json": blob}, "not the file its name says"),
            (bad_minutes, "not a valid campaign minutes file"),
            (bad_lanes, "not a valid campaign lanes file"),
            (older, "does not continue the progress"),
            ({**good, "other/smoke/x.json": blob}, "not under one top folder"),
        )
    ):
        archive = _slot_archive(tmp_path / f"bad{i}.tgz", members)
        assert main(["campaign", "--restore", str(archive), "-o", str(out), "--commit"]) == 2
        assert needle in capsys.readouterr().err
        assert not (out / "smoke").exists() and _git(repo, "status", "--porcelain") == ""
    archive = _slot_archive(tmp_path / "slot.tgz", good)
    # without --commit: restored, and the git command that commits it printed; then --commit still commits every
    # member, although none is written again (they are on disk, untracked)
    assert main(["campaign", "--restore", str(archive), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (out / "smoke" / name).read_bytes() == blob and "git add " in printed and "git commit -m " in printed
    assert "slot 2 on NVIDIA H100 80GB HBM3" in printed
    assert main(["campaign", "--restore", str(archive), "-o", str(out), "--commit"]) == 0
    assert "(4 unchanged)" in capsys.readouterr().out
    assert (out / "smoke" / name).read_bytes() == blob
    head = _git(repo, "log", "-1", "--format=%B")
    assert head.startswith("Recorded GPU campaign, slot 2 on NVIDIA H100 80GB HBM3 (smoke profile): 1 recorded run(s)")
    assert set(_git(repo, "show", "--name-only", "--format=", "HEAD").split()) == {
        f"book/recorded/{rel.split('/', 1)[1]}" for rel in good
    }
    assert _git(repo, "status", "--porcelain") == ""
    assert len(recorded.import_dir(out, RunStore(tmp_path / "store"))) == 1  # what came back imports
    # the same archive again: nothing to write, nothing to commit
    assert main(["campaign", "--restore", str(archive), "-o", str(out), "--commit"]) == 0
    assert "nothing to commit" in capsys.readouterr().out and _git(repo, "log", "-1", "--format=%B") == head


def test_a_recorded_gpu_run_carries_its_mfu_from_its_own_tokens_per_second(recorded_smoke_run):
    from lmcompanion import estimate, models

    _, blob = recorded_smoke_run
    record = json.loads(blob)
    cfg = recorded.validate(record, "x")
    summary = record["summary"]
    assert summary["tokens_per_s"] > 0 and "mfu" not in summary  # made on a CPU: no MFU
    assert recorded.mfu(cfg, summary, record["provenance"]) is None
    got = recorded.mfu(cfg, summary, {"gpu": "NVIDIA H100 80GB HBM3"})
    per_token = models.build(cfg.model, device="meta").flops_per_token()
    assert got == pytest.approx(per_token * summary["tokens_per_s"] / estimate.PEAK_BF16["H100"], rel=1e-3)
    assert recorded.mfu(cfg, summary, {"gpu": "an unknown card"}) is None
    assert recorded.mfu(cfg, {**summary, "tokens_per_s": None}, {"gpu": "NVIDIA H100 80GB HBM3"}) is None


def test_a_slot_whose_models_attend_to_nothing_passes_the_sdpa_check_and_the_merge_keeps_the_calls_verdict():
    from lmcompanion.campaign import check as check_mod

    runs = experiments.plan(["retrieval/flat_d1024_c32"], "smoke", seeds=[0])
    matchers = [r.config for r in runs if r.config.model.family == "matcher"]
    assert matchers and not check_mod.sdpa_signatures(matchers)
    none = check_mod.check_sdpa(matchers, "cpu")
    assert none["ok"] and none["calls"] == [] and "no attention call" in none["note"]
    transformer = [r.config for r in experiments.plan(["mixer/llama_d512"], "smoke", seeds=[0])]
    some = check_mod.check_sdpa(transformer, "cpu")
    assert some["ok"] and some["calls"] and all(c["ok"] for c in some["calls"])

    def report(sdpa):
        return {
            "device": "cuda",
            "complete": True,
            "environment": {},
            "families": ["x"],
            "compiled": [],
            "items": {"sdpa": sdpa},
        }

    # slot 2 of the first H200 campaign recorded a slot without attention as failed, with no call and no error: the
    # next merge derives the item from its calls
    merged = check_mod.merge(report({**some, "ok": False}), report(none))
    assert merged["ok"] and merged["items"]["sdpa"]["calls"] == some["calls"] and "note" not in merged["items"]["sdpa"]
    failed = {**some["calls"][0], "q": [1, 2, 3], "ok": False}
    assert not check_mod.merge(report(some), report({"calls": [failed], "ok": False}))["ok"]
    assert not check_mod.merge(report(some), report({"error": "boom", "ok": False}))["ok"]


def test_a_bench_made_on_the_gpu_is_done_in_a_plan_made_on_a_cpu():
    """The plan made here, for the GPU machine, builds its configs for this machine; a bench is done when its config
    on the slot's device is the one benched (slot 1's GPT-2 bench was planned again before)."""
    from types import SimpleNamespace

    step = SimpleNamespace(name="bench/gpt2_small", run=campaign.bench.gpt2_small("gpu"))
    assert step.run.config.device == "cpu"
    on_gpu = step.run.config.replace(device="cuda").hash()
    report = {"device": "cuda", "results": {"bench/gpt2_small": {"config_hash": on_gpu}}}
    assert campaign.plan.bench_done(step, report, "cuda")
    assert not campaign.plan.bench_done(step, {**report, "device": "cpu"}, "cpu")  # another device's bench
    other = step.run.config.replace(device="cuda", seed=1).hash()
    assert not campaign.plan.bench_done(
        step, {**report, "results": {"bench/gpt2_small": {"config_hash": other}}}, "cuda"
    )
