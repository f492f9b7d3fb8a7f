"""A Markdown report with the papers' tables and figures, made from result files alone.

A *run* is a folder. Every ``*.json`` result file under it (``syntaxlm.results``: a ``kind`` and a
``result``) contributes numbers; ``config.json`` in the folder, when present, names the model
(``"model"``) and the seed (``"seed"``), otherwise the folder's name is the model. Runs of the same
model evaluated alike are seeds: the report gives mean ± standard deviation over them (sample std,
n − 1; a single run shows its value alone) and says how many runs each cell averages.

Every number carries how it was obtained (``report.evaluations``): its method, its bound, the
beam and the subset, in the columns beside it, one table per kind of result and one row per model
and evaluation. Where the rows of a table were not evaluated alike (another method, beam, subset
or data), the table says what differs and that its numbers are not ranked; the SyntaxGym
comparisons then give no verdict, and the perplexity-vs-SG figure names each point's method. One
rule decides (``evaluations.ranked_together``): accuracies from exact surprisals beside one beam's
estimates are the papers' comparison, ranked in the tables and the comparisons alike.

Numbers read per result kind:

- ``syntaxgym`` (one file per suite, one result per suite in a run folder): suite accuracy
  (prediction 0); per run, the mean over the suites scored, the SG scores over the 31 suites of Hu
  et al. and the 33 of Qian et al. (only when every suite of the set is there) and group means
  (``suite_group``: the circuit of a published suite, the phenomenon of a synthetic one) over the
  suites present, plotted per model with 95% intervals and chance (TG Fig. 4). From the suites'
  per-item outcomes every model is compared with a baseline model, per group: the difference of
  accuracy with its paired bootstrap interval (``eval.intervals``), "ahead" or "behind" only when
  that interval excludes 0 and both may be ranked together;
- ``perplexity``: corpus perplexity per word (the end of sentence in the numerator, the words in
  the denominator: TG §3.1, Qian et al. §3.2.1) and per token (the end counted as a token: PTB
  LSTM LMs), each column labelled; with SG, a per-word-perplexity-vs-SG plot (structural guidance
  Fig. 4). Older files (``count_eos``) are shown under the convention they used;
- ``blimp``: overall accuracy; ``parseval``: bracket F1 (all sentences); ``uf1``: mean sentence F1
  and corpus F1 of the model; ``generation``: BLEU-n, Distinct-n, Self-BLEU-n;
- ``reading_times`` (``eval rt``): each model's ΔLL, the held-out log-likelihood its surprisal adds
  to a baseline regression of reading times, with its 95% interval (one row per model of the file;
  a model saved outside the run folder is named by the file).

With ``figure_sentence`` the report also loads each run's saved model (``RUN/best``) and draws,
for that sentence, the per-word surprisal under every model and the distances or tree of the
models that induce trees (``report.model_figures``); without it only result files are read.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.intervals import Interval, bootstrap_difference, bootstrap_mean, verdict
from syntaxlm.eval.syntaxgym import CIRCUITS, SYNTHETIC_PHENOMENA, sg_scores, suite_group
from syntaxlm.files import read_json
from syntaxlm.report.evaluations import (
    COLUMNS,
    NOT_RECORDED,
    Evaluation,
    differences,
    evaluation,
    is_result_file,
    ranked_together,
    reading_times_evaluation,
    scorings_ranked_together,
    suite_scoring,
    suites_evaluation,
)
from syntaxlm.report.markdown import heading, image, table, write_markdown
from syntaxlm.report.plots import circuit_accuracy_figure, perplexity_vs_sg_figure, save_figure
from syntaxlm.results import read_checked_result

SG_SETS = {"hu2020": "SG score (31 suites, Hu et al.)", "qian2021": "SG score (33 suites, Qian et al.)"}
SG_MEAN = "SG mean over scored suites"
SECTIONS = {
    "perplexity": "Perplexity",
    "syntaxgym": "SyntaxGym",
    "blimp": "BLiMP",
    "parseval": "Parsing (EVALB)",
    "uf1": "Unsupervised parsing (UF1)",
    "generation": "Generation",
    "reading_times": "Reading times (ΔLL of surprisal)",
}
DELTA_LL = "ΔLL (nats per token)"
DELTA_LL_LOW, DELTA_LL_HIGH = "ΔLL 95% low", "ΔLL 95% high"


@dataclass(frozen=True)
class Numbers:
    """The numbers of one result file (for SyntaxGym: of all the run's suites) and how they were
    obtained. ``model``: the model they are of, where not the run's (a reading-times result
    compares several models)."""

    kind: str
    values: dict[str, float]
    evaluation: Evaluation
    model: str | None = None
    warnings: tuple[str, ...] = ()  # why the numbers cannot be trusted (an estimate's diagnostics)
    headline: bool = True  # False: a bound carried in another result's file, shown in its table only


@dataclass
class Run:
    """One run folder: its model, seed, the numbers read from its results, and SG circuit means."""

    folder: Path
    model: str
    seed: Any = None
    numbers: list[Numbers] = field(default_factory=list)
    circuits: dict[str, float] = field(default_factory=dict)
    # Per suite: prediction 0's outcome of each item (1.0 holds, 0.0 fails), its chance level, and
    # its method and beam ("beam 100/10/5", "exact").
    suite_items: dict[str, list[float]] = field(default_factory=dict)
    suite_chance: dict[str, float] = field(default_factory=dict)
    suite_methods: dict[str, str] = field(default_factory=dict)

    def value(self, kind: str, name: str) -> tuple[float, Evaluation] | None:
        """The first number called ``name`` among the run's ``kind`` results, with its evaluation."""
        for numbers in self.numbers:
            if numbers.kind == kind and name in numbers.values:
                return numbers.values[name], numbers.evaluation
        return None


def result_files(folder: Path) -> list[Path]:
    """The result files of a run folder: every ``*.json`` under it that is a result file (a
    regular file, not ``config.json``: ``is_result_file``), in order."""
    return [
        path for path in sorted(folder.rglob("*.json")) if path.name != "config.json" and is_result_file(path)
    ]


def read_run(folder: str | Path, *, read: Callable[[Path], dict[str, Any]] = read_checked_result) -> Run:
    """The numbers of one run folder (see the module docstring), or of one result file: its model
    is named by the saved model it scored (``RUN/best`` is ``RUN``), else by the file. ``read``
    reads a result file and checks its fields (``read_checked_result``)."""
    folder = Path(folder)
    if folder.is_file():
        return read_result_files([folder], read=read)
    if not folder.is_dir():
        raise InputFormatError(
            "not a folder or a file",
            path=folder,
            expected="a run folder holding result files, or a result file",
        )
    config = {}
    if (folder / "config.json").is_file():
        config = read_json(folder / "config.json", InputFormatError, expected="a run configuration")
    run = Run(folder, model=str(config.get("model", folder.name)), seed=config.get("seed"))
    return _add_numbers(run, [(path, None) for path in result_files(folder)], read)


def read_result_files(
    paths: Sequence[Path], *, read: Callable[[Path], dict[str, Any]] = read_checked_result
) -> Run:
    """The numbers of result files given alone, all of one run: its model is named by the saved
    model the first one scored (``RUN/best`` is ``RUN``), else by that file."""
    records = [(path, read(path)) for path in paths]
    first, record = records[0]
    model = ((record.get("inputs") or {}).get("model") or {}).get("path")
    name = Path(model).parent if model else first.with_suffix("")
    name = name.parent if name.name in ("best", "last") else name
    return _add_numbers(Run(first, model=name.name), records, read)


def _add_numbers(
    run: Run, files: Sequence[tuple[Path, dict[str, Any] | None]], read: Callable[[Path], dict[str, Any]]
) -> Run:
    """``run`` with the numbers of its result files (each with its record, or ``None`` to read it)."""
    suite_records: dict[str, dict] = {}
    suite_paths: dict[str, Path] = {}
    for path, record in files:
        record = record or read(path)
        kind, result = record["kind"], record["result"]
        if kind == "syntaxgym":
            suite = result["suite"]
            if suite in suite_paths:
                raise InputFormatError(
                    f"a second result of suite {suite} (the first: {suite_paths[suite]})",
                    path=path,
                    expected="one result per suite in a run folder (each evaluation of the suites "
                    "in a run folder of its own)",
                )
            suite_records[suite], suite_paths[suite] = record, path
            if result.get("items"):
                run.suite_items[suite] = [float(bool(item["results"][0])) for item in result["items"]]
            if result.get("chance_pred0") is not None:
                run.suite_chance[suite] = result["chance_pred0"]
            run.suite_methods[suite] = suite_scoring(record)
        elif kind == "reading_times":
            run.numbers += reading_time_numbers(run, record)
        elif kind == "perplexity":
            run.numbers += perplexity_numbers(record)
        elif values := _metrics(kind, result):
            run.numbers.append(Numbers(kind, values, evaluation(record)))
    if suite_records:
        suite_accuracy = {suite: r["result"]["accuracy_pred0"] for suite, r in suite_records.items()}
        values = {"SG suites scored": len(suite_accuracy), SG_MEAN: statistics.mean(suite_accuracy.values())}
        scores = sg_scores(suite_accuracy)
        for key, label in SG_SETS.items():
            if scores[key]["mean_over_suites"] is not None:
                values[label] = scores[key]["mean_over_suites"]
        run.numbers.insert(0, Numbers("syntaxgym", values, suites_evaluation(suite_records)))
        by_group: dict[str, list[float]] = defaultdict(list)
        for suite, accuracy in suite_accuracy.items():
            group = suite_group(suite)
            if group is not None:
                by_group[group].append(accuracy)
        run.circuits = {group: statistics.mean(values) for group, values in by_group.items()}
    return run


# The bounds a proposal parser's perplexity file carries beside its importance-sampling estimate.
CARRIED_BOUNDS = ("proposal_bound", "beam")


def perplexity_numbers(record: dict[str, Any]) -> list[Numbers]:
    """The perplexities of a result file: its own, with the warnings recorded against it (an
    importance-sampling estimate's), then the bounds it carries (``CARRIED_BOUNDS``), each a row
    of its own with how it was obtained."""
    result = record["result"]
    numbers = [
        Numbers("perplexity", _metrics("perplexity", result), evaluation(record),
                warnings=tuple(result.get("warnings") or ()))
    ]  # fmt: skip
    for key in CARRIED_BOUNDS:
        if isinstance(result.get(key), dict):
            carried = {**record, "result": result[key]}
            values = _metrics("perplexity", result[key])
            numbers.append(Numbers("perplexity", values, evaluation(carried), headline=False))
    return numbers


def reading_time_numbers(run: Run, record: dict[str, Any]) -> list[Numbers]:
    """The ΔLL of each model of a reading-times result (``eval rt``) with its interval. A model
    saved in the run folder (or the one model of a result file given alone) is the run's; the
    others are named as the result names them."""
    entries = record["result"]["models"]
    folder = run.folder.resolve() if run.folder.is_dir() else None

    def of_run(entry: dict[str, Any]) -> bool:
        if folder is None:
            return len(entries) == 1
        saved = entry.get("model")
        return saved is not None and Path(saved).resolve().is_relative_to(folder)

    numbers = []
    for entry in entries:
        values = {
            DELTA_LL: entry["delta_loglik_per_token"],
            DELTA_LL_LOW: entry["interval"]["low"],
            DELTA_LL_HIGH: entry["interval"]["high"],
        }
        model = None if of_run(entry) else entry["name"]
        numbers.append(Numbers("reading_times", values, reading_times_evaluation(record, entry), model))
    return numbers


GROUP_ORDER = (*CIRCUITS, *SYNTHETIC_PHENOMENA)
ALL_SUITES = "all suites"
NOT_RANKED = "not ranked"


@dataclass(frozen=True)
class Comparison:
    """A model against the baseline on one group of suites: both accuracies (the mean of the
    suites' accuracies) and their difference, model − baseline, each with its interval.
    ``not_alike``: what differs in how the two were evaluated (then no verdict)."""

    model: str
    group: str
    suites: tuple[str, ...]
    items: int
    accuracy: Interval
    baseline_accuracy: Interval
    difference: Interval
    not_alike: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return NOT_RANKED if self.not_alike else verdict(self.difference)


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


def _suites_method(runs: Iterable[Run], suites: Iterable[str]) -> str:
    """How ``runs`` scored ``suites``: their methods and beams, e.g. ``"beam 100/10/5"``."""
    return " and ".join(sorted({run.suite_methods.get(s, NOT_RECORDED) for run in runs for s in suites}))


def sg_comparisons(by_model: dict[str, list[Run]], baseline: str) -> list[Comparison]:
    """Every other model against ``baseline``, per group of the suites both scored with per-item
    outcomes (every run of each): accuracies and the paired difference with 95% intervals over the
    items and the runs (seeds), stratified by suite. Where the two estimated the surprisals
    differently (other beams) or did not record how, the comparison says so and gives no verdict;
    exact surprisals against a joint model's beam estimates are the papers' comparison."""
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
            methods = {
                model: _suites_method(runs, suites),
                baseline: _suites_method(by_model[baseline], suites),
            }
            not_alike = ()
            if not scorings_ranked_together(methods):
                not_alike = ("method: " + "; ".join(f"{name} {method}" for name, method in methods.items()),)
            comparisons.append(
                Comparison(
                    model=model,
                    group=group,
                    suites=tuple(suites),
                    items=len(labels),
                    accuracy=bootstrap_mean(table, groups=labels),
                    baseline_accuracy=bootstrap_mean(base_table, groups=labels),
                    difference=bootstrap_difference(table, base_table, groups=labels),
                    not_alike=not_alike,
                )
            )
    return comparisons


def comparison_lines(comparisons: list[Comparison], baseline: str, runs_of: dict[str, int]) -> list[str]:
    """The report's section of ``sg_comparisons``: a table and, per model, where it is ahead."""
    seeds = ", ".join(f"{model} {n}" for model, n in runs_of.items())
    lines = [
        heading(f"SyntaxGym: each model against {baseline}"),
        "",
        "Accuracy of each group of suites (the mean of its suites' accuracies, prediction 0) and the "
        f"difference model − {baseline}, each with a 95% bootstrap interval over the items, stratified "
        "by suite, and over the runs (seeds) where a model has several "
        f"(runs: {seeds}); the difference is paired on the items. A model is *ahead* or *behind* only "
        "when the difference's interval excludes 0; otherwise there is *no difference* at this sample "
        "size. The method column says how each model's surprisals were obtained: exact for models of "
        "words, beam estimates for joint models of words and trees (the papers' comparison). Models whose "
        f"estimates were made differently (other beams), or whose files do not record how, are *{NOT_RANKED}*.",
        "",
    ]
    headers = ["model", "group", "suites", "items", "model accuracy", baseline, "difference", "verdict"]
    rows = [
        [c.model, c.group, str(len(c.suites)), str(c.items), c.accuracy.text(), c.baseline_accuracy.text(),
         c.difference.text(), c.verdict]
        for c in comparisons
    ]  # fmt: skip
    lines += [*table(headers, rows, align=["left", "left", "right", "right"]), ""]
    for model in dict.fromkeys(c.model for c in comparisons):
        mine = [c for c in comparisons if c.model == model]
        grouped = [c for c in mine if c.group != ALL_SUITES] or mine
        verdicts: dict[str, list[str]] = defaultdict(list)
        for c in grouped:
            verdicts[c.verdict].append(c.group)
        parts = [
            f"{key} on {', '.join(groups)}" for key, groups in verdicts.items() if key in ("ahead", "behind")
        ]
        if verdicts["no difference"]:
            parts.append(f"no difference on {', '.join(verdicts['no difference'])}")
        if verdicts[NOT_RANKED]:
            why = next(c.not_alike for c in grouped if c.not_alike)
            parts.append(
                f"{NOT_RANKED} on {', '.join(verdicts[NOT_RANKED])}: the suites were not scored alike "
                f"({'; '.join(why)}), so the intervals are shown and no verdict is drawn"
            )
        lines.append(f"- **{model}** against {baseline}: " + "; ".join(parts) + ".")
    lines.append("")
    return lines


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


def _cell(values: list[float | None]) -> str:
    """Mean ± sample std of the runs' values; ``None`` (a result file's undefined number, e.g. the
    F1 of parses that match no bracket) is left out and shown as "undefined" when nothing is left."""
    given = bool(values)
    values = [value for value in values if value is not None]
    if not values:
        return "undefined" if given else ""
    if len(set(values)) == 1:
        return f"{values[0]:.4g}" + (f" (n={len(values)})" if len(values) > 1 else "")
    return f"{statistics.mean(values):.4g} ± {statistics.stdev(values):.2g} (n={len(values)})"


def row_labels(rows: Iterable[tuple[str, Evaluation]]) -> list[str]:
    """A name per table row: the model, with its method where the model has several rows."""
    rows = list(rows)
    models = [model for model, _ in rows]
    labels = [
        model if models.count(model) == 1 else f"{model} ({how.method.split(',')[0]})" for model, how in rows
    ]
    return [label if labels.count(label) == 1 else f"{label} row {i}" for i, label in enumerate(labels, 1)]


def not_alike_lines(evaluations: dict[str, Evaluation], what: str) -> list[str]:
    """The warning under a table whose rows were not evaluated alike, or the one line saying they
    were; nothing for a single row."""
    if len(evaluations) < 2:
        return []
    differ = differences(evaluations)
    unknown = [label for label, e in evaluations.items() if NOT_RECORDED in e.cells()]
    if not differ and not unknown:
        data = next(iter(evaluations.values())).data
        on = f", data {data}" if data else ""
        return [f"The {what} here were evaluated alike (method, bound, beam, subset{on}).", ""]
    if ranked_together(evaluations):
        beam = next(e.beam for e in evaluations.values() if e.method != "exact")
        return [
            f"The {what} here differ only in method, as the papers compare models: "
            f"exact surprisals of words-only models beside the beam estimates ({beam}) of joint models, "
            "which have no exact p(x); ranked, each row naming its method.",
            "",
        ]
    if not differ:
        return [
            f"**Not ranked:** the files of {', '.join(unknown)} do not record how their {what} were "
            "obtained (written by an older version), so they cannot be shown to be alike.",
            "",
        ]
    lines = [
        f"**Not evaluated alike, so not ranked.** The {what} here were obtained differently; "
        "compare only rows with the same method, bound, beam, subset and data:",
        "",
    ]
    lines += [f"- {line}" for line in differ]
    if any(e.bound.startswith("upper bound") for e in evaluations.values()):
        lines.append(
            "- an upper bound on perplexity says only that the model's perplexity is at most that number"
        )
    return lines + [""]


def number_tables(models: list[str], by_model: dict[str, list[Run]]) -> list[str]:
    """One table per kind of result: a row per model and evaluation (seeds averaged), the numbers,
    then how they were obtained; a warning where the rows were not evaluated alike."""
    lines = []
    for kind, title in SECTIONS.items():
        rows: dict[tuple[str, Evaluation], list[dict[str, float]]] = defaultdict(list)
        warnings: dict[tuple[str, Evaluation], list[str]] = defaultdict(list)
        for model in models:
            for run in by_model[model]:
                for numbers in run.numbers:
                    if numbers.kind == kind:
                        row = numbers.model or model, numbers.evaluation
                        rows[row].append(numbers.values)
                        warnings[row] += [w for w in numbers.warnings if w not in warnings[row]]
        if not rows:
            continue
        names = list(dict.fromkeys(name for runs in rows.values() for values in runs for name in values))
        labels = row_labels(rows)
        cells = [
            [label, *(_cell([values[n] for values in runs if n in values]) for n in names), *how.cells()]
            for label, ((_, how), runs) in zip(labels, rows.items())
        ]
        align = ["left", *["right"] * len(names)]
        lines += [heading(title), "", *table(["model", *names, *COLUMNS], cells, align), ""]
        lines += warning_lines(dict(zip(labels, (warnings[row] for row in rows))))
        lines += not_alike_lines(dict(zip(labels, (how for _, how in rows))), "numbers")
    return lines


def warning_lines(warnings: dict[str, list[str]]) -> list[str]:
    """Under a table, what makes a row's numbers untrustworthy (``label -> warnings``), one line each."""
    lines = [f"- **{label} is unreliable:** {text}" for label, given in warnings.items() for text in given]
    return lines + [""] if lines else []


def _perplexity_vs_sg(
    models: list[str], by_model: dict[str, list[Run]], runs: list[Run], out: Path
) -> list[str]:
    """The perplexity-vs-SG figure and its section: one point per model (mean over its runs), named
    with the perplexity's method where the models' perplexities were not obtained alike."""
    # The SG axis: the 31-suite score when every run has it, else the mean over the suites scored.
    sg_label = SG_SETS["hu2020"]
    with_perplexity = [r for r in runs if r.value("perplexity", PERPLEXITY_PER_WORD)]
    if not all(r.value("syntaxgym", sg_label) for r in with_perplexity):
        sg_label = SG_MEAN
    pairs: dict[tuple[str, Evaluation], list[tuple[float, float]]] = defaultdict(list)
    sg_evaluations: dict[tuple[str, Evaluation], Evaluation] = {}
    for model in models:
        for run in by_model[model]:
            sg = run.value("syntaxgym", sg_label)
            for numbers in run.numbers if sg else ():
                headline = numbers.kind == "perplexity" and numbers.headline
                if headline and PERPLEXITY_PER_WORD in numbers.values:
                    pairs[model, numbers.evaluation].append((numbers.values[PERPLEXITY_PER_WORD], sg[0]))
                    sg_evaluations.setdefault((model, numbers.evaluation), sg[1])
    if not pairs:
        return []
    labels = row_labels(pairs)
    evaluations = {label: how for label, (_, how) in zip(labels, pairs)}
    alike = not differences(evaluations)
    names = labels
    if not alike:  # each point says how its perplexity was obtained: "tg (gold, upper bound)"
        names = [
            f"{model} ({', '.join(dict.fromkeys([how.method.split(',')[0], how.bound.split(' (')[0]]))})"
            for model, how in pairs
        ]
        names = [name if names.count(name) == 1 else label for name, label in zip(names, labels)]
    points = {
        name: (statistics.mean(p for p, _ in values), statistics.mean(s for _, s in values))
        for name, values in zip(names, pairs.values())
    }
    # A model that cannot tell the conditions apart scores the mean of its suites' chance levels.
    levels = {
        round(statistics.mean(r.suite_chance.values()), 6)
        if r.suite_chance and r.suite_chance.keys() == r.suite_methods.keys()
        else None
        for r in with_perplexity
        if r.suite_methods
    }
    chance = levels.pop() if sg_label == SG_MEAN and len(levels) == 1 else None
    figure = perplexity_vs_sg_figure(points, xlabel=PERPLEXITY_PER_WORD, ylabel=sg_label, chance=chance)
    save_figure(figure, out / "perplexity_vs_sg.png")
    figure_line = image("perplexity vs SG score", "perplexity_vs_sg.png")
    lines = [heading("Perplexity and SG score"), "", figure_line, ""]
    lines += not_alike_lines(evaluations, "perplexities")
    return lines + not_alike_lines(dict(zip(labels, sg_evaluations.values())), "SG scores")


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

    lines = [heading("Results", 1), "", f"{len(runs)} runs of {len(models)} models: {', '.join(models)}.", ""]
    tables = number_tables(models, by_model)
    if tables:
        lines += [
            "Each number is shown with how it was obtained: the method (exact for words-only models; "
            "gold tree, proposal trees or beam search for joint models), the bound (what the number "
            "is relative to the model's true value), the beam (action/word/fast-track) and the subset "
            "evaluated. Runs of one model evaluated alike are averaged (mean ± sample std, n runs).",
            "",
            *tables,
        ]
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
        lines += [heading("SyntaxGym by circuit"), "", image("SG accuracy by circuit", "sg_circuits.png"), ""]
    comparisons = sg_comparisons(by_model, baseline)
    if comparisons:
        lines += comparison_lines(comparisons, baseline, {model: len(by_model[model]) for model in models})
    lines += _perplexity_vs_sg(models, by_model, runs, out)
    if figure_sentence is not None:
        from syntaxlm.report.model_figures import report_model_figures, sentence_words

        lines += report_model_figures([run.folder for run in runs], sentence_words(figure_sentence), out)
    lines += [heading("Runs"), "", *(f"- `{run.folder}`: {run.model}, seed {run.seed}" for run in runs), ""]
    return write_markdown(out / "report.md", lines)
