"""The papers' figures, drawn from numbers: each function returns a matplotlib ``Figure``.

- ``attention_mask_figure``: a TG sequence's STACK/COMPOSE mask as a grid (TG Fig. 2b), STACK
  rows blue, COMPOSE rows orange, tokens along both axes;
- ``distance_tree_figure``: a sentence's syntactic distances as bars between the words and the
  binary tree PRPN's parser reads from them (PRPN Fig. 5), its near-tie splits marked and noted;
- ``binary_tree_figure``: an induced binary tree over the words (SOM's trees, which come without
  distances);
- ``head_masks_figure``: several heads' boolean attention masks side by side (PLM-mask's buffer
  and stack heads);
- ``attention_weights_figure``: one head's attention probabilities as a heat map;
- ``circuit_accuracy_figure``: SyntaxGym accuracy per circuit per model (TG Fig. 4, structural
  guidance Fig. 5);
- ``perplexity_vs_sg_figure``: perplexity against SG score, one point per model, named clear of
  the others (structural guidance Fig. 4);
- ``delta_loglik_vs_perplexity_figure``: a model's gain in predicting reading times (ΔLL, with
  its interval) against its perplexity (Goodkind & Bicknell 2018);
- ``surprisal_figure``: per-word surprisal along one sentence for several models;
- ``training_curves_figure``: training and validation loss against step (``read_loss_curves``
  reads them from a run's ``log.csv``), one line per run, with baselines.
- ``learning_curve_figure``: accuracy against training size (log scale) with intervals, one
  panel per phenomenon, one line and band per model;
- ``probe_accuracy_figure``: a composition probe's held-out accuracy by layer.

``save_figure`` writes a PNG atomically. Figures are made without pyplot (no global state, no
display needed). Made to be read at their default size: words and names never overlap, an
accuracy of 0 shows, chance is a dashed line, axes say which way is better (``better``), and
models or runs differ in colour, line style and marker (``series_style``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence, Set
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap, to_hex
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Rectangle
from matplotlib.textpath import TextPath
from matplotlib.transforms import Bbox

from syntaxlm.errors import InputFormatError, TreeError
from syntaxlm.eval.intervals import Interval
from syntaxlm.files import atomic_writer
from syntaxlm.structure.distances import nested_tree_from_distances
from syntaxlm.structure.tg import TGSequence
from syntaxlm.structure.tg_view import DENSE_CELL_LIMIT

STACK_COLOUR, COMPOSE_COLOUR = "#4c72b0", "#dd8452"
TIE_COLOUR = "#b5480b"  # a distance tree's near-tie nodes and its note


def save_figure(figure: Figure, path: str | Path, *, dpi: int = 150) -> Path:
    """Write ``figure`` as a PNG (atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=dpi, bbox_inches="tight")
    return path


def attention_mask_figure(sequence: TGSequence, spell: Callable[[int], str], *, title: str = "") -> Figure:
    """TG Fig. 2b: cell (i, j) is coloured when position i attends j, by the operation of row i
    (a TXL sequence's causal mask has STACK rows only, drawn without the legend)."""
    if len(sequence) ** 2 > DENSE_CELL_LIMIT:
        raise TreeError(
            f"a TG sequence of {len(sequence):,} positions is too long to draw: its dense mask would "
            f"have {len(sequence) ** 2:,} cells, over the limit of {DENSE_CELL_LIMIT:,} (a sequence of "
            f"at most {math.isqrt(DENSE_CELL_LIMIT):,} positions)"
        )
    mask = sequence.attention_mask()
    cells = np.where(mask, np.where(sequence.compose[:, None], 2, 1), 0)
    tokens = [spell(int(i)) for i in sequence.inputs]
    size = max(3.0, 0.32 * len(tokens) + 1.5)
    figure = Figure(figsize=(size, size))
    axes = figure.subplots()
    axes.imshow(cells, cmap=ListedColormap(["white", STACK_COLOUR, COMPOSE_COLOUR]), vmin=0, vmax=2)
    ticks = np.arange(len(tokens))
    axes.set_xticks(ticks, tokens, rotation=90, fontsize=8)
    axes.set_yticks(ticks, [f"{i} {t}" for i, t in enumerate(tokens)], fontsize=8)
    axes.set_xticks(ticks - 0.5, minor=True)
    axes.set_yticks(ticks - 0.5, minor=True)
    axes.grid(which="minor", color="#dddddd", linewidth=0.5)
    axes.tick_params(which="minor", length=0)
    axes.set_xlabel("attended position j")
    axes.set_ylabel("attending position i")
    if sequence.variant == "tg":
        handles = [Rectangle((0, 0), 1, 1, color=c) for c in (STACK_COLOUR, COMPOSE_COLOUR)]
        axes.legend(handles, ["STACK", "COMPOSE"], loc="upper right", fontsize=8)
    axes.set_title(title or ("STACK/COMPOSE attention" if sequence.variant == "tg" else "causal attention"))
    return figure


def head_masks_figure(masks: Mapping[str, np.ndarray], tokens: Sequence[str], *, title: str = "") -> Figure:
    """Boolean ``[T, T]`` masks side by side, one panel per head (``masks[name]``; ``True`` = row
    ``i`` may attend column ``j``), tokens along both axes."""
    n = len(tokens)
    size = max(3.0, 0.3 * n + 1.5)
    figure = Figure(figsize=(size * len(masks), size + 0.4), layout="constrained")
    panels = figure.subplots(1, len(masks), squeeze=False)[0]
    ticks = np.arange(n)
    for k, (axes, (name, mask)) in enumerate(zip(panels, masks.items())):
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (n, n):
            raise ValueError(f"{name}: a {mask.shape} mask for {n} tokens")
        axes.imshow(mask.astype(int), cmap=ListedColormap(["white", STACK_COLOUR]), vmin=0, vmax=1)
        _token_grid(axes, ticks, tokens, row_labels=k == 0)
        axes.set_title(name, fontsize=10)
    figure.suptitle(title or "attention masks", fontsize=12, y=1.0, va="bottom")
    return figure


def attention_weights_figure(
    weights: np.ndarray, tokens: Sequence[str], *, key_tokens: Sequence[str] | None = None, title: str = ""
) -> Figure:
    """Attention probabilities ``weights[i, j]`` (row ``i`` attends column ``j``) as a heat map,
    cells of probability 0 (masked) white; query tokens down the side, key tokens (the same by
    default) along the top."""
    weights = np.asarray(weights, dtype=float)
    key_tokens = list(tokens if key_tokens is None else key_tokens)
    if weights.shape != (len(tokens), len(key_tokens)):
        raise ValueError(f"{weights.shape} weights for {len(tokens)} x {len(key_tokens)} tokens")
    size = max(3.5, 0.3 * max(len(tokens), len(key_tokens)) + 2.0)
    figure = Figure(figsize=(size + 0.8, size), layout="constrained")
    axes = figure.subplots()
    # Zero probability (a masked cell) is white; any attention at all is coloured.
    cells = np.ma.masked_where(weights == 0, weights)
    colours = colormaps["viridis"].with_extremes(bad="white")
    image = axes.imshow(cells, cmap=colours, vmin=0, vmax=max(float(weights.max(initial=0)), 1e-9))
    axes.set_xticks(np.arange(len(key_tokens)), key_tokens, rotation=90, fontsize=8)
    axes.set_yticks(np.arange(len(tokens)), [f"{i} {t}" for i, t in enumerate(tokens)], fontsize=8)
    axes.set_xlabel("attended position j")
    axes.set_ylabel("attending position i")
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention probability")
    axes.set_title(title or "attention")
    return figure


def _token_grid(axes, ticks, tokens, *, row_labels: bool) -> None:
    """Tokens on both axes of a mask panel, with light cell borders."""
    axes.set_xticks(ticks, tokens, rotation=90, fontsize=8)
    labels = [f"{i} {t}" for i, t in enumerate(tokens)] if row_labels else [""] * len(tokens)
    axes.set_yticks(ticks, labels, fontsize=8)
    axes.set_xticks(ticks - 0.5, minor=True)
    axes.set_yticks(ticks - 0.5, minor=True)
    axes.grid(which="minor", color="#dddddd", linewidth=0.5)
    axes.tick_params(which="minor", length=0)
    axes.set_xlabel("attended position j")
    if row_labels:
        axes.set_ylabel("attending position i")


TIE_TOLERANCE = 0.02  # distances closer than this fraction of the largest one are a tie
_WORD_FONTSIZE = 9


def distance_tree_figure(words: Sequence[str], distances: Sequence[float], *, title: str = "") -> Figure:
    """PRPN Fig. 5: distances as bars between words (their values above them), under the tree the
    parser builds from them. A split decided by a tie (the span's largest distance within
    ``TIE_TOLERANCE`` of another) is marked on its nodes, and a note under the figure says how many
    nodes come from such near-ties, or that every split does when all the distances are that close."""
    values = np.asarray(distances, dtype=float)
    nested = nested_tree_from_distances(values, list(range(len(words))))
    x, margin = _word_positions(words)
    ties = tie_break_spans(values)
    figure, (tree_axes, bar_axes) = _word_axes(x, margin, heights=(3.2, 1.6), panels=2)
    _draw_word_tree(tree_axes, words, x, nested, marked=ties)
    # Distance i relates words i-1 and i: its bar stands between them (word 0's before the first).
    left = np.concatenate([[x[0] - (x[1] - x[0] if len(x) > 1 else 0.6)], x[:-1]])
    bars = bar_axes.bar((left + x) / 2, values, width=0.18, color=STACK_COLOUR)
    if len(words) <= 40:
        decimals = max(0, 2 - math.floor(math.log10(max(float(np.abs(values).max()), 1e-12))))
        bar_axes.bar_label(bars, [f"{v:.{decimals}f}" for v in values], fontsize=7, padding=1)
    bar_axes.set_xticks(x, list(words), rotation=45, ha="right", fontsize=_WORD_FONTSIZE)
    bar_axes.set_ylabel("distance")
    bar_axes.margins(y=0.15)
    bar_axes.spines[["top", "right"]].set_visible(False)
    tree_axes.set_title(title or "syntactic distances and the induced tree")
    note = _tie_note(values, ties)
    if note:  # under the word labels of the bars
        below = bar_axes.get_tightbbox(FigureCanvasAgg(figure).get_renderer()).y0 - 6
        figure.text(
            0.5, below / figure.bbox.height, note, ha="center", va="top", fontsize=9, color=TIE_COLOUR,
            wrap=True,
        )  # fmt: skip
    return figure


def tie_break_spans(distances: Sequence[float]) -> set[tuple[int, int]]:
    """The ``[lo, hi)`` word spans of the nodes that PRPN's parser makes from a near-tie: in the
    span it splits, another distance is within ``TIE_TOLERANCE`` (a fraction of the sentence's
    largest distance) of the span's largest."""
    values = np.asarray(distances, dtype=float)
    tolerance = TIE_TOLERANCE * max(float(np.abs(values).max(initial=0)), 1e-12)
    ties, spans = set(), [(0, len(values))]
    while spans:
        lo, hi = spans.pop()
        if hi - lo < 2:
            continue
        span = values[lo:hi]
        split = lo + int(np.argmax(span))
        tie = np.count_nonzero(span >= span.max() - tolerance) > 1
        # As the parser: the split word opens the right part, alone when it is the span's first.
        if split == lo:
            spans.append((lo + 1, hi))
        else:
            spans += [(lo, split), (split + 1, hi)]
            if tie and split < hi - 1:  # the node (x_i, (x_>i)) is made by the same split
                ties.add((split, hi))
        if tie:
            ties.add((lo, hi))
    return ties


def _tie_note(values: np.ndarray, ties: set[tuple[int, int]]) -> str:
    """The note under a distance tree on its tie-break nodes ('' when there are none)."""
    splits = len(values) - 1  # a binary tree's nodes
    if not ties or splits < 1:
        return ""
    low, high = float(values.min()), float(values.max())
    if high - low <= TIE_TOLERANCE * max(abs(low), abs(high), 1e-12):
        return (
            f"All {len(values)} distances lie within {TIE_TOLERANCE:.0%} of each other ({low:.3g} to "
            f"{high:.3g}): every split is in effect a tie-break, not a preference of the model."
        )
    marked, verb = ("an open circle", "comes") if len(ties) == 1 else ("open circles", "come")
    return (
        f"{len(ties)} of the tree's {splits} nodes ({marked}) {verb} from near-ties: the largest distance "
        f"of the span split is within {TIE_TOLERANCE:.0%} of another, so a small change in the distances "
        "would move the split."
    )


def binary_tree_figure(words: Sequence[str], nested, *, title: str = "") -> Figure:
    """A binary tree over the words: ``nested`` lists whose leaves are word indices, e.g.
    ``[[0, 1], 2]``, drawn as ``distance_tree_figure`` draws its tree."""
    x, margin = _word_positions(words)
    figure, [axes] = _word_axes(x, margin, heights=(3.2,), panels=1)
    _draw_word_tree(axes, words, x, nested)
    axes.set_title(title or "induced tree")
    return figure


def _word_positions(words: Sequence[str]) -> tuple[np.ndarray, float]:
    """The centre of each word along a tree's baseline, in inches from the first, so that no two
    words touch whatever their lengths; and the margin to leave either side."""
    font = FontProperties(size=_WORD_FONTSIZE)
    widths = np.array([TextPath((0, 0), word, prop=font).get_extents().width / 72 for word in words])
    gaps = np.maximum((widths[:-1] + widths[1:]) / 2 + 0.2, 0.4)
    x = np.concatenate([[0.0], np.cumsum(gaps)])
    return x, max(0.4, widths[0] / 2 + 0.1, widths[-1] / 2 + 0.1)


def _word_axes(x: np.ndarray, margin: float, *, heights: tuple[float, ...], panels: int):
    """A figure whose panels share an x axis measured in inches (one data unit is one inch), so
    words placed by ``_word_positions`` keep their spacing."""
    left, right = 0.8, 0.2  # inches beside the panels: the distance axis's labels
    width = float(x[-1]) + 2 * margin + left + right
    figure = Figure(figsize=(width, sum(heights) + 0.5 * panels))
    ratios = {"height_ratios": heights}
    axes = figure.subplots(panels, 1, gridspec_kw=ratios, sharex=True, squeeze=False)[:, 0]
    figure.subplots_adjust(left=left / width, right=1 - right / width, hspace=0.25)
    axes[0].set_xlim(-margin, float(x[-1]) + margin)
    return figure, axes


def _draw_word_tree(axes, words, x, nested, *, marked: Set[tuple[int, int]] = frozenset()) -> None:
    """The tree with the words under its leaves; nodes over a ``marked`` span as open circles."""
    _draw_binary_tree(axes, nested, x, marked)
    for position, word in zip(x, words):
        axes.text(position, -0.1, word, ha="center", va="top", fontsize=_WORD_FONTSIZE)
    axes.axis("off")


def _draw_binary_tree(axes, nested, x, marked) -> None:
    """Leaves at ``x[word index]``, y = 0; a node above its children at 1 + the taller child's
    height; a node whose ``[lo, hi)`` word span is in ``marked`` gets an open circle."""
    placed: dict[int, tuple[float, float, int, int]] = {}  # id -> x, y, lo, hi

    def place(child):
        return placed[id(child)] if isinstance(child, list) else (float(x[child]), 0.0, child, child + 1)

    stack = [(nested, False)]
    circles = []
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, list):
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in node)
            continue
        children = [place(child) for child in node]
        cx = sum(child[0] for child in children) / len(children)
        cy = 1 + max(child[1] for child in children)
        span = (min(child[2] for child in children), max(child[3] for child in children))
        placed[id(node)] = (cx, cy, *span)
        for child_x, child_y, _, _ in children:
            axes.plot([cx, child_x], [cy, child_y], color="#333333", linewidth=1)
        if span in marked:
            circles.append((cx, cy))
    if circles:
        x_circles, y_circles = zip(*circles)
        axes.scatter(
            x_circles, y_circles, s=40, facecolors="white", edgecolors=TIE_COLOUR, linewidths=1.5, zorder=3
        )
    top = max((y for _, y, _, _ in placed.values()), default=0.0)
    axes.set_ylim(-0.8, top + 0.5)


_BARS_PER_ROW = 48  # grouped bars per panel row before the groups wrap onto another row


def circuit_accuracy_figure(
    accuracy: Mapping[str, Mapping[str, float]],
    *,
    circuits: Sequence[str] | None = None,
    title: str = "",
    intervals: Mapping[str, Mapping[str, Interval]] | None = None,
    chance: float | Mapping[str, float] | None = None,
) -> Figure:
    """Grouped bars: ``accuracy[model][circuit]`` in [0, 1], one group per circuit (in the order
    given, else alphabetical), wrapped onto several rows when there are many bars; a circuit a model
    lacks is left empty, and an accuracy of 0 shows as a short stub on the axis.
    ``intervals[model][circuit]`` (``eval.intervals.Interval``) adds error bars. ``chance`` draws
    the chance level as a dashed line over each group: one number for all, or one per circuit
    (SyntaxGym's conjunctive predictions have chance below 0.5)."""
    models = list(accuracy)
    if circuits is None:
        circuits = sorted({circuit for scores in accuracy.values() for circuit in scores})
    circuits = list(circuits)
    per_row = max(1, min(len(circuits), _BARS_PER_ROW // max(1, len(models))))
    rows = max(1, math.ceil(len(circuits) / per_row))
    width = 0.8 / max(1, len(models))
    figure = Figure(
        figsize=(max(6.0, 0.22 * per_row * max(1, len(models)) + 3.5), 0.5 + 3.2 * rows), layout="constrained"
    )
    panels = figure.subplots(rows, 1, squeeze=False)[:, 0]
    if isinstance(chance, Mapping):
        levels = {circuit: chance.get(circuit) for circuit in circuits}
    else:
        levels = dict.fromkeys(circuits, None if chance is None else float(chance))
    distinct = {round(level, 3) for level in levels.values() if level is not None}
    chance_label = (
        f"chance ({distinct.pop():.2f}): conditions not told apart"
        if len(distinct) == 1
        else "chance: conditions not told apart"
    )
    legend: dict[str, Any] = {}  # label -> handle, each once
    for row, axes in enumerate(panels):
        group = circuits[row * per_row : (row + 1) * per_row]
        _accuracy_bars(axes, accuracy, models, group, width, intervals or {})
        for i, circuit in enumerate(group):
            if levels[circuit] is not None:
                (line,) = axes.plot(
                    [i - 0.45, i + 0.45], [levels[circuit]] * 2, linestyle="--", color="#444444",
                    linewidth=1.2, zorder=5,
                )  # fmt: skip
                legend.setdefault(chance_label, line)
        axes.set_xticks(np.arange(len(group)), group, rotation=20, ha="right")
        axes.set_xlim(-0.6, per_row - 0.4)
        axes.set_ylim(0, 1.02)
        axes.set_ylabel(better("SG accuracy", "higher"))
        axes.spines[["top", "right"]].set_visible(False)
        for handle, label in zip(*axes.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    labels = sorted(legend, key=lambda label: label == chance_label)  # the models, then chance
    handles = [legend[label] for label in labels]
    figure.legend(handles, labels, loc="outside right center", fontsize=8, frameon=False)
    suffix = " (error bars: 95% intervals)" if intervals else ""
    figure.suptitle((title or "SyntaxGym accuracy by circuit") + suffix, fontsize=11)
    return figure


def _accuracy_bars(axes, accuracy, models, group, width, intervals) -> None:
    """One panel of ``circuit_accuracy_figure``: the bars, stubs at 0 and error bars of ``group``."""
    x = np.arange(len(group))
    for k, model in enumerate(models):
        values = np.array([accuracy[model].get(circuit, np.nan) for circuit in group], dtype=float)
        offset = x + (k - (len(models) - 1) / 2) * width
        colour = series_colour(k)
        axes.bar(offset, values, width, label=model, color=colour)
        for position in offset[values == 0]:  # a bar of height 0 is invisible: a stub on the axis
            axes.plot(
                [position - width / 2, position + width / 2], [0, 0], color=colour, linewidth=4,
                solid_capstyle="butt", clip_on=False, zorder=3,
            )  # fmt: skip
        shown = intervals.get(model, {})
        where = [i for i, circuit in enumerate(group) if circuit in shown and not np.isnan(values[i])]
        if where:
            low = [values[i] - shown[group[i]].low for i in where]
            high = [shown[group[i]].high - values[i] for i in where]
            axes.errorbar(
                offset[where], values[where], yerr=[np.maximum(low, 0), np.maximum(high, 0)],
                fmt="none", ecolor="#222222", elinewidth=0.7, capsize=1.5, zorder=4,
            )  # fmt: skip


def perplexity_vs_sg_figure(
    points: Mapping[str, tuple[float, float]],
    *,
    xlabel: str = "perplexity",
    ylabel: str = "SG score",
    chance: float | None = None,
    title: str = "",
) -> Figure:
    """One point per model: ``points[model] = (perplexity, SG score)``, each in its own colour and
    marker with its name beside it, placed clear of the other names and points (with a leader line
    when it had to move away). The axis labels say which way is better; ``chance`` (the score of a
    model that cannot tell the conditions apart) is a dashed line."""
    figure = Figure(figsize=(6, 4.5))
    axes = figure.subplots()
    xy = np.array([points[model] for model in points], dtype=float).reshape(-1, 2)
    for k, (model, (perplexity, score)) in enumerate(points.items()):
        style = series_style(k)
        axes.scatter(perplexity, score, color=style["color"], marker=style["marker"], s=40, zorder=3)
    ys = list(xy[:, 1]) + ([chance] if chance is not None else [])
    axes.set_xlim(*_padded(xy[:, 0], 0.12))
    axes.set_ylim(*_padded(np.array(ys), 0.15))
    obstacles = []
    if chance is not None:
        axes.axhline(chance, linestyle="--", linewidth=0.9, color="grey")
        obstacles.append(
            axes.annotate(
                f"chance {chance:.2f}",
                (1, chance),
                xycoords=("axes fraction", "data"),
                xytext=(-2, 2),
                textcoords="offset points",
                ha="right",
                va="bottom",
                fontsize=8,
                color="grey",
            )
        )
    colours = [series_style(k)["color"] for k in range(len(points))]
    place_point_labels(axes, xy, list(points), colours=colours, obstacles=obstacles)
    axes.set_xlabel(better(xlabel, "lower"))
    axes.set_ylabel(better(ylabel, "higher"))
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "perplexity and syntactic generalisation")
    return figure


def delta_loglik_vs_perplexity_figure(
    points: Mapping[str, tuple[float, Interval]],
    *,
    xlabel: str = "test perplexity per word",
    title: str = "",
) -> Figure:
    """Goodkind & Bicknell (2018) Fig. 1: one point per model, ``points[model] = (perplexity, ΔLL
    with its interval)``, the interval as a vertical bar, named clear of the others; zero (no gain
    over the baseline) is a dashed line, and the axes say which way is better."""
    figure = Figure(figsize=(6, 4.5))
    axes = figure.subplots()
    xy = np.array([(perplexity, interval.estimate) for perplexity, interval in points.values()], dtype=float)
    xy = xy.reshape(-1, 2)
    for k, (perplexity, interval) in enumerate(points.values()):
        style = series_style(k)
        axes.errorbar(
            perplexity, interval.estimate,
            yerr=[[interval.estimate - interval.low], [interval.high - interval.estimate]],
            color=style["color"], marker=style["marker"], markersize=6, elinewidth=1, capsize=3, zorder=3,
        )  # fmt: skip
    lows = [interval.low for _, interval in points.values()]
    highs = [interval.high for _, interval in points.values()]
    axes.set_xlim(*_padded(xy[:, 0], 0.15))
    axes.set_ylim(*_padded(np.array([0.0, *lows, *highs]), 0.12))
    axes.axhline(0, linestyle="--", linewidth=0.9, color="grey")
    colours = [series_style(k)["color"] for k in range(len(points))]
    place_point_labels(axes, xy, list(points), colours=colours)
    axes.set_xlabel(better(xlabel, "lower"))
    axes.set_ylabel(better("ΔLL (nats per token, 95% interval)", "higher"))
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "surprisal and reading times")
    return figure


def better(label: str, direction: str) -> str:
    """An axis label that says which way is better: ``perplexity (lower is better)``; a label
    ending in a parenthesis takes it inside: ``perplexity (per word; lower is better)``."""
    if label.endswith(")"):
        return f"{label[:-1]}; {direction} is better)"
    return f"{label} ({direction} is better)"


def _padded(values: np.ndarray, fraction: float) -> tuple[float, float]:
    """Axis limits around ``values`` with ``fraction`` of their range (or of their size) either side."""
    low, high = float(np.min(values)), float(np.max(values))
    pad = fraction * ((high - low) or abs(high) or 1.0)
    return low - pad, high + pad


_LABEL_DIRECTIONS = [(1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]


def place_point_labels(
    axes, xy: np.ndarray, names: Sequence[str], *, colours: Sequence[str] = (), obstacles: Sequence = ()
) -> list:
    """Name each point ``xy[k]`` (data coordinates) with ``names[k]``: of a ring of places around the
    point, nearest first, the first where the name overlaps no other name, point or ``obstacles``
    (artists) and stays inside the axes; else the place with the least overlap. A name placed away
    from its point gets a leader line; ``colours[k]``, when given, colours name ``k`` as its point.
    Call once the axis limits are final."""
    renderer = FigureCanvasAgg(axes.figure).get_renderer()
    inside = axes.get_window_extent(renderer)
    pixels = axes.transData.transform(xy)
    radius = 4 * axes.figure.dpi / 72  # a point's marker, in pixels
    taken = [Bbox.from_bounds(px - radius, py - radius, 2 * radius, 2 * radius) for px, py in pixels]
    taken += [artist.get_window_extent(renderer) for artist in obstacles]
    labels = []
    for k, ((x, y), name) in enumerate(zip(xy, names)):
        best, best_cost = (6, 6), math.inf
        for offset in ((dx * r, dy * r) for r in (6, 14, 24, 36) for dx, dy in _LABEL_DIRECTIONS):
            label = _point_label(axes, name, (x, y), offset)
            box = label.get_window_extent(renderer)
            label.remove()
            cost = sum(_overlap(box, other) for other in taken) + _outside(box, inside)
            if cost < best_cost:
                best, best_cost = offset, cost
            if cost == 0:
                break
        label = _point_label(axes, name, (x, y), best, leader=math.hypot(*best) > 10)
        label.set_color(colours[k] if colours else "black")
        taken.append(label.get_window_extent(renderer))
        labels.append(label)
    return labels


def _point_label(axes, name: str, xy, offset: tuple[float, float], *, leader: bool = False):
    """``name`` at ``offset`` points from ``xy``, on the side the offset points to."""
    dx, dy = np.sign(offset)
    return axes.annotate(
        name, xy, xytext=offset, textcoords="offset points", fontsize=8,
        ha={1: "left", -1: "right", 0: "center"}[dx], va={1: "bottom", -1: "top", 0: "center"}[dy],
        arrowprops={"arrowstyle": "-", "color": "#888888", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 4}
        if leader else None,
    )  # fmt: skip


def _overlap(box: Bbox, other: Bbox) -> float:
    """The area two display boxes share."""
    width = min(box.x1, other.x1) - max(box.x0, other.x0)
    height = min(box.y1, other.y1) - max(box.y0, other.y0)
    return max(width, 0.0) * max(height, 0.0)


def _outside(box: Bbox, inside: Bbox) -> float:
    """The area of ``box`` outside ``inside``."""
    return box.width * box.height - _overlap(box, inside)


_LINESTYLES = ("-", "--", "-.", ":")
# Matplotlib's ten default colours, then the light shade of each (tab20's odd entries): twenty
# models or runs of one figure get colours of their own (the quickstart draws eleven).
_COLOURS = tuple(f"C{k}" for k in range(10)) + tuple(
    to_hex(colour) for colour in colormaps["tab20"].colors[1::2]
)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def series_colour(k: int) -> str:
    """The colour of the ``k``-th model or run of a figure."""
    return _COLOURS[k % len(_COLOURS)]


def series_style(k: int) -> dict[str, str]:
    """The look of the ``k``-th model or run of a figure: a colour, a line style and a marker, so
    that lines that cross or lie on one another, or share a colour, stay apart."""
    return {
        "color": series_colour(k),
        "linestyle": _LINESTYLES[k % len(_LINESTYLES)],
        "marker": _MARKERS[k % len(_MARKERS)],
    }


def surprisal_figure(
    words: Sequence[str], surprisal_bits: Mapping[str, Sequence[float]], *, title: str = ""
) -> Figure:
    """Per-word surprisal (bits) along one sentence, one line per model (``series_style``)."""
    figure = Figure(figsize=(max(5.0, 0.6 * len(words) + 1), 3.5))
    axes = figure.subplots()
    for k, (model, values) in enumerate(surprisal_bits.items()):
        if len(values) != len(words):
            raise ValueError(f"{model}: {len(values)} surprisals for {len(words)} words")
        axes.plot(np.arange(len(words)), values, label=model, markersize=5, **series_style(k))
    axes.set_xticks(np.arange(len(words)), list(words), rotation=45, ha="right")
    axes.set_xlabel("word")
    axes.set_ylabel("surprisal (bits)")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "per-word surprisal")
    return figure


Curve = tuple[Sequence[int], Sequence[float]]  # (steps, losses)


def read_loss_curves(log: str | Path) -> tuple[Curve, Curve]:
    """The training and the validation loss a run's ``log.csv`` records, each ``(steps, losses)``."""
    log = Path(log)
    train: Curve = ([], [])
    valid: Curve = ([], [])
    with open(log, newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            for column, (steps, losses) in (("train_loss", train), ("valid_loss", valid)):
                if not row.get(column):
                    continue
                try:
                    step, loss = int(row["step"]), float(row[column])
                except (TypeError, ValueError):
                    raise InputFormatError(
                        f"step {row.get('step')!r}, {column} {row[column]!r}",
                        path=log,
                        line=line,
                        expected="a training log row: an integer step and a number",
                    ) from None
                steps.append(step)
                losses.append(loss)
    return train, valid


def training_curves_figure(
    *,
    train: Mapping[str, Curve] | None = None,
    valid: Mapping[str, Curve] | None = None,
    baselines: Mapping[str, float] | None = None,
    unit: str = "nats/token",
    title: str = "",
) -> Figure:
    """Loss against training step: a panel of the training loss and one of the validation loss
    (each when given; ``read_loss_curves`` reads both from a run's log), one line per run in its
    own colour, line style and marker, the same in both panels, with the legend outside.
    ``baselines`` (e.g. the unigram model's validation loss) are dotted grey lines in the
    validation panel, one per value, named at its left end."""
    panels = {
        name: curves for name, curves in (("training loss", train), ("validation loss", valid)) if curves
    }
    if not panels:
        raise ValueError("no curves given: expected training or validation losses")
    runs = list(dict.fromkeys(run for curves in panels.values() for run in curves))
    figure = Figure(figsize=(4.6 * len(panels) + 1.6, 4.0), layout="constrained")
    grid = figure.subplots(1, len(panels), squeeze=False, sharex=True)[0]
    for axes, (name, curves) in zip(grid, panels.items()):
        for run, (steps, losses) in curves.items():
            if len(steps) != len(losses):
                raise ValueError(f"{run}: {len(steps)} steps for {len(losses)} losses")
            k = runs.index(run)
            # Markers spread out and staggered from run to run, so that each line shows some.
            every = max(1, len(steps) // 8)
            axes.plot(steps, losses, label=run, markersize=5, markevery=(k % every, every), **series_style(k))
        if name == "validation loss":
            _draw_baselines(axes, baselines or {})
        axes.set_xlabel("step")
        axes.set_ylabel(better(unit, "lower"))
        axes.spines[["top", "right"]].set_visible(False)
        axes.set_title(name, fontsize=11)
    handles = {
        label: handle for axes in figure.axes for handle, label in zip(*axes.get_legend_handles_labels())
    }
    figure.legend(
        list(handles.values()), list(handles), loc="outside right center", fontsize=8, frameon=False
    )
    figure.suptitle(title or "training curves", fontsize=12)
    return figure


def _draw_baselines(axes, baselines: Mapping[str, float]) -> None:
    """Dotted grey lines, runs sharing a value named together at the line's left end (where the
    losses, not yet down to a baseline, leave room)."""
    names: dict[float, list[str]] = {}
    for name, value in baselines.items():
        names.setdefault(round(float(value), 3), []).append(name)
    for value, named in names.items():
        axes.axhline(value, linestyle=":", linewidth=0.9, color="grey")
        axes.annotate(
            ", ".join(named), (0, value), xycoords=("axes fraction", "data"), xytext=(2, 2),
            textcoords="offset points", ha="left", va="bottom", fontsize=7, color="grey",
        )  # fmt: skip


def learning_curve_figure(
    points: Mapping[str, Mapping[str, Sequence[tuple[float, float, float, float]]]],
    *,
    chance: float | Mapping[str, float] | None = 0.5,
    ylabel: str = "accuracy",
    xlabel: str = "training sentences",
    ticks: Mapping[float, str] | None = None,
    log_x: bool = True,
    title: str = "",
) -> Figure:
    """One panel per ``points`` key (e.g. a phenomenon); in it, one line per model through
    ``(x, estimate, low, high)`` points with its interval as a band, each model in its own
    colour, line style and marker (``series_style``). x (training sizes by default) on a log scale
    unless ``log_x`` is false, marked at every x or at ``ticks`` (x → label), accuracy from 0 to
    1, a dashed line at ``chance`` (one level, or one per panel); the legend in a free panel, else
    below."""
    n = max(1, len(points))
    columns = min(3, n)
    rows = math.ceil(n / columns)
    figure = Figure(figsize=(4.2 * columns, 3.4 * rows + 0.6), layout="constrained")
    panels = figure.subplots(rows, columns, squeeze=False).ravel()
    models = list(dict.fromkeys(model for curves in points.values() for model in curves))
    sizes = sorted({p[0] for curves in points.values() for line in curves.values() for p in line})
    for axes, (name, curves) in zip(panels, points.items()):
        for model, line in curves.items():
            if not line:
                continue
            x, estimate, low, high = (np.asarray(values, dtype=float) for values in zip(*sorted(line)))
            style = series_style(models.index(model))
            axes.fill_between(x, low, high, color=style["color"], alpha=0.18, linewidth=0)
            axes.plot(x, estimate, label=model, markersize=6, **style)
        level = chance.get(name) if isinstance(chance, Mapping) else chance
        if level is not None:
            axes.axhline(level, linestyle="--", linewidth=0.9, color="grey", label="chance")
            axes.annotate(
                f"chance {level:.2f}",
                (0.01, level),
                xycoords=("axes fraction", "data"),
                xytext=(0, 2),
                textcoords="offset points",
                fontsize=8,
                color="grey",
            )
        if log_x:
            axes.set_xscale("log")
        if ticks is not None:
            axes.set_xticks(list(ticks), list(ticks.values()))
        elif sizes:
            axes.set_xticks(sizes, [f"{s:,.0f}" for s in sizes])
        axes.minorticks_off()
        axes.set_ylim(-0.02, 1.02)  # points at 0 and 1 stay whole
        axes.set_title(name, fontsize=11)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.grid(axis="y", color="#eeeeee")
        axes.spines[["top", "right"]].set_visible(False)
    shown: dict[str, Any] = {}
    for axes in panels:
        for handle, name in zip(*axes.get_legend_handles_labels()):
            shown.setdefault(name, handle)
    handles, labels = list(shown.values()), list(shown)
    free = panels[len(points) :]
    if len(free):
        free[0].legend(handles, labels, loc="center", frameon=False, fontsize=10)
        for axes in free:
            axes.axis("off")
    else:
        figure.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False)
    figure.suptitle(title or "learning curves", fontsize=12)
    return figure


def probe_accuracy_figure(result: Mapping, *, title: str = "") -> Figure:
    """Held-out accuracy of a composition probe (``syntaxlm.eval.probe``) by layer: one colour per
    target, solid with circles at the subject's site and dashed with squares at the inner NP's
    (the control), 95% intervals as bars, the majority-class baseline as a grey line, and the
    legend beside the axes."""
    figure = Figure(figsize=(7.2, 3.8), layout="constrained")
    axes = figure.subplots()
    colours = {}
    lowest = 1.0
    for site, style, marker in (("subject", "-", "o"), ("inner", "--", "s")):
        for target, layers in result["probes"][site].items():
            x = np.array([row["layer"] for row in layers])
            y = np.array([row["accuracy"] for row in layers])
            low = np.array([row["low"] for row in layers])
            high = np.array([row["high"] for row in layers])
            lowest = min(lowest, float(low.min(initial=1.0)))
            line = axes.errorbar(
                x,
                y,
                yerr=np.stack([y - low, high - y]),
                linestyle=style,
                marker=marker,
                capsize=2,
                color=colours.get(target),
                label=f"{target} ({site} NP)",
            )
            colours[target] = line.lines[0].get_color()
    majority = max(rows[0]["majority"] for site in result["probes"].values() for rows in site.values())
    axes.axhline(majority, color="grey", linewidth=0.8, linestyle=":", label="majority class")
    axes.set_xticks(range(result["model"]["n_layers"] + 1))
    axes.set_xlabel("layer (0 = embeddings)")
    axes.set_ylabel(better("held-out accuracy", "higher"))
    axes.set_ylim(min(0.3, lowest - 0.02), 1.02)
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    model = result["model"]
    axes.set_title(title or f"composition probe: {model['variant']}, {model['n_layers']} layers")
    return figure
