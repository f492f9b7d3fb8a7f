"""``syntaxlm plot``: the papers' figures from saved models."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.options import PAPER_BEAM, BeamOptions, ModelArgument, with_beam_options

plot_app = typer.Typer(
    no_args_is_help=True,
    help="The papers' figures from saved models: surprisal, distances, masks, attention.",
)


SentenceOption = Annotated[
    str, typer.Option(help='The sentence, words separated by spaces: "the dog barks".')
]
FigureOutOption = Annotated[Path, typer.Option(help="The PNG file to write.")]
TREE_HELP = 'One tree in brackets, as the models read it (no POS tags): "(S (NP the dog) (VP barks))".'
PennOption = Annotated[
    bool, typer.Option(help="--tree is Penn style: drop traces, function tags, ROOT and POS tags first.")
]


class PlotMethod(str, Enum):
    auto = "auto"
    beam = "beam"
    exact = "exact"


@plot_app.command("surprisal")
@with_beam_options
def plot_surprisal(
    models: Annotated[list[Path], typer.Argument(help="Saved model folders (e.g. runs/tg-tiny/best).")],
    sentence: SentenceOption,
    method: Annotated[
        PlotMethod, typer.Option(help="auto: exact for words-only models, beam search for joint ones.")
    ] = PlotMethod.auto,
    out: FigureOutOption = Path("surprisal.png"),
    beam: BeamOptions = PAPER_BEAM,
) -> None:
    """Per-word surprisal (bits) along one sentence, one line per model, the method in the legend."""
    from syntaxlm.report.model_figures import load_models, sentence_words, surprisal_comparison
    from syntaxlm.report.plots import save_figure

    settings = beam.settings()
    figure = surprisal_comparison(
        load_models(models), sentence_words(sentence), method=method.value, beam=settings
    )
    typer.echo(f"figure written to {save_figure(figure, out)}")


@plot_app.command("distances")
def plot_distances(model: ModelArgument, sentence: SentenceOption, out: FigureOutOption) -> None:
    """PRPN Fig. 5 from the model's own syntactic distances; for SOM models, the tree it builds."""
    from syntaxlm.models import load_model
    from syntaxlm.report.model_figures import induced_structure_figure, sentence_words
    from syntaxlm.report.plots import save_figure

    figure = induced_structure_figure(load_model(model), sentence_words(sentence))
    typer.echo(f"figure written to {save_figure(figure, out)}")


@plot_app.command("mask")
def plot_mask(
    model: ModelArgument,
    tree: Annotated[str, typer.Option(help=TREE_HELP)],
    out: FigureOutOption,
    penn: PennOption = False,
) -> None:
    """TG Fig. 2b by the model's own transform: STACK/COMPOSE (TG), causal (TXL), PLM-mask's heads."""
    from syntaxlm.models import load_model
    from syntaxlm.report.model_figures import structure_mask_figure, tree_in_model_view
    from syntaxlm.report.plots import save_figure

    figure = structure_mask_figure(load_model(model), tree_in_model_view(tree, penn=penn))
    typer.echo(f"figure written to {save_figure(figure, out)}")


@plot_app.command("attention")
def plot_attention(
    model: ModelArgument,
    out: FigureOutOption,
    layer: Annotated[int, typer.Option(help="Layer, from 0.")] = 0,
    head: Annotated[int, typer.Option(help="Head, from 0 (plm-mask: 0 buffer, 1 stack).")] = 0,
    tree: Annotated[str | None, typer.Option(help=TREE_HELP + " Joint models need one.")] = None,
    sentence: Annotated[
        str | None, typer.Option(help="Words-only models: the sentence (or give --tree).")
    ] = None,
    penn: PennOption = False,
) -> None:
    """The attention probabilities of one layer and head for one input (transformer models)."""
    from syntaxlm.models import load_model
    from syntaxlm.report.model_figures import attention_figure, sentence_words, tree_in_model_view
    from syntaxlm.report.plots import save_figure

    if (tree is None) == (sentence is None):
        raise typer.BadParameter("give one of --tree and --sentence", param_hint="--tree")
    given = {"tree": tree_in_model_view(tree, penn=penn)} if tree else {"words": sentence_words(sentence)}
    figure = attention_figure(load_model(model), layer=layer, head=head, **given)
    typer.echo(f"figure written to {save_figure(figure, out)}")
