"""The papers' figures drawn from saved models: what a model computes for one input.

- ``surprisal_comparison``: per-word surprisal (bits) along one sentence under several models,
  each scored by the ``Scorer`` (exact for words-only models, beam search for joint ones by
  default), the method in the legend;
- ``induced_structure_figure``: PRPN Fig. 5 from the model's own syntactic distances, or the
  binary tree a SOM model builds (it has no distances);
- ``structure_mask_figure``: TG Fig. 2b spelled with the model's vocabulary and made by its own
  transform (TG: STACK/COMPOSE; the TXL baselines: causal), or PLM-mask's buffer and stack heads;
- ``attention_figure``: one layer's and head's attention probabilities for one input
  (transformer models), recorded with ``models.layers.attention.record_attention``;
- ``report_model_figures``: the surprisal and structure figures of a report's runs (``best/``).

Which figures a model can draw is on its card (``model.card.figures``; ``syntaxlm.models``), and
the numbers drawn come from the model's own public methods: ``syntactic_distances``,
``induced_trees``, ``structure_mask`` and ``attention_maps``, and the ``Scorer`` for surprisal. Each
figure function returns a ``Figure`` (``report.plots``) that ``save_figure`` writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from syntaxlm.errors import SyntaxlmError
from syntaxlm.inference import BeamSettings, Scorer
from syntaxlm.inference.beam import PAPER_BEAM
from syntaxlm.models import (
    ATTENTION,
    DISTANCES,
    INDUCED_TREE,
    STRUCTURE_MASK,
    SyntacticLM,
    load_model,
    model_names_with,
)
from syntaxlm.models.base import AttentionMap
from syntaxlm.report.markdown import heading, image
from syntaxlm.report.plots import (
    attention_mask_figure,
    attention_weights_figure,
    binary_tree_figure,
    distance_tree_figure,
    head_masks_figure,
    save_figure,
    surprisal_figure,
)
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import parse_tree
from syntaxlm.trees.tree import Tree


class FigureError(SyntaxlmError, ValueError):
    """A figure that cannot be drawn for this model or input."""


# --- inputs ------------------------------------------------------------------------------------------


def sentence_words(text: str) -> list[str]:
    """The words of a sentence given as text (split on whitespace)."""
    words = text.split()
    if not words:
        raise FigureError("the sentence is empty; expected words separated by spaces")
    return words


def tree_in_model_view(text: str, *, penn: bool = False) -> Tree:
    """One bracketed tree as the models read it (no POS tags). ``penn=True``: the tree is Penn
    style (POS tags, function tags, traces, ROOT) and is cleaned to the Choe–Charniak view first."""
    tree = parse_tree(text, pos_tags=penn)
    if penn:
        tree = CHOE_CHARNIAK_CLEANING(tree)
        if tree is None:
            raise FigureError("nothing is left of the tree once traces and punctuation are removed")
    return tree


def model_name(folder: str | Path) -> str:
    """How a saved model is named in legends: its folder, or the run folder for ``RUN/best``."""
    folder = Path(folder).resolve()
    return folder.parent.name if folder.name in ("best", "last") else folder.name


def load_models(folders: Sequence[str | Path]) -> dict[str, SyntacticLM]:
    """Saved models by ``model_name`` (``name #2``, ... when two folders have one name)."""
    models: dict[str, SyntacticLM] = {}
    for folder in folders:
        name = model_name(folder)
        unique, k = name, 1
        while unique in models:
            k += 1
            unique = f"{name} #{k}"
        models[unique] = load_model(folder)
    return models


# --- surprisal ---------------------------------------------------------------------------------------


def surprisal_bits(
    model: SyntacticLM, words: Sequence[str], *, method: str = "auto", beam: BeamSettings = PAPER_BEAM
) -> tuple[list[float], str]:
    """Per-word surprisal (bits) of one sentence by the ``Scorer``, and the method it used."""
    scorer = Scorer(model, method=method, beam=beam)
    [pairs] = scorer.word_score([list(words)], surprisal=True, unit="bits")
    return [value for _, value in pairs], scorer.method


def surprisal_comparison(
    models: Mapping[str, SyntacticLM],
    words: Sequence[str],
    *,
    method: str = "auto",
    beam: BeamSettings = PAPER_BEAM,
    title: str = "",
) -> Figure:
    """One line per model, labelled ``name (model, method)``."""
    if not models:
        raise FigureError("no models given")
    values = {}
    for name, model in models.items():
        bits, used = surprisal_bits(model, words, method=method, beam=beam)
        kind = model.config.model
        values[f"{name} ({used})" if name == kind else f"{name} ({kind}, {used})"] = bits
    return surprisal_figure(list(words), values, title=title)


# --- induced structure -------------------------------------------------------------------------------


def induced_structure_figure(model: SyntacticLM, words: Sequence[str], *, title: str = "") -> Figure:
    """PRPN Fig. 5 from the model's ``syntactic_distances``; for the other tree-inducing models (SOM)
    the binary tree of ``induced_trees``."""
    words = list(words)
    kind = model.config.model
    figures = model.card.figures
    with _refused_input(f"{kind}: "):  # e.g. PRPN's distances over subword pieces
        if DISTANCES in figures:
            [values] = model.syntactic_distances([words])
            title = title or f"{kind}: syntactic distances and the induced tree"
            return distance_tree_figure(words, values, title=title)
        if INDUCED_TREE in figures:
            [tree] = model.induced_trees([words])
            return binary_tree_figure(words, nested_indices(tree), title=title or f"{kind}: induced tree")
    raise FigureError(
        f"{kind} induces no trees: the distance/tree figure needs a PRPN (distances) "
        "or SOM (eSOM, dSOM) model"
    )


def nested_indices(tree: Tree) -> Any:
    """A tree as nested lists of word indices (``[[0, 1], 2]``); unary nodes are skipped."""
    counter = iter(range(len(tree.leaves())))

    def walk(node):
        if not isinstance(node, Tree):
            return next(counter)
        children = [walk(child) for child in node.children]
        return children[0] if len(children) == 1 else children

    nested = walk(tree)
    return nested if isinstance(nested, list) else [nested]


# --- structure masks ---------------------------------------------------------------------------------


def structure_mask_figure(model: SyntacticLM, tree: Tree, *, title: str = "") -> Figure:
    """TG Fig. 2b: the mask the model's own transform makes for ``tree`` (``structure_mask``; TG:
    STACK/COMPOSE, the TXL baselines: causal), spelled with the model's vocabulary; for a model whose
    structure restricts heads (PLM-mask) those heads over ``<s>`` + the RNNG actions."""
    kind, card = model.config.model, model.card
    if STRUCTURE_MASK not in card.figures:
        drawn = model_names_with(STRUCTURE_MASK)
        raise FigureError(
            f"the structure mask figure is not available for this model ({kind}); it is drawn for "
            f"{', '.join(drawn[:-1])} and {drawn[-1]}"
        )
    with _refused_input():
        read = model.structure_mask(tree)
    if card.head_roles:
        masks = read.head_masks(model.config.n_heads)
        panels = {f"head {h} ({role})": masks[h] for h, role in card.head_roles.items()}
        tokens = [model.vocab.token(int(i)) for i in read.ids]
        return head_masks_figure(panels, tokens, title=title or f"{kind}: the syntax-restricted heads")
    default = "STACK/COMPOSE attention" if read.variant == "tg" else "causal attention"
    return attention_mask_figure(read, model.vocab.token, title=title or f"{kind}: {default}")


# --- attention weights -------------------------------------------------------------------------------


def attention_weights(
    model: SyntacticLM, *, layer: int, words: Sequence[str] | None = None, tree: Tree | None = None
) -> AttentionMap:
    """The attention probabilities of layer ``layer`` (0 = the first) for one input: ``tree`` for
    the joint models (TG, TXL (trees), PLM, PLM-mask), ``words`` (or a tree's words) for the
    words-only ones."""
    if ATTENTION in model.card.figures and not 0 <= layer < model.config.n_layers:
        raise FigureError(
            f"{model.config.model} has {model.config.n_layers} layers (0..{model.config.n_layers - 1}); "
            f"got {layer}"
        )
    return attention_weights_by_layer(model, words=words, tree=tree)[layer]


def attention_weights_by_layer(
    model: SyntacticLM, *, words: Sequence[str] | None = None, tree: Tree | None = None
) -> list[AttentionMap]:
    """``attention_weights`` of every layer, from one pass of the model (``attention_maps``)."""
    kind, card = model.config.model, model.card
    if ATTENTION not in card.figures:
        raise FigureError(
            f"attention figures are for transformer models ({', '.join(model_names_with(ATTENTION))}); "
            f"{kind} has no attention"
        )
    if card.joint and tree is None:
        raise FigureError(f"{kind} reads words and trees: give a tree")
    if words is None:
        if tree is None:
            raise FigureError("give a sentence or a tree")
        words = tree.leaves()
    words = list(words)
    if tree is not None and tree.leaves() != words:
        raise FigureError("the tree's words differ from the sentence")
    with _refused_input():
        return model.attention_maps(words, tree)


def attention_figure(
    model: SyntacticLM,
    *,
    layer: int,
    head: int,
    words: Sequence[str] | None = None,
    tree: Tree | None = None,
    title: str = "",
) -> Figure:
    """Head ``head`` of layer ``layer`` (both from 0) as a heat map over the tokens the model read."""
    kind, card = model.config.model, model.card
    if ATTENTION in card.figures and not 0 <= head < model.config.n_heads:
        raise FigureError(
            f"{kind} has {model.config.n_heads} heads (0..{model.config.n_heads - 1}); got {head}"
        )
    attention = attention_weights(model, layer=layer, words=words, tree=tree)
    role = f" ({card.head_roles[head]})" if head in card.head_roles else ""
    title = title or f"{kind}: layer {layer}, head {head}{role} (from 0)"
    return attention_weights_figure(attention.weights[head], attention.tokens, title=title)


@contextmanager
def _refused_input(prefix: str = "") -> Iterator[None]:
    """A model's plain ``ValueError`` for an input it cannot draw (too long, subword pieces) as a
    ``FigureError``, its message after ``prefix``; the library's typed errors pass unchanged."""
    try:
        yield
    except ValueError as error:
        if isinstance(error, SyntaxlmError):
            raise
        raise FigureError(f"{prefix}{error}") from None


# --- the report --------------------------------------------------------------------------------------


def report_model_figures(
    run_folders: Sequence[str | Path],
    words: Sequence[str],
    out: str | Path,
    *,
    beam: BeamSettings = PAPER_BEAM,
) -> list[str]:
    """Draw the runs' model figures for one sentence into ``out`` and return the report's Markdown
    lines: the surprisal of every run's saved model (``RUN/best``) and, for each run whose model
    induces trees, its distances or tree. Runs without a saved model are named."""
    out = Path(out)
    words = list(words)
    folders = [Path(folder) for folder in run_folders]
    saved = [folder for folder in folders if (folder / "best" / "config.json").is_file()]
    lines = [heading("Figures from the models"), "", f"Sentence: *{' '.join(words)}*.", ""]
    missing = [folder for folder in folders if folder not in saved]
    if missing:
        lines += ["No saved model (`best/`) in " + ", ".join(f"`{f}`" for f in missing) + ".", ""]
    if not saved:
        return lines
    models = load_models([folder / "best" for folder in saved])
    save_figure(surprisal_comparison(models, words, beam=beam), out / "surprisal.png")
    lines += [image("per-word surprisal", "surprisal.png"), ""]
    for name, model in models.items():
        if model.induces_trees:
            path = out / f"structure-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.png"
            save_figure(induced_structure_figure(model, words, title=f"{name}: induced structure"), path)
            lines += [image(f"{name}: induced structure", path.name), ""]
    return lines
