import math

import pytest
import torch

from lmcompanion import models
from lmcompanion.models.baseline import Baseline, BaselineConfig

SMALL = BaselineConfig(vocab_size=50, context_size=12, n_embed=16, n_head=2, n_layer=2)


def test_shapes_and_loss():
    torch.manual_seed(0)
    model = Baseline(SMALL)
    idx = torch.randint(0, 50, (3, 12))
    out = model(idx, idx)
    assert out.logits.shape == (3, 12, 50)
    assert out.loss.shape == () and out.aux == {}
    # an untrained model predicts roughly uniformly: loss near ln(V)
    assert abs(out.loss.item() - math.log(50)) < 0.3
    assert model(idx).loss is None


@pytest.mark.parametrize("sub", ["NO", "YES_NO_LN", "YES_LN"])
def test_changing_future_tokens_leaves_earlier_logits_unchanged(sub):
    torch.manual_seed(0)
    model = Baseline(BaselineConfig(**{**SMALL.__dict__, "sub_pos_embed": sub})).eval()
    idx = torch.randint(0, 50, (2, 12))
    changed = idx.clone()
    changed[:, 7:] = torch.randint(0, 50, (2, 5))
    a, b = model(idx).logits, model(changed).logits
    assert torch.allclose(a[:, :7], b[:, :7], atol=1e-6)
    assert not torch.allclose(a[:, 7:], b[:, 7:])


@pytest.mark.parametrize(
    "cfg, expected",
    [
        (BaselineConfig(n_embed=160, n_head=10, n_layer=26, vocab_size=50257), 16_036_800),
        (BaselineConfig(n_embed=156, n_head=12, n_layer=26, vocab_size=50257), 15_441_192),
        (BaselineConfig(n_embed=160, n_head=10, n_layer=26, vocab_size=50257, dropout_rate=0.2), 16_036_800),
    ],
)
def test_parameter_counts_as_the_write_up_counts_them(cfg, expected):
    assert models.num_params(cfg) == expected
    full = models.build(cfg, device="meta").num_params(exclude_positional=False)
    assert full - expected == cfg.context_size * cfg.n_embed  # only the position table is left out


def test_output_layer_is_tied_and_residual_projections_are_scaled():
    torch.manual_seed(0)
    model = Baseline(BaselineConfig(vocab_size=500, context_size=8, n_embed=64, n_head=4, n_layer=8))
    assert model.lm_head.weight is model.wte.weight
    resid = torch.cat([p.flatten() for n, p in model.named_parameters() if n.endswith("residual_proj.weight")])
    other = model.blocks[0].attn.c_attn.weight
    assert resid.std().item() == pytest.approx(0.02 / math.sqrt(2 * 8), rel=0.1)
    assert other.std().item() == pytest.approx(0.02, rel=0.1)


def test_attention_dropout_in_eval_reproduces_the_original_quirk():
    cfg = BaselineConfig(**{**SMALL.__dict__, "dropout_rate": 0.5})
    idx = torch.randint(0, 50, (2, 12))
    torch.manual_seed(0)
    plain = Baseline(cfg).eval()
    assert torch.equal(plain(idx).logits, plain(idx).logits)  # eval mode is deterministic
    torch.manual_seed(0)
    quirky = Baseline(BaselineConfig(**{**cfg.__dict__, "attn_dropout_in_eval": True})).eval()
    assert not torch.equal(quirky(idx).logits, quirky(idx).logits)


def test_position_subtraction_uses_the_next_position():
    torch.manual_seed(0)
    cfg = BaselineConfig(**{**SMALL.__dict__, "sub_pos_embed": "YES_NO_LN"})
    model = Baseline(cfg).eval()
    assert model.wpe.weight.shape[0] == cfg.context_size + 1
    idx = torch.randint(0, 50, (1, 5))
    hidden = {}
    model.ln_f.register_forward_hook(lambda m, i, o: hidden.setdefault("h", o))
    logits = model(idx).logits
    expected = (hidden["h"] - model.wpe.weight[1:6]) @ model.wte.weight.T
    assert torch.allclose(logits, expected, atol=1e-5)


def test_generate_respects_temperature_zero_and_context():
    torch.manual_seed(0)
    model = Baseline(SMALL)
    idx = torch.randint(0, 50, (2, 3))
    out = model.generate(idx, 20, temperature=0.0)  # runs past context_size: the context is cropped
    assert out.shape == (2, 23) and torch.equal(out[:, :3], idx)
    assert torch.equal(out, model.generate(idx, 20, temperature=0.0))
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        model.generate(idx, 1, temperature=-1.0)
