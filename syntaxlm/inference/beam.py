"""Word-synchronous beam search: surprisals and incremental parses of joint models of words and trees.

A joint model (TG, TXL (trees), PLM, PLM-mask) scores a word *and* a tree, ``p(x, y)``; the
probability of a word given its prefix needs ``p(x_≤k) = Σ_y p(x_≤k, y_≤k)`` over the partial trees
of the prefix. The word-synchronous beam search of Stern et al. (2017), as used by the structural
guidance paper (§3.2) and its authors' code, approximates that sum with a beam of partial parses
that advances one word piece at a time. For piece ``k``:

1. ``next`` starts empty; the *current* states are the word beam left by piece ``k − 1``;
2. every current state is expanded by every valid action: an opening nonterminal, the closer
   that fits, or generating piece ``k`` (the only word action: the sentence fixes it); the
   candidates are sorted by their cumulative log-probability;
3. of the best ``action_beam`` candidates, those that generated piece ``k`` go to ``next`` and
   the others become the current states; below the cut at most ``fast_track`` piece-generating
   candidates also go to ``next``;
4. 2–3 repeat while ``next`` holds fewer than ``action_beam`` states (and current states remain);
5. the best ``word_beam`` states of ``next`` are the word beam; ``log p(x_≤k)`` is estimated by the
   logsumexp of their scores. A piece's surprisal is the difference of successive estimates, a
   word's the sum over its pieces.

After the last piece every state of the word beam closes its open constituents (and emits
``</s>`` where the grammar ends with it); the best complete tree is the incremental parse and the
logsumexp of the complete scores estimates ``log p(x)``.

Departures from the authors' code, each fixing one of its bugs (REFERENCE_NOTES):

- **normalisation**: a model's next-token distribution covers its whole vocabulary, including
  actions that cannot follow the prefix (a closer with nothing open or of the wrong label, a
  closer right after an opener, a word outside the root, anything after the root has closed,
  ``<s>``). With ``renormalise=True`` (the default) the distribution is renormalised over the
  actions the *grammar* allows, so that ``p(x, y)`` sums to one over well-formed trees within the
  bounds below. The sentence itself is not part of that normaliser: the probability of piece
  ``k`` is taken against every word the grammar allows there, not against piece ``k`` alone (the
  authors' intended mask, which would make every word certain). Depth (``max_open``) and runs of
  openers (``max_openers``) are bounded, and the bounds belong to the grammar too.
- **termination**: when the current states run out before ``next`` is full the piece ends with
  what ``next`` holds, and ``exhausted_pieces`` counts it (a search that explored every
  continuation within the bounds is exact). If no state can generate a piece (the model gives it
  probability zero) the best current states are forced to generate it at a floor log-probability
  (``FORCED_LOGPROB``) and ``forced_pieces`` counts it.
- **no re-encoding**: hypotheses live in the model's incremental ``Decoder``; every expansion round
  of every sentence of a batch is one ``logits`` and one ``advance`` call.

A waiting state (in ``next`` while other states are expanded) must stay unchanged while others
grow, so the search needs a decoder that keeps prefixes of different lengths side by side:
decoders that set ``supports_keep = True`` read the token id ``KEEP`` (−1) in ``advance`` as "keep
``prefix[parents[i]]`` unchanged". Decoders without it are driven by re-feeding each new prefix
from ``<s>`` (correct, as slow as the authors' code).

Words-only models (grammar style ``"words"``) have one derivation per sentence: the search is
exact scoring with the model's own distribution (no renormalisation), one hypothesis per sentence.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from syntaxlm.errors import SyntaxlmError
from syntaxlm.models.decoding import KEEP, ActionGrammar, Decoder
from syntaxlm.structure.actions import atomic_words_as_unk
from syntaxlm.text.base import EOS_ID
from syntaxlm.trees.tree import Tree


class InferenceError(SyntaxlmError, ValueError):
    """Inference asked of a model or with settings that cannot do it (a method the model has no use
    for, missing trees, bad beam sizes, a bad sentence)."""


FORCED_LOGPROB = -1000.0
"""Log-probability (nats) given to a piece no state of the beam can generate."""

# Token kinds, indexed by vocabulary id (``ActionSpace.kind``).
WORD, OPEN, CLOSE, END, SPECIAL = 0, 1, 2, 3, 4

# Roles of a held hypothesis in the search.
CURRENT, NEXT, FINISH = 0, 1, 2


@dataclass(frozen=True)
class BeamSettings:
    """Sizes and bounds of the search (the paper's 100 / 10 / 5 by default).

    ``max_open``: constituents open at once (the authors' ``max_open_nt`` is 50);
    ``max_openers``: opening actions in a row (a unary chain of that many nodes);
    ``renormalise``: renormalise over the grammar's valid actions (module docstring).
    """

    action_beam: int = 100
    word_beam: int = 10
    fast_track: int = 5
    max_open: int = 50
    max_openers: int = 8
    renormalise: bool = True

    def __post_init__(self):
        for name in ("action_beam", "word_beam", "max_open", "max_openers"):
            if getattr(self, name) < 1:
                raise InferenceError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.fast_track < 0:
            raise InferenceError(f"fast_track must be at least 0, got {self.fast_track}")


PAPER_BEAM = BeamSettings()
"""Action beam 100, word beam 10, fast track 5: the structural-guidance paper's settings."""


# --- the grammar as arrays ------------------------------------------------------------------------


class ActionSpace:
    """An ``ActionGrammar`` as arrays, with the rules that say which actions may follow a prefix.

    Labels are numbered; ``typed_close[label]`` is the id closing that label (−1 if none) and
    ``reduce_id`` the untyped closer (−1 if none). ``kind[id]`` is one of WORD, OPEN, CLOSE, END
    (``</s>``) and SPECIAL (``<pad>``, ``<s>``, ``</s>`` where the grammar has no end symbol).
    """

    def __init__(self, grammar: ActionGrammar, *, max_open: int = 50, max_openers: int = 8):
        self.grammar = grammar
        self.tree = grammar.style != "words"
        self.ends_with_eos = grammar.ends_with_eos
        self.max_open = max_open
        self.max_openers = max_openers
        if self.tree and (not grammar.open_label or not grammar.close_label):
            raise InferenceError(f"a {grammar.style} grammar needs opening and closing ids")
        if not self.tree and (grammar.open_label or grammar.close_label):
            raise InferenceError("a words-only grammar has no opening or closing ids")
        if not self.tree and not self.ends_with_eos:
            raise InferenceError("a words-only grammar must end with </s>")
        closing = {label for label in grammar.close_label.values() if label is not None}
        self.labels = tuple(sorted(set(grammar.open_label.values()) | closing))
        index = {label: i for i, label in enumerate(self.labels)}
        self.open_ids = np.array(sorted(grammar.open_label), dtype=np.int64)
        self.open_labels = np.array([index[grammar.open_label[i]] for i in self.open_ids], dtype=np.int64)
        self.typed_close = np.full(max(len(self.labels), 1), -1, dtype=np.int64)
        self.reduce_id = -1
        for id, label in grammar.close_label.items():
            if label is None:
                self.reduce_id = id
            else:
                self.typed_close[index[label]] = id
        V = grammar.vocab_size
        self.word_mask = np.asarray(grammar.word_mask, dtype=bool)
        self.kind = np.full(V, SPECIAL, dtype=np.int8)
        self.kind[self.word_mask] = WORD
        self.kind[self.open_ids] = OPEN
        self.kind[list(grammar.close_label)] = CLOSE
        if self.ends_with_eos:
            self.kind[EOS_ID] = END
        self.label_of = np.full(V, -1, dtype=np.int64)
        self.label_of[self.open_ids] = self.open_labels
        # The word ids as runs [start, stop) of consecutive ids.
        edges = np.flatnonzero(np.diff(np.concatenate([[False], self.word_mask, [False]]).astype(np.int8)))
        self.word_runs = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]
        self._word_mask_t: dict[torch.device, Tensor] = {}
        self._word_bias_t: dict[tuple, Tensor] = {}

    @property
    def vocab_size(self) -> int:
        return self.grammar.vocab_size

    def word_mask_on(self, device: torch.device) -> Tensor:
        if device not in self._word_mask_t:
            self._word_mask_t[device] = torch.from_numpy(self.word_mask).to(device)
        return self._word_mask_t[device]

    def word_bias_on(self, device: torch.device, dtype: torch.dtype) -> Tensor:
        """``[V]``: 0 at word ids, −inf elsewhere."""
        key = (device, dtype)
        if key not in self._word_bias_t:
            bias = torch.zeros(self.vocab_size, dtype=dtype, device=device)
            self._word_bias_t[key] = bias.masked_fill(~self.word_mask_on(device), -torch.inf)
        return self._word_bias_t[key]

    def allowed(self, states: ParserStates, stacks: Nodes) -> Allowed:
        """What the grammar allows after each prefix (see ``Allowed``)."""
        n = len(states)
        depth = states.depth
        tree = self.tree
        opens = np.zeros(n, dtype=bool)
        close_id = np.full(n, -1, dtype=np.int64)
        if tree:
            opens = ~states.closed & (depth < self.max_open) & (states.openers < self.max_openers)
            labels = stacks.column(1)
            top_label = np.full(n, -1, dtype=np.int64)
            inside = states.top >= 0
            top_label[inside] = labels[states.top[inside]]
            typed = np.where(top_label >= 0, self.typed_close[np.maximum(top_label, 0)], -1)
            close_id = np.where(typed >= 0, typed, self.reduce_id)
            close_id = np.where(depth > 0, close_id, -1)
        close = (close_id >= 0) & ~states.last_open
        if tree:
            words = (depth > 0) & ~states.closed
            eos = self.ends_with_eos & states.closed & ~states.ended
        else:
            words = ~states.ended
            eos = ~states.ended & (states.pieces > 0)
        return Allowed(opens, close_id, close, words, eos)

    def log_normaliser(self, logits: Tensor, allowed: Allowed | None) -> np.ndarray:
        """``log Σ exp(logit(a))`` over the actions ``a`` that ``allowed`` allows each row, or over
        the whole vocabulary with ``None`` (float64; the sum over the words in the decoder's
        precision, the few other actions in float64). A token's log-probability under the
        distribution renormalised over those actions is its logit less this."""
        n = logits.shape[0]
        if n == 0:
            return np.zeros(0)
        if allowed is None:
            return torch.logsumexp(logits, dim=1).double().cpu().numpy()
        device = logits.device
        words = self._word_log_partition(logits).double().cpu().numpy()
        columns = [torch.from_numpy(np.maximum(allowed.close_id, 0)).to(device)[:, None]]
        if len(self.open_ids):
            columns.append(torch.from_numpy(self.open_ids).to(device).expand(n, -1))
        if self.ends_with_eos:
            columns.append(torch.full((n, 1), EOS_ID, device=device))
        picked = logits.gather(1, torch.cat(columns, dim=1)).double().cpu().numpy()
        ok = [allowed.close[:, None]]
        if len(self.open_ids):
            ok.append(np.repeat(allowed.opens[:, None], len(self.open_ids), axis=1))
        if self.ends_with_eos:
            ok.append(allowed.eos[:, None])
        parts = np.concatenate([words[:, None], picked], axis=1)
        parts[~np.concatenate([allowed.words[:, None], *ok], axis=1)] = -np.inf
        top = parts.max(axis=1)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return safe + np.log(np.exp(parts - safe[:, None]).sum(axis=1))

    def _word_log_partition(self, logits: Tensor) -> Tensor:
        """``log Σ exp(logit(w))`` over the word ids ``w`` of each row: over slices of the logits
        where the words make a few runs of ids (one pass, no copy), else with a mask added."""
        if len(self.word_runs) > 4:
            return torch.logsumexp(logits + self.word_bias_on(logits.device, logits.dtype), dim=1)
        runs = [torch.logsumexp(logits[:, start:stop], dim=1) for start, stop in self.word_runs]
        return runs[0] if len(runs) == 1 else torch.logsumexp(torch.stack(runs, dim=1), dim=1)

    def valid_mask(self, allowed: Allowed, device: torch.device) -> Tensor:
        """``[n, V]`` booleans: the allowed actions of each row."""

        def on_device(values: np.ndarray) -> Tensor:
            return torch.from_numpy(values).to(device)

        mask = self.word_mask_on(device)[None, :] & on_device(allowed.words)[:, None]
        if len(self.open_ids):
            mask[:, on_device(self.open_ids)] = on_device(allowed.opens)[:, None]
        rows = np.flatnonzero(allowed.close)
        mask[on_device(rows), on_device(allowed.close_id[rows])] = True
        if self.ends_with_eos:
            mask[:, EOS_ID] = on_device(allowed.eos)
        return mask

    def finish_length(self, states: ParserStates) -> np.ndarray:
        """The fewest actions that complete each prefix: a word where one is owed (nothing yet,
        or an opener just before), then a closer per open constituent, then ``</s>``."""
        if not self.tree:
            return np.where(states.ended, 0, 1 + (states.pieces == 0)).astype(np.int64)
        unstarted = (states.depth == 0) & ~states.closed
        steps = np.where(unstarted, 3, states.depth + states.last_open)
        return steps + (self.ends_with_eos & ~states.ended)


@dataclass
class Allowed:
    """Per prefix: may it open (any label), close (with ``close_id``), emit a word, emit ``</s>``."""

    opens: np.ndarray
    close_id: np.ndarray
    close: np.ndarray
    words: np.ndarray
    eos: np.ndarray

    def take(self, rows: np.ndarray) -> Allowed:
        return Allowed(
            self.opens[rows], self.close_id[rows], self.close[rows], self.words[rows], self.eos[rows]
        )


# --- parser states ---------------------------------------------------------------------------------


class Nodes:
    """Append-only ``(parent, value)`` rows shared by all hypotheses: trees of nodes with parent
    links (−1: none), for the stacks of open labels and for the histories of tokens."""

    def __init__(self):
        self._data = np.zeros((256, 2), dtype=np.int64)
        self._size = 0

    def add(self, parents: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Append nodes; returns their indices."""
        count = len(parents)
        while self._size + count > len(self._data):
            self._data = np.concatenate([self._data, np.zeros_like(self._data)])
        start = self._size
        self._data[start : start + count, 0] = parents
        self._data[start : start + count, 1] = values
        self._size += count
        return np.arange(start, start + count, dtype=np.int64)

    def column(self, j: int) -> np.ndarray:
        """Column 0: the parents; 1: the values."""
        return self._data[: self._size, j]

    def path(self, node: int) -> list[int]:
        """The values from the root down to ``node``."""
        out = []
        while node >= 0:
            out.append(int(self._data[node, 1]))
            node = int(self._data[node, 0])
        return out[::-1]


@dataclass
class ParserStates:
    """The parser state of each prefix, as arrays: depth (open constituents), the innermost open
    constituent (a stack node: label, parent), whether the last action opened, the run of
    openers, whether the root has closed, whether ``</s>`` came, word pieces so far, and the
    prefix's history node (parent, token)."""

    depth: np.ndarray
    top: np.ndarray
    last_open: np.ndarray
    openers: np.ndarray
    closed: np.ndarray
    ended: np.ndarray
    pieces: np.ndarray
    node: np.ndarray

    @classmethod
    def start(cls, n: int) -> ParserStates:
        zeros = np.zeros(n, dtype=np.int64)
        false = np.zeros(n, dtype=bool)
        return cls(zeros, zeros - 1, false, zeros.copy(), false.copy(), false.copy(), zeros.copy(), zeros - 1)

    def __len__(self) -> int:
        return len(self.depth)

    def take(self, rows: np.ndarray) -> ParserStates:
        return ParserStates(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))

    def step(self, tokens: np.ndarray, space: ActionSpace, stacks: Nodes, history: Nodes) -> ParserStates:
        """The states after each prefix takes ``tokens[i]`` (``KEEP``: unchanged)."""
        moved = tokens != KEEP
        kind = np.where(moved, space.kind[np.maximum(tokens, 0)], SPECIAL)
        is_open, is_close = kind == OPEN, kind == CLOSE
        top = self.top.copy()
        if is_open.any():
            top[is_open] = stacks.add(self.top[is_open], space.label_of[tokens[is_open]])
        if is_close.any():
            top[is_close] = stacks.column(0)[self.top[is_close]]
        depth = self.depth + is_open - is_close
        node = self.node.copy()
        if moved.any():
            node[moved] = history.add(self.node[moved], tokens[moved])
        return ParserStates(
            depth=depth,
            top=top,
            last_open=np.where(moved, is_open, self.last_open),
            openers=np.where(is_open, self.openers + 1, np.where(moved, 0, self.openers)),
            closed=self.closed | (is_close & (depth == 0)),
            ended=self.ended | (kind == END),
            pieces=self.pieces + (kind == WORD),
            node=node,
        )


# --- prefixes held by a decoder ------------------------------------------------------------------


class HeldPrefixes:
    """Prefixes for the search: ``logits(rows)`` of held prefixes, ``advance(parents, tokens)``
    where a token may be ``KEEP``, and ``calls`` (how many ``logits``/``advance`` calls reached
    a decoder). Three ways to hold them, best first:

    - ``"keep"``: a decoder with ``supports_keep`` holds them all (one call of each per round);
    - ``"cohorts"``: decoders hold prefixes of one length each. Prefixes made from one decoder in
      one round make a new decoder (a copy of its parent's when the parent still holds waiting
      prefixes), so a round costs a call per decoder whose prefixes grow. Needs a decoder that
      ``copy.deepcopy`` can copy (the model it refers to is shared, not copied);
    - ``"replay"``: every new prefix is re-fed from ``<s>`` to a fresh decoder (the authors' cost).
    """

    def __init__(self, make_decoder: Callable[[], Decoder], n: int, *, mode: str | None = None):
        self.make_decoder = make_decoder
        self.calls = 0
        decoder = make_decoder()
        decoder.start(n)
        if mode is None:
            mode = "keep" if getattr(decoder, "supports_keep", False) else "cohorts"
        if mode not in ("keep", "cohorts", "replay"):
            raise InferenceError(f"unknown mode {mode!r}; expected keep, cohorts or replay")
        if mode == "keep" and not getattr(decoder, "supports_keep", False):
            raise InferenceError("this decoder does not keep prefixes (supports_keep)")
        self._shared: dict[int, Any] = {}
        if mode == "cohorts":
            self._shared = _shared_objects(decoder)
            try:
                self._fork(decoder)
            except (TypeError, RuntimeError, copy.Error):  # not copyable: re-fed instead
                mode = "replay"
        self.mode = mode
        self._device: torch.device | None = None
        n = decoder.size
        if mode == "keep":
            self._decoder = decoder
        elif mode == "cohorts":
            # Per prefix: its decoder (an index into _cohorts) and its row there.
            self._cohorts: list[_Cohort] = [_Cohort(decoder)]
            self._where = np.zeros((n, 2), dtype=np.int64)
            self._where[:, 1] = np.arange(n)
        else:
            self._sequences: list[tuple[int, ...]] = [()] * n
            self._cache: list[Tensor | None] = [None] * n

    @property
    def size(self) -> int:
        if self.mode == "keep":
            return self._decoder.size
        return len(self._where) if self.mode == "cohorts" else len(self._sequences)

    def logits(self, rows: np.ndarray) -> Tensor:
        """``[len(rows), V]``: the decoder's next-token logits (``Decoder.logits``) after the held
        prefixes ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.mode == "keep":
            self.calls += 1
            every = len(rows) == self._decoder.size and (rows == np.arange(len(rows))).all()
            selected = None if every else torch.from_numpy(rows).to(self._device or "cpu")
            out = self._decoder.logits(selected)
        elif self.mode == "cohorts":
            out = self._cohort_logits(rows)
        else:
            out = self._replayed_logits(rows)
        self._device = out.device
        return out

    def advance(self, parents: np.ndarray, tokens: np.ndarray) -> None:
        parents = np.asarray(parents, dtype=np.int64)
        tokens = np.asarray(tokens, dtype=np.int64)
        if self.mode == "keep":
            self.calls += 1
            device = self._device or torch.device("cpu")
            self._decoder.advance(
                torch.as_tensor(parents, dtype=torch.long, device=device),
                torch.as_tensor(tokens, dtype=torch.long, device=device),
            )
        elif self.mode == "cohorts":
            self._cohort_advance(parents, tokens)
        else:
            self._replay_advance(parents, tokens)

    # cohorts

    def _fork(self, decoder: Decoder) -> Decoder:
        return copy.deepcopy(decoder, dict(self._shared))

    def _cohort_logits(self, rows: np.ndarray) -> Tensor:
        where = self._where[rows]
        parts = []
        for c in np.unique(where[:, 0]).tolist():
            cohort = self._cohorts[c]
            if cohort.logits is None:
                self.calls += 1
                cohort.logits = cohort.decoder.logits()
            at = np.flatnonzero(where[:, 0] == c)
            parts.append((at, cohort.logits, where[at, 1]))
        if not parts:
            return torch.zeros(0, 0)
        if len(parts) == 1:
            _, values, inner = parts[0]
            if len(inner) == len(values) and (inner == np.arange(len(inner))).all():
                return values
            return values[torch.from_numpy(inner).to(values.device)]
        device = parts[0][1].device
        order = np.argsort(np.concatenate([at for at, _, _ in parts]), kind="stable")
        stacked = torch.cat([values[torch.from_numpy(inner).to(device)] for _, values, inner in parts])
        return stacked[torch.from_numpy(order).to(device)]

    def _cohort_advance(self, parents: np.ndarray, tokens: np.ndarray) -> None:
        old = self._where[parents]
        kept = tokens == KEEP
        waiting = set(old[kept, 0].tolist())
        cohorts = [self._cohorts[c] for c in sorted(waiting)]
        renumber = {c: i for i, c in enumerate(sorted(waiting))}
        where = np.zeros((len(parents), 2), dtype=np.int64)
        where[kept, 0] = [renumber[c] for c in old[kept, 0].tolist()]
        where[kept, 1] = old[kept, 1]
        moved = np.flatnonzero(~kept)
        for c in np.unique(old[moved, 0]).tolist():
            rows = moved[old[moved, 0] == c]
            parent = self._cohorts[c]
            decoder = self._fork(parent.decoder) if c in waiting else parent.decoder
            if c not in waiting:
                parent.logits = None  # its decoder moves on
            device = parent.logits.device if parent.logits is not None else self._device
            self.calls += 1
            decoder.advance(
                torch.as_tensor(old[rows, 1], dtype=torch.long, device=device),
                torch.as_tensor(tokens[rows], dtype=torch.long, device=device),
            )
            where[rows, 0] = len(cohorts)
            where[rows, 1] = np.arange(len(rows))
            cohorts.append(_Cohort(decoder))
        self._cohorts, self._where = cohorts, where

    # replay

    def _replay_advance(self, parents: np.ndarray, tokens: np.ndarray) -> None:
        sequences, cache = [], []
        for parent, token in zip(parents.tolist(), tokens.tolist()):
            if token == KEEP:
                sequences.append(self._sequences[parent])
                cache.append(self._cache[parent])
            else:
                sequences.append((*self._sequences[parent], token))
                cache.append(None)
        self._sequences, self._cache = sequences, cache

    def _replayed_logits(self, wanted: np.ndarray) -> Tensor:
        by_length: dict[int, list[int]] = {}
        for i in wanted.tolist():
            if self._cache[i] is None:
                by_length.setdefault(len(self._sequences[i]), []).append(i)
        for length, rows in by_length.items():
            decoder = self.make_decoder()
            decoder.start(len(rows))
            tokens = torch.tensor([self._sequences[i] for i in rows], dtype=torch.long).reshape(
                len(rows), length
            )
            parents = torch.arange(len(rows))
            for t in range(length):
                self.calls += 1
                decoder.advance(parents, tokens[:, t])
            self.calls += 1
            values = decoder.logits()
            for j, i in enumerate(rows):
                self._cache[i] = values[j]
        if len(wanted) == 0:
            return torch.zeros(0, 0)
        return torch.stack([self._cache[i] for i in wanted.tolist()])  # type: ignore[misc]


@dataclass
class _Cohort:
    decoder: Decoder
    logits: Tensor | None = None


def _shared_objects(decoder: Decoder) -> dict[int, Any]:
    """A ``deepcopy`` memo that shares, instead of copying, every module, parameter and buffer of
    the models a decoder refers to."""
    memo: dict[int, Any] = {}
    for value in vars(decoder).values():
        if isinstance(value, torch.nn.Module):
            for item in (*value.modules(), *value.parameters(), *value.buffers()):
                memo[id(item)] = item
    return memo


# --- the search --------------------------------------------------------------------------------


@dataclass
class PieceBeam:
    """The search's result for one sentence given as piece ids.

    ``prefix_logprobs[k]``: estimate of ``log p(pieces[:k + 1])`` (structure included);
    ``logprob``: of the complete sentence (closed tree, ``</s>``); ``best``: the token ids (after
    ``<s>``) of the best complete derivation and ``best_logprob`` its log-probability.
    """

    prefix_logprobs: np.ndarray
    logprob: float
    best: list[int] | None
    best_logprob: float
    exhausted_pieces: int = 0
    forced_pieces: int = 0
    rounds: int = 0


@dataclass
class _Sentence:
    pieces: np.ndarray
    k: int = 0
    n_next: int = 0
    prefix: list[float] = field(default_factory=list)
    finals: list[tuple[float, int]] = field(default_factory=list)
    exhausted: int = 0
    forced: int = 0
    rounds: int = 0
    failed: bool = False
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def finishing(self) -> bool:
        return self.k >= len(self.pieces)


def logsumexp(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return -np.inf
    top = values.max()
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.exp(values - top).sum()))


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first (ties: earlier first)."""
    order = np.argsort(-scores, kind="stable")
    return order[:k]


def search_pieces(
    grammar: ActionGrammar | ActionSpace,
    make_decoder: Callable[[], Decoder],
    sentences: Sequence[Sequence[int]],
    settings: BeamSettings = PAPER_BEAM,
    *,
    word_starts: Sequence[Sequence[bool]] | None = None,
    mode: str | None = None,
) -> list[PieceBeam]:
    """The word-synchronous beam search over sentences given as word-piece ids, all of them
    through one decoder from ``make_decoder`` (each round: one ``logprobs``, one ``advance``).

    ``word_starts[i][k]``: whether piece ``k`` of sentence ``i`` begins a word (default: all do).
    A piece that continues a word follows the piece before it directly: no constituent opens or
    closes inside a word (such actions still count in the normaliser; they are not expanded).
    ``mode``: how prefixes are held (``HeldPrefixes``; by default the best the decoder allows).
    """
    space = (
        grammar
        if isinstance(grammar, ActionSpace)
        else ActionSpace(grammar, max_open=settings.max_open, max_openers=settings.max_openers)
    )
    if word_starts is None:
        word_starts = [np.ones(len(pieces), dtype=bool) for pieces in sentences]
    if len(word_starts) != len(sentences):
        raise InferenceError(f"{len(word_starts)} word_starts for {len(sentences)} sentences")
    state = []
    for i, (pieces, starts) in enumerate(zip(sentences, word_starts)):
        pieces = np.asarray(pieces, dtype=np.int64)
        starts = np.asarray(starts, dtype=bool)
        if len(pieces) == 0:
            raise InferenceError(f"sentence {i} has no word pieces")
        if starts.shape != pieces.shape:
            raise InferenceError(f"sentence {i}: word_starts must have one entry per piece")
        if ((pieces < 0) | (pieces >= space.vocab_size)).any() or not space.word_mask[pieces].all():
            raise InferenceError(f"sentence {i} holds ids that are not word pieces of the grammar")
        state.append(_Sentence(pieces, starts=starts))
    if not state:
        return []
    search = _Search(space, settings, state, HeldPrefixes(make_decoder, len(state), mode=mode))
    with torch.no_grad():
        while search.round():
            pass
    return [search.result(sentence) for sentence in state]


class _Next:
    """The hypotheses one round hands to ``advance``: parent row, token (or ``KEEP``), role, score."""

    def __init__(self):
        self.parents: list[np.ndarray] = []
        self.tokens: list[np.ndarray] = []
        self.roles: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []

    def add(self, parent: np.ndarray, token: np.ndarray, role: int, score: np.ndarray) -> None:
        self.parents.append(np.asarray(parent, dtype=np.int64))
        self.tokens.append(np.asarray(token, dtype=np.int64))
        self.roles.append(np.full(len(parent), role, dtype=np.int8))
        self.scores.append(np.asarray(score, dtype=np.float64))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.parents:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=np.int8), np.zeros(0)
        return tuple(np.concatenate(part) for part in (self.parents, self.tokens, self.roles, self.scores))


class _Search:
    """The search's state between rounds: the held hypotheses (rows of the decoder), each with its
    sentence, role (CURRENT, NEXT, FINISH), score and parser state; rows grouped by sentence."""

    def __init__(
        self, space: ActionSpace, settings: BeamSettings, sentences: list[_Sentence], held: HeldPrefixes
    ):
        self.space = space
        self.settings = settings
        self.renormalise = settings.renormalise and space.tree
        self.sentences = sentences
        self.held = held
        self.stacks, self.history = Nodes(), Nodes()
        n = len(sentences)
        self.owner = np.arange(n, dtype=np.int64)
        self.role = np.full(n, CURRENT, dtype=np.int8)
        self.score = np.zeros(n)
        self.states = ParserStates.start(n)
        self.width = len(space.open_ids) + 2  # candidate columns: openers, the fitting closer, the piece

    def round(self) -> bool:
        """One expansion round of every sentence; False when every sentence is complete."""
        if not len(self.owner):
            return False
        space = self.space
        # Only the rows being expanded or closed need logits (``at``: their index there). A
        # token's log-probability is its logit less its row's log-normaliser ``norm``.
        active = np.flatnonzero(self.role != NEXT)
        logits = self.held.logits(active)
        at = np.full(len(self.owner), -1, dtype=np.int64)
        at[active] = np.arange(len(active))
        allowed = space.allowed(self.states, self.stacks)
        norm = np.zeros(len(self.owner))
        if len(active):
            norm[active] = space.log_normaliser(logits, allowed.take(active) if self.renormalise else None)
        cur = np.flatnonzero(self.role == CURRENT)
        cand_ids, cand, piece_logit = self._candidates(cur, logits, at, allowed, norm)
        fin = np.flatnonzero(self.role == FINISH)
        fin_token, fin_score = self._closers(fin, logits, at, allowed, norm)

        n_sentences = len(self.sentences)
        bounds = np.searchsorted(self.owner, np.arange(n_sentences + 1))
        cur_bounds = np.searchsorted(self.owner[cur], np.arange(n_sentences + 1))
        fin_bounds = np.searchsorted(self.owner[fin], np.arange(n_sentences + 1))
        out = _Next()
        for s, sentence in enumerate(self.sentences):
            if bounds[s] == bounds[s + 1]:
                continue
            sentence.rounds += 1
            if sentence.finishing:
                f = slice(fin_bounds[s], fin_bounds[s + 1])
                self._finish(sentence, fin[f], fin_token[f], fin_score[f], out)
            else:
                c = slice(cur_bounds[s], cur_bounds[s + 1])
                waiting = bounds[s] + np.flatnonzero(self.role[bounds[s] : bounds[s + 1]] == NEXT)
                self._expand(
                    sentence, cur[c], cand_ids[c], cand[c], piece_logit[c], waiting, allowed, norm, out
                )

        parent, token, role, score = out.arrays()
        if len(parent) == 0:
            self.owner = parent
            return False
        self.held.advance(parent, token)
        self.owner = self.owner[parent]
        self.role, self.score = role, score
        self.states = self.states.take(parent).step(token, space, self.stacks, self.history)
        return True

    def _candidates(
        self, cur: np.ndarray, logits: Tensor, at: np.ndarray, allowed: Allowed, norm: np.ndarray
    ):
        """Candidate ids ``[m, C]`` of the current rows, their cumulative scores (−inf where not
        expandable) and the logits of the pieces (for forcing)."""
        space, C = self.space, self.width
        O = C - 2
        ids = np.zeros((len(cur), C), dtype=np.int64)
        if len(cur) == 0:
            return ids, np.zeros((0, C)), np.zeros(0)
        owner = self.owner[cur]
        piece = np.array([s.pieces[s.k] if not s.finishing else 0 for s in self.sentences], dtype=np.int64)
        structure = np.array([s.finishing or s.starts[s.k] for s in self.sentences], dtype=bool)[owner]
        ids[:, :O] = space.open_ids
        ids[:, O] = np.maximum(allowed.close_id[cur], 0)
        ids[:, O + 1] = piece[owner]
        ok = np.empty((len(cur), C), dtype=bool)
        ok[:, :O] = (allowed.opens[cur] & structure)[:, None]
        # Closing the root would end the sentence before its last piece.
        ok[:, O] = allowed.close[cur] & (self.states.depth[cur] >= 2) & structure
        ok[:, O + 1] = allowed.words[cur]
        picked = _pick(logits, at[cur, None], ids)
        cand = self.score[cur, None] + picked - norm[cur, None]
        cand[~ok] = -np.inf
        return ids, cand, picked[:, O + 1]

    def _closers(self, fin: np.ndarray, logits: Tensor, at: np.ndarray, allowed: Allowed, norm: np.ndarray):
        """The forced next action of each finishing row (its closer, or ``</s>`` once closed) and
        the cumulative score after it (−inf if the grammar does not allow it)."""
        if len(fin) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        closing = self.states.depth[fin] > 0
        token = np.where(closing, allowed.close_id[fin], EOS_ID)
        valid = np.where(closing, allowed.close[fin], allowed.eos[fin])
        token = np.maximum(token, 0)
        score = self.score[fin] + _pick(logits, at[fin], token) - norm[fin]
        score[~valid] = -np.inf
        return token, score

    def _finish(self, sentence: _Sentence, rows, tokens, scores, out: _Next) -> None:
        """Close what is open (one action per round); complete hypotheses leave the decoder."""
        closes_root = (self.states.depth[rows] == 1) & (not self.space.ends_with_eos)
        done = (tokens == EOS_ID) | closes_root | ~np.isfinite(scores)
        if done.any():
            nodes = self.history.add(self.states.node[rows[done]], tokens[done])
            sentence.finals.extend(zip(scores[done].tolist(), nodes.tolist()))
        out.add(rows[~done], tokens[~done], FINISH, scores[~done])

    def _expand(self, sentence, cur, cand_ids, cand, piece_logit, waiting, allowed, norm, out: _Next) -> None:
        """Steps 2–5 of the module docstring for one sentence's current rows ``cur``."""
        A, W, F = self.settings.action_beam, self.settings.word_beam, self.settings.fast_track
        C = self.width
        flat = cand.ravel()
        flat_ids = cand_ids.ravel()
        good = np.flatnonzero(flat > -np.inf)
        order = good[np.argsort(-flat[good], kind="stable")]
        is_piece = order % C == C - 1
        top, rest = order[:A], order[A:]
        grown_next = np.concatenate([top[is_piece[:A]], rest[is_piece[A:]][:F]])
        grown_cur = top[~is_piece[:A]]
        sentence.n_next += len(grown_next)
        # Only the best word_beam states of next can survive the piece: keep just those.
        parent = np.concatenate([waiting, cur[grown_next // C]])
        token = np.concatenate([np.full(len(waiting), KEEP), flat_ids[grown_next]])
        score = np.concatenate([self.score[waiting], flat[grown_next]])
        best = _top(score, W)
        parent, token, score = parent[best], token[best], score[best]
        if sentence.n_next < A and len(grown_cur):
            out.add(cur[grown_cur // C], flat_ids[grown_cur], CURRENT, flat[grown_cur])
            out.add(parent, token, NEXT, score)
            return
        # The piece is done: the word beam moves on to the next piece (or to closing).
        if len(grown_cur) == 0 and sentence.n_next < A and self.space.tree:
            sentence.exhausted += 1
        if len(parent) == 0:
            parent, token, score = self._forced(sentence, cur, allowed, piece_logit, norm)
            if len(parent) == 0:
                sentence.failed = True
                sentence.prefix.extend([-np.inf] * (len(sentence.pieces) - sentence.k))
                sentence.k = len(sentence.pieces)
                return
        sentence.prefix.append(logsumexp(score))
        sentence.k += 1
        sentence.n_next = 0
        out.add(parent, token, FINISH if sentence.finishing else CURRENT, score)

    def _forced(self, sentence: _Sentence, cur, allowed: Allowed, piece_logit, norm):
        """No state generated the piece: the best current states that may emit a word are made
        to, at the model's log-probability floored at ``FORCED_LOGPROB``."""
        can = np.flatnonzero(allowed.words[cur])
        if len(can) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        sentence.forced += 1
        chosen = can[_top(self.score[cur[can]], self.settings.word_beam)]
        step = piece_logit[chosen] - norm[cur[chosen]]
        step = np.where(np.isfinite(step), np.maximum(step, FORCED_LOGPROB), FORCED_LOGPROB)
        token = np.full(len(chosen), sentence.pieces[sentence.k], dtype=np.int64)
        return cur[chosen], token, self.score[cur[chosen]] + step

    def result(self, sentence: _Sentence) -> PieceBeam:
        finals = np.array([value for value, _ in sentence.finals])
        logprob = logsumexp(finals) if len(finals) and not sentence.failed else -np.inf
        best, best_logprob = None, -np.inf
        if len(finals) and np.isfinite(finals.max()):
            i = int(np.argmax(finals))
            best, best_logprob = self.history.path(sentence.finals[i][1]), float(finals[i])
        return PieceBeam(
            prefix_logprobs=np.array(sentence.prefix, dtype=np.float64),
            logprob=logprob,
            best=best,
            best_logprob=best_logprob,
            exhausted_pieces=sentence.exhausted,
            forced_pieces=sentence.forced,
            rounds=sentence.rounds,
        )


def _pick(values: Tensor, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``values[rows, columns]`` (broadcast) as float64 on the host, gathering only those entries."""
    device = values.device
    picked = values[torch.from_numpy(rows).to(device), torch.from_numpy(columns).to(device)]
    return picked.double().cpu().numpy()


# --- sentences of words, models and results ------------------------------------------------------


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


class eval_mode:
    """Context manager: the model in eval mode and without gradients, restored afterwards."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.was_training = getattr(self.model, "training", False)
        if hasattr(self.model, "eval"):
            self.model.eval()
        self.no_grad = torch.no_grad()
        self.no_grad.__enter__()
        return self.model

    def __exit__(self, *exc):
        self.no_grad.__exit__(*exc)
        if self.was_training:
            self.model.train()
        return False


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of at most ``batch_size``, by increasing length."""
    if batch_size < 1:
        raise InferenceError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def beam_search(
    model,
    sentences: Sequence[Sequence[str]],
    settings: BeamSettings = PAPER_BEAM,
    *,
    batch_size: int = 16,
    progress: bool = False,
) -> list[SentenceScores]:
    """Word-synchronous beam search on sentences of words with a model that offers
    ``action_grammar()``, ``decoder()`` and ``vocab``: per-piece log-probabilities (prefix
    differences), the end, and the incremental parse (``tree``; None for words-only models).

    Sentences are searched ``batch_size`` at a time, shortest first, in one decoder.
    """
    from tqdm import tqdm

    space = ActionSpace(model.action_grammar(), max_open=settings.max_open, max_openers=settings.max_openers)
    encoded = [encode_sentence(model.vocab, words, i) for i, words in enumerate(sentences)]
    results: list[SentenceScores | None] = [None] * len(encoded)
    batches = length_batches([len(e.ids) for e in encoded], batch_size)
    with eval_mode(model):
        for batch in tqdm(batches, desc="beam", unit="batch", disable=not progress):
            found = search_pieces(
                space,
                model.decoder,
                [encoded[i].ids for i in batch],
                settings,
                word_starts=[encoded[i].word_starts for i in batch],
            )
            for i, beam in zip(batch, found):
                results[i] = _beam_scores(space, encoded[i], beam, settings)
    return results  # type: ignore[return-value]


def _beam_scores(
    space: ActionSpace, sentence: EncodedSentence, beam: PieceBeam, settings: BeamSettings
) -> SentenceScores:
    prefix = beam.prefix_logprobs
    with np.errstate(invalid="ignore"):
        piece_logprobs = np.diff(prefix, prepend=0.0)
        end = beam.logprob - prefix[-1]
    tree = None
    if space.tree and beam.best is not None:
        tree = build_tree(space, beam.best, words=sentence.words, piece_word=sentence.piece_word)
    details = {
        "action_beam": settings.action_beam,
        "word_beam": settings.word_beam,
        "fast_track": settings.fast_track,
        "renormalised": bool(settings.renormalise and space.tree),
        "exhausted_pieces": beam.exhausted_pieces,
        "forced_pieces": beam.forced_pieces,
        "rounds": beam.rounds,
    }
    return SentenceScores(
        words=sentence.words,
        pieces=sentence.pieces,
        piece_word=sentence.piece_word,
        piece_logprobs=piece_logprobs,
        end_logprob=float(end),
        method="beam" if space.tree else "exact",
        tree=tree,
        tree_logprob=beam.best_logprob if space.tree else float("nan"),
        details=details,
    )
