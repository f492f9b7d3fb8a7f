"""``syntaxlm train``, ``quickstart`` and ``reproduce``: the commands that train runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.common import _resumed_when_run_again
from syntaxlm.cli.options import (
    PAPER_BEAM,
    BatchSizeOption,
    BeamOptions,
    DeviceOption,
    _check_importance_samples,
    _names,
    _suite_files,
    with_beam_options,
)


def train_command(
    config: Annotated[
        Path, typer.Argument(help="Recipe: a YAML file (configs/tg-tiny.yaml) or a recipe name (tg-tiny).")
    ],
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default: runs/<recipe name>).", show_default=False)
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config key: --set train.lr=3e-4 (repeatable)."),
    ] = None,
    data_train: Annotated[Path | None, typer.Option(help="Training treebank (replaces data.*).")] = None,
    data_valid: Annotated[Path | None, typer.Option(help="Validation treebank.")] = None,
    data_test: Annotated[Path | None, typer.Option(help="Test treebank.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out from its checkpoint.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Train a model from a recipe; under torchrun, on every process (data parallel)."""
    import os

    from syntaxlm.jobs.recipes import find_recipe
    from syntaxlm.train import TrainingInterrupted, load_config, train

    config = find_recipe(config)
    data = {"train": data_train, "valid": data_valid, "test": data_test}
    overrides = [
        f"data.{role}={json.dumps(str(path))}"  # quoted: read as a string, whatever the path
        for role, path in data.items()
        if path is not None
    ] + list(set_ or [])
    run_config = load_config(config, overrides)
    out = out if out is not None else Path("runs") / config.stem
    first = int(os.environ.get("RANK", "0")) == 0
    several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if first:
        typer.echo(f"{'resuming' if resume else 'training'} {run_config.model.model} in {out}")
    try:
        result = train(run_config, out, resume=resume, progress=progress)
    except TrainingInterrupted as interrupted:
        if first:
            again = _resume_command(config, out, data, set_ or [], progress=progress)
            under = " (under torchrun, with the same torchrun options)" if several else ""
            typer.echo(f"{interrupted.describe()}\nresume with{under}: {again}", err=True)
        raise typer.Exit(130) from None
    if first:
        typer.echo(result.describe(run_config.train.max_minutes))
    if several:
        # The run is over and its files are written. Leave without the interpreter's teardown, in
        # which gloo's threads now and then abort a finished process ("terminate called without an
        # active exception", SIGABRT) and torchrun reports the whole run as failed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _resume_command(
    recipe: Path, out: Path, data: dict[str, Path | None], overrides: list[str], *, progress: bool
) -> str:
    """The ``syntaxlm train`` command line that resumes the run in ``out`` (quoted for a shell)."""
    import shlex

    words = ["syntaxlm", "train", str(recipe), "--out", str(out)]
    for role, path in data.items():
        if path is not None:
            words += [f"--data-{role}", str(path)]
    for override in overrides:
        words += ["--set", override]
    words += ["--resume"] + ([] if progress else ["--no-progress"])
    return shlex.join(words)


def quickstart(
    out: Annotated[Path, typer.Option(help="Folder for everything the run makes.")] = Path("runs/quickstart"),
    data: Annotated[
        Path | None,
        typer.Option(
            help="Your treebank instead of the synthetic one: a folder with train, dev and test files "
            "(train.trees, or UD names such as en_ewt-ud-train.conllu), or one PTB-bracket file "
            "(split 80/10/10 in file order).",
            show_default=False,
        ),
    ] = None,
    fast: Annotated[
        bool, typer.Option("--fast", help="A smoke run of seconds: small data, one pass.")
    ] = False,
    models: Annotated[
        str | None, typer.Option(help="Only these models (comma-separated names).", show_default=False)
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed (data and training).")] = 0,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Models trained side by side, each in its own process with its share of the CPU "
            "threads (default: one per CPU thread; 1 on a GPU).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The main job: every model's tiny recipe trained on one treebank and compared (report.md).

    An interrupted quickstart resumes where it stopped when run again with the same options.
    """
    from syntaxlm.jobs.quickstart import run_quickstart

    chosen = _names(models, "--models")
    with _resumed_when_run_again(out):
        run_quickstart(out, data=data, fast=fast, seed=seed, models=chosen, workers=workers, echo=typer.echo)


@with_beam_options
def reproduce_command(
    recipe: Annotated[
        str, typer.Argument(help="A recipe name (tg-ptb, prpn-ptb, esom-ewt, ...) or YAML file.")
    ],
    data: Annotated[
        Path | None,
        typer.Option(
            help="Folder holding the recipe's treebank files (by their names: train.trees, dev.trees, ...).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder (default: runs/reproduce/<recipe>).", show_default=False)
    ] = None,
    seeds: Annotated[
        int, typer.Option(help="Training runs, seeds 0..N-1 (the report gives mean ± std).")
    ] = 1,
    suites: Annotated[
        list[Path] | None,
        typer.Option("--suites", help="SyntaxGym suite files or folders to score every run on (repeatable)."),
    ] = None,
    blimp: Annotated[
        Path | None,
        typer.Option(
            help="A BLiMP data folder (one .jsonl per paradigm): score every run on its 10% subset "
            "(Qian et al. 2021: the first 100 pairs of each paradigm).",
            show_default=False,
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a recipe key: --set train.max_steps=2000 (repeatable)."),
    ] = None,
    test_sentences: Annotated[
        int | None, typer.Option(help="Score only the first N test sentences.", show_default=False)
    ] = None,
    parser: Annotated[
        str | None,
        typer.Option(
            help="Joint models (TG, TXL (trees), PLM): the proposal parser for importance-sampled "
            "perplexity and reranked F1, a saved parser folder or a parser recipe (default: the "
            "recipe parser-SCALE where one exists, trained once on the same data). 'none': without.",
            show_default=False,
        ),
    ] = None,
    proposal_samples: Annotated[
        int, typer.Option(min=1, help="Trees per test sentence drawn from the parser (TG: 300).")
    ] = 300,
    beam: BeamOptions = PAPER_BEAM,
    device: DeviceOption = "cpu",
    batch_size: BatchSizeOption = 16,
) -> None:
    """A paper's table from its recipe: train (per seed) -> evaluate -> report (docs/reproduce.md).

    Runs that finished are kept and interrupted ones resume, so the command can be run again.
    """
    from syntaxlm.jobs.evaluation import EvalSettings
    from syntaxlm.jobs.recipes import find_recipe
    from syntaxlm.jobs.reproduce import reproduce

    if seeds < 1:
        raise typer.BadParameter("at least one seed", param_hint="--seeds")
    if parser != "none":
        _check_importance_samples(proposal_samples, "--proposal-samples")
    settings = EvalSettings(
        beam=beam.settings(),
        test_sentences=test_sentences,
        batch_size=batch_size,
        proposal_samples=proposal_samples,
        device=device,
    )
    name = find_recipe(recipe).stem
    out = out if out is not None else Path("runs") / "reproduce" / name
    with _resumed_when_run_again(out):
        reproduce(
            recipe,
            out,
            data=data,
            seeds=range(seeds),
            suites=_suite_files(suites) if suites else [],
            blimp=blimp,
            overrides=set_ or [],
            settings=settings,
            parser=parser,
            echo=typer.echo,
        )
