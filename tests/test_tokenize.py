"""Raw text as words (text/tokenize.py): the Penn-Treebank-style splitting the scorer's ``--tokenize
ptb``, BLiMP and the reading-time TSV share, and which input word each word comes from."""

from __future__ import annotations

import pytest

from syntaxlm.text.tokenize import ptb_tokens, ptb_words, tokenize


def test_ptb_tokens_split_punctuation_and_clitics():
    assert ptb_tokens('The cats don\'t sleep, "really".') == [
        "The", "cats", "do", "n't", "sleep", ",", '"', "really", '"', ".",
    ]  # fmt: skip
    assert ptb_tokens("Who's there?") == ["Who", "'s", "there", "?"]
    assert ptb_tokens("The company's lawyers didn't agree.") == [
        "The", "company", "'s", "lawyers", "did", "n't", "agree", ".",
    ]  # fmt: skip


def test_words_already_split_stay_as_they_are():
    split = "The company 's lawyers did n't say `` no '' ."
    assert ptb_tokens(split) == split.split()
    assert ptb_tokens(" ".join(ptb_tokens("They're sure we'll win, aren't they?"))) == ptb_tokens(
        "They're sure we'll win, aren't they?"
    )


def test_displayed_tokens_are_split_as_the_penn_treebank_does():
    assert ptb_words("owners.") == ("owners", ".")
    assert ptb_words("'It's") == ("``", "It", "'s")
    assert ptb_words("raining,'") == ("raining", ",", "''")
    assert ptb_words("(so)") == ("-LRB-", "so", "-RRB-")
    assert ptb_words("don't,") == ("do", "n't", ",")
    assert ptb_words("long-bearded") == ("long-bearded",)


def test_tokenize_says_which_input_word_each_word_comes_from():
    assert tokenize("the company's  lawyers", "whitespace") == (["the", "company's", "lawyers"], [0, 1, 2])
    assert tokenize('"Didn\'t they?"', "ptb") == (["``", "Did", "n't", "they", "?", "''"], [0, 0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match="tokenize must be one of whitespace, ptb"):
        tokenize("x", "spacy")


def test_a_period_ends_the_sentence_only_at_its_end():
    assert ptb_tokens("Mr. Smith met Ms. Jones in the U.S. today.") == [
        "Mr.", "Smith", "met", "Ms.", "Jones", "in", "the", "U.S.", "today", ".",
    ]  # fmt: skip
    assert tokenize("Mr. Smith left.", "ptb")[0] == ["Mr.", "Smith", "left", "."]
    assert ptb_words("Ms.", split_period=False) == ("Ms.",) and ptb_words("owners.") == ("owners", ".")
    assert ptb_tokens("Wait ... and -- go") == ["Wait", "...", "and", "--", "go"]
