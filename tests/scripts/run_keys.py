"""Every run of every chapter's plan at the ``smoke`` and ``cpu`` profiles (what the tests and a cold build train):
its key, the digest of the code it executes and its data's fingerprint, as JSON.

``python tests/scripts/run_keys.py --write`` records them in ``tests/run_keys.json``; ``tests/test_run_keys.py``
compares the plans of the tree with that record. Record again only for a change that is meant to change runs (a
config, a procedure, a model's or a data kind's code), and say so in the commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RECORD = Path(__file__).resolve().parents[1] / "run_keys.json"
PROFILES = ("smoke", "cpu")


def run_keys() -> dict[str, dict[str, dict[str, str]]]:
    from lmcompanion import experiments

    out = {}
    for profile in PROFILES:
        runs = {}
        for chapter in experiments.chapters():
            for run in experiments.plan(chapter, profile):
                spec = run.spec()
                runs[run.id] = {"chapter": chapter, "key": spec.key, "code": spec.code, "data": spec.data}
        out[profile] = dict(sorted(runs.items()))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"record them in {RECORD.name} (else print them)")
    args = parser.parse_args(argv)
    keys = run_keys()
    text = json.dumps(keys, indent=1, sort_keys=True) + "\n"
    if args.write:
        RECORD.write_text(text, encoding="utf-8")
        print(f"{sum(len(v) for v in keys.values())} runs recorded in {RECORD}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
