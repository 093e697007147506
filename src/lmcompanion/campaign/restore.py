"""A slot's archive, back from the GPU machine, restored into the repository and committed: one command
(``python -m lmcompanion campaign --restore ARCHIVE --commit``).

The archive (``--archive`` of the slot's command: the files of ``book/recorded`` the slot made or changed, under one
top folder) was made elsewhere, so it is read through :mod:`lmcompanion.untrusted` (sizes from the headers, no link,
every name confined) and every member is checked before anything is written: a recorded run
(``<profile>/<experiment>-s<seed>.json``) completely (:func:`lmcompanion.recorded.validate`), a report
(``campaign/<profile>/{progress,check,bench,minutes,lanes}.json``) against its format; any other member stops the restore.
An archive older than what is here (its progress lacks a slot this folder's progress records) is refused too. The
commit's message names the slot, its device and what it recorded.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Callable

from .. import paths, recorded, untrusted
from ..config import PROFILES
from ..errors import LMCError
from . import reports


def _members(archive: Path) -> tuple[dict[str, bytes], dict[str, dict]]:
    """The archive's files by their path under its one top folder, each checked (see the module doc), and the
    reports among them, parsed."""
    fmt = untrusted.CAMPAIGN_ARCHIVE
    found = untrusted.read_tar(archive, fmt)
    tops = {name.split("/", 1)[0] for name in found}
    if len(tops) != 1 or any("/" not in name for name in found):
        raise fmt.error(archive, f"its files are not under one top folder (found {sorted(tops)[:5]})")
    out, parsed = {}, {}
    for name, data in found.items():
        rel = name.split("/", 1)[1]
        parts = rel.split("/")
        label = f"{archive}:{name}"
        if len(parts) == 2 and parts[0] in PROFILES and parts[1].endswith(".json"):
            record, _cfg, _ = recorded.parse(label, data)  # validated completely, as import-recorded does
            if record["profile"] != parts[0] or recorded.file_name(record) != parts[1]:
                raise fmt.error(
                    archive,
                    f"member {name!r} holds a run of {record['experiment']!r} seed "
                    f"{record['seed']} at {record['profile']!r}: not the file its name says",
                )
        elif len(parts) == 3 and parts[0] == reports.REPORTS and parts[1] in PROFILES and parts[2] in reports.FILES:
            fmt_of = reports.FILES[parts[2]]
            parsed[rel] = untrusted.check(untrusted.parse_json(data, label, fmt_of), label, fmt_of)
        else:
            raise fmt.error(
                archive,
                f"member {name!r} is neither a recorded run (<top>/<profile>/<name>.json) nor a "
                "campaign report (<top>/campaign/<profile>/<report>.json)",
            )
        out[rel] = data
    if not out:
        raise fmt.error(archive, "it holds no file")
    return out, parsed


def _slots(parsed: dict[str, dict], out: Path) -> list[tuple[str, dict]]:
    """(profile, the last command) of each progress file of the archive, after checking that it is not older than the
    progress here: every command recorded here must be in the archive's, in the same order."""
    found = []
    for rel, value in sorted(parsed.items()):
        parts = rel.split("/")
        if parts[2] != "progress.json":
            continue
        theirs = value.get("commands", [])
        ours = (reports.read_report(out, parts[1], "progress.json") or {}).get("commands", [])
        if theirs[: len(ours)] != ours:
            raise LMCError(
                f"the archive's {rel} does not continue the progress in {out} (it lacks commands recorded "
                "here): it is older than what is committed, or from another campaign; nothing was written"
            )
        if theirs:
            found.append((parts[1], theirs[-1]))
    return found


def message(members: dict[str, bytes], slots: list[tuple[str, dict]]) -> str:
    """The commit message: the slot, its device, and what it recorded."""
    runs = sorted(rel for rel in members if rel.split("/")[0] in PROFILES)
    if slots:
        profile, last = slots[0]
        where = last.get("gpu") or last.get("device") or "an unknown device"
        head = f"Recorded GPU campaign, slot {last.get('slot')} on {where} ({profile} profile)"
    else:
        head = "Recorded GPU campaign: a slot's archive without its progress"
    return (
        f"{head}: {len(runs)} recorded run(s), {len(members) - len(runs)} report(s)\n\n"
        + "\n".join(f"- {rel}" for rel in sorted(members))
        + "\n"
    )


def restore(archive: Path, out: Path | None = None, *, commit: bool = False, log: Callable = print) -> list[Path]:
    """Restore ``archive`` into ``out`` (default ``book/recorded``) after checking every member, then commit every
    member that differs from what is committed (``commit``) or print the command that does. Returns the files
    written."""
    out = Path(out) if out is not None else recorded.default_dir()
    members, parsed = _members(Path(archive))
    slots = _slots(parsed, out)
    targets = {rel: untrusted.confined(out, rel, archive, untrusted.CAMPAIGN_ARCHIVE, what="member") for rel in members}
    written = []
    for rel, data in sorted(members.items()):
        target = targets[rel]
        if target.is_file() and target.read_bytes() == data:
            continue
        try:
            paths.atomic_write(target, data)
        except OSError as exc:
            raise LMCError(f"cannot write {target} ({exc.strerror}): free disk space") from None
        written.append(target)
    text = message(members, slots)
    log(f"restored {len(written)} file(s) of {archive} into {out} ({len(members) - len(written)} unchanged)")
    # every member is committed, not only those written now: a member already on disk (an earlier restore without
    # --commit) is still untracked or changed
    names = [str(targets[rel]) for rel in sorted(members)]
    if not commit:
        log(
            "commit them with:\n  git add "
            + " ".join(shlex.quote(n) for n in names)
            + " && git commit -m "
            + shlex.quote(text)
        )
        return written
    _git(out, "add", "--", *names)
    if subprocess.run(["git", "-C", str(out), "diff", "--cached", "--quiet", "--", *names]).returncode == 0:
        log("nothing to commit: every file of the archive is committed already")
        return written
    _git(out, "commit", "-q", "-m", text, "--", *names)
    log(f"committed: {text.splitlines()[0]}")
    return written


def _git(out: Path, *args: str) -> None:
    proc = subprocess.run(["git", "-C", str(out), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise LMCError(
            f"git {args[0]} in {out} failed ({(proc.stderr or proc.stdout).strip()[:300]}): the files "
            "are restored; commit them by hand"
        )


__all__ = ["message", "restore"]
