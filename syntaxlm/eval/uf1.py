"""Unsupervised parsing F1 (UF1): induced trees against gold trees, as PRPN §6.3 scores them.

The conventions are those of the authors' script (PRPN / ON-LSTM ``test_phrase_grammar.py`` and
``data_ptb.py``) and, for the corpus-level number, of URNNG's ``get_stats``/``get_f1`` (Kim et al.
2019); ``shared/golden/uf1_f1.json`` holds their outputs and the tests match it case by case.

- **Words.** A gold leaf is scored iff its POS tag is one of ON-LSTM's ``word_tags``
  (``WORD_TAGS``): punctuation, ``$``, ``#`` and ``-NONE-`` elements go. Scored words are
  lowercased and every run of digits becomes ``N`` (``"3.5"`` → ``"N.N"``).
- **Gold tree.** The gold tree over the scored words only, nodes left empty removed and unary
  chains collapsed (their ``tree2list``; here ``word_tree``).
- **Spans.** Half-open ``[i, j)`` word ranges of the constituents, without single words and
  without the whole sentence (``nontrivial_spans``); a set, so a unary chain counts once.
- **Sentence level.** ``P = |pred ∩ gold| / (|pred| + 1e-8)``, ``R = |pred ∩ gold| / (|gold| +
  1e-8)``; a sentence whose gold tree has no span gets ``R = 1``, and also ``P = 1`` when the
  prediction has none either; ``F1 = 2PR / (P + R + 1e-8)``. The reported number is the mean
  over sentences (so identical trees score ``1 − O(1e-8)``, and sentences of one or two words
  score ``F1 ≈ 1``).
- **Corpus level.** URNNG: ``tp, fp, fn`` summed over sentences, ``P = tp/(tp+fp)``, ``R =
  tp/(tp+fn)``, ``F1 = 200PR/(P+R)`` in percent (0 when ``P + R = 0``). It is undefined when the
  corpus has no predicted or no gold span; the result then holds ``None`` and the reason.
- **WSJ10.** ``max_words=10`` keeps the sentences of at most ten scored words (PRPN §6.3).

The two levels differ: the paper's baselines (RBRANCH 61.7, upper bound 88.1) are corpus-level
numbers, while the authors' script averages sentences, which on WSJ10 gives other values for the
same trees (REFERENCE_NOTES: 56.7 / 84.1). Every result therefore carries both, for the model and
for the baselines computed on the same sentences: LBRANCH, RBRANCH, RANDOM (top-down binary trees
whose split points are drawn uniformly, seeded) and UPPER (the gold tree binarised, the best any
binary tree can do).

Predictions are binary or n-ary trees over the scored words, or PRPN syntactic distances (one per
scored word, the sentence-boundary positions already removed) read into trees by PRPN's parser
(``syntaxlm.structure.distances``).
"""

from __future__ import annotations

import contextlib
import re
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from syntaxlm.errors import InputFormatError, SentenceError, TreeError, TreeFormatError
from syntaxlm.files import parse_json, read_lines
from syntaxlm.structure.distances import check_distances, nontrivial_spans, tree_from_distances
from syntaxlm.trees.binarize import binarize
from syntaxlm.trees.clean import Cleaning
from syntaxlm.trees.tree import Tree

Span = tuple[int, int]

# fmt: off
WORD_TAGS = frozenset({
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP", "NNPS", "PDT",
    "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ",
    "WDT", "WP", "WP$", "WRB",
})
# fmt: on
"""POS tags of the words UF1 scores (ON-LSTM ``data_ptb.word_tags``); every other leaf is dropped."""

BASELINES = ("LBRANCH", "RBRANCH", "RANDOM", "UPPER")
_ONE_LIST = "one JSON list of numbers (a sentence's distances) per line"
_EPSILON = 1e-8  # the authors' script adds it to every denominator


class UF1InputError(SentenceError):
    """Gold trees and predictions that cannot be scored together; names the sentence (0-based)."""


def normalise_word(word: str) -> str:
    """The authors' word form: lowercased, each run of digits replaced by ``N``."""
    return re.sub("[0-9]+", "N", word.lower())


def word_tree(gold: Tree, *, sentence: int | None = None) -> Tree | None:
    """The gold tree over its scored words (the authors' ``tree2list``), or None if it has none.

    Leaves whose POS tag is not in ``WORD_TAGS`` are removed with the nodes they empty, POS tags
    are dropped, unary chains are merged (labels joined with ``+``) and words normalised. The
    spans are those of ``tree2list``; unlike it, labels are kept for display.
    """
    try:
        dropped_tags = frozenset(tag for tag in gold.pos_tags() if tag not in WORD_TAGS)
        # Cleaning's punctuation step deletes the preterminals of any given tag set.
        cleaning = Cleaning(
            remove_punctuation=True,
            punctuation_tags=dropped_tags,
            collapse_unary_chains=True,
            drop_pos_tags=True,
        )
        cleaned = cleaning(gold)
    except TreeError as error:
        raise UF1InputError(f"gold tree without POS tags: {error}", sentence=sentence) from None
    if cleaned is None:
        return None
    if isinstance(cleaned, str):  # the whole gold tree was one preterminal
        cleaned = Tree(gold.label, (cleaned,))
    return cleaned.with_leaves([normalise_word(word) for word in cleaned.leaves()])


def sentence_scores(pred_spans: Iterable[Span], gold_spans: Iterable[Span]) -> tuple[float, float, float]:
    """(precision, recall, F1) of one sentence as fractions, by the authors' script (module docstring)."""
    pred, gold = set(pred_spans), set(gold_spans)
    overlap = len(pred & gold)
    precision = overlap / (len(pred) + _EPSILON)
    recall = overlap / (len(gold) + _EPSILON)
    if not gold:
        recall = 1.0
        if not pred:
            precision = 1.0
    return precision, recall, 2 * precision * recall / (precision + recall + _EPSILON)


def span_counts(pred_spans: Iterable[Span], gold_spans: Iterable[Span]) -> tuple[int, int, int]:
    """URNNG's ``get_stats``: (true positives, false positives, false negatives)."""
    pred, gold = set(pred_spans), set(gold_spans)
    return len(pred & gold), len(pred - gold), len(gold - pred)


def corpus_f1_percent(tp: int, fp: int, fn: int) -> float:
    """URNNG's ``get_f1`` on summed counts, in percent. Raises ``ZeroDivisionError`` when there is
    no predicted span (``tp + fp = 0``) or no gold span (``tp + fn = 0``), as URNNG does."""
    precision = tp / (tp + fp)
    recall = tp / (tp + fn)
    return 2 * precision * recall / (precision + recall) * 100 if precision + recall > 0 else 0.0


@dataclass(frozen=True)
class UF1Sentence:
    """One scored sentence: spans as sorted ``[start, end)`` pairs, P/R/F1 as fractions."""

    index: int  # position among the gold trees given
    words: list[str]
    gold_spans: list[Span]
    pred_spans: list[Span]
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int


def _score_sentence(index: int, words: list[str], gold: list[Span], pred: list[Span]) -> UF1Sentence:
    precision, recall, f1 = sentence_scores(pred, gold)
    return UF1Sentence(index, words, gold, pred, precision, recall, f1, *span_counts(pred, gold))


@dataclass(frozen=True)
class UF1Summary:
    """One system on one set of sentences: sentence-level means (fractions) beside URNNG's
    corpus-level F1 (percent, None with the reason when undefined)."""

    name: str
    n_sentences: int
    mean_sentence_f1: float
    mean_sentence_precision: float
    mean_sentence_recall: float
    tp: int
    fp: int
    fn: int
    corpus_f1_percent: float | None
    corpus_f1_error: str | None

    @classmethod
    def of(cls, name: str, sentences: Sequence[UF1Sentence]) -> UF1Summary:
        """Summarise scored sentences (at least one)."""
        if not sentences:
            raise UF1InputError(f"{name}: no sentence to summarise")
        n = len(sentences)
        tp, fp, fn = (sum(getattr(s, field) for s in sentences) for field in ("tp", "fp", "fn"))
        try:
            corpus_f1, error = corpus_f1_percent(tp, fp, fn), None
        except ZeroDivisionError:
            missing = "predicted" if tp + fp == 0 else "gold"
            corpus_f1, error = None, f"undefined: no {missing} span in the corpus (URNNG divides by zero)"
        return cls(
            name=name,
            n_sentences=n,
            mean_sentence_f1=sum(s.f1 for s in sentences) / n,
            mean_sentence_precision=sum(s.precision for s in sentences) / n,
            mean_sentence_recall=sum(s.recall for s in sentences) / n,
            tp=tp,
            fp=fp,
            fn=fn,
            corpus_f1_percent=corpus_f1,
            corpus_f1_error=error,
        )


@dataclass(frozen=True)
class UF1Result:
    """Per-sentence scores of the prediction, and summaries of it and of the baselines."""

    sentences: list[UF1Sentence]
    model: UF1Summary
    baselines: dict[str, UF1Summary]
    prediction: str  # "trees" or "distances"
    max_words: int | None
    random_seed: int
    n_gold_trees: int
    n_too_long: int  # sentences left out by max_words
    n_without_words: int  # gold trees with no scored word (only punctuation or empty elements)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; spans become ``[start, end]`` lists."""
        return {
            "prediction": self.prediction,
            "max_words": self.max_words,
            "random_seed": self.random_seed,
            "n_gold_trees": self.n_gold_trees,
            "n_scored": len(self.sentences),
            "n_too_long": self.n_too_long,
            "n_without_words": self.n_without_words,
            "conventions": {
                "sentence": "mean over sentences of the PRPN/ON-LSTM script's P, R, F1 (fractions)",
                "corpus": "URNNG get_f1 on summed tp/fp/fn (percent)",
            },
            "model": asdict(self.model),
            "baselines": {name: asdict(summary) for name, summary in self.baselines.items()},
            "sentences": [
                {
                    **asdict(s),
                    "gold_spans": [list(span) for span in s.gold_spans],
                    "pred_spans": [list(span) for span in s.pred_spans],
                }
                for s in self.sentences
            ],
        }

    def render(self, *, per_sentence: bool = False) -> str:
        """A plain-text table (all numbers in percent); ``per_sentence`` lists every sentence first."""
        lines = []
        if per_sentence:
            lines.append(f"{'sentence':>8}  {'words':>5}  {'F1':>6}  {'P':>6}  {'R':>6}  tp/fp/fn")
            for s in self.sentences:
                lines.append(
                    f"{s.index:>8}  {len(s.words):>5}  {100 * s.f1:6.2f}  {100 * s.precision:6.2f}  "
                    f"{100 * s.recall:6.2f}  {s.tp}/{s.fp}/{s.fn}"
                )
            lines.append("")
        limit = "all lengths" if self.max_words is None else f"at most {self.max_words} words"
        lines.append(
            f"UF1 of {self.prediction} on {len(self.sentences)} of {self.n_gold_trees} sentences ({limit}; "
            f"{self.n_too_long} longer, {self.n_without_words} without words left out)"
        )
        lines.append(
            f"{'system':<8}  {'sentence F1':>11}  {'P':>6}  {'R':>6}  {'corpus F1':>9}  {'tp':>7}  {'fp':>7}  {'fn':>7}"
        )
        for summary in [self.model, *self.baselines.values()]:
            corpus = "n/a" if summary.corpus_f1_percent is None else f"{summary.corpus_f1_percent:.2f}"
            lines.append(
                f"{summary.name:<8}  {100 * summary.mean_sentence_f1:11.2f}  "
                f"{100 * summary.mean_sentence_precision:6.2f}  {100 * summary.mean_sentence_recall:6.2f}  "
                f"{corpus:>9}  {summary.tp:>7}  {summary.fp:>7}  {summary.fn:>7}"
            )
        lines.append(f"RANDOM: uniform split points, seed {self.random_seed}; UPPER: binarised gold")
        return "\n".join(lines)


def left_branching_spans(n_words: int) -> list[Span]:
    """The spans of ``(((w0 w1) w2) ...)``."""
    return [(0, end) for end in range(2, n_words)]


def right_branching_spans(n_words: int) -> list[Span]:
    """The spans of ``(w0 (w1 (w2 ...)))``."""
    return [(start, n_words) for start in range(1, n_words - 1)]


def random_binary_spans(n_words: int, rng: np.random.Generator) -> list[Span]:
    """A random binary tree, top-down: each span splits at a point drawn uniformly among its
    ``width − 1`` gaps (Klein & Manning's RANDOM baseline)."""
    spans: list[Span] = []
    work = [(0, n_words)] if n_words > 2 else []
    while work:
        start, end = work.pop()
        split = int(rng.integers(start + 1, end))
        for part in ((start, split), (split, end)):
            if part[1] - part[0] > 1:
                spans.append(part)
                work.append(part)
    return sorted(spans)


def tree_from_nested(nested: Any, label: str = "X") -> Tree:
    """A ``Tree`` from the nested-list trees of the authors' scripts, e.g. ``[["the", "cat"], "sat"]``.

    Words are strings or numbers (word indices); anything else raises ``TreeError``."""

    def word(leaf: Any) -> str:
        if isinstance(leaf, bool) or not isinstance(leaf, str | int | float):
            raise TreeError(
                f"{reprlib.repr(leaf)} is not a word; expected strings (or numbers) in nested lists"
            )
        return str(leaf)

    if not isinstance(nested, list):
        return Tree(label, [word(nested)])
    built: dict[int, Tree] = {}
    stack = [(nested, False)]
    while stack:
        node, expanded = stack.pop()
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in node if isinstance(child, list))
            continue
        children = [built.pop(id(child)) if isinstance(child, list) else word(child) for child in node]
        built[id(node)] = Tree(label, children)
    return built[id(nested)]


def read_predicted_trees(path: str | Path) -> list[Tree | str]:
    """Predicted trees, one per line: PTB brackets with any labels, or a JSON nested list as the
    authors' scripts build them (``[["the", "cat"], "sat"]``; a one-word tree is the bare word,
    ``"word"``). Raises ``InputFormatError`` naming the line."""
    trees: list[Tree | str] = []
    with contextlib.closing(read_lines(path, InputFormatError)) as lines:
        for line, text in enumerate(lines, 1):
            text = text.strip()
            if not text or text.startswith("("):
                trees.append(text)
                continue
            nested = parse_json(
                text,
                InputFormatError,
                path=path,
                line=line,
                expected='a bracketed tree, a JSON nested list of words, or "word" (a one-word tree)',
            )
            try:
                trees.append(tree_from_nested(nested))
            except TreeError as error:
                raise InputFormatError(str(error), path=path, line=line) from None
    return trees


def _predicted_tree_spans(
    predicted: Tree | str, words: list[str], raw_words: list[str], index: int
) -> list[Span]:
    if isinstance(predicted, str):
        try:
            predicted = Tree.from_bracket(predicted)
        except TreeFormatError as error:
            where = "" if error.column is None else f" at column {error.column}"
            raise UF1InputError(f"predicted tree{where}: {error.problem}", sentence=index) from None
    leaves = predicted.leaves()
    if len(leaves) != len(words):
        raise UF1InputError(
            f"the predicted tree has {len(leaves)} words, the gold tree {len(words)} scored words "
            f"{' '.join(words)!r}; expected a tree over the gold words without punctuation",
            sentence=index,
        )
    for position, (leaf, word, raw) in enumerate(zip(leaves, words, raw_words)):
        if leaf != word and leaf != raw:
            raise UF1InputError(
                f"word {position} of the predicted tree is {leaf!r}; the gold word is {raw!r} ({word!r})",
                sentence=index,
            )
    return nontrivial_spans(predicted)


def read_distances(path: str | Path) -> list[list[float]]:
    """Distance vectors from a file holding one JSON list of numbers per line, line k for
    sentence k − 1 (so a blank line is an error). Raises ``InputFormatError`` naming the line."""
    vectors = []
    with contextlib.closing(read_lines(path, InputFormatError)) as lines:
        for line, text in enumerate(lines, 1):
            values = parse_json(text, InputFormatError, path=path, line=line, expected=_ONE_LIST)
            if not isinstance(values, list):
                raise InputFormatError(
                    f"a JSON {type(values).__name__}", path=path, line=line, expected=_ONE_LIST
                )
            vector = []
            for position, value in enumerate(values):
                if type(value) not in (int, float):
                    raise InputFormatError(
                        f"entry {position} is {reprlib.repr(value)}", path=path, line=line, expected="numbers"
                    )
                try:
                    vector.append(float(value))
                except OverflowError:
                    raise InputFormatError(
                        f"entry {position} is an integer of {len(str(abs(value)))} digits, too large "
                        "for a float",
                        path=path,
                        line=line,
                        expected="numbers",
                    ) from None
            vectors.append(vector)
    return vectors


def evaluate_uf1(
    gold_trees: Iterable[Tree],
    *,
    predicted: Iterable[Tree | str] | None = None,
    distances: Iterable[Sequence[float]] | None = None,
    max_words: int | None = None,
    random_seed: int = 0,
) -> UF1Result:
    """Score predictions against gold PTB trees (with POS tags), one prediction per gold tree.

    Give exactly one of ``predicted`` (trees, or bracket strings with any labels, over each
    sentence's scored words: exactly the normalised words, or the original ones) and
    ``distances`` (one value per scored word). ``max_words=10`` gives WSJ10. Gold trees without
    any scored word are left out together with their prediction.
    """
    if (predicted is None) == (distances is None):
        raise UF1InputError("give exactly one of predicted trees or distances")
    golds = list(gold_trees)
    predictions = list(predicted) if predicted is not None else list(distances)
    if len(predictions) != len(golds):
        kind = "predicted trees" if predicted is not None else "distance vectors"
        raise UF1InputError(f"{len(golds)} gold trees but {len(predictions)} {kind}; expected one per tree")
    rng = np.random.default_rng(random_seed)
    scored: list[UF1Sentence] = []
    baseline_scores: dict[str, list[UF1Sentence]] = {name: [] for name in BASELINES}
    n_too_long = n_without_words = 0
    for index, (gold, prediction) in enumerate(zip(golds, predictions)):
        tree = word_tree(gold, sentence=index)
        if tree is None:
            n_without_words += 1
            continue
        words = tree.leaves()
        n = len(words)
        if max_words is not None and n > max_words:
            n_too_long += 1
            continue
        gold_spans = nontrivial_spans(tree)
        if predicted is not None:
            raw_words = [word for word, tag in gold.pos() if tag in WORD_TAGS]
            pred_spans = _predicted_tree_spans(prediction, words, raw_words, index)
        else:
            values = check_distances(prediction, n, sentence=index)
            pred_spans = nontrivial_spans(tree_from_distances(values, sentence=index))
        scored.append(_score_sentence(index, words, gold_spans, pred_spans))
        for name, spans in (
            ("LBRANCH", left_branching_spans(n)),
            ("RBRANCH", right_branching_spans(n)),
            ("RANDOM", random_binary_spans(n, rng)),
            ("UPPER", nontrivial_spans(binarize(tree))),
        ):
            baseline_scores[name].append(_score_sentence(index, words, gold_spans, spans))
    if not scored:
        raise UF1InputError(
            f"no sentence to score among {len(golds)} gold trees "
            f"({n_too_long} longer than {max_words} words, {n_without_words} without words)"
        )
    return UF1Result(
        sentences=scored,
        model=UF1Summary.of("model", scored),
        baselines={name: UF1Summary.of(name, scores) for name, scores in baseline_scores.items()},
        prediction="trees" if predicted is not None else "distances",
        max_words=max_words,
        random_seed=random_seed,
        n_gold_trees=len(golds),
        n_too_long=n_too_long,
        n_without_words=n_without_words,
    )
