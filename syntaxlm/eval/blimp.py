"""BLiMP (Warstadt et al. 2020): minimal pairs scored by full-sentence log-probabilities.

The data are 67 paradigm files ``<UID>.jsonl``, one minimal pair per line with the fields
``sentence_good``, ``sentence_bad``, ``UID``, ``pairID`` (a string "0".."999"),
``linguistics_term`` and ``field`` (others, such as the prefix-method fields, are ignored).

Scoring follows the paper's full-sentence method: a pair is correct iff ``log p(good) > log
p(bad)`` strictly (a tie is wrong). A paradigm's accuracy is the fraction of its pairs that are
correct; a phenomenon's is the mean of its paradigms'; the overall accuracy is the mean over the
paradigms (67 for the full set). The files carry thirteen ``linguistics_term`` values; the paper
reports twelve phenomena, with the two ``s-selection`` paradigms counted under argument structure
(``PHENOMENA``).

BLiMP-10% takes the first 100 pairs of each paradigm by ``pairID`` in *numeric* order. The README
defines pairID as the pair's index in the paradigm (0–999), and in every file the lines are in
that order, so this is the first 100 lines; ordering the strings instead would pick "0", "1",
"10", "100", "101", ... — not a prefix of the paradigm.

Log-probabilities come from a *sentence scorer*: any function from a batch of sentences (the
strings as they are in the files) to their total natural-log probabilities, so that any model
behind the SyntacticLM protocol, with its own tokenisation, can be scored without new code here.

With a *word reader* (a sentence → the words the model reads and, per word, whether its vocabulary
knows it), the result also counts per paradigm, per phenomenon and overall the words the model does
not know and the pairs whose two sentences differ in such a word (``UnknownWords``).
"""

from __future__ import annotations

import contextlib
import difflib
import math
import reprlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from syntaxlm.errors import InputFormatError, SyntaxlmError
from syntaxlm.files import parse_json, read_lines

SentenceScorer = Callable[[Sequence[str]], Sequence[float]]
"""Sentences → their natural-log probabilities (sums over every token of the sentence)."""

WordReader = Callable[[str], tuple[Sequence[str], Sequence[bool]]]
"""A sentence → the words a model reads in it and, per word, whether its vocabulary reads it as
unknown (an unknown-word class or ``<unk>``)."""

PHENOMENA: dict[str, str] = {
    "anaphor_agreement": "anaphor_agreement",
    "argument_structure": "argument_structure",
    "s-selection": "argument_structure",  # folded in, as the paper's 12-way grouping does
    "binding": "binding",
    "control_raising": "control_raising",
    "determiner_noun_agreement": "determiner_noun_agreement",
    "ellipsis": "ellipsis",
    "filler_gap_dependency": "filler_gap_dependency",
    "irregular_forms": "irregular_forms",
    "island_effects": "island_effects",
    "npi_licensing": "npi_licensing",
    "quantifiers": "quantifiers",
    "subject_verb_agreement": "subject_verb_agreement",
}
"""``linguistics_term`` (13 values in the files) → phenomenon (the paper's 12)."""

PAIRS_PER_PARADIGM_10_PERCENT = 100
_SUFFIXES = (".jsonl", ".jsonl.gz")


class BlimpFormatError(InputFormatError):
    """A BLiMP paradigm file line that is not a valid minimal pair; names file and line."""


@dataclass(frozen=True)
class MinimalPair:
    """One BLiMP item: an acceptable sentence and its unacceptable counterpart."""

    paradigm: str  # the UID, e.g. "adjunct_island"
    pair_id: int
    good: str
    bad: str
    linguistics_term: str
    field: str

    def __post_init__(self):
        if self.linguistics_term not in PHENOMENA:
            raise ValueError(
                f"{self.paradigm} pair {self.pair_id}: unknown linguistics_term {self.linguistics_term!r}"
            )

    @property
    def phenomenon(self) -> str:
        return PHENOMENA[self.linguistics_term]


def _paradigm_files(folder: Path, paradigms: Sequence[str] | None) -> list[Path]:
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a folder of BLiMP paradigm files (<UID>.jsonl)")
    found = {path.name.split(".")[0]: path for path in folder.iterdir() if path.name.endswith(_SUFFIXES)}
    if not found:
        raise FileNotFoundError(f"{folder}: no BLiMP paradigm files (<UID>.jsonl)")
    if paradigms is None:
        return [found[uid] for uid in sorted(found)]
    missing = [uid for uid in paradigms if uid not in found]
    if missing:
        named = ", ".join(_with_suggestion(uid, found) for uid in missing)
        known = f"the {len(found)} paradigms there: {', '.join(sorted(found))}"
        raise FileNotFoundError(f"{folder}: no paradigm file for {named}; {known}")
    return [found[uid] for uid in paradigms]


def _with_suggestion(uid: str, known: Iterable[str]) -> str:
    """``uid`` with the closest known name, if one is close: "x_islnd (did you mean x_island?)"."""
    closest = difflib.get_close_matches(uid, known, n=1)
    return f"{uid} (did you mean {closest[0]}?)" if closest else uid


def _pair_from_record(record: Any, path: Path, line: int) -> MinimalPair:
    def bad(problem: str, expected: str) -> BlimpFormatError:
        return BlimpFormatError(problem, path=path, line=line, expected=expected)

    if not isinstance(record, dict):
        raise bad(f"a JSON {type(record).__name__}", "one JSON object per line")
    for name in ("sentence_good", "sentence_bad", "UID", "linguistics_term", "field"):
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            raise bad(f"field {name!r} is {reprlib.repr(value)}", "a non-empty string")
    if record["linguistics_term"] not in PHENOMENA:
        raise bad(
            f"unknown linguistics_term {record['linguistics_term']!r}",
            "one of " + ", ".join(sorted(PHENOMENA)),
        )
    pair_id = record.get("pairID")
    if isinstance(pair_id, str) and pair_id.isascii() and pair_id.isdigit() and len(pair_id) <= 18:
        pair_id = int(pair_id)
    if type(pair_id) is not int or pair_id < 0:
        shown = reprlib.repr(record.get("pairID"))
        raise bad(f"pairID is {shown}", "a non-negative integer (as a string or a number)")
    return MinimalPair(
        paradigm=record["UID"],
        pair_id=pair_id,
        good=record["sentence_good"],
        bad=record["sentence_bad"],
        linguistics_term=record["linguistics_term"],
        field=record["field"],
    )


def read_paradigm(path: str | Path) -> list[MinimalPair]:
    """The pairs of one paradigm file, in file order. Raises ``BlimpFormatError`` (file:line) for
    bad JSON, missing or mistyped fields, a UID or linguistics_term that changes within the file,
    and repeated pairIDs."""
    path = Path(path)
    pairs: list[MinimalPair] = []
    seen: set[int] = set()
    with contextlib.closing(read_lines(path, BlimpFormatError)) as lines:
        for line, text in enumerate(lines, 1):
            if not text.strip():
                continue
            record = parse_json(text, BlimpFormatError, path=path, line=line, expected="a JSON object")
            pair = _pair_from_record(record, path, line)
            if pairs and (pair.paradigm, pair.linguistics_term) != (
                pairs[0].paradigm,
                pairs[0].linguistics_term,
            ):
                raise BlimpFormatError(
                    f"UID/linguistics_term {pair.paradigm}/{pair.linguistics_term} differs from line 1's "
                    f"{pairs[0].paradigm}/{pairs[0].linguistics_term}",
                    path=path,
                    line=line,
                    expected="one paradigm per file",
                )
            if pair.pair_id in seen:
                raise BlimpFormatError(
                    f"pairID {pair.pair_id} appears twice", path=path, line=line, expected="unique pairIDs"
                )
            seen.add(pair.pair_id)
            pairs.append(pair)
    if not pairs:
        raise BlimpFormatError("no minimal pairs", path=path, expected="one JSON object per line")
    return pairs


def read_blimp(folder: str | Path, *, paradigms: Sequence[str] | None = None) -> list[MinimalPair]:
    """The pairs of every paradigm file in ``folder`` (BLiMP's ``data/``), paradigms sorted by
    UID; ``paradigms`` reads only the named ones, in the order given."""
    pairs: list[MinimalPair] = []
    for path in _paradigm_files(Path(folder), paradigms):
        pairs.extend(read_paradigm(path))
    return pairs


_LOGPROB_RECORD = '{"UID": ..., "pairID": ..., "good": logprob, "bad": logprob}'


def read_blimp_logprobs(path: str | Path) -> dict[tuple[str, int], tuple[float, float]]:
    """Precomputed scores, one JSON object per line with UID, pairID and the good and bad
    sentences' log-probs, as ``{(UID, pairID): (good, bad)}``. Raises ``InputFormatError`` naming
    the file and line (the column too for broken JSON or bytes that are not UTF-8)."""
    scores: dict[tuple[str, int], tuple[float, float]] = {}
    with contextlib.closing(read_lines(path, InputFormatError)) as lines:
        for line, text in enumerate(lines, 1):
            record = parse_json(text, InputFormatError, path=path, line=line, expected=_LOGPROB_RECORD)
            key, logprobs = logprob_record(record, path=path, line=line)
            if key in scores:  # one of the two would be dropped silently
                problem = f"{reprlib.repr(key[0])} pair {key[1]} appears twice"
                raise InputFormatError(problem, path=path, line=line, expected="one line per pair")
            scores[key] = logprobs
    return scores


def logprob_record(
    record: Any, *, path: str | Path, line: int | None = None
) -> tuple[tuple[str, int], tuple[float, float]]:
    """``(UID, pairID), (good, bad)`` of one score record (``_LOGPROB_RECORD``); a record that is
    not one raises ``InputFormatError`` naming the file (and the line, where given)."""
    try:
        key = (_uid(record["UID"]), _pair_id(record["pairID"]))
        return key, (_logprob(record["good"]), _logprob(record["bad"]))
    except (KeyError, TypeError, ValueError) as error:
        problem = f"not a score record ({type(error).__name__}: {error})"
        raise InputFormatError(problem, path=path, line=line, expected=_LOGPROB_RECORD) from None


def read_pair_logprobs(path: str | Path, pairs: Sequence[MinimalPair]) -> list[tuple[float, float]]:
    """The precomputed ``(good, bad)`` log-probs of each pair, in the order of ``pairs``, from a
    score file (``read_blimp_logprobs``). Raises ``InputFormatError`` naming the file, the number
    of pairs it has no line for and the first of them; lines for other pairs are ignored."""
    scores = read_blimp_logprobs(path)
    missing = [pair for pair in pairs if (pair.paradigm, pair.pair_id) not in scores]
    if missing:
        first = missing[0]
        raise InputFormatError(
            f"{len(missing)} pairs have no score, the first {first.paradigm} pair {first.pair_id}",
            path=path,
        )
    return [scores[pair.paradigm, pair.pair_id] for pair in pairs]


def _uid(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"UID {reprlib.repr(value)} is not a string")
    return value


def _pair_id(value: Any) -> int:
    """A pairID as a number or a string of digits (bounded: int() refuses over 4,300 digits)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    if type(value) is not int:
        raise ValueError(f"pairID {reprlib.repr(value)} is not an integer")
    return value


def _logprob(value: Any) -> float:
    """A log-probability as a float: a JSON number or a numeric string (NaN and +inf are refused
    when scoring, with the pair)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"log-prob {reprlib.repr(value)} is not a number")
    try:
        return float(value)
    except OverflowError:  # an integer beyond a float's range
        raise ValueError(f"log-prob of {len(str(value))} digits is out of range") from None


def blimp_10_percent(pairs: Iterable[MinimalPair]) -> list[MinimalPair]:
    """BLiMP-10%: the first 100 pairs of each paradigm by numeric pairID (paradigm order kept)."""
    return first_pairs(pairs, PAIRS_PER_PARADIGM_10_PERCENT)


def first_pairs(pairs: Iterable[MinimalPair], n: int) -> list[MinimalPair]:
    """The first ``n`` pairs of each paradigm by numeric pairID (paradigm order kept)."""
    if n < 1:
        raise ValueError(f"the number of pairs per paradigm must be at least 1, got {n}")
    by_paradigm: dict[str, list[MinimalPair]] = {}
    for pair in pairs:
        by_paradigm.setdefault(pair.paradigm, []).append(pair)
    return [pair for group in by_paradigm.values() for pair in sorted(group, key=lambda p: p.pair_id)[:n]]


@dataclass(frozen=True)
class PairScore:
    paradigm: str
    pair_id: int
    logprob_good: float
    logprob_bad: float

    @property
    def correct(self) -> bool:
        return self.logprob_good > self.logprob_bad  # strict: a tie is wrong


@dataclass(frozen=True)
class ParadigmAccuracy:
    paradigm: str
    phenomenon: str
    linguistics_term: str
    field: str
    n_pairs: int
    n_correct: int

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n_pairs


@dataclass(frozen=True)
class UnknownWords:
    """Over some pairs: the words of both sentences as the model reads them (``n_words``), those
    its vocabulary does not know (``n_unknown_words``), and the pairs whose good and bad sentences
    differ in an unknown word (``pairs_differing_in_unknown_word``; ``differing_words``): the
    model compares the unknown-word classes there, not the words."""

    n_words: int = 0
    n_unknown_words: int = 0
    pairs_differing_in_unknown_word: int = 0

    @property
    def unknown_word_rate(self) -> float:
        return self.n_unknown_words / self.n_words if self.n_words else 0.0

    def __add__(self, other: UnknownWords) -> UnknownWords:
        return UnknownWords(
            self.n_words + other.n_words,
            self.n_unknown_words + other.n_unknown_words,
            self.pairs_differing_in_unknown_word + other.pairs_differing_in_unknown_word,
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "unknown_word_rate": self.unknown_word_rate}


UNKNOWN_WORDS_RULE = (
    "unknown words: words of both sentences that the model's vocabulary reads as an unknown-word class "
    "or <unk>, pooled over the pairs (phenomenon, overall: over their paradigms' words); "
    "pairs_differing_in_unknown_word: pairs whose sentences differ in an unknown word (the words outside "
    "the longest common blocks of the two word sequences)"
)


def differing_words(good: Sequence[str], bad: Sequence[str]) -> tuple[list[int], list[int]]:
    """The positions of the words in which two sentences differ, in each: the words outside the
    blocks they share (``difflib``'s alignment of the word sequences), so substituted, inserted,
    deleted and moved words."""
    in_good: list[int] = []
    in_bad: list[int] = []
    matcher = difflib.SequenceMatcher(None, list(good), list(bad), autojunk=False)
    for tag, good_start, good_end, bad_start, bad_end in matcher.get_opcodes():
        if tag != "equal":
            in_good += range(good_start, good_end)
            in_bad += range(bad_start, bad_end)
    return in_good, in_bad


def pair_unknown_words(pair: MinimalPair, read: WordReader) -> UnknownWords:
    """The unknown-word counts of one pair, its words as ``read`` gives them."""
    good, good_unknown = read(pair.good)
    bad, bad_unknown = read(pair.bad)
    for words, flags in ((good, good_unknown), (bad, bad_unknown)):
        if len(flags) != len(words):
            raise BlimpScoreError(
                f"{pair.paradigm} pair {pair.pair_id}: {len(flags)} unknown-word flags for {len(words)} words"
            )
    in_good, in_bad = differing_words(good, bad)
    differs = any(good_unknown[i] for i in in_good) or any(bad_unknown[i] for i in in_bad)
    n_unknown = sum(map(bool, good_unknown)) + sum(map(bool, bad_unknown))
    return UnknownWords(len(good) + len(bad), n_unknown, int(differs))


@dataclass(frozen=True)
class BlimpResult:
    """Accuracies (fractions) per paradigm, per phenomenon (mean of its paradigms) and overall
    (mean of the paradigms), with every pair's two log-probabilities; with a word reader, the
    unknown words of each paradigm (``unknown_words``: UID → counts), pooled per phenomenon and
    overall."""

    pairs: list[PairScore]
    paradigms: list[ParadigmAccuracy]
    unknown_words: dict[str, UnknownWords] | None = None

    @property
    def phenomena_unknown_words(self) -> dict[str, UnknownWords] | None:
        """Phenomenon → the unknown-word counts of its paradigms added up, in ``PHENOMENA`` order."""
        if self.unknown_words is None:
            return None
        grouped: dict[str, UnknownWords] = {}
        for paradigm in self.paradigms:
            counts = self.unknown_words[paradigm.paradigm]
            grouped[paradigm.phenomenon] = grouped.get(paradigm.phenomenon, UnknownWords()) + counts
        return {name: grouped[name] for name in self.phenomena}

    @property
    def overall_unknown_words(self) -> UnknownWords | None:
        if self.unknown_words is None:
            return None
        return sum((self.unknown_words[p.paradigm] for p in self.paradigms), UnknownWords())

    @property
    def phenomena(self) -> dict[str, float]:
        """Phenomenon → mean accuracy of its paradigms, in ``PHENOMENA`` order."""
        grouped: dict[str, list[float]] = {}
        for paradigm in self.paradigms:
            grouped.setdefault(paradigm.phenomenon, []).append(paradigm.accuracy)
        order = list(dict.fromkeys(PHENOMENA.values()))
        return {name: sum(grouped[name]) / len(grouped[name]) for name in order if name in grouped}

    @property
    def overall(self) -> float:
        return sum(p.accuracy for p in self.paradigms) / len(self.paradigms)

    def to_json(self) -> dict[str, Any]:
        unknown = self.unknown_words
        result = {
            "overall_accuracy": self.overall,
            "n_paradigms": len(self.paradigms),
            "n_pairs": len(self.pairs),
            "rule": "correct iff logprob(good) > logprob(bad); phenomenon and overall = mean of paradigms",
            "phenomena": self.phenomena,
            "paradigms": [
                {**asdict(p), "accuracy": p.accuracy, **(unknown[p.paradigm].to_json() if unknown else {})}
                for p in self.paradigms
            ],
            "pairs": [{**asdict(p), "correct": p.correct} for p in self.pairs],
        }
        overall, phenomena = self.overall_unknown_words, self.phenomena_unknown_words
        if overall is not None and phenomena is not None:
            result |= {
                **overall.to_json(),
                "phenomena_unknown_words": {name: counts.to_json() for name, counts in phenomena.items()},
                "unknown_words_rule": UNKNOWN_WORDS_RULE,
            }
        return result

    def render(self, *, per_paradigm: bool = False) -> str:
        """Accuracy (a fraction, as in the result file and the report) per phenomenon and overall,
        with the paradigms and pairs each counts; ``per_paradigm`` adds each paradigm. With
        unknown-word counts, each line has the share of words the model does not know beside its
        accuracy, and a last line the pairs that differ in such a word."""
        width = max(len(name) for name in [*self.phenomena, *(p.paradigm for p in self.paradigms), "overall"])
        by_paradigm = self.unknown_words or {}
        by_phenomenon = self.phenomena_unknown_words or {}
        overall = self.overall_unknown_words

        def row(name: str, members: list[ParadigmAccuracy], accuracy: float, unknown: UnknownWords | None) -> str:
            pairs = sum(p.n_pairs for p in members)
            line = f"{name:<{width}}  {len(members):>9}  {pairs:>6}  {accuracy:8.3f}"
            return line if unknown is None else line + f"  {100 * unknown.unknown_word_rate:12.2f}%"

        header = f"{'phenomenon':<{width}}  paradigms   pairs  accuracy"
        lines = [header + ("  unknown words" if overall is not None else "")]
        for name, accuracy in self.phenomena.items():
            members = [p for p in self.paradigms if p.phenomenon == name]
            lines.append(row(name, members, accuracy, by_phenomenon.get(name)))
            if per_paradigm:
                lines += [row(f"  {p.paradigm}", [p], p.accuracy, by_paradigm.get(p.paradigm)) for p in members]
        lines.append(row("overall", self.paradigms, self.overall, overall))
        lines.append(
            "accuracy: the fraction of pairs with log p(good) > log p(bad), a phenomenon's and the overall "
            "one the mean of their paradigms'; chance 0.5"
        )
        if overall is not None:
            lines.append(
                f"unknown words: {overall.n_unknown_words} of {overall.n_words} "
                f"({100 * overall.unknown_word_rate:.2f}%), read as an unknown-word class or <unk>; "
                f"{overall.pairs_differing_in_unknown_word} of {len(self.pairs)} pairs differ in one"
            )
        return "\n".join(lines)


class BlimpScoreError(SyntaxlmError, ValueError):
    """Log-probabilities that cannot be used: wrong count, NaN or +inf; names the pair."""


def _checked(value: float, pair: MinimalPair, which: str) -> float:
    value = float(value)
    if math.isnan(value) or value == math.inf:
        raise BlimpScoreError(
            f"log-probability of the {which} sentence of {pair.paradigm} pair {pair.pair_id} is {value}; "
            "expected a finite number or -inf"
        )
    return value


def pair_logprobs(
    pairs: Sequence[MinimalPair], scorer: SentenceScorer, *, batch_size: int, progress: bool = False
) -> Iterator[tuple[Sequence[MinimalPair], list[tuple[float, float]]]]:
    """The pairs in batches and their ``(good, bad)`` log-probs: the scorer is called on the good
    then the bad sentence of ``batch_size // 2`` pairs at a time (at least one; a pair is never split)."""
    per_batch = max(1, batch_size // 2)
    for start in tqdm(range(0, len(pairs), per_batch), desc="BLiMP", unit="batch", disable=not progress):
        batch = pairs[start : start + per_batch]
        sentences = [sentence for pair in batch for sentence in (pair.good, pair.bad)]
        scores = list(scorer(sentences))
        if len(scores) != len(sentences):
            raise BlimpScoreError(
                f"the scorer returned {len(scores)} log-probabilities for {len(sentences)} sentences"
            )
        yield batch, list(zip(scores[0::2], scores[1::2]))


def score_blimp(
    pairs: Sequence[MinimalPair],
    scorer: SentenceScorer | None = None,
    *,
    logprobs: Sequence[tuple[float, float]] | None = None,
    batch_size: int = 128,
    progress: bool = False,
    words: WordReader | None = None,
) -> BlimpResult:
    """Score minimal pairs with a sentence scorer (called on batches of ``batch_size`` sentences)
    or with precomputed ``(logprob_good, logprob_bad)`` per pair, in the order of ``pairs``;
    ``words`` (the scorer's model's words and unknown words) adds each paradigm's unknown words."""
    if (scorer is None) == (logprobs is None):
        raise BlimpScoreError("give exactly one of a sentence scorer or precomputed log-probabilities")
    if not pairs:
        raise BlimpScoreError("no minimal pairs to score")
    if scorer is not None:
        batches = pair_logprobs(pairs, scorer, batch_size=batch_size, progress=progress)
        logprobs = [scores for _, batch in batches for scores in batch]
    if len(logprobs) != len(pairs):
        raise BlimpScoreError(f"{len(logprobs)} log-probability pairs for {len(pairs)} minimal pairs")
    scored = [
        PairScore(pair.paradigm, pair.pair_id, _checked(good, pair, "good"), _checked(bad, pair, "bad"))
        for pair, (good, bad) in zip(pairs, logprobs)
    ]
    first_pair: dict[str, MinimalPair] = {}
    n_pairs: Counter[str] = Counter()
    n_correct: Counter[str] = Counter()
    for pair, score in zip(pairs, scored):
        first_pair.setdefault(pair.paradigm, pair)
        n_pairs[pair.paradigm] += 1
        n_correct[pair.paradigm] += score.correct
    paradigms = [
        ParadigmAccuracy(
            uid, pair.phenomenon, pair.linguistics_term, pair.field, n_pairs[uid], n_correct[uid]
        )
        for uid, pair in first_pair.items()
    ]
    unknown: dict[str, UnknownWords] | None = None
    if words is not None:
        unknown = {uid: UnknownWords() for uid in first_pair}
        for pair in pairs:
            unknown[pair.paradigm] += pair_unknown_words(pair, words)
    return BlimpResult(pairs=scored, paradigms=paradigms, unknown_words=unknown)
