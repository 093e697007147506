import math

import pytest

from lmcompanion.config import TrainConfig
from lmcompanion.train import lr_at

# The AR encoder-decoder appendix: lr 9e-4, min 9e-5, warmup 300, lr_decay_iters 700,000, 9,000 steps.
PAPER = TrainConfig(max_steps=9000, lr=9e-4, min_lr=9e-5, warmup_steps=300, decay_steps=700_000, schedule="cosine")


@pytest.mark.parametrize(
    "step, expected",
    [
        (0, 9e-4 * 1 / 300),  # s = step + 1 = 1
        (149, 9e-4 * 150 / 300),
        (299, 9e-4),  # end of warmup: the cosine starts at its peak
        (8999, 9e-5 + 0.5 * (1 + math.cos(math.pi * 8700 / 699_700)) * (9e-4 - 9e-5)),
    ],
)
def test_write_up_cosine_schedule(step, expected):
    assert lr_at(step, PAPER) == pytest.approx(expected, rel=1e-12)


def test_cosine_reaches_min_lr_after_decay():
    cfg = TrainConfig(max_steps=100, lr=1.0, min_lr=0.1, warmup_steps=10, decay_steps=50)
    assert lr_at(48, cfg) == pytest.approx(0.1 + 0.5 * (1 + math.cos(math.pi * 39 / 40)) * 0.9)
    assert lr_at(49, cfg) == pytest.approx(0.1)  # s = 50 = decay_steps
    assert lr_at(80, cfg) == 0.1


def test_linear_schedule_matches_hugging_face_convention():
    cfg = TrainConfig(max_steps=100, lr=1.0, warmup_steps=10, schedule="linear")
    assert [lr_at(s, cfg) for s in (0, 5, 10, 55, 100, 120)] == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0, 0.0])


def test_constant_schedule_warms_up_then_holds():
    cfg = TrainConfig(max_steps=100, lr=2.0, warmup_steps=4, schedule="constant")
    assert [lr_at(s, cfg) for s in (0, 2, 3, 50)] == pytest.approx([0.5, 1.5, 2.0, 2.0])


def test_linear_floor_is_the_efficient_transformer_readme_schedule():
    """Warm up over 50% of training, decay linearly to 10% of the peak by 85%, then flat."""
    cfg = TrainConfig(
        max_steps=200, lr=4.8e-4, min_lr=4.8e-5, warmup_steps=100, decay_steps=170, schedule="linear_floor"
    )
    at = {f: lr_at(round(f * 200), cfg) for f in (0.0, 0.25, 0.5, 0.85, 1.0)}
    assert at[0.0] == 0.0
    assert at[0.25] == pytest.approx(2.4e-4)
    assert at[0.5] == pytest.approx(4.8e-4)  # the peak at the end of warmup
    assert at[0.85] == pytest.approx(4.8e-5)  # the floor reached at decay_steps
    assert at[1.0] == pytest.approx(4.8e-5) and lr_at(250, cfg) == pytest.approx(4.8e-5)  # and kept
    assert lr_at(135, cfg) == pytest.approx((4.8e-4 + 4.8e-5) / 2)  # halfway down the decay
