"""The masked-mixer chapter: its experiments (every arm at every profile, equal counted compute), the counts at the
write-up's sizes against an independent count, the computed analyses (liveness, memory, Johnson-Lindenstrauss),
the seed plan and the verdict helpers. The models' own tests (causality through gradients for every variant, the
mask's diagonal, fixed-window generation, bad configs) are in tests/test_mixer.py."""

import math

import pandas as pd
import torch

import pytest

from lmcompanion import claims as claim_rows
from lmcompanion import experiments, models, nb
from lmcompanion.chapters import mixer
from lmcompanion.chapters.mixer import analysis
from lmcompanion.errors import ConfigError
from lmcompanion.memory import training_memory
from lmcompanion.experiments import mixer as exp
from lmcompanion.models.mixer import MixerConfig
from lmcompanion.verdicts import NOT_DECIDED, FAILS, HOLDS, INCONCLUSIVE

PROFILES = ("cpu", "paper")  # smoke and gpu: the notebooks build them


@pytest.mark.parametrize("profile", PROFILES)
def test_every_arm_builds_and_spends_the_profiles_budget(profile):
    """(at every profile, also those an arm is not run at: the appendix shows their configs)"""
    budget = exp.budget(profile)
    for name in exp.ARMS:
        cfg = experiments.config(name, profile, device="cpu")
        per_step = exp.flops_per_step(name, profile)
        # counted FLOPs per token x the profile's batch x context, as the run config counts them
        s = exp.scale(profile)
        per_token = models.build(cfg.model, device="meta").flops_per_token()
        assert per_step == cfg.flops_per_step() == per_token * s.batch[exp.ARMS[name].batch] * s.context, name
        assert cfg.train.global_batch == exp.scale(profile).batch[exp.ARMS[name].batch], name
        steps = cfg.train.max_steps
        assert steps * per_step <= budget < (steps + 1) * per_step, name  # the most whole steps the budget buys
        assert cfg.model.context_size == exp.scale(profile).context


def test_the_paper_profile_is_the_write_ups_setting():
    cfg = experiments.config("mixer/flat_d1024", "paper", device="cpu")
    assert (cfg.model.n_embed, cfg.model.n_layer, cfg.model.context_size, cfg.model.vocab_size) == (1024, 8, 512, 4096)
    assert cfg.data.train_stories == 2_000_000 and cfg.data.val_split == "validation" and not cfg.data.packing
    assert (cfg.train.warmup_steps, cfg.train.grad_clip, cfg.train.weight_decay) == (500, 1.0, 0.0)
    assert experiments.config("mixer/expanded_d256", "paper", device="cpu").model.expansion == 2
    llama = experiments.config("mixer/llama_d512_h4", "paper", device="cpu").model
    assert (llama.n_head, llama.n_embed) == (4, 512)
    # the anchor of the paper budget spends exactly its 354,000 steps
    assert exp.steps_for(exp.ANCHOR, "paper") == exp.ANCHOR_STEPS


def test_counts_at_the_write_ups_sizes_match_an_independent_count_and_the_original_code():
    table = analysis.count_table(list(exp.ARMS))
    assert table["agree"].all(), table[~table["agree"]]
    # the independent count is not the model's: a wrong formula would disagree (flat d=1024 by hand)
    V, L, d, n = 4096, 512, 1024, 8
    assert analysis.independent_count("mixer/flat_d1024") == 2 * V * d + n * (4 * d + 8 * d * d + 5 * d + L * L + L)
    assert analysis.independent_count("mixer/flat_d1024") == 77_672_448


def test_every_arm_is_in_a_notebook_and_every_claim_names_registered_arms():
    used = set().union(*map(set, mixer.NOTEBOOK_ARMS.values()))
    assert used == set(experiments.names("mixer"))
    for p in mixer.PAIRS:
        assert p.a in used and p.b in used and p.published, p.text  # the quote reads the registry
    for name in mixer.HEADLINE:
        experiments.get(name)


def test_the_headline_arms_run_five_seeds_at_cpu_and_the_others_illustrate():
    """At cpu the headline comparison's arms run five seeds (the smallest p is 1/252) and every other arm one (it
    illustrates); at gpu the headline arms five too, the others three, four for the claims of equality (two-sided,
    2/70); arms not run at cpu are exactly those
    the cpu budget starves, and the 64-layer mixer whose one comparison is with one of them."""
    assert len(nb.setup(profile="cpu").seeds) == 5
    equality = {n for p in mixer.PAIRS if p.kind.startswith("similar") for n in (p.a, p.b)}
    assert equality == set(exp.EQUALITY)
    heads = set(experiments.headline_arms("mixer"))
    assert heads == {"mixer/flat_d512", "mixer/llama_d512"}
    for p in mixer.PAIRS:
        for name in (p.a, p.b):
            if experiments.runs_at(name, "cpu"):
                assert len(experiments.seeds_of(name, "cpu")) == (5 if name in heads else 1), name
                gpu = experiments.HEADLINE_SEEDS["gpu"] if name in heads else 4 if name in equality else 3
                assert len(experiments.seeds_of(name, "gpu")) == gpu, name
    starved = {n for n in exp.ARMS if exp.steps_for(n, "cpu") < exp.MIN_CPU_STEPS}
    assert starved == set(exp.STARVED_AT_CPU)
    assert {n for n in exp.ARMS if not experiments.runs_at(n, "cpu")} == set(exp.NOT_AT_CPU)
    assert {p.a for p in mixer.PAIRS if p.b == "mixer/deep_d64"} <= starved
    assert all(experiments.seeds_of(n, "gpu") in ((0, 1, 2), (0, 1, 2, 3)) for n in exp.ARMS if n not in heads)
    assert experiments.seeds_of("mixer/kernel4", "cpu", seeds=range(5)) == (0, 1, 2, 3, 4)
    seeds = {}
    for run in experiments.plan(["mixer/kernel4", "mixer/flat_d512"], "cpu", device="cpu"):
        seeds.setdefault(run.name, []).append(run.seed)
    assert seeds == {"mixer/kernel4": [0], "mixer/flat_d512": [0, 1, 2, 3, 4]}
    shifted = nb.setup(profile="cpu", seed=5)  # the notebook's first seed shifts every arm's seeds
    assert [r.seed for r in shifted.plan(["mixer/kernel4", "mixer/flat_d512"])] == [5, 5, 6, 7, 8, 9]


def test_transformers_keep_at_least_eight_features_per_head_at_cpu():
    for name, arm in exp.ARMS.items():
        if arm.family == "mixer":
            continue
        m = experiments.config(name, "cpu", device="cpu").model
        assert m.n_embed // m.n_head >= 8, name
        paper = experiments.config(name, "paper", device="cpu").model
        assert paper.n_head == arm.n_head, name  # the write-up's heads at its size
    # the head table keeps its four head counts at cpu
    assert [experiments.config(n, "cpu", device="cpu").model.n_head for n in mixer.HEADS] == [16, 8, 4, 2]


def test_an_expansion_above_one_leaves_dead_weights_and_one_does_not():
    assert analysis.unread_weights(None) == 0
    assert analysis.unread_weights(1) == 0
    assert analysis.unread_weights(2) > 0
    table = analysis.liveness_table(d=16, L=8, expansions=(None, 1, 2))
    live = [int(v.replace(",", "")) for v in table["live (can get a gradient)"]]
    assert live[1] == live[2]  # e = 2 learns no more than e = 1 ...
    assert int(table["weights"].iloc[2].replace(",", "")) > int(
        table["weights"].iloc[1].replace(",", "")
    )  # ... with more


def test_memory_is_counted_without_allocating_and_attention_grows_faster():
    small = {f: training_memory(analysis.memory_config(f, 4, 512))["one_pass"] for f in ("mixer", "transformer")}
    large = {f: training_memory(analysis.memory_config(f, 4, 8192))["one_pass"] for f in ("mixer", "transformer")}
    assert large["mixer"] / small["mixer"] < large["transformer"] / small["transformer"]
    assert large["transformer"] > 12 * 2**30 > large["mixer"]  # beyond the write-up's 12 GB; the mixer fits


def test_johnson_lindenstrauss_estimates():
    assert analysis.jl_dimension(math.log10(512e6)) == pytest.approx(160.4, abs=0.1)
    assert analysis.jl_dimension(570) == pytest.approx(8 * 570 * math.log(10))
    assert analysis.jl_dimension(570, eps=0.5) == pytest.approx(4 * analysis.jl_dimension(570))
    rows = {r.claim: r.verdict for r in mixer.jl_rows()}
    assert sorted(rows.values()).count(FAILS) == 1  # 8 ln 10^570 is about 10,500, not 1312


def test_verdict_helpers_decide_only_what_the_seeds_can_decide():
    lower, higher = [1.0, 1.1, 1.2, 1.3], [2.0, 2.1, 2.2, 2.3]
    # a claim of equal losses against the stated margin (2%): arms whose seeds lie apart refute it, even 3 vs 3
    assert mixer.similar("equal", "", lower, higher, ("a", "b")).verdict == FAILS
    assert mixer.similar("equal", "", lower[:3], higher[:3], ("a", "b")).verdict == FAILS  # one-sided 1/20
    assert mixer.similar("equal", "", lower, [1.05, 1.15, 1.1], ("a", "b")).verdict.startswith(INCONCLUSIVE)
    within = mixer.similar("equal", "", [2.00, 2.01, 2.00, 2.01], [2.005, 2.0, 2.01, 2.0], ("a", "b"))
    assert within.verdict == HOLDS and "margin x1.02" in within.effect
    assert mixer.similar("equal", "", [2.0, 2.01, 2.02], [2.1, 2.11, 2.12], ("a", "b")).verdict == FAILS  # 5% apart
    assert all(r.verdict == HOLDS for r in mixer.count_rows() + mixer.liveness_rows())


def test_memory_verdicts_read_the_counted_table():
    cells = {
        f: pd.DataFrame(
            [
                [training_memory(analysis.memory_config(f, n, T))["one_pass"] / 2**20 for T in (512, 1024, 2048)]
                for n in (4, 8)
            ],
            index=[4, 8],
            columns=[512, 1024, 2048],
        )
        for f in ("mixer", "transformer")
    }
    assert all(r.verdict == HOLDS for r in mixer.memory_rows(cells))
    swapped = {"mixer": cells["transformer"], "transformer": cells["mixer"]}  # a transformer-like mixer fails both
    assert all(r.verdict == FAILS for r in mixer.memory_rows(swapped))


@pytest.mark.parametrize(
    "override, fix",
    [
        ({"model.expansion": 0}, "expansion=None for the flat mixer"),
        ({"model.n_head": 3}, "must divide the block width"),
    ],
)
def test_bad_overrides_of_an_arm_are_rejected_with_the_fix(override, fix):
    with pytest.raises(ConfigError, match=fix):
        experiments.config("mixer/flat_d512", "cpu", device="cpu", overrides=override)


def test_a_mixer_cannot_read_a_context_other_than_its_own():
    model = models.build(experiments.config("mixer/flat_d512", "smoke", device="cpu").model)
    with pytest.raises(ValueError, match="pad the input"):
        model(torch.zeros(1, model.context_size - 1, dtype=torch.long))


def test_published_numbers_are_quoted_as_printed_in_the_write_ups_order():
    rows = {p.text: p.published for p in mixer.PAIRS}
    assert rows["a positional channel written after every block hurts (validation)"].startswith("every block 1.94/2.10")
    hybrid = rows[
        "the sequential transformer-mixer hybrid beats the same transformer without the masked convolution "
        "(4xV100, validation)"
    ]
    assert hybrid.startswith("hybrid 1.53/1.59 vs without the convolution 1.55/1.61")  # issue 22, item 1: not 1.73
    assert rows["at equal steps the mixer and Llama are 'nearly identical' (validation)"].startswith(
        "Llama 2.497 vs mixer 2.505"
    )
    assert (
        "1.84/1.89"
        in rows["the 4-head Llama (d=512) beats the flat mixer of the same width on the RTX 3060 (validation)"]
    )
    assert (
        "2.03"
        in rows["a flat mixer (d=512) reaches a lower validation loss than the d=256 transformer at fixed compute"]
        and "table 2.02"
        in rows["a flat mixer (d=512) reaches a lower validation loss than the d=256 transformer at fixed compute"]
    )


def test_claim_texts_do_not_depend_on_the_profile():
    """The ledger and the scorecard match rows across profiles by their claim text."""
    assert len(set(mixer.rows.ALL_CLAIMS)) == len(mixer.rows.ALL_CLAIMS)
    made = claim_rows.verdicts("mixer", claim_rows.Context({}, "cpu"))  # computed rows, and arms not run at cpu
    assert {v.claim for v in made} <= set(mixer.rows.ALL_CLAIMS)
    assert [v.claim for v in made] == [v.claim for v in mixer.rows.in_write_up_order(made)]
    order = [mixer.rows.SECTIONS.index(mixer.rows.section_of(r.text)) for r in mixer.ROWS]
    assert order == sorted(order)  # the rows in the write-up's order of sections


def test_the_text_and_the_code_learning_rates_are_both_arms():
    lr = {
        n: experiments.config(n, "paper", device="cpu").train.lr
        for n in ("mixer/llama_v100", "mixer/llama_v100_eta005", "mixer/llama_d512_h4", "mixer/llama_d512_h4_eta005")
    }
    assert lr == {
        "mixer/llama_v100": 5e-4,
        "mixer/llama_v100_eta005": 0.005,
        "mixer/llama_d512_h4": 5e-4,
        "mixer/llama_d512_h4_eta005": 0.005,
    }


def test_the_smoke_cap_keeps_the_text_arm_faster_and_leaves_the_larger_profiles_alone():
    """Smoke caps learning rates at 0.02 (the eta=0.005 Llamas were kernel-dependent at 0.1); the text's arm still
    trains faster than the code's there, and no larger profile is capped."""

    def lr(name, profile):
        return experiments.config(name, profile, device="cpu").train.lr

    cap = exp.scale("smoke").max_lr
    assert lr("mixer/llama_d512_h4_eta005", "smoke") == cap > lr("mixer/llama_d512_h4", "smoke")
    assert all(exp.scale(p).max_lr is None for p in ("cpu", "gpu", "paper"))
    assert lr("mixer/llama_d512_h4_eta005", "cpu") == pytest.approx(10 * lr("mixer/llama_d512_h4", "cpu"))


def test_the_worked_masking_example_is_the_write_ups():
    from lmcompanion.chapters.mixer import facts

    assert facts.worked_example_table()["agree"].all()
    assert facts.worked_example()["X * m(W)"].tolist() == [[2, 0, 0], [1, 1, 0], [1, 4, 1]]


def test_width_estimates_follow_the_declared_shapes():
    from lmcompanion.chapters.mixer import facts
    from lmcompanion.models.transformer import TransformerConfig

    # GPT-2's shape counted by the package's own transformer (pre-LN, learned positions, tied head, biases)
    cfg = TransformerConfig(
        vocab_size=50257,
        context_size=1024,
        n_embed=350,
        n_layer=12,
        n_head=5,
        norm="layer",
        norm_eps=1e-5,
        positions="learned",
        block="pre",
        mlp="gelu",
        bias=True,
        tie_weights=True,
    )
    assert models.num_params(cfg) == facts.gpt2_params(350, 12)
    assert facts.llama2_params(4096) == 6_738_415_616  # Llama 2 7B
    assert facts.shapes_within() == []  # no declared standard shape is within 10% at both widths


def _unigram(monkeypatch, level: float = 5.0):
    """Every arm's reference line at ``level`` (no data read)."""
    from lmcompanion import learning

    monkeypatch.setattr(learning, "reference", lambda cfg, metric: learning.Reference("the unigram loss", level))


def test_comparisons_are_decided_only_where_both_arms_learned(monkeypatch):
    from types import SimpleNamespace

    p = next(p for p in mixer.PAIRS if p.kind == "fixed")

    def runs(values, metric="val"):
        return [SimpleNamespace(summary={"final": {metric: v}}, config=None) for v in values]

    _unigram(monkeypatch)
    better, worse = [4.0, 4.1, 4.2], [4.3, 4.4, 4.45]  # every seed of both at least half a nat below 5.0
    assert mixer.pair_row(p, {p.a: runs(better), p.b: runs(worse)}).verdict == HOLDS
    one_flat = mixer.pair_row(p, {p.a: runs(better), p.b: runs([4.5, 4.6, 4.7])})  # b's seeds 0.3-0.5 below
    assert one_flat.outcome == NOT_DECIDED and f"{_short(p.b)} has not learned" in one_flat.verdict
    assert "✗" in one_flat.learned and "✓" in one_flat.learned  # the table shows both arms
    high = {p.a: runs([6.0, 6.1, 6.2]), p.b: runs([6.5, 6.6, 6.7])}  # both above the unigram level
    assert mixer.pair_row(p, high).outcome == NOT_DECIDED
    g = next(p for p in mixer.PAIRS if p.kind == "no_gain")
    # "no gain" within the chapter's margin of equal losses (x1.02): a gain beyond it refutes the claim, a loss shows it
    assert mixer.pair_row(g, {g.a: runs(better), g.b: runs(worse)}).verdict == FAILS
    assert mixer.pair_row(g, {g.a: runs(worse), g.b: runs(better)}).verdict == HOLDS
    near = mixer.pair_row(g, {g.a: runs([4.0, 4.1, 4.2]), g.b: runs([4.02, 4.09, 4.21])})  # within it, in both ways
    assert near.verdict.startswith(INCONCLUSIVE) and near.form == "no gain" and "margin x1.02" in near.effect


def _short(name):
    return name.split("/")[-1]


def test_claims_whose_arms_a_profile_does_not_run_get_a_row_saying_so():
    rows = mixer.training_rows({}, profile="cpu")
    texts = {v.claim for v in rows}
    assert all(v.ours == "not run at this profile" and v.outcome == NOT_DECIDED for v in rows)
    not_at_cpu = set(exp.NOT_AT_CPU) | set(exp.WIKIPEDIA_ARMS)  # starved there; the book's setting runs at gpu, paper
    assert {r.text for r in mixer.ROWS if set(r.arms) & not_at_cpu} == texts


def test_the_equal_time_row_reads_both_arms_after_the_same_measured_time(monkeypatch):
    """The write-up's first comparison was made at equal wall-clock time: a faster arm that is no better per step
    wins there, and the row says it is time measured here (a CPU's), not the write-up's GPU time."""
    import pandas as pd

    from lmcompanion.chapters.mixer.rows import EQUAL_TIME, TIMED

    class Config:
        def flops_per_step(self):
            return 1.0

    class Finished:
        def __init__(self, seconds_per_step, losses, seed):
            steps = [10 * (i + 1) for i in range(len(losses))]
            self.config, self.seed = Config(), seed
            self.summary = {
                "train_time_s": seconds_per_step * steps[-1],
                "steps": steps[-1],
                "final": {"val": losses[-1]},
            }
            self._ev = pd.DataFrame({"step": steps, "val": losses, "train": losses})

        def evals(self):
            return self._ev

    _unigram(monkeypatch)  # the unigram level: every arm here learns
    per_step = [4.0, 3.5, 3.0, 2.8, 2.6, 2.5, 2.4, 2.3, 2.2, 2.1]  # the same curve against steps for both arms
    fast = [Finished(0.1, [x + 0.01 * s for x in per_step], s) for s in range(3)]
    slow = [Finished(1.0, [x + 0.01 * s for x in per_step], s) for s in range(3)]
    text, better, worse, parts, _, _ = EQUAL_TIME[0]
    row = mixer.equal_time_row(text, "", better, worse, {better: fast, worse: slow})
    assert row.verdict == HOLDS and row.claim.endswith(TIMED) and "CPU time here" in row.claim
    assert "after 10.0 s of training measured here" in row.ours  # the shortest run's time: the fast arm's
    assert mixer.timed([row]) == [row]  # shown apart with the other rows measured on this machine
    same = mixer.equal_time_row(text, "", better, worse, {better: slow, worse: fast[::-1]})
    assert same.verdict == FAILS


def test_an_arm_is_gated_at_the_step_its_row_compares(monkeypatch):
    """A row read at an intermediate step gates its arms on their losses there, not at the end."""
    import pandas as pd
    from types import SimpleNamespace

    _unigram(monkeypatch, 3.0)
    p = next(p for p in mixer.PAIRS if p.kind == "steps")

    def run(early, late):  # evaluated at steps 10 and 20
        ev = pd.DataFrame({"step": [10, 20], p.metric: [early, late], "val": [early, late], "train": [early, late]})
        return SimpleNamespace(summary={"final": {p.metric: late, "val": late}}, config=None, evals=lambda: ev)

    a = [run(2.9, 2.0), run(2.8, 2.1), run(2.85, 2.05)]  # learned by the end, not at step 10
    b = [run(2.0, 2.4), run(2.1, 2.5)]
    b_short = [run(2.0, 2.4)]
    v = mixer.pair_row(p, {p.a: a, p.b: [*b, run(2.05, 2.45)]})
    assert "at step 20" in v.ours and v.outcome != NOT_DECIDED
    early = [
        SimpleNamespace(summary=r.summary, config=None, evals=lambda ev=r.evals(): ev[ev["step"] == 10]) for r in a
    ]
    v = mixer.pair_row(p, {p.a: early, p.b: [*b, *b_short]})
    assert "at step 10" in v.ours and v.outcome == NOT_DECIDED and f"{_short(p.a)} has not learned" in v.verdict


def test_the_generation_prompts_and_samples_are_the_write_ups_and_name_their_models():
    """The first prompt runs to "You can play with it when you", which the quoted completions continue (issue 37);
    every quoted completion names the arm of its model's shape, and the generation notebook reads those arms."""
    prompt = analysis.PROMPTS["the orange ball"]
    assert prompt.endswith("You can play with it when you")
    assert analysis.SAMPLES[0].completion.startswith('come back."') and analysis.ACTUAL_NEXT.startswith('want."')
    assert [s.arm for s in analysis.SAMPLES] == [
        "mixer/expanded_d256",
        "mixer/llama_d128",
        "mixer/expanded_d256",
        "mixer/llama_d128",
        "mixer/flat_d1024",
        "mixer/deep_d64",
        "mixer/flat_d1024_b32",
    ]
    assert all(s.prompt in analysis.PROMPTS for s in analysis.SAMPLES)
    assert set(mixer.GENERATION) == {s.arm for s in analysis.SAMPLES}
    assert experiments.runs_at("mixer/deep_d64", "cpu")  # its sample at cpu too (its comparison is not run there)


def test_the_d_model_tables_show_the_tables_numbers_and_the_text_keeps_its_own():
    pub = {
        n: experiments.get(n).published
        for n in ("mixer/llama_d128", "mixer/llama_d256", "mixer/llama_d1024", "mixer/llama_d1024_b4")
    }
    table = {n: {**p, **{k: p[f"table_{k}"] for k in ("train", "val") if f"table_{k}" in p}} for n, p in pub.items()}
    assert (str(table["mixer/llama_d128"]["train"]), str(table["mixer/llama_d128"]["val"])) == ("2.38", "2.40")
    assert str(table["mixer/llama_d256"]["val"]) == "2.02" and str(pub["mixer/llama_d256"]["val"]) == "2.03"
    assert (str(pub["mixer/llama_d1024"]["train"]), str(pub["mixer/llama_d1024"]["val"])) == ("2.31", "2.32")
    assert str(pub["mixer/llama_d1024_b4"]["val"]) == "2.315" and "train_440k" not in pub["mixer/llama_d1024"]
    # the text's d=1024 Llama runs at batch 4, the table's at 8 (a quarter of each at cpu)
    assert {
        n: experiments.config(n, p, device="cpu").train.global_batch
        for n in ("mixer/llama_d1024", "mixer/llama_d1024_b4")
        for p in ("paper",)
    } == {"mixer/llama_d1024": 8, "mixer/llama_d1024_b4": 4}
    assert experiments.config("mixer/llama_d1024_b4", "cpu", device="cpu").train.global_batch == 1
    rows = {p.text: p for p in mixer.PAIRS}
    assert (
        rows["Llama d=512 (batch 8) beats d=1024 at batch 4 at fixed compute (validation)"].b == "mixer/llama_d1024_b4"
    )
    assert (
        "2.313/2.315" in rows["Llama d=512 (batch 8) beats d=1024 at batch 4 at fixed compute (validation)"].published
    )
    assert (
        "2.31/2.32"
        in rows["Llama d=512 beats d=1024 at batch 8 at fixed compute (the transformer table, validation)"].published
    )


def test_equal_samples_read_arms_of_different_batches_after_the_same_sequences(monkeypatch):
    from types import SimpleNamespace

    def run(batch, steps, losses):
        ev = pd.DataFrame({"step": steps, "train": losses, "val": losses})
        return SimpleNamespace(
            config=SimpleNamespace(train=SimpleNamespace(global_batch=batch)),
            evals=lambda: ev,
            summary={"final": {"train": losses[-1], "val": losses[-1]}},
        )

    big = [run(8, [10, 20, 30], [4.0, 3.5, 3.0])]  # sequences 80, 160, 240
    small = [run(4, [10, 20, 40, 60], [4.2, 4.1, 3.9, 3.8])]  # sequences 40, 80, 160, 240
    assert mixer.compute.common_samples(big, small) == 240
    assert mixer.compute.at_samples(small, 160, "train") == [3.9]
    _unigram(monkeypatch, 5.0)
    p = next(p for p in mixer.PAIRS if p.kind == "samples")
    v = mixer.pair_row(p, {p.a: big, p.b: small})
    assert "at 240 sequences" in v.ours and "3.00" in v.ours and "3.80" in v.ours


def test_trend_rows_have_enough_settings_to_be_decided():
    """Over three settings the smallest one-sided chance of a rank correlation is 1/6: a trend row needs four."""
    from lmcompanion import stats

    for label, names in mixer.TRENDS.items():
        assert len(names) >= 4, label
        d = [exp.ARMS[n].n_embed for n in names]
        assert d == sorted(d) and stats.spearman_p(d, [-x for x in d], "less") <= 0.05
        assert all(experiments.runs_at(n, "cpu") for n in names)


def test_the_gpts_run_at_both_learning_rates_and_name_the_mixer_they_are_compared_with():
    lr = {
        n: experiments.config(n, "paper", device="cpu").train.lr
        for n in ("mixer/gpt_h16", "mixer/gpt", "mixer/gpt_h16_eta005", "mixer/gpt_eta005")
    }
    assert lr == {"mixer/gpt_h16": 5e-4, "mixer/gpt": 5e-4, "mixer/gpt_h16_eta005": 0.005, "mixer/gpt_eta005": 0.005}
    gpt_rows = [p for p in mixer.PAIRS if p.section == mixer.rows.GPT]
    assert len(gpt_rows) == 6 and {p.b for p in gpt_rows} >= {"mixer/gpt_h16_eta005", "mixer/gpt_h16"}
    for p in gpt_rows:
        if p.a == "mixer/flat_d512":
            assert "1.76/1.81 mixer" in p.text and "cannot be identified" in p.published


def test_the_heads_claim_is_read_at_equal_time_and_timed_side_by_side():
    from lmcompanion import claims

    equal_time = {t[2] for t in mixer.EQUAL_TIME if t[1] == "mixer/llama_d512_h4"}
    assert equal_time == {"mixer/llama_d512", "mixer/llama_d512_h8", "mixer/llama_d512_h2"}
    assert set(claims.timed_pairs("mixer")) == {(f"mixer/llama_d512_h{h}", "mixer/llama_d512") for h in (8, 4, 2)}
    assert all(t in claims.timed_claims("mixer") for t, *_ in mixer.HEADS_TIME)


def test_memory_is_counted_in_mixed_precision_and_the_limits_read_the_counts(monkeypatch):
    from lmcompanion.chapters.mixer import facts

    from lmcompanion.memory import AutocastPolicy

    # CUDA's policy, applied above autograd: matrix products in fp16 (a parameter cast once), norms in fp32
    lin, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    with AutocastPolicy(torch.float16) as policy:
        y = lin(x)
        assert y.dtype == torch.float16 and lin(x).dtype == torch.float16 and len(policy.cache) == 2  # weight, bias
        assert torch.nn.functional.layer_norm(y, (4,)).dtype == torch.float32
    assert not policy.cache and lin(x).dtype == torch.float32
    cfg = MixerConfig(n_embed=64, n_layer=2, context_size=128)
    amp = training_memory(cfg, batch_size=16, include_head=True, autocast=torch.float16)
    fp32 = training_memory(cfg, batch_size=16, include_head=True)
    # the weights, their gradients and AdamW's state stay fp32; the activations shrink
    assert {k: amp[k] for k in ("parameters", "gradients", "optimizer_state")} == {
        k: fp32[k] for k in ("parameters", "gradients", "optimizer_state")
    }
    assert amp["saved_for_backward"] < fp32["saved_for_backward"]
    batch16 = mixer.batch16_rows()
    assert all("not comparable: a count is a lower bound" in v.verdict and v.kind == "computed" for v in batch16)
    # a count is a lower bound of the measured memory: a limit row does not hold where a model the write-up fits already
    # counts above 12 GiB, and is otherwise not comparable (a count under 12 GiB cannot show that a model fits, nor
    # that it does not); so are the batch-16 ratios, ratios of two lower bounds
    monkeypatch.setattr(
        facts,
        "gib",
        lambda label, batch, heads=16: (
            {16: 13.0, 8: 11.0, 4: 5.0}.get(batch, 1.0) if label.startswith("Llama") else {32: 9.0, 64: 13.0}[batch]
        ),
    )
    got = {v.claim: v.outcome for v in mixer.limit_rows()}
    assert got == {
        mixer.rows.LIMIT_D256: FAILS,
        mixer.rows.LIMIT_D512: NOT_DECIDED,
        mixer.rows.LIMIT_D1024: NOT_DECIDED,
        mixer.rows.LIMIT_B32: NOT_DECIDED,
    }
    assert all(v.kind == "computed" for v in mixer.limit_rows())
