"""Importance-sampled ``p(x)`` of a joint model, with proposal trees drawn from the span parser.

A joint model gives ``p(x, y)``; ``p(x) = Σ_y p(x, y)`` has too many trees to sum. With ``N``
independent samples ``y_i ~ q(y | x)`` of a proposal distribution (``models.span_parser``: exact
samples, exact ``log q``),

    p̂(x) = 1/N Σ_i p(x, y_i) / q(y_i | x)

is an unbiased estimate of ``Σ_{y : q(y|x) > 0} p(x, y)`` (Dyer et al. 2016, §5; duplicates are
kept: a tree drawn twice counts twice), and ``log p̂(x)`` is a consistent estimate of ``log p(x)``
whose expectation is slightly low for small ``N`` (Jensen), so the perplexity from it is slightly
high. ``sentence_estimate`` computes it from the unique trees, their draw counts, ``log p(x, y)``
and ``log q(y | x)``.

The TG paper's number is a different one (§3.1): the *sum* ``Σ_{y ∈ Y'} p(x, y)`` over a set
``Y'`` of ``N`` trees sampled *without* replacement, a lower bound on ``p(x)``
(``marginal.proposal_scores``, the ``proposals`` method), whose trees are also the ones reranked
(§3.2). Both come from one stream of the parser's draws (``draw_proposals``): its first ``N``
draws, repeats kept, are the importance sample; drawing goes on until ``N`` different trees have
appeared, and the trees in order of first appearance are the sample without replacement (it holds
the importance sample's unique trees). They are reported side by side, with the beam's marginal.

``importance_perplexity`` gives the corpus perplexity of the estimates and its spread over
sample draws, from independent groups of each sentence's draws (its docstring). The effective sample size of each sentence,
``(Σ w)² / Σ w²`` with ``w_i = p(x, y_i) / q(y_i | x)``, says how far ``q`` is from the model's
posterior (``N`` when they agree).

An estimate can be unreliable, and ``reliability_warnings`` says when: few effective samples
(the estimate rests on a handful of draws), or a perplexity above a proven upper bound (the
sum over the proposal trees or the beam's marginal, lower bounds on ``p(x)``): the model's
perplexity is at most that bound, so an estimate above it is certainly too high, which happens
when the parser rarely proposes the trees the model finds likely.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from syntaxlm.inference.beam import logsumexp
from syntaxlm.inference.grammar import InferenceError
from syntaxlm.inference.sentences import SentenceScores
from syntaxlm.trees.tree import Tree

GROUPS = 5  # independent groups of each sentence's draws that give the spread over draws
# Below this many effective samples per sentence on average (or this fraction of the draws), the
# estimate rests on a few draws: flagged (``reliability_warnings``).
FEW_EFFECTIVE_SAMPLES = 10
FEW_EFFECTIVE_FRACTION = 0.05
ESTIMATOR = (
    "importance sampling: log of 1/N sum_i p(x, y_i) / q(y_i | x) over N samples of the parser, "
    "duplicates kept (an unbiased estimate of p(x) over the parser's trees; its log is consistent)"
)


@dataclass(frozen=True)
class ProposalDraw:
    """A sentence's draws of the parser (module docstring): the different trees in order of first
    draw (the sample without replacement), the ``log q(y | x)`` of each, which of them each draw
    was (``drawn``, in draw order), and how many of the first draws are the importance sample
    (``samples``, repeats kept)."""

    trees: list[Tree]
    proposal_logprobs: np.ndarray
    drawn: np.ndarray
    samples: int

    @property
    def sample(self) -> np.ndarray:
        """The importance sample: the first ``samples`` draws (indices into ``trees``)."""
        return self.drawn[: self.samples]

    @property
    def counts(self) -> np.ndarray:
        """How often each tree was drawn in the importance sample (0 for trees drawn later)."""
        return np.bincount(self.sample, minlength=len(self.trees))


def draw_proposals(
    parser, sentences: Sequence[Sequence[str]], samples: int, *, seed: int = 0, batch_size: int = 32
) -> list[ProposalDraw]:
    """For every sentence, ``samples`` draws of ``parser`` (the importance sample) and then more of
    the same stream until ``samples`` different trees have been drawn (``SpanParser.sample`` with
    ``distinct``: fewer only for a sentence whose trees the draws exhaust); the same sentence gets
    the same draws wherever it stands."""
    draws = []
    for parsed in parser.sample(sentences, samples, seed=seed, batch_size=batch_size, distinct=samples):
        unique: dict[str, int] = {}
        trees, logprobs, drawn = [], [], []
        for draw in parsed:
            key = draw.tree.to_bracket()
            if key not in unique:
                unique[key] = len(trees)
                trees.append(draw.tree)
                logprobs.append(draw.logprob)
            drawn.append(unique[key])
        draws.append(ProposalDraw(trees, np.array(logprobs), np.array(drawn, dtype=np.int64), samples))
    return draws


def log_weights(draw: ProposalDraw, joint_logprobs: Sequence[float]) -> np.ndarray:
    """``log p(x, y) − log q(y | x)`` of each tree of ``draw``."""
    joint = np.asarray(joint_logprobs, dtype=np.float64)
    if joint.shape != draw.proposal_logprobs.shape:
        raise InferenceError(f"{joint.size} joint log-probabilities for {len(draw.trees)} proposals")
    return joint - draw.proposal_logprobs


def sentence_estimate(weights: np.ndarray, counts: np.ndarray) -> float:
    """``log (1/N Σ_i w_i)`` for unique log weights ``weights`` drawn ``counts`` times (0 allowed)."""
    with np.errstate(divide="ignore"):
        return float(logsumexp(np.log(counts) + weights) - math.log(counts.sum()))


def effective_samples(weights: np.ndarray, counts: np.ndarray) -> float:
    """``(Σ_i w_i)² / Σ_i w_i²`` over the draws (Kish's effective sample size)."""
    shifted = weights - weights[counts > 0].max()
    with np.errstate(divide="ignore"):
        log_counts = np.log(counts)
    return float(np.exp(2 * logsumexp(log_counts + shifted) - logsumexp(log_counts + 2 * shifted)))


@dataclass(frozen=True)
class ImportanceResult:
    """The corpus perplexity of the importance-sampling estimates, its spread over sample draws
    (module docstring) and the samples' diagnostics."""

    total_logprob: float  # Σ_x log p̂(x), nats: whole sentences, their ends included
    n_words: int
    n_sentences: int
    samples: int
    standard_error: float  # of total_logprob, over sample draws (from the groups)
    group_perplexities: list[float]  # per word, of each group of samples alone
    mean_unique: float  # different trees in the importance sample
    mean_effective_samples: float
    mean_proposals: float  # trees of the proposal set (sampled without replacement)
    mean_draws: float  # draws made to find them
    sentence_logprobs: list[float]

    @property
    def per_word(self) -> float:
        return math.exp(-self.total_logprob / self.n_words)

    @property
    def per_token(self) -> float:
        return math.exp(-self.total_logprob / (self.n_words + self.n_sentences))

    @property
    def interval_per_word(self) -> tuple[float, float]:
        """``per_word`` at ± 1.96 standard errors of the total (about 95% over sample draws)."""
        spread = 1.96 * self.standard_error
        return (
            math.exp(-(self.total_logprob + spread) / self.n_words),
            math.exp(-(self.total_logprob - spread) / self.n_words),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "perplexity_per_word": self.per_word,
            "perplexity_per_token": self.per_token,
            "interval_per_word": list(self.interval_per_word),
            "interval": "±1.96 standard errors over sample draws, from independent groups of the samples",
            "group_perplexities_per_word": self.group_perplexities,
            "total_logprob_nats": self.total_logprob,
            "standard_error_nats": self.standard_error,
            "n_words": self.n_words,
            "n_sentences": self.n_sentences,
            "samples_per_sentence": self.samples,
            "mean_unique_trees": self.mean_unique,
            "mean_effective_samples": self.mean_effective_samples,
            "mean_proposal_trees": self.mean_proposals,
            "mean_draws": self.mean_draws,
            "estimator": ESTIMATOR,
            "sentence_logprobs_nats": self.sentence_logprobs,
        }

    def render(self) -> str:
        low, high = self.interval_per_word
        groups = ", ".join(f"{value:.2f}" for value in self.group_perplexities)
        size = self.samples // max(len(self.group_perplexities), 1)
        return (
            f"importance sampling ({self.samples} samples of the parser per sentence): perplexity per word "
            f"{self.per_word:.2f} (±1.96 s.e. over draws: {low:.2f}-{high:.2f}; {len(self.group_perplexities)} "
            f"independent groups of {size} samples alone: {groups}), per token {self.per_token:.2f}; "
            f"{self.mean_unique:.1f} unique trees and {self.mean_effective_samples:.1f} effective samples per "
            f"sentence on average; {self.n_sentences} sentences. Proposal set: {self.mean_proposals:.1f} "
            f"different trees per sentence on average, from {self.mean_draws:.0f} draws"
        )


def with_draws(scores: SentenceScores, draw: ProposalDraw) -> SentenceScores:
    """``scores`` of a sentence over the trees of ``draw`` (``marginal.proposal_scores``), with the
    draw and the sentence's estimate added to its ``details``: ``proposal_draws`` (the importance
    sample, as indices into the trees), ``proposal_logprobs`` (``log q``), ``proposal_set`` (its
    trees and the draws made to find them) and ``importance`` (``logprob``,
    ``effective_samples``)."""
    weights = log_weights(draw, scores.details["tree_logprobs"])
    scores.details.update(
        proposal_draws=draw.sample.tolist(),
        proposal_logprobs=draw.proposal_logprobs.tolist(),
        proposal_set={"trees": len(draw.trees), "draws": len(draw.drawn)},
        importance={
            "samples": draw.samples,
            "unique": int(np.count_nonzero(draw.counts)),
            "logprob": sentence_estimate(weights, draw.counts),
            "effective_samples": effective_samples(weights, draw.counts),
        },
    )
    return scores


def importance_perplexity(scores: Sequence[SentenceScores], *, groups: int = GROUPS) -> ImportanceResult:
    """The importance-sampling perplexity of sentences scored over their drawn proposals
    (``with_draws``). Its spread over sample draws: each sentence's ``N`` draws are cut into
    ``groups`` independent groups (in draw order); the estimate from all ``N`` is the mean of the
    groups' estimates of ``p(x)``, so its variance is theirs over ``groups`` (carried to the log
    by the delta method and summed over sentences). The perplexity of each group alone is
    reported too: how far it moves from draw to draw with ``N / groups`` samples."""
    if not scores:
        raise InferenceError("no sentences")
    groups = max(1, groups)
    variance = 0.0
    group_totals = np.zeros(groups)
    for index, score in enumerate(scores):
        if "importance" not in score.details:
            raise InferenceError(f"sentence {index} was not scored over samples of a parser")
        drawn = np.asarray(score.details["proposal_draws"], dtype=np.int64)
        weights = np.asarray(score.details["tree_logprobs"]) - np.asarray(score.details["proposal_logprobs"])
        if len(drawn) < groups:
            raise InferenceError(f"sentence {index}: {len(drawn)} samples cannot make {groups} groups")
        estimates = np.array(
            [logsumexp(weights[part]) - math.log(len(part)) for part in np.array_split(drawn, groups)]
        )
        group_totals += estimates
        if groups > 1:  # var of the mean of the groups' p̂, relative to the overall p̂ squared
            overall = score.details["importance"]["logprob"]
            relative = np.exp(estimates - overall)
            variance += float(np.var(relative, ddof=1)) / groups
    estimates = [score.details["importance"] for score in scores]
    n_words = sum(len(score.words) for score in scores)
    return ImportanceResult(
        total_logprob=float(sum(e["logprob"] for e in estimates)),
        n_words=n_words,
        n_sentences=len(scores),
        samples=int(estimates[0]["samples"]),
        standard_error=math.sqrt(variance),
        group_perplexities=[math.exp(-total / n_words) for total in group_totals] if groups > 1 else [],
        mean_unique=float(np.mean([e["unique"] for e in estimates])),
        mean_effective_samples=float(np.mean([e["effective_samples"] for e in estimates])),
        mean_proposals=float(np.mean([score.details["proposal_set"]["trees"] for score in scores])),
        mean_draws=float(np.mean([score.details["proposal_set"]["draws"] for score in scores])),
        sentence_logprobs=[e["logprob"] for e in estimates],
    )


def reliability_warnings(estimate: ImportanceResult, upper_bounds: Mapping[str, float]) -> list[str]:
    """Why the perplexity of ``estimate`` cannot be trusted, one sentence each (none when it can):
    too few effective samples per sentence, or a perplexity per word above one of ``upper_bounds``
    (``name -> perplexity per word`` of the same sentences from a lower bound on ``p(x)``)."""
    warnings = []
    effective = estimate.mean_effective_samples
    if effective < max(FEW_EFFECTIVE_SAMPLES, FEW_EFFECTIVE_FRACTION * estimate.samples):
        warnings.append(
            f"few effective samples: {effective:.1f} per sentence on average of {estimate.samples} drawn "
            f"(fewer than {FEW_EFFECTIVE_SAMPLES} or {FEW_EFFECTIVE_FRACTION:.0%} of the draws); the "
            "parser's proposals are far from the model's posterior and the estimate rests on a few draws"
        )
    above = {name: bound for name, bound in upper_bounds.items() if estimate.per_word > bound}
    if above:
        tightest = min(upper_bounds, key=upper_bounds.get)
        named = ", ".join(f"{name} {bound:.2f}" for name, bound in above.items())
        warnings.append(
            f"unreliable: the estimate {estimate.per_word:.2f} is above a proven upper bound on the model's "
            f"perplexity per word ({named}); the model's perplexity is at most {upper_bounds[tightest]:.2f} "
            f"({tightest}), so the parser misses trees the model finds likely"
        )
    return warnings
