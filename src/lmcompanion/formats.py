"""The book's one number format: how many digits a number gets depends on what it is, never on where it is printed.

- **A value** (a loss, a ratio, a time, a share): three significant digits, thousands separators, no exponent
  between 0.001 and a million (2.91, 0.0123, 550, 1,230); outside that, three significant digits times a power of
  ten (7.55×10⁻⁴). :func:`number`.
- **A value over seeds**, "mean [min, max]": one number of decimals for all three, enough for three significant digits
  of the largest and, where the seeds differ only further down, enough to show that they differ (up to six
  significant digits); at least one decimal (a trained number is a measurement, not a count); where every seed gave
  exactly the same value, that value once, "(all 3 seeds)". :func:`span`.
- **An estimate with a standard error**: the error to two significant digits and the estimate to the same
  decimals (-0.0123 ± 0.0041). :func:`estimate`.
- **A count** (steps, parameters, items): an integer with thousands separators. :func:`count`.
- **An amount with a unit that has prefixes** (FLOPs, bytes): three significant digits with the prefix that keeps
  the number between 1 and 1,000 (755 GFLOP, 1.23 PFLOP). :func:`si`.

Pure functions of numbers (no runs, no tables), at the bottom of the package, so that the statistics, the data
layer and the tables all print the same way.
"""

from __future__ import annotations

import math
import numbers
from typing import Sequence

SIG = 3  # significant digits of a value
MOST = 6  # the most significant digits a value over seeds gets to show that its seeds differ
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
PLAIN = (1e-3, 1e6)  # values in this range are written without a power of ten


def _exponent(x: float) -> int:
    return math.floor(math.log10(abs(x)))


def _decimals(x: float, sig: int) -> int:
    """Decimals that give ``x`` ``sig`` significant digits (0 for large numbers)."""
    return max(0, sig - 1 - _exponent(x)) if x else 0


def _times_ten(e: int) -> str:
    return f"×10{str(e).translate(SUPERSCRIPT)}"


def _sign(fmt: str | None) -> str:
    """``"+"`` where a format spec asks for an explicit sign (``"+.3f"``), else ``""``."""
    return "+" if fmt and fmt.lstrip().startswith("+") else ""


def number(x: float, sig: int = SIG, sign: str = "") -> str:
    """A value to ``sig`` significant digits (see the module's rules); integers are written whole."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, numbers.Integral):  # numpy's integers too
        return f"{int(x):{sign},}"
    x = float(x)
    if not math.isfinite(x):
        return f"{x:{sign}g}"
    if x == 0:  # a measured zero is still a measurement: "0.0", as a mean over seeds writes it, not the count "0"
        return f"{0.0:{sign}.1f}"
    digits, e, decimals = _significant(x, sig)
    if e is not None:
        return f"{digits:{sign}.{decimals}f}{_times_ten(e)}"
    return f"{digits:{sign},.{decimals}f}"


def _significant(x: float, sig: int) -> tuple[float, int | None, int]:
    """A finite, non-zero ``x`` to ``sig`` significant digits as :func:`number` writes it: the digits, the power of
    ten they are multiplied by (None inside :data:`PLAIN`, where there is none) and their decimals."""
    if not PLAIN[0] <= abs(x) < PLAIN[1]:
        e = _exponent(x)
        mantissa = round(x / 10**e, sig - 1)
        if abs(mantissa) >= 10:  # 9.995e-4 rounds up to 1.00e-3
            e, mantissa = e + 1, mantissa / 10
        return mantissa, e, sig - 1
    d = sig - 1 - _exponent(x)  # negative for large numbers: 1234.5 -> 1,230
    return round(x, d), None, max(d, 0)


def shown(x: float, sig: int = SIG) -> float:
    """The value :func:`number` writes for ``x``: ``x`` to ``sig`` significant digits (an integer whole), so that a
    comparison with a number the book prints compares with what the reader reads."""
    if isinstance(x, numbers.Integral) or not math.isfinite(x) or x == 0:
        return x
    digits, e, decimals = _significant(float(x), sig)
    return digits if e is None else float(f"{digits:.{decimals}f}e{e}")


def count(n: float) -> str:
    """A count: an integer with thousands separators (1,230,000)."""
    return f"{int(round(n)):,}"


SI = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def si(x: float, unit: str, sig: int = SIG) -> str:
    """An amount of ``unit`` with the SI prefix that keeps its number between 1 and 1,000: ``si(7.55e11, "FLOP")``
    is "755 GFLOP"; beyond peta, peta with more digits."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g} {unit}"
    scale, prefix = next(((s, p) for s, p in SI if abs(x) >= s), SI[-1])
    return f"{number(x / scale, sig)} {prefix}{unit}"


def span(values: Sequence[float], fmt: str | None = None) -> str:
    """Per-seed values as "mean [min, max]" in one number of decimals (see the module's rules); a single value as
    :func:`number`; "x (all n seeds)" where every seed gave exactly x. ``fmt`` is kept for its sign only (``"+.3f"``
    writes an explicit +): the digits follow from the values."""
    values = [float(v) for v in values]
    sign = _sign(fmt)
    if len(values) == 1:
        return number(values[0], sign=sign)
    m, lo, hi = sum(values) / len(values), min(values), max(values)
    if not all(math.isfinite(v) for v in values):  # nothing to choose digits by: each as a value ("nan [nan, nan]")
        return f"{number(m, sign=sign)} [{number(lo, sign=sign)}, {number(hi, sign=sign)}]"
    if lo == hi:
        return f"{number(lo, sign=sign)} (all {len(values)} seeds)"
    largest = max(abs(lo), abs(hi))
    e = _exponent(largest) if not PLAIN[0] <= largest < PLAIN[1] else 0  # a common power of ten outside the range
    m, lo, hi = (v / 10**e for v in (m, lo, hi))
    d = max(1, _decimals(max(abs(lo), abs(hi)), SIG))
    most = max(d, _decimals(max(abs(lo), abs(hi)), MOST))
    while d < most and f"{lo:.{d}f}" == f"{hi:.{d}f}":  # the seeds differ: show where
        d += 1
    text = f"{m:{sign},.{d}f} [{lo:{sign},.{d}f}, {hi:{sign},.{d}f}]"
    return text + (f" {_times_ten(e)}" if e else "")


def estimate(value: float, se: float, sign: str = "+") -> str:
    """An estimate with its standard error: the error to two significant digits, the estimate to the same
    decimals, at least one ("-0.0123 ± 0.0041", "+1.2 ± 3.4"); without an error (0), the estimate as a value."""
    if not se or not math.isfinite(se):
        return number(value, sign=sign)
    d = max(1, _decimals(se, 2))
    return f"{value:{sign},.{d}f} ± {se:,.{d}f}"


__all__ = ["count", "estimate", "number", "shown", "si", "span"]
