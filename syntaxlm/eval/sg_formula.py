"""SyntaxGym prediction formulas: parsed once into an expression tree, then evaluated per item.

A prediction compares region values (a region's surprisal in bits, summed over its tokens) across
the conditions of one item, e.g. ``[(6;%np_mismatch%) - (6;%np_match%)] > 0``:

- ``(R;%C%)`` is the value of region ``R`` in condition ``C``; ``(*;%C%)`` is the sum over all of
  the condition's regions, in region order;
- numbers (``0``, ``-1.5``, ``2e3``) are constants; a sign belongs to a number only where a value
  is expected, so ``(1;%a%)-1`` is a subtraction;
- ``+ -`` bind tightest, then ``< > =``, then ``& |``; the operators of one level group from the left;
- ``( )`` and ``[ ]`` group. The Hu et al. (2020) suite files write ``[ ]``; syntaxgym 0.6.0 only
  parses ``( )``, so its users convert the brackets first. Here both are read as they are;
- ``<`` and ``>`` are strict; ``=`` is approximate, ``numpy.isclose(a, b, rtol=1e-5, atol=1e-3)``,
  i.e. ``|a - b| <= 1e-3 + 1e-5 * |b|`` -- not symmetric in ``a`` and ``b``, as in syntaxgym.

Whitespace may stand between any two parts, as syntaxgym's pyparsing grammar allows; condition
names are ASCII letters, digits, ``_`` and ``-``. On formulas the suites never use this parser is
stricter than syntaxgym: a chain of comparisons ``a < b < c`` is rejected (syntaxgym evaluates only
``a < b`` and drops the rest), and a formula must be well typed -- ``+ - < > =`` take numbers,
``& |`` take comparisons, and the whole formula is a comparison or a combination of comparisons
(syntaxgym would return whatever Python's ``and``/``or`` give on numbers).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from syntaxlm.errors import SyntaxlmError

EQUALITY_RTOL = 1e-5
EQUALITY_ATOL = 1e-3

ARITHMETIC = ("+", "-")
COMPARISONS = ("<", ">", "=")
CONNECTIVES = ("&", "|")
CLOSING_BRACKET = {"(": ")", "[": "]"}

_REGION_REFERENCE = re.compile(r"\(\s*(\d+|\*)\s*;%\s*([A-Za-z0-9_-]+)\s*%\s*\)")
_REGION_REFERENCE_START = re.compile(r"\(\s*(\d+|\*)\s*;")
_NUMBER = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_REFERENCE_FORM = "a region reference (REGION;%CONDITION%)"
_VALUE = f"{_REFERENCE_FORM}, a number or an opening bracket"


class FormulaError(SyntaxlmError, ValueError):
    """A formula outside the prediction language. ``position`` is the 0-based character offset of
    the problem in ``formula``; the message counts characters from 1."""

    def __init__(self, problem: str, *, formula: str, position: int, expected: str | None = None):
        self.problem = problem
        self.formula = formula
        self.position = position
        self.expected = expected
        text = f"{problem} at character {position + 1} of formula {formula!r}"
        super().__init__(text + (f"; expected {expected}" if expected else ""))


@dataclass(frozen=True)
class RegionReference:
    """``(region;%condition%)``; ``region`` is None for ``*`` (the sum over all regions)."""

    region: int | None
    condition: str
    position: int


@dataclass(frozen=True)
class Constant:
    value: float
    position: int


@dataclass(frozen=True)
class BinaryOperation:
    operator: str
    left: Expression
    right: Expression
    position: int  # of the operator


Expression = RegionReference | Constant | BinaryOperation


def is_truth_valued(expression: Expression) -> bool:
    """Whether the expression is a comparison or a combination of comparisons (not a number)."""
    return isinstance(expression, BinaryOperation) and expression.operator not in ARITHMETIC


def parse_formula(formula: str) -> Expression:
    """The expression tree of a prediction formula; raises ``FormulaError`` naming the position."""
    return _Parser(formula).formula()


@dataclass
class _Level:
    """The formula, or one bracket of it, while it is read: the operations still waiting for their
    right operand at each precedence (``(left, operator, position)``), innermost last."""

    opened_at: int | None  # the position of its opening bracket; None for the whole formula
    connective: tuple[Expression, str, int] | None = None
    comparison: tuple[Expression, str, int] | None = None
    sum: tuple[Expression, str, int] | None = None


_MAX_REGION_DIGITS = 9


class _Parser:
    """Precedence parsing over the characters (connectives < comparison < sum < value), with an
    explicit stack of open brackets in place of recursion: any nesting depth parses."""

    def __init__(self, text: str):
        self.text = text
        self.position = 0

    def error(self, problem: str, position: int, expected: str | None = None) -> FormulaError:
        return FormulaError(problem, formula=self.text, position=position, expected=expected)

    def formula(self) -> Expression:
        if not self.text.strip():
            raise self.error("empty formula", 0, "a comparison such as (2;%mismatch%) > (2;%match%)")
        expression = self.expression()
        self.skip_space()
        if self.position < len(self.text):
            found = self.text[self.position]
            problem = "unmatched closing bracket" if found in ")]" else f"unexpected {found!r}"
            raise self.error(problem, self.position, "an operator or the end of the formula")
        if not is_truth_valued(expression):
            raise self.error(
                "the formula is a number, not a comparison",
                0,
                "a comparison such as (2;%mismatch%) > (2;%match%)",
            )
        return expression

    def skip_space(self) -> None:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1

    def take_operator(self, operators: Sequence[str]) -> tuple[str, int] | None:
        self.skip_space()
        if self.position < len(self.text) and self.text[self.position] in operators:
            self.position += 1
            return self.text[self.position - 1], self.position - 1
        return None

    def expression(self) -> Expression:
        """Read values and operators up to the end of the formula's top level."""
        levels = [_Level(None)]
        while True:
            operand = self.value()
            if operand is None:  # an opening bracket: its contents come first
                levels.append(_Level(self.position - 1))
                continue
            while (operand := self.extend(levels[-1], operand)) is not None:
                opened_at = levels.pop().opened_at
                if opened_at is None:
                    return operand
                self.skip_space()
                closing = CLOSING_BRACKET[self.text[opened_at]]
                if self.position == len(self.text) or self.text[self.position] != closing:
                    raise self.error(
                        f"bracket {self.text[opened_at]!r} is not closed", opened_at, repr(closing)
                    )
                self.position += 1  # the bracketed expression is an operand of the level around it

    def extend(self, level: _Level, operand: Expression) -> Expression | None:
        """Take ``operand`` into ``level``. Returns None when an operator follows (its right operand
        is read next), else the level's whole expression: it ends here."""
        if level.sum is not None:
            left, symbol, position = level.sum
            self.check_sides(symbol, position, left, operand, truth_valued=False, does="adds numbers")
            operand, level.sum = BinaryOperation(symbol, left, operand, position), None
        if (taken := self.take_operator(ARITHMETIC)) is not None:
            level.sum = (operand, *taken)
            return None
        if level.comparison is not None:
            left, symbol, position = level.comparison
            self.check_sides(symbol, position, left, operand, truth_valued=False, does="compares numbers")
            chained = self.take_operator(COMPARISONS)
            if chained is not None:
                raise self.error(
                    f"comparisons cannot be chained ({symbol!r} then {chained[0]!r})",
                    chained[1],
                    "'&' or '|' between two comparisons",
                )
            operand, level.comparison = BinaryOperation(symbol, left, operand, position), None
        elif (taken := self.take_operator(COMPARISONS)) is not None:
            level.comparison = (operand, *taken)
            return None
        if level.connective is not None:
            left, symbol, position = level.connective
            self.check_sides(symbol, position, left, operand, truth_valued=True, does="joins comparisons")
            operand, level.connective = BinaryOperation(symbol, left, operand, position), None
        if (taken := self.take_operator(CONNECTIVES)) is not None:
            level.connective = (operand, *taken)
            return None
        return operand

    def check_sides(
        self,
        symbol: str,
        position: int,
        left: Expression,
        right: Expression,
        *,
        truth_valued: bool,
        does: str,
    ) -> None:
        for side, name in ((left, "left"), (right, "right")):
            if is_truth_valued(side) != truth_valued:
                found, expected = (
                    ("a number", "a comparison") if truth_valued else ("a comparison", "a number")
                )
                raise self.error(f"{symbol!r} {does}, but its {name} side is {found}", position, expected)

    def value(self) -> Expression | None:
        """A region reference or a number; None after an opening bracket (consumed)."""
        self.skip_space()
        start = self.position
        if start == len(self.text):
            raise self.error("the formula ends where a value should be", start, _VALUE)
        if reference := _REGION_REFERENCE.match(self.text, start):
            number = reference.group(1)
            if len(number) > _MAX_REGION_DIGITS:
                raise self.error(f"region number of {len(number)} digits", start, _REFERENCE_FORM)
            self.position = reference.end()
            region = None if number == "*" else int(number)
            return RegionReference(region, reference.group(2), start)
        if _REGION_REFERENCE_START.match(self.text, start):
            raise self.error("malformed region reference", start, _REFERENCE_FORM)
        if self.text[start] in CLOSING_BRACKET:
            self.position += 1
            return None
        if number := _NUMBER.match(self.text, start):
            self.position = number.end()
            return Constant(float(number.group()), start)
        raise self.error(f"unexpected {self.text[start]!r}", start, _VALUE)


def approximately_equal(a: float, b: float) -> bool:
    """SyntaxGym's ``=``: ``numpy.isclose(a, b, rtol=1e-5, atol=1e-3)`` (the tolerance scales with ``b``)."""
    return bool(np.isclose(a, b, rtol=EQUALITY_RTOL, atol=EQUALITY_ATOL))


_OPERATIONS: dict[str, Callable[[float, float], float | bool]] = {
    "+": operator.add,
    "-": operator.sub,
    "<": operator.lt,
    ">": operator.gt,
    "=": approximately_equal,
    "&": lambda a, b: bool(a) and bool(b),
    "|": lambda a, b: bool(a) or bool(b),
}


# The same operations on numpy arrays, element by element (many draws of region values at once).
_ELEMENTWISE_OPERATIONS: dict[str, Callable] = {
    **_OPERATIONS,
    "=": lambda a, b: np.isclose(a, b, rtol=EQUALITY_RTOL, atol=EQUALITY_ATOL),
    "&": np.logical_and,
    "|": np.logical_or,
}


def evaluate_formula(expression: Expression, region_values: Mapping[str, Sequence[float]]) -> float | bool:
    """The value of an expression for one item: ``region_values[condition][k - 1]`` is region
    ``k``'s value. A formula (``parse_formula``) evaluates to a bool. Iterative, left operand first."""
    return _evaluate(expression, region_values, _OPERATIONS)


def evaluate_formula_elementwise(expression: Expression, region_values: Mapping[str, Sequence[np.ndarray]]):
    """``evaluate_formula`` over arrays: every region value is an array (all of one shape) and the
    result is an array of the formula's values, element by element."""
    return _evaluate(expression, region_values, _ELEMENTWISE_OPERATIONS)


def _evaluate(expression: Expression, region_values: Mapping[str, Sequence], operations: Mapping[str, Callable]):
    results: list[float | bool] = []
    work: list[Expression | str] = [expression]  # a str applies that operator to the last two results
    while work:
        item = work.pop()
        if isinstance(item, str):
            right = results.pop()
            results.append(operations[item](results.pop(), right))
        elif isinstance(item, Constant):
            results.append(item.value)
        elif isinstance(item, RegionReference):
            values = region_values[item.condition]
            results.append(sum(values) if item.region is None else values[item.region - 1])
        else:
            work += [item.operator, item.right, item.left]
    return results[0]


def region_references(expression: Expression) -> list[RegionReference]:
    """Every region reference of the expression, left to right."""
    references: list[RegionReference] = []
    work: list[Expression] = [expression]
    while work:
        item = work.pop()
        if isinstance(item, RegionReference):
            references.append(item)
        elif isinstance(item, BinaryOperation):
            work += [item.right, item.left]
    return references


@dataclass(frozen=True)
class ComparisonMargin:
    """One comparison of a formula on one item: its sides' values, whether it holds, and its margin
    (bits): how far the values are from flipping it, positive when it holds -- ``b - a`` for
    ``a < b``, ``a - b`` for ``a > b``, and for ``a = b`` the tolerance left,
    ``1e-3 + 1e-5 * |b| - |a - b|``."""

    operator: str
    left: float
    right: float
    holds: bool
    margin: float


def comparison_margins(
    expression: Expression, region_values: Mapping[str, Sequence[float]]
) -> tuple[float, list[ComparisonMargin]]:
    """A formula's margin on one item and its comparisons', left to right. The formula's margin
    combines its comparisons' as its connectives combine their truth: the smallest for ``&``, the
    largest for ``|``. A formula of strict comparisons holds exactly when its margin is positive;
    ``|margin|`` is how far the comparison that decides the outcome is from flipping."""
    comparisons: list[ComparisonMargin] = []
    margins: list[float] = []
    work: list[Expression | str] = [expression]
    while work:
        item = work.pop()
        if isinstance(item, str):
            right, left = margins.pop(), margins.pop()
            margins.append(min(left, right) if item == "&" else max(left, right))
        elif isinstance(item, BinaryOperation) and item.operator in CONNECTIVES:
            work += [item.operator, item.right, item.left]
        elif isinstance(item, BinaryOperation) and item.operator in COMPARISONS:
            left = float(evaluate_formula(item.left, region_values))
            right = float(evaluate_formula(item.right, region_values))
            if item.operator == "<":
                margin = right - left
            elif item.operator == ">":
                margin = left - right
            else:
                margin = EQUALITY_ATOL + EQUALITY_RTOL * abs(right) - abs(left - right)
            holds = bool(_OPERATIONS[item.operator](left, right))
            comparisons.append(ComparisonMargin(item.operator, left, right, holds, margin))
            margins.append(margin)
        else:
            raise TypeError(f"not a formula (a comparison or a combination of comparisons): {item!r}")
    return margins[0], comparisons
