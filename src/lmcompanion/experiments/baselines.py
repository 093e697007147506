"""The decoder-only baselines of the AR encoder-decoder write-up (its appendix configs "baseline",
"smaller baseline" and "0.2 dropout baseline"), at every profile. The prologue trains ``ar_ed/baseline``; the
AR encoder-decoder chapter compares against all three."""

from __future__ import annotations


from ..run import RunConfig
from ..data import vocab_size
from ..models.baseline import BaselineConfig
from .registry import register
from .protocol import scale


def baseline_config(
    profile: str,
    *,
    name: str,
    width: tuple[int, int, int],
    dropout: float = 0.0,
    context: int | None = None,
    **model_kwargs,
) -> RunConfig:
    s = scale(profile)
    n_embed, n_head, n_layer = width
    model = BaselineConfig(
        vocab_size=vocab_size(s.data),
        context_size=context or s.context,
        n_embed=n_embed,
        n_head=n_head,
        n_layer=n_layer,
        dropout_rate=dropout,
        use_bias=False,
        **model_kwargs,
    )
    return RunConfig(name=name, model=model, data=s.data, train=s.train)


@register(
    "ar_ed/baseline",
    title="baseline",
    published={"train": 2.937, "val": 3.424, "params": 16_036_800},
    also_in=("prologue",),
)
def _baseline(profile: str) -> RunConfig:
    return baseline_config(profile, name="ar_ed/baseline", width=scale(profile).baseline)


@register(
    "ar_ed/smaller_baseline", title="smaller baseline", published={"train": 2.958, "val": 3.416, "params": 15_441_192}
)
def _smaller(profile: str) -> RunConfig:
    return baseline_config(profile, name="ar_ed/smaller_baseline", width=scale(profile).smaller_baseline)


@register(
    "ar_ed/dropout_baseline",
    title="0.2 dropout baseline",
    published={"train": 3.174, "val": 3.406, "params": 16_036_800},
)
def _dropout(profile: str) -> RunConfig:
    return baseline_config(profile, name="ar_ed/dropout_baseline", width=scale(profile).baseline, dropout=0.2)


__all__ = ["baseline_config"]
