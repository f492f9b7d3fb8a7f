"""Structure-destroying tree transforms: the ablations of Transformer Grammars §4.1.1.

Each keeps the words and the multiset of nonterminal labels but gives the sentence a structure
that is not its syntax. They are meant for POS-less (Choe–Charniak) trees, as in the paper; on a
tree with POS tags every preterminal counts as a nonterminal.

The paper's example, ``(S (NP the blue bird NP) (VP sings VP) S)``, becomes

- left-branching: ``(S (NP (VP the blue VP) bird NP) sings S)``: the opening nonterminals move to
  the front in their original order; after the first two words, each word is followed by the next
  closing nonterminal, innermost first.
- right-branching: ``(S the (NP blue (VP bird sings VP) NP) S)``: its mirror image.
- reversed: ``(S (VP the VP) (NP blue bird sings NP) S)``: the children of every node in reverse
  order, with the words put back in their original order.

The paper does not say what happens when the number of nonterminals n differs from the number of
words m minus one (a binary tree over m words has m − 1 nodes). We read the rule literally: the
j-th closing nonterminal (j = 1..n−1, innermost first) goes after word min(j + 1, m) and the root
closes after the last word. With fewer nonterminals the remaining words sit flat under the root;
with more, the surplus closes after the last word (a unary chain at the top). Right-branching is
the exact mirror.

``TRANSFORMS`` names these and binarisation's (``syntaxlm data transform --kind``).
"""

from __future__ import annotations

from collections.abc import Callable

from syntaxlm.trees import binarize
from syntaxlm.trees.tree import Tree


def _labels_in_opening_order(tree: Tree) -> list[str]:
    return [node.label for node in tree.subtrees()]


def _build(events: list[tuple[str, str]]) -> Tree:
    """Tree from ``("open", label)``, ``("word", word)``, ``("close", "")`` events."""
    stack: list[tuple[str, list]] = []
    root: Tree | None = None
    for kind, value in events:
        if kind == "open":
            stack.append((value, []))
        elif kind == "word":
            stack[-1][1].append(value)
        else:
            label, children = stack.pop()
            node = Tree(label, children)
            if stack:
                stack[-1][1].append(node)
            else:
                root = node
    assert root is not None and not stack
    return root


def left_branching(tree: Tree) -> Tree:
    """Same words and labels, left-branching structure (TG §4.1.1)."""
    labels = _labels_in_opening_order(tree)
    words = tree.leaves()
    n, m = len(labels), len(words)
    closers_after = [0] * (m + 1)  # closers_after[k]: closers right after word k (1-based)
    for j in range(1, n):  # j-th closer, innermost first; the root's closer is the n-th
        closers_after[min(j + 1, m)] += 1
    closers_after[m] += 1
    events = [("open", label) for label in labels]
    for k, word in enumerate(words, 1):
        events.append(("word", word))
        events.extend(("close", "") for _ in range(closers_after[k]))
    return _build(events)


def right_branching(tree: Tree) -> Tree:
    """Same words and labels, right-branching structure: the mirror of ``left_branching``."""
    labels = _labels_in_opening_order(tree)
    words = tree.leaves()
    n, m = len(labels), len(words)
    openers_before = [[] for _ in range(m + 1)]  # labels opening right before word k (1-based)
    openers_before[1].append(labels[0])
    for k in range(1, n):  # label k opens before word max(m - n + k, 1), outermost first
        openers_before[max(m - n + k, 1)].append(labels[k])
    events: list[tuple[str, str]] = []
    for k, word in enumerate(words, 1):
        events.extend(("open", label) for label in openers_before[k])
        events.append(("word", word))
    events.extend(("close", "") for _ in labels)
    return _build(events)


def reversed_tree(tree: Tree) -> Tree:
    """Children of every node in reverse order, words kept in their original order (TG §4.1.1)."""
    mirrored = tree.rebuild(lambda label, children: Tree(label, children[::-1]))
    return mirrored.with_leaves(tree.leaves())


TRANSFORMS: dict[str, Callable[[Tree], Tree]] = {
    "left-branching": left_branching,
    "right-branching": right_branching,
    "reversed": reversed_tree,
    "binarize-left": lambda tree: binarize.binarize(tree, "left"),
    "binarize-right": lambda tree: binarize.binarize(tree, "right"),
    "unbinarize": binarize.unbinarize,
}
"""Every tree transform by name: the ablations above and binarisation (``trees.binarize``)."""
