"""The book's chapters as each declares itself, once, in ``chapters/<name>/chapter.toml``.

A chapter's folder (``src/lmcompanion/chapters/<name>/``) holds its analyses, rows and ledger, and one declaration:
its title and place in the book, its write-up, its notebooks, the modules that register its experiments, the model
families it brings, the data kinds it reads, and its part in the GPU campaign (its cases and bench, its groups and
their priority). Every list the package, the book and the campaign keep per chapter is derived from these
declarations: the model families (:mod:`lmcompanion.models`), the experiments' modules
(:mod:`lmcompanion.experiments`), the chapter modules (:mod:`lmcompanion.chapters`), the page titles
(:mod:`lmcompanion.pages`), the campaign's groups, family cases and benches (:mod:`lmcompanion.campaign`), the
book's ``_toc.yml`` and the chapter tables of the intro and the README (:func:`toc_yaml`, :func:`chapter_table`;
``tests/test_contents.py`` compares them, and ``python -m lmcompanion contents --write`` writes them).

The declarations are data (TOML), read here without importing anything above this module, so the layers below
the chapters (the models, the experiments) can derive their tables from them. A declaration is checked when read:
an unknown key, a missing one or a value of the wrong type stops with a message naming the file and the key.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

ROOT = Path(__file__).resolve().parent / "chapters"
DECLARATION = "chapter.toml"
TOC = "_toc.yml"


@dataclass(frozen=True)
class Group:
    """Arms of a chapter that a GPU campaign trains together (tier 2), at ``priority`` in the campaign's order.

    ``arms`` are experiment names; ``"headline"`` stands for the chapter's headline arms (trained at five seeds)."""

    label: str
    arms: tuple[str, ...] | str
    priority: int


@dataclass(frozen=True)
class Chapter:
    name: str  # the folder under chapters/, notebooks/ and book/
    title: str
    order: int  # place in the book
    write_up: str  # the write-up, as the intro's table names it
    seed: str | None  # its file in ../shared/seeds/ (the seeds' README maps each file to its chapter), by prefix
    claims: str  # what it claims, in a line (the intro's table)
    summary: str  # the write-up as the README's table names it
    notebooks: tuple[str, ...]  # notebooks/<name>/<notebook>.py, in reading order
    experiments: tuple[str, ...]  # modules of lmcompanion.experiments that register its runs
    families: tuple[tuple[str, str, str], ...]  # (module of lmcompanion.models, config class, model class)
    data: tuple[str, ...]  # the data kinds its runs read
    family_cases: tuple[str, ...]  # one experiment per code path of its families (the CUDA-path check)
    bench: tuple[str, ...]  # one gpu model per family it trains with the shared trainer (the campaign's bench)
    headline_priority: int | None  # its headline comparison's place in the campaign's order (None: no headline)
    groups: tuple[Group, ...]  # its other comparisons' arms, trained together in the campaign

    @property
    def folder(self) -> Path:
        return ROOT / self.name


_FIELDS = {
    "title": str,
    "order": int,
    "write_up": str,
    "seed": str,
    "claims": str,
    "summary": str,
    "notebooks": list,
    "experiments": list,
    "families": list,
    "data": list,
    "family_cases": list,
    "bench": list,
    "campaign": dict,
}
_OPTIONAL = {"seed", "experiments", "families", "data", "family_cases", "bench", "campaign"}


def _fail(path: Path, what: str) -> ConfigError:
    return ConfigError(f"chapter declaration {path}: {what} (the keys and their meaning: lmcompanion/contents.py)")


def _strings(path: Path, key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, f"{key!r} must be a list of non-empty strings, not {value!r}")
    return tuple(value)


def _family(path: Path, text: str) -> tuple[str, str, str]:
    module, _, classes = text.partition(".")
    config, _, model = classes.partition(":")
    if not (module and config and model):
        raise _fail(
            path, f"family {text!r} must read 'module.ConfigClass:ModelClass' (e.g. 'mixer.MixerConfig:MaskedMixer')"
        )
    return module, config, model


def _campaign(path: Path, table: dict) -> tuple[int | None, tuple[Group, ...]]:
    unknown = set(table) - {"headline_priority", "groups"}
    if unknown:
        raise _fail(path, f"unknown key(s) {sorted(unknown)} in [campaign]; known: headline_priority, groups")
    head = table.get("headline_priority")
    if head is not None and (not isinstance(head, int) or isinstance(head, bool)):
        raise _fail(path, f"campaign.headline_priority must be an integer, not {head!r}")
    groups = []
    for g in table.get("groups", []):
        if not isinstance(g, dict) or set(g) != {"label", "arms", "priority"}:
            raise _fail(path, f"each [[campaign.groups]] needs exactly label, arms and priority, not {g!r}")
        arms = g["arms"] if g["arms"] == "headline" else _strings(path, "campaign.groups.arms", g["arms"])
        if not isinstance(g["priority"], int) or not isinstance(g["label"], str):
            raise _fail(path, f"campaign group {g.get('label')!r}: priority is an integer and label a string")
        groups.append(Group(g["label"], arms, g["priority"]))
    return head, tuple(groups)


def read(path: Path) -> Chapter:
    """The declaration in ``path`` (a chapter folder's ``chapter.toml``), checked."""
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise _fail(path, f"unreadable ({e})") from None
    unknown = set(table) - set(_FIELDS)
    missing = set(_FIELDS) - _OPTIONAL - set(table)
    if unknown or missing:
        raise _fail(path, f"unknown key(s) {sorted(unknown)}, missing key(s) {sorted(missing)}")
    for key, kind in _FIELDS.items():
        if key in table and (not isinstance(table[key], kind) or isinstance(table[key], bool)):
            raise _fail(path, f"{key!r} must be a {kind.__name__}, not {table[key]!r}")
    head, groups = _campaign(path, table.get("campaign", {}))
    return Chapter(
        name=path.parent.name,
        title=table["title"],
        order=table["order"],
        write_up=table["write_up"],
        seed=table.get("seed"),
        claims=table["claims"],
        summary=table["summary"],
        notebooks=_strings(path, "notebooks", table["notebooks"]),
        experiments=_strings(path, "experiments", table.get("experiments", [])),
        families=tuple(_family(path, f) for f in _strings(path, "families", table.get("families", []))),
        data=_strings(path, "data", table.get("data", [])),
        family_cases=_strings(path, "family_cases", table.get("family_cases", [])),
        bench=_strings(path, "bench", table.get("bench", [])),
        headline_priority=head,
        groups=groups,
    )


@functools.cache
def chapters() -> tuple[Chapter, ...]:
    """Every declared chapter, in the book's order."""
    found = [read(p) for p in sorted(ROOT.glob(f"*/{DECLARATION}"))]
    if not found:
        raise ConfigError(f"no chapter declarations ({DECLARATION}) under {ROOT}: is the package installed whole?")
    orders = [c.order for c in found]
    if len(set(orders)) != len(orders):
        raise ConfigError(f"two chapters declare the same order: {sorted((c.order, c.name) for c in found)}")
    return tuple(sorted(found, key=lambda c: c.order))


def names() -> tuple[str, ...]:
    return tuple(c.name for c in chapters())


def chapter(name: str) -> Chapter:
    for c in chapters():
        if c.name == name:
            return c
    raise ConfigError(f"unknown chapter {name!r}; declared: {', '.join(names())}")


def titles() -> dict[str, str]:
    return {c.name: c.title for c in chapters()}


def _gather(field: str) -> tuple:
    return tuple(x for c in chapters() for x in getattr(c, field))


def families() -> tuple[tuple[str, str, str], ...]:
    """(module, config class, model class) of every model family, chapter by chapter."""
    return _gather("families")


def experiment_modules() -> tuple[str, ...]:
    return _gather("experiments")


def family_cases() -> tuple[str, ...]:
    return _gather("family_cases")


def bench() -> tuple[str, ...]:
    return _gather("bench")


# --- the book's files derived from the declarations ------------------------------------------------------------

TAIL = """  - caption: Scorecard
    chapters:
      - file: book/generated/scorecard
      - file: book/generated/claims
      - file: book/generated/build
"""


def toc_yaml() -> str:
    """The text of the book's ``_toc.yml``: the intro, each chapter's landing page and notebooks, the scorecard."""
    lines = ["format: jb-book", "root: book/intro", "parts:"]
    for c in chapters():
        lines += [f"  - caption: {c.title}", "    chapters:", f"      - file: book/{c.name}/index", "        sections:"]
        lines += [f"          - file: notebooks/{c.name}/{n}" for n in c.notebooks]
    return "\n".join(lines) + "\n" + TAIL


def chapter_table(kind: str) -> str:
    """The chapters' table of the intro (``kind="intro"``: title, write-up, what it claims) or of the README
    (``"readme"``: title, write-up, notebooks folder), as Markdown lines."""
    if kind == "intro":
        rows = ["| chapter | write-up | what it claims |", "|---|---|---|"]
        rows += [f"| {c.title} | {c.write_up} | {c.claims} |" for c in chapters()]
    elif kind == "readme":
        rows = ["| chapter | write-up | notebooks |", "|---|---|---|"]
        rows += [f"| {c.title} | {c.summary} | `notebooks/{c.name}/` |" for c in chapters()]
    else:
        raise ValueError(f"kind is 'intro' or 'readme', not {kind!r}")
    return "\n".join(rows) + "\n"


# The files that carry the declarations' lists: _toc.yml whole, and one chapter table in each of the intro and the
# README (its header line marks it; the table's lines follow it up to the first line that is not a table row).
SYNCED = {TOC: None, "book/intro.md": "intro", "README.md": "readme"}


def synced(text: str, kind: str) -> str:
    """``text`` (the intro's or the README's) with its chapter table replaced by the declared one."""
    table = chapter_table(kind)
    header = table.split("\n", 1)[0]
    lines = text.split("\n")
    if header not in lines:
        raise ConfigError(f"no chapter table (a line {header!r}) to replace in the {kind} text")
    start = lines.index(header)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:start] + table.rstrip("\n").split("\n") + lines[end:])


def expected(relative: str, current: str) -> str:
    """What the file ``relative`` (a key of :data:`SYNCED`) holds when it agrees with the declarations."""
    kind = SYNCED[relative]
    return toc_yaml() if kind is None else synced(current, kind)


def stale(root: Path) -> list[str]:
    """The files of :data:`SYNCED` under the repository ``root`` that disagree with the declarations."""
    texts = {rel: (root / rel).read_text(encoding="utf-8") for rel in SYNCED}
    return [rel for rel, text in texts.items() if text != expected(rel, text)]


__all__ = [
    "Chapter",
    "DECLARATION",
    "Group",
    "ROOT",
    "bench",
    "chapter",
    "chapter_table",
    "chapters",
    "expected",
    "experiment_modules",
    "families",
    "family_cases",
    "names",
    "read",
    "stale",
    "synced",
    "titles",
    "toc_yaml",
    "SYNCED",
]
