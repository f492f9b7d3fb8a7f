"""What scoring sentences shares across models: eval mode, length batches, the sentence check and
the sum of piece log-probabilities into word log-probabilities.

``SyntacticLM.word_logprobs`` (``models.base``) is these pieces around a model's two hooks:
``scoring_items`` (what the network reads for each sentence: a ``ScoringItem``) and
``target_logprobs`` (the log-probabilities of a batch of items' targets).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from syntaxlm.data.batching import pad_rows
from syntaxlm.structure.actions import atomic_words_as_unk
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID, reject_string_sentence


@dataclass
class ScoringItem:
    """One sentence as a model scores it: ``inputs``, what its network reads (``<s>`` and the pieces,
    or the actions under a tree; their number orders the length batches); ``targets``, the token
    each input position predicts; ``group``, the word each target's log-probability counts toward
    (the sentence's length for ``</s>``, or for the actions after the last word); ``extra``, what
    else the network reads (PLM-mask's action kinds)."""

    inputs: Any
    targets: np.ndarray
    group: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)


def word_pieces(vocab, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Piece ids of ``words`` and the word of each piece (int32); a word spelled like a symbol or a
    special token (``REDUCE``, ``<s>``) is read as ``<unk>``."""
    encoding = vocab.encode_words(atomic_words_as_unk(list(words), vocab))
    return np.asarray(encoding.ids, dtype=np.int32), np.asarray(encoding.word_index, dtype=np.int32)


def sentence_item(ids: np.ndarray, word_index: np.ndarray, n_words: int) -> ScoringItem:
    """A sentence of pieces ``ids`` (``word_index``: the word of each) read as ``<s>`` + pieces →
    pieces + ``</s>``, ``</s>`` in slot ``n_words``."""
    return ScoringItem(
        np.concatenate(([BOS_ID], ids)), np.append(ids, EOS_ID), np.append(word_index, n_words)
    )


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode (dropout off, batch norm's running statistics) and without gradients
    while the block runs; its mode is restored after it. A model already in eval mode is left as it
    is (setting the mode walks every module: a cost per step of a decoder)."""
    was_training = model.training
    if was_training:
        model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        if was_training:
            model.train()


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of at most ``batch_size``, by increasing length (ties in index
    order)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def consecutive_batches(count: int, batch_size: int) -> list[list[int]]:
    """Indices ``0..count − 1`` in order, in batches of at most ``batch_size``."""
    return [list(range(first, min(first + batch_size, count))) for first in range(0, count, batch_size)]


def checked_sentences(sentences: Sequence[Sequence[str]], batch_size: int) -> list[list[str]]:
    """``sentences`` as lists of words; ``TypeError`` for a string where a sentence or the list of
    sentences should be, ``ValueError`` for an empty sentence, a word that is not a non-empty string
    or a ``batch_size`` below 1."""
    if isinstance(sentences, str):
        raise TypeError("sentences must be a sequence of sentences, each a sequence of words")
    sentences = list(sentences)
    for index, sentence in enumerate(sentences):
        reject_string_sentence(sentence, index)
        if len(sentence) == 0:
            raise ValueError(f"sentence {index} is empty; a sentence needs at least one word")
        for position, word in enumerate(sentence):
            if not isinstance(word, str) or not word:
                raise ValueError(
                    f"sentence {index}: word {position} is {word!r}; expected a non-empty string"
                )
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return [list(sentence) for sentence in sentences]


def reject_trees(name: str, trees: Any) -> None:
    """``ValueError`` when trees are given to a model ``name`` that reads words only."""
    if trees is not None:
        raise ValueError(f"{name} reads words only; do not give trees=")


def padded(rows: Sequence[np.ndarray], device: torch.device) -> Tensor:
    """Ragged rows of ids as one ``[B, longest]`` int64 tensor on ``device``, padded with ``PAD_ID``."""
    return torch.from_numpy(pad_rows(list(rows), PAD_ID)).to(device)


def picked_logprobs(logprobs: Tensor, items: Sequence[ScoringItem]) -> list[Tensor]:
    """``logprobs[b, t, targets[t]]`` of each item ``b`` of a batch, ``[B, T, V]`` natural logs, as
    float64 on the CPU, one tensor per item as long as its targets."""
    targets = padded([item.targets for item in items], logprobs.device)
    picked = logprobs.gather(-1, targets.long()[..., None])[..., 0].double().cpu()
    return [picked[row, : len(item.targets)] for row, item in enumerate(items)]


def word_sums(target_logprobs: Tensor, group: np.ndarray, n_words: int, *, eos: bool) -> Tensor:
    """Per word, the sum (float64) of its targets' log-probabilities (``group[t]``: the word of
    target ``t``); with ``eos``, one more entry: what ``group`` gives to slot ``n_words`` (``</s>``,
    or a joint model's actions after the last word)."""
    words = torch.zeros(n_words + 1, dtype=torch.float64)
    words.index_add_(0, torch.from_numpy(group).long(), target_logprobs.double())
    return words if eos else words[:-1]
