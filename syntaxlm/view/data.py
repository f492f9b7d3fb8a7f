"""The JSON document an explorer page embeds, gathered from runs and result files.

``view_data(paths, ...)`` reads each path given (a run folder, as ``syntaxlm report`` reads it, or
one result file) and returns one JSON-able document:

- ``tables``: the comparison tables of ``syntaxlm report`` (``report.report``): per kind of result
  one row per model and evaluation, each number of every run as its result file holds it (with
  the mean and sample standard deviation over the runs), and how the numbers were obtained
  (method, bound, beam, subset, data; ``report.evaluations``), with the report's warning where the
  rows were not evaluated alike;
- ``syntaxgym``: per suite, its regions and conditions (from the suite file the result names, when
  it is readable) and per item each run's prediction outcomes and region surprisals in bits, as
  ``eval sg --out`` wrote them;
- ``sentences``: per sentence (the first test sentences, or those of ``--sentences FILE``), its
  words and gold tree, and per saved model (``RUN/best``) what it computes for it: per-word
  surprisal in bits (``Scorer``: exact for words-only models, beam search for joint ones, whose
  best parse comes with it), the tree a structure-inducing model builds, PRPN's syntactic
  distances, and for the models with a structure mask (``model.card.figures``) the mask and the
  attention probabilities of every layer and head over the tokens the model read.

The numbers of result files are copied unchanged; the computed ones are rounded (surprisal and
distances to 4 decimals, attention and masks to one character per cell: ``ATTENTION_LEVELS``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from syntaxlm import __version__
from syntaxlm.errors import InputFormatError, SyntaxlmError
from syntaxlm.files import read_json
from syntaxlm.report.evaluations import is_result_file, suite_scoring
from syntaxlm.report.report import SECTIONS, Run, not_alike_lines, read_run, row_labels
from syntaxlm.results import read_result

FORMAT = "syntaxlm-view 1"
DEFAULT_SENTENCES = 20
# Attention probabilities and masks are written one character per cell: level k of
# ``len(ATTENTION_LEVELS) - 1`` (k / 63 for a probability; "0" or "1" for a mask).
ATTENTION_LEVELS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/"
SAVED_MODEL = "best"


@dataclass
class Source:
    """One path given: the run read from it, its name on the page, its saved model (if any) and
    its SyntaxGym result records (suite -> (record, file))."""

    path: Path
    run: Run
    name: str
    model_folder: Path | None
    suites: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    test_data: Path | None = None


def read_sources(paths: Iterable[str | Path]) -> list[Source]:
    """Every path given as a ``Source``; a path that is not there, or a file that is not a result
    file, raises ``InputFormatError`` naming it."""
    sources: list[Source] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise InputFormatError(
                "no such run folder or result file",
                path=path,
                expected="a run folder (syntaxlm train --out, quickstart's runs/MODEL) or a result file",
            )
        run = read_run(path)
        files = [path] if path.is_file() else sorted(path.rglob("*.json"))
        suites: dict[str, tuple[dict[str, Any], Path]] = {}
        test_data = None
        for file in files:
            if file.name == "config.json" or not is_result_file(file):
                continue
            record = read_result(file)
            if record["kind"] == "syntaxgym":
                suites[record["result"]["suite"]] = (record, file)
            elif record["kind"] == "perplexity" and test_data is None:
                given_data = ((record.get("inputs") or {}).get("data") or {}).get("path")
                test_data = Path(given_data) if given_data else None
        if test_data is None and path.is_dir() and (path / "config.json").is_file():
            config = read_json(path / "config.json", InputFormatError, expected="a run configuration")
            named = ((config.get("train_config") or {}).get("data") or {}).get("test")
            test_data = Path(named) if named else None
        sources.append(Source(path, run, run.model, _saved_model(path), suites=suites, test_data=test_data))
    names = [source.name for source in sources]
    for source in sources:
        if names.count(source.name) > 1:
            source.name = f"{source.run.model} ({source.path.name})"
    seen: dict[str, int] = defaultdict(int)
    for source in sources:
        seen[source.name] += 1
        if seen[source.name] > 1:
            source.name = f"{source.name} #{seen[source.name]}"
    return sources


def _saved_model(path: Path) -> Path | None:
    """The saved model of a run folder (``RUN/best``), or the one a result file names."""
    if path.is_dir():
        return path / SAVED_MODEL if (path / SAVED_MODEL / "config.json").is_file() else None
    record = read_result(path)
    weights = ((record.get("inputs") or {}).get("model") or {}).get("path")
    if weights and (Path(weights).parent / "config.json").is_file():
        return Path(weights).parent
    return None


# --- the comparison tables ------------------------------------------------------------------------


def comparison_tables(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """The tables of ``syntaxlm report``: per kind of result, a row per model and evaluation."""
    tables = []
    for kind, title in SECTIONS.items():
        rows: dict[tuple[str, Any], list[tuple[Source, dict[str, float]]]] = defaultdict(list)
        for source in sources:
            for numbers in source.run.numbers:
                if numbers.kind == kind:
                    rows[source.run.model, numbers.evaluation].append((source, numbers.values))
        if not rows:
            continue
        names = list(dict.fromkeys(name for runs in rows.values() for _, values in runs for name in values))
        labels = row_labels(rows)
        table_rows = []
        for label, ((model, how), runs) in zip(labels, rows.items()):
            cells = {}
            for name in names:
                values = [values[name] for _, values in runs if name in values]
                known = [value for value in values if value is not None]  # EVALB: F1 of no match
                cells[name] = {
                    "values": values,
                    "mean": statistics.mean(known) if known else None,
                    "std": statistics.stdev(known) if len(known) > 1 else None,
                }
            table_rows.append(
                {
                    "label": label,
                    "model": model,
                    "runs": [source.name for source, _ in runs],
                    "numbers": cells,
                    "evaluation": asdict(how),
                }
            )
        notes = not_alike_lines(dict(zip(labels, (how for _, how in rows))), "numbers")
        tables.append(
            {
                "kind": kind,
                "title": title,
                "names": names,
                "rows": table_rows,
                "notes": [line.replace("**", "") for line in notes if line],
            }
        )
    return tables


# --- SyntaxGym --------------------------------------------------------------------------------------


def syntaxgym_data(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """Per suite any source scored: its regions, conditions and predictions, each run's accuracy
    and method, and per item the region text and each run's outcomes and region surprisals."""
    from syntaxlm.eval.syntaxgym import load_suite

    suites = []
    for suite_name in sorted({suite for source in sources for suite in source.suites}):
        scored = [(source, *source.suites[suite_name]) for source in sources if suite_name in source.suites]
        first = scored[0][1]
        suite = None
        suite_file = ((first.get("inputs") or {}).get("suite") or {}).get("path")
        if suite_file and Path(suite_file).is_file():
            try:
                suite = load_suite(suite_file)
            except SyntaxlmError:
                suite = None
        items: dict[int, dict[str, Any]] = {}
        if suite is not None:
            for item in suite.items:
                items[item.item_number] = {
                    "item_number": item.item_number,
                    "regions": {condition: list(regions) for condition, regions in item.regions.items()},
                    "runs": {},
                }
        runs = {}
        for source, record, file in scored:
            result = record["result"]
            runs[source.name] = {
                "file": str(file),
                "accuracy_pred0": result.get("accuracy_pred0"),
                "method": suite_scoring(record),
            }
            for item in result.get("items") or []:
                entry = items.setdefault(
                    int(item["item_number"]),
                    {"item_number": int(item["item_number"]), "regions": {}, "runs": {}},
                )
                entry["runs"][source.name] = {
                    "results": item["results"],
                    "region_surprisals_bits": item.get("region_surprisals_bits"),
                }
        n_regions = max(
            (len(values) for item in items.values() for run in item["runs"].values()
             for values in (run["region_surprisals_bits"] or {}).values()),
            default=0,
        )  # fmt: skip
        suites.append(
            {
                "suite": suite_name,
                "suite_file": str(suite_file) if suite is not None else None,
                "predictions": first["result"].get("predictions", []),
                "region_names": list(suite.region_names)
                if suite is not None
                else [f"region {k}" for k in range(1, n_regions + 1)],
                "conditions": list(suite.condition_names) if suite is not None else _conditions(items),
                "runs": runs,
                "items": [items[number] for number in sorted(items) if items[number]["runs"]],
            }
        )
    return suites


def _conditions(items: dict[int, dict[str, Any]]) -> list[str]:
    found: dict[str, None] = {}
    for item in items.values():
        for run in item["runs"].values():
            found.update(dict.fromkeys(run["region_surprisals_bits"] or {}))
    return list(found)


# --- the sentences and what the models compute for them -------------------------------------------


def read_view_sentences(path: Path, limit: int | None) -> tuple[list[list[str]], list[Any | None]]:
    """The sentences of a file (one per line, or a treebank whose trees come with them, in the
    models' view) and their trees (``None`` for plain sentences), the first ``limit`` of them."""
    from syntaxlm.data.sentences import is_treebank, read_sentences
    from syntaxlm.data.treebank import read_treebank

    if not path.is_file():
        raise InputFormatError(
            "no such file",
            path=path,
            expected="sentences, one per line, or a treebank (PTB brackets, CoNLL-U)",
        )
    if path.suffix in (".conllu", ".conll") or is_treebank(path):
        trees = read_treebank(path)[:limit]
        words = [list(tree.leaves()) if hasattr(tree, "leaves") else list(tree.words) for tree in trees]
        return words, [tree if hasattr(tree, "leaves") else None for tree in trees]
    words = read_sentences(path)[:limit]
    return words, [None] * len(words)


def tree_json(tree: Any) -> Any:
    """A tree as nested lists, ``["S", ["NP", "the", "dog"], ["VP", "barks"]]``: a node is its
    label followed by its children, a word is a string."""
    if isinstance(tree, str):
        return tree
    return [tree.label, *(tree_json(child) for child in tree.children)]


def _rounded(values: Iterable[float], digits: int = 4) -> list[float | None]:
    return [None if not math.isfinite(float(v)) else round(float(v), digits) for v in values]


def _cells(matrix: np.ndarray, levels: int, where: np.ndarray) -> str:
    """The cells of a matrix where ``where`` holds, row by row, one character per cell: level
    ``round(value * levels)`` of ``ATTENTION_LEVELS``."""
    steps = np.clip(np.rint(np.asarray(matrix, dtype=np.float64) * levels), 0, levels).astype(int)
    return "".join(ATTENTION_LEVELS[k] for k in steps[where])


def attention_data(model, words: Sequence[str], tree: Any) -> dict[str, Any]:
    """The structure mask (per head where the heads differ) and every layer's attention
    probabilities for one input, one character per cell (module docstring). The masks are written
    over the lower triangle (``cells: "triangle"``; the whole matrix, ``"all"``, when a position
    may attend to a later one), and the probabilities only where the head's mask lets it attend
    (``weights: "masked"``), unless some probability outside the mask is visible at this
    resolution (``"cells"``: where the masks are written)."""
    from syntaxlm.report.model_figures import attention_weights_by_layer

    maps = attention_weights_by_layer(model, words=words, tree=tree if model.card.joint else None)
    mask = np.asarray(maps[0].mask, dtype=bool)
    n = mask.shape[-1]
    levels = len(ATTENTION_LEVELS) - 1
    triangular = not np.triu(mask, k=1).any() and all(not np.triu(m.weights, k=1).any() for m in maps)
    cells = np.tril(np.ones((n, n), dtype=bool)) if triangular else np.ones((n, n), dtype=bool)
    distinct = mask.shape[0] > 1 and any((mask[h] != mask[0]).any() for h in range(mask.shape[0]))
    head_masks = [mask[h] for h in range(mask.shape[0] if distinct else 1)]
    n_heads = maps[0].weights.shape[0]
    masked = all(
        (np.asarray(m.weights[h])[~head_masks[h if distinct else 0]] < 0.5 / levels).all()
        for m in maps
        for h in range(n_heads)
    )
    return {
        "tokens": maps[0].tokens,
        "cells": "triangle" if triangular else "all",
        "weights_over": "masked" if masked else "cells",
        "levels": levels,
        "masks": [_cells(head, 1, cells) for head in head_masks],
        "head_roles": {str(head): role for head, role in model.card.head_roles.items()},
        "weights": [
            [
                _cells(m.weights[h], levels, head_masks[h if distinct else 0] if masked else cells)
                for h in range(n_heads)
            ]
            for m in maps
        ],
    }


def model_sentences(
    model,
    sentences: Sequence[Sequence[str]],
    trees: Sequence[Any | None],
    *,
    beam,
    on_estimate: Callable | None = None,
) -> dict[str, Any]:
    """What one saved model computes for each sentence (module docstring); a sentence it cannot
    score (too long) is ``None``, and what it cannot score or draw is said in ``notes`` (sentences
    numbered from 1, as the page lists them)."""
    from syntaxlm.inference import Scorer
    from syntaxlm.models import ATTENTION, DISTANCES, INDUCED_TREE, STRUCTURE_MASK
    from syntaxlm.report.model_figures import FigureError

    card = model.card
    scorer = Scorer(model, beam=beam, on_estimate=on_estimate)
    too_long = set(scorer.too_long(sentences))
    kept = [i for i in range(len(sentences)) if i not in too_long]
    scores = dict(zip(kept, scorer.score([list(sentences[i]) for i in kept]), strict=True)) if kept else {}
    method = scorer.method + (
        f" {beam.action_beam}/{beam.word_beam}/{beam.fast_track}" if scorer.method == "beam" else ""
    )
    per_sentence: list[dict[str, Any] | None] = []
    notes: list[str] = []
    induced = model.induced_trees([list(sentences[i]) for i in kept]) if model.induces_trees and kept else []
    induced_by = dict(zip(kept, induced))
    distances = {}
    if DISTANCES in card.figures and kept:
        try:
            distances = dict(zip(kept, model.syntactic_distances([list(sentences[i]) for i in kept])))
        except ValueError as error:
            notes.append(f"no syntactic distances: {error}")
    for i, words in enumerate(sentences):
        if i not in scores:
            per_sentence.append(None)
            continue
        s = scores[i]
        entry: dict[str, Any] = {"surprisal_bits": _rounded(-np.asarray(s.word_logprobs) / math.log(2))}
        if card.joint and s.tree is not None:
            entry["parse"] = tree_json(s.tree)
        if i in induced_by and (INDUCED_TREE in card.figures or DISTANCES in card.figures):
            entry["induced_tree"] = tree_json(induced_by[i])
        if i in distances:
            entry["distances"] = _rounded(distances[i])
        if STRUCTURE_MASK in card.figures and ATTENTION in card.figures:
            tree, drawn_on = (trees[i], "gold") if trees[i] is not None else (s.tree, "parse")
            if card.joint and tree is None:
                notes.append(f"sentence {i + 1}: no tree to read, so no attention")
            else:
                try:
                    entry["attention"] = attention_data(model, words, tree) | {
                        "tree": drawn_on if card.joint else "words only"
                    }
                except (FigureError, ValueError) as error:
                    notes.append(f"sentence {i + 1}: no attention: {error}")
        per_sentence.append(entry)
    if too_long:
        notes.append(
            f"sentences {', '.join(str(i + 1) for i in sorted(too_long))} are longer than the model can score "
            f"({model.longest_sentence()} pieces)"
        )
    return {
        "model": model.config.model,
        "label": card.label,
        "joint": card.joint,
        "induces_trees": model.induces_trees,
        "method": method,
        "sentences": per_sentence,
        "notes": notes,
    }


def sentences_data(
    sources: Sequence[Source],
    *,
    sentences_file: Path | None,
    test_data: Path | None,
    limit: int | None,
    beam,
    echo: Callable[[str], None],
    on_estimate: Callable[[str, list[list[str]]], Callable | None] | None = None,
) -> dict[str, Any]:
    """The sentence view's data: the sentences, their gold trees and each saved model's numbers."""
    from syntaxlm.models import load_model

    given = sentences_file or test_data
    found = [source.test_data for source in sources if source.test_data is not None]
    path = given or (found[0] if found else None)
    data: dict[str, Any] = {"source": None, "sentences": [], "gold": [], "models": {}, "notes": []}
    if path is None:
        data["notes"].append(
            "no sentences: the runs name no test data; build the page with --sentences FILE or --test FILE"
        )
        return data
    if given is None and not path.is_file():
        data["notes"].append(f"the test data the runs name, {path}, is not there; give --test or --sentences")
        echo(f"warning: {data['notes'][-1]}")
        return data
    words, trees = read_view_sentences(path, limit)
    data.update(
        source=str(path),
        sentences=[list(w) for w in words],
        gold=[None if tree is None else tree_json(tree) for tree in trees],
    )
    without = [source.name for source in sources if source.model_folder is None]
    if without:
        data["notes"].append("no saved model (RUN/best) for " + ", ".join(without))
    loaded: dict[Path, str] = {}
    for source in sources:
        if source.model_folder is None:
            continue
        folder = source.model_folder.resolve()
        if folder in loaded:
            data["models"][source.name] = {"same_as": loaded[folder]}
            continue
        loaded[folder] = source.name
        echo(f"scoring {len(words)} sentences with {source.name} ({source.model_folder})")
        model = load_model(source.model_folder)
        teller = on_estimate(source.name, words) if on_estimate is not None else None
        data["models"][source.name] = model_sentences(model, words, trees, beam=beam, on_estimate=teller)
    return data


# --- the document -----------------------------------------------------------------------------------


def view_data(
    paths: Iterable[str | Path],
    *,
    sentences_file: str | Path | None = None,
    test_data: str | Path | None = None,
    limit: int | None = DEFAULT_SENTENCES,
    beam=None,
    models: bool = True,
    echo: Callable[[str], None] = lambda message: None,
    on_estimate: Callable[[str, list[list[str]]], Callable | None] | None = None,
) -> dict[str, Any]:
    """The page's document (module docstring). ``sentences_file``: the sentences to show (one per
    line, or a treebank) instead of the test data the runs name (``test_data`` overrides that);
    ``limit``: the first so many; ``beam``: the beam of joint models (default the papers'
    100/10/5); ``models=False``: result files only, no sentence view."""
    from syntaxlm.inference.beam import PAPER_BEAM

    sources = read_sources(paths)
    if not sources:
        raise ValueError("no run folders or result files given")
    beam = beam or PAPER_BEAM
    document: dict[str, Any] = {
        "format": FORMAT,
        "syntaxlm": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [
            {
                "name": source.name,
                "path": str(source.path),
                "model": source.run.model,
                "seed": source.run.seed,
                "saved_model": None if source.model_folder is None else str(source.model_folder),
            }
            for source in sources
        ],
        "tables": comparison_tables(sources),
        "syntaxgym": syntaxgym_data(sources),
    }
    if models:
        document["sentence_view"] = sentences_data(
            sources,
            sentences_file=None if sentences_file is None else Path(sentences_file),
            test_data=None if test_data is None else Path(test_data),
            limit=limit,
            beam=beam,
            echo=echo,
            on_estimate=on_estimate,
        )
    else:
        document["sentence_view"] = {
            "source": None, "sentences": [], "gold": [], "models": {},
            "notes": ["built from result files only: no sentence view"],
        }  # fmt: skip
    return document
