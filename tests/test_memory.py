"""Training memory, one method for every model family (lmcompanion.memory)."""

import pytest

from lmcompanion import experiments, memory
from lmcompanion.chapters.mixer import analysis
from lmcompanion.models.mixer import MixerConfig
from lmcompanion.models.transformer import gpt_config, llama_config


@pytest.mark.parametrize(
    "cfg",
    [
        MixerConfig(n_embed=64, n_layer=2, context_size=32),
        llama_config(64, 2, 4, context_size=32),
        gpt_config(64, 2, 4, context_size=32),
    ],
    ids=["mixer", "llama", "gpt"],
)
def test_counting_on_the_meta_device_gives_what_real_tensors_give(cfg):
    # the stored tensors agree exactly; the pass's peak may not (on real CPU tensors SDPA can take a fused path)
    meta, real = memory.training_memory(cfg, batch_size=3), memory.training_memory(cfg, batch_size=3, device="cpu")
    fixed = ("parameters", "buffers", "gradients", "optimizer_state")
    assert {k: meta[k] for k in fixed} == {k: real[k] for k in fixed} and meta["gradients"] > 0
    # the head adds its logits and the targets to the pass, and nothing to the parameters (counted either way)
    new, old = memory.training_memory(cfg, include_head=True), memory.training_memory(cfg)
    assert new["parameters"] == old["parameters"] and new["peak_during_pass"] > old["peak_during_pass"]


def test_the_mixer_chapters_names_call_the_shared_method():
    cfg = analysis.memory_config("mixer", 4, 512)
    assert analysis.training_memory(cfg) == memory.training_memory(cfg)
    assert callable(analysis.measure_memory_cuda) and callable(analysis.memory_counts)


@pytest.mark.parametrize(
    "name",
    [
        "ar_ed/baseline",
        "ar_ed/mse_pos_sub",
        "deepsight/mse_d11",
        "deepsight/baseline",
        "hourglass/attn_448_96_e6",
        "hourglass/vanilla",
        "mixer/flat_d256",
        "formal_ed/adamw",
    ],
)
def test_every_family_is_counted_the_same_way(name):
    if name not in experiments.names():
        pytest.skip(f"{name} is not registered")
    cfg = experiments.config(name, "smoke", device="cpu")
    m = memory.step_memory(cfg)
    assert m["parameters"] > 0 and m["gradients"] > 0 and m["peak_during_pass"] > 0
    assert m["optimizer_state"] == 2 * m["parameters"]  # fp32 parameters, two AdamW moments each
    assert m["training_step"] == m["parameters"] + m["buffers"] + m["peak_during_pass"] + m["optimizer_state"]
    # a real pass holds the same parameters and gradients, and no more activations: on the meta device attention
    # takes SDPA's math path, which saves the T x T probabilities; a CPU kernel may save less
    real = memory.training_memory(cfg.model, batch_size=cfg.train.batch_size, include_head=True, device="cpu")
    assert (real["parameters"], real["gradients"]) == (m["parameters"], m["gradients"])
    assert 0 < real["peak_during_pass"] <= m["peak_during_pass"]


def test_activations_grow_with_the_batch_and_parameters_do_not():
    cfg = experiments.config("ar_ed/baseline", "smoke", device="cpu").model
    one, four = (memory.training_memory(cfg, batch_size=b, include_head=True) for b in (1, 4))
    assert four["parameters"] == one["parameters"]
    assert four["peak_during_pass"] > 3 * (one["peak_during_pass"] - one["gradients"])


def test_a_family_without_hidden_states_is_counted_with_its_head():
    cfg = experiments.config("ar_ed/baseline", "smoke", device="cpu").model
    with pytest.raises(TypeError, match="include_head=True"):
        memory.training_memory(cfg, include_head=False)


def test_recorded_peak_reads_the_runs_made_on_cuda():
    class Run:
        def __init__(self, summary):
            self.summary = summary

    assert memory.recorded_peak([Run({"steps": 3})]) == []
    assert memory.recorded_peak([Run({"peak_mem_bytes": 2**30}), Run({})]) == [2.0**30]
