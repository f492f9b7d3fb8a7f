"""SCLM action n-grams: the paper's example in both directions, word pieces, the label vocabulary
(unseen and trailing n-grams, files), and properties over random trees."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxlm.structure.actions import ActionKind, tree_to_actions
from syntaxlm.structure.sclm import (
    BLANK_LABEL,
    NGRAM_VOCAB_FILE,
    PAD_LABEL,
    SPECIAL_LABELS,
    UNK_LABEL,
    ActionNgramVocab,
    action_ngrams,
    scaffold_labels,
    scaffold_record,
    scaffold_table,
)
from syntaxlm.text.base import BOS_ID, VocabularyError, VocabularyFormatError
from syntaxlm.text.subword import SubwordVocab
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.tree import Tree

from .strategies import posless_trees

# Figure 1 of the paper: NT(S) NT(NP) the birds REDUCE NT(VP) sang NT(ADVP) ...
BIRDS = Tree.from_bracket("(S (NP the birds) (VP sang (ADVP loudly)))")
BIRDS_NGRAMS = ["NT(S)_NT(NP)", BLANK_LABEL, "REDUCE_NT(VP)", "NT(ADVP)", "REDUCE_REDUCE_REDUCE"]


@pytest.fixture(scope="module")
def word_vocab() -> WordVocab:
    return WordVocab.build([BIRDS.leaves()], min_freq=1)


@pytest.fixture(scope="module")
def ngram_vocab() -> ActionNgramVocab:
    return ActionNgramVocab.build([BIRDS])


def test_action_ngrams_of_the_paper_example():
    assert action_ngrams(BIRDS) == BIRDS_NGRAMS
    assert action_ngrams(tree_to_actions(BIRDS, "rnng")) == BIRDS_NGRAMS
    assert action_ngrams(Tree.from_bracket("(S rain)")) == ["NT(S)", "REDUCE"]


def test_next_labels(word_vocab, ngram_vocab):
    # Input <s> the birds sang loudly; position i is labelled with the n-gram before input i + 1,
    # the last with the trailing n-gram.
    labels = scaffold_labels(BIRDS, word_vocab, ngram_vocab, direction="next")
    assert word_vocab.decode(labels.ids) == ["<s>", "the", "birds", "sang", "loudly"]
    assert ngram_vocab.decode(labels.labels) == BIRDS_NGRAMS
    assert labels.word_index.tolist() == [-1, 0, 1, 2, 3]
    assert labels.direction == "next" and len(labels) == 5
    assert labels.ids.dtype == labels.labels.dtype == np.int32


def test_past_labels(word_vocab, ngram_vocab):
    # Position i is labelled with the n-gram before input i; <s> gets the pad label.
    labels = scaffold_labels(BIRDS, word_vocab, ngram_vocab, direction="past")
    assert labels.ids[0] == BOS_ID
    assert ngram_vocab.decode(labels.labels) == [PAD_LABEL, *BIRDS_NGRAMS[:-1]]
    assert labels.labels[0] == ngram_vocab.pad_id == 0


def test_words_spelled_like_special_tokens_are_unknown(ngram_vocab):
    vocab = WordVocab.build([["the", "<pad>", "sang"]], min_freq=1, symbols=["REDUCE"])
    tree = Tree.from_bracket("(S (NP the <pad>) (VP REDUCE))")
    labels = scaffold_labels(tree, vocab, ngram_vocab, direction="next")
    assert vocab.decode(labels.ids) == ["<s>", "the", "<unk>", "<unk>"]


def test_word_pieces_after_the_first_get_the_blank():
    tree = Tree.from_bracket("(S (NP the unbelievably long song) (VP ended))")
    vocab = SubwordVocab.train([["the", "long", "song", "ended"]] * 3, vocab_size=280, model_type="bpe")
    ngram_vocab = ActionNgramVocab.build([tree])
    encoding = vocab.encode_words(tree.leaves())
    n_pieces = [span.stop - span.start for span in map(encoding.word_span, range(5))]
    assert n_pieces[1] > 1  # "unbelievably" is several pieces
    ngrams = action_ngrams(tree)
    assert ngrams == ["NT(S)_NT(NP)", "_", "_", "_", "REDUCE_NT(VP)", "REDUCE_REDUCE"]
    pieces_labels = [
        label for ngram, n in zip(ngrams[:-1], n_pieces) for label in [ngram] + [BLANK_LABEL] * (n - 1)
    ]
    next_labels = scaffold_labels(tree, vocab, ngram_vocab, direction="next")
    past_labels = scaffold_labels(tree, vocab, ngram_vocab, direction="past")
    assert (next_labels.ids[1:] == encoding.ids).all() and next_labels.ids[0] == BOS_ID
    assert ngram_vocab.decode(next_labels.labels) == [*pieces_labels, "REDUCE_REDUCE"]
    assert ngram_vocab.decode(past_labels.labels) == [PAD_LABEL, *pieces_labels]
    assert next_labels.word_index.tolist() == [-1, *encoding.word_index]
    # The last piece of "the" comes before the first of "unbelievably": its next label is blank
    # (no action between them), as is that of every piece of "unbelievably" but the last.
    first = 1 + encoding.word_starts[1]
    assert (
        ngram_vocab.decode(next_labels.labels[first - 1 : first + n_pieces[1] - 1])
        == [BLANK_LABEL] * n_pieces[1]
    )


def test_unseen_ngram_is_unknown(word_vocab, ngram_vocab):
    other = Tree.from_bracket("(S (NP the birds) (VP (VP sang) (ADVP loudly)))")
    labels = scaffold_labels(other, word_vocab, ngram_vocab, direction="next")
    assert ngram_vocab.decode(labels.labels) == [
        "NT(S)_NT(NP)",
        BLANK_LABEL,
        UNK_LABEL,  # REDUCE_NT(VP)_NT(VP) was never seen
        UNK_LABEL,  # nor REDUCE_NT(ADVP)
        "REDUCE_REDUCE_REDUCE",
    ]
    assert ngram_vocab.index("NT(FRAG)") == ngram_vocab.unk_id == 2


def test_trailing_ngrams_are_in_the_vocabulary(ngram_vocab):
    # The authors' list counts only n-grams followed by a word; REDUCE_REDUCE_REDUCE never is.
    assert "REDUCE_REDUCE_REDUCE" in ngram_vocab
    assert ngram_vocab.count("REDUCE_REDUCE_REDUCE") == 1


def test_vocabulary_layout_and_order():
    trees = [BIRDS, Tree.from_bracket("(S (NP it) (VP rained))"), Tree.from_bracket("(S (NP she) (VP left))")]
    vocab = ActionNgramVocab.build(trees)
    assert vocab.labels[:3] == SPECIAL_LABELS == ("<pad>", "_", "<unk>")
    assert (vocab.pad_id, vocab.blank_id, vocab.unk_id) == (0, 1, 2)
    # NT(S)_NT(NP) and REDUCE_NT(VP) 3 times, REDUCE_REDUCE twice, the rest once; ties in string order.
    assert vocab.ngrams == (
        "NT(S)_NT(NP)",
        "REDUCE_NT(VP)",
        "REDUCE_REDUCE",
        "NT(ADVP)",
        "REDUCE_REDUCE_REDUCE",
    )
    assert [vocab.count(ngram) for ngram in vocab.ngrams] == [3, 3, 2, 1, 1]
    assert vocab.count(BLANK_LABEL) == 0 and vocab.count("NT(X)") == 0
    assert len(vocab) == 8 and vocab.label(3) == "NT(S)_NT(NP)"
    with pytest.raises(IndexError):
        vocab.label(8)
    assert vocab.encode(["NT(ADVP)", "_", "NT(X)"]).tolist() == [6, 1, 2]


def test_invalid_vocabularies():
    with pytest.raises(VocabularyError, match="special label"):
        ActionNgramVocab(["_"])
    with pytest.raises(VocabularyError, match="more than once"):
        ActionNgramVocab(["NT(S)", "NT(S)"])
    with pytest.raises(VocabularyError, match="whitespace"):
        ActionNgramVocab(["NT(S) NT(NP)"])
    with pytest.raises(VocabularyError, match="counts"):
        ActionNgramVocab(["NT(S)"], [1, 2])


def test_json_round_trip(tmp_path):
    vocab = ActionNgramVocab.build([BIRDS, Tree.from_bracket("(S (NP it) (VP rained))")])
    file = vocab.save(tmp_path / "model")
    assert file == tmp_path / "model" / NGRAM_VOCAB_FILE
    assert os.listdir(tmp_path / "model") == [NGRAM_VOCAB_FILE]  # no temporary file left behind
    data = json.loads(file.read_text(encoding="utf-8"))
    assert data["format"] == ActionNgramVocab.FORMAT and data["ngrams"] == list(vocab.ngrams)
    for path in (tmp_path / "model", file):
        loaded = ActionNgramVocab.load(path)
        assert loaded == vocab and loaded.labels == vocab.labels
        assert [loaded.count(n) for n in loaded.ngrams] == [vocab.count(n) for n in vocab.ngrams]


def _write(tmp_path, content) -> str:
    file = tmp_path / NGRAM_VOCAB_FILE
    file.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(file)


GOOD = {
    "format": ActionNgramVocab.FORMAT,
    "version": 1,
    "specials": list(SPECIAL_LABELS),
    "ngrams": ["NT(S)"],
    "counts": [1],
}


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"format": ', "not valid JSON"),
        ([], "not a syntaxlm vocabulary file"),
        ({**GOOD, "format": "syntaxlm-word-vocab"}, "holds format"),
        ({**GOOD, "version": 99}, "format version"),
        ({k: v for k, v in GOOD.items() if k != "ngrams"}, "field 'ngrams' is missing"),
        ({**GOOD, "counts": ["1"]}, "field 'counts' is malformed"),
        ({**GOOD, "specials": ["<pad>", "<unk>"]}, "special labels"),
        ({**GOOD, "ngrams": ["NT(S)", "NT(S)"], "counts": [1, 1]}, "more than once"),
        ({**GOOD, "counts": [1, 2]}, "counts"),
    ],
)
def test_malformed_files_are_named(tmp_path, content, message):
    file = _write(tmp_path, content)
    with pytest.raises(VocabularyFormatError, match=message) as error:
        ActionNgramVocab.load(tmp_path)
    assert error.value.path == file and str(error.value).startswith(file)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=NGRAM_VOCAB_FILE):
        ActionNgramVocab.load(tmp_path)


def test_bad_arguments(word_vocab, ngram_vocab):
    with pytest.raises(ValueError, match="direction"):
        scaffold_labels(BIRDS, word_vocab, ngram_vocab, direction="future")
    with pytest.raises(ValueError, match="RNNG"):
        action_ngrams(tree_to_actions(BIRDS, "choe-charniak"))


def test_inspection_record_and_table():
    record = scaffold_record(BIRDS)
    assert json.loads(json.dumps(record)) == record
    assert (record["first"], record["trailing"]) == ("NT(S)_NT(NP)", "REDUCE_REDUCE_REDUCE")
    assert record["words"][2] == {"index": 2, "word": "sang", "past": "REDUCE_NT(VP)", "next": "NT(ADVP)"}
    lines = scaffold_table(BIRDS).splitlines()
    assert lines[0].split() == ["#", "word", "past", "n-gram", "next", "n-gram"]
    assert lines[1].split() == ["<s>", "NT(S)_NT(NP)"]
    assert lines[3].split() == ["1", "birds", "_", "REDUCE_NT(VP)"]
    assert len(lines) == 6


@settings(max_examples=100, deadline=None)
@given(st.lists(posless_trees(), min_size=1, max_size=4))
def test_properties(trees):
    vocab = ActionNgramVocab.build(trees)
    for tree in trees:
        actions = tree_to_actions(tree, "rnng")
        ngrams = action_ngrams(tree)
        # Words interleaved with their n-grams give back the action sequence.
        rebuilt = []
        for ngram, word in zip(ngrams, [*actions.words, None]):
            if ngram != BLANK_LABEL:
                rebuilt += _split_ngram(ngram)
            if word is not None:
                rebuilt.append(word)
        assert tuple(rebuilt) == actions.tokens
        assert ngrams[-1] != BLANK_LABEL and set(ngrams[-1].split("_")) == {"REDUCE"}
        word_vocab = WordVocab.build([tree.leaves()], min_freq=1)
        next_labels = scaffold_labels(tree, word_vocab, vocab, direction="next")
        past_labels = scaffold_labels(tree, word_vocab, vocab, direction="past")
        n_words = int(np.count_nonzero(actions.kinds == ActionKind.WORD))
        assert len(next_labels) == len(past_labels) == n_words + 1
        assert (next_labels.ids == past_labels.ids).all()
        assert (past_labels.labels[1:] == next_labels.labels[:-1]).all()
        assert past_labels.labels[0] == vocab.pad_id
        assert vocab.unk_id not in next_labels.labels  # every n-gram of the training trees is known
        assert vocab.decode(next_labels.labels) == ngrams


def _split_ngram(ngram: str) -> list[str]:
    """The actions joined in an n-gram (the labels of the test trees hold no "_")."""
    actions, current = [], ""
    for part in ngram.split("_"):
        current = part if not current else f"{current}_{part}"
        if current == "REDUCE" or (current.startswith("NT(") and current.endswith(")")):
            actions.append(current)
            current = ""
    assert current == ""
    return actions
