"""Which SyntaxGym items one run gets and another does not, from per-item result files.

``eval sg --out`` writes one result file per suite with every item's outcome. ``compare_sg_items``
reads two such sets (a result file, or a folder searched for them: a run folder, or the folder
``eval sg --out`` wrote) and, per suite scored by both, splits the items by the outcome of
prediction 0 (the one the suite accuracy counts): held under both, only under A, only under B,
under neither, each with the item numbers. Suites scored by one side only are named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.report.evaluations import is_result_file, suite_scoring
from syntaxlm.results import read_result

OUTCOMES = ("both", "only_a", "only_b", "neither")
SPLIT = {(True, True): "both", (True, False): "only_a", (False, True): "only_b", (False, False): "neither"}


@dataclass(frozen=True)
class SuiteItems:
    """The items of one suite split by which side gets them right (item numbers, ascending)."""

    suite: str
    both: tuple[int, ...]
    only_a: tuple[int, ...]
    only_b: tuple[int, ...]
    neither: tuple[int, ...]

    @property
    def items(self) -> int:
        return len(self.both) + len(self.only_a) + len(self.only_b) + len(self.neither)

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "items": self.items} | {
            name: {"count": len(getattr(self, name)), "item_numbers": list(getattr(self, name))}
            for name in OUTCOMES
        }


@dataclass(frozen=True)
class ItemComparison:
    """Two runs' SyntaxGym items, suite by suite (``SuiteItems``), with how each side scored them."""

    a: str
    b: str
    a_method: str
    b_method: str
    suites: tuple[SuiteItems, ...]
    only_in_a: tuple[str, ...]  # suites only A scored
    only_in_b: tuple[str, ...]

    def totals(self) -> dict[str, int]:
        """Item counts over all the suites compared."""
        totals = {name: sum(len(getattr(s, name)) for s in self.suites) for name in OUTCOMES}
        return {"items": sum(s.items for s in self.suites)} | totals

    def to_json(self) -> dict[str, Any]:
        return {
            "a": {"path": self.a, "method": self.a_method},
            "b": {"path": self.b, "method": self.b_method},
            "outcome": "prediction 0 of each item (the one the suite accuracy counts)",
            "suites": [s.to_json() for s in self.suites],
            "totals": self.totals(),
            "suites_only_in_a": list(self.only_in_a),
            "suites_only_in_b": list(self.only_in_b),
        }

    def render(self) -> str:
        width = max([len(s.suite) for s in self.suites] + [len("all suites"), 5])
        lines = [
            f"A: {self.a} ({self.a_method})",
            f"B: {self.b} ({self.b_method})",
            "Items by the outcome of prediction 0 (the one the suite accuracy counts).",
            "",
            f"{'suite':<{width}}  items   both  only A  only B  neither",
        ]
        for s in [*self.suites, None]:
            name, counts = (
                ("all suites", self.totals())
                if s is None
                else (s.suite, {"items": s.items} | {n: len(getattr(s, n)) for n in OUTCOMES})
            )
            lines.append(
                f"{name:<{width}}  {counts['items']:>5}  {counts['both']:>5}  {counts['only_a']:>6}  "
                f"{counts['only_b']:>6}  {counts['neither']:>7}"
            )
        lines.append("")
        for s in self.suites:
            for name, label in (("only_a", "only A"), ("only_b", "only B")):
                if getattr(s, name):
                    lines.append(f"{s.suite}, {label}: items {', '.join(map(str, getattr(s, name)))}")
        for side, suites in (("A", self.only_in_a), ("B", self.only_in_b)):
            if suites:
                lines.append(f"scored by {side} only (not compared): {', '.join(suites)}")
        return "\n".join(lines).rstrip()


def sg_item_results(path: str | Path) -> dict[str, tuple[dict[str, Any], Path]]:
    """The SyntaxGym result records with per-item outcomes under ``path`` (a result file, or a
    folder searched recursively), by suite, each with its file. Raises ``InputFormatError`` when
    there are none, when a suite has two, or when a suite's result has no per-item outcomes."""
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if p.name != "config.json" and is_result_file(p))
    else:
        raise InputFormatError(
            "no such file or folder", path=path, expected="SyntaxGym results of eval sg --out"
        )
    found: dict[str, tuple[dict[str, Any], Path]] = {}
    for file in files:
        record = read_result(file)
        if record["kind"] != "syntaxgym":
            if file == path:
                raise InputFormatError(
                    f"a {record['kind']} result", path=file, expected="a SyntaxGym result (eval sg --out)"
                )
            continue
        suite = record["result"]["suite"]
        if suite in found:
            raise InputFormatError(
                f"a second result of suite {suite} (the first: {found[suite][1]})",
                path=file,
                expected="one result per suite: give the folder of one evaluation",
            )
        if not record["result"].get("items"):
            raise InputFormatError(
                f"suite {suite}: no per-item outcomes",
                path=file,
                expected="a result written by eval sg --out, which keeps every item's outcome",
            )
        found[suite] = (record, file)
    if not found:
        raise InputFormatError(
            "no SyntaxGym result files here", path=path, expected="SyntaxGym results of eval sg --out"
        )
    return found


def _outcomes(record: dict[str, Any]) -> dict[int, bool]:
    """Item number -> whether prediction 0 holds."""
    return {int(item["item_number"]): bool(item["results"][0]) for item in record["result"]["items"]}


def _methods(found: dict[str, tuple[dict[str, Any], Path]]) -> str:
    """How one side scored its suites: ``"beam 100/10/5"``, ``"exact"``, or several joined."""
    return " and ".join(sorted({suite_scoring(record) for record, _ in found.values()}))


def compare_sg_items(a: str | Path, b: str | Path) -> ItemComparison:
    """The items of every suite both ``a`` and ``b`` scored, split by which gets them right
    (module docstring). The suites must have the same item numbers on both sides."""
    found_a, found_b = sg_item_results(a), sg_item_results(b)
    compared = []
    for suite in sorted(found_a.keys() & found_b.keys()):
        (record_a, file_a), (record_b, file_b) = found_a[suite], found_b[suite]
        outcomes_a, outcomes_b = _outcomes(record_a), _outcomes(record_b)
        if outcomes_a.keys() != outcomes_b.keys():
            missing = sorted(outcomes_a.keys() ^ outcomes_b.keys())
            listed = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
            raise InputFormatError(
                f"suite {suite}: items {listed} are in only one of this file and {file_a}",
                path=file_b,
                expected="the same suite's items on both sides",
            )
        split: dict[str, list[int]] = {name: [] for name in OUTCOMES}
        for number in sorted(outcomes_a):
            split[SPLIT[outcomes_a[number], outcomes_b[number]]].append(number)
        compared.append(SuiteItems(suite, **{name: tuple(numbers) for name, numbers in split.items()}))
    if not compared:
        raise InputFormatError(
            f"no suite scored by both (A: {', '.join(sorted(found_a))}; B: {', '.join(sorted(found_b))})",
            path=b,
            expected=f"results of at least one suite that {a} also holds",
        )
    return ItemComparison(
        a=str(a),
        b=str(b),
        a_method=_methods(found_a),
        b_method=_methods(found_b),
        suites=tuple(compared),
        only_in_a=tuple(sorted(found_a.keys() - found_b.keys())),
        only_in_b=tuple(sorted(found_b.keys() - found_a.keys())),
    )
