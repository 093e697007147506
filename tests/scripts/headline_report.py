"""What a build's run store says about the headline arms (issue 34's check): for every headline arm of every chapter
at a profile, the tokens each run saw, its distance to its reference line at every seed (the learning gate,
:mod:`lmcompanion.learning`), its wall time; then the store's runs and their summed wall time per chapter; with
``--notebooks``, how the executed notebooks there decided each chapter's headline rows at the profile, and the reason
the registry declares where an arm falls short (``cpu_shortfall``).

    LMC_RUNS_DIR=runs python tests/scripts/headline_report.py [--profile cpu] [--notebooks notebooks]

Reads finished runs only: a headline run missing from the store is reported missing, never trained."""

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

from lmcompanion import experiments, learning
from lmcompanion.train import RunStore


def _metric(cfg) -> str:
    # a matcher's line is chance on its test accuracy; a language model's is the unigram loss of its validation split
    return "test_acc" if getattr(cfg.data, "chance_line", None) is not None else "val"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu", choices=("smoke", "cpu", "gpu", "paper"))
    ap.add_argument(
        "--runs", default=os.environ.get("LMC_RUNS_DIR", "runs"), help="the run store (default $LMC_RUNS_DIR)"
    )
    ap.add_argument("--notebooks", help="a folder of executed notebooks (e.g. notebooks): count their headline rows")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    store = RunStore(Path(args.runs))
    rows, missing = [], []
    for h in experiments.headlines():
        for name in h.arms:
            if not experiments.runs_at(name, args.profile):
                continue
            planned = experiments.plan([name], args.profile, device="cpu", needs=False)  # its own protocol, seeds
            runs = [p.get(store) for p in planned]
            found = [r for r in runs if r is not None]
            missing += [p.id for p, r in zip(planned, runs) if r is None]
            if not found:
                continue
            metric = _metric(found[0].config)
            a = learning.arm(name, found, metric)
            rows.append(
                {
                    "chapter": h.chapter,
                    "headline": h.label,
                    "arm": name,
                    "metric": metric,
                    "reference": a.reference,
                    "level": a.level,
                    "seeds": len(found),
                    "tokens": [r.summary.get("tokens") or r.config.tokens() for r in found],
                    "unit": getattr(found[0].config.data, "unit", "tokens"),
                    "distance": [round(d, 3) for d in a.distances],
                    "learned": a.learned,
                    "wall_s": [r.summary.get("wall_time_s") for r in found],
                }
            )
    print(f"headline arms at {args.profile} ({len(rows)} arms):")
    for r in rows:
        unit = "x" if r["metric"].endswith("_acc") else "nats below"  # "x chance", "nats below the unigram loss"
        toks = sorted(set(r["tokens"]))
        seeds = f"{r['seeds']} seed{'' if r['seeds'] == 1 else 's'}"
        print(
            f"  {r['chapter']:<10} {r['arm']:<28} {seeds}, {','.join(f'{t:,}' for t in toks)} {r['unit']}/run, "
            f"{unit} {r['reference']} ({r['level']:.3f}): {', '.join(f'{d:.2f}' for d in r['distance'])} "
            f"{'learned' if r['learned'] else 'NOT learned'}; {sum(r['wall_s']) / 60:.1f} min in all"
        )
    per = defaultdict(lambda: [0, 0.0])
    for summary in Path(args.runs).glob("*/summary.json"):
        s = json.loads(summary.read_text())
        name = json.loads((summary.parent / "config.json").read_text()).get("name", summary.parent.name)
        chapter = next((c for c in experiments.chapters() if name.startswith((c + "_", c + "/"))), "other")
        per[chapter][0] += 1
        per[chapter][1] += s.get("wall_time_s") or 0.0
    print(
        "finished runs in the store, by chapter: "
        + "; ".join(f"{c} {n} runs {t / 60:.1f} min" for c, (n, t) in sorted(per.items()))
        + f"; total {sum(n for n, _ in per.values())} runs, {sum(t for _, t in per.values()) / 60:.1f} min"
    )
    if args.notebooks:
        decided(Path(args.notebooks), args.profile)
    if missing:
        print(f"missing from the store: {len(missing)} headline runs, e.g. {missing[:3]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if missing else 0


def decided(root: Path, profile: str) -> None:
    """Per chapter, the headline rows the executed notebooks under ``root`` glued at ``profile``, counted by outcome,
    and the registry's reason where a headline has an arm that has not learned."""
    from lmcompanion import pages

    rows = [r for r in pages.own_verdicts(root) if r.get("headline") and r["profile"] == profile]
    print(f"headline rows decided at {profile} (from the notebooks under {root}):")
    for chapter in experiments.chapters():
        mine = [r for r in rows if r["chapter"] == chapter]
        if not mine:
            continue
        counts = defaultdict(int)
        for r in mine:
            counts[r["outcome"]] += 1
        short = pages.unlearned_arms(mine)
        print(
            f"  {chapter:<10} "
            + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
            + (f"; not learned: {', '.join(short)}" if short else "")
        )
        for h in experiments.headlines(chapter):
            if short and h.cpu_shortfall and profile == "cpu":
                print(f"             why (the registry): {h.cpu_shortfall}")


if __name__ == "__main__":
    sys.exit(main())
