"""Bootstrap intervals for accuracies over test items and training seeds, and comparisons of two models.

An accuracy here is a mean of per-item outcomes (1.0 when an item's prediction holds, 0.0 when it
does not; any number works) given as a 2-D array ``[seeds][items]``: one row per training run
(seed) of a model, the same test items, in the same order, in every row. Two sources of chance
make the accuracy what it is -- which items the suite happens to hold, and which run the seed
happened to give -- so ``bootstrap_mean`` resamples both (a two-level bootstrap): each replicate
draws the seeds with replacement and the item indices with replacement, the *same* item indices
for every seed (the items are shared, not drawn anew per run), and takes the mean. With one seed
only the items are resampled, and the interval says nothing about run-to-run variation.

``bootstrap_difference`` compares two models on the same items: the item draw is shared by both
(paired: an item that is hard for one model tends to be hard for the other, and pairing removes
that shared part of the variation), while the seeds of each model are drawn independently, since
two models' training runs are separate random draws -- seed 1 of one model has nothing in common
with seed 1 of the other, and the two may have different numbers of runs. ``compare`` turns the
difference interval into "ahead", "behind" or "no difference" (the interval contains 0).

``groups`` (optional, one label per item, e.g. the item's suite) makes the bootstrap stratified:
items are resampled within each group and the statistic is the mean over groups of the group
means -- the mean of suite accuracies, as a score over several suites is reported.

Intervals are percentile intervals of ``resamples`` replicates, deterministic for a ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from syntaxlm.errors import SyntaxlmError

VERDICTS = ("ahead", "behind", "no difference")

# Replicates are computed in blocks of at most this many (replicate, item) cells (memory, not results).
_BLOCK_CELLS = 4_000_000


class OutcomesError(SyntaxlmError, ValueError):
    """Outcomes that are not a complete ``[seeds][items]`` table of numbers."""


@dataclass(frozen=True)
class Interval:
    """A point estimate and its ``level`` (e.g. 95%) interval ``[low, high]``."""

    estimate: float
    low: float
    high: float
    level: float = 0.95

    def to_json(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "level": self.level}

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def text(self, digits: int = 3) -> str:
        """E.g. ``0.514 [0.430, 0.600]``."""
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def bootstrap_mean(
    outcomes: Any,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    groups: Sequence[Hashable] | None = None,
) -> Interval:
    """The mean of ``outcomes`` (``[seeds][items]``) with its two-level bootstrap interval (module
    docstring). Raises ``OutcomesError`` on an empty, ragged or non-numeric table or a NaN."""
    table = outcome_table(outcomes)
    _check_settings(level, resamples)
    strata = _strata(groups, table.shape[1])
    rng = np.random.default_rng(seed)
    replicates = np.concatenate(
        [
            _replicate_means(table, strata, _seed_weights(rng, table.shape[0], block), items)
            for block, items in _item_weight_blocks(rng, strata, resamples)
        ]
    )
    return _percentile_interval(_stratified_mean(table, strata), replicates, level)


def bootstrap_difference(
    a: Any,
    b: Any,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    groups: Sequence[Hashable] | None = None,
) -> Interval:
    """mean(a) - mean(b) with its bootstrap interval: ``a`` and ``b`` are ``[seeds][items]`` tables
    of the same items (any numbers of seeds); each replicate draws one set of item indices for
    both (paired) and each model's seeds independently (different training runs)."""
    table_a, table_b = outcome_table(a, name="a"), outcome_table(b, name="b")
    if table_a.shape[1] != table_b.shape[1]:
        raise OutcomesError(
            f"a has {table_a.shape[1]} items and b has {table_b.shape[1]}; a paired comparison needs "
            "the same items, in the same order, for both"
        )
    _check_settings(level, resamples)
    strata = _strata(groups, table_a.shape[1])
    rng = np.random.default_rng(seed)
    blocks = []
    for block, items in _item_weight_blocks(rng, strata, resamples):
        seeds_a = _seed_weights(rng, table_a.shape[0], block)
        seeds_b = _seed_weights(rng, table_b.shape[0], block)
        mean_a = _replicate_means(table_a, strata, seeds_a, items)
        blocks.append(mean_a - _replicate_means(table_b, strata, seeds_b, items))
    estimate = _stratified_mean(table_a, strata) - _stratified_mean(table_b, strata)
    return _percentile_interval(estimate, np.concatenate(blocks), level)


def verdict(difference: Interval) -> str:
    """"ahead" when the interval of a - b lies above 0, "behind" when below, else "no difference"."""
    if difference.low > 0:
        return "ahead"
    if difference.high < 0:
        return "behind"
    return "no difference"


def compare(
    a: Any,
    b: Any,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    groups: Sequence[Hashable] | None = None,
) -> str:
    """Whether model ``a`` is "ahead" of ``b``, "behind" it, or shows "no difference" (the
    ``bootstrap_difference`` interval contains 0)."""
    return verdict(bootstrap_difference(a, b, level=level, resamples=resamples, seed=seed, groups=groups))


def outcome_table(outcomes: Any, *, name: str = "outcomes") -> np.ndarray:
    """``outcomes`` as a float ``[seeds, items]`` array, checked: at least one seed and one item,
    every row the same length, every value a finite number (a NaN -- a missing item -- is an error)."""
    if isinstance(outcomes, np.ndarray):
        rows = list(outcomes) if outcomes.ndim == 2 else None
    elif isinstance(outcomes, Sequence) and not isinstance(outcomes, str | bytes):
        rows = list(outcomes)
    else:
        rows = None
    if rows is None or any(
        isinstance(row, str | bytes) or not isinstance(row, Sequence | np.ndarray) for row in rows
    ):
        raise OutcomesError(f"{name}: expected a 2-D table [seeds][items], one row of item outcomes per seed")
    if not rows:
        raise OutcomesError(f"{name}: no seeds (an empty table); expected at least one row of item outcomes")
    lengths = [len(row) for row in rows]
    if len(set(lengths)) > 1:
        raise OutcomesError(
            f"{name}: ragged table, rows of {sorted(set(lengths))} items (row lengths {lengths}); every "
            "seed must have an outcome for every item"
        )
    if lengths[0] == 0:
        raise OutcomesError(f"{name}: no items; expected at least one item outcome per seed")
    try:
        table = np.asarray(rows, dtype=float)
    except (TypeError, ValueError):
        raise OutcomesError(
            f"{name}: values that are not numbers; expected 1.0/0.0 outcomes or other numbers"
        ) from None
    if table.ndim != 2:
        raise OutcomesError(f"{name}: expected a 2-D table [seeds][items], got {table.ndim} dimensions")
    bad = np.argwhere(~np.isfinite(table))
    if len(bad):
        seed_index, item_index = (int(i) for i in bad[0])
        raise OutcomesError(
            f"{name}: {len(bad)} missing or non-finite outcomes, the first at seed {seed_index}, item "
            f"{item_index} ({table[seed_index, item_index]}); every seed needs every item"
        )
    return table


def _check_settings(level: float, resamples: int) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level {level}: expected a probability strictly between 0 and 1, e.g. 0.95")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples {resamples!r}: expected a positive integer, e.g. 2000")


def _strata(groups: Sequence[Hashable] | None, n_items: int) -> list[np.ndarray]:
    """Item indices per group, groups in order of first appearance; one group of all items by default."""
    if groups is None:
        return [np.arange(n_items)]
    labels = list(groups)
    if len(labels) != n_items:
        raise OutcomesError(f"groups: {len(labels)} labels for {n_items} items; expected one label per item")
    members: dict[Hashable, list[int]] = {}
    for index, label in enumerate(labels):
        members.setdefault(label, []).append(index)
    return [np.asarray(indices) for indices in members.values()]


def _item_weight_blocks(rng: np.random.Generator, strata: list[np.ndarray], resamples: int):
    """Blocks of ``(replicates, item weights)``: per group, how often each item is drawn in each
    replicate (``[replicates, group size]``: the group's item indices drawn with replacement, counted)."""
    n_items = sum(len(indices) for indices in strata)
    block = max(1, _BLOCK_CELLS // n_items)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        yield size, [_draw_counts(rng, len(indices), size) for indices in strata]


def _seed_weights(rng: np.random.Generator, n_seeds: int, replicates: int) -> np.ndarray:
    """``[replicates, seeds]`` counts of seeds drawn with replacement; one seed is always itself."""
    if n_seeds == 1:
        return np.ones((replicates, 1))
    return _draw_counts(rng, n_seeds, replicates).astype(float)


def _draw_counts(rng: np.random.Generator, n: int, replicates: int) -> np.ndarray:
    """``[replicates, n]``: per replicate, how often each of ``n`` indices is drawn in ``n`` draws
    with replacement."""
    drawn = rng.integers(0, n, size=(replicates, n)) + n * np.arange(replicates)[:, None]
    return np.bincount(drawn.ravel(), minlength=replicates * n).reshape(replicates, n)


def _replicate_means(
    table: np.ndarray, strata: list[np.ndarray], seed_weights: np.ndarray, item_weights: list[np.ndarray]
) -> np.ndarray:
    """Per replicate, the mean over groups of the mean over (drawn seeds x drawn items) of the group:
    ``sum_s sum_i w_s c_i x[s, i] / (seeds * items)``."""
    n_seeds = table.shape[0]
    means = np.zeros(len(seed_weights))
    for indices, counts in zip(strata, item_weights):
        per_item = seed_weights @ table[:, indices]  # [replicates, group items]: seed-weighted sums
        means += (per_item * counts).sum(axis=1) / (n_seeds * len(indices))
    return means / len(strata)


def _stratified_mean(table: np.ndarray, strata: list[np.ndarray]) -> float:
    return float(np.mean([table[:, indices].mean() for indices in strata]))


def _percentile_interval(estimate: float, replicates: np.ndarray, level: float) -> Interval:
    low, high = np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    # Round-off in the replicate sums can put an end a hair past the estimate when every replicate
    # is the same number (e.g. all outcomes 1.0); the interval always holds its estimate.
    low, high = min(float(low), estimate), max(float(high), estimate)
    if not all(math.isfinite(v) for v in (estimate, low, high)):
        raise OutcomesError("the bootstrap gave a non-finite interval")
    return Interval(float(estimate), low, high, level)
