"""What a verdict row needs from a finished run's own files, measured in the GPU slot and recorded with the run.

A recorded run carries its metrics, not its files (its weights; a retrieval run's embeddings), so a row whose
measure reads them is not decided from it. Right after a slot's run finishes and is written as a recorded run, the
runner calls :func:`record`: every measure the chapters declare (:func:`lmcompanion.recorded.measure`: the hourglass
losses on each window's last token and by position in a group, the retrieval runs' cosine, L1, L2 and BM25 top-1
and the spread of their embeddings' norms) that applies to the run is computed on its files, on the run's device,
and written into its recorded file (``measures``); on the imported run the chapters' rows read them there. A measure
that fails, or gives a number that is not finite, is left out and named in the log (its row then stays *not
decided*, saying it needs the run's files); the run stays recorded either way.
"""

from __future__ import annotations

import inspect
import math
import time
from pathlib import Path
from typing import Callable

from .. import chapters  # noqa: F401  (each chapter declares its measures: lmcompanion.recorded.MEASURES)
from .. import recorded
from ..train import Run


def compute(run: Run, log: Callable = print) -> dict:
    """Every declared measure that applies to ``run``, at each of its arguments, by the key its record names it by
    (:meth:`lmcompanion.recorded.Measure.key`)."""
    found = {}
    for m in recorded.MEASURES.values():
        if not m.applies(run.config):
            continue
        kw = {"device": run.config.device} if "device" in inspect.signature(m.compute).parameters else {}
        for args in m.args:
            key = m.key(m.bound(run, args, {}))
            try:
                value = m.compute(run, *args, **kw)
            except Exception as exc:  # noqa: BLE001  (a measure left out is named; the run stays recorded)
                log(f"    measure {key} left out: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            if not _finite(value):
                log(f"    measure {key} left out: it is not a finite number, nor a list or dict of them")
                continue
            found[key] = value
    return found


def _finite(value) -> bool:
    values = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else [value]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def record(run: Run, path: Path, log: Callable = print) -> dict:
    """Measure a finished run's files (:func:`compute`) and add what was measured to its recorded file ``path``,
    checked as every recorded file is (:func:`lmcompanion.recorded.validate`) before it replaces the file. Returns
    the measures."""
    t0 = time.perf_counter()
    found = compute(run, log)
    if found:
        record_, _, _ = recorded.read(Path(path))
        record_["measures"] = {**record_.get("measures", {}), **found}
        recorded.validate(record_, Path(path))
        recorded.write_record(Path(path), record_)
        log(f"    measured on its files: {', '.join(found)} ({time.perf_counter() - t0:.1f} s)")
    return found


__all__ = ["compute", "record"]
