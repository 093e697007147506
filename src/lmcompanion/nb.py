"""Helpers for the book's notebooks.

A chapter notebook starts with a ``parameters`` cell of literals (``profile``, ``device``, ``seed``,
``n_seeds``, ``max_steps``, ``overrides``) and turns them into validated settings with one call::

    S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
    runs = S.runs("ar_ed/baseline")          # one finished run per seed, trained or reused from the store

Everything a notebook shows comes from those runs (metrics, summaries, weights) through ``plots`` and ``tables``.
A chapter's verdict notebook shows its rows with :func:`show_verdicts` (which also hands them to the generated
scorecard), the recorded runs of other profiles with :func:`recorded_arms`, how far its profile is from the write-up
with :func:`scale_table`; every notebook ends with :func:`provenance`.

What a reader meets on a page is generated here for every chapter alike: a verdict table is :func:`verdict_table`
(the generated pages' badge and cell, its rows' numbers and deciding runs folded), long parts fold with
:func:`fold`, an illustration page opens with :func:`this_page` (its arms, seeds, steps, and which have not
learned), shows the rows that rest on its comparisons with :func:`page_verdicts`, and a figure's caption pastes its
seed count from :func:`caption`.
"""

from __future__ import annotations

import dataclasses
import json
import string
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from . import chapters  # noqa: F401  (registers every chapter's claim rows: lmcompanion.claims)
from . import (
    argtypes,
    bench,
    claims,
    env,
    experiments,
    learning,
    models,
    pages,
    paths,
    plots,
    recorded,
    stats,
    tables,
    train,
    verdicts,
)
from .chapters.scale import write_up_passes_text as write_up_passes
from .config import check_profile, flat_keys
from .data import corpora, load_tokens, tokenizer, unigram_loss
from .data import kinds as data_kinds
from .errors import ConfigError
from .experiments.labels import arm_label, passes, published  # noqa: F401  (the notebooks read them here)
from .run import RunConfig

DEFAULT_SEEDS = experiments.DEFAULT_SEEDS  # seeds per arm at each profile (see lmcompanion.experiments.plan)


@dataclass(frozen=True)
class Settings:
    profile: str
    device: str
    seeds: tuple[int, ...]  # the profile's seeds (an experiment registered to run its first seed only runs seeds[0])
    overrides: Mapping[str, object] = field(default_factory=dict)
    explicit: bool = False  # seeds given by the notebook's n_seeds: every arm runs all of them
    started: float = field(default_factory=time.time)  # when the notebook called setup (for its execution time)
    used: dict = field(default_factory=dict, compare=False)  # run folder -> run, every run this notebook read
    said: list = field(default_factory=list, compare=False)  # the notes this page has shown (Settings.arms)
    decided: dict = field(default_factory=dict, compare=False)  # profile -> the rows this page decided there

    def config(self, name: str, seed: int | None = None) -> RunConfig:
        seed = self.seeds[0] if seed is None else seed
        return experiments.config(name, self.profile, seed=seed, device=self.device, overrides=self.overrides)

    def plan(
        self, names: Sequence[str], protocol: experiments.Protocol = experiments.Protocol.OWN
    ) -> list[experiments.PlannedRun]:
        """The runs of ``names`` at this notebook's settings (:func:`lmcompanion.experiments.plan`) and at
        ``protocol`` (each one's own, as registered, or the illustrations'): the seeds each experiment runs with there
        (or the notebook's n_seeds), the runs they read first; experiments that do not run at this profile are left
        out."""
        return experiments.plan(
            list(names),
            self.profile,
            seeds=self.seeds if self.explicit else None,
            device=self.device,
            overrides=self.overrides,
            first_seed=self.seeds[0],
            protocol=protocol,
        )

    def _train(self, planned: experiments.PlannedRun) -> train.Run:
        """Train or reuse a planned run; it and the runs it read count in this page's provenance."""
        r = planned.train()
        for need in planned.needs:
            if (done := need.get()) is not None:
                self.used[str(done.path)] = done
        self.used[str(r.path)] = r
        return r

    def run(self, name: str, seed: int | None = None, settings=None) -> train.Run:
        """The finished run of experiment ``name`` for one seed (trained now, or reused from the store)."""
        seed = self.seeds[0] if seed is None else seed
        return self._train(
            experiments.planned(
                name, self.profile, seed, device=self.device, overrides=self.overrides, settings=settings
            )
        )

    def planned(self, name: str, seed: int | None = None) -> experiments.PlannedRun:
        """The planned run of experiment ``name`` for one seed (default: the first) at this notebook's settings,
        untrained: what ``bench.side_by_side`` times."""
        seed = self.seeds[0] if seed is None else seed
        return experiments.planned(name, self.profile, seed, device=self.device, overrides=self.overrides)

    def use(self, run: train.Run) -> train.Run:
        """Count a run read another way in this page's provenance."""
        self.used[str(run.path)] = run
        return run

    def seeds_of(self, name: str) -> tuple[int, ...]:
        """The seeds experiment ``name`` runs with here: as registered (from this notebook's first seed), or the
        notebook's n_seeds; none where it does not run at this profile."""
        seeds = experiments.seeds_of(name, self.profile, self.seeds if self.explicit else None)
        return seeds if self.explicit else tuple(s + self.seeds[0] for s in seeds)

    def runs(self, name: str, settings=None) -> list[train.Run]:
        """One finished run per planned seed of experiment ``name`` (none where it does not run at this profile);
        ``settings`` replaces its procedure's settings (e.g. the notebook's own ED-Training settings)."""
        return [self.run(name, s, settings) for s in self.seeds_of(name)]

    def arms(self, names: Sequence[str], by: str = "title") -> dict[str, list[train.Run]]:
        """Each experiment's planned runs as a page that shows them together reads them, in the order given, keyed by
        the write-up's label (``by="title"``, for tables and figures) or by the experiment's name (``by="name"``, for
        the chapters' analyses); experiments that do not run at this profile are left out.

        The page reads them at :func:`lmcompanion.experiments.page_protocol`: every arm at the illustrations'
        protocol when one of them illustrates and its chapter's illustrations take fewer steps (a headline arm is
        then read at their steps and seed, so the page never puts runs of different lengths side by side), else each
        at its own. The first call of a page that reads at the illustrations' protocol shows a note that says so
        (:func:`illustrations_note`), so a page's first such call must not be in a figure's cell (a second output
        there would give the figure's name twice)."""
        _check_by(by)
        protocol = experiments.page_protocol(names, self.profile)
        ordered = self.arms_at(names, protocol, by="name")
        if protocol is experiments.Protocol.ILLUSTRATIONS and not self.said:  # once a page, under its first table
            self.said.append(illustrations_note(self.profile, list(ordered), ordered))
            _say(self.said[-1])
        return {arm_label(n, self.profile) if by == "title" else n: rs for n, rs in ordered.items()}

    def arms_at(
        self, names: Sequence[str], protocol: experiments.Protocol, by: str = "title"
    ) -> dict[str, list[train.Run]]:
        """Each experiment's planned runs at ``protocol`` (each one's own, or the illustrations'), keyed as in
        :meth:`arms`; no note."""
        _check_by(by)
        if not isinstance(protocol, experiments.Protocol):
            raise ConfigError(
                f"a protocol is one of {', '.join(str(p) for p in experiments.Protocol)}, got {protocol!r}"
            )
        out: dict[str, list[train.Run]] = {}
        # seed by seed, as train-chapter trains them
        for planned in self.plan(names, protocol):
            if planned.name in names:
                out.setdefault(planned.name, []).append(self._train(planned))
        ordered = {n: sorted(out[n], key=lambda r: r.seed) for n in names if n in out}
        return {arm_label(n, self.profile) if by == "title" else n: rs for n, rs in ordered.items()}

    def seed_table(self, names: Sequence[str]):
        """Which seeds each experiment of ``names`` runs with at this profile (and where it does not run)."""
        import pandas as pd

        rows = [
            {"experiment": name, "seeds": ", ".join(map(str, self.seeds_of(name))) or f"not run at {self.profile}"}
            for name in names
        ]
        return pd.DataFrame(rows).set_index("experiment")

    def describe(self) -> str:
        seeds = ", ".join(map(str, self.seeds))
        extra = f"; overrides {dict(self.overrides)}" if self.overrides else ""
        return f"profile {self.profile!r} on {self.device}, seeds {seeds}{extra}"


def _check_by(by: str) -> None:
    if by not in ("title", "name"):
        raise ConfigError(f"arms(by=...) takes 'title' or 'name', got {by!r}")


def illustrations_note(profile: str, names: Sequence[str], runs: Mapping[str, Sequence[train.Run]]) -> str:
    """What a page that shows a headline arm beside illustrating ones says about its runs: they are all read at the
    illustrations' protocol, with their steps and seeds (from the runs), and where the headline runs are shown."""
    steps = sorted({r.summary["steps"] for rs in runs.values() for r in rs})
    seeds = sorted({len(rs) for rs in runs.values()})
    heads = [f"“{experiments.get(n).title}”" for n in names if not experiments.arm(n, profile).illustrates]
    text = (
        f"**The illustrations' protocol.** At `{profile}` the arms of this page that decide no headline "
        f"comparison illustrate, and every run read here has their protocol: {' or '.join(map(str, seeds))} "
        f"seed{'s' if seeds != [1] else ''} and {' or '.join(map(str, steps))} steps"
    )
    if heads:
        listed = heads[0] if len(heads) == 1 else ", ".join(heads[:-1]) + " and " + heads[-1]
        text += (
            f". {listed} {'is a headline arm' if len(heads) == 1 else 'are headline arms'}, read here at that "
            "protocol too (from a run trained for it), so that runs of different lengths are not compared; "
            f"{'its' if len(heads) == 1 else 'their'} own runs, with more seeds and steps, decide the headline on "
            "the chapter's verdict page"
        )
    return text + "."


def _say(markdown: str) -> None:
    """Show a sentence in a notebook's output (nothing outside a kernel)."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - IPython comes with the notebook stack
        return
    if get_ipython() is not None:
        display(Markdown(markdown))


def setup(
    profile: str = "cpu",
    device: str = "auto",
    seed: int = 0,
    n_seeds: int | None = None,
    max_steps: int | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Settings:
    """Validate a notebook's parameters; set the book's plot and table style."""
    import pandas as pd

    check_profile(profile)
    argtypes.environment()  # the LMC_* variables, also when a notebook is executed without the command line
    n = DEFAULT_SEEDS[profile] if n_seeds is None else n_seeds
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ConfigError(f"n_seeds must be a positive integer, got {n_seeds!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    merged = dict(overrides or {})
    if max_steps is not None:
        merged["train.max_steps"] = max_steps
    settings = Settings(
        profile,
        experiments.resolve_device(device, profile),
        tuple(range(seed, seed + n)),
        merged,
        explicit=n_seeds is not None,
    )
    if device == "auto" and profile in ("gpu", "paper") and settings.device == "cpu":
        raise ConfigError(
            f"the {profile!r} profile is sized for a GPU and no CUDA GPU is visible: run it where one is, "
            "use profile='cpu' on this machine, or pass device='cpu' to run it on the CPU anyway "
            "(hours to days per chapter)"
        )
    plots.style()
    pd.set_option("display.precision", 4)
    pd.set_option("display.max_colwidth", None)  # claims, settings and generations are shown whole
    pd.set_option("display.max_rows", 500)  # a chapter's settings table has dozens of rows: all of them
    _install_table_formatter()
    return settings


def _install_table_formatter() -> None:
    """In a notebook's kernel, DataFrames render through :func:`lmcompanion.tables.html` (one header row)."""
    import pandas as pd

    try:
        from IPython import get_ipython
    except ModuleNotFoundError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, tables.html)


def shows(sentence: str):
    """The sentence a results page ends with: what it shows, its numbers computed from its runs."""
    from IPython.display import Markdown

    return Markdown(f"**What this page shows.** {sentence}")


def unigram(
    groups: Mapping[str, Sequence[train.Run]], splits: Sequence[str] = ("train", "val")
) -> tuple[str, dict[str, float]]:
    """("unigram loss", {split: its value}) on the first run's data, for a loss plot's dashed reference line (each
    panel its split's): what token frequencies alone give (:func:`lmcompanion.data.unigram_loss`)."""
    cfg = next(rs[0] for rs in groups.values() if rs).config
    return "unigram loss", {s: unigram_loss(cfg, s) for s in splits}


def config_diff(names: Sequence[str], profile: str):
    """Every setting in which ``profile`` differs from the paper profile: one row per (setting, paper value,
    profile value), with the experiments it applies to."""
    import pandas as pd

    rows: dict[tuple, list[str]] = {}
    for name in names:
        paper = experiments.config(name, "paper", device="cpu")
        here = experiments.config(name, profile, device="cpu")
        for key in dict.fromkeys([*flat_keys(paper), *flat_keys(here)]):  # a profile may read another data kind
            if key in ("name", "seed", "device"):
                continue
            a, b = _get(paper, key), _get(here, key)
            if a != b:
                rows.setdefault((key, repr(a), repr(b)), []).append(name)
    records = [
        {
            "setting": key,
            "paper": a,
            profile: b,
            "experiments": "all" if len(exps) == len(names) else ", ".join(n.split("/")[-1] for n in exps),
        }
        for (key, a, b), exps in rows.items()
    ]
    if not records:
        return pd.DataFrame({"setting": [], "paper": [], profile: []}).set_index("setting")
    return pd.DataFrame(records).set_index("setting").sort_index(kind="stable")


ABSENT = "(no such setting)"  # a setting one profile's config has and the other's has not (its data kind's)


def _get(cfg, dotted: str):
    for part in dotted.split("."):
        if not hasattr(cfg, part):
            return ABSENT
        cfg = getattr(cfg, part)
    return cfg


def params_table(names: Sequence[str], profile: str):
    """Parameter counts as the write-ups count them: ours at the paper profile beside the published number,
    and ours at ``profile``."""
    import pandas as pd

    rows = []
    for name in names:
        exp = experiments.get(name)
        paper = experiments.config(name, "paper", device="cpu").model
        here = experiments.config(name, profile, device="cpu").model
        count = models.num_params(paper)
        said = exp.published.get("params")
        shape = ", ".join(
            f"{k}={getattr(paper, k)}"
            for k in ("n_embed", "n_head", "n_layer", "context_size", "dropout_rate")
            if hasattr(paper, k)
        )
        rows.append(
            {
                "experiment": name,
                "write-up label": exp.title,
                "paper config": shape,
                "params (ours, paper)": f"{count:,}",
                "params (write-up)": f"{said:,}" if said else "not published",
                "match": ("yes" if said == count else "NO") if said else "",
                f"params (ours, {profile})": f"{models.num_params(here):,}",
            }
        )
    return pd.DataFrame(rows).set_index("experiment")


def data_table(cfg: RunConfig):
    """The data a run trains on: one row per split with its corpus, text source, tokenizer and size."""
    import pandas as pd

    d = load_tokens(cfg.data)
    corpus = corpora.get(cfg.data.corpus)
    source = "GENERATED (not real text)" if corpus.generated else d.source.split(":")[0]
    return pd.DataFrame(
        {
            "corpus": cfg.data.corpus,
            "text from": source,
            "split rule": cfg.data.split,
            "tokenizer": f"{d.tokenizer} ({d.vocab_size:,} tokens)",
            "characters": [f"{d.chars[s]:,}" for s in d.splits],
            "tokens": [f"{d.splits[s].size:,}" for s in d.splits],
        },
        index=pd.Index(list(d.splits), name="split"),
    )


def sample(
    run: train.Run, *, n_prompt: int = 16, max_new_tokens: int = 60, temperature: float = 0.8, seed: int = 0
) -> tuple[str, str]:
    """(prompt, continuation): the first ``n_prompt`` tokens of the validation split, and what the run's model
    writes after them (decoded with the run's own tokenizer)."""
    import torch

    cfg = run.config
    tok = tokenizer(cfg.data)
    val = load_tokens(cfg.data).splits["val"]
    prompt = torch.tensor(val[:n_prompt].astype("int64"))[None]
    out = run.load_model().generate(
        prompt, max_new_tokens, temperature=temperature, generator=torch.Generator().manual_seed(seed)
    )
    return tok.decode(prompt[0].tolist()), tok.decode(out[0, n_prompt:].tolist())


def _minutes(seconds: float) -> str:
    return f"{tables.number(seconds / 60)} min" if seconds < 5400 else f"{tables.number(seconds / 3600)} h"


def _planned_by_name(names: Sequence[str], profile: str) -> dict[str, list[experiments.PlannedRun]]:
    out: dict[str, list[experiments.PlannedRun]] = {}
    for run in experiments.plan(list(names), profile, device="cpu", needs=False):
        out.setdefault(run.name, []).append(run)
    return out


_sig3 = tables.sig3  # three significant digits, thousands separated


def _flops(cfg: RunConfig) -> str:
    """A run's counted training FLOPs with the prefix that suits them (755 GFLOP, 1.23 PFLOP)."""
    return tables.si(cfg.flops(), "FLOP")


def _seen(cfg: RunConfig) -> str:
    """What a run trains on, counted (RunConfig.tokens()), with its unit where it is not tokens: a retrieval
    matcher's targets are query items."""
    unit = getattr(cfg.data, "unit", "tokens")
    return f"{cfg.tokens():,}" + ("" if unit == "tokens" else f" {unit}")


def cost_table(settings: Settings, names: Sequence[str], runs: Mapping[str, Sequence[train.Run]] | None = None):
    """What each experiment costs, one row per experiment and profile (this notebook's, then gpu and paper, as far
    as the experiment runs there), in four columns that fit a page: the tokens and training FLOPs of one run
    (counted), its time on one H100 estimated from them (:mod:`lmcompanion.estimate`, not a measurement; gpu and
    paper only), and its measured time: here, the mean of this build's runs; at gpu and paper, that of the recorded
    runs once imported. The gpu and paper rows are those of the runs planned there (:func:`lmcompanion.experiments.plan`)."""
    import pandas as pd

    found = recorded.arms(list(names), exclude_profile=settings.profile)
    planned = {p: _planned_by_name(names, p) for p in ("gpu", "paper")}
    rows = []
    for name in names:
        here = (runs or {}).get(name) or []
        if not experiments.runs_at(name, settings.profile):  # its config exists, but no run of it is planned here
            rows.append({"experiment": name, "profile": f"{settings.profile} (here)", "tokens/run": "not run"})
        else:
            cfg = experiments.config(name, settings.profile, device="cpu")
            rows.append(
                {
                    "experiment": name,
                    "profile": f"{settings.profile} (here)",
                    "tokens/run": _seen(cfg),
                    "FLOPs/run": _flops(cfg),
                    "estimated time/run (one H100)": "",
                    "measured time/run": (
                        f"{tables.number(stats.mean([r.summary['train_time_s'] for r in here]))} s "
                        f"({len(here)} runs, this build)"
                        if here
                        else ""
                    ),
                }
            )
        for profile in ("gpu", "paper"):
            plan = planned[profile].get(name)
            if not plan:
                rows.append({"experiment": name, "profile": profile, "tokens/run": "not run"})
                continue
            rec = found[profile].runs.get(name, []) if profile in found else []
            cfg = plan[0].config
            rows.append(
                {
                    "experiment": name,
                    "profile": profile,
                    "tokens/run": _seen(cfg),
                    "FLOPs/run": _flops(cfg),
                    "estimated time/run (one H100)": _minutes(60 * plan[0].minutes()),
                    "measured time/run": (
                        f"{tables.number(stats.mean([r.summary['train_time_s'] for r in rec]) / 60)} min "
                        f"on {rec[0].env.get('gpu', 'cpu')} (recorded, {len(rec)} runs)"
                        if rec
                        else "not recorded yet"
                    ),
                }
            )
    return pd.DataFrame(rows).fillna("").set_index("experiment")


def scale_table(settings: Settings, names: Sequence[str]):
    """How far this profile is from the write-up's own settings (the paper profile): model size, tokens seen per
    run and passes over the training data, per experiment."""
    import pandas as pd

    rows = []
    for name in names:
        here = experiments.config(name, settings.profile, device="cpu")
        paper = experiments.config(name, "paper", device="cpu")
        p_here, p_paper = passes(here), write_up_passes(paper)
        rows.append(
            {
                "experiment": name,
                f"parameters ({settings.profile})": f"{models.num_params(here.model):,}",
                "parameters (paper)": f"{models.num_params(paper.model):,}",
                f"tokens/run ({settings.profile})": _seen(here),
                "tokens/run (paper)": _seen(paper),
                f"passes over the data ({settings.profile})": _sig3(p_here) if p_here is not None else "",
                "passes (paper)": p_paper,
            }
        )
    return pd.DataFrame(rows).set_index("experiment")


# --------------------------------------------------------------------------------------------------
# Verdicts, recorded runs, provenance


def show_verdicts(
    settings: Settings,
    chapter: str,
    rows: Sequence[verdicts.Verdict],
    profile: str | None = None,
    apart: Sequence[str] = (),
):
    """The verdict table of ``chapter`` at ``profile`` (default: this notebook's); the rows are also glued into
    the executed notebook, from which the book's build generates the scorecard, the summaries and the ledger.

    ``apart``: the claims of rows timed on this machine's clock (``bench.side_by_side``). They are glued with the
    others but left out of the table returned here: the notebook shows them beside the timing they come from
    (:func:`timed_verdicts`), in a cell the smoke references do not compare, since their outcome moves with the
    load of the machine that executes the page.

    Every verdict reached from runs says the scale it was reached at (:func:`lmcompanion.verdicts.at_scale`): the
    profile and the share of the write-up's training tokens that one run of this chapter sees there."""
    from myst_nb import glue

    profile = profile or settings.profile
    rows = scaled(chapter, rows, profile)
    payload = [glued_row(v, chapter, profile) for v in rows]
    glue(f"verdicts:{profile}", json.dumps(payload), display=False)
    return verdict_table([v for v in rows if v.claim not in set(apart)], chapter, profile, settings)


def scaled(chapter: str, rows: Sequence[verdicts.Verdict], profile: str) -> list[verdicts.Verdict]:
    """The rows, each saying the scale it was reached at (:func:`lmcompanion.verdicts.at_scale`)."""
    share = verdicts.chapter_share(chapter, profile)
    return [verdicts.at_scale(v, profile, share) for v in rows]


def page_rows(
    settings: Settings, chapter: str, notebook: str, runs: Mapping[str, Sequence[train.Run]], **extra
) -> list[verdicts.Verdict]:
    """The verdict rows a chapter's page decides (its registered rows, :mod:`lmcompanion.claims`), from the runs it
    read, each naming its scale: the "Verdicts of this page" table of a results notebook. A page that read its arms
    at the illustrations' protocol (:meth:`Settings.arms`) decides every row on those runs."""
    together = experiments.page_protocol(list(runs), settings.profile) is experiments.Protocol.ILLUSTRATIONS
    rows = claims.verdicts(
        chapter,
        claims.Context(runs, settings.profile, extra=extra, illustrating=runs if together else {}),
        notebook=notebook,
    )
    return scaled(chapter, rows, settings.profile)


def _rows_runs(settings: Settings, names: Sequence[str]) -> tuple[dict, dict]:
    """The runs verdict rows are decided on: each arm's at its own protocol, and the runs the headline arms also
    train at the illustrations' (:attr:`lmcompanion.experiments.ArmProtocol.trains_at`), which a row that compares
    one of them with illustrating arms reads (``illustrating`` of :class:`lmcompanion.claims.Context`)."""
    if not names:
        return {}, {}
    short = [n for n in names if experiments.Protocol.ILLUSTRATIONS in experiments.arm(n, settings.profile).trains_at]
    return (
        settings.arms_at(names, experiments.Protocol.OWN, by="name"),
        settings.arms_at(short, experiments.Protocol.ILLUSTRATIONS, by="name") if short else {},
    )


def verdict_page(
    settings: Settings, chapter: str, names: Sequence[str] | None = None, rounds: int = 8, **extra
) -> tuple[dict[str, list[train.Run]], list[verdicts.Verdict]]:
    """What every chapter's verdict notebook does first: read the runs of the chapter's experiments planned at this
    profile (``names``: default, all of them), time side by side each pair of arms the chapter's timed rows name
    (:func:`lmcompanion.bench.side_by_side`, ``rounds`` rounds of 5 steps) and show each timing with its rows, then
    decide every registered row (:func:`lmcompanion.claims.verdicts`, ``extra`` for what the rows read besides runs)
    and show the table of the others. Returns (the runs by experiment name, the rows)."""
    from IPython.display import Markdown, display

    names = [n for n in (names or experiments.names(chapter)) if experiments.runs_at(n, settings.profile)]
    runs, illustrating = _rows_runs(settings, names)  # reused from the run store
    timings, shown = [], []
    for a, b in claims.timed_pairs(chapter, settings.profile):
        t = bench.side_by_side(settings.planned(a), settings.planned(b), steps=5, rounds=rounds)
        shown += [
            f"**{a} against {b}**: {t.device}, {t.threads} thread(s), {t.steps} steps per model per round",
            t.table(),
        ]
        timings.append(t)
    if shown:
        display(
            fold(
                f"The side-by-side timings ({len(timings)} pair{'s' if len(timings) != 1 else ''} of arms, "
                "round by round)",
                *shown,
            )
        )
    rows = claims.verdicts(chapter, claims.Context(runs, settings.profile, tuple(timings), extra, illustrating))
    # a decided row whose effect has the other sign on the recorded runs of another profile says so
    rows = verdicts.cross_profile(rows, recorded_rows(settings, chapter, names))
    settings.decided[settings.profile] = rows
    timed = claims.timed_claims(chapter)
    if timed:
        display(
            Markdown(
                "**The rows decided by these timings** (their outcome moves with the load of the machine "
                "that executes the page; the table of every other row follows)."
            )
        )
        display(
            verdict_table(
                [v for v in scaled(chapter, rows, settings.profile) if v.claim in set(timed)],
                chapter,
                settings.profile,
                settings,
            )
        )
    return runs, rows


def timed_verdicts(rows: Sequence[verdicts.Verdict], timed: Sequence[str]):
    """The rows of ``rows`` whose claims are in ``timed`` (those :func:`show_verdicts` keeps apart), as a table."""
    return verdicts.table([v for v in rows if v.claim in set(timed)])


def recorded_arms(settings: Settings, names: Sequence[str]) -> dict[str, recorded.Found]:
    """The recorded runs of ``names`` at every profile other than this notebook's (profile -> what was found)."""
    return recorded.arms(list(names), exclude_profile=settings.profile)


def recorded_rows(settings: Settings, chapter: str, names: Sequence[str]) -> dict[str, list[verdicts.Verdict]]:
    """The rows of ``chapter`` decided on the recorded runs of ``names`` at every profile other than this notebook's
    (profile -> rows), each profile decided once per page (kept in ``settings.decided``)."""
    out = {}
    for profile, f in recorded_arms(settings, names).items():
        if profile not in settings.decided:
            settings.decided[profile] = claims.verdicts(chapter, claims.Context(f.runs))
        out[profile] = settings.decided[profile]
    return out


def recorded_table(found: Mapping[str, recorded.Found]):
    """Where the recorded runs come from: one row per profile, with their device, commit, when and what made them."""
    import pandas as pd

    rows = []
    for profile, f in found.items():
        runs = [r for rs in f.runs.values() for r in rs]
        if runs:
            e = runs[0].env
            rows.append(
                {
                    "profile": profile,
                    "experiments": len(f.runs),
                    "runs": len(runs),
                    "device": e.get("gpu") or e.get("cpu"),
                    "torch": e.get("torch"),
                    "commit": f"{(e.get('commit') or '?')[:10]}{' (dirty)' if e.get('dirty') else ''}",
                    "made": e.get("time"),
                    "command": e.get("command"),
                    "stale (older config, not used)": len(f.stale),
                }
            )
        elif f.stale:
            rows.append(
                {"profile": profile, "experiments": 0, "runs": 0, "stale (older config, not used)": len(f.stale)}
            )
    if not rows:
        return pd.DataFrame({"note": ["no recorded runs of this chapter at other profiles yet"]})
    return pd.DataFrame(rows).set_index("profile")


def provenance(settings: Settings):
    """Where this page's numbers came from: the profile and seeds, the package's commit, torch, the device, the data
    and tokenizers of the runs it used, and how long the page took to execute. The ids of the runs it read are glued
    into the executed notebook (``runs``), so a test can compare them with the chapter's plan."""
    import pandas as pd
    import torch
    from myst_nb import glue

    state = env.git_state()
    runs = list(settings.used.values())
    glue("runs", json.dumps(sorted(r.id for r in runs)), display=False)
    data = sorted({f"{r.config.data.kind}: {r.env.get('data_fingerprint', '?')}" for r in runs})
    toks = sorted(
        {
            f"{r.config.data.tokenizer_name}: {fp}"
            for r in runs
            if (fp := data_kinds.tokenizer_fingerprint(r.config.data))
        }
    )
    trained_here = [r for r in runs if r.summary.get("train_time_s") is not None]
    devices = sorted({r.env.get("gpu") or r.env.get("cpu") or "?" for r in runs})
    info = {
        "profile": settings.profile,
        "seeds": ", ".join(map(str, settings.seeds)),
        "package commit": f"{state['commit'] or 'unknown'}{' (uncommitted changes)' if state['dirty'] else ''}",
        "torch": torch.__version__,
        "device": settings.device,
        "executed on": env.cpu_name() + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""),
        "runs used": f"{len(runs)} ({len([r for r in runs if r.summary.get('resumed_from') is None])} trained from "
        f"scratch or reused, made on {', '.join(devices) or '-'})",
        "training time of those runs": (
            f"{tables.number(sum(r.summary['train_time_s'] for r in trained_here) / 60)} min "
            f"(summed over {len(trained_here)} runs, where and when each was made)"
            if trained_here
            else "-"
        ),
        "data fingerprints": "; ".join(data) or "-",
        "tokenizers": "; ".join(toks) or "-",
        "execution time of this page": f"{tables.number(time.time() - settings.started)} s",
    }
    return pd.DataFrame({"value": list(info.values())}, index=pd.Index(list(info), name="provenance"))


def chapter_notebooks(chapter: str) -> list[str]:
    """The notebook sources of a chapter, in reading order (their file names start with their position)."""
    root = paths.repo_root()
    folder = (root / "notebooks" / chapter) if root is not None else None
    if folder is None or not folder.is_dir():
        raise ConfigError(
            f"no notebooks for chapter {chapter!r} (they live in notebooks/<chapter>/ of a source checkout)"
        )
    return [str(p.relative_to(root)) for p in sorted(folder.glob("*.py"))]


def rerun_total(names: Sequence[str], profile: str = "paper") -> str:
    """One sentence: how many runs re-running ``names`` at ``profile`` takes (the runs planned there,
    :func:`lmcompanion.experiments.plan`) and their total time on one H100, estimated from counted FLOPs
    (:mod:`lmcompanion.estimate`)."""
    runs = experiments.plan(list(names), profile, device="cpu", needs=False)
    per_name = _planned_by_name(names, profile)
    total_s = 60 * experiments.minutes_total(runs)
    seeds = sorted({len(rs) for rs in per_name.values()})
    seeds_text = " or ".join(map(str, seeds)) + f" seed{'s' if seeds != [1] else ''}"

    def span_of(seconds: float) -> str:
        return f"{tables.number(seconds / 3600)} h" if seconds >= 3600 else f"{tables.number(seconds / 60)} min"

    return (
        f"At the {profile} profile: {len(per_name)} experiment{'s' if len(per_name) != 1 else ''} x {seeds_text} "
        f"= {len(runs)} run{'s' if len(runs) != 1 else ''}, an estimated {span_of(total_s)} of training on one "
        "H100 (lmcompanion.estimate: stated assumptions, not a measurement)."
    )


def rerun_commands(notebooks: Sequence[str], profile: str = "paper", device: str = "cuda") -> str:
    """The commands that re-execute a chapter's notebooks at another profile (shown in every chapter)."""
    lines = [f"python -m lmcompanion run-notebook {nb} --profile {profile} -p device {device}" for nb in notebooks]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# The appendix every verdict notebook ends with


def appendix(
    settings: Settings,
    chapter: str,
    names: Sequence[str],
    runs: Mapping[str, Sequence[train.Run]],
    cost_names: Sequence[str] | None = None,
) -> None:
    """Display the sections every verdict notebook ends with, in one place:

    - the recorded runs of ``names`` at other profiles (one line when there are none), each profile's verdicts
      (:func:`lmcompanion.claims.verdicts`, glued for the scorecard, like the build's own);
    - how far this profile is from the write-up (:func:`scale_table`) and every setting in which it differs
      (:func:`config_diff`);
    - re-running the chapter at the paper's scale: the commands, the planned runs' estimated total, and the cost of
      ``cost_names`` (default ``names``; :func:`cost_table`);
    - the page's provenance (:func:`provenance`).
    """
    from IPython.display import display

    found = recorded_arms(settings, names)
    if not found:
        display(
            fold(
                "Recorded runs at other profiles: none yet",
                "Runs made on a GPU and committed under `book/recorded/` appear here.",
            )
        )
    else:
        own = {settings.profile: settings.decided[settings.profile]} if settings.profile in settings.decided else {}
        parts = []
        for profile, rows in recorded_rows(settings, chapter, names).items():
            parts.append(f"**Verdicts at `{profile}`**")
            parts.append(show_verdicts(settings, chapter, verdicts.cross_profile(rows, own), profile=profile))
        display(
            fold(
                f"Recorded runs at other profiles: {', '.join(f'`{p}`' for p in found)}",
                "Runs made elsewhere and committed as recorded runs (metrics and provenance, no weights), judged "
                "by the same rule; where they come from, then each profile's verdicts (arms not recorded are "
                "left out).",
                recorded_table(found),
                *parts,
            )
        )
    display(
        fold(
            "How far this profile is from the write-up",
            "Model size, tokens seen per run and passes over the "
            "training data, here and at the `paper` profile: the write-up's settings where it states them, the "
            "original code's where it does not, counted by the book (no write-up prints these counts). A verdict "
            "reached far below the write-up's scale may change at its scale.",
            scale_table(settings, names),
        )
    )
    display(
        fold(
            f"Settings of the `{settings.profile}` profile",
            f"Every setting in which the `{settings.profile}` "
            "profile differs from the write-up's (the `paper` profile); empty at the `paper` profile.",
            config_diff(names, settings.profile),
        )
    )
    commands = rerun_commands(chapter_notebooks(chapter))
    display(
        fold(
            "Re-running this chapter at the paper's scale",
            "The commands re-execute every notebook of the chapter "
            "with the write-up's settings on a GPU; the line under them totals the runs planned there. The table "
            "gives, for one run of each experiment here and at the `gpu` and `paper` profiles, its tokens and "
            "training FLOPs, its time on one H100 estimated from those FLOPs (`lmcompanion.estimate`: stated "
            "assumptions, not a measurement), and its measured time: in this build, or once a recorded run is "
            "imported.",
            f"```\n{commands}\n```",
            rerun_total(experiments.chapter_names(chapter)),
            cost_table(settings, list(cost_names or names), runs),
        )
    )
    display(
        fold(
            "Provenance",
            "Where this page's numbers came from: the profile and seeds, the package's commit, the "
            "machine, and the data and tokenizers of the runs it used (each run's own record is its folder in the "
            "run store).",
            provenance(settings),
        )
    )


# --------------------------------------------------------------------------------------------------
# What a reader meets on a notebook's page (issues 50 and 54): the verdict tables in the pages' badge form, long
# parts folded, captions and the page's first sentence generated from the runs it reads. One set of functions for
# every chapter; the badges, the verdict cells and the folds are those of the generated pages
# (:func:`lmcompanion.pages.badge`, ``pages._cell``, ``book/_static/custom.css``).

# The generated pages' fold (sphinx-design's dropdown with its chevron, ``lmc-fold``), as a template that
# :func:`fold_html` fills: ``title`` and ``body`` are HTML already (Markdown rendered by :func:`markdown_html`, tables
# by :func:`lmcompanion.tables.html`); plain text reaches it only through them, which escape it.
_FOLD = string.Template(
    '<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3 lmc-fold">'
    '<summary class="sd-summary-title sd-card-header"><span class="sd-summary-text">${title}</span>'
    '<span class="sd-summary-state-marker sd-summary-chevron-right"><svg version="1.1" width="1.5em" '
    'height="1.5em" class="sd-octicon sd-octicon-chevron-right" viewBox="0 0 24 24" aria-hidden="true">'
    '<path d="M8.72 18.78a.75.75 0 0 1 0-1.06L14.44 12 8.72 6.28a.751.751 0 0 1 .018-1.042.751.751 0 0 1 '
    '1.042-.018l6.25 6.25a.75.75 0 0 1 0 1.06l-6.25 6.25a.75.75 0 0 1-1.06 0Z"></path></svg></span></summary>'
    '<div class="sd-summary-content sd-card-body docutils">\n${body}\n</div></details>'
)


def markdown_html(text: str, inline: bool = True) -> str:
    """Markdown (CommonMark, raw HTML kept: the badges) as HTML, for the parts of a page a notebook writes as HTML."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    return md.renderInline(text) if inline else md.render(text)


def fold_html(title: str, *parts) -> str:
    """``parts`` folded under ``title``, closed until a reader opens it: the generated pages' fold (sphinx-design's
    dropdown, ``lmc-fold``) written as HTML, so that a notebook's output folds the same way. A part is Markdown
    text, a DataFrame (:func:`lmcompanion.tables.html`) or an ``IPython.display.HTML``."""
    import pandas as pd

    body = []
    for part in parts:
        if isinstance(part, pd.DataFrame):
            with pd.option_context("display.max_colwidth", None):  # a fold shows its cells whole
                body.append(tables.html(part))
        elif hasattr(part, "_repr_html_"):
            body.append(part.data if hasattr(part, "data") else part._repr_html_())
        else:
            body.append(markdown_html(str(part), inline=False))
    return _FOLD.substitute(title=markdown_html(title), body="\n".join(body))


def fold(title: str, *parts):
    """:func:`fold_html` as a notebook output."""
    from IPython.display import HTML

    return HTML(fold_html(title, *parts))


def glued_row(v: verdicts.Verdict, chapter: str, profile: str) -> dict:
    """A verdict row as the generated pages read it (what :func:`show_verdicts` glues)."""
    return {
        "chapter": chapter,
        "profile": profile,
        **dataclasses.asdict(v),
        "outcome": v.outcome,
        "group": v.group,
        "learned": v.learned,
    }


def _steps(run: train.Run) -> int:
    return run.summary.get("steps") or run.config.train.max_steps


def _runs_of(settings: Settings | None, name: str, short: bool) -> list[train.Run]:
    """The runs of experiment ``name`` this page read, at one protocol: the shortest (the illustrations') where
    ``short``, else the longest."""
    runs = [r for r in (settings.used.values() if settings else ()) if r.config.name == name]
    if not runs:
        return []
    pick = min(map(_steps, runs)) if short else max(map(_steps, runs))
    return sorted((r for r in runs if _steps(r) == pick), key=lambda r: r.seed)


def plural_seeds(n: int) -> str:
    return "one seed" if n == 1 else f"{n} seeds"


def deciding_runs(v: verdicts.Verdict, chapter: str, settings: Settings | None) -> str:
    """The runs that decided row ``v``, arm by arm: the experiment, its seeds, steps and the values the row compared
    (its learning gate's values, with the reference line), "; "-joined; "" for a row decided without runs."""
    row = next((r for r in claims.rows(chapter) if r.text == v.claim), None)
    if row is not None and row.timed:
        a, b = row.timed
        return (
            f"timed side by side on the machine that executed this page: `{a}` against `{b}`, each from its "
            "run's initial weights on its run's first batch (the timings above)"
        )
    arms = {a.label.split(" (")[0]: a for a in v.arms}
    parts = []
    for name in row.arms if row is not None else ():
        short = name.split("/")[-1]
        arm = arms.get(short)
        runs = _runs_of(settings, name, short=arm is not None and claims.SHORT in arm.label)
        if not runs:
            continue
        steps = sorted(set(map(_steps, runs)))
        text = (
            f"`{name}`: {plural_seeds(len(runs))} ({', '.join(str(r.seed) for r in runs)}), "
            f"{' or '.join(f'{s:,}' for s in steps)} steps"
        )
        if arm is not None:
            text += (
                f", compared {', '.join(tables.number(x) for x in arm.values)} ({arm.at}; {arm.reference} "
                f"{tables.number(arm.level)})"
            )
        parts.append(text)
    return "; ".join(parts)


GROUP_FROM = 12  # a verdict table of more rows than this shows its headline rows and folds the others by page


def verdict_table(rows: Sequence[verdicts.Verdict], chapter: str, profile: str, settings: Settings | None = None):
    """A page's verdict table in the generated pages' form: per row the claim, the write-up's number and one short
    verdict cell (the badge in words with its scale, the effect and p, and the line beside a learning-gate override:
    ``pages._cell``, the scorecard's cell); under it, folded, every row's numbers: ours per arm, how far each arm
    learned, the runs that decided it (:func:`deciding_runs`) and the verdict in full. A table of more than
    :data:`GROUP_FROM` rows is read as the landing pages are: the headline rows first, then the others by the page
    that decides them, each page's rows folded under a line that counts their verdicts, with the scorecard's filter
    by verdict (``book/_static/verdict-filter.js``)."""
    from IPython.display import HTML

    if not rows:
        return HTML("<p><em>No row of this page is decided at this profile.</em></p>")
    numbered = list(enumerate(rows, start=1))
    if len(rows) <= GROUP_FROM:
        return HTML(_verdict_rows(numbered, chapter, profile, settings))
    glued = [glued_row(v, chapter, profile) for v in rows]
    parts = ["\n".join(pages._filter(list(verdicts.OUTCOMES)))]
    head = [(i, v) for i, v in numbered if v.headline]
    if head:
        parts += ["<p><strong>The headline comparison.</strong></p>", _verdict_rows(head, chapter, profile, settings)]
    rest = [(i, v) for i, v in numbered if not v.headline]
    parts.append("<p><strong>Every other claim, by the page that decides it</strong> (click a line to open it).</p>")
    for notebook in dict.fromkeys(v.notebook for _, v in rest):
        group = [(i, v) for i, v in rest if v.notebook == notebook]
        mine = [glued[i - 1] for i, _ in group]
        unlearned = pages.unlearned_arms([r for r in mine if r["outcome"] == verdicts.NOT_DECIDED])
        note = f"; not learned: {', '.join(unlearned)}" if unlearned else ""
        title = (
            f"{notebook.split('/')[-1] or 'other rows'}: {pages.plural(len(group), 'row')}, {pages._counts(mine)}{note}"
        )
        parts.append(fold_html(title, HTML(_verdict_rows(group, chapter, profile, settings))))
    return HTML("\n".join(parts))


def _verdict_rows(
    numbered: Sequence[tuple[int, verdicts.Verdict]], chapter: str, profile: str, settings: Settings | None
) -> str:
    """The HTML of :func:`verdict_table`'s rows (numbered as in the whole table), with their numbers folded."""
    import pandas as pd

    own = settings is not None and profile == settings.profile
    body, detail = [], []
    for i, v in numbered:
        body.append(
            f"<tr><th>{i}</th><td>{markdown_html(pages._md(v.claim))}</td>"
            f"<td>{markdown_html(pages._md(v.published))}</td>"
            f"<td>{markdown_html(pages._cell(glued_row(v, chapter, profile)))}</td></tr>"
        )
        runs = deciding_runs(v, chapter, settings) if own else ""
        detail.append(
            {
                "row": i,
                "ours (mean [min, max] over seeds)": v.ours,
                "seeds · effect ± SE · chance if equal": verdicts.evidence(v),
                "how far each arm learned": v.learned or "(no trained arm gated)",
                "the runs that decided it": runs
                or ("(decided without runs)" if v.is_check else "(recorded runs: see their table)" if not own else "-"),
                "verdict in full": v.verdict,
            }
        )
    table = (
        '<table class="table lmc-verdicts"><thead><tr><th>row</th><th>claim (write-up)</th>'
        "<th>the write-up</th><th>verdict</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>"
    )
    n = len(numbered)
    title = (
        f"The numbers of {'this row' if n == 1 else f'these {n} rows'}, how far their arms learned and the runs "
        "that decided them"
    )
    return tables._math(table) + fold_html(title, pd.DataFrame(detail).set_index("row"))


def seeds_phrase(groups: Mapping[str, Sequence], spread: str = "bands") -> str:
    """What a figure's lines are, from the seeds its runs actually have: "one seed per arm, each line one run",
    "mean over 3 seeds per arm, bands span the seeds", or, where arms differ, "each arm's mean over its seeds (3 for
    A and B; 1 for C), bands span them where there is more than one". ``spread``: what shows the seeds' range
    ("bands", "bars")."""
    counts = {label: len(rs) for label, rs in groups.items() if rs}
    ns = sorted(set(counts.values()))
    if not ns:
        return "no runs"
    each = " per arm" if len(counts) > 1 else ""
    if ns == [1]:
        return f"one seed{each}, each {'line' if spread == 'bands' else 'point'} one run"
    if len(ns) == 1:
        return f"mean over {ns[0]} seeds{each}, {spread} span the seeds"

    def arms(n: int) -> str:  # the arms with n seeds: named where they are few, counted where they are many
        labels = [label for label, c in counts.items() if c == n]
        return _listed(labels, quote=False) if len(labels) <= 3 else f"{len(labels)} arms"

    by_n = "; ".join(f"{n} for {arms(n)}" for n in sorted(ns, reverse=True))
    return f"each arm's mean over its seeds ({by_n}), {spread} span them where there is more than one"


def caption(key: str, groups: Mapping[str, Sequence], spread: str = "bands") -> None:
    """Glue :func:`seeds_phrase` of ``groups`` as ``seeds-<key>`` for the figure's caption to paste
    (``{glue:md}`seeds-<key>```): a caption's count of seeds is the runs', never typed. Returns nothing, so that as a
    figure cell's last line it shows no second output (which would repeat the figure's caption and name)."""
    from IPython.display import Markdown
    from myst_nb import glue

    glue(f"seeds-{key}", Markdown(seeds_phrase(groups, spread)), display=False)


def learned_arms(groups: Mapping[str, Sequence], metric: str = "val") -> tuple[list[str], list[str], list[str]]:
    """(learned, not learned, not gated) labels of ``groups`` by the learning gate on each arm's final ``metric``
    (:mod:`lmcompanion.learning`: every seed at least half a nat below its reference line)."""
    ok, bad, none = [], [], []
    for label, rs in groups.items():
        if not rs:
            continue
        try:
            arm = learning.arm(label, rs, metric)
        except (ConfigError, KeyError, TypeError):
            none.append(label)
            continue
        (ok if arm.learned else bad).append(label)
    return ok, bad, none


def _listed(labels: Sequence[str], quote: bool = True) -> str:
    """``labels`` joined ("a, b and c"); ``quote``: each set as the book's own term (style: never in quotation marks,
    which mark the write-up's words): an experiment's name as code, a title in italics."""
    labels = [(f"`{x}`" if "/" in str(x) else f"*{x}*") if quote else str(x) for x in labels]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def page_sentence(settings: Settings, groups: Mapping[str, Sequence], metric: str = "val") -> str:
    """The one sentence an illustration page states near its top, generated from the runs it reads: the arms it
    shows at this profile with their seeds and steps, and which have learned by the learning gate (those that have
    not are said "not learned")."""
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        return f"**This page** shows no runs at `{settings.profile}`: its arms are not run at this profile."
    steps = sorted({_steps(r) for rs in groups.values() for r in rs})
    seeds = sorted({len(rs) for rs in groups.values()})
    ok, bad, none = learned_arms(groups, metric)
    parts = []
    if ok:
        parts.append(f"{_listed(ok)} learned")
    if bad:
        parts.append(
            f"{_listed(bad)} not learned (a verdict row that rests on an arm that has not learned is not decided)"
        )
    if none:
        parts.append(f"{_listed(none)} not gated")
    seeds_text = " or ".join(plural_seeds(n) for n in seeds) + (" per arm" if len(groups) > 1 else "")
    return (
        f"**This page** shows {_listed(list(groups))} at `{settings.profile}` ({seeds_text}, "
        f"{' or '.join(f'{s:,}' for s in steps)} steps). By the learning gate (every seed at least half a nat "
        f"below its reference line at the end of training): {'; '.join(parts)}."
    )


def this_page(settings: Settings, groups: Mapping[str, Sequence], metric: str = "val"):
    """:func:`page_sentence` as a notebook output."""
    from IPython.display import Markdown

    return Markdown(page_sentence(settings, groups, metric))


def rows_of_page(settings: Settings, chapter: str, notebook: str) -> list[verdicts.Verdict]:
    """The rows the scorecard links to this page (registered with ``notebook``), decided as the chapter's verdict
    page decides them: on their arms' own runs (their own seeds and steps, not this page's illustrations), read
    from the run store. Rows timed side by side, or decided from values only the verdict page computes, are left to
    it."""
    wanted = [r for r in claims.rows(chapter) if r.notebook == notebook and r.arms and not r.timed]
    names = list(dict.fromkeys(a for r in wanted for a in r.arms if experiments.runs_at(a, settings.profile)))
    if not wanted:
        return []
    runs, illustrating = _rows_runs(settings, names)
    ctx = claims.Context(runs, settings.profile, illustrating=illustrating)
    out = []
    for row in wanted:
        try:
            v = claims.decide(chapter, row, ctx)
        except claims.NotComputed:
            continue
        if v is not None:
            out.append(v)
    return scaled(chapter, out, settings.profile)


def page_verdicts(settings: Settings, chapter: str, notebook: str):
    """This page's rows (:func:`rows_of_page`) as a verdict table, each with the runs that decided it, under one line
    that says where they are decided."""
    from IPython.display import HTML

    rows = rows_of_page(settings, chapter, notebook)
    if not rows:
        return HTML("<p>No verdict row of the chapter rests on this page's runs.</p>")
    lead = markdown_html(
        f"**The verdict rows of this page**, decided as on the chapter's verdict page, on each arm's "
        f"own runs at `{settings.profile}` (the runs are listed in the fold under the table)."
    )
    return HTML(f"<p>{lead}</p>" + verdict_table(rows, chapter, settings.profile, settings).data)
