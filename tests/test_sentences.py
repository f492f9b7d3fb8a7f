"""Sentence files and the treebanks given in their place (``syntaxlm.data.sentences``)."""

import pytest

from syntaxlm.data.sentences import is_treebank, read_given_trees, read_sentences
from syntaxlm.errors import InputFormatError


def test_sentences_are_the_words_of_each_line(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("the bird sings\nIt  flew away .\n")
    assert read_sentences(path) == [["the", "bird", "sings"], ["It", "flew", "away", "."]]
    assert not is_treebank(path)


def test_an_empty_line_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("the bird sings\n  \nit flew\n")
    with pytest.raises(InputFormatError) as caught:
        read_sentences(path)
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert "expected a sentence: words separated by spaces" in str(caught.value)


def test_a_treebank_is_told_by_its_first_non_blank_character(tmp_path):
    path = tmp_path / "trees.txt"
    path.write_text("\n  (S (NP (DT the) (NN bird)) (VP (VBZ sings)))\n")
    assert is_treebank(path)
    assert [tree.to_bracket() for tree in read_given_trees(path, pos_tags=True)] == [
        "(S (NP the bird) (VP sings))"
    ]
    path.write_text("(S (NP the bird) (VP sings))\n")
    assert [tree.leaves() for tree in read_given_trees(path, pos_tags=False)] == [["the", "bird", "sings"]]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert not is_treebank(empty)
