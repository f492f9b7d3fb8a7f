"""The action grammar as arrays, and the parser state of every prefix.

A model's ``ActionGrammar`` (``models.decoding``) says which vocabulary ids open or close a
constituent and which are word pieces. ``ActionSpace`` turns it into arrays and says which actions
may follow each prefix (``allowed``: no closer with nothing open or of the wrong label, no closer
right after an opener, no word outside the root, nothing after the root has closed, depth and runs
of openers bounded), with the log-normaliser over those actions. ``ParserStates`` holds the state
of many prefixes at once as arrays, over ``Nodes``: append-only tables of parent links shared by
all prefixes (the stacks of open labels, the histories of tokens). The beam search, the marginals
over given trees and sampling all read prefixes through these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from syntaxlm.errors import SyntaxlmError
from syntaxlm.models.decoding import KEEP, ActionGrammar
from syntaxlm.text.base import EOS_ID


class InferenceError(SyntaxlmError, ValueError):
    """Inference asked of a model or with settings that cannot do it (a method the model has no use
    for, missing trees, bad beam sizes, a bad sentence)."""


# Token kinds, indexed by vocabulary id (``ActionSpace.kind``).
WORD, OPEN, CLOSE, END, SPECIAL = 0, 1, 2, 3, 4

# Rows per block of ``row_logsumexp`` on the CPU: a block's temporaries (32 rows of a 20,000-word
# vocabulary: 2.5 MB) stay in cache and are reused, where one call over all rows makes temporaries
# as large as the logits afresh every round (docs/performance.md: about 3x over 1,600 rows).
LOGSUMEXP_BLOCK_ROWS = 32


def row_logsumexp(values: Tensor, bias: Tensor | None = None) -> Tensor:
    """``logsumexp(values + bias, dim=1)`` (``bias``: ``[V]`` added to every row), on the CPU in
    blocks of ``LOGSUMEXP_BLOCK_ROWS`` rows; each row's sum is the same computation either way."""
    if values.device.type != "cpu" or len(values) <= LOGSUMEXP_BLOCK_ROWS:
        return torch.logsumexp(values if bias is None else values + bias, dim=1)
    return torch.cat([row_logsumexp(block, bias) for block in values.split(LOGSUMEXP_BLOCK_ROWS)])


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
            return row_logsumexp(logits).double().cpu().numpy()
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
            return row_logsumexp(logits, self.word_bias_on(logits.device, logits.dtype))
        runs = [row_logsumexp(logits[:, start:stop]) for start, stop in self.word_runs]
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
