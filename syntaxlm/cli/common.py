"""What several commands do: print and write results, load a scorer, say how long it will take."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import typer

from syntaxlm.cli.options import BeamOptions


def _print_json(value) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _write_result(out: Path, kind: str, result, inputs=None, options=None) -> None:
    """Write a result file (``syntaxlm.results``): the result with its inputs and options."""
    from syntaxlm.results import result_record, write_result

    write_result(out, result_record(kind, result, inputs=inputs, options=options))


def _emit(kind: str, result, as_json: bool, out: Path | None, text: str, inputs=None, options=None) -> None:
    """Print a result (JSON or text) and, with ``out``, write it as a result file (``syntaxlm.results``)."""
    if out is not None:
        _write_result(out, kind, result, inputs, options)
    if as_json:
        _print_json(result)
    else:
        typer.echo(text)


def _scorer(model: Path, method: str, beam: BeamOptions, device: str, **options):
    """The ``Scorer`` of a saved model, loaded on ``device`` (``models.scoring_device``), from the
    scoring options; ``options`` are the Scorer's ``context``, ``batch_size`` and ``progress``."""
    from syntaxlm.inference import Scorer
    from syntaxlm.models import load_language_model, scoring_device

    loaded = load_language_model(model, map_location=scoring_device(device))
    return Scorer(loaded, method=method, beam=beam.settings(), **options)


LIMIT_HINT = "--limit N to score the first N only"  # how the commands with --limit score less
SUITES_HINT = "fewer suites per command (each suite's result is written as it is scored: --out)"
STORIES_HINT = "fewer stories (--stories 1,2)"


def _estimate_teller(
    sentences: list[list[str]], beam=None, limit: str | None = LIMIT_HINT, *, batch_size: int = 16
):
    """An ``on_estimate`` for scoring ``sentences`` with a joint model: says on stderr how long the
    whole will take, and for long work how to shorten it (``inference.estimate``); ``beam``: the
    beam search's settings when it is the method, searching ``batch_size`` sentences at a time;
    ``limit``: how the command scores less."""
    from syntaxlm.inference.estimate import estimate_message
    from syntaxlm.inference.sentences import searched_words

    words = sum(map(len, sentences))

    def tell(estimate) -> None:
        work = None
        if beam is not None:  # a prefix common to sentences of a batch is searched once
            first = searched_words(sentences[: estimate.sentences], batch_size)
            work = estimate.words * searched_words(sentences, batch_size) / max(first, 1)
        message = estimate_message(
            estimate, sentences=len(sentences), words=words, beam=beam, limit=limit, work=work
        )
        if message is not None:
            typer.secho(message, err=True, fg=typer.colors.YELLOW)

    return tell


def _estimate_before(scorer, sentences: list[list[str]], limit: str | None = LIMIT_HINT) -> None:
    """Have ``scorer``, when its model is joint, say how long scoring ``sentences`` will take."""
    if scorer.joint:
        beam = scorer.beam if scorer.method == "beam" else None
        scorer.on_estimate = _estimate_teller(sentences, beam, limit, batch_size=scorer.batch_size)


def _sentences_to_score(
    scorer, sentences: list[list[str]], given: dict[str, list], skip_long: bool, *, names: list | None = None
) -> tuple[list[int], list[list[str]], dict[str, list]]:
    """The sentences to score, with their indices and what is given for each (``trees``,
    ``proposals``): all of them (the scorer refuses one too long for the model), or with
    ``--skip-long`` those that fit, after a warning naming the others (by ``names``, by default
    their indices)."""
    too_long = set(scorer.too_long(sentences)) if skip_long else set()
    if too_long:
        named = [names[i] if names is not None else i for i in sorted(too_long)]
        typer.secho(
            f"warning: {len(too_long)} sentence(s) longer than the model can score "
            f"({scorer.model.longest_sentence()} pieces) left out: {', '.join(map(str, named))}",
            err=True,
            fg=typer.colors.YELLOW,
        )
    kept = [i for i in range(len(sentences)) if i not in too_long]
    return kept, [sentences[i] for i in kept], {key: [value[i] for i in kept] for key, value in given.items()}


def _write_lines(lines: list[str], out: Path | None) -> None:
    if out is None:
        typer.echo("\n".join(lines))
        return
    from syntaxlm.files import atomic_writer

    with atomic_writer(out) as handle:
        handle.write("".join(line + "\n" for line in lines))


@contextlib.contextmanager
def _resumed_when_run_again(out: Path) -> Iterator[None]:
    """Around commands that train runs in ``out``: a Ctrl-C says which runs stopped before their
    end and the step each resumes from, and exits with status 130."""
    try:
        yield
    except KeyboardInterrupt:
        from syntaxlm.train import unfinished_runs

        runs = unfinished_runs(out) if out.is_dir() else []
        stopped = ", ".join(
            f"{run} (checkpoint at step {step})" if step is not None else f"{run} (no checkpoint yet)"
            for run, step in runs
        )
        typer.echo(
            f"interrupted; runs that finished are kept{'; unfinished: ' + stopped if stopped else ''}\n"
            "run the same command again to resume (each unfinished run from its last checkpoint)",
            err=True,
        )
        raise typer.Exit(130) from None
