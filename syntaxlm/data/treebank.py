"""Treebank files: PTB brackets (one tree per line or spread over lines) or CoNLL-U (``.conllu``,
``.conll``), read into the trees every model prepares its rows from; the problems a model finds
in their sentences (``DataProblems``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.dependency import ConlluReader, is_conllu
from syntaxlm.trees.ptb import TreeReader


def treebank_kind(path: str | Path) -> str:
    """``"dependency"`` for CoNLL-U files, ``"constituency"`` for PTB brackets (``SyntacticLM.reads``)."""
    return "dependency" if is_conllu(path) else "constituency"


def read_treebank(path: str | Path, *, pos_tags: bool = True) -> list:
    """The trees of a file: PTB brackets in the Choe–Charniak view (no traces, function tags, ROOT
    or POS tags) as ``Tree``s, or CoNLL-U as ``DepTree``s."""
    return read_treebank_positions(path, pos_tags=pos_tags)[0]


def read_treebank_positions(path: str | Path, *, pos_tags: bool = True) -> tuple[list, list[int], list[int]]:
    """``read_treebank``, with each tree's index in the file and the indices of the trees the
    reader dropped because cleaning left them without words (only traces, e.g.)."""
    if is_conllu(path):
        trees = list(ConlluReader(path))
        return trees, list(range(len(trees))), []
    cleaning = CHOE_CHARNIAK_CLEANING if pos_tags else replace(CHOE_CHARNIAK_CLEANING, drop_pos_tags=False)
    reader = TreeReader(path, cleaning=cleaning, pos_tags=pos_tags)
    trees, positions, empty = [], [], []
    for tree in reader:  # trees emptied by cleaning are counted between two yields
        while len(positions) + len(empty) < len(trees) + reader.report.emptied:
            empty.append(len(positions) + len(empty))
        positions.append(len(positions) + len(empty))
        trees.append(tree)
    while len(positions) + len(empty) < len(trees) + reader.report.emptied:
        empty.append(len(positions) + len(empty))
    return trees, positions, empty


@dataclass
class DataProblems:
    """Sentences of a treebank a model cannot train on as they are, by kind of problem: the
    sentences' indices and what happened to them (``meaning``, e.g. "longer than max_length 512
    positions; dropped")."""

    found: dict[str, list[int]] = field(default_factory=dict)
    meaning: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, index: int, meaning: str) -> None:
        self.found.setdefault(kind, []).append(index)
        self.meaning.setdefault(kind, meaning)

    def __bool__(self) -> bool:
        return any(self.found.values())

    def merged(self, other: DataProblems, positions: Sequence[int] | None = None) -> DataProblems:
        """Both reports in one; ``positions[i]`` is this report's index of ``other``'s sentence ``i``."""
        out = DataProblems({kind: list(values) for kind, values in self.found.items()}, dict(self.meaning))
        for kind, indices in other.found.items():
            for index in indices:
                out.add(kind, positions[index] if positions is not None else index, other.meaning[kind])
        return out

    def lines(self, shown: int = 5) -> list[str]:
        """One line per kind: count, meaning, the first ``shown`` sentence indices (0-based)."""
        lines = []
        for kind, indices in self.found.items():
            first = ", ".join(map(str, sorted(indices)[:shown])) + (", ..." if len(indices) > shown else "")
            lines.append(f"{len(indices)} {self.meaning[kind]} ({kind}): sentences {first}")
        return lines

    def to_dict(self, shown: int = 20) -> dict[str, Any]:
        return {
            kind: {"count": len(indices), "meaning": self.meaning[kind], "first": sorted(indices)[:shown]}
            for kind, indices in self.found.items()
        }
