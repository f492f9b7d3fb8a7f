"""``syntaxlm report``, ``compare`` and ``view``: results read back, as Markdown, side by side, as a page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.common import _estimate_teller, _print_json
from syntaxlm.cli.options import PAPER_BEAM, BeamOptions, with_beam_options
from syntaxlm.errors import SyntaxlmError


def report(
    runs: Annotated[list[Path], typer.Argument(help="Run folders holding result files (and config.json).")],
    out: Annotated[Path, typer.Option(help="Folder for report.md and its figures.")],
    figure_sentence: Annotated[
        str | None,
        typer.Option(
            help="Also load each run's saved model (RUN/best) and draw, for this sentence, the per-word "
            "surprisal under every model and the distances or tree of models that induce trees."
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="The model every other is compared with on SyntaxGym (default: the first run's)."),
    ] = None,
) -> None:
    """A Markdown report from result files: per kind of result, a table of the models' numbers (mean
    ± std over seeds) with how each was obtained (method, bound, beam, subset), warning where the
    models were not evaluated alike and ranking nothing there; SyntaxGym comparisons with intervals;
    figures."""
    from syntaxlm.report.report import make_report

    try:
        path = make_report(runs, out, figure_sentence=figure_sentence, baseline=baseline)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    typer.echo(f"report written to {path}")


compare_app = typer.Typer(no_args_is_help=True, help="Two runs side by side, item by item.")


@compare_app.command("sg")
def compare_sg(
    run_a: Annotated[
        Path,
        typer.Argument(
            metavar="A",
            help="SyntaxGym results of eval sg --out: a result file, or a folder (a run) of them.",
        ),
    ],
    run_b: Annotated[Path, typer.Argument(metavar="B", help="The same for the other run.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object, with every list of item numbers.")
    ] = False,
) -> None:
    """Which SyntaxGym items A gets and B does not: per suite, the items held under both, only A,
    only B and neither (prediction 0, the one the suite accuracy counts), with the item numbers."""
    from syntaxlm.report.sg_items import compare_sg_items

    comparison = compare_sg_items(run_a, run_b)
    if as_json:
        _print_json(comparison.to_json())
    else:
        typer.echo(comparison.render())


@with_beam_options
def view_command(
    runs: Annotated[
        list[Path], typer.Argument(metavar="RUN_OR_RESULTS", help="Run folders or result files.")
    ],
    out: Annotated[Path, typer.Option(help="The HTML file to write.")] = Path("view.html"),
    sentences: Annotated[
        Path | None,
        typer.Option(
            help="Sentences to show, one per line (or a treebank, whose trees are shown as gold), "
            "instead of the test data the runs name."
        ),
    ] = None,
    test: Annotated[
        Path | None, typer.Option(help="The test treebank to take sentences from (default: the runs').")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Show the first N sentences.")] = 20,
    models: Annotated[
        bool,
        typer.Option(
            help="Load each run's saved model (RUN/best) for the sentence and attention views; "
            "--no-models reads result files only."
        ),
    ] = True,
    beam: BeamOptions = PAPER_BEAM,
) -> None:
    """One HTML page that opens from disk (no server, no network): the comparison table of
    report (sortable), SyntaxGym items and region surprisals per model with filters, per-word
    surprisal, gold and model trees and distances for chosen sentences, and the masks and
    attention of the transformer models that have them."""
    from syntaxlm.view import write_view

    def on_estimate(name: str, words: list[list[str]]):
        return _estimate_teller(words, settings)

    settings = beam.settings()
    try:
        path = write_view(
            runs,
            out,
            sentences_file=sentences,
            test_data=test,
            limit=limit,
            beam=settings,
            models=models,
            echo=lambda message: typer.echo(message, err=True),
            on_estimate=on_estimate,
        )
    except ValueError as error:
        if isinstance(error, SyntaxlmError):
            raise
        raise typer.BadParameter(str(error)) from None
    except KeyboardInterrupt:  # typer turns it into a silent exit 130 before main() could say this
        kept = f"{out} unchanged" if out.exists() else f"{out} not created"
        typer.echo(
            f"interrupted; no page written ({kept}: a page is put in place only when complete)", err=True
        )
        raise typer.Exit(130) from None
    typer.echo(f"page written to {path} ({path.stat().st_size / 1e6:.1f} MB)")
