"""Reading-time evaluation (``syntaxlm eval rt``): models' surprisal along a corpus's stories
against human reading times (``reading_time_evaluation``), and ``write_reading_times`` its result
file, per-token table and figure."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.inference.beam import PAPER_BEAM, BeamSettings
from syntaxlm.jobs.suites import beam_options
from syntaxlm.results import result_record, write_result


@dataclass
class ReadingTimes:
    """What ``eval rt`` computed: the corpus, each model's surprisal per token, the exclusions and
    the result (``eval.reading_regression.reading_times_result``), with its inputs and options."""

    corpus: Any
    surprisals: dict[str, Any]
    excluded: Any
    result: dict[str, Any]
    inputs: dict[str, Path]
    options: dict[str, Any]


def model_name(folder: str | Path) -> str:
    """A saved model's name: its run folder's (``runs/tg/best`` is ``tg``), else its own folder's."""
    folder = Path(folder)
    return folder.parent.name if folder.name in ("best", "last") and folder.parent.name else folder.name


def run_perplexity(folder: str | Path, given: str | Path | None = None) -> dict[str, Any] | None:
    """The test perplexity of a saved model for ``eval rt``'s figure: from the result file ``given``,
    else from ``RUN/results/perplexity.json`` of its run folder when there is one (``None`` when not):
    the per-word perplexity, how it was obtained and of which data."""
    from syntaxlm.results import read_checked_result

    folder = Path(folder)
    run = folder.parent if folder.name in ("best", "last") else folder
    path = Path(given) if given is not None else run / "results" / "perplexity.json"
    if given is None and not path.is_file():
        return None
    record = read_checked_result(path)
    if record["kind"] != "perplexity":
        raise InputFormatError(
            f"a {record['kind']} result", path=path, expected="a perplexity result (eval ppl --out)"
        )
    result = record["result"]
    value = result.get("perplexity_per_word", result.get("perplexity"))
    marginalisation, options = result.get("marginalisation") or {}, record.get("options") or {}
    method = marginalisation.get("method") or options.get("method") or "method not recorded"
    data = ((record.get("inputs") or {}).get("data") or {}).get("path")
    return {"per_word": value, "method": method, "data": data, "path": str(path)}


def reading_time_evaluation(
    corpus_path: str | Path,
    model_folders: Sequence[str | Path],
    *,
    stories: Sequence[str] | None = None,
    predictors: Sequence[str] = (),
    method: str = "auto",
    beam: BeamSettings = PAPER_BEAM,
    context: str = "auto",
    rt_range: tuple[float, float] = (100.0, 3000.0),
    spillover: int = 2,
    folds: int = 10,
    seed: int = 0,
    keep_unknown: bool = False,
    perplexities: Sequence[str | Path | None] | None = None,
    batch_size: int = 16,
    progress: bool = False,
    on_scorer: Callable[[Any, list[list[str]]], None] | None = None,
) -> ReadingTimes:
    """``syntaxlm eval rt``: each model's surprisal along the corpus's stories, its predictive power
    for the reading times (ΔLL, ``eval.reading_regression``) and the per-token table
    (docs/reading-times.md). ``method`` is for the joint models (``"auto"``: the beam search with
    ``beam``; ``"gold"``: along the corpus's trees); words-only models are always scored exactly.
    ``perplexities``: a perplexity result file per model (``None``: its run's
    ``results/perplexity.json`` where there is one), for the figure. ``on_scorer`` sees each scorer
    and the sentences it is about to score (the CLI's time estimate)."""
    from syntaxlm.eval.reading_regression import check_regression_sizes, reading_times_result
    from syntaxlm.eval.reading_times import read_reading_corpus

    if perplexities is not None and len(perplexities) != len(model_folders):
        raise ValueError(f"{len(perplexities)} perplexity files for {len(model_folders)} models")
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    corpus = read_reading_corpus(corpus_path, stories=stories, predictors=predictors)
    seconds["read corpus"] = round(time.perf_counter() - began, 1)
    check_regression_sizes(len(corpus.tokens), spillover=spillover, folds=folds)  # before any scoring
    names: list[str] = []
    surprisals: dict[str, Any] = {}
    models: dict[str, dict[str, Any]] = {}
    inputs: dict[str, Path] = dict(corpus.inputs)
    settings = {"beam": beam, "batch_size": batch_size, "progress": progress}
    for k, folder in enumerate(model_folders):
        name = model_name(folder)
        name = name if name not in names else f"{name} #{names.count(name) + 1}"
        names.append(name)
        began = time.perf_counter()
        given = None if perplexities is None else perplexities[k]
        surprisals[name], models[name] = _model_surprisals(
            corpus, folder, given, method, context, settings, on_scorer
        )
        seconds[f"score {name}"] = round(time.perf_counter() - began, 1)
        inputs[f"model:{name}"] = Path(folder) / "model.safetensors"
    began = time.perf_counter()
    options = {
        "rt_range": rt_range,
        "spillover": spillover,
        "folds": folds,
        "seed": seed,
        "keep_unknown": keep_unknown,
    }
    result, excluded = reading_times_result(corpus, surprisals, models, **options)
    seconds["regression"] = round(time.perf_counter() - began, 1)
    result["seconds"] = seconds
    recorded = {"method": method, "context": context, "stories": list(stories) if stories else None}
    return ReadingTimes(corpus, surprisals, excluded, result, inputs, recorded | options)


def _model_surprisals(
    corpus, folder: str | Path, perplexity: str | Path | None, method: str, context: str,
    settings: dict[str, Any], on_scorer,
) -> tuple[Any, dict[str, Any]]:
    """One saved model's surprisal per token of ``corpus`` (``reading_time_evaluation``) and its
    entry in the result: how it was scored, its perplexity (``run_perplexity``) and the sentences
    it could not score. ``settings``: the ``Scorer``'s beam, batch size and progress."""
    from syntaxlm.eval.reading_times import token_surprisals
    from syntaxlm.eval.scorers import story_context, story_surprisals
    from syntaxlm.inference import Scorer
    from syntaxlm.inference.grammar import InferenceError
    from syntaxlm.models import load_language_model

    sentences = [list(sentence.words) for sentence in corpus.sentences]
    story_words = [[w for s in story for w in sentences[s]] for story in corpus.story_sentences()]
    loaded = load_language_model(folder)
    scorer = Scorer(loaded, **settings)
    if method != "auto" and scorer.joint:  # words-only models: always exact
        scorer = Scorer(loaded, method=method, **settings)
    trees = None
    if scorer.method == "gold":
        trees = [sentence.tree for sentence in corpus.sentences]
        if any(tree is None for tree in trees):
            raise InferenceError(
                "method 'gold' needs the corpus's trees: Natural Stories has them, a TSV not"
            )
    read_as, why = story_context(scorer, story_words, context)
    if on_scorer is not None:
        on_scorer(scorer, story_words if read_as == "document" else sentences)
    bits, unknown, unscored = story_surprisals(
        scorer, sentences, corpus.story_sentences(), context=read_as, trees=trees
    )
    entry = {
        "model": str(folder),
        "family": scorer.model.config.model,
        "method": scorer.method,
        **beam_options(scorer),
        "context": read_as,
        "context_reason": why,
        "perplexity": run_perplexity(folder, perplexity),
        "unscored_sentences": [
            {"sentence": s, "first_token": corpus.tokens[corpus.sentences[s].word_token[0]].code}
            | {"why": reason}
            for s, reason in unscored.items()
        ],
    }
    return token_surprisals(corpus, bits, unknown), entry


def reading_time_outputs(out: str | Path) -> tuple[Path, Path]:
    """Beside ``eval rt``'s result file ``OUT.json``: the per-token table ``OUT.tokens.tsv`` and the
    figure ``OUT.png``."""
    out = Path(out)
    stem = out.with_suffix("") if out.suffix == ".json" else out
    return stem.with_name(stem.name + ".tokens.tsv"), stem.with_name(stem.name + ".png")


def write_reading_times(evaluation: ReadingTimes, out: str | Path) -> list[Path]:
    """Write the result file ``out``, the per-token table and, when models have perplexities, the
    figure of ΔLL against perplexity (``reading_time_outputs``), each atomically; returns their paths."""
    from syntaxlm.eval.intervals import Interval
    from syntaxlm.eval.reading_times import token_table_rows
    from syntaxlm.files import atomic_writer

    table, figure_path = reading_time_outputs(out)
    record = result_record(
        "reading_times", evaluation.result, inputs=evaluation.inputs, options=evaluation.options
    )
    write_result(out, record)
    with atomic_writer(table) as handle:
        for row in token_table_rows(evaluation.corpus, evaluation.surprisals, evaluation.excluded):
            handle.write("\t".join(cell.replace("\t", " ") for cell in row) + "\n")
    written = [Path(out), table]
    points = {
        entry["name"]: (entry["perplexity"], Interval(**entry["interval"]))
        for entry in evaluation.result["models"]
        if entry.get("perplexity") and entry["perplexity"].get("per_word") is not None
    }
    if points:
        from syntaxlm.report.plots import delta_loglik_vs_perplexity_figure, save_figure

        methods = {p["method"] for p, _ in points.values()}
        named = {
            (f"{name} ({p['method']})" if len(methods) > 1 else name): (p["per_word"], interval)
            for name, (p, interval) in points.items()
        }
        xlabel = "test perplexity per word" + (f" ({methods.pop()})" if len(methods) == 1 else "")
        corpus = evaluation.result["corpus"]
        title = f"surprisal and reading times ({corpus})"
        figure = delta_loglik_vs_perplexity_figure(named, xlabel=xlabel, title=title)
        written.append(save_figure(figure, figure_path))
    return written
