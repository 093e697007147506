"""Recorded runs: made elsewhere, committed without weights, imported, shown and judged at their own profile."""

import json

import pytest

from lmcompanion import claims, cli, experiments, nb, recorded
from lmcompanion.chapters import ar_ed  # noqa: F401  (registers the chapter's rows)
from lmcompanion.errors import CheckpointError, LMCError
from lmcompanion.train import RunStore

NAMES = ["ar_ed/baseline", "ar_ed/mse_pos_sub"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Smoke runs made in one store ("the GPU machine") and written as recorded-run files."""
    made = RunStore(tmp_path_factory.mktemp("elsewhere"))
    runs = [made.run(experiments.config(n, "smoke", seed=s)) for n in NAMES for s in (0, 1, 2)]
    out = tmp_path_factory.mktemp("recorded")
    written = recorded.write(runs, out)
    return out, written, runs


def test_a_recorded_file_has_metrics_config_and_provenance_but_no_weights(files):
    out, written, runs = files
    assert len(written) == 6 and all(p.parent == out / "smoke" for p in written)
    record = json.loads(written[0].read_text())
    assert record["format"] == recorded.FORMAT and record["profile"] == "smoke" and record["experiment"] == NAMES[0]
    assert record["metrics"] and record["summary"]["final"]["val"] > 0 and "wall_time_s" in record["summary"]
    prov = record["provenance"]
    for key in ("device", "torch", "libraries", "commit", "code_fingerprint", "data_fingerprint", "key", "command"):
        assert key in prov
    assert not any(p.suffix == ".pt" for p in out.rglob("*"))
    assert sum(p.stat().st_size for p in written) < 200_000  # small enough to commit


def test_import_then_find_by_profile_and_judge(files, tmp_path, monkeypatch):
    out, _, made = files
    monkeypatch.setenv("LMC_RUNS_DIR", str(tmp_path / "runs"))
    store = RunStore()
    imported = recorded.import_dir(out, store)
    assert len(imported) == 6 and all(r.finished for r in imported)
    assert len(recorded.import_dir(out, store)) == 6  # idempotent
    found = recorded.arms(NAMES, exclude_profile="cpu", store=store)
    assert list(found) == ["smoke"] and [r.seed for r in found["smoke"].runs["ar_ed/baseline"]] == [0, 1, 2]
    assert recorded.arms(NAMES, exclude_profile="smoke", store=store) == {}  # the build's own profile is left out
    ours = {r.config.name: r for r in found["smoke"].runs["ar_ed/mse_pos_sub"]}
    assert found["smoke"].runs["ar_ed/mse_pos_sub"][0].summary["final"] == made[3].summary["final"]
    S = nb.setup(profile="cpu")
    rows = nb.recorded_rows(S, "ar_ed", NAMES)["smoke"]  # as a page decides them: the rows whose arms were recorded
    arms = {r.text: r.arms for r in claims.rows("ar_ed")}
    assert rows and all(set(NAMES) >= set(arms[v.claim]) for v in rows)
    with pytest.raises(CheckpointError, match="recorded run .* but not its weights"):
        found["smoke"].runs["ar_ed/baseline"][0].load_model()
    table = nb.recorded_table(nb.recorded_arms(S, NAMES))
    assert table.loc["smoke", "runs"] == 6
    del ours


def test_a_run_recorded_under_an_older_config_is_stale(files, tmp_path):
    out, written, _ = files
    changed = tmp_path / "changed"
    (changed / "smoke").mkdir(parents=True)
    record = json.loads(written[0].read_text())
    record["config"]["train"]["lr"] *= 2
    record["provenance"]["key"] = "0" * 12
    (changed / "smoke" / written[0].name).write_text(json.dumps(record))
    store = RunStore(tmp_path / "runs")
    recorded.import_dir(changed, store)
    found = recorded.arms(NAMES, store=store)
    assert found["smoke"].runs == {} and len(found["smoke"].stale) == 1


def test_the_command_line_records_and_imports(files, tmp_path, monkeypatch, capsys):
    _, _, runs = files
    monkeypatch.setenv("LMC_RUNS_DIR", str(tmp_path / "runs"))
    assert cli.main(["record", str(runs[0].path), "-o", str(tmp_path / "rec")]) == 0
    assert cli.main(["import-recorded", str(tmp_path / "rec")]) == 0
    assert "1 recorded runs" in capsys.readouterr().out


def test_a_run_with_overrides_cannot_be_recorded(tmp_path):
    run = RunStore(tmp_path).run(experiments.config("ar_ed/baseline", "smoke", overrides={"train.max_steps": 3}))
    with pytest.raises(LMCError, match="not the config of experiment"):
        recorded.export(run)


def test_a_row_whose_measure_evaluates_the_model_is_not_decided_on_recorded_runs(tmp_path):
    """The hourglass rows scored on each window's last token evaluate the trained model; recorded runs carry no
    weights (the first H200 slot's runs stopped the hourglass verdict page on that). They are not decided, with the
    reason, and the rows decided from the recorded metrics still are."""
    from lmcompanion import claims
    from lmcompanion.train.store import NoRunFiles

    names = ["hourglass/vanilla", "hourglass/attn_384_32_e6"]
    made = RunStore(tmp_path / "elsewhere")
    runs = [made.run(experiments.config(n, "smoke", seed=s)) for n in names for s in (0, 1)]
    store = RunStore(tmp_path / "runs")
    recorded.import_dir(recorded.write(runs, tmp_path / "recorded")[0].parent, store)
    found = recorded.arms(names, store=store)["smoke"].runs
    with pytest.raises(NoRunFiles):
        found["hourglass/vanilla"][0].load_model()
    rows = {v.claim: v for v in claims.verdicts("hourglass", claims.Context(found))}
    last_token = [c for c in rows if "last token" in c and "384-32" in c]
    assert last_token and all(
        "needs the run's files" in rows[c].ours and "carries metrics, not files" in rows[c].verdict for c in last_token
    )
    tail = [c for c in rows if "last 32 tokens" in c and "384-32" in c]
    assert tail and all("files" not in rows[c].verdict for c in tail)


def test_a_value_the_page_computes_is_not_decided_on_recorded_runs_and_stops_the_build_s_own_page():
    """The formal chapter's checks read values its verdict page computes (``Context.extra``). Judged from recorded
    runs, which carry none, they are not decided, with the reason. In a build's own context a missing value is a
    defect of the page, and it still stops it."""
    from lmcompanion import claims
    from lmcompanion.verdicts import NOT_DECIDED

    rows = {v.claim: v for v in claims.verdicts("formal_ed", claims.Context({}))}
    agreement = rows[claims.rows("formal_ed")[0].text]
    assert agreement.outcome == NOT_DECIDED and "computed on its page" in agreement.verdict
    with pytest.raises(claims.NotComputed):
        claims.verdicts("formal_ed", claims.Context({}, "cpu"))
    assert claims.Context({}, "cpu", extra={"a": 1}).extra.get("b") is None  # get still defaults
