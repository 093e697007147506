"""What it would take for the retrieval headline's matchers to learn at a profile (issues 34 and 53), measured outside
the book: one matcher arm at one seed, with its embedder trained for more steps, the matcher for more epochs, more
of the usable summary-story pairs than the profile takes, or the Wikipedia setting's pairs (``--setting
wikipedia``), and with any part of the small profiles' protocol undone (``--init``, ``--whiten``, ``--schedule``),
each at the profile's value unless given. Prints how far
the embedder learned, the matcher's train and test cross-entropy and top-1 accuracy at its last evaluation, against
chance, and the wall times; with ``--probe``, also a bilinear probe fitted to the same training pairs (every training
story a candidate of every query, full batch), scored on the test pairs like the matcher: whether the embeddings hold
a match that generalises at all, whatever the matcher's optimisation.

    LMC_DATA_DIR=../shared/data python tests/scripts/retrieval_reach.py retrieval/flat_d1024_c32 \\
        --embedder-steps 800 --epochs 50 --pairs all --probe --store /tmp/reach
    LMC_DATA_DIR=../shared/data python tests/scripts/retrieval_reach.py retrieval/llama_d1024_c32 \\
        --init default --whiten no --geometry      # the write-up's initialisation and inputs, and the diagnosis
    LMC_DATA_DIR=../shared/data python tests/scripts/retrieval_reach.py retrieval/llama_d1024_c32 \\
        --setting wikipedia --pairs 6000           # Wikipedia leads: 5,400 training pairs, 600 test

The embedder's steps are not a setting of a retrieval run (it reads its embedder at the profile, as planned), so the
script replaces, in this process only, the function of the procedure (:mod:`lmcompanion.experiments.matching`) that
names the embedder's run; the runs it trains go to ``--store``, never to the book's run store, and the embeddings to
that folder's ``cache``."""

import argparse
import dataclasses
import itertools
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

from lmcompanion import argtypes


def _pairs(text: str):
    """--pairs: "all", or a count of at least 20 (the data config's least)."""
    if text == "all":
        return text
    try:
        value = argtypes.positive_int(text)
    except argparse.ArgumentTypeError:
        value = 0
    if value < 20:
        raise argparse.ArgumentTypeError(f"expected 'all' or a whole number >= 20, got {text!r}")
    return value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("arm", help="a retrieval matcher experiment, e.g. retrieval/flat_d1024_c32")
    ap.add_argument("--profile", default="cpu", type=argtypes.profile)
    ap.add_argument("--seed", type=argtypes.seed, default=0)
    ap.add_argument(
        "--embedder-steps", type=argtypes.positive_int, help="the embedder's training steps (default: the profile's)"
    )
    ap.add_argument(
        "--epochs",
        type=argtypes.positive_number,
        help="passes of the matcher over its training pairs (default: the profile's)",
    )
    ap.add_argument(
        "--pairs",
        type=_pairs,
        help="summary-story pairs, at least 20, or 'all' for every usable one (default: the profile's)",
    )
    ap.add_argument("--probe", action="store_true", help="also fit the bilinear probe")
    ap.add_argument(
        "--setting",
        choices=("stories", "wikipedia"),
        default="stories",
        help="the pairs: the profile's stories, or Wikipedia leads (the book's own setting)",
    )
    ap.add_argument(
        "--init", choices=("default", "query"), help="the matcher's initialisation (default: the profile's)"
    )
    ap.add_argument("--whiten", choices=("yes", "no"), help="whiten the embeddings (default: the profile's)")
    ap.add_argument("--schedule", choices=("linear", "constant"), help="after warm-up (default: the profile's)")
    ap.add_argument(
        "--geometry",
        action="store_true",
        help="also print the diagnosis: the embeddings' shared share and directions, and the query's "
        "share of a candidate row at initialisation",
    )
    ap.add_argument(
        "--store",
        type=argtypes.output_dir,
        help="the folder for the runs and embeddings (default: a new temporary folder)",
    )
    args = ap.parse_args(argv)
    root = Path(args.store or tempfile.mkdtemp(prefix="retrieval-reach-")).resolve()
    os.environ["LMC_CACHE_DIR"] = str(root / "cache")  # before the package reads it

    from lmcompanion import experiments, learning
    from lmcompanion.data import retrieval as rdata
    from lmcompanion.data.stories import load_stories
    from lmcompanion.experiments import matching
    from lmcompanion.experiments import retrieval as R
    from lmcompanion.train import RunStore
    from lmcompanion.train.trainer import train

    if args.arm not in R.ARMS:
        ap.error(f"{args.arm!r} is no retrieval matcher; known: {', '.join(R.ARMS)}")
    cfg = dataclasses.replace(experiments.config(args.arm, args.profile, device="cpu"), seed=args.seed)
    planned = matching.embedder_run_config

    def embedder(c):
        e = planned(c)
        if args.embedder_steps is None:
            return e
        steps = args.embedder_steps
        return dataclasses.replace(
            e, train=dataclasses.replace(e.train, max_steps=steps, eval_interval=max(1, steps // 4))
        )

    matching.embedder_run_config = embedder  # this process only: the procedure names its embedder's run with it
    if args.setting == "wikipedia":  # the Wikipedia leads, embedded by the arm's embedder at this profile
        cfg = dataclasses.replace(
            cfg, data=dataclasses.replace(cfg.data, queries="lead", corpus="wikipedia", n_pairs=R.WIKI_PAIRS)
        )
    if args.init is not None:
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, init=args.init))
    if args.whiten is not None:
        cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, whiten=args.whiten == "yes"))
    if args.pairs is not None:
        if args.pairs == "all" and cfg.data.queries == "instruct":
            ap.error("--pairs all counts the pairs of the extractive rule; give a count for this profile")
        if args.pairs != "all":
            usable = args.pairs
        elif cfg.data.queries == "lead":
            usable = len(rdata.lead_pairs(10**9))
        else:
            stories = load_stories(planned(cfg).data)["train"]
            usable = len(rdata.extractive_pairs(stories, len(stories)))
        cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, n_pairs=usable))
        need = cfg.model.context_size  # stories a split needs for an item's candidates (rdata.MatchingSet)
        n_test = lambda n: max(1, round(cfg.data.test_fraction * n))  # noqa: E731  (as rdata.pairs splits)
        if n_test(usable) < need:  # before anything is trained
            least = next(n for n in itertools.count(usable) if n_test(n) >= need)
            ap.error(
                f"--pairs {usable}: its test split is too small for the {need - 1} candidates of {args.arm}; "
                f"give at least {least}"
            )
    n_train = cfg.data.sequences_per_epoch(cfg.model)
    s = R.scale(args.profile)  # the profile's matcher protocol, over the pairs and epochs asked for
    s = dataclasses.replace(s, epochs=args.epochs or s.epochs, schedule=args.schedule or s.schedule)
    cfg = dataclasses.replace(cfg, train=R.train_config(s, n_train))
    steps = cfg.train.max_steps
    store = RunStore(root / "runs")
    t0 = time.perf_counter()
    erun = store.run(embedder(cfg), progress=False) if cfg.data.embedding == "trained" else None
    t1 = time.perf_counter()
    source = R.matching_source(cfg, store)
    folder = root / "matchers" / f"{args.arm.replace('/', '_')}-s{args.seed}-{t1:.0f}"
    folder.mkdir(parents=True)
    train(cfg, folder, source=source, progress=False)
    t2 = time.perf_counter()
    k = cfg.model.context_size - 1
    protocol = (
        f"init {cfg.model.init}, {'whitened' if cfg.data.whiten else 'raw'} embeddings, {cfg.train.schedule} "
        f"learning rate {cfg.train.lr:g}, batch {cfg.train.batch_size}"
    )
    print(
        f"{args.arm} at {args.profile} ({args.setting}; {protocol}), seed {args.seed}: "
        f"{len(source.sets['train']):,} training pairs, "
        f"{len(source.sets['test']):,} test pairs, {k} candidates (chance: loss ln {k} = {math.log(k):.3f}, "
        f"top-1 {1 / k:.3f})"
    )
    if erun is not None:
        e = erun.config
        final = erun.summary["final"]
        line = learning.arm(e.name, [erun], "val")
        print(
            f"  embedder {e.name}: {e.train.max_steps:,} steps, final train {final['train']:.3f}, "
            f"validation {final['val']:.3f}, {line.distances[0]:.2f} nats below {line.reference} "
            f"({line.level:.3f}); {t1 - t0:.0f} s"
        )
    evals = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    last = [r for r in evals if "eval/test" in r][-1]
    print(
        f"  matcher: {steps:,} steps ({steps * cfg.train.batch_size / n_train:.1f} epochs); at its last evaluation "
        f"train {last['eval/train']:.3f} (top-1 {last['eval/train_acc']:.3f}), test {last['eval/test']:.3f} "
        f"(top-1 {last['eval/test_acc']:.3f} = {last['eval/test_acc'] * k:.2f} x chance); {t2 - t1:.0f} s"
    )
    if args.geometry:
        diagnose(cfg, store)
    if args.probe:
        emb, _ = R.embeddings(cfg, store)
        train_top1, test_top1, cosine = probe(emb, k, args.seed)
        print(
            f"  bilinear probe: top-1 {train_top1 * k:.2f} x chance on training pairs, {test_top1 * k:.2f} x chance "
            f"on test pairs; whitened cosine, fitted to nothing: {cosine * k:.2f} x chance on test pairs"
        )
    print(f"  runs and embeddings under {root}")
    return 0


def diagnose(cfg, store) -> None:
    """The chapter's diagnosis on this arm's embeddings (:mod:`lmcompanion.chapters.retrieval`): how much of a
    LayerNorm-ed query and story is the shared vector, in how many directions each varies, and the query's share of
    what varies in a candidate row's first token mixing, at the write-up's initialisation on raw embeddings and at
    the book's on whitened ones (a matcher initialised from the run's seed, the run's fixed test items)."""
    import torch

    from lmcompanion import models
    from lmcompanion.chapters import retrieval as C
    from lmcompanion.data import retrieval as rdata
    from lmcompanion.experiments import retrieval as R

    emb, _ = R.embeddings(cfg, store)
    for key in ("query", "target"):
        x = emb[f"{key}_train"]
        print(
            f"  {key} embeddings: shared share after LayerNorm {C.shared_share(x):.3f}, "
            f"{C.directions(x):.1f} directions of {x.size(1)}"
        )
    for init, whiten in (("default", False), ("default", True), ("query", False), ("query", True)):
        data = dataclasses.replace(cfg.data, whiten=whiten)
        src = rdata.RetrievalSource(emb, cfg.model.context_size, data, cfg.train, cfg.seed)
        x = src.eval_inputs("test")
        torch.manual_seed(cfg.seed)
        share = C.query_share(models.build(dataclasses.replace(cfg.model, init=init)), x)
        print(
            f"  query's share of a candidate row's first token mixing, init {init}, "
            f"{'whitened' if whiten else 'raw'}: {share:.4f} (one row of {cfg.model.context_size}: "
            f"{1 / cfg.model.context_size:.4f})"
        )


def probe(emb: dict, k: int, seed: int, rank: int = 64, steps: int = 600) -> tuple[float, float, float]:
    """Top-1 accuracies among ``k`` candidates (the true story and ``k - 1`` others of the same split, drawn afresh
    for each query, 20 times over): of a bilinear score (A q) . (B t) fitted to the training pairs with every
    training story a candidate of every query (full batch, AdamW, standardised embeddings), on training pairs and
    on test pairs; and of the cosine of embeddings whitened with the training pairs' covariance (fitted to no
    match), on test pairs."""
    import torch

    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    both = torch.cat([emb["query_train"], emb["target_train"]]).double()
    mu, sd = both.mean(0), both.std(0) + 1e-6
    q, t, qt, tt = ((emb[n].double() - mu) / sd for n in ("query_train", "target_train", "query_test", "target_test"))
    a = torch.nn.Linear(q.size(1), rank, dtype=torch.float64)
    b = torch.nn.Linear(q.size(1), rank, dtype=torch.float64)
    opt = torch.optim.AdamW([*a.parameters(), *b.parameters()], lr=1e-3, weight_decay=0.1)
    labels = torch.arange(len(q))
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(a(q) @ b(t).T, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def top1(scores: torch.Tensor, reps: int = 20) -> float:
        n, hits = len(scores), 0
        for _ in range(reps):
            for i in range(n):
                others = torch.randperm(n, generator=g)
                others = others[others != i][: k - 1]
                hits += int(torch.cat([scores[i, i : i + 1], scores[i, others]]).argmax() == 0)
        return hits / (reps * n)

    n_test = len(qt)
    with torch.no_grad():
        fitted_train = top1(a(q[:n_test]) @ b(t[:n_test]).T)
        fitted_test = top1(a(qt) @ b(tt).T)
    white = torch.linalg.cholesky(
        torch.linalg.inv(torch.cov(torch.cat([q, t]).T) + 1e-3 * torch.eye(q.size(1), dtype=q.dtype))
    )
    unit = torch.nn.functional.normalize
    return fitted_train, fitted_test, top1(unit(qt @ white, dim=1) @ unit(tt @ white, dim=1).T)


if __name__ == "__main__":
    sys.exit(main())
