"""What the AR encoder–decoder chapter computes from trained models besides their training curves: nothing. Its
pages show the curves (:mod:`lmcompanion.plots`), the results tables beside the write-up's numbers
(:mod:`lmcompanion.tables`), the parameter and memory counts of the cost claims (:mod:`lmcompanion.chapters.cost`)
and the verdicts of the rows (:mod:`lmcompanion.nb`); the final embedding losses the collapse rows read are logged by
the runs themselves. An analysis the chapter's notebooks come to share belongs here.
"""

from __future__ import annotations

__all__: list[str] = []
