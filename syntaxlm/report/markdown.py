"""Markdown for the reports: tables, headings and images as lines of text, and the report file
written whole (``write_markdown``). A report is a list of lines, blocks separated by one blank line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from syntaxlm.files import atomic_writer

ALIGNMENTS = {"left": "---", "right": "---:"}


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] = ()) -> list[str]:
    """A table's lines: the header, the alignment row, then one line per row. ``align``: per
    column, ``"left"`` or ``"right"`` (numbers); columns it does not reach are left-aligned. Cells
    are written as given (no escaping)."""
    align = [*align, *["left"] * (len(headers) - len(align))]
    if len(align) != len(headers) or not set(align) <= ALIGNMENTS.keys():
        raise ValueError(f"alignments {list(align)} for {len(headers)} columns: expected left or right each")
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(headers)} columns: {list(row)}")
    return [
        _row(headers),
        "|" + "|".join(ALIGNMENTS[side] for side in align) + "|",
        *(_row(row) for row in rows),
    ]


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def heading(text: str, level: int = 2) -> str:
    """A heading line: ``## text`` at level 2."""
    return f"{'#' * level} {text}"


def image(alt: str, path: str) -> str:
    """An image line: ``![alt](path)``, ``path`` relative to the report."""
    return f"![{alt}]({path})"


def write_markdown(path: str | Path, lines: Sequence[str]) -> Path:
    """Write a report's lines, joined by newlines, atomically; returns its path."""
    path = Path(path)
    with atomic_writer(path) as handle:
        handle.write("\n".join(lines))
    return path
