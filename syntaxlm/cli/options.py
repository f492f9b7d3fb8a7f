"""The options several commands share, declared once, and the checks of what was given."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from syntaxlm.inference.methods import SCORE_METHODS

if TYPE_CHECKING:
    from syntaxlm.inference import BeamSettings

NO_POS_TAGS_HINT = "for trees without POS tags (Choe–Charniak style) pass --no-pos-tags"
ModelArgument = Annotated[Path, typer.Argument(help="A saved model folder (written by save_pretrained).")]
SentencesArgument = Annotated[
    Path, typer.Argument(help="Sentences, one per line, words separated by spaces.")
]
PosTagsOption = Annotated[
    bool,
    typer.Option(
        "--pos-tags/--no-pos-tags",
        help="Given trees have POS tags (read in the models' view); --no-pos-tags: already without them.",
    ),
]
BatchSizeOption = Annotated[int, typer.Option(min=1, help="Sentences per batch.")]
DeviceOption = Annotated[
    str,
    typer.Option(
        help="Where the model scores: cpu, cuda, or auto (cuda where available). A GPU pays for the beam "
        "search of models with a real vocabulary (docs/performance.md).",
    ),
]
PARSER_SEED_MAX = 2**63 - 1  # the proposal parser's seeds: 0 .. span_parser.SEED_BOUND - 1
ProgressOption = Annotated[bool, typer.Option(help="Show a progress bar (on stderr).")]
SkipLongOption = Annotated[
    bool,
    typer.Option(
        "--skip-long",
        help="Leave out the sentences longer than the model can score (learned positions end; a warning "
        "names them) instead of stopping.",
    ),
]
SentenceLimitOption = Annotated[
    int | None, typer.Option("--limit", min=1, help="Only the first N sentences (a quick check).")
]


def choice(name: str, values: Iterable[str]) -> type[Enum]:
    """The choices of an option from a library's names (``values``): an Enum named ``name`` whose
    members are named and valued by them (``Choice.beam``, ``Choice("txl-trees")``)."""
    return Enum(name, [(value, value) for value in values], type=str)


ScoreMethod = choice("ScoreMethod", SCORE_METHODS)
OutOption = Annotated[Path | None, typer.Option(help="Also write the result JSON to this file.")]
ResultJsonOption = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]
ModelMethodOption = Annotated[
    str, typer.Option(help="--model: auto (exact for words-only models, beam for joint ones), beam, exact.")
]


class BeamOptions(NamedTuple):
    """The beam search's options as given: --action-beam, --word-beam, --fast-track."""

    action_beam: int
    word_beam: int
    fast_track: int

    def settings(self) -> BeamSettings:
        """The search's ``BeamSettings``, built when a command searches (which checks them), so that
        a command that does not loads no torch."""
        from syntaxlm.inference import BeamSettings

        return BeamSettings(*self)


PAPER_BEAM = BeamOptions(action_beam=100, word_beam=10, fast_track=5)  # structural guidance §3.2
ActionBeamOption = Annotated[int, typer.Option(help="Beam search: action beam.")]
WordBeamOption = Annotated[int, typer.Option(help="Beam search: word beam.")]
FastTrackOption = Annotated[int, typer.Option(help="Beam search: fast-track states per round.")]
BEAM_OPTIONS = list(BeamOptions._fields)  # the parameters of with_beam_options, as ctx names them


def with_beam_options(command: Callable) -> Callable:
    """``command``, whose parameter ``beam: BeamOptions = DEFAULT`` becomes, in its place, the options
    --action-beam, --word-beam and --fast-track (defaults: DEFAULT's), which it is given together
    as one ``BeamOptions``. Typer reads the options from the signature this sets."""
    signature = inspect.signature(command, eval_str=True)
    default = signature.parameters["beam"].default
    options = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=value, annotation=annotation)
        for name, value, annotation in zip(
            BeamOptions._fields, default, (ActionBeamOption, WordBeamOption, FastTrackOption), strict=True
        )
    ]
    parameters = []
    for parameter in signature.parameters.values():
        parameters += options if parameter.name == "beam" else [parameter]

    @functools.wraps(command)
    def run(**given):
        beam = BeamOptions(*(given.pop(name) for name in BeamOptions._fields))
        return command(**given, beam=beam)

    run.__signature__ = signature.replace(parameters=parameters)
    run.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    return run
# the options of a model's scoring, refused where a command scores precomputed values instead
SCORING_OPTIONS = ["method", *BEAM_OPTIONS, "device", "batch_size"]
# The library's size arguments (``SizeError.name``) as the options of parse, score and eval ppl.
SIZE_OPTIONS = {
    "k": "--kbest",
    "n": "--samples",
    "distinct": "--samples",
    "samples": "--samples",
    "action_beam": "--action-beam",
}


def _refuse_overwriting(out: Path | None, inputs: list[Path | None]) -> None:
    """Refuse an ``--out`` that would replace one of the command's inputs, before any work."""
    from syntaxlm.files import refuse_overwriting

    refuse_overwriting(out, inputs)


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter ``name`` was given (on the command line or in the environment)
    rather than left at its default (by the name of its source: typer has its own click)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _refuse_given(ctx: typer.Context, names: list[str], needs: str) -> None:
    """``BadParameter`` for the first of the parameters ``names`` that was given: it is for
    ``needs``, which this command line does not have (an option is refused, never ignored)."""
    for name in names:
        if _given(ctx, name):
            param = next(param for param in ctx.command.params if param.name == name)
            negated = ctx.params.get(name) is False and param.secondary_opts
            option = param.secondary_opts[0] if negated else param.opts[0]
            raise typer.BadParameter(f"{option} is for {needs}", param_hint=option)


@contextlib.contextmanager
def _sizes_as_options() -> Iterator[None]:
    """A ``SizeError`` of a library argument (``SIZE_OPTIONS``) as the ``BadParameter`` of its
    option: the message names the option, the memory it would take and the largest value that fits."""
    from syntaxlm.errors import SizeError

    try:
        yield
    except SizeError as error:
        if error.name not in SIZE_OPTIONS:
            raise
        raise typer.BadParameter(error.problem, param_hint=SIZE_OPTIONS[error.name]) from None


def _check_importance_samples(samples: int, option: str = "--samples") -> None:
    """The trees drawn per sentence for importance sampling (``eval ppl --parser``, ``reproduce``):
    at least the groups its spread over draws comes from, before any work."""
    from syntaxlm.inference.importance import GROUPS

    if samples < GROUPS:
        raise typer.BadParameter(
            f"{samples} is too few: the spread over draws comes from {GROUPS} independent groups of each "
            f"sentence's samples; at least {GROUPS}",
            param_hint=option,
        )


def _suite_files(given: list[Path]) -> list[Path]:
    """The suite files named, folders expanded to their ``*.json`` files in name order."""
    paths: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise typer.BadParameter(f"{path}: no *.json suite files in this folder", param_hint="SUITES")
            paths += found
        elif path.is_file():
            paths.append(path)
        else:
            raise typer.BadParameter(f"{path}: no such suite file or folder", param_hint="SUITES")
    return paths


def _numbers(text: str | None, option: str) -> tuple[int, ...] | None:
    """``"1000,4000"`` as ``(1000, 4000)``; ``None`` stays ``None``."""
    try:
        return None if text is None else tuple(map(int, _names(text, option)))
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected comma-separated integers", param_hint=option) from None


def _names(text: str | None, option: str) -> tuple[str, ...] | None:
    """``"tg, lm"`` as ``("tg", "lm")``; ``None`` (the option left out) stays ``None``; a list given
    empty is refused, not taken for the default."""
    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise typer.BadParameter(f"{text!r}: expected comma-separated values, none given", param_hint=option)
    return names
