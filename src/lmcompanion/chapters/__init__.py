"""The chapters: one folder each, of one shape (``chapters/<name>/``): its declaration (``chapter.toml``, read by
:mod:`lmcompanion.contents`), its rows as data (``rows.py``), its ledger (``claims.py``: ``CLAIMS``), its analyses
(``analysis.py``; ``facts.py`` and ``compute.py`` where it has them), and ``__init__.py``, which decides the rows
(``ROWS``), registers rows and ledger, and re-exports every name its notebooks use.

A chapter's named configs stay in ``lmcompanion.experiments`` (the modules its declaration lists): a run's key names
the module of its training procedure and hashes, by module name, the code the run executes, so moving those modules
here would change every key and orphan every stored and recorded run. Figures and tables are in ``plots`` and
``tables``.

Importing this package imports every chapter's package (:func:`modules`), and with it registers every chapter's
claim rows (:mod:`lmcompanion.claims`): whatever decides or lists rows (the notebooks through
:mod:`lmcompanion.nb`, the pages, the campaign) sees all of them, whichever chapter module it imported itself."""

from __future__ import annotations

import importlib
from types import ModuleType

from .. import contents


def modules() -> dict[str, ModuleType]:
    """Each declared chapter's package (``chapters/<name>/``, :mod:`lmcompanion.contents`) that has analyses, by
    name, in the book's order (the prologue's folder holds its declaration only)."""
    return {
        c.name: importlib.import_module(f"{__name__}.{c.name}")
        for c in contents.chapters()
        if (c.folder / "__init__.py").exists()
    }


modules()  # each chapter's package registers its rows

__all__ = ["modules"]
