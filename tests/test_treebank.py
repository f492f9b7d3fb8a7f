"""Reading treebank files: PTB brackets in the Choe–Charniak view, CoNLL-U, and where each tree was."""

from syntaxlm.data.treebank import read_treebank, read_treebank_positions, treebank_kind
from syntaxlm.trees.dependency import DepTree

PTB = """(S (NP (DT the) (NN dog)) (VP (VBZ barks)))
(S (-NONE- *T*-1))
( (S (NP-SBJ (NNS cats)) (VP (VBP sleep))) )
"""
CONLLU = "1\tcats\tcat\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tsleep\tsleep\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"


def test_ptb_trees_are_cleaned_and_trees_left_without_words_are_counted_where_they_were(tmp_path):
    path = tmp_path / "train.trees"
    path.write_text(PTB, encoding="utf-8")
    trees, positions, empty = read_treebank_positions(path)
    assert [str(tree) for tree in trees] == ["(S (NP the dog) (VP barks))", "(S (NP cats) (VP sleep))"]
    assert (positions, empty) == ([0, 2], [1])
    assert [str(tree) for tree in read_treebank(path)] == [str(tree) for tree in trees]
    assert treebank_kind(path) == "constituency"


def test_conllu_files_give_dependency_trees(tmp_path):
    path = tmp_path / "train.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    trees, positions, empty = read_treebank_positions(path)
    assert [type(tree) for tree in trees] == [DepTree] and trees[0].words == ("cats", "sleep")
    assert (positions, empty) == ([0], [])
    assert treebank_kind(path) == "dependency"
