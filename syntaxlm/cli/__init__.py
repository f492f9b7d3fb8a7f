"""The ``syntaxlm`` command line: thin wrappers that parse options and call library functions.

One module per sub-app (``data``, ``vocab``, ``inspect``, ``eval`` and ``eval_corpus``, ``plot``,
``model``, ``experiment``) and per family of top-level commands (``scoring``: score, parse,
generate; ``training``: train, quickstart, reproduce; ``reporting``: report, compare, view); the
options they share are declared once in ``options``, what they do alike is in ``common``. Here:
the app, its global options, the command tree, and ``main``.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated

import typer

from syntaxlm.cli import eval_corpus  # noqa: F401  (registers eval ppl, gen and rt on eval_app)
from syntaxlm.cli import reporting, scoring, training
from syntaxlm.cli.data import data_app
from syntaxlm.cli.eval import eval_app
from syntaxlm.cli.experiment import experiment_app
from syntaxlm.cli.inspect import inspect_app
from syntaxlm.cli.model import model_app
from syntaxlm.cli.plot import plot_app
from syntaxlm.cli.vocab import vocab_app
from syntaxlm.errors import SyntaxlmError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: rich's option tables truncate names at 80 columns
    help="Syntactic language models: data, training, scoring, parsing and the papers' evaluations.",
)


@app.callback()
def global_options(
    threads: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="CPU threads torch uses; worker processes share them out. Default: OMP_NUM_THREADS when "
            "set, else the cores not busy when the command starts (the 1-minute load average), at "
            "least 1. Numbers can differ in their last digits with the thread count.",
        ),
    ] = None,
) -> None:
    """Syntactic language models: data, training, scoring, parsing and the papers' evaluations."""
    from syntaxlm.threads import use_threads

    use_threads(threads)


# The command tree, in the order --help lists it: the commands, then the sub-apps.
app.command("score")(scoring.score_command)
app.command("parse")(scoring.parse_command)
app.command("generate")(scoring.generate_command)
app.command("report")(reporting.report)
app.command("view")(reporting.view_command)
app.command("train")(training.train_command)
app.command("quickstart")(training.quickstart)
app.command("reproduce")(training.reproduce_command)
app.add_typer(data_app, name="data")
app.add_typer(vocab_app, name="vocab")
app.add_typer(inspect_app, name="inspect")
app.add_typer(eval_app, name="eval")
app.add_typer(plot_app, name="plot")
app.add_typer(model_app, name="model")
app.add_typer(reporting.compare_app, name="compare")
app.add_typer(experiment_app, name="experiment")


def _interrupts_say_what_was_kept(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` and its sub-apps ``_kept_on_interrupt``."""
    for info in typer_app.registered_commands:
        info.callback = _kept_on_interrupt(info.callback)
    for group in typer_app.registered_groups:
        _interrupts_say_what_was_kept(group.typer_instance)


def _kept_on_interrupt(command):
    """``command``, whose Ctrl-C prints one line saying what was kept and exits with status 130
    (typer would exit silently). Commands that train say more (``_resumed_when_run_again``)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            typer.echo(
                "interrupted; files this command finished are kept, none is left half-written "
                "(each is put in place only when complete)",
                err=True,
            )
            raise typer.Exit(130) from None

    return run


_interrupts_say_what_was_kept(app)


def main() -> None:
    """Console entry point: library errors and failed file operations become one clear message and
    exit status 2."""
    from syntaxlm.files import os_error_message

    try:
        app()
    except SyntaxlmError as error:
        _fail(str(error))
    except OSError as error:
        _fail(os_error_message(error))


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    sys.exit(2)
