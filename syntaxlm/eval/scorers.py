"""A ``Scorer`` (``inference.scorer``) as the scoring callables the evaluations take.

The evaluations never see a model or a scorer: SyntaxGym reads a ``TokenScorer`` and BLiMP a
``SentenceScorer``. ``syntaxgym_scorer`` and ``blimp_scorer`` make them from a scorer, so that
inference knows nothing of the evaluations, and the evaluations themselves nothing of inference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from syntaxlm.eval.syntaxgym import ScoredTokens, TokenizerConvention
from syntaxlm.inference.scorer import END, Scorer


def syntaxgym_scorer(scorer: Scorer, *, eos: bool = False):
    """A ``TokenScorer`` for ``syntaxgym.suite_region_values`` and its ``TokenizerConvention``.

    Suite sentences are space-separated words; each word is one token whose log-probability sums
    its pieces, so tokens match the region text exactly. ``eos=True`` adds ``</s>`` as a suffix
    token (the end of the sentence, in the last region).
    """

    def score(sentences: Sequence[str]) -> list[ScoredTokens]:
        results = scorer.score([sentence.split() for sentence in sentences])
        out = []
        for s in results:
            tokens, values = list(s.words), list(s.word_logprobs)
            if eos:
                tokens.append(END)
                values.append(s.end_logprob)
            out.append(ScoredTokens(tokens=tokens, logprobs=values))
        return out

    convention = TokenizerConvention(suffix_tokens=frozenset({END}) if eos else frozenset())
    return score, convention


_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")
_EDGE_PUNCTUATION = ".,!?;:\"'()"


def ptb_tokens(text: str) -> list[str]:
    """A sentence split roughly as the Penn Treebank does: punctuation off the edges of words
    and clitics off their hosts (``don't`` → ``do n't``, ``cat's`` → ``cat 's``)."""
    tokens: list[str] = []
    for chunk in text.split():
        before: list[str] = []
        after: list[str] = []
        while chunk and chunk[0] in _EDGE_PUNCTUATION:
            before.append(chunk[0])
            chunk = chunk[1:]
        while chunk and chunk[-1] in _EDGE_PUNCTUATION:
            after.append(chunk[-1])
            chunk = chunk[:-1]
        middle = [chunk] if chunk else []
        match = _CLITIC.match(chunk) if chunk else None
        if match:
            middle = [match.group(1), match.group(2)]
        tokens.extend([*before, *middle, *reversed(after)])
    return tokens


def blimp_scorer(scorer: Scorer, *, tokenize: Callable[[str], list[str]] = ptb_tokens):
    """A ``SentenceScorer`` for ``blimp.score_blimp``: each sentence's full log-probability
    (its words and the end), after ``tokenize`` (PTB-like splitting by default)."""

    def score(sentences: Sequence[str]) -> list[float]:
        return scorer.sequence_score([tokenize(s) for s in sentences], reduction="sum", eos=True)

    return score
