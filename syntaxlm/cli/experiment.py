"""``syntaxlm experiment``: measured experiments over many training runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.common import _resumed_when_run_again
from syntaxlm.cli.options import _names, _numbers

experiment_app = typer.Typer(no_args_is_help=True, help="Measured experiments over many training runs.")


def _sweep(text: str | None) -> tuple[str, tuple[str, ...]] | None:
    """``"model.n_layers=3,4,6"`` as ``("model.n_layers", ("3", "4", "6"))``."""
    if text is None:
        return None
    key, equals, values = text.partition("=")
    parts = tuple(part.strip() for part in values.split(","))
    if not equals or not key.strip() or not all(parts):
        raise typer.BadParameter(
            f"{text!r}: expected KEY=VALUE,VALUE,..., e.g. model.n_layers=3,4,6", param_hint="--sweep"
        )
    return key.strip(), parts


def _default_option(help_text: str):
    """An option left out takes ``CurveSettings``'s default (``None`` here: not given)."""
    return typer.Option(help=help_text, show_default=False)


@experiment_app.command("curve")
def experiment_curve(
    out: Annotated[Path, typer.Option(help="Folder for the data, the runs and the curve.")] = Path(
        "runs/curve"
    ),
    sizes: Annotated[str | None, _default_option("Training sentences per point: 1000,4000,16000.")] = None,
    seeds: Annotated[str | None, _default_option("Training seeds, e.g. 0,1,2.")] = None,
    models: Annotated[str | None, _default_option("Tiny recipes to train (comma-separated names).")] = None,
    items_per_suite: Annotated[int | None, _default_option("Items per suite.")] = None,
    lexicon_size: Annotated[
        int | None, _default_option("Words per open class of the grammar (default 10; 0: the full lexicon).")
    ] = None,
    data_seed: Annotated[int | None, _default_option("Seed of the synthetic data.")] = None,
    min_epochs: Annotated[int | None, _default_option("Passes over the largest sizes.")] = None,
    min_steps: Annotated[int | None, _default_option("About the fewest updates of a small size.")] = None,
    batch_size: Annotated[int | None, _default_option("Sentences (rows) per step.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a key of every recipe: --set model.n_layers=1 (repeatable)."),
    ] = None,
    sweep: Annotated[
        str | None,
        typer.Option(
            help="Measure against a recipe key's values instead of sizes, at one --sizes value: "
            "--sweep model.n_layers=3,4,6.",
            show_default=False,
        ),
    ] = None,
    action_beam: Annotated[int | None, _default_option("Beam search: action beam.")] = None,
    word_beam: Annotated[int | None, _default_option("Beam search: word beam.")] = None,
    fast_track: Annotated[int | None, _default_option("Beam search: fast-track states per round.")] = None,
    perplexity: Annotated[
        bool, typer.Option("--perplexity", help="Also score test perplexity (and joint models' parses).")
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Runs trained side by side, each in its own process with its share of the CPU "
            "threads (default: one per CPU thread; 1 on a GPU).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """SyntaxGym accuracy per phenomenon against training size, or against a recipe key's values
    (--sweep), for several models and seeds (curve.md, curve.png, curve.json). Options left out
    take the defaults of ``CurveSettings`` (docs/learning-curve.md). Run it again to continue
    where it stopped."""
    from dataclasses import replace

    from syntaxlm.jobs.curve import run_curve
    from syntaxlm.jobs.curve_settings import CurveSettings

    defaults = CurveSettings()
    given = {
        "sizes": _numbers(sizes, "--sizes"),
        "seeds": _numbers(seeds, "--seeds"),
        "models": _names(models, "--models"),
        "items_per_suite": items_per_suite,
        "lexicon_size": lexicon_size,
        "data_seed": data_seed,
        "min_epochs": min_epochs,
        "min_steps": min_steps,
        "batch_size": batch_size,
        "overrides": tuple(set_) if set_ else None,
        "sweep": _sweep(sweep),
    }
    beam = {"action_beam": action_beam, "word_beam": word_beam, "fast_track": fast_track}
    beam = {key: value for key, value in beam.items() if value is not None}
    settings = replace(
        defaults,
        **{key: value for key, value in given.items() if value is not None},
        beam=replace(defaults.beam, **beam),
        perplexity=perplexity,
    )
    if lexicon_size == 0:
        settings = replace(settings, lexicon_size=None)
    with _resumed_when_run_again(out):
        run_curve(out, settings, workers=workers, echo=typer.echo)
