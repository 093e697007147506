"""Issue 49, items 5, 6 and 8: data that lasts (a corpus read from several of its files, at gpu and paper only; the
pack that carries its token ids and not its text), weight-dependent measures recorded with a run, and the GPT-2-small
bench's sweep of micro-batches with the profiler's idle time."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from lmcompanion import data, experiments, fingerprint, models
from lmcompanion.data import JoinedDataConfig, LMDataConfig, joined
from lmcompanion.errors import ConfigError, DataError, LMCError
from lmcompanion.experiments import mixer as mixer_exp
from lmcompanion.experiments.protocol import WIKIPEDIA_FILES
from lmcompanion.run import TRAINER

FIRST, SECOND = "wiki/a.txt", "wiki/b.txt"


def _doc(i: int, body: str) -> str:
    return f'<doc id="{i}" url="?curid={i}" title="T{i}">\nT{i}\n\n{body}\n</doc>\n'


@pytest.fixture
def two_files(tmp_path, monkeypatch):
    """A data folder with two WikiExtractor files (a title-only stub in each) and a SHA256SUMS of both."""
    root = tmp_path / "data"
    (root / "wiki").mkdir(parents=True)
    (root / FIRST).write_text("".join(_doc(i, f"alpha {i} " * 40) for i in range(30)) + _doc(99, ""))
    (root / SECOND).write_text("".join(_doc(100 + i, f"omega {i} " * 40) for i in range(30)) + _doc(199, ""))
    sums = "".join(f"{hashlib.sha256((root / f).read_bytes()).hexdigest()}  {f}\n" for f in (FIRST, SECOND))
    (root / joined.SUMS).write_text(sums)
    monkeypatch.setenv("LMC_DATA_DIR", str(root))
    return root


def _cfg(**kw) -> JoinedDataConfig:
    return JoinedDataConfig(**{"corpus": "wikipedia", "files": (FIRST, SECOND), "tokenizer": "char", **kw})


def test_a_joined_corpus_reads_every_file_in_order_cleaned_and_cuts_the_whole(two_files):
    texts = joined.load_texts(_cfg())
    whole = texts["train"] + texts["val"]
    assert whole.index("alpha 29") < whole.index("omega 0") and "T99" not in whole and "T199" not in whole
    assert "omega" in texts["val"] and "alpha" not in texts["val"]  # the last tenth of the joined text
    assert len(texts["train"]) == int(0.9 * len(whole))
    head = joined.load_texts(_cfg(max_chars=500))
    assert len(head["train"] + head["val"]) == 500 and "omega" not in head["train"] + head["val"]


def test_its_fingerprint_names_each_file_from_its_bytes_or_else_the_data_folder_s_digests(
    two_files, tmp_path, monkeypatch
):
    cfg = _cfg()
    here = cfg.fingerprint()
    assert here.startswith("sha256:") and here != _cfg(files=(SECOND, FIRST)).fingerprint()  # the order is part of it
    # a machine with the digests and not the text (a GPU machine's restored pack) names the same data
    elsewhere = tmp_path / "restored"
    elsewhere.mkdir()
    (elsewhere / joined.SUMS).write_text((two_files / joined.SUMS).read_text())
    monkeypatch.setenv("LMC_DATA_DIR", str(elsewhere))
    assert cfg.fingerprint() == here
    (elsewhere / joined.SUMS).write_text((two_files / joined.SUMS).read_text().splitlines()[0] + "\n")
    with pytest.raises(DataError, match="b.txt is not in the data folder"):
        cfg.fingerprint()
    # a machine that knows none of the files reads the corpus's hub copy, as a corpus's own file does (offline here)
    (elsewhere / joined.SUMS).unlink()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="hub is not reachable"):
        cfg.fingerprint()
    assert cfg.sequences_per_epoch(experiments.config("ar_ed/baseline", "smoke", device="cpu").model) is None
    # a changed file is other data
    monkeypatch.setenv("LMC_DATA_DIR", str(two_files))
    (two_files / SECOND).write_text((two_files / SECOND).read_text() + _doc(300, "more"))
    assert cfg.fingerprint() != here


def test_every_door_reads_the_joined_tokens_not_the_corpus_s_first_file(two_files):
    cfg = _cfg()
    run = experiments.config("ar_ed/baseline", "smoke", device="cpu")
    run = run.replace(data=cfg, model=run.model.replace(vocab_size=data.vocab_size(cfg)))
    tokens = data.load_tokens(cfg)
    n = sum(a.size for a in tokens.splits.values())
    assert n == sum(len(t) for t in joined.load_texts(cfg).values())  # one character, one token
    assert data.build_source(run).data.splits["train"].size == tokens.splits["train"].size
    assert cfg.sequences_per_epoch(run.model) == tokens.splits["train"].size / run.model.context_size
    assert 0 < data.unigram_loss(run) < 10
    assert set(data.tokenizer(cfg).decode(tokens.splits["val"][:50].tolist())) <= set("omega 0123456789T\n")


def test_a_joined_config_names_two_distinct_files_inside_the_data_folder():
    with pytest.raises(ConfigError, match="two or more distinct"):
        JoinedDataConfig(corpus="wikipedia", files=(FIRST,), tokenizer="char")
    with pytest.raises(ConfigError, match="inside the data folder"):
        JoinedDataConfig(corpus="wikipedia", files=(FIRST, "../b.txt"), tokenizer="char")
    with pytest.raises(ConfigError, match="rule of fractions"):
        JoinedDataConfig(
            corpus="wikipedia", files=(FIRST, SECOND), tokenizer="char", split="given", eval_splits=("all",)
        )


def test_gpu_and_paper_read_both_wikipedia_files_and_cpu_and_smoke_runs_never_execute_the_joined_module():
    """The cpu and smoke runs keep their corpus, so their configs and keys: the joined data kind is a module of its
    own, outside their code closure (editing it retrains none of them)."""
    for name in ("ar_ed/baseline", "deepsight/mse_d11", "ar_ed/mse_pos_sub"):
        for profile in ("gpu", "paper"):
            d = experiments.config(name, profile, device="cpu").data
            assert isinstance(d, JoinedDataConfig) and d.files == WIKIPEDIA_FILES and d.tokenizer == "gpt2"
        assert type(experiments.config(name, "cpu", device="cpu").data) is LMDataConfig
    assert WIKIPEDIA_FILES[0] == data.corpora.get("wikipedia").files["all"]
    for profile in ("cpu", "smoke"):
        for chapter in experiments.CHAPTERS:
            for run in experiments.plan(chapter, profile, device="cpu"):
                fn = run.procedure.fn
                roots = (
                    fn.__module__ if fn else TRAINER,
                    models.module_of(run.config.model.family),
                    data.module_of(run.config.data.kind),
                )
                assert "lmcompanion.data.joined" not in fingerprint.closure(*roots), run.id


def test_the_mixer_s_wikipedia_setting_is_the_headline_s_arms_on_wikipedia_at_gpu_and_paper_only():
    for name, base in mixer_exp.WIKIPEDIA_ARMS.items():
        exp = experiments.get(name)
        assert "the book's setting" in exp.title and exp.profiles == ("gpu", "paper")
        for profile in ("gpu", "paper"):
            ours, theirs = (experiments.config(n, profile, device="cpu") for n in (name, base))
            assert ours.model == theirs.model and ours.train == theirs.train and ours.tokens() == theirs.tokens()
            assert isinstance(ours.data, JoinedDataConfig) and ours.data.files == WIKIPEDIA_FILES
            assert ours.data.vocab_size == theirs.data.vocab_size
            assert experiments.seeds_of(name, profile) == experiments.seeds_of(base, profile)
        assert experiments.config(name, "gpu", device="cpu").data.max_chars == mixer_exp.WIKIPEDIA_HEAD
    for profile in ("cpu", "smoke"):
        assert not any(n in mixer_exp.WIKIPEDIA_ARMS for n in (r.name for r in experiments.plan("mixer", profile)))


# --- the pack: a joined corpus's token ids and its files' digests, not its text ------------------------------------


def test_a_pack_carries_a_joined_corpus_s_tokens_and_digests_and_names_the_same_data_without_its_text(
    two_files, tmp_path, monkeypatch
):
    from lmcompanion.campaign import pack as pack_mod

    cfg = _cfg()
    run = experiments.config("ar_ed/baseline", "smoke", device="cpu")
    run = run.replace(data=cfg, model=run.model.replace(vocab_size=data.vocab_size(cfg)))
    here, ids = cfg.fingerprint(), data.load_tokens(cfg).splits["train"].copy()
    carried, named = pack_mod._corpus_files([run])
    assert carried == [] and named == [FIRST, SECOND]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "demo-1.0-py3-none-any.whl").write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(pack_mod.plan_mod, "steps", lambda *a, **k: [])
    monkeypatch.setattr(pack_mod, "_run_configs", lambda steps: [run])
    manifest = pack_mod.make_pack(tmp_path / "pack", "smoke", wheels=wheels, log=lambda *a: None)
    data_files = {v["unpacks_to"] for v in manifest["files"].values() if v["kind"] == "data"}
    assert data_files == {joined.SUMS}  # no text
    caches = [v for v in manifest["files"].values() if v["kind"] == "cache"]
    assert caches and all(
        v["unpacks_to"] and v["bytes"] < v["unpacked_bytes"]  # compressed
        for v in caches
        if v["unpacked_bytes"] > 1000
    )
    # arrival: an empty cache, no data folder; the text may not be read
    for k in ("LMC_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(k, "")
    monkeypatch.delenv("LMC_DATA_DIR")
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "arrival"))
    pack_mod.unpack(tmp_path / "pack", log=lambda *a: None)
    monkeypatch.setattr(joined, "load_texts", lambda c: pytest.fail("the text was read again"))
    assert cfg.fingerprint() == here
    assert (data.load_tokens(cfg).splits["train"] == ids).all()


def test_a_pack_entry_that_names_part_of_a_compressed_file_is_refused(tmp_path):
    from lmcompanion.campaign import pack as pack_mod
    from lmcompanion.untrusted import Untrusted

    sha = "0" * 64
    manifest = {"files": {"cache/tokens/x.bin.gz": {"sha256": sha, "bytes": 3, "kind": "cache", "unpacks_to": "x"}}}
    with pytest.raises(Untrusted, match="but not all of them"):
        pack_mod._pack_targets(tmp_path, manifest, tmp_path / "cache")
    whole = {**manifest["files"]["cache/tokens/x.bin.gz"], "unpacked_sha256": sha, "unpacked_bytes": 9}
    targets = pack_mod._pack_targets(tmp_path, {"files": {"cache/tokens/x.bin.gz": whole}}, tmp_path / "cache")
    assert targets == {"cache/tokens/x.bin.gz": tmp_path / "cache" / "x"}


# --- item 6: what a row needs from a run's files, measured in the slot and recorded with the run -------------------


@pytest.fixture(scope="module")
def hourglass_measured(tmp_path_factory):
    """Smoke runs of the hourglass headline made in one store (the GPU machine), recorded, measured on their weights
    by the slot's hook (campaign.measures.record), and imported into another store (a CPU build)."""
    from lmcompanion import recorded
    from lmcompanion.campaign import measures
    from lmcompanion.chapters import hourglass
    from lmcompanion.train import RunStore

    names = [hourglass.VANILLA, hourglass.BEST_ATTN]
    made = RunStore(tmp_path_factory.mktemp("elsewhere"))
    runs = {n: [made.run(experiments.config(n, "smoke", seed=s)) for s in (0, 1)] for n in names}
    out = tmp_path_factory.mktemp("recorded")
    logged = []
    for rs in runs.values():
        for run, path in zip(rs, recorded.write(rs, out)):
            measures.record(run, path, log=logged.append)
    store = RunStore(tmp_path_factory.mktemp("runs"))
    recorded.import_dir(out, store)
    return runs, recorded.arms(names, store=store)["smoke"].runs, out, logged


def test_the_last_token_rows_are_decided_from_recorded_runs_as_from_the_runs_themselves(
    hourglass_measured, monkeypatch
):
    """The smoke arms learn little; with the learning gate's line put above them (no data read), the rows are
    decided, and alike from the recorded measures and from the weights."""
    from lmcompanion import claims, learning
    from lmcompanion.train.store import NoRunFiles
    from lmcompanion.verdicts import NOT_DECIDED

    monkeypatch.setattr(learning, "reference", lambda cfg, metric: learning.Reference("the unigram loss", 9.0))

    made, found, out, logged = hourglass_measured
    assert any("measured on its files: hourglass/window_losses/val" in line for line in logged)
    with pytest.raises(NoRunFiles):
        next(iter(found.values()))[0].load_model()  # no weights came with them
    from_weights = {v.claim: v for v in claims.verdicts("hourglass", claims.Context(made))}
    from_record = {v.claim: v for v in claims.verdicts("hourglass", claims.Context(found))}
    last_token = [c for c in from_record if "last token" in c and "384-32" in c]
    assert last_token
    for c in last_token:
        assert "files" not in from_record[c].ours + from_record[c].verdict, from_record[c]
        assert from_record[c].outcome != NOT_DECIDED, from_record[c]
        assert (from_record[c].ours, from_record[c].verdict) == (from_weights[c].ours, from_weights[c].verdict)


def test_a_recorded_measure_is_the_value_the_weights_give_and_a_missing_one_says_it_needs_the_files(
    hourglass_measured, tmp_path
):
    from lmcompanion import recorded
    from lmcompanion.chapters import hourglass
    from lmcompanion.train import RunStore
    from lmcompanion.train.store import NoRunFiles

    made, found, out, _ = hourglass_measured
    run, imported = made[hourglass.BEST_ATTN][0], found[hourglass.BEST_ATTN][0]
    assert (
        hourglass.window_losses(imported)
        == hourglass.window_losses(imported, "val")
        == pytest.approx(hourglass.window_losses(run), rel=1e-6)
    )
    assert hourglass.group_position_losses(imported) == pytest.approx(hourglass.group_position_losses(run), rel=1e-6)
    assert set(recorded.recorded_measures(found[hourglass.VANILLA][0])) == {  # the chapter's, and none other
        "hourglass/window_losses/val",
        "hourglass/group_position_losses/val",
    }
    with pytest.raises(NoRunFiles, match="no hourglass/window_losses/train was recorded"):
        hourglass.window_losses(imported, "train")
    # a file recorded without measures (the first H200 slot's): the row needs the run's files, as before
    bare = tmp_path / "bare" / "smoke"
    bare.mkdir(parents=True)
    path = next(out.glob(f"smoke/{hourglass.BEST_ATTN.replace('/', '__')}-s0.json"))
    record = json.loads(path.read_text())
    del record["measures"]
    (bare / path.name).write_text(json.dumps(record))
    old = recorded.import_dir(bare.parent, RunStore(tmp_path / "store"))[0]
    with pytest.raises(NoRunFiles):
        hourglass.window_losses(old)


def test_a_recorded_file_s_measures_are_checked_strictly(hourglass_measured, tmp_path):
    from lmcompanion import recorded
    from lmcompanion.untrusted import Untrusted

    _, _, out, _ = hourglass_measured
    path = next(out.glob("smoke/*.json"))
    good = json.loads(path.read_text())
    assert good["measures"] and recorded.validate(good, path)
    for bad in (
        {"k": "a string"},
        {"k": [1.0, "x"]},
        {"k": {"a": [1.0]}},
        {"k": True},
        ["not", "an", "object"],
        {"k": [[1.0]]},
        {"x" * 300: 1.0},
    ):
        with pytest.raises((LMCError, Untrusted)):
            recorded.validate({**good, "measures": bad}, path)
    with pytest.raises((LMCError, Untrusted)):
        recorded.parse(path, path.read_bytes().replace(b'"measures": {', b'"measures": {"nan": NaN, ', 1))


def test_a_measure_that_fails_is_left_out_and_named_and_the_run_stays_recorded(hourglass_measured, monkeypatch):
    from lmcompanion import recorded
    from lmcompanion.campaign import measures
    from lmcompanion.chapters import hourglass

    made, _, _, _ = hourglass_measured
    run = made[hourglass.BEST_ATTN][0]
    m = recorded.MEASURES["hourglass/group_position_losses"]

    def fails(run, split="val", device="cpu"):
        return 1 / 0

    def not_finite(run, split="val", device="cpu"):
        return [1.0, float("nan")]

    monkeypatch.setitem(recorded.MEASURES, m.name, dataclasses.replace(m, compute=fails))
    logged = []
    found = measures.compute(run, log=logged.append)
    assert "hourglass/window_losses/val" in found and "hourglass/group_position_losses/val" not in found
    assert any("group_position_losses/val left out: ZeroDivisionError" in line for line in logged)
    monkeypatch.setitem(recorded.MEASURES, m.name, dataclasses.replace(m, compute=not_finite))
    assert "hourglass/group_position_losses/val" not in measures.compute(run, log=logged.append)
    assert "group_position_losses/val left out: it is not a finite number" in logged[-1]


def test_the_retrieval_rows_on_embeddings_are_decided_from_recorded_runs_as_from_the_runs_themselves(tmp_path):
    """The metric baselines, BM25 and the norms' spread read a matcher run's embeddings, which stay on the machine that
    made it: measured there and recorded, they decide the same rows here."""
    from lmcompanion import claims, recorded
    from lmcompanion.campaign import measures
    from lmcompanion.train import RunStore

    name = "retrieval/flat_d1024_c32"
    made = RunStore(tmp_path / "elsewhere")
    runs = [r.train(made) for r in experiments.plan([name], "smoke", seeds=2) if r.name == name]
    for run, path in zip(runs, recorded.write(runs, tmp_path / "recorded")):
        assert {
            "retrieval/metric_top1/cosine",
            "retrieval/metric_top1/l1",
            "retrieval/metric_top1/l2",
            "retrieval/norm_spread",
        } <= set(measures.record(run, path, log=lambda *a: None))
    store = RunStore(tmp_path / "runs")
    recorded.import_dir(tmp_path / "recorded", store)
    found = recorded.arms([name], store=store)["smoke"].runs
    from_weights = {v.claim: v for v in claims.verdicts("retrieval", claims.Context({name: runs}))}
    from_record = {v.claim: v for v in claims.verdicts("retrieval", claims.Context(found))}
    on_embeddings = [c for c, v in from_record.items() if "top-1" in v.ours or "spread" in v.ours]
    assert on_embeddings and set(from_record) == set(from_weights)
    for c in from_record:
        assert "needs the run's files" not in from_record[c].ours, c
        assert (from_record[c].ours, from_record[c].verdict) == (from_weights[c].ours, from_weights[c].verdict), c


# --- item 8: the GPT-2-small bench's sweep of micro-batches, with what the profiler says is idle -------------------


def test_the_gpt2_bench_sweeps_its_micro_batches_profiles_each_and_reports_the_fastest():
    """The rehearsal's stand-in (2 x 64, context 64) on the CPU: the sweep's code path, in seconds."""
    from lmcompanion.campaign import bench as cbench

    run = cbench.gpt2_small("smoke")
    result = cbench.bench_step(run)
    sweep = result["sweep"]
    assert [e["micro_batch"] for e in sweep] == list(cbench.REHEARSAL_SWEEP_BATCHES)
    assert all(
        e["tokens/s"] > 0 and e["tokens/step"] == e["micro_batch"] * run.config.model.context_size for e in sweep
    )
    best = max(sweep, key=lambda e: e["tokens/s"])
    assert result["tokens/s"] == best["tokens/s"] and result["batch"]["micro_batch"] == best["micro_batch"]
    for e in sweep:
        p = e["profile"]
        assert p["work"] == "top-level CPU operators" and 0 <= p["idle fraction"] < 1 and p["busy (ms)"] > 0
        assert p["top"] and abs(sum(t["share of busy"] for t in p["top"]) - 1) < 0.5
    assert result["config_hash"] == run.config.hash()


def test_a_sweep_stops_at_the_first_micro_batch_that_does_not_fit_and_starts_none_past_its_allowance(monkeypatch):
    from lmcompanion import bench
    from lmcompanion.campaign import bench as cbench
    from lmcompanion.errors import OutOfMemory

    now = [0.0]

    def fake(run, steps, warmup, profile_steps=0):
        mb = run.config.train.batch_size
        now[0] += 100.0  # each micro-batch takes 100 s on this clock
        if mb >= 16:
            raise OutOfMemory(f"micro-batch {mb} ran out of GPU memory")
        return {"tokens/s": 1000 * mb - mb * mb, "s/step": 1.0}

    monkeypatch.setattr(bench, "bench", fake)
    run = cbench.gpt2_small("smoke")
    out = bench.sweep(run, [4, 8, 16, 24], clock=lambda: now[0])
    got = {e["micro_batch"]: e.get("not measured", "measured") for e in out["sweep"]}
    assert got[4] == got[8] == "measured" and got[16].startswith("out of memory")
    assert got[24] == "not started: micro-batch 16 did not fit in memory" and out["micro_batch"] == 8
    now[0] = 0.0
    out = bench.sweep(run, [4, 8, 16], allowance_s=250.0, clock=lambda: now[0])
    got = {e["micro_batch"]: e.get("not measured", "measured") for e in out["sweep"]}
    assert got[4] == got[8] == "measured" and got[16].startswith("not started: 200 s of the 250 s allowance")
    with pytest.raises(ConfigError):
        bench.sweep(run, [8, 4])


def test_idle_is_the_span_s_time_in_which_no_kernel_ran():
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from lmcompanion.bench import idle_summary

    def ev(name, a, b, gpu, parent=None):
        return SimpleNamespace(
            name=name,
            time_range=SimpleNamespace(start=a, end=b),
            device_type=DeviceType.CUDA if gpu else DeviceType.CPU,
            cpu_parent=parent,
        )

    events = [ev("step", 0, 400, False), ev("gemm", 0, 100, True), ev("gemm", 50, 150, True), ev("add", 250, 300, True)]
    s = idle_summary(events, on_gpu=True)
    assert (s["span (ms)"], s["busy (ms)"], s["idle fraction"]) == (0.4, 0.2, 0.5)
    assert s["gaps"] == 2 and s["largest gap (ms)"] == 0.1  # 150-250 and 300-400
    assert [t["name"] for t in s["top"]] == ["gemm", "add"] and s["top"][0]["share of busy"] == 1.0  # 200 of 200 busy
    cpu = idle_summary(events[:1] + [ev("mm", 10, 20, False, parent=events[0])], on_gpu=False)
    assert cpu["idle fraction"] == 0.0 and [t["name"] for t in cpu["top"]] == ["step"]  # only top-level operators


def test_the_sweep_is_planned_again_on_the_gpu_and_estimated_at_its_allowance():
    """Slot 1 benched GPT-2 small at micro-batch 12 alone; the sweep is another config (its steps), so the next slot
    runs it, counted at the allowance the sweep keeps to."""
    from lmcompanion.campaign import bench as cbench
    from lmcompanion.campaign import plan as cplan
    from lmcompanion import recorded

    path = recorded.default_dir() / "campaign" / "gpu" / "bench.json"
    if not path.is_file():
        pytest.skip(f"no {path}")
    slot1 = json.loads(path.read_text())
    step = cplan.Step(cbench.GPT2, "bench", 0.0, 0, cbench.gpt2_small("gpu"))
    assert slot1["results"][cbench.GPT2]["batch"]["micro_batch"] == cbench.SWEEP_BATCHES[0]
    assert not cplan.bench_done(step, slot1, "cuda")
    assert cbench.minutes(step.run.config, "gpu") == (cbench.BENCH_SETUP_S + cbench.SWEEP_ALLOWANCE_S) / 60
