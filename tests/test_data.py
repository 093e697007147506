import numpy as np
import pytest
import torch

from lmcompanion.config import TrainConfig
from lmcompanion.data import LMDataConfig, corpora, lm, load_tokens, synthetic, tokenizers
from lmcompanion.data.lm import LMSource, TokenData
from lmcompanion.errors import ConfigError, DataError


def _source(n=1000, T=8, world=1, rank=0, **kw):
    arr = np.arange(n, dtype=np.uint16)
    data = TokenData({"train": arr, "val": arr[:300]}, 1000, "test", "generated", {"train": n, "val": 300}, "test")
    cfg = TrainConfig(**{"batch_size": 4, "grad_accum": 2, "eval_batches": 3, **kw})
    return LMSource(data, T, cfg, seed=7, rank=rank, world=world)


def test_generated_corpus_is_deterministic_and_labelled():
    assert synthetic.generate() == synthetic.generate()
    assert corpora.get("synthetic").generated
    assert "GENERATED" in corpora.get("synthetic").description


def test_chars_90_10_split_is_by_characters_and_exact():
    text = synthetic.generate()
    splits = corpora.load_splits("synthetic", "chars_90_10")
    n = int(0.9 * len(text))
    assert splits["train"] == text[:n] and splits["val"] == text[n:]
    three = corpora.load_splits("synthetic", "chars_80_10_10")
    assert "".join(three[s] for s in ("train", "val", "test")) == text


def test_char_tokenizer_round_trips():
    tok = tokenizers.CharTokenizer.from_texts(["hello", "world"])
    assert tok.chars == "dehlorw" and tok.decode(tok.encode("hello world"[:5])) == "hello"
    with pytest.raises(DataError, match="not in this character vocabulary"):
        tok.encode("z")


def test_training_windows_are_next_token_pairs_and_a_function_of_seed_and_step():
    src = _source()
    batches = src.train_batches(3)
    assert len(batches) == 2 and batches[0]["idx"].shape == (4, 8)
    for b in batches:
        assert torch.equal(b["targets"][:, :-1], b["idx"][:, 1:])
        assert torch.equal(b["targets"][:, -1], b["idx"][:, -1] + 1)  # the data are 0, 1, 2, ...
    again = _source().train_batches(3)
    assert all(torch.equal(a["idx"], b["idx"]) for a, b in zip(batches, again))
    assert not torch.equal(batches[0]["idx"], src.train_batches(4)[0]["idx"])


def test_ddp_processes_split_each_global_step_between_them():
    single = _source().train_batches(5)
    r0 = _source(world=2, rank=0).train_batches(5)
    r1 = _source(world=2, rank=1).train_batches(5)
    assert torch.equal(single[0]["idx"], r0[0]["idx"]) and torch.equal(single[1]["idx"], r1[0]["idx"])


def test_accumulation_must_split_over_the_processes():
    from lmcompanion.train.distributed import Dist, check_accumulation

    check_accumulation(4, Dist(world=2))
    with pytest.raises(
        ConfigError,
        match=r"grad_accum=3 must be a multiple of the number of processes \(2\).*"
        r"--set train.grad_accum=2",
    ):
        check_accumulation(3, Dist(world=2))


def test_strided_evaluation_windows_are_fixed_and_span_the_split():
    src = _source()
    a = list(src.eval_batches("val", 10))
    b = list(src.eval_batches("val", 20))
    assert len(a) == 3 and all(torch.equal(x["idx"], y["idx"]) for x, y in zip(a, b))
    starts = torch.cat([x["idx"][:, 0] for x in a])
    assert starts.min() == 0 and starts.max() == 300 - 8 - 1
    rnd = _source(eval_sampling="random")
    assert not torch.equal(next(rnd.eval_batches("val", 10))["idx"], next(rnd.eval_batches("val", 20))["idx"])


def test_too_short_split_is_a_clear_error():
    with pytest.raises(DataError, match=r"split 'val' has 300 tokens, too few .* lower model.context_size"):
        _source(T=400)


def test_unknown_corpus_and_split_rule_are_rejected_early():
    with pytest.raises(ConfigError, match=r"unknown corpus 'wikipedai' \(did you mean 'wikipedia'\?\)"):
        LMDataConfig(corpus="wikipedai")
    with pytest.raises(ConfigError, match="unknown split rule"):
        LMDataConfig(split="90/10")
    with pytest.raises(ConfigError, match="needs data.vocab_size"):
        LMDataConfig(tokenizer="bpe")


def test_missing_corpus_names_the_fixes(monkeypatch, tmp_path):
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError) as err:
        corpora.load_splits("tinystories", "given")
    msg = str(err.value)
    assert "LMC_DATA_DIR" in msg and "Hugging Face hub" in msg and "data.corpus=synthetic" in msg
    assert "TinyStories-train.head-2MiB.txt does not exist" in msg


def test_token_cache_is_written_once_and_memory_mapped():
    cfg = LMDataConfig(corpus="synthetic", tokenizer="char")
    first = load_tokens(cfg)
    assert isinstance(first.splits["train"], np.memmap) and first.source == "generated"
    tok = lm.tokenizer(cfg)
    text = corpora.load_splits("synthetic", "chars_90_10")["val"]
    assert tok.decode(first.splits["val"][:50].tolist()) == text[:50]
    assert load_tokens(cfg).splits["train"].filename == first.splits["train"].filename


def test_bpe_is_trained_on_train_split_and_cached():
    cfg = LMDataConfig(corpus="synthetic", tokenizer="bpe", vocab_size=300, max_chars=50_000)
    tok = lm.tokenizer(cfg)
    assert (
        tok.vocab_size == 300
        and tok.decode(tok.encode("the cat sat.\nada had 3 cups")) == "the cat sat.\nada had 3 cups"
    )
    again = lm.tokenizer(cfg)
    assert again.tok.to_str() == tok.tok.to_str()
    with pytest.raises(DataError, match="too small for this vocabulary"):
        lm.tokenizer(LMDataConfig(corpus="synthetic", tokenizer="bpe", vocab_size=5000, max_chars=2000))


# --- the offline corpora in ../shared/data (skipped without them) ------------------------------------


def test_gpt2_tokenizer_works_offline_from_the_data_folder(data_dir, monkeypatch):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    tok = tokenizers.GPT2Tokenizer()
    assert tok.encode("Hello world") == [15496, 995] and tok.vocab_size == 50257
    assert tok.encode("<|endoftext|>") != [50256]  # encode_ordinary: no special tokens, as the write-ups


def test_wikipedia_is_cleaned_of_wikiextractor_markup(data_dir, monkeypatch):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    text = corpora.load_raw("wikipedia", "all")
    assert "<doc" not in text and "</doc>" not in text
    assert text.startswith("Jarred Shaw\n\nJarred Shaw (born September 28, 1990)")  # title-only pages are dropped
    assert text.count("\n\n") >= 11_569  # 11,570 articles with body text


def test_tinystories_keeps_its_own_splits(data_dir, monkeypatch):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    splits = corpora.load_splits("tinystories", "given")
    assert set(splits) == {"train", "val"} and len(splits["train"]) > 2_000_000
    with pytest.raises(DataError, match="use split='given'"):
        corpora.load_splits("tinystories", "chars_90_10")


def test_shakespeare_char_matches_nanogpt(data_dir, monkeypatch):
    monkeypatch.setenv("LMC_DATA_DIR", str(data_dir))
    d = load_tokens(LMDataConfig(corpus="shakespeare_char", tokenizer="char"))
    assert d.vocab_size == 65  # nanoGPT's shakespeare_char vocabulary
    assert d.splits["train"].size == int(0.9 * 1_115_394) and d.splits["val"].size == 1_115_394 - int(0.9 * 1_115_394)
    assert d.source.startswith("local:")


# --- the efficient-transformer protocol: epoch sampler and sliding evaluation windows ----------------------------


def _data_source(n=1000, T=8, world=1, rank=0, train=None, **data_kw):
    arr = np.arange(n, dtype=np.uint16)
    data = TokenData(
        {"train": arr, "val": arr[:300], "test": arr[:100]},
        1000,
        "test",
        "generated",
        {"train": n, "val": 300, "test": 100},
        "test",
    )
    cfg = TrainConfig(**{"batch_size": 4, "grad_accum": 2, "eval_batches": 3, **(train or {})})
    dcfg = LMDataConfig(split="chars_80_10_10", **data_kw)
    return LMSource(data, T, cfg, seed=7, rank=rank, world=world, data_cfg=dcfg)


def test_epoch_sampler_takes_every_window_once_per_epoch():
    src = _data_source(n=108, T=8, train_windows="epochs")  # 100 stride-1 windows, 8 per step
    N = src.n_windows("train")
    assert N == 100
    starts = torch.cat([b["idx"][:, 0] for step in range(25) for b in src.train_batches(step)])  # 200 = 2 epochs
    for epoch in (starts[:N], starts[N:]):
        assert sorted(epoch.tolist()) == list(range(N))  # every window exactly once
    assert not torch.equal(starts[:N], starts[N:])  # a fresh order each epoch
    assert not torch.equal(starts[:N], torch.arange(N))  # shuffled
    b = src.train_batches(3)[0]
    assert torch.equal(b["targets"][:, :-1], b["idx"][:, 1:]) and torch.equal(b["targets"][:, -1], b["idx"][:, -1] + 1)


def test_epoch_sampler_is_a_pure_function_of_seed_and_step():
    a = _data_source(n=108, T=8, train_windows="epochs")
    b = _data_source(n=108, T=8, train_windows="epochs")
    late = [x["idx"] for x in a.train_batches(17)]  # epoch 1 first, out of order
    for step in (0, 12, 17, 3):
        for x, y in zip(a.train_batches(step), b.train_batches(step)):
            assert torch.equal(x["idx"], y["idx"])
    assert all(torch.equal(x, y["idx"]) for x, y in zip(late, b.train_batches(17)))
    other = LMSource(a.data, 8, a.cfg, seed=8, data_cfg=a.dcfg)
    assert not torch.equal(other.train_batches(0)[0]["idx"], a.train_batches(0)[0]["idx"])
    # DDP: the processes split each global step between them
    r0 = _data_source(n=108, T=8, world=2, rank=0, train_windows="epochs").train_batches(5)
    r1 = _data_source(n=108, T=8, world=2, rank=1, train_windows="epochs").train_batches(5)
    single = a.train_batches(5)
    assert torch.equal(single[0]["idx"], r0[0]["idx"]) and torch.equal(single[1]["idx"], r1[0]["idx"])


def test_sliding_evaluation_windows_step_by_the_stride_and_score_the_last_positions():
    src = _data_source(T=8, train={"eval_batch_size": 5}, eval_windows="sliding", eval_stride=3, eval_last=2)
    batches = list(src.eval_batches("val", 10))
    starts = torch.cat([b["idx"][:, 0] for b in batches])
    # 300 tokens: windows start at 0, 3, ..., 291 (the last needs tokens 291..299): 98 windows, 19 full batches of 5
    assert src.sliding_starts("val").tolist() == list(range(0, 292, 3))
    assert starts.tolist() == list(range(0, 3 * 95, 3)) and len(batches) == 19  # a last partial batch is left out
    for b in batches:
        t = b["targets"]
        assert (t[:, :-2] == -100).all()  # only the last 2 positions are scored
        assert torch.equal(t[:, -2:], b["idx"][:, -2:] + 1)
    assert all(torch.equal(x["idx"], y["idx"]) for x, y in zip(batches, src.eval_batches("val", 20)))


def test_sliding_windows_can_be_subsampled_evenly_and_cover_the_original_protocol():
    src = _data_source(
        T=8,
        train={"eval_batch_size": 4},
        eval_windows="sliding",
        eval_stride=3,
        eval_max_windows=8,
        eval_last=1,
        eval_splits=("val", "test"),
    )
    starts = src.sliding_starts("val")
    assert starts.numel() == 8 and starts[0] == 0 and starts[-1] == 291 and (starts.diff() > 0).all()
    assert src.eval_splits == ("val", "test")
    b = next(src.eval_batches("test", 0))
    assert ((b["targets"] != -100).sum(1) == 1).all()  # the original code's protocol: the last token only
    # the efficient-transformer's numbers: 111,539 validation tokens, windows of 768 every 32 -> 3,462 windows
    big = LMSource(
        TokenData({"train": np.zeros(2000, np.uint16), "val": np.zeros(111_539, np.uint16)}, 65, "t", "g", {}, "t"),
        768,
        TrainConfig(batch_size=128),
        seed=0,
        data_cfg=LMDataConfig(eval_windows="sliding", eval_stride=32, eval_last=32),
    )
    assert big.sliding_starts("val").numel() == 3_462 and len(list(big.eval_batches("val", 0))) == 27
    assert big.n_windows("val") == 111_539 - 768


def test_default_windows_are_unchanged():
    a, b = _source(), _data_source()
    assert all(torch.equal(x["idx"], y["idx"]) for x, y in zip(a.train_batches(3), b.train_batches(3)))
    assert all(
        torch.equal(x["targets"], y["targets"]) for x, y in zip(a.eval_batches("val", 0), b.eval_batches("val", 0))
    )
    assert b.eval_splits == ("train", "val")


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(eval_stride=16), "set data.eval_windows='sliding'"),
        (dict(eval_max_windows=10), "set data.eval_windows='sliding'"),
        (dict(eval_windows="sliding", eval_stride=0), "eval_stride must be >= 1"),
        (dict(eval_windows="sliding", eval_max_windows=0), "eval_max_windows must be >= 1"),
        (dict(eval_last=0), "eval_last must be >= 1"),
        (dict(eval_splits=("val", "test")), r"data.split=chars_80_10_10 for a test split"),
        (dict(eval_splits=()), "at least one split"),
        (dict(train_windows="epoch"), "train_windows"),
    ],
)
def test_invalid_window_settings_name_the_fix(changes, message):
    with pytest.raises(ConfigError, match=message):
        LMDataConfig(**changes)


def test_scored_positions_must_fit_the_window():
    from lmcompanion.models.baseline import BaselineConfig
    from lmcompanion.run import RunConfig

    model = BaselineConfig(vocab_size=30, context_size=16, n_embed=16, n_head=2, n_layer=1)
    with pytest.raises(ConfigError, match="lower data.eval_last"):
        RunConfig(name="x", model=model, data=LMDataConfig(eval_last=17), train=TrainConfig())
