"""Batches for training and scoring: rows of padded integer arrays, in a seeded, resumable order.

A model's ``prepare`` turns a treebank into a ``RowCorpus``: named arrays with one row per
sequence (or per segment) and a leading axis ``R``, padded with each field's fill value, plus the
fields whose non-padding entries are prediction targets (``target_fields``: part name → field).

Two orders:

- ``shuffled`` rows (sentence-level models): a permutation drawn from ``(seed, epoch)``; rows of
  similar length are grouped into batches (sorted within windows of 50 batches) and the batches
  are shuffled again, so that little padding is computed; each batch is cut to its longest row.
- ``streams`` (segments with memory): the rows of a sequence are consecutive segments, and a
  segment's memory comes from the one before it. Sequences are dealt to ``batch_size`` lanes in
  a seeded order; step ``t`` takes each lane's next row, so a lane's memory flows from one batch
  to the next. Lanes that run dry get padding rows. Rows are never cut (memory layout).

Both are fully determined by ``(seed, epoch)``; ``start`` skips batches, which is how a resumed
run continues with the very batches it would have seen. Data parallelism splits every global
batch by rows: rank ``r`` of ``w`` takes rows ``r, r + w, ...`` (the trainer keeps counts global).

``unigram_loss`` is the baseline every trained language model must beat: the unigram distribution
of a corpus's targets.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from syntaxlm.errors import TrainingError

Order = Literal["shuffled", "streams"]


@dataclass
class Batch:
    """Tensors ``[B, L]`` (or ``[B]``) by field name, and the target count of each loss part."""

    tensors: dict[str, Tensor]
    counts: dict[str, int]
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __getitem__(self, name: str) -> Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def to(self, device: torch.device | str) -> Batch:
        moved = {name: t.to(device, non_blocking=True) for name, t in self.tensors.items()}
        return Batch(moved, self.counts, self.rows)

    @property
    def size(self) -> int:
        return len(self.rows)


@dataclass
class RowCorpus:
    """Rows of named arrays (see the module docstring).

    ``fields`` maps a name to an array whose first axis is the row; 2-d arrays are per position
    (``[R, L]``) and padded with ``fill[name]`` (0 when not given). ``lengths[r]`` is the number of
    real positions of row ``r``. ``sequence[r]`` (streams only) is the sequence a row belongs to;
    its rows must be consecutive and in order.
    """

    fields: dict[str, np.ndarray]
    lengths: np.ndarray
    target_fields: dict[str, str]
    order: Order = "shuffled"
    fill: dict[str, int] = field(default_factory=dict)
    sequence: np.ndarray | None = None

    def __post_init__(self):
        self.lengths = np.asarray(self.lengths, dtype=np.int64)
        for name, values in self.fields.items():
            if len(values) != len(self.lengths):
                raise ValueError(f"field {name!r} has {len(values)} rows, lengths has {len(self.lengths)}")
        for part, name in self.target_fields.items():
            if name not in self.fields:
                raise ValueError(f"target field {name!r} of part {part!r} is not a field")
        if self.order == "streams" and self.sequence is None:
            raise ValueError("streams need the sequence of each row")

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def n_targets(self) -> dict[str, int]:
        return {
            part: int(self._targets(self.fields[name]).sum()) for part, name in self.target_fields.items()
        }

    def n_batches(self, batch_size: int) -> int:
        if self.order == "streams":
            return len(self._lanes(batch_size, seed=0, epoch=0)[0])
        return -(-len(self) // batch_size)

    def batches(
        self,
        batch_size: int,
        *,
        seed: int = 0,
        epoch: int = 0,
        start: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
    ) -> Iterator[Batch]:
        """The batches of one epoch from batch ``start`` on; each rank gets its share of rows."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if self.order == "streams":
            schedule, _ = self._lanes(batch_size, seed=seed, epoch=epoch if shuffle else None)
        else:
            schedule = self._shuffled(batch_size, seed=seed, epoch=epoch if shuffle else None)
        for rows in schedule[start:]:
            counts = self._counts(rows)
            yield self._batch(rows[rank::world_size], counts)

    # --- orders ---------------------------------------------------------------------------------

    def _shuffled(self, batch_size: int, *, seed: int, epoch: int | None) -> list[np.ndarray]:
        if epoch is None:
            order = np.arange(len(self))
            return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        rng = np.random.default_rng([seed, epoch])
        order = rng.permutation(len(self))
        window = batch_size * 50
        for i in range(0, len(order), window):
            chunk = order[i : i + window]
            order[i : i + window] = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        return [batches[i] for i in rng.permutation(len(batches))]

    def _lanes(self, batch_size: int, *, seed: int, epoch: int | None) -> tuple[list[np.ndarray], int]:
        sequence = self.sequence
        starts = np.flatnonzero(np.r_[True, sequence[1:] != sequence[:-1]])
        sizes = np.diff(np.r_[starts, len(sequence)])
        order = np.arange(len(starts))
        if epoch is not None:
            order = np.random.default_rng([seed, epoch]).permutation(len(starts))
        lanes: list[list[int]] = [[] for _ in range(batch_size)]
        for s in order:  # deal each sequence to the lane that has the fewest rows so far
            lane = min(range(batch_size), key=lambda i: len(lanes[i]))
            lanes[lane].extend(range(starts[s], starts[s] + sizes[s]))
        steps = max((len(lane) for lane in lanes), default=0)
        table = np.full((steps, batch_size), -1, dtype=np.int64)
        for i, lane in enumerate(lanes):
            table[: len(lane), i] = lane
        return list(table), steps

    # --- assembling -----------------------------------------------------------------------------

    def _targets(self, values: np.ndarray) -> np.ndarray:
        return values != 0

    def _counts(self, rows: np.ndarray) -> dict[str, int]:
        real = rows[rows >= 0]
        return {
            part: int(self._targets(self.fields[name][real]).sum())
            for part, name in self.target_fields.items()
        }

    def _batch(self, rows: np.ndarray, counts: dict[str, int]) -> Batch:
        real = rows >= 0
        taken = np.maximum(rows, 0)
        width = None
        if self.order == "shuffled" and len(rows):
            width = max(int(self.lengths[taken].max()), 1)
        tensors = {}
        for name, values in self.fields.items():
            chosen = values[taken]
            if chosen.ndim >= 2 and width is not None:
                chosen = chosen[:, :width]
            if not real.all():  # padding rows of a stream: every entry is its field's fill
                chosen = chosen.copy()
                chosen[~real] = self.fill.get(name, 0)
            tensors[name] = torch.from_numpy(np.ascontiguousarray(chosen))
        return Batch(tensors, counts, rows)


def pad_rows(
    sequences: list[np.ndarray], fill: int = 0, dtype=np.int64, width: int | None = None
) -> np.ndarray:
    """Ragged 1-d arrays as one ``[R, width]`` array padded with ``fill`` (width: the longest)."""
    width = max((len(s) for s in sequences), default=0) if width is None else width
    out = np.full((len(sequences), width), fill, dtype=dtype)
    for i, values in enumerate(sequences):
        out[i, : len(values)] = values
    return out


def unigram_loss(
    train: RowCorpus, valid: RowCorpus, *, part: str = "lm", vocab_size: int | None = None
) -> float:
    """Validation loss (nats per token) of the add-one-smoothed unigram distribution of the train targets.

    The baseline every trained model must beat clearly. ``vocab_size`` defaults to the largest
    target id seen plus one.
    """
    train_targets = _targets(train, part)
    valid_targets = _targets(valid, part)
    if not len(valid_targets):
        raise TrainingError(f"the validation corpus has no {part!r} targets")
    largest = int(max(train_targets.max(initial=0), valid_targets.max(initial=0)))
    size = max(vocab_size or 0, largest + 1)
    counts = np.bincount(train_targets, minlength=size).astype(np.float64)
    logprob = np.log(counts + 1.0) - math.log(len(train_targets) + size)
    return float(-logprob[valid_targets].mean())


def _targets(corpus: RowCorpus, part: str) -> np.ndarray:
    values = corpus.fields[corpus.target_fields[part]]
    return values[corpus._targets(values)].astype(np.int64)
