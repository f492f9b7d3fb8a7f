"""Dependency trees: the ``DepTree`` value, CoNLL-U reading/writing, and the conversions the
models need — the binary constituency tree of SOM (§3.3, Fig. 4) and DMLM's future-dependents
sets (§2.1).

CoNLL-U follows Universal Dependencies: a sentence's *syntactic words* have integer ids 1..n and
carry the tree (HEAD, 0 = root, and DEPREL); multiword tokens (``1-2  don't``) give the surface
form of several words and are kept for writing; empty nodes (``8.1``) belong to the enhanced graph
only and are kept verbatim. Columns other than FORM, HEAD and DEPREL are kept as raw strings, so
reading and writing a file gives it back unchanged.
"""

from __future__ import annotations

import io
import operator
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import conllu
import conllu.exceptions
import conllu.parser
import numpy as np

from syntaxlm.errors import ConlluFormatError
from syntaxlm.files import atomic_writer, read_lines
from syntaxlm.trees.ptb import ReadReport
from syntaxlm.trees.tree import Child, Tree

CONLLU_SUFFIXES = (".conllu", ".conllu.gz", ".conll")
FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
# conllu parses ID and HEAD; every other column is kept as written.
_PARSERS = {
    **conllu.parser.DEFAULT_FIELD_PARSERS,
    **{
        name: (lambda line, i: line[i])
        for name in ("lemma", "upos", "xpos", "feats", "deprel", "deps", "misc")
    },
}


@dataclass(frozen=True)
class MultiwordToken:
    """A surface token spanning syntactic words ``first``..``last`` (``1-2  don't``)."""

    first: int
    last: int
    form: str
    misc: str = "_"


@dataclass(frozen=True)
class EmptyNode:
    """An enhanced-graph empty node (``8.1``): its id and the nine columns after the id."""

    id: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class DepTree:
    """A dependency-parsed sentence. Word ``i`` (1-based) is ``words[i - 1]``; ``heads[i - 1]``
    is its head (0 = root)."""

    words: tuple[str, ...]
    heads: tuple[int, ...]
    relations: tuple[str, ...]
    lemmas: tuple[str, ...] = ()
    upos: tuple[str, ...] = ()
    xpos: tuple[str, ...] = ()
    feats: tuple[str, ...] = ()
    deps: tuple[str, ...] = ()
    misc: tuple[str, ...] = ()
    multiword_tokens: tuple[MultiwordToken, ...] = ()
    empty_nodes: tuple[EmptyNode, ...] = ()
    comments: tuple[str, ...] = ()  # comment lines without their leading '#'

    def __post_init__(self):
        n = len(self.words)
        for name in ("lemmas", "upos", "xpos", "feats", "deps", "misc"):
            if not getattr(self, name):
                object.__setattr__(self, name, ("_",) * n)
        if len(self.heads) != n or len(self.relations) != n:
            raise ValueError("DepTree: words, heads and relations must have the same length")

    def __len__(self) -> int:
        return len(self.words)

    def children(self) -> list[list[int]]:
        """``children()[h]``: the dependents of word ``h`` (0 = the root), in word order."""
        kids: list[list[int]] = [[] for _ in range(len(self.words) + 1)]
        for dependent, head in enumerate(self.heads, 1):
            kids[head].append(dependent)
        return kids

    @property
    def root_words(self) -> list[int]:
        return [i for i, head in enumerate(self.heads, 1) if head == 0]

    def to_conllu(self) -> str:
        """The sentence as CoNLL-U lines (ending with the blank separator line)."""
        lines = ["#" + comment for comment in self.comments]
        multiword = {token.first: token for token in self.multiword_tokens}
        empty: dict[int, list[EmptyNode]] = {}
        for node in self.empty_nodes:
            empty.setdefault(int(node.id.split(".")[0]), []).append(node)
        lines.extend(_empty_line(node) for node in empty.get(0, ()))
        for i in range(1, len(self.words) + 1):
            if i in multiword:
                token = multiword[i]
                lines.append(f"{token.first}-{token.last}\t{token.form}\t_\t_\t_\t_\t_\t_\t_\t{token.misc}")
            k = i - 1
            lines.append(
                "\t".join(
                    (
                        str(i),
                        self.words[k],
                        self.lemmas[k],
                        self.upos[k],
                        self.xpos[k],
                        self.feats[k],
                        str(self.heads[k]),
                        self.relations[k],
                        self.deps[k],
                        self.misc[k],
                    )
                )
            )
            lines.extend(_empty_line(node) for node in empty.get(i, ()))
        return "\n".join(lines) + "\n\n"


def _empty_line(node: EmptyNode) -> str:
    return "\t".join((node.id, *node.columns))


class ConlluReader:
    """Streams ``DepTree`` values from a CoNLL-U file (or an iterable of lines).

    Parsing of each token line is done by the ``conllu`` package; this reader adds what a
    training pipeline needs: sentence-by-sentence streaming, errors that name file, line and
    column (field), a check that every sentence is a tree, and ``skip_bad`` with a report.
    """

    def __init__(
        self, source: str | Path | Iterable[str], *, skip_bad: bool = False, name: str | None = None
    ):
        self.source = source
        self.skip_bad = skip_bad
        self.name = name
        self.report = ReadReport()

    def __iter__(self) -> Iterator[DepTree]:
        if isinstance(self.source, (str, Path)):
            path = str(self.source)
            yield from self._sentences(enumerate(read_lines(path, ConlluFormatError), 1), path)
        else:
            yield from self._sentences(enumerate(self.source, 1), self.name or "<input>")

    def _sentences(self, numbered_lines: Iterable[tuple[int, str]], path: str) -> Iterator[DepTree]:
        block: list[tuple[int, str]] = []
        sentence = 0
        for lineno, line in numbered_lines:
            line = line.rstrip("\r\n")
            if line.strip():
                block.append((lineno, line))
                continue
            if block:
                tree = self._one(block, path, sentence)
                sentence += 1
                if tree is not None:
                    yield tree
                block = []
        if block:  # CoNLL-U ends every sentence with a blank line: without it the file may be cut short
            tree = self._one(block, path, sentence, unterminated=True)
            if tree is not None:
                yield tree

    def _one(
        self, block: list[tuple[int, str]], path: str, sentence: int, *, unterminated: bool = False
    ) -> DepTree | None:
        try:
            tree = _parse_sentence(block, path, sentence)
            if unterminated:
                raise ConlluFormatError(
                    "the input ends inside a sentence: no blank line after its last line",
                    path=path,
                    line=block[-1][0],
                    sentence=sentence,
                    expected="a blank line after every sentence, as CoNLL-U requires (the file may be cut)",
                )
        except ConlluFormatError as error:
            if not self.skip_bad:
                raise
            self.report.skipped.append(error)
            return None
        self.report.trees += 1
        return tree


Failure = Callable[..., ConlluFormatError]  # a sentence's error at a line (and column)


def _parse_sentence(block: list[tuple[int, str]], path: str, sentence: int) -> DepTree:
    def fail(problem: str, lineno: int, column: int | None = None, expected: str | None = None):
        return ConlluFormatError(
            problem, path=path, line=lineno, column=column, sentence=sentence, expected=expected
        )

    comments, rows, lines = _token_lines(block, fail)
    words, multiword, empty = _words_and_nodes(rows, lines, fail)
    heads = _heads(words, multiword, rows, lines, fail)
    _check_tree(heads, fail, words)
    return DepTree(
        words=tuple(t["form"] for _, t in words),
        heads=tuple(heads),
        relations=tuple(t["deprel"] for _, t in words),
        lemmas=tuple(t["lemma"] for _, t in words),
        upos=tuple(t["upos"] for _, t in words),
        xpos=tuple(t["xpos"] for _, t in words),
        feats=tuple(t["feats"] for _, t in words),
        deps=tuple(t["deps"] for _, t in words),
        misc=tuple(t["misc"] for _, t in words),
        multiword_tokens=tuple(multiword),
        empty_nodes=tuple(empty),
        comments=tuple(comments),
    )


def _token_lines(block: list[tuple[int, str]], fail: Failure):
    """The sentence's comments, its token lines read by ``conllu`` (with their line numbers) and
    the token lines' text by number, each line checked where it stands."""
    comments: list[str] = []
    rows: list[tuple[int, conllu.models.Token]] = []
    lines: dict[int, str] = {}  # token lines by number, for error columns and empty nodes
    for lineno, line in block:
        if line.startswith("#"):
            if rows:
                raise fail(
                    "comment line inside a sentence", lineno, 1, "comments before the first token line"
                )
            comments.append(line[1:])
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            raise fail(
                f"{len(columns)} tab-separated column(s)",
                lineno,
                1,
                "10 columns: " + " ".join(f.upper() for f in FIELDS),
            )
        for index, value in enumerate(columns):
            if value == "" or value != value.strip():
                column = _field_column(columns, index)
                raise fail(f"empty or space-padded {FIELDS[index].upper()} field {value!r}", lineno, column)
        if (overlong := _overlong_number(columns)) is not None:
            index, digits = overlong
            raise fail(
                f"{FIELDS[index].upper()} holds a number of {digits} digits",
                lineno,
                _field_column(columns, index),
                f"word numbers of at most {_MAX_NUMBER_DIGITS} digits",
            )
        try:
            token = conllu.parser.parse_line(line, fields=FIELDS, field_parsers=_PARSERS)
        except conllu.exceptions.ParseException as error:
            index = next((i for i, name in enumerate(FIELDS) if f"'{name}'" in str(error)), 0)
            column = _field_column(columns, index)
            raise fail(f"cannot parse the {FIELDS[index].upper()} field: {error}", lineno, column) from None
        rows.append((lineno, token))
        lines[lineno] = line
    if not rows:
        raise fail("sentence has comments but no token lines", block[-1][0], None, "token lines")
    return comments, rows, lines


def _words_and_nodes(rows: list, lines: dict[int, str], fail: Failure):
    """The syntactic words (ids 1..n in order), the multiword tokens and the empty nodes."""
    words: list[tuple[int, conllu.models.Token]] = []
    multiword: list[MultiwordToken] = []
    empty: list[EmptyNode] = []
    for lineno, token in rows:
        token_id = token["id"]
        if token_id is None:  # conllu reads the ID "_" as None
            raise fail("word id '_'", lineno, 1, "an integer id, a range N-M or an empty node N.M")
        if isinstance(token_id, int):
            if token_id != len(words) + 1:
                raise fail(f"word id {token_id} out of sequence", lineno, 1, f"id {len(words) + 1}")
            words.append((lineno, token))
        elif token_id[1] == "-":
            first, last = token_id[0], token_id[2]
            if first != len(words) + 1 or last < first:
                raise fail(
                    f"multiword token {first}-{last} out of place",
                    lineno,
                    1,
                    f"a range starting at {len(words) + 1}",
                )
            multiword.append(MultiwordToken(first, last, token["form"], token["misc"]))
        else:
            major = token_id[0]
            if major != len(words):
                raise fail(
                    f"empty node {major}.{token_id[2]} out of place", lineno, 1, f"an id {len(words)}.N"
                )
            empty.append(EmptyNode(f"{major}.{token_id[2]}", tuple(lines[lineno].split("\t")[1:])))
    return words, multiword, empty


def _heads(words: list, multiword: list, rows: list, lines: dict[int, str], fail: Failure) -> list[int]:
    """Each word's head, checked: an integer from 0 to n, not the word itself."""
    n = len(words)
    if n == 0:
        raise fail("sentence has no syntactic words", rows[0][0], 1, "word lines with integer ids")
    for token in multiword:
        if token.last > n:
            raise fail(
                f"multiword token {token.first}-{token.last} reaches past the last word {n}", rows[0][0]
            )
    heads: list[int] = []
    for lineno, token in words:
        head = token["head"]
        if not isinstance(head, int) or not 0 <= head <= n:
            raise fail(
                f"head {head!r} of word {token['id']}",
                lineno,
                _head_column(lines[lineno]),
                f"an integer from 0 to {n}",
            )
        if head == token["id"]:
            raise fail(f"word {head} is its own head", lineno, _head_column(lines[lineno]))
        heads.append(head)
    return heads


def _field_column(columns: list[str], index: int) -> int:
    """1-based column where field ``index`` (0-based) of a token line's ``columns`` starts."""
    return sum(len(c) + 1 for c in columns[:index]) + 1


def _head_column(line: str) -> int:
    """1-based column where the HEAD field (the 7th) of a token line starts."""
    return _field_column(line.split("\t"), 6)


# conllu converts ID and HEAD with int(), which refuses more than 4,300 digits (ValueError); the
# digits are bounded first, as elsewhere in the library. No sentence has 10**18 words.
_MAX_NUMBER_DIGITS = 18
_DIGITS = re.compile(r"[0-9]+")


def _overlong_number(columns: list[str]) -> tuple[int, int] | None:
    """(field index, digits) of the first number in ID or HEAD longer than ``_MAX_NUMBER_DIGITS``."""
    for index in (FIELDS.index("id"), FIELDS.index("head")):
        for digits in _DIGITS.finditer(columns[index]):
            if len(digits.group()) > _MAX_NUMBER_DIGITS:
                return index, len(digits.group())
    return None


def _check_tree(heads: list[int], fail, words) -> None:
    """Exactly one word has head 0 (Universal Dependencies), and every word reaches it without a cycle."""
    if 0 not in heads:
        raise fail("no word has head 0", words[0][0], None, "one root word")
    roots = [(word, lineno) for word, ((lineno, _), head) in enumerate(zip(words, heads), 1) if head == 0]
    if len(roots) > 1:
        named = ", ".join(f"{word} (line {lineno})" for word, lineno in roots[:10])
        more = f" and {len(roots) - 10} more" if len(roots) > 10 else ""
        raise fail(
            f"{len(roots)} words have head 0: words {named}{more}",
            roots[1][1],
            None,
            "exactly one root word, as Universal Dependencies requires",
        )
    state = [0] * (len(heads) + 1)  # 0 unknown, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, len(heads) + 1):
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node - 1]
        if state[node] == 1:
            cycle = path[path.index(node) :]
            raise fail(
                "the heads form a cycle through words " + " → ".join(map(str, cycle)),
                words[node - 1][0],
                None,
                "a tree: every word reaches the root",
            )
        for visited in path:
            state[visited] = 2


def is_conllu(path: str | Path) -> bool:
    """Whether a file name says CoNLL-U (``.conllu``, ``.conllu.gz``, ``.conll``)."""
    return str(path).endswith(CONLLU_SUFFIXES)


def read_conllu(source: str | Path | Iterable[str]) -> Iterator[DepTree]:
    """Stream the sentences of a CoNLL-U file; raises ``ConlluFormatError`` on bad input."""
    return iter(ConlluReader(source))


def parse_conllu(text: str) -> list[DepTree]:
    """All sentences of a CoNLL-U string; lines end where a file's would (``\\n``, ``\\r\\n``, ``\\r``)."""
    return list(ConlluReader(io.StringIO(text, newline=None), name="<string>"))


def write_conllu(path: str | Path, trees: Iterable[DepTree]) -> int:
    """Write sentences as CoNLL-U, atomically. Returns the count."""
    count = 0
    with atomic_writer(path) as handle:
        for count, tree in enumerate(trees, 1):
            handle.write(tree.to_conllu())
    return count


# -- conversions -----------------------------------------------------------------------------------


def projectivize(heads: tuple[int, ...] | list[int]) -> list[int]:
    """Heads of a projective tree close to the given one, by lifting non-projective arcs.

    An arc h → d is non-projective when a word between h and d is not a descendant of h. While
    such arcs exist, the shortest one (then the leftmost dependent) is lifted: d is attached to
    the head of h. Lifting keeps d under the same ancestors, so constituents change as little as
    possible (the pseudo-projective lifting of Nivre & Nilsson, 2005).

    A projective tree is recognised in O(n) for n words; each lift costs O(n log n). Raises
    ``ValueError`` for heads that do not form a tree (a head out of range, a cycle).
    """
    heads = [operator.index(head) for head in heads]
    while (dependent := _shortest_nonprojective_arc(heads)) is not None:
        heads[dependent - 1] = heads[heads[dependent - 1] - 1]
    return heads


def _shortest_nonprojective_arc(heads: list[int]) -> int | None:
    """The dependent of the shortest non-projective arc (the leftmost of the shortest), or None.

    Words are numbered in pre-order, so that a word is a descendant of h iff its number falls in
    the range of h's subtree. An arc is projective iff the smallest and the largest number of the
    words between its ends lie in that range; sparse tables of minima and maxima give them for
    every arc at once.
    """
    n = len(heads)
    kids: list[list[int]] = [[] for _ in range(n + 1)]
    for dependent, head in enumerate(heads, 1):
        if not 0 <= head <= n or head == dependent:
            raise ValueError(
                f"heads do not form a tree: word {dependent} has head {head}; expected 0 to {n}, not itself"
            )
        kids[head].append(dependent)
    order: list[int] = []  # pre-order from the root 0, children in word order
    stack = [0]
    while stack:
        word = stack.pop()
        order.append(word)
        stack.extend(reversed(kids[word]))
    if len(order) != n + 1:
        cut_off = sorted(set(range(n + 1)) - set(order))
        raise ValueError(f"heads do not form a tree: words {cut_off[:10]} never reach the root (a cycle)")
    first, last, size = list(range(n + 1)), list(range(n + 1)), [1] * (n + 1)
    for word in reversed(order[1:]):  # children before their heads
        head = heads[word - 1]
        first[head], last[head] = min(first[head], first[word]), max(last[head], last[word])
        size[head] += size[word]
    if all(last[word] - first[word] + 1 == size[word] for word in range(1, n + 1)):
        return None  # every subtree covers a contiguous range of words: the tree is projective
    number = np.empty(n + 1, dtype=np.int64)
    number[order] = np.arange(n + 1)
    subtree_size = np.asarray(size, dtype=np.int64)
    dependents = np.arange(1, n + 1)
    head_of = np.asarray(heads, dtype=np.int64)
    low, high = np.minimum(dependents, head_of), np.maximum(dependents, head_of)
    spans = (head_of != 0) & (high - low > 1)  # arcs with words between their ends
    dependents, head_of, low, high = dependents[spans], head_of[spans], low[spans], high[spans]
    # the words between are low + 1 .. high - 1: indices low .. high - 2 of number[1:]
    smallest, largest = _range_minima_maxima(number[1:], low, high - 1)
    outside = (smallest < number[head_of]) | (largest >= number[head_of] + subtree_size[head_of])
    if not outside.any():
        return None
    lengths = (high - low)[outside]
    return int(dependents[outside][np.lexsort((dependents[outside], lengths))[0]])


def _range_minima_maxima(
    values: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum of ``values[start:end]`` for each non-empty range, by sparse tables."""
    lengths = ends - starts
    minima, maxima = [values], [values]
    for level in range(1, int(lengths.max()).bit_length()):
        half = 1 << (level - 1)
        minima.append(np.minimum(minima[-1][:-half], minima[-1][half:]))
        maxima.append(np.maximum(maxima[-1][:-half], maxima[-1][half:]))
    levels = np.floor(np.log2(lengths)).astype(np.int64)  # the largest power of two in each length
    smallest, largest = np.empty_like(starts), np.empty_like(starts)
    for level in np.unique(levels).tolist():
        at = levels == level
        left, right = starts[at], ends[at] - (1 << level)
        smallest[at] = np.minimum(minima[level][left], minima[level][right])
        largest[at] = np.maximum(maxima[level][left], maxima[level][right])
    return smallest, largest


def dependency_to_binary_tree(dep: DepTree, *, labels: Literal["relation", "none"] = "relation") -> Tree:
    """SOM's gold tree Γ (§3.3, Fig. 4): each head and its dependents form one constituent,
    n-ary constituents are binarised left-branching.

    A head word with dependents d_1 < ... < h < ... < d_k (in word order, their own constituents
    built first) gives the items [c(d_1), ..., h, ..., c(d_k)], combined left to right:
    ((c(d_1) c(d_2)) ...) c(d_k). A word without dependents is a bare leaf. Non-projective trees
    are first made projective (``projectivize``). Each node is labelled with the relation of the
    head it projects (``root`` for the root), or ``X`` with ``labels="none"``; leaves are the
    words (no POS tags). Several root words are joined the same way under ``root``.
    """
    if not dep.words:
        raise ValueError("a sentence without words has no tree")
    heads = projectivize(dep.heads)
    n = len(heads)
    kids: list[list[int]] = [[] for _ in range(n + 1)]
    for dependent, head in enumerate(heads, 1):
        kids[head].append(dependent)

    def label_of(word: int) -> str:
        if labels == "none":
            return "X"
        return dep.relations[word - 1] if word else "root"

    built: dict[int, Child] = {}
    order: list[int] = []  # post-order of the words, children before their head
    stack = [(0, False)]
    while stack:
        word, expanded = stack.pop()
        if expanded:
            order.append(word)
            continue
        stack.append((word, True))
        stack.extend((child, False) for child in kids[word])
    for word in order:
        items: list[Child] = [built.pop(child) for child in kids[word] if child < word]
        if word:
            items.append(dep.words[word - 1])
        items.extend(built.pop(child) for child in kids[word] if child > word)
        node = items[0]
        for item in items[1:]:
            node = Tree(label_of(word), (node, item))
        built[word] = node
    root = built[0]
    return root if isinstance(root, Tree) else Tree(label_of(dep.root_words[0]), (root,))


def future_dependents(dep: DepTree) -> list[list[int]]:
    """DMLM's future-dependents sets Z (§2.1, Eq. 1), one per input position.

    Position 0 is the sentence start (the previous end-of-sentence symbol), position i the i-th
    word; position n + 1 stands for the end-of-sentence symbol. The set of position p holds the
    later positions that are p's parent or children: for word i with head h, i < h puts h into
    Z[i], h < i puts i into Z[h] (a root word goes into Z[0]). The last word predicts only the
    end of the sentence: Z[n] = [n + 1].
    """
    n = len(dep.heads)
    sets: list[list[int]] = [[] for _ in range(n + 1)]
    for word, head in enumerate(dep.heads, 1):
        if word < head:
            sets[word].append(head)
        else:
            sets[head].append(word)
    sets[n] = [n + 1]
    return [sorted(z) for z in sets]
