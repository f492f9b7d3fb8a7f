"""Regression tests for the input bugs that fuzzing found (docs/reliability.md lists them): each
input below once raised something other than a located ``SyntaxlmError``, hung, or lost data."""

from __future__ import annotations

import gc
import gzip
import json
import random
import time

import numpy as np
import pytest

from syntaxlm.errors import ConlluFormatError, InputFormatError, TreeFormatError
from syntaxlm.eval.blimp import BlimpFormatError, read_paradigm
from syntaxlm.eval.parseval import ParamFileError, evaluate_parses, read_prm
from syntaxlm.eval.sg_formula import FormulaError, evaluate_formula, parse_formula, region_references
from syntaxlm.eval.syntaxgym import RegionValuesError, load_suite, score_region_values
from syntaxlm.eval.uf1 import read_distances, read_predicted_trees
from syntaxlm.structure.distances import DistanceError, tree_from_distances
from syntaxlm.structure.som import structure_labels, tree_from_decisions
from syntaxlm.structure.tg import tg_sequences
from syntaxlm.text.base import VOCAB_FILE, VocabularyFormatError, load_vocabulary
from syntaxlm.text.subword import SubwordVocab
from syntaxlm.trees.binarize import binarize, unbinarize
from syntaxlm.trees.clean import PTB_CLEANING
from syntaxlm.trees.dependency import (
    ConlluReader,
    DepTree,
    dependency_to_binary_tree,
    parse_conllu,
    projectivize,
)
from syntaxlm.trees.ptb import TreeReader, parse_tree
from syntaxlm.trees.tree import Tree
from tests.reliability.fuzz_targets import (
    BLIMP_EXAMPLE,
    CONLLU_EXAMPLE,
    WORD_VOCAB_JSON,
    is_projective,
    small_suite,
)

TREES = b"(S (NP (DT the) (NN bird)) (VP (VBZ sings)))\n" * 200


# -- reading text files ----------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["not gzip", "cut short", "corrupt"])
def test_damaged_gzip_files_raise_located_errors(tmp_path, damage):
    """Was: gzip.BadGzipFile, EOFError or zlib.error from the readers of .gz files."""
    packed = gzip.compress(TREES, mtime=0)
    data = {"not gzip": TREES, "cut short": packed[: len(packed) // 2], "corrupt": packed[:20] + b"\xff" * 40}
    path = tmp_path / "trees.mrg.gz"
    path.write_bytes(data[damage])
    with pytest.raises(
        TreeFormatError, match=r"trees\.mrg\.gz:\d+: the compressed data is damaged"
    ) as caught:
        list(TreeReader(path))
    assert caught.value.line >= 1
    conllu = tmp_path / "trees.conllu.gz"
    conllu.write_bytes(gzip.compress(CONLLU_EXAMPLE.encode() * 50, mtime=0)[:300])
    with pytest.raises(ConlluFormatError, match="the compressed data is damaged"):
        list(ConlluReader(conllu))


@pytest.mark.parametrize("separator", ["\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_strings_split_into_lines_as_files_do(tmp_path, separator):
    """Was: ``parse_tree``/``parse_conllu`` split at every Unicode line break (``str.splitlines``),
    so ``(S a\\x1cb)`` had two words as a string and one word as a file."""
    text = f"(S (NN a{separator}b) (NN c))"
    path = tmp_path / "tree.mrg"
    path.write_text(text + "\n", encoding="utf-8")
    assert parse_tree(text) == next(iter(TreeReader(path)))
    assert parse_tree(text).leaves() == [f"a{separator}b", "c"]
    conllu = CONLLU_EXAMPLE.replace("\tscreen\tscreen\t", f"\tscr{separator}een\tscreen\t")
    path = tmp_path / "words.conllu"
    path.write_text(conllu, encoding="utf-8")
    assert parse_conllu(conllu) == list(ConlluReader(path))
    assert f"scr{separator}een" in parse_conllu(conllu)[0].words
    assert parse_tree("(S (NN a)\r\n (NN b))").leaves() == ["a", "b"]


def test_readers_of_line_files_locate_invalid_utf8(tmp_path):
    """Was: ``UnicodeDecodeError`` from read_prm, read_distances, read_predicted_trees,
    read_paradigm and score_region_values."""
    cases = [
        (read_prm, "p.prm", b"LABELED 1\nDELETE_LABEL \xff\n", ParamFileError, 2, 14),
        (read_distances, "d.txt", b"[1, 2]\r\n[3, \xe9]\n", InputFormatError, 2, 5),
        (read_predicted_trees, "t.txt", b"(X a b)\r(X \xc3)\n", InputFormatError, 2, 4),
        (read_paradigm, "p.jsonl", BLIMP_EXAMPLE + b'{"x": "\xff"}\n', BlimpFormatError, 4, 8),
    ]
    for reader, name, data, error_type, line, column in cases:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(error_type) as caught:
            reader(path)
        assert (caught.value.path, caught.value.line, caught.value.column) == (str(path), line, column)
        assert "invalid UTF-8" in str(caught.value)
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(small_suite()))
    values = tmp_path / "values.json"
    values.write_bytes(b'[\n{"item_number": 1, "values": {"\xff": []}}]')
    with pytest.raises(RegionValuesError, match=r"values\.json:2:32: invalid UTF-8"):
        score_region_values(suite, values)


@pytest.mark.parametrize("data", [b"\xef", b"\xef\xbb"])
def test_a_file_of_part_of_a_bom_is_not_read_as_empty(tmp_path, data):
    """Was: Python's utf-8-sig decoder reads a file holding only the first bytes of a BOM as empty,
    so such a file silently held no trees."""
    path = tmp_path / "trees.mrg"
    path.write_bytes(data)
    with pytest.raises(TreeFormatError, match=r"trees\.mrg:1:1: invalid UTF-8"):
        list(TreeReader(path))
    path.write_bytes(b"\xef\xbb\xbf(S (NN a))\n")
    assert [tree.leaves() for tree in TreeReader(path)] == [["a"]]


# -- JSON ----------------------------------------------------------------------------------------------


def _json_readers(tmp_path):
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(small_suite()))
    vocab = tmp_path / "vocab"
    vocab.mkdir()
    return [
        (load_suite, tmp_path / "s.json"),
        (lambda path: score_region_values(suite, path), tmp_path / "v.json"),
        (lambda path: load_vocabulary(path.parent), vocab / VOCAB_FILE),
        (read_distances, tmp_path / "d.txt"),
        (read_predicted_trees, tmp_path / "t.txt"),
        (read_paradigm, tmp_path / "p.jsonl"),
    ]


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_json_is_a_located_error(tmp_path, depth):
    """Was: ``RecursionError`` from ``json.loads`` in every JSON reader."""
    text = "[" * depth + "]" * depth + "\n"
    for reader, path in _json_readers(tmp_path):
        path.write_text(text)
        with pytest.raises(InputFormatError, match=r":1:\d+: .*nested \d+ deep") as caught:
            reader(path)
        assert caught.value.path == str(path)


def test_integers_too_long_for_python_are_located_errors(tmp_path):
    """Was: ``ValueError: Exceeds the limit (4300 digits) for integer string conversion``."""
    for reader, path in _json_readers(tmp_path):
        lines = path.suffix in (".txt", ".jsonl")  # one JSON value per line
        path.write_text("[" + "\n" * (not lines) + "  1, 2, " + "9" * 5000 + "]\n")
        with pytest.raises(InputFormatError, match=r"an integer of 5000 digits") as caught:
            reader(path)
        assert (caught.value.line, caught.value.column) == ((1, 10) if lines else (2, 9))


def test_long_digit_strings_outside_json(tmp_path):
    """Was: ``ValueError`` from ``int()`` on a region number, a .prm integer, a region_meta key and
    a BLiMP pairID with more than 4300 digits."""
    with pytest.raises(FormulaError, match="region number of 5000 digits at character 2"):
        parse_formula("[(" + "1" * 5000 + ";%a%) > 0]")
    path = tmp_path / "p.prm"
    path.write_text("CUTOFF_LEN " + "4" * 5000 + "\n")
    with pytest.raises(ParamFileError, match=r"p\.prm:1:1: CUTOFF_LEN needs one integer"):
        read_prm(path)
    suite = small_suite()
    suite["region_meta"]["1" * 5000] = "extra"
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    with pytest.raises(InputFormatError, match="region_meta"):
        load_suite(path)
    record = json.loads(BLIMP_EXAMPLE.splitlines()[0]) | {"pairID": "7" * 5000}
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(BlimpFormatError, match=r"p\.jsonl:1: pairID is '777"):
        read_paradigm(path)


def test_region_meta_numbers_given_twice_are_refused(tmp_path):
    """Was: ``{"1": "a", "01": "b"}`` kept one of the two regions without a word."""
    suite = small_suite()
    suite["region_meta"] = {"1": "subject", "01": "again", "2": "verb", "3": "rest"}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    with pytest.raises(InputFormatError, match=r"region_meta\['01'\]: region 1 appears twice"):
        load_suite(path)


def test_distances_too_large_for_a_float(tmp_path):
    """Was: ``OverflowError: int too large to convert to float``."""
    path = tmp_path / "d.txt"
    path.write_text("[1, 2]\n[0.5, 1" + "0" * 400 + "]\n")
    with pytest.raises(InputFormatError, match=r"d\.txt:2: entry 1 is an integer of 401 digits"):
        read_distances(path)
    with pytest.raises(DistanceError, match=r"not numbers.*\(sentence 4\)"):
        tree_from_distances([1, 10**400], sentence=4)


def test_region_values_with_deep_or_huge_entries_give_short_messages(tmp_path):
    """Was: the messages printed whole values (``repr``/``json.dumps``), without bound."""
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(small_suite()))
    values = tmp_path / "values.json"
    rows = [{"item_number": 1, "values": {"match": [[[[[[[[1]]]]]]]] * 10_000, "mis-match": [1, 2, 3]}}]
    values.write_text(json.dumps(rows))
    with pytest.raises(RegionValuesError) as caught:
        score_region_values(suite, values)
    assert len(str(caught.value)) < 500
    record = json.loads(WORD_VOCAB_JSON)
    deep = json.loads("[" * 900 + "]" * 900)  # nearly as deep as json reads
    for settings in (
        {"min_freq": deep},
        {"min_freq": 1, "unknown": deep},
        {"min_freq": 1, "unknown": "berkeley", "max_words": deep},
    ):
        record["settings"] = settings
        (tmp_path / VOCAB_FILE).write_text(json.dumps(record))
        with pytest.raises(VocabularyFormatError) as caught:
            load_vocabulary(tmp_path)
        assert len(str(caught.value)) < 500
    record["specials"] = ["x"] * 100_000
    (tmp_path / VOCAB_FILE).write_text(json.dumps(record))
    with pytest.raises(VocabularyFormatError, match="special tokens") as caught:
        load_vocabulary(tmp_path)
    assert len(str(caught.value)) < 500


def test_nested_list_trees_hold_words(tmp_path):
    """Was: any JSON value (null, an object) became a word through ``str``."""
    path = tmp_path / "t.txt"
    path.write_text('[["a", "b"], "c"]\n[["a", null], "c"]\n')
    with pytest.raises(InputFormatError, match=r"t\.txt:2: None is not a word"):
        read_predicted_trees(path)


# -- CoNLL-U ---------------------------------------------------------------------------------------------


def test_a_conllu_file_cut_short_is_not_read_as_a_shorter_sentence(tmp_path):
    """Was: a file ending without the blank line after its last sentence (cut inside it) gave
    that sentence's first words as a whole sentence."""
    cut = CONLLU_EXAMPLE[: CONLLU_EXAMPLE.index("3\ton")]  # "red figures": a valid sentence on its own
    path = tmp_path / "cut.conllu"
    path.write_text(cut)
    with pytest.raises(ConlluFormatError, match=r"cut\.conllu:3: the input ends inside a sentence") as caught:
        list(ConlluReader(path))
    assert caught.value.sentence == 0
    reader = ConlluReader(path, skip_bad=True)
    assert list(reader) == [] and len(reader.report.skipped) == 1


def test_a_conllu_id_of_underscore_is_a_located_error():
    """Was: ``TypeError: 'NoneType' object is not subscriptable`` (conllu reads the ID ``_`` as None)."""
    text = CONLLU_EXAMPLE.replace("4\tthe", "_\tthe")
    with pytest.raises(ConlluFormatError, match=r"<string>:5:1: word id '_'"):
        parse_conllu(text)


def _old_definition_lifting(heads: list[int]) -> list[int]:
    """The lifting as specified (the old implementation): shortest, then leftmost, non-projective arc."""
    heads = list(heads)

    def dominated(word: int, head: int) -> bool:
        while word not in (0, head):
            word = heads[word - 1]
        return word == head

    while True:
        arcs = [
            (abs(head - dependent), dependent)
            for dependent, head in enumerate(heads, 1)
            if head
            and any(not dominated(w, head) for w in range(min(dependent, head) + 1, max(dependent, head)))
        ]
        if not arcs:
            return heads
        dependent = min(arcs)[1]
        heads[dependent - 1] = heads[heads[dependent - 1] - 1]


def test_projectivize_is_the_same_lifting_and_fast_on_long_sentences():
    """Was: O(n^3) and more per lift: a 100,000-word sentence never finished. And heads with a
    cycle looped forever."""
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 14)
        order = rng.sample(range(1, n + 1), n)
        heads = [0] * (n + 1)
        for k, word in enumerate(order[1:], 1):
            heads[word] = order[rng.randrange(k)]
        lifted = projectivize(heads[1:])
        assert lifted == _old_definition_lifting(heads[1:]) and is_projective(lifted)
    n = 100_000
    flat = [0] + [1] * (n - 1)
    crossing = list(flat)
    crossing[9], crossing[59_999] = 60_000, 3  # two long crossing arcs
    started = time.perf_counter()
    assert projectivize(flat) == flat
    lifted = projectivize(crossing)
    assert time.perf_counter() - started < 20
    assert projectivize(lifted) == lifted and lifted != crossing
    with pytest.raises(ValueError, match="never reach the root"):
        projectivize([0, 3, 4, 2])
    with pytest.raises(ValueError, match="a sentence without words"):
        dependency_to_binary_tree(DepTree((), (), ()))


# -- formulas, arrays, numbers ------------------------------------------------------------------------


def test_formulas_of_any_depth_and_length():
    """Was: ``RecursionError`` when parsing ~250 nested brackets and evaluating ~1000 terms."""
    deep = "[" * 10_000 + "(1;%a%) > 0" + "]" * 10_000
    assert evaluate_formula(parse_formula(deep), {"a": [1.0]}) is True
    long = " + ".join(["(1;%a%)"] * 20_000) + " = 20000 & " + " - ".join(["(2;%b%)"] * 20_000) + " < 0"
    expression = parse_formula(long)
    assert evaluate_formula(expression, {"a": [1.0], "b": [0.0, 1.0]}) is True
    assert len(region_references(expression)) == 40_000
    with pytest.raises(FormulaError, match=r"bracket '\[' is not closed at character 1"):
        parse_formula("[[[(1;%a%) > 0]]")


@pytest.mark.parametrize(
    ("ids", "kinds", "offsets", "problem"),
    [
        ([2**31], [0], [0, 1], "ids must be integers from -2147483648 to 2147483647, not 2147483648"),
        ([5.7, 6, 7], [0, 1, 2], [0, 3], "ids must be integers .* not float64 values"),
        ([5, 6, 7], [0, 1, 2], [0, 2**70], "offsets must be integers .* not object values"),
        ([5, 6, 7], [0, 300, 2], [0, 3], "kinds must be integers from -128 to 127, not 300"),
        ([[5], [6, 7]], [0, 1], [0, 2], "ids must be a flat sequence of integers"),
    ],
)
def test_tg_sequences_refuses_numbers_outside_its_arrays(ids, kinds, offsets, problem):
    """Was: ``OverflowError`` from numpy, or floats silently cut down to integers."""
    with pytest.raises(ValueError, match=problem):
        tg_sequences(ids, kinds, offsets)


def test_decisions_of_a_memory_with_many_slots():
    """Was: ``MemoryError`` building the tree of a memory with 2**62 slots (one list entry per slot)."""
    n_slots = 2**31 - 1
    tree = tree_from_decisions([0, n_slots - 1, n_slots - 2, n_slots - 1], n_slots)
    assert tree == tree_from_decisions([0, 2, 1, 2], 3)
    assert tree_from_decisions(structure_labels(tree, n_slots), n_slots) == tree
    with pytest.raises(ValueError, match="n_slots must be a positive integer up to 2147483647"):
        tree_from_decisions([0], 2**62)


def test_subword_vocab_model_file_names_that_are_not_files(tmp_path):
    """Was: ``ValueError: embedded null byte`` and ``IsADirectoryError`` for ``model_file`` names."""
    record = {
        "format": SubwordVocab.FORMAT,
        "version": 1,
        "model_sha256": "0",
        "size": 4,
        "symbols": [],
        "settings": {},
    }
    for name in ("..", "a\x00b", ".", ""):
        (tmp_path / VOCAB_FILE).write_text(json.dumps(record | {"model_file": name}))
        with pytest.raises(VocabularyFormatError, match="field 'model_file' is malformed"):
            load_vocabulary(tmp_path)


def test_evalb_files_with_crlf_and_bom_read_as_unix_files(tmp_path):
    line = TREES.split(b"\n")[0] + b"\n"
    gold = tmp_path / "gold.tree"
    gold.write_bytes(b"\xef\xbb\xbf" + line.replace(b"\n", b"\r\n") * 3)
    pred = tmp_path / "pred.tree"
    pred.write_bytes(line * 3)
    result = evaluate_parses(gold, pred)
    assert result.overall.sentences == 3 and result.overall.f1 == pytest.approx(100.0)
    assert np.isfinite(result.within_cutoff.recall)


# -- trees -----------------------------------------------------------------------------------------------


def test_stripping_function_tags_never_leaves_an_empty_label(tmp_path):
    """Was: the label ``=X`` was cut to ``""``, which cannot be written or read back (found by the
    campaign: ``TreeError: label '' cannot be written in brackets``)."""
    path = tmp_path / "tags.mrg"
    path.write_text("(S (=X (NN a)) (NP=2 (NN b)) (-NONE- *))\n")
    (tree,) = TreeReader(path, cleaning=PTB_CLEANING)
    assert [node.label for node in tree.subtrees()] == ["S", "=X", "NN", "NP", "NN"]
    assert parse_tree(tree.to_bracket()) == tree


def test_unbinarizing_a_wide_node_takes_linear_time():
    """Was: splicing level by level copied the chain of intermediate nodes once per level, about
    19 s for one node of 100,000 children. Four times the children must take about four times as
    long (linear), not sixteen (quadratic): a ratio measured in one run, so a busy machine slows
    both sides alike; the faster of two tries of each, with the garbage collector paused (its passes
    over the many new nodes are not the algorithm's)."""

    def seconds(children: int, factor: str) -> float:
        tree = Tree("S", [Tree("NN", [f"w{i}"]) for i in range(children)])
        tries = []
        for _ in range(2):
            gc.collect()
            gc.disable()
            try:
                started = time.perf_counter()
                assert unbinarize(binarize(tree, factor)) == tree
                tries.append(time.perf_counter() - started)
            finally:
                gc.enable()
        return min(tries)

    for factor in ("left", "right"):
        assert seconds(40_000, factor) < 8 * seconds(10_000, factor), factor
    nested = Tree.from_bracket("(X a (@X b (Y (@Y c (@Y d e)) f)))")
    assert unbinarize(nested) == Tree.from_bracket("(X a b (Y c d e f))")
