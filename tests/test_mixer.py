"""Masked mixers and the transformers they are compared with (models/mixer.py, models/transformer.py).

Cheapest first: causality through gradients, the mask, generation, parameter counts, bad configs, the masked
weights' gradients, the expanded mixer's dead weights, the memory estimator, and equivalence with literal
re-implementations of the original flat mixer and of rotary attention.
"""

import math
import time

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lmcompanion.errors import ConfigError
from lmcompanion.models.mixer import (
    MaskedMixer,
    MaskedTokenConv,
    MixerConfig,
    causal_mask,
    fixed_window_generate,
    token_mixer,
    token_weight_census,
    token_weight_liveness,
)
from lmcompanion.memory import training_memory
from lmcompanion.models.transformer import Transformer, TransformerConfig, gpt_config, llama_config, rope_cos_sin

V, L, D = 13, 6, 8
TINY = MixerConfig(vocab_size=V, context_size=L, n_embed=D, n_layer=2)
MIXERS = {
    "flat": {},
    "expanded e=1": {"expansion": 1},
    "expanded e=2": {"expansion": 2},
    "parallel 2": {"n_parallel": 2},
    "positional first": {"positional": "first"},
    "positional every": {"positional": "every"},
    "kernel 4": {"kernel_size": 4},
    "extra linear": {"embed_linear": True},
    "heads 2": {"n_head": 2},
    "heads 2, kernel 3": {"n_head": 2, "kernel_size": 3},
    "tied": {"tie_weights": True},
}
TRANSFORMERS = {
    "llama": llama_config(D, 2, 2, vocab_size=V, context_size=L),
    "gpt": gpt_config(D, 2, 2, vocab_size=V, context_size=L),
    "hybrid sequential": llama_config(D, 2, 2, vocab_size=V, context_size=L, hybrid="sequential"),
    "hybrid parallel": llama_config(D, 2, 2, vocab_size=V, context_size=L, hybrid="parallel"),
}
CONFIGS = {**{f"mixer {k}": TINY.replace(**kw) for k, kw in MIXERS.items()}, **TRANSFORMERS}


def build(cfg, seed=0):
    torch.manual_seed(seed)
    model = (MaskedMixer if isinstance(cfg, MixerConfig) else Transformer)(cfg)
    return model.double().eval()  # eval: the GPT's dropout off


def dependence(model, idx):
    """(T, T): entry (t, s) = sum |d logits[t] / d embedding[s]|, through a hook on the token embedding."""
    emb = model.wte(idx).detach()
    handle = model.wte.register_forward_hook(lambda m, i, o: current[0])
    current = [emb]

    def logits_of(e):
        current[0] = e
        return model(idx).logits

    try:
        J = torch.autograd.functional.jacobian(logits_of, emb)  # (1, T, V, 1, T, C)
    finally:
        handle.remove()
    return J[0, :, :, 0].abs().sum(dim=(1, 3))


# --------------------------------------------------------------------------------------------------
# 1-2. Causality and the diagonal


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_output_depends_on_a_later_token(name):
    model = build(CONFIGS[name])
    idx = torch.randint(0, V, (1, L), generator=torch.Generator().manual_seed(1))
    dep = dependence(model, idx)
    later = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
    assert (dep[later] == 0).all(), f"{name}: an output reads a later token"
    assert (dep[~later] > 0).all(), f"{name}: an output ignores an earlier token or itself"


@pytest.mark.parametrize(
    "kw", [{}, {"expansion": 1}, {"expansion": 2}, {"n_parallel": 2}, {"n_head": 2}, {"kernel_size": 4}], ids=str
)
def test_token_mixing_reads_each_tokens_own_position(kw):
    # the flat conv with tril(-1) instead of tril would zero the diagonal block of this Jacobian
    torch.manual_seed(0)
    mix = token_mixer(TINY.replace(**kw)).double()
    x = torch.randn(1, L, D, dtype=torch.float64)
    J = torch.autograd.functional.jacobian(mix, x)[0, :, :, 0]  # (L, D, L, D)
    dep = J.abs().sum(dim=(1, 3))
    assert (dep.diagonal() > 0).all()
    assert (dep[torch.triu(torch.ones(L, L, dtype=torch.bool), 1)] == 0).all()
    assert torch.equal(causal_mask(3, 3)[..., 0], torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))


# --------------------------------------------------------------------------------------------------
# 3. Fixed-window generation


def test_fixed_window_generation_never_uses_the_last_output():
    model = build(TINY)
    window = torch.randint(0, V, (2, L), generator=torch.Generator().manual_seed(2))
    before = window.clone()
    n = 4
    out = fixed_window_generate(model, window, n)
    assert out.shape == (2, n - 1)
    assert torch.equal(window, before)  # the caller's window (prompt and placeholders) is not modified
    # step by step: the first token is the argmax at position -n of the untouched window
    assert torch.equal(out[:, 0], model(window).logits[:, L - n].argmax(-1))
    # garbage in the last position's logits changes nothing
    garbage = model.lm_head.register_forward_hook(
        lambda m, i, o: torch.cat([o[:, :-1], 1e6 * torch.randn_like(o[:, -1:])], dim=1)
    )
    try:
        assert torch.equal(fixed_window_generate(model, window, n), out)
    finally:
        garbage.remove()
    # the placeholders after the prompt are never read before they are overwritten
    other = window.clone()
    other[:, L - n + 1 :] = (other[:, L - n + 1 :] + 1) % V
    assert torch.equal(fixed_window_generate(model, other, n), out)


def test_fixed_window_generation_matches_greedy_generate_for_a_transformer():
    model = build(TRANSFORMERS["llama"])
    window = torch.randint(0, V, (2, L), generator=torch.Generator().manual_seed(3))
    n = 4
    prompt = window[:, : L - n + 1]
    expected = model.generate(prompt, n - 1, temperature=0)[:, L - n + 1 :]
    assert torch.equal(fixed_window_generate(model, window, n), expected)


def test_generation_rejects_what_it_cannot_do():
    model = build(TINY)
    with pytest.raises(ValueError, match="fixed_window_generate"):
        model.generate(torch.zeros(1, 3, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="left-pad"):
        fixed_window_generate(model, torch.zeros(1, L - 1, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="n must lie"):
        fixed_window_generate(model, torch.zeros(1, L, dtype=torch.long), 1)


# --------------------------------------------------------------------------------------------------
# 4. Parameter counts


def mixer_formula(V, L, d, n, e=None, par=1, heads=1, k=1, pos=False, extra=False, tie=False):
    """Closed form, written from the write-up's modules (not from our code)."""
    w = d + pos  # block width
    norms = 2 * 2 * w
    ff = (w * 4 * w + 4 * w) + (4 * w * w + w)
    conv = L * L * k + L
    if e is not None:
        mix = (e * L * L * k + e * L) + (L * e * L * k + L)
    elif heads > 1:
        mix = heads * (w * (w // heads) + w // heads) + heads * conv + (w * w + w)
    else:
        mix = par * conv
    return n * (norms + ff + mix) + V * d * (1 if tie else 2) + (d * d + d if extra else 0)


def llama_formula(V, d, n, L=0, hybrid=False):
    return 2 * V * d + n * (4 * d * d + 3 * 4 * d * d + 2 * d + (L * L + L if hybrid else 0)) + d


def gpt_formula(V, L, d, n):
    return V * d + L * d + n * ((4 * d * d + 4 * d) + (8 * d * d + 5 * d) + 2 * 2 * d)


PAPER = MixerConfig()  # V=4096, L=512, n=8, d=1024
COUNTS = [
    (PAPER.replace(n_embed=256), mixer_formula(4096, 512, 256, 8), 8_411_136),
    (PAPER.replace(n_embed=512), mixer_formula(4096, 512, 512, 8), 23_109_632),
    (PAPER, mixer_formula(4096, 512, 1024, 8), 77_672_448),
    (PAPER.replace(n_embed=2048), mixer_formula(4096, 512, 2048, 8), 287_461_376),
    (PAPER.replace(n_embed=512, expansion=2), mixer_formula(4096, 512, 512, 8, e=2), 29_409_280),
    (PAPER.replace(expansion=2), mixer_formula(4096, 512, 1024, 8, e=2), 83_972_096),
    (PAPER.replace(n_embed=512, expansion=1), mixer_formula(4096, 512, 512, 8, e=1), 25_210_880),
    (PAPER.replace(n_parallel=2), mixer_formula(4096, 512, 1024, 8, par=2), 79_773_696),
    (PAPER.replace(n_parallel=4), mixer_formula(4096, 512, 1024, 8, par=4), 83_976_192),
    (PAPER.replace(positional="first"), mixer_formula(4096, 512, 1024, 8, pos=True), 77_803_656),
    (PAPER.replace(positional="every"), mixer_formula(4096, 512, 1024, 8, pos=True), 77_803_656),
    (PAPER.replace(kernel_size=4), mixer_formula(4096, 512, 1024, 8, k=4), 83_963_904),
    (PAPER.replace(embed_linear=True), mixer_formula(4096, 512, 1024, 8, extra=True), 78_722_048),
    (PAPER.replace(n_head=2), mixer_formula(4096, 512, 1024, 8, heads=2), 96_567_296),
    (PAPER.replace(n_head=4), mixer_formula(4096, 512, 1024, 8, heads=4), 100_769_792),
    (llama_config(128), llama_formula(4096, 128, 8), 3_147_904),
    (llama_config(256), llama_formula(4096, 256, 8), 10_490_112),
    (llama_config(512), llama_formula(4096, 512, 8), 37_757_440),
    (llama_config(1024), llama_formula(4096, 1024, 8), 142_623_744),
    (gpt_config(512), gpt_formula(4096, 512, 512, 8), 27_578_368),
]


@pytest.mark.parametrize("cfg, formula, reference", COUNTS, ids=[f"{c.family}-{r}" for c, _, r in COUNTS])
def test_parameter_counts_match_the_write_up(cfg, formula, reference):
    assert formula == reference
    with torch.device("meta"):
        model = (MaskedMixer if isinstance(cfg, MixerConfig) else Transformer)(cfg)
    assert model.num_params() == reference


def test_counts_without_a_reference_number_follow_the_formulas():
    cases = [
        (PAPER.replace(tie_weights=True), mixer_formula(4096, 512, 1024, 8, tie=True)),
        (llama_config(512, hybrid="sequential"), llama_formula(4096, 512, 8, L=512, hybrid=True)),
        (llama_config(512, hybrid="parallel"), llama_formula(4096, 512, 8, L=512, hybrid=True)),
    ]
    for cfg, expected in cases:
        with torch.device("meta"):
            model = (MaskedMixer if isinstance(cfg, MixerConfig) else Transformer)(cfg)
        assert model.num_params() == expected
    with torch.device("meta"):
        gpt = Transformer(gpt_config(512))
    assert gpt.num_params(exclude_positional=True) == 27_578_368 - 512 * 512  # the position table, if left out


def test_flops_are_counted_from_the_L_by_L_product():
    # forward per token: 2 L d per conv (the L x L matrix times (L, d), over L tokens), 16 d^2 in FF, 2 d V in the
    # head; backward twice that
    n = TINY.n_layer
    assert build(TINY).flops_per_token() == 3 * (n * (2 * L * D + 16 * D * D) + 2 * D * V)


# --------------------------------------------------------------------------------------------------
# 5. Bad configs


@pytest.mark.parametrize(
    "cls, kw, fix",
    [
        (MixerConfig, {"expansion": 0}, "expansion=None for the flat mixer"),
        (MixerConfig, {"n_head": 3}, "must divide the block width 1024"),
        (MixerConfig, {"n_head": 2, "positional": "first"}, "n_embed \\+ 1 positional channel"),
        (MixerConfig, {"kernel_size": 0}, "kernel_size must be >= 1"),
        (MixerConfig, {"n_parallel": 0}, "n_parallel must be >= 1"),
        (MixerConfig, {"expansion": 2, "n_parallel": 2}, "keep one"),
        (MixerConfig, {"n_parallel": 2, "n_head": 2}, "keep one"),
        (MixerConfig, {"positional": "rope"}, "'none' | 'first' | 'every'"),
        (TransformerConfig, {"n_head": 3}, "divisible by model.n_head"),
        (TransformerConfig, {"n_embed": 12, "n_head": 4}, "head size .* must be even"),
        (TransformerConfig, {"hybrid": "sequential", "block": "post"}, "set model.block='pre'"),
        (TransformerConfig, {"dropout": 1.0}, "dropout must lie in"),
    ],
)
def test_bad_configs_are_rejected_with_the_fix(cls, kw, fix):
    with pytest.raises(ConfigError, match=fix):
        cls(**kw)


def test_input_length_must_be_the_context_for_a_mixer_and_a_hybrid():
    with torch.device("meta"):
        mixer = MaskedMixer(MixerConfig())
    with pytest.raises(
        ValueError,
        match="input length 100 but this mixer was built for context_size 512: pad the "
        "input to 512 tokens \\(the data source pads on the left\\)",
    ):
        mixer(torch.zeros(1, 100, dtype=torch.long, device="meta"))
    hybrid = build(TRANSFORMERS["hybrid sequential"])
    with pytest.raises(ValueError, match=f"pad the input to {L} tokens"):
        hybrid(torch.zeros(1, L - 1, dtype=torch.long))
    llama = build(TRANSFORMERS["llama"])
    assert llama(torch.zeros(1, L - 1, dtype=torch.long)).logits.shape == (1, L - 1, V)
    with pytest.raises(ValueError, match="exceeds context_size"):
        llama(torch.zeros(1, L + 1, dtype=torch.long))


def test_configs_are_frozen_and_hashable():
    for cfg in (TINY, *CONFIGS.values()):
        assert hash(cfg) == hash(cfg.replace())
        with pytest.raises(Exception):
            cfg.n_embed = 3


# --------------------------------------------------------------------------------------------------
# 6-7. The masked weights and the expanded mixer's dead weights


@pytest.mark.parametrize("kw", [{}, {"kernel_size": 4}, {"n_head": 2}], ids=str)
def test_masked_entries_get_zero_gradient_and_forward_never_writes_the_weights(kw):
    model = build(TINY.replace(**kw)).train()
    convs = [m for m in model.modules() if isinstance(m, MaskedTokenConv)]
    before = [c.weight.detach().clone() for c in convs]
    idx = torch.randint(0, V, (3, L), generator=torch.Generator().manual_seed(4))
    model(idx, idx).loss.backward()
    for conv, w0 in zip(convs, before):
        upper = ~conv.mask.expand_as(conv.weight)
        assert torch.equal(conv.weight.detach(), w0)  # weight.data untouched
        assert (conv.weight[upper] != 0).all()  # the unused upper triangle keeps its initial values
        assert (conv.weight.grad[upper] == 0).all()
        assert (conv.weight.grad[~upper] != 0).all()
    assert not any(k.endswith("mask") for k in model.state_dict())  # non-persistent


@pytest.mark.parametrize("e", [1, 2, 3])
def test_dead_weight_analysis_agrees_with_a_backward_pass(e):
    cfg = TINY.replace(expansion=e)
    model = build(cfg).train()
    idx = torch.randint(0, V, (4, L), generator=torch.Generator().manual_seed(5))
    (model(idx).logits * torch.randn(4, L, V, dtype=torch.float64)).sum().backward()
    params = dict(model.named_parameters())
    live_by_name = token_weight_liveness(model)
    assert len(live_by_name) == 4 * cfg.n_layer  # two convs a block, weight and bias each
    for name, (kept, live) in live_by_name.items():
        grad = params[name].grad
        assert (grad[~live] == 0).all(), name
        assert (grad[live] != 0).all(), name
    n = cfg.n_layer
    census = token_weight_census(model)
    assert census == {
        "total": n * (2 * e * L * L + e * L + L),
        "live": n * (2 * L * (L + 1) // 2 + 2 * L),  # two lower triangles and the biases of read channels
        "masked": n * (L * (L - 1) // 2 + e * L * L - L * (L + 1) // 2),
        "unread": n * (e - 1) * (L * L + L),  # hidden channels >= L: their rows and biases
    }


# --------------------------------------------------------------------------------------------------
# 8. Training memory


def test_memory_estimate_of_the_largest_cell_is_quick_and_grows_with_context():
    for cfg in (MixerConfig(n_embed=1024, n_layer=16), llama_config(1024, 16, 16)):
        t0 = time.perf_counter()
        big = training_memory(cfg.replace(context_size=8192))
        assert time.perf_counter() - t0 < 30
        small = training_memory(cfg.replace(context_size=512))
        for key in ("saved_for_backward", "peak_during_pass", "one_pass"):
            assert big[key] > small[key] > 0
        assert small["training_step"] == small["one_pass"] + small["optimizer_state"]
    mixer = training_memory(MixerConfig(n_embed=1024, n_layer=4, context_size=2048))
    llama = training_memory(llama_config(1024, 4, 16, context_size=2048))
    assert mixer["saved_for_backward"] < llama["saved_for_backward"]  # the write-up's point
    assert mixer["masked_weight_copies"] == 4 * 2048 * 2048 * 4 and llama["masked_weight_copies"] == 0


def test_memory_estimate_on_meta_equals_the_count_on_real_tensors():
    cfg = TINY.replace(n_layer=3)
    meta, cpu = training_memory(cfg), training_memory(cfg, device="cpu")
    assert meta == cpu
    with_head = training_memory(cfg, include_head=True)
    assert with_head["peak_during_pass"] > meta["peak_during_pass"]
    assert with_head["gradients"] - meta["gradients"] == V * D * 4  # the head's gradient
    # the transformer on real CPU tensors takes a fused attention path that saves less than the math path
    gpt = gpt_config(D, 2, 2, vocab_size=V, context_size=L)
    assert 0 < training_memory(gpt, device="cpu")["saved_for_backward"] <= training_memory(gpt)["saved_for_backward"]


# --------------------------------------------------------------------------------------------------
# 9. Equivalence with literal re-implementations


class OriginalMixerBlock(nn.Module):
    """The write-up's MixerBlock, the original's way: the mask is written into weight.data every forward."""

    def __init__(self, dim, length, expansion=None, kernel=1):
        super().__init__()
        self.patch_layernorm = nn.LayerNorm(dim)
        self.seq_layernorm = nn.LayerNorm(dim)
        self.patch_ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        if expansion:
            self.conv = nn.Sequential(
                nn.Conv1d(length, expansion * length, 1), nn.GELU(), nn.Conv1d(expansion * length, length, 1)
            )
        else:
            self.conv = nn.Conv1d(length, length, kernel, padding="same")

    @staticmethod
    def mask_(conv):
        if conv.kernel_size[0] == 1:  # the write-up's listing: 'f d p -> f (d p)', tril, back
            w = conv.weight.reshape(conv.weight.shape[0], -1)
            conv.weight.data = (w * torch.tril(torch.ones(w.shape, dtype=w.dtype))).reshape(conv.weight.shape)
        else:  # the kernel-4 code: 'f d p -> p f d', tril, back
            conv.weight.data = torch.tril(conv.weight.permute(2, 0, 1)).permute(1, 2, 0).contiguous()

    def forward(self, x):
        if x.dim() > 3:
            x = x.reshape(-1, *x.shape[-2:])  # 'b p t f -> (b p) t f'
        for conv in (self.conv[0], self.conv[2]) if isinstance(self.conv, nn.Sequential) else (self.conv,):
            self.mask_(conv)
        residual = x
        x = self.seq_layernorm(x)
        x = self.conv(x) + residual
        residual = x
        x = self.patch_layernorm(x)
        return self.patch_ff(x) + residual


class OriginalLanguageMixer(nn.Module):
    def __init__(self, n_vocab, dim, depth, length, expansion=None, kernel=1):
        super().__init__()
        self.wte = nn.Embedding(n_vocab, dim)
        self.mixerblocks = nn.ModuleList(OriginalMixerBlock(dim, length, expansion, kernel) for _ in range(depth))
        self.lm_head = nn.Linear(dim, n_vocab, bias=False)

    def forward(self, input_ids, labels):  # (B, 1, L) each, labels -100 on pads
        x = self.wte(input_ids)
        for block in self.mixerblocks:
            x = block(x)
        output = self.lm_head(x).permute(0, 2, 1)  # 'b t e -> b e t'
        labels = labels.reshape(labels.shape[0], -1)  # 'b p t -> b (p t)'
        loss = F.cross_entropy(output[..., :-1], labels[..., 1:])
        return loss, output


def original_state_dict(ours):
    names = {
        "patch_ff.c_fc": "patch_ff.0",
        "patch_ff.residual_proj": "patch_ff.2",
        "conv.expand": "conv.0",
        "conv.contract": "conv.2",
    }
    out = {}
    for key, value in ours.items():
        key = key.replace("blocks.", "mixerblocks.")
        for a, b in names.items():
            key = key.replace(a, b)
        out[key] = value.clone()
    return out


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kw", [{}, {"kernel_size": 4}, {"expansion": 2}], ids=str)
def test_mixer_matches_the_original_code(kw):
    cfg = TINY.replace(**kw)
    ours = build(cfg, seed=0).train()
    torch.manual_seed(0)
    original = OriginalLanguageMixer(V, D, cfg.n_layer, L, cfg.expansion, cfg.kernel_size).double()
    # the same seed draws the same initial weights (PyTorch's defaults, created in the original's order)
    mapped = original_state_dict(ours.state_dict())
    assert mapped.keys() == original.state_dict().keys()
    assert all(torch.equal(v, original.state_dict()[k]) for k, v in mapped.items())
    g = torch.Generator().manual_seed(6)
    idx = torch.randint(3, V, (3, L), generator=g)
    idx[0, :2] = 2  # left padding with pad = eos = 2
    labels = idx.masked_fill(idx == 2, -100)
    targets = torch.cat([labels[:, 1:], torch.full((3, 1), -100)], dim=1)  # the package's shifted data
    opt_ours = torch.optim.AdamW(ours.parameters(), lr=1e-2, weight_decay=0.0)
    opt_orig = torch.optim.AdamW(original.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(3):  # same outputs, and the same kept weights after AdamW steps with weight decay 0
        out = ours(idx, targets)
        loss, output = original(idx[:, None], labels[:, None])
        assert torch.allclose(out.logits, output.permute(0, 2, 1), atol=1e-10)
        assert torch.allclose(out.loss, loss.float(), atol=1e-6)  # the package's loss is computed in fp32
        ours_loss = F.cross_entropy(out.logits.reshape(-1, V), targets.reshape(-1))  # the same, in fp64
        for model, opt, value in ((ours, opt_ours, ours_loss), (original, opt_orig, loss)):
            opt.zero_grad()
            value.backward()
            opt.step()
    first = ours.blocks[0].conv if not cfg.expansion else ours.blocks[0].conv.expand
    first_orig = original.mixerblocks[0].conv if not cfg.expansion else original.mixerblocks[0].conv[0]
    upper = ~first.mask.expand_as(first.weight)
    assert torch.allclose(first.weight[~upper], first_orig.weight[~upper], atol=1e-10)
    assert not torch.equal(first.weight[upper], first_orig.weight[upper])  # only the checkpoints differ


def test_kernel_4_convolution_pads_one_feature_left_and_two_right():
    torch.manual_seed(0)
    conv = MaskedTokenConv(L, L, 4).double()
    x = torch.randn(2, L, D, dtype=torch.float64)
    xp = F.pad(x, (1, 2))  # (B, L, D + 3)
    W = conv.weight * torch.tril(torch.ones(L, L, dtype=torch.float64))[..., None]
    expected = conv.bias[None, :, None] + sum(
        torch.einsum("it,btj->bij", W[..., tap], xp[..., tap : tap + D]) for tap in range(4)
    )
    assert torch.allclose(conv(x), expected, atol=1e-12)


def loop_rope_attention(x, attn, n_head, theta):
    """Rotary causal attention with Python loops: features i and i + hs/2 rotated by the angle t theta^(-2i/hs)."""
    B, T, C = x.shape
    hs = C // n_head
    q, k, v = (x @ attn.c_attn.weight.T).split(C, dim=-1)

    def rotate(vec, t):
        out = vec.clone()
        for i in range(hs // 2):
            a = t * theta ** (-2 * i / hs)
            out[i] = vec[i] * math.cos(a) - vec[i + hs // 2] * math.sin(a)
            out[i + hs // 2] = vec[i + hs // 2] * math.cos(a) + vec[i] * math.sin(a)
        return out

    y = torch.zeros_like(x)
    for b in range(B):
        for h in range(n_head):
            f = slice(h * hs, (h + 1) * hs)
            for t in range(T):
                scores = torch.stack(
                    [rotate(q[b, t, f], t) @ rotate(k[b, s, f], s) / math.sqrt(hs) for s in range(t + 1)]
                )
                y[b, t, f] = (torch.softmax(scores, 0)[:, None] * v[b, : t + 1, f]).sum(0)
    return y @ attn.residual_proj.weight.T


def test_rotary_attention_matches_a_loop_implementation():
    cfg = TransformerConfig(vocab_size=V, context_size=L, n_embed=16, n_layer=1, n_head=2)
    attn = build(cfg).blocks[0].attn
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    ours = attn(x, rope_cos_sin(5, 8, cfg.rope_theta))
    assert torch.allclose(ours, loop_rope_attention(x, attn, 2, cfg.rope_theta), atol=1e-12)


@pytest.mark.parametrize("hybrid", ["sequential", "parallel"])
def test_hybrid_blocks_add_the_masked_conv_where_the_write_up_puts_it(hybrid):
    model = build(TRANSFORMERS[f"hybrid {hybrid}"])
    block = model.blocks[0]
    x = torch.randn(2, L, D, dtype=torch.float64)
    rope = rope_cos_sin(L, D // 2, 10_000.0)
    h = block.norm_1(x)
    a = block.attn(h, rope)
    x1 = x + a + block.mixer(a if hybrid == "sequential" else h)
    assert torch.allclose(block(x, rope), x1 + block.mlp(block.norm_2(x1)), atol=1e-12)


def test_gpt_is_post_norm_with_learned_positions_and_a_tied_head():
    model = build(TRANSFORMERS["gpt"])
    assert model.lm_head.weight is model.wte.weight and model.norm_f is None
    block = model.blocks[0]
    x = torch.randn(2, L, D, dtype=torch.float64)
    x1 = block.norm_1(x + block.attn(x))
    assert torch.allclose(block(x), block.norm_2(x1 + block.mlp(x1)), atol=1e-12)
    idx = torch.randint(0, V, (2, L))
    model.train()
    assert not torch.equal(model(idx).logits, model(idx).logits)  # dropout 0.1 in training


def test_gpt_mlp_uses_the_tanh_gelu_of_hf_openai_gpt():
    """HF's OpenAIGPT maps afn="gelu" to gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the GPT block's
    MLP is that formula written out here, and differs measurably from the exact erf GELU."""
    import math

    model = build(TRANSFORMERS["gpt"])
    mlp = model.blocks[0].mlp.eval()
    x = torch.randn(3, L, D, dtype=torch.float64) * 3
    h = mlp.c_fc(x)
    gelu_new = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h.pow(3))))
    assert torch.allclose(mlp(x), mlp.residual_proj(gelu_new), atol=1e-12)
    z = torch.linspace(-4, 4, 801, dtype=torch.float64)
    tanh_form = 0.5 * z * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z.pow(3))))
    assert torch.allclose(mlp.gelu(z), tanh_form, atol=1e-12)
    exact = 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
    assert (tanh_form - exact).abs().max() > 1e-4  # the two forms are not interchangeable
    assert TRANSFORMERS["gpt"].mlp == "gelu_tanh" and TRANSFORMERS["llama"].mlp == "swiglu"


def test_positional_channel_holds_raw_positions():
    for variant in ("first", "every"):
        model = build(TINY.replace(positional=variant))
        seen = []
        hooks = [b.register_forward_pre_hook(lambda m, args: seen.append(args[0][..., -1])) for b in model.blocks]
        model(torch.randint(0, V, (2, L)))
        for h in hooks:
            h.remove()
        positions = torch.arange(-L // 2, L // 2, dtype=torch.float64).expand(2, L)
        assert torch.equal(seen[0], positions)
        assert torch.equal(seen[1], positions) == (variant == "every")
