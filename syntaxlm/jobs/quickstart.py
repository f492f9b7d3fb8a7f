"""The main job (``syntaxlm quickstart``): every model of the papers, tiny, trained and compared.

On the embedded default (the synthetic treebank and its SyntaxGym-format suites, generated fresh
from a seed) or on the user's treebank (``data=``), it

1. writes the treebank's splits and statistics (``data/``, ``summary.json``);
2. trains each model's tiny recipe (``configs/MODEL-tiny.yaml``) on the same splits with the same
   budget: the same number of passes over the training sentences, the same seed
   (``runs/MODEL/``; an interrupted quickstart resumes where it stopped);
3. evaluates each trained model (``runs/MODEL/results/``): test perplexity (exact, or by a
   word-synchronous beam for the joint models, labelled), the SyntaxGym suites, EVALB F1 of the
   beam's parses for the joint models and UF1 of the induced trees for PRPN and SOM;
4. writes ``report.md`` (made from the result files alone, plus figures drawn from the saved
   models) and ``view.html``, the explorer page of ``syntaxlm view``, and prints its table.

The models train side by side, each in its own process (one per CPU thread by default). ``FULL``
takes 12 minutes on 2 CPU cores, ``FAST`` under a minute (docs/performance.md).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.files import atomic_writer
from syntaxlm.jobs.costs import TRAIN_WEIGHT, evaluation_weight
from syntaxlm.jobs.evaluation import TINY_EVAL_BATCH, EvalSettings
from syntaxlm.jobs.pool import cpu_workers
from syntaxlm.jobs.quickstart_report import write_report_and_view
from syntaxlm.jobs.quickstart_settings import FAST, FULL, MODELS, Budget
from syntaxlm.jobs.recipes import recipe_on_splits
from syntaxlm.jobs.stages import Stages, clock
from syntaxlm.jobs.training import train_and_evaluate
from syntaxlm.models import model_class
from syntaxlm.version import __version__

SPLITS = ("train", "dev", "test")


# --- data -----------------------------------------------------------------------------------------


def prepare_data(out: Path, *, data: Path | None, budget: Budget, seed: int) -> dict[str, Any]:
    """Write or find the splits; returns their paths, the suites and the treebank statistics."""
    from syntaxlm.data.stats import treebank_stats
    from syntaxlm.data.synthetic import write_synthetic_treebank

    folder = out / "data"
    if data is None:
        manifest = write_synthetic_treebank(
            folder,
            sentences=budget.sentences,
            seed=seed,
            items_per_suite=budget.items_per_suite,
            lexicon_size=budget.lexicon_size,
        )
        splits = {split: folder / f"{split}.trees" for split in SPLITS}
        suites = sorted((folder / "suites").glob("*.json"))
        source = {
            "synthetic": {"sentences": budget.sentences, "seed": seed, "lexicon_size": budget.lexicon_size},
            "suites": manifest.get("suites"),
        }
    else:
        splits = user_splits(Path(data), folder)
        suites = []
        source = {"treebank": str(data)}
    stats = {}
    for split, path in splits.items():
        if path.suffix not in (".conllu", ".conll"):
            numbers = treebank_stats(path)
            stats[split] = {key: numbers[key] for key in ("sentences", "words", "sentence_length", "depth")}
    return {"splits": splits, "suites": suites, "source": source, "treebank": stats}


SPLIT_NAMES = {"train": ("train",), "dev": ("dev", "valid", "validation"), "test": ("test",)}


def _split_file(data: Path, split: str) -> Path:
    """The one file of ``data`` named for ``split``: ``train.trees``, or with a prefix as UD names
    its files (``en_ewt-ud-train.conllu``)."""
    found = sorted(
        path
        for path in data.iterdir()
        if path.is_file()
        and any(
            path.stem == name or path.stem.endswith((f"-{name}", f"_{name}", f".{name}"))
            for name in SPLIT_NAMES[split]
        )
    )
    if len(found) != 1:
        what = (
            f"{len(found)} {split} files ({', '.join(p.name for p in found)})"
            if found
            else f"no {split} file"
        )
        raise InputFormatError(
            what,
            path=data,
            expected="one file each for train, dev (or valid) and test, named train.* or *-train.*, and so on",
        )
    return found[0]


def user_splits(data: Path, folder: Path) -> dict[str, Path]:
    """A user's treebank as train/dev/test: a folder holding one file of each (``train.trees``,
    ``dev.trees``, ``test.trees``, or UD's ``en_ewt-ud-train.conllu`` and so on; ``valid`` for
    ``dev`` too), or one PTB-bracket file split 80/10/10 in file order."""
    from syntaxlm.trees.ptb import read_trees, write_trees

    if data.is_dir():
        return {split: _split_file(data, split) for split in SPLIT_NAMES}
    if not data.is_file():
        raise FileNotFoundError(f"{data}: no such treebank file or folder")
    trees = list(read_trees(data))
    if len(trees) < 10:
        raise InputFormatError(
            f"{len(trees)} trees", path=data, expected="at least 10 trees to split 80/10/10"
        )
    n_train, n_dev = int(0.8 * len(trees)), int(0.1 * len(trees))
    parts = {
        "train": trees[:n_train],
        "dev": trees[n_train : n_train + n_dev],
        "test": trees[n_train + n_dev :],
    }
    splits = {}
    for split, part in parts.items():
        splits[split] = folder / f"{split}.trees"
        write_trees(splits[split], part)
    return splits


# --- training and evaluation ----------------------------------------------------------------------


def model_config(name: str, splits: dict[str, Path], budget: Budget, seed: int):
    """The tiny recipe of ``name`` on the quickstart's splits and budget (``RunConfig``)."""
    train = {
        "batch_size": budget.batch_size,
        "epochs": budget.epochs,
        "max_steps": 1000000,
        "eval_every": 1000000,  # validated once, at the end: the model evaluated is the last one
        "checkpoint_every": 50,
        "patience": None,
        # about 40 points on each training-loss curve of the report
        "log_every": max(1, budget.epochs * budget.sentences // budget.batch_size // 40),
    }
    config = recipe_on_splits(f"{name}-tiny", splits, train=train, seed=seed)
    if hasattr(config.model, "dependency_batches"):  # DMLM: stage 1 for a fifth of the first epoch
        config.model = replace(
            config.model, dependency_batches=max(1, budget.sentences // (6 * budget.batch_size))
        )
    return config


def readable(name: str, data_kinds: set[str]) -> bool:
    """Whether model ``name`` reads the kind of treebank given."""
    return data_kinds <= set(model_class(name).reads)


# --- the whole job --------------------------------------------------------------------------------


def run_quickstart(
    out: str | Path,
    *,
    data: str | Path | None = None,
    fast: bool = False,
    budget: Budget | None = None,
    seed: int = 0,
    models: Sequence[str] | None = None,
    workers: int | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the whole job into ``out``; returns the summary (also ``out/summary.json``).

    ``budget``: ``FULL`` (default), ``FAST`` (``fast=True``) or one of the caller's own.
    ``workers``: processes training and evaluating the models side by side (default
    ``cpu_workers()``: one per CPU thread, 1 on a GPU).
    """
    from syntaxlm.data.treebank import treebank_kind

    out = Path(out)
    if budget is None:
        budget = FAST if fast else FULL
    chosen = [m for m in MODELS if models is None or m.name in models]
    unknown = set(models or ()) - {m.name for m in MODELS}
    if models is not None and not models:
        raise InputFormatError("no quickstart model chosen", expected=", ".join(m.name for m in MODELS))
    if unknown:
        raise InputFormatError(
            f"unknown quickstart model(s) {', '.join(sorted(unknown))}",
            expected=", ".join(m.name for m in MODELS),
        )
    weights = [("prepare the data", 0.3)]
    for m in chosen:
        cost = TRAIN_WEIGHT[m.name] * budget.epochs + evaluation_weight(m.name)
        weights.append((f"train and evaluate {m.name}", cost))
    weights.append(("write the report", 1.0))
    stages = Stages(weights, echo=echo)

    prepared = stages.run(
        0, lambda: prepare_data(out, data=None if data is None else Path(data), budget=budget, seed=seed)
    )
    kinds = {treebank_kind(path) for path in prepared["splits"].values()}
    settings = EvalSettings(
        beam=budget.beam, test_sentences=budget.test_sentences, batch_size=TINY_EVAL_BATCH
    )
    skipped = {
        m.name: f"the model does not read {' or '.join(sorted(kinds))} treebanks"
        for m in chosen
        if not readable(m.name, kinds)
    }
    for k, m in enumerate(chosen):
        if m.name in skipped:
            stages.run(1 + k, lambda: None)
    runnable = [(1 + k, m) for k, m in enumerate(chosen) if m.name not in skipped]
    jobs = [
        partial(
            train_and_evaluate,
            model_config(m.name, prepared["splits"], budget, seed),
            out / "runs" / m.name,
            test=prepared["splits"]["test"],
            suites=prepared["suites"],
            settings=settings,
        )
        for _, m in runnable
    ]
    timings = stages.run_independent(
        [index for index, _ in runnable], jobs, workers=cpu_workers() if workers is None else workers
    )
    seconds = {"prepare the data": stages.timings["prepare the data"]}
    for (_, m), timing in zip(runnable, timings, strict=True):
        seconds |= {f"{stage} {m.name}": value for stage, value in timing.items()}
    summary = {
        "syntaxlm": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "seed": seed,
        "budget": asdict(budget),
        "data": prepared["source"],
        "splits": {split: str(path) for split, path in prepared["splits"].items()},
        "treebank": prepared["treebank"],
        "models": [m.name for m in chosen],
        "skipped": skipped,
    }
    table = stages.run(len(weights) - 1, lambda: write_report_and_view(out, chosen, summary, budget))
    summary["seconds"] = seconds | {"write the report": stages.timings["write the report"]}
    summary["total_seconds"] = round(time.perf_counter() - stages.start, 1)
    with atomic_writer(out / "summary.json") as handle:
        json.dump(summary, handle, indent=2, ensure_ascii=False)
    echo(table)
    echo(
        f"report: {out / 'report.md'}, page: {out / 'view.html'}  ({clock(summary['total_seconds'])} in all)"
    )
    return summary


