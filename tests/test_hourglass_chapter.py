"""The hourglass chapter's experiments and analyses: every arm builds at every profile with the write-up's shapes,
the "A-B" lengths scale with the context, the vanilla transformer takes half the updates under the same schedule,
the README's schedule and the code's constant rate, and the two ways of scoring validation windows. CPU, seconds."""

from pathlib import Path

import pytest
import torch

from lmcompanion import experiments
from lmcompanion.chapters import hourglass as chapter
from lmcompanion.chapters.scale import write_up_passes_text
from lmcompanion.experiments.hourglass import PAPER_STEPS, SCALES, scale
from lmcompanion.models.hourglass import latent_size_for
from lmcompanion.train.schedules import lr_at


@pytest.mark.parametrize("profile", list(SCALES))
def test_every_arm_of_the_chapter_builds_at_every_profile(profile):
    for name in chapter.ALL:
        cfg = experiments.config(name, profile)
        cfg.model.validate()
        assert cfg.model.context_size == SCALES[profile].context


@pytest.mark.parametrize("label", ["256-32", "384-32", "448-96", "512-32", "448-32"])
def test_lengths_scale_with_the_context_keeping_latents_per_token(label):
    paper = latent_size_for(label, 16)  # per group of 48 tokens at 768
    for profile in ("gpu", "cpu", "smoke"):
        s = scale(profile)
        ks = s.latent_size(label)
        group = s.context // s.n_groups
        assert ks[0] / group == pytest.approx(paper[0] / 48)  # the write-up's first-level latents per token
        assert ks[1] * s.n_groups == int(label.split("-")[1]) * s.context // 768


def test_paper_profile_is_the_write_ups_protocol():
    cfg = experiments.config(chapter.ANCHOR, "paper")
    t = cfg.train
    assert (t.batch_size * t.grad_accum, t.max_steps, t.lr, t.min_lr) == (8704, PAPER_STEPS, 4.8e-4, 4.8e-5)
    assert PAPER_STEPS == 205 and cfg.model.latent_size == (28, 6) and cfg.model.up_sampling == "attn"
    assert (cfg.data.eval_stride, cfg.data.eval_last, cfg.data.split) == (32, 32, "chars_80_10_10")


@pytest.mark.parametrize("profile", ["paper", "cpu"])
def test_vanilla_takes_half_the_updates_under_the_same_schedule(profile):
    # as the registry builds them, and as a page that shows them together reads them (at cpu, the illustrations')
    arms = (chapter.ANCHOR, "hourglass/vanilla")
    protocol = experiments.page_protocol(arms, profile)
    assert protocol is (experiments.Protocol.ILLUSTRATIONS if profile == "cpu" else experiments.Protocol.OWN)
    built = [experiments.get(n).build(profile).train for n in arms]
    for eff, van in (built, [experiments.config(n, profile, protocol=protocol).train for n in arms]):
        assert van.max_steps == -(-eff.max_steps // 2)
        assert (van.lr, van.min_lr, van.schedule) == (eff.lr, eff.min_lr, eff.schedule)
        assert van.warmup_steps / van.max_steps == pytest.approx(0.5, abs=0.01)


def test_readme_schedule_against_the_codes_constant_rate():
    readme = experiments.config(chapter.ANCHOR, "paper").train
    code = experiments.config(chapter.PROTOCOL[1], "paper").train
    n = readme.max_steps
    lrs = [lr_at(s, readme) for s in range(n)]
    assert lrs[0] == 0 and max(lrs) == pytest.approx(4.8e-4, rel=1e-3)
    assert lrs.index(max(lrs)) == round(0.5 * n)  # warmup over 50%
    assert lrs[-1] == pytest.approx(4.8e-5) and lrs[round(0.85 * n)] == pytest.approx(4.8e-5)  # floor from 85%
    assert {lr_at(s, code) for s in range(n)} == {4.8e-4}  # the code: constant


def test_the_inference_flops_claim_is_counted_at_the_write_ups_sizes():
    flops = chapter.inference_flops([chapter.H + "attn_384_32_e6", chapter.H + "repeat_512_32_e6"])
    assert flops[chapter.H + "vanilla"][1] == 0
    # the vanilla transformer's forward: about 2N per token plus attention (N = 20.48M without positions)
    assert 2 * 20_484_096 < flops[chapter.H + "vanilla"][0] < 4 * 20_484_096
    assert all(0 < saved < 1 for n, (_, saved) in flops.items() if n != chapter.H + "vanilla")


class _FakeRun:
    """Just what window_losses reads: a config, a model, and a folder that is no recorded run's."""

    def __init__(self, cfg, model):
        self.config, self._model = cfg, model
        self.path = Path(__file__).parent

    def load_model(self, device="cpu"):
        return self._model.to(device)


def test_window_losses_score_the_last_32_and_the_last_token_of_the_same_windows():
    from lmcompanion.data.lm import build_source
    from lmcompanion.models import build

    cfg = experiments.config(chapter.ANCHOR, "smoke")
    torch.manual_seed(0)
    model = build(cfg.model).eval()
    got = chapter.window_losses(_FakeRun(cfg, model), "val")
    src = build_source(cfg.replace(data=cfg.data.replace(eval_last=None)))
    tail, last = [], []
    with torch.no_grad():
        for b in src.eval_batches("val", 0):
            for i in range(b["idx"].size(0)):
                logits = model(b["idx"][i : i + 1]).logits[0]
                ce = torch.nn.functional.cross_entropy(logits, b["targets"][i], reduction="none")
                tail.append(ce[-32:].mean())
                last.append(ce[-1])
    assert got["last 32"] == pytest.approx(torch.stack(tail).mean().item(), rel=1e-5)
    assert got["last token"] == pytest.approx(torch.stack(last).mean().item(), rel=1e-5)
    # the trainer's own validation loss is the last-32 score of the same windows
    scored = [model(**b).loss for b in build_source(cfg).eval_batches("val", 0)]
    assert got["last 32"] == pytest.approx(torch.stack(scored).mean().item(), rel=1e-5)


@pytest.mark.parametrize("final_norm", [False, True])
def test_head_input_parts_measure_the_embeddings_the_up_projection_and_the_stream_before_any_final_norm(final_norm):
    from lmcompanion.data.lm import build_source
    from lmcompanion.models import build

    cfg = experiments.config(chapter.ANCHOR, "smoke", overrides={"model.final_norm": final_norm})
    torch.manual_seed(0)
    model = build(cfg.model).eval()
    got = chapter.head_input_parts(_FakeRun(cfg, model), "val")
    emb, stream = [], []
    with torch.no_grad():
        for b in build_source(cfg).eval_batches("val", 0):
            s0 = model.embed(b["idx"])  # eval mode: no dropout
            emb.append(s0.flatten())
            stream.append(model.hourglass(s0)[0].flatten())  # what the head (or its final norm) receives

    def rms(ts):
        return torch.cat(ts).square().mean().sqrt().item()

    assert set(got) == {"embeddings", "up-projection", "into the head"} and got["up-projection"] > 0
    assert got["embeddings"] == pytest.approx(rms(emb), rel=1e-5)
    assert got["into the head"] == pytest.approx(rms(stream), rel=1e-5)
    assert (model.ln_f is not None) == final_norm


class _CurveRun:
    """Just what the equal-compute analysis reads: a config, the evaluations and the summary."""

    def __init__(self, name, steps, val, seed=0):
        import pandas as pd

        self.config = experiments.config(name, "smoke", seed=seed, device="cpu")
        self._evals = pd.DataFrame({"step": steps, "val": val})
        self.summary = {"steps": steps[-1], "final": {"val": val[-1]}}
        self.seed = seed

    def evals(self):
        return self._evals


def test_the_modes_are_compared_at_equal_counted_flops():
    attn_flops = experiments.config(chapter.ANCHOR, "smoke", device="cpu").flops_per_step()
    rep_flops = experiments.config(chapter.REPEAT, "smoke", device="cpu").flops_per_step()
    assert attn_flops > rep_flops  # attention costs more per update, so the repeat runs end at less compute
    steps = [2, 4, 6, 8, 10, 12]
    attn = [_CurveRun(chapter.ANCHOR, steps, [3.0, 2.8, 2.6, 2.4, 2.2, 2.0], s) for s in range(2)]
    rep = [_CurveRun(chapter.REPEAT, steps, [3.0, 2.85, 2.7, 2.55, 2.4, 2.25], s) for s in range(2)]
    at_end, final = chapter.end_of_repeat(attn, rep)
    # the attention run read where the repeat run ends: step 12 * rep / attn, between two of its evaluations
    expected = 12 * rep_flops / attn_flops
    assert at_end[0] == pytest.approx(3.0 - 0.1 * (expected - 2), abs=1e-9) and 10 < expected < 12
    assert final == [2.25, 2.25]
    frames = chapter.mode_gaps(attn, rep)
    assert list(frames[0].columns) == ["FLOPs", "repeat", "attn", "gap"]
    assert (frames[0]["FLOPs"] >= 2 * attn_flops).all()  # points before the attention run's first evaluation dropped
    slopes = chapter.gap_slopes(frames)
    assert all(s < 0 for s in slopes)  # attention pulls ahead as compute grows: its gap falls
    assert chapter.similar_margin() == pytest.approx(0.05)


def test_every_ledger_row_of_the_chapter_is_a_verdict_row_it_declares_and_every_row_is_named():
    """The claims ledger names each verdict row by its claim text: every named row is one this chapter declares, and
    every declared row but the book's own extensions is named by a claim of the write-up."""
    import inspect

    declared = {r.text for r in chapter.ROWS}
    named = {c.row for c in chapter.CLAIMS if c.row}
    assert named <= declared
    assert declared - named == {r.text for r in chapter.ROWS if r.extension}
    # never claimed, in any module of the package
    package = (chapter, chapter.analysis, chapter.claims, chapter.compute, chapter.facts, chapter.rows)
    assert not any("attention upsampling beats repeat upsampling" in inspect.getsource(m) for m in package)


def test_every_finding_is_tested_in_both_upsampling_modes_unless_the_write_up_names_one():
    """ "All experiments were performed for each of the two upsamplers": a finding's rows come in pairs, the repeat
    row on the attention arms' repeat twins, which are registered experiments."""
    rows = chapter.finding_rows()
    for text, finding, better, worse, _ in rows:
        assert experiments.get(better) and experiments.get(worse)
        if text.endswith("; repeat upsampling)") or text.endswith(" (repeat upsampling)"):
            assert "/repeat_" in better and "/repeat_" in worse
    both = [f for f, *_, b in chapter.FINDINGS if b]
    assert len(rows) == len(chapter.FINDINGS) + len(both)
    assert chapter.in_mode("6 soft experts beat none", True) == "6 soft experts beat none (repeat upsampling)"
    assert chapter.in_mode("helps (a against b)", False) == "helps (a against b; attention upsampling)"


def test_the_margins_come_from_the_write_ups_numbers():
    """ "The same validation loss": the largest gap between one of the write-up's two best models and the vanilla
    transformer in best_models.png (0.09 = 2.565 - 2.475); "similar performance": its two best models' gap (0.05);
    "a lot faster": beyond the book's margin of a similar time (under 1/1.25)."""
    pub = {n: experiments.get(n).published["val"] for n in chapter.HEADLINE}
    assert chapter.same_margin() == pytest.approx(
        max(abs(pub[m] - pub[chapter.VANILLA]) for m in (chapter.BEST_ATTN, chapter.BEST_REPEAT))
    )
    assert chapter.same_margin() == pytest.approx(0.09) and chapter.similar_margin() == pytest.approx(0.05)
    assert chapter.LOT_FASTER == pytest.approx(0.8)


def test_every_published_loss_and_minute_names_the_plot_it_was_read_off():
    from lmcompanion.experiments import hourglass as ex

    for name in experiments.names("hourglass"):
        pub = experiments.get(name).published
        if any(k in pub for k in ex.PLOTTED):
            assert name in ex.SOURCES, name
            assert ex.SOURCES[name].endswith(".png") and ex.ORIGINAL in ex.source(name)
    table = chapter.sources_table(chapter.HEADLINE)
    assert list(table.index) == [experiments.get(n).title for n in chapter.HEADLINE]
    assert all(f.endswith("best_models.png") for f in table.iloc[:, -1])


def test_experts_are_read_per_compute_at_the_no_expert_models_final_flops():
    """ "Generally until at least 6 you can expect good perf/compute": the 6-expert model is read where the model
    without experts ends (it costs more per update, so that is before its own end)."""
    base, six = chapter.SWEEP[0], chapter.ANCHOR
    base_flops = experiments.config(base, "smoke", device="cpu").flops_per_step()
    six_flops = experiments.config(six, "smoke", device="cpu").flops_per_step()
    assert six_flops > base_flops
    steps = [2, 4, 6, 8, 10, 12]
    b = [_CurveRun(base, steps, [3.0, 2.9, 2.8, 2.7, 2.6, 2.5])]
    s = [_CurveRun(six, steps, [3.0, 2.8, 2.6, 2.4, 2.2, 2.0])]
    at = chapter.at_compute_of(s, b)
    step = 12 * base_flops / six_flops  # where the 6-expert run has spent the no-expert run's compute
    assert at[0] == pytest.approx(float(__import__("numpy").interp(step, steps, [3.0, 2.8, 2.6, 2.4, 2.2, 2.0])))
    counts, series = chapter.experts_per_compute({base: b, six: s}, chapter.SWEEP, base)
    assert counts == [0, 6] and series["final"] == [[2.5], [2.0]]


def test_the_even_more_rows_compare_the_share_of_inference_flops_saved():
    rows = {r.text: r for r in chapter.ROWS}
    inf = chapter.inference_flops([chapter.BEST_ATTN, chapter.BEST_REPEAT])
    v = rows[chapter.EVEN_MORE].decide(None)
    assert v.kind == "computed" and (v.outcome == "holds") == (inf[chapter.BEST_REPEAT][1] > inf[chapter.BEST_ATTN][1])
    for m in (chapter.BEST_ATTN, chapter.BEST_REPEAT):
        assert rows[chapter.fewer_flops_claim(m)].kind == "computed"
        assert rows[chapter.faster_claim(m)].timed == (m, chapter.VANILLA)


def test_the_anchor_and_the_vanilla_transformer_run_under_both_schedules():
    for schedule, (anchor, vanilla) in chapter.SCHEDULES.items():  # at one protocol, as the protocol page reads them
        a, v = (
            experiments.config(n, "cpu", protocol=experiments.Protocol.ILLUSTRATIONS).train for n in (anchor, vanilla)
        )
        assert a.schedule == v.schedule and v.max_steps == -(-a.max_steps // 2)
        assert experiments.runs_at(anchor, "cpu") and experiments.runs_at(vanilla, "cpu")
    assert experiments.config(chapter.CONSTANT[1], "paper").train.schedule == "constant"


def test_the_trend_of_the_two_modes_is_read_only_where_both_have_learned(monkeypatch):
    """ "The attention version scales better with compute" reads the gap's slope over the compute points where every
    seed of both modes is at least half a nat below the unigram loss, and is not decided with fewer than three."""
    import pandas as pd
    from types import SimpleNamespace

    from lmcompanion import learning
    from lmcompanion.verdicts import NOT_DECIDED

    monkeypatch.setattr(learning, "reference", lambda cfg, metric: learning.Reference("the unigram loss", 3.0))
    frames = [
        pd.DataFrame(
            {
                "FLOPs": [1e9, 2e9, 4e9, 8e9, 16e9],
                "attn": [2.9, 2.6, 2.4, 2.3, 2.2],
                "repeat": [2.9, 2.5, 2.45, 2.4, 2.35],
            }
        )
        for _ in range(3)
    ]
    attn = [SimpleNamespace(config=None)]
    kept = chapter.learned_points(frames, attn)
    assert all(list(f["FLOPs"]) == [4e9, 8e9, 16e9] for f in kept)  # the first two: a mode under half a nat below
    monkeypatch.setattr(chapter, "mode_gaps", lambda a, r: [f.assign(gap=f["attn"] - f["repeat"]) for f in frames])
    row = chapter.scales_better_row(attn * 3, attn * 3)
    assert row.outcome != NOT_DECIDED and "at the 3 compute points where both modes have learned" in row.ours
    late = [
        f.assign(attn=f["attn"] + [0, 0.3, 0.3, 0.3, 0.0], repeat=f["repeat"] + [0, 0.3, 0.3, 0.3, 0.0]) for f in frames
    ]  # learned at one point only
    monkeypatch.setattr(chapter, "mode_gaps", lambda a, r: [f.assign(gap=f["attn"] - f["repeat"]) for f in late])
    row = chapter.scales_better_row(attn * 3, attn * 3)
    assert row.outcome == NOT_DECIDED and "fewer than 3 compute points where both modes have learned" in row.verdict


def test_the_write_ups_passes_are_its_epochs_two_for_its_models_one_for_the_transformer(data_dir):
    """The scale table's "passes (paper)": reads per character, a whole count the data kind states as a number,
    with the write-up's epochs of stride-1 windows."""
    for name, epochs in ((chapter.BEST_ATTN, "2.0 epochs"), (chapter.VANILLA, "1.0 epoch ")):
        cfg = experiments.config(name, "paper", device="cpu")
        stated, text = cfg.data.write_up_passes(cfg), write_up_passes_text(cfg)
        assert not stated.approximate and stated.passes == round(stated.passes) > 0, stated
        assert text.startswith(f"{round(stated.passes):,} ({epochs}".rstrip()), text
        assert f"({epochs}" in text + " " and "stride-1 window" in text, text
