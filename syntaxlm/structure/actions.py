"""Trees as action sequences, and back.

A tree is generated top-down, left to right, by three kinds of action: open a constituent, emit a
word, close the most recent open constituent (TG paper §2, Figure 1). Two spellings are used:

- Choe–Charniak (TG, TXL (trees)): ``(S (NP the blue bird NP) (VP sings VP) S)``, a typed closer
  ``X)`` per constituent;
- RNNG (PLM, PLM-mask, SCLM): ``NT(S) NT(NP) the blue bird REDUCE NT(VP) sings REDUCE REDUCE``.

Trees are linearised as given: read them with Choe–Charniak cleaning (POS tags dropped) for the
models of the papers. Empty constituents are rejected (TG's masking mishandles them, and the
structural-guidance oracle skips such sentences). ``encode_actions`` spells an action sequence
with a vocabulary; with a subword vocabulary each word becomes one or more terminal pieces and the
encoding keeps the piece → word alignment needed to sum piece scores back to words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

import numpy as np

from syntaxlm.errors import ActionSequenceError, TreeError
from syntaxlm.text.base import SPECIAL_TOKENS, UNK, Vocabulary, VocabularyError
from syntaxlm.text.symbols import REDUCE, closing_nonterminal, open_action, opening_nonterminal
from syntaxlm.trees.tree import Tree

ActionStyle = Literal["choe-charniak", "rnng"]
ACTION_STYLES: tuple[ActionStyle, ...] = ("choe-charniak", "rnng")


class ActionKind(IntEnum):
    OPEN = 0
    WORD = 1
    CLOSE = 2


@dataclass(frozen=True, eq=False)
class Actions:
    """One tree as actions: ``tokens[i]`` spelled in ``style``, ``kinds[i]`` its ``ActionKind``."""

    tokens: tuple[str, ...]
    kinds: np.ndarray
    style: ActionStyle

    def __len__(self) -> int:
        return len(self.tokens)

    def __str__(self) -> str:
        return " ".join(self.tokens)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Actions):
            return NotImplemented
        return (
            self.style == other.style
            and self.tokens == other.tokens
            and np.array_equal(self.kinds, other.kinds)
        )

    @property
    def word_positions(self) -> np.ndarray:
        """The index of each word's action."""
        return np.flatnonzero(self.kinds == ActionKind.WORD)

    @property
    def words(self) -> list[str]:
        return [self.tokens[i] for i in self.word_positions]

    def to_tree(self, *, sentence: int | None = None) -> Tree:
        return actions_to_tree(self, sentence=sentence)


def tree_to_actions(tree: Tree, style: ActionStyle = "choe-charniak") -> Actions:
    """The actions that generate ``tree``; raises ``TreeError`` for an empty constituent."""
    _check_style(style)
    if style == "choe-charniak":
        opening, closing = opening_nonterminal, closing_nonterminal
    else:
        opening, closing = open_action, lambda label: REDUCE
    open_kind, word_kind, close_kind = int(ActionKind.OPEN), int(ActionKind.WORD), int(ActionKind.CLOSE)
    tokens: list[str] = []
    kinds: list[int] = []
    stack: list[Tree | str | tuple[str]] = [tree]
    while stack:
        node = stack.pop()
        if type(node) is str:
            tokens.append(node)
            kinds.append(word_kind)
        elif type(node) is tuple:  # a pending closer, (spelled closer,)
            tokens.append(node[0])
            kinds.append(close_kind)
        else:
            if not node.children:
                raise TreeError(
                    f"empty constituent ({node.label} ) after {kinds.count(word_kind)} words; "
                    "expected every constituent to contain at least one word"
                )
            tokens.append(opening(node.label))
            kinds.append(open_kind)
            stack.append((closing(node.label),))
            stack.extend(reversed(node.children))
    return Actions(tuple(tokens), np.array(kinds, dtype=np.int8), style)


def document_tree(trees: Sequence[Tree], label: str = "DOC") -> Tree:
    """A document as one tree whose children are its sentence trees (TG's document-level data):
    ``(DOC (S ...) (S ...) DOC)`` in Choe–Charniak actions."""
    if not trees:
        raise TreeError("a document needs at least one sentence tree")
    return Tree(label, list(trees))


def read_actions(
    tokens: Sequence[str] | str,
    style: ActionStyle = "choe-charniak",
    *,
    labels: Sequence[str] | None = None,
    sentence: int | None = None,
) -> Actions:
    """Classify spelled actions (a list, or one space-separated string) into an ``Actions``.

    A Choe–Charniak token ``(X`` opens and ``X)`` closes; an RNNG token ``NT(X)`` opens and
    ``REDUCE`` closes; anything else is a word. ``labels``, when given, restricts nonterminals to
    those labels, so that a word such as ``:)`` is not read as a closer.
    """
    _check_style(style)
    if isinstance(tokens, str):
        tokens = tokens.split()
    known = None if labels is None else frozenset(labels)

    def is_label(text: str) -> bool:
        return bool(text) and "(" not in text and ")" not in text and (known is None or text in known)

    kinds = np.full(len(tokens), ActionKind.WORD, dtype=np.int8)
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or not token:
            raise ActionSequenceError(f"{token!r} is not a non-empty string", action=i, sentence=sentence)
        if style == "choe-charniak":
            if token[0] == "(" and is_label(token[1:]):
                kinds[i] = ActionKind.OPEN
            elif token[-1] == ")" and is_label(token[:-1]):
                kinds[i] = ActionKind.CLOSE
        elif token == REDUCE:
            kinds[i] = ActionKind.CLOSE
        elif token.startswith("NT(") and token.endswith(")") and is_label(token[3:-1]):
            kinds[i] = ActionKind.OPEN
    return Actions(tuple(tokens), kinds, style)


def actions_to_tree(
    actions: Actions | Sequence[str] | str,
    style: ActionStyle = "choe-charniak",
    *,
    labels: Sequence[str] | None = None,
    sentence: int | None = None,
) -> Tree:
    """The tree an action sequence builds, after checking that it builds exactly one tree.

    Raises ``ActionSequenceError`` naming the offending action when the sequence is unbalanced, a
    Choe–Charniak closer's label differs from its opener's, a constituent is empty, a word or
    action falls outside the root constituent, or there is no action at all.
    """
    if not isinstance(actions, Actions):
        actions = read_actions(actions, style, labels=labels, sentence=sentence)
    tokens, kinds, style = actions.tokens, actions.kinds, actions.style
    if not tokens:
        raise ActionSequenceError(
            "no actions; expected at least one constituent with a word", sentence=sentence
        )
    # Each open constituent: [label, children, index of its opening action].
    open_stack: list[tuple[str, list, int]] = []
    root: Tree | None = None
    for i, (token, kind) in enumerate(zip(tokens, kinds.tolist())):
        if root is not None:
            raise ActionSequenceError(
                f"{token!r} comes after the root constituent closed; expected the end of the sequence",
                action=i,
                sentence=sentence,
            )
        if kind == ActionKind.OPEN:
            label = token[1:] if style == "choe-charniak" else token[3:-1]
            open_stack.append((label, [], i))
        elif not open_stack:
            what = "word" if kind == ActionKind.WORD else "closer"
            raise ActionSequenceError(
                f"{what} {token!r} outside any constituent; expected an opening nonterminal first",
                action=i,
                sentence=sentence,
            )
        elif kind == ActionKind.WORD:
            open_stack[-1][1].append(token)
        else:
            label, children, opened = open_stack.pop()
            if style == "choe-charniak" and token[:-1] != label:
                raise ActionSequenceError(
                    f"{token!r} closes ({label} opened at action {opened}; expected {closing_nonterminal(label)!r}",
                    action=i,
                    sentence=sentence,
                )
            if not children:
                raise ActionSequenceError(
                    f"{token!r} closes the empty constituent ({label} opened at action {opened}; "
                    "expected a word or constituent inside it",
                    action=i,
                    sentence=sentence,
                )
            node = Tree(label, children)
            if open_stack:
                open_stack[-1][1].append(node)
            else:
                root = node
    if open_stack:
        still_open = " ".join(opening_nonterminal(label) for label, _, _ in open_stack)
        raise ActionSequenceError(
            f"the sequence ends with {len(open_stack)} open constituent(s) {still_open}; expected them closed",
            action=len(tokens),
            sentence=sentence,
        )
    return root


@dataclass(frozen=True, eq=False)
class EncodedActions:
    """Actions spelled with a vocabulary: one entry per piece.

    With a word vocabulary every action is one piece; with a subword vocabulary a word becomes
    one or more pieces (all terminals) while nonterminal actions stay one symbol each.
    ``action_index[k]`` is the action piece ``k`` spells and ``word_index[k]`` the word it belongs
    to (−1 for nonterminal actions), so ``word_sums`` adds piece scores back up to words.
    """

    actions: Actions
    ids: np.ndarray
    kinds: np.ndarray
    action_index: np.ndarray
    word_index: np.ndarray
    pieces: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def n_words(self) -> int:
        return int(np.count_nonzero(self.actions.kinds == ActionKind.WORD))

    def word_sums(self, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """Per-word sums of per-piece ``values`` (values of nonterminal pieces are ignored)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != self.ids.shape:
            raise ValueError(f"expected {len(self.ids)} piece values, got shape {values.shape}")
        is_word = self.word_index >= 0
        return np.bincount(self.word_index[is_word], weights=values[is_word], minlength=self.n_words)


def atomic_words_as_unk(words: Sequence[str], vocab: Vocabulary) -> list[str]:
    """``words`` with every word spelled like a symbol or special token (the word ``REDUCE``,
    ``<s>``) replaced by ``<unk>``: a model must never read a word as a tree-building action."""
    atomic = set(vocab.symbols).union(SPECIAL_TOKENS)
    return [UNK if word in atomic else word for word in words]


def encode_actions(actions: Actions, vocab: Vocabulary) -> EncodedActions:
    """Spell ``actions`` with ``vocab``, whose symbols must include every nonterminal action.

    A word spelled like a symbol or special token (the word ``REDUCE``, or ``<s>``) is read as
    ``<unk>``: the model must never see a word as a tree-building action.
    """
    symbols = set(vocab.symbols)
    tokens = list(actions.tokens)
    is_word = actions.kinds == ActionKind.WORD
    word_positions = np.flatnonzero(is_word).tolist()
    for i, word in zip(
        word_positions, atomic_words_as_unk([tokens[i] for i in word_positions], vocab), strict=True
    ):
        tokens[i] = word
    for i in np.flatnonzero(actions.kinds != ActionKind.WORD).tolist():
        if tokens[i] not in symbols:
            token = tokens[i]
            raise VocabularyError(
                f"action {i} {token!r} is not a symbol of the vocabulary; build the vocabulary with the "
                f"{actions.style} nonterminal symbols of the treebank"
            )
    encoding = vocab.encode_words(tokens)
    action_index = np.asarray(encoding.word_index, dtype=np.int32)
    kinds = actions.kinds[action_index]
    word_of_action = np.cumsum(actions.kinds == ActionKind.WORD, dtype=np.int32) - 1
    word_index = np.where(kinds == ActionKind.WORD, word_of_action[action_index], -1).astype(np.int32)
    return EncodedActions(
        actions=actions,
        ids=np.asarray(encoding.ids, dtype=np.int32),
        kinds=kinds,
        action_index=action_index,
        word_index=word_index,
        pieces=encoding.pieces,
    )


def _check_style(style: str) -> None:
    if style not in ACTION_STYLES:
        raise ValueError(f"unknown action style {style!r}; expected one of {', '.join(ACTION_STYLES)}")
