"""Chapter-specific analyses that a chapter's notebooks share (what is used twice moves here, out of the
notebooks). Named configs stay in ``lmcompanion.experiments``; figures and tables in ``plots`` and ``tables``.

Importing this package imports every chapter module, and with it registers every chapter's claim rows
(:mod:`lmcompanion.claims`): whatever decides or lists rows (the notebooks through :mod:`lmcompanion.nb`, the pages,
the campaign) sees all of them, whichever chapter module it imported itself. :func:`modules` lists them: the one
place that names the chapters here."""

from __future__ import annotations

from types import ModuleType

from . import ar_ed, deepsight, formal_ed, hourglass, mixer, retrieval  # noqa: F401  (each registers its rows)


def modules() -> dict[str, ModuleType]:
    """Every chapter's module (or package), by the chapter's name, in the order the package imports them."""
    return {"ar_ed": ar_ed, "deepsight": deepsight, "formal_ed": formal_ed, "hourglass": hourglass, "mixer": mixer,
            "retrieval": retrieval}


__all__ = ["modules"]
