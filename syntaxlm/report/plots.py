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

``save_figure`` writes a PNG atomically. Figures are made without pyplot (no global state, no
display needed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from syntaxlm.files import atomic_writer
from syntaxlm.structure.distances import nested_tree_from_distances
from syntaxlm.structure.tg import TGSequence

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


def circuit_accuracy_figure(
    accuracy: Mapping[str, Mapping[str, float]], *, circuits: Sequence[str] | None = None, title: str = ""
) -> Figure:
    """Grouped bars: ``accuracy[model][circuit]`` in [0, 1], one group per circuit (in the order
    given, else alphabetical); a circuit a model lacks is left empty."""
    models = list(accuracy)
    if circuits is None:
        circuits = sorted({circuit for scores in accuracy.values() for circuit in scores})
    width = 0.8 / max(1, len(models))
    figure = Figure(figsize=(max(6.0, 1.2 * len(circuits) + 2), 4))
    axes = figure.subplots()
    for k, model in enumerate(models):
        values = [accuracy[model].get(circuit, np.nan) for circuit in circuits]
        axes.bar(np.arange(len(circuits)) + (k - (len(models) - 1) / 2) * width, values, width, label=model)
    axes.set_xticks(np.arange(len(circuits)), circuits, rotation=20, ha="right")
    axes.set_ylim(0, 1)
    axes.set_ylabel("SG accuracy")
    axes.legend(fontsize=8)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title(title or "SyntaxGym accuracy by circuit")
    return figure


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
