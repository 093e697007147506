"""The masked-mixer chapter: its experiments (every arm at every profile, equal counted compute), the counts at the
write-up's sizes against an independent count, the computed analyses (liveness, memory, Johnson-Lindenstrauss),
the seed plan and the verdict helpers. The models' own tests (causality through gradients for every variant, the
mask's diagonal, fixed-window generation, bad configs) are in tests/test_mixer.py."""

import math

import pandas as pd
import torch

import pytest

from lmcompanion import experiments, models, nb
from lmcompanion.chapters import mixer
from lmcompanion.chapters.mixer import analysis
from lmcompanion.errors import ConfigError
from lmcompanion.models.transformer import training_memory
from lmcompanion.experiments import mixer as exp
from lmcompanion.verdicts import FAILS, HOLDS, INCONCLUSIVE

PROFILES = ("cpu", "paper")  # smoke and gpu: the notebooks build them


@pytest.mark.parametrize("profile", PROFILES)
def test_every_arm_builds_and_spends_the_profiles_budget(profile):
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


def test_every_arm_is_in_a_notebook_and_the_headline_arms_are_registered():
    used = set(mixer.FIRST + mixer.MAIN + mixer.FLAT_EXPANDED + mixer.SCALING + mixer.PARALLEL + mixer.POSITIONAL
               + mixer.V100 + mixer.GPT)
    assert used == set(experiments.names("mixer"))
    for name in mixer.HEADLINE:
        experiments.get(name)


def test_the_seed_plan_keeps_three_seeds_for_the_headline_claims_at_cpu():
    assert len(nb.setup(profile="cpu").seeds) == 3
    for name in mixer.HEADLINE:
        assert experiments.seeds_of(name, "cpu") == (0, 1, 2)
    assert experiments.seeds_of("mixer/kernel4", "cpu") == (0,)
    assert experiments.seeds_of("mixer/kernel4", "cpu", seeds=range(4)) == (0, 1, 2, 3)
    assert all(experiments.seeds_of(n, "gpu") == (0, 1, 2) for n in exp.ARMS)
    seeds = {}
    for run in experiments.plan(["mixer/kernel4", "mixer/flat_d512"], "cpu", device="cpu"):
        seeds.setdefault(run.name, []).append(run.seed)
    assert seeds == {"mixer/kernel4": [0], "mixer/flat_d512": [0, 1, 2]}
    shifted = nb.setup(profile="cpu", seed=5)  # the notebook's first seed shifts every arm's seeds
    assert [r.seed for r in shifted.plan(["mixer/kernel4", "mixer/flat_d512"])] == [5, 5, 6, 7]


def test_an_expansion_above_one_leaves_dead_weights_and_one_does_not():
    assert analysis.unread_weights(None) == 0
    assert analysis.unread_weights(1) == 0
    assert analysis.unread_weights(2) > 0
    table = analysis.liveness_table(d=16, L=8, expansions=(None, 1, 2))
    live = [int(v.replace(",", "")) for v in table["live (can get a gradient)"]]
    assert live[1] == live[2]  # e = 2 learns no more than e = 1 ...
    assert int(table["weights"].iloc[2].replace(",", "")) > int(table["weights"].iloc[1].replace(",", ""))  # ... with more


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
    assert mixer.similar("equal", "", lower, higher, ("a", "b")).verdict == FAILS  # 4 vs 4: two-sided 2/70
    assert mixer.similar("equal", "", lower[:3], higher[:3], ("a", "b")).verdict.startswith(INCONCLUSIVE)  # 2/20
    assert mixer.similar("equal", "", lower, [1.05, 1.15, 1.1], ("a", "b")).verdict.startswith(INCONCLUSIVE)
    assert mixer.untestable("a < b", "", [1.0], [2.0], ("a", "b")).verdict.startswith(INCONCLUSIVE)
    assert all(r.verdict == HOLDS for r in mixer.count_rows() + mixer.liveness_rows())


def test_memory_verdicts_read_the_counted_table():
    cells = {f: pd.DataFrame([[training_memory(analysis.memory_config(f, n, T))["one_pass"] / 2**20
                               for T in (512, 1024, 2048)] for n in (4, 8)], index=[4, 8], columns=[512, 1024, 2048])
             for f in ("mixer", "transformer")}
    assert all(r.verdict == HOLDS for r in mixer.memory_rows(cells))
    swapped = {"mixer": cells["transformer"], "transformer": cells["mixer"]}  # a transformer-like mixer fails both
    assert all(r.verdict == FAILS for r in mixer.memory_rows(swapped))


@pytest.mark.parametrize("override, fix", [
    ({"model.expansion": 0}, "expansion=None for the flat mixer"),
    ({"model.n_head": 3}, "must divide the block width"),
])
def test_bad_overrides_of_an_arm_are_rejected_with_the_fix(override, fix):
    with pytest.raises(ConfigError, match=fix):
        experiments.config("mixer/flat_d512", "cpu", device="cpu", overrides=override)


def test_a_mixer_cannot_read_a_context_other_than_its_own():
    model = models.build(experiments.config("mixer/flat_d512", "smoke", device="cpu").model)
    with pytest.raises(ValueError, match="pad the input"):
        model(torch.zeros(1, model.context_size - 1, dtype=torch.long))
