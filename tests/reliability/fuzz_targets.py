"""Fuzz targets: every input path of the library, fed broken input, and the outcomes it may have.

A ``Target`` is one input path. It runs on a *value*: the bytes of a file (with a byte of reader
options) for the file readers, the arguments for the string and array APIs. ``strategy`` draws
values for hypothesis (valid inputs broken a few times, and random bytes); ``from_bytes`` turns
the raw bytes of a coverage-guided fuzzer (atheris) into a value; ``check(value, folder)`` runs the
path and raises unless the outcome is allowed:

- a result, which is then used (printed, converted, written and read back) and checked where a
  check is cheap: nothing read is dropped without a report, what is written reads back the same;
- or the library's typed error (``SyntaxlmError``) that names where the problem is. What a
  location is depends on the input and is checked by each target (``located_in_file`` and the
  ``*_located`` functions below).

Everything else (``RecursionError``, ``MemoryError``, ``UnicodeDecodeError``, ``IndexError``,
``AssertionError`` from a check here) propagates: it is a finding. A ``ValueError`` or
``TypeError`` is accepted only from the library's own argument checks on values a programmer
passes (``programmer_error``), never for the contents of a file. Hangs are bounded by the input
sizes in the tests and reported as slow inputs by ``scripts/fuzz_campaign.py``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import itertools
import json
import math
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import torch
import typer
from click.testing import CliRunner
from hypothesis import strategies as st

from syntaxlm.cli import app
from syntaxlm.data.sentences import is_treebank, read_given_trees, read_sentences
from syntaxlm.errors import ActionSequenceError, InputFormatError, SyntaxlmError
from syntaxlm.eval.blimp import read_blimp_logprobs, read_paradigm
from syntaxlm.eval.generation import GenerationInputError
from syntaxlm.eval.parseval import COLLINS_PARAMS, EvalbParams, evaluate_parses, read_prm
from syntaxlm.eval.sg_formula import FormulaError, evaluate_formula, parse_formula, region_references
from syntaxlm.eval.syntaxgym import evaluate_suite, load_suite, region_values_from_json, score_region_values
from syntaxlm.eval.uf1 import evaluate_uf1, read_distances, read_predicted_trees
from syntaxlm.models import build_model, load_model
from syntaxlm.structure.actions import ActionKind, actions_to_tree, read_actions, tree_to_actions
from syntaxlm.structure.distances import (
    describe_distances,
    distances_from_tree,
    lca_distances,
    nested_tree_from_distances,
    tree_from_distances,
)
from syntaxlm.structure.som import (
    check_decisions,
    memory_grid,
    structure_labels,
    tree_from_decisions,
)
from syntaxlm.structure.tg import VARIANTS, segment_sequences, tg_sequences
from syntaxlm.text.base import VOCAB_FILE, load_vocabulary
from syntaxlm.text.subword import MODEL_FILE, SubwordVocab
from syntaxlm.text.vocab import WordVocab
from syntaxlm.train.checkpoint import TrainingState, load_checkpoint, save_checkpoint
from syntaxlm.train.config import load_config, run_config
from syntaxlm.trees.binarize import binarize, unbinarize
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING, PTB_CLEANING
from syntaxlm.trees.dependency import (
    ConlluReader,
    dependency_to_binary_tree,
    future_dependents,
    parse_conllu,
    projectivize,
)
from syntaxlm.trees.ptb import TreeReader, check_writable, parse_tree, write_trees
from syntaxlm.trees.transforms import left_branching, reversed_tree, right_branching
from syntaxlm.trees.tree import Tree
from tests.strategies import pos_tagged_trees, posless_trees

# -- outcomes ------------------------------------------------------------------------------------


def outcome(call: Callable[[], Any], located: Callable[[SyntaxlmError], None]) -> Any:
    """``call()``'s result, or the ``SyntaxlmError`` it raised once ``located`` accepted it."""
    try:
        return call()
    except SyntaxlmError as error:
        located(error)
        assert str(error), f"{type(error).__name__} without a message"
        return error


def failed(result: Any) -> bool:
    return isinstance(result, SyntaxlmError)


def programmer_error(error: Exception) -> None:
    """Accept a ``ValueError``/``TypeError`` only when syntaxlm's own code raised it (an argument
    check with its message), not numpy or the standard library on the way."""
    frames = traceback.extract_tb(error.__traceback__)
    assert frames and "/syntaxlm/" in frames[-1].filename, (
        f"{type(error).__name__} not raised by syntaxlm: {error}"
    )
    assert str(error), "an argument error without a message"


def located_in_file(error: SyntaxlmError, path: Path, data: bytes, *, line: bool = True) -> None:
    """An ``InputFormatError`` naming ``path`` and, with ``line``, a line the file has (or the one
    after its end) and a column >= 1 when there is one."""
    assert isinstance(error, InputFormatError), f"{type(error).__name__} for a file: {error}"
    assert error.path == str(path), f"the error names {error.path!r}, not the file: {error}"
    assert str(error).startswith(str(path)), f"the message does not start with the file: {error}"
    if line:
        assert error.line is not None, f"no line: {error}"
    if error.line is not None:
        most = data.count(b"\n") + data.count(b"\r") + 1
        assert 1 <= error.line <= most, f"line {error.line} of a file of at most {most} lines: {error}"
    if error.column is not None:
        assert error.column >= 1, f"column {error.column}: {error}"


def sentence_named(sentence: int) -> Callable[[SyntaxlmError], None]:
    """Errors about one sentence's values must say which sentence."""

    def located(error: SyntaxlmError) -> None:
        assert f"(sentence {sentence})" in str(error), f"the sentence is not named: {error}"

    return located


# -- breaking valid input --------------------------------------------------------------------------

COMMON_PIECES = (
    b"\r\n", b"\r", b"\n", b"\n\n", b"\t", b" ", b"\x00", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80",
    b"\xef\xbb\xbf", b"\xc2\xa0", b"\x0b", b"\x0c", b"\x1c", b"\xc2\x85", b"\xe2\x80\xa8", b"(", b")", b"-",
)  # fmt: skip
TREE_PIECES = COMMON_PIECES + (
    b"((",
    b"))",
    b"( ",
    b"(X",
    b"X)",
    b"()",
    b"\n(",
    b"(NN a)",
    b"-NONE-",
    b"=",
    b"@X",
)
CONLLU_PIECES = COMMON_PIECES + (
    b"_", b"0", b"1", b"2", b"9", b"-1", b"1-2", b"3.1", b"0.1", b"#", b"\t_", b"99999999999999999999", b"1-",
    b"9" * 5000,
)  # fmt: skip
JSON_PIECES = COMMON_PIECES + (
    b"{", b"}", b"[", b"]", b'"', b",", b":", b"null", b"true", b"0", b"-1", b"1.5", b"1e999", b"NaN",
    b"Infinity", b"\\u0000", b"\\ud800", b"\\", b"[" * 3000, b"9" * 5000, b'"item_number"', b'"values"',
    b'"region_number"', b'"conditions"', b'"formula"', b"%", b";", b"*", b"&", b"|", b"<", b">", b"=",
)  # fmt: skip
LINE_PIECES = COMMON_PIECES + (
    b"[",
    b"]",
    b",",
    b"0",
    b"1e400",
    b"1" + b"0" * 400,
    b"NaN",
    b'"a"',
    b"{}",
    b"null",
)


def broken(
    valid: st.SearchStrategy[bytes], pieces: Sequence[bytes], *, most: int = 3
) -> st.SearchStrategy[bytes]:
    """Valid file contents broken up to ``most`` times: a piece inserted or put in place of a byte,
    bytes deleted, a slice repeated, the end cut off, every line end made CRLF."""

    @st.composite
    def build(draw) -> bytes:
        data = bytearray(draw(valid))
        for _ in range(draw(st.integers(0, most))):
            operation = draw(st.integers(0, 5))
            at = draw(st.integers(0, len(data)))
            if operation == 0:
                data[at:at] = draw(st.sampled_from(pieces))
            elif operation == 1:
                del data[at : at + draw(st.integers(1, 4))]
            elif operation == 2:
                data[at : at + 1] = draw(st.sampled_from(pieces))
            elif operation == 3:
                data[at:at] = data[at : draw(st.integers(at, len(data)))]
            elif operation == 4:
                del data[at:]
            else:
                data = bytearray(bytes(data).replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
        return bytes(data)

    return build()


def file_input(valid: st.SearchStrategy[bytes], pieces: Sequence[bytes]) -> st.SearchStrategy[bytes]:
    """Mostly broken valid files; some random bytes, some valid files as they are."""
    return st.one_of(broken(valid, pieces), st.binary(max_size=200), valid)


def with_options(contents: st.SearchStrategy[bytes]) -> st.SearchStrategy[tuple[int, bytes]]:
    return st.tuples(st.integers(0, 255), contents)


def options_and_bytes(data: bytes) -> tuple[int, bytes]:
    """An atheris input as (reader options, file contents): the first byte is the options."""
    return (data[0], data[1:]) if data else (0, b"")


def text_of(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    check: Callable[[Any, Path], None]
    strategy: Callable[[], st.SearchStrategy]
    from_bytes: Callable[[bytes], Any]
    seeds: Callable[[], list[bytes]]  # atheris inputs to start from


# -- trees -------------------------------------------------------------------------------------------

TREE_EXAMPLES = (
    "(S (NP (DT the) (NN bird)) (VP (VBZ sings)) (. .))\n",
    "( (S (NP-SBJ-1 (-NONE- *T*-1)) (VP (VBD went) (PP (IN to) (NP (NNP -LRB-)))) (. .)) )\n",
    "(ROOT\n  (S\n    (NP (PRP It))\n    (VP (VBZ is))))\n\n(ROOT (FRAG (NN x)))\n",
    "(NN alone)\n(S (NP=2 (NN a)) (ADVP|PRT (RB b)))\n",
)


def use_tree(tree: Tree) -> None:
    """Run the tree methods on a tree a reader returned; check the round trips."""
    words = tree.leaves()
    assert words, f"a tree without words: {tree!r}"
    tree.labelled_spans(include_preterminals=True)
    tree.depth()
    tree.pretty(width=40)
    hash(tree)
    check_writable(tree)  # what a reader builds can be written: labels and words without spaces or brackets
    assert parse_tree(tree.to_bracket()) == tree, f"{tree.to_bracket()!r} does not read back"
    assert actions_to_tree(tree_to_actions(tree)) == tree
    assert actions_to_tree(tree_to_actions(tree, "rnng")) == tree
    if not any(node.label.startswith("@") for node in tree.subtrees()):
        assert unbinarize(binarize(tree, "left")) == tree
    for transform in (left_branching, right_branching, reversed_tree):
        assert transform(tree).leaves() == words


def check_ptb(value: tuple[int, bytes], folder: Path) -> None:
    """``TreeReader`` on a file: options bit 0 POS tags required, 1 skip_bad, 2-3 cleaning,
    4 line_starts_tree off, 5 gzip-compressed, 6 named ``.gz`` but written as it is."""
    options, data = value
    path = folder / ("input.mrg.gz" if options & 96 else "input.mrg")
    path.write_bytes(gzip.compress(data, mtime=0) if options & 32 else data)
    cleaning = (None, PTB_CLEANING, CHOE_CHARNIAK_CLEANING, None)[(options >> 2) & 3]
    reader = TreeReader(
        path, pos_tags=bool(options & 1), skip_bad=bool(options & 2), cleaning=cleaning,
        line_starts_tree=not options & 16,
    )  # fmt: skip
    trees = outcome(lambda: list(reader), lambda error: located_in_file(error, path, data))
    if failed(trees):
        return
    assert reader.report.trees == len(trees)
    if not options & 2:
        assert not reader.report.skipped
    for tree in trees:
        use_tree(tree)
    written = folder / "written.mrg"
    write_trees(written, trees)
    assert list(TreeReader(written, pos_tags=False)) == trees


def check_tree_string(value: tuple[int, bytes], folder: Path) -> None:
    """``parse_tree`` on a string (options bit 0: POS tags required)."""
    options, data = value
    text = text_of(data)

    def located(error: SyntaxlmError) -> None:
        assert isinstance(error, InputFormatError) and error.path == "<string>", f"not located: {error!r}"
        assert error.line is not None or "trees" in error.problem, f"no line: {error}"

    tree = outcome(lambda: parse_tree(text, pos_tags=bool(options & 1)), located)
    if not failed(tree):
        use_tree(tree)


def tree_files() -> st.SearchStrategy[bytes]:
    trees = st.lists(st.one_of(pos_tagged_trees(10), posless_trees(10)), min_size=1, max_size=4)
    layout = st.sampled_from(["line", "pretty", "wrapped"])

    def render(trees: list[Tree], how: str) -> bytes:
        if how == "pretty":
            return "\n\n".join(tree.pretty(width=30) for tree in trees).encode() + b"\n"
        if how == "wrapped":
            return "".join(f"( {tree.to_bracket()} )\n" for tree in trees).encode()
        return "".join(tree.to_bracket() + "\n" for tree in trees).encode()

    examples = st.sampled_from([example.encode() for example in TREE_EXAMPLES])
    return st.one_of(st.builds(render, trees, layout), examples)


# -- CoNLL-U -------------------------------------------------------------------------------------------

CONLLU_EXAMPLE = (
    "# text = red figures on the screen\n"
    "1\tred\tred\tADJ\tJJ\t_\t2\tamod\t_\t_\n"
    "2\tfigures\tfigure\tNOUN\tNNS\t_\t0\troot\t_\t_\n"
    "3\ton\ton\tADP\tIN\t_\t5\tcase\t_\t_\n"
    "4\tthe\tthe\tDET\tDT\t_\t5\tdet\t_\t_\n"
    "5\tscreen\tscreen\tNOUN\tNN\t_\t2\tnmod\t_\tSpaceAfter=No\n"
    "\n"
    "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\t_\n"
    "\n"
)


def is_projective(heads: Sequence[int]) -> bool:
    """The definition, word by word (for small sentences)."""
    for dependent, head in enumerate(heads, 1):
        for word in range(min(dependent, head) + 1, max(dependent, head)) if head else ():
            while word not in (0, head):
                word = heads[word - 1]
            if word != head:
                return False
    return True


def check_conllu(value: tuple[int, bytes], folder: Path) -> None:
    """``ConlluReader`` on a file (options bit 0 skip_bad, bit 1 gzip-compressed), then the
    conversions of every sentence read."""
    options, data = value
    path = folder / ("input.conllu.gz" if options & 2 else "input.conllu")
    path.write_bytes(gzip.compress(data, mtime=0) if options & 2 else data)
    reader = ConlluReader(path, skip_bad=bool(options & 1))
    sentences = outcome(lambda: list(reader), lambda error: located_in_file(error, path, data))
    if failed(sentences):
        return
    assert reader.report.trees == len(sentences)
    for dep in sentences:
        assert parse_conllu(dep.to_conllu()) == [dep]
        tree = dependency_to_binary_tree(dep)
        assert tree.leaves() == list(dep.words)
        assert len(future_dependents(dep)) == len(dep) + 1
        if len(dep) <= 30:
            assert is_projective(projectivize(dep.heads))


@st.composite
def conllu_sentence(draw) -> str:
    """A random dependency tree (projective or not) as CoNLL-U lines."""
    n = draw(st.integers(1, 8))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [0] * (n + 1)
    for k, word in enumerate(order[1:], 1):
        heads[word] = order[draw(st.integers(0, k - 1))]
    word = st.text(st.characters(codec="utf-8", exclude_characters="\t\n\r"), min_size=1, max_size=5)
    lines = []
    for i in range(1, n + 1):
        form = draw(word).strip() or "x"
        lines.append(f"{i}\t{form}\t_\tX\t_\t_\t{heads[i]}\tdep\t_\t_")
    return "\n".join(lines) + "\n\n"


def conllu_files() -> st.SearchStrategy[bytes]:
    generated = st.lists(conllu_sentence(), min_size=1, max_size=3).map(lambda s: "".join(s).encode())
    return st.one_of(generated, st.just(CONLLU_EXAMPLE.encode()))


# -- actions, TG sequences --------------------------------------------------------------------------------


def check_actions(value: tuple[str, int], folder: Path) -> None:
    """``actions_to_tree`` on a space-separated string, in either style."""
    text, style_index = value
    style = ("choe-charniak", "rnng")[style_index % 2]
    tokens = text.split()

    def located(error: SyntaxlmError) -> None:
        assert isinstance(error, ActionSequenceError), f"{type(error).__name__}: {error}"
        if tokens:
            assert error.action is not None and 0 <= error.action <= len(tokens), f"no action index: {error}"
        assert error.sentence == 7 and "sentence 7" in str(error)

    tree = outcome(lambda: actions_to_tree(text, style, sentence=7), located)
    if failed(tree):
        return
    assert tree_to_actions(tree, style).tokens == tuple(tokens)
    assert read_actions(tokens, style).to_tree() == tree


def action_strings() -> st.SearchStrategy[tuple[str, int]]:
    pieces = st.sampled_from(
        ["(S", "(NP", "NP)", "S)", "a", "b", "NT(S)", "NT(NP)", "REDUCE", "(", ")", "()", "(S(", "S))"]
    )
    valid = st.tuples(posless_trees(10), st.integers(0, 1)).map(
        lambda v: (str(tree_to_actions(v[0], ("choe-charniak", "rnng")[v[1]])), v[1])
    )

    @st.composite
    def shuffled(draw) -> tuple[str, int]:
        text, style = draw(valid)
        tokens = text.split()
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(tokens)))
            if draw(st.booleans()) and at < len(tokens):
                del tokens[at]
            else:
                tokens.insert(at, draw(pieces))
        return " ".join(tokens), style

    return st.one_of(shuffled(), st.tuples(st.lists(pieces, max_size=12).map(" ".join), st.integers(0, 1)))


def actions_from_bytes(data: bytes) -> tuple[str, int]:
    return text_of(data[1:]), data[0] if data else 0


@dataclass(frozen=True)
class TGInput:
    ids: list
    kinds: list
    offsets: list
    variant: str
    word_index: list | None
    segment_length: int


def check_tg(value: TGInput, folder: Path) -> None:
    """``tg_sequences`` on arbitrary arrays: a result, an ``ActionSequenceError`` naming the tree
    (and action), or a ``ValueError`` from its argument checks. It must accept exactly the trees
    ``actions_to_tree`` accepts."""

    def located(error: SyntaxlmError) -> None:
        assert isinstance(error, ActionSequenceError), f"{type(error).__name__}: {error}"
        assert error.sentence is not None, f"no tree index: {error}"
        assert error.action is not None or "no actions" in error.problem, f"no action index: {error}"

    try:
        result = outcome(
            lambda: tg_sequences(
                value.ids, value.kinds, value.offsets, value.variant, word_index=value.word_index
            ),
            located,
        )
    except (ValueError, TypeError) as error:
        if isinstance(error, SyntaxlmError):
            raise
        programmer_error(error)
        return
    if failed(result) or value.word_index is None:
        _compare_with_actions_to_tree(value, result)
    if not failed(result):
        assert len(result) == len(value.offsets) - 1
        for memory in ("smart", "previous"):
            segments = segment_sequences(result, value.segment_length, memory=memory)
            assert len(segments) >= len(result)


def _compare_with_actions_to_tree(value: TGInput, result: Any) -> None:
    """When the arrays are well formed, ``tg_sequences`` fails iff some tree's kinds, spelled as
    actions, are refused by ``actions_to_tree``."""
    offsets, spelled = value.offsets, {ActionKind.OPEN: "(X", ActionKind.WORD: "w", ActionKind.CLOSE: "X)"}
    if not all(type(x) is int for x in (*value.ids, *value.kinds, *offsets)) or not _rising(
        offsets, len(value.ids)
    ):
        return
    for start, end in itertools.pairwise(offsets):
        kinds, ids = value.kinds[start:end], value.ids[start:end]
        if any(kind not in spelled for kind in kinds) or any(not 0 < x < 2**31 for x in ids):
            return  # refused for its values: not a question of tree shape
        actions = [spelled[kind] for kind in kinds]
        tree = outcome(lambda actions=actions: actions_to_tree(actions), lambda error: None)
        if failed(tree):
            assert failed(result), f"tg_sequences accepts actions that actions_to_tree refuses: {tree}"
            return
    assert not failed(result), f"tg_sequences refuses trees that actions_to_tree accepts: {result}"


def _rising(offsets: list, n: int) -> bool:
    ordered = all(a <= b for a, b in itertools.pairwise(offsets))
    return bool(offsets) and offsets[0] == 0 and offsets[-1] == n and ordered


@st.composite
def tg_inputs(draw) -> TGInput:
    integer = st.one_of(
        st.integers(-2, 3), st.integers(-(2**40), 2**40), st.sampled_from([2**31, -(2**31) - 1, 2**63])
    )
    trees = draw(st.lists(posless_trees(6), min_size=0, max_size=3))
    kinds = [int(k) for tree in trees for k in tree_to_actions(tree).kinds]
    offsets = [0]
    for tree in trees:
        offsets.append(offsets[-1] + len(tree_to_actions(tree)))
    ids = [draw(st.integers(4, 50)) for _ in kinds]
    for _ in range(draw(st.integers(0, 2))):
        field = draw(st.sampled_from([ids, kinds, offsets]))
        at = draw(st.integers(0, len(field)))
        if draw(st.booleans()) and at < len(field):
            field[at] = draw(st.one_of(integer, st.floats(allow_nan=True), st.booleans()))
        else:
            field.insert(at, draw(integer))
    word_index = None
    if draw(st.booleans()):
        word_index = [draw(st.integers(-1, 5)) for _ in ids]
    variant = draw(st.sampled_from(VARIANTS))
    return TGInput(ids, kinds, offsets, variant, word_index, draw(st.integers(1, 8)))


def tg_from_bytes(data: bytes) -> TGInput:
    """Byte 0: variant and segment length; then one action per byte: kind = bits 0-1 (3 is not a
    kind), bit 2 starts a new tree, id = the bits above (0 is padding, not an action id)."""
    head = data[0] if data else 0
    ids, kinds, offsets = [], [], [0]
    for i, byte in enumerate(data[1:]):
        if byte & 4 and i:
            offsets.append(i)
        kinds.append(byte & 3)
        ids.append(byte >> 3)
    if ids:
        offsets.append(len(ids))
    return TGInput(ids, kinds, offsets, VARIANTS[head % 3], None, 1 + (head >> 2) % 8)


# -- distances and decisions ------------------------------------------------------------------------


def check_distances(value: list, folder: Path) -> None:
    """PRPN's parser on arbitrary numbers; its inverse on the trees it builds."""
    tree = outcome(lambda: tree_from_distances(value, sentence=3), sentence_named(3))
    if failed(tree):
        return
    assert len(tree.leaves()) == len(value)
    nested_tree_from_distances(value, sentence=3)
    describe_distances(value, [f"w{i}" for i in range(len(value))], sentence=3)
    inverse = distances_from_tree(tree, sentence=3)
    assert tree_from_distances(inverse, tree.leaves()) == tree
    assert len(lca_distances(tree)) == len(value)


def distance_values() -> st.SearchStrategy[list]:
    number = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(10**400), 10**400),
        st.integers(-3, 3),
    )
    odd = st.one_of(st.text(max_size=3), st.none(), st.lists(st.integers(), max_size=2), st.booleans())
    return st.lists(st.one_of(number, number, number, odd), max_size=30)


def distances_from_bytes(data: bytes) -> list:
    """Two bytes per distance, big-endian minus 32768; 0xFFFF is NaN, 0xFFFE infinity, 0xFFFD a
    number too large for a float, 0xFFFC the string "x"."""
    special = {0xFFFF: math.nan, 0xFFFE: math.inf, 0xFFFD: 10**400, 0xFFFC: "x"}
    values = []
    for i in range(0, len(data) - 1, 2):
        raw = int.from_bytes(data[i : i + 2], "big")
        values.append(special.get(raw, raw - 32768))
    return values


@dataclass(frozen=True)
class SOMInput:
    decisions: list
    n_slots: int


def check_som(value: SOMInput, folder: Path) -> None:
    """The Ordered Memory's decisions → tree, grid and labels; labels → tree round trip."""
    try:
        decisions = outcome(
            lambda: check_decisions(value.decisions, value.n_slots, sentence=5), sentence_named(5)
        )
    except (ValueError, TypeError) as error:
        if isinstance(error, SyntaxlmError):
            raise
        programmer_error(error)  # n_slots must be a positive integer
        return
    if failed(decisions):
        return
    tree = tree_from_decisions(decisions, value.n_slots, sentence=5)
    assert len(tree.leaves()) == len(decisions)
    if value.n_slots * len(decisions) <= 100_000:
        memory_grid(decisions, value.n_slots, sentence=5)
    gold = structure_labels(tree, value.n_slots, sentence=5)
    assert tree_from_decisions(gold, value.n_slots, tree.leaves()) == tree
    structure_labels(tree, value.n_slots, decisions, sentence=5)


def som_inputs() -> st.SearchStrategy[SOMInput]:
    slots = st.one_of(st.integers(1, 12), st.sampled_from([10**6, 2**62, 2**63, 2**70]))
    decision = st.one_of(st.integers(-2, 14), st.integers(-(2**70), 2**70))
    return st.builds(SOMInput, st.lists(decision, max_size=40), slots)


def som_from_bytes(data: bytes) -> SOMInput:
    """Byte 0: slots (1-16, or 10**9 when its top bit is set); then one decision per byte."""
    head = data[0] if data else 0
    n_slots = 10**9 if head & 128 else 1 + head % 16
    if n_slots == 10**9:
        return SOMInput([n_slots - 1 - (byte % 20) for byte in data[1:]], n_slots)
    return SOMInput([byte % (n_slots + 2) - 1 for byte in data[1:]], n_slots)


# -- SyntaxGym ---------------------------------------------------------------------------------------------


def small_suite() -> dict:
    regions = {"match": ["The keys", "are", "here"], "mis-match": ["The keys", "is", "(here)"]}
    return {
        "meta": {"name": "fuzz_agreement", "metric": "sum"},
        "region_meta": {"1": "subject", "2": "verb", "3": "rest"},
        "predictions": [
            {"type": "formula", "formula": "[(2;%mis-match%) > (2;%match%)]"},
            {"type": "formula", "formula": "((*;%match%) - 1.5e0 < (3;%mis-match%)) | (1;%match%) = 0"},
        ],
        "items": [
            {
                "item_number": number,
                "conditions": [
                    {
                        "condition_name": name,
                        "regions": [{"region_number": k, "content": c} for k, c in enumerate(contents, 1)],
                    }
                    for name, contents in regions.items()
                ],
            }
            for number in (1, 2)
        ],
    }


def suite_located(error: SyntaxlmError, path: Path, data: bytes) -> None:
    """A suite error names the file and the place: line and column for broken JSON or text, else
    the JSON path (top level, meta, region_meta, items[i] / item N, prediction k)."""
    located_in_file(error, path, data, line=False)
    places = ("top level", "meta", "region_meta", "items", "item ", "prediction")
    assert error.line is not None or any(f", {place}" in error.problem for place in places), (
        f"no place: {error}"
    )


def zero_values(suite) -> dict:
    return {
        item.item_number: {condition: [0.0] * len(suite.region_names) for condition in item.regions}
        for item in suite.items
    }


def check_suite(value: tuple[int, bytes], folder: Path) -> None:
    """``load_suite`` on a file, then scoring every item."""
    _, data = value
    path = folder / "suite.json"
    path.write_bytes(data)
    suite = outcome(lambda: load_suite(path), lambda error: suite_located(error, path, data))
    if failed(suite):
        return
    assert len(list(suite.sentences())) == sum(len(item.regions) for item in suite.items)
    values = zero_values(suite)
    rows = [{"item_number": number, "values": conditions} for number, conditions in values.items()]
    assert region_values_from_json(rows, suite) == values
    evaluate_suite(suite, values).to_json()


def suite_files() -> st.SearchStrategy[bytes]:
    name = st.text(st.sampled_from("abc_-9("), min_size=1, max_size=4)

    @st.composite
    def suites(draw) -> bytes:
        suite = small_suite()
        if draw(st.booleans()):
            conditions = draw(st.lists(name, min_size=1, max_size=3, unique=True))
            formula = draw(st.sampled_from(["(1;%{0}%) > 0", "[(*;%{0}%) - (2;%{0}%)] = (1;%{0}%) & 1 < 2"]))
            suite["predictions"] = [{"type": "formula", "formula": formula.format(conditions[0])}]
            for item in suite["items"]:
                item["conditions"] = [
                    {"condition_name": c, "regions": item["conditions"][0]["regions"]} for c in conditions
                ]
        return json.dumps(suite, indent=draw(st.sampled_from([None, 1]))).encode()

    return suites()


def check_formula(value: str, folder: Path) -> None:
    """``parse_formula`` on any text; evaluating what it parses."""

    def located(error: SyntaxlmError) -> None:
        assert isinstance(error, FormulaError), f"{type(error).__name__}: {error}"
        assert 0 <= error.position <= len(value), f"position {error.position} in {len(value)} characters"

    expression = outcome(lambda: parse_formula(value), located)
    if failed(expression):
        return
    references = region_references(expression)
    if max((reference.region or 1 for reference in references), default=1) > 1000:
        return  # a suite would refuse the region (it checks them against region_meta)
    values: dict[str, list[float]] = {}
    for reference in references:
        size = max(len(values.get(reference.condition, [])), reference.region or 1)
        values[reference.condition] = [1.0] * size
    assert isinstance(evaluate_formula(expression, values), bool)


def formulas() -> st.SearchStrategy[str]:
    atoms = st.sampled_from(
        ["(1;%a%)", "(*;%b-c%)", "[(2;%a%)]", "0", "-1.5e3", "(", ")", "[", "]", " ", "(1;%a"]
    )
    operators = st.sampled_from(["+", "-", "<", ">", "=", "&", "|", " ", ""])
    joined = st.lists(st.tuples(atoms, operators), max_size=10).map(
        lambda parts: "".join(a + o for a, o in parts)
    )
    deep = st.integers(1, 3000).map(lambda n: "(" * n + "(1;%a%) > 0" + ")" * n)
    long = st.integers(1, 3000).map(lambda n: " + ".join(["(1;%a%)"] * n) + " > 0")
    return st.one_of(joined, joined, st.text(max_size=30), deep, long)


def check_region_values(value: tuple[int, bytes], folder: Path) -> None:
    """``score_region_values`` on a region-values file for a fixed, valid suite."""
    _, data = value
    suite_path = folder / "fixed_suite.json"
    if not suite_path.exists():
        suite_path.write_text(json.dumps(small_suite()))
    path = folder / "values.json"
    path.write_bytes(data)

    def located(error: SyntaxlmError) -> None:
        located_in_file(error, path, data, line=False)
        places = ("top level", "item")
        assert error.line is not None or any(place in error.problem for place in places), f"no place: {error}"

    outcome(lambda: score_region_values(suite_path, path), located)


def region_values_files() -> st.SearchStrategy[bytes]:
    number = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-5, 5))
    row = st.lists(number, min_size=3, max_size=3)
    values = st.fixed_dictionaries({"match": row, "mis-match": row})
    rows = st.tuples(values, values).map(
        lambda v: [{"item_number": 1, "values": v[0]}, {"item_number": 2, "values": v[1]}]
    )
    return rows.map(lambda r: json.dumps(r).encode())


# -- evaluation files ----------------------------------------------------------------------------------------


def check_parseval(value: tuple[int, bytes, bytes], folder: Path) -> None:
    """``evaluate_parses`` on a gold and a predicted file (options bit 0: unlabelled, bit 1: EVALB's
    defaults instead of COLLINS.prm)."""
    options, gold_data, pred_data = value
    gold, pred = folder / "gold.tree", folder / "pred.tree"
    gold.write_bytes(gold_data)
    pred.write_bytes(pred_data)
    params = EvalbParams() if options & 2 else COLLINS_PARAMS
    if options & 1:
        params = params.as_unlabeled()

    def located(error: SyntaxlmError) -> None:
        assert isinstance(error, InputFormatError), f"{type(error).__name__}: {error}"
        data = gold_data if error.path == str(gold) else pred_data
        path = gold if error.path == str(gold) else pred
        located_in_file(error, path, data, line=False)
        assert error.line is not None or error.sentence is not None or "sentences for" in error.problem

    result = outcome(lambda: evaluate_parses(gold, pred, params), located)
    if not failed(result):
        result.to_text()
        json.dumps(result.to_json())


def parseval_inputs() -> st.SearchStrategy[tuple[int, bytes, bytes]]:
    @st.composite
    def pairs(draw) -> tuple[int, bytes, bytes]:
        trees = draw(st.lists(pos_tagged_trees(8), min_size=1, max_size=3))
        gold = "".join(tree.to_bracket() + "\n" for tree in trees).encode()
        pred = gold if draw(st.booleans()) else draw(tree_files())
        return (
            draw(st.integers(0, 3)),
            draw(broken(st.just(gold), TREE_PIECES)),
            draw(broken(st.just(pred), TREE_PIECES)),
        )

    return pairs()


def parseval_from_bytes(data: bytes) -> tuple[int, bytes, bytes]:
    """Options byte, then the gold and the predicted file separated by the first NUL byte."""
    options, rest = options_and_bytes(data)
    gold, _, pred = rest.partition(b"\x00")
    return options, gold, pred


PRM_EXAMPLE = (
    b"DEBUG 0\nMAX_ERROR 10\nCUTOFF_LEN 40\nLABELED 1\nDELETE_LABEL TOP\nDELETE_LABEL -NONE-\n"
    b"DELETE_LABEL ,\nDELETE_LABEL_FOR_LENGTH -NONE-\nEQ_LABEL ADVP PRT\nEQ_WORD a b\nQUOTE_LABEL ``\n# comment\n"
)
SCORED_PAIR = (
    Tree.from_bracket("(S (NP (DT the) (NN bird)) (VP (VBZ sings)) (. .))"),
    Tree.from_bracket("(S (NP (DT the)) (VP (NN bird) (VBZ sings)) (. .))"),
)


def check_prm(value: tuple[int, bytes], folder: Path) -> None:
    """``read_prm`` on a parameter file, then scoring with what it read."""
    _, data = value
    path = folder / "params.prm"
    path.write_bytes(data)
    params = outcome(lambda: read_prm(path), lambda error: located_in_file(error, path, data))
    if not failed(params):
        evaluate_parses([SCORED_PAIR[0]], [SCORED_PAIR[1]], params).to_text()


GOLD_TREES = (
    Tree.from_bracket("(S (NP (DT The) (NN bird)) (VP (VBZ sings) (NP (CD 3) (NNS songs))) (. .))"),
    Tree.from_bracket("(S (NP (PRP It)) (VP (VBZ rains)))"),
    Tree.from_bracket("(S (. .))"),
)


def check_uf1_distances(value: tuple[int, bytes], folder: Path) -> None:
    """``read_distances`` on a file, then UF1 against three fixed gold trees (4, 2 and 0 words)."""
    _, data = value
    path = folder / "distances.jsonl"
    path.write_bytes(data)
    vectors = outcome(lambda: read_distances(path), lambda error: located_in_file(error, path, data))
    if failed(vectors):
        return
    lines = io.StringIO(data.decode("utf-8-sig"), newline=None).readlines()
    assert len(vectors) == len(lines), "read_distances does not give one vector per line"
    uf1_located = lambda error: _uf1_located(error, len(vectors))
    result = outcome(lambda: evaluate_uf1(GOLD_TREES, distances=vectors), uf1_located)
    if not failed(result):
        result.render(per_sentence=True)


def _uf1_located(error: SyntaxlmError, n: int) -> None:
    assert "sentence" in str(error) or f"but {n}" in str(error), f"no sentence named: {error}"


def check_uf1_trees(value: tuple[int, bytes], folder: Path) -> None:
    """``read_predicted_trees`` on a file, then UF1 against the fixed gold trees."""
    _, data = value
    path = folder / "predicted.txt"
    path.write_bytes(data)
    trees = outcome(lambda: read_predicted_trees(path), lambda error: located_in_file(error, path, data))
    if failed(trees):
        return
    result = outcome(
        lambda: evaluate_uf1(GOLD_TREES, predicted=trees), lambda error: _uf1_located(error, len(trees))
    )
    if not failed(result):
        result.to_json()


UF1_DISTANCES_EXAMPLE = b"[0.1, 0.9, 0.2, 0.5]\n[1, 2]\n[]\n"
UF1_TREES_EXAMPLE = b'(X (X the bird) (X sings (X N songs)))\n[["it", "rains"]]\n(X x)\n'


# -- BLiMP and vocabularies ------------------------------------------------------------------------------


BLIMP_EXAMPLE = b"".join(
    json.dumps(
        {
            "sentence_good": f"Who did {i} see?", "sentence_bad": f"Who {i} saw?", "UID": "wh_questions",
            "pairID": str(i), "linguistics_term": "filler_gap_dependency", "field": "syntax",
        }
    ).encode() + b"\n"
    for i in range(3)
)  # fmt: skip


def check_blimp(value: tuple[int, bytes], folder: Path) -> None:
    """``read_paradigm`` on a file: every non-blank line is a pair, or an error names its line."""
    _, data = value
    path = folder / "wh_questions.jsonl"
    path.write_bytes(data)

    def located(error: SyntaxlmError) -> None:
        located_in_file(error, path, data, line=False)
        assert error.line is not None or "no minimal pairs" in error.problem, f"no line: {error}"

    pairs = outcome(lambda: read_paradigm(path), located)
    if not failed(pairs):
        lines = io.StringIO(data.decode("utf-8-sig"), newline=None).readlines()
        assert len(pairs) == sum(1 for line in lines if line.strip()), "a line was dropped"


# -- text files of the eval commands ----------------------------------------------------------------------

SENTENCES_EXAMPLE = b"the bird sings\nIt  flew away .\n"
TREEBANK_EXAMPLE = b"\n(S (NP (DT the) (NN bird)) (VP (VBZ sings)))\n"


def check_sentences(value: tuple[int, bytes], folder: Path) -> None:
    """``eval ppl``'s reading of its DATA (``score`` and ``parse`` read sentences the same way):
    whether the file is a treebank, then its trees (options bit 0: POS tags) or its sentences."""
    options, data = value
    path = folder / "sentences.txt"
    path.write_bytes(data)

    def located(error: SyntaxlmError) -> None:
        located_in_file(error, path, data)

    treebank = outcome(lambda: is_treebank(path), located)
    if failed(treebank):
        return
    if treebank:
        outcome(lambda: read_given_trees(path, pos_tags=bool(options & 1)), located)
        return
    sentences = outcome(lambda: read_sentences(path), located)
    if not failed(sentences):
        lines = io.StringIO(data.decode("utf-8-sig"), newline=None).readlines()
        assert sentences == [line.split() for line in lines], "a sentence was dropped or changed"


@functools.cache
def _cli_command() -> click.Command:
    """The ``syntaxlm`` command, built once (typer builds it anew on every invocation: 0.3 s)."""
    return typer.main.get_command(app)


def check_generated_texts(value: tuple[int, bytes], folder: Path) -> None:
    """``syntaxlm eval gen`` on a generated-texts file (options bit 0: the file is its references too)."""
    options, data = value
    path = folder / "generated.txt"
    path.write_bytes(data)
    args = ["eval", "gen", "--generated", str(path), "--json"]
    args += ["--references", str(path)] if options & 1 else []
    error = CliRunner().invoke(_cli_command(), args).exception
    if error is None or isinstance(error, GenerationInputError):
        return  # a result, or texts the metrics cannot score (none, all empty), which is no place in the file
    if not isinstance(error, SyntaxlmError):
        raise error
    located_in_file(error, path, data)


def check_blimp_scores(value: tuple[int, bytes], folder: Path) -> None:
    """``read_blimp_logprobs`` (``eval blimp --logprobs``): every line is one pair's scores."""
    _, data = value
    path = folder / "scores.jsonl"
    path.write_bytes(data)
    scores = outcome(lambda: read_blimp_logprobs(path), lambda error: located_in_file(error, path, data))
    if not failed(scores):
        lines = io.StringIO(data.decode("utf-8-sig"), newline=None).readlines()
        assert len(scores) == len(lines), "a line was dropped"
        assert all(type(good) is float and type(bad) is float for good, bad in scores.values())


BLIMP_SCORES_EXAMPLE = (
    b'{"UID": "wh_questions", "pairID": 0, "good": -12.5, "bad": -14}\n'
    b'{"UID": "wh_questions", "pairID": "1", "good": -3e1, "bad": -Infinity}\n'
)


WORD_VOCAB = WordVocab.build([["the", "bird", "sings"], ["the", "bird"]], min_freq=1, symbols=["(S", "S)"])


def _word_vocab_json() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return WORD_VOCAB.save(folder).read_bytes()


WORD_VOCAB_JSON = _word_vocab_json()


def vocab_located(error: SyntaxlmError, path: Path, data: bytes) -> None:
    """A vocabulary error names the file (a ``vocab.json``, or the model file it names)."""
    assert isinstance(error, InputFormatError), f"{type(error).__name__}: {error}"
    if error.path == str(path):
        located_in_file(error, path, data, line=False)
    else:
        assert error.path == str(path.parent / MODEL_FILE), f"names {error.path!r}: {error}"


def check_vocab(value: tuple[int, bytes], folder: Path) -> None:
    """``load_vocabulary`` on a folder whose ``vocab.json`` holds the bytes."""
    _, data = value
    vocab_folder = folder / "vocab"
    vocab_folder.mkdir(exist_ok=True)
    path = vocab_folder / VOCAB_FILE
    path.write_bytes(data)
    try:
        vocab = outcome(lambda: load_vocabulary(vocab_folder), lambda error: vocab_located(error, path, data))
    except FileNotFoundError:
        return  # a subword vocab.json naming a model file that is not there
    if not failed(vocab):
        tokens = list(vocab.symbols) + ["bird", "unseen"]
        assert len(vocab.decode(vocab.encode(tokens))) >= len(tokens)


def check_subword_model(value: tuple[int, bytes], folder: Path) -> None:
    """``SubwordVocab.load`` on a model file holding the bytes (its sha256 recorded, so that the
    model itself is read)."""
    _, data = value
    vocab_folder = folder / "subword"
    vocab_folder.mkdir(exist_ok=True)
    (vocab_folder / MODEL_FILE).write_bytes(data)
    record = {
        "format": SubwordVocab.FORMAT, "version": 1, "model_file": MODEL_FILE,
        "model_sha256": hashlib.sha256(data).hexdigest(), "size": 10, "symbols": [], "settings": {},
    }  # fmt: skip
    path = vocab_folder / VOCAB_FILE
    text = json.dumps(record).encode()
    path.write_bytes(text)
    outcome(lambda: load_vocabulary(vocab_folder), lambda error: vocab_located(error, path, text))


# -- training: recipes, checkpoints, saved models -----------------------------------------------------

RECIPE_EXAMPLE = (Path(__file__).resolve().parents[2] / "configs" / "tg-tiny.yaml").read_bytes()
YAML_PIECES = COMMON_PIECES + (
    b":", b": ", b"- ", b"[", b"]", b"{", b"}", b"#", b"&a", b"*a", b"!!python/object", b"---", b"...",
    b"null", b"~", b"1e-3", b"-1", b"0", b"yes", b".inf", b".nan", b"model:", b"train:", b"data:", b"lr:",
    b"  ", b"\t", b"'", b'"', b"|", b">",
)  # fmt: skip


def named_in_message(error: SyntaxlmError, path: Path) -> None:
    """An error about a file given by the user names the file in its message."""
    assert str(path) in str(error), f"the file is not named: {error}"


def check_recipe(value: tuple[int, bytes], folder: Path) -> None:
    """``load_config`` on a recipe file (YAML); a recipe that loads is written back and reloaded."""
    _, data = value
    path = folder / "recipe.yaml"
    path.write_bytes(data)
    config = outcome(lambda: load_config(path), lambda error: named_in_message(error, path))
    if not failed(config):
        assert run_config(config.to_dict()).to_dict() == config.to_dict()


def _tiny_model():
    vocab = WordVocab.build([["the", "bird", "sings"]], min_freq=1, symbols=["(S", "S)"])
    config = {"model": "tg", "d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 8, "segment_length": 8}
    return build_model(config, {"vocab": vocab})


def _checkpoint_bytes() -> bytes:
    model = _tiny_model()
    optimizer = torch.optim.AdamW(model.parameters())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoint.safetensors"
        save_checkpoint(
            path, model=model.state_dict(), optimizer=optimizer.state_dict(), state=TrainingState(step=3)
        )
        return path.read_bytes()


CHECKPOINT_EXAMPLE = _checkpoint_bytes()


def check_checkpoint(value: tuple[int, bytes], folder: Path) -> None:
    """``load_checkpoint`` on a checkpoint file of the bytes."""
    _, data = value
    path = folder / "checkpoint.safetensors"
    path.write_bytes(data)
    outcome(lambda: load_checkpoint(path), lambda error: named_in_message(error, path))


def _model_folder_files() -> tuple[bytes, bytes]:
    with tempfile.TemporaryDirectory() as folder:
        saved = _tiny_model().save_pretrained(Path(folder) / "model")
        return (saved / "config.json").read_bytes(), (saved / "model.safetensors").read_bytes()


MODEL_CONFIG_EXAMPLE, MODEL_WEIGHTS_EXAMPLE = _model_folder_files()


def check_model_folder(value: tuple[int, bytes], folder: Path) -> None:
    """``load_model`` on a saved model whose ``config.json`` (even options byte) or
    ``model.safetensors`` (odd) holds the bytes."""
    options, data = value
    model_folder = folder / "model"
    if not model_folder.exists():
        _tiny_model().save_pretrained(model_folder)
    broken_file = model_folder / ("config.json" if options % 2 == 0 else "model.safetensors")
    (model_folder / "config.json").write_bytes(MODEL_CONFIG_EXAMPLE)
    (model_folder / "model.safetensors").write_bytes(MODEL_WEIGHTS_EXAMPLE)
    broken_file.write_bytes(data)
    outcome(lambda: load_model(model_folder), lambda error: named_in_message(error, model_folder))


# -- result files read by the explorer page (syntaxlm view) ----------------------------------------------

_PROVENANCE = {"syntaxlm_version": "0.1.0", "git_commit": None, "created": "2025-01-01T00:00:00+00:00"}
_BEAM = {"action_beam": 5, "word_beam": 2, "fast_track": 1}
_VIEW_RECORDS = (
    (
        "perplexity",
        {
            "perplexity_per_word": 112.5, "perplexity_per_token": 95.25, "n_words": 20, "n_sentences": 2,
            "perplexity_per_word_without_end": 130.0, "sentence_perplexities_per_word": [100.0, 125.0],
            "marginalisation": {
                "method": "beam", "perplexity": "approximate (beam search)", "context": "sentence",
                "segment_length": None, "memory_length": None, "renormalised": False, **_BEAM,
            },
        },
        {
            "data": {"path": "data/test.trees", "sha256": "ab" * 32},
            "model": {"path": "runs/tg/best/model.safetensors", "sha256": None},
        },
        {"test_sentences": 2, "context": "sentence"},
    ),
    (
        "syntaxgym",
        {
            "suite": "synthetic_number_src", "predictions": ["(2;%mismatch%) > (2;%match%)"], "n_items": 2,
            "items": [
                {"item_number": 1, "results": [True], "all": True, "tie": False, "predictions": [],
                 "region_surprisals_bits": {"match": [3.5, 2.0], "mismatch": [3.5, 6.25]}},
                {"item_number": 2, "results": [False], "all": False, "tie": False, "predictions": [],
                 "region_surprisals_bits": {"match": [1.5, 4.0], "mismatch": [1.5, math.inf]}},
            ],
            "accuracy_pred0": 0.5, "chance_pred0": 0.5, "method": "beam", **_BEAM,
        },
        {"suite": {"path": "data/suites/synthetic_number_src.json", "sha256": None}},
        {"method": "beam", **_BEAM},
    ),
    (
        "blimp",
        {"overall_accuracy": 0.75, "n_paradigms": 2, "n_pairs": 4, "phenomena": {"anaphor_agreement": 0.75}},
        {"data": {"path": "blimp", "sha256": None}},
        {"method": "exact", "paradigms": ["anaphor_gender_agreement", "wh_questions_object_gap"],
         "ten_percent": True, "max_pairs": 2, "limit": 4, "pairs_selected": 4},
    ),
    (
        "parseval",
        {"summary": {"all": {"f1": 87.5, "sentences": 2, "recall": 85.0}, "len40": {"f1": 87.5}}},
        {"gold": {"path": "data/test.trees", "sha256": None}},
        {"parses": "the beam's best tree", "unlabeled": False, **_BEAM},
    ),
    (
        "uf1",
        {"model": {"mean_sentence_f1": 0.4, "corpus_f1_percent": 38.0}, "n_scored": 2, "max_words": 10},
        {"gold": {"path": "data/test.trees", "sha256": None}},
        {},
    ),
)  # fmt: skip
VIEW_RESULT_EXAMPLES = tuple(
    json.dumps(
        {"kind": kind, "result": result, "inputs": inputs, "options": options, "provenance": _PROVENANCE},
        indent=1,
    ).encode()
    for kind, result, inputs, options in _VIEW_RECORDS
)
VIEW_RESULT_PIECES = JSON_PIECES + (
    b"false", b'""', b"[]", b"{}", b"-0", b"1e100", b"9007199254740993", b'"kind"', b'"result"', b'"items"',
    b'"results"', b'"suite"', b'"perplexity"', b'"syntaxgym"', b'"action_beam"', b'"segment_length"',
)  # fmt: skip


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.sampled_from([2**53 + 1, 10**400, -1e101, "all", "-Infinity"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@st.composite
def json_value_swapped(draw, records: Sequence[Any]) -> bytes:
    """A valid JSON document with one of its values (or a whole object or list) put in place of
    another of any type, or a field dropped: what a wrong-typed field reads like."""
    document = json.loads(json.dumps(draw(st.sampled_from(records))))
    places: list[tuple[Any, Any]] = []  # (container, key or index) of every value under the top level
    stack = [document]
    while stack:
        value = stack.pop()
        if not isinstance(value, dict | list):
            continue
        for key, member in value.items() if isinstance(value, dict) else enumerate(value):
            places.append((value, key))
            stack.append(member)
    container, key = draw(st.sampled_from(places))
    if isinstance(container, dict) and draw(st.booleans()):
        del container[key]
    else:
        container[key] = draw(_JSON_VALUES)
    return json.dumps(document).encode()


def check_view_results(value: tuple[int, bytes], folder: Path) -> None:
    """The explorer page's data (``view_data`` with ``models=False``: result files only, no model
    loaded) of a result file, given itself (options bit 0) or in a run folder, then the page of
    that document, written and read back."""
    from syntaxlm.view import render_page, view_data
    from syntaxlm.view.page import read_embedded

    options, data = value
    run = folder / "view_run"
    path = folder / "view_result.json" if options & 1 else run / "results" / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    given = path if options & 1 else run
    document = outcome(
        lambda: view_data([given], models=False), lambda error: located_in_file(error, path, data, line=False)
    )
    if failed(document):
        return
    for table in document["tables"]:
        for row in table["rows"]:
            for name, cell in row["numbers"].items():
                assert all(
                    v is None or (type(v) in (int, float) and math.isfinite(v)) for v in cell["values"]
                ), f"{table['kind']} {name}: {cell['values']} is not a number"
    page = folder / "view.html"
    page.write_text(render_page(document), encoding="utf-8")
    assert read_embedded(page) == document, "the page does not hold the document"


# -- proposal files and the proposal parser's sizes ------------------------------------------------------

PROPOSALS_EXAMPLE = (
    b"0\t(S (NP (DT The) (NN dog)) (VP (VBZ barks)))\n"
    b"1\t(ROOT (S (NP (PRP It)) (VP (VBD flew))))\n\n"
    b" 0\t(S (NP (DT The)) (VP (NN dog) (VBZ barks)))\n"
)
PARSER_PROPOSALS_EXAMPLE = b"# trees without POS tags\n0\t(S (NP the bird) sings)\n1\t(S It (VP flew))\n"
PROPOSAL_PIECES = LINE_PIECES + TREE_PIECES + (
    "\u00b9".encode(), "\u0663".encode(), "\uff11".encode(), b"9" * 5000, b"99999999999999999999", b"-1",
    b"+1", b"1_0", b"0x1", b"0\t", b"1\t", b"# trees without POS tags\n",
)  # fmt: skip


def check_proposals(value: tuple[int, bytes], folder: Path) -> None:
    """``read_proposals`` on a file (``--proposals`` of score, parse, eval ppl): options bit 0 POS
    tags, bit 1 the number of sentences given (``options >> 2``). A file read gives every tree of
    its lines (none dropped), each sentence its group."""
    from syntaxlm.inference.marginal import NO_POS_TAGS_HEADER, read_proposals

    options, data = value
    path = folder / "proposals.txt"
    path.write_bytes(data)
    n_sentences = options >> 2 if options & 2 else None
    groups = outcome(
        lambda: read_proposals(path, n_sentences=n_sentences, pos_tags=bool(options & 1)),
        lambda error: located_in_file(error, path, data),
    )
    if failed(groups):
        return
    lines = io.StringIO(data.decode("utf-8-sig"), newline=None).readlines()
    header = int(bool(lines) and lines[0].strip() == NO_POS_TAGS_HEADER)
    assert sum(map(len, groups)) == sum(1 for line in lines[header:] if line.strip()), "a tree was dropped"
    assert n_sentences is None or len(groups) == n_sentences
    for group in groups:
        for tree in group:
            use_tree(tree)


def proposal_files() -> st.SearchStrategy[bytes]:
    tree = st.one_of(pos_tagged_trees(6), posless_trees(6))
    lines = st.lists(st.tuples(st.integers(0, 3), tree), min_size=1, max_size=4)
    generated = lines.map(lambda pairs: "".join(f"{i}\t{t.to_bracket()}\n" for i, t in pairs).encode())
    return st.one_of(generated, st.sampled_from([PROPOSALS_EXAMPLE, PARSER_PROPOSALS_EXAMPLE]))


PARSER_SENTENCES = [["the"], ["the", "bird"], ["it", "flew", "away"], ["the", "bird", "sings", "now"]]
PARSER_CALLS = ("parse", "sample", "distinct", "proposals")
PARSER_SIZES = (-2, -1, 0, 1, 2, 3, 7, 40, 10**9, 10**20, 2**63 - 1, 2**63, -(2**63))


@functools.cache
def _tiny_parser():
    """An untrained span parser with one chain label (S): at most 176 trees for a 4-word sentence,
    so that any k best stay small."""
    from syntaxlm.models.span_parser import SpanParser

    trees = [Tree.from_bracket("(S (S the bird) (S sings now))"), Tree.from_bracket("(S it (S flew away))")]
    vocab = WordVocab.build([tree.leaves() for tree in trees], min_freq=1)
    config = {"model": "parser", "d_model": 8, "n_layers": 1, "hidden_size": 8, "span_hidden": 8}
    return build_model(config, SpanParser.vocabularies_for(config, trees, vocab)).eval()


def check_parser_options(value: tuple[str, int, int, int, int], folder: Path) -> None:
    """The proposal parser's library calls (``parse --kbest``, ``--samples`` as ``sample``, drawing
    until distinct trees, ``draw_proposals``) on any size, seed and batch size: trees of the words
    (at most as many as asked), a ``SizeError`` naming the size, or an argument error of syntaxlm."""
    from syntaxlm.errors import SizeError
    from syntaxlm.inference.importance import draw_proposals

    call, size, seed, batch_size, count = value
    parser, sentences = _tiny_parser(), PARSER_SENTENCES[: count + 1]

    def run() -> list:
        if call == "proposals":
            drawn = draw_proposals(parser, sentences, size, seed=seed, batch_size=batch_size)
            return [draw.trees for draw in drawn]
        if call == "parse":
            found = parser.parse(sentences, k=size, batch_size=batch_size)
        elif call == "sample":
            found = parser.sample(sentences, size, seed=seed, batch_size=batch_size)
        else:
            found = parser.sample(sentences, 3, seed=seed, batch_size=batch_size, distinct=size)
        return [[parsed.tree for parsed in trees] for trees in found]

    def located(error: SyntaxlmError) -> None:
        assert isinstance(error, SizeError), f"{type(error).__name__}: {error}"
        assert error.name in ("k", "n", "distinct") and "fits" in str(error), f"not a size's bound: {error}"

    try:
        found = outcome(run, located)
    except (ValueError, TypeError) as error:
        programmer_error(error)
        return
    if failed(found):
        return
    assert len(found) == len(sentences)
    for words, trees in zip(sentences, found):
        assert trees and all(tree.leaves() == words for tree in trees)
        if call == "parse":
            assert len(trees) <= size and len({tree.to_bracket() for tree in trees}) == len(trees)


def parser_options() -> st.SearchStrategy[tuple[str, int, int, int, int]]:
    sizes = st.one_of(st.integers(-2, 40), st.sampled_from(PARSER_SIZES))
    batch_sizes = st.one_of(st.integers(-1, 4), st.just(10**20))
    return st.tuples(st.sampled_from(PARSER_CALLS), sizes, sizes, batch_sizes, st.integers(0, 3))


def parser_options_from_bytes(data: bytes) -> tuple[str, int, int, int, int]:
    call, size, seed, batch, count = data.ljust(5, b"\x00")[:5]
    sizes = PARSER_SIZES
    batch_size = (-1, 0, 1, 2, 10**20)[batch % 5]
    return PARSER_CALLS[call % 4], sizes[size % len(sizes)], sizes[seed % len(sizes)], batch_size, count % 4


# -- the targets -------------------------------------------------------------------------------------------


def _file_seeds(*examples: bytes) -> Callable[[], list[bytes]]:
    return lambda: [bytes([options]) + example for example in examples for options in (0, 3)]


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target(
            "ptb",
            "TreeReader on a treebank file (.mrg, .gz), every option; tree methods on what it reads",
            check_ptb,
            lambda: with_options(file_input(tree_files(), TREE_PIECES)),
            options_and_bytes,
            _file_seeds(*(example.encode() for example in TREE_EXAMPLES)),
        ),
        Target(
            "tree_string",
            "parse_tree on a string; tree methods on the tree",
            check_tree_string,
            lambda: with_options(file_input(tree_files(), TREE_PIECES)),
            options_and_bytes,
            _file_seeds(*(example.encode() for example in TREE_EXAMPLES[:2])),
        ),
        Target(
            "conllu",
            "ConlluReader on a CoNLL-U file (.conllu, .gz); SOM's binary tree, DMLM's sets",
            check_conllu,
            lambda: with_options(file_input(conllu_files(), CONLLU_PIECES)),
            options_and_bytes,
            _file_seeds(CONLLU_EXAMPLE.encode()),
        ),
        Target(
            "actions",
            "actions_to_tree on an action string (Choe-Charniak, RNNG)",
            check_actions,
            action_strings,
            actions_from_bytes,
            lambda: [
                b"\x00(S (NP the bird NP) (VP sings VP) S)",
                b"\x01NT(S) NT(NP) the REDUCE sings REDUCE",
            ],
        ),
        Target(
            "tg",
            "tg_sequences and segment_sequences on arbitrary ids/kinds/offsets",
            check_tg,
            tg_inputs,
            tg_from_bytes,
            lambda: [bytes([1, 8 | 4, 9, 10, 18, 8 | 4, 9, 10])],
        ),
        Target(
            "distances",
            "PRPN's parser on arbitrary distances, and its inverse",
            check_distances,
            distance_values,
            distances_from_bytes,
            lambda: [bytes(range(16))],
        ),
        Target(
            "som",
            "SOM decisions: check, tree, memory grid, structure labels",
            check_som,
            som_inputs,
            som_from_bytes,
            lambda: [bytes([3, 3, 2, 1, 1, 2])],
        ),
        Target(
            "suite",
            "load_suite on a SyntaxGym suite file, then scoring it",
            check_suite,
            lambda: with_options(file_input(suite_files(), JSON_PIECES)),
            options_and_bytes,
            _file_seeds(json.dumps(small_suite()).encode()),
        ),
        Target(
            "formula",
            "parse_formula and evaluate_formula on any text",
            check_formula,
            formulas,
            text_of,
            lambda: [b"[(2;%mismatch%) - (2;%match%)] > 0 & (*;%a%) = 1.5e0"],
        ),
        Target(
            "region_values",
            "score_region_values on a region-values file",
            check_region_values,
            lambda: with_options(file_input(region_values_files(), JSON_PIECES)),
            options_and_bytes,
            _file_seeds(
                b'[{"item_number": 1, "values": {"match": [1, 2, 3], "mis-match": [1, 5, 3]}},'
                b' {"item_number": 2, "values": {"match": [1, 2, 3], "mis-match": [1, 0.5, 3]}}]'
            ),
        ),
        Target(
            "parseval",
            "evaluate_parses on a gold and a predicted bracket file",
            check_parseval,
            parseval_inputs,
            parseval_from_bytes,
            lambda: [b"\x00" + TREE_EXAMPLES[0].encode() + b"\x00" + TREE_EXAMPLES[0].encode()],
        ),
        Target(
            "prm",
            "read_prm on an EVALB parameter file",
            check_prm,
            lambda: with_options(file_input(st.just(PRM_EXAMPLE), LINE_PIECES)),
            options_and_bytes,
            _file_seeds(PRM_EXAMPLE),
        ),
        Target(
            "uf1_distances",
            "read_distances on a distances file, then UF1",
            check_uf1_distances,
            lambda: with_options(file_input(st.just(UF1_DISTANCES_EXAMPLE), LINE_PIECES)),
            options_and_bytes,
            _file_seeds(UF1_DISTANCES_EXAMPLE),
        ),
        Target(
            "uf1_trees",
            "read_predicted_trees on a predicted-trees file, then UF1",
            check_uf1_trees,
            lambda: with_options(file_input(st.just(UF1_TREES_EXAMPLE), LINE_PIECES + TREE_PIECES)),
            options_and_bytes,
            _file_seeds(UF1_TREES_EXAMPLE),
        ),
        Target(
            "blimp",
            "read_paradigm on a BLiMP paradigm file",
            check_blimp,
            lambda: with_options(file_input(st.just(BLIMP_EXAMPLE), JSON_PIECES)),
            options_and_bytes,
            _file_seeds(BLIMP_EXAMPLE),
        ),
        Target(
            "sentences",
            "eval ppl's DATA: treebank or sentences, then its trees or sentences (score, parse alike)",
            check_sentences,
            lambda: with_options(
                file_input(st.sampled_from([SENTENCES_EXAMPLE, TREEBANK_EXAMPLE]), LINE_PIECES + TREE_PIECES)
            ),
            options_and_bytes,
            _file_seeds(SENTENCES_EXAMPLE, TREEBANK_EXAMPLE),
        ),
        Target(
            "generated_texts",
            "syntaxlm eval gen on a generated-texts file (and as its own references)",
            check_generated_texts,
            lambda: with_options(file_input(st.just(SENTENCES_EXAMPLE), LINE_PIECES)),
            options_and_bytes,
            _file_seeds(SENTENCES_EXAMPLE),
        ),
        Target(
            "blimp_scores",
            "read_blimp_logprobs on an eval blimp --logprobs file",
            check_blimp_scores,
            lambda: with_options(file_input(st.just(BLIMP_SCORES_EXAMPLE), JSON_PIECES)),
            options_and_bytes,
            _file_seeds(BLIMP_SCORES_EXAMPLE),
        ),
        Target(
            "vocab",
            "load_vocabulary on a vocab.json",
            check_vocab,
            lambda: with_options(file_input(st.just(WORD_VOCAB_JSON), JSON_PIECES)),
            options_and_bytes,
            _file_seeds(WORD_VOCAB_JSON),
        ),
        Target(
            "subword_model",
            "SubwordVocab.load on a sentencepiece model file of arbitrary bytes",
            check_subword_model,
            lambda: with_options(st.binary(max_size=300)),
            options_and_bytes,
            lambda: [b"\x00\x0a\x05\x0a\x01a\x15\x00\x00\x00\x00"],
        ),
        Target(
            "recipe",
            "load_config on a training recipe (YAML)",
            check_recipe,
            lambda: with_options(file_input(st.just(RECIPE_EXAMPLE), YAML_PIECES)),
            options_and_bytes,
            _file_seeds(RECIPE_EXAMPLE),
        ),
        Target(
            "checkpoint",
            "load_checkpoint on a training checkpoint file",
            check_checkpoint,
            lambda: with_options(file_input(st.just(CHECKPOINT_EXAMPLE), JSON_PIECES)),
            options_and_bytes,
            _file_seeds(CHECKPOINT_EXAMPLE),
        ),
        Target(
            "model_folder",
            "load_model on a saved model with a broken config.json or model.safetensors",
            check_model_folder,
            lambda: with_options(
                st.one_of(
                    file_input(st.just(MODEL_CONFIG_EXAMPLE), JSON_PIECES),
                    file_input(st.just(MODEL_WEIGHTS_EXAMPLE), JSON_PIECES),
                )
            ),
            options_and_bytes,
            lambda: [bytes([0]) + MODEL_CONFIG_EXAMPLE, bytes([1]) + MODEL_WEIGHTS_EXAMPLE],
        ),
        Target(
            "view_results",
            "syntaxlm view's data (result files only) of a result file of each kind the page reads, broken",
            check_view_results,
            lambda: with_options(
                st.one_of(
                    file_input(st.sampled_from(VIEW_RESULT_EXAMPLES), VIEW_RESULT_PIECES),
                    json_value_swapped([json.loads(example) for example in VIEW_RESULT_EXAMPLES]),
                )
            ),
            options_and_bytes,
            _file_seeds(*VIEW_RESULT_EXAMPLES),
        ),
        Target(
            "proposals",
            "read_proposals on a proposals file (INDEX<TAB>TREE lines)",
            check_proposals,
            lambda: with_options(file_input(proposal_files(), PROPOSAL_PIECES)),
            options_and_bytes,
            _file_seeds(PROPOSALS_EXAMPLE, PARSER_PROPOSALS_EXAMPLE),
        ),
        Target(
            "parser_options",
            "the proposal parser's k best, samples and distinct draws with any size, seed and batch size",
            check_parser_options,
            parser_options,
            parser_options_from_bytes,
            lambda: [bytes([0, 7, 3, 2, 3]), bytes([3, 6, 6, 1, 3]), bytes([1, 9, 0, 0, 0])],
        ),
    )
}
