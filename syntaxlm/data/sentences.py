"""The files that scoring and parsing read: sentences, one per line with words separated by
spaces, or a treebank (PTB brackets) whose trees are given with them, told apart by the first
non-blank character."""

from __future__ import annotations

import contextlib
from pathlib import Path

from syntaxlm.errors import InputFormatError
from syntaxlm.files import read_lines
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree


def read_sentences(path: str | Path) -> list[list[str]]:
    """Every line's words; an empty line is an ``InputFormatError`` at its line."""
    sentences = []
    for number, line in enumerate(read_lines(path, InputFormatError), 1):
        words = line.split()
        if not words:
            raise InputFormatError(
                "empty line", path=path, line=number, expected="a sentence: words separated by spaces"
            )
        sentences.append(words)
    return sentences


def is_treebank(path: str | Path) -> bool:
    """Whether a file holds PTB brackets: its first non-blank character is '('."""
    with contextlib.closing(read_lines(path, InputFormatError)) as lines:
        for line in lines:
            if line.strip():
                return line.lstrip().startswith("(")
    return False


def read_given_trees(path: str | Path, *, pos_tags: bool) -> list[Tree]:
    """The trees of a treebank as the models read them: Penn style (``pos_tags``) cleaned to the
    Choe–Charniak view first, or read as they are (already without POS tags)."""
    return list(TreeReader(path, cleaning=CHOE_CHARNIAK_CLEANING if pos_tags else None, pos_tags=pos_tags))
