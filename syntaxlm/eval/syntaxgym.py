"""SyntaxGym (Hu et al. 2020): test suites, region surprisals, prediction results and SG scores.

A suite (JSON, as the files in ``shared/data/syntaxgym``) holds items; each item writes one sentence
per *condition*, cut into numbered *regions*. A model's value for a region is its surprisal in bits
summed over the region's tokens (metric "sum"); the suite's *predictions* are formulas
(``syntaxlm.eval.sg_formula``) comparing region values across the conditions of an item. This
module does everything between a model's tokens and the scores, and reproduces the ``syntaxgym``
0.6.0 package on the reference cases in ``shared/golden/sg_*.json``:

- ``load_suite`` reads and checks a suite. Region contents are stripped (some Hu et al. files have
  stray spaces, which syntaxgym refuses) and formulas may use ``[ ]`` as well as ``( )``.
- ``SuiteItem.sentence`` is what a model reads: the non-empty regions joined by single spaces.
- ``align_regions`` gives each of a tokenizer's tokens a region by matching the tokens against the
  regions' text from the left, as syntaxgym's ``Sentence.region2tokens``; ``region_surprisals``
  turns a model's natural-log token log-probabilities into region values in bits, and
  ``suite_region_values`` does that for a whole suite from a token scorer.
- ``evaluate_suite`` gives every item's result for every prediction and three accuracies:
  ``accuracy_pred0`` (prediction 0 only: the published convention, as pqian11/sg-eval's score.py;
  only fgd_hierarchy and nn-nv-rpl have a second prediction), ``accuracy_all_predictions`` (an item
  counts when all its predictions hold) and ``accuracy_per_prediction``.
- ``sg_scores`` averages suite accuracies into circuit scores and the SG score, under the suite
  sets of Hu et al. (2020, 31 suites) and Qian et al. (2021, 33 suites), each labelled, each both
  as a mean over suites and a mean over circuits (they differ; the papers report the first).
- ``suite_unknown_words`` counts the words of a suite that a model's vocabulary does not know
  (given as a function of the words) and the items with one in a region the predictions compare;
  ``suites_summary`` gathers several suites' results into the SG scores and the pooled counts.

Region values travel as JSON in the shape of the ``draws`` of ``sg_predictions.json``: a list of
``{"item_number": n, "values": {condition: [value of region 1, region 2, ...]}}``.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import reprlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from syntaxlm.errors import InputFormatError, SuiteFormatError, SyntaxlmError
from syntaxlm.eval.sg_formula import (
    COMPARISONS,
    CONNECTIVES,
    BinaryOperation,
    ComparisonMargin,
    Expression,
    FormulaError,
    RegionReference,
    comparison_margins,
    evaluate_formula,
    evaluate_formula_elementwise,
    parse_formula,
    region_references,
)
from syntaxlm.files import DuplicateKeyError, json_loads, read_text, sha256_file

RegionValues = Mapping[str, Sequence[float]]
"""One item's region values: condition name → value of region 1, region 2, ... (bits)."""

SUPPORTED_METRIC = "sum"


# -- suites ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    formula: str  # as written in the suite file
    expression: Expression


@dataclass(frozen=True)
class SuiteItem:
    item_number: int
    regions: Mapping[str, tuple[str, ...]]  # condition → stripped contents of regions 1..n, file order

    def sentence(self, condition: str) -> str:
        """The condition's sentence as syntaxgym's ``get_sentences`` writes it: the non-empty
        regions joined by single spaces."""
        return " ".join(content for content in self.regions[condition] if content)


@dataclass(frozen=True)
class Suite:
    name: str
    region_names: tuple[str, ...]  # region k is region_names[k - 1]
    condition_names: tuple[str, ...]  # in the first item's order
    predictions: tuple[Prediction, ...]
    items: tuple[SuiteItem, ...]
    meta: Mapping[str, Any]  # the file's "meta" object
    stripped_regions: int  # region contents that had leading or trailing whitespace in the file

    def item(self, item_number: int) -> SuiteItem:
        for item in self.items:
            if item.item_number == item_number:
                return item
        raise KeyError(f"suite {self.name!r} has no item {item_number}")

    def sentences(self) -> Iterator[tuple[int, str, str]]:
        """``(item_number, condition, sentence)`` in file order (items, then each item's conditions),
        the order of syntaxgym's ``get_sentences``."""
        for item in self.items:
            for condition in item.regions:
                yield item.item_number, condition, item.sentence(condition)


def load_suite(path: str | Path) -> Suite:
    """Read a SyntaxGym suite file. Every problem raises ``SuiteFormatError`` naming the file, the
    suite and the place: line and column for malformed JSON; item, condition and region (with the
    JSON path) for bad items; the character of a formula for a bad prediction."""
    path = Path(path)
    text = read_text(path, SuiteFormatError)
    try:
        data = json_loads(text, unique_keys=True)
    except json.JSONDecodeError as error:
        raise SuiteFormatError(
            f"malformed JSON: {error.msg}",
            path=path,
            line=error.lineno,
            column=error.colno,
            expected="a SyntaxGym suite (a JSON object)",
        ) from None
    except DuplicateKeyError as error:  # json would keep the last value silently
        raise SuiteFormatError(f"suite, {error}", path=path, expected="each key once in an object") from None
    return suite_from_json(data, path=path)


def suite_from_json(data: Any, *, path: str | Path | None = None) -> Suite:
    """A suite from its parsed JSON (e.g. a synthetic suite in memory); checks as ``load_suite``."""
    return _SuiteReader(path).read(data)


class _SuiteReader:
    """Checks a suite's JSON; errors name the suite once it is known."""

    def __init__(self, path: str | Path | None):
        self.path = path
        self.name: str | None = None

    def error(self, where: str, problem: str, expected: str | None = None) -> SuiteFormatError:
        suite = "suite" if self.name is None else f"suite {self.name!r}"
        return SuiteFormatError(f"{suite}, {where}: {problem}", path=self.path, expected=expected)

    def field(self, record: Any, key: str, kind: type | tuple[type, ...], where: str, expected: str) -> Any:
        if not isinstance(record, dict):
            raise self.error(where, f"a JSON {_json_type(record)}", "a JSON object")
        if key not in record:
            raise self.error(where, f"missing field {key!r}", expected)
        value = record[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.error(where, f"field {key!r} is a JSON {_json_type(value)}", expected)
        return value

    def read(self, data: Any) -> Suite:
        meta = self.field(data, "meta", dict, "top level", "an object with name and metric")
        self.name = self.field(meta, "name", str, "meta", "the suite's name (a string)")
        metric = self.field(meta, "metric", str, "meta", f"{SUPPORTED_METRIC!r}")
        if metric != SUPPORTED_METRIC:
            raise self.error("meta", f"unsupported metric {metric!r}", f"{SUPPORTED_METRIC!r}")
        region_names = self.region_names(self.field(data, "region_meta", dict, "top level", "an object"))
        formulas = self.field(data, "predictions", list, "top level", "a list of formula predictions")
        raw_items = self.field(data, "items", list, "top level", "a list of items")
        if not raw_items:
            raise self.error("items", "no items", "at least one item")
        items: list[SuiteItem] = []
        numbers: set[int] = set()
        stripped = 0
        for index, raw in enumerate(raw_items):
            item, n_stripped = self.item(raw, index, len(region_names))
            if item.item_number in numbers:
                raise self.error(
                    f"items[{index}]", f"item number {item.item_number} appears twice", "unique numbers"
                )
            numbers.add(item.item_number)
            if items and set(item.regions) != set(items[0].regions):
                missing = sorted(set(items[0].regions) - set(item.regions))
                extra = sorted(set(item.regions) - set(items[0].regions))
                raise self.error(
                    f"item {item.item_number} (items[{index}])",
                    f"conditions differ from item {items[0].item_number}'s: missing {missing}, extra {extra}",
                    "the same conditions in every item",
                )
            items.append(item)
            stripped += n_stripped
        conditions = tuple(items[0].regions)
        predictions = tuple(
            self.prediction(raw, index, conditions, len(region_names)) for index, raw in enumerate(formulas)
        )
        if not predictions:
            raise self.error("predictions", "no predictions", "at least one formula")
        return Suite(self.name, region_names, conditions, predictions, tuple(items), meta, stripped)

    def region_names(self, region_meta: dict) -> tuple[str, ...]:
        numbers = {}
        for key, name in region_meta.items():
            if not (key.isascii() and key.isdigit() and len(key) <= 9) or not isinstance(name, str):
                raise self.error(
                    f"region_meta[{reprlib.repr(key)}]",
                    f"entry {reprlib.repr(key)}: {reprlib.repr(name)}",
                    '"number": "region name"',
                )
            if int(key) in numbers:
                raise self.error(
                    f"region_meta[{key!r}]", f"region {int(key)} appears twice", "each number once"
                )
            numbers[int(key)] = name
        if sorted(numbers) != list(range(1, len(numbers) + 1)):
            raise self.error("region_meta", f"region numbers {sorted(numbers)}", "1, 2, ..., n without gaps")
        if not numbers:
            raise self.error("region_meta", "no regions", "at least one region")
        return tuple(numbers[k] for k in range(1, len(numbers) + 1))

    def item(self, raw: Any, index: int, n_regions: int) -> tuple[SuiteItem, int]:
        where = f"items[{index}]"
        number = self.field(raw, "item_number", int, where, "an integer item number")
        where = f"item {number} ({where})"
        conditions = self.field(raw, "conditions", list, where, "a list of conditions")
        if not conditions:
            raise self.error(where, "no conditions", "at least one condition")
        regions: dict[str, tuple[str, ...]] = {}
        stripped = 0
        for c, condition in enumerate(conditions):
            at = f"{where}, conditions[{c}]"
            name = self.field(condition, "condition_name", str, at, "a condition name (a string)")
            if name in regions:
                raise self.error(at, f"condition {name!r} appears twice", "each condition once per item")
            at = f"{where}, condition {name!r}"
            contents: list[str] = []
            for r, region in enumerate(self.field(condition, "regions", list, at, "a list of regions")):
                region_at = f"{at}, regions[{r}]"
                region_number = self.field(
                    region, "region_number", int, region_at, "an integer region number"
                )
                content = self.field(region, "content", str, region_at, "the region's text (a string)")
                if not 1 <= region_number <= n_regions:
                    raise self.error(
                        f"{at}, region {region_number} (regions[{r}])",
                        f"region {region_number} does not exist",
                        f"a region of region_meta (1 to {n_regions})",
                    )
                if region_number != r + 1:
                    raise self.error(
                        f"{at}, region {region_number} (regions[{r}])",
                        f"region {region_number} where region {r + 1} belongs",
                        f"regions 1 to {n_regions} in order",
                    )
                stripped += content != content.strip()
                contents.append(content.strip())
            if len(contents) != n_regions:
                raise self.error(at, f"{len(contents)} regions", f"regions 1 to {n_regions}, as region_meta")
            regions[name] = tuple(contents)
        return SuiteItem(number, regions), stripped

    def prediction(self, raw: Any, index: int, conditions: tuple[str, ...], n_regions: int) -> Prediction:
        where = f"prediction {index} (predictions[{index}])"
        kind = self.field(raw, "type", str, where, '"formula"')
        if kind != "formula":
            raise self.error(where, f"unknown prediction type {kind!r}", '"formula"')
        formula = self.field(raw, "formula", str, where, "a formula (a string)")
        try:
            expression = parse_formula(formula)
        except FormulaError as error:
            problem = f"{error.problem} at character {error.position + 1} of formula {formula!r}"
            raise self.error(where, problem, error.expected) from None
        for reference in region_references(expression):
            place = f"at character {reference.position + 1} of formula {formula!r}"
            if reference.condition not in conditions:
                raise self.error(
                    where,
                    f"unknown condition {reference.condition!r} {place}",
                    "one of " + ", ".join(repr(c) for c in conditions),
                )
            if reference.region is not None and not 1 <= reference.region <= n_regions:
                raise self.error(
                    where,
                    f"region {reference.region} does not exist {place}",
                    f"a region from 1 to {n_regions}",
                )
        return Prediction(formula, expression)


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


# -- tokens → regions ----------------------------------------------------------------------------------------


class RegionTokenizationError(SyntaxlmError, ValueError):
    """Tokens that cannot be assigned to the regions of their sentence; names the token and region."""


@dataclass(frozen=True)
class TokenizerConvention:
    """What region alignment needs to know of a tokenizer (lm-zoo's "spec", in syntaxgym's terms).

    ``prefix_tokens`` (e.g. BOS ``<|endoftext|>``) join the region current where they stand --
    region 1 at the start of a sentence. ``suffix_tokens`` (e.g. ``<eos>``) join the current region
    and end the sentence. ``subword_marker`` is the sentinel a subword tokenizer writes at the start
    of pieces (GPT-2 ``Ġ``, sentencepiece ``▁``); it is stripped from the left of a token that
    does not otherwise match the text (None for word-level tokenizers). ``cased=False`` compares
    with lower-cased region text; the tokens must be lower case already, with the marker left as
    it is (``"Ġ".lower()`` is ``"ġ"``). As in syntaxgym, only the current region is lower-cased:
    an unknown-token run looks for the next token in later regions' text as written.
    """

    prefix_tokens: frozenset[str] = frozenset()
    suffix_tokens: frozenset[str] = frozenset()
    subword_marker: str | None = None
    cased: bool = True


@dataclass(frozen=True)
class RegionAlignment:
    """Which region each token belongs to, and the words unknown tokens stood for.

    ``oovs[k - 1]`` lists, for region ``k``, the words covered by runs of unknown tokens that
    start in region ``k`` (a run's words all go to the region where it starts, as its tokens do; an
    empty region inside a run shows as ``''``, as in syntaxgym). ``long_unknown_runs`` holds the
    first token of each run of more than one token: the token after an unknown one was not found in
    the text, because it is unknown too or does not match (syntaxgym's "Consecutive OOVs").
    """

    tokens: tuple[str, ...]
    token_regions: tuple[int, ...]  # region number (from 1) of every token
    oovs: tuple[tuple[str, ...], ...]
    long_unknown_runs: tuple[int, ...]

    @property
    def region_tokens(self) -> tuple[tuple[str, ...], ...]:
        """The tokens of region 1, region 2, ..., in order."""
        return tuple(
            tuple(token for token, region in zip(self.tokens, self.token_regions) if region == number)
            for number in range(1, len(self.oovs) + 1)
        )

    def warnings(self) -> list[str]:
        """One message per long unknown run and per region with unknown words."""
        messages = [
            f"a run of unknown tokens from token {start} ({self.tokens[start]!r}, region "
            f"{self.token_regions[start]}) takes in the tokens after it until one is found in the text"
            for start in self.long_unknown_runs
        ]
        messages += [
            f"region {k}: unknown words {list(words)}" for k, words in enumerate(self.oovs, 1) if words
        ]
        return messages


_WHITESPACE_AT_EDGE = re.compile(r"^\s|\s$")
_WHITESPACE_RUN = re.compile(r"\s{2,}")


def align_regions(
    region_contents: Sequence[str],
    tokens: Sequence[str],
    convention: TokenizerConvention = TokenizerConvention(),
    unknown_mask: Sequence[bool] | None = None,
) -> RegionAlignment:
    """Assign ``tokens`` (of the sentence ``" ".join`` of the non-empty regions) to regions by
    their text, exactly as syntaxgym 0.6.0's ``Sentence.region2tokens``.

    Tokens are matched against the regions' text from the left, skipping spaces and empty regions;
    a region is left when its text is used up. An unknown token (``unknown_mask``) starts a run that
    ends before the first later token found in the text (at a word start, unless that token begins
    with punctuation); the run's tokens and the words they stand for go to the region where it
    starts. If no later token is found, every remaining token goes there.

    Where syntaxgym fails or silently drops tokens, this raises ``RegionTokenizationError``: region
    text with leading, trailing or doubled whitespace (syntaxgym's ValueError), a token that neither
    matches nor is unknown (syntaxgym drops it and moves to the next region), tokens beyond the last
    region (IndexError) or after a suffix token (dropped), and text left over when the tokens end
    (syntaxgym returns the regions short of it). An unknown word that begins with the next token
    differs from syntaxgym, whose result is then wrong (see ``_RegionAligner.find_in_text``).
    """
    for number, content in enumerate(region_contents, 1):
        if _WHITESPACE_AT_EDGE.search(content) or _WHITESPACE_RUN.search(content):
            raise RegionTokenizationError(
                f"region {number} content {content!r} has leading, trailing or repeated whitespace; expected "
                "stripped text with single spaces (load_suite strips region contents)"
            )
    if not region_contents:
        raise RegionTokenizationError("no regions to assign tokens to")
    unknown = [False] * len(tokens) if unknown_mask is None else [bool(flag) for flag in unknown_mask]
    if len(unknown) != len(tokens):
        raise RegionTokenizationError(f"{len(unknown)} unknown-mask entries for {len(tokens)} tokens")
    return _RegionAligner(list(region_contents), list(tokens), convention, unknown).run()


class _RegionAligner:
    """The state of one alignment: the current token, the current region and its unmatched text."""

    def __init__(
        self, contents: list[str], tokens: list[str], convention: TokenizerConvention, unknown: list[bool]
    ):
        self.contents = contents
        self.tokens = tokens
        self.convention = convention
        self.unknown = unknown
        self.token_regions: list[int] = [0] * len(tokens)
        self.oovs: list[list[str]] = [[] for _ in contents]
        self.long_unknown_runs: list[int] = []
        self.token = 0
        self.region = 0  # index into contents
        self.rest = contents[0]  # the current region's text not matched yet

    def result(self) -> RegionAlignment:
        return RegionAlignment(
            tuple(self.tokens),
            tuple(region + 1 for region in self.token_regions),
            tuple(tuple(words) for words in self.oovs),
            tuple(self.long_unknown_runs),
        )

    def error(self, problem: str) -> RegionTokenizationError:
        return RegionTokenizationError(f"token {self.token} ({self.tokens[self.token]!r}): {problem}")

    def assign(self, count: int) -> None:
        for index in range(self.token, self.token + count):
            self.token_regions[index] = self.region
        self.token += count

    def enter_next_region(self) -> None:
        if self.region + 1 == len(self.contents):
            raise self.error("no text left in the last region for this token")
        self.region += 1
        self.rest = self.contents[self.region]

    def run(self) -> RegionAlignment:
        tokens, convention = self.tokens, self.convention
        while self.token < len(tokens):
            token = tokens[self.token]
            if token in convention.prefix_tokens:
                self.assign(1)
                continue
            if token in convention.suffix_tokens:
                self.assign(1)
                if self.token < len(tokens):
                    raise self.error("follows a suffix (end-of-sentence) token")
                break
            self.rest = self.rest.lstrip()
            if not self.rest:
                self.enter_next_region()
                continue
            if not convention.cased:
                self.rest = self.rest.lower()
            matched = self.match_length(token)
            if matched is not None:
                self.assign(1)
                self.rest = self.rest[matched:]
            elif self.unknown[self.token]:
                if self.take_unknown_run():
                    return self.result()
            else:
                raise self.error(f"does not match the text of region {self.region + 1}: {self.rest!r}")
            if not self.rest.strip() and self.region + 1 < len(self.contents):
                self.region += 1
                self.rest = self.contents[self.region]
        leftover = " ".join([self.rest, *self.contents[self.region + 1 :]]).strip()
        if leftover:
            raise RegionTokenizationError(
                f"the tokens end before the text {leftover!r} (region {self.region + 1})"
            )
        return self.result()

    def match_length(self, token: str) -> int | None:
        """How many characters of the region's text the token matches at its start, or None."""
        if self.rest.startswith(token):
            return len(token)
        marker = self.convention.subword_marker
        if marker is not None:
            piece = token.lstrip(marker)
            if self.rest.startswith(piece):
                return len(piece)
        return None

    def take_unknown_run(self) -> bool:
        """Assign the run of tokens from the current (unknown) one up to the next token found in
        the text; True when the run took every remaining token."""
        remaining = len(self.tokens) - self.token
        for length in range(1, remaining):
            if length > 1 and self.long_unknown_runs[-1:] != [self.token]:
                self.long_unknown_runs.append(self.token)
            found = self.find_in_text(self.tokens[self.token + length])
            if found is not None:
                region, rest, covered = found
                self.oovs[self.region].extend(covered.split(" "))
                self.assign(length)
                self.region, self.rest = region, rest
                return False
        self.oovs[self.region].extend(" ".join([self.rest, *self.contents[self.region + 1 :]]).split())
        self.assign(remaining)
        return True

    def find_in_text(self, token: str) -> tuple[int, str, str] | None:
        """Where ``token`` next occurs in the text after the unknown token's first character --
        (region index, that region's text from the occurrence on, the text skipped before it) --
        or None. A token that starts with a word character only matches at the start of a word.

        syntaxgym also tries the current position itself; a match there (the unknown word begins
        with the next token, as "at" before "a") leaves it with no OOV text, which it treats as no
        match while having assigned the tokens already, and it goes on to drop, repeat or misplace
        tokens or to fail with an IndexError. An unknown token stands for at least one character."""
        word_like = re.match(r"\W+", token) is None
        skipped: list[str] = []
        for region in range(self.region, len(self.contents)):
            text = self.rest if region == self.region else self.contents[region]
            for position in range(1 if region == self.region else 0, len(text)):
                if word_like and position > 0 and re.match(r"\W", text[position - 1]) is None:
                    continue
                if text[position : position + len(token)] == token:
                    skipped.append(text[:position].strip())
                    return region, text[position:], " ".join(skipped).strip()
            skipped.append(text.strip())
        return None


def surprisal_bits(logprobs: Sequence[float]) -> list[float]:
    """Natural-log probabilities → surprisals in bits (``-logprob / ln 2``)."""
    return [-float(logprob) / math.log(2) for logprob in logprobs]


def region_sums(alignment: RegionAlignment, token_values: Sequence[float]) -> tuple[float, ...]:
    """Per region, the sum of its tokens' values in token order (metric "sum"; 0.0 for no tokens)."""
    if len(token_values) != len(alignment.tokens):
        raise RegionTokenizationError(f"{len(token_values)} values for {len(alignment.tokens)} tokens")
    sums = [0.0] * len(alignment.oovs)
    for region, value in zip(alignment.token_regions, token_values):
        sums[region - 1] += value
    return tuple(sums)


@dataclass(frozen=True)
class RegionSurprisals:
    """One sentence's region values (bits) with the alignment behind them."""

    values_bits: tuple[float, ...]
    alignment: RegionAlignment
    warnings: tuple[str, ...]  # the alignment's warnings, naming suite, item and condition


def region_surprisals(
    suite: Suite,
    item_number: int,
    condition: str,
    tokens: Sequence[str],
    token_logprobs: Sequence[float],
    *,
    convention: TokenizerConvention = TokenizerConvention(),
    unknown_mask: Sequence[bool] | None = None,
) -> RegionSurprisals:
    """Region surprisals (bits) of one condition of one item from a model's tokens of
    ``item.sentence(condition)`` and their natural-log probabilities (prefix tokens included,
    e.g. with log-probability 0.0)."""
    where = f"suite {suite.name!r}, item {item_number}, condition {condition!r}"
    regions = suite.item(item_number).regions
    if condition not in regions:
        raise KeyError(f"{where}: no such condition; the suite has {list(regions)}")
    try:
        alignment = align_regions(regions[condition], tokens, convention, unknown_mask)
        values = region_sums(alignment, surprisal_bits(token_logprobs))
    except RegionTokenizationError as error:
        raise RegionTokenizationError(f"{where}: {error}") from None
    warnings = tuple(f"{where}: {message}" for message in alignment.warnings())
    return RegionSurprisals(values, alignment, warnings)


@dataclass(frozen=True)
class ScoredTokens:
    """A model's reading of one sentence: its tokens and natural-log p(token | prefix)."""

    tokens: Sequence[str]
    logprobs: Sequence[float]
    unknown_mask: Sequence[bool] | None = None


TokenScorer = Callable[[Sequence[str]], Sequence[ScoredTokens]]
"""Sentences → one ``ScoredTokens`` each, in order."""


class SuiteRegionValues(dict):
    """Item number → condition → region values (bits), what ``evaluate_suite`` takes, with the
    ``warnings`` of aligning the model's tokens to the regions."""

    def __init__(
        self, values: dict[int, dict[str, list[float]]] | None = None, warnings: list[str] | None = None
    ):
        super().__init__(values or {})
        self.warnings: list[str] = list(warnings or [])


def suite_region_values(
    suite: Suite,
    scorer: TokenScorer,
    convention: TokenizerConvention,
    *,
    batch_size: int = 64,
    progress: bool = False,
) -> SuiteRegionValues:
    """Region values of every sentence of the suite from a token scorer (called on batches of
    ``batch_size`` sentences), ready for ``evaluate_suite(suite, values)``."""
    sentences = list(suite.sentences())
    result = SuiteRegionValues({item.item_number: {} for item in suite.items})
    for start in tqdm(
        range(0, len(sentences), batch_size), desc=suite.name, unit="batch", disable=not progress
    ):
        batch = sentences[start : start + batch_size]
        scored = list(scorer([sentence for _, _, sentence in batch]))
        if len(scored) != len(batch):
            raise RegionTokenizationError(
                f"the scorer returned {len(scored)} readings for {len(batch)} sentences"
            )
        for (item_number, condition, _), reading in zip(batch, scored):
            surprisals = region_surprisals(
                suite,
                item_number,
                condition,
                reading.tokens,
                reading.logprobs,
                convention=convention,
                unknown_mask=reading.unknown_mask,
            )
            result[item_number][condition] = list(surprisals.values_bits)
            result.warnings.extend(surprisals.warnings)
    return result


# -- words the model does not know -------------------------------------------------------------------------

UnknownWordFlags = Callable[[Sequence[str]], Sequence[bool]]
"""A sentence's words → per word, whether the model's vocabulary reads it as unknown (an
unknown-word class or ``<unk>``; ``eval.scorers.unknown_words``)."""

UNKNOWN_WORDS_NOTE = (
    "unknown words: the words (split on spaces, as the model reads them) of every condition of every "
    "item that the model's vocabulary does not know, read as an unknown-word class or <unk>; "
    "items_unknown_in_critical_regions: the items with one in a region the predictions compare, whose "
    "outcome rests on how the model reads the class, not the word"
)


def critical_regions(suite: Suite) -> dict[str, frozenset[int]]:
    """Condition → the numbers (from 1) of the regions the suite's predictions compare; every
    region of a condition referenced as ``*``. Conditions no prediction names are left out."""
    regions: dict[str, set[int]] = {}
    every = range(1, len(suite.region_names) + 1)
    for prediction in suite.predictions:
        for reference in region_references(prediction.expression):
            numbers = every if reference.region is None else (reference.region,)
            regions.setdefault(reference.condition, set()).update(numbers)
    return {condition: frozenset(numbers) for condition, numbers in regions.items()}


def suite_unknown_words(suite: Suite, unknown: UnknownWordFlags) -> dict[str, Any]:
    """The words of the suite's sentences that a vocabulary does not know (``unknown``):
    ``n_words`` (every condition of every item, each sentence split on spaces as the scorers read
    it), ``n_unknown_words``, ``unknown_word_rate`` (0 when there are no words) and
    ``items_unknown_in_critical_regions``, the numbers of the items with an unknown word in a
    region that a prediction compares (``critical_regions``)."""
    critical = critical_regions(suite)
    n_words = n_unknown = 0
    items: list[int] = []
    for item in suite.items:
        in_critical_region = False
        for condition, contents in item.regions.items():
            words = item.sentence(condition).split()
            flags = [bool(flag) for flag in unknown(words)] if words else []
            if len(flags) != len(words):
                raise ValueError(f"{len(flags)} unknown-word flags for the {len(words)} words {words}")
            n_words += len(words)
            n_unknown += sum(flags)
            start = 0
            for number, content in enumerate(contents, 1):
                end = start + len(content.split())
                if number in critical.get(condition, ()) and any(flags[start:end]):
                    in_critical_region = True
                start = end
        if in_critical_region:
            items.append(item.item_number)
    return {
        "n_words": n_words,
        "n_unknown_words": n_unknown,
        "unknown_word_rate": n_unknown / n_words if n_words else 0.0,
        "items_unknown_in_critical_regions": items,
        "unknown_words_note": UNKNOWN_WORDS_NOTE,
    }


def pooled_unknown_words(results: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The unknown-word counts of several suite results (``suite_unknown_words`` in each) added
    up: words, unknown words, their rate, the items and those with an unknown word in a critical
    region; None when a result has no counts (region values computed elsewhere)."""
    if not results or any("n_unknown_words" not in result for result in results):
        return None
    n_words = sum(result["n_words"] for result in results)
    n_unknown = sum(result["n_unknown_words"] for result in results)
    return {
        "n_suites": len(results),
        "n_words": n_words,
        "n_unknown_words": n_unknown,
        "unknown_word_rate": n_unknown / n_words if n_words else 0.0,
        "n_items": sum(result["n_items"] for result in results),
        "n_items_unknown_in_critical_regions": sum(
            len(result["items_unknown_in_critical_regions"]) for result in results
        ),
    }


# -- predictions → accuracies --------------------------------------------------------------------------------


class RegionValuesError(InputFormatError):
    """Region values that do not fit their suite (a missing item, condition or region, a non-number)."""


TIE_THRESHOLD_BITS = 0.01
"""A prediction whose margin is smaller than this (in bits, either sign) is a *near tie*: its outcome
is decided by floating-point round-off, not by the model. 0.01 bits is a probability ratio of
2^0.01 = 1.007 between the compared values -- far below the effects the suites are built to
measure (a bit or more) and far above what round-off moves: float32 log-probabilities summed over
a region differ by about 1e-4 bits between batch sizes, thread counts or decoding paths. Items
this close mean the model does not separate the conditions; their outcomes count as the formula
says, and the result counts them (``ties``) so a reader can see how many there are."""


@dataclass(frozen=True)
class PredictionResult:
    """One prediction on one item: the outcome, the margin (bits; positive when it holds; see
    ``sg_formula.comparison_margins``), each comparison's sides, and whether it is a near tie."""

    holds: bool
    margin_bits: float
    comparisons: tuple[ComparisonMargin, ...]

    @property
    def tie(self) -> bool:
        return abs(self.margin_bits) < TIE_THRESHOLD_BITS

    def to_json(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "margin_bits": self.margin_bits,
            "tie": self.tie,
            "comparisons": [
                {
                    "operator": c.operator,
                    "left_bits": c.left,
                    "right_bits": c.right,
                    "holds": c.holds,
                    "margin_bits": c.margin,
                }
                for c in self.comparisons
            ],
        }


@dataclass(frozen=True)
class ItemResult:
    item_number: int
    results: tuple[bool, ...]  # one per prediction, in suite order
    predictions: tuple[PredictionResult, ...] = ()  # the evidence behind ``results``, same order
    region_surprisals_bits: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def all(self) -> bool:
        return all(self.results)

    @property
    def tie(self) -> bool:
        """Whether any prediction on the item is a near tie (``TIE_THRESHOLD_BITS``)."""
        return any(prediction.tie for prediction in self.predictions)

    def to_json(self) -> dict[str, Any]:
        return {
            "item_number": self.item_number,
            "results": list(self.results),
            "all": self.all,
            "tie": self.tie,
            "predictions": [prediction.to_json() for prediction in self.predictions],
            "region_surprisals_bits": {c: list(v) for c, v in self.region_surprisals_bits.items()},
        }


@dataclass(frozen=True)
class SuiteResult:
    suite: str
    formulas: tuple[str, ...]
    items: tuple[ItemResult, ...]
    chance_per_prediction: tuple[float, ...] = ()  # ``chance_accuracy`` of each prediction

    @property
    def accuracy_per_prediction(self) -> tuple[float, ...]:
        return tuple(
            sum(item.results[k] for item in self.items) / len(self.items) for k in range(len(self.formulas))
        )

    @property
    def accuracy_pred0(self) -> float:
        """Prediction 0 only: the published convention (Hu et al. 2020; Qian et al. 2021)."""
        return self.accuracy_per_prediction[0]

    @property
    def accuracy_all_predictions(self) -> float:
        return sum(item.all for item in self.items) / len(self.items)

    @property
    def ties_per_prediction(self) -> tuple[int, ...]:
        return tuple(
            sum(item.predictions[k].tie for item in self.items if item.predictions)
            for k in range(len(self.formulas))
        )

    @property
    def ties(self) -> int:
        """Items with a near tie in any prediction."""
        return sum(item.tie for item in self.items)

    def to_json(self) -> dict[str, Any]:
        ties = self.ties
        return {
            "suite": self.suite,
            "predictions": list(self.formulas),
            "n_items": len(self.items),
            "items": [item.to_json() for item in self.items],
            "accuracy_per_prediction": list(self.accuracy_per_prediction),
            "accuracy_pred0": self.accuracy_pred0,
            "accuracy_all_predictions": self.accuracy_all_predictions,
            "accuracy_convention": "accuracy_pred0 (prediction 0 only) is the published suite accuracy",
            "chance_per_prediction": list(self.chance_per_prediction),
            "chance_pred0": self.chance_per_prediction[0] if self.chance_per_prediction else None,
            "chance_note": CHANCE_NOTE,
            "ties": ties,
            "ties_per_prediction": list(self.ties_per_prediction),
            "tie_threshold_bits": TIE_THRESHOLD_BITS,
            "tie_note": (
                f"{ties} of {len(self.items)} items have a prediction within {TIE_THRESHOLD_BITS} bits of "
                "flipping (a near tie): floating-point round-off, not the model, decides those outcomes"
            ),
        }


def evaluate_suite(suite: Suite, region_values: Mapping[int, RegionValues]) -> SuiteResult:
    """Every prediction on every item; ``region_values[item_number][condition][k - 1]`` is region
    ``k``'s value. Conditions are looked up by name, never by position. Each item keeps its region
    values and each prediction's margin and comparisons (``PredictionResult``)."""
    _check_region_values(suite, region_values, path=None)
    items = []
    for item in suite.items:
        values = region_values[item.item_number]
        predictions = []
        for p in suite.predictions:
            margin, comparisons = comparison_margins(p.expression, values)
            holds = bool(evaluate_formula(p.expression, values))
            predictions.append(PredictionResult(holds, float(margin), tuple(comparisons)))
        surprisals = {condition: tuple(float(v) for v in values[condition]) for condition in item.regions}
        items.append(
            ItemResult(
                item.item_number, tuple(p.holds for p in predictions), tuple(predictions), surprisals
            )
        )
    chance = tuple(chance_accuracy(p.expression, len(suite.region_names)) for p in suite.predictions)
    return SuiteResult(suite.name, tuple(p.formula for p in suite.predictions), tuple(items), chance)


_CHANCE_DRAWS = 2**18
CHANCE_NOTE = (
    "chance: the accuracy of a model that does not tell the conditions apart (every region value an "
    "independent draw from one continuous distribution): 0.5 for one comparison a < b, less for a "
    "conjunction; exact over the orderings of the values where the formula compares single regions, "
    f"else a seeded Monte Carlo estimate over {_CHANCE_DRAWS} draws (to 3 decimals)"
)
_EXACT_CHANCE_MAX_REGIONS = 8


@functools.lru_cache(maxsize=1024)
def chance_accuracy(expression: Expression, n_regions: int) -> float:
    """The probability that a prediction holds when every region value is an independent draw from
    one continuous distribution (``CHANCE_NOTE``). For comparisons of single regions only that is
    the share of the regions' orderings for which it holds (``a < b``: 1/2; two comparisons of
    four regions: 1/4), computed exactly; otherwise a Monte Carlo estimate (standard normal
    draws, seed 0), rounded to 3 decimals."""
    references = region_references(expression)
    atoms = list(dict.fromkeys((r.condition, r.region) for r in references))
    sides = _comparison_sides(expression)
    exact = all(isinstance(side, RegionReference) and side.region is not None for side in sides)
    if exact and len(atoms) <= _EXACT_CHANCE_MAX_REGIONS:
        orderings = np.array(list(itertools.permutations(range(len(atoms)))), dtype=float).T
        draws = dict(zip(atoms, orderings))
    else:
        # Draws in order of first use, so formulas of the same shape get the same estimate.
        rng = np.random.default_rng(0)
        needed = [
            (c, k) for c, region in atoms for k in (range(1, n_regions + 1) if region is None else (region,))
        ]
        draws = {atom: rng.standard_normal(_CHANCE_DRAWS) for atom in dict.fromkeys(needed)}
    conditions = {condition for condition, _ in atoms}
    values = {c: [draws.get((c, k), 0.0) for k in range(1, n_regions + 1)] for c in conditions}
    share = float(np.mean(evaluate_formula_elementwise(expression, values)))
    return share if exact and len(atoms) <= _EXACT_CHANCE_MAX_REGIONS else round(share, 3)


def _comparison_sides(expression: Expression) -> list[Expression]:
    """The operands of every comparison in a formula."""
    sides: list[Expression] = []
    work = [expression]
    while work:
        item = work.pop()
        if isinstance(item, BinaryOperation) and item.operator in CONNECTIVES:
            work += [item.right, item.left]
        elif isinstance(item, BinaryOperation) and item.operator in COMPARISONS:
            sides += [item.left, item.right]
    return sides


def _check_region_values(
    suite: Suite, region_values: Mapping[int, RegionValues], path: str | Path | None, *, finite: bool = False
) -> None:
    """Values for every item, condition and region of ``suite``, each a number (not NaN); with
    ``finite``, also not infinite."""
    is_value, expected_value = (_is_finite_number, "a finite number") if finite else (_is_number, "a number")

    def bad(problem: str, expected: str) -> RegionValuesError:
        return RegionValuesError(f"suite {suite.name!r}: {problem}", path=path, expected=expected)

    numbers = {item.item_number for item in suite.items}
    if extra := sorted(set(region_values) - numbers):
        raise bad(f"values for items {extra} that the suite does not have", "the suite's item numbers")
    n_regions = len(suite.region_names)
    for item in suite.items:
        if item.item_number not in region_values:
            raise bad(f"no values for item {item.item_number}", "values for every item")
        values = region_values[item.item_number]
        if set(values) != set(item.regions):
            raise bad(
                f"item {item.item_number} has values for conditions {sorted(values)}",
                f"the conditions {sorted(item.regions)}",
            )
        for condition, row in values.items():
            where = f"item {item.item_number}, condition {condition!r}"
            if isinstance(row, str | bytes | Mapping) or not hasattr(row, "__len__") or len(row) != n_regions:
                raise bad(
                    f"{where}: values {reprlib.repr(row)}", f"a list of {n_regions} numbers, one per region"
                )
            for k, value in enumerate(row, 1):
                if not is_value(value):
                    raise bad(f"{where}, region {k}: value {reprlib.repr(value)}", expected_value)


def _is_number(value: Any) -> bool:
    """Whether a region value is a number other than NaN (a model's surprisal may be infinite)."""
    number = _float_value(value)
    return number is not None and not math.isnan(number)


def _is_finite_number(value: Any) -> bool:
    """Whether a region value is a finite number: not NaN or ±infinity (JSON's ``Infinity``, and
    ``1e400``, which json reads as infinity)."""
    number = _float_value(value)
    return number is not None and math.isfinite(number)


def _float_value(value: Any) -> float | None:
    """A region value as a float; None for a bool, a non-number, or an integer beyond a float's
    range (JSON integers may have up to 4,300 digits)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def region_values_from_json(
    data: Any, suite: Suite, *, path: str | Path | None = None
) -> dict[int, RegionValues]:
    """Region values from JSON: a list of ``{"item_number", "values": {condition: [...]}}`` or an
    object with such a list as ``"items"`` (a draw of ``sg_predictions.json``); checked against
    ``suite``, errors raising ``RegionValuesError`` with ``path``."""
    rows = data.get("items") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise RegionValuesError(
            f"top level: a JSON {_json_type(data)}",
            path=path,
            expected='a list of {"item_number": n, "values": {...}}',
        )
    values: dict[int, RegionValues] = {}
    for index, row in enumerate(rows):
        number = row.get("item_number") if isinstance(row, dict) else None
        item_values = row.get("values") if isinstance(row, dict) else None
        if isinstance(number, bool) or not isinstance(number, int) or not isinstance(item_values, dict):
            raise RegionValuesError(
                f"items[{index}] is {reprlib.repr(row)}",
                path=path,
                expected='{"item_number": n, "values": {condition: [value per region]}}',
            )
        if number in values:
            raise RegionValuesError(
                f"item {number} appears twice (items[{index}])", path=path, expected="once"
            )
        values[number] = item_values
    # values given as data are measured surprisals: an infinity there is a broken file, not a model's
    # certainty (evaluate_suite accepts a model's infinite surprisal, e.g. a sentence a beam lost)
    _check_region_values(suite, values, path, finite=True)
    return values


def score_region_values(suite_path: str | Path, region_values_path: str | Path) -> dict[str, Any]:
    """Score region values given in a JSON file (``region_values_from_json``) on a suite file:
    ``SuiteResult.to_json()`` plus both files' paths and sha256."""
    suite = load_suite(suite_path)
    try:
        data = json_loads(read_text(region_values_path, RegionValuesError), unique_keys=True)
    except json.JSONDecodeError as error:
        raise RegionValuesError(
            f"malformed JSON: {error.msg}", path=region_values_path, line=error.lineno, column=error.colno
        ) from None
    except DuplicateKeyError as error:  # json would keep the last value silently
        # the rows of a bare list are items[i], as in region_values_from_json and the {"items"} form
        where = "items" + error.where if error.where.startswith("[") else error.where
        raise RegionValuesError(
            f"{where}: key {reprlib.repr(error.key)} appears twice",
            path=region_values_path,
            expected="each key once in an object",
        ) from None
    result = evaluate_suite(suite, region_values_from_json(data, suite, path=region_values_path))
    return {
        **result.to_json(),
        "suite_file": str(suite_path),
        "suite_sha256": sha256_file(suite_path),
        "region_values_file": str(region_values_path),
        "region_values_sha256": sha256_file(region_values_path),
    }


def format_suite_result(result: Mapping[str, Any]) -> str:
    """Plain text of a suite result (``SuiteResult.to_json()``): the predictions, one line per item
    with each prediction's result and "all" (and, where the result has them, each prediction's
    margin in bits, ``~`` marking a near tie), then the suite accuracies, chance, the unknown words
    (where the result counts them) and ties."""
    formulas = result["predictions"]
    lines = [f"suite {result['suite']}: {result['n_items']} items, {len(formulas)} predictions"]
    lines += [f"  p{k}: {formula.strip()}" for k, formula in enumerate(formulas)]
    with_margins = all(item.get("predictions") for item in result["items"])
    header = "item  " + "  ".join(f"{f'p{k}':>5}" for k in range(len(formulas))) + "    all"
    if with_margins:
        header += "  " + "  ".join(f"{f'p{k} margin (bits)':>17}" for k in range(len(formulas)))
    lines.append(header)
    for item in result["items"]:
        marks = "  ".join(f"{value!s:>5}" for value in item["results"])
        line = f"{item['item_number']:>4}  {marks}  {item['all']!s:>5}"
        if with_margins:
            line += "  " + "  ".join(f"{_margin_text(p):>17}" for p in item["predictions"])
        lines.append(line)
    per_prediction = "  ".join(
        f"p{k} {accuracy:.4f}" for k, accuracy in enumerate(result["accuracy_per_prediction"])
    )
    lines.append(f"accuracy per prediction: {per_prediction}")
    lines.append(f"accuracy (prediction 0, published convention): {result['accuracy_pred0']:.4f}")
    lines.append(f"accuracy (all predictions hold): {result['accuracy_all_predictions']:.4f}")
    if result.get("chance_pred0") is not None:
        lines.append(f"chance (prediction 0, conditions not told apart): {result['chance_pred0']:.3f}")
    if "n_unknown_words" in result:
        critical = len(result["items_unknown_in_critical_regions"])
        lines.append(
            f"unknown words: {result['n_unknown_words']} of {result['n_words']} "
            f"({100 * result['unknown_word_rate']:.2f}%); {critical} of {result['n_items']} items have one "
            "in a region the predictions compare"
        )
    if "tie_note" in result:
        lines.append(f"near ties: {result['tie_note']}")
    return "\n".join(lines)


def _margin_text(prediction: Mapping[str, Any]) -> str:
    return ("~" if prediction["tie"] else "") + f"{prediction['margin_bits']:+.4f}"


# -- circuits and the SG score -------------------------------------------------------------------------------

# Suite → circuit (Hu et al. 2020, Sec. 3 and Fig. 4): the tag → circuit table of
# cpllab/syntactic-generalization notebooks/main.py (a suite's tag is its name up to the first '-',
# '_' or digit), listed per suite in that repository's notebooks/suites.csv. fgd-embed3 and
# fgd-embed4 (tag "fgd") count under Long-Distance Dependencies in Qian et al. (2021), whose
# analysis splits names at '_' or '-'; Hu et al. leave them out. nn-nv-rpl has no circuit in either.
CIRCUIT_OF_SUITE: dict[str, str] = {
    "number_orc": "Agreement",
    "number_prep": "Agreement",
    "number_src": "Agreement",
    "center_embed": "Center Embedding",
    "center_embed_mod": "Center Embedding",
    "mvrr": "Garden-Path Effects",
    "mvrr_mod": "Garden-Path Effects",
    "npz_ambig": "Garden-Path Effects",
    "npz_ambig_mod": "Garden-Path Effects",
    "npz_obj": "Garden-Path Effects",
    "npz_obj_mod": "Garden-Path Effects",
    "subordination": "Gross Syntactic State",
    "subordination_orc-orc": "Gross Syntactic State",
    "subordination_pp-pp": "Gross Syntactic State",
    "subordination_src-src": "Gross Syntactic State",
    "npi_orc_any": "Licensing",
    "npi_orc_ever": "Licensing",
    "npi_src_any": "Licensing",
    "npi_src_ever": "Licensing",
    "reflexive_orc_fem": "Licensing",
    "reflexive_orc_masc": "Licensing",
    "reflexive_prep_fem": "Licensing",
    "reflexive_prep_masc": "Licensing",
    "reflexive_src_fem": "Licensing",
    "reflexive_src_masc": "Licensing",
    "cleft": "Long-Distance Dependencies",
    "cleft_modifier": "Long-Distance Dependencies",
    "fgd-embed3": "Long-Distance Dependencies",
    "fgd-embed4": "Long-Distance Dependencies",
    "fgd_hierarchy": "Long-Distance Dependencies",
    "fgd_object": "Long-Distance Dependencies",
    "fgd_pp": "Long-Distance Dependencies",
    "fgd_subject": "Long-Distance Dependencies",
}
CIRCUITS: tuple[str, ...] = tuple(sorted(set(CIRCUIT_OF_SUITE.values())))

# The synthetic suites (``syntaxlm.data.synthetic``) by phenomenon: those whose names start with
# its prefix.
SYNTHETIC_PHENOMENA: dict[str, str] = {
    "agreement": "synthetic_number_",
    "reflexives": "synthetic_reflexive_",
    "NPI licensing": "synthetic_npi_",
    "subordination": "synthetic_subordination",
    "centre embedding": "synthetic_center_embed",
}


def suite_group(suite: str) -> str | None:
    """The group a suite is reported under: its circuit (Hu et al. 2020) for a published suite, its
    phenomenon for a synthetic one, else ``None``."""
    if suite in CIRCUIT_OF_SUITE:
        return CIRCUIT_OF_SUITE[suite]
    return next((name for name, prefix in SYNTHETIC_PHENOMENA.items() if suite.startswith(prefix)), None)

QIAN_2021_SUITES: tuple[str, ...] = tuple(CIRCUIT_OF_SUITE)  # the 34 suites without nn-nv-rpl
HU_2020_SUITES: tuple[str, ...] = tuple(s for s in QIAN_2021_SUITES if s not in ("fgd-embed3", "fgd-embed4"))

SG_SCORE_SUITE_SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hu2020": ("Hu et al. (2020): 31 suites, without fgd-embed3, fgd-embed4, nn-nv-rpl", HU_2020_SUITES),
    "qian2021": ("Qian et al. (2021): 33 suites, without nn-nv-rpl", QIAN_2021_SUITES),
}


def sg_scores(suite_accuracy: Mapping[str, float]) -> dict[str, Any]:
    """Circuit scores and the SG score from suite accuracies (give ``accuracy_pred0``, the
    published convention), under each suite set of ``SG_SCORE_SUITE_SETS``.

    Per suite set: ``mean_over_suites`` (the SG score the papers report), each circuit's mean over
    its suites, and ``mean_over_circuits`` (the mean of the circuit scores; a different number).
    A score is None when one of its suites has no accuracy; ``missing_suites`` lists them.
    Accuracies of other suites (e.g. nn-nv-rpl, synthetic suites) are not used.
    """
    scores: dict[str, Any] = {}
    for key, (label, suites) in SG_SCORE_SUITE_SETS.items():
        missing = [suite for suite in suites if suite not in suite_accuracy]
        circuits: dict[str, Any] = {}
        for circuit in CIRCUITS:
            members = [suite for suite in suites if CIRCUIT_OF_SUITE[suite] == circuit]
            complete = not any(suite in missing for suite in members)
            circuits[circuit] = {
                "suites": members,
                "mean_over_suites": _mean([suite_accuracy[s] for s in members]) if complete else None,
            }
        circuit_scores = [circuit["mean_over_suites"] for circuit in circuits.values()]
        scores[key] = {
            "label": label,
            "n_suites": len(suites),
            "missing_suites": missing,
            "mean_over_suites": None if missing else _mean([suite_accuracy[s] for s in suites]),
            "mean_over_circuits": None if missing else _mean(circuit_scores),
            "circuits": circuits,
        }
    return scores


def suites_summary(results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Several suites' results (suite name → ``SuiteResult.to_json()``, with the unknown-word
    counts of ``suite_unknown_words`` where a model scored them) summed up: ``suites``, each
    suite's accuracy (prediction 0), with its ``n_items`` and ``chance`` (``chance_pred0``, None
    where a result lacks it); ``sg_scores`` (``sg_scores``); and, when every result counts
    unknown words, ``unknown_word_rates`` per suite and ``unknown_words``, the counts pooled over
    all suites and (``sg_score_sets``) over the suites of each SG score set, when all were scored."""
    accuracy = {name: result["accuracy_pred0"] for name, result in results.items()}
    summary: dict[str, Any] = {
        "suites": accuracy,
        "n_items": {name: result.get("n_items") for name, result in results.items()},
        "chance": {name: result.get("chance_pred0") for name, result in results.items()},
        "sg_scores": sg_scores(accuracy),
    }
    pooled = pooled_unknown_words(list(results.values()))
    if pooled is not None:
        summary["unknown_word_rates"] = {name: r["unknown_word_rate"] for name, r in results.items()}
        summary["unknown_words"] = pooled | {
            "sg_score_sets": {
                key: pooled_unknown_words([results[name] for name in suites])
                for key, (_, suites) in SG_SCORE_SUITE_SETS.items()
                if all(name in results for name in suites)
            }
        }
    return summary


def format_suites_summary(summary: Mapping[str, Any]) -> str:
    """Plain text of ``suites_summary``: each suite's items, accuracy and chance (and unknown-word
    rate), then each SG score with its circuits and chance (and the unknown-word rate over its
    suites), then the unknown words over all the suites."""
    rates = summary.get("unknown_word_rates")
    unknown = summary.get("unknown_words")
    items, chance = summary.get("n_items") or {}, summary.get("chance") or {}
    width = max(32, *(len(name) for name in summary["suites"]))
    header = f"{'suite':{width}s} items  accuracy  chance" + ("  unknown words" if rates is not None else "")
    lines = [header]
    for name, value in summary["suites"].items():
        count, level = _or_dash(items.get(name), "d"), _or_dash(chance.get(name))
        line = f"{name:{width}s} {count:>5}  {value:8.3f}  {level:>6}"
        if rates is not None:
            line += f"  {100 * rates[name]:12.2f}%"
        lines.append(line)
    lines.append("accuracy: the share of items whose prediction 0 holds (the published convention)")
    for key, score in summary["sg_scores"].items():
        if score["mean_over_suites"] is None:
            lines.append(f"{score['label']}: incomplete ({len(score['missing_suites'])} suites missing)")
            continue
        circuits = ", ".join(f"{name} {c['mean_over_suites']:.3f}" for name, c in score["circuits"].items())
        members = [suite for circuit in score["circuits"].values() for suite in circuit["suites"]]
        levels = [chance.get(suite) for suite in members]
        at_chance = f", chance {_mean(levels):.3f}" if None not in levels else ""
        line = f"{score['label']}: {score['mean_over_suites']:.3f} (circuits: {circuits}{at_chance})"
        if unknown is not None and key in unknown["sg_score_sets"]:
            line += f"; unknown words {100 * unknown['sg_score_sets'][key]['unknown_word_rate']:.2f}%"
        lines.append(line)
    if unknown is not None:
        lines.append(
            f"unknown words, all suites scored: {unknown['n_unknown_words']} of "
            f"{unknown['n_words']} ({100 * unknown['unknown_word_rate']:.2f}%); "
            f"{unknown['n_items_unknown_in_critical_regions']} of {unknown['n_items']} items have one in "
            "a region the predictions compare"
        )
    return "\n".join(lines)


def _or_dash(value: float | None, spec: str = ".3f") -> str:
    """``value`` formatted, or "-" where a result does not record it."""
    return "-" if value is None else format(value, spec)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values))
