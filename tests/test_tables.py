"""The shared result table: the write-up's numbers are shown as published, beside ours."""

from lmcompanion import tables
from lmcompanion.train import RunStore

from conftest import tiny_run


def test_published_numbers_keep_their_digits_beside_text(tmp_path):
    store = RunStore(tmp_path)
    runs = {"with": [store.run(tiny_run(seed=0))], "without": [store.run(tiny_run(seed=1))]}
    published = {"with": {"train": 2.998, "val": 3.385, "aux": 4.138e-9}, "without": {"train": 3.1, "val": 3.4}}
    table = tables.results(runs, published=published, aux=("train/loss", "aux loss"))
    # a column holding a tiny float and the text "N/A" was once rounded by pandas to 0.0
    assert table.loc["with", "write-up aux loss"] == "4.138e-09"
    assert table.loc["without", "write-up aux loss"] == "N/A"
    assert table.loc["with", "write-up train"] == "2.998" and table.loc["without", "write-up val"] == "3.4"


def test_a_named_index_takes_the_header_s_corner_not_a_second_row():
    import pandas as pd

    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]}, index=pd.Index(["x", "y"], name="experiment"))
    assert df._repr_html_().split("<tbody>")[0].count("<tr") == 2  # pandas' own: a second, blank header row
    header, body = tables.html(df).split("<tbody>")
    assert header.count("<tr") == 1 and ">experiment<" in header
    assert body.count("<tr") == 2 and ">x<" in body
    assert df.index.name == "experiment" and df.columns.name is None  # the table itself is untouched
    multi = df.set_index("a", append=True)
    assert tables.one_header_row(multi) is multi


def test_the_closing_sentence_ranks_the_arms_from_their_runs_beside_the_write_up(tmp_path):
    class Finished:
        def __init__(self, val):
            self.summary = {"final": {"val": val}}

    groups = {"a": [Finished(2.5), Finished(2.7)], "b": [Finished(3.012), Finished(3.0)], "c": [Finished(4.2)] * 2}
    text = tables.ranking_sentence(
        groups, published={"a": {"val": 1.9}, "b": {"val": 2.0}, "c": {"val": 2.1}}, level=("chance", 3.5)
    )
    assert text.startswith("Final validation loss, mean over 2 seeds, lowest first: a 2.60; b 3.01; c 4.20.")
    assert (
        "The write-up ranks them the same way." in text
        and "2 of 3 arms end below chance (3.50) in every seed: a, b." in text
    )
    other = tables.ranking_sentence(groups, published={"a": {"val": 2.2}, "b": {"val": 2.0}, "c": {"val": 2.1}})
    assert other.endswith("The write-up ranks them otherwise: b 2.0; c 2.1; a 2.2.")
    assert "write-up" not in tables.ranking_sentence(groups, published={"a": {"val": 2.2}})  # not all published
    assert [tables.sig3(x) for x in (2.9134, 0.012345, 1234.5)] == ["2.91", "0.0123", "1,230"]


def test_the_best_validation_column_shows_only_where_it_differs_from_the_final_one():
    import pandas as pd

    class Finished:
        def __init__(self, vals):
            self._ev = pd.DataFrame({"step": range(1, len(vals) + 1), "train": vals, "val": vals})
            self.summary = {"params": 10, "final": {"train": vals[-1], "val": vals[-1]}}

        def evals(self):
            return self._ev

    falling = {"a": [Finished([3.0, 2.5, 2.0])], "b": [Finished([3.0, 2.8, 2.7])]}
    assert "val (best)" not in tables.results(falling).columns
    rising = {**falling, "c": [Finished([3.0, 2.0, 2.4])]}
    table = tables.results(rising)
    assert table.loc["c", "val (best)"] == "2.00" and table.loc["c", "val (final)"] == "2.40"


def test_backticked_text_in_a_table_is_set_as_code_not_shown_with_its_backticks():
    import pandas as pd

    df = pd.DataFrame({"verdict": ["does not hold at `cpu` scale: 0.036% of the write-up's tokens"]})
    out = tables.html(df)
    assert "<code>cpu</code>" in out and "`" not in out


def test_an_auxiliary_loss_shows_three_significant_digits_not_an_exponent_for_0_112():
    import pandas as pd

    class Finished:
        def __init__(self, aux):
            self.summary = {"params": 10, "final": {"train": 2.0, "val": 2.1}}
            self._aux = aux

        def evals(self):
            return pd.DataFrame({"step": [1], "train": [2.0], "val": [2.1]})

        def metrics(self):
            return pd.DataFrame({"step": [1], "aux/planning": [self._aux]})

    table = tables.results(
        {"a": [Finished(0.112), Finished(0.109), Finished(0.115)], "b": [Finished(4.1e-9)]},
        aux=("aux/planning", "planning loss"),
    )
    assert table.loc["a", "planning loss"] == "0.112 [0.109, 0.115]"
    assert table.loc["b", "planning loss"] == "4.10×10⁻⁹"


def test_one_number_format_digits_follow_from_what_the_number_is():
    """The cases issue 39 named: a value over seeds in one number of decimals, every seed equal said once, a tiny
    amount of FLOPs with its prefix, a ratio without spurious decimals, an effect to its error's digits."""
    from lmcompanion import formats

    assert tables.span([0.11, 0.0947, 0.12]) == "0.108 [0.095, 0.120]"  # not "0.11 [0.0947, 0.12]"
    assert tables.span([1.0, 1.0, 1.0], ".4f") == "1.00 (all 3 seeds)"  # not "1.0000 [1.0000, 1.0000]"
    assert tables.span([2.9134, 2.9151]) == "2.91 [2.91, 2.92]"
    assert tables.span([2.91341, 2.91349]) == "2.9135 [2.9134, 2.9135]"  # the seeds differ: shown where
    assert tables.span([153.2, 140.1]) == "146.6 [140.1, 153.2]"  # a measurement keeps a decimal
    assert tables.si(7.55e11, "FLOP") == "755 GFLOP"  # not "0.000755" PFLOP
    assert tables.number(550.0) == "550" and tables.number(0.000755) == "7.55×10⁻⁴"  # not "550.00"
    assert tables.estimate(-0.01234, 0.00412) == "-0.0123 ± 0.0041"
    assert formats.number(3) == "3" and tables.count(1234567.0) == "1,234,567"
    assert formats.number(0.0) == "0.0" and formats.number(-0.0, sign="+") == "+0.0"  # a measured zero, not a count
    import numpy as np

    assert formats.number(np.int64(14_710_784)) == "14,710,784"  # a count stays whole
    assert tables.span([float("nan"), 1.0]).startswith("nan [")  # a seed without a value: no digits to choose
    assert tables.span([0.0, 0.0]) == "0.0 (all 2 seeds)" and tables.span([-0.5, 0.0]) == "-0.250 [-0.500, 0.000]"


def test_shown_is_the_value_number_writes():
    """``formats.shown`` is the number a reader reads in ``formats.number``'s text (which the write-up's passes are
    compared at), inside and outside the range written without a power of ten."""
    import random

    from lmcompanion import formats

    def read(text: str) -> float:  # "1,230" -> 1230.0, "7.55×10⁻⁴" -> 7.55e-4
        mantissa, _, power = text.replace(",", "").partition("×10")
        return float(mantissa + "e" + (power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")) or "0"))

    rng = random.Random(0)
    values = [3.1249, 10.37, 550.0, 0.7449, 1536.0, 9.995e-4, 0.00123456, 2.5e7, -17.77, 0.0, 7]
    values += [rng.uniform(0, 1) * 10 ** rng.randint(-5, 8) for _ in range(2000)]
    for x in values:
        got, text = formats.shown(x), formats.number(x)
        assert got == read(text), (x, got, text)
        assert formats.number(got) == text, (x, got, text)
    assert formats.shown(10.37) == 10.4 and formats.shown(1536.0) == 1540.0 and formats.shown(7) == 7


def test_a_table_prints_floats_in_the_book_format_and_typesets_dollar_math():
    import pandas as pd

    df = pd.DataFrame(
        {
            "arm": ["a", "b"],
            "PFLOP": [0.000755, 12.5],
            "batch": [4.0, float("nan")],
            "note": ["$L^1$ or $L^2$ distance", "`$HOME` stays code"],
        }
    ).set_index("arm")
    out = tables.html(df)
    assert "7.55×10⁻⁴" in out and "12.5" in out and "0.000755" not in out
    assert ">4<" in out  # a whole float (a count beside a missing value) as an integer
    assert '<span class="math notranslate nohighlight">\\(L^1\\)</span>' in out and "$L^1$" not in out
    assert "<code>$HOME</code>" in out  # no mathematics inside code
    names = tables.html(pd.DataFrame({"experiment": ["mixer/expanded_d256"], "cmd": ["`a/b_c`"]}))
    assert "mixer/<wbr>expanded_<wbr>d256" in names and "<code>a/b_c</code>" in names  # may wrap; code stays whole
    # a name beside code or mathematics in the same cell still may wrap (a verdict "at `smoke` scale: ... a_b")
    mixed = tables.html(pd.DataFrame({"verdict": ["at `smoke` scale: retrieval/flat_d512 and $x_1$"]}))
    assert "<code>smoke</code>" in mixed and "retrieval/<wbr>flat_<wbr>d512" in mixed and "x_1" in mixed
    # not after a short prefix: a label "d_model=256" read "d_ model=256" where the column wrapped it
    short = tables.html(pd.DataFrame({"arm": ["d_model=256", "ar_ed/baseline", "transformer_matcher_d1024_c32"]}))
    assert "d_model=256" in short and "ar_ed/<wbr>" not in short and "ar_<wbr>" not in short
    assert "transformer_<wbr>matcher_<wbr>d1024_<wbr>c32" in short
