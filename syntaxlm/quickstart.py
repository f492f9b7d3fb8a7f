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
import math
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from syntaxlm import __version__
from syntaxlm.errors import InputFormatError
from syntaxlm.eval.intervals import bootstrap_difference, bootstrap_mean, verdict
from syntaxlm.experiments import (
    TINY_EVAL_BATCH,
    EvalSettings,
    Stages,
    clock,
    cpu_workers,
    recipe_on_splits,
    train_and_evaluate,
)
from syntaxlm.files import atomic_writer
from syntaxlm.inference.beam import BeamSettings
from syntaxlm.models import ModelCard, model_card, model_class
from syntaxlm.results import read_result

SPLITS = ("train", "dev", "test")


# The models trained and compared, by their cards (``syntaxlm.models.ModelCard``: paper, structure,
# baseline): each paper's model beside the words-only baseline that paper compares it with.
MODELS = tuple(
    model_card(name)
    for name in (
        "txl-terminals", "txl-trees", "tg", "lm", "plm", "plm-mask", "sclm-next", "lstm", "prpn", "esom",
        "dm-lstm",
    )
)  # fmt: skip
# The suites where the papers find structure-aware models ahead: agreement and NPI licensing.
AGREEMENT_AND_LICENSING = ("synthetic_number_", "synthetic_reflexive_", "synthetic_npi_")


@dataclass(frozen=True)
class Budget:
    """What one quickstart costs: the treebank's size and lexicon (the synthetic grammar's
    ``lexicon_size``: the most frequent words of each open class), items per suite, the passes over
    the training sentences every model makes (rows per batch), and how the models are scored."""

    sentences: int
    items_per_suite: int
    epochs: int
    batch_size: int
    test_sentences: int
    beam: BeamSettings
    lexicon_size: int | None = None
    figure_sentence: str = "The officials near the boy have seen themselves ."
    view_sentences: int = 20  # test sentences in view.html's sentence and attention views


# A lexicon of 10 words per class and 1,600 updates of 16 sentences: the words-only baseline
# learns agreement across a PP attractor there (docs/learning-curve.md's pilots: 0.925 on
# number_prep), so that the comparison measures structure, not a failure to learn.
FULL = Budget(
    sentences=4000,
    items_per_suite=20,
    epochs=8,
    batch_size=16,
    test_sentences=100,
    beam=BeamSettings(10, 3, 1),
    lexicon_size=10,
)
FAST = Budget(
    sentences=400,
    items_per_suite=2,
    epochs=1,
    batch_size=32,
    test_sentences=20,
    beam=BeamSettings(5, 2, 1),
    lexicon_size=20,
    view_sentences=5,
)


# --- progress -------------------------------------------------------------------------------------

# Relative cost of each stage for the ETA: seconds per training epoch and seconds of evaluation
# on 2 CPU cores (FULL budget, 2026-11-28, 2 cores of an Intel Xeon, each model in a process of 1
# thread, the transformers with 6 layers), in units of TXL (terminals)' epoch (8.6 s: 3,200
# sentences, batch 16). Measurements of this job's budget on one machine, not facts of the models:
# they stay here, by the quickstart's model names (``curve`` reads them for its own estimate).
TRAIN_WEIGHT = {
    "txl-terminals": 1.0, "txl-trees": 2.5, "tg": 3.6, "lm": 0.7, "plm": 1.8, "plm-mask": 2.1,
    "sclm-next": 0.8, "lstm": 0.2, "prpn": 2.2, "esom": 3.5, "dm-lstm": 0.4,
}  # fmt: skip
EVAL_WEIGHT = {"txl-trees": 13.7, "tg": 14.9, "plm": 11.7, "plm-mask": 11.4}
WORDS_ONLY_EVAL_WEIGHT = 0.7  # the exact scorers: a few seconds


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
        cost = TRAIN_WEIGHT[m.name] * budget.epochs + EVAL_WEIGHT.get(m.name, WORDS_ONLY_EVAL_WEIGHT)
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


# --- the report -----------------------------------------------------------------------------------


def model_numbers(run: Path) -> dict[str, Any]:
    """One model's numbers, read from its result files only."""
    numbers: dict[str, Any] = {"suites": {}}
    training = run / "training.json"
    if training.is_file():
        result = read_result(training)["result"]
        numbers.update(parameters=result["parameters"], valid_loss=result["last_valid_loss"])
    results = run / "results"
    if (results / "perplexity.json").is_file():
        result = read_result(results / "perplexity.json")["result"]
        numbers["perplexity_per_word"] = result["perplexity_per_word"]
        numbers["perplexity_method"] = (result.get("marginalisation") or {}).get("method", "exact")
    if (results / "parseval.json").is_file():
        summary = read_result(results / "parseval.json")["result"]["summary"]["all"]
        # EVALB leaves F1 undefined when nothing matched (precision = recall = 0); the table shows 0.
        numbers["parse_f1"] = summary["f1"] if summary["f1"] is not None else 0.0
    if (results / "uf1.json").is_file():
        numbers["uf1"] = 100 * read_result(results / "uf1.json")["result"]["model"]["mean_sentence_f1"]
    for path in sorted((results / "sg").glob("*.json")):
        result = read_result(path)["result"]
        numbers["suites"][result["suite"]] = result["accuracy_pred0"]
        # Per-item outcomes of prediction 0 (the published accuracy's items), for intervals.
        numbers.setdefault("suite_items", {})[result["suite"]] = [
            float(item["results"][0]) for item in result.get("items", [])
        ]
        numbers.setdefault("suite_chance", {})[result["suite"]] = result.get("chance_pred0")
    if numbers["suites"]:
        numbers["sg_mean"] = statistics.mean(numbers["suites"].values())
        focus = [v for s, v in numbers["suites"].items() if s.startswith(AGREEMENT_AND_LICENSING)]
        if focus:
            numbers["agreement_licensing"] = statistics.mean(focus)
    return numbers


def _number(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def pattern_statement(numbers: dict[str, dict[str, Any]]) -> str:
    """Whether each model is ahead of its paper's words-only baseline (``ModelCard.baseline``)
    on the agreement and licensing suites, as the papers report, said plainly either way. Each
    accuracy (the mean over the suites' items, pooled) comes with its 95% bootstrap interval over
    those items; a model is "ahead" or "behind" only when the interval of its difference from the
    baseline (paired on the same items, ``eval.intervals.bootstrap_difference``) excludes 0, else
    "no difference". Items are pooled rather than resampled within each suite: a suite where a
    model passes or fails every item would otherwise add no uncertainty, and a model at 0 or 1 on
    every suite would get an interval of width 0."""
    compared = [
        m for m in MODELS if m.baseline is not None and "agreement_licensing" in numbers.get(m.name, {})
    ]
    if not compared:
        return "No model was scored on the agreement and licensing suites beside a words-only baseline."
    counted = next(_focus_items(numbers[m.name]) for m in compared)
    text = "On the agreement and licensing suites"
    if counted is not None:
        text += f" ({len(counted[0])} items in {len(set(counted[1]))} suites)"
    text += (
        ", each model against the words-only baseline its paper compares it with (accuracy [95% "
        "bootstrap interval over the items; one training run per model, so seed-to-seed variation "
        "is not in it]; ahead or behind when the interval of the paired difference excludes 0):"
    )
    lines, ahead, verdicts = [text, ""], 0, 0
    for baseline in dict.fromkeys(m.baseline for m in compared):
        models = [m.name for m in compared if m.baseline == baseline]
        base = numbers.get(baseline, {})
        base_items = _focus_items(base)
        if base.get("agreement_licensing") is None or base_items is None:
            why = "was not run" if baseline not in numbers else "has no per-item outcomes on these suites"
            lines.append(f"- {', '.join(models)}: not compared (the baseline {baseline} {why}).")
            continue
        found: dict[str, list[str]] = {"ahead": [], "no difference": [], "behind": [], "not compared": []}
        for name in models:
            items = _focus_items(numbers[name])
            if items is None or items[1] != base_items[1]:
                found["not compared"].append(f"{name} ({numbers[name]['agreement_licensing']:.3f})")
                continue
            outcome = verdict(bootstrap_difference([items[0]], [base_items[0]]))
            found[outcome].append(f"{name} {bootstrap_mean([items[0]]).text()}")
            verdicts += 1
            if outcome == "ahead":
                ahead += 1
        said = "; ".join(f"{key}: {', '.join(value)}" for key, value in found.items() if value)
        lines.append(f"- against {baseline} {bootstrap_mean([base_items[0]]).text()}: {said}.")
    if not verdicts:
        conclusion = "No model could be compared with its baseline."
    elif ahead == verdicts:
        conclusion = "Every model is ahead of its baseline, the pattern the papers report."
    elif ahead:
        conclusion = (
            "The papers' pattern (structure-aware models ahead) appears only for the models ahead at "
            "this scale."
        )
    else:
        conclusion = (
            "No model is ahead of its baseline: the pattern the papers report does not appear at this scale."
        )
    return "\n".join([*lines, "", conclusion])


def contrast_statement(numbers: dict[str, dict[str, Any]]) -> str:
    """The comparisons the papers draw between their structured models (``ModelCard.contrast``):
    TG against TXL (trees) (Sartran et al.), PLM-mask against PLM (Qian et al.). On the agreement
    and licensing items, paired as ``pattern_statement`` pairs them; a contrast whose other model
    was not run, or was scored on other items, is said so; empty when no model with a contrast
    was scored."""
    lines = [
        (
            "The contrasts the papers draw between structured models, on the same items (the first "
            "model's accuracy against the second's; their difference [95% interval]):"
        ),
        "",
    ]
    for card in MODELS:
        if card.contrast is None or "agreement_licensing" not in numbers.get(card.name, {}):
            continue
        other = model_card(card.contrast)
        mine, theirs = _focus_items(numbers[card.name]), _focus_items(numbers.get(card.contrast, {}))
        if mine is None or theirs is None or mine[1] != theirs[1]:
            why = "was not run" if card.contrast not in numbers else "was not scored on the same items"
            lines.append(f"- {card.name} against {card.contrast}: not compared ({card.contrast} {why}).")
            continue
        difference = bootstrap_difference([mine[0]], [theirs[0]])
        said = verdict(difference)
        numbers_text = f"{difference.estimate:+.3f} [{difference.low:+.3f}, {difference.high:+.3f}]"
        relation = {"ahead": "ahead of", "behind": "behind", "no difference": "no different from"}[said]
        lines.append(
            f"- {card.name} {bootstrap_mean([mine[0]]).text()} is {relation} {card.contrast} "
            f"{bootstrap_mean([theirs[0]]).text()} ({numbers_text}): {card.label} against {other.label}, "
            f"{CONTRASTED[card.name]}."
        )
    return "\n".join(lines) if len(lines) > 2 else ""


# What each contrast isolates, in the papers' terms.
CONTRASTED = {
    "tg": "the same network reading the same actions, with composition (STACK/COMPOSE attention) or without",
    "plm-mask": "the same actions, with the two syntax-restricted heads or without",
}


def _focus_items(numbers: dict[str, Any]) -> tuple[list[float], list[str]] | None:
    """A model's per-item outcomes on the agreement and licensing suites, concatenated in suite
    order, and each item's suite; None when a suite's result has no per-item outcomes."""
    outcomes: list[float] = []
    suites: list[str] = []
    for suite in sorted(numbers.get("suites", {})):
        if not suite.startswith(AGREEMENT_AND_LICENSING):
            continue
        items = numbers.get("suite_items", {}).get(suite)
        if not items:
            return None
        outcomes += items
        suites += [suite] * len(items)
    return (outcomes, suites) if outcomes else None


def write_report_and_view(
    out: Path, chosen: Sequence[ModelCard], summary: dict[str, Any], budget: Budget
) -> str:
    """``write_report``, then ``view.html`` beside it (``syntaxlm.view``): the runs' results and,
    for the first ``budget.view_sentences`` test sentences scored, what their saved models compute."""
    from syntaxlm.view import write_view

    table = write_report(out, chosen, summary, budget)
    runs = [out / "runs" / m.name for m in chosen if (out / "runs" / m.name).is_dir()]
    if runs:
        write_view(
            runs,
            out / "view.html",
            test_data=summary["splits"]["test"],
            limit=min(budget.view_sentences, budget.test_sentences),
            beam=budget.beam,
        )
    return table


def write_report(out: Path, chosen: Sequence[ModelCard], summary: dict[str, Any], budget: Budget) -> str:
    """Write ``out/report.md`` and its figures; returns the comparison table (Markdown)."""
    from syntaxlm.report.model_figures import report_model_figures
    from syntaxlm.report.plots import (
        circuit_accuracy_figure,
        perplexity_vs_sg_figure,
        read_loss_curves,
        save_figure,
        training_curves_figure,
    )

    numbers = {
        m.name: model_numbers(out / "runs" / m.name) for m in chosen if (out / "runs" / m.name).is_dir()
    }
    header = "| model | paper | trees in training | parameters | test PPL per word (method) | SG mean | agreement & licensing | parse F1 | UF1 |"
    table = [header, "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for m in chosen:
        n = numbers.get(m.name)
        if n is None:
            table.append(
                f"| {m.name} | {m.paper} | {m.structure} | not run: {summary['skipped'].get(m.name, '')} |||||| "
            )
            continue
        ppl = f"{_number(n.get('perplexity_per_word'), 2)} ({n.get('perplexity_method', '–')})"
        table.append(
            f"| {m.name} | {m.paper} | {m.structure} | {n.get('parameters', 0):,} | {ppl} | {_number(n.get('sg_mean'))} "
            f"| {_number(n.get('agreement_licensing'))} | {_number(n.get('parse_f1'), 1)} | {_number(n.get('uf1'), 1)} |"
        )
    suites = sorted({s for n in numbers.values() for s in n["suites"]})
    contrasts = contrast_statement(numbers)
    lines = [
        "# syntaxlm quickstart",
        "",
        f"{summary['created']}, syntaxlm {summary['syntaxlm']}, Python {summary['python']}, {summary['platform']}.",
        "",
        _data_line(summary, budget),
        "",
        "## Models",
        "",
        *table,
        "",
        pattern_statement(numbers)
        if suites
        else "No SyntaxGym suites were scored (a user treebank has none).",
        "",
        *([contrasts, ""] if suites and contrasts else []),
        _method_note(budget),
        "",
    ]
    figures = out / "figures"
    if suites:
        by_suite = {name: n["suites"] for name, n in numbers.items() if n["suites"]}
        short = {s: s.removeprefix("synthetic_") for s in suites}
        accuracy = {name: {short[s]: v for s, v in values.items()} for name, values in by_suite.items()}
        intervals = {
            name: {
                short[s]: bootstrap_mean([v]) for s, v in numbers[name].get("suite_items", {}).items() if v
            }
            for name in by_suite
        }
        chance = {
            short[s]: level
            for n in numbers.values()
            for s, level in n.get("suite_chance", {}).items()
            if level is not None
        }
        save_figure(
            circuit_accuracy_figure(
                accuracy,
                circuits=[short[s] for s in suites],
                title="SyntaxGym accuracy by suite",
                intervals=intervals,
                chance=chance or None,
            ),
            figures / "sg_suites.png",
        )
        lines += ["## SyntaxGym suites", "", "![accuracy by suite](figures/sg_suites.png)", ""]
        lines += ["| suite | " + " | ".join(by_suite) + " |", "|---|" + "---:|" * len(by_suite)]
        for s in suites:
            lines.append(
                f"| {short[s]} | "
                + " | ".join(_number(v["suites"].get(s)) for v in numbers.values() if v["suites"])
                + " |"
            )
        lines.append("")
        points = {
            name: (n["perplexity_per_word"], n["sg_mean"])
            for name, n in numbers.items()
            if "perplexity_per_word" in n and "sg_mean" in n
        }
        if points:
            # The mean accuracy of a model that cannot tell the conditions apart, when every suite says.
            levels = [chance.get(short[s]) for s in suites]
            figure = perplexity_vs_sg_figure(
                points,
                xlabel="test perplexity per word",
                ylabel="mean accuracy over the suites",
                chance=None if None in levels else statistics.mean(levels),
                title="test perplexity per word and mean SG accuracy",
            )
            save_figure(figure, figures / "perplexity_vs_sg.png")
            lines += ["![perplexity vs SG](figures/perplexity_vs_sg.png)", ""]
    logged = {m.name: out / "runs" / m.name / "log.csv" for m in chosen}
    curves = {name: read_loss_curves(log) for name, log in logged.items() if log.is_file()}
    train = {name: curve for name, (curve, _) in curves.items() if curve[0]}
    valid = {name: curve for name, (_, curve) in curves.items() if curve[0]}
    if train or valid:
        figure = training_curves_figure(
            train=train, valid=valid, unit="nats per target token", title="training and validation loss"
        )
        save_figure(figure, figures / "training.png")
        lines += [
            "## Training",
            "",
            "![training and validation loss](figures/training.png)",
            "",
            (
                "Each curve is the loss as its run logs it: per target token of the "
                "model's own sequence (actions as well as words for the joint models); the training "
                "loss adds SCLM's scaffold and DMLM's dependency loss to the language-model loss, the "
                "validation loss is the language-model loss alone. So a curve follows one model, and "
                "curves of different models do not compare."
            ),
            "",
        ]
    runs = [out / "runs" / name for name in numbers]
    lines += report_model_figures(runs, budget.figure_sentence.split(), figures, beam=budget.beam)
    lines = [
        line.replace("](surprisal.png)", "](figures/surprisal.png)").replace(
            "](structure-", "](figures/structure-"
        )
        for line in lines
    ]
    lines += [
        "## Files",
        "",
        (
            "Every number above is read from the result files under `runs/MODEL/` (`training.json`, "
            "`results/perplexity.json`, `results/parseval.json`, `results/uf1.json`, `results/sg/*.json`); "
            "`summary.json` holds the budget and the time of each stage."
        ),
        "",
    ]
    with atomic_writer(out / "report.md") as handle:
        handle.write("\n".join(lines))
    return "\n".join(table)


def _data_line(summary: dict[str, Any], budget: Budget) -> str:
    source = summary["data"]
    train = summary["treebank"].get("train", {})
    what = (
        f"the synthetic treebank (seed {summary['seed']}, {budget.sentences} sentences, "
        + (
            f"the {budget.lexicon_size} most frequent words of each open class, "
            if budget.lexicon_size
            else ""
        )
        + f"{budget.items_per_suite} items per suite)"
        if "synthetic" in source
        else f"`{source['treebank']}`"
    )
    return (
        f"Data: {what}; {train.get('sentences', '?')} training sentences. Every model: its tiny recipe "
        f"(`configs/MODEL-tiny.yaml`), {budget.epochs} pass{'' if budget.epochs == 1 else 'es'} over the training sentences, "
        f"{budget.batch_size} rows per batch, seed {summary['seed']}."
    )


def _method_note(budget: Budget) -> str:
    beam = budget.beam
    return (
        f"Perplexity: the first {budget.test_sentences} test sentences, per word as TG (§3.1) and Qian et "
        "al. (§3.2.1) report it: -log p of the whole sentences, the end of sentence included (</s>, or the "
        "closing actions for the joint models), over the number of words; results/perplexity.json also "
        "holds the per-token number (the end counted as a token). Words-only models are exact; the joint models (trees and words) marginalise "
        f"over trees by a word-synchronous beam (action beam {beam.action_beam}, word beam {beam.word_beam}, "
        f"fast track {beam.fast_track}: small for speed; the papers use 100/10/5), which sums over fewer "
        "trees than exist and so overstates their perplexity. Parse F1: EVALB (COLLINS.prm) of the "
        "beam's best trees. UF1: sentence-level mean unlabelled F1 of the induced binary trees. The joint "
        "models' suite surprisals come from the same small beam, and their answers can change at the "
        "papers' beam (syntaxlm eval sg --model runs/MODEL/best scores at 100/10/5)."
    )
