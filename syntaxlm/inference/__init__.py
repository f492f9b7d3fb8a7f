"""Inference with any model through its action grammar and incremental decoder: word probabilities
of joint models (word-synchronous beam search, gold and proposal trees, documents), parsing and
reranking, sampling, and the ``Scorer`` the evaluations and the CLI use. See docs/inference.md.

Each name is imported from its module on first use, so that ``inference.methods`` (the names of
the methods, for the command line's choices) loads without torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syntaxlm.exports import lazy_exports

# name -> the module it lives in
_EXPORTS = {
    "BeamSettings": "syntaxlm.inference.beam",
    "beam_search": "syntaxlm.inference.beam",
    "InferenceError": "syntaxlm.inference.grammar",
    "ProposalError": "syntaxlm.inference.marginal",
    "document_perplexity_logprobs": "syntaxlm.inference.marginal",
    "document_scores": "syntaxlm.inference.marginal",
    "exact_scores": "syntaxlm.inference.marginal",
    "gold_scores": "syntaxlm.inference.marginal",
    "proposal_scores": "syntaxlm.inference.marginal",
    "read_proposals": "syntaxlm.inference.marginal",
    "rerank": "syntaxlm.inference.marginal",
    "generate": "syntaxlm.inference.sampling",
    "Scorer": "syntaxlm.inference.scorer",
    "parse": "syntaxlm.inference.scorer",
    "perplexity_logprobs": "syntaxlm.inference.scorer",
    "scores_record": "syntaxlm.inference.scorer",
    "write_jsonl": "syntaxlm.inference.scorer",
    "SentenceScores": "syntaxlm.inference.sentences",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from syntaxlm.inference.beam import BeamSettings, beam_search
    from syntaxlm.inference.grammar import InferenceError
    from syntaxlm.inference.marginal import (
        ProposalError,
        document_perplexity_logprobs,
        document_scores,
        exact_scores,
        gold_scores,
        proposal_scores,
        read_proposals,
        rerank,
    )
    from syntaxlm.inference.sampling import generate
    from syntaxlm.inference.scorer import Scorer, parse, perplexity_logprobs, scores_record, write_jsonl
    from syntaxlm.inference.sentences import SentenceScores


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
