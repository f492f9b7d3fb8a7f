"""The JSON document an explorer page embeds, gathered from runs and result files.

``view_data(paths, ...)`` reads each path given (a run folder, as ``syntaxlm report`` reads it, or
result files, those of one saved model read as one run) and returns one JSON-able document:

- ``tables``: the comparison tables of ``syntaxlm report`` (``report.report``): per kind of result
  one row per model and evaluation, each number of every run as its result file holds it (with
  the mean and sample standard deviation over the runs), and how the numbers were obtained
  (method, bound, beam, subset, data; ``report.evaluations``), with the report's warning where the
  rows were not evaluated alike;
- ``syntaxgym``: per suite, its regions and conditions (from the suite file the result names, when
  it is readable; else ``notes`` say why, and the regions have numbers only) and per item each
  run's prediction outcomes and region surprisals in bits, as ``eval sg --out`` wrote them;
- ``sentences``: per sentence (the first test sentences, or those of ``--sentences FILE``), its
  words and gold tree, and per saved model (``RUN/best``) what it computes for it: per-word
  surprisal in bits (``Scorer``: exact for words-only models, beam search for joint ones, whose
  best parse comes with it), the tree a structure-inducing model builds, PRPN's syntactic
  distances, and for the models with a structure mask (``model.card.figures``) the mask and the
  attention probabilities of every layer and head over the tokens the model read;
- ``data_files``: the files whose contents the page holds besides the result files (the
  sentences, the suites), and the files named in the runs that it refused, each with why.

The numbers of result files are copied unchanged (an infinite region surprisal, a sentence a beam
lost, as ``null``); the computed ones are rounded (surprisal and distances to 4 decimals,
attention and masks to one character per cell: ``ATTENTION_LEVELS``).

Result files are read as untrusted: every field read has its shape checked first
(``results.check_result``: a wrong one raises ``ResultFileError`` naming the file and the field),
only regular files are read, and a file a result names is read into the page only when it is
demonstrably the run's data: inside a run folder given, or a treebank or SyntaxGym suite its
reader accepts (a result file naming ``/etc/passwd`` as its test data gets it refused, not shown).
The sentences asked for (``sentences_file``, ``test_data``) are read whatever they are. A relative
path a file names is looked for from the working directory, then from each folder above that file
(``located``).
"""

from __future__ import annotations

import math
import os
import stat
import statistics
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from syntaxlm.errors import InputFormatError, SyntaxlmError
from syntaxlm.files import read_json
from syntaxlm.report.evaluations import suite_scoring
from syntaxlm.report.report import (
    SECTIONS,
    Run,
    not_alike_lines,
    read_result_files,
    read_run,
    result_files,
    row_labels,
)
from syntaxlm.results import (
    MAX_INTEGER,
    MAX_RESULT_CHARS,
    check_fields,
    fields,
    integer,
    one_of,
    optional,
    path_text,
    read_checked_result,
    text,
)
from syntaxlm.version import __version__

FORMAT = "syntaxlm-view 1"
DEFAULT_SENTENCES = 20
# Attention probabilities and masks are written one character per cell: level k of
# ``len(ATTENTION_LEVELS) - 1`` (k / 63 for a probability; "0" or "1" for a mask).
ATTENTION_LEVELS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/"
SAVED_MODEL = "best"


@dataclass(frozen=True)
class NamedFile:
    """A data file a run names: its path, what it is to the page (``"test data"``, ``"suite"``) and
    where it is named (the result or config file, and the field's path in it)."""

    path: Path
    what: str
    named_by: Path
    field: str

    def description(self) -> str:
        return f"the {self.what} named by {self.named_by} ({self.field})"


@dataclass
class DataFiles:
    """The data files whose contents the page embeds and the files it refused, each with why, as
    the document's ``data_files``; each is also said through ``echo`` when it is decided."""

    echo: Callable[[str], None] = lambda message: None
    embedded: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)

    def embed(self, path: Path, what: str, why: str) -> None:
        self.embedded.append({"path": str(path), "what": what, "why": why})
        self.echo(f"embedded {path}: {what}; {why}")

    def refuse(self, path: Path, what: str, why: str) -> None:
        self.refused.append({"path": str(path), "what": what, "why": why})
        self.echo(f"warning: refused {path}: {what}: {why}")

    def document(self) -> dict[str, list[dict[str, str]]]:
        return {"embedded": self.embedded, "refused": self.refused}


@dataclass
class Source:
    """One run given: the run read from its folder or result files, its name on the page, its
    saved model (if any), its SyntaxGym result records (suite -> (record, file)), the test data its
    results name and, where several result files were given for it, those files."""

    path: Path
    run: Run
    name: str
    model_folder: Path | None
    suites: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    test_data: NamedFile | None = None
    files_given: list[Path] = field(default_factory=list)

    def given(self) -> str:
        """The path given, or how many result files were given for this run, and where."""
        if not self.files_given:
            return str(self.path)
        return f"{len(self.files_given)} result files under {os.path.commonpath(self.files_given)}"


RUN_CONFIG = fields(
    {
        "model": text,
        "seed": optional(one_of(integer(-MAX_INTEGER), text, expected="an integer or a string")),
        "train_config": optional(fields({"data": optional(fields({"test": optional(path_text)}))})),
    }
)
"""The fields of a run folder's ``config.json`` the page reads."""


def _run_config(folder: Path) -> dict[str, Any]:
    """A run folder's ``config.json`` (``{}`` when it has none), its fields checked (``RUN_CONFIG``)."""
    path = folder / "config.json"
    if not path.is_file():
        return {}
    config = read_json(path, InputFormatError, expected="a run configuration", most=MAX_RESULT_CHARS)
    return check_fields(config, RUN_CONFIG, path)


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (a FIFO, which reading would
    wait on forever, a device, a socket, a broken link), else ``None``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a broken link" if path.is_symlink() else "unreadable"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def read_sources(paths: Iterable[str | Path], files: DataFiles | None = None) -> list[Source]:
    """Every run given as a ``Source``: each folder, and the result files given alone grouped by
    the saved model they scored (two result files of one model are one run). A path that is not
    there, a folder that is not a run, a file that is not a result file and a result file whose
    fields the page reads have the wrong shape (``check_result``) raise a ``SyntaxlmError`` naming
    the path. A ``*.json`` in a run folder that is not a regular file (a FIFO) is not read:
    ``files`` says so."""
    files = files if files is not None else DataFiles()
    cache: dict[Path, dict[str, Any]] = {}

    def read(file: Path) -> dict[str, Any]:  # each result file read and checked once
        if file not in cache:
            cache[file] = read_checked_result(file)
        return cache[file]

    sources = [_read_source(group, read, files) for group in _runs_given([Path(p) for p in paths], read)]
    _name_apart(sources)
    return sources


def _runs_given(paths: list[Path], read: Callable[[Path], dict[str, Any]]) -> list[list[Path]]:
    """The paths given, one list per run, in the order given: a folder alone, result files by the
    saved model they name (a file that names none alone)."""
    runs: dict[Any, list[Path]] = {}
    for index, path in enumerate(paths):
        if not path.exists():
            raise InputFormatError(
                "no such run folder or result file",
                path=path,
                expected="a run folder (syntaxlm train --out, quickstart's runs/MODEL) or a result file",
            )
        model = None if path.is_dir() else _named_model(path, read(path))
        runs.setdefault(index if model is None else model.resolve(), []).append(path)
    return list(runs.values())


def _named_model(file: Path, record: dict[str, Any]) -> Path | None:
    """The saved model folder a result file names (its ``inputs.model.path``'s folder), if any."""
    weights = ((record.get("inputs") or {}).get("model") or {}).get("path")
    return located(weights, file).parent if weights else None


def _read_source(given: list[Path], read: Callable[[Path], dict[str, Any]], files: DataFiles) -> Source:
    """The run of a folder, or of result files of one model (``_runs_given``)."""
    path = given[0]
    records: dict[Path, dict[str, Any]] = {}

    def reading(file: Path) -> dict[str, Any]:
        records[file] = read(file)
        return records[file]

    config: dict[str, Any] = {}
    if path.is_dir():
        _check_run_folder(path)
        _refuse_irregular(path, files)
        config = _run_config(path)
        run = read_run(path, read=reading)
    else:
        run = read_result_files(given, read=reading)
    model_folder = _saved_model(path, records)
    suites: dict[str, tuple[dict[str, Any], Path]] = {}
    test_data = None
    for file, record in records.items():
        if record["kind"] == "syntaxgym":
            suites[record["result"]["suite"]] = (record, file)
        elif record["kind"] == "perplexity" and test_data is None:
            named = ((record.get("inputs") or {}).get("data") or {}).get("path")
            if named:
                test_data = NamedFile(located(named, file), "test data", file, "inputs.data.path")
    named = ((config.get("train_config") or {}).get("data") or {}).get("test")
    if test_data is None and named:
        config_file = path / "config.json"
        test_data = NamedFile(located(named, config_file), "test data", config_file, "train_config.data.test")
    return Source(path, run, run.model, model_folder, suites, test_data, given if len(given) > 1 else [])


def _refuse_irregular(folder: Path, files: DataFiles) -> None:
    """Say through ``files`` which ``*.json`` in a run folder are not regular files (not read)."""
    for file in sorted(folder.rglob("*.json")):
        if (kind := _not_regular(file)) is not None:
            why = f"{kind}, not a regular file, so not read"
            files.refuse(file, f"a *.json in the run folder {folder}", why)


def _is_run_folder(folder: Path) -> bool:
    """Whether a folder is a run's by its own files: a run configuration or a saved model."""
    return (folder / "config.json").is_file() or (folder / SAVED_MODEL).is_dir()


def _check_run_folder(folder: Path) -> None:
    """Raise the error of a folder that is no run: one holding run folders (naming them), or one
    holding no result file, saved model or run configuration."""
    if _is_run_folder(folder):
        return
    runs = sorted(child.name for child in folder.iterdir() if child.is_dir() and _is_run_folder(child))
    if runs:
        shown = ", ".join(runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
        raise InputFormatError(
            f"a folder of run folders ({shown}), not a run folder",
            path=folder,
            expected=f"the run folders themselves ({folder}/*)",
        )
    if not result_files(folder):
        unread = sorted(folder.rglob("*.json"))
        if unread:  # the file that was meant to be a result, named
            raise InputFormatError(
                f"not a result file, and {folder} holds no other",
                path=unread[0],
                expected='a result file (syntaxlm eval ... --out: a JSON object with "kind" and "result")',
            )
        raise InputFormatError(
            "no result file, saved model (best/) or config.json in this folder",
            path=folder,
            expected="a run folder (syntaxlm train --out, the quickstart's runs/MODEL) holding result files "
            "(syntaxlm eval ... --out), or result files",
        )


def _name_apart(sources: list[Source]) -> None:
    """Name the sources of one model apart: by their folder's name, then by number."""
    names = [source.name for source in sources]
    for source in sources:
        if names.count(source.name) > 1:
            source.name = f"{source.run.model} ({source.path.name})"
    seen: dict[str, int] = defaultdict(int)
    for source in sources:
        seen[source.name] += 1
        if seen[source.name] > 1:
            source.name = f"{source.name} #{seen[source.name]}"


def located(named: str, result_file: Path) -> Path:
    """A path a result (or run configuration) file names: as named when it is absolute or found
    from the working directory, else under the nearest folder above ``result_file`` that holds it
    (a file written with paths relative to where it was made, read from elsewhere); as named when
    none does."""
    path = Path(named)
    if path.is_absolute() or path.exists():
        return path
    for folder in result_file.absolute().parents:
        if (folder / path).exists():
            return folder / path
    return path


def _saved_model(path: Path, records: dict[Path, dict[str, Any]]) -> Path | None:
    """The saved model of a run folder (``RUN/best``), or the one its result files name."""
    if path.is_dir():
        return path / SAVED_MODEL if (path / SAVED_MODEL / "config.json").is_file() else None
    named = (_named_model(file, record) for file, record in records.items())
    return next((folder for folder in named if folder and (folder / "config.json").is_file()), None)


# --- the comparison tables ------------------------------------------------------------------------


def comparison_tables(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """The tables of ``syntaxlm report``: per kind of result, a row per model and evaluation."""
    tables = []
    for kind, title in SECTIONS.items():
        rows: dict[tuple[str, Any], list[tuple[Source, dict[str, float]]]] = defaultdict(list)
        for source in sources:
            for numbers in source.run.numbers:
                if numbers.kind == kind:
                    model = numbers.model or source.run.model
                    rows[model, numbers.evaluation].append((source, numbers.values))
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


def _named_suite(named: NamedFile, suite_name: str, files: DataFiles):
    """The suite of a file a result names, when it is a SyntaxGym suite (``load_suite``) of that
    name, else why not; ``files`` says which it is."""
    from syntaxlm.eval.syntaxgym import load_suite

    if (why := _missing(named.path)) is not None:
        files.refuse(named.path, named.description(), why)
        return why
    try:
        suite = load_suite(named.path)
    except SyntaxlmError:
        why = "not a SyntaxGym suite (load_suite does not read it)"
        files.refuse(named.path, named.description(), why)
        return why
    if suite.name != suite_name:
        why = f"it holds suite {suite.name!r}, not {suite_name!r}"
        files.refuse(named.path, named.description(), why)
        return why
    files.embed(named.path, named.description(), "a SyntaxGym suite, read by load_suite")
    return suite


def _scored_suite(suite_name: str, scored: Sequence[tuple[Source, dict[str, Any], Path]], files: DataFiles):
    """The first suite file the results of a suite name that is that suite, with its path, or
    ``(None, None)`` and the notes that say why its regions are shown without names or texts."""
    named: dict[Path, NamedFile] = {}
    for _, record, file in scored:
        if given := ((record.get("inputs") or {}).get("suite") or {}).get("path"):
            path = located(given, file)
            named.setdefault(path, NamedFile(path, "suite", file, "inputs.suite.path"))
    notes = []
    for candidate in named.values():
        suite = _named_suite(candidate, suite_name, files)
        if not isinstance(suite, str):
            return suite, candidate.path, []
        notes.append(f"The suite file {candidate.path} named by {candidate.named_by} was not read: {suite}.")
    if not named:
        files.echo(f"warning: no result file of suite {suite_name} names its suite file (inputs.suite.path)")
        notes.append(f"No result file of suite {suite_name} names its suite file (inputs.suite.path).")
    notes.append("Its regions are shown by number, without their names and texts.")
    return None, None, notes


def _surprisals(bits: dict[str, list[float | None]] | None) -> dict[str, list[float | None]] | None:
    """A result's region surprisals as the page shows them: an infinite one (a sentence a beam
    lost) as ``null``, drawn as a missing value."""
    if bits is None:
        return None
    return {c: [v if v is None or math.isfinite(v) else None for v in values] for c, values in bits.items()}


def syntaxgym_data(sources: Sequence[Source], files: DataFiles | None = None) -> list[dict[str, Any]]:
    """Per suite any source scored: its regions, conditions and predictions, each run's accuracy
    and method, and per item the region text and each run's outcomes and region surprisals. The
    regions' text is that of the first suite file the results name that is that suite."""
    files = files if files is not None else DataFiles()
    suites = []
    for suite_name in sorted({suite for source in sources for suite in source.suites}):
        scored = [(source, *source.suites[suite_name]) for source in sources if suite_name in source.suites]
        first = scored[0][1]
        suite, suite_file, notes = _scored_suite(suite_name, scored, files)
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
                    item["item_number"], {"item_number": item["item_number"], "regions": {}, "runs": {}}
                )
                entry["runs"][source.name] = {
                    "results": item["results"],
                    "region_surprisals_bits": _surprisals(item.get("region_surprisals_bits")),
                }
        n_regions = max(
            (len(values) for item in items.values() for run in item["runs"].values()
             for values in (run["region_surprisals_bits"] or {}).values()),
            default=0,
        )  # fmt: skip
        suites.append(
            {
                "suite": suite_name,
                "suite_file": None if suite_file is None else str(suite_file),
                "predictions": first["result"].get("predictions", []),
                "region_names": list(suite.region_names) if suite is not None else [None] * n_regions,
                "conditions": list(suite.condition_names) if suite is not None else _conditions(items),
                "notes": notes,
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
    from syntaxlm.data.sentences import read_sentences

    if not path.is_file():
        raise InputFormatError(
            "no such file",
            path=path,
            expected="sentences, one per line, or a treebank (PTB brackets, CoNLL-U)",
        )
    if (treebank := read_if_treebank(path)) is not None:
        return treebank_sentences(treebank, limit)
    words = read_sentences(path)[:limit]
    return words, [None] * len(words)


def read_if_treebank(path: Path) -> list | None:
    """The trees of a file that is a treebank (CoNLL-U by its name, PTB brackets by its first
    character), read by ``read_treebank``; ``None`` for any other file."""
    from syntaxlm.data.sentences import is_treebank
    from syntaxlm.data.treebank import read_treebank
    from syntaxlm.trees.dependency import is_conllu

    return read_treebank(path) if is_conllu(path) or is_treebank(path) else None


def treebank_sentences(trees: Sequence[Any], limit: int | None) -> tuple[list[list[str]], list[Any | None]]:
    """The words and the trees (``None`` for dependency trees) of the first ``limit`` trees."""
    trees = trees[:limit]
    words = [list(tree.leaves()) if hasattr(tree, "leaves") else list(tree.words) for tree in trees]
    return words, [tree if hasattr(tree, "leaves") else None for tree in trees]


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


MAX_NAMED_BYTES = 2**30  # a data file a run names: larger than any treebank or suite it would name


def _missing(path: Path) -> str | None:
    """Why a file a run names is not read (not there, not a regular file, larger than
    ``MAX_NAMED_BYTES``), or ``None``."""
    if not path.exists():
        if path.is_absolute():
            return "not there"
        return "not there (looked for from the working directory and each folder above the file naming it)"
    if not path.is_file():
        return f"{_not_regular(path) or 'a folder'}, not a regular file"
    if path.stat().st_size > MAX_NAMED_BYTES:
        return f"larger than {MAX_NAMED_BYTES:,} bytes"
    return None


def _begins_like_treebank(path: Path) -> bool:
    """Whether a file may be a treebank, from no more than its first 64 Ki characters: CoNLL-U by
    its name, else PTB brackets (its first non-blank character is "(")."""
    from syntaxlm.files import open_text
    from syntaxlm.trees.dependency import is_conllu

    if is_conllu(path):
        return True
    try:
        with open_text(path) as handle:
            return handle.read(2**16).lstrip().startswith("(")
    except (OSError, ValueError, EOFError, zlib.error):  # unreadable, not UTF-8, a damaged .gz
        return False


def run_test_data(
    named: NamedFile, sources: Sequence[Source], limit: int | None, files: DataFiles
) -> tuple[Path, list[list[str]], list[Any | None]] | None:
    """The test sentences (and trees) of a file a run names, read only when it is demonstrably
    data: a file inside a run folder given (links resolved), or a treebank the treebank reader
    reads (CoNLL-U, or PTB brackets: what ``train``, ``eval`` and the quickstart name); else
    ``None``, and ``files`` says why it was refused. Any other file a result file names (one
    crafted to name ``/etc/passwd``) is never read into the page."""
    path, what = named.path, named.description()
    if (why := _missing(path)) is not None:
        files.refuse(path, what, why)
        return None
    resolved = path.resolve()
    folder = next(
        (s.path for s in sources if s.path.is_dir() and resolved.is_relative_to(s.path.resolve())), None
    )
    if folder is not None:
        words, trees = read_view_sentences(path, limit)
        files.embed(path, what, f"inside the run folder {folder}")
        return path, words, trees
    try:
        treebank = read_if_treebank(path) if _begins_like_treebank(path) else None
    except SyntaxlmError:
        treebank = None
    if treebank is None:
        files.refuse(
            path,
            what,
            "not inside a run folder given (links resolved) and not a treebank (PTB brackets, CoNLL-U) the "
            "treebank reader reads; give it with --sentences or --test to show it",
        )
        return None
    files.embed(path, what, "a treebank, read by the treebank reader")
    return (path, *treebank_sentences(treebank, limit))


def sentences_data(
    sources: Sequence[Source],
    *,
    sentences_file: Path | None,
    test_data: Path | None,
    limit: int | None,
    beam,
    echo: Callable[[str], None],
    on_estimate: Callable[[str, list[list[str]]], Callable | None] | None = None,
    files: DataFiles | None = None,
) -> dict[str, Any]:
    """The sentence view's data: the sentences, their gold trees and each saved model's numbers.
    The sentences are those of ``sentences_file`` or ``test_data`` when given, else those of the
    test data the runs name where that is the runs' own (``run_test_data``); ``files`` says which
    file was read and which were refused."""
    from syntaxlm.models import load_model

    files = files if files is not None else DataFiles(echo)
    data: dict[str, Any] = {"source": None, "sentences": [], "gold": [], "models": {}, "notes": []}
    given = sentences_file or test_data
    if given is not None:
        words, trees = read_view_sentences(given, limit)
        asked = "--sentences" if sentences_file is not None else "--test"
        files.embed(given, f"the sentences asked for ({asked})", "named by the user")
        path = given
    else:
        named = {s.test_data.path: s.test_data for s in sources if s.test_data is not None}
        found = None
        for candidate in named.values():
            if (found := run_test_data(candidate, sources, limit, files)) is not None:
                break
        if found is None:
            why = "the runs name no test data" if not named else "the test data the runs name was refused"
            data["notes"].append(f"no sentences: {why}; build the page with --sentences FILE or --test FILE")
            return data
        path, words, trees = found
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
    100/10/5); ``models=False``: result files only, no sentence view; ``echo``: told each data
    file read into the page and each refused (``data_files``), and what is being scored."""
    from syntaxlm.inference.beam import PAPER_BEAM

    files = DataFiles(echo)
    sources = read_sources(paths, files)
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
                "path": source.given(),
                "model": source.run.model,
                "seed": source.run.seed,
                "saved_model": None if source.model_folder is None else str(source.model_folder),
            }
            for source in sources
        ],
        "tables": comparison_tables(sources),
        "syntaxgym": syntaxgym_data(sources, files),
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
            files=files,
        )
    else:
        document["sentence_view"] = {
            "source": None, "sentences": [], "gold": [], "models": {},
            "notes": ["built from result files only: no sentence view"],
        }  # fmt: skip
    document["data_files"] = files.document()
    return document
