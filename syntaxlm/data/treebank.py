"""Treebank files: PTB brackets (one tree per line or spread over lines) or CoNLL-U (``.conllu``,
``.conll``), read into the trees every model prepares its rows from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

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
