"""The notebooks' helpers (lmcompanion.nb): the tables every verdict page ends with."""

from lmcompanion import experiments, nb
from lmcompanion.chapters import scale


def test_the_cost_table_has_a_row_per_profile_and_few_enough_columns_to_show_the_paper_estimate(monkeypatch, tmp_path):
    monkeypatch.setenv("LMC_RUNS_DIR", str(tmp_path))
    S = nb.setup(profile="smoke", device="cpu")
    names = ["ar_ed/baseline", "ar_ed/mse_pos_sub"]
    table = nb.cost_table(S, names)
    assert list(table.columns) == [
        "profile",
        "tokens/run",
        "FLOPs/run",
        "estimated time/run (one H100)",
        "measured time/run",
    ]
    assert list(table.loc["ar_ed/baseline", "profile"]) == ["smoke (here)", "gpu", "paper"]
    paper = table[table.profile == "paper"].loc["ar_ed/baseline"]
    cfg = experiments.planned("ar_ed/baseline", "paper", 0, device="cpu").config
    assert paper["tokens/run"] == f"{cfg.tokens():,}"
    assert paper["FLOPs/run"].endswith("FLOP") and float(paper["FLOPs/run"].split()[0]) >= 1  # a prefix, not 0.000755
    assert (
        paper["estimated time/run (one H100)"].endswith(("min", "h"))
        and paper["measured time/run"] == "not recorded yet"
    )


def test_three_significant_digits_with_thousands_separators():
    assert [nb._sig3(x) for x in (1234.5, 0.012345, 2.0, 999_999, 0.0)] == [
        "1,230",
        "0.0123",
        "2.00",
        "1,000,000",
        "0.0",
    ]


def test_the_write_up_passes_read_in_the_book_format():
    from lmcompanion import models  # noqa: F401  (the registries)

    cfg = experiments.config("retrieval/flat_d1024_c32", "paper", device="cpu")
    text = scale.write_up_passes_text(cfg)
    assert nb.write_up_passes(cfg) == text  # the notebooks read it through nb
    assert text.startswith("≈ ") and ".00 " not in text, text


def test_a_legend_never_gives_a_scaled_model_the_published_size():
    from lmcompanion import models

    here = models.num_params(experiments.config("hourglass/vanilla", "cpu", device="cpu").model)
    assert here < 2e6  # the cpu model is far smaller than the write-up's
    label = nb.arm_label("hourglass/vanilla", "cpu")
    assert label == f"Baseline transfo ({here / 1e6:.3g}M here; 20.48M in the write-up)"
    assert nb.arm_label("hourglass/vanilla", "paper") == "Baseline transfo (20.48M)"
    assert nb.arm_label("mixer/llama_d512", "cpu") == experiments.get("mixer/llama_d512").title  # no size: unchanged
    assert (
        nb.published(["hourglass/vanilla"])[label] == experiments.get("hourglass/vanilla").published
    )  # found by label


def test_a_page_that_shows_a_headline_arm_beside_illustrations_plans_them_all_at_one_protocol_and_says_so():
    import types

    import pytest

    from lmcompanion.errors import ConfigError

    S = nb.setup(profile="cpu", device="cpu")
    mixed = ["ar_ed/mse_pos_sub", "ar_ed/smaller_baseline"]
    assert experiments.page_protocol(mixed, "cpu") is experiments.Protocol.ILLUSTRATIONS
    assert {(r.seed, r.config.train.max_steps) for r in S.plan(mixed, experiments.Protocol.ILLUSTRATIONS)} == {(0, 250)}
    assert [(r.name, r.seed) for r in S.plan(mixed)][:3] == [
        ("ar_ed/mse_pos_sub", 0),
        ("ar_ed/smaller_baseline", 0),
        ("ar_ed/mse_pos_sub", 1),
    ]
    with pytest.raises(ConfigError, match="protocol"):
        S.arms_at(mixed, "illustrations")

    def run(steps):
        return types.SimpleNamespace(summary={"steps": steps})

    note = nb.illustrations_note("cpu", mixed, {n: [run(250)] for n in mixed})
    assert "their protocol: 1 seed and 250 steps" in note and "verdict page" in note
    assert f"“{experiments.get('ar_ed/mse_pos_sub').title}” is a headline arm" in note
    assert experiments.get("ar_ed/smaller_baseline").title not in note


def test_the_settings_table_lists_a_setting_that_only_one_profile_s_data_kind_has():
    """The paper profile reads Wikipedia as joined files (a data kind with ``files``), the smoke profile a corpus of
    its own: the table shows the setting against "(no such setting)" instead of failing on it."""
    from lmcompanion import experiments

    table = nb.config_diff(experiments.chapter_names("ar_ed"), "smoke")
    assert table.loc["data.corpus", "smoke"] == "'synthetic'"
    assert repr(nb.ABSENT) in set(table["smoke"]) | set(table["paper"]) or "data.files" not in table.index
