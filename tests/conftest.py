"""Shared fixtures: every test session gets its own run store and cache, so tests never touch runs/ or .cache/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The offline corpora: $LMC_DATA_DIR where it is set (as `make` sets it), else ../shared/data beside the repository.
SHARED_DATA = Path(os.environ.get("LMC_DATA_DIR") or REPO.parent / "shared" / "data")
# The shared folder's other material (the write-ups in seeds/): beside the corpora $LMC_DATA_DIR names (a clone made
# outside the folder that holds shared/, with LMC_DATA_DIR=.../shared/data), else beside the repository.
SHARED = next(
    (p for p in (SHARED_DATA.parent, REPO.parent / "shared") if (p / "seeds").is_dir()), REPO.parent / "shared"
)


# The slowest tests (`pytest --durations`: each runs for a minute or more of CPU time, mostly in subprocesses), longest
# first, run before all the others: `make unit` spreads the tests over its workers (pytest-xdist), and one of these
# started last would keep one core busy after the other has finished. Only the order changes.
SLOWEST_FIRST = (
    "test_reliability.py::test_counting_and_planning_need_neither_network_nor_data",
    "test_retrieval.py::test_a_retrieval_run_killed_with_sigkill_resumes_byte_identically",
    "test_retrieval.py::test_wikipedia_leads_from_the_data_folder_never_occur_in_their_targets",
    "test_campaign.py::test_the_gpu_pack_is_under_48_mib_and_gives_by_itself_the_keys_and_tokens_of_a_cpu_build",
    "test_reliability.py::test_a_ctrl_c_from_outside_resumes_byte_identical",
    "test_reliability.py::test_sigterm_or_sighup_finishes_the_step_and_checkpoint_and_resumes_byte_identical",
    "test_campaign.py::test_the_gpu_plan_s_first_slot_fits_8_minutes_checks_its_families_benches_gpt2_small_and_decides_headlines",
    "test_pool.py::test_train_chapter_all_plans_every_chapter_once",
    "test_plan.py::test_a_plan_needs_neither_data_nor_network",
    "test_reliability.py::test_a_batch_too_large_for_memory_names_what_ran_out_and_the_setting_to_lower",
    "test_cli.py::test_train_command_trains_then_reuses",
    "test_cli.py::test_params_all_at_paper_profile_reproduces_published_counts",
)


# The slow tier (`pytest -m slow`, `make test-slow`; CI runs it after `make test`): system tests that start commands in
# processes of their own and signal, kill or starve them, the GPU pack, the offline plans of write-up-sized models
# (counting their FLOPs), and statistical calibrations that draw thousands of samples. Each takes 9 s or more on the
# 2-core build machine (`pytest --durations`, alone or once the others no longer count the FLOPs it needs); together
# most of the unit tests' CPU time, so that `make test` keeps within its 12 minutes. Every test named here runs in CI; tests/test_architecture.py checks that each
# name is a test that exists.
SLOW = (
    "test_reliability.py::test_counting_and_planning_need_neither_network_nor_data",
    "test_campaign.py::test_the_gpu_pack_is_under_48_mib_and_gives_by_itself_the_keys_and_tokens_of_a_cpu_build",
    "test_fault_classes.py::test_sigterm_stops_every_long_command_with_one_true_message_and_no_process_left",
    "test_retrieval.py::test_a_retrieval_run_killed_with_sigkill_resumes_byte_identically",
    "test_cli.py::test_bench_runs_for_every_kind_of_experiment",
    "test_stats.py::test_similarity_errs_at_most_five_percent_of_the_time_at_the_margin",
    "test_reliability.py::test_a_ctrl_c_from_outside_resumes_byte_identical",
    "test_fault_classes.py::test_ctrl_c_or_sighup_to_a_pool_stops_its_workers_and_keeps_their_checkpoints",
    "test_reliability.py::test_sigterm_or_sighup_finishes_the_step_and_checkpoint_and_resumes_byte_identical",
    "test_reliability.py::test_a_batch_too_large_for_memory_names_what_ran_out_and_the_setting_to_lower",
    "test_fault_classes.py::test_a_pool_whose_parent_is_killed_leaves_no_worker",
    "test_ddp.py::test_two_process_ddp_matches_one_process",
    "test_regression.py::test_a_run_agrees_within_the_tolerance_across_instruction_sets_and_threads",
    "test_fault_classes.py::test_a_notebook_s_relative_run_store_is_where_run_notebook_started",
    "test_pool.py::test_a_run_trained_in_the_pool_is_the_run_one_process_trains",
    "test_pool.py::test_every_planned_run_is_trained_once_and_a_reader_after_what_it_reads",
    "test_retrieval.py::test_wikipedia_leads_from_the_data_folder_never_occur_in_their_targets",
    "test_stats.py::test_the_rule_errs_on_equal_arms_at_most_five_percent_of_the_time",
    "test_reliability.py::test_a_full_disk_during_training_ends_with_the_message_and_keeps_the_previous_checkpoint",
    # the gpu campaign's plan and every chapter's plan, which count the FLOPs of every gpu-sized model
    "test_campaign.py::test_the_gpu_plan_s_first_slot_fits_8_minutes_checks_its_families_benches_gpt2_small_and_decides_headlines",
    "test_pool.py::test_train_chapter_all_plans_every_chapter_once",
    "test_fault_classes.py::test_every_output_a_command_writes_is_written_whole_under_a_temporary_name[campaign]",
    # the README's steps for adding a chapter, in a copy of the repository, up to a built page (about a minute)
    "test_add_chapter.py::test_a_chapter_added_by_the_readme_s_steps_builds_its_page",
)


def _name(item) -> str:
    return item.nodeid.split("[")[0].rsplit("/", 1)[-1]


def pytest_collection_modifyitems(items):
    for item in items:  # a test by its name, or one case of it by its name and parameters
        if _name(item) in SLOW or item.nodeid.rsplit("/", 1)[-1] in SLOW:
            item.add_marker(pytest.mark.slow)

    def rank(item):
        name = _name(item)
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: every other test keeps its order


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory):
    old = {k: os.environ.get(k) for k in ("LMC_RUNS_DIR", "LMC_CACHE_DIR", "LMC_PROGRESS")}
    os.environ["LMC_RUNS_DIR"] = str(tmp_path_factory.mktemp("runs"))
    os.environ["LMC_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["LMC_PROGRESS"] = "0"
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def data_dir():
    """The offline corpora (../shared/data or $LMC_DATA_DIR); tests that need them skip without them."""
    path = Path(os.environ.get("LMC_DATA_DIR") or SHARED_DATA)
    if not (path / "wikipedia").is_dir():
        pytest.skip("no offline corpora: set LMC_DATA_DIR (e.g. ../shared/data)")
    return path


def tiny_run(name="test/tiny", *, steps=12, seed=0, **train_kw):
    """A run config that trains in about a second on the generated corpus."""
    from lmcompanion.config import TrainConfig
    from lmcompanion.run import RunConfig
    from lmcompanion.data import LMDataConfig, vocab_size
    from lmcompanion.models.baseline import BaselineConfig

    data = LMDataConfig(corpus="synthetic", tokenizer="char")
    model = BaselineConfig(vocab_size=vocab_size(data), context_size=16, n_embed=16, n_head=2, n_layer=2)
    kw = dict(
        batch_size=4,
        max_steps=steps,
        eval_interval=4,
        eval_batches=2,
        log_interval=1,
        lr=3e-3,
        warmup_steps=2,
        deterministic=True,
    )
    kw.update(train_kw)
    return RunConfig(name=name, model=model, data=data, train=TrainConfig(**kw), seed=seed)
