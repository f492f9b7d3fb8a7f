"""Sentences of words as a model reads them and as inference scores them.

``encode_sentence`` turns a sentence of words into the model's word pieces (``EncodedSentence``)
and ``unknown_words`` says which words the vocabulary reads as unknown;
``piece_batches`` groups encoded sentences into batches of similar length, ``prefix_batches`` into
batches of sentences that begin alike; every method of
``inference`` (beam search, exact scoring, gold and proposal trees) reports a sentence as
``SentenceScores``; ``build_tree`` makes the tree a complete action sequence builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from syntaxlm.inference.grammar import CLOSE, OPEN, WORD, ActionSpace, InferenceError
from syntaxlm.models.scoring import length_batches
from syntaxlm.structure.actions import atomic_words_as_unk
from syntaxlm.text.base import UNK
from syntaxlm.trees.tree import Tree


@dataclass
class SentenceScores:
    """One sentence's natural-log probabilities as one method estimated them.

    ``pieces`` are the model's tokens of the words (the words themselves for a word vocabulary)
    and ``piece_word[k]`` the word of piece ``k``. ``piece_logprobs[k]`` estimates
    ``log p(piece_k | pieces_<k)``, structure marginalised (or, for a given tree, included: the
    actions before a piece count toward it). ``end_logprob`` is that of what completes the
    sentence after its last piece: the closing actions and ``</s>``. ``tree`` is the method's
    tree (the beam's best parse, the best proposal, the gold tree) and ``tree_logprob`` its
    ``log p(x, tree)``; ``details`` says how the numbers were obtained.
    """

    words: tuple[str, ...]
    pieces: tuple[str, ...]
    piece_word: np.ndarray
    piece_logprobs: np.ndarray
    end_logprob: float
    method: str
    tree: Tree | None = None
    tree_logprob: float = float("nan")
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def word_logprobs(self) -> np.ndarray:
        """``log p(word | words before)``: the sum over each word's pieces."""
        return np.bincount(self.piece_word, weights=self.piece_logprobs, minlength=len(self.words))

    @property
    def prefix_logprob(self) -> float:
        """``log p(words)`` as a prefix (the sentence may go on)."""
        return float(self.piece_logprobs.sum())

    @property
    def logprob(self) -> float:
        """``log p(words)`` as a complete sentence."""
        return self.prefix_logprob + self.end_logprob


@dataclass(frozen=True)
class EncodedSentence:
    """A sentence as the model's word pieces."""

    words: tuple[str, ...]
    ids: np.ndarray
    pieces: tuple[str, ...]
    piece_word: np.ndarray

    @property
    def word_starts(self) -> np.ndarray:
        previous = np.concatenate([[-1], self.piece_word[:-1]])
        return self.piece_word != previous


def encode_sentence(vocab, words: Sequence[str], index: int = 0) -> EncodedSentence:
    """``words`` as the vocabulary's pieces; a word spelled like a symbol or special token is
    read as ``<unk>`` (as the models read it)."""
    if isinstance(words, str):
        raise TypeError(
            f"sentence {index} is a string; give each sentence as a sequence of words (line.split())"
        )
    words = tuple(words)
    if not words:
        raise InferenceError(f"sentence {index} is empty; expected at least one word")
    encoding = vocab.encode_words(atomic_words_as_unk(words, vocab))
    return EncodedSentence(
        words=words,
        ids=np.asarray(encoding.ids, dtype=np.int64),
        pieces=tuple(encoding.pieces),
        piece_word=np.asarray(encoding.word_index, dtype=np.int64),
    )


def unknown_words(vocab, words: Sequence[str]) -> list[bool]:
    """Per word, whether the vocabulary reads it (or a piece of it) as unknown: ``<unk>`` or a
    Berkeley unknown-word class (``company's`` → ``UNK-LC-s``). Such a word is scored as its class:
    its probability is the class's, shared by every word the vocabulary reads so."""
    unknown = {UNK, *getattr(vocab, "unk_classes", ())}
    encoded = encode_sentence(vocab, words)
    flags = [False] * len(words)
    for piece, word in zip(encoded.pieces, encoded.piece_word):
        if piece in unknown:
            flags[int(word)] = True
    return flags


def build_tree(
    space: ActionSpace,
    ids: Sequence[int],
    *,
    words: Sequence[str] | None = None,
    piece_word: np.ndarray | None = None,
    vocab=None,
) -> Tree:
    """The tree a complete action sequence builds. Word pieces become ``words`` (through
    ``piece_word``) when given, else the vocabulary's decoding of each run of pieces."""
    stack: list[tuple[str, list]] = []
    root: Tree | None = None
    run: list[int] = []
    piece = 0
    last_word = -1

    def flush() -> None:
        if run:
            stack[-1][1].extend(vocab.decode(run))
            run.clear()

    for id in ids:
        kind = space.kind[id]
        if kind == OPEN:
            flush()
            stack.append((space.labels[space.label_of[id]], []))
        elif kind == CLOSE:
            flush()
            label, children = stack.pop()
            node = Tree(label, children)
            if stack:
                stack[-1][1].append(node)
            else:
                root = node
        elif kind == WORD:
            if words is not None and piece_word is not None:
                word = int(piece_word[piece])
                if word != last_word:
                    stack[-1][1].append(words[word])
                    last_word = word
            else:
                run.append(int(id))
            piece += 1
    if root is None or stack:
        raise InferenceError("the action sequence does not build one complete tree")
    return root


def piece_batches(sentences: Sequence[EncodedSentence], batch_size: int) -> list[list[int]]:
    """Indices of ``sentences`` in batches of at most ``batch_size``, by increasing number of pieces."""
    if batch_size < 1:
        raise InferenceError(f"batch_size must be at least 1, got {batch_size}")
    return length_batches([len(sentence.ids) for sentence in sentences], batch_size)


def prefix_batches(sentences: Sequence[EncodedSentence], batch_size: int) -> list[list[int]]:
    """Indices of ``sentences`` in batches of at most ``batch_size``, in the order of their pieces
    (as in a dictionary): sentences that begin alike are searched together, and a search that
    shares prefixes (``beam.search_pieces``) searches each common prefix once."""
    if batch_size < 1:
        raise InferenceError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(sentences)), key=lambda i: (list(sentences[i].ids), i))
    return [order[first : first + batch_size] for first in range(0, len(order), batch_size)]


def searched_words(sentences: Sequence[Sequence[str]], batch_size: int) -> int:
    """About how many words a beam search of ``sentences`` searches, ``batch_size`` at a time in
    the order of ``prefix_batches`` (here of their words): a prefix common to sentences of a batch
    counts once. A time estimate's measure of work: SyntaxGym's conditions share their first
    regions, and about a third of a suite's words are searched once for several sentences."""
    order = sorted(map(list, sentences))
    searched = 0
    for first in range(0, len(order), max(batch_size, 1)):
        batch = order[first : first + batch_size]
        searched += sum(map(len, batch)) - sum(map(common_prefix, batch, batch[1:]))
    return searched


def common_prefix(a: Sequence, b: Sequence) -> int:
    """How many items ``a`` and ``b`` share from their start."""
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
