"""Sentence files and the treebanks given in their place (``syntaxlm.data.sentences``)."""

import re

import pytest

from syntaxlm.data.sentences import is_treebank, read_given_trees, read_sentences, read_stimuli
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


def test_stimuli_keep_their_ids_past_blank_lines(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("The dog didn't bark.\n\n   \nMr. Smith left.\n")
    stimuli = read_stimuli(plain, tokenize_as="ptb")
    assert stimuli.words == [["The", "dog", "did", "n't", "bark", "."], ["Mr.", "Smith", "left", "."]]
    assert stimuli.ids == [1, 4] and stimuli.lines == [1, 4] and stimuli.blank_lines == [2, 3]
    assert stimuli.input_words[0] == [0, 1, 2, 2, 3, 3] and not stimuli.id_column
    with_ids = tmp_path / "ids.txt"
    with_ids.write_text("item-1\tthe keys are here\n\nitem-2 \t the keys is  here\n")
    stimuli = read_stimuli(with_ids)
    assert stimuli.ids == ["item-1", "item-2"] and stimuli.lines == [1, 3] and stimuli.id_column
    assert stimuli.words[1] == ["the", "keys", "is", "here"] and stimuli.blank_lines == [2]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a b\nx\tc\n", "2: this line has an id (a tab), but line 1 has none"),
        ("x\ta b\nc\n", "2: this line has no id (no tab), but line 1 has one"),
        ("x\ta\n\t b\n", "2: empty id"),
        ("x\ta\ny\t  \n", "2: id 'y' has no sentence"),
        ("x\ta\n\nx\tb\n", "3: id 'x' is also the id of line 1; expected a different id on every line"),
    ],
)
def test_stimuli_ids_are_given_on_every_line_once(tmp_path, text, problem):
    path = tmp_path / "stimuli.txt"
    path.write_text(text)
    with pytest.raises(InputFormatError, match=f"^{re.escape(str(path))}:{re.escape(problem)}"):
        read_stimuli(path)
