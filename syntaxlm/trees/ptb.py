"""Penn Treebank bracket reading and writing.

The reader accepts every layout in use: one tree per line (BLLIP, most parser output), indented
multi-line trees separated by blank lines (GUM), ``.mrg`` files whose trees sit inside an empty
outer bracket ``( (S ...) )`` (WSJ, CRAFT; the wrapper is removed), and ``(ROOT ...)``/``(TOP ...)``
roots (kept; ``Cleaning(strip_root=True)`` removes them). Files are streamed in chunks of lines, so
a 40M-word corpus is never held in memory; ``.gz`` files are decompressed on the fly.

Malformed input raises ``TreeFormatError`` naming file, line, column and what was expected. With
``skip_bad=True`` the reader records the error, skips the tree and goes on; ``TreeReader.report``
lists what was skipped. A line that starts with ``(`` in column 1 while a tree is still open is
taken as the start of a new tree, so one unbalanced tree does not swallow the rest of a file.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from syntaxlm.errors import MissingPosTagError, TreeError, TreeFormatError
from syntaxlm.files import atomic_writer, read_lines
from syntaxlm.trees.clean import Cleaning
from syntaxlm.trees.tree import Tree

# Tokens: "(TAG word)" (a whole preterminal, the common case), "(LABEL", ")", and words. Only ASCII
# whitespace separates tokens (words may hold U+00A0). With line_starts_tree, a bracket opening in
# column 1 is its own token, "\n(LABEL".
_SPACE = r" \t\n\r\f\v"


def _token_pattern(*, preterminals: bool, line_starts_tree: bool) -> re.Pattern:
    alternatives = [rf"\([^{_SPACE}()]*", r"\)", rf"[^{_SPACE}()]+"]
    if preterminals:
        alternatives.insert(0, rf"\([^{_SPACE}()]+ [^{_SPACE}()]+\)")
    if line_starts_tree:
        alternatives.insert(0, rf"\n\([^{_SPACE}()]*")
    return re.compile("|".join(alternatives))


_UNWRITABLE = re.compile(r"[ \t\n\r\f\v()]")

TREEBANK_SUFFIXES = (".mrg", ".tree", ".trees", ".ptb", ".gz", ".bracketed")
"""File name endings taken from a directory given to the reader."""

_MISSING = object()
_POS_TAG_EXPECTED = "every word alone under a POS tag, e.g. (NN word)"
_POS_TAG_HINT = "if the trees have no POS tags (Choe–Charniak style), read them with POS tags off"
_MAX_SHARED_PRETERMINALS = 500_000


@dataclass
class ReadReport:
    """What a reader saw: trees yielded, trees skipped (with their errors), trees emptied."""

    trees: int = 0
    emptied: int = 0  # trees left without words by cleaning (e.g. only -NONE- elements)
    skipped: list[TreeFormatError] = field(default_factory=list)

    def summary(self) -> str:
        text = f"{self.trees} trees read"
        if self.emptied:
            text += f", {self.emptied} left empty by cleaning and dropped"
        if self.skipped:
            text += f", {len(self.skipped)} malformed trees skipped:"
            text += "".join(f"\n  {error}" for error in self.skipped[:20])
            if len(self.skipped) > 20:
                text += f"\n  ... and {len(self.skipped) - 20} more"
        return text


class _Bad(Exception):
    """Internal: a format problem at a token (index in the file); becomes a TreeFormatError."""

    def __init__(self, problem: str, expected: str, token: int):
        self.problem, self.expected, self.token = problem, expected, token


class TreeReader:
    """Streams trees from a file, a directory of treebank files, or an iterable of lines.

    ``cleaning`` (a ``Cleaning``) is applied while each tree is built. ``pos_tags=True``
    (the default) enforces the Penn Treebank rule that every word is alone under a POS tag;
    ``pos_tags=False`` reads POS-less trees such as ``(S (NP the bird) (VP sings))``.
    """

    def __init__(
        self,
        source: str | Path | Iterable[str],
        *,
        cleaning: Cleaning | None = None,
        pos_tags: bool = True,
        skip_bad: bool = False,
        line_starts_tree: bool = True,
        name: str | None = None,
    ):
        self.source = source
        self.cleaning = cleaning if cleaning is not None and not cleaning.is_identity else None
        self.pos_tags = pos_tags
        self.skip_bad = skip_bad
        self.line_starts_tree = line_starts_tree
        self.name = name
        self.report = ReadReport()
        self._made: dict[tuple[str, str], object] = {}  # (tag, word) -> shared preterminal

    def files(self) -> list[Path]:
        """The files this reader will read, in order."""
        if not isinstance(self.source, (str, Path)):
            return []
        path = Path(self.source)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TREEBANK_SUFFIXES))
            if not found:
                raise FileNotFoundError(f"{path}: no treebank files (*{', *'.join(TREEBANK_SUFFIXES)})")
            return found
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        return [path]

    def __iter__(self) -> Iterator[Tree]:
        if isinstance(self.source, (str, Path)):
            for path in self.files():
                yield from self._parse(read_lines(path, TreeFormatError), str(path))
        else:
            yield from self._parse(self.source, self.name or "<input>")

    def _preterminal(self, token: str, at_root: bool) -> Tree | str | None:
        """Build (and clean) the preterminal written as the token ``(TAG word)``."""
        tag, word = token[1:-1].split(" ")
        if self.cleaning is None:
            return Tree(tag, (word,))
        if at_root:
            return self.cleaning.phrase(tag, [word], at_root=True)
        return self.cleaning.preterminal(tag, word)

    # The parser is one loop over the tokens of large chunks of text, with explicit stacks: no
    # recursion, no call per token, no per-line work. Token positions are only worked out when an
    # error has to be reported (``_Chunks.locate``).
    def _parse(self, lines: Iterable[str], path: str) -> Iterator[Tree]:
        pos_tags = self.pos_tags
        cleaning = self.cleaning
        made = self._made
        report = self.report
        chunks = _Chunks(lines, _token_pattern(preterminals=pos_tags, line_starts_tree=self.line_starts_tree))
        labels: list[str | None] = []  # label of each open bracket (None until it is read)
        kids: list[list] = []  # children of each open bracket
        wrapper = 0  # 0: none; 1: inside an unlabelled outer bracket; 2: its tree is complete
        held = None  # a complete tree waiting for its outer bracket's ')'
        tree_start = 0  # token index of the current tree's first '('
        sentence = 0  # index of the current tree in this file
        skip_depth = -1  # >= 0 while skipping the rest of a bad tree
        after_word = False  # the last token was a word (with pos_tags, only ')' may follow)

        def error_at(problem: str, expected: str, token: int) -> TreeFormatError:
            line, column = chunks.locate(token)
            where = {"path": path, "line": line, "column": column, "sentence": sentence, "expected": expected}
            if expected == _POS_TAG_EXPECTED:
                return MissingPosTagError(problem, hint=_POS_TAG_HINT, **where)
            return TreeFormatError(problem, **where)

        for base, tokens in chunks:
            if len(made) > _MAX_SHARED_PRETERMINALS:  # bound memory on huge corpora
                made.clear()
            chunks.forget_before(tree_start if (labels or wrapper or skip_depth >= 0) else base - 2)
            start = 0
            if skip_depth >= 0:
                start, skip_depth = _skip(tokens, 0, skip_depth)
            while start < len(tokens):
                i = start
                try:
                    for i, token in enumerate(islice(tokens, start, None), start):
                        first_char = token[0]
                        if first_char == "(":
                            if token[-1] == ")":  # "(TAG word)": a whole preterminal in one token
                                node = made.get(token, _MISSING)
                                if node is _MISSING:
                                    node = made[token] = self._preterminal(token, at_root=False)
                                if labels and labels[-1] is not None and not after_word:
                                    if node is not None:  # None: removed by cleaning
                                        kids[-1].append(node)
                                    continue
                                # rare: a one-word tree, or a layout error
                                if labels and labels[-1] is not None:
                                    raise _Bad(
                                        f"word {kids[-1][0]!r} outside a preterminal: ({labels[-1]} ...) "
                                        "holds both words and brackets",
                                        _POS_TAG_EXPECTED,
                                        base + i,
                                    )
                                if len(labels) > 1 or (labels and wrapper):
                                    raise _Bad("bracket without a label", "a label after '('", base + i - 1)
                                if wrapper == 2:
                                    raise _Bad(
                                        "a second tree inside the unlabelled outer bracket", "')'", base + i
                                    )
                                node = self._preterminal(token, at_root=True)
                                if labels:  # "( (TAG word) )"
                                    labels.pop(), kids.pop()
                                    wrapper, held = 2, node
                                    continue
                                tree_start = base + i
                                if node is None:
                                    report.emptied += 1
                                else:
                                    report.trees += 1
                                    yield node
                                sentence += 1
                                continue
                            if labels:
                                top = labels[-1]
                                if top is None:
                                    if len(labels) > 1 or wrapper:
                                        raise _Bad(
                                            "bracket without a label", "a label after '('", base + i - 1
                                        )
                                    # an unlabelled outermost bracket: ( (S ...) )
                                    labels.pop(), kids.pop()
                                    wrapper = 1
                                elif after_word:
                                    raise _Bad(
                                        f"word {kids[-1][0]!r} outside a preterminal: ({top} ...) "
                                        "holds both words and brackets",
                                        _POS_TAG_EXPECTED,
                                        base + i,
                                    )
                            elif wrapper == 2:
                                raise _Bad(
                                    "a second tree inside the unlabelled outer bracket", "')'", base + i
                                )
                            else:
                                tree_start = base + i
                            labels.append(token[1:] or None)
                            kids.append([])
                        elif first_char == ")":
                            closes_preterminal, after_word = after_word, False
                            if not labels:
                                if wrapper != 2:
                                    raise _Bad("unexpected ')'", "'(' or the end of the file", base + i)
                                wrapper, node = 0, held
                            else:
                                label = labels.pop()
                                children = kids.pop()
                                if label is None:
                                    raise _Bad("empty brackets '()'", "a label after '('", base + i - 1)
                                if not children:
                                    # Cleaning removed every child, unless the bracket never had one:
                                    # then the token before this ')' is its "(LABEL" or its label.
                                    previous = tokens[i - 1] if i else chunks.token(base - 1)
                                    if previous[-1] != ")":
                                        opener = base + i - (1 if previous[0] in "(\n" else 2)
                                        raise _Bad(
                                            f"({label}) has no children", "a word or a bracket", opener
                                        )
                                    node = None
                                elif closes_preterminal and labels:  # "(TAG word)" written across tokens
                                    key = (label, children[0])
                                    node = made.get(key, _MISSING)
                                    if node is _MISSING:
                                        if cleaning is None:
                                            node = Tree(label, children)
                                        else:
                                            node = cleaning.preterminal(label, children[0])
                                        made[key] = node
                                elif cleaning is None:
                                    node = Tree(label, children)
                                else:
                                    node = cleaning.phrase(label, children, not labels)
                                if labels:
                                    if node is not None:
                                        kids[-1].append(node)
                                    continue
                                if wrapper:
                                    wrapper, held = 2, node
                                    continue
                            # a tree is complete
                            if node is None:
                                report.emptied += 1
                            else:
                                report.trees += 1
                                yield node
                            sentence += 1
                        elif first_char == "\n":  # '(' in column 1: only a new tree may start there
                            # A bare '(' opens an outer bracket for this tree only when it stood
                            # alone in column 1 itself; after a tree on its line it is a broken tree.
                            bare_outer = labels and labels[0] is None and chunks.token(tree_start)[0] == "\n"
                            if (labels and not bare_outer) or wrapper == 2:
                                first_line, _ = chunks.locate(tree_start)
                                raise _Bad(
                                    "a new tree starts in column 1 while the tree opened at line "
                                    f"{first_line} still has {len(labels) + (wrapper > 0)} unclosed bracket(s)",
                                    "')' (or pass line_starts_tree=False for trees whose inner lines "
                                    "start in column 1)",
                                    base + i,
                                )
                            if labels:  # "(" alone on the line before: an unlabelled outer bracket
                                labels.pop(), kids.pop()
                                wrapper = 1
                            else:
                                tree_start = base + i
                            labels.append(token[2:] or None)
                            kids.append([])
                        else:  # a word, or the label of a bracket opened as "( LABEL"
                            if not labels:
                                raise _Bad(f"stray text {token!r} outside any bracket", "'('", base + i)
                            if labels[-1] is None:
                                labels[-1] = token
                                continue
                            siblings = kids[-1]
                            if pos_tags and siblings:
                                if after_word:
                                    problem = f"second word {token!r} in ({labels[-1]} {siblings[0]} ...)"
                                else:
                                    problem = f"word {token!r} outside a preterminal: ({labels[-1]} ...) holds brackets"
                                raise _Bad(problem, _POS_TAG_EXPECTED, base + i)
                            siblings.append(token)
                            after_word = pos_tags
                    start = len(tokens)
                except _Bad as bad:
                    error = error_at(bad.problem, bad.expected, bad.token)
                    if not self.skip_bad:
                        raise error from None
                    report.skipped.append(error)
                    token = tokens[i]
                    if token[0] == "\n" and (labels or wrapper):
                        start = i  # the open tree is abandoned; the new one starts at this token
                    else:
                        # brackets still open in the text, counting a '(' that was refused
                        depth = len(labels) + (1 if wrapper else 0) + (1 if token[0] in "(\n" else 0)
                        start, skip_depth = _skip(tokens, i + 1, depth) if depth else (i + 1, -1)
                    labels.clear(), kids.clear()
                    wrapper, held, after_word = 0, None, False
                    sentence += 1
        if labels or wrapper:
            error = error_at(
                f"end of file inside a tree: {len(labels) + (wrapper > 0)} bracket(s) opened from here on "
                "are never closed",
                "')'",
                tree_start,
            )
            if not self.skip_bad:
                raise error
            report.skipped.append(error)


class _Chunks:
    """The input as chunks of whole lines, each tokenised at once; locates tokens for errors.

    A chunk's text starts with a newline, so that a ``(`` in column 1 can get its own token.
    """

    SIZE = 1 << 16  # characters per chunk

    def __init__(self, lines: Iterable[str], pattern: re.Pattern):
        self.lines = lines
        self.pattern = pattern
        self.kept: list[tuple[int, list[str], str, int]] = []  # (base, tokens, text, first line)

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        findall = self.pattern.findall
        base, first_line, size, buffer = 0, 1, 0, ["\n"]
        for line in self.lines:
            if not line.endswith("\n"):
                line += "\n"
            buffer.append(line)
            size += len(line)
            if size >= self.SIZE:
                text = "".join(buffer)
                tokens = findall(text)
                self.kept.append((base, tokens, text, first_line))
                yield base, tokens
                base += len(tokens)
                first_line += len(buffer) - 1
                size, buffer = 0, ["\n"]
        text = "".join(buffer)
        tokens = findall(text)
        self.kept.append((base, tokens, text, first_line))
        yield base, tokens

    def forget_before(self, token: int) -> None:
        """Drop chunks that end before ``token`` (errors never point there)."""
        while len(self.kept) > 1 and self.kept[0][0] + len(self.kept[0][1]) <= token:
            self.kept.pop(0)

    def _chunk_of(self, token: int) -> tuple[int, list[str], str, int]:
        for chunk in self.kept:
            if chunk[0] <= token < chunk[0] + len(chunk[1]):
                return chunk
        return self.kept[-1]

    def token(self, token: int) -> str:
        base, tokens, _, _ = self._chunk_of(token)
        return tokens[token - base] if 0 <= token - base < len(tokens) else ""

    def locate(self, token: int) -> tuple[int, int]:
        """1-based (line, column) of a token."""
        base, tokens, text, first_line = self._chunk_of(token)
        index = min(max(token - base, 0), len(tokens))
        match = next(islice(self.pattern.finditer(text), index, None), None)
        position = match.start() if match else len(text) - 1
        if text[position] == "\n" and position + 1 < len(text):
            position += 1
        line = first_line - 1 + text.count("\n", 0, position)
        column = position - text.rfind("\n", 0, position)
        return line, column


def _skip(tokens: list[str], start: int, depth: int) -> tuple[int, int]:
    """Consume the tokens of a bad tree until its brackets close; returns (next index, depth left).

    A depth of -1 means the bad tree is over; a ``(`` in column 1 also ends it (not consumed).
    """
    for i in range(start, len(tokens)):
        token = tokens[i]
        first_char = token[0]
        if first_char == "(":
            depth += token[-1] != ")"  # "(TAG word)" opens and closes
        elif first_char == ")":
            depth -= 1
            if depth == 0:
                return i + 1, -1
        elif first_char == "\n":
            return i, -1
    return len(tokens), depth


def read_trees(
    source: str | Path | Iterable[str],
    *,
    cleaning: Cleaning | None = None,
    pos_tags: bool = True,
) -> Iterator[Tree]:
    """Stream the trees of a file or directory; raises ``TreeFormatError`` on malformed input.

    For skipping bad trees and a report of what was skipped, use ``TreeReader``.
    """
    return iter(TreeReader(source, cleaning=cleaning, pos_tags=pos_tags))


def parse_tree(text: str, *, pos_tags: bool = False) -> Tree:
    """Exactly one tree from a string (its lines end where a file's would: ``\\n``, ``\\r\\n``, ``\\r``)."""
    trees = list(TreeReader(io.StringIO(text, newline=None), pos_tags=pos_tags, name="<string>"))
    if len(trees) != 1:
        raise TreeFormatError(f"found {len(trees)} trees", path="<string>", expected="exactly one tree")
    return trees[0]


def check_writable(tree: Tree, index: int | None = None) -> None:
    """Raise ``TreeError`` if a label or word cannot be written as brackets (space, parenthesis)."""
    where = f" (tree {index})" if index is not None else ""
    for node in tree.subtrees():
        if not node.label or _UNWRITABLE.search(node.label):
            raise TreeError(f"label {node.label!r} cannot be written in brackets{where}")
        for child in node.children:
            if type(child) is str and (not child or _UNWRITABLE.search(child)):
                raise TreeError(
                    f"word {child!r} cannot be written in brackets{where}; "
                    "write '(' and ')' as -LRB- and -RRB-"
                )


def write_trees(path: str | Path, trees: Iterable[Tree], *, pretty: bool = False) -> int:
    """Write trees atomically, one per line (or indented and blank-line separated). Returns the count."""
    count = 0
    with atomic_writer(path) as handle:
        for count, tree in enumerate(trees, 1):
            check_writable(tree, count - 1)
            handle.write(tree.pretty() + "\n\n" if pretty else tree.to_bracket() + "\n")
    return count
