"""What a build's run store says about the headline arms (issue 34's check): for every headline arm of every chapter
at a profile, the tokens each run saw, its distance to its reference line at every seed (the learning gate,
:mod:`lmcompanion.learning`), its wall time; then the store's runs and their summed wall time per chapter.

    LMC_RUNS_DIR=runs python tests/scripts/headline_report.py [--profile cpu]

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
    ap.add_argument("--runs", default=os.environ.get("LMC_RUNS_DIR", "runs"), help="the run store (default $LMC_RUNS_DIR)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    store = RunStore(Path(args.runs))
    rows, missing = [], []
    for h in experiments.headlines():
        for name in h.arms:
            if not experiments.runs_at(name, args.profile):
                continue
            planned = [p for p in experiments.plan(h.chapter, args.profile, device="cpu") if p.name == name]
            runs = [p.get(store) for p in planned]
            found = [r for r in runs if r is not None]
            missing += [p.id for p, r in zip(planned, runs) if r is None]
            if not found:
                continue
            metric = _metric(found[0].config)
            a = learning.arm(name, found, metric)
            rows.append({"chapter": h.chapter, "headline": h.label, "arm": name, "metric": metric,
                         "reference": a.reference, "level": a.level, "seeds": len(found),
                         "tokens": [r.summary.get("tokens") or r.config.tokens() for r in found],
                         "unit": getattr(found[0].config.data, "unit", "tokens"),
                         "distance": [round(d, 3) for d in a.distances], "learned": a.learned,
                         "wall_s": [r.summary.get("wall_time_s") for r in found]})
    print(f"headline arms at {args.profile} ({len(rows)} arms):")
    for r in rows:
        unit = "x chance" if r["metric"].endswith("_acc") else "nats below"
        toks = sorted(set(r["tokens"]))
        print(f"  {r['chapter']:<10} {r['arm']:<28} {r['seeds']} seeds, {','.join(f'{t:,}' for t in toks)} {r['unit']}/run, "
              f"{unit} {r['reference']} ({r['level']:.3f}): {', '.join(f'{d:.2f}' for d in r['distance'])} "
              f"{'learned' if r['learned'] else 'NOT learned'}; {sum(r['wall_s']) / 60:.1f} min in all")
    per = defaultdict(lambda: [0, 0.0])
    for summary in Path(args.runs).glob("*/summary.json"):
        s = json.loads(summary.read_text())
        name = json.loads((summary.parent / "config.json").read_text()).get("name", summary.parent.name)
        chapter = next((c for c in experiments.chapters() if name.startswith((c + "_", c + "/"))), "other")
        per[chapter][0] += 1
        per[chapter][1] += s.get("wall_time_s") or 0.0
    print("finished runs in the store, by chapter: " + "; ".join(
        f"{c} {n} runs {t / 60:.1f} min" for c, (n, t) in sorted(per.items()))
          + f"; total {sum(n for n, _ in per.values())} runs, {sum(t for _, t in per.values()) / 60:.1f} min")
    if missing:
        print(f"missing from the store: {len(missing)} headline runs, e.g. {missing[:3]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
