"""Chapter-specific analyses that a chapter's notebooks share (what is used twice moves here, out of the
notebooks). Named configs stay in ``lmcompanion.experiments``; figures and tables in ``plots`` and ``tables``."""
