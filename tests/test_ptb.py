import gzip
import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxlm.errors import TreeError, TreeFormatError
from syntaxlm.trees.clean import PTB_CLEANING
from syntaxlm.trees.ptb import TreeReader, parse_tree, read_trees, write_trees
from syntaxlm.trees.tree import Tree

from .strategies import pos_tagged_trees

LAYOUTS = {
    "one per line": "(S (NP (DT the) (NN bird)) (VP (VBZ sings)))\n(S (NP (PRP it)) (VP (VBD flew)))\n",
    "multi-line, blank separated": (
        "(ROOT\n  (S\n    (NP (DT the) (NN bird))\n    (VP (VBZ sings))))\n\n"
        "(ROOT\n  (S (NP (PRP it))\n     (VP (VBD flew))))\n"
    ),
    "mrg with empty outer bracket": (
        "( (S \n    (NP-SBJ (DT the) (NN bird) )\n    (VP (VBZ sings) )))\n"
        "( (S (NP-SBJ (PRP it)) (VP (VBD flew)) ) )\n"
    ),
    "outer bracket alone on its line": "(\n(S (NP (DT the) (NN bird)) (VP (VBZ sings))))\n",
    "CRLF and tabs": "(S\t(NP (DT the) (NN bird))\r\n\t(VP (VBZ sings)))\r\n",
    "label after a space": "( S ( NP (DT the) (NN bird)) (VP (VBZ sings)))\n",
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts(layout, tmp_path):
    path = tmp_path / "trees.mrg"
    path.write_bytes(LAYOUTS[layout].encode())
    trees = list(read_trees(path, cleaning=PTB_CLEANING))
    assert trees[0].leaves() == ["the", "bird", "sings"]
    root = trees[0] if trees[0].label == "S" else trees[0].children[0]
    assert root == Tree.from_bracket("(S (NP (DT the) (NN bird)) (VP (VBZ sings)))")


def test_gzip_and_directory(tmp_path):
    (tmp_path / "a.mrg").write_text("(S (NN a))\n")
    with gzip.open(tmp_path / "b.trees.gz", "wt") as handle:
        handle.write("(S (NN b))\n")
    (tmp_path / "README").write_text("not a treebank")
    assert [t.leaves()[0] for t in read_trees(tmp_path)] == ["a", "b"]


def test_brackets_in_words_and_unicode_spaces():
    tree = parse_tree("(NP (-LRB- -LRB-) (NN Xpd\u00a0TTD) (-RRB- -RRB-))", pos_tags=True)
    assert tree.leaves() == ["-LRB-", "Xpd\u00a0TTD", "-RRB-"]


# Each case: text, (line, column), words the message must contain.
ERRORS = {
    "unbalanced: missing ')' at end of file": (
        "(S (NP (DT a) (NN b))\n  (VP (VBZ c))\n",
        (1, 1),
        "never closed",
    ),
    "unbalanced: extra ')'": ("(S (NN a)))\n", (1, 11), "unexpected ')'"),
    "unbalanced: next tree starts in column 1": (
        "(S (NP (NN a)\n(S (NN b))\n",
        (2, 1),
        "line 1 still has 2 unclosed",
    ),
    "empty label": ("(S ( (NN a)))\n", (1, 4), "without a label"),
    "empty brackets": ("(S () (NN a))\n", (1, 4), "empty brackets"),
    "no children": ("(S (NP) (NN a))\n", (1, 4), "(NP) has no children"),
    "leaf outside a preterminal": ("(S (NP the (NN bird)))\n", (1, 12), "word 'the' outside a preterminal"),
    "word after a bracket": ("(S (NP (DT the) bird))\n", (1, 17), "word 'bird' outside a preterminal"),
    "two words in a preterminal": ("(S (NN blue bird))\n", (1, 13), "second word 'bird'"),
    "stray text before a tree": ("hello (S (NN a))\n", (1, 1), "stray text 'hello'"),
    "stray text between trees": ("(S (NN a))\n\n  junk\n(S (NN b))\n", (3, 3), "stray text 'junk'"),
    "two trees in one outer bracket": ("( (S (NN a)) (S (NN b)) )\n", (1, 14), "second tree inside"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_name_file_line_column(case, tmp_path):
    text, (line, column), words = ERRORS[case]
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(TreeFormatError) as caught:
        list(read_trees(path))
    error = caught.value
    assert (error.path, error.line, error.column) == (str(path), line, column)
    assert str(error).startswith(f"{path}:{line}:{column}: ")
    assert words in str(error)
    assert "expected" in str(error)


def test_invalid_utf8(tmp_path):
    path = tmp_path / "bad.mrg"
    path.write_bytes(b"(S (NN a))\n(S (NN \xff))\n")
    with pytest.raises(TreeFormatError, match=r"bad.mrg:2:8: invalid UTF-8"):
        list(read_trees(path))


def test_skip_bad_skips_counts_and_reports(tmp_path):
    path = tmp_path / "mixed.mrg"
    path.write_text(
        "(S (NN a))\n"
        "(S (NP the (NN b)))\n"  # bad: word outside a preterminal
        "(S (NN c))\n"
        "(S (NP (NN d))\n"  # bad: unbalanced, the next tree starts in column 1
        "(S (NN e)))\n"  # bad: extra ')' after a good tree... the tree itself is fine
        "(S () (NN f))\n"  # bad: empty brackets
        "(S (NN g))\n"
    )
    reader = TreeReader(path, skip_bad=True)
    words = [tree.leaves()[0] for tree in reader]
    assert words == ["a", "c", "e", "g"]
    assert [(e.line, e.column) for e in reader.report.skipped] == [(2, 12), (5, 1), (5, 11), (6, 4)]
    summary = reader.report.summary()
    assert "4 trees read" in summary and "4 malformed trees skipped" in summary
    assert f"{path}:2:12" in summary


def test_cleaning_while_reading_equals_cleaning_after():
    text = (
        "( (S (NP-SBJ-1 (-NONE- *)) (VP (VBD left) (NP (-NONE- *T*-1))) (. .)) )\n( (S (NP (-NONE- *)) ) )\n"
    )
    reader = TreeReader(io.StringIO(text), cleaning=PTB_CLEANING)
    trees = list(reader)
    assert trees == [Tree.from_bracket("(S (VP (VBD left)) (. .))")]
    assert reader.report.emptied == 1
    raw = list(read_trees(io.StringIO(text)))
    assert [PTB_CLEANING(t) for t in raw] == [trees[0], None]


def test_write_rejects_unwritable_and_is_atomic(tmp_path):
    path = tmp_path / "out.trees"
    path.write_text("previous\n")
    bad = [Tree("S", [Tree("NN", ["a"])]), Tree("S", [Tree("NN", ["b c"])])]
    with pytest.raises(TreeError, match=r"word 'b c'.*tree 1"):
        write_trees(path, bad)
    assert path.read_text() == "previous\n"
    assert list(tmp_path.iterdir()) == [path]


@settings(max_examples=60, deadline=None)
@given(trees=pos_tagged_trees())
def test_write_read_round_trip(tmp_path_factory, trees):
    path = tmp_path_factory.mktemp("rt") / "t.trees"
    for pretty in (False, True):
        write_trees(path, [trees, trees], pretty=pretty)
        assert list(read_trees(path)) == [trees, trees]


def test_a_phrase_over_one_dropped_tag_is_not_a_preterminal():
    from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING

    text = "(S (NP (PRP It)) (VP (VBD flew)))\n(S\n  (NP\n    (PRP It))\n  (VP (VBD flew)))\n"
    trees = list(read_trees(io.StringIO(text), cleaning=CHOE_CHARNIAK_CLEANING))
    assert [t.to_bracket() for t in trees] == ["(S (NP It) (VP flew))"] * 2


@settings(max_examples=150, deadline=None)
@given(
    tree=pos_tagged_trees(),
    flags=st.fixed_dictionaries(
        {
            name: st.booleans()
            for name in (
                "remove_empty_elements",
                "strip_function_tags",
                "strip_root",
                "remove_punctuation",
                "collapse_unary_chains",
                "drop_pos_tags",
            )
        }
    ),
    pretty=st.booleans(),
)
def test_cleaning_while_reading_equals_cleaning_after_property(tree, flags, pretty):
    from syntaxlm.trees.clean import Cleaning

    cleaning = Cleaning(**flags)
    text = (tree.pretty(width=30) if pretty else tree.to_bracket()) + "\n"
    reader = TreeReader(io.StringIO(text), cleaning=cleaning)
    expected = cleaning(tree)
    assert list(reader) == ([] if expected is None else [expected])
    assert reader.report.emptied == (expected is None)


def test_an_empty_bracket_is_an_error_also_when_cleaning_removes_its_siblings():
    text = "(S (NP (-NONE- *)) (VP) (NN a))\n"
    with pytest.raises(TreeFormatError, match=r"<input>:1:20: \(VP\) has no children"):
        list(TreeReader(io.StringIO(text), cleaning=PTB_CLEANING))


def test_reading_streams_instead_of_loading_the_file(tmp_path, monkeypatch):
    import tracemalloc

    from syntaxlm.trees import ptb

    monkeypatch.setattr(ptb._Chunks, "SIZE", 1 << 12)  # small chunks, so a small file shows it
    path = tmp_path / "big.trees"
    line = "(S (NP (DT the) (NN dog)) (VP (VBZ barks) (PP (IN at) (NP (DT the) (NN cat)))) (. .))\n"
    path.write_text(line * 6_000)  # 0.5 MB

    def peak(consume) -> int:
        tracemalloc.start()
        consume(TreeReader(path))
        result = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return result

    streamed = peak(lambda reader: sum(1 for _ in reader))
    held = peak(list)
    assert streamed < held / 3, (streamed, held)


def test_a_stray_bracket_after_a_tree_costs_only_itself():
    # A '(' left after a complete tree is a broken tree, not an outer bracket for the next line's tree.
    lines = ["(ROOT (DT a))\n", "(S (DT b) (NN c))(\n", "(ROOT (DT d))\n"]
    reader = TreeReader(lines, skip_bad=True)
    assert [str(tree) for tree in reader] == ["(ROOT (DT a))", "(S (DT b) (NN c))", "(ROOT (DT d))"]
    assert len(reader.report.skipped) == 1
    # while '(' alone in column 1 still opens an outer bracket
    assert [str(tree) for tree in TreeReader(["(\n", "(S (NP a) (VP b))\n", ")\n"])] == ["(S (NP a) (VP b))"]


@pytest.mark.parametrize("shape", ["deep", "flat"])
def test_a_single_line_tree_of_megabytes_is_read_whole_and_errors_in_it_are_located(shape, tmp_path):
    # Reading is linear (measured to 20 MB); here a 1.2 MB line checks the result, not the time.
    words = 80_000
    if shape == "deep":  # (X (NN w0) (X (NN w1) ... (NN wN)))
        line = "".join(f"(X (NN w{i}) " for i in range(words - 1)) + f"(NN w{words - 1})" + ")" * (words - 1)
    else:
        line = "(S " + " ".join(f"(NN w{i})" for i in range(words)) + ")"
    source = tmp_path / "one.mrg"
    source.write_text(line + "\n")
    (tree,) = read_trees(source)
    assert tree.leaves() == [f"w{i}" for i in range(words)]
    assert sum(1 for _ in tree.subtrees()) == (2 * words - 1 if shape == "deep" else words + 1)
    source.write_text(line + ")\n")
    with pytest.raises(TreeFormatError, match=re.escape(f"one.mrg:1:{len(line) + 1}: unexpected ')'")):
        list(read_trees(source))
