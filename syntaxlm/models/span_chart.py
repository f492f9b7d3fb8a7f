"""The span CRF's charts: the partition function, exact samples and k-best trees.

A tree's score is the sum of its nodes' label scores, ``s(y) = Σ_{(i, j, c) ∈ y} s[i, j, c]``,
over the binary trees of ``structure.spans`` (an unlabelled node, column ``NO_LABEL`` = 0, is
only a right child or one word; the root is labelled), and ``q(y | x) = exp(s(y)) / Z``
(Zhang et al. 2020's CRF, with labels in the tree's score). Three charts over the spans,
indexed by width (``Chart``):

- ``labelled[i, j] = log Σ_c≥1 exp s[i, j, c] + split[i, j]``,
- ``unlabelled[i, j] = s[i, j, 0] + split[i, j]``, ``anything = logaddexp(labelled, unlabelled)``,
- ``split[i, j] = log Σ_k exp(left[i, k] + anything[k, j])`` (0 for one word), where a left
  child is ``anything`` over one word and ``labelled`` over more;

and ``log Z = labelled[0, n]`` (the inside algorithm; its gradient with respect to the scores is
every node's marginal). ``sample_trees`` draws exact samples top-down from the same charts, with
each sample's exact ``log q(y | x)``; ``kbest_trees`` keeps the ``k`` best derivations of every
cell (Huang and Chiang 2005's algorithm 0), ``k = 1`` being the Viterbi tree. Scores are
``[B, N + 1, N + 1, C]`` tensors (entries with ``i ≥ j`` or beyond a sentence's length unused);
``lengths[b]`` is the number of words of sentence ``b``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from syntaxlm.structure.spans import NO_LABEL, Span

LABELLED, ANYTHING = 0, 1  # what a node of a sample must be: labelled (the root, a left child of
# more than one word) or anything (a right child, a one-word left child)


@dataclass
class Chart:
    """Inside log-scores of every span, ``[B, N + 1, N + 1]`` (entry ``[b, i, j]`` the span
    ``[i, j)``; ``−inf`` where ``j ≤ i``), and ``log_z`` ``[B]``."""

    labelled: Tensor
    anything: Tensor
    log_z: Tensor


def diagonal(scores: Tensor, width: int) -> Tensor:
    """``scores[:, i, i + width]`` for every ``i``: ``[B, N + 1 − width, C]``."""
    starts = torch.arange(scores.shape[1] - width, device=scores.device)
    return scores[:, starts, starts + width]


def _stripe(chart: Tensor, count: int, width: int, offset: tuple[int, int], *, across: bool) -> Tensor:
    """``[count, width, B]`` of a ``[N + 1, N + 1, B]`` chart: row ``i`` is ``chart[o + i, p + i + k]``
    for ``k < width`` (``across``) or ``chart[o + i + k, p + i]`` (down), without copying."""
    rows, columns, batch = chart.stride()
    start = offset[0] * rows + offset[1] * columns
    step = columns if across else rows
    return chart.as_strided(
        (count, width, chart.shape[2]), (rows + columns, step, batch), chart.storage_offset() + start
    )


def inside(scores: Tensor, lengths: Tensor) -> Chart:
    """The inside charts and ``log Z`` of every sentence (module docstring); differentiable. One
    vectorised step per width: the splits of all spans of a width are read as strided views of
    the charts (left children along a row, right children down a column)."""
    n_max = scores.shape[1] - 1
    if int(lengths.min()) < 1 or int(lengths.max()) > n_max:
        raise ValueError(f"sentence lengths must be in [1, {n_max}], got {lengths.tolist()}")
    batch = scores.shape[0]
    # Charts laid out [i, j, B] so that the strided views cover every sentence of the batch at once.
    shape = (n_max + 1, n_max + 1, batch)
    labelled = scores.new_full(shape, -float("inf"))
    anything = scores.new_full(shape, -float("inf"))
    left = scores.new_full(shape, -float("inf"))  # what a left child may be: anything over one word
    # Each span's labelled and unlabelled scores, [i, j, B], read by width as diagonal views.
    some_label = torch.logsumexp(scores[..., 1:], -1).permute(1, 2, 0)
    no_label = scores[..., NO_LABEL].permute(1, 2, 0)
    for width in range(1, n_max + 1):
        count = n_max + 1 - width
        if width == 1:
            split = scores.new_zeros(batch, count)
        else:
            pairs = _stripe(left, count, width - 1, (0, 1), across=True) + _stripe(
                anything, count, width - 1, (1, width), across=False
            )  # [count, splits, B]: left[i, i + d] + anything[i + d, i + width]
            split = torch.logsumexp(pairs, 1).transpose(0, 1)
        span_labelled = some_label.diagonal(width) + split
        span_anything = torch.logaddexp(span_labelled, no_label.diagonal(width) + split)
        labelled.diagonal(width).copy_(span_labelled)
        anything.diagonal(width).copy_(span_anything)
        left.diagonal(width).copy_(span_anything if width == 1 else span_labelled)
    labelled, anything = labelled.permute(2, 0, 1), anything.permute(2, 0, 1)
    log_z = labelled[torch.arange(batch, device=scores.device), 0, lengths.to(scores.device)]
    return Chart(labelled, anything, log_z)


def tree_scores(scores: Tensor, trees: Sequence[Sequence[Span]]) -> Tensor:
    """``s(y)`` of tree ``b`` (its binary nodes) under ``scores[b]``: ``[B]``, differentiable."""
    rows = [b for b, spans in enumerate(trees) for _ in spans]
    starts = [span.start for spans in trees for span in spans]
    ends = [span.end for spans in trees for span in spans]
    labels = [span.label for spans in trees for span in spans]
    picked = scores[rows, starts, ends, labels]
    out = scores.new_zeros(len(trees))
    return out.index_add(0, torch.as_tensor(rows, device=scores.device), picked)


# --- exact samples -----------------------------------------------------------------------------------


def sample_trees(
    scores: Tensor, lengths: Tensor, n: int, generators: Sequence[np.random.Generator]
) -> list[list[tuple[list[Span], float]]]:
    """``n`` independent samples of ``q(y | x)`` per sentence, each with its exact ``log q(y | x)``
    (float64): per sentence, ``n`` pairs ``(spans, logprob)``, drawn with its own generator of
    ``generators`` (``TreeSampler``)."""
    if len(generators) != len(lengths):
        raise ValueError(f"{len(generators)} generators for {len(lengths)} sentences")
    sampler = TreeSampler(scores, lengths)
    return [sampler.draw(b, n, generator) for b, generator in enumerate(generators)]


class TreeSampler:
    """Exact samples of ``q(y | x)`` for the sentences of a batch, in as many rounds as asked: the
    inside charts are computed once. Top-down: the root is labelled; a node draws its label
    (labelled, or not, as its role allows) and its split from the inside charts, all samples of a
    round at once. A sentence's draws depend on its generator's state only, so rounds of ``n``
    then ``m`` draws continue one stream."""

    def __init__(self, scores: Tensor, lengths: Tensor):
        self.scores = scores.detach().double()
        self.lengths = lengths.tolist()
        self.chart = inside(self.scores, lengths)
        self._numpy: dict[int, tuple] = {}

    def draw(self, b: int, n: int, generator: np.random.Generator) -> list[tuple[list[Span], float]]:
        """``n`` samples of sentence ``b``: pairs ``(spans, logprob)``."""
        if b not in self._numpy:
            n_words = self.lengths[b]
            labelled = self.chart.labelled[b, : n_words + 1, : n_words + 1].cpu().numpy()
            anything = self.chart.anything[b, : n_words + 1, : n_words + 1].cpu().numpy()
            self._numpy[b] = (self.scores[b].cpu().numpy(), labelled, anything, float(self.chart.log_z[b]))
        return _sample_sentence(*self._numpy[b], self.lengths[b], n, generator)


def _sample_sentence(
    scores: np.ndarray,
    labelled: np.ndarray,
    anything: np.ndarray,
    log_z: float,
    n_words: int,
    n: int,
    generator: np.random.Generator,
) -> list[tuple[list[Span], float]]:
    left = labelled.copy()
    ones = np.arange(n_words)
    left[ones, ones + 1] = anything[ones, ones + 1]
    spans: list[list[Span]] = [[] for _ in range(n)]
    logprob = np.full(n, -log_z)
    sample = np.arange(n)
    start = np.zeros(n, dtype=np.int64)
    end = np.full(n, n_words, dtype=np.int64)
    role = np.full(n, LABELLED)
    positions = np.arange(n_words + 1)
    while sample.size:
        cells = scores[start, end]  # [m, C]
        # Labelled or not: a node that may be anything is labelled with probability
        # exp(labelled − anything); then its label c ≥ 1 ∝ exp s[i, j, c].
        is_labelled = role == LABELLED
        maybe = ~is_labelled
        if maybe.any():
            p_labelled = np.exp(labelled[start[maybe], end[maybe]] - anything[start[maybe], end[maybe]])
            is_labelled[maybe] = generator.random(int(maybe.sum())) < p_labelled
        label = np.full(sample.size, NO_LABEL)
        if is_labelled.any():
            label[is_labelled] = 1 + _gumbel_argmax(cells[is_labelled, 1:], generator)
        np.add.at(logprob, sample, cells[np.arange(sample.size), label])
        for s, i, j, c in zip(sample.tolist(), start.tolist(), end.tolist(), label.tolist()):
            spans[s].append(Span(i, j, c))
        # Splits of the nodes over more than one word: k ∝ exp(left[i, k] + anything[k, j]).
        wide = end - start > 1
        sample, start, end = sample[wide], start[wide], end[wide]
        if not sample.size:
            break
        inner = (positions[None] > start[:, None]) & (positions[None] < end[:, None])
        weights = np.where(
            inner, left[start[:, None], positions[None]] + anything[positions[None], end[:, None]], -np.inf
        )
        split = _gumbel_argmax(weights, generator)
        left_role = np.where(split - start > 1, LABELLED, ANYTHING)
        sample = np.concatenate([sample, sample])
        start, end = np.concatenate([start, split]), np.concatenate([split, end])
        role = np.concatenate([left_role, np.full(split.size, ANYTHING)])
    return [(spans[s], float(logprob[s])) for s in range(n)]


def _gumbel_argmax(logits: np.ndarray, generator: np.random.Generator) -> np.ndarray:
    """One draw per row of ``softmax(logits)`` (rows may hold ``−inf``), by the Gumbel-max trick."""
    gumbel = -np.log(-np.log(generator.random(logits.shape)))
    return np.argmax(logits + gumbel, axis=-1)


# --- k best ----------------------------------------------------------------------------------------------


@dataclass
class _Cells:
    """The ``k`` best scores of one kind of cell at one width, ``[B, M, k]`` (descending, ``−inf``
    where fewer exist), and how each was made (``back``: arrays by name, numpy)."""

    values: Tensor
    back: dict[str, np.ndarray]


def tree_counts(n_words: int, n_columns: int, cap: int) -> list[int]:
    """``counts[w]``: how many trees a sentence of ``w`` words has (``w`` up to ``n_words``) over
    ``n_columns`` score columns (``NO_LABEL`` and the chain labels), each count at most ``cap``.
    The inside algorithm in exact integers, every score 0 (``exp log Z``): Catalan(w − 1) binary
    shapes, each with the label choices its nodes allow (a 3-word sentence over 3 columns: 270).
    The k best and the distinct samples of a sentence never need more than its count."""
    labels = n_columns - 1
    labelled, anything, left = [0, min(labels, cap)], [0, min(n_columns, cap)], [0, min(n_columns, cap)]
    for width in range(2, n_words + 1):
        split = min(sum(left[d] * anything[width - d] for d in range(1, width)), cap)
        labelled.append(min(labels * split, cap))
        anything.append(min(labelled[width] + split, cap))
        left.append(labelled[width])
    return labelled[: n_words + 1]


def kbest_bytes(batch: int, n_words: int, k: int) -> int:
    """About the most memory ``kbest_trees`` holds at once for ``batch`` sentences of up to
    ``n_words`` words: the candidates of its widest step, ``(width − 1) × k²`` per span of the
    width (at most ``n²/4`` in all) in float64, three times (the candidates, their concatenation
    and the top-k's working copy: measured within 15% on CPU), and the back-pointers of every span
    (``k`` per span, six int64 arrays and the values)."""
    widest = n_words * n_words // 4
    spans = n_words * (n_words + 1) // 2
    return batch * (24 * widest * k * k + 64 * spans * k)


def kbest_trees(scores: Tensor, lengths: Tensor, k: int) -> list[list[tuple[list[Span], float]]]:
    """The ``k`` highest-scoring trees of every sentence (fewer where fewer exist), best first:
    per sentence, pairs ``(spans, s(y))`` (subtract ``log_z`` for ``log q``). Every cell keeps its
    ``k`` best derivations; a derivation is a tree (the binary reading is unique), so the ``k`` are
    ``k`` distinct trees. ``k`` beyond the trees of the batch's longest sentence
    (``tree_counts``) is that many: all of them. Memory: ``kbest_bytes``."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    scores = scores.detach()
    n_max = scores.shape[1] - 1
    k = tree_counts(int(lengths.max()), scores.shape[-1], k)[-1]
    lab: list[_Cells | None] = [None]
    nul: list[_Cells | None] = [None]
    anything: list[_Cells | None] = [None]
    split: list[_Cells | None] = [None, None]
    for width in range(1, n_max + 1):
        cell = diagonal(scores, width)
        labels_k = min(k, cell.shape[-1] - 1)
        label_values, label_index = cell[..., 1:].topk(labels_k, -1)
        label_values = _pad(label_values, k)
        label_index = _pad(label_index + 1, k, fill=NO_LABEL)
        if width == 1:
            lab.append(_Cells(label_values, {"label": label_index.cpu().numpy()}))
            nul.append(_Cells(_pad(cell[..., NO_LABEL : NO_LABEL + 1], k), {}))
        else:
            count = cell.shape[1]
            candidates = [
                ((lab[d] if d > 1 else anything[d]).values[:, :count, :, None]  # type: ignore[union-attr]
                 + anything[width - d].values[:, d : d + count, None, :]).flatten(2)  # type: ignore[union-attr]
                for d in range(1, width)
            ]  # fmt: skip
            best, index = _topk(torch.cat(candidates, -1), k)
            index = index.cpu().numpy()
            split.append(_Cells(best, {"d": 1 + index // (k * k), "a": index // k % k, "b": index % k}))
            combined, index = _topk((label_values[..., :, None] + best[..., None, :]).flatten(2), k)
            index = index.cpu().numpy()
            labels = np.take_along_axis(label_index.cpu().numpy(), index // k, -1)
            lab.append(_Cells(combined, {"label": labels, "split": index % k}))
            nul.append(
                _Cells(cell[..., NO_LABEL, None] + best, {"split": np.broadcast_to(np.arange(k), best.shape)})
            )
        merged, index = _topk(torch.cat([lab[width].values, nul[width].values], -1), k)  # type: ignore[union-attr]
        anything.append(_Cells(merged, {"index": index.cpu().numpy()}))
    out = []
    for b, n_words in enumerate(lengths.tolist()):
        root = lab[n_words].values[b, 0].cpu().numpy()  # type: ignore[union-attr]
        trees = []
        for rank in range(k):
            if not np.isfinite(root[rank]):
                break
            trees.append((_backtrack(b, n_words, rank, lab, nul, anything, split), float(root[rank])))
        out.append(trees)
    return out


def _pad(values: Tensor, k: int, fill: float = -float("inf")) -> Tensor:
    """``values`` ``[..., m]`` padded to ``[..., k]`` with ``fill``."""
    if values.shape[-1] >= k:
        return values[..., :k]
    pad = values.new_full((*values.shape[:-1], k - values.shape[-1]), fill)
    return torch.cat([values, pad], -1)


def _topk(values: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The ``k`` largest of the last axis (padded with ``−inf`` where it is shorter)."""
    best, index = values.topk(min(k, values.shape[-1]), -1)
    return _pad(best, k), _pad(index, k, fill=0)


def _backtrack(b, n_words, rank, lab, nul, anything, split) -> list[Span]:
    """The spans of derivation ``rank`` of sentence ``b``'s root."""
    spans = []
    stack = [("lab", 0, n_words, rank)]
    while stack:
        kind, i, j, r = stack.pop()
        width = j - i
        if kind == "any":
            index, k = int(anything[width].back["index"][b, i, r]), lab[width].values.shape[-1]
            kind, r = ("lab", index) if index < k else ("nul", index - k)
        cells = lab[width] if kind == "lab" else nul[width]
        label = int(cells.back["label"][b, i, r]) if kind == "lab" else NO_LABEL
        spans.append(Span(i, j, label))
        if width == 1:
            continue
        s = int(cells.back["split"][b, i, r])
        d = int(split[width].back["d"][b, i, s])
        stack.append(("any", i + d, j, int(split[width].back["b"][b, i, s])))
        stack.append(("lab" if d > 1 else "any", i, i + d, int(split[width].back["a"][b, i, s])))
    return spans
