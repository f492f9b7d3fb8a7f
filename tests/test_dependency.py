import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxlm.errors import ConlluFormatError
from syntaxlm.trees.dependency import (
    ConlluReader,
    DepTree,
    dependency_to_binary_tree,
    future_dependents,
    parse_conllu,
    projectivize,
    read_conllu,
    write_conllu,
)
from syntaxlm.trees.tree import Tree

# DMLM's Figure 1 sentence with a UD-style analysis.
DMLM_EXAMPLE = """# text = red figures on the screen indicate falling stocks.
1\tred\tred\tADJ\tJJ\tDegree=Pos\t2\tamod\t2:amod\t_
2\tfigures\tfigure\tNOUN\tNNS\tNumber=Plur\t6\tnsubj\t6:nsubj\t_
3\ton\ton\tADP\tIN\t_\t5\tcase\t5:case\t_
4\tthe\tthe\tDET\tDT\tDefinite=Def\t5\tdet\t5:det\t_
5\tscreen\tscreen\tNOUN\tNN\tNumber=Sing\t2\tnmod\t2:nmod:on\t_
6\tindicate\tindicate\tVERB\tVBP\tMood=Ind\t0\troot\t0:root\t_
7\tfalling\tfall\tVERB\tVBG\tVerbForm=Ger\t8\tamod\t8:amod\t_
8\tstocks\tstock\tNOUN\tNNS\tNumber=Plur\t6\tobj\t6:obj\tSpaceAfter=No
9\t.\t.\tPUNCT\t.\t_\t6\tpunct\t6:punct\t_

"""

MULTIWORD = """# sent_id = x-1
# newpar
1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t3:aux\t_
2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t3:advmod\t_
3\tgo\tgo\tVERB\tVB\t_\t0\troot\t0:root\t_
3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\tCopyOf=3

"""


def test_reading_multiword_tokens_and_empty_nodes():
    (tree,) = parse_conllu(MULTIWORD)
    assert tree.words == ("do", "n't", "go")
    assert tree.heads == (3, 3, 0)
    assert tree.multiword_tokens[0].form == "don't"
    assert tree.empty_nodes[0].id == "3.1"
    assert tree.comments == (" sent_id = x-1", " newpar")
    assert tree.to_conllu() == MULTIWORD


def test_write_read_is_identity(tmp_path):
    trees = parse_conllu(DMLM_EXAMPLE + MULTIWORD)
    path = tmp_path / "out.conllu"
    assert write_conllu(path, trees) == 2
    assert path.read_text() == DMLM_EXAMPLE + MULTIWORD
    assert list(read_conllu(path)) == trees


def _line(text: str, n: int, old: str, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = lines[n - 1].replace(old, new, 1)
    return "".join(lines)


ERRORS = {  # DMLM_EXAMPLE's line 1 is the comment, line 2 is word 1
    "too few columns": (_line(DMLM_EXAMPLE, 2, "\tADJ", ""), 2, 1, "9 tab-separated"),
    "space-padded field": (_line(DMLM_EXAMPLE, 3, "\tNOUN", "\t NOUN"), 3, 18, "space-padded UPOS"),
    "head not a number": (_line(DMLM_EXAMPLE, 4, "\t5\tcase", "\tfive\tcase"), 4, 18, "HEAD"),
    "head out of range": (_line(DMLM_EXAMPLE, 4, "\t5\tcase", "\t12\tcase"), 4, 18, "head 12 of word 3"),
    "own head": (_line(DMLM_EXAMPLE, 4, "\t5\tcase", "\t3\tcase"), 4, 18, "its own head"),
    "id out of sequence": (_line(DMLM_EXAMPLE, 5, "4\tthe", "7\tthe"), 5, 1, "word id 7 out of sequence"),
    "cycle": (
        _line(_line(DMLM_EXAMPLE, 2, "\t2\tamod", "\t5\tamod"), 6, "\t2\tnmod", "\t1\tnmod"),
        2,
        None,
        "cycle",
    ),
    "no root": (_line(DMLM_EXAMPLE, 7, "\t0\troot", "\t2\troot"), 2, None, "no word has head 0"),
    "comment inside": (_line(DMLM_EXAMPLE, 3, "2\tfigures", "# x\n2\tfigures"), 3, 1, "comment line inside"),
    # more digits than Python's int() converts (4,300): refused before conversion, at the field
    "head of 5,000 digits": (
        _line(DMLM_EXAMPLE, 4, "\t5\tcase", "\t" + "9" * 5000 + "\tcase"),
        4,
        18,
        "HEAD holds a number of 5000 digits",
    ),
    "id of 5,000 digits": (_line(DMLM_EXAMPLE, 5, "4\tthe", "4" * 5000 + "\tthe"), 5, 1, "ID holds a number"),
    "two roots": (
        _line(DMLM_EXAMPLE, 4, "\t5\tcase", "\t0\tcase"),
        7,
        None,
        "2 words have head 0: words 3 (line 12), 6 (line 15)",  # file lines: after MULTIWORD (8 lines)
    ),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_are_located(case, tmp_path):
    text, line, column, words = ERRORS[case]
    path = tmp_path / "bad.conllu"
    path.write_text(MULTIWORD + text)
    with pytest.raises(ConlluFormatError) as caught:
        list(read_conllu(path))
    error = caught.value
    offset = MULTIWORD.count("\n")
    assert (error.path, error.line, error.column, error.sentence) == (str(path), line + offset, column, 1)
    assert words in str(error)


def test_skip_bad_and_invalid_utf8(tmp_path):
    bad = _line(DMLM_EXAMPLE, 4, "\t5\tcase", "\t12\tcase")
    reader = ConlluReader((MULTIWORD + bad + MULTIWORD).splitlines(keepends=True), skip_bad=True)
    assert len(list(reader)) == 2 and len(reader.report.skipped) == 1
    path = tmp_path / "latin1.conllu"
    path.write_bytes(MULTIWORD.replace("go\tgo", "g\xf6\tgo").encode("latin-1"))
    with pytest.raises(ConlluFormatError, match=r"latin1.conllu:6:4: invalid UTF-8"):
        list(read_conllu(path))


def test_som_conversion_worked_example():
    """SOM §3.3 / Fig. 4: each head merges with its dependents; n-ary nodes binarised left-branching."""
    (dep,) = parse_conllu(DMLM_EXAMPLE)
    expected = Tree.from_bracket(
        "(root (root (root (nsubj (nsubj red figures) (nmod (nmod on the) screen)) indicate)"
        " (obj falling stocks)) .)"
    )
    tree = dependency_to_binary_tree(dep)
    assert tree == expected
    assert all(len(node.children) == 2 for node in tree.subtrees())
    assert dependency_to_binary_tree(dep, labels="none").label == "X"


def test_projectivize_lifts_crossing_arcs():
    # "A hearing is scheduled on the issue today": 'on' (5) depends on 'hearing' (2) across 'scheduled'.
    heads = [2, 4, 4, 0, 7, 7, 2, 4]
    assert projectivize(heads) == [2, 4, 4, 0, 7, 7, 4, 4]
    dep = DepTree(
        words=tuple("A hearing is scheduled on the issue today".split()),
        heads=tuple(heads),
        relations=("det", "nsubj", "aux", "root", "case", "det", "nmod", "obl"),
    )
    tree = dependency_to_binary_tree(dep)
    assert tree.leaves() == list(dep.words)
    spans = tree.unlabelled_spans(include_preterminals=True)
    assert all(a < b for a, b in spans)


def test_future_dependents_dmlm_example():
    (dep,) = parse_conllu(DMLM_EXAMPLE)
    z = future_dependents(dep)
    assert z[2] == [5, 6]  # "figures": its child "screen" and its parent "indicate" (paper §2.1)
    assert z[0] == [6]  # the root word is predicted from the sentence start
    assert z[9] == [10]  # the last word predicts the end of the sentence
    assert z[6] == [8, 9]


@st.composite
def dependency_trees(draw):
    n = draw(st.integers(1, 12))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [0] * n
    for index, word in enumerate(order[1:], 1):  # attach each word to an earlier word of the order
        heads[word - 1] = order[draw(st.integers(0, index - 1))]
    words = tuple(draw(st.text(alphabet="abcxyz-'", min_size=1, max_size=5)) for _ in range(n))
    return DepTree(words=words, heads=tuple(heads), relations=tuple("dep" for _ in range(n)))


@settings(max_examples=80, deadline=None)
@given(dependency_trees())
def test_properties(dep):
    assert parse_conllu(dep.to_conllu()) == [dep]
    tree = dependency_to_binary_tree(dep)
    assert tree.leaves() == list(dep.words)
    assert all(len(node.children) <= 2 for node in tree.subtrees())
    z = future_dependents(dep)
    n = len(dep)
    pairs = {(min(d, h), max(d, h)) for d, h in enumerate(dep.heads, 1)}
    assert sum(len(s) for s in z[:n]) == n  # every arc counted once, at its earlier end
    for position, targets in enumerate(z[:n]):
        assert all(t > position and (position, t) in pairs for t in targets)
