"""Treebank cleaning as the papers do it: one named function per step, and ``Cleaning``, which
applies any set of steps in one bottom-up pass (the reader applies it while it builds each tree).

The steps, all defined on Penn Treebank trees (words under POS tags):

- ``remove_empty_elements``: delete ``-NONE-`` preterminals (traces, null complementisers) and
  every node they leave without children.
- ``strip_function_tags``: ``NP-SBJ-1`` → ``NP``, ``NP=2`` → ``NP``; labels that start with ``-``
  (``-LRB-``, ``-RRB-``, ``-NONE-``) or ``=`` are kept whole.
- ``remove_punctuation``: delete preterminals whose tag is punctuation (by default the tags EVALB's
  COLLINS.prm deletes: ``, : `` '' .``) and nodes left empty.
- ``collapse_unary_chains``: merge a phrase with its only phrasal child, joining labels with
  ``+`` (``(S (VP ...))`` → ``(S+VP ...)``); preterminals and the root are never merged.
- ``drop_pos_tags``: replace every preterminal by its word (the Choe–Charniak view of TG/PLM).
- ``strip_root``: remove a ``ROOT``/``TOP`` wrapper with a single child.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from syntaxlm.errors import TreeError
from syntaxlm.trees.tree import Child, Tree

EMPTY_ELEMENT_TAG = "-NONE-"
ROOT_LABELS = frozenset({"ROOT", "TOP"})
COLLINS_PUNCTUATION_TAGS = frozenset({",", ":", "``", "''", "."})
"""POS tags that EVALB's COLLINS.prm deletes (besides -NONE-), with their words."""


def strip_function_tag(label: str) -> str:
    """``NP-SBJ-1`` → ``NP``; ``NP=2`` → ``NP``; ``-LRB-``, ``-NONE-`` and ``=X`` unchanged (a label
    is never cut down to nothing)."""
    if not label or label[0] in "-=":
        return label
    for i, char in enumerate(label):
        if char == "-" or char == "=":
            return label[:i]
    return label


@dataclass(frozen=True)
class Cleaning:
    """A set of cleaning steps applied in one bottom-up pass; see the module docstring.

    Use it on a tree (``Cleaning(...)(tree)``, ``None`` if nothing is left) or give it to the
    reader (``read_trees(path, cleaning=...)``), which applies it while building each tree.
    """

    remove_empty_elements: bool = False
    strip_function_tags: bool = False
    strip_root: bool = False
    remove_punctuation: bool = False
    punctuation_tags: frozenset[str] = COLLINS_PUNCTUATION_TAGS
    collapse_unary_chains: bool = False
    unary_join: str = "+"
    drop_pos_tags: bool = False
    _labels: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def is_identity(self) -> bool:
        return not (
            self.remove_empty_elements
            or self.strip_function_tags
            or self.strip_root
            or self.remove_punctuation
            or self.collapse_unary_chains
            or self.drop_pos_tags
        )

    def _label(self, label: str) -> str:
        if not self.strip_function_tags:
            return label
        cleaned = self._labels.get(label)
        if cleaned is None:
            cleaned = self._labels[label] = strip_function_tag(label)
        return cleaned

    def preterminal(self, tag: str, word: str) -> Tree | str | None:
        """The cleaned form of ``(tag word)``: a preterminal, a bare word, or None (deleted)."""
        if self.remove_empty_elements and tag == EMPTY_ELEMENT_TAG:
            return None
        if self.remove_punctuation and tag in self.punctuation_tags:
            return None
        if self.drop_pos_tags:
            return word
        return Tree(self._label(tag), (word,))

    def phrase(self, label: str, children: list[Child], at_root: bool) -> Tree | None:
        """The cleaned form of a phrase whose children are already cleaned (None = deleted)."""
        if not children:
            return None  # every child was removed
        if at_root and self.strip_root and label in ROOT_LABELS and len(children) == 1:
            only = children[0]
            if type(only) is not str:
                return only
        label = self._label(label)
        if self.collapse_unary_chains and not at_root and len(children) == 1:
            only = children[0]
            if type(only) is not str and (self.drop_pos_tags or not only.is_preterminal):
                return Tree(label + self.unary_join + only.label, only.children)
        return Tree(label, children)

    def __call__(self, tree: Tree) -> Tree | None:
        """Apply the steps to a tree read without cleaning; None if no word is left."""
        results: list[list] = [[]]
        stack: list[tuple[bool, Child]] = [(False, tree)]
        while stack:
            finished, node = stack.pop()
            if finished:
                kids = [k for k in results.pop() if k is not None]
                results[-1].append(self.phrase(node.label, kids, at_root=node is tree))
            elif node.is_preterminal:
                results[-1].append(self.preterminal(node.label, node.children[0]))
            else:
                stack.append((True, node))
                results.append([])
                for child in reversed(node.children):
                    if type(child) is str:
                        raise TreeError(
                            f"cleaning needs POS-tagged trees: word {child!r} sits directly "
                            f"under ({node.label} ...)"
                        )
                    stack.append((False, child))
        return results[0][0]


PTB_CLEANING = Cleaning(remove_empty_elements=True, strip_function_tags=True)
"""Traces and function tags removed; POS tags, punctuation and roots kept."""

CHOE_CHARNIAK_CLEANING = Cleaning(
    remove_empty_elements=True, strip_function_tags=True, strip_root=True, drop_pos_tags=True
)
"""The TG/PLM input view: no traces, no function tags, no ROOT wrapper, no POS tags."""

CLEANING_STYLES = {"ptb": PTB_CLEANING, "choe-charniak": CHOE_CHARNIAK_CLEANING, "none": Cleaning()}
"""The cleanings by name (``syntaxlm data clean --style``)."""


def _apply(tree: Tree, cleaning: Cleaning, step: str) -> Tree:
    cleaned = cleaning(tree)
    if cleaned is None:
        raise TreeError(f"{step} left no words in the tree {tree.to_bracket()[:80]!r}")
    return cleaned


def remove_empty_elements(tree: Tree) -> Tree:
    """Delete ``-NONE-`` elements and the nodes they empty."""
    return _apply(tree, Cleaning(remove_empty_elements=True), "removing empty elements")


def strip_function_tags(tree: Tree) -> Tree:
    """``NP-SBJ-1`` → ``NP`` on every node (``-LRB-``, ``-NONE-`` kept)."""
    return _apply(tree, Cleaning(strip_function_tags=True), "stripping function tags")


def remove_punctuation(tree: Tree, tags: frozenset[str] = COLLINS_PUNCTUATION_TAGS) -> Tree:
    """Delete punctuation preterminals (by POS tag) and the nodes they empty."""
    return _apply(
        tree, Cleaning(remove_punctuation=True, punctuation_tags=frozenset(tags)), "removing punctuation"
    )


def collapse_unary_chains(tree: Tree, join: str = "+") -> Tree:
    """Merge each phrase with its only phrasal child: ``(S (VP ...))`` → ``(S+VP ...)``."""
    return _apply(tree, Cleaning(collapse_unary_chains=True, unary_join=join), "collapsing unaries")


def drop_pos_tags(tree: Tree) -> Tree:
    """Replace each preterminal by its word: ``(NP (DT the) (NN bird))`` → ``(NP the bird)``."""
    return _apply(tree, Cleaning(drop_pos_tags=True), "dropping POS tags")


def strip_root(tree: Tree) -> Tree:
    """Remove a ``ROOT``/``TOP`` wrapper that has a single child."""
    return _apply(tree, Cleaning(strip_root=True), "stripping the root")
