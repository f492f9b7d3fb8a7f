"""Raw text as the words a model reads: split on spaces, or as the Penn Treebank does.

The models are trained on Penn-Treebank-style words (``do n't``, ``company 's``, punctuation apart
from the words), so raw stimuli read word by word on spaces leave clitics and punctuation on their
hosts, which the vocabulary then reads as unknown words. ``ptb_tokens`` splits a text roughly as
the Penn Treebank does (punctuation off the edges of words, clitics off their hosts), ``ptb_words``
does that for one displayed token and spells quotes and brackets as the treebank does (`````` and
``''``, ``-LRB-``). ``TOKENIZERS`` names the two ways a sentence of raw text becomes words
(``tokenize``): ``whitespace`` and ``ptb``.
"""

from __future__ import annotations

import re

_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")
_CLITICS = frozenset(("n't", "'s", "'re", "'ve", "'ll", "'d", "'m"))
_EDGE_PUNCTUATION = ".,!?;:\"'()"
_PTB_WORDS = frozenset(("``", "''", "...", "--"))  # treebank words made of edge punctuation
_OPENING_QUOTES = {'"': "``", "'": "``", "“": "``", "‘": "``"}
_CLOSING_QUOTES = {'"': "''", "'": "''", "”": "''", "’": "''"}
_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-"}


def ptb_tokens(text: str) -> list[str]:
    """A sentence split roughly as the Penn Treebank does: punctuation off the edges of words
    and clitics off their hosts (``don't`` → ``do n't``, ``cat's`` → ``cat 's``). A period ends
    the sentence only at the end of ``text``: before, it stays on its word, as the treebank keeps
    abbreviations (``Mr.``, ``U.S.``). Words already split so (a clitic alone, ``n't``, ``'s``;
    the treebank's quotes `````` and ``''``, ``...``, ``--``) stay as they are."""
    chunks = text.split()
    tokens: list[str] = []
    for index, chunk in enumerate(chunks):
        tokens.extend(_ptb_chunk(chunk, split_period=index == len(chunks) - 1))
    return tokens


def _ptb_chunk(chunk: str, *, split_period: bool) -> list[str]:
    if chunk.lower() in _CLITICS or chunk in _PTB_WORDS:
        return [chunk]
    before: list[str] = []
    after: list[str] = []
    while chunk and chunk[0] in _EDGE_PUNCTUATION:
        before.append(chunk[0])
        chunk = chunk[1:]
    while chunk and chunk[-1] in _EDGE_PUNCTUATION and (split_period or chunk[-1] != "."):
        after.append(chunk[-1])
        chunk = chunk[:-1]
    middle = [chunk] if chunk else []
    match = _CLITIC.match(chunk) if chunk else None
    if match:
        middle = [match.group(1), match.group(2)]
    return [*before, *middle, *reversed(after)]


def ptb_words(token: str, *, split_period: bool = True) -> tuple[str, ...]:
    """A displayed token as Penn-Treebank-style words: punctuation off its edges, clitics off their
    host, quotes as `````` and ``''``, brackets as ``-LRB-`` ... (``"'It's`` → `````` ``It`` ``'s``).
    ``split_period``: a period at its end too (a token that may end a sentence), else it stays."""
    words = _ptb_chunk(token, split_period=split_period) or [token]
    out = []
    seen_word = False
    for word in words:
        if word in _OPENING_QUOTES and not seen_word:
            out.append(_OPENING_QUOTES[word])
        elif word in _CLOSING_QUOTES:
            out.append(_CLOSING_QUOTES[word])
        else:
            out.append(_BRACKETS.get(word, word))
            seen_word = seen_word or word not in _BRACKETS
    return tuple(out)


TOKENIZERS = ("whitespace", "ptb")
"""How a sentence of raw text becomes words (``tokenize``): ``whitespace``, each run of non-space
characters one word, as given; ``ptb``, each of those split by ``ptb_words``."""


def tokenize(text: str, how: str) -> tuple[list[str], list[int]]:
    """``text``'s words by ``how`` (one of ``TOKENIZERS``) and, per word, the index (from 0) of the
    space-separated word of ``text`` it comes from (``didn't`` → ``did`` ``n't``, both from it). A
    period is split off only at the end of the text (``ptb_tokens``)."""
    if how not in TOKENIZERS:
        raise ValueError(f"tokenize must be one of {', '.join(TOKENIZERS)}, got {how!r}")
    words: list[str] = []
    sources: list[int] = []
    chunks = text.split()
    for index, chunk in enumerate(chunks):
        split = (chunk,) if how == "whitespace" else ptb_words(chunk, split_period=index == len(chunks) - 1)
        words.extend(split)
        sources.extend([index] * len(split))
    return words, sources
