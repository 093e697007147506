"""Issue 49, items 5, 6 and 8: data that lasts (a corpus read from several of its files, at gpu and paper only; the
pack that carries its token ids and not its text), weight-dependent measures recorded with a run, and the GPT-2-small
bench's sweep of micro-batches with the profiler's idle time."""

from __future__ import annotations

import hashlib
import json

import pytest

from lmcompanion import data, experiments, fingerprint, models
from lmcompanion.data import JoinedDataConfig, LMDataConfig, joined
from lmcompanion.errors import ConfigError, DataError
from lmcompanion.experiments import mixer as mixer_exp
from lmcompanion.experiments.protocol import WIKIPEDIA_FILES
from lmcompanion.run import TRAINER

FIRST, SECOND = "wiki/a.txt", "wiki/b.txt"


def _doc(i: int, body: str) -> str:
    return f'<doc id="{i}" url="?curid={i}" title="T{i}">\nT{i}\n\n{body}\n</doc>\n'


@pytest.fixture
def two_files(tmp_path, monkeypatch):
    """A data folder with two WikiExtractor files (a title-only stub in each) and a SHA256SUMS of both."""
    root = tmp_path / "data"
    (root / "wiki").mkdir(parents=True)
    (root / FIRST).write_text("".join(_doc(i, f"alpha {i} " * 40) for i in range(30)) + _doc(99, ""))
    (root / SECOND).write_text("".join(_doc(100 + i, f"omega {i} " * 40) for i in range(30)) + _doc(199, ""))
    sums = "".join(f"{hashlib.sha256((root / f).read_bytes()).hexdigest()}  {f}\n" for f in (FIRST, SECOND))
    (root / joined.SUMS).write_text(sums)
    monkeypatch.setenv("LMC_DATA_DIR", str(root))
    return root


def _cfg(**kw) -> JoinedDataConfig:
    return JoinedDataConfig(**{"corpus": "wikipedia", "files": (FIRST, SECOND), "tokenizer": "char", **kw})


def test_a_joined_corpus_reads_every_file_in_order_cleaned_and_cuts_the_whole(two_files):
    texts = joined.load_texts(_cfg())
    whole = texts["train"] + texts["val"]
    assert whole.index("alpha 29") < whole.index("omega 0") and "T99" not in whole and "T199" not in whole
    assert "omega" in texts["val"] and "alpha" not in texts["val"]  # the last tenth of the joined text
    assert len(texts["train"]) == int(0.9 * len(whole))
    head = joined.load_texts(_cfg(max_chars=500))
    assert len(head["train"] + head["val"]) == 500 and "omega" not in head["train"] + head["val"]


def test_its_fingerprint_names_each_file_from_its_bytes_or_else_the_data_folder_s_digests(two_files, tmp_path,
                                                                                          monkeypatch):
    cfg = _cfg()
    here = cfg.fingerprint()
    assert here.startswith("sha256:") and here != _cfg(files=(SECOND, FIRST)).fingerprint()  # the order is part of it
    # a machine with the digests and not the text (a GPU machine's restored pack) names the same data
    elsewhere = tmp_path / "restored"
    elsewhere.mkdir()
    (elsewhere / joined.SUMS).write_text((two_files / joined.SUMS).read_text())
    monkeypatch.setenv("LMC_DATA_DIR", str(elsewhere))
    assert cfg.fingerprint() == here
    (elsewhere / joined.SUMS).write_text((two_files / joined.SUMS).read_text().splitlines()[0] + "\n")
    with pytest.raises(DataError, match="b.txt does not exist"):
        cfg.fingerprint()
    # a changed file is other data
    monkeypatch.setenv("LMC_DATA_DIR", str(two_files))
    (two_files / SECOND).write_text((two_files / SECOND).read_text() + _doc(300, "more"))
    assert cfg.fingerprint() != here


def test_every_door_reads_the_joined_tokens_not_the_corpus_s_first_file(two_files):
    cfg = _cfg()
    run = experiments.config("ar_ed/baseline", "smoke", device="cpu")
    run = run.replace(data=cfg, model=run.model.replace(vocab_size=data.vocab_size(cfg)))
    tokens = data.load_tokens(cfg)
    n = sum(a.size for a in tokens.splits.values())
    assert n == sum(len(t) for t in joined.load_texts(cfg).values())  # one character, one token
    assert data.build_source(run).data.splits["train"].size == tokens.splits["train"].size
    assert cfg.sequences_per_epoch(run.model) == tokens.splits["train"].size / run.model.context_size
    assert 0 < data.unigram_loss(run) < 10
    assert set(data.tokenizer(cfg).decode(tokens.splits["val"][:50].tolist())) <= set("omega 0123456789T\n")


def test_a_joined_config_names_two_distinct_files_inside_the_data_folder():
    with pytest.raises(ConfigError, match="two or more distinct"):
        JoinedDataConfig(corpus="wikipedia", files=(FIRST,), tokenizer="char")
    with pytest.raises(ConfigError, match="inside the data folder"):
        JoinedDataConfig(corpus="wikipedia", files=(FIRST, "../b.txt"), tokenizer="char")
    with pytest.raises(ConfigError, match="rule of fractions"):
        JoinedDataConfig(corpus="wikipedia", files=(FIRST, SECOND), tokenizer="char", split="given",
                         eval_splits=("all",))


def test_gpu_and_paper_read_both_wikipedia_files_and_cpu_and_smoke_runs_never_execute_the_joined_module():
    """The cpu and smoke runs keep their corpus, so their configs and keys: the joined data kind is a module of its
    own, outside their code closure (editing it retrains none of them)."""
    for name in ("ar_ed/baseline", "deepsight/mse_d11", "ar_ed/mse_pos_sub"):
        for profile in ("gpu", "paper"):
            d = experiments.config(name, profile, device="cpu").data
            assert isinstance(d, JoinedDataConfig) and d.files == WIKIPEDIA_FILES and d.tokenizer == "gpt2"
        assert type(experiments.config(name, "cpu", device="cpu").data) is LMDataConfig
    assert WIKIPEDIA_FILES[0] == data.corpora.get("wikipedia").files["all"]
    for profile in ("cpu", "smoke"):
        for chapter in experiments.CHAPTERS:
            for run in experiments.plan(chapter, profile, device="cpu"):
                fn = run.procedure.fn
                roots = (fn.__module__ if fn else TRAINER, models.module_of(run.config.model.family),
                         data.module_of(run.config.data.kind))
                assert "lmcompanion.data.joined" not in fingerprint.closure(*roots), run.id


def test_the_mixer_s_wikipedia_setting_is_the_headline_s_arms_on_wikipedia_at_gpu_and_paper_only():
    for name, base in mixer_exp.WIKIPEDIA_ARMS.items():
        exp = experiments.get(name)
        assert "the book's setting" in exp.title and exp.profiles == ("gpu", "paper")
        for profile in ("gpu", "paper"):
            ours, theirs = (experiments.config(n, profile, device="cpu") for n in (name, base))
            assert ours.model == theirs.model and ours.train == theirs.train and ours.tokens() == theirs.tokens()
            assert isinstance(ours.data, JoinedDataConfig) and ours.data.files == WIKIPEDIA_FILES
            assert ours.data.vocab_size == theirs.data.vocab_size
            assert experiments.seeds_of(name, profile) == experiments.seeds_of(base, profile)
        assert experiments.config(name, "gpu", device="cpu").data.max_chars == mixer_exp.WIKIPEDIA_HEAD
    for profile in ("cpu", "smoke"):
        assert not any(n in mixer_exp.WIKIPEDIA_ARMS for n in (r.name for r in experiments.plan("mixer", profile)))


# --- the pack: a joined corpus's token ids and its files' digests, not its text ------------------------------------


def test_a_pack_carries_a_joined_corpus_s_tokens_and_digests_and_names_the_same_data_without_its_text(
        two_files, tmp_path, monkeypatch):
    from lmcompanion.campaign import pack as pack_mod

    cfg = _cfg()
    run = experiments.config("ar_ed/baseline", "smoke", device="cpu")
    run = run.replace(data=cfg, model=run.model.replace(vocab_size=data.vocab_size(cfg)))
    here, ids = cfg.fingerprint(), data.load_tokens(cfg).splits["train"].copy()
    carried, named = pack_mod._corpus_files([run])
    assert carried == [] and named == [FIRST, SECOND]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "demo-1.0-py3-none-any.whl").write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(pack_mod.plan_mod, "steps", lambda *a, **k: [])
    monkeypatch.setattr(pack_mod, "_run_configs", lambda steps: [run])
    manifest = pack_mod.make_pack(tmp_path / "pack", "smoke", wheels=wheels, log=lambda *a: None)
    data_files = {v["unpacks_to"] for v in manifest["files"].values() if v["kind"] == "data"}
    assert data_files == {joined.SUMS}  # no text
    caches = [v for v in manifest["files"].values() if v["kind"] == "cache"]
    assert caches and all(v["unpacks_to"] and v["bytes"] < v["unpacked_bytes"] for v in caches if v["unpacked_bytes"] > 1000)
    # arrival: an empty cache, no data folder; the text may not be read
    for k in ("LMC_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(k, "")
    monkeypatch.delenv("LMC_DATA_DIR")
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "arrival"))
    pack_mod.unpack(tmp_path / "pack", log=lambda *a: None)
    monkeypatch.setattr(joined, "load_texts", lambda c: pytest.fail("the text was read again"))
    assert cfg.fingerprint() == here
    assert (data.load_tokens(cfg).splits["train"] == ids).all()


def test_a_pack_entry_that_names_part_of_a_compressed_file_is_refused(tmp_path):
    from lmcompanion.campaign import pack as pack_mod
    from lmcompanion.untrusted import Untrusted

    sha = "0" * 64
    manifest = {"files": {"cache/tokens/x.bin.gz": {"sha256": sha, "bytes": 3, "kind": "cache", "unpacks_to": "x"}}}
    with pytest.raises(Untrusted, match="but not all of them"):
        pack_mod._pack_targets(tmp_path, manifest, tmp_path / "cache")
    whole = {**manifest["files"]["cache/tokens/x.bin.gz"], "unpacked_sha256": sha, "unpacked_bytes": 9}
    targets = pack_mod._pack_targets(tmp_path, {"files": {"cache/tokens/x.bin.gz": whole}}, tmp_path / "cache")
    assert targets == {"cache/tokens/x.bin.gz": tmp_path / "cache" / "x"}
