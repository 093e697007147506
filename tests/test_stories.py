"""The masked-mixer write-up's data protocol (data/stories.py): stories split on their marker, a Llama-style BPE
with <unk>/<s>/</s> at 0/1/2 and newlines as <unk>, fixed-length examples padded on the left with pad = eos, pad
targets and the last position ignored, packing as an option, batches a pure function of (seed, step)."""

import numpy as np
import pytest
import torch

from lmcompanion import experiments
from lmcompanion.data import build_source, stories
from lmcompanion.data.stories import (
    BOS,
    EOS,
    IGNORE,
    PAD,
    UNK,
    Examples,
    StoriesDataConfig,
    StoryTokenizer,
    StoryTokens,
    left_pad,
    prompt_window,
    sample_indices,
    split_stories,
    targets_of,
)
from lmcompanion.errors import ConfigError

TEXTS = [
    "Once upon a time, there was a little dog.\nThe dog liked to run in the park.",
    "Tom had a red ball. He played with it every day.\n\nOne day the ball was lost.",
    "Sue and Tim went to the sea. They saw a big fish and a small boat.",
] * 20


@pytest.fixture(scope="module")
def tok():
    return StoryTokenizer.train(TEXTS, 120, "test_bpe120")


def test_stories_are_split_on_the_marker_and_a_cut_last_story_is_dropped():
    text = "A dog ran.<|endoftext|>\n B cat sat. <|endoftext|>C half a sto"
    assert split_stories(text) == ["A dog ran.", "B cat sat."]
    assert split_stories(text + "ry.<|endoftext|>") == ["A dog ran.", "B cat sat.", "C half a story."]


def test_tokenizer_has_llama_specials_and_newlines_become_one_unk(tok):
    assert [tok.tok.token_to_id(s) for s in stories.SPECIALS] == [UNK, BOS, EOS]
    assert tok.vocab_size == 120
    one, two = tok.encode("The dog ran.\nThe dog sat."), tok.encode("The dog ran.\n\nThe dog sat.")
    assert one.count(UNK) == 1 and two.count(UNK) == 1  # fuse_unk: a run of newlines is one <unk>
    assert BOS not in one and EOS not in one  # add_special_tokens=False
    assert tok.decode(one) == "The dog ran.<unk>The dog sat."
    assert tok.decode(tok.encode("Tom had a red ball.")) == "Tom had a red ball."


def test_examples_are_truncated_on_the_right_and_padded_on_the_left():
    assert left_pad([5, 6, 7], 6).tolist() == [PAD, PAD, PAD, 5, 6, 7]
    assert left_pad(list(range(10, 20)), 4).tolist() == [10, 11, 12, 13]  # the story's first tokens


def test_pad_targets_and_the_last_position_are_ignored():
    idx = torch.tensor([[PAD, PAD, 5, 6, 7], [3, 4, 5, 6, 7]])
    t = targets_of(idx)
    assert t.tolist() == [[IGNORE, 5, 6, 7, IGNORE], [4, 5, 6, 7, IGNORE]]
    assert (t[:, :-1][idx[:, 1:] == PAD] == IGNORE).all()


def _tokens(lengths):
    ids = np.concatenate([np.arange(3, 3 + n) for n in lengths]).astype(np.uint16)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return StoryTokens({"train": ids}, {"train": offsets}, 64, "t", "local")


def test_padded_examples_hold_one_story_each_and_packed_ones_no_padding():
    tokens = _tokens([3, 7, 5])
    padded = Examples(tokens, "train", 6, packing=False)
    assert len(padded) == 3
    rows = padded.rows(torch.arange(3))
    assert rows[0].tolist() == [PAD, PAD, PAD, 3, 4, 5]
    assert rows[1].tolist() == [3, 4, 5, 6, 7, 8]
    packed = Examples(tokens, "train", 6, packing=True)
    assert len(packed) == (3 + 7 + 5 + 3) // 6
    rows = packed.rows(torch.arange(len(packed)))
    assert (rows != PAD).all()
    assert rows.flatten()[:5].tolist() == [BOS, 3, 4, 5, BOS]


def test_batches_are_a_pure_function_of_seed_and_step_and_each_epoch_a_permutation():
    a, b = sample_indices(7, 10, 0, 30), sample_indices(7, 10, 0, 30)
    assert torch.equal(a, b)
    for e in range(3):
        assert sorted(a[10 * e : 10 * (e + 1)].tolist()) == list(range(10))
    assert not torch.equal(a[:10], a[10:20])
    assert torch.equal(sample_indices(7, 10, 13, 5), a[13:18])


def test_prompt_window_keeps_the_prompts_end_and_leaves_placeholders(tok):
    window, kept = prompt_window(tok, "Tom had a red ball. He played with it every day.", 16, 5)
    assert window.shape == (1, 16)
    assert (window[0, -4:] == PAD).all()  # the n - 1 placeholders the generation overwrites
    ids = tok.encode("Tom had a red ball. He played with it every day.")
    assert window[0, 12 - kept : 12].tolist() == ids[-kept:]


@pytest.mark.parametrize(
    "kw, fix",
    [
        ({"val_split": "validation"}, "data.val_split='train_tail' offline"),
        ({"vocab_size": 10}, "vocab_size must be >= 64"),
        ({"corpus": "tinyshakespeare"}, "no story boundaries"),
        ({"source": "hub", "corpus": "synthetic"}, "set data.corpus='tinystories'"),
    ],
)
def test_bad_data_configs_are_rejected_with_the_fix(kw, fix):
    with pytest.raises(ConfigError, match=fix):
        StoriesDataConfig(**kw)


def test_the_generated_corpus_runs_end_to_end_at_the_smoke_profile():
    cfg = experiments.config("mixer/flat_d512", "smoke", device="cpu")
    src = build_source(cfg)
    (batch,) = src.train_batches(0)
    L = cfg.model.context_size
    assert batch["idx"].shape == (cfg.train.batch_size, L)
    assert (batch["targets"][:, -1] == IGNORE).all()
    assert torch.equal(src.train_batches(3)[0]["idx"], build_source(cfg).train_batches(3)[0]["idx"])
