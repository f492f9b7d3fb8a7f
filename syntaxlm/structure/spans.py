"""Trees as a span parser reads them: the labelled spans of one binary tree per n-ary tree.

A span-based parser (Stern et al. 2017; the CRF of Zhang et al. 2020) scores binary trees whose
nodes are word spans ``[i, j)`` with a label each. Treebank trees are n-ary and have unary chains,
so a tree is read as exactly one binary tree (``binary_spans``) and back (``tree_from_spans``):

- a unary chain is one *chain label*, the labels top-down: ``(S (VP ...))`` over one span is
  ``("S", "VP")``; a word alone under phrases, ``(NP he)``, is a one-word span labelled
  ``("NP",)``;
- a node with children ``c_1 .. c_k`` (``k > 2``) is binarised to the right with unlabelled
  nodes (``NO_LABEL``): ``X → c_1 ∅(c_2 .. c_k)``, ``∅(c_2 .. c_k) → c_2 ∅(c_3 .. c_k)``, ...;
- a word that shares its parent with other children is a one-word span with ``NO_LABEL``.

An unlabelled node is therefore only ever a right child or a one-word span, and the root is
always labelled; the binary trees that satisfy this are exactly the readings of n-ary trees, one
each, so a distribution over them (``models.span_chart``) is a distribution over treebank trees.
Trees are in the view the language models read (``Tree``: words directly under phrases, no POS
tags); a tree with POS tags is read with them as one-word chains, so pass trees without them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from syntaxlm.errors import InputFormatError, TreeError
from syntaxlm.files import atomic_writer, read_text
from syntaxlm.trees.tree import Child, Tree

Chain = tuple[str, ...]  # the labels of a unary chain, top-down
NO_LABEL = 0  # the id of an unlabelled node of a binary tree (a binarisation node, or a bare word)
LABELS_FILE = "labels.json"


@dataclass(frozen=True)
class Span:
    """A node of a binary tree: words ``[start, end)`` and the id of its chain label."""

    start: int
    end: int
    label: int


def binary_spans(tree: Tree, labels: SpanLabels) -> list[Span]:
    """The ``2n − 1`` nodes of ``tree``'s binary reading (module docstring), parents before
    children; ``TreeError`` for a chain label ``labels`` lacks."""
    spans: list[Span] = []
    position = 0
    # Pre-order; ("close", index) sets the end of a node once its words are counted.
    work: list[tuple[str, object]] = [("node", tree)]
    while work:
        kind, item = work.pop()
        if kind == "close":
            index = int(item)  # type: ignore[arg-type]
            start = spans[index].start
            spans[index] = Span(start, position, spans[index].label)
            continue
        if kind == "group":  # an unlabelled binarisation node over the children ``item``
            children = list(item)  # type: ignore[arg-type]
            spans.append(Span(position, -1, NO_LABEL))
            work.append(("close", len(spans) - 1))
            work.extend(reversed(_binarised(children)))
            continue
        node = item
        if type(node) is str:
            spans.append(Span(position, position + 1, NO_LABEL))
            position += 1
            continue
        chain, children = _chain(node)  # type: ignore[arg-type]
        label = labels.id(chain)
        if len(children) == 1:  # a chain over one word
            spans.append(Span(position, position + 1, label))
            position += 1
            continue
        spans.append(Span(position, -1, label))
        work.append(("close", len(spans) - 1))
        work.extend(reversed(_binarised(children)))
    return spans


def _binarised(children: list[Child]) -> list[tuple[str, object]]:
    """The two work items of a node over ``children``: the first child, and the rest (one child,
    or an unlabelled group of them)."""
    if len(children) == 2:
        return [("node", children[0]), ("node", children[1])]
    return [("node", children[0]), ("group", children[1:])]


def _chain(node: Tree) -> tuple[Chain, tuple[Child, ...]]:
    """The labels of the unary chain that starts at ``node``, and the children below it."""
    labels = [node.label]
    while len(node.children) == 1 and type(node.children[0]) is not str:
        node = node.children[0]  # type: ignore[assignment]
        labels.append(node.label)
    if not node.children:
        raise TreeError(f"the constituent ({node.label}) has no words")
    return tuple(labels), node.children


def tree_from_spans(words: Sequence[str], spans: Iterable[Span], labels: SpanLabels) -> Tree:
    """The n-ary tree of a binary tree's nodes (any order): unlabelled nodes dissolve into their
    parent, chain labels become unary chains. ``TreeError`` when the spans are not one binary tree
    over ``words`` with a labelled root. Iterative: the nodes in pre-order (by start, then longest
    first), each closed when the next one starts at or after its end."""
    n = len(words)
    order = sorted(spans, key=lambda span: (span.start, -span.end))
    if len(order) != 2 * n - 1 or not order or (order[0].start, order[0].end) != (0, n):
        raise TreeError(f"{len(order)} spans over {n} words are not a binary tree")
    if order[0].label == NO_LABEL:
        raise TreeError("the root span has no label")
    # An open node: its span, its n-ary children so far, and the ends of its binary children.
    stack: list[tuple[Span, list[Child], list[int]]] = []

    def finished(span: Span, children: list[Child], covered: list[int]) -> list[Child]:
        """What a closed node puts among its parent's children."""
        if span.end - span.start == 1:
            children = [words[span.start]]
        elif len(covered) != 2 or covered[-1] != span.end:
            raise TreeError(
                f"the span [{span.start}, {span.end}) does not have two child spans that cover it"
            )
        if span.label == NO_LABEL:
            return children
        chain = labels.chain(span.label)
        node = Tree(chain[-1], children)
        for label in reversed(chain[:-1]):
            node = Tree(label, [node])
        return [node]

    for span in order:
        while stack and stack[-1][0].end <= span.start:
            done = stack.pop()
            if not stack:
                raise TreeError(f"the span [{span.start}, {span.end}) is outside the root")
            stack[-1][1].extend(finished(*done))
        if stack:
            parent, _, covered = stack[-1]
            if span.start != (covered[-1] if covered else parent.start) or span.end > parent.end:
                raise TreeError(f"the span [{span.start}, {span.end}) crosses its parent or leaves a gap")
            covered.append(span.end)
        stack.append((span, [], []))
    while len(stack) > 1:
        done = stack.pop()
        stack[-1][1].extend(finished(*done))
    (root,) = finished(*stack[0])  # the root is labelled: one tree
    return root  # type: ignore[return-value]


class SpanLabels:
    """The chain labels of a parser (module docstring): ids ``1 ..`` in a fixed order, ``0`` for
    ``NO_LABEL``. Saved beside the model as ``labels.json``."""

    def __init__(self, chains: Iterable[Chain]):
        self.chains: tuple[Chain, ...] = tuple(tuple(chain) for chain in chains)
        self._ids = {chain: i for i, chain in enumerate(self.chains, 1)}
        if len(self._ids) != len(self.chains):
            raise ValueError("a chain label is given twice")

    @classmethod
    def of_trees(cls, trees: Iterable[Tree]) -> SpanLabels:
        """Every chain label of ``trees``, most frequent first (ties by name)."""
        counts: dict[Chain, int] = {}
        for tree in trees:
            for chain in tree_chains(tree):
                counts[chain] = counts.get(chain, 0) + 1
        return cls(sorted(counts, key=lambda chain: (-counts[chain], chain)))

    def __len__(self) -> int:
        """The number of columns a span scorer needs: the chains and ``NO_LABEL``."""
        return len(self.chains) + 1

    def id(self, chain: Chain) -> int:
        if chain not in self._ids:
            raise TreeError(
                f"the label chain {'+'.join(chain)} is not among the parser's {len(self.chains)} labels"
            )
        return self._ids[chain]

    def chain(self, label: int) -> Chain:
        return self.chains[label - 1]

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_writer(folder / LABELS_FILE) as handle:
            json.dump({"chains": [list(chain) for chain in self.chains]}, handle, indent=1)
            handle.write("\n")
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> SpanLabels:
        path = Path(folder) / LABELS_FILE
        try:
            document = json.loads(read_text(path, InputFormatError))
            chains = document["chains"]
            if not all(
                isinstance(c, list) and c and all(isinstance(x, str) and x for x in c) for c in chains
            ):
                raise TypeError
            return cls(tuple(chain) for chain in chains)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise InputFormatError(
                'expected {"chains": [[label, ...], ...]}: the chain labels of a span parser, each once',
                path=path,
            ) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpanLabels) and self.chains == other.chains

    def __repr__(self) -> str:
        return f"SpanLabels({len(self.chains)} chains)"


def tree_chains(tree: Tree) -> list[Chain]:
    """The chain label of every labelled node of ``tree``'s binary reading."""
    chains = []
    stack: list[Child] = [tree]
    while stack:
        node = stack.pop()
        if type(node) is str:
            continue
        chain, children = _chain(node)  # type: ignore[arg-type]
        chains.append(chain)
        stack.extend(children)
    return chains
