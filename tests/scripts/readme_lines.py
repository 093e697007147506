"""Check that moving the README into docs/ dropped nothing: every non-empty line of the README at a revision is a
line of today's README.md or docs/*.md, or, where a long line was wrapped, its words in order in one of them.

    python tests/scripts/readme_lines.py REVISION     # e.g. the commit before the README was split
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main(revision: str) -> int:
    old = subprocess.run(
        ["git", "show", f"{revision}:README.md"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.split("\n")
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    texts = [f.read_text(encoding="utf-8") for f in files]
    lines = {line.strip() for text in texts for line in text.split("\n")}
    flat = [" ".join(text.split()) for text in texts]
    wanted = [line.strip() for line in old if line.strip()]
    exact = [line for line in wanted if line in lines]
    wrapped = [line for line in wanted if line not in lines and any(" ".join(line.split()) in f for f in flat)]
    missing = [line for line in wanted if line not in lines and line not in wrapped]
    print(
        f"{len(wanted)} non-empty lines at {revision}: {len(exact)} found as lines, {len(wrapped)} wrapped, "
        f"{len(missing)} missing"
    )
    for line in missing:
        print("missing:", line[:150])
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "HEAD"))
