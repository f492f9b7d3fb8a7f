"""A scorer's SyntaxGym results, one per suite (``suite_results``: ``eval sg --model`` and
``evaluate_model``), the beam settings every scored result records (``beam_options``), and the
results a folder already holds (``scored_suites``: ``eval sg --resume``)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from syntaxlm.jobs.pool import cpu_pool


def beam_options(scorer) -> dict[str, Any]:
    """The beam settings a scorer's numbers depend on (empty unless it searches)."""
    return beam_fields(scorer.beam) if scorer.method == "beam" else {}


def beam_fields(beam) -> dict[str, int]:
    """The sizes of a ``BeamSettings`` that a result records."""
    return {"action_beam": beam.action_beam, "word_beam": beam.word_beam, "fast_track": beam.fast_track}


def scored_suites(
    folder: Path, suite_paths: Sequence[Path], model_file: Path, options: dict[str, Any]
) -> dict[Path, dict]:
    """The results in ``folder`` (``SUITE.json``, as ``eval sg --out`` writes them) of those of
    ``suite_paths`` already scored: suite path → result. Each must come from the same model file,
    the same suite file and the same ``options`` (method and beam); a file from another is an
    error naming it and what differs, since scoring on would mix two runs in one folder."""
    from syntaxlm.files import sha256_file
    from syntaxlm.results import read_result, refuse_another_run

    model_sha256 = sha256_file(model_file)
    found = {}
    for path in suite_paths:
        file = Path(folder) / f"{Path(path).stem}.json"
        if not file.is_file():
            continue
        record = read_result(file)
        inputs = record.get("inputs") or {}
        checks = [
            ("kind", record["kind"] == "syntaxgym"),
            ("model", (inputs.get("model") or {}).get("sha256") == model_sha256),
            ("suite", (inputs.get("suite") or {}).get("sha256") == sha256_file(path)),
            (f"options {record.get('options')}", record.get("options") == options),
        ]
        expected = f"the SyntaxGym result of {path} scored by {model_file} with {options}, or no file"
        refuse_another_run(file, "a result", checks, expected)
        found[Path(path)] = record["result"]
    return found


def suite_results(
    scorer, suite_paths: Sequence[Path], *, progress: bool = False, workers: int = 1
) -> Iterator[tuple[Path, dict]]:
    """Per suite file, its SyntaxGym result (``evaluate_suite``'s JSON plus the words the model's
    vocabulary does not know (``suite_unknown_words``), the tokenisation warnings and the scoring
    method), in the order given. Every suite is read and checked before the model scores any. With
    ``workers`` > 1 the suites are scored in that many processes, each with its share of the CPU
    threads (same results: each suite is scored as alone)."""
    from syntaxlm.eval.syntaxgym import load_suite

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers > 1 and scorer.model.device.type != "cpu":
        raise ValueError(
            f"workers share the CPU's threads; a model on {scorer.model.device.type} scores in one process"
        )
    suites = [load_suite(path) for path in suite_paths]
    if workers == 1 or len(suites) < 2:
        for path, suite in zip(suite_paths, suites, strict=True):
            yield path, _suite_result(scorer, suite, progress)
        return
    from tqdm import tqdm

    with cpu_pool(min(workers, len(suites)), setup=_keep_worker_scorer, setup_args=(scorer,)) as pool:
        done = pool.map(_score_suite_in_worker, suites)
        for path, result in tqdm(
            zip(suite_paths, done), total=len(suites), desc="suites", unit="suite", disable=not progress
        ):
            yield path, result


def _suite_result(scorer, suite, progress: bool) -> dict:
    from syntaxlm.eval.scorers import syntaxgym_scorer
    from syntaxlm.eval.syntaxgym import evaluate_suite, suite_region_values, suite_unknown_words
    from syntaxlm.inference.sentences import unknown_words

    token_scorer, convention = syntaxgym_scorer(scorer)
    values = suite_region_values(suite, token_scorer, convention, progress=progress)
    unknown = suite_unknown_words(suite, functools.partial(unknown_words, scorer.model.vocab))
    options = {"method": scorer.method} | beam_options(scorer)
    result = evaluate_suite(suite, values).to_json()
    return {**result, **unknown, "warnings": values.warnings, **options}


_worker_scorer = None  # the scorer of a suite worker process (``suite_results``)


def _keep_worker_scorer(scorer) -> None:
    global _worker_scorer
    _worker_scorer = scorer


def _score_suite_in_worker(suite) -> dict:
    return _suite_result(_worker_scorer, suite, False)
