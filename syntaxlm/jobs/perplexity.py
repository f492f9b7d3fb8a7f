"""Perplexity of a saved model on a data file, the one path that ``syntaxlm eval ppl`` and the
jobs' ``evaluate_model`` both take: ``perplexity_evaluation`` (exact, along gold or given trees,
or by the beam search: the scorer's method) and ``proposal_perplexity`` (over trees drawn from a
proposal parser, TG §3.1). Each returns a ``PerplexityEvaluation``, the result file's record."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syntaxlm.inference.beam import PAPER_BEAM, BeamSettings
from syntaxlm.jobs.suites import beam_fields
from syntaxlm.results import result_record


@dataclass(frozen=True)
class PerplexityEvaluation:
    """A perplexity result with its ``inputs`` and ``options`` (together the result file:
    ``record``), its text, and each scored sentence's ``SentenceScores`` (their trees are the
    beam's best parses; of proposal samples, the reranked parses)."""

    result: dict[str, Any]
    inputs: dict[str, Path]
    options: dict[str, Any]
    text: str
    scores: list

    def record(self) -> dict[str, Any]:
        """The result file's record (``syntaxlm.results``)."""
        return result_record("perplexity", self.result, inputs=self.inputs, options=self.options)


def perplexity_evaluation(
    scorer,
    sentences: Sequence[Sequence[str]],
    *,
    data: Path,
    model_folder: Path,
    limit: int | None = None,
    trees: Sequence | None = None,
    proposals: Sequence | None = None,
    choose: Callable[[list[list[str]]], list[int]] | None = None,
) -> PerplexityEvaluation:
    """Word-level perplexity by ``scorer`` (a ``Scorer`` of the model saved in ``model_folder``)
    of the first ``limit`` of ``sentences`` (all when ``None``), read from ``data``, in every
    convention (``eval.perplexity``). ``trees`` or ``proposals``: per sentence, for the methods
    ``gold`` and ``proposals``. ``choose``: the indices of the sentences to score among the first
    ``limit``, called before any scoring (``eval ppl --skip-long``: those the model can score, and
    the time estimate); the others are recorded as skipped, too long. Default: all."""
    from syntaxlm.eval.perplexity import perplexity
    from syntaxlm.inference import perplexity_logprobs

    sentences_in_data = len(sentences)
    sentences = [list(sentence) for sentence in sentences[:limit]]
    kept = list(range(len(sentences))) if choose is None else choose(sentences)
    scored = [sentences[i] for i in kept]
    given = {
        key: [value[i] for i in kept]
        for key, value in (("trees", trees), ("proposals", proposals))
        if value is not None
    }
    scores = scorer.score(scored, indices=kept, **given)
    logprobs, ends, marginalisation = perplexity_logprobs(scorer, scored, scores=scores)
    result = perplexity(logprobs, ends, marginalisation=marginalisation)
    options = {"method": scorer.method, "context": marginalisation["context"], "limit": limit}
    if limit is not None:
        options["sentences_in_data"] = sentences_in_data  # the first `limit` of them scored: a subset
    if skipped := sorted(set(range(len(sentences))) - set(kept)):
        options["skipped_too_long"] = skipped  # sentence indices in the data
    inputs = {"data": data, "model": model_folder / "model.safetensors"}
    return PerplexityEvaluation(result.to_json(), inputs, options, result.render(), scores)


IMPORTANCE_BOUND = (
    "estimate (importance sampling over the parser's samples: consistent; high for few samples)"
)


def proposal_perplexity(
    model,
    parser,
    sentences: Sequence[Sequence[str]],
    *,
    data: Path,
    model_folder: Path,
    parser_folder: Path,
    limit: int | None = None,
    samples: int = 300,
    seed: int = 0,
    beam: BeamSettings | None = PAPER_BEAM,
    batch_size: int = 32,
    progress: bool = False,
) -> PerplexityEvaluation:
    """A joint model's word perplexity the TG paper's way on the first ``limit`` of ``sentences``
    (read from ``data``; all when ``None``), from ``samples`` trees per sentence drawn from
    ``parser`` (§3.1): the importance-sampling estimate of ``p(x)`` with its spread over draws
    (``inference.importance``; the result's headline numbers), the sum over ``samples`` different
    trees sampled without replacement (``proposal_bound``: the paper's lower bound on ``p(x)``),
    and, unless ``beam`` is ``None``, the beam's marginal on the same sentences (``beam``: also a
    lower bound). All three use the model's own distribution, as trained (the beam without its
    renormalisation over valid actions), so that they estimate the same ``p(x)``. ``samples`` is
    at least ``GROUPS`` (``InferenceError`` else: the spread over draws comes from that many
    groups of each sentence's draws); sizes that would not fit in memory, the beam's too, are
    refused before any work (``SizeError``). ``model_folder`` and ``parser_folder``: where the two
    were loaded from, the result's inputs."""
    from syntaxlm.eval.perplexity import perplexity
    from syntaxlm.inference import InferenceError, Scorer, perplexity_logprobs
    from syntaxlm.inference.beam import check_beam_size
    from syntaxlm.inference.grammar import ActionSpace
    from syntaxlm.inference.importance import GROUPS, importance_perplexity, reliability_warnings

    if samples < GROUPS:
        raise InferenceError(
            f"samples must be at least {GROUPS}, got {samples}: the spread over draws comes from "
            f"{GROUPS} independent groups of each sentence's samples"
        )
    sentences_in_data = len(sentences)
    sentences = [list(sentence) for sentence in sentences[:limit]]
    scorer = Scorer(
        model, method="proposals", parser=parser, samples=samples, seed=seed, batch_size=batch_size,
        progress=progress,
    )  # fmt: skip
    if beam is not None:  # checked now, not after the proposals' work
        space = ActionSpace(model.action_grammar(), max_open=beam.max_open, max_openers=beam.max_openers)
        check_beam_size(model, space, beam, min(batch_size, len(sentences)))
    scores = scorer.score(sentences)
    logprobs, ends, marginalisation = perplexity_logprobs(scorer, sentences, scores=scores)
    bound = perplexity(logprobs, ends, marginalisation=marginalisation)
    estimate = importance_perplexity(scores)
    result = estimate.to_json() | {
        "marginalisation": marginalisation
        | {"method": "importance-sampling", "perplexity": IMPORTANCE_BOUND},
        "proposal_bound": bound.to_json(),
    }
    lines = [
        estimate.render(),
        (
            f"sum over {samples} different trees sampled without replacement (TG §3.1, a lower bound "
            f"on p(x)): {bound.render()}"
        ),
    ]
    upper_bounds = {f"sum over {samples} different trees": bound.per_word}
    if beam is not None:  # over the model's own distribution, as the two above
        searcher = Scorer(
            model, method="beam", beam=beam, renormalise=False, batch_size=batch_size, progress=progress
        )
        logprobs, ends, marginalisation = perplexity_logprobs(searcher, sentences)
        searched = perplexity(logprobs, ends, marginalisation=marginalisation)
        result["beam"] = searched.to_json()
        lines.append(f"beam marginal (a lower bound on p(x)): {searched.render()}")
        upper_bounds["beam marginal"] = searched.per_word
    result["warnings"] = reliability_warnings(estimate, upper_bounds)
    lines += [f"warning: {warning}" for warning in result["warnings"]]
    weights = {"model": model_folder / "model.safetensors", "parser": parser_folder / "model.safetensors"}
    inputs = {"data": data, **weights}
    options = {"method": "importance-sampling", "proposal_samples": samples, "proposal_seed": seed}
    options["limit"] = limit
    if limit is not None:
        options["sentences_in_data"] = sentences_in_data
    if beam is not None:
        options |= beam_fields(beam)
    return PerplexityEvaluation(result, inputs, options, "\n".join(lines), scores)


def context_summary(marginalisation: Mapping[str, Any]) -> str:
    """What a perplexity result's sequences saw, in words, from its ``marginalisation``."""
    method = marginalisation.get("method", "?")
    if marginalisation.get("context") == "full":
        return f"by {method}, read with full context (each token sees the whole sequence before it)"
    if marginalisation.get("segment_length") is None:
        return f"by {method}, read as trained (the whole sequence before each token)"
    return (
        f"by {method}, read as trained: segments of {marginalisation['segment_length']} tokens, "
        f"{marginalisation['memory_length']} memory slots ({marginalisation['memory']} memory)"
    )
