"""The retrieval chapter: the matching items, the embedding positions, the extractive queries, the matcher, and one
smoke run end to end through the run store."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from lmcompanion import experiments, models, untrusted
from lmcompanion.config import ConfigError
from lmcompanion.errors import DataError
from lmcompanion.data import retrieval as rdata
from lmcompanion.data.stories import StoriesDataConfig, load_stories
from lmcompanion.experiments import retrieval as rexp
from lmcompanion.models.matcher import (
    EMBED_POSITION,
    Matcher,
    MatcherConfig,
    MixerAutoencoder,
    AutoencoderConfig,
    embed,
)
from lmcompanion.models.mixer import MaskedMixer, MixerConfig
from lmcompanion.models.transformer import Transformer, llama_config


def _set(n=50, d=6, n_ctx=8):
    q = torch.randn(n, d)
    t = torch.arange(n, dtype=torch.float32)[:, None].expand(n, d).clone()  # target i's rows all hold the value i
    return rdata.MatchingSet(q, t, n_ctx)


@pytest.mark.parametrize("n_ctx", [3, 8, 32])
def test_each_item_has_exactly_one_true_target_never_the_own_story_as_a_negative_and_the_label_points_at_it(n_ctx):
    data = _set(n=40, n_ctx=n_ctx)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        index = torch.randint(0, len(data), (16,), generator=g)
        rows, labels = data.draw(index, g)
        assert rows.shape == (16, n_ctx) and (rows[:, 0] == -1).all()
        cands = rows[:, 1:]
        assert ((cands == index[:, None]).sum(1) == 1).all()  # exactly one true target
        assert (cands[torch.arange(16), labels] == index).all()  # the label points at it
        for row in cands:  # the negatives are distinct stories (drawn without replacement)
            assert row.unique().numel() == n_ctx - 1
        batch = data.items(index, g)
        assert torch.equal(batch["x"][:, 0], data.queries[index])  # row 0 is the query
        true_rows = batch["x"][torch.arange(16), batch["targets"] + 1, 0]
        assert torch.equal(true_rows, index.float())


def test_the_true_target_lands_at_every_position_and_negatives_are_resampled():
    data = _set(n=30, n_ctx=6)
    g = torch.Generator().manual_seed(1)
    index = torch.zeros(2000, dtype=torch.long)
    rows, labels = data.draw(index, g)
    assert set(labels.tolist()) == set(range(5))  # uniform over the candidate rows
    src = rdata.RetrievalSource(
        {
            "query_train": data.queries,
            "target_train": data.targets,
            "query_test": data.queries,
            "target_test": data.targets,
        },
        6,
        rdata.RetrievalDataConfig(n_pairs=30),
        experiments.config("retrieval/flat_d512_c32", "smoke", device="cpu").train,
        seed=0,
    )
    a, b = src.train_batches(0)[0], src.train_batches(1)[0]
    assert not torch.equal(a["x"], b["x"])
    assert torch.equal(src.train_batches(0)[0]["x"], a["x"])  # a pure function of (seed, step)


def test_a_split_too_small_for_the_candidates_is_rejected_with_the_fix():
    with pytest.raises(ConfigError, match="raise data.n_pairs"):
        rdata.MatchingSet(torch.zeros(5, 4), torch.zeros(5, 4), n_ctx=8)
    # at the boundary: an item draws n_ctx - 1 stories besides its own (7 of a split of 7 could not be drawn)
    with pytest.raises(ConfigError, match="a split needs at least 8, but it has 7"):
        rdata.MatchingSet(torch.zeros(7, 4), torch.zeros(7, 4), n_ctx=8)
    rows, _ = rdata.MatchingSet(torch.zeros(8, 4), torch.zeros(8, 4), n_ctx=8).draw(torch.arange(8), torch.Generator())
    assert all(len(set(r[1:].tolist())) == 7 for r in rows)


def test_mixer_embeddings_are_read_at_the_second_to_last_position():
    torch.manual_seed(0)
    model = MaskedMixer(MixerConfig(vocab_size=50, context_size=12, n_embed=16, n_layer=2)).eval()
    idx = torch.randint(3, 50, (3, 12))
    e = embed(model, idx)
    h = model.hidden(idx)
    assert EMBED_POSITION["mixer"] == -2
    assert torch.equal(e, h[:, -2])
    # the last token cannot change a causal mixer's second-to-last output; it would change the last one's
    idx2 = idx.clone()
    idx2[:, -1] = (idx[:, -1] + 1) % 50
    assert torch.equal(embed(model, idx2), e)
    assert not torch.allclose(model.hidden(idx2)[:, -1], h[:, -1])


def test_transformer_embeddings_are_read_at_the_last_position_after_the_final_norm():
    torch.manual_seed(0)
    model = Transformer(llama_config(16, 2, 2, vocab_size=50, context_size=12)).eval()
    with torch.no_grad():
        model.norm_f.weight.mul_(3.0)  # a non-trivial final norm, so "after the norm" is visible
    idx = torch.randint(3, 50, (3, 12))
    e = embed(model, idx)
    assert torch.allclose(e, model.hidden(idx)[:, -1])
    x = model.wte(idx)
    rope = models.transformer.rope_cos_sin(12, 8, 10_000.0)
    for block in model.blocks:
        x = block(x, rope)
    assert torch.allclose(e, model.norm_f(x)[:, -1], atol=1e-6)
    assert not torch.allclose(e, x[:, -1], atol=1e-3)  # not before the norm
    idx2 = idx.clone()
    idx2[:, -1] = (idx[:, -1] + 1) % 50
    assert not torch.allclose(embed(model, idx2), e)  # the last token is read


def test_autoencoder_embedding_is_the_encoders_last_position():
    torch.manual_seed(0)
    model = MixerAutoencoder(AutoencoderConfig(vocab_size=40, context_size=10, n_embed=8, n_layer=1)).eval()
    idx = torch.randint(3, 40, (2, 10))
    e = embed(model, idx)
    x = model.wte(idx)
    for block in model.encoder:
        x = block(x)
    assert torch.equal(e, x[:, -1])


def test_extractive_queries_never_occur_verbatim_in_their_stories(data_dir):
    stories = load_stories(StoriesDataConfig(corpus="tinystories", vocab_size=1024))["train"][:600]
    got = rdata.extractive_pairs(stories, 500)
    assert len(got) >= 400
    for p in got:
        assert p.query not in p.story
        assert p.query in stories[p.index]  # the query is a sentence of the original story
        assert len(p.query.split()) >= rdata.MIN_WORDS
    assert got == rdata.extractive_pairs(stories, 500)  # deterministic


def test_extractive_rule_removes_every_copy_and_skips_short_stories():
    story = "The dog ran to the park. A bird sang. The dog ran to the park. Mom smiled at the sky."
    q, rest = rdata.extract_query(story)
    assert q == "The dog ran to the park."  # its words are the story's most frequent
    assert q not in rest and rest == "A bird sang. Mom smiled at the sky."
    assert rdata.extract_query("One sentence only. Two.") is None


def test_instruct_parser_reads_summary_and_story():
    lines = [
        "Features: Dialogue",
        "Summary: A cat finds a hat.",
        "Story: Once there was a cat.",
        "It found a hat.",
        "<|endoftext|>",
        "Words: run",
        "Story: No summary here.",
        "<|endoftext|>",
    ]
    got = rdata.parse_instruct(lines)
    assert len(got) == 1 and got[0].query == "A cat finds a hat."
    assert got[0].story == "Once there was a cat.\nIt found a hat."


def _fake_hub(monkeypatch, lines, revision="abc123"):
    """TinyStoriesInstruct as the hub would serve it (a `text` column of lines), with the network left alone."""
    import datasets

    calls = []

    def load_dataset(path, split, revision=None, cache_dir=None):
        calls.append((path, split, revision))
        return datasets.Dataset.from_dict({"text": lines})

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr(rdata, "_instruct_revision", lambda: revision)
    return calls


def test_instruct_pairs_from_the_hub_are_the_first_n_entries_at_the_pinned_revision(monkeypatch):
    entries = []
    for i in range(25_000):  # more lines than one read batch, so that entries straddle batches
        entries += [f"Summary: Summary {i}.", f"Story: Story {i} begins.", "It ends.", rdata.MARKER]
    calls = _fake_hub(monkeypatch, entries)
    cfg = rdata.RetrievalDataConfig(embedder="mixer/flat_d512", queries="instruct", n_pairs=3000)
    got = rdata.pairs(cfg, [])
    assert calls == [(rdata.INSTRUCT_HUB, "train", "abc123")]  # the revision the fingerprint names
    assert cfg.fingerprint() == f"hub:{rdata.INSTRUCT_HUB}@abc123"
    flat = got["train"] + got["test"]
    assert len(flat) == 3000 and len(got["test"]) == 300
    assert [p.index for p in flat] == list(range(3000))
    assert flat[2500].query == "Summary 2500." and flat[2500].story == "Story 2500 begins.\nIt ends."


def test_instruct_pairs_stop_early_with_the_fix_named(monkeypatch):
    _fake_hub(monkeypatch, ["Summary: A.", "Story: B.", rdata.MARKER])
    cfg = rdata.RetrievalDataConfig(embedder="mixer/flat_d512", queries="instruct", n_pairs=20)
    with pytest.raises(DataError, match="lower data.n_pairs"):
        rdata.pairs(cfg, [])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline: the hub is not read, and the message says what to do
    with pytest.raises(DataError, match="queries='extractive'"):
        rdata.pairs(cfg, [])
    with pytest.raises(DataError, match="queries='extractive'"):
        cfg.fingerprint()


def test_matcher_scores_every_candidate_and_is_bidirectional():
    torch.manual_seed(0)
    for kind in ("mixer", "transformer"):
        m = Matcher(MatcherConfig(kind=kind, n_embed=8, n_layer=2, context_size=6, n_head=2))
        x = torch.randn(3, 6, 8, requires_grad=True)
        out = m(x, torch.tensor([0, 4, 2]))
        assert out.logits.shape == (3, 5)
        out.logits[:, 0].sum().backward()  # the first candidate's score reads the last candidate (no causal mask)
        assert x.grad[:, -1].abs().sum() > 0
    with pytest.raises(ConfigError, match="kind='transformer'"):
        MatcherConfig(kind="mixer", batch_axis=True)


def test_every_retrieval_experiment_builds_at_every_profile():
    names = experiments.names("retrieval")
    assert len(names) >= 12
    for name in names:
        for profile in ("smoke", "cpu", "gpu", "paper"):
            cfg = experiments.config(name, profile, device="cpu")
            if cfg.data.kind == "retrieval":
                assert cfg.model.n_embed == rexp.embedder_width(cfg.data.embedder, profile)
    assert experiments.config("retrieval/flat_d1024_c128", "paper", device="cpu").model.candidates == 127
    assert experiments.config("retrieval/flat_d1024_c32", "paper", device="cpu").data.queries == "instruct"


def _retrieval_run(name="retrieval/flat_d512_c32"):
    return experiments.planned(name, "smoke", 0, device="cpu")


def test_a_smoke_run_end_to_end_through_the_store():
    planned = _retrieval_run()
    assert [n.name for n in planned.needs] == ["mixer/flat_d512"]  # the embedder run is trained first
    run = planned.train()
    assert run.finished and set(run.summary["final"]) == {"train", "test", "train_acc", "test_acc"}
    assert run.procedure["settings"]["embedder_key"] == planned.needs[0].key()
    emb = torch.load(run.summary["embeddings"]["file"], weights_only=True)
    assert emb["query_test"].shape[0] == run.summary["pairs"]["train"] * 0 + run.summary["pairs"]["test"]
    assert run.evals()["step"].iloc[0] == 0  # evaluated before the first step, from chance
    assert _retrieval_run().train().path == run.path  # reused
    assert experiments.planned("retrieval/untrained_d512_c32", "smoke", 0, device="cpu").needs == ()


@pytest.mark.parametrize("stop_at", [1, 3])
def test_a_retrieval_run_resumes_byte_identically_after_an_interrupt(tmp_path, stop_at):
    """The matcher trains through the shared trainer: a Ctrl-C (a callback raising KeyboardInterrupt, as a second
    Ctrl-C does) keeps a checkpoint, and running the same run again resumes it to the same bytes."""
    from lmcompanion.train import RunStore

    planned = _retrieval_run()
    whole = planned.train(RunStore(tmp_path / "whole"))

    def stop(step):
        if step == stop_at:
            raise KeyboardInterrupt

    store = RunStore(tmp_path / "cut")
    with pytest.raises(KeyboardInterrupt):
        planned.train(store, callbacks=[stop])
    folder = store.folder(planned.config, planned.procedure.fn, planned.settings)
    assert (folder / "ckpt.pt").is_file() and not (folder / "summary.json").exists()
    resumed = planned.train(store)
    assert resumed.summary["resumed_from"] == stop_at
    assert (resumed.path / "metrics.jsonl").read_bytes() == (whole.path / "metrics.jsonl").read_bytes()
    assert (resumed.path / "model.pt").read_bytes() == (whole.path / "model.pt").read_bytes()


def test_a_retrieval_run_stops_before_a_non_finite_update(tmp_path, monkeypatch):
    from lmcompanion.errors import TrainingDiverged
    from lmcompanion.models.matcher import Matcher
    from lmcompanion.train import RunStore

    planned = _retrieval_run()
    forward = Matcher.forward

    def poisoned(self, x, targets=None):
        out = forward(self, x, targets)
        return out if not self.training else type(out)(out.logits, out.loss * float("nan"), out.aux)

    monkeypatch.setattr(Matcher, "forward", poisoned)
    with pytest.raises(TrainingDiverged, match="stopped at step 0"):
        planned.train(RunStore(tmp_path))


def test_an_exported_run_lets_numpy_alone_re_derive_its_numbers(tmp_path, capsys):
    import numpy as np

    from lmcompanion.cli import main

    run = _retrieval_run().train()
    assert main(["export-retrieval", str(run.path), "-o", str(tmp_path)]) == 0
    f = untrusted.read_export(capsys.readouterr().out.strip())  # read back as an independent reader would, checked
    ours = f["ours"]
    q, t, cand, label = f["query_test"], f["target_test"], f["test_candidates"], f["test_label"]
    # the true story of item i is pair i's story; no candidate is another copy of it
    assert (cand[np.arange(len(label)), label] == f["test_query"]).all()
    assert ((cand == f["test_query"][:, None]).sum(1) == 1).all()
    assert len(f["test_query_text"]) == len(f["test_story_text"]) == len(t)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    scores = np.einsum("nd,nkd->nk", unit(q[f["test_query"]]), unit(t[cand]))
    assert np.mean(scores.argmax(-1) == label) == pytest.approx(ours["cosine_top1"])
    # the write-up's sphere: the spread of the test embeddings' norms, re-derived from the exported matrices
    norms = np.linalg.norm(np.concatenate([q, t]).astype(np.float64), axis=-1)
    assert norms.std(ddof=1) / norms.mean() == pytest.approx(ours["norm_spread"], rel=1e-9)
    assert ours["matcher_test_ce"] == run.summary["final"]["test"]
    assert main(["export-retrieval", "mixer/flat_d256", "--profile", "smoke", "-o", str(tmp_path)]) == 2
    assert "not a run of a retrieval arm" in capsys.readouterr().err
    assert main(["export-retrieval", "retrieval/flat_d512_c32", "--profile", "smoke", "-o", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip().endswith(run.path.name + ".npz")  # the name resolves to the same run


def test_pairs_are_split_by_story_the_last_tenth_for_testing():
    stories = [
        f"Tom saw a dog number {i}. The dog ran far away. Tom ran after the dog {i}. They played." for i in range(60)
    ]
    cfg = rdata.RetrievalDataConfig(n_pairs=50)
    got = rdata.pairs(cfg, stories)
    assert [p.index for p in got["train"]] == list(range(45)) and [p.index for p in got["test"]] == list(range(45, 50))
    with pytest.raises(Exception, match="lower data.n_pairs"):
        rdata.pairs(rdata.RetrievalDataConfig(n_pairs=100), stories)


def test_the_shared_trainer_refuses_a_retrieval_run_naming_the_procedure():
    from lmcompanion import data

    with pytest.raises(ConfigError, match="its procedure \\('match'\\)"):
        data.build_source(experiments.config("retrieval/flat_d512_c32", "smoke", device="cpu"))


def test_the_gpu_profile_reads_tinystories_own_summaries_where_the_stories_come_from_the_hub(monkeypatch):
    name = "retrieval/flat_d1024_c32"
    if experiments.config(name, "gpu", device="cpu").data.queries == "instruct":
        pytest.skip("no local copy of TinyStories here (LMC_DATA_DIR): the stories come from the hub")
    assert experiments.config(name, "cpu", device="cpu").data.queries == "extractive"  # a local copy: the substitute
    monkeypatch.delenv("LMC_DATA_DIR")  # the stories from the hub: their own summaries too
    assert experiments.config(name, "gpu", device="cpu").data.queries == "instruct"
    assert experiments.config(name, "cpu", device="cpu").data.queries == "extractive"  # cpu: always the substitute
    assert experiments.config(name, "paper", device="cpu").data.queries == "instruct"


def test_the_512_wide_transformer_embedder_is_the_write_ups_best_3060_transformer():
    """ "the transformer architecture with the lowest loss after the 12-hour 3060 compute (d_m=512, n_l=8, h=4,
    eta=0.005)" (issue 22, item 2), not the 16-head Llama of the tables."""
    cfg = experiments.config("retrieval/llama_d512_c32", "paper", device="cpu")
    assert cfg.data.embedder == "mixer/llama_d512_h4_eta005"
    llama = experiments.config(cfg.data.embedder, "paper", device="cpu")
    assert (llama.model.n_embed, llama.model.n_layer, llama.model.n_head, llama.train.lr) == (512, 8, 4, 0.005)
    # the transformer matcher reads the transformer's embeddings ("from the transformer's embeddings")
    assert (
        experiments.config("retrieval/transformer_matcher_llama_d1024_c32", "paper", device="cpu").data.embedder
        == "mixer/llama_d1024"
    )
    # the untrained control is 512 wide ("an untrained 512-dimensional masked mixer")
    assert experiments.config("retrieval/untrained_d512_c128", "paper", device="cpu").model.n_embed == 512


def test_rows_quote_the_write_ups_numbers_and_compare_like_with_like():
    from lmcompanion.chapters import retrieval as R

    rows = {r.text: r for r in R.SPECS}
    final = rows[
        "with 127 candidates, mixer embeddings (d_model=1024) end at a lower test loss than transformer embeddings"
    ]
    assert final.kind == "lower" and final.published.startswith("mixer 0.76 vs transformer 2.98")
    peak = rows[
        "with 127 candidates, mixer embeddings (d_model=1024) reach a lower test loss than transformer "
        "embeddings, each at its best evaluation"
    ]
    assert peak.kind == "lower_peak" and peak.published.startswith("mixer 0.01/0.76 vs transformer 0.61/2.27")
    small = rows[
        "with 31 candidates, mixer embeddings (d_model=512) end at a lower test loss than the best 3060 transformer's"
    ]
    assert "3.43" in small.published and "0.01/0.10" in small.published
    assert not any("no numbers" in r.published or "hardly" in r.published for r in R.SPECS)
    assert {n for r in R.SPECS for n in r.names} <= set(experiments.names("retrieval"))
    for name in R.MORE_PAIRS:  # the 550k pairs: the paper profile only
        assert experiments.get(name).profiles == ("paper",)
        assert experiments.config(name, "paper", device="cpu").data.n_pairs == 550_000


def test_l1_l2_and_cosine_retrieval_pick_the_nearest_candidate(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from lmcompanion.chapters import retrieval as R

    q = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    targets = torch.tensor([[0.9, 0.1], [5.0, 0.0], [0.0, 2.1], [0.0, 9.0]])
    emb = {"query_test": q, "target_test": targets}
    rows = torch.tensor([[-1, 1, 0], [-1, 3, 2]])  # query row, then candidates (story ids)
    labels = torch.tensor([1, 1])  # the true story is the second candidate of each item

    class Source:
        def eval_draws(self, split):
            return torch.arange(2), rows, labels

    monkeypatch.setattr(R.analysis, "_source", lambda run: (Source(), emb))
    run = SimpleNamespace(path=tmp_path)  # a run made here (not a recorded one): the measure is computed
    assert R.metric_top1(run, "l2") == 1.0 and R.metric_top1(run, "l1") == 1.0
    assert R.metric_top1(run, "cosine") == 0.0  # cosine ignores the norms: both candidates point the query's way
    with pytest.raises(ValueError, match="unknown metric"):
        R.metric_top1(run, "dot")


def test_peak_and_final_rows_read_the_runs_best_and_last_evaluations():
    import pandas as pd
    from types import SimpleNamespace

    from lmcompanion.chapters import retrieval as R
    from lmcompanion.data.retrieval import RetrievalDataConfig
    from lmcompanion.verdicts import FAILS, HOLDS

    def run(test_curve, n_ctx=32):
        ev = pd.DataFrame({"step": range(len(test_curve)), "test": test_curve, "train": [0.1] * len(test_curve)})
        return SimpleNamespace(
            evals=lambda: ev,
            summary={"final": {"test": test_curve[-1], "train": 0.1, "test_acc": 0.5}, "steps": len(test_curve) - 1},
            config=SimpleNamespace(model=SimpleNamespace(context_size=n_ctx), data=RetrievalDataConfig()),
        )

    mixer = [run([3.4, 1.0, 0.80 + 0.01 * s]) for s in range(3)]  # still falling
    transformer = [run([3.4, 0.50 + 0.01 * s, 2.9 + 0.01 * s]) for s in range(3)]  # a low peak, then overfits
    rows = {r.kind: r for r in R.SPECS if r.a == "retrieval/flat_d1024_c128" and r.b == "retrieval/llama_d1024_c128"}
    runs = {"retrieval/flat_d1024_c128": mixer, "retrieval/llama_d1024_c128": transformer}
    assert R.row_verdict(rows["lower"], runs).verdict == HOLDS  # final: 0.81 against 2.91
    assert R.row_verdict(rows["lower_peak"], runs).verdict == FAILS  # peak: 0.81 against 0.51
    assert R.row_verdict(rows["rises_more"], runs).verdict == HOLDS
    # a row that gates an arm on its training loss says so beside the arm, as the protocol's fit row does
    overfits = next(r for r in R.SPECS if r.kind == "overfits")
    shown = R.row_verdict(overfits, {overfits.a: mixer}).arms
    assert shown and all(a.label.endswith(f"({R.TRAINING_PAIRS})") for a in shown)


def test_a_retrieval_run_killed_with_sigkill_resumes_byte_identically(tmp_path):
    """kill -9 from outside during a retrieval run (its embedder already trained): the same command resumes from the
    last checkpoint and ends with the bytes of a run never interrupted."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "LMC_RUNS_DIR": str(tmp_path / "runs"), "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "lmcompanion",
        "train",
        "retrieval/flat_d512_c32",
        "--profile",
        "smoke",
        "--device",
        "cpu",
        "--set",
        "train.max_steps=300",
        "--set",
        "train.ckpt_interval=5",
    ]
    # the embedder first (a run of its own), so that the kill lands in the matcher's run
    subprocess.run(
        [sys.executable, "-m", "lmcompanion", "train", "mixer/flat_d512", "--profile", "smoke", "--device", "cpu"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not list((tmp_path / "runs").glob("retrieval_*/ckpt.pt")):
        time.sleep(0.02)
    if proc.poll() is not None:  # it failed (offline data missing, say): say why instead of waiting out the deadline
        raise AssertionError(
            f"the matcher's run ended ({proc.returncode}) before its first checkpoint: "
            f"{proc.stderr.read().decode()[-2000:]}"
        )
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    folder = next((tmp_path / "runs").glob("retrieval_*"))
    assert (folder / "ckpt.pt").is_file() and not (folder / "summary.json").exists(), "the run ended before the kill"
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    clean = subprocess.run(
        cmd, env={**env, "LMC_RUNS_DIR": str(tmp_path / "clean")}, capture_output=True, text=True, timeout=600
    )
    assert clean.returncode == 0, clean.stderr
    resumed = json.loads((folder / "summary.json").read_text())
    assert resumed["resumed_from"] and resumed["resumed_from"] % 5 == 0
    other = next((tmp_path / "clean").glob("retrieval_*"))
    assert (folder / "metrics.jsonl").read_bytes() == (other / "metrics.jsonl").read_bytes()
    assert (folder / "model.pt").read_bytes() == (other / "model.pt").read_bytes()


def test_embeddings_on_a_sphere_have_no_norm_spread_and_gaussian_ones_the_stated_level(monkeypatch, tmp_path):
    """The sphere row's rule, fixed before any embedding was looked at: norms spread (sd / mean) more than those of
    isotropic Gaussian vectors of the width, 1/sqrt(2d), are not on a sphere."""
    from types import SimpleNamespace

    from lmcompanion.chapters import retrieval as R

    d, n = 256, 4000
    gauss = torch.randn(n, d, generator=torch.Generator().manual_seed(0))
    run = SimpleNamespace(config=SimpleNamespace(model=SimpleNamespace(n_embed=d)), path=tmp_path)
    for emb, expected in ((torch.nn.functional.normalize(gauss, dim=-1), 0.0), (gauss, R.sphere_level(run))):
        half = n // 2
        monkeypatch.setattr(
            R.analysis, "_source", lambda r, e=emb: (None, {"query_test": e[:half], "target_test": e[half:]})
        )
        assert R.norm_spread(run) == pytest.approx(expected, abs=0.1 * R.sphere_level(run))


def test_the_lead_states_bm25_against_the_matchers_from_the_glued_rows():
    from lmcompanion import claims
    from lmcompanion.chapters import retrieval as R

    def arm(label, values, level=3.434):
        return {
            "label": label,
            "reference": "chance (ln 31)",
            "level": level,
            "values": values,
            "at": "final",
            "kind": "loss",
        }

    bm25 = {
        "claim": R.BM25,
        "outcome": "holds",
        "profile": "cpu",
        "ours": "BM25 top-1 0.92 [0.90, 0.94] among 31 candidates; the matcher's 0.03; chance 0.032",
    }
    rows = [
        bm25,
        {
            "claim": "x",
            "outcome": "not decided at this scale",
            "profile": "cpu",
            "arms": [arm("flat_d1024_c32", [3.43, 3.40]), arm("llama_d1024_c32", [3.44])],
        },
    ]
    text = claims.lead("retrieval", rows)
    assert (
        "BM25 top-1 0.92" in text
        and "none of the 2 matcher arms" in text
        and "never more than 0.0340 nats below" in text
    )
    learned = [bm25, {**rows[1], "arms": [arm("flat_d1024_c32", [2.0, 2.1]), arm("llama_d1024_c32", [3.44])]}]
    assert "1 of the 2 matcher arms trained on embeddings have left chance on their test pairs (flat_d1024_c32)" in (
        claims.lead("retrieval", learned)
    )
    # the protocol's check rows: their arms (training pairs, the control's test pairs) are not counted among the
    # matchers' test losses, and the sentence says whether the headline's matchers fitted and the control learned
    fits = {
        "claim": R.FITS,
        "outcome": "holds",
        "kind": "check",
        "profile": "cpu",
        "ours": "fit 2.2 nats below",
        "arms": [arm("flat_d1024_c32 (training pairs)", [0.6])],
    }
    control = {
        "claim": R.LEARNS,
        "outcome": "fails",
        "kind": "check",
        "profile": "cpu",
        "ours": "ctl 0.1 below",
        "arms": [arm("noisy_copy_d1024_c32", [0.1])],
    }
    text = claims.lead("retrieval", rows + [fits, control])
    assert "none of the 2 matcher arms" in text  # the check rows' arms, far below chance, are not in the tally
    assert text.endswith(
        "The headline's matchers fit their training pairs (fit 2.2 nats below), and the positive "
        "control does not learn a match that is there (ctl 0.1 below)."
    )
    assert "positive control" not in claims.lead("retrieval", rows + [control])  # said only beside the fit row
    # a row about training that gates an arm on its training pairs (the untrained mixer's overfitting) is not a test
    # loss that left chance: the cold cpu build at 828ed2d said "1 of the 6 ... (untrained_d512_c32)" from such a row
    overfits = {**rows[1], "claim": "y", "arms": [arm(f"untrained_d512_c32 ({R.TRAINING_PAIRS})", [1.9])]}
    assert "none of the 2 matcher arms" in claims.lead("retrieval", rows + [overfits])
    assert claims.lead("retrieval", [{**bm25, "outcome": "inconclusive at this scale"}, rows[1]]) == ""


def test_where_the_arms_run_is_generated_from_the_registry():
    text = experiments.where_they_run("retrieval")
    paper_only = [n for n in experiments.names("retrieval") if experiments.get(n).profiles == ("paper",)]
    assert paper_only and all(f"`{n}`" in text for n in paper_only)
    assert "run at `paper` only (550k pairs" in text
    assert all(f"`{n}`" in text for n in rexp.CPU_SKIP) and "every profile but `cpu`" in text
    for chapter in experiments.CHAPTERS:  # every chapter's line is written, whatever its arms' profiles
        experiments.where_they_run(chapter)


@pytest.mark.parametrize("related", [True, False])
def test_the_matcher_learns_a_match_that_is_there_and_none_that_is_not(tmp_path, related):
    """The book's positive control (``retrieval/noisy_copy_d1024_c32``), at the smoke profile's protocol: on its
    embeddings, each story its query plus noise, the matcher trained by the shared trainer ends far below chance on
    test pairs it never saw; on the same stories shuffled against their queries, it does not."""
    import dataclasses
    import math

    from lmcompanion.train.trainer import train

    cfg = experiments.config(rexp.CONTROL, "smoke", device="cpu")
    assert cfg.data.embedding == "noisy_copy" and cfg.model.init == "query" and cfg.data.whiten
    n_train = cfg.data.sequences_per_epoch(cfg.model)
    cfg = dataclasses.replace(
        cfg, train=rexp.train_config(dataclasses.replace(rexp.scale("smoke"), epochs=20), n_train)
    )
    emb = rdata.noisy_copies(cfg.data.n_pairs, cfg.data.test_fraction, cfg.model.n_embed, 0)
    if not related:
        g = torch.Generator().manual_seed(1)
        emb = {**emb, "target_train": emb["target_train"][torch.randperm(n_train, generator=g)]}
    source = rdata.RetrievalSource(emb, cfg.model.context_size, cfg.data, cfg.train, 0)
    summary = train(cfg, tmp_path, source=source, progress=False)
    chance = math.log(cfg.model.context_size - 1)
    test, acc = summary["final"]["test"], summary["final"]["test_acc"]
    if related:
        assert test < chance - 1.0 and acc >= 0.5, (test, acc)
    else:
        assert test > chance - 0.3 and acc < 0.3, (test, acc)


def test_noisy_copies_are_a_seeded_split_of_queries_and_their_noisy_stories():
    a = rdata.noisy_copies(50, 0.1, 8, seed=3)
    assert {k: tuple(v.shape) for k, v in a.items()} == {
        "query_train": (45, 8),
        "target_train": (45, 8),
        "query_test": (5, 8),
        "target_test": (5, 8),
    }
    noise = torch.cat([a["target_train"] - a["query_train"], a["target_test"] - a["query_test"]])
    assert noise.std().item() == pytest.approx(rdata.NOISE, rel=0.2)
    assert all(torch.equal(v, rdata.noisy_copies(50, 0.1, 8, seed=3)[k]) for k, v in a.items())
    assert not torch.equal(a["query_train"], rdata.noisy_copies(50, 0.1, 8, seed=4)["query_train"])
    cfg = experiments.config(rexp.CONTROL, "cpu", device="cpu")  # needs no corpus and no embedder run
    assert (
        cfg.data.fingerprint().startswith("generated:")
        and experiments.planned(rexp.CONTROL, "cpu", 0, device="cpu").needs == ()
    )


def test_the_small_profiles_run_the_book_s_protocol_and_paper_the_write_up_s():
    for profile in ("smoke", "cpu", "gpu"):
        cfg = experiments.config("retrieval/llama_d1024_c32", profile, device="cpu")
        assert (cfg.model.init, cfg.data.whiten, cfg.train.schedule) == ("query", True, "constant")
        orig = experiments.config(rexp.AS_ORIGINAL, profile, device="cpu")  # the diagnosis's arm: only those differ
        assert (orig.model.init, orig.data.whiten) == ("default", False)
        assert dataclasses.replace(orig, name=cfg.name, model=cfg.model, data=cfg.data) == cfg
    paper = experiments.config("retrieval/llama_d1024_c32", "paper", device="cpu")
    assert (paper.model.init, paper.data.whiten, paper.train.schedule, paper.train.lr, paper.train.warmup_steps) == (
        "default",
        False,
        "linear",
        1e-4,
        500,
    )
    assert not experiments.runs_at(rexp.AS_ORIGINAL, "paper")
    # the transformer matcher has no token-mixing conv to initialise
    assert (
        experiments.config("retrieval/transformer_matcher_llama_d1024_c32", "gpu", device="cpu").model.init == "default"
    )
    with pytest.raises(ConfigError, match="leave it 'default'"):
        MatcherConfig(kind="transformer", n_embed=8, n_head=2, init="query")
    # cpu: the rule's 8 epochs of the training pairs (the module doc of lmcompanion.experiments.retrieval)
    cpu = experiments.config("retrieval/llama_d1024_c32", "cpu", device="cpu")
    assert cpu.train.max_steps == round(8 * cpu.data.sequences_per_epoch(cpu.model) / cpu.train.batch_size)


def test_the_query_initialisation_sets_the_first_block_s_query_column_and_nothing_else():
    torch.manual_seed(0)
    default = Matcher(MatcherConfig(n_embed=16, n_layer=2, context_size=8))
    torch.manual_seed(0)
    book = Matcher(MatcherConfig(n_embed=16, n_layer=2, context_size=8, init="query"))
    for (name, a), (_, b) in zip(default.named_parameters(), book.named_parameters()):
        if name == "blocks.0.conv.weight":
            assert (b[:, 0] == 1).all() and torch.equal(a[:, 1:], b[:, 1:]) and not (a[:, 0] == 1).any()
        else:
            assert torch.equal(a, b), name


def test_whitening_centres_each_role_and_whitens_both_with_one_map_fitted_to_the_training_pairs():
    g = torch.Generator().manual_seed(0)
    mix = torch.randn(6, 6, generator=g)
    shared = 5 * torch.randn(6, generator=g)  # a vector every embedding shares
    emb = {
        f"{k}_{s}": torch.randn(n, 6, generator=g) @ mix + shared + (1.0 if k == "query" else -2.0)
        for k in ("query", "target")
        for s, n in (("train", 400), ("test", 50))
    }
    out = rdata.whitening(emb)
    for k in ("query", "target"):
        assert out[f"{k}_train"].double().mean(0).abs().max() < 1e-5  # each role centred on its own training mean
    pooled = torch.cat([out["query_train"], out["target_train"]]).double()
    # every direction on one scale: the whitened covariance's eigenvalues are l / (l + floor) for the centred
    # covariance's eigenvalues l (the floor, WHITEN_FLOOR of their mean, keeps near-empty directions from blowing up)
    centred = torch.cat([emb[f"{k}_train"].double() - emb[f"{k}_train"].double().mean(0) for k in ("query", "target")])
    eig = torch.linalg.eigvalsh(centred.T @ centred / (len(centred) - 1))
    expected = eig / (eig + rdata.WHITEN_FLOOR * eig.mean())
    got = torch.linalg.eigvalsh(pooled.T @ pooled / (len(pooled) - 1))
    assert torch.allclose(got, expected, atol=1e-5) and got.min() > 0.9
    # the test split goes through the same map (fitted to the training pairs only), so a query and its story stay
    # related as before: the map is linear, and its matrix is read back from the training queries
    x, y = emb["query_train"].double() - emb["query_train"].double().mean(0), out["query_train"].double()
    zca = torch.linalg.lstsq(x, y).solution
    expected = (emb["query_test"].double() - emb["query_train"].double().mean(0)) @ zca
    assert torch.allclose(out["query_test"].double(), expected, atol=1e-4)
    source = rdata.RetrievalSource(
        emb,
        4,
        rdata.RetrievalDataConfig(n_pairs=450, whiten=True),
        experiments.config("retrieval/flat_d512_c32", "smoke", device="cpu").train,
        0,
    )
    assert torch.equal(source.sets["test"].targets, out["target_test"])  # a whitened run's items read these


def test_the_diagnosis_measures_the_shared_vector_the_directions_and_the_query_s_share():
    from lmcompanion.chapters import retrieval as R

    g = torch.Generator().manual_seed(0)
    same = torch.randn(1, 32, generator=g).expand(100, 32) + 1e-6 * torch.randn(100, 32, generator=g)
    spread = torch.randn(5000, 32, generator=g)
    assert R.shared_share(same) > 0.999 and R.shared_share(spread) < 2 / 32  # about 1/d: no direction is common
    assert (
        R.directions(spread) > 28
        and R.directions(torch.randn(500, 1, generator=g) @ torch.randn(1, 32, generator=g)) < 1.01
    )
    torch.manual_seed(0)
    model = Matcher(MatcherConfig(n_embed=32, n_layer=1, context_size=8, init="query"))
    x = torch.randn(1, 8, 32, generator=g).expand(64, 8, 32).clone()
    x[:, 0] = torch.randn(64, 32, generator=g)  # only the query varies from item to item
    assert R.query_share(model, x) == pytest.approx(1.0)
    x = torch.randn(64, 8, 32, generator=g)
    x[:, 0] = x[0, 0]  # the query never varies
    assert R.query_share(model, x) == pytest.approx(0.0, abs=1e-12)


def test_the_protocol_s_check_rows_hold_only_when_every_seed_clears_half_a_nat():
    from types import SimpleNamespace

    from lmcompanion.chapters import retrieval as R
    from lmcompanion.data.retrieval import RetrievalDataConfig
    from lmcompanion.verdicts import FAILS, HOLDS

    def run(train, test):
        return SimpleNamespace(
            summary={"final": {"train": train, "test": test}},
            config=SimpleNamespace(model=SimpleNamespace(context_size=32), data=RetrievalDataConfig()),
        )

    rows = {r.kind: r for r in R.SPECS if r.kind in ("learns", "fits")}
    chance = R.chance(32)
    ok, short = chance - 0.6, chance - 0.4
    runs = {rexp.CONTROL: [run(3.0, ok), run(3.0, ok)]}
    assert R.row_verdict(rows["learns"], runs).verdict == HOLDS
    assert R.row_verdict(rows["learns"], {rexp.CONTROL: [run(3.0, ok), run(3.0, short)]}).verdict == FAILS
    fits = {"retrieval/flat_d1024_c32": [run(ok, 5.0)], "retrieval/llama_d1024_c32": [run(ok, 5.0)]}
    assert R.row_verdict(rows["fits"], fits).verdict == HOLDS  # on the training pairs, whatever the test loss
    fits["retrieval/llama_d1024_c32"] = [run(short, 3.0)]
    assert R.row_verdict(rows["fits"], fits).verdict == FAILS


def test_wikipedia_leads_drop_the_title_headings_and_every_copy_of_the_lead(tmp_path, monkeypatch):
    wiki = tmp_path / "wikipedia"
    wiki.mkdir()
    docs = [
        ("Title Only", ""),
        (
            "Jane Roe",
            "Jane Roe (born 1 May 1950 in St. Louis) is an American painter and writer of plays.\n"
            "She studied in Paris. Jane Roe (born 1 May 1950 in St. Louis) is an American painter and writer "
            "of plays.\nEarly life.\nShe was born to J. R. Roe, a teacher who worked in the city.",
        ),
        ("Stub", "The Stub is a river in the north of the country."),
        (
            "Acme",
            "Acme Inc. is a company that makes anvils for many kinds of cartoon characters.\n"
            "It was founded in 1920. It is based in the desert.",
        ),
    ]
    texts = [
        "".join(
            f'<doc id="{i}" url="?curid={i}" title="{t}">\n{t}\n\n{b}\n</doc>\n' for i, (t, b) in enumerate(docs[:2])
        ),
        "".join(f'<doc id="{i}" title="{t}">\n{t}\n\n{b}\n</doc>\n' for i, (t, b) in enumerate(docs[2:], 2)),
    ]
    for rel, text in zip(rdata.WIKI_FILES, texts):
        (tmp_path / rel).write_text(text, encoding="utf-8")
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(rdata, "WIKI_USABLE", (1, 1))  # these files' usable pairs: the first n pairs' files
    assert (
        rdata.wiki_files(1) == rdata.WIKI_FILES[:1] and rdata.wiki_files(2) == rdata.wiki_files(10) == rdata.WIKI_FILES
    )
    got = rdata.lead_pairs(10)
    assert [p.index for p in got] == [1, 3]  # the title-only article and the one-sentence stub give no pair
    roe, acme = got
    assert roe.query == "Jane Roe (born 1 May 1950 in St. Louis) is an American painter and writer of plays."
    assert roe.story == "She studied in Paris.\nShe was born to J. R. Roe, a teacher who worked in the city."
    assert "Jane Roe" not in roe.story.split("\n")[0] and "Early life" not in roe.story  # no title, no heading
    assert (
        acme.query.startswith("Acme Inc. is a company")
        and acme.story == "It was founded in 1920. It is based in the desert."
    )
    cfg = rdata.RetrievalDataConfig(embedder="mixer/flat_d1024", queries="lead", corpus="wikipedia", n_pairs=20)
    before = cfg.fingerprint()
    (tmp_path / rdata.WIKI_FILES[1]).write_text(texts[1] + "\n", encoding="utf-8")
    assert cfg.fingerprint() != before  # the pairs' texts are the files' bytes
    with pytest.raises(DataError, match="lower data.n_pairs"):
        rdata.pairs(cfg, [])
    (tmp_path / rdata.WIKI_FILES[0]).unlink()
    with pytest.raises(DataError, match="point LMC_DATA_DIR"):
        rdata.lead_pairs(10)
    with pytest.raises(ConfigError, match="data.corpus='wikipedia'"):
        rdata.RetrievalDataConfig(queries="lead")


def test_wikipedia_leads_from_the_data_folder_never_occur_in_their_targets(data_dir):
    got = rdata.lead_pairs(2000)
    assert len(got) == 2000 and got == rdata.lead_pairs(2000)
    # the first file alone gives the first WIKI_USABLE[0] pairs; both give them all: a pack carries only what a run reads
    first = rdata.lead_pairs(rdata.WIKI_USABLE[0])
    assert len(first) == rdata.WIKI_USABLE[0] and first[:2000] == got
    assert len(rdata.lead_pairs(10**9)) == sum(rdata.WIKI_USABLE)
    assert rdata.wiki_files(rdata.WIKI_USABLE[0]) == rdata.WIKI_FILES[:1]
    assert rdata.wiki_files(rdata.WIKI_USABLE[0] + 1) == rdata.WIKI_FILES
    for p in got:
        assert p.query not in p.story and len(p.query.split()) >= rdata.MIN_WORDS
    cfg = experiments.config("retrieval/wiki_flat_d1024_c32", "gpu", device="cpu")
    assert (cfg.data.queries, cfg.data.corpus, cfg.data.n_pairs) == ("lead", "wikipedia", rexp.WIKI_PAIRS_GPU)
    assert rdata.wiki_files(cfg.data.n_pairs) == rdata.WIKI_FILES[:1]  # what the GPU pack carries
    paper = experiments.config("retrieval/wiki_flat_d1024_c32", "paper", device="cpu")
    assert paper.data.n_pairs == rexp.WIKI_PAIRS and rdata.wiki_files(paper.data.n_pairs) == rdata.WIKI_FILES
    assert experiments.get("retrieval/wiki_flat_d1024_c32").profiles == ("cpu", "gpu", "paper")
    cpu = experiments.config("retrieval/wiki_flat_d1024_c32", "cpu", device="cpu")
    assert cpu.data.n_pairs == rexp.WIKI_PAIRS_CPU < rexp.WIKI_PAIRS_GPU  # the first file's, as at gpu
    assert rdata.wiki_files(cpu.data.n_pairs) == rdata.WIKI_FILES[:1]


def test_a_matcher_s_key_covers_the_procedure_s_code_and_not_the_registrations_or_headlines_prose():
    """A run's key digests the modules its procedure executes: the matcher's are its own module's closure, which
    leaves out the retrieval and mixer registrations (titles, published numbers) and the headlines (their reasons, the
    cpu rule), so editing their prose does not retrain every matcher of a store."""
    from lmcompanion import fingerprint

    procedure = experiments.PROCEDURES["match"].fn
    modules = fingerprint.closure(procedure.__module__)
    assert procedure.__module__ == "lmcompanion.experiments.matching" and procedure.__module__ in modules
    assert not {
        "lmcompanion.experiments.retrieval",
        "lmcompanion.experiments.mixer",
        "lmcompanion.experiments.headline_comparisons",
    } & set(modules)
    assert rexp.match is procedure  # the registrations re-export the procedure's names
