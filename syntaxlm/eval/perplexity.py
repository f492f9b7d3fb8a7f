"""Perplexity and surprisal from per-word natural-log probabilities.

Input, per sentence (per document for document-level corpora): the log-probability of each word
given its prefix, ``log p(word | prefix)`` in nats, and the log-probability of what ends the
sentence after its last word, ``log p(end | sentence)``. For a words-only model the end is the
``</s>`` symbol; for a joint model of words and trees (TG, TXL (trees), PLM, PLM-mask) it is the
closing actions after the last word, which end the tree (these models have no ``</s>``: TG's
sequence ends at the tree's last closer). Every model in syntaxlm gives both; the scorer's
``SentenceScores`` hold them as ``word_logprobs`` and ``end_logprob``.

The result keeps the raw totals (nats) and reports each published convention, labelled:

- ``per_word``: ``exp(−Σ_x log p(x) / N_words)``, where ``log p(x)`` is the whole sentence's
  log-probability *including* its end term, divided by the number of words only. This is TG's
  word perplexity (Sartran et al. 2022, §3.1: ``PPL(D) = (Π_x p(x))^(−1/N_w)``) and Qian et al.'s
  "word-level perplexity" (2021, §3.2.1, Fig. 4; their code: ``exp(−log p(x, gold tree) / #words)``).
- ``per_token``: ``exp(−Σ_x log p(x) / (N_words + N_sentences))``: the same numerator, the end of
  each sentence counted as one more token. This is the word-level PTB convention of the LSTM-LM
  line (Mikolov's PTB, one ``</s>``/``<eos>`` per line, predicted and counted): PRPN (Shen et al.
  2018, §6.2, Table 2) follows it; its code appends ``</s>`` to every line and counts it. SOM
  (Table 3) and DMLM (§3.3, Table 7, the AWD-LSTM setup) report PTB perplexity without stating the
  denominator; their comparisons are to numbers from this tradition.
- ``per_word_without_end``: ``exp(−Σ log p(words) / N_words)``: the end terms left out of the
  numerator (the sentences' prefix probability). No paper reports this; it is kept for
  comparison with tools that drop the end of sentence.

Corpus perplexities pool all sentences (the mean per word or token, not the mean of sentence
perplexities); per-sentence perplexities (per-word convention) are reported beside them. For a
joint model the word log-probabilities estimate a marginal over trees: the joint probability with
the gold tree, or a beam's sum over some trees, is a lower bound on ``p(words)``, so the perplexity
computed from it is an upper bound. ``marginalisation`` records how they were obtained, as free
metadata such as ``{"method": "gold-tree", "bound": "upper"}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from syntaxlm.errors import SyntaxlmError

CONVENTIONS: dict[str, str] = {
    "per_word": (
        "exp(-(sum of log p(words) + sum of log p(end)) / words): whole sentences, end included, per word "
        "(TG, Sartran et al. 2022 §3.1; Qian et al. 2021 §3.2.1)"
    ),
    "per_token": (
        "exp(-(sum of log p(words) + sum of log p(end)) / (words + sentences)): the end of each sentence "
        "counted as a token (word-level PTB LSTM LMs, e.g. PRPN, Shen et al. 2018 §6.2)"
    ),
    "per_word_without_end": (
        "exp(-sum of log p(words) / words): the end-of-sentence terms left out (no paper uses it)"
    ),
}


class LogprobError(SyntaxlmError, ValueError):
    """Log-probabilities that cannot be used (empty, NaN, +inf); names the sentence and entry."""


def surprisal_bits(logprob: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
    """Surprisal in bits, ``−log2 p``, of natural-log probabilities (a number or an array)."""
    if np.ndim(logprob) == 0:
        return -float(logprob) / math.log(2)
    return -np.asarray(logprob, dtype=np.float64) / math.log(2)


def _perplexity(total_logprob: float, n_tokens: int) -> float:
    with np.errstate(over="ignore"):
        return float(np.exp(-total_logprob / n_tokens))


@dataclass(frozen=True)
class PerplexityResult:
    """Corpus totals and the perplexity of each convention (module docstring)."""

    word_logprob: float  # nats: Σ log p(word | prefix) over every word
    end_logprob: float  # nats: Σ log p(end | sentence) over every sentence
    n_words: int
    n_sentences: int
    sentence_perplexities_per_word: list[float]
    marginalisation: dict[str, Any] | None

    @property
    def total_logprob(self) -> float:
        """``Σ_x log p(x)`` in nats: every word and every end of sentence."""
        return self.word_logprob + self.end_logprob

    @property
    def per_word(self) -> float:
        """``exp(−Σ log p(x) / N_words)``, end terms in the numerator (TG §3.1, Qian et al. §3.2.1)."""
        return _perplexity(self.total_logprob, self.n_words)

    @property
    def per_token(self) -> float:
        """``exp(−Σ log p(x) / (N_words + N_sentences))``: the end counted as a token (PTB LSTM LMs)."""
        return _perplexity(self.total_logprob, self.n_words + self.n_sentences)

    @property
    def per_word_without_end(self) -> float:
        """``exp(−Σ log p(words) / N_words)``: the end terms left out."""
        return _perplexity(self.word_logprob, self.n_words)

    def to_json(self) -> dict[str, Any]:
        return {
            "perplexity_per_word": self.per_word,
            "perplexity_per_token": self.per_token,
            "perplexity_per_word_without_end": self.per_word_without_end,
            "conventions": dict(CONVENTIONS),
            "total_logprob_nats": self.total_logprob,
            "word_logprob_nats": self.word_logprob,
            "end_logprob_nats": self.end_logprob,
            "n_words": self.n_words,
            "n_sentences": self.n_sentences,
            "marginalisation": self.marginalisation,
            "sentence_perplexities_per_word": self.sentence_perplexities_per_word,
        }

    def render(self) -> str:
        text = (
            f"perplexity per word {self.per_word:.2f} (TG / Qian et al.: -log p(sentences, end included) "
            f"over {self.n_words} words); per token {self.per_token:.2f} (end counted as a token: "
            f"{self.n_words} words + {self.n_sentences} ends); per word without the end "
            f"{self.per_word_without_end:.2f}; {self.n_sentences} sentences"
        )
        if self.marginalisation:
            text += "; marginalisation: " + ", ".join(f"{k}={v}" for k, v in self.marginalisation.items())
        return text


def _checked(values: Any, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(np.isnan(array) | (array == np.inf))
    if bad.size:
        raise LogprobError(
            f"{what.format(int(bad[0]))} is {array.flat[bad[0]]}; expected a finite log-probability or -inf"
        )
    return array


def perplexity(
    word_logprobs: Sequence[Sequence[float]],
    end_logprobs: Sequence[float],
    *,
    marginalisation: Mapping[str, Any] | None = None,
) -> PerplexityResult:
    """Perplexity of a corpus from, per sentence (or document), the natural-log probabilities of
    its words and of its end; see the module docstring for the conventions and ``marginalisation``."""
    if len(word_logprobs) == 0:
        raise LogprobError("no sentences")
    if len(end_logprobs) != len(word_logprobs):
        raise LogprobError(
            f"{len(word_logprobs)} sentences but {len(end_logprobs)} end-of-sentence log-probabilities; "
            "expected one per sentence"
        )
    metadata = None if marginalisation is None else dict(marginalisation)
    try:
        json.dumps(metadata)
    except TypeError as error:
        raise LogprobError(f"marginalisation metadata is not JSON-able: {error}") from None
    words_total = 0.0
    n_words = 0
    sentence_perplexities = []
    ends = _checked(end_logprobs, "the end log-probability of sentence {}")
    if ends.ndim != 1:
        raise LogprobError(
            f"expected one end-of-sentence log-probability per sentence, got shape {ends.shape}"
        )
    for index, values in enumerate(word_logprobs):
        array = _checked(values, f"entry {{}} of sentence {index}")
        if array.ndim != 1 or array.size == 0:
            raise LogprobError(f"sentence {index} has no word log-probabilities; expected one entry per word")
        sentence_words = float(array.sum())
        words_total += sentence_words
        n_words += array.size
        sentence_perplexities.append(_perplexity(sentence_words + float(ends[index]), array.size))
    return PerplexityResult(
        word_logprob=words_total,
        end_logprob=float(ends.sum()),
        n_words=n_words,
        n_sentences=len(word_logprobs),
        sentence_perplexities_per_word=sentence_perplexities,
        marginalisation=metadata,
    )
