"""A Markdown report with the papers' tables and figures, made from result files alone.

A *run* is a folder. Every ``*.json`` result file under it (``syntaxlm.results``: a ``kind`` and a
``result``) contributes numbers; ``config.json`` in the folder, when present, names the model
(``"model"``) and the seed (``"seed"``), otherwise the folder's name is the model. Runs of the same
model are seeds: the report gives mean ± standard deviation over them (sample std, n − 1; a single
run shows its value alone) and says how many runs each cell averages.

Numbers read per result kind:

- ``syntaxgym`` (one file per suite): suite accuracy (prediction 0); per run, the mean over the
  suites scored, the SG scores over the 31 suites of Hu et al. and the 33 of Qian et al. (only when
  every suite of the set is there) and group means (``suite_group``: the circuit of a published
  suite, the phenomenon of a synthetic one) over the suites present, plotted per model with 95%
  intervals and chance (TG Fig. 4). From the suites' per-item outcomes every model is compared with
  a baseline model, per group: the difference of accuracy with its paired bootstrap interval
  (``eval.intervals``), "ahead" or "behind" only when that interval excludes 0;
- ``perplexity``: corpus perplexity per word (the end of sentence in the numerator, the words in
  the denominator: TG §3.1, Qian et al. §3.2.1) and per token (the end counted as a token: PTB
  LSTM LMs), each column labelled; with SG, a per-word-perplexity-vs-SG plot (structural guidance
  Fig. 4). Older files (``count_eos``) are shown under the convention they used;
- ``blimp``: overall accuracy; ``parseval``: bracket F1 (all sentences); ``uf1``: mean sentence F1
  and corpus F1 of the model; ``generation``: BLEU-n, Distinct-n, Self-BLEU-n.

With ``figure_sentence`` the report also loads each run's saved model (``RUN/best``) and draws,
for that sentence, the per-word surprisal under every model and the distances or tree of the
models that induce trees (``report.model_figures``); without it only result files are read.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.intervals import Interval, bootstrap_difference, bootstrap_mean, verdict
from syntaxlm.eval.syntaxgym import CIRCUITS, SYNTHETIC_PHENOMENA, sg_scores, suite_group
from syntaxlm.files import atomic_writer, read_json
from syntaxlm.report.plots import circuit_accuracy_figure, perplexity_vs_sg_figure, save_figure
from syntaxlm.results import read_result

SG_SETS = {"hu2020": "SG score (31 suites, Hu et al.)", "qian2021": "SG score (33 suites, Qian et al.)"}


@dataclass
class Run:
    """One run folder: its model, seed, the numbers read from its results, and SG circuit means."""

    folder: Path
    model: str
    seed: Any = None
    metrics: dict[str, float] = field(default_factory=dict)
    circuits: dict[str, float] = field(default_factory=dict)
    # Per suite: prediction 0's outcome of each item (1.0 holds, 0.0 fails), and its chance level.
    suite_items: dict[str, list[float]] = field(default_factory=dict)
    suite_chance: dict[str, float] = field(default_factory=dict)


def read_run(folder: str | Path) -> Run:
    """The numbers of one run folder (see the module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFormatError("not a folder", path=folder, expected="a run folder holding result files")
    config = {}
    if (folder / "config.json").is_file():
        config = read_json(folder / "config.json", InputFormatError, expected="a run configuration")
    run = Run(folder, model=str(config.get("model", folder.name)), seed=config.get("seed"))
    suite_accuracy: dict[str, float] = {}
    for path in sorted(folder.rglob("*.json")):
        if path.name == "config.json" or not _is_result(path):
            continue
        record = read_result(path)
        kind, result = record["kind"], record["result"]
        if kind == "syntaxgym":
            suite = result["suite"]
            suite_accuracy[suite] = result["accuracy_pred0"]
            if result.get("items"):
                run.suite_items[suite] = [float(bool(item["results"][0])) for item in result["items"]]
            if result.get("chance_pred0") is not None:
                run.suite_chance[suite] = result["chance_pred0"]
        else:
            run.metrics.update(_metrics(kind, result))
    if suite_accuracy:
        run.metrics["SG suites scored"] = len(suite_accuracy)
        run.metrics["SG mean over scored suites"] = statistics.mean(suite_accuracy.values())
        scores = sg_scores(suite_accuracy)
        for key, label in SG_SETS.items():
            if scores[key]["mean_over_suites"] is not None:
                run.metrics[label] = scores[key]["mean_over_suites"]
        by_group: dict[str, list[float]] = defaultdict(list)
        for suite, accuracy in suite_accuracy.items():
            group = suite_group(suite)
            if group is not None:
                by_group[group].append(accuracy)
        run.circuits = {group: statistics.mean(values) for group, values in by_group.items()}
    return run


GROUP_ORDER = (*CIRCUITS, *SYNTHETIC_PHENOMENA)
ALL_SUITES = "all suites"


@dataclass(frozen=True)
class Comparison:
    """A model against the baseline on one group of suites: both accuracies (the mean of the
    suites' accuracies) and their difference, model − baseline, each with its interval."""

    model: str
    group: str
    suites: tuple[str, ...]
    items: int
    accuracy: Interval
    baseline_accuracy: Interval
    difference: Interval

    @property
    def verdict(self) -> str:
        return verdict(self.difference)


def group_outcomes(runs: list[Run], suites: Iterable[str]) -> tuple[list[list[float]], list[str]] | None:
    """The ``[runs][items]`` outcomes of ``suites`` (their items one after another, in the order
    given) and each item's suite, or ``None`` unless every run holds per-item outcomes of every
    suite, with as many items in each run."""
    suites = list(suites)
    if not runs or not suites:
        return None
    for suite in suites:
        counts = {len(run.suite_items.get(suite, ())) for run in runs}
        if len(counts) != 1 or 0 in counts:
            return None
    table = [[value for suite in suites for value in run.suite_items[suite]] for run in runs]
    labels = [suite for suite in suites for _ in runs[0].suite_items[suite]]
    return table, labels


def suite_groups(runs: Iterable[Run]) -> dict[str, list[str]]:
    """The suites with per-item outcomes in ``runs``, by group (``GROUP_ORDER``), then all of them
    under ``ALL_SUITES``."""
    suites = sorted({suite for run in runs for suite in run.suite_items})
    groups = {
        group: members
        for group in GROUP_ORDER
        if (members := [suite for suite in suites if suite_group(suite) == group])
    }
    if suites:
        groups[ALL_SUITES] = suites
    return groups


def sg_comparisons(by_model: dict[str, list[Run]], baseline: str) -> list[Comparison]:
    """Every other model against ``baseline``, per group of the suites both scored with per-item
    outcomes (every run of each): accuracies and the paired difference with 95% intervals over the
    items and the runs (seeds), stratified by suite."""
    comparisons = []
    for model, runs in by_model.items():
        if model == baseline:
            continue
        shared = [*runs, *by_model[baseline]]
        for group, suites in suite_groups(shared).items():
            suites = [s for s in suites if all(s in run.suite_items for run in shared)]
            ours, theirs = group_outcomes(runs, suites), group_outcomes(by_model[baseline], suites)
            if ours is None or theirs is None or len(ours[1]) != len(theirs[1]):
                continue
            (table, labels), (base_table, _) = ours, theirs
            comparisons.append(
                Comparison(
                    model=model,
                    group=group,
                    suites=tuple(suites),
                    items=len(labels),
                    accuracy=bootstrap_mean(table, groups=labels),
                    baseline_accuracy=bootstrap_mean(base_table, groups=labels),
                    difference=bootstrap_difference(table, base_table, groups=labels),
                )
            )
    return comparisons


def comparison_lines(comparisons: list[Comparison], baseline: str, runs_of: dict[str, int]) -> list[str]:
    """The report's section of ``sg_comparisons``: a table and, per model, where it is ahead."""
    seeds = ", ".join(f"{model} {n}" for model, n in runs_of.items())
    lines = [
        f"## SyntaxGym: each model against {baseline}",
        "",
        "Accuracy of each group of suites (the mean of its suites' accuracies, prediction 0) and the "
        f"difference model − {baseline}, each with a 95% bootstrap interval over the items, stratified "
        "by suite, and over the runs (seeds) where a model has several "
        f"(runs: {seeds}); the difference is paired on the items. A model is *ahead* or *behind* only "
        "when the difference's interval excludes 0; otherwise there is *no difference* at this sample "
        "size.",
        "",
        f"| model | group | suites | items | model accuracy | {baseline} | difference | verdict |",
        "|---|---|---:|---:|---|---|---|---|",
    ]
    for c in comparisons:
        lines.append(
            f"| {c.model} | {c.group} | {len(c.suites)} | {c.items} | {c.accuracy.text()} | "
            f"{c.baseline_accuracy.text()} | {c.difference.text()} | {c.verdict} |"
        )
    lines.append("")
    for model in dict.fromkeys(c.model for c in comparisons):
        verdicts: dict[str, list[str]] = defaultdict(list)
        for c in comparisons:
            if c.model == model and c.group != ALL_SUITES:
                verdicts[c.verdict].append(c.group)
        parts = [f"{key} on {', '.join(groups)}" for key, groups in verdicts.items() if key != "no difference"]
        if verdicts["no difference"]:
            parts.append(f"no difference on {', '.join(verdicts['no difference'])}")
        lines.append(f"- **{model}** against {baseline}: " + "; ".join(parts) + ".")
    lines.append("")
    return lines


def _is_result(path: Path) -> bool:
    """Result files are recognised by their fields; other JSON files in a run folder are left alone."""
    try:
        with open(path, encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return '"kind"' in head or '"provenance"' in head


PERPLEXITY_PER_WORD = "perplexity per word (end included; TG, Qian et al.)"
PERPLEXITY_PER_TOKEN = "perplexity per token (end counted as a token)"
PERPLEXITY_WITHOUT_END = "perplexity per word (end left out)"


def _metrics(kind: str, result: dict[str, Any]) -> dict[str, float]:
    if kind == "perplexity":
        if "perplexity_per_word" in result:
            return {
                PERPLEXITY_PER_WORD: result["perplexity_per_word"],
                PERPLEXITY_PER_TOKEN: result["perplexity_per_token"],
            }
        # Files from before the conventions were separated: count_eos divided by words + sentences.
        name = PERPLEXITY_PER_TOKEN if result.get("count_eos") else PERPLEXITY_WITHOUT_END
        return {name: result["perplexity"]}
    if kind == "blimp":
        return {"BLiMP accuracy": result["overall_accuracy"]}
    if kind == "parseval":
        return {"bracket F1": result["summary"]["all"]["f1"]}
    if kind == "uf1":
        model = result["model"]
        values = {"UF1 (sentence mean)": 100 * model["mean_sentence_f1"]}
        if model["corpus_f1_percent"] is not None:
            values["UF1 (corpus)"] = model["corpus_f1_percent"]
        return values
    if kind == "generation":
        values = {}
        for family, label in (("bleu", "BLEU"), ("distinct", "Distinct"), ("self_bleu", "Self-BLEU")):
            for order, value in (result.get(family) or {}).items():
                values[f"{label}-{order}"] = value
        return values
    return {}


def group_intervals(by_model: dict[str, list[Run]]) -> dict[str, dict[str, Interval]]:
    """Per model and group, the 95% interval of its accuracy (items and runs), where every run of
    the model has per-item outcomes of the group's suites."""
    intervals: dict[str, dict[str, Interval]] = {}
    for model, runs in by_model.items():
        for group, suites in suite_groups(runs).items():
            outcomes = group_outcomes(runs, suites)
            if outcomes is not None and group != ALL_SUITES:
                intervals.setdefault(model, {})[group] = bootstrap_mean(outcomes[0], groups=outcomes[1])
    return intervals


def group_chance(runs: Iterable[Run]) -> dict[str, float]:
    """Per group, the accuracy of a model that cannot tell the conditions apart: the mean of its
    suites' chance levels (as the group's accuracy is the mean of its suites' accuracies)."""
    chance: dict[str, float] = {}
    for run in runs:
        chance.update(run.suite_chance)
    by_group: dict[str, list[float]] = defaultdict(list)
    for suite, level in chance.items():
        if (group := suite_group(suite)) is not None:
            by_group[group].append(level)
    return {group: statistics.mean(levels) for group, levels in by_group.items()}


def _cell(values: list[float]) -> str:
    if not values:
        return ""
    if len(set(values)) == 1:
        return f"{values[0]:.4g}" + (f" (n={len(values)})" if len(values) > 1 else "")
    return f"{statistics.mean(values):.4g} ± {statistics.stdev(values):.2g} (n={len(values)})"


def make_report(
    run_folders: Iterable[str | Path],
    out: str | Path,
    *,
    figure_sentence: str | None = None,
    baseline: str | None = None,
) -> Path:
    """Write ``out/report.md`` and its PNG figures; returns the Markdown file's path.
    ``figure_sentence``: also draw the figures of the runs' saved models for this sentence.
    ``baseline``: the model the others are compared with on SyntaxGym (default: the first)."""
    out = Path(out)
    runs = [read_run(folder) for folder in run_folders]
    if not runs:
        raise ValueError("no run folders given")
    models = list(dict.fromkeys(run.model for run in runs))
    if baseline is None:
        baseline = models[0]
    elif baseline not in models:
        raise ValueError(f"baseline {baseline!r} is not a model of the runs ({', '.join(models)})")
    by_model: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_model[run.model].append(run)
    metrics = list(dict.fromkeys(name for run in runs for name in run.metrics))

    lines = ["# Results", "", f"{len(runs)} runs of {len(models)} models: " + ", ".join(models) + ".", ""]
    if metrics:
        lines += ["| model | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        for model in models:
            cells = [_cell([r.metrics[m] for r in by_model[model] if m in r.metrics]) for m in metrics]
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
        lines.append("")
    else:
        lines += ["No result files were found in the run folders.", ""]

    circuit_runs = {model: [r.circuits for r in by_model[model] if r.circuits] for model in models}
    circuit_means = {
        model: {c: statistics.mean(r[c] for r in rs if c in r) for c in {c for r in rs for c in r}}
        for model, rs in circuit_runs.items()
        if rs
    }
    if circuit_means:
        present = {circuit for means in circuit_means.values() for circuit in means}
        order = [group for group in GROUP_ORDER if group in present]
        intervals, chance = group_intervals(by_model), group_chance(runs)
        figure = circuit_accuracy_figure(
            circuit_means,
            circuits=order,
            intervals=intervals,
            chance=chance or None,
            title="SyntaxGym accuracy by circuit or phenomenon",
        )
        save_figure(figure, out / "sg_circuits.png")
        lines += ["## SyntaxGym by circuit", "", "![SG accuracy by circuit](sg_circuits.png)", ""]
    comparisons = sg_comparisons(by_model, baseline)
    if comparisons:
        lines += comparison_lines(comparisons, baseline, {model: len(by_model[model]) for model in models})
    # The SG axis: the 31-suite score when every run has it, else the mean over the suites scored.
    sg_label = SG_SETS["hu2020"]
    if not all(sg_label in r.metrics for r in runs if PERPLEXITY_PER_WORD in r.metrics):
        sg_label = "SG mean over scored suites"
    points = {}
    for model in models:
        pairs = [
            (r.metrics[PERPLEXITY_PER_WORD], r.metrics[sg_label])
            for r in by_model[model]
            if {PERPLEXITY_PER_WORD, sg_label} <= r.metrics.keys()
        ]
        if pairs:
            points[model] = (statistics.mean(p for p, _ in pairs), statistics.mean(s for _, s in pairs))
    if points:
        figure = perplexity_vs_sg_figure(points)
        figure.axes[0].set_ylabel(sg_label)
        figure.axes[0].set_xlabel(PERPLEXITY_PER_WORD)
        save_figure(figure, out / "perplexity_vs_sg.png")
        lines += ["## Perplexity and SG score", "", "![perplexity vs SG score](perplexity_vs_sg.png)", ""]
    if figure_sentence is not None:
        from syntaxlm.report.model_figures import report_model_figures, sentence_words

        lines += report_model_figures([run.folder for run in runs], sentence_words(figure_sentence), out)
    lines += ["## Runs", ""] + [f"- `{run.folder}`: {run.model}, seed {run.seed}" for run in runs] + [""]
    path = out / "report.md"
    with atomic_writer(path) as handle:
        handle.write("\n".join(lines))
    return path
