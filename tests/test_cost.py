"""The chapters' time and memory rows (lmcompanion.chapters.cost) on made-up timings: the rule, not a speed."""

from lmcompanion import verdicts
from lmcompanion.bench import SideBySide
from lmcompanion.chapters import ar_ed, cost, deepsight


def _timing(a, b, names=ar_ed.TIMED):
    return SideBySide(names, (tuple(a), tuple(b)), steps=5, device="cpu", threads=1)


def test_similar_time_holds_within_the_margin_and_fails_beyond_it():
    close = _timing([0.101, 0.104, 0.099, 0.103, 0.1, 0.102], [0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    v = cost.time_similar(ar_ed.TIME, "", close, *ar_ed.TIMED)
    assert v.outcome == verdicts.HOLDS and v.seeds == "6 rounds" and v.ours.startswith("s/step on cpu")
    slow = _timing([0.2, 0.21, 0.19, 0.2, 0.205, 0.2], [0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    assert cost.time_similar(ar_ed.TIME, "", slow, *ar_ed.TIMED).outcome == verdicts.FAILS


def test_faster_is_a_per_round_ratio_below_one():
    fast = _timing([0.08, 0.081, 0.079, 0.08], [0.1, 0.1, 0.1, 0.1])
    v = cost.time_lower("a is faster", "", fast, *ar_ed.TIMED)
    assert v.outcome == verdicts.HOLDS and v.seeds == "4 rounds"
    assert cost.time_lower("b is faster", "", fast, ar_ed.TIMED[1], ar_ed.TIMED[0]).outcome == verdicts.FAILS


def test_without_a_timing_the_row_says_so():
    v = cost.time_similar(ar_ed.TIME, "", None, *ar_ed.TIMED)
    assert v.outcome == verdicts.INCONCLUSIVE and "not timed side by side" in v.verdict
    # a timing of other models is not used
    other = _timing([0.1] * 3, [0.1] * 3, names=deepsight.TIMED)
    assert "not timed" in cost.time_similar(ar_ed.TIME, "", other, *ar_ed.TIMED).verdict


def test_memory_is_counted_at_the_write_ups_size_and_a_recorded_peak_decides_where_there_is_one():
    counted = cost.memory_similar(ar_ed.MEMORY, "", *ar_ed.TIMED)
    assert counted.chance == verdicts.EXACT and "not recorded yet" in counted.ours
    a, b = cost.counted(ar_ed.TIMED[0]), cost.counted(ar_ed.TIMED[1])
    assert counted.outcome == (
        verdicts.HOLDS if 0.8 <= a["training_step"] / b["training_step"] <= 1.25 else verdicts.FAILS
    )

    class Run:
        def __init__(self, peak):
            self.summary, self.env = {"peak_mem_bytes": peak}, {"gpu": "NVIDIA H100"}

    far = {ar_ed.TIMED[0]: [Run(4 * 2**30)], ar_ed.TIMED[1]: [Run(2**30)]}
    measured = cost.memory_similar(ar_ed.MEMORY, "", *ar_ed.TIMED, far)
    assert measured.outcome == verdicts.FAILS and measured.ours.startswith("measured on NVIDIA H100")


def test_timed_rows_are_glued_with_the_others_and_shown_apart(monkeypatch):
    import myst_nb

    from lmcompanion import nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda key, value, display=True: glued.setdefault(key, value))
    rows = [verdicts.exact("a count", "", "", True), cost.time_similar(ar_ed.TIME, "", None, *ar_ed.TIMED)]
    S = nb.setup(profile="smoke", device="cpu")
    table = nb.show_verdicts(S, "ar_ed", rows, apart=[ar_ed.TIME])
    shown = table.data.split("<details")[0]  # the table of verdicts (nb.verdict_table), before its folded numbers
    assert shown.count("</tr>") == 2 and "a count" in shown  # the header and one row
    assert [r["claim"] for r in __import__("json").loads(glued["verdicts:smoke"])] == ["a count", ar_ed.TIME]
    assert list(nb.timed_verdicts(rows, [ar_ed.TIME])["claim (write-up)"]) == [ar_ed.TIME]
