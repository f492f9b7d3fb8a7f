"""The quickstart's report (``report.md``, its figures and ``view.html``), made from the runs'
result files alone, plus figures drawn from the saved models."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from syntaxlm.eval.intervals import bootstrap_difference, bootstrap_mean, verdict
from syntaxlm.jobs.quickstart_settings import AGREEMENT_AND_LICENSING, MODELS, Budget
from syntaxlm.models import ModelCard, model_card
from syntaxlm.report.markdown import heading, image, table, write_markdown
from syntaxlm.results import read_result


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

    numbers = {
        m.name: model_numbers(out / "runs" / m.name) for m in chosen if (out / "runs" / m.name).is_dir()
    }
    models_table = _models_table(chosen, numbers, summary)
    suites = sorted({s for n in numbers.values() for s in n["suites"]})
    contrasts = contrast_statement(numbers)
    lines = [
        heading("syntaxlm quickstart", 1),
        "",
        f"{summary['created']}, syntaxlm {summary['syntaxlm']}, Python {summary['python']}, {summary['platform']}.",
        "",
        _data_line(summary, budget),
        "",
        heading("Models"),
        "",
        *models_table,
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
        lines += _suites_section(numbers, suites, figures)
    lines += _training_section(out, chosen, figures)
    runs = [out / "runs" / name for name in numbers]
    lines += report_model_figures(runs, budget.figure_sentence.split(), figures, beam=budget.beam)
    lines = [
        line.replace("](surprisal.png)", "](figures/surprisal.png)").replace(
            "](structure-", "](figures/structure-"
        )
        for line in lines
    ]
    lines += [
        heading("Files"),
        "",
        (
            "Every number above is read from the result files under `runs/MODEL/` (`training.json`, "
            "`results/perplexity.json`, `results/parseval.json`, `results/uf1.json`, `results/sg/*.json`); "
            "`summary.json` holds the budget and the time of each stage."
        ),
        "",
    ]
    write_markdown(out / "report.md", lines)
    return "\n".join(models_table)


MODEL_COLUMNS = (
    "model", "paper", "trees in training", "parameters", "test PPL per word (method)", "SG mean",
    "agreement & licensing", "parse F1", "UF1",
)  # fmt: skip


def _models_table(
    chosen: Sequence[ModelCard], numbers: dict[str, dict[str, Any]], summary: dict[str, Any]
) -> list[str]:
    """The report's table of the models: one row each, its numbers or why it was not run."""
    rows = []
    for m in chosen:
        n = numbers.get(m.name)
        if n is None:
            not_run = f"not run: {summary['skipped'].get(m.name, '')}"
            rows.append([m.name, m.paper, m.structure, not_run, *[""] * (len(MODEL_COLUMNS) - 4)])
            continue
        rows.append(
            [
                m.name, m.paper, m.structure, f"{n.get('parameters', 0):,}",
                f"{_number(n.get('perplexity_per_word'), 2)} ({n.get('perplexity_method', '–')})",
                _number(n.get("sg_mean")), _number(n.get("agreement_licensing")),
                _number(n.get("parse_f1"), 1), _number(n.get("uf1"), 1),
            ]
        )  # fmt: skip
    return table(MODEL_COLUMNS, rows, align=["left"] * 3 + ["right"] * 6)


def _suites_section(numbers: dict[str, dict[str, Any]], suites: list[str], figures: Path) -> list[str]:
    """The report's section of the SyntaxGym suites: accuracy by suite (a figure and a table), and
    test perplexity against mean accuracy (a figure)."""
    from syntaxlm.report.plots import circuit_accuracy_figure, perplexity_vs_sg_figure, save_figure

    by_suite = {name: n["suites"] for name, n in numbers.items() if n["suites"]}
    short = {s: s.removeprefix("synthetic_") for s in suites}
    accuracy = {name: {short[s]: v for s, v in values.items()} for name, values in by_suite.items()}
    intervals = {
        name: {short[s]: bootstrap_mean([v]) for s, v in numbers[name].get("suite_items", {}).items() if v}
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
    rows = [[short[s], *(_number(values.get(s)) for values in by_suite.values())] for s in suites]
    lines = [heading("SyntaxGym suites"), "", image("accuracy by suite", "figures/sg_suites.png"), ""]
    lines += [*table(["suite", *by_suite], rows, align=["left", *["right"] * len(by_suite)]), ""]
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
        lines += [image("perplexity vs SG", "figures/perplexity_vs_sg.png"), ""]
    return lines


def _training_section(out: Path, chosen: Sequence[ModelCard], figures: Path) -> list[str]:
    """The report's section of the training and validation loss curves (none without logs)."""
    from syntaxlm.report.plots import read_loss_curves, save_figure, training_curves_figure

    logged = {m.name: out / "runs" / m.name / "log.csv" for m in chosen}
    curves = {name: read_loss_curves(log) for name, log in logged.items() if log.is_file()}
    train = {name: curve for name, (curve, _) in curves.items() if curve[0]}
    valid = {name: curve for name, (_, curve) in curves.items() if curve[0]}
    if not train and not valid:
        return []
    figure = training_curves_figure(
        train=train, valid=valid, unit="nats per target token", title="training and validation loss"
    )
    save_figure(figure, figures / "training.png")
    return [
        heading("Training"),
        "",
        image("training and validation loss", "figures/training.png"),
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
