"""How nonterminals and tree-building actions are spelled as vocabulary tokens.

Two linearisations of a tree are used by the models: the Choe–Charniak string of Transformer
Grammars, ``(S (NP the bird NP) (VP sings VP) S)``, with an opening and a closing symbol per
label, and the RNNG action sequence of the structure-guided transformers,
``NT(S) NT(NP) the bird REDUCE NT(VP) sings REDUCE REDUCE``. Vocabularies hold these symbols as
atomic tokens; the structure layer writes sequences with the same spelling.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

REDUCE = "REDUCE"

SymbolStyle = Literal["choe-charniak", "rnng", "both", "none"]


def opening_nonterminal(label: str) -> str:
    return f"({label}"


def closing_nonterminal(label: str) -> str:
    return f"{label})"


def open_action(label: str) -> str:
    return f"NT({label})"


def nonterminal_symbols(labels: Iterable[str], style: SymbolStyle = "both") -> list[str]:
    """The atomic symbols for a set of nonterminal labels, in a fixed order."""
    labels = sorted(set(labels))
    symbols: list[str] = []
    if style in ("choe-charniak", "both"):
        symbols += [opening_nonterminal(label) for label in labels]
        symbols += [closing_nonterminal(label) for label in labels]
    if style in ("rnng", "both"):
        symbols += [open_action(label) for label in labels] + [REDUCE]
    return symbols
