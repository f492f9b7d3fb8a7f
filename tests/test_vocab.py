"""Word vocabularies: layout, threshold, unknown-word classes, encoding, files."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxlm.text.base import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK,
    UNK_ID,
    VOCAB_FILE,
    VocabularyError,
    VocabularyFormatError,
    load_vocabulary,
    sum_by_word,
)
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.unknown_words import berkeley_signature

SENTENCES = [
    "the dog barks".split(),
    "the cat sleeps".split(),
    "a dog sleeps".split(),
    "Vinken walked the dog".split(),
    "the cat walked".split(),
    "organizing is hard".split(),
]
SYMBOLS = ["(S", "(NP", "NP)", "S)"]


@pytest.fixture(scope="module")
def vocab() -> WordVocab:
    return WordVocab.build(SENTENCES, min_freq=2, symbols=SYMBOLS)


def test_layout_threshold_and_order(vocab):
    # Counts: the 4, dog 3, cat 2, sleeps 2, walked 2; the rest once.
    assert vocab.tokens[:4] == SPECIAL_TOKENS
    special_ids = (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id)
    assert special_ids == (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert vocab.tokens[4:8] == tuple(SYMBOLS)
    assert vocab.words == ("the", "dog", "cat", "sleeps", "walked")  # by count, ties by string
    # Rare words: barks, a, is, hard (lower case, mid-sentence or initial), Vinken, organizing (initial).
    assert set(vocab.unk_classes) == {"UNK-LC-s", "UNK-LC", "UNK-INITC", "UNK-LC-ing"}
    assert vocab.unk_classes[0] == "UNK-LC"  # a, is, hard: the most frequent class first
    assert vocab.tokens == SPECIAL_TOKENS + tuple(SYMBOLS) + vocab.unk_classes + vocab.words
    assert len(vocab) == len(vocab.tokens)
    assert vocab.min_freq == 2 and vocab.unknown == "berkeley" and vocab.max_words is None


def test_counts_cover_every_training_token(vocab):
    assert vocab.count("the") == 4 and vocab.count("dog") == 3
    assert vocab.count("UNK-LC") == 3 and vocab.count("UNK-LC-ing") == 1  # a, is, hard; organizing
    assert sum(vocab.count(t) for t in vocab.tokens) == sum(map(len, SENTENCES))
    assert vocab.count("zebra") == 0


def test_min_freq_one_keeps_every_word():
    vocab = WordVocab.build(SENTENCES, min_freq=1)
    assert set(vocab.words) == {w for s in SENTENCES for w in s}
    assert vocab.unk_classes == ()
    assert vocab.encode(["zebras"]) == [UNK_ID]


def test_max_words_sends_the_rest_to_classes():
    vocab = WordVocab.build(SENTENCES, min_freq=1, max_words=2)
    assert vocab.words == ("the", "dog")
    assert vocab.map_word("cat") == "UNK-LC"
    assert vocab.map_word("sleeps") == "UNK-LC-s"


def test_unknown_words_get_berkeley_classes(vocab):
    assert "reorganizing" not in vocab
    assert vocab.map_word("reorganizing") == "UNK-LC-ing"
    assert vocab.map_word("Smith", sentence_initial=True) == "UNK-INITC"
    assert vocab.map_word("Smith") == UNK  # UNK-CAPS never seen in training
    assert vocab.map_word("1990s") == UNK  # UNK-NUM-s neither
    assert vocab.map_word("dog") == "dog"
    ids = vocab.encode("Smith reorganizing the dogs".split())
    assert vocab.decode(ids) == ["UNK-INITC", "UNK-LC-ing", "the", "UNK-LC-s"]


def test_sentence_initial_is_the_first_word_after_symbols(vocab):
    actions = "<s> (S (NP Smith NP) (NP Smith NP) S)".split()
    expected = ["<s>", "(S", "(NP", "UNK-INITC", "NP)", "(NP", UNK, "NP)", "S)"]
    assert vocab.decode(vocab.encode(actions)) == expected
    assert vocab.encode(["Smith"], sentence_initial=False) == [UNK_ID]


def test_known_lowercase_class():
    vocab = WordVocab.build([["The", "end"], ["the", "end"], ["the", "cat"]], min_freq=2)
    assert vocab.map_word("The", sentence_initial=True) == "UNK-INITC-KNOWNLC"
    assert vocab.map_word("End", sentence_initial=True) == "UNK-INITC-KNOWNLC"
    assert berkeley_signature("The", sentence_initial=True, known={"the"}) == "UNK-INITC-KNOWNLC"


def test_symbols_are_never_thresholded_or_counted_as_words():
    sentences = [["(NP", "dog", "NP)"], ["(NP", "dog", "NP)"]]
    vocab = WordVocab.build(sentences, min_freq=2, symbols=["(NP", "NP)", "(VP", "REDUCE"])
    assert vocab.symbols == ("(NP", "NP)", "(VP", "REDUCE")
    assert vocab.words == ("dog",)
    assert vocab.count("(NP") == 2 and vocab.count("(VP") == 0
    assert vocab.encode(["(VP", "REDUCE", "dog"]) == [vocab.index(t) for t in ("(VP", "REDUCE", "dog")]


def test_single_unknown_class():
    vocab = WordVocab.build(SENTENCES, min_freq=2, unknown="single")
    assert vocab.unk_classes == ()
    assert vocab.count(UNK) == 6
    assert vocab.encode(["reorganizing", "the"]) == [UNK_ID, vocab.index("the")]


def test_index_token_contains(vocab):
    for i, token in enumerate(vocab.tokens):
        assert vocab.index(token) == i and vocab.token(i) == token and token in vocab
    assert "zebra" not in vocab
    with pytest.raises(KeyError, match="zebra"):
        vocab.index("zebra")
    with pytest.raises(IndexError):
        vocab.token(len(vocab))
    with pytest.raises(IndexError):
        vocab.token(-1)


def test_encode_words_is_a_one_to_one_alignment(vocab):
    words = "Smith walked the dogs".split()
    encoding = vocab.encode_words(words)
    assert encoding.words == tuple(words)
    assert list(encoding.ids) == vocab.encode(words)
    assert encoding.pieces == ("UNK-INITC", "walked", "the", "UNK-LC-s")
    assert encoding.word_index == encoding.word_starts == (0, 1, 2, 3)
    assert sum_by_word([-1.0, -2.0, -3.0, -4.0], encoding).tolist() == [-1.0, -2.0, -3.0, -4.0]


def test_build_is_deterministic_and_order_free():
    shuffled = SENTENCES[:]
    random.Random(3).shuffle(shuffled)
    a = WordVocab.build(SENTENCES, symbols=SYMBOLS)
    b = WordVocab.build(iter(shuffled), symbols=SYMBOLS)  # a one-pass iterator is enough
    assert a == b and a.tokens == b.tokens


WORDS = st.text(alphabet="abAB1-s.", min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(WORDS, min_size=1, max_size=8), min_size=1, max_size=12), st.integers(1, 3))
def test_every_training_word_maps_to_a_known_token(sentences, min_freq):
    vocab = WordVocab.build(sentences, min_freq=min_freq)
    for sentence in sentences:
        assert UNK_ID not in vocab.encode(sentence)
    assert sum(vocab.count(t) for t in vocab.tokens) == sum(map(len, sentences))
    assert len(set(vocab.tokens)) == len(vocab)


def test_already_replaced_words_are_not_repeated():
    sentences = [["UNK-LC", "dog"], ["UNK-LC", "dog"], ["hat", "dog"], ["Hat", "dog"]]
    vocab = WordVocab.build(sentences, min_freq=2)
    assert vocab.words == ("dog", "UNK-LC") and vocab.unk_classes == ("UNK-INITC",)
    assert vocab.map_word("hat") == "UNK-LC"
    assert vocab.count("UNK-LC") == 3  # two as itself, one for "hat"


def test_bad_arguments():
    with pytest.raises(VocabularyError, match="min_freq"):
        WordVocab.build(SENTENCES, min_freq=0)
    with pytest.raises(VocabularyError, match="unknown"):
        WordVocab.build(SENTENCES, unknown="signature")
    with pytest.raises(VocabularyError, match="max_words"):
        WordVocab.build(SENTENCES, max_words=-1)
    with pytest.raises(VocabularyError, match="twice"):
        WordVocab.build(SENTENCES, symbols=["(NP", "(NP"])
    with pytest.raises(VocabularyError, match="special"):
        WordVocab.build(SENTENCES, symbols=["<s>"])
    with pytest.raises(VocabularyError, match="whitespace"):
        WordVocab.build(SENTENCES, symbols=["NT (NP)"])
    with pytest.raises(VocabularyError, match="string"):
        WordVocab.build(SENTENCES, symbols="(NP")
    with pytest.raises(TypeError, match="sentence 1 is a string"):
        WordVocab.build([["a"], "the dog"])
    with pytest.raises(VocabularyError, match="non-empty"):
        WordVocab.build([["a", ""]])
    with pytest.raises(TypeError):
        WordVocab.build(SENTENCES).encode("the dog")


# --- files ---------------------------------------------------------------------------------


def test_save_load_round_trip(vocab, tmp_path):
    path = vocab.save(tmp_path / "model")
    assert path == tmp_path / "model" / VOCAB_FILE
    for source in (tmp_path / "model", path):
        loaded = WordVocab.load(source)
        assert loaded == vocab
        assert loaded.tokens == vocab.tokens
        assert [loaded.count(t) for t in loaded.tokens] == [vocab.count(t) for t in vocab.tokens]
        words = "Smith reorganizing the dogs".split()
        assert loaded.encode(words) == vocab.encode(words)
    assert load_vocabulary(tmp_path / "model") == vocab
    data = json.loads(path.read_text())
    assert data["format"] == WordVocab.FORMAT and data["version"] == 1
    assert data["tokens"] == list(vocab.tokens)
    assert data["settings"] == {"min_freq": 2, "unknown": "berkeley", "max_words": None}


def test_save_leaves_no_temporary_files(vocab, tmp_path):
    vocab.save(tmp_path)
    vocab.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [VOCAB_FILE]


def _saved(vocab, tmp_path) -> dict:
    return json.loads(vocab.save(tmp_path).read_text())


def _write(tmp_path, data) -> None:
    (tmp_path / VOCAB_FILE).write_text(json.dumps(data) if not isinstance(data, str) else data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: "{ not json", r":1:3: not valid JSON"),
        (lambda d: [1, 2], "not a syntaxlm vocabulary file"),
        (lambda d: d | {"format": "syntaxlm-subword-vocab"}, "holds format 'syntaxlm-subword-vocab'"),
        (lambda d: d | {"version": 99}, "version 99"),
        (lambda d: {k: v for k, v in d.items() if k != "tokens"}, "field 'tokens' is missing"),
        (lambda d: d | {"counts": ["x"]}, "field 'counts' is malformed"),
        (lambda d: d | {"counts": d["counts"][:-1]}, "counts for"),
        (lambda d: d | {"tokens": d["tokens"] + ["the"]}, "more than once"),
        (lambda d: d | {"symbols": ["(VP"]}, "does not begin with"),
        (lambda d: d | {"specials": ["<pad>"]}, "special tokens"),
        (lambda d: d | {"settings": {"min_freq": 0, "unknown": "berkeley"}}, "min_freq"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(vocab, tmp_path, change, message):
    _write(tmp_path, change(_saved(vocab, tmp_path)))
    with pytest.raises(VocabularyFormatError, match=message) as error:
        WordVocab.load(tmp_path)
    assert str(tmp_path / VOCAB_FILE) in str(error.value)


def test_binary_and_missing_files(tmp_path):
    (tmp_path / VOCAB_FILE).write_bytes(b"\x80\x81\xff")
    with pytest.raises(VocabularyFormatError, match="not UTF-8") as error:
        WordVocab.load(tmp_path)
    assert str(tmp_path / VOCAB_FILE) in str(error.value)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        WordVocab.load(tmp_path / "nowhere")


# --- real data -----------------------------------------------------------------------------


def test_wsj_sample_vocabulary(shared_data, tmp_path):
    from syntaxlm.trees.clean import Cleaning
    from syntaxlm.trees.ptb import read_trees

    folder = shared_data / "constituency" / "nltk_wsj_sample_noncommercial" / "combined"
    sentences = [tree.leaves() for tree in read_trees(folder, cleaning=Cleaning(remove_empty_elements=True))]
    train, test = sentences[:3500], sentences[3500:]
    vocab = WordVocab.build(train, min_freq=2)
    assert vocab.words[:3] == (",", "the", ".")
    assert all(UNK_ID not in vocab.encode(s) for s in train)
    unknown = [vocab.map_word(w) for s in test for w in s if w not in vocab]
    assert unknown and sum(t != UNK for t in unknown) > 0.9 * len(unknown)  # mostly a specific class
    vocab.save(tmp_path)
    assert WordVocab.load(tmp_path) == vocab


def test_labels_of_other_treebanks_join_the_symbols_but_not_their_words(tmp_path):
    from syntaxlm.text.build import build_vocabulary

    (tmp_path / "train.trees").write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n")
    (tmp_path / "dev.trees").write_text("(S (WHADJP (WRB how) (JJ odd)) (VP (VBD sat)))\n")
    vocab = build_vocabulary(
        tmp_path / "train.trees", tmp_path / "vocab", min_freq=1, label_sources=[tmp_path / "dev.trees"]
    )
    assert {"(WHADJP", "WHADJP)", "NT(WHADJP)"} <= set(vocab.symbols)
    assert "odd" not in vocab and "cat" in vocab
