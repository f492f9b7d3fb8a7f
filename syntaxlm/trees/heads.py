"""Constituency → dependency conversion with Collins-style head-percolation rules.

DMLM (§2.1) trains on dependency trees; the synthetic treebank and PTB-style files give
constituency trees. ``constituency_to_dependency(tree)`` finds the head child of every
constituent with the rules below (Collins 1999, Appendix A, as in the Stanford
``CollinsHeadFinder``), makes the head word of a constituent the head word of its head child, and
attaches the head word of every other child to it. The head word of the root is the sentence root
(head 0).

Readings made here, because the trees the trainer passes have no POS tags (words sit directly
under phrases, ``(NP the old dog)``):

- A child is a phrase (matched by its label), a preterminal (matched by its POS tag, when the tree
  has them) or a bare word. Bare words match the category ``WORD``, which stands in each rule
  at the place of the rule's first POS tag: ``(VP could (VP get ...))`` takes the word ``could`` as
  its head, as Collins' ``MD`` before ``VP`` does.
- Bare words that are punctuation (no letter or digit) or coordinating conjunctions (``and``,
  ``or``, ``but``, ``nor``, ``&``) never match ``WORD``, as ``CC`` and the punctuation tags are in
  no rule: ``(S (S ...) , but (S ...))`` is headed by its first ``S``. Preterminals tagged with
  punctuation tags or ``CC`` are treated the same way.
- ``ADJP``: Collins searches left to right for the adjective; without tags the degree adverb
  before it would be found first, so bare words are searched right to left (``(ADJP very free)``
  is headed by ``free``).
- ``NP`` follows Collins' special rule: a final possessive ``POS``; else the rightmost noun (tag
  or bare word); else the leftmost ``NP``; else the rightmost ``$ ADJP PRN``, then ``CD``, then
  ``JJ JJS RB QP``; else the last word.
- When no category of a rule matches, the first (rule direction left) or last (right) child
  that is not punctuation or a conjunction is the head, else the first child.
- Labels are compared without function tags or indices (``NP-SBJ-1`` is ``NP``); a label with no
  rule (``ROOT``, ``TOP``, unknown ones) takes its leftmost child that is not punctuation.

The relation of a dependent is the label of the child it heads (a phrase label, its POS tag, or
``word`` for a bare word); the root's relation is ``root``.
"""

from __future__ import annotations

import re
from typing import Literal

from syntaxlm.errors import TreeError
from syntaxlm.trees.dependency import DepTree
from syntaxlm.trees.tree import Child, Tree

WORD = "WORD"  # the category of a bare word (no POS tag) in the rules
COORDINATORS = frozenset({"and", "or", "but", "nor", "&"})
PUNCTUATION_TAGS = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "-NONE-", "#"})

Direction = Literal["left", "right"]
Rule = tuple[tuple[Direction, str], ...]

# label -> passes of (direction, categories in priority order, space-separated); "left" scans the
# children left to right for the first category, then for the next one, and so on.
HEAD_RULES: dict[str, Rule] = {
    "ADJP": (
        ("right", WORD),
        ("left", "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB"),
    ),
    "ADVP": (("right", f"RB {WORD} RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN"),),
    "CONJP": (("right", f"CC {WORD} RB IN"),),
    "FRAG": (("right", ""),),
    "INTJ": (("left", ""),),
    "LST": (("right", f"LS {WORD} :"),),
    "NAC": (("left", f"NN {WORD} NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW"),),
    "PP": (("right", f"IN {WORD} TO VBG VBN RP FW"),),
    "PRN": (("left", ""),),
    "PRT": (("right", f"RP {WORD}"),),
    "QP": (("left", f"$ {WORD} IN NNS NN JJ RB DT CD NCD QP JJR JJS"),),
    "RRC": (("right", "VP NP ADVP ADJP PP"),),
    "S": (("left", f"TO IN VP S SBAR ADJP UCP NP {WORD}"),),
    "SBAR": (("left", f"WHNP WHPP WHADVP WHADJP IN {WORD} DT S SQ SINV SBAR FRAG"),),
    "SBARQ": (("left", "SQ S SINV SBARQ FRAG"),),
    "SINV": (("left", f"VBZ {WORD} VBD VBP VB MD VP S SINV ADJP NP"),),
    "SQ": (("left", f"VBZ {WORD} VBD VBP VB MD VP SQ"),),
    "UCP": (("right", ""),),
    "VP": (("left", f"TO {WORD} VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP"),),
    "WHADJP": (("left", f"CC WRB {WORD} JJ ADJP"),),
    "WHADVP": (("right", f"CC WRB {WORD}"),),
    "WHNP": (("left", f"WDT {WORD} WP WP$ WHADJP WHPP WHNP"),),
    "WHPP": (("right", f"IN {WORD} TO FW"),),
    "X": (("right", ""),),
    # Collins' special NP rule, as passes (see the module docstring).
    "NP": (
        ("right", f"NN NNP NNPS NNS NX POS JJR {WORD}"),
        ("left", "NP"),
        ("right", "$ ADJP PRN"),
        ("right", "CD"),
        ("right", "JJ JJS RB QP"),
    ),
    "NX": (("right", f"NN NNP NNPS NNS NX POS JJR {WORD}"), ("left", "NX NP")),
}

_FUNCTION_TAG = re.compile(r"^([^-=]+|-[A-Z]+-)[-=].*$")


def base_label(label: str) -> str:
    """``NP-SBJ-1`` → ``NP``; ``-NONE-`` and ``-LRB-`` stay whole."""
    match = _FUNCTION_TAG.match(label)
    return match.group(1) if match else label


def _category(child: Child) -> str:
    """The label a rule matches a child by: its phrase label, its POS tag, or ``WORD``."""
    if type(child) is str:
        return WORD if not _is_filler(child) else ""
    if child.is_preterminal:
        tag = base_label(child.label)
        return "" if tag in PUNCTUATION_TAGS or tag == "CC" else tag
    return base_label(child.label)


def _is_filler(word: str) -> bool:
    """Punctuation or a coordinating conjunction: never a head while anything else is there."""
    return word.lower() in COORDINATORS or not any(ch.isalnum() for ch in word)


def head_child(label: str, children: tuple[Child, ...] | list[Child]) -> int:
    """The index of the head child of a constituent ``label`` with ``children`` (module docstring)."""
    if not children:
        raise TreeError(f"constituent ({label}) has no children: it has no head")
    categories = [_category(child) for child in children]
    rule = HEAD_RULES.get(base_label(label))
    if base_label(label) == "NP" and categories[-1] == "POS":
        return len(children) - 1
    if rule is None:
        rule = (("left", ""),)
    for direction, wanted in rule:
        order = range(len(children)) if direction == "left" else range(len(children) - 1, -1, -1)
        for category in wanted.split():
            for i in order:
                if categories[i] == category:
                    return i
    direction = rule[0][0] if base_label(label) != "NP" else "right"
    order = range(len(children)) if direction == "left" else range(len(children) - 1, -1, -1)
    for i in order:
        if categories[i]:
            return i
    return 0


def constituency_to_dependency(tree: Tree) -> DepTree:
    """The dependency tree of ``tree``'s words by head percolation (module docstring).

    POS-tagged trees (preterminals) and trees without tags both work; a preterminal counts as
    its word. Raises ``TreeError`` for a constituent without children."""
    if not isinstance(tree, Tree):
        raise TypeError(f"expected a Tree, got {type(tree).__name__}")
    # Pre-order, children left to right: words are numbered 1..n in sentence order, and every
    # node is listed after its parent; the node's children are words (their numbers) or nodes.
    words: list[str] = []
    nodes: list[Tree] = []
    items: dict[int, list[int | Tree]] = {}
    stack: list[tuple[Child, int | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if type(node) is str or node.is_preterminal:
            words.append(node if type(node) is str else node.children[0])
            if parent is None:  # a tree that is one word
                return DepTree(words=(words[0],), heads=(0,), relations=("root",))
            items[parent].append(len(words))
            continue
        if not node.children:
            raise TreeError(f"constituent ({node.label}) has no children: it has no head")
        if parent is not None:
            items[parent].append(node)
        nodes.append(node)
        items[id(node)] = []
        stack.extend((child, id(node)) for child in reversed(node.children))
    heads = [0] * len(words)
    relations = ["root"] * len(words)
    head_word: dict[int, int] = {}
    for node in reversed(nodes):  # children before parents
        children = items[id(node)]
        numbers = [item if isinstance(item, int) else head_word[id(item)] for item in children]
        chosen = head_child(node.label, node.children)
        head = numbers[chosen]
        for k, (child, number) in enumerate(zip(node.children, numbers)):
            if k != chosen:
                heads[number - 1] = head
                relations[number - 1] = "word" if type(child) is str else base_label(child.label)
        head_word[id(node)] = head
    return DepTree(words=tuple(words), heads=tuple(heads), relations=tuple(relations))
