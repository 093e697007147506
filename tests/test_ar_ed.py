import dataclasses
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from lmcompanion import experiments, models
from lmcompanion.errors import ConfigError
from lmcompanion.models.ar_ed import AREDConfig, AREncoderDecoder, CrossAttnConfig

SMALL = dict(
    vocab_size=60, context_size=10, n_embed=24, n_head=2, n_layer=2, cross_attn_config=CrossAttnConfig(4, None)
)
NO_LOSS = dict(
    embedding_loss_type="NONE",
    detach_type=None,
    embedding_ln_type=None,
    embedding_loss_coeff=None,
    use_ln_on_encoder_out=None,
)


def build(**kw) -> AREncoderDecoder:
    torch.manual_seed(0)
    return AREncoderDecoder(AREDConfig(**{**SMALL, **kw}))


# ---------------------------------------------------------------------------------------------------------
# An independent implementation of the same architecture: plain tensor ops and explicit masks, reading the
# weights from a state dict by name. It shares no code with lmcompanion.models.


def _ln(x, sd, name, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], sd[f"{name}.weight"], sd.get(f"{name}.bias"), eps)


def _lin(x, sd, name):
    y = x @ sd[f"{name}.weight"].T
    return y + sd[f"{name}.bias"] if f"{name}.bias" in sd else y


def _attend(q, k, v, heads):
    B, T, C = q.shape
    split = lambda t: t.reshape(B, t.shape[1], heads, C // heads).permute(0, 2, 1, 3)
    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-1, -2) / math.sqrt(C // heads)
    mask = torch.ones(T, k.shape[2], dtype=torch.bool).tril()
    weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    return (weights @ v).permute(0, 2, 1, 3).reshape(B, T, C)


def reference_logits(model: AREncoderDecoder, idx):
    c, sd = model.config, model.state_dict()
    T = idx.shape[1]
    E = sd["wte.weight"][idx] + sd["wpe.weight"][:T]
    h = E
    for i in range(c.n_layer):
        p = f"encoder.{i}"
        q, k, v = _lin(_ln(h, sd, f"{p}.ln_1"), sd, f"{p}.attn.c_attn").split(c.n_embed, -1)
        h = h + _lin(_attend(q, k, v, c.n_head), sd, f"{p}.attn.residual_proj")
        h = h + _lin(F.gelu(_lin(_ln(h, sd, f"{p}.ln_2"), sd, f"{p}.mlp.c_fc")), sd, f"{p}.mlp.residual_proj")
    enc = h
    d = _lin(_ln(enc, sd, "ffd_ln") if c.add_ln_before_decoder_ff else enc, sd, "bridge")
    if c.add_pos_embed_to_decoder:
        d = d + sd["wpe.weight"][1 : T + 1]
    for i in range(c.n_layer):
        p = f"decoder.{i}"

        def self_attn(d):
            q, k, v = _lin(_ln(d, sd, f"{p}.ln_1"), sd, f"{p}.attn.c_attn").split(c.n_embed, -1)
            return d + _lin(_attend(q, k, v, c.n_head), sd, f"{p}.attn.residual_proj")

        def cross_attn(d):
            q = _lin(_ln(d, sd, f"{p}.decoder_cross_ln"), sd, f"{p}.cross_attn.q")
            k, v = _lin(_ln(enc, sd, f"{p}.encoder_cross_ln"), sd, f"{p}.cross_attn.kv").split(c.n_embed, -1)
            return d + _lin(_attend(q, k, v, c.cross_n_head), sd, f"{p}.cross_attn.residual_proj")

        d = self_attn(cross_attn(d)) if c.order_type == "ALT" else cross_attn(self_attn(d))
        d = d + _lin(F.gelu(_lin(_ln(d, sd, f"{p}.ln_2"), sd, f"{p}.mlp.c_fc")), sd, f"{p}.mlp.residual_proj")
    out = _ln(d, sd, "ln_f")
    if c.sub_pos_embed_to_decoder != "NO":
        out = out - sd["wpe.weight"][1 : T + 1]
        if c.sub_pos_embed_to_decoder == "YES_LN":
            out = _ln(out, sd, "post_sub_pos_ln")
    return out @ sd["wte.weight"].T, E, enc


OPTIONS = [
    dict(),
    dict(order_type="ALT"),
    dict(sub_pos_embed_to_decoder="YES_LN", add_ln_before_decoder_ff=True),
    dict(sub_pos_embed_to_decoder="NO", add_pos_embed_to_decoder=True, use_bias=True),
    dict(cross_attn_config=CrossAttnConfig(2, True)),
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_matches_an_independent_implementation_given_the_same_weights(options):
    model = build(**options).eval()
    with torch.no_grad():  # non-trivial LayerNorm and bias values, so that every parameter matters
        for name, p in model.named_parameters():
            if "ln" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    idx = torch.randint(0, 60, (3, 10))
    ref, E, enc = reference_logits(model, idx)
    assert torch.allclose(model(idx).logits, ref, atol=1e-5)


def test_embedding_loss_matches_the_write_up_formula():
    model = build(embedding_loss_type="MSE").train()
    idx = torch.randint(0, 60, (2, 10))
    _, E, enc = reference_logits(model, idx)
    sd = model.state_dict()
    E_ln = F.layer_norm(E, (24,), sd["embeddings_ln.weight"], sd["embeddings_ln.bias"])
    avg = torch.stack([E_ln[:, : i + 1].mean(1) for i in range(10)], dim=1)  # (1/i) sum_{k<=i}, inclusive
    enc_ln = F.layer_norm(enc, (24,), sd["encoder_out_ln.weight"], sd["encoder_out_ln.bias"])
    out = model(idx, idx)
    assert torch.allclose(out.aux["embedding"], ((enc_ln - avg) ** 2).mean(), atol=1e-6)
    assert torch.allclose(
        out.loss, F.cross_entropy(out.logits.reshape(-1, 60), idx.reshape(-1)) + out.aux["embedding"], atol=1e-5
    )
    cos = F.cosine_similarity(enc_ln, avg, dim=-1)
    model_cos = build(embedding_loss_type="COSINE").train()
    assert torch.allclose(model_cos(idx, idx).aux["embedding"], (1 - (cos + 1) / 2).mean(), atol=1e-6)
    assert model.eval()(idx, idx).aux == {}  # eval mode: plain cross-entropy


@pytest.mark.parametrize("options", OPTIONS + [dict(**NO_LOSS)], ids=str)
def test_no_future_leak_through_encoder_bridge_cross_attention_and_decoder(options):
    model = build(**options)
    idx = torch.randint(0, 60, (2, 10))
    changed = idx.clone()
    changed[:, 6:] = (idx[:, 6:] + 1) % 60
    for mode in (model.train, model.eval):
        mode()
        torch.manual_seed(1)
        a = model(idx).logits
        torch.manual_seed(1)
        b = model(changed).logits
        assert torch.allclose(a[:, :6], b[:, :6], atol=1e-6)
        assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_the_leak_test_would_catch_an_unmasked_cross_attention():
    model = build().eval()
    for block in model.decoder:
        block.cross_attn.causal = False
    idx = torch.randint(0, 60, (2, 10))
    changed = idx.clone()
    changed[:, 6:] = (idx[:, 6:] + 1) % 60
    assert not torch.allclose(model(idx).logits[:, :6], model(changed).logits[:, :6], atol=1e-6)


def test_detached_embedding_loss_trains_only_the_embeddings_and_its_layer_norms():
    model = build(embedding_loss_type="MSE", detach_type="ENCODER_OUT").train()
    idx = torch.randint(0, 60, (2, 10))
    E = model.embed(idx)
    model.embedding_loss(E, model.encode(E)).backward()
    reached = {n for n, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert reached == {
        "wte.weight",
        "wpe.weight",
        "encoder_out_ln.weight",
        "encoder_out_ln.bias",
        "embeddings_ln.weight",
        "embeddings_ln.bias",
    }
    model.zero_grad()
    detach_embeddings = build(embedding_loss_type="MSE", detach_type="EMBEDDING").train()
    E = detach_embeddings.embed(idx)
    detach_embeddings.embedding_loss(E, detach_embeddings.encode(E)).backward()
    assert detach_embeddings.encoder[0].attn.c_attn.weight.grad.abs().sum() > 0  # now the encoder is trained


def test_position_subtraction_uses_the_next_positions_embedding():
    model = build(sub_pos_embed_to_decoder="YES_NO_LN").eval()
    assert model.wpe.weight.shape[0] == 11  # T + 1 rows: position T is the one after the last input token
    idx = torch.randint(0, 60, (1, 7))
    captured = {}
    model.ln_f.register_forward_hook(lambda m, i, o: captured.setdefault("h", o))
    logits = model(idx).logits
    assert torch.allclose(logits, (captured["h"] - model.wpe.weight[1:8]) @ model.wte.weight.T, atol=1e-5)
    assert build(sub_pos_embed_to_decoder="NO", **{}).wpe.weight.shape[0] == 10


def test_write_up_parameter_counts():
    counts = {
        name: models.num_params(experiments.config(name, "paper", device="cpu").model)
        for name in experiments.names("ar_ed")
    }
    assert counts["ar_ed/mse_pos_sub"] == 15_763_500
    assert counts["ar_ed/baseline"] == counts["ar_ed/dropout_baseline"] == 16_036_800
    assert counts["ar_ed/smaller_baseline"] == 15_441_192
    for name, exp in experiments.all_experiments().items():
        if exp.chapter == "ar_ed" and "params" in exp.published:
            assert counts[name] == exp.published["params"], name


def test_paper_profile_is_the_appendix():
    cfg = experiments.config("ar_ed/mse_pos_sub", "paper", device="cpu")
    m, t, d = cfg.model, cfg.train, cfg.data
    assert (m.n_embed, m.n_head, m.n_layer, m.context_size, m.cross_n_head, m.cross_use_bias) == (
        150,
        5,
        13,
        200,
        10,
        False,
    )
    assert (
        m.embedding_loss_type,
        m.embedding_loss_coeff,
        m.sub_pos_embed_to_decoder,
        m.detach_type,
        m.embedding_ln_type,
        m.use_ln_on_encoder_out,
        m.order_type,
        m.use_bias,
        m.dropout_rate,
    ) == ("MSE", 8.0, "YES_NO_LN", "ENCODER_OUT", "INIT", True, "ORIGINAL", False, 0.0)
    assert (t.batch_size, t.grad_accum, t.max_steps, t.lr, t.min_lr, t.warmup_steps, t.decay_steps) == (
        50,
        16,
        9000,
        9e-4,
        9e-5,
        300,
        700_000,
    )
    assert (t.beta1, t.beta2, t.weight_decay, t.grad_clip, t.eval_interval, t.eval_batches) == (
        0.9,
        0.95,
        0.1,
        0.0,
        500,
        200,
    )
    assert (d.corpus, d.tokenizer, d.split) == ("wikipedia", "gpt2", "chars_90_10")


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_scaled_profiles_keep_the_proportions(profile):
    ed = experiments.config("ar_ed/mse_pos_sub", profile, device="cpu").model
    base = experiments.config("ar_ed/baseline", profile, device="cpu").model
    small = experiments.config("ar_ed/smaller_baseline", profile, device="cpu").model
    assert ed.n_embed // ed.cross_n_head * 2 == ed.n_embed // ed.n_head  # cross heads half the self-attention head size
    assert base.n_layer == 2 * ed.n_layer  # one baseline block per encoder or decoder block
    assert ed.embedding_loss_coeff == 8.0
    if profile != "smoke":
        assert models.num_params(small) < models.num_params(ed) < models.num_params(base)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(embedding_loss_type="NONE"),
            r"embedding_loss_type is NONE, so model.use_ln_on_encoder_out, "
            r"model.embedding_ln_type, model.detach_type, model.embedding_loss_coeff must be null",
        ),
        ({**NO_LOSS, "detach_type": "ENCODER_OUT"}, r"so model.detach_type must be null"),
        ({**NO_LOSS, "embedding_loss_coeff": 1.0}, r"so model.embedding_loss_coeff must be null"),
        (dict(detach_type=None), r"embedding_loss_type=MSE needs model.detach_type"),
        (
            dict(embedding_ln_type=None, use_ln_on_encoder_out=None),
            r"needs model.use_ln_on_encoder_out, model.embedding_ln_type",
        ),
        (dict(embedding_loss_coeff=-1.0), r"embedding_loss_coeff must be > 0"),
        (dict(n_head=5), r"n_embed \(24\) must be divisible by model.n_head \(5\)"),
        (dict(cross_attn_config=CrossAttnConfig(5, None)), r"divisible by model.cross_attn_config.n_head \(5\)"),
        (dict(dropout_rate=1.0), r"dropout_rate must lie in \[0, 1\)"),
        (dict(order_type="REVERSED"), r"order_type must be 'ORIGINAL' \| 'ALT'"),
        (dict(sub_pos_embed_to_decoder="YES"), r"sub_pos_embed_to_decoder must be 'NO' \| 'YES_NO_LN' \| 'YES_LN'"),
        (dict(embedding_loss_type="L1"), r"embedding_loss_type must be 'NONE' \| 'MSE' \| 'COSINE' \| 'LOG_COSINE'"),
    ],
)
def test_invalid_combinations_are_rejected(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        AREDConfig(**{**SMALL, **kwargs})


def test_null_coefficient_with_a_loss_means_one():
    assert AREDConfig(**SMALL, embedding_loss_coeff=None).embedding_loss_coeff == 1.0


def test_every_valid_combination_builds_and_runs():
    idx = torch.randint(0, 60, (1, 10))
    for loss, ln, detach, sub, order in itertools.product(
        ["MSE", "COSINE", "LOG_COSINE"],
        ["NONE", "INIT", "AVG_CUM_SUM"],
        ["NONE", "EMBEDDING", "ENCODER_OUT"],
        ["NO", "YES_NO_LN", "YES_LN"],
        ["ORIGINAL", "ALT"],
    ):
        model = build(
            embedding_loss_type=loss,
            embedding_ln_type=ln,
            detach_type=detach,
            sub_pos_embed_to_decoder=sub,
            order_type=order,
            use_ln_on_encoder_out=(loss != "COSINE"),
        )
        out = model(idx, idx)
        assert torch.isfinite(out.loss) and set(out.aux) == {"embedding"}
    assert dataclasses.asdict(AREDConfig(**SMALL))["cross_attn_config"] == {"n_head": 4, "use_bias": None}
