"""One training step of every model family under bf16 autocast on the CPU, eagerly and under torch.compile
(`make gpu-rehearsal`), so that dtype and graph errors appear on a CPU, not during a GPU slot.

Not collected by `make test` (its name does not start with test_): compiling 15 models with Inductor on a 2-core CPU
takes minutes. Each case is an experiment's smoke model and batches (lmcompanion.campaign.FAMILY_CASES: one per model
family, and per variant whose code differs).
"""

from __future__ import annotations

import pytest

from lmcompanion import campaign, experiments, models

EAGER: dict[str, float] = {}


def test_the_cases_cover_every_model_family():
    covered = {experiments.config(n, "smoke", device="cpu").model.family for n in campaign.FAMILY_CASES}
    assert covered == set(models.FAMILIES), f"families without a case: {sorted(set(models.FAMILIES) - covered)}"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", campaign.FAMILY_CASES)
def test_one_bf16_step(name, compiled):
    result = campaign.one_step(name, compile=compiled, dtype="bf16")
    assert result["finite"], result
    assert result["linear_outputs"] == ["bfloat16"], (
        f"Linear layers ran in {result['linear_outputs']} under bf16 autocast"
    )
    if not compiled:
        EAGER[name] = result["loss"]
    elif name in EAGER:  # the same weights and batch: the compiled loss within the campaign's bf16 tolerance
        rel = abs(result["loss"] - EAGER[name]) / abs(EAGER[name])
        assert rel <= campaign.COMPILE_RTOL["bfloat16"], f"compiled {result['loss']} vs eager {EAGER[name]}"
