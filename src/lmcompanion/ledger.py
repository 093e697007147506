"""The claims ledger: every claim of every write-up, each tested by a verdict row or carrying a one-line reason why not.

Each chapter registers its write-up's claims (:func:`register`, from the chapter's module under
``lmcompanion.chapters``), in the write-up's order, each with the write-up's own sentence as printed: ``says`` is a
quotation, its words a substring of the write-up once whitespace, typography, markdown emphasis and links, and math
delimiters are normalised ("..." marks words left out; ``tests/test_quotes.py`` checks every one). The one exception
is a line of pseudocode or a formula the write-up typesets so that no sentence quotes it, which a claim transcribes
with ``quoted=False`` (the page then marks it as a transcription). A claim names
the verdict row that tests it by that row's claim text (:attr:`lmcompanion.verdicts.Verdict.claim`, exactly), or
gives the reason it is not tested. The book's build generates the ledger page from this registry and the verdict
rows the executed notebooks glued (:func:`lmcompanion.pages.ledger_page`), so each claim shows its verdict at every
profile with runs; ``tests/test_ledger.py`` fails when a claim has neither a row nor a reason, or names a row that no
notebook shows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    chapter: str  # the chapter (a folder of notebooks/)
    says: str  # the write-up's sentence (or the shortest span of it that makes the claim), as printed
    where: str  # where in the write-up (its section)
    row: str | None = None  # the claim text of the verdict row that tests it
    reason: str | None = None  # one line: why it is not tested
    quoted: bool = True  # ``says`` quotes the write-up (False: it transcribes a formula or pseudocode line)

    def __post_init__(self) -> None:
        if (self.row is None) == (self.reason is None):
            raise ValueError(f"a claim of {self.chapter} needs exactly one of a verdict row or a reason: {self.says!r}")
        if self.reason is not None and (not self.reason.strip() or "\n" in self.reason):
            raise ValueError(f"the reason a claim is not tested is one non-empty line: {self.says!r}")
        if not self.says.strip():
            raise ValueError(f"a claim of {self.chapter} quotes nothing")


LEDGER: dict[str, list[Claim]] = {}


def register(chapter: str, claims: list[Claim]) -> list[Claim]:
    """Register a chapter's claims (once per chapter), in the write-up's order."""
    if chapter in LEDGER:
        raise ValueError(f"the claims of {chapter!r} are registered twice")
    wrong = [c.says for c in claims if c.chapter != chapter]
    if wrong:
        raise ValueError(f"claims registered under {chapter!r} name another chapter: {wrong[:2]}")
    LEDGER[chapter] = list(claims)
    return LEDGER[chapter]


def tested(chapter: str) -> list[Claim]:
    return [c for c in LEDGER.get(chapter, []) if c.row is not None]


def untested(chapter: str) -> list[Claim]:
    return [c for c in LEDGER.get(chapter, []) if c.row is None]


__all__ = ["Claim", "LEDGER", "register", "tested", "untested"]
