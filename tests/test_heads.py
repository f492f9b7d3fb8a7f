"""Constituency → dependency conversion by head rules (trees/heads.py): the head child of each
phrase type, trees with and without POS tags, coordination and punctuation, and well-formed
output on the synthetic treebank."""

from __future__ import annotations

import pytest

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.errors import TreeError
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.dependency import DepTree, future_dependents
from syntaxlm.trees.heads import base_label, constituency_to_dependency, head_child
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree


def arcs(bracket: str, *, pos_tags: bool = False) -> list[tuple[str, str]]:
    """``(word, head word)`` pairs, ``ROOT`` for the root."""
    dep = constituency_to_dependency(Tree.from_bracket(bracket, pos_tags=pos_tags))
    return [(word, dep.words[head - 1] if head else "ROOT") for word, head in zip(dep.words, dep.heads)]


def test_untagged_clause_collins_style():
    # Auxiliaries head their VP (Collins: MD before VP); nouns head flat NPs from the right;
    # prepositions head PPs; the determiner and adjective attach to the noun.
    assert arcs("(S (NP the old dog) (VP could (VP see (NP a cat) (PP in (NP the garden)))) .)") == [
        ("the", "dog"),
        ("old", "dog"),
        ("dog", "could"),
        ("could", "ROOT"),
        ("see", "could"),
        ("a", "cat"),
        ("cat", "see"),
        ("in", "see"),
        ("the", "garden"),
        ("garden", "in"),
        (".", "could"),
    ]


def test_tagged_tree_uses_the_tags():
    pairs = arcs(
        "(S (NP (DT The) (NN dog)) (VP (VBD saw) (NP (NP (DT a) (NN cat)) (CC and) (NP (DT a) (NN bird)))) (. .))",
        pos_tags=True,
    )
    assert pairs == [
        ("The", "dog"),
        ("dog", "saw"),
        ("saw", "ROOT"),
        ("a", "cat"),
        ("cat", "saw"),
        ("and", "cat"),  # coordination: the first conjunct heads, the others attach to it
        ("a", "bird"),
        ("bird", "cat"),
        (".", "saw"),
    ]


def test_coordinated_clauses_and_punctuation_are_not_heads():
    pairs = dict(arcs("(S (S (NP it) (VP rained)) , but (S (NP we) (VP stayed)) .)"))
    assert pairs["rained"] == "ROOT" and pairs["stayed"] == "rained"
    assert pairs[","] == "rained" and pairs["but"] == "rained" and pairs["."] == "rained"


@pytest.mark.parametrize(
    ("bracket", "head"),
    [
        ("(ADJP very free)", "free"),  # untagged ADJP: the last word, not the degree adverb
        ("(ADJP proud (PP of (NP it)))", "proud"),
        ("(SBAR (WHNP which) (S (NP we) (VP saw)))", "which"),
        ("(SBAR although (S (NP we) (VP saw)))", "although"),
        ("(NP (NP a guest) (SBAR (WHNP that) (S (VP left))))", "guest"),
        ("(NP Mary Williams)", "Williams"),
        ("(VP (VP ran) and (VP jumped))", "ran"),
        ("(ADVP very quickly)", "quickly"),
        ("(S (VP to (VP go)))", "to"),
        ("(FOO a b)", "a"),  # no rule: the leftmost child
    ],
)
def test_phrase_heads(bracket, head):
    dep = constituency_to_dependency(Tree.from_bracket(bracket))
    assert dep.words[dep.root_words[0] - 1] == head


def test_head_child_indices_and_labels():
    assert head_child("NP-SBJ-1", ["the", "dog"]) == 1
    assert head_child("NP", [Tree("NP", ["a"]), Tree("POS", ["'s"])]) == 1  # possessive
    assert head_child("PP", [",", "and"]) == 0  # nothing but fillers: the first child
    assert base_label("NP-SBJ-1") == "NP" and base_label("-NONE-") == "-NONE-" and base_label("S=2") == "S"
    with pytest.raises(TreeError, match="no children"):
        head_child("NP", [])
    with pytest.raises(TypeError, match="expected a Tree"):
        constituency_to_dependency("(S a)")


def test_single_word_and_unary_trees():
    assert constituency_to_dependency(Tree("S", ["hello"])).heads == (0,)
    assert constituency_to_dependency(Tree.from_bracket("(S (NP (NN hi)))", pos_tags=True)).heads == (0,)


def test_synthetic_treebank_gives_trees(tmp_path):
    write_synthetic_treebank(tmp_path, sentences=200, seed=3)
    for tree in TreeReader(tmp_path / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING):
        dep = constituency_to_dependency(tree)
        assert isinstance(dep, DepTree) and list(dep.words) == tree.leaves()
        assert len(dep.root_words) == 1
        for word in range(1, len(dep) + 1):  # every word reaches the root without a cycle
            seen, node = set(), word
            while node:
                assert node not in seen
                seen.add(node)
                node = dep.heads[node - 1]
        sets = future_dependents(dep)
        assert sum(len(members) for members in sets) == len(dep) + 1
