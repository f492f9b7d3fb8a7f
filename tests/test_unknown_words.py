import pytest

from syntaxlm.trees.tree import Tree
from syntaxlm.trees.unknown_words import berkeley_signature, replace_unknown_words


@pytest.mark.parametrize(
    "word, initial, known, signature",
    [
        ("Vinken", True, (), "UNK-INITC"),
        ("Vinken", False, (), "UNK-CAPS"),
        ("Apple", True, {"apple"}, "UNK-INITC-KNOWNLC"),
        ("IBM", True, (), "UNK-CAPS"),
        ("1990s", False, (), "UNK-LC-NUM-s"),
        ("3.5", False, (), "UNK-NUM"),
        ("pre-war", False, (), "UNK-LC-DASH"),
        ("A-1", False, (), "UNK-CAPS-NUM-DASH"),
        ("reorganizing", False, (), "UNK-LC-ing"),
        ("quickly", False, (), "UNK-LC-ly"),
        ("glass", False, (), "UNK-LC"),  # -ss is not a plural
        ("cats", False, (), "UNK-LC-s"),
        ("abc", False, (), "UNK-LC"),  # too short for a suffix
        ("$", False, (), "UNK"),
        ("", False, (), "UNK"),
    ],
)
def test_signatures(word, initial, known, signature):
    assert berkeley_signature(word, sentence_initial=initial, known=known) == signature


def test_replace_unknown_words_keeps_structure():
    tree = Tree.from_bracket("(S (NP (NNP Vinken) (NNS apples)) (VP (VBZ sleeps)))", pos_tags=True)
    result = replace_unknown_words(tree, {"apples"})
    assert result.to_bracket() == "(S (NP (NNP UNK-INITC) (NNS apples)) (VP (VBZ UNK-LC-s)))"
    assert replace_unknown_words(tree, set(tree.leaves())) is tree
