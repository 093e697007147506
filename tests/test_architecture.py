"""The package's shape: layered imports without cycles, and a run key that covers exactly the code a run executes."""

import ast
import dataclasses
import graphlib
import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lmcompanion import experiments, fingerprint, run
from lmcompanion.experiments import ed_training as procedure
from lmcompanion.train import trainer

from conftest import REPO, tiny_run

SRC = REPO / "src"
MODULES = sorted(
    ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
    for p in (SRC / "lmcompanion").rglob("*.py")
)

# Each module imports only modules of a lower layer (or, within a layer, without cycles). Exact names first, then
# patterns ("x.*": the submodules of x; "x*": x and its submodules).
LAYERS = {
    0: [
        "lmcompanion",
        "lmcompanion.errors",
        "lmcompanion.paths",
        "lmcompanion.untrusted",
        "lmcompanion.signals",
        "lmcompanion.resources",
    ],  # files made elsewhere, the signal policy, folders and resource errors
    1: [
        "lmcompanion.argtypes",
        "lmcompanion.config",
        "lmcompanion.contents",
        "lmcompanion.formats",
        "lmcompanion.stats",
        "lmcompanion.fingerprint",
        "lmcompanion.env",
        "lmcompanion.runner",
        "lmcompanion.ledger",
    ],
    2: ["lmcompanion.data.*", "lmcompanion.models.*"],  # data kinds, model families, shared layers
    3: ["lmcompanion.data", "lmcompanion.models"],  # their registries
    4: ["lmcompanion.run", "lmcompanion.estimate", "lmcompanion.memory"],  # a run, its key, its GPU time, its memory
    5: ["lmcompanion.train*"],
    6: ["lmcompanion.experiments*"],
    7: ["lmcompanion.plots", "lmcompanion.tables", "lmcompanion.learning"],
    8: ["lmcompanion.verdicts", "lmcompanion.recorded", "lmcompanion.claims"],
    9: ["lmcompanion.chapters*", "lmcompanion.nb", "lmcompanion.bench", "lmcompanion.pages"],
    # the GPU campaign, a package of its parts: its files in the output folder, the GPT-2-small and chapter benches,
    # the CUDA-path check; the plan and its slots; the pack, one slot's runner and the restore of its archive; the
    # package that names them
    10: [
        "lmcompanion.campaign.reports",
        "lmcompanion.campaign.bench",
        "lmcompanion.campaign.check",
        "lmcompanion.campaign.lanes",
        "lmcompanion.campaign.measures",
    ],
    11: ["lmcompanion.campaign.plan"],
    12: ["lmcompanion.campaign.pack", "lmcompanion.campaign.runner", "lmcompanion.campaign.restore"],
    13: ["lmcompanion.campaign"],
    14: ["lmcompanion.cli", "lmcompanion.__main__"],
}

# What each layer's modules know: with LAYERS, the text of CONTRIBUTING.md's list of layers (layers_table()).
LAYER_NOTES = {
    0: "the package, its errors, files made elsewhere (read checked), the signal policy, folders, resource errors; "
    "they know nothing else",
    1: "command-line types and `LMC_*` variables, configs and overrides, number formats, statistics, code digests, "
    "provenance, papermill, the chapters' declarations, the claims ledger's registry",
    2: "data kinds (corpora, tokenizers, token caches; what the book asks of each kind: `data/kinds.py`) and model "
    "families (shared layers, one file per write-up); they know configs",
    3: "their registries (the packages `data` and `models`); they know their own modules",
    4: "a run (`RunConfig`, `RunSpec`: its identity, key, tokens and counted FLOPs), its GPU time from those FLOPs, a "
    "training step's memory (counted the same way for every model family); they know data and models",
    5: "the trainer, schedules, checkpoints, DDP, seeding, the run store; they know runs, never a particular model",
    6: "named configs from the write-ups, per profile; where each runs and by which procedure; `plan`, the one "
    "planner; they know runs",
    7: "figures, tables, the learning gate; they know runs' metrics",
    8: "verdicts, recorded runs, the registry of claim rows; they know experiments, tables, stats",
    9: "the chapters' analyses and rows, the notebooks' helpers (`nb`: only notebooks and the command line import it), "
    "benches, the generated pages; they know everything below",
    10: "the GPU campaign's files in the output folder, the GPT-2-small and chapter benches, the CUDA-path check, the "
    "lanes, the chapters' measures",
    11: "the campaign's plan and its slots",
    12: "the campaign's pack, one slot's runner and the restore of its archive",
    13: "the package that names the campaign's parts",
    14: "the command line; it knows everything",
}


def layers_table() -> str:
    """CONTRIBUTING.md's list of the layers, from LAYERS and LAYER_NOTES, wrapped at 120 characters
    (``python tests/test_architecture.py`` prints it)."""
    items = []
    for rank, names in LAYERS.items():
        shown = ", ".join(f"`{n.removeprefix('lmcompanion.')}`" for n in names)
        items.append(
            textwrap.fill(
                f"- **{rank}** {shown}: {LAYER_NOTES[rank]}.",
                width=120,
                subsequent_indent="  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(items)


def layer(module: str) -> int:
    for rank, names in LAYERS.items():
        if module in names:
            return rank
    for rank, names in LAYERS.items():
        for pattern in names:
            if pattern.endswith(".*") and module.startswith(pattern[:-1]):
                return rank
            if (
                pattern.endswith("*")
                and not pattern.endswith(".*")
                and (module == pattern[:-1] or module.startswith(pattern[:-1] + "."))
            ):
                return rank
    raise AssertionError(f"{module} has no layer in tests/test_architecture.py: add it")


def module_level_imports(module: str) -> set[str]:
    """Imports at module level only (what executes when the module is imported)."""
    tree = ast.parse(fingerprint._source(module))
    top = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    names = set()
    saved = fingerprint._source
    try:
        fingerprint._source = lambda m, _s=ast.unparse(top): _s if m == module else saved(m)
        names = fingerprint.imports_of(module)
    finally:
        fingerprint._source = saved
    return names


def test_every_module_has_a_layer_and_imports_only_downward():
    wrong = []
    for module in MODULES:
        for dep in module_level_imports(module):
            if layer(dep) > layer(module):
                wrong.append(f"{module} (layer {layer(module)}) imports {dep} (layer {layer(dep)})")
    assert not wrong, "\n".join(wrong)


def test_contributing_shows_the_layers_of_this_test():
    """CONTRIBUTING.md's list of layers is this test's LAYERS (its table once showed 11 where the test had 15)."""
    assert sorted(LAYER_NOTES) == sorted(LAYERS)
    text = (REPO / "CONTRIBUTING.md").read_text()
    assert layers_table() in text, (
        "CONTRIBUTING.md's list of layers differs from the LAYERS of "
        "tests/test_architecture.py; replace it with:\n" + layers_table()
    )


def test_only_the_command_line_imports_the_notebooks_front_door():
    """``nb`` is the notebooks' front door: nothing of the package below the notebooks imports it (what others need
    lives in the module it belongs to, and ``nb`` re-exports it for the notebooks)."""
    allowed = {"lmcompanion.nb", "lmcompanion.cli", "lmcompanion.__main__"}
    found = [m for m in MODULES if m not in allowed and "lmcompanion.nb" in module_level_imports(m)]
    assert not found, f"these modules import lmcompanion.nb: {found}"


def test_every_data_kind_declares_what_the_book_asks_of_it_outside_its_run_key():
    """Each data kind of the registry has its declaration in ``data/kinds.py`` (unigram loss, tokenizer fingerprint,
    pack files), and no kind's module reaches that module: editing a declaration retrains no run."""
    from lmcompanion import data

    assert set(data.kinds.KINDS) == set(data.KINDS)
    for kind in data.KINDS:
        assert "lmcompanion.data.kinds" not in fingerprint.closure(data.module_of(kind)), kind


STOP_SIGNALS = {"SIGINT", "SIGTERM", "SIGHUP"}


def signal_tables(source: str) -> list[str]:
    """Where ``source`` builds a table of the stop signals or maps one to its exception: a signal's name as a string
    (``getattr(signal, "SIGTERM")``, ``Signals["SIGHUP"]``), a tuple, list, set or dict of two or more of them
    (``(signal.SIGINT, signal.SIGTERM)``), or a :class:`~lmcompanion.errors.Terminated` built. Using one signal
    (``signum == signal.SIGINT``, ``os.kill(pid, signal.SIGTERM)``) is none of these."""

    def is_signal(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in STOP_SIGNALS) or (
            isinstance(node, ast.Name) and node.id in STOP_SIGNALS
        )

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in STOP_SIGNALS:
            found.append(f"line {node.lineno}: the name {node.value!r}")
        elements = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else None
        elements = node.keys if isinstance(node, ast.Dict) else elements
        if elements is not None and sum(is_signal(e) for e in elements) >= 2:
            found.append(f"line {node.lineno}: a {type(node).__name__.lower()} of signals")
        func = getattr(node, "func", None)
        if isinstance(node, ast.Call) and getattr(func, "id", getattr(func, "attr", None)) == "Terminated":
            found.append(f"line {node.lineno}: a Terminated built")
    return found


def test_the_signals_that_stop_a_command_or_a_run_are_one_table():
    """The stop signals and the exception each raises are listed once, in ``errors`` (the trainer's handler and the
    command line's policy once kept a copy each): no other module names them as strings, lists two of them or builds
    the exception itself."""
    assert len(signal_tables(fingerprint._source("lmcompanion.errors"))) >= 4  # the three names and the mapping
    # the trainer's former copy is found, so the scan can fail
    old_trainer = textwrap.dedent(
        """
        SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
        SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        def exception(self):
            return KeyboardInterrupt() if self.signum == signal.SIGINT else Terminated(self.signum)
        if signum == signal.SIGINT:
            os.kill(pid, signal.SIGTERM)
        """
    )
    assert sorted(signal_tables(old_trainer)) == [
        "line 2: the name 'SIGHUP'",
        "line 2: the name 'SIGINT'",
        "line 2: the name 'SIGTERM'",
        "line 3: a tuple of signals",
        "line 5: a Terminated built",
    ]
    found = {m: signal_tables(fingerprint._source(m)) for m in MODULES if m != "lmcompanion.errors"}
    found = {m: f for m, f in found.items() if f}
    assert not found, f"use errors.SIGNALS and errors.signal_exception instead: {found}"


def test_no_runs_key_covers_the_command_lines_signal_policy():
    """The trainer reads the stop signals from ``errors``, which its runs' keys cover already, never from
    ``signals``: editing the command line's signal policy retrains no run."""
    from lmcompanion import errors, signals

    assert trainer.SIGNALS is errors.SIGNALS is signals.SIGNALS and signals.exception is errors.signal_exception
    formal = experiments.config("formal_ed/adamw", "smoke")
    for modules in (
        fingerprint.closure("lmcompanion.train.trainer"),
        run.spec(tiny_run()).modules,
        _literal_spec(formal).modules,
    ):
        assert "lmcompanion.errors" in modules and "lmcompanion.train.trainer" in modules
        assert "lmcompanion.signals" not in modules


def test_the_import_graph_has_no_cycles():
    graph = {m: module_level_imports(m) for m in MODULES}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the cycle


def test_no_function_local_imports_of_the_package():
    found = []
    for module in MODULES:
        tree = ast.parse(fingerprint._source(module))
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("lmcompanion")):
                    found.append(f"{module}.{fn.name}: from {'.' * node.level}{node.module or ''} import ...")
                if isinstance(node, ast.Import) and any(a.name.startswith("lmcompanion") for a in node.names):
                    found.append(f"{module}.{fn.name}: import lmcompanion...")
    assert not found, "\n".join(found)


def test_the_command_line_starts_without_matplotlib_or_scipy():
    """Every command (and every unit test that runs one) paid about 0.9 s on the 2-core build machine importing
    matplotlib and scipy, which only the commands that draw or test import: they are imported where they are used."""
    code = (
        "import sys, lmcompanion.cli; print(sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'scipy'}))"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split() == ["[]"]


# --- the run key ------------------------------------------------------------------------------------------------


@pytest.fixture
def edited(monkeypatch):
    """Pretend a module's code was edited (its source as the fingerprint reads it gets one more statement)."""
    original = fingerprint._source

    def edit(*modules):
        original.cache_clear()

        def source(m, _orig=original):
            text = _orig(m)
            return text + "\n_EDITED = 1\n" if m in modules and text is not None else text

        monkeypatch.setattr(fingerprint, "_source", source)

    yield edit
    fingerprint._source = original
    original.cache_clear()


def _literal_spec(cfg):
    return run.spec(cfg, "lmcompanion.experiments.ed_training.literal_training", procedure.LiteralConfig())


def test_an_edit_to_seeding_checkpoint_or_ddp_code_changes_the_key(edited):
    cfg = tiny_run()
    before = run.spec(cfg).key
    for module in (
        "lmcompanion.train.seeding",
        "lmcompanion.train.checkpoint",
        "lmcompanion.train.distributed",
        "lmcompanion.train.schedules",
        "lmcompanion.models.layers",
        "lmcompanion.data.lm",
    ):
        edited(module)
        assert run.spec(cfg).key != before, f"editing {module} left the key unchanged"


def test_an_edit_to_tables_verdicts_or_another_family_does_not_change_the_key(edited):
    cfg = tiny_run()
    formal = experiments.config("formal_ed/adamw", "smoke")
    before, before_literal = run.spec(cfg).key, _literal_spec(formal).key
    edited(
        "lmcompanion.tables",
        "lmcompanion.verdicts",
        "lmcompanion.plots",
        "lmcompanion.nb",
        "lmcompanion.chapters.formal_ed.analysis",
        "lmcompanion.chapters.formal_ed",
        "lmcompanion.models.ar_ed",
        "lmcompanion.experiments.ar_ed",
        "lmcompanion.models",
        "lmcompanion.run",
    )
    assert run.spec(cfg).key == before
    assert _literal_spec(formal).key == before_literal  # the literal ED-Training runs' key covers no table code


# Code that uses what changed in the AST between Pythons 3.11 and 3.13: function and class definitions (3.12 added
# their empty `type_params`), nested f-string format specs (3.12 ends them with an empty literal), None defaults.
_GOLDEN_SOURCE = '''
"""A module docstring."""
class C(Base, metaclass=M):
    """A class docstring."""
    x: int = 1
    def f(self, a, /, b=2, *c, d: str = "", **e) -> "C":
        """A docstring."""
        return f"{a!r:>{b}} {d:<{len(c)}.2f}x{e}"  # a comment
async def g(*, h):
    async with h as (i, j):
        return [k async for k in i if (m := k)], lambda n: n, {**j}
match y:
    case [1, *rest] if rest:
        pass
'''


def test_the_code_digest_is_the_same_on_every_python():
    """The normalized code is pinned: Pythons 3.11.7, 3.12.1 and 3.13.0 all give this digest (checked by running
    this source on each). ``ast.dump`` gave three different ones, so a campaign pack made on this machine's 3.11 was
    refused by the GPU machine's 3.12: every run key differed there."""
    text = fingerprint._normalized_source(_GOLDEN_SOURCE)
    assert "docstring" not in text and "comment" not in text and "type_params" not in text
    assert (
        hashlib.sha256(text.encode()).hexdigest() == "edbb021c532ef04fcbf70283f8e1b91b95655912edb81d484d63dc14ab253bf6"
    )
    assert fingerprint._normalized_source(_GOLDEN_SOURCE.replace("x: int = 1", "x: int = 2")) != text


def test_an_edit_to_a_comment_or_docstring_does_not_change_the_key(monkeypatch):
    cfg = tiny_run()
    before = run.spec(cfg).key
    original = fingerprint._source
    fingerprint._source.cache_clear()
    monkeypatch.setattr(
        fingerprint,
        "_source",
        lambda m: (original(m) or "") + "\n# a comment\n" if m == "lmcompanion.train.seeding" else original(m),
    )
    try:
        assert run.spec(cfg).key == before
    finally:
        original.cache_clear()


def test_the_key_covers_every_module_whose_code_runs_during_training(tmp_path):
    """Trace a real run (and a literal ED-Training run): every project function called must live in a module the
    key covers (the registries are lookup tables; they name the module, which the key covers)."""
    cases = [
        (tiny_run(steps=3), trainer.train, "lmcompanion.train.trainer.train", None),
        (
            experiments.config("formal_ed/adamw", "smoke"),
            procedure.literal_training,
            "lmcompanion.experiments.ed_training.literal_training",
            procedure.LiteralConfig(T=1, eta=0.01, n=4, evals=1),
        ),
    ]
    for cfg, fn, name, settings in cases:
        covered = set(run.spec(cfg, name, settings).modules) | fingerprint.REGISTRIES
        executed = set()
        root = str(SRC / "lmcompanion")

        def profile(frame, event, arg):
            if event == "call" and frame.f_code.co_filename.startswith(root):
                rel = Path(frame.f_code.co_filename).relative_to(SRC).with_suffix("")
                executed.add(".".join(rel.parts).removesuffix(".__init__"))

        folder = tmp_path / name
        folder.mkdir()
        sys.setprofile(profile)
        try:
            fn(cfg, folder) if settings is None else fn(cfg, folder, settings)
        finally:
            sys.setprofile(None)
        assert executed, "the trace saw nothing: the test cannot fail"
        assert executed <= covered, f"{name} executed modules its key does not cover: {sorted(executed - covered)}"


def test_the_key_changes_with_the_data_it_reads(monkeypatch):
    cfg = tiny_run()
    before = run.spec(cfg).key
    monkeypatch.setattr(type(cfg.data), "fingerprint", lambda self: "sha256:another-text")
    assert run.spec(cfg).key != before


def test_the_key_changes_with_the_config_and_the_procedure_settings():
    cfg = tiny_run()
    assert run.spec(dataclasses.replace(cfg, seed=1)).key != run.spec(cfg).key
    formal = experiments.config("formal_ed/adamw", "smoke")
    a = run.spec(formal, "lmcompanion.experiments.ed_training.literal_training", procedure.LiteralConfig(T=1))
    b = run.spec(formal, "lmcompanion.experiments.ed_training.literal_training", procedure.LiteralConfig(T=2))
    assert a.key != b.key


if __name__ == "__main__":
    print(layers_table())
