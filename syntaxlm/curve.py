"""A learning curve (``syntaxlm experiment curve``): SyntaxGym accuracy per phenomenon against the
number of training sentences, for several models, each trained with several seeds; or, with a
sweep (``CurveSettings.sweep``, ``--sweep model.n_layers=3,4,6``), against the values of one recipe
key at one training size.

Points. The curve's axis is the training size, or the swept key: each point is a size, or a value
of the key set in every model's recipe (at the one size), and every point is measured alike (same
data, seeds, phenomena, intervals and comparisons).

Data. One synthetic treebank is generated once, for the largest training size plus a dev and a
test split, and its SyntaxGym-format suites once with it (``OUT/data/``). The training file of a
smaller size is the *first* N sentences of the training split (``train-N.trees``), so the sizes
are nested prefixes of one another, and every size shares the dev split (validation), the test
split and the suites: runs of different sizes differ in their training data only. Each run builds
its vocabulary from its own training file, as a model trained on that much data would.

Budget. A run makes ``CurveSettings.epochs(size)`` passes over its training sentences,
``max(min_epochs, ceil(min_steps * batch_size / size))``: large sizes make ``min_epochs`` passes,
small ones as many passes as give them about ``min_steps`` updates, so that a small size is
measured as "less data", not "fewer updates". The run ends when its passes end (``train.epochs``),
and its cosine learning-rate schedule reaches its floor on that last step; ``train.max_steps`` is
only a cap set well above it (``CurveSettings.max_steps``). The model is validated once, at the end,
and the last model is the one evaluated.

Intervals. A phenomenon pools the items of its suites (an item is a suite's item number, scored by
its prediction 0, the published accuracy). A cell (model, point, phenomenon) is the mean outcome
over its seeds and items, with a 95% interval from a two-level bootstrap over items and seeds
(``syntaxlm.eval.intervals.bootstrap_mean``). A structured model is compared at the same point with
the words-only baseline of its paper and with the structured model its paper contrasts it with
(``ModelCard.baseline`` and ``ModelCard.contrast``: TG with TXL (terminals) and with TXL (trees),
PLM-mask with LM and with PLM), when those are in the curve, by the interval of the paired
difference (``bootstrap_difference``): "ahead" or "behind" when the interval excludes 0, "no
difference" when it contains 0.

Files. ``OUT/runs/MODEL/size-N/seed-S/`` (a sweep: ``OUT/runs/MODEL/KEY-VALUE/seed-S/``) holds one
run (``train_or_resume``; its ``last/`` model, ``results/sg/SUITE.json`` and ``timing.json``). A
run whose results exist is not run again, so an interrupted curve continues where it stopped.
``OUT/curve.json`` (a result file) holds the settings, every cell, the comparisons and each run's
steps and wall time; ``OUT/curve.md`` and ``OUT/curve.png`` are made from it alone.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.syntaxgym import SYNTHETIC_PHENOMENA, suite_group
from syntaxlm.experiments import (
    TINY_EVAL_BATCH,
    EvalSettings,
    Stages,
    cpu_workers,
    recipe_on_splits,
    train_and_evaluate,
    train_or_resume,
)
from syntaxlm.files import atomic_writer, read_json
from syntaxlm.inference.beam import BeamSettings
from syntaxlm.models import MODEL_CARDS, MODEL_NAMES, ConfigError
from syntaxlm.results import read_result, result_record, write_result

PHENOMENA = SYNTHETIC_PHENOMENA
CHECKPOINT_EVERY = 100  # steps; an interrupted run resumes from its last checkpoint
DATA_FILE = "curve-data.json"  # OUT/data/: the settings the data was made with
TIMING_FILE = "timing.json"
# Recipe keys a sweep may not set: the curve sets them itself (the budget, the seed, the data).
CURVE_KEYS = ("data.", "train.batch_size", "train.epochs", "train.max_steps", "train.seed")
SWEEP_VALUE = re.compile(r"[A-Za-z0-9_.+-]+")  # a value names run folders


@dataclass(frozen=True)
class CurveSettings:
    """Everything a learning curve depends on.

    - ``sizes``: training sentences of each point of the curve (the first N of one training split);
    - ``seeds``: training seeds of each (model, size); the data is the same for every seed
      (``data_seed``);
    - ``models``: tiny recipes (``configs/MODEL-tiny.yaml``), ``overrides`` (``KEY=VALUE``, e.g.
      ``model.n_layers=1``) applied to every one;
    - ``sweep``: ``(KEY, (VALUE, ...))``, a recipe key and its values (as YAML text, e.g.
      ``("model.n_layers", ("3", "4", "6"))``): the points of the curve are the values, each set
      in every model's recipe, at the one training size ``sizes`` then holds; ``None``: the points
      are the sizes;
    - ``dev_sentences``, ``test_sentences``: the shared dev split (validation, once at the end of a
      run) and test split (perplexity, when ``perplexity``);
    - ``items_per_suite``: items of each SyntaxGym suite; ``lexicon_size``: caps the synthetic
      grammar's open-class word lists (``None``: the full lexicon; 10, as the quickstart: a
      lexicon these budgets learn agreement with, docs/learning-curve.md);
    - the budget rule: ``epochs(size) = max(min_epochs, ceil(min_steps * batch_size / size))``
      passes, ``batch_size`` rows per step;
    - ``beam``: the joint models' word-synchronous beam for the suites (and perplexity/parses);
    - ``perplexity``: also score test perplexity (and the beam's parse F1 for joint models);
    - ``level``, ``resamples``: the bootstrap intervals.
    """

    sizes: tuple[int, ...] = (1000, 4000, 16000)
    seeds: tuple[int, ...] = (0, 1, 2)
    models: tuple[str, ...] = ("txl-terminals", "txl-trees", "tg", "lm", "plm-mask")
    data_seed: int = 0
    dev_sentences: int = 500
    test_sentences: int = 500
    items_per_suite: int = 20
    lexicon_size: int | None = 10
    min_epochs: int = 3
    min_steps: int = 1000
    batch_size: int = 32
    overrides: tuple[str, ...] = ()
    sweep: tuple[str, tuple[str, ...]] | None = None
    beam: BeamSettings = field(default_factory=lambda: BeamSettings(10, 3, 1))
    perplexity: bool = False
    level: float = 0.95
    resamples: int = 2000

    def __post_init__(self) -> None:
        counts = {
            "dev_sentences": self.dev_sentences,
            "test_sentences": self.test_sentences,
            "items_per_suite": self.items_per_suite,
            "min_epochs": self.min_epochs,
            "min_steps": self.min_steps,
            "batch_size": self.batch_size,
            "resamples": self.resamples,
        }
        for name, value in counts.items():
            if value < 1:
                raise ConfigError(f"curve: {name} must be at least 1, got {value}")
        if not self.sizes or min(self.sizes) < 1 or len(set(self.sizes)) != len(self.sizes):
            raise ConfigError(f"curve: sizes must be distinct positive numbers, got {self.sizes}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"curve: seeds must be distinct, got {self.seeds}")
        if not self.models or len(set(self.models)) != len(self.models):
            raise ConfigError(f"curve: models must be distinct names, got {self.models}")
        if not set(self.models) <= set(MODEL_NAMES):
            unknown = ", ".join(sorted(set(self.models) - set(MODEL_NAMES)))
            raise ConfigError(
                f"curve: {unknown}: not a language model; the curve measures the SyntaxGym accuracy of "
                f"language models: {', '.join(MODEL_NAMES)}"
            )
        if self.lexicon_size is not None and self.lexicon_size < 1:
            raise ConfigError(f"curve: lexicon_size must be at least 1 or None, got {self.lexicon_size}")
        if self.sweep is not None:
            self._check_sweep()

    def _check_sweep(self) -> None:
        key, values = self.sweep
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+", key):
            raise ConfigError(f"curve: sweep key {key!r} is not a recipe key such as model.n_layers")
        if key.startswith(CURVE_KEYS):
            raise ConfigError(
                f"curve: sweep key {key} is set by the curve itself (its data, budget and seeds); "
                "sweep a model or optimiser key, e.g. model.n_layers or train.lr"
            )
        if not values or len(set(values)) != len(values):
            raise ConfigError(f"curve: sweep {key} needs distinct values, got {list(values)}")
        for value in values:
            if not SWEEP_VALUE.fullmatch(value):
                raise ConfigError(
                    f"curve: sweep value {value!r} of {key}: expected a number, word or boolean "
                    "(letters, digits, '.', '_', '+', '-'; it names the runs' folders)"
                )
        if len(self.sizes) != 1:
            raise ConfigError(
                f"curve: a sweep measures one training size, got sizes {list(self.sizes)}; give one --sizes value"
            )

    @property
    def points(self) -> tuple:
        """The curve's points in order: the sizes (ascending), or the swept values as given."""
        return self.sweep[1] if self.sweep is not None else tuple(sorted(self.sizes))

    def size_of(self, point) -> int:
        """Training sentences of a point."""
        return self.sizes[0] if self.sweep is not None else point

    def point_overrides(self, point) -> tuple[str, ...]:
        """The recipe overrides of a point: ``overrides``, then the swept key's value."""
        return self.overrides + ((f"{self.sweep[0]}={point}",) if self.sweep is not None else ())

    def epochs(self, size: int) -> int:
        """Passes over ``size`` training sentences: at least ``min_epochs``, and enough for about
        ``min_steps`` updates of ``batch_size`` sentences."""
        return max(self.min_epochs, math.ceil(self.min_steps * self.batch_size / size))

    def max_steps(self, size: int) -> int:
        """A cap on a run's steps that its passes end first: 4 x its batches of sentences (a row of
        a segment model holds at least a quarter of a sentence)."""
        return 4 * self.epochs(size) * math.ceil(size / self.batch_size)

    def data_settings(self) -> dict[str, Any]:
        """What the treebank and the suites depend on."""
        return {
            "train_sentences": max(self.sizes),
            "dev_sentences": self.dev_sentences,
            "test_sentences": self.test_sentences,
            "data_seed": self.data_seed,
            "items_per_suite": self.items_per_suite,
            "lexicon_size": self.lexicon_size,
        }

    def to_json(self) -> dict[str, Any]:
        values = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        values["sweep"] = (
            None if self.sweep is None else {"key": self.sweep[0], "values": list(self.sweep[1])}
        )
        return values | {"epochs_rule": "max(min_epochs, ceil(min_steps * batch_size / size))"}


def label(model: str) -> str:
    """A model's name as the papers write it (its card's ``label``)."""
    return MODEL_CARDS[model].label if model in MODEL_CARDS else model


def run_folder(out: Path, model: str, point, seed: int, settings: CurveSettings) -> Path:
    """``OUT/runs/MODEL/size-N/seed-S``, or for a sweep ``OUT/runs/MODEL/KEY-VALUE/seed-S``."""
    where = f"size-{point}" if settings.sweep is None else f"{settings.sweep[0]}-{point}"
    return out / "runs" / model / where / f"seed-{seed}"


# --- data -----------------------------------------------------------------------------------------


def prepare_curve_data(out: Path, settings: CurveSettings) -> dict[str, Any]:
    """Write (once) the treebank, its suites and the nested training files into ``out/data``;
    returns ``{"train": {size: path}, "dev", "test", "suites": [paths]}``. A folder holding data
    made with other data settings is refused."""
    from syntaxlm.data.synthetic import write_synthetic_treebank

    folder = out / "data"
    wanted = settings.data_settings()
    record = folder / DATA_FILE
    if record.is_file():
        made = read_json(record, InputFormatError, expected="the curve's data settings")
        if made != wanted:
            changed = ", ".join(f"{k} {made.get(k)} -> {v}" for k, v in wanted.items() if made.get(k) != v)
            raise ConfigError(
                f"{folder} holds data made with other settings ({changed}); choose another output folder"
            )
    else:
        n_train, n_dev, n_test = (wanted[k] for k in ("train_sentences", "dev_sentences", "test_sentences"))
        total = n_train + n_dev + n_test
        options = {} if settings.lexicon_size is None else {"lexicon_size": settings.lexicon_size}
        manifest = write_synthetic_treebank(
            folder,
            sentences=total,
            seed=settings.data_seed,
            split=(n_train / total, n_dev / total, n_test / total),
            items_per_suite=settings.items_per_suite,
            **options,
        )
        counts = [manifest["files"][split]["sentences"] for split in ("train", "dev", "test")]
        if counts != [n_train, n_dev, n_test]:
            raise AssertionError(f"synthetic splits of {counts} sentences, {[n_train, n_dev, n_test]} asked")
        with atomic_writer(record) as handle:
            json.dump(wanted, handle, indent=2)
    lines = (folder / "train.trees").read_text(encoding="utf-8").splitlines(keepends=True)
    train = {}
    for size in sorted(settings.sizes):
        path = folder / f"train-{size}.trees"
        if not path.is_file():
            with atomic_writer(path) as handle:
                handle.writelines(lines[:size])
        train[size] = path
    return {
        "train": train,
        "dev": folder / "dev.trees",
        "test": folder / "test.trees",
        "suites": sorted((folder / "suites").glob("*.json")),
    }


# --- runs -----------------------------------------------------------------------------------------


def run_config(model: str, point, seed: int, data: Mapping[str, Any], settings: CurveSettings):
    """The ``RunConfig`` of one run: ``configs/MODEL-tiny.yaml`` with the point's overrides, on
    the point's training sentences, trained for ``settings.epochs(size)`` passes."""
    size = settings.size_of(point)
    cap = settings.max_steps(size)
    train = {
        "batch_size": settings.batch_size,
        "epochs": settings.epochs(size),
        "max_steps": cap,
        "eval_every": cap,  # validated once, at the end of the passes
        "checkpoint_every": CHECKPOINT_EVERY,
        "patience": None,
        "log_every": max(1, cap // 4 // 40),  # about 40 points on the training-loss curve
    }
    splits = {"train": data["train"][size], "dev": data["dev"], "test": data["test"]}
    return recipe_on_splits(
        f"{model}-tiny", splits, train=train, overrides=settings.point_overrides(point), seed=seed
    )


def check_recipes(settings: CurveSettings) -> None:
    """Build every model's recipe at every point before anything is trained, so that a misspelt
    model, key or value fails now, not after hours of training (one ``ConfigError``)."""
    for model in settings.models:
        for point in settings.points:
            try:
                recipe_on_splits(f"{model}-tiny", {}, train={}, overrides=settings.point_overrides(point))
            except ConfigError as error:
                if settings.sweep is None:
                    raise
                raise ConfigError(f"sweep {settings.sweep[0]}={point} for {model}: {error}") from None


def is_evaluated(run: Path, suites: Sequence[Path], settings: CurveSettings) -> bool:
    """Whether ``run`` has a result for every suite (and perplexity, when asked for)."""
    results = run / "results"
    if settings.perplexity and not (results / "perplexity.json").is_file():
        return False
    return all((results / "sg" / f"{suite.stem}.json").is_file() for suite in suites)


def train_and_evaluate_run(config, run: Path, **evaluation: Any) -> None:
    """Train one run of the curve (or resume it) and evaluate its last model (``evaluate_model``'s
    keywords), adding the seconds of each to ``run/timing.json`` (kept across resumptions)."""
    seconds = train_and_evaluate(config, run, model="last", **evaluation)
    timing = read_json(run / TIMING_FILE, InputFormatError) if (run / TIMING_FILE).is_file() else {}
    for stage, value in seconds.items():
        timing[f"{stage}_seconds"] = round(timing.get(f"{stage}_seconds", 0.0) + value, 1)
    with atomic_writer(run / TIMING_FILE) as handle:
        json.dump(timing, handle, indent=2)


def _run_weight(model: str, size: int, settings: CurveSettings) -> float:
    """Expected cost of training and evaluating one run, for the time left (quickstart's measured
    costs: per pass over 3,200 sentences, and per evaluation on suites of 20 items)."""
    from syntaxlm.quickstart import EVAL_WEIGHT, TRAIN_WEIGHT, WORDS_ONLY_EVAL_WEIGHT

    train = TRAIN_WEIGHT.get(model, 3.0) * settings.epochs(size) * size / 3200
    return train + EVAL_WEIGHT.get(model, WORDS_ONLY_EVAL_WEIGHT) * settings.items_per_suite / 20


def point_name(point, settings: CurveSettings | Mapping[str, Any]) -> str:
    """A point as the report and the progress line write it: ``size 4,000`` or ``model.n_layers=6``."""
    sweep = settings.sweep if isinstance(settings, CurveSettings) else settings.get("sweep")
    if sweep is None:
        return f"size {point:,}"
    key = sweep[0] if isinstance(sweep, tuple) else sweep["key"]
    return f"{key}={point}"


def run_curve(
    out: str | Path,
    settings: CurveSettings = CurveSettings(),
    *,
    workers: int | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train and evaluate every (model, point, seed) run not yet evaluated, then write
    ``curve.json``, ``curve.md`` and ``curve.png`` into ``out``; returns ``curve.json``'s result.
    ``workers``: runs trained and evaluated side by side, each in its own process (default
    ``cpu_workers()``: one per CPU thread, 1 on a GPU)."""
    out = Path(out)
    check_recipes(settings)
    echo(f"data: {out / 'data'}")
    data = prepare_curve_data(out, settings)
    eval_settings = EvalSettings(
        beam=settings.beam, test_sentences=settings.test_sentences, batch_size=TINY_EVAL_BATCH
    )
    todo, total = [], len(settings.seeds) * len(settings.points) * len(settings.models)
    for seed in settings.seeds:
        for point in settings.points:
            for model in settings.models:
                run = run_folder(out, model, point, seed, settings)
                if not is_evaluated(run, data["suites"], settings):
                    todo.append((model, point, seed))
                else:  # kept, once checked to be a run of these settings (else ConfigError)
                    train_or_resume(run_config(model, point, seed, data, settings), run, progress=False)
    if len(todo) < total:
        echo(f"{total - len(todo)} of {total} runs already evaluated; they are kept")
    weights = [
        (
            f"train and evaluate {model} {point_name(point, settings)} seed {seed}",
            _run_weight(model, settings.size_of(point), settings),
        )
        for model, point, seed in todo
    ]
    jobs = [
        partial(
            train_and_evaluate_run,
            run_config(model, point, seed, data, settings),
            run_folder(out, model, point, seed, settings),
            test=data["test"] if settings.perplexity else None,
            suites=data["suites"],
            settings=eval_settings,
        )
        for model, point, seed in todo
    ]
    Stages(weights, echo=echo).run_independent(
        range(len(jobs)), jobs, workers=cpu_workers() if workers is None else workers
    )
    result = aggregate_curve(out, settings)
    write_curve_report(out)
    echo(f"curve: {out / 'curve.md'}, {out / 'curve.png'}")
    return result


# --- aggregation ----------------------------------------------------------------------------------


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


# --- the report -----------------------------------------------------------------------------------


def write_curve_report(out: str | Path) -> tuple[Path, Path]:
    """``out/curve.md`` and ``out/curve.png`` from ``out/curve.json`` alone."""
    from syntaxlm.report.plots import learning_curve_figure, save_figure

    out = Path(out)
    curve = read_result(out / "curve.json")["result"]
    settings = curve["settings"]
    sweep = settings.get("sweep")
    points = sweep["values"] if sweep else sorted(settings["sizes"])
    points = [p for p in points if any(cell["point"] == p for cell in curve["cells"])]
    models = [m for m in settings["models"] if any(cell["model"] == m for cell in curve["cells"])]
    cell = {(c["model"], c["point"], c["phenomenon"]): c for c in curve["cells"]}
    percent = round(100 * settings["level"])
    overrides = f", with {', '.join(settings['overrides'])}" if settings["overrides"] else ""
    if sweep:
        size = settings["sizes"][0]
        epochs = max(settings["min_epochs"], math.ceil(settings["min_steps"] * settings["batch_size"] / size))
        lines = [
            f"# Sweep: SyntaxGym accuracy against {sweep['key']}",
            "",
            (
                f"Models: {', '.join(label(m) for m in settings['models'])} (their tiny recipes{overrides}), "
                f"each with {sweep['key']} set to {', '.join(sweep['values'])}; {size:,} training sentences "
                f"(synthetic, data seed {settings['data_seed']}), {epochs} passes over them, "
                f"{settings['batch_size']} per step; training seeds {', '.join(map(str, settings['seeds']))}; "
                f"{settings['items_per_suite']} items per suite."
            ),
        ]
    else:
        lines = [
            "# Learning curve: SyntaxGym accuracy against training size",
            "",
            (
                f"Models: {', '.join(label(m) for m in settings['models'])} (their tiny recipes{overrides}); "
                f"training sentences {', '.join(f'{s:,}' for s in settings['sizes'])} (nested prefixes of one "
                f"synthetic training split, data seed {settings['data_seed']}); training seeds "
                f"{', '.join(map(str, settings['seeds']))}; {settings['items_per_suite']} items per suite."
            ),
            (
                f"Each run makes max({settings['min_epochs']}, ceil({settings['min_steps']} x "
                f"{settings['batch_size']} / size)) passes over its sentences, {settings['batch_size']} per step."
            ),
        ]
    lines += [
        "",
        (
            f"Each cell: mean accuracy (prediction 0) over the phenomenon's items and the seeds, with its "
            f"{percent}% interval from a bootstrap over items and seeds. Chance (a model that cannot tell "
            "the conditions apart): "
            + ", ".join(f"{name} {level:.2f}" for name, level in curve.get("chance", {}).items())
            + ". Each model is compared at the same point with its paper's words-only baseline and with "
            "the structured model its paper contrasts it with, where both were run: ahead or behind when "
            f"the {percent}% interval of the paired difference excludes 0."
        ),
        "",
    ]
    planned = len(settings["models"]) * len(points or settings["sizes"]) * len(settings["seeds"])
    if len(curve["runs"]) < planned:
        have = {}
        for run in curve["runs"]:
            have.setdefault((run["model"], run["point"]), []).append(run["seed"])
        order = {p: i for i, p in enumerate(points)}
        lines += [
            f"**Incomplete:** {len(curve['runs'])} of {planned} runs evaluated (run the command again to "
            "continue); each cell averages the seeds it has: "
            + "; ".join(
                f"{label(m)} {_point_text(p, sweep)}: {', '.join(map(str, have[m, p]))}"
                for m, p in sorted(have, key=lambda k: (order.get(k[1], 0), k[0]))
            )
            + ".",
            "",
        ]
    heading = sweep["key"] if sweep else "training sentences"
    for phenomenon, pattern in curve["phenomena"].items():
        present = [c for c in curve["cells"] if c["phenomenon"] == phenomenon]
        if not present:
            continue
        lines += [f"## {phenomenon} (`{pattern}`, {present[0]['n_items']} items)", ""]
        columns = [f"{sweep['key']}={p}" if sweep else f"{p:,}" for p in points]
        lines += ["| model | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(points)]
        for model in models:
            row = [
                _interval_text(cell[model, point, phenomenon]) if (model, point, phenomenon) in cell else "–"
                for point in points
            ]
            lines.append(f"| {label(model)} | " + " | ".join(row) + " |")
        lines.append("")
        for point in points:
            said = [
                _comparison_text(c)
                for c in curve["comparisons"]
                if c["phenomenon"] == phenomenon and c["point"] == point
            ]
            if said:
                where = f"{sweep['key']} = {point}" if sweep else f"{point:,} sentences"
                lines.append(f"- {where}: " + "; ".join(said) + ".")
        lines.append("")
    lines += ["![learning curve](curve.png)", ""]
    stopped = sorted({r.get("stopped") for r in curve["runs"]} - {"epochs"})
    if stopped:
        how = ", ".join(map(str, stopped))
        lines += [f"Some runs stopped by {how}, not by the end of their passes; see curve.json.", ""]
    lines += [_timing_line(curve["runs"]), ""]
    with atomic_writer(out / "curve.md") as handle:
        handle.write("\n".join(lines))
    positions = _axis_positions(points, sweep)
    series = {
        phenomenon: {
            label(model): [
                (positions[point], *(cell[model, point, phenomenon][k] for k in ("estimate", "low", "high")))
                for point in points
                if (model, point, phenomenon) in cell
            ]
            for model in models
        }
        for phenomenon in curve["phenomena"]
        if any(c["phenomenon"] == phenomenon for c in curve["cells"])
    }
    figure = learning_curve_figure(
        series,
        chance=curve.get("chance") or None,
        ylabel="SyntaxGym accuracy",
        xlabel=heading,
        ticks={positions[p]: _point_text(p, sweep) for p in points},
        log_x=not sweep,
        title=f"SyntaxGym accuracy against {heading} ({percent}% intervals)",
    )
    return out / "curve.md", save_figure(figure, out / "curve.png")


def _point_text(point, sweep) -> str:
    return str(point) if sweep else f"{point:,}"


def _axis_positions(points: Sequence, sweep) -> dict[Any, float]:
    """Where each point sits on the figure's x axis: its size, its value when every swept value
    is a number, else its place in the order given."""
    if not sweep:
        return {point: float(point) for point in points}
    try:
        return {point: float(point) for point in points}
    except ValueError:
        return {point: float(i) for i, point in enumerate(points)}


def _interval_text(value: Mapping[str, float]) -> str:
    return f"{value['estimate']:.2f} [{value['low']:.2f}, {value['high']:.2f}]"


def _comparison_text(comparison: Mapping[str, Any]) -> str:
    difference = comparison["difference"]
    numbers = f"{difference['estimate']:+.2f} [{difference['low']:+.2f}, {difference['high']:+.2f}]"
    model, base = label(comparison["model"]), label(comparison["reference"])
    if comparison["verdict"] == "no difference":
        return f"{model}: no difference from {base} ({numbers})"
    relation = "ahead of" if comparison["verdict"] == "ahead" else comparison["verdict"]
    return f"{model} is {relation} {base} ({numbers})"


def _timing_line(runs: Sequence[Mapping[str, Any]]) -> str:
    train = sum(r.get("train_seconds", 0.0) for r in runs)
    evaluate = sum(r.get("evaluate_seconds", 0.0) for r in runs)
    return (
        f"{len(runs)} runs: {train / 60:.1f} minutes of training and {evaluate / 60:.1f} minutes of "
        "evaluation (wall time; each run's in curve.json)."
    )
