"""The AR encoder-decoder write-up's runs (its appendix configs), plus one experiment its conclusions ask for.

The three decoder-only baselines live in ``baselines.py`` (the prologue trains them too).
"""

from __future__ import annotations

from ..run import RunConfig
from ..data import vocab_size
from ..models.ar_ed import AREDConfig, CrossAttnConfig
from .headline_comparisons import headline
from .registry import register
from .baselines import baseline_config
from .protocol import scale

NO_LOSS = dict(
    embedding_loss_type="NONE",
    detach_type=None,
    embedding_ln_type=None,
    embedding_loss_coeff=None,
    use_ln_on_encoder_out=None,
)
MSE = dict(embedding_loss_type="MSE", detach_type="ENCODER_OUT", embedding_ln_type="INIT", use_ln_on_encoder_out=True)


def ar_ed_config(profile: str, name: str, *, context: int | None = None, **keys) -> RunConfig:
    """The appendix's fixed keys (no bias, no dropout, ORIGINAL order, no LN before the bridge, no position
    addition, cross-attention with twice the heads) at the profile's scale, plus the run's own ``keys``."""
    s = scale(profile)
    n_embed, n_head, cross_heads, n_layer = s.encoder_decoder
    model = AREDConfig(
        vocab_size=vocab_size(s.data),
        context_size=context or s.context,
        n_embed=n_embed,
        n_head=n_head,
        n_layer=n_layer,
        dropout_rate=0.0,
        use_bias=False,
        cross_attn_config=CrossAttnConfig(n_head=cross_heads, use_bias=False),
        add_ln_before_decoder_ff=False,
        add_pos_embed_to_decoder=False,
        order_type="ORIGINAL",
        **keys,
    )
    return RunConfig(name=name, model=model, data=s.data, train=s.train)


RUNS = {
    # name: (the write-up's label, its keys, its published train / val / embedding loss)
    "ar_ed/cosine": (
        "with cosine-dissimilarity embedding loss",
        dict(MSE, embedding_loss_type="COSINE", embedding_loss_coeff=1.0, sub_pos_embed_to_decoder="NO"),
        {"train": 2.993, "val": 3.387, "aux": 8.564e-9},
    ),
    "ar_ed/mse": (
        "with MSE embedding loss",
        dict(MSE, embedding_loss_coeff=1.0, sub_pos_embed_to_decoder="NO"),
        {"train": 2.998, "val": 3.385, "aux": 4.138e-9},
    ),
    "ar_ed/no_loss": (
        "no embedding loss and no pos sub",
        dict(NO_LOSS, sub_pos_embed_to_decoder="NO"),
        {"train": 3.043, "val": 3.413},
    ),
    "ar_ed/pos_sub": (
        "with pos embed sub",
        dict(NO_LOSS, sub_pos_embed_to_decoder="YES_NO_LN"),
        {"train": 2.979, "val": 3.381},
    ),
    "ar_ed/mse_pos_sub": (
        "with MSE embedding loss and pos sub",
        dict(MSE, embedding_loss_coeff=8.0, sub_pos_embed_to_decoder="YES_NO_LN"),
        {"train": 2.982, "val": 3.378, "aux": 4.673e-9, "params": 15_763_500},
    ),
}


def _make(name: str, keys: dict):
    return lambda profile: ar_ed_config(profile, name, **keys)


for _name, (_title, _keys, _published) in RUNS.items():
    register(_name, title=_title, published=_published)(_make(_name, _keys))


@register(
    "ar_ed/baseline_pos_sub",
    title="baseline with pos embed sub (beyond the write-up)",
    notes="The write-up's conclusions: positional embedding subtraction 'should work even for decoder-only "
    "transformers, and experiments should validate this'.",
)
def _baseline_pos_sub(profile: str) -> RunConfig:
    return baseline_config(
        profile, name="ar_ed/baseline_pos_sub", width=scale(profile).baseline, sub_pos_embed="YES_NO_LN"
    )


# The headline: the write-up's introduction and conclusions ("a new end-to-end auto-regressive encoder-decoder
# transformer ... outperforms, with fewer parameters, the canonical decoder-only transformer"); every other run of
# the write-up is a step toward this model.
headline(
    "ar_ed",
    "the combined model (MSE embedding loss and positional subtraction) against the decoder-only baseline",
    ("ar_ed/mse_pos_sub", "ar_ed/baseline"),
    "the write-up's introduction and conclusions: the new model 'outperforms, with fewer parameters, the "
    "canonical decoder-only transformer'; the other runs are the steps toward it",
    cpu_illustration_steps=0.5,
)
