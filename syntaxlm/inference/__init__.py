"""Inference with any model through its action grammar and incremental decoder: word probabilities
of joint models (word-synchronous beam search, gold and proposal trees, documents), parsing and
reranking, sampling, and the ``Scorer`` the evaluations and the CLI use. See docs/inference.md."""

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

__all__ = [
    "BeamSettings",
    "InferenceError",
    "ProposalError",
    "Scorer",
    "SentenceScores",
    "beam_search",
    "document_perplexity_logprobs",
    "document_scores",
    "exact_scores",
    "generate",
    "gold_scores",
    "parse",
    "perplexity_logprobs",
    "proposal_scores",
    "read_proposals",
    "rerank",
    "scores_record",
    "write_jsonl",
]
