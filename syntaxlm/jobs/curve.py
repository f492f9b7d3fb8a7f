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
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.files import atomic_writer, read_json
from syntaxlm.jobs.costs import MEASURED_ITEMS, MEASURED_SENTENCES, TRAIN_WEIGHT, evaluation_weight
from syntaxlm.jobs.curve_report import write_curve_report
from syntaxlm.jobs.curve_results import aggregate_curve
from syntaxlm.jobs.curve_settings import TIMING_FILE, CurveSettings, is_evaluated, point_name, run_folder
from syntaxlm.jobs.evaluation import TINY_EVAL_BATCH, EvalSettings
from syntaxlm.jobs.pool import cpu_workers
from syntaxlm.jobs.recipes import recipe_on_splits
from syntaxlm.jobs.stages import Stages
from syntaxlm.jobs.training import train_and_evaluate, train_or_resume
from syntaxlm.models import ConfigError

CHECKPOINT_EVERY = 100  # steps; an interrupted run resumes from its last checkpoint
DATA_FILE = "curve-data.json"  # OUT/data/: the settings the data was made with


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
    """Expected cost of training and evaluating one run, for the time left (``jobs.costs``)."""
    train = TRAIN_WEIGHT.get(model, 3.0) * settings.epochs(size) * size / MEASURED_SENTENCES
    return train + evaluation_weight(model) * settings.items_per_suite / MEASURED_ITEMS


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
