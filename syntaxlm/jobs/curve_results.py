"""The learning curve's numbers (``aggregate_curve``, ``OUT/curve.json``): per model, point and
phenomenon, the mean outcome over the seeds and items with its bootstrap interval, and each model
against its paper's baseline and contrast (``jobs.curve`` says how they are measured)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.syntaxgym import SYNTHETIC_PHENOMENA, suite_group
from syntaxlm.files import read_json
from syntaxlm.jobs.curve_settings import TIMING_FILE, CurveSettings, is_evaluated, run_folder
from syntaxlm.models import MODEL_CARDS
from syntaxlm.results import read_result, result_record, write_result

PHENOMENA = SYNTHETIC_PHENOMENA


def phenomenon_of(suite: str) -> str | None:
    """The phenomenon a synthetic suite (by name) belongs to, or ``None``."""
    group = suite_group(suite)
    return group if group in PHENOMENA else None


def run_outcomes(results: Path) -> dict[str, dict[tuple[str, int], float]]:
    """Per phenomenon, each item's outcome (1.0 when prediction 0 holds) by (suite, item number),
    read from the suite results ``results/sg/*.json``."""
    outcomes: dict[str, dict[tuple[str, int], float]] = {}
    for path in sorted((results / "sg").glob("*.json")):
        result = read_result(path)["result"]
        phenomenon = phenomenon_of(result["suite"])
        if phenomenon is None:
            continue
        items = outcomes.setdefault(phenomenon, {})
        for item in result["items"]:
            items[(result["suite"], int(item["item_number"]))] = float(bool(item["results"][0]))
    return outcomes


def phenomenon_chance(results: Path) -> dict[str, float]:
    """Per phenomenon, the accuracy of a model that cannot tell the conditions apart: the suites'
    ``chance_pred0`` (0.5 for one comparison, lower for a conjunction) averaged over the items."""
    totals: dict[str, list[float]] = {}
    for path in sorted((results / "sg").glob("*.json")):
        result = read_result(path)["result"]
        phenomenon = phenomenon_of(result["suite"])
        if phenomenon is not None and result.get("chance_pred0") is not None:
            totals.setdefault(phenomenon, []).extend([result["chance_pred0"]] * len(result["items"]))
    return {phenomenon: sum(values) / len(values) for phenomenon, values in totals.items()}


def outcome_tables(runs: Sequence[Path]) -> dict[str, tuple[list[tuple[str, int]], list[list[float]]]]:
    """Per phenomenon, its items (sorted) and the ``[runs][items]`` outcome table of ``runs`` (seeds
    of one model and size); every run must have scored the same items."""
    per_run = [run_outcomes(run / "results") for run in runs]
    tables = {}
    for phenomenon in PHENOMENA:
        keys = sorted(per_run[0].get(phenomenon, {}))
        if not keys:
            continue
        for run, outcomes in zip(runs, per_run, strict=True):
            if sorted(outcomes.get(phenomenon, {})) != keys:
                raise InputFormatError(
                    f"other {phenomenon} items than {runs[0]}",
                    path=run / "results" / "sg",
                    expected="every seed scored on the same suites and items",
                )
        tables[phenomenon] = (keys, [[outcomes[phenomenon][key] for key in keys] for outcomes in per_run])
    return tables


def aggregate_curve(out: str | Path, settings: CurveSettings) -> dict[str, Any]:
    """Every cell (model, point, phenomenon) of the evaluated runs under ``out/runs`` with its
    interval, the comparisons (``comparisons``), and each run's steps and wall time; written to
    ``out/curve.json`` (a result file) and returned."""
    from syntaxlm.eval.intervals import bootstrap_mean

    out = Path(out)
    bootstrap = {"level": settings.level, "resamples": settings.resamples}
    suites = sorted((out / "data" / "suites").glob("*.json"))
    cells, runs, tables = [], [], {}
    for model in settings.models:
        for point in settings.points:
            # Only runs with every suite's result: one being evaluated has some of them.
            done = [
                seed
                for seed in settings.seeds
                if (run_folder(out, model, point, seed, settings) / "results" / "sg").is_dir()
                and is_evaluated(run_folder(out, model, point, seed, settings), suites, settings)
            ]
            if not done:
                continue
            folders = [run_folder(out, model, point, seed, settings) for seed in done]
            size = settings.size_of(point)
            for seed, run in zip(done, folders, strict=True):
                runs.append({"model": model, "point": point, "size": size, "seed": seed, **_run_facts(run)})
            for phenomenon, (keys, table) in outcome_tables(folders).items():
                tables[model, point, phenomenon] = table
                interval = bootstrap_mean(table, **bootstrap)
                cells.append(
                    {
                        "model": model,
                        "point": point,
                        "size": size,
                        "phenomenon": phenomenon,
                        **interval.to_json(),
                        "n_items": len(keys),
                        "n_seeds": len(done),
                        "seeds": done,
                    }
                )
    # Chance depends on the suites only, which every run shares: read it from the first run listed.
    first = run_folder(out, runs[0]["model"], runs[0]["point"], runs[0]["seed"], settings) if runs else None
    chance = phenomenon_chance(first / "results") if first else {}
    result = {
        "settings": settings.to_json(),
        "axis": settings.sweep[0] if settings.sweep is not None else "training sentences",
        "phenomena": {name: f"{prefix}*" for name, prefix in PHENOMENA.items()},
        "chance": chance,
        "cells": cells,
        "comparisons": comparisons(tables, settings),
        "runs": runs,
    }
    data = out / "data"
    inputs = {split: data / f"{split}.trees" for split in ("train", "dev", "test")}
    record = result_record("learning_curve", result, inputs=inputs, options=bootstrap)
    write_result(out / "curve.json", record)
    return result


def comparisons(
    tables: Mapping[tuple[str, Any, str], list[list[float]]], settings: CurveSettings
) -> list[dict[str, Any]]:
    """Each model against its paper's words-only baseline and the structured model its paper
    contrasts it with (``ModelCard.baseline``, ``ModelCard.contrast``), where those were measured
    at the same point and phenomenon: the paired bootstrap difference and its verdict."""
    from syntaxlm.eval.intervals import bootstrap_difference, verdict

    found = []
    for (model, point, phenomenon), table in tables.items():
        card = MODEL_CARDS.get(model)
        references = {"baseline": card and card.baseline, "contrast": card and card.contrast}
        for relation, reference in references.items():
            base = tables.get((reference, point, phenomenon))
            if base is None:
                continue
            difference = bootstrap_difference(table, base, level=settings.level, resamples=settings.resamples)
            found.append(
                {
                    "model": model,
                    "reference": reference,
                    "relation": relation,
                    "point": point,
                    "phenomenon": phenomenon,
                    "difference": difference.to_json(),
                    "verdict": verdict(difference),
                }
            )
    return found


def _run_facts(run: Path) -> dict[str, Any]:
    """A run's steps, how it stopped and its wall times (from its files)."""
    facts: dict[str, Any] = {}
    if (run / "training.json").is_file():
        training = read_result(run / "training.json")
        facts.update(
            steps=training["result"]["steps"],
            stopped=training["result"]["stopped"],
            epochs=training["options"]["config"]["train"].get("epochs"),
        )
    if (run / TIMING_FILE).is_file():
        facts.update(read_json(run / TIMING_FILE, InputFormatError))
    return facts
