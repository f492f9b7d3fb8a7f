"""The papers' figures, drawn from numbers: each function returns a matplotlib ``Figure``.

- ``attention_mask_figure``: a TG sequence's STACK/COMPOSE mask as a grid (TG Fig. 2b), STACK
  rows blue, COMPOSE rows orange, tokens along both axes;
- ``distance_tree_figure``: a sentence's syntactic distances as bars between the words and the
  binary tree PRPN's parser reads from them (PRPN Fig. 5);
- ``binary_tree_figure``: an induced binary tree over the words (SOM's trees, which come without
  distances);
- ``head_masks_figure``: several heads' boolean attention masks side by side (PLM-mask's buffer
  and stack heads);
- ``attention_weights_figure``: one head's attention probabilities as a heat map;
- ``circuit_accuracy_figure``: SyntaxGym accuracy per circuit per model (TG Fig. 4, structural
  guidance Fig. 5);
- ``perplexity_vs_sg_figure``: perplexity against SG score, one point per model (structural
  guidance Fig. 4);
- ``surprisal_figure``: per-word surprisal along one sentence for several models;
- ``training_curves_figure``: validation loss against step, one line per run, with baselines.
- ``learning_curve_figure``: accuracy against training size (log scale) with intervals, one
  panel per phenomenon, one line and band per model.

``save_figure`` writes a PNG atomically. Figures are made without pyplot (no global state, no
display needed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from syntaxlm.errors import TreeError
from syntaxlm.eval.intervals import Interval
from syntaxlm.files import atomic_writer
from syntaxlm.structure.distances import nested_tree_from_distances
from syntaxlm.structure.tg import TGSequence
from syntaxlm.structure.tg_view import DENSE_CELL_LIMIT

STACK_COLOUR, COMPOSE_COLOUR = "#4c72b0", "#dd8452"


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


def distance_tree_figure(words: Sequence[str], distances: Sequence[float], *, title: str = "") -> Figure:
    """PRPN Fig. 5: distances as bars between words, under the tree the parser builds from them."""
    nested = nested_tree_from_distances(distances, list(range(len(words))))
    figure = Figure(figsize=(max(4.0, 0.7 * len(words) + 1), 5))
    tree_axes, bar_axes = figure.subplots(2, 1, gridspec_kw={"height_ratios": [2, 1]}, sharex=True)
    _draw_binary_tree(tree_axes, nested)
    for x, word in enumerate(words):
        tree_axes.text(x, -0.1, word, ha="center", va="top", fontsize=9)
    tree_axes.axis("off")
    # Distance i relates words i-1 and i: its bar stands between them (word 0's before the first).
    bar_axes.bar(np.arange(len(words)) - 0.5, distances, width=0.3, color=STACK_COLOUR)
    bar_axes.set_xticks(np.arange(len(words)), list(words), rotation=45, ha="right")
    bar_axes.set_ylabel("distance")
    bar_axes.spines[["top", "right"]].set_visible(False)
    tree_axes.set_title(title or "syntactic distances and the induced tree")
    return figure


def binary_tree_figure(words: Sequence[str], nested, *, title: str = "") -> Figure:
    """A binary tree over the words: ``nested`` lists whose leaves are word indices, e.g.
    ``[[0, 1], 2]``, drawn as ``distance_tree_figure`` draws its tree."""
    figure = Figure(figsize=(max(4.0, 0.7 * len(words) + 1), 3.5))
    axes = figure.subplots()
    _draw_binary_tree(axes, nested)
    for x, word in enumerate(words):
        axes.text(x, -0.1, word, ha="center", va="top", fontsize=9)
    axes.set_xlim(-0.7, len(words) - 0.3)
    axes.axis("off")
    axes.set_title(title or "induced tree")
    return figure


def _draw_binary_tree(axes, nested) -> None:
    """Leaves at x = word index, y = 0; a node above its children at 1 + the taller child's height."""
    placed: dict[int, tuple[float, float]] = {}
    stack = [(nested, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, list):
            placed[id(node)] = (float(node), 0.0)
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in node)
            continue
        children = [placed[id(child)] if isinstance(child, list) else (float(child), 0.0) for child in node]
        x = sum(cx for cx, _ in children) / len(children)
        y = 1 + max(cy for _, cy in children)
        placed[id(node)] = (x, y)
        for cx, cy in children:
            axes.plot([x, cx], [y, cy], color="#333333", linewidth=1)
    axes.set_ylim(-0.8, max(y for _, y in placed.values()) + 0.5)


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
        axes.set_ylabel("SG accuracy")
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
        colour = f"C{k % 10}"
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


def perplexity_vs_sg_figure(points: Mapping[str, tuple[float, float]], *, title: str = "") -> Figure:
    """One point per model: ``points[model] = (perplexity, SG score)``."""
    figure = Figure(figsize=(5, 4))
    axes = figure.subplots()
    for model, (perplexity, score) in points.items():
        axes.scatter(perplexity, score)
        axes.annotate(model, (perplexity, score), textcoords="offset points", xytext=(4, 4), fontsize=8)
    axes.set_xlabel("perplexity")
    axes.set_ylabel("SG score")
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "perplexity and syntactic generalisation")
    return figure


def surprisal_figure(
    words: Sequence[str], surprisal_bits: Mapping[str, Sequence[float]], *, title: str = ""
) -> Figure:
    """Per-word surprisal (bits) along one sentence, one line per model."""
    figure = Figure(figsize=(max(5.0, 0.6 * len(words) + 1), 3.5))
    axes = figure.subplots()
    for model, values in surprisal_bits.items():
        if len(values) != len(words):
            raise ValueError(f"{model}: {len(values)} surprisals for {len(words)} words")
        axes.plot(np.arange(len(words)), values, marker="o", label=model)
    axes.set_xticks(np.arange(len(words)), list(words), rotation=45, ha="right")
    axes.set_xlabel("word")
    axes.set_ylabel("surprisal (bits)")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "per-word surprisal")
    return figure


def training_curves_figure(
    curves: Mapping[str, tuple[Sequence[int], Sequence[float]]],
    *,
    baselines: Mapping[str, float] | None = None,
    ylabel: str = "validation loss (nats/token)",
    title: str = "",
) -> Figure:
    """Validation loss against training step, one line per run; ``baselines`` are drawn as
    dashed horizontal lines (e.g. the unigram model)."""
    figure = Figure(figsize=(6.5, 4.0))
    axes = figure.subplots()
    for name, (steps, losses) in curves.items():
        if len(steps) != len(losses):
            raise ValueError(f"{name}: {len(steps)} steps for {len(losses)} losses")
        axes.plot(steps, losses, marker=".", label=name)
    for name, value in (baselines or {}).items():
        axes.axhline(value, linestyle="--", linewidth=0.8, color="grey")
        axes.annotate(name, (0, value), textcoords="offset points", xytext=(2, 2), fontsize=7, color="grey")
    axes.set_xlabel("step")
    axes.set_ylabel(ylabel)
    axes.legend(fontsize=8)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "training curves")
    return figure


def learning_curve_figure(
    points: Mapping[str, Mapping[str, Sequence[tuple[float, float, float, float]]]],
    *,
    chance: float | Mapping[str, float] | None = 0.5,
    ylabel: str = "accuracy",
    title: str = "",
) -> Figure:
    """One panel per ``points`` key (e.g. a phenomenon); in it, one line per model through
    ``(size, estimate, low, high)`` points with its interval as a band. Sizes on a log scale,
    accuracy from 0 to 1, a dashed line at ``chance`` (one level, or one per panel); the legend in
    a free panel, else below."""
    n = max(1, len(points))
    columns = min(3, n)
    rows = math.ceil(n / columns)
    figure = Figure(figsize=(4.2 * columns, 3.4 * rows + 0.6), layout="constrained")
    panels = figure.subplots(rows, columns, squeeze=False).ravel()
    colours = colormaps["tab10"].colors
    models = list(dict.fromkeys(model for curves in points.values() for model in curves))
    sizes = sorted({p[0] for curves in points.values() for line in curves.values() for p in line})
    for axes, (name, curves) in zip(panels, points.items()):
        for model, line in curves.items():
            if not line:
                continue
            x, estimate, low, high = (np.asarray(values, dtype=float) for values in zip(*sorted(line)))
            colour = colours[models.index(model) % len(colours)]
            axes.fill_between(x, low, high, color=colour, alpha=0.18, linewidth=0)
            axes.plot(x, estimate, marker="o", color=colour, label=model)
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
        axes.set_xscale("log")
        if sizes:
            axes.set_xticks(sizes, [f"{s:,.0f}" for s in sizes])
            axes.minorticks_off()
        axes.set_ylim(-0.02, 1.02)  # points at 0 and 1 stay whole
        axes.set_title(name, fontsize=11)
        axes.set_xlabel("training sentences")
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
    target, solid at the subject's site and dashed at the inner NP's (the control), 95% intervals
    as bars, and the majority-class baseline as a grey line."""
    figure = Figure(figsize=(6.0, 3.8))
    axes = figure.subplots()
    colours = {}
    for site, style in (("subject", "-"), ("inner", "--")):
        for target, layers in result["probes"][site].items():
            x = np.array([row["layer"] for row in layers])
            y = np.array([row["accuracy"] for row in layers])
            low = np.array([row["low"] for row in layers])
            high = np.array([row["high"] for row in layers])
            line = axes.errorbar(
                x,
                y,
                yerr=np.stack([y - low, high - y]),
                linestyle=style,
                marker="o",
                capsize=2,
                color=colours.get(target),
                label=f"{target} ({site} NP)",
            )
            colours[target] = line.lines[0].get_color()
    majority = max(rows[0]["majority"] for site in result["probes"].values() for rows in site.values())
    axes.axhline(majority, color="grey", linewidth=0.8, linestyle=":", label="majority class")
    axes.set_xticks(range(result["model"]["n_layers"] + 1))
    axes.set_xlabel("layer (0 = embeddings)")
    axes.set_ylabel("held-out accuracy")
    axes.set_ylim(0.3, 1.02)
    axes.legend(fontsize=7, loc="lower right")
    axes.spines[["top", "right"]].set_visible(False)
    model = result["model"]
    axes.set_title(title or f"composition probe: {model['variant']}, {model['n_layers']} layers")
    return figure
