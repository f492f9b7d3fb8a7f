"""What a model offers to search and sampling: its action grammar and an incremental decoder.

Beam search, marginalisation, parsing and sampling (``syntaxlm.inference``) drive every model
through two objects, never through its class:

- ``ActionGrammar``: which vocabulary ids open a constituent (and its label), close one (TG's
  typed closers ``X)``, or RNNG's one ``REDUCE``), and which are words or word pieces. The search
  keeps the stack of open labels itself and masks what the grammar forbids (a closer with nothing
  open or of the wrong label, an empty constituent, a word outside the root, ...). Words-only
  models have no opening or closing ids.
- ``Decoder``: ``n`` hypotheses (prefixes) held by the model, with whatever it caches (keys and
  values per layer; TG's stack of positions). ``start(n)`` makes ``n`` empty prefixes (``<s>``
  only); ``logprobs()`` gives ``log p(next token | prefix)`` for each, ``[n, V]`` natural logs
  normalised over the whole vocabulary (the search renormalises over valid actions);
  ``advance(parents, tokens)`` replaces the hypotheses by new ones, hypothesis ``i`` being
  ``prefix[parents[i]] + tokens[i]`` (so one call both reorders/duplicates beams and extends
  them). A TG closer is one token here: the decoder runs its COMPOSE and STACK copies inside.
  A decoder with ``supports_keep = True`` also reads the token ``KEEP`` as "hypothesis ``i`` is
  ``prefix[parents[i]]`` unchanged", so that prefixes of different lengths grow side by side in
  one call (beam search's waiting states). Searches over trees need it; searches over words only
  never leave a prefix waiting and drive any decoder.

A decoder's results must equal the model's full forward pass on the same sequences
(``forward``), which is how decoders are tested.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from syntaxlm.models.scoring import evaluating
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID, UNK_ID

KEEP = -1
"""Token id that keeps a prefix unchanged in ``Decoder.advance`` (decoders with ``supports_keep``)."""


@dataclass(frozen=True)
class ActionGrammar:
    """The tree-building actions of a model's vocabulary (see the module docstring).

    ``open_label[id]``/``close_label[id]``: label of an opening/closing id; a closing id whose
    label is ``None`` closes whatever is open (RNNG ``REDUCE``). ``style`` is ``"choe-charniak"``
    (TG, TXL (trees)), ``"rnng"`` (PLM, PLM-mask) or ``"words"`` (words-only models).
    ``ends_with_eos``: the sequence ends with a predicted ``</s>`` (words-only models); otherwise
    it ends when the root constituent closes. ``symbol_ids``: every atomic symbol of the
    vocabulary, including those of the other action spelling (a TG vocabulary also holds
    ``NT(X)``/``REDUCE``); none of them is ever a word.
    """

    vocab_size: int
    open_label: dict[int, str]
    close_label: dict[int, str | None]
    style: str
    ends_with_eos: bool
    symbol_ids: frozenset[int] = frozenset()

    @property
    def word_mask(self) -> np.ndarray:
        """``[V]`` booleans: ids that are words or word pieces (not actions or special tokens)."""
        mask = np.ones(self.vocab_size, dtype=bool)
        mask[[PAD_ID, BOS_ID, EOS_ID]] = False
        mask[list(self.open_label)] = False
        mask[list(self.close_label)] = False
        mask[list(self.symbol_ids)] = False
        return mask

    @property
    def unk_id(self) -> int:
        return UNK_ID


def moving_first(kept: Tensor) -> tuple[Tensor, Tensor]:
    """For a step whose ``kept`` prefixes (``KEEP``) stay as they are, an order of the prefixes
    with the moving ones first, so that they make the network's batch: ``order[j]`` is the prefix
    held at row ``j``, and ``row[i]`` the row holding prefix ``i``."""
    order = torch.argsort(kept.int(), stable=True)
    row = torch.empty_like(order)
    row[order] = torch.arange(len(order), device=order.device)
    return order, row


def words_grammar(vocab) -> ActionGrammar:
    """The grammar of a words-only model over ``vocab``: no tree-building ids, ending with ``</s>``."""
    return ActionGrammar(len(vocab), {}, {}, style="words", ends_with_eos=True, symbol_ids=symbol_ids(vocab))


def symbol_ids(vocab) -> frozenset[int]:
    """The ids of every atomic symbol of a vocabulary (``ActionGrammar.symbol_ids``)."""
    return frozenset(vocab.index(symbol) for symbol in vocab.symbols)


class Decoder(ABC):
    """Incremental next-token log-probabilities for a batch of prefixes (module docstring).

    ``start``, ``logprobs``, ``logits`` and ``advance`` check their arguments (and that ``start``
    came first) here, and run a decoder's ``_start``, ``_logprobs``, ``_logits`` and ``_advance``
    with the model in eval mode and without gradients (``models.scoring.evaluating``). The hooks get
    their arguments checked: ``parents`` and ``tokens`` as 1-d long tensors of one length on the
    model's device, every parent one of the prefixes held, every token an id of the vocabulary (or
    ``KEEP``, for decoders with ``supports_keep``)."""

    model: Any  # the SyntacticLM decoded (its ``device`` and ``vocab``)
    supports_keep: bool = False
    started: bool = False

    def start(self, n: int) -> None:
        """Hold ``n`` prefixes that are ``<s>`` alone."""
        if n < 0:
            raise ValueError(f"the number of prefixes must be at least 0, got {n}")
        with evaluating(self.model):
            self._start(n)
        self.started = True

    @abstractmethod
    def _start(self, n: int) -> None:
        """``start`` for a checked ``n``."""

    def logprobs(self) -> Tensor:
        """``[n, V]`` natural-log probabilities of the next token after each prefix."""
        self._check_started("logprobs")
        with evaluating(self.model):
            return self._logprobs()

    @abstractmethod
    def _logprobs(self) -> Tensor:
        """``logprobs`` of a started decoder."""

    def logits(self, rows: Tensor | None = None) -> Tensor:
        """``[len(rows), V]`` scores of the next token after the prefixes ``rows`` (every prefix
        by default) whose log-softmax is ``logprobs()``. The beam search normalises these itself,
        over only what it needs; decoders with an output layer return that layer's logits, for the
        rows asked for only, and spare the search a pass over the vocabulary."""
        self._check_started("logits")
        with evaluating(self.model):
            return self._logits(rows)

    def _logits(self, rows: Tensor | None) -> Tensor:
        """``logits`` of a started decoder: by default ``_logprobs``' rows."""
        logprobs = self._logprobs()
        return logprobs if rows is None else logprobs[rows]

    def advance(self, parents: Tensor, tokens: Tensor) -> None:
        """New prefixes: ``prefix[parents[i]] + tokens[i]`` (1-d integer tensors of one length)."""
        self._check_started("advance")
        device = self.model.device
        parents = torch.as_tensor(parents, device=device)
        tokens = torch.as_tensor(tokens, device=device)
        if parents.ndim != 1 or tokens.shape != parents.shape:
            raise ValueError(
                "parents and tokens must be 1-d tensors of one length, got shapes "
                f"{tuple(parents.shape)} and {tuple(tokens.shape)}"
            )
        if len(parents) and (parents.is_floating_point() or tokens.is_floating_point()):
            raise TypeError("parents and tokens must be integer tensors")  # (torch.tensor([]) is float)
        parents, tokens = parents.long(), tokens.long()
        n, vocab_size = self.size, len(self.model.vocab)
        bad_parent = (parents < 0) | (parents >= n)
        bad_token = (tokens < (KEEP if self.supports_keep else 0)) | (tokens >= vocab_size)
        any_bad_parent, any_bad_token = torch.stack([bad_parent.any(), bad_token.any()]).tolist()
        if any_bad_parent:
            raise ValueError(f"parent {int(parents[bad_parent][0])} is not one of the {n} prefixes held")
        if any_bad_token:
            keep = ", or KEEP" if self.supports_keep else ""
            raise ValueError(
                f"token {int(tokens[bad_token][0])} is outside the vocabulary (0..{vocab_size - 1}{keep})"
            )
        with evaluating(self.model):
            self._advance(parents, tokens)

    @abstractmethod
    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        """``advance`` for checked arguments (class docstring)."""

    def _check_started(self, call: str) -> None:
        if not self.started:
            raise RuntimeError(f"call start(n) before {call}()")

    @property
    @abstractmethod
    def size(self) -> int:
        """How many prefixes are held."""
