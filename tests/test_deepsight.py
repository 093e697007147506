import pytest
import torch
import torch.nn.functional as F

from lmcompanion import experiments, models
from lmcompanion.errors import ConfigError
from lmcompanion.models.ar_ed import CrossAttnConfig
from lmcompanion.models.deepsight import PLANNING_KEYS, DeepSight, DeepSightConfig, planning_weights

SMALL = dict(
    vocab_size=50,
    context_size=12,
    n_embed=16,
    n_head=2,
    n_layer=1,
    cross_attn_config=CrossAttnConfig(4, None),
    future_context_size=3,
)


def build(**kw) -> DeepSight:
    torch.manual_seed(0)
    return DeepSight(DeepSightConfig(**{**SMALL, **kw}))


def test_planning_weights_by_hand():
    # T = 5, delta = 2: target i = (mean(E_0..E_i) + E_{i+1} + E_{i+2}/2) / 2, for i = 0, 1, 2
    expected = torch.tensor(
        [
            [1 / 2, 1 / 2, 1 / 4, 0, 0],
            [1 / 4, 1 / 4, 1 / 2, 1 / 4, 0],
            [1 / 6, 1 / 6, 1 / 6, 1 / 2, 1 / 4],
        ]
    )
    assert torch.allclose(planning_weights(5, 2), expected)
    # the future weights of DECAY are not normalised: they sum to the harmonic number H_delta
    assert planning_weights(400, 11, aggregation="NONE")[0].sum().item() == pytest.approx(
        sum(1 / k for k in range(1, 12))
    )
    assert planning_weights(400, 11, "DECAY_W_NORMALIZE", "NONE")[0].sum().item() == pytest.approx(1.0)
    assert planning_weights(20, 4, "AVG", "NONE")[3, 4:8].tolist() == [0.25] * 4
    ctx = planning_weights(10, 3, aggregation="CONTEXT_SIZE")  # present (i+1)/(i+1+delta), future delta/(i+1+delta)
    assert ctx[1, :2].tolist() == pytest.approx([2 / 5 / 2] * 2) and ctx[1, 2].item() == pytest.approx(3 / 5)


def test_planning_target_uses_exactly_positions_up_to_i_plus_delta_with_the_stated_weights():
    model = build(planning_context_ln_type="NONE")
    E = torch.randn(2, 12, 16)
    target = model.planning_target(E)
    assert target.shape == (2, 9, 16)  # T - delta positions: "option 2"
    for i in range(9):
        present = E[:, : i + 1].mean(1)
        future = sum(E[:, i + k] / k for k in range(1, 4))
        assert torch.allclose(target[:, i], (present + future) / 2, atol=1e-6)
    later = E.clone()
    later[:, 7:] += 1.0  # positions 7.. are beyond i + delta for i <= 3
    assert torch.allclose(model.planning_target(later)[:, :4], target[:, :4])
    assert not torch.allclose(model.planning_target(later)[:, 4], target[:, 4])


def test_planning_loss_is_the_disaffinity_of_the_two_layer_norms():
    model = build().train()
    idx = torch.randint(0, 50, (2, 12))
    E = model.embed(idx)
    enc = model.encode(E)
    sd = model.state_dict()
    plan = torch.einsum("it,btc->bic", planning_weights(12, 3), E.detach())
    plan = F.layer_norm(plan, (16,), sd["planning_context_ln_2.weight"], sd["planning_context_ln_2.bias"])
    pred = F.layer_norm(enc[:, :9], (16,), sd["encoder_out_ln.weight"], sd["encoder_out_ln.bias"])
    assert torch.allclose(model.planning_loss(E, enc), ((pred - plan) ** 2).mean(), atol=1e-6)


def test_next_token_path_never_sees_the_future_and_the_loss_is_for_training_only():
    model = build()
    idx = torch.randint(0, 50, (2, 12))
    changed = idx.clone()
    changed[:, 8:] = (idx[:, 8:] + 1) % 50
    for mode in (model.train, model.eval):
        mode()
        a, b = model(idx).logits, model(changed).logits
        assert torch.allclose(a[:, :8], b[:, :8], atol=1e-6) and not torch.allclose(a[:, 8:], b[:, 8:])
    assert set(model.train()(idx, idx).aux) == {"planning"}
    assert model.eval()(idx, idx).aux == {}


def test_planning_loss_gradients_reach_the_encoder_and_not_the_targets():
    model = build().train()
    idx = torch.randint(0, 50, (2, 12))
    E_target = model.embed(idx).detach().requires_grad_()  # the embeddings the target is built from
    E_input = model.embed(idx)  # the embeddings the encoder reads
    model.planning_loss(E_target, model.encode(E_input)).backward()
    assert E_target.grad is None  # the ground truth is detached
    assert model.encoder[0].attn.c_attn.weight.grad.abs().sum() > 0
    assert model.wte.weight.grad.abs().sum() > 0  # ... and through the encoder, the embeddings
    assert model.decoder[0].attn.c_attn.weight.grad is None  # the decoder is not involved


def test_write_up_parameter_count():
    assert models.num_params(experiments.config("deepsight/mse_d11", "paper", device="cpu").model) == 15_763_500
    cfg = experiments.config("deepsight/mse_d11", "paper", device="cpu").model
    assert (cfg.context_size, cfg.future_context_size, cfg.n_embed, cfg.n_head, cfg.n_layer, cfg.cross_n_head) == (
        400,
        11,
        150,
        5,
        13,
        10,
    )


@pytest.mark.parametrize("delta", [1, 12, 40])
def test_delta_is_validated(delta):
    with pytest.raises(
        ConfigError, match=rf"future_context_size \(delta={delta}\) must satisfy 1 < delta < context_size \(12\)"
    ):
        DeepSightConfig(**{**SMALL, "future_context_size": delta})


def test_planning_keys_follow_the_loss_type():
    with pytest.raises(ConfigError, match="planning_loss_type is NONE, so model.future_context_size"):
        DeepSightConfig(**{**SMALL, "planning_loss_type": "NONE"})
    with pytest.raises(ConfigError, match="needs model.planning_context_ln_type"):
        DeepSightConfig(**{**SMALL, "planning_context_ln_type": None})
    none = DeepSightConfig(**{**SMALL, "planning_loss_type": "NONE", **{k: None for k in PLANNING_KEYS}})
    assert models.num_params(none) == models.num_params(DeepSightConfig(**SMALL)) - 4 * 16  # two LNs with bias


@pytest.mark.parametrize("ln", ["NONE", "PRE_AGGR", "POST_AGGR", "BOTH"])
@pytest.mark.parametrize("loss", ["MSE", "COSINE", "LOG_COSINE"])
def test_every_option_runs(ln, loss):
    model = build(planning_context_ln_type=ln, planning_loss_type=loss).train()
    idx = torch.randint(0, 50, (2, 10))  # shorter than the context: the weights are sliced
    out = model(idx, idx)
    assert torch.isfinite(out.loss) and out.aux["planning"] >= 0
