"""How each number of a result file was obtained, and whether two numbers were obtained alike.

A number is comparable with another only when both were measured the same way on the same data.
``evaluation(record)`` reads that from a result file (``syntaxlm.results``): the method
(``exact`` for a words-only model; for a joint model ``gold`` along one tree, ``proposals`` over
proposal trees or ``beam`` search), what the number is relative to the model's true value (its
bound: ``p(x, y_gold)`` and a beam's or proposals' sum over some trees are lower bounds on
``p(x)``, so their perplexities are upper bounds on the model's; exact is exact), the beam sizes,
the subset evaluated (sentences, BLiMP-10% and paradigms, SyntaxGym suites and items) and the
data's identity (its sha256). ``differences`` says what differs between the evaluations of
several models, and ``ranked_together`` is the one rule for when their numbers may be ranked: when
nothing differs, or, for accuracies (SyntaxGym, BLiMP), when words-only models' exact surprisals
stand against joint models' estimates from one and the same beam, the papers' own comparison (a
joint model has no exact p(x)). A perplexity's upper bound is never ranked against another number.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

NOT_RECORDED = "not recorded"
NO_BEAM = "none"

PERPLEXITY_BOUNDS = {
    "exact": "exact",
    "gold": "upper bound (one tree: p(x, y) ≤ p(x))",
    "proposals": "upper bound (proposal trees: a sum over some trees ≤ p(x))",
    "document-proposals": "upper bound (proposal trees, earlier sentences' best trees)",
    "beam": "upper bound (beam: a sum over the beam's trees ≤ p(x))",
    "importance-sampling": "estimate (importance sampling over a parser's samples: consistent)",
}
ACCURACY_BOUNDS = {"exact": "exact", "beam": "approximate (beam estimates of log p)"}


@dataclass(frozen=True)
class Evaluation:
    """How a number was obtained. Two numbers are comparable only when all fields are equal."""

    method: str
    bound: str
    beam: str
    subset: str
    data: str  # the data's identity: sha256 (short) where recorded, else its path

    def cells(self) -> list[str]:
        """The report's columns: method, bound, beam, subset."""
        return [self.method, self.bound, self.beam, self.subset]


COLUMNS = ("method", "bound", "beam (action/word/fast-track)", "subset")


def differences(evaluations: Mapping[str, Evaluation]) -> list[str]:
    """What differs between the evaluations of several rows (``label -> Evaluation``), one line
    per field: ``"method: tg gold; txl exact"`` (the data only where the subsets look alike).
    Empty when all were evaluated alike."""
    lines = []
    for spec in fields(Evaluation):
        values = {label: getattr(e, spec.name) for label, e in evaluations.items()}
        if spec.name == "data" and lines and lines[-1].startswith("subset"):
            continue
        if len(set(values.values())) > 1:
            lines.append(f"{spec.name}: " + "; ".join(f"{k} {v}" for k, v in values.items()))
    return lines


def scorings_ranked_together(scorings: Mapping[str, str]) -> bool:
    """Whether accuracies scored as ``scorings`` (``label -> "exact"`` or ``"beam 100/10/5"``) may
    be ranked: every estimate made alike, exact scores beside them (the papers' comparison)."""
    if any(NOT_RECORDED in scoring for scoring in scorings.values()):
        return False
    return len({scoring for scoring in scorings.values() if scoring != "exact"}) <= 1


def ranked_together(evaluations: Mapping[str, Evaluation]) -> bool:
    """The one rule for ranking rows (``label -> Evaluation``): all evaluated alike, or accuracies
    evaluated alike but for exact surprisals beside one beam's estimates (``scorings_ranked_together``)."""
    if any(NOT_RECORDED in e.cells() for e in evaluations.values()):
        return False
    differ = {line.split(":", 1)[0] for line in differences(evaluations)}
    if not differ:
        return True
    accuracies = all(
        e.method in ACCURACY_BOUNDS and e.bound == ACCURACY_BOUNDS[e.method] for e in evaluations.values()
    )
    scorings = {
        label: e.method if e.beam == NO_BEAM else f"{e.method} {e.beam}" for label, e in evaluations.items()
    }
    return accuracies and differ <= {"method", "bound", "beam"} and scorings_ranked_together(scorings)


def is_result_file(path: Path) -> bool:
    """Result files are recognised by their fields; other JSON files in a run folder are left alone,
    and so is anything but a regular file (a FIFO named ``*.json`` would block a reader forever:
    it is opened without waiting, and looked at only when it is a regular file)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return False
        # The first 4096 characters (a character cut at the end of the bytes read is left out).
        head = codecs.getincrementaldecoder("utf-8")().decode(os.read(descriptor, 4 * 4096))[:4096]
    except (OSError, UnicodeDecodeError):
        return False
    finally:
        os.close(descriptor)
    return '"kind"' in head or '"provenance"' in head


def beam_text(settings: Mapping[str, Any]) -> str:
    """``"100/10/5"`` (action/word/fast-track) from settings holding the beam's sizes, else ``"none"``."""
    if settings.get("action_beam") is None:
        return NO_BEAM
    return f"{settings['action_beam']}/{settings['word_beam']}/{settings.get('fast_track', '?')}"


def _input(record: Mapping[str, Any], role: str) -> tuple[str, str]:
    """The file name of an input and its identity (short sha256, else its path); blank when absent."""
    given = (record.get("inputs") or {}).get(role)
    if not given:
        return "", ""
    path = str(given.get("path", ""))
    sha = given.get("sha256")
    return Path(path).name or path, f"sha256 {sha[:12]}" if sha else path


def evaluation(record: Mapping[str, Any]) -> Evaluation | None:
    """How the numbers of one result record were obtained; ``None`` for kinds the report does not
    read. SyntaxGym suites are read one by one here and joined by ``suites_evaluation``."""
    kind, result = record["kind"], record["result"]
    options = record.get("options") or {}
    reader = {
        "perplexity": _perplexity,
        "syntaxgym": _suite,
        "blimp": _blimp,
        "parseval": _parseval,
        "uf1": _uf1,
        "generation": _generation,
    }.get(kind)
    return None if reader is None else reader(record, result, options)


def _perplexity(record, result, options) -> Evaluation:
    marginalisation = result.get("marginalisation") or {}
    method = marginalisation.get("method") or options.get("method")
    if method is None:
        method_text, bound = NOT_RECORDED, NOT_RECORDED
    else:
        bound = PERPLEXITY_BOUNDS.get(method, marginalisation.get("perplexity", NOT_RECORDED))
        method_text = method
        if marginalisation.get("renormalised") is False:
            method_text += ", not renormalised"
        if marginalisation.get("segment_length") is not None:
            method_text += (
                f", in {marginalisation['segment_length']}-token segments + "
                f"{marginalisation['memory_length']} memory"
            )
    if result.get("warnings"):
        bound = f"unreliable {bound} (below the table)"
    name, identity = _input(record, "data")
    n_sentences, n_words = result.get("n_sentences"), result.get("n_words")
    subset = f"{n_sentences} sentences, {n_words} words" if n_sentences is not None else NOT_RECORDED
    if options.get("limit") is not None and options.get("sentences_in_data") is not None:
        subset += f" (the first {options['limit']} of {options['sentences_in_data']})"
    if name:
        subset += f" of {name}"
    if options.get("skipped_too_long"):
        subset += f" ({len(options['skipped_too_long'])} too long, skipped)"
    return Evaluation(method_text, bound, beam_text(marginalisation or options), subset, identity)


def suite_method(record: Mapping[str, Any]) -> tuple[str, str]:
    """A SyntaxGym result's method and beam: ``("beam", "100/10/5")``, ``("exact", "none")``."""
    result, options = record["result"], record.get("options") or {}
    method = result.get("method") or options.get("method")
    if method is None:
        method = "given region values" if "region_values" in (record.get("inputs") or {}) else NOT_RECORDED
    settings = result if "action_beam" in result else options
    return method, beam_text(settings)


def suite_scoring(record: Mapping[str, Any]) -> str:
    """A SyntaxGym result's method with its beam, in one phrase: ``"beam 100/10/5"``, ``"exact"``."""
    method, beam = suite_method(record)
    return method if beam == NO_BEAM else f"{method} {beam}"


def _suite(record, result, options) -> Evaluation:
    return suites_evaluation({result["suite"]: record})


def suites_evaluation(records: Mapping[str, Mapping[str, Any]]) -> Evaluation:
    """How a run's SyntaxGym numbers (means over its suites) were obtained, from its suites'
    result records (``suite -> record``)."""
    methods = sorted({suite_method(record)[0] for record in records.values()})
    beams = sorted({suite_method(record)[1] for record in records.values()})
    method = methods[0] if len(methods) == 1 else "mixed: " + ", ".join(methods)
    bound = ACCURACY_BOUNDS.get(method, "as given" if method == "given region values" else NOT_RECORDED)
    items = {suite: record["result"].get("n_items") for suite, record in records.items()}
    count = "items not recorded" if None in items.values() else f"{sum(items.values())} items"
    suites = f"{len(records)} suite{'s' if len(records) > 1 else ''}"
    subset = f"{suites}, {count}"
    if len(records) <= 4:
        subset = f"{suites} ({', '.join(sorted(records))}), {count}"
    data = "suites " + ", ".join(f"{suite} ({n} items)" for suite, n in sorted(items.items()))
    return Evaluation(method, bound, " or ".join(beams), subset, data)


SURPRISAL_BOUNDS = {
    "exact": "exact surprisal",
    "beam": "approximate (beam estimates of surprisal)",
    "gold": "surprisal along the gold trees (p(x, y) terms)",
}


def reading_times_evaluation(record: Mapping[str, Any], entry: Mapping[str, Any]) -> Evaluation:
    """How one model's ΔLL of an ``eval rt`` result was obtained: its surprisals' method, context
    and beam, and the tokens, exclusions and cross-validation of the regression."""
    result = record["result"]
    method = entry.get("method") or NOT_RECORDED
    if entry.get("context") is not None:
        method += f", {entry['context']} context"
    stories = result.get("stories") or []
    name, identity = _input(record, "rts")
    subset = f"{result['kept']} of {result['n_tokens']} tokens of {result['corpus']}"
    subset += f" ({name})" if name else ""
    low, high = (result.get("rt_range_ms") or [None, None])[:2]
    if isinstance(low, int | float) and isinstance(high, int | float):
        subset += (
            f", {len(stories)} stories; spill-over {result.get('spillover', '?')}, RT {low:g}-{high:g} ms, "
            f"unknown words {result.get('unknown_words', '?')}, {result.get('folds', '?')}-fold CV"
        )
    bound = SURPRISAL_BOUNDS.get(entry.get("method"), NOT_RECORDED)
    return Evaluation(method, bound, beam_text(entry), subset, identity)


def _blimp(record, result, options) -> Evaluation:
    inputs = record.get("inputs") or {}
    method = options.get("method") or ("given log-probs" if "logprobs" in inputs else NOT_RECORDED)
    bound = ACCURACY_BOUNDS.get(method, "as given" if method == "given log-probs" else NOT_RECORDED)
    parts = []
    if options.get("ten_percent"):
        parts.append("BLiMP-10% (first 100 pairs per paradigm)")
    if options.get("max_pairs") is not None:
        parts.append(f"first {options['max_pairs']} pairs per paradigm")
    paradigms = options.get("paradigms")
    if paradigms is None:
        parts.append(f"{result.get('n_paradigms')} paradigms (which: {NOT_RECORDED})")
    elif paradigms == "all":
        parts.append(f"all {result.get('n_paradigms')} paradigms")
    else:
        parts.append(f"{len(paradigms)} paradigms: {', '.join(paradigms)}")
    parts.append(f"{result.get('n_pairs')} pairs")
    if options.get("limit") is not None and options.get("pairs_selected") is not None:
        parts[-1] += f" (the first {options['limit']} of {options['pairs_selected']} selected)"
    _, identity = _input(record, "data")
    return Evaluation(method, bound, beam_text(options), "; ".join(parts), identity)


def _parseval(record, result, options) -> Evaluation:
    method = options.get("parses")
    if method is None:
        name, _ = _input(record, "pred")
        method = f"given trees ({name})" if name else NOT_RECORDED
    if options.get("unlabeled"):
        method += ", unlabelled"
    name, identity = _input(record, "gold")
    subset = f"{result['summary']['all'].get('sentences')} sentences" + (f" of {name}" if name else "")
    return Evaluation(method, "not a probability", beam_text(options), subset, identity)


def _uf1(record, result, options) -> Evaluation:
    inputs = record.get("inputs") or {}
    if "distances" in inputs:
        method = "given distances"
    elif "pred" in inputs:
        method = "given trees"
    else:
        method = "the model's induced trees"
    name, identity = _input(record, "gold")
    subset = f"{result.get('n_scored')} sentences" + (f" of {name}" if name else "")
    if result.get("max_words") is not None:
        subset += f" of at most {result['max_words']} words"
    return Evaluation(method, "not a probability", NO_BEAM, subset, identity)


def _generation(record, result, options) -> Evaluation:
    subset = f"{result.get('n_generated')} texts"
    if result.get("self_bleu_sample_size") is not None:
        subset += f"; Self-BLEU on a sample of {result['self_bleu_sample_size']} (seed {result.get('seed')})"
    _, identity = _input(record, "references")
    return Evaluation("sampled texts", "not a probability", NO_BEAM, subset, identity)
