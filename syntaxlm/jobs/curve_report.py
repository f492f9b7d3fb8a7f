"""The learning curve's report: ``OUT/curve.md`` and ``OUT/curve.png``, made from ``OUT/curve.json``
alone (``jobs.curve_results``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from syntaxlm.models import MODEL_CARDS
from syntaxlm.report.markdown import heading, image, table, write_markdown
from syntaxlm.results import read_result


def label(model: str) -> str:
    """A model's name as the papers write it (its card's ``label``)."""
    return MODEL_CARDS[model].label if model in MODEL_CARDS else model




def write_curve_report(out: str | Path) -> tuple[Path, Path]:
    """``out/curve.md`` and ``out/curve.png`` from ``out/curve.json`` alone."""
    out = Path(out)
    curve = read_result(out / "curve.json")["result"]
    settings = curve["settings"]
    sweep = settings.get("sweep")
    points = sweep["values"] if sweep else sorted(settings["sizes"])
    points = [p for p in points if any(cell["point"] == p for cell in curve["cells"])]
    models = [m for m in settings["models"] if any(cell["model"] == m for cell in curve["cells"])]
    lines = _introduction(curve) + _incomplete(curve, points)
    for phenomenon, pattern in curve["phenomena"].items():
        lines += _phenomenon_section(curve, phenomenon, pattern, models, points)
    lines += [image("learning curve", "curve.png"), ""]
    stopped = sorted({r.get("stopped") for r in curve["runs"]} - {"epochs"})
    if stopped:
        how = ", ".join(map(str, stopped))
        lines += [f"Some runs stopped by {how}, not by the end of their passes; see curve.json.", ""]
    lines += [_timing_line(curve["runs"]), ""]
    write_markdown(out / "curve.md", lines)
    return out / "curve.md", _save_curve_figure(curve, models, points, out / "curve.png")


def _introduction(curve: Mapping[str, Any]) -> list[str]:
    """The report's title and what was measured, how: models, data, budget, intervals."""
    settings = curve["settings"]
    sweep = settings.get("sweep")
    percent = round(100 * settings["level"])
    overrides = f", with {', '.join(settings['overrides'])}" if settings["overrides"] else ""
    if sweep:
        size = settings["sizes"][0]
        epochs = max(settings["min_epochs"], math.ceil(settings["min_steps"] * settings["batch_size"] / size))
        lines = [
            heading(f"Sweep: SyntaxGym accuracy against {sweep['key']}", 1),
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
            heading("Learning curve: SyntaxGym accuracy against training size", 1),
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
    return lines + [
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


def _incomplete(curve: Mapping[str, Any], points: Sequence) -> list[str]:
    """Which runs the cells average, when fewer than planned were evaluated (else nothing)."""
    settings = curve["settings"]
    sweep = settings.get("sweep")
    planned = len(settings["models"]) * len(points or settings["sizes"]) * len(settings["seeds"])
    if len(curve["runs"]) >= planned:
        return []
    have: dict[tuple[str, Any], list[int]] = {}
    for run in curve["runs"]:
        have.setdefault((run["model"], run["point"]), []).append(run["seed"])
    order = {p: i for i, p in enumerate(points)}
    return [
        f"**Incomplete:** {len(curve['runs'])} of {planned} runs evaluated (run the command again to "
        "continue); each cell averages the seeds it has: "
        + "; ".join(
            f"{label(m)} {_point_text(p, sweep)}: {', '.join(map(str, have[m, p]))}"
            for m, p in sorted(have, key=lambda k: (order.get(k[1], 0), k[0]))
        )
        + ".",
        "",
    ]


def _phenomenon_section(
    curve: Mapping[str, Any], phenomenon: str, pattern: str, models: Sequence[str], points: Sequence
) -> list[str]:
    """A phenomenon's heading, its table (a row per model, a column per point) and the comparisons
    at each point; nothing when no cell measured it."""
    present = [c for c in curve["cells"] if c["phenomenon"] == phenomenon]
    if not present:
        return []
    sweep = curve["settings"].get("sweep")
    cell = {(c["model"], c["point"]): c for c in present}
    columns = [f"{sweep['key']}={p}" if sweep else f"{p:,}" for p in points]
    rows = [
        [label(model), *(_interval_text(cell[model, p]) if (model, p) in cell else "–" for p in points)]
        for model in models
    ]
    lines = [heading(f"{phenomenon} (`{pattern}`, {present[0]['n_items']} items)"), ""]
    lines += [*table(["model", *columns], rows, align=["left", *["right"] * len(points)]), ""]
    for point in points:
        said = [
            _comparison_text(c)
            for c in curve["comparisons"]
            if c["phenomenon"] == phenomenon and c["point"] == point
        ]
        if said:
            where = f"{sweep['key']} = {point}" if sweep else f"{point:,} sentences"
            lines.append(f"- {where}: " + "; ".join(said) + ".")
    return lines + [""]


def _save_curve_figure(curve: Mapping[str, Any], models: Sequence[str], points: Sequence, path: Path) -> Path:
    """The figure of every phenomenon's cells against the points, one line per model."""
    from syntaxlm.report.plots import learning_curve_figure, save_figure

    settings = curve["settings"]
    sweep = settings.get("sweep")
    heading_text = sweep["key"] if sweep else "training sentences"
    cell = {(c["model"], c["point"], c["phenomenon"]): c for c in curve["cells"]}
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
        xlabel=heading_text,
        ticks={positions[p]: _point_text(p, sweep) for p in points},
        log_x=not sweep,
        title=f"SyntaxGym accuracy against {heading_text} ({round(100 * settings['level'])}% intervals)",
    )
    return save_figure(figure, path)


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
