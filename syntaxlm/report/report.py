"""A Markdown report with the papers' tables and figures, made from result files alone.

A *run* is a folder. Every ``*.json`` result file under it (``syntaxlm.results``: a ``kind`` and a
``result``) contributes numbers; ``config.json`` in the folder, when present, names the model
(``"model"``) and the seed (``"seed"``), otherwise the folder's name is the model. Runs of the same
model are seeds: the report gives mean ± standard deviation over them (sample std, n − 1; a single
run shows its value alone) and says how many runs each cell averages.

Numbers read per result kind:

- ``syntaxgym`` (one file per suite): suite accuracy (prediction 0); per run, the mean over the
  suites scored, the SG scores over the 31 suites of Hu et al. and the 33 of Qian et al. (only when
  every suite of the set is there) and circuit means over the suites present, plotted per model
  (TG Fig. 4);
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
from syntaxlm.eval.syntaxgym import CIRCUIT_OF_SUITE, CIRCUITS, sg_scores
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
            suite_accuracy[result["suite"]] = result["accuracy_pred0"]
        else:
            run.metrics.update(_metrics(kind, result))
    if suite_accuracy:
        run.metrics["SG suites scored"] = len(suite_accuracy)
        run.metrics["SG mean over scored suites"] = statistics.mean(suite_accuracy.values())
        scores = sg_scores(suite_accuracy)
        for key, label in SG_SETS.items():
            if scores[key]["mean_over_suites"] is not None:
                run.metrics[label] = scores[key]["mean_over_suites"]
        by_circuit: dict[str, list[float]] = defaultdict(list)
        for suite, accuracy in suite_accuracy.items():
            if suite in CIRCUIT_OF_SUITE:
                by_circuit[CIRCUIT_OF_SUITE[suite]].append(accuracy)
        run.circuits = {circuit: statistics.mean(values) for circuit, values in by_circuit.items()}
    return run


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


def _cell(values: list[float]) -> str:
    if not values:
        return ""
    if len(set(values)) == 1:
        return f"{values[0]:.4g}" + (f" (n={len(values)})" if len(values) > 1 else "")
    return f"{statistics.mean(values):.4g} ± {statistics.stdev(values):.2g} (n={len(values)})"


def make_report(
    run_folders: Iterable[str | Path], out: str | Path, *, figure_sentence: str | None = None
) -> Path:
    """Write ``out/report.md`` and its PNG figures; returns the Markdown file's path.
    ``figure_sentence``: also draw the figures of the runs' saved models for this sentence."""
    out = Path(out)
    runs = [read_run(folder) for folder in run_folders]
    if not runs:
        raise ValueError("no run folders given")
    models = list(dict.fromkeys(run.model for run in runs))
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
        order = [circuit for circuit in CIRCUITS if circuit in present]
        save_figure(circuit_accuracy_figure(circuit_means, circuits=order), out / "sg_circuits.png")
        lines += ["## SyntaxGym by circuit", "", "![SG accuracy by circuit](sg_circuits.png)", ""]
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
