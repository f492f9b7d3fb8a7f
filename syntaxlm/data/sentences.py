"""The files that scoring and parsing read: sentences, one per line with words separated by
spaces, or a treebank (PTB brackets) whose trees are given with them, told apart by the first
non-blank character; and the stimuli ``score`` reads (``read_stimuli``): raw sentences, each with
an optional id, split into words by a tokeniser (``text.tokenize``)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from syntaxlm.errors import InputFormatError
from syntaxlm.files import read_lines
from syntaxlm.text.tokenize import tokenize
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


@dataclass
class Stimuli:
    """The sentences of a stimuli file as a model reads them: per sentence its ``words`` (after the
    tokeniser), its ``id`` (the file's id column, or its line number when there is none), its
    ``line`` and, per word, the index (from 0) of the space-separated word of the line it comes
    from (``input_words``); ``blank_lines``, the numbers of the blank lines left out;
    ``id_column``, whether the ids come from an id column."""

    words: list[list[str]] = field(default_factory=list)
    ids: list[int | str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    input_words: list[list[int]] = field(default_factory=list)
    blank_lines: list[int] = field(default_factory=list)
    id_column: bool = False


STIMULI_EXPECTED = "a sentence per line, or ID<TAB>SENTENCE on every line"


def read_stimuli(path: str | Path, *, tokenize_as: str = "whitespace") -> Stimuli:
    """The sentences of a stimuli file (``Stimuli``), split into words by ``tokenize_as`` (one of
    ``text.tokenize.TOKENIZERS``). A line is a sentence or, when the file has an id column, an id,
    a tab and the sentence: the first sentence's line decides, and every other line must agree.
    Blank lines are left out (``blank_lines``); an id without a sentence, an empty id and an id
    given twice are ``InputFormatError``s at their line."""
    stimuli = Stimuli()
    has_ids: bool | None = None
    first_line = 0
    seen: dict[str, int] = {}
    for number, line in enumerate(read_lines(path, InputFormatError), 1):
        line = line.rstrip("\n")
        if not line.strip():
            stimuli.blank_lines.append(number)
            continue
        tabbed = "\t" in line
        if has_ids is None:
            has_ids, first_line = tabbed, number
        elif tabbed != has_ids:
            which = "has an id (a tab)" if tabbed else "has no id (no tab)"
            first = "has one" if has_ids else "has none"
            raise InputFormatError(
                f"this line {which}, but line {first_line} {first}", path=path, line=number,
                expected=STIMULI_EXPECTED,
            )  # fmt: skip
        sentence_id: int | str = number
        text = line
        if has_ids:
            given, text = line.split("\t", 1)
            sentence_id = given.strip()
            if not sentence_id:
                raise InputFormatError("empty id", path=path, line=number, expected=STIMULI_EXPECTED)
            if not text.strip():
                raise InputFormatError(
                    f"id {sentence_id!r} has no sentence", path=path, line=number, expected=STIMULI_EXPECTED
                )
            if sentence_id in seen:
                raise InputFormatError(
                    f"id {sentence_id!r} is also the id of line {seen[sentence_id]}", path=path, line=number,
                    expected="a different id on every line",
                )  # fmt: skip
            seen[sentence_id] = number
        words, sources = tokenize(text, tokenize_as)
        stimuli.words.append(words)
        stimuli.ids.append(sentence_id)
        stimuli.lines.append(number)
        stimuli.input_words.append(sources)
    stimuli.id_column = bool(has_ids)
    return stimuli


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
