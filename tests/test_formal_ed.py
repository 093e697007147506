"""The formal encoder-decoder chapter: the model against the literal pseudocode, masks, the temperature,
ED-Training, ED-Inference, the seq2seq data, and the chapter's experiments."""

import dataclasses
import math

import pytest
import torch

from lmcompanion import experiments, models
from lmcompanion.config import TrainConfig
from lmcompanion.run import RunConfig
from lmcompanion.stats import goodness_of_fit_p
from lmcompanion.data import seq2seq
from lmcompanion.data.seq2seq import BOS, EOS, IGNORE, PAD, Seq2SeqDataConfig
from lmcompanion.errors import ConfigError, TrainingDiverged
from lmcompanion.chapters import formal_ed as fe
from lmcompanion.experiments.formal_ed import LITERAL, NAME, literal_config, protocol
from lmcompanion.models import formal_ed_literal as literal
from lmcompanion.models.formal_ed import LiteralConfig
from lmcompanion.models.formal_ed import (
    FormalED,
    FormalEDConfig,
    check_temperature,
    ed_inference,
    ed_training,
    sample_tau,
    sequence_loss,
    tempered,
)
from lmcompanion.train import RunStore

SMALL = FormalEDConfig(vocab_size=13, l_max=7, L_enc=2, L_dec=2, H=2, d_e=8, d_mlp=12)


def random_model(cfg=SMALL, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return fe.randomize(FormalED(cfg), g).to(dtype).eval()


def P_of(model, z, x, z_valid=None):
    """The write-up's P (|V| x |x|) of every example: softmax of the logits, transposed."""
    return torch.softmax(model(z, x, z_valid=z_valid).logits.double(), -1).transpose(1, 2)


# --------------------------------------------------------------------------------------------------
# Config


@pytest.mark.parametrize(
    "changes, fix",
    [
        ({"d_e": 10, "H": 4}, "must be divisible by model.H"),
        ({"L_enc": 0}, "model.L_enc must be >= 1"),
        ({"vocab_size": 2}, "PAD, BOS and EOS"),
        ({"ln_eps": -1.0}, "model.ln_eps must be >= 0"),
    ],
)
def test_bad_model_configs_name_the_fix(changes, fix):
    with pytest.raises(ConfigError, match=fix):
        dataclasses.replace(SMALL, **changes)


def test_run_config_rejects_a_model_too_short_for_the_data():
    data = Seq2SeqDataConfig(max_len=8, n_train=100, n_val=10)
    with pytest.raises(ConfigError, match="set model.l_max >= 10"):
        RunConfig(name="t", model=dataclasses.replace(SMALL, l_max=9), data=data, train=TrainConfig())
    with pytest.raises(ConfigError, match="set model.vocab_size=13"):
        RunConfig(name="t", model=dataclasses.replace(SMALL, vocab_size=20, l_max=10), data=data, train=TrainConfig())


# --------------------------------------------------------------------------------------------------
# ED-Transformer against the literal transcription


@pytest.mark.parametrize(
    "cfg",
    [
        SMALL,
        dataclasses.replace(SMALL, H=1, L_enc=1, L_dec=3),
        dataclasses.replace(SMALL, H=4, L_enc=3, L_dec=1, d_mlp=5, ln_eps=0.0),
    ],
)
def test_batched_model_equals_the_literal_pseudocode(cfg):
    model = random_model(cfg)
    g = torch.Generator().manual_seed(1)
    theta = {k: v for k, v in model.theta().items()}
    for lz, lx in [(1, 1), (cfg.l_max, cfg.l_max), (3, 5), (6, 2)]:
        z, x = torch.randint(0, 13, (lz,), generator=g), torch.randint(0, 13, (lx,), generator=g)
        with torch.no_grad():
            expected = literal.ed_transformer(z.tolist(), x.tolist(), theta, cfg.ln_eps)
            got = P_of(model, z[None], x[None])[0]
        assert expected.shape == (13, lx)
        assert torch.allclose(got, expected, atol=1e-12, rtol=0)


def test_float32_model_agrees_to_float_tolerance():
    model64 = random_model()
    model32 = random_model(dtype=torch.float32)
    z, x = torch.randint(0, 13, (1, 6)), torch.randint(0, 13, (1, 7))
    with torch.no_grad():
        expected = literal.ed_transformer(z[0].tolist(), x[0].tolist(), model64.theta(), SMALL.ln_eps)
        assert torch.allclose(P_of(model32, z, x)[0], expected, atol=1e-5)


def test_a_padded_batch_equals_each_example_alone():
    model = random_model()
    lengths = [(1, 7), (5, 2), (7, 4)]
    z = torch.randint(3, 13, (3, 7))
    x = torch.randint(3, 13, (3, 7))
    valid = torch.arange(7)[None] < torch.tensor([a for a, _ in lengths])[:, None]
    z = z.masked_fill(~valid, PAD)
    with torch.no_grad():
        P = P_of(model, z, x, z_valid=valid)
        for i, (a, b) in enumerate(lengths):
            alone = literal.ed_transformer(z[i, :a].tolist(), x[i, :b].tolist(), model.theta(), SMALL.ln_eps)
            assert torch.allclose(P[i, :, :b], alone, atol=1e-12)


def test_agreement_table_of_the_chapter_agrees_and_can_fail():
    table = fe.agreement(literal.ed_transformer, SMALL, seed=3, cases=2)
    assert (table["agree"] == "yes").all() and len(table) == 7

    def wrong(z, x, theta, eps):  # a transcription that forgets the output bias b_o
        for layer in theta["enc"]:
            layer["W_enc"] = {**layer["W_enc"], "b_o": torch.zeros_like(layer["W_enc"]["b_o"])}
        return literal.ed_transformer(z, x, theta, eps)

    assert (fe.agreement(wrong, SMALL, seed=3, cases=2)["agree"] == "NO").any()


# --------------------------------------------------------------------------------------------------
# Masks


def test_decoder_cannot_see_later_tokens():
    model = random_model()
    z, x = torch.randint(0, 13, (1, 5)), torch.randint(0, 13, (1, 7))
    with torch.no_grad():
        base = model(z, x).logits
        for j in range(1, 7):
            changed = x.clone()
            changed[:, j:] = (changed[:, j:] + 1) % 13
            out = model(z, changed).logits
            assert torch.equal(out[:, :j], base[:, :j])  # bit for bit
            assert not torch.allclose(out[:, j:], base[:, j:])


def test_encoder_and_cross_attention_see_every_source_position():
    model = random_model()
    z, x = torch.randint(0, 13, (5,)), torch.randint(0, 13, (6,))
    dep = fe.dependence(model, z, x)
    checks = fe.mask_checks(dep)
    assert checks["earlier columns changed by a later x token"] == 0
    assert checks["columns of P not changed by some z token"] == 0
    assert checks["columns of Z not changed by some z token"] == 0
    lower = torch.ones(6, 6, dtype=torch.bool).tril()
    assert dep["P on x"][lower].all() and not dep["P on x"][~lower].any()


def test_padded_source_positions_are_invisible():
    model = random_model()
    z = torch.tensor([[4, 5, 6, PAD, PAD]])
    valid = z != PAD
    x = torch.randint(0, 13, (1, 4))
    with torch.no_grad():
        a = model(z, x, z_valid=valid).logits
        b = model(z.masked_fill(~valid, 9), x, z_valid=valid).logits
    assert torch.equal(a, b)


def test_sequences_longer_than_l_max_are_refused():
    model = random_model()
    with pytest.raises(ValueError, match="raise model.l_max"):
        model(torch.zeros(1, 8, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))


# --------------------------------------------------------------------------------------------------
# Parameters


def test_parameter_inventory_matches_the_write_up_list():
    model = FormalED(SMALL)
    table = fe.parameter_inventory(model)
    assert (table["match"] == "yes").all()
    c = SMALL
    mha = c.H * (3 * c.d_attn * c.d_e + 3 * c.d_attn) + c.d_e * c.d_e + c.d_e
    mlp = 2 * c.d_mlp * c.d_e + c.d_mlp + c.d_e
    expected = (
        2 * c.d_e * c.vocab_size
        + c.d_e * c.l_max
        + c.L_enc * (mha + 4 * c.d_e + mlp)
        + c.L_dec * (2 * mha + 6 * c.d_e + mlp)
    )
    assert model.num_params() == expected == models.num_params(SMALL)
    assert model.num_params(exclude_positional=True) == expected - c.d_e * c.l_max
    assert model.W_u.weight.data_ptr() != model.W_e.weight.data_ptr()  # untied


def test_theta_round_trips_and_rejects_wrong_shapes():
    source, target = random_model(seed=1), FormalED(SMALL).double()
    target.load_theta({k: v for k, v in source.theta().items()})
    assert all(torch.equal(a, b) for a, b in zip(source.parameters(), target.parameters()))
    theta = source.theta()
    theta["enc"][0]["W1"] = theta["enc"][0]["W1"].T
    with pytest.raises(ConfigError, match=r"θ\['enc'\]\[0\]\['W1'\] has shape"):
        target.load_theta(theta)


def test_parameter_inventory_rejects_parameters_outside_theta():
    model = FormalED(SMALL)
    model.extra = torch.nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="outside the write-up's θ"):
        fe.parameter_inventory(model)


# --------------------------------------------------------------------------------------------------
# The temperature


def test_tau_zero_is_exact_argmax_and_ties_share():
    logits = torch.tensor([[0.1, 3.0, -2.0, 1.0], [2.0, 2.0, 0.0, -1.0]])
    q = tempered(logits, 0)
    assert torch.equal(q[0], torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64))
    assert torch.equal(q[1], torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64))
    ys = sample_tau(logits[0].expand(500, 4), 0.0, torch.Generator().manual_seed(0))
    assert (ys == 1).all()


def test_tau_infinity_is_exact_uniform_without_nan():
    logits = torch.tensor([[1e4, -1e4, 0.0, 5.0], [0.0, 0.0, 0.0, 0.0]])
    q = tempered(logits, math.inf)
    assert torch.equal(q, torch.full((2, 4), 0.25, dtype=torch.float64))
    ys = sample_tau(logits[0].expand(40_000, 4), math.inf, torch.Generator().manual_seed(0))
    assert goodness_of_fit_p(torch.bincount(ys, minlength=4).numpy(), q[0].numpy()) > 1e-3


def test_tau_one_is_p_and_sampling_is_faithful():
    logits = torch.tensor([1.0, 0.0, -1.0, 2.0, 0.5])
    q = tempered(logits, 1.0)
    assert torch.allclose(q, torch.softmax(logits.double(), -1), atol=1e-15)
    ys = sample_tau(logits.expand(50_000, 5), 1.0, torch.Generator().manual_seed(0))
    counts = torch.bincount(ys, minlength=5)
    assert goodness_of_fit_p(counts.numpy(), q.numpy()) > 1e-3
    assert goodness_of_fit_p(counts.numpy(), tempered(logits, 2.0).numpy()) <= 1e-3  # it tells another τ apart


@pytest.mark.parametrize("tau", [1e-300, 1e-8, 0.3, 7.0, 1e8, 1e300])
def test_extreme_but_valid_tau_gives_a_distribution(tau):
    logits = torch.tensor([[30.0, -30.0, 0.0, 29.0], [-1e3, 1e3, 0.0, 0.0]])
    q = tempered(logits, tau)
    assert torch.isfinite(q).all() and torch.allclose(q.sum(-1), torch.ones(2, dtype=torch.float64))
    p = torch.softmax(logits.double(), -1)
    if tau <= 1e-8:
        assert torch.allclose(q, tempered(logits, 0.0), atol=1e-12)
    if tau >= 1e8:
        assert torch.allclose(q, tempered(logits, math.inf), atol=1e-4)
    if 0.1 < tau < 10:
        expected = p ** (1 / tau) / (p ** (1 / tau)).sum(-1, keepdim=True)
        assert torch.allclose(q, expected, atol=1e-12)


@pytest.mark.parametrize("tau", [-1.0, -1e-9, float("nan"), "1", None, True])
def test_invalid_tau_is_a_clear_error(tau):
    with pytest.raises(ConfigError, match=r"temperature τ must be a number in \[0, ∞\]"):
        check_temperature(tau)
    with pytest.raises(ConfigError):
        tempered(torch.zeros(3), tau)


def test_non_finite_logits_are_refused():
    with pytest.raises(ValueError, match="not finite"):
        tempered(torch.tensor([0.0, float("nan"), 1.0]), 1.0)


# --------------------------------------------------------------------------------------------------
# ED-Inference


@pytest.mark.parametrize("tau", [0.0, 1.0, math.inf])
def test_inference_always_terminates_within_the_cap(tau):
    model = random_model(dtype=torch.float32)
    z = torch.randint(3, 13, (64, 5))
    gen = ed_inference(model, z, tau, bos=BOS, eos=EOS, pad=PAD, generator=torch.Generator().manual_seed(0))
    assert gen.x.shape[0] == 64 and gen.x.shape[1] <= SMALL.l_max
    assert (gen.x[:, 0] == BOS).all()
    for row, capped in zip(gen.x.tolist(), gen.capped.tolist()):
        assert fe.analysis._ended(row, SMALL.l_max)
        assert capped == (EOS not in row)
    if tau == math.inf:  # uniform over 13 tokens: most rows run into the cap of 7 tokens
        assert 0 < gen.capped.float().mean() < 1
        assert torch.allclose(gen.entropy, torch.full((64,), math.log(13), dtype=torch.float64))


def constant_output_model(eos_logit: float) -> FormalED:
    """A model whose every column of P is the same: logit ``eos_logit`` for EOS, 0 for every other token."""
    model = random_model(dtype=torch.float32)
    with torch.no_grad():
        last = model.decoder[-1].ln5
        last.weight.zero_()  # the last layer norm outputs β at every position
        last.bias.fill_(1.0)
        model.W_u.weight.zero_()
        model.W_u.weight[EOS] = eos_logit / SMALL.d_e
    return model


def test_inference_stops_at_eos_and_pads_after_it():
    model = constant_output_model(10.0)
    z = torch.randint(3, 13, (4, 3))
    gen = ed_inference(model, z, 0.0, bos=BOS, eos=EOS, pad=PAD)
    assert gen.x.tolist() == [[BOS, EOS]] * 4 and not gen.capped.any()
    gen = ed_inference(model, z, math.inf, bos=BOS, eos=EOS, pad=PAD, generator=torch.Generator().manual_seed(0))
    rows = gen.x.tolist()
    assert all(fe.analysis._ended(r, SMALL.l_max) for r in rows)
    assert any(r.index(EOS) > 1 if EOS in r else True for r in rows)  # τ = ∞ ignores that EOS is likely


def test_inference_never_ending_without_eos_hits_the_cap():
    model = constant_output_model(-1e3)  # EOS impossible at τ = 0 (the other 12 tokens tie)
    gen = ed_inference(model, torch.randint(3, 13, (3, 4)), 0.0, bos=BOS, eos=EOS, pad=PAD, max_len=5)
    assert gen.x.shape == (3, 5) and gen.capped.all()
    with pytest.raises(ConfigError, match="max_len must lie in 2..l_max"):
        ed_inference(model, torch.randint(3, 13, (3, 4)), 0.0, bos=BOS, eos=EOS, pad=PAD, max_len=99)


def test_inference_is_reproducible_with_a_seeded_generator():
    model = random_model(dtype=torch.float32)
    z = torch.randint(3, 13, (8, 4))
    runs = [
        ed_inference(model, z, 1.0, bos=BOS, eos=EOS, pad=PAD, generator=torch.Generator().manual_seed(5)).x
        for _ in range(2)
    ]
    assert torch.equal(*runs)


# --------------------------------------------------------------------------------------------------
# ED-Training


def _examples(n=24, seed=0):
    data = Seq2SeqDataConfig(min_len=1, max_len=4, n_train=n, n_val=4, data_seed=seed)
    split = seq2seq.dataset(data)["train"]
    return [split.example(i) for i in range(n)]


def test_sequence_loss_is_the_summed_log_loss_of_the_write_up():
    model = random_model()
    z, x = torch.tensor([4, 5, 6]), torch.tensor([BOS, 6, 5, 4, EOS])
    with torch.no_grad():
        P = literal.ed_transformer(z.tolist(), x.tolist(), model.theta(), SMALL.ln_eps)
    J = -sum(math.log(P[x[j], j - 1]) for j in range(1, len(x)))  # P_{x_{j+1}, j} with 1-based j
    assert sequence_loss(model, z, x).item() == pytest.approx(J, rel=1e-12)


def test_one_update_is_a_plain_gradient_step_on_J():
    torch.manual_seed(0)
    model = FormalED(SMALL).double()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    z, x = torch.tensor([4, 5]), torch.tensor([BOS, 5, 4, EOS])
    grads = torch.autograd.grad(sequence_loss(model, z, x), list(model.parameters()))
    ed_training(model, [(z, x)], T=1, eta=0.1)
    for (name, p), g in zip(model.named_parameters(), grads):
        assert torch.allclose(p, before[name] - 0.1 * g, atol=1e-14), name


def test_literal_training_reduces_the_loss():
    torch.manual_seed(0)
    model = FormalED(SMALL)
    examples = _examples()
    start = sum(sequence_loss(model, z, x).item() for z, x in examples)
    losses = []
    ed_training(model, examples, T=4, eta=0.05, callback=lambda step, J: losses.append(J))
    end = sum(sequence_loss(model, z, x).item() for z, x in examples)
    assert len(losses) == 4 * len(examples)
    assert end < 0.8 * start


def test_literal_training_stops_on_divergence_and_rejects_bad_settings():
    model = FormalED(SMALL)
    with pytest.raises(TrainingDiverged, match="Lower η"):
        ed_training(model, _examples(4), T=50, eta=1e6)
    with pytest.raises(ConfigError, match="T \\(epochs\\)"):
        ed_training(model, _examples(4), T=0, eta=0.1)
    with pytest.raises(ConfigError, match="η"):
        ed_training(model, _examples(4), T=1, eta=0.0)


# --------------------------------------------------------------------------------------------------
# The task and its batches


def test_examples_are_correct_distinct_and_split_without_overlap():
    cfg = Seq2SeqDataConfig(min_len=1, max_len=5, n_train=300, n_val=100, data_seed=3)
    splits = seq2seq.dataset(cfg)
    assert len(splits["train"]) == 300 and len(splits["val"]) == 100
    assert not set(splits["train"].sources) & set(splits["val"].sources)
    s = splits["val"]
    for i in range(len(s)):
        z, x = s.example(i)
        assert seq2seq.decode(z) == s.sources[i]
        assert x[0] == BOS and x[-1] == EOS and seq2seq.answer(x.tolist()) == s.sources[i][::-1]
        n = len(s.sources[i])
        assert s.targets[i, n] == EOS and (s.targets[i, n + 1 :] == IGNORE).all()
        assert (s.x[i, n + 1 :] == PAD).all() and (s.z_valid[i] == (torch.arange(5) < n)).all()
    sort = seq2seq.dataset(dataclasses.replace(cfg, task="sort"))["val"]
    assert all(a == "".join(sorted(src)) for src, a in zip(sort.sources, sort.answers))


def test_too_many_examples_for_the_lengths_is_a_clear_error():
    with pytest.raises(ConfigError, match="raise data.max_len"):
        Seq2SeqDataConfig(min_len=1, max_len=2, n_train=100, n_val=10)


def test_batches_are_a_pure_function_of_seed_and_step_and_split_across_processes():
    cfg = Seq2SeqDataConfig(min_len=1, max_len=4, n_train=200, n_val=20)
    tc = TrainConfig(batch_size=4, grad_accum=4, eval_batches=3)
    one = seq2seq.Seq2SeqSource(cfg, tc, seed=7)
    assert all(torch.equal(a[k], b[k]) for a, b in zip(one.train_batches(5), one.train_batches(5)) for k in a)
    assert not torch.equal(one.train_batches(5)[0]["z"], one.train_batches(6)[0]["z"])
    parts = [seq2seq.Seq2SeqSource(cfg, tc, seed=7, rank=r, world=2) for r in range(2)]
    merged = {tuple(b["z"].flatten().tolist()) for p in parts for b in p.train_batches(5)}
    assert merged == {tuple(b["z"].flatten().tolist()) for b in one.train_batches(5)}
    assert sum(1 for p in parts for _ in p.eval_batches("val", 0)) == 3


def test_the_adamw_experiment_trains_through_the_shared_trainer(tmp_path):
    cfg = experiments.config(NAME, "smoke", overrides={"train.max_steps": 30})
    run = RunStore(tmp_path).run(cfg)
    evals = run.evals()
    assert evals["val"].iloc[-1] < evals["val"].iloc[0] < math.log(13)
    assert run.summary["params"] == models.num_params(cfg.model)
    assert run.summary["tokens"] == 30 * cfg.train.batch_size * cfg.data.width


def test_literal_runs_are_cached_and_start_from_the_trainer_initial_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("LMC_RUNS_DIR", str(tmp_path))
    lit = LiteralConfig(T=1, eta=0.03, n=8, evals=2)
    planned = experiments.planned(LITERAL, "smoke", 0, settings=lit)
    cfg = planned.config
    assert cfg.model == experiments.config(NAME, "smoke").model and cfg.data == experiments.config(NAME, "smoke").data
    run = planned.train()
    assert list(run.evals()["step"]) == [0, 4, 8]
    assert run.procedure["procedure"] == "lmcompanion.experiments.ed_training.literal_training"
    assert run.procedure["settings"]["n"] == 8
    stamp = (run.path / "summary.json").stat().st_mtime_ns
    assert experiments.planned(LITERAL, "smoke", 0, settings=lit).train().path == run.path
    assert (run.path / "summary.json").stat().st_mtime_ns == stamp
    torch.manual_seed(cfg.seed)
    initial = models.build(cfg.model)
    examples = [seq2seq.dataset(cfg.data)["train"].example(i) for i in range(8)]
    ed_training(initial, examples, T=1, eta=0.03)
    trained = run.load_model()
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(initial.parameters(), trained.parameters()))


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu", "paper"])
def test_every_profile_builds_a_valid_config(profile):
    cfg = experiments.config(NAME, profile, device="cpu")
    assert cfg.model.l_max >= cfg.data.max_len + 2
    assert literal_config(profile).n <= cfg.data.n_train
    if profile == "paper":
        assert protocol(profile).target >= 0.99


@pytest.mark.parametrize(
    "p, outcome, side",
    [
        (0.0025, "holds", "above 0.001: the draws fit p"),
        (0.0004, "does not hold", "at or below 0.001: the draws do not fit p"),
    ],
)
def test_a_goodness_of_fit_row_says_which_way_its_p_points(p, outcome, side):
    import pandas as pd

    from lmcompanion import verdicts

    inf = float("inf")
    table = pd.DataFrame(
        {
            "_tau": [0.0, 1.0, inf],
            "_err": [0.0, 0.0, 0.0],
            "_p": [math.nan, p, 0.5],
            "_argmax_share": [1.0, 0.5, 0.1],
            "non-finite entries of q": [0, 0, 0],
        }
    )
    row = fe.verdict_temperatures(table)[1]
    assert row.outcome == outcome and side in row.ours and "a small p speaks against the sampler" in row.chance
    assert row.is_check and verdicts.at_scale(row, "cpu", (1e-4, 1e-4)) == row  # a check of our code: no scale
