"""Command line: ``python -m lmcompanion <command>``.

list [--chapter CH]                         the named experiments
params NAME | --all [--profile P]           parameter counts, as the write-ups count them
train NAME [--profile P] [--seed S] [--device D] [--set key=value ...] [--force]
                                            train (or reuse) one run; also under torchrun
run-notebook SRC [-o OUT] [--profile P] [-p NAME VALUE ...]
                                            execute a notebook source with papermill
runs                                        the finished runs in the store (and damaged ones)
retrain RUN_FOLDER                          train a run folder's config again (e.g. after damage)
train-chapter CHAPTER... [--profile P] [--seeds N] [--jobs J] [--threads T] [--budget-s S] [--record] [--plan]
                                            train the runs chapters' notebooks read (their plan; `all`: the whole
                                            book's), run by run or J processes at a time with T threads each
                                            (finished ones are reused), recording each as it finishes; stops
                                            starting runs after S s; --plan prints the runs and their estimate
record RUN_FOLDER... [-o DIR]               write finished runs as recorded-run files (no weights)
import-recorded [DIR]                       import recorded-run files into the run store
export-retrieval RUN... [--profile P] [--seed S] [-o DIR]
                                            write retrieval runs (folders or experiment names) as .npz: embeddings,
                                            test items, texts and our numbers, to re-derive them independently
pages NOTEBOOKS OUT [--sources DIR]         generate the scorecard and build-record pages
bench NAME [--profile P] [--device D] [--steps N] [--bare] [--set key=value ...]
                                            tokens/s, MFU and peak memory of a training step
bench-cpu [CHAPTER...] [--against REV] [--profile P] [--rounds N]
                                            per chapter's representative run: tokens/s, GFLOP/s against the
                                            measured peak, where a step's time goes; REV's code side by side
campaign [--profile gpu] [--budget-min 8] [--lanes N] [--plan] [-o DIR] [--max-minutes M] [--archive FILE]
         [--pack DIR] [--from-pack DIR]     the next GPU slot: the CUDA-path check of its families, the GPT-2-small
                                            bench, and the runs that decide headline claims, recorded as they finish
campaign --restore ARCHIVE [--commit]       a slot's archive checked, restored into book/recorded and committed
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import (
    __version__,
    argtypes,
    campaign,
    contents,
    experiments,
    models,
    pages,
    paths,
    recorded,
    resources,
    signals,
    train,
)
from . import untrusted
from .argtypes import (
    device,
    existing_dir,
    existing_file,
    existing_path,
    minutes,
    nonnegative_int,
    output_dir,
    output_file,
    override,
    positive_int,
    profile,
    seconds,
    seed,
)
from .bench import REVISION_NEEDS, bench, cpu_book
from .chapters import retrieval as retrieval_chapter
from .config import PROFILES, parse_overrides, parse_value
from .errors import ConfigError, LMCError
from .experiments.pool import train_all
from .runner import TIMEOUT_ENV, run_notebook
from .train.trainer import CKPT


def _progress(args) -> bool | None:
    """--no-progress wins; otherwise LMC_PROGRESS decides (the trainer reads it)."""
    return False if args.no_progress else None


def _cmd_list(args) -> None:
    rows = [(n, experiments.get(n).title) for n in experiments.names(args.chapter)]
    width = max((len(n) for n, _ in rows), default=10)
    for name, title in rows:
        print(f"{name:<{width}}  {title}")


def _cmd_params(args) -> None:
    if not args.all and not args.name:
        raise LMCError("give an experiment name, or --all")
    names = experiments.names() if args.all else [args.name]
    width = max(len(n) for n in names)
    for name in names:
        exp = experiments.get(name)
        count = models.num_params(experiments.config(name, args.profile, device="cpu").model)
        line = f"{name:<{width}}  {count:>12,}"
        published = exp.published.get("params")
        if published is not None and args.profile == "paper":
            line += f"   write-up: {published:,} ({'matches' if published == count else 'DIFFERS'})"
        print(line)


def _planned(args, seed: int | None = None) -> experiments.PlannedRun:
    """The run of ``args.name`` as the plan builds it (its procedure, its settings, the runs it reads)."""
    return experiments.planned(
        args.name,
        args.profile,
        args.seed if seed is None else seed,
        device=args.device,
        overrides=parse_overrides(getattr(args, "set", None)),
    )


def _cmd_train(args) -> None:
    run = _planned(args).train(force=args.force, progress=_progress(args))
    if int(os.environ.get("RANK", "0")) == 0:
        s = run.summary
        print(f"{run.path}")
        print(json.dumps({k: s.get(k) for k in ("final", "best", "params", "tokens_per_s", "train_time_s")}, indent=1))


def _cmd_run_notebook(args) -> None:
    params = {name: parse_value(value) for name, value in (args.param or [])}
    out = run_notebook(args.src, args.output, profile=args.profile, params=params)
    print(out)


def _cmd_runs(args) -> None:
    store = train.RunStore()
    for run in store.runs():
        s = run.summary
        print(f"{run.path.name}  val={s['final'].get('val', float('nan')):.4f}  {s['train_time_s']:.0f}s")
    damaged = store.damaged()
    for run, problem in damaged:
        print(f"DAMAGED {run.path.name}: {problem}; repair: python -m lmcompanion retrain {run.path}")
    if not store.runs() and not damaged:
        print(f"no finished runs in {store.root}")


def _run_folder(folder: str) -> train.Run:
    """A run folder named on the command line (maybe copied from someone else): a folder, whose config, summary,
    provenance and procedure files are read through :mod:`lmcompanion.untrusted` (bounded, strict JSON, their
    schemas) and whose procedure, if any, is one this package registers (``retrain`` imports it by name)."""
    path = Path(folder)
    if not path.exists():
        raise LMCError(f"{path} does not exist: name a run folder (python -m lmcompanion runs lists them)")
    if not path.is_dir():
        raise LMCError(f"{path} is a file, not a run folder: name the folder that holds its config.json")
    recorded.config_from(
        untrusted.read_json(path / "config.json", untrusted.RUN_CONFIG),
        path / "config.json",
        "correct it in that file and run the same command again",
    )
    for name in ("summary.json", "env.json"):
        if (path / name).exists():
            untrusted.read_json(path / name, untrusted.RUN_JSON)
    if (path / "procedure.json").exists():
        proc = untrusted.read_json(path / "procedure.json", untrusted.RUN_PROCEDURE)["procedure"]
        known = {f"{p.fn.__module__}.{p.fn.__qualname__}" for p in experiments.PROCEDURES.values() if p.fn}
        if proc not in known:
            raise untrusted.RUN_PROCEDURE.error(
                path / "procedure.json",
                f"its procedure {proc[:120]!r} is not one this book registers ({', '.join(sorted(known))})",
            )
    return train.Run(path)


def _cmd_retrain(args) -> None:
    folder = _run_folder(args.folder).path
    try:
        run = train.store.retrain(folder, progress=_progress(args))
    except KeyboardInterrupt:
        signals.note_run(_retrain_target(folder), CKPT)
        raise
    print(run.path)


def _retrain_target(folder: Path) -> Path:
    """The folder ``retrain`` trains in: the run's key names it (its own folder, unless it was renamed or copied)."""
    run = train.Run(folder)
    procedure, settings = None, None
    if run.procedure is not None:
        fn = next(
            p.fn
            for p in experiments.PROCEDURES.values()
            if p.fn and f"{p.fn.__module__}.{p.fn.__qualname__}" == run.procedure["procedure"]
        )
        settings_cls = getattr(fn, "settings_class", None)
        procedure = fn
        settings = settings_cls(**run.procedure["settings"]) if settings_cls else run.procedure["settings"]
    return train.RunStore(folder.parent).path(run.config, procedure, settings)


def _chapter_plan(args) -> list:
    """The runs of the chapters named on the command line (``all``: every chapter's), each once, seed by seed."""
    chapters = experiments.chapters() if args.chapter == ["all"] else args.chapter
    runs: dict = {}
    for chapter in chapters:
        for run in experiments.plan(chapter, args.profile, seeds=args.seeds, device=args.device):
            runs.setdefault(run.id, run)
    return list(runs.values())


def _report(i: int, n: int, planned, done, record: bool, output) -> None:
    final = done.summary["final"]
    held_out = "val" if "val" in final else next(iter(final), "val")
    print(
        f"[{i}/{n}] {planned.id}: {held_out} {final.get(held_out, float('nan')):.4f} in "
        f"{done.summary['train_time_s']:.0f} s  ({done.path.name})",
        flush=True,
    )
    if record:
        for path in recorded.write([done], output or recorded.default_dir()):
            print(f"    recorded {path}", flush=True)


def _cmd_train_chapter(args) -> None:
    started = time.monotonic()
    todo = _chapter_plan(args)
    if args.plan:
        for run in todo:
            print(f"{run.id}  {run.minutes():8.2f} min")
        print(f"total {experiments.minutes_total(todo):.1f} min (estimated on one H100, {len(todo)} runs)")
        return
    store = train.RunStore()
    if args.jobs > 1:
        _train_chapter_pool(args, todo, store, started)
        return
    for i, planned in enumerate(todo):
        done = planned.get(store)
        if done is None:
            elapsed = time.monotonic() - started
            if args.budget_s is not None and elapsed > args.budget_s:
                print(
                    f"budget of {args.budget_s:.0f} s reached after {elapsed:.0f} s: {len(todo) - i} runs left; "
                    "run the same command again to continue",
                    flush=True,
                )
                return
            done = planned.train(store, progress=_progress(args))
        _report(i + 1, len(todo), planned, done, args.record, args.output)


def _train_chapter_pool(args, todo: list, store, started: float) -> None:
    """--jobs J: J processes at a time (:func:`lmcompanion.experiments.pool.train_all`), reported as each ends."""
    print(
        f"{len(todo)} runs planned; those not in the store are trained {args.jobs} at a time, with "
        f"{args.threads} thread(s) each",
        flush=True,
    )
    count = [0]

    def done(outcome) -> None:
        count[0] += 1
        if outcome.error is not None:
            print(f"[{count[0]}/{len(todo)}] {outcome.run.id}: FAILED: {outcome.error}", flush=True)
        else:
            _report(count[0], len(todo), outcome.run, train.Run(outcome.path), args.record, args.output)

    outcomes = train_all(
        todo, args.jobs, threads=args.threads, store=store, progress=False, budget_s=args.budget_s, on_done=done
    )
    trained = [o for o in outcomes if o.error is None and not o.reused]
    print(
        f"trained {len(trained)} runs in {time.monotonic() - started:.0f} s "
        f"({sum(o.seconds for o in trained):.0f} s of training over {args.jobs} processes)",
        flush=True,
    )
    if len(outcomes) < len(todo):
        print(
            f"budget of {args.budget_s:.0f} s reached: {len(todo) - len(outcomes)} runs left; run the same command "
            "again to continue",
            flush=True,
        )
    failed = [o for o in outcomes if o.error is not None]
    if failed:
        first = "; ".join(f"{o.run.id}: {o.error}" for o in failed[:5])
        raise SystemExit(f"{len(failed)} of {len(todo)} runs failed: {first}")


def _cmd_record(args) -> None:
    for path in recorded.write([_run_folder(f) for f in args.folders], args.output or recorded.default_dir()):
        print(path)


def _cmd_import_recorded(args) -> None:
    runs = recorded.import_dir(args.folder)
    print(f"{len(runs)} recorded runs in {train.RunStore().root}")


def _cmd_export_retrieval(args) -> None:
    for what in args.runs:
        if os.path.isdir(what):
            run = _run_folder(what).check()
            retrieval_chapter.check_exportable(run.config.name, what)
        else:
            retrieval_chapter.check_exportable(what, what)
            run = experiments.planned(what, args.profile, args.seed, device=args.device).train()  # reused or trained
        print(retrieval_chapter.export(run, os.path.join(args.output, run.path.name + ".npz")))


def _cmd_pages(args) -> None:
    found = sorted(Path(args.notebooks).rglob("*.ipynb"))
    if not found:
        raise LMCError(
            f"{args.notebooks} holds no executed notebooks (*.ipynb): name the folder run-notebook wrote "
            "them to (make book: notebooks)"
        )
    for path in found:  # executed elsewhere, maybe: each passes the untrusted layer before a page is written
        if not path.name.startswith(".") and ".ipynb_checkpoints" not in path.parts:
            untrusted.read_json(path, untrusted.EXECUTED_NOTEBOOK)
    stale = pages.write_pages(args.notebooks, args.out, args.sources, prefix=args.prefix)
    print(
        f"wrote {args.out}/scorecard.md and {args.out}/build.md"
        + (f"; pages with outputs older than their source: {', '.join(stale)}" if stale else "")
    )


def _cmd_contents(args) -> int:
    root = paths.repo_root()
    if root is None:
        raise LMCError("contents: run it in the repository (it rewrites _toc.yml, book/intro.md and README.md there)")
    found = contents.stale(root)
    if args.write:
        for rel in found:
            target = root / rel
            text = contents.expected(rel, target.read_text(encoding="utf-8"))
            paths.atomic_write(target, text)
        print(f"rewrote {', '.join(found)}" if found else "every file agrees with the chapters' declarations")
        return 0
    for rel in found:
        print(
            f"{rel} disagrees with the chapters' declarations (chapter.toml): "
            "`python -m lmcompanion contents --write` rewrites it"
        )
    return 1 if found else 0


def _cmd_bench(args) -> None:
    result = bench(_planned(args, seed=0), steps=args.steps, warmup=args.warmup, bare=args.bare, rounds=args.rounds)
    for key, value in result.items():
        print(
            f"{key:>18}: {value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{key:>18}: {value}"
        )


def _cmd_bench_cpu(args) -> None:
    import pandas as pd

    rows = cpu_book(
        args.chapters or None,
        profile=args.profile,
        against=args.against,
        steps=args.steps,
        warmup=args.warmup,
        rounds=args.rounds,
        evaluate=not args.no_eval,
        threads=args.threads or None,
        clock=args.clock,
    )
    first = rows[0]
    print(
        f"measured peak (torch.mm 1024^2 fp32, {first['threads']} thread(s), best of the rounds): "
        f"{first['peak GFLOP/s']} GFLOP/s; times by the {first['clock']} clock"
    )
    table = pd.DataFrame(rows).drop(columns=["peak GFLOP/s", "threads", "clock"]).set_index(["chapter", "run"])
    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(table.to_string())


def _cmd_campaign(args) -> int:
    started = time.monotonic()  # --max-minutes counts from here: the pack's check and the plan are in the slot's time
    out = Path(args.output or recorded.default_dir()).resolve()
    if args.restore:
        campaign.restore.restore(args.restore, out, commit=args.commit)
        return 0
    if args.archive and out in Path(args.archive).resolve().parents:
        raise LMCError(
            f"--archive {args.archive} is inside the output folder {out}: each archive would hold the one "
            "before; write it elsewhere (e.g. $OUT/slot.tgz)"
        )
    if args.from_pack and (out == Path(args.from_pack).resolve() or Path(args.from_pack).resolve() in out.parents):
        raise LMCError(
            f"the output folder {out} is inside the pack {args.from_pack}, which is read, not written: "
            "give -o another folder (e.g. _campaign)"
        )
    campaign.default_data_dir()
    if args.pack:
        campaign.make_pack(args.pack, args.profile, budget_min=args.budget_min, wheels=args.wheels, seeds=args.seeds)
        return 0
    manifest = None
    if args.from_pack:
        manifest = campaign.unpack(args.from_pack)
        print(f"run keys: {campaign.check_keys(manifest, args.profile, args.seeds)} agree with the pack's", flush=True)
    if args.plan:
        found = campaign.plan.plan(
            args.profile,
            device=args.device,
            seeds=args.seeds,
            out=out,
            budget_min=args.budget_min,
            retry_failed=args.retry_failed,
            lanes=args.lanes,
        )
        campaign.print_plan(found)
        return 0
    return campaign.run(
        args.profile,
        device=args.device,
        out=out,
        budget_min=args.budget_min,
        max_minutes=args.max_minutes,
        seeds=args.seeds,
        archive=args.archive,
        retry_failed=args.retry_failed,
        progress=_progress(args),
        pack=manifest,
        started=started,
        lanes=args.lanes,
    )


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m lmcompanion",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Every command that takes --profile defaults to cpu (run-notebook: the notebook's own default, "
        "cpu in every notebook of the book; campaign, which plans a GPU slot: gpu).",
    )
    p.add_argument("--version", action="version", version=f"lmcompanion {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    profiles = ", ".join(PROFILES)

    s = sub.add_parser("list", help="list the named experiments")
    s.add_argument("--chapter")
    s.set_defaults(fn=_cmd_list)

    s = sub.add_parser("params", help="parameter counts as the write-ups count them")
    s.add_argument("name", nargs="?")
    s.add_argument("--all", action="store_true")
    s.add_argument(
        "--profile",
        type=profile,
        default="cpu",
        help=f"one of {profiles} (default: cpu; at paper each count is also compared with the write-up's)",
    )
    s.set_defaults(fn=_cmd_params)

    s = sub.add_parser("train", help="train (or reuse) one run")
    s.add_argument("name")
    s.add_argument("--profile", type=profile, default="cpu", help=f"one of {profiles} (default: cpu)")
    s.add_argument("--seed", type=seed, default=0)
    s.add_argument("--device", type=device, default="auto", help="auto, cpu or cuda")
    s.add_argument(
        "--set", type=override, action="append", metavar="KEY=VALUE", help="override a config field, e.g. train.lr=1e-3"
    )
    s.add_argument("--force", action="store_true", help="retrain even if the run is in the store")
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(fn=_cmd_train)

    s = sub.add_parser("run-notebook", help="execute a notebook source with papermill")
    s.add_argument("src", type=existing_file, help="the notebook's source (a jupytext .py file)")
    s.add_argument(
        "-o",
        "--output",
        type=output_file,
        help="the executed .ipynb (or a folder for it; default: next to the source); never the source itself",
    )
    s.add_argument(
        "--profile", type=profile, help=f"one of {profiles} (default: the notebook's own, cpu in every notebook)"
    )
    s.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="a parameter of the notebook's parameters cell, of the type of its default there",
    )
    s.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="stop the notebook when any one cell runs longer than this (default: $LMC_CELL_TIMEOUT, else no limit)",
    )
    s.set_defaults(fn=_cmd_run_notebook)

    s = sub.add_parser("runs", help="list finished runs in the store")
    s.set_defaults(fn=_cmd_runs)

    s = sub.add_parser("retrain", help="train a run folder's config again (e.g. after its files were damaged)")
    s.add_argument("folder", type=existing_dir)
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(fn=_cmd_retrain)

    s = sub.add_parser("train-chapter", help="train a chapter's experiments run by run, recording each as it finishes")
    s.add_argument("chapter", nargs="+", help="one or more chapters, or `all` for every chapter of the book")
    s.add_argument(
        "--profile",
        type=profile,
        default="cpu",
        help=f"one of {profiles} (default: cpu; on a GPU machine give gpu or paper)",
    )
    s.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="train this many runs at a time, in as many worker processes (default 1: one by one, here)",
    )
    s.add_argument("--threads", type=positive_int, default=1, help="threads per process with --jobs (default 1)")
    s.add_argument("--device", type=device, default="auto", help="auto, cpu or cuda")
    s.add_argument("--seeds", type=positive_int, help="seeds per experiment (default: each experiment's as registered)")
    s.add_argument("--budget-s", type=seconds, help="start no new run after this many seconds")
    s.add_argument("--record", action="store_true", help="write each finished run to book/recorded (or -o)")
    s.add_argument(
        "--plan",
        action="store_true",
        help="print the id of every run it would train, with its estimated H100 minutes, and a total",
    )
    s.add_argument(
        "-o", "--output", type=output_dir, help="with --record: the folder of recorded runs (default: book/recorded)"
    )
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(fn=_cmd_train_chapter)

    s = sub.add_parser("record", help="write finished runs as recorded-run files (metrics and provenance, no weights)")
    s.add_argument("folders", nargs="+", type=existing_dir)
    s.add_argument("-o", "--output", type=output_dir, help="default: book/recorded")
    s.set_defaults(fn=_cmd_record)

    s = sub.add_parser("import-recorded", help="import recorded-run files into the run store")
    s.add_argument(
        "folder",
        nargs="?",
        type=existing_path,
        help="a folder of recorded runs (default: book/recorded), one recorded-run file, or a campaign archive (.tgz)",
    )
    s.set_defaults(fn=_cmd_import_recorded)

    s = sub.add_parser("export-retrieval", help="write retrieval runs' embeddings, test items and numbers as .npz")
    s.add_argument("runs", nargs="+", help="retrieval run folders, or retrieval/... experiment names")
    s.add_argument(
        "--profile", type=profile, default="cpu", help=f"for experiment names: one of {profiles} (default: cpu)"
    )
    s.add_argument("--seed", type=seed, default=0)
    s.add_argument("--device", type=device, default="auto", help="auto, cpu or cuda")
    s.add_argument("-o", "--output", type=output_dir, default=".")
    s.set_defaults(fn=_cmd_export_retrieval)

    s = sub.add_parser("pages", help="generate the scorecard and build-record pages from executed notebooks")
    s.add_argument("notebooks", type=existing_dir)
    s.add_argument("out", type=output_dir)
    s.add_argument(
        "--sources", type=existing_dir, help="the notebooks' sources, to mark pages whose outputs are older than them"
    )
    s.add_argument("--prefix", default="notebooks", help="the executed notebooks' folder as the book sees it")
    s.set_defaults(fn=_cmd_pages)

    s = sub.add_parser(
        "contents",
        help="check (or --write) _toc.yml and the intro's and README's chapter tables "
        "against the chapters' declarations (chapter.toml)",
    )
    s.add_argument("--write", action="store_true", help="rewrite the files that disagree")
    s.set_defaults(fn=_cmd_contents)

    s = sub.add_parser("bench", help="tokens/s, MFU and peak memory of an experiment's training step")
    s.add_argument("name")
    s.add_argument("--profile", type=profile, default="cpu", help=f"one of {profiles} (default: cpu)")
    s.add_argument("--device", type=device, default="auto", help="auto, cpu or cuda")
    s.add_argument("--steps", type=positive_int, default=10)
    s.add_argument("--warmup", type=nonnegative_int, default=3)
    s.add_argument("--bare", action="store_true", help="also time a bare loop on the same model and batches")
    s.add_argument("--rounds", type=positive_int, default=5, help="with --bare: interleaved rounds of --steps each")
    s.add_argument("--set", type=override, action="append", metavar="KEY=VALUE", help="override a config field")
    s.set_defaults(fn=_cmd_bench)

    s = sub.add_parser(
        "bench-cpu",
        help="each chapter's representative run on the CPU: tokens/s, GFLOP/s against "
        "the measured peak, time per phase; another revision side by side",
    )
    s.add_argument(
        "chapters", nargs="*", help="chapters or experiment names (default: every chapter, and the flat masked mixer)"
    )
    s.add_argument("--profile", type=profile, default="cpu", help=f"one of {profiles} (default: cpu)")
    s.add_argument(
        "--against",
        type=argtypes.revision(REVISION_NEEDS),
        metavar="REV",
        help="also time the code of this git revision, interleaved",
    )
    s.add_argument("--steps", type=positive_int, default=3, help="optimizer steps per arm per round")
    s.add_argument("--warmup", type=nonnegative_int, default=1)
    s.add_argument("--rounds", type=positive_int, default=4)
    s.add_argument(
        "--threads", type=nonnegative_int, default=1, help="torch threads (default 1, as the book's build; 0: torch's)"
    )
    s.add_argument("--no-eval", action="store_true", help="do not time an evaluation per round")
    s.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        help="cpu: this thread's CPU time (the default with one thread: a loaded machine's waits left out); wall",
    )
    s.set_defaults(fn=_cmd_bench_cpu)
    s = sub.add_parser(
        "campaign",
        help="the GPU campaign, one slot per command: the check, the GPT-2-small bench "
        "and the runs that decide headline claims, in priority order",
    )
    s.add_argument(
        "--profile", type=profile, default="gpu", help=f"one of {profiles} (default: gpu; smoke rehearses it on a CPU)"
    )
    s.add_argument("--device", type=device, default="auto", help="auto, cpu or cuda")
    s.add_argument(
        "--budget-min",
        type=minutes,
        default=campaign.DEFAULT_SLOT_MIN,
        help="estimated H100 minutes of one slot (default: %(default)g)",
    )
    s.add_argument("--seeds", type=positive_int, help="seeds per arm (default: the profile's, as registered)")
    s.add_argument(
        "--lanes",
        type=argtypes.lanes,
        help="runs trained side by side on the one device, each in a process of its own (default: the "
        "number the lane speed measured by an earlier slot favours; until measured, the assumed one)",
    )
    s.add_argument(
        "--plan",
        action="store_true",
        help="print the slots left, each step with its estimated H100 "
        "minutes (measured or counted) and the claims it decides, the "
        "lanes, and the loans of a GPU machine it takes",
    )
    s.add_argument(
        "-o",
        "--output",
        type=output_dir,
        help="recorded runs and the campaign's reports (default: book/recorded; each slot starts from it)",
    )
    s.add_argument(
        "--max-minutes",
        type=argtypes.command_minutes,
        help="stop this command after so many minutes from its start (the run in flight is lost and run "
        f"again by the next slot; exit {campaign.MORE_TO_DO})",
    )
    s.add_argument(
        "--archive", type=output_file, help="rewrite a .tar.gz of the files the slot made or changed after every step"
    )
    s.add_argument(
        "--restore",
        type=existing_file,
        metavar="ARCHIVE",
        help="check a slot's archive (from --archive), restore it into the output folder, and say how to "
        "commit it (--commit: commit it, naming the slot and the device)",
    )
    s.add_argument("--commit", action="store_true", help="with --restore: commit the restored files")
    s.add_argument("--retry-failed", action="store_true", help="try the steps that failed before again")
    s.add_argument(
        "--pack",
        type=output_dir,
        metavar="DIR",
        help="write what a GPU machine without network needs (wheels, corpus "
        "files, token caches, a manifest) to DIR, and nothing else",
    )
    s.add_argument(
        "--wheels",
        type=existing_dir,
        help="with --pack: the Python 3.12 wheels (default: ../shared/wheels/py312-x86_64)",
    )
    s.add_argument(
        "--from-pack",
        type=existing_dir,
        metavar="DIR",
        help="verify the pack in DIR and read the corpora from it (offline)",
    )
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(fn=_cmd_campaign)
    return p


class _UsageError(Exception):
    """A command line argparse refuses (an unknown option, a value its type refuses)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage and exit; main prints one line and returns 2
        raise _UsageError(f"{message} (see {self.prog} --help)")


def report(fn, command: str = "the command") -> int:
    """Run ``fn()`` as a command: the package's errors become a message and exit 2; a resource error (a full disk, a
    read-only folder, no memory left) a message naming the fix, exit 2; a signal (Ctrl-C, SIGTERM, SIGHUP) the one
    message of :func:`lmcompanion.signals.message` (what was stopped, what was kept) and exit 128 + the signal."""
    try:
        with signals.unswallowed():  # an error a library raised in place of our signal is the signal
            code = fn()
    except LMCError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Terminated (SIGTERM, SIGHUP) too
        signals.stopping()
        print(signals.message(exc), file=sys.stderr)
        return signals.exit_code(exc)
    except (OSError, MemoryError, RuntimeError) as exc:
        text = resources.explain(exc, command)
        if text is None:
            raise
        print(f"error: {text}", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0


def _outputs(args) -> list[Path]:
    """The folders this command writes into besides the run store and the cache (an -o folder, a pack, an archive's
    folder, book/recorded)."""
    out = []
    for name in ("output", "out", "pack", "archive"):
        value = getattr(args, name, None)
        if value:
            path = Path(value)
            out.append(path if path.is_dir() or name in ("out", "pack") else path.parent)
    if args.command in ("record", "import-recorded", "campaign") or getattr(args, "record", False):
        out.append(recorded.default_dir())
    return [p for p in out if p.is_dir()]


def main(argv=None) -> int:
    """The command line: every command parses its arguments with :mod:`lmcompanion.argtypes`, runs under the one
    signal policy (:func:`lmcompanion.signals.policy`), with relative ``LMC_*`` paths made absolute where it started
    and the temporary files of killed processes swept (:mod:`lmcompanion.resources`)."""
    try:
        args = parser().parse_args(argv)
    except _UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        argtypes.environment()  # the LMC_* variables are arguments too, checked before anything runs
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    os.environ.setdefault(
        "LMC_COMMAND", " ".join(["python -m lmcompanion", *(argv if argv is not None else sys.argv[1:])])
    )
    resources.absolute_env()
    for folder in dict.fromkeys((paths.runs_dir(), paths.cache_dir(), paths.flops_dir(), *_outputs(args))):
        resources.sweep(folder)  # temporary files of writers that were killed
    resources.sweep_temporary()
    timeout_before = os.environ.get(TIMEOUT_ENV)
    if getattr(args, "timeout", None) is not None:  # run-notebook --timeout: the runner's per-cell limit
        os.environ[TIMEOUT_ENV] = str(args.timeout)
    try:
        with signals.policy():
            return report(lambda: args.fn(args), args.command)
    finally:
        if timeout_before is None:
            os.environ.pop(TIMEOUT_ENV, None)
        else:
            os.environ[TIMEOUT_ENV] = timeout_before
