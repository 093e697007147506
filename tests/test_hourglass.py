"""The hourglass transformer with soft experts: causality, the repeat-mode blind spot, the write-up's parameter
counts, the soft-expert merge, validation, and equivalence with plain-loop implementations. CPU only, seconds."""

import functools
import math

import pytest
import torch
import torch.nn.functional as F

from lmcompanion.config import ConfigError
from lmcompanion.models.hourglass import (
    Block,
    Hourglass,
    HourglassConfig,
    base_config,
    latent_size_for,
    loss_by_group_position,
    merge_experts,
    run_config,
    seq_length_label,
    vanilla_config,
)

# 24 tokens in 4 groups of 6; level 0 keeps 2 latents per group (a 4-token blind spot), level 1 keeps 1
TINY = HourglassConfig(
    vocab_size=11,
    context_size=24,
    n_embed=(8, 16, 16),
    n_head=2,
    dropout=0.0,
    enc_dropout=0.0,
    dec_dropout=0.0,
    n_groups=4,
    latent_size=(2, 1),
    n_block_local_global=1,
    n_block_latent=2,
    n_block_enc=2,
    nb_soft_experts=3,
    nb_shared_experts=1,
    apply_soft_experts_every=2,
)
THREE_LEVELS = dict(n_embed=(8, 8, 16, 16), latent_size=(3, 2, 1))
TINY_VANILLA = vanilla_config(vocab_size=11, context_size=24, n_embed=(16,), n_head=2, n_block_latent=3, dropout=0.0)
LOWER = torch.ones(24, 24, dtype=torch.bool).tril()  # (t, s) with s <= t

VARIANTS = {
    "repeat": {},
    "attn": dict(up_sampling="attn"),
    "attn_skip_twice": dict(up_sampling="attn", attn_skip_twice=True),
    "perceiver": dict(encoder_type="perceiver"),
    "perceiver_original_mask": dict(encoder_type="perceiver", perceiver_original_mask=True),
    "two_shared_experts": dict(nb_soft_experts=4, nb_shared_experts=2, apply_soft_experts_every=1),
    "same_kv": dict(same_kv_for_soft_experts=True),
    "soft_experts_in_enc": dict(soft_experts_in=("latent", "enc"), n_block_enc=3, apply_soft_experts_every=1),
    "no_experts": dict(nb_soft_experts=0, nb_shared_experts=0),
    "dense_former": dict(dense_former=True, n_block_latent=3),
    "dense_former_attn": dict(dense_former=True, up_sampling="attn"),
    "latent_loss": dict(latent_loss="cos_similarity"),
    "interleave": dict(interleave_local_global=True, n_block_local_global=2),
    "learnable_skip": dict(learnable_skip=True),
    "learnable_skip_attn": dict(learnable_skip=True, up_sampling="attn", attn_skip_twice=True),
    "swiglu": dict(activation="swiglu"),
    "original_quirks": dict(global_ln1=False, qk_norm=False, normalization="layernorm", bias=True),
    "final_norm": dict(final_norm=True, up_sampling="attn"),
    "three_levels": THREE_LEVELS,
    "three_levels_attn": dict(THREE_LEVELS, up_sampling="attn"),
    "pad_to_groups": dict(pad_inputs_to="n_groups"),
    "no_positions": dict(pos_embd="no", use_pos_embd_in_enc_dec=False),
    "no_level_positions": dict(use_pos_embd_in_enc_dec=False, up_sampling="attn"),
    "merge_max": dict(expert_merge="max", apply_soft_experts_every=1),
    "merge_mean": dict(expert_merge="mean", up_sampling="attn"),
    "wide_latent": dict(n_embed=(8, 16, 32)),
}


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models run faster on one thread, and much faster than several threads on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(**changes) -> HourglassConfig:
    return TINY.replace(**changes)


def build(cfg: HourglassConfig, seed: int = 0) -> Hourglass:
    """A float64 model in eval mode, with the DenseFormer weights moved off their identity init."""
    torch.manual_seed(seed)
    model = Hourglass(cfg).double().eval()
    if cfg.dense_former:
        with torch.no_grad():
            model.dense_former_weights.add_(0.3 * torch.randn_like(model.dense_former_weights))
    return model


def influence(model: Hourglass, idx: torch.Tensor) -> torch.Tensor:
    """J[t, s] = sum_c |d (w . logits[0, t]) / d E[0, s, c]|: how position t's logits depend on the token embedding
    at position s (the output of wte, before positions are added), for a random direction w."""
    store = {}

    def leaf(module, inputs, out):
        store["E"] = out.detach().requires_grad_(True)
        return store["E"]

    hook = model.wte.register_forward_hook(leaf)
    logits = model(idx).logits  # (1, T, V)
    hook.remove()
    T = idx.size(1)
    w = torch.randn(logits.size(-1), dtype=logits.dtype, generator=torch.Generator().manual_seed(1))
    rows = [
        torch.autograd.grad(logits[0, t] @ w, store["E"], retain_graph=True)[0][0, :T].abs().sum(-1) for t in range(T)
    ]
    return torch.stack(rows)  # (T, T)


def blind_pairs(T: int, group_len: int, blind: int) -> torch.Tensor:
    """(T, T) bool: t at offset < blind of its group, s an earlier position of the same group."""
    t, s = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return (t // group_len == s // group_len) & (s < t) & (t % group_len < blind)


# --------------------------------------------------------------------------------------------------
# 1. No future leak, through gradients at every position


@pytest.mark.parametrize("name", VARIANTS)
def test_no_position_depends_on_a_later_token(name):
    model = build(tiny(**VARIANTS[name]))
    J = influence(model, torch.randint(0, 11, (1, 24), generator=torch.Generator().manual_seed(2)))
    assert torch.count_nonzero(J.triu(1)) == 0, "a position's logits depend on a later token"
    assert (J.diagonal() > 0).all()  # every position sees its own token
    assert torch.count_nonzero(J.tril(-1)) > 0  # and some earlier ones: the check can fail


def test_no_future_leak_in_the_vanilla_baseline():
    model = build(TINY_VANILLA)
    J = influence(model, torch.randint(0, 11, (1, 24), generator=torch.Generator().manual_seed(2)))
    assert torch.count_nonzero(J.triu(1)) == 0
    assert (J[LOWER] > 0).all()  # a plain transformer sees every earlier token


# --------------------------------------------------------------------------------------------------
# 2. The repeat-mode blind spot


@pytest.mark.parametrize("changes", [{}, dict(encoder_type="perceiver"), THREE_LEVELS, dict(activation="swiglu")])
def test_repeat_mode_blind_spot_is_exactly_the_first_offsets_of_each_group(changes):
    cfg = tiny(**changes)
    J = influence(build(cfg), torch.randint(0, 11, (1, 24), generator=torch.Generator().manual_seed(3)))
    blind = blind_pairs(24, cfg.group_len, cfg.blind_spot)
    assert cfg.blind_spot == cfg.group_len - cfg.latent_size[0] > 0
    assert torch.equal(
        (J == 0) & LOWER, blind
    )  # zero exactly on the blind pairs, nowhere else at or below the diagonal


@pytest.mark.parametrize("changes", [{}, dict(encoder_type="perceiver"), THREE_LEVELS, dict(attn_skip_twice=True)])
def test_attention_upsampling_has_no_blind_spot(changes):
    cfg = tiny(up_sampling="attn", **changes)
    J = influence(build(cfg), torch.randint(0, 11, (1, 24), generator=torch.Generator().manual_seed(3)))
    assert (J[LOWER] > 0).all()


def test_group_position_losses_lay_out_cross_entropy_by_offset():
    model = build(TINY)
    idx = torch.randint(0, 11, (2, 24))
    targets = torch.randint(0, 11, (2, 24))
    targets[0, 5] = -100
    by_pos = model.group_position_losses(idx, targets)
    assert by_pos.shape == (2, 4, 6) and torch.isnan(by_pos[0, 0, 5])
    assert by_pos.nanmean().item() == pytest.approx(model(idx, targets).loss.item(), rel=1e-6)
    short = model.group_position_losses(idx[:, :17], targets[:, :17])  # laid out as the model pads: to 24
    assert short.shape == (2, 4, 6) and torch.isnan(short[:, 2, 5:]).all() and torch.isnan(short[:, 3]).all()
    assert torch.allclose(short[:, :2], by_pos[:, :2], equal_nan=True)  # a prefix keeps its losses
    vanilla = loss_by_group_position(torch.zeros(2, 22, 11), targets[:, :22], n_groups=4)
    assert vanilla.shape == (2, 4, 6) and vanilla[:, -1, -2:].isnan().all()
    assert vanilla[0, 0, 0].item() == pytest.approx(math.log(11))


# --------------------------------------------------------------------------------------------------
# 3. Parameter counts: the write-up's, exactly, and a closed form


@functools.lru_cache(maxsize=None)
def meta(cfg: HourglassConfig) -> Hourglass:
    with torch.device("meta"):
        return Hourglass(cfg)


def test_base_model_counts_19_55m_as_the_original_counts():
    model = meta(base_config())
    assert model.num_params() == 19_552_768
    # the global blocks' first norms are used here; the final norm is built only with final_norm=True
    assert model.num_params(as_original=False) == 19_455_296 + 5_248
    assert model.original_unused_params() == {"first_group_tokens": 92_160, "head_ln": 64}
    normed = meta(base_config(final_norm=True))
    assert normed.num_params() == 19_552_768  # the original counts head_ln whether or not it is applied
    assert normed.num_params(as_original=False) == 19_455_296 + 5_248 + 64
    assert normed.original_unused_params() == {"first_group_tokens": 92_160}
    quirks = meta(base_config(global_ln1=False))
    assert quirks.num_params() == 19_552_768
    assert quirks.num_params(as_original=False) == 19_455_296  # only what the original's forward reads
    assert quirks.original_unused_params() == {"first_group_tokens": 92_160, "global_ln_1": 5_248, "head_ln": 64}
    assert sum(quirks.original_unused_params().values()) == 97_472


@pytest.mark.parametrize(
    "cfg, expected",
    [
        (run_config(), 27_423_232),
        (run_config(up_sampling="attn"), 27_484_864),
        (run_config(up_sampling="attn", attn_skip_twice=True, global_ln1=False), 27_484_864),
        (vanilla_config(), 20_484_096),
    ],
)
def test_run_config_and_vanilla_counts(cfg, expected):
    model = meta(cfg)
    assert model.num_params() == expected
    # only the position tables are left out: 768 x 64 + 16 x 128 + 2 x 256 (hourglass) or 768 x 256 (vanilla)
    tables = 768 * cfg.n_embed[0] + sum(k * n for k, n in zip(cfg.latent_size, cfg.n_embed[1:]))
    assert model.num_params(exclude_positional=False) - expected == tables


@pytest.mark.parametrize(
    "label, experts, up, none_shared, one_shared",
    [
        ("384-32", 6, "attn", 23.58, 22.79),
        ("512-32", 6, "repeat", 23.51, 22.73),
        ("448-96", 2, "repeat", 20.47, 19.69),
        ("448-96", 4, "repeat", 21.98, 21.19),
    ],
)
def test_plotted_variants_match_the_notes_recount(label, experts, up, none_shared, one_shared):
    for shared, expected in ((0, none_shared), (1, one_shared)):
        cfg = run_config(
            latent_size=latent_size_for(label), nb_soft_experts=experts, nb_shared_experts=shared, up_sampling=up
        )
        assert round(meta(cfg).num_params() / 1e6, 2) == expected


def block_count(n: int) -> int:
    """A global or local block at width n: ln_1, qkv 3n^2, QK-norm, out n^2, ln_2, MLP 8n^2."""
    return n + 3 * n * n + n + n * n + n + 8 * n * n


def up_block_count(a: int, b: int) -> int:
    """The compressor's first block a -> b: ln_1(a), qkv a -> 3b, QK-norm(b), out b^2, ln_2(b), MLP 8b^2, and a residual
    Linear a -> b when the width changes."""
    return a + 3 * a * b + b + b * b + b + 8 * b * b + (a * b if a != b else 0)


def soft_block_count(n: int, E: int, S: int, coeff: int = 1) -> int:
    """A soft-expert block: ln_1, qkv n -> 3nE', QK-norm, shared out, ln_2, shared n -> 4n, E' + S maps 4n -> d, d -> n + bias."""
    d = coeff * n // E
    return n + 3 * n * n * (E - S) + n + n * n + n + 4 * n * n + (E - S) * 4 * n * d + S * 4 * n * d + d * n + n


def original_count(c: HourglassConfig) -> int:
    """The original's count in closed form (RMSNorm, no biases, GELU, transformer compressor, soft experts in the latent
    stack only): every block with its first norm, the whole first-group token tables and head_ln; no position tables."""
    V, n, K, L, nlg = c.vocab_size, c.n_embed, c.latent_size, c.levels, c.n_block_local_global
    total = V * n[0] + n[0] * V + n[0]  # wte, untied lm_head, head_ln
    for i in range(L):  # encoder levels
        total += up_block_count(n[i], n[i + 1]) + (c.n_block_enc - 1 + 2 * nlg) * block_count(n[i + 1])
    for j in range(c.n_block_latent):
        soft = c.nb_soft_experts and (j + 1) % c.apply_soft_experts_every == 0
        total += soft_block_count(n[-1], c.nb_soft_experts, c.nb_shared_experts) if soft else block_count(n[-1])
    for i in range(L):  # decoder levels
        a, b, in_T = n[L - i], n[L - i - 1], K[L - 1 - i]
        out_T = K[L - 2 - i] if i < L - 1 else c.context_size
        total += ((out_T - in_T) or in_T) * a + a * b + 2 * nlg * block_count(b)
        total += 3 * b * b + b if c.up_sampling == "attn" else 0
    return total


@pytest.mark.parametrize(
    "cfg",
    [
        base_config(),
        run_config(),
        run_config(up_sampling="attn"),
        tiny(),
        tiny(up_sampling="attn"),
        tiny(**THREE_LEVELS),
        tiny(nb_soft_experts=4, nb_shared_experts=2),
        tiny(latent_size=(2, 2)),  # a decoder level with nothing to add: the original still allocates in_T rows
    ],
)
def test_counts_match_the_closed_form(cfg):
    assert meta(cfg).num_params() == original_count(cfg)


def test_vanilla_count_closed_form():
    for cfg in (vanilla_config(), TINY_VANILLA):
        C, L = cfg.n_embed[0], cfg.n_block_latent
        assert meta(cfg).num_params() == cfg.vocab_size * C + L * block_count(C) + C  # tied head, final norm


def test_vanilla_flops_are_6n_plus_attention():
    """The package counts matmul FLOPs: 6 x (Linear parameters, the tied head included) + 12 L T C for training."""
    model = Hourglass(TINY_VANILLA)
    C, L, T, V = 16, 3, 24, 11
    linear = L * 12 * C * C + V * C
    assert model.flops_per_token(training=True) == 6 * linear + 12 * L * T * C
    assert model.flops_per_token(training=False) == 2 * linear + 4 * L * T * C


def test_attention_upsampling_costs_more_than_repeat():
    repeat, attn = Hourglass(tiny()), Hourglass(tiny(up_sampling="attn"))
    assert attn.flops_per_token(training=False) > repeat.flops_per_token(training=False) > 0


# --------------------------------------------------------------------------------------------------
# 4. The merge is a convex combination


def test_merge_is_a_convex_combination_per_feature():
    torch.manual_seed(0)
    y = 3 * torch.randn(2, 5, 7, 16, dtype=torch.float64)  # (B, E', T, C)
    weights = y.softmax(dim=-3)
    assert (weights >= 0).all() and torch.allclose(weights.sum(dim=-3), torch.ones(2, 7, 16, dtype=torch.float64))
    out = merge_experts(y)
    assert (out >= y.min(dim=-3).values - 1e-12).all() and (out <= y.max(dim=-3).values + 1e-12).all()
    # and inside a block: the merged output lies between the channel outputs
    c = tiny(nb_soft_experts=4, nb_shared_experts=1)
    block = Block(c, 16, 16, soft_experts=True).double().eval()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    streams = block.streams(x)  # (B, E', T, C)
    assert streams.shape == (2, 3, 7, 16)
    merged = block(x)
    assert torch.allclose(merged, merge_experts(streams))
    assert (merged >= streams.min(dim=1).values - 1e-12).all() and (merged <= streams.max(dim=1).values + 1e-12).all()


def test_the_write_ups_other_merges_take_the_max_or_the_mean_over_the_channels():
    torch.manual_seed(0)
    y = torch.randn(2, 5, 7, 16, dtype=torch.float64)  # (B, E', T, C)
    assert torch.equal(merge_experts(y, "max"), y.max(dim=-3).values)
    assert torch.allclose(merge_experts(y, "mean"), y.mean(dim=-3))
    for how in ("max", "mean"):  # inside a block, the block's own channels merged that way
        block = (
            Block(tiny(nb_soft_experts=4, nb_shared_experts=1, expert_merge=how), 16, 16, soft_experts=True)
            .double()
            .eval()
        )
        x = torch.randn(2, 7, 16, dtype=torch.float64)
        assert torch.allclose(block(x), merge_experts(block.streams(x), how))
    # the merge has no parameters: the counts do not change
    assert Hourglass(tiny(expert_merge="max")).num_params() == Hourglass(tiny()).num_params()


def test_without_level_positions_no_table_is_added_after_compression_or_upsampling():
    model = Hourglass(tiny(use_pos_embd_in_enc_dec=False))
    assert model.level_pos is None and all(model._pos(k) is None for k in range(3))
    # the original's count leaves the level tables out either way (they are position tables)
    assert model.num_params() == Hourglass(tiny()).num_params()


def test_mup_is_the_vanilla_baselines_scaling_and_init():
    cfg = TINY_VANILLA.replace(mup=True)
    torch.manual_seed(0)
    model = Hourglass(cfg).double().eval()
    n = cfg.n_embed[0]
    assert (model.wte.weight == 0).all() and model.lm_head.weight is model.wte.weight  # tied, zero: the original's
    with torch.no_grad():
        model.wte.weight.normal_(0, 0.02)
    idx = torch.randint(0, 11, (2, 24))
    plain = Hourglass(TINY_VANILLA).double().eval()
    plain.load_state_dict(model.state_dict())
    # logits divided by the width; attention scaled by 1/hs: not a rescaling of the logits alone
    assert not torch.allclose(model(idx).logits * n, plain(idx).logits)
    attn = model.latent[0].attn
    q = torch.randn(1, 5, n, dtype=torch.float64)
    from lmcompanion.models.hourglass import attend

    hs = n // cfg.n_head
    assert torch.allclose(attend(q, q, q, cfg.n_head, 0.0, mup=True), attend(q / math.sqrt(hs), q, q, cfg.n_head, 0.0))
    assert attn.mup
    big = vanilla_config(mup=True)
    m = Hourglass(big)
    assert m.latent[0].attn.c_attn.weight.std().item() == pytest.approx(0.02 / math.sqrt(256), rel=0.05)
    assert m.latent[0].mlp.residual_proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(4 * 256), rel=0.05)
    assert m.num_params() == Hourglass(vanilla_config()).num_params()  # the same parameters, counted alike
    with pytest.raises(ConfigError, match="vanilla baseline's option"):
        tiny(mup=True)


# --------------------------------------------------------------------------------------------------
# 5. Invalid configs are rejected with the fix


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(context_size=25), "must split into model.n_groups"),
        (dict(latent_size=(7, 1)), r"latent_size\[0\] = 7 is larger than a group"),
        (dict(latent_size=(2, 3)), r"latent_size\[1\] = 3 is larger than a group at that level \(2 tokens\)"),
        (dict(nb_soft_experts=3, nb_shared_experts=3), "must be fewer than model.nb_soft_experts"),
        (dict(nb_soft_experts=0, nb_shared_experts=1), "set nb_shared_experts=0 too"),
        (dict(n_embed=(8, 16)), "give one width per level"),
        (dict(n_embed=(8, 16, 15)), "multiple of model.n_head"),
        (dict(learnable_skip=True, up_sampling="attn"), "set attn_skip_twice=True"),
        (dict(encoder_type="perceiver", soft_experts_in=("enc",)), "set encoder_type='transformer'"),
        (dict(nb_soft_experts=20, nb_shared_experts=1), "raise model.coeff_soft_expert_mlp_dim"),
        (dict(latent_loss_coeff=1.0), "latent_loss_coeff must lie in"),
    ],
)
def test_invalid_configs_name_the_fix(changes, message):
    with pytest.raises(ConfigError, match=message):
        tiny(**changes)


def test_invalid_inputs_are_rejected():
    model = build(tiny(pad_inputs_to="n_groups"))
    with pytest.raises(ValueError, match="fewer than latent_size"):
        model(torch.zeros(1, 4, dtype=torch.long))  # groups of 1 token, K_0 = 2
    with pytest.raises(ValueError, match="exceeds context_size"):
        model(torch.zeros(1, 25, dtype=torch.long))


# --------------------------------------------------------------------------------------------------
# 6. The shared experts do not mix samples


def test_shared_experts_do_not_mix_samples():
    cfg = tiny(nb_soft_experts=4, nb_shared_experts=2, apply_soft_experts_every=1)
    model = build(cfg)
    idx = torch.randint(0, 11, (3, 24))
    other = idx.clone()
    other[1:] = torch.randint(0, 11, (2, 24))
    assert torch.allclose(model(idx).logits[0], model(other).logits[0], rtol=0, atol=1e-12)
    block = model.latent[0]
    x = torch.randn(3, 8, 16, dtype=torch.float64)
    y = x.clone()
    y[1:] = torch.randn(2, 8, 16, dtype=torch.float64)
    assert torch.allclose(block(x)[0], block(y)[0], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# 7. Equivalence with plain loops


def rms(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def loop_attention(q, k, v, n_head):
    """(T, C) each: causal softmax attention, head by head, with an explicit mask."""
    T, C = q.shape
    hs = C // n_head
    heads = []
    for h in range(n_head):
        sl = slice(h * hs, (h + 1) * hs)
        scores = q[:, sl] @ k[:, sl].T / math.sqrt(hs)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        heads.append(scores.softmax(-1) @ v[:, sl])
    return torch.cat(heads, dim=-1)


def loop_soft_block(block, x, c):
    """The write-up's soft-expert block as plain loops over samples and experts, for (B, T, n) input."""
    n, E_, S = x.size(-1), c.expert_channels, c.nb_shared_experts
    attn, mlp = block.attn, block.mlp
    out = []
    for b in range(x.size(0)):
        h = rms(x[b], block.ln_1.weight) if block.ln_1 is not None else x[b]
        if c.same_kv_for_soft_experts:
            q_all = h @ attn.q_proj.weight.T
            k, v = (h @ attn.kv_proj.weight.T).split(n, -1)
            qkv = [(q_all[:, e * n : (e + 1) * n], k, v) for e in range(E_)]
        else:
            q_all, k_all, v_all = (h @ attn.c_attn.weight.T).split(E_ * n, -1)
            qkv = [tuple(t[:, e * n : (e + 1) * n] for t in (q_all, k_all, v_all)) for e in range(E_)]
        ys = []
        for e, (q, k, v) in enumerate(qkv):
            a = loop_attention(rms(q, attn.qk_norm.weight), rms(k, attn.qk_norm.weight), v, c.n_head)
            xe = x[b] + a @ attn.residual_proj.weight.T  # "x_e = x + attn_e"
            hidden = F.gelu(rms(xe, block.ln_2.weight) @ mlp.c_fc.weight.T)  # shared inner layer
            z = hidden @ mlp.experts[e] + sum(hidden @ mlp.shared_experts[s] for s in range(S))
            ys.append(xe + z @ mlp.experts_proj.weight.T + mlp.experts_proj.bias)
        ys = torch.stack(ys)  # (E', T, n)
        weights = (ys - ys.max(0).values).exp()
        weights = weights / weights.sum(0)
        out.append((weights * ys).sum(0))
    return torch.stack(out)


@pytest.mark.parametrize(
    "changes",
    [
        dict(nb_soft_experts=4, nb_shared_experts=2),
        dict(nb_soft_experts=3, nb_shared_experts=0),
        dict(same_kv_for_soft_experts=True),
        dict(global_ln1=False),
    ],
)
def test_soft_expert_block_matches_a_loop_over_experts(changes):
    torch.manual_seed(0)
    c = tiny(**changes)
    block = Block(c, 16, 16, ln_1=c.global_ln1, soft_experts=True).double().eval()
    with torch.no_grad():
        for p in block.parameters():
            p.add_(0.1 * torch.randn_like(p))  # norm weights off 1, so that they are checked too
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    assert torch.allclose(block(x), loop_soft_block(block, x, c), atol=1e-10)
    # a local block: the same per group
    xg = torch.randn(2, 3, 5, 16, dtype=torch.float64)  # (B, n_groups, len, C)
    assert torch.allclose(block(xg), loop_soft_block(block, xg.view(6, 5, 16), c).view(2, 3, 5, 16), atol=1e-10)


def test_perceiver_masks():
    """Correct mask: latent j (at group position G - K + j) sees the group up to its position. The original's
    top-left mask: latent j sees the group's first j + 1 tokens plus its own query token."""
    G, K = 6, 2
    for original, visible in ((False, [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5]]), (True, [[0, 4], [0, 1, 5]])):
        model = build(tiny(encoder_type="perceiver", perceiver_original_mask=original))
        compressor = model.encoders[0].compress
        x = torch.randn(1, 1, G, 8, dtype=torch.float64, requires_grad=True)
        z = compressor(x)  # (1, 1, K, 16)
        for j in range(K):
            (g,) = torch.autograd.grad(z[0, 0, j].sum(), x, retain_graph=True)
            assert torch.nonzero(g[0, 0].abs().sum(-1)).flatten().tolist() == visible[j]


# --------------------------------------------------------------------------------------------------
# The rest of the contract


def test_shapes_loss_and_presets():
    torch.manual_seed(0)
    model = Hourglass(tiny())
    idx = torch.randint(0, 11, (3, 24))
    out = model(idx, idx)
    assert out.logits.shape == (3, 24, 11) and out.aux == {}
    assert abs(out.loss.item() - math.log(11)) < 0.3
    assert model(idx).loss is None
    assert run_config() == HourglassConfig() and hash(run_config()) == hash(HourglassConfig())
    assert seq_length_label(run_config()) == "256-32" and latent_size_for("384-64") == (24, 4)
    assert run_config().blind_spot == 32 and run_config().n_resid == 32
    assert base_config().nb_soft_experts == 0 and vanilla_config().levels == 0


def test_a_prefix_gets_the_predictions_it_gets_in_the_full_window():
    model = build(tiny(up_sampling="attn"))
    idx = torch.randint(0, 11, (2, 24))
    full = model(idx).logits
    for t in (1, 5, 6, 13, 23):
        assert torch.allclose(model(idx[:, :t]).logits, full[:, :t], atol=1e-12)
    assert model.generate(idx[:, :3].long(), 4, temperature=0.0).shape == (2, 7)


def test_latent_loss_is_mixed_in_training_only():
    model = build(tiny(latent_loss="cos_similarity", latent_loss_coeff=0.2))
    idx, targets = torch.randint(0, 11, (2, 24)), torch.randint(0, 11, (2, 24))
    model.train()
    out = model(idx, targets)
    ce = F.cross_entropy(out.logits.reshape(-1, 11), targets.reshape(-1))
    assert set(out.aux) == {"latent"} and 0 <= out.aux["latent"].item() <= 2
    assert out.loss.item() == pytest.approx(0.8 * ce.item() + 0.2 * out.aux["latent"].item())
    model.eval()
    assert model(idx, targets).loss.item() == pytest.approx(ce.item())


def test_dense_former_starts_as_the_plain_residual_stream():
    idx = torch.randint(0, 11, (2, 24))
    torch.manual_seed(0)
    plain = Hourglass(tiny(n_block_latent=3)).double().eval()
    torch.manual_seed(0)
    dense = Hourglass(tiny(n_block_latent=3, dense_former=True)).double().eval()
    assert torch.equal(dense.dense_former_weights, torch.eye(3, 4, dtype=torch.float64).roll(1, dims=1))
    assert torch.allclose(plain(idx).logits, dense(idx).logits, atol=1e-12)


def test_gradient_checkpointing_changes_nothing_but_memory():
    idx = torch.randint(0, 11, (2, 24))
    grads = []
    for flag in (False, True):
        model = build(tiny(gradient_checkpointing=flag)).train()
        model(idx, idx).loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert torch.allclose(grads[0], grads[1], atol=1e-12)


def test_init_follows_nanogpt_with_32_residual_layers():
    torch.manual_seed(0)
    model = Hourglass(run_config())
    params = dict(model.named_parameters())
    resid = torch.cat([p.flatten() for n, p in params.items() if n.endswith("residual_proj.weight")])
    experts = torch.cat([p.flatten() for n, p in params.items() if n.endswith("experts")])
    assert resid.std().item() == pytest.approx(0.02 / math.sqrt(64), rel=0.02)
    assert experts.std().item() == pytest.approx(0.02 / math.sqrt(64), rel=0.02)
    assert params["latent.3.mlp.experts_proj.weight"].std().item() == pytest.approx(0.02, rel=0.05)
    assert params["latent.0.attn.c_attn.weight"].std().item() == pytest.approx(0.02, rel=0.02)
    assert params["decoders.1.first_group_tokens"].shape == (32, 128)  # only the rows the forward reads
    assert params["decoders.1.first_group_tokens"].std().item() == pytest.approx(1.0, rel=0.05)
    assert model.lm_head.weight is not model.wte.weight and model.ln_f is None  # untied, no final norm (the original)
    assert Hourglass(run_config(final_norm=True)).ln_f is not None  # head_ln applied, as an option


def test_embedding_noise_is_on_in_training_only():
    model = build(tiny(noisy_embd_alpha=5.0))
    quiet = build(tiny())
    idx = torch.randint(0, 11, (2, 24))
    assert torch.equal(model(idx).logits, quiet(idx).logits)  # eval: no noise, same weights
    model.train()
    assert not torch.allclose(model(idx).logits, quiet(idx).logits)
