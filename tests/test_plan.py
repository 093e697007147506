"""One road from an experiment to its runs: the plan is what the notebooks read, what train-chapter trains and what
every cost and lookup counts; experiments declare where and how they run, and no chapter plans its own runs."""

from __future__ import annotations

import ast
import dataclasses
import json
import math

import pytest

from lmcompanion import experiments
from lmcompanion.cli import main
from lmcompanion.errors import ConfigError
from lmcompanion.experiments import headline_comparisons, registry

from conftest import REPO

SRC = REPO / "src" / "lmcompanion"
NBVAL = REPO / "tests" / "nbval"
CHAPTERS = sorted(p.name for p in NBVAL.iterdir() if p.is_dir())


def _glued_runs(notebook) -> set[str]:
    """The ids of the runs an executed notebook read (glued by nb.provenance as "runs")."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == "runs":
                prefix = out["metadata"]["scrapbook"].get("mime_prefix", "")
                return set(json.loads(ast.literal_eval(out["data"][prefix + "text/plain"])))
    raise AssertionError(f"{notebook} glues no 'runs' (does it end with nb.provenance?)")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_smoke_plan_of_every_chapter_is_exactly_the_runs_its_notebooks_read(chapter):
    read = set().union(*(_glued_runs(p) for p in sorted((NBVAL / chapter).glob("*.ipynb"))))
    planned = {r.id for r in experiments.plan(chapter, "smoke", device="cpu")}
    assert read, "the references read no run: the test cannot fail"
    assert planned == read, (
        f"planned, not read: {sorted(planned - read)}; read, not planned: {sorted(read - planned)}"
        " (run `make references` after changing a notebook or the plan)"
    )


def test_every_chapter_with_notebooks_has_a_plan_and_the_plans_cover_the_smoke_references():
    ids = set().union(*({r.id for r in experiments.plan(c, "smoke", device="cpu")} for c in CHAPTERS))
    references = set(json.loads((NBVAL / "runs.json").read_text()))
    assert ids == references


def test_train_chapter_plan_prints_every_run_id_its_estimate_and_a_total(capsys):
    assert main(["train-chapter", "retrieval", "--profile", "smoke", "--device", "cpu", "--plan"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    plan = experiments.plan("retrieval", "smoke", device="cpu")
    assert [line.split()[0] for line in lines[:-1]] == [r.id for r in plan]
    minutes = [float(line.split()[1]) for line in lines[:-1]]
    assert all(m > 0 for m in minutes)
    assert lines[-1].startswith("total ") and f"{len(plan)} runs" in lines[-1]
    assert float(lines[-1].split()[1]) == pytest.approx(sum(minutes), abs=0.1)
    # the embedders a retrieval run reads come before it, once
    ids = [r.id for r in plan]
    for run in plan:
        for need in run.needs:
            assert ids.index(need.id) < ids.index(run.id)
    assert len(ids) == len(set(ids))


def test_the_plan_follows_what_each_experiment_declares():
    # the hourglass arms registered for the gpu and paper profiles only
    for name in ("hourglass/repeat_448_96_e6_every1", "hourglass/attn_448_96_e2"):
        assert not experiments.runs_at(name, "cpu") and experiments.runs_at(name, "gpu")
        assert name not in {r.name for r in experiments.plan("hourglass", "cpu", device="cpu")}
        assert name in {r.name for r in experiments.plan("hourglass", "gpu", device="cpu")}
    # the retrieval arms the cpu profile leaves out run at smoke
    assert not experiments.runs_at("retrieval/flat_d512_c128", "cpu")
    assert experiments.runs_at("retrieval/flat_d512_c128", "smoke")
    # seeds: every arm's first seed first, so a cut-off session covers every arm
    plan = experiments.plan(["ar_ed/baseline", "ar_ed/mse"], "cpu", device="cpu")
    assert [(r.name, r.seed) for r in plan][:2] == [("ar_ed/baseline", 0), ("ar_ed/mse", 0)]
    assert len(plan) == 6
    assert [r.seed for r in experiments.plan(["ar_ed/baseline"], "cpu", seeds=2, first_seed=4, device="cpu")] == [4, 5]
    # procedures come from the registry
    assert experiments.planned("formal_ed/ed_training", "smoke", 0).procedure.name == "ed_training"
    assert experiments.planned("retrieval/flat_d512_c32", "smoke", 0).procedure.name == "match"
    assert experiments.planned("ar_ed/baseline", "smoke", 0).procedure.fn is None
    with pytest.raises(ConfigError, match="unknown chapter"):
        experiments.plan("mixers", "smoke")
    with pytest.raises(ConfigError, match="did you mean"):
        experiments.plan(["ar_ed/baselin"], "smoke")


def test_a_plan_needs_neither_data_nor_network(monkeypatch):
    """Planning builds configs and counts FLOPs; the data (a procedure's settings, e.g. the key of the run it reads)
    is touched only when a run is trained."""
    from lmcompanion.data import corpora

    def offline(*args, **kwargs):
        raise AssertionError("the plan read a corpus")

    monkeypatch.setattr(corpora, "fingerprint", offline)
    for chapter in ("retrieval", "mixer", "formal_ed"):
        for profile in ("smoke", "gpu", "paper"):
            runs = experiments.plan(chapter, profile, device="cpu")
            assert runs and all(r.id for r in runs) and experiments.minutes_total(runs) > 0


def test_no_chapter_module_plans_runs_and_only_the_retrieval_experiment_branches_on_its_kind():
    planners = {"arms", "seeds_for", "at_profile", "CPU_SKIP", "SKIPPED_SMALL", "ONE_SEED_PROFILES", "literal_run"}
    for path in sorted((SRC / "chapters").rglob("*.py")):
        defined = {
            n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
        }
        defined |= {
            t.id
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        assert not defined & planners, f"{path.relative_to(SRC)} defines {sorted(defined & planners)}"
    allowed = {SRC / "experiments" / "retrieval.py", SRC / "data" / "retrieval.py"}
    for path in sorted(SRC.rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
                kind = any(isinstance(p, ast.Attribute) and p.attr == "kind" for p in parts)
                retrieval = any(isinstance(p, ast.Constant) and p.value == "retrieval" for p in parts)
                assert not (kind and retrieval), f"{path.relative_to(SRC)}:{node.lineno} branches on the retrieval kind"


def test_an_experiment_can_declare_its_seeds_per_profile():
    # the mixer chapter's arms of claims of equality run four seeds where the profile's default is three
    assert experiments.seeds_of("mixer/kernel4", "gpu") == (0, 1, 2, 3)
    assert experiments.seeds_of("mixer/kernel4", "smoke") == (0,)  # first seed only at smoke


def test_at_cpu_the_headline_arms_run_five_seeds_and_every_other_arm_one():
    heads = set(experiments.headline_arms(deciding_at="cpu"))
    assert {"ar_ed/baseline", "ar_ed/mse_pos_sub", "mixer/flat_d512", "hourglass/vanilla"} <= heads
    # a headline measured unable to learn at cpu (the retrieval matchers) illustrates there, and only there
    matchers = {"retrieval/flat_d1024_c32", "retrieval/llama_d1024_c32"}
    assert matchers <= set(experiments.headline_arms()) and not matchers & heads
    # at gpu every headline arm decides, with five seeds as at cpu; the other arms run the profile's three (issue 49)
    assert all(experiments.seeds_of(m, "gpu") == (0, 1, 2, 3, 4) for m in matchers)
    assert experiments.seeds_of("hourglass/vanilla", "gpu") == tuple(range(experiments.HEADLINE_SEEDS["gpu"]))
    assert experiments.seeds_of("ar_ed/pos_sub", "gpu") == (0, 1, 2) and "ar_ed/pos_sub" not in heads
    with pytest.raises(ValueError, match="cpu_shortfall"):
        headline_comparisons.headline(
            "mixer", "x", ("mixer/flat_d512", "mixer/llama_d512"), "why", cpu_illustrates=True
        )
    for name in experiments.names():
        if experiments.runs_at(name, "cpu"):
            assert experiments.seeds_of(name, "cpu") == ((0, 1, 2, 3, 4) if name in heads else (0,)), name
    assert experiments.seeds_of("mixer/kernel4", "cpu", seeds=[7]) == (7,)  # a notebook's n_seeds wins
    assert experiments.seeds_of("mixer/kernel4", "cpu", seeds=[7]) == (7,)  # a notebook's n_seeds wins
    assert [r.seed for r in experiments.plan(["mixer/kernel4"], "gpu", device="cpu")] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="n_seeds"):
        registry.register("x/y", title="t", first_seed_only=("cpu",), n_seeds={"cpu": 4})
    with pytest.raises(ValueError, match="n_seeds"):
        registry.register("x/y", title="t", n_seeds={"cpu": 0})
    with pytest.raises(ValueError, match="unknown profiles"):
        registry.register("x/y", title="t", n_seeds={"laptop": 4})


def test_registering_an_unknown_profile_or_procedure_is_refused():
    with pytest.raises(ValueError, match="unknown profiles"):
        registry.register("x/y", title="t", profiles=("cpu", "laptop"))
    with pytest.raises(ConfigError, match="unknown procedure"):
        registry.procedure("matcher")


def test_a_run_id_is_its_folder_name_up_to_the_key_and_its_config_digest(tmp_path):
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    import regression

    from conftest import tiny_run
    from lmcompanion.train import RunStore

    run = RunStore(tmp_path).run(tiny_run(steps=2))
    assert run.id == regression.run_id(run.path)


# the chapters whose illustrations train fewer steps at cpu: half the steps the rule gave (DeepSight's headline arms
# depart from it with twice its steps)
SHORTENED = {"ar_ed": 0.5, "deepsight": 0.25, "hourglass": 0.5}
OWN, ILLUSTRATIONS = experiments.Protocol.OWN, experiments.Protocol.ILLUSTRATIONS


def _steps(name: str, profile: str = "cpu", **kw) -> int:
    return experiments.config(name, profile, device="cpu", **kw).train.max_steps


@pytest.mark.parametrize("chapter", SHORTENED)
def test_at_cpu_illustrating_arms_train_fewer_steps_and_the_headline_arms_also_once_at_that_protocol(chapter):
    heads = set(experiments.headline_arms(chapter, deciding_at="cpu"))
    fraction = SHORTENED[chapter]
    assert experiments.illustration_steps(chapter, "cpu") == fraction
    runs = experiments.plan(chapter, "cpu", device="cpu")
    assert len({r.id for r in runs}) == len(runs)
    for name in experiments.names(chapter):
        if not experiments.runs_at(name, "cpu"):
            continue
        own = experiments.get(name).build("cpu").train
        mine = [(r.seed, r.config.train.max_steps) for r in runs if r.name == name]
        short = math.ceil(own.max_steps * fraction)
        arm = experiments.arm(name, "cpu")
        if name in heads:  # five seeds at its own protocol, then seed 0 at the illustrations' (for their pages)
            assert mine == [(s, own.max_steps) for s in range(5)] + [(0, short)], name
            assert _steps(name, protocol=ILLUSTRATIONS) == short and _steps(name) == own.max_steps
            assert not arm.illustrates and arm.trains_at == (OWN, ILLUSTRATIONS)
            assert (arm.seeds(), arm.seeds(ILLUSTRATIONS), arm.steps(), arm.steps(ILLUSTRATIONS)) == (
                tuple(range(5)),
                (0,),
                1,
                fraction,
            )
        else:
            assert mine == [(0, short)], name
            assert experiments.seeds_of(name, "cpu") == (0,)
            assert arm.illustrates and arm.trains_at == (OWN,) and arm.steps() == arm.steps(ILLUSTRATIONS) == fraction
    # the schedule keeps its shape, and the evaluations their spacing: half as many
    illus = next(r.config.train for r in runs if r.name not in heads)
    own = experiments.get(next(r.name for r in runs if r.name not in heads)).build("cpu").train
    assert illus.max_steps // illus.eval_interval == 5 and illus.eval_interval <= own.eval_interval
    assert abs(illus.warmup_steps / illus.max_steps - own.warmup_steps / own.max_steps) < 0.01


@pytest.mark.parametrize("profile", ["smoke", "gpu", "paper"])
def test_only_cpu_shortens_the_illustrations(profile):
    for chapter in SHORTENED:
        assert experiments.illustration_steps(chapter, profile) == 1
        for name in experiments.names(chapter):
            if experiments.runs_at(name, profile):
                assert experiments.config(name, profile, device="cpu") == dataclasses.replace(
                    experiments.get(name).build(profile), device="cpu"
                ), name
                arm = experiments.arm(name, profile)
                assert not arm.illustrates and arm.trains_at == (OWN,) and arm.steps(ILLUSTRATIONS) == 1, name
        assert experiments.page_protocol(experiments.names(chapter), profile) is OWN


def test_chapters_that_keep_their_steps_plan_no_second_protocol():
    for chapter in ("mixer", "retrieval", "formal_ed"):
        assert experiments.illustration_steps(chapter, "cpu") == 1
        runs = experiments.plan(chapter, "cpu", device="cpu")
        assert len({(r.name, r.seed) for r in runs}) == len(runs), chapter
    # a page of the mixer chapter shows its headline arms with their five seeds beside one-seed illustrations
    assert experiments.page_protocol(["mixer/llama_d512", "mixer/llama_d256"], "cpu") is OWN
    assert experiments.arm("mixer/llama_d256", "cpu").illustrates
    assert experiments.arm("mixer/llama_d512", "cpu").trains_at == (OWN,)


def test_a_page_reads_every_arm_at_the_illustrations_protocol_when_one_of_them_illustrates():
    head = ["ar_ed/mse_pos_sub", "ar_ed/baseline"]
    assert experiments.page_protocol(head, "cpu") is OWN
    assert experiments.page_protocol(head + ["ar_ed/smaller_baseline"], "cpu") is ILLUSTRATIONS
    together = experiments.plan(head + ["ar_ed/smaller_baseline"], "cpu", device="cpu", protocol=ILLUSTRATIONS)
    assert [(r.name, r.seed, r.config.train.max_steps) for r in together] == [
        ("ar_ed/mse_pos_sub", 0, 250),
        ("ar_ed/baseline", 0, 250),
        ("ar_ed/smaller_baseline", 0, 250),
    ]
    # an override of the steps (a notebook's max_steps) still wins
    assert _steps("ar_ed/smaller_baseline", overrides={"train.max_steps": 40}) == 40


def test_scaling_a_schedule_keeps_its_shape():
    t = experiments.get("deepsight/mse_d3").build("cpu").train
    assert experiments.steps_scaled(t, 1) is t
    half = experiments.steps_scaled(t, 0.5)
    assert (half.max_steps, half.warmup_steps, half.decay_steps, half.eval_interval, half.log_interval) == (
        500,
        round(t.warmup_steps / 2 + 0.5),
        t.decay_steps // 2,
        t.eval_interval,
        t.log_interval,
    )
    assert experiments.steps_scaled(t, 0.25).eval_interval == 50  # at least five evaluations
    assert experiments.steps_scaled(t.replace(max_steps=3, warmup_steps=0), 0.1).max_steps == 2
    with pytest.raises(ValueError, match="cpu_illustration_steps"):
        headline_comparisons.headline(
            "ar_ed", "x", ("ar_ed/mse_pos_sub", "ar_ed/baseline"), "why", cpu_illustration_steps=0.25
        )
    with pytest.raises(ValueError, match="cpu_illustration_steps"):
        headline_comparisons.headline(
            "mixer", "x", ("mixer/flat_d512", "mixer/llama_d512"), "why", cpu_illustration_steps=0
        )
