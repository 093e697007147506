"""Chapter-specific analyses that a chapter's notebooks share (what is used twice moves here, out of the
notebooks). Named configs stay in ``lmcompanion.experiments``; figures and tables in ``plots`` and ``tables``.

Importing this package imports every chapter module, and with it registers every chapter's claim rows
(:mod:`lmcompanion.claims`): whatever decides or lists rows (the notebooks through :mod:`lmcompanion.nb`, the pages,
the campaign) sees all of them, whichever chapter module it imported itself."""

from . import ar_ed, deepsight, formal_ed, hourglass, mixer, retrieval  # noqa: F401  (each registers its rows)
