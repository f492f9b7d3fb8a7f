"""Scoring sentences with any model: the user-facing ``Scorer``, ``parse``, and the evaluation adapters.

``Scorer(model, method=...)`` gives word-piece, word and sentence scores under the names researchers
know from minicons, with the measure and the unit always said (no defaults):

    scorer = Scorer(model)                                                # method="auto"
    scorer.token_score(sentences, surprisal=True, unit="bits")            # [[(piece, bits), ...], ...]
    scorer.word_score(sentences, surprisal=False, unit="nats")            # [[(word, log p), ...], ...]
    scorer.sequence_score(sentences, reduction="sum", surprisal=False, unit="nats")  # [log p(x), ...]
    scorer.records(sentences, surprisal=True, unit="bits")                # JSON-able, one per sentence

Methods (``method=``):

- ``"exact"``: words-only models (LM, SCLM, TXL (terminals)): ``log p(x)`` is exact;
- ``"beam"``: joint models, word-synchronous beam search (``inference.beam``), an approximate
  marginal over trees (a lower bound on the sentence's probability);
- ``"gold"``: joint models along given trees (``trees=``): ``log p(x, y)``;
- ``"proposals"``: joint models over given proposal trees (``proposals=``): ``log Σ_y p(x, y)``
  over the unique trees; or over ``samples`` trees drawn from a proposal parser (``parser=``,
  ``models.span_parser``), when each sentence also gets the importance-sampling estimate of
  ``log p(x)`` in ``details["importance"]`` (``inference.importance``);
- ``"auto"``: exact for words-only models, beam for joint ones.

Context (``context=``): a segmented model (TG, TXL) is trained on segments of ``segment_length``
tokens with ``memory_length`` memory slots (TG §2.2). With ``"training"`` (the default), exact,
gold and proposals read a sequence longer than one segment (a document) by the model's own
segmented pass, as trained; with ``"full"`` through the incremental decoder, which sees the whole
sequence before each token. The beam search can only use the decoder: it always reads with full
context, whatever ``context`` says, and ``perplexity_logprobs`` records ``"full"`` for it and
warns when a sequence is longer than the training segment + memory.

Token scores are per piece of the model's vocabulary (words for a word vocabulary), word scores
sum a word's pieces. Scores are prefix probabilities, ``log p(w_i | w_<i)``; with ``eos=True`` an
end entry ``</s>`` is added: ``log p(end | sentence)`` (``</s>`` and, for joint models, the
actions that close the tree), so that the entries sum to the probability of the sentence as a
complete one. ``sequence_score`` includes it unless told not to. Sentences are sequences of words
(``line.split()``); they are scored in batches of similar length, with a tqdm bar if asked.

``perplexity_logprobs`` gives a scorer's numbers as the arguments of ``eval.perplexity.perplexity``;
``eval.scorers`` makes a scorer into the scoring callables of SyntaxGym and BLiMP.
"""

from __future__ import annotations

import json
import math
import reprlib
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from syntaxlm.files import atomic_writer
from syntaxlm.inference.beam import PAPER_BEAM, BeamSettings, beam_search
from syntaxlm.inference.estimate import InferenceEstimate, timed_first
from syntaxlm.inference.grammar import ActionSpace, InferenceError
from syntaxlm.inference.importance import draw_proposals, with_draws
from syntaxlm.inference.marginal import (
    DOCUMENT_CONTEXTS,
    NO_POS_TAGS_HEADER,
    ReadingContext,
    check_proposal_rows,
    document_context,
    exact_scores,
    gold_scores,
    proposal_scores,
    rerank,
)
from syntaxlm.inference.methods import SCORE_METHODS, UNITS
from syntaxlm.inference.sentences import SentenceScores, encode_sentence, unknown_words
from syntaxlm.memory import counted
from syntaxlm.trees.tree import Tree

REDUCTIONS = ("sum", "mean")
END = "</s>"
PER_TREE_DETAILS = ("tree_logprobs", "proposal_draws", "proposal_logprobs")  # not in records: one per tree

Method = Literal["auto", "exact", "gold", "beam", "proposals"]
Unit = Literal["nats", "bits"]


def convert(logprobs: np.ndarray | float, *, surprisal: bool, unit: Unit) -> np.ndarray | float:
    """Natural-log probabilities as log-probabilities or surprisals (``−log p``), in nats or bits."""
    if unit not in UNITS:
        raise InferenceError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    values = -np.asarray(logprobs, dtype=np.float64) if surprisal else np.asarray(logprobs, dtype=np.float64)
    if unit == "bits":
        values = values / math.log(2)
    return float(values) if values.ndim == 0 else values


def measure_name(surprisal: bool, unit: Unit) -> str:
    """``logprob_nats``, ``surprisal_bits``, ...: what a number is, in result files."""
    return f"{'surprisal' if surprisal else 'logprob'}_{unit}"


class Scorer:
    """Scores sentences with one model and one method (module docstring).

    ``beam``: the search's sizes (the paper's 100/10/5 by default). ``renormalise``: for a joint
    model, whether its distribution is renormalised over the actions the grammar allows
    (docs/inference.md), one switch for every method; ``None`` (the default) reads it as each
    method's paper does: the beam search renormalised (structural guidance §3.2, the authors'
    search), gold and proposal trees on the model's own distribution, as trained (TG §3.1). The
    attribute holds what was resolved, and ``perplexity_logprobs`` records it. ``True`` is refused
    for a words-only model, which has nothing to renormalise. ``context``: ``"training"`` or
    ``"full"`` for exact,
    gold and proposals (module docstring); the beam always reads with full context.
    ``batch_size``: sentences per batch. ``on_estimate``: for a joint model, called once, on the
    first scoring, with the pace of its first sentences (``inference.estimate``). ``parser``,
    ``samples``, ``seed``: for ``proposals`` without given trees, the proposal parser, how many
    trees to draw per sentence (the TG paper's 300) and the seed of the draws.
    """

    def __init__(
        self,
        model,
        *,
        method: Method = "auto",
        beam: BeamSettings = PAPER_BEAM,
        renormalise: bool | None = None,
        context: str = "training",
        batch_size: int = 16,
        progress: bool = False,
        on_estimate: Callable[[InferenceEstimate], None] | None = None,
        parser=None,
        samples: int = 300,
        seed: int = 0,
    ):
        if not hasattr(model, "action_grammar"):  # the proposal parser, say
            raise InferenceError(
                f"a {model.config.model} model is not a language model: it cannot score sentences"
            )
        if method not in SCORE_METHODS:
            raise InferenceError(f"method must be one of {', '.join(SCORE_METHODS)}, got {method!r}")
        if context not in DOCUMENT_CONTEXTS:
            raise InferenceError(f"context must be one of {', '.join(DOCUMENT_CONTEXTS)}, got {context!r}")
        self.model = model
        self.joint = ActionSpace(model.action_grammar()).tree
        if method == "auto":
            method = "beam" if self.joint else "exact"
        if method == "exact" and self.joint:
            raise InferenceError(
                "method 'exact' needs a words-only model; a joint model marginalises: beam, gold or proposals"
            )
        if method in ("gold", "proposals") and not self.joint:
            raise InferenceError(
                f"method {method!r} needs a joint model of words and trees; this one reads words only"
            )
        if parser is not None and method != "proposals":
            raise InferenceError("a proposal parser is for method 'proposals'")
        if samples < 1:
            raise InferenceError(f"samples must be at least 1, got {samples}")
        if renormalise and not self.joint:
            raise InferenceError(
                "renormalise is for a joint model (over the actions that build trees); "
                "this one reads words only"
            )
        self.method = method
        self.parser, self.samples, self.seed = parser, samples, seed
        self.beam = beam
        self.renormalise: bool = (self.joint and method == "beam") if renormalise is None else renormalise
        self.context = context
        self.batch_size = batch_size
        self.progress = progress
        self.on_estimate = on_estimate if self.joint else None

    # --- the scores -------------------------------------------------------------------------------

    def score(
        self,
        sentences: Sequence[Sequence[str]],
        *,
        trees: Sequence[Tree] | None = None,
        proposals: Sequence[Sequence[Tree]] | None = None,
        indices: Sequence[int | str] | None = None,
    ) -> list[SentenceScores]:
        """Every sentence's ``SentenceScores`` (natural logs) by the scorer's method. ``indices``:
        what errors name the sentences by (by default their positions; a part of a longer list of
        sentences gives their positions there, a file of stimuli their ids). ``SizeError`` before
        any work when what the method holds for a batch (the beam's hypotheses, the proposal
        trees) would not fit in memory."""
        sentences = _sentences(sentences)
        names = list(range(len(sentences))) if indices is None else list(indices)
        if len(names) != len(sentences):
            raise ValueError(f"{len(names)} indices for {len(sentences)} sentences")
        too_long = self.too_long(sentences)
        if too_long:
            first = too_long[0]
            pieces = len(encode_sentence(self.model.vocab, sentences[first], first).ids)
            raise SentenceTooLongError(
                f"sentence {names[first]} has {pieces} pieces, more than the {self.model.longest_sentence()} "
                f"this model can score (its positions end there; {len(too_long)} sentence(s) in all); leave "
                "them out (the CLI's --skip-long) or split them"
            )
        if self.method == "gold" and trees is None:
            raise InferenceError("method 'gold' needs trees= (one tree per sentence)")
        if self.method == "proposals" and proposals is None and self.parser is None:
            raise InferenceError(
                "method 'proposals' needs proposals= (a list of trees per sentence) or a parser= to draw them"
            )
        if self.method == "proposals" and proposals is None:
            check_sample_rows(self.model, self.samples, min(self.batch_size, len(sentences)))
        trees = None if trees is None else list(trees)
        proposals = None if proposals is None else list(proposals)

        def score_part(part: slice) -> list[SentenceScores]:
            return self._scores(
                sentences[part],
                None if trees is None else trees[part],
                None if proposals is None else proposals[part],
                names[part],
            )

        on_estimate, self.on_estimate = self.on_estimate, None  # one estimate, of the first scoring
        return finite_scores(_timed(sentences, score_part, self.batch_size, on_estimate), names)

    def _scores(self, sentences, trees, proposals, indices) -> list[SentenceScores]:
        options = {"batch_size": self.batch_size, "progress": self.progress}
        if self.method == "beam":
            return beam_search(self.model, sentences, self.beam, renormalise=self.renormalise, **options)
        options["context"] = self.context
        if self.method == "exact":
            return exact_scores(self.model, sentences, **options)
        options["indices"] = indices
        if self.method == "gold":
            return gold_scores(self.model, sentences, list(trees), renormalise=self.renormalise, **options)
        if proposals is not None:
            return proposal_scores(
                self.model, sentences, list(proposals), renormalise=self.renormalise, **options
            )
        draws = draw_proposals(
            self.parser, sentences, self.samples, seed=self.seed, batch_size=self.batch_size
        )
        scores = proposal_scores(
            self.model, sentences, [draw.trees for draw in draws], renormalise=self.renormalise, **options
        )
        return [with_draws(score, draw) for score, draw in zip(scores, draws, strict=True)]

    def too_long(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """The indices of the sentences with more pieces than the model can score
        (``longest_sentence``); checked before any scoring work."""
        limit = self.model.longest_sentence()
        if limit is None:
            return []
        vocab = self.model.vocab
        return [i for i, words in enumerate(sentences) if len(encode_sentence(vocab, words, i).ids) > limit]

    @property
    def read_context(self) -> str:
        """The context the scorer's numbers are read with: its ``context``, except ``"full"`` for
        the beam search, whose decoder sees the whole sequence."""
        return "full" if self.method == "beam" else self.context

    def token_score(
        self, sentences, *, surprisal: bool, unit: Unit, eos: bool = False, **given
    ) -> list[list[tuple[str, float]]]:
        """Per sentence, ``(piece, value)`` for every piece (and ``</s>`` with ``eos``)."""
        return [
            _pairs(s.pieces, s.piece_logprobs, s.end_logprob, surprisal, unit, eos)
            for s in self.score(sentences, **given)
        ]

    def word_score(
        self, sentences, *, surprisal: bool, unit: Unit, eos: bool = False, **given
    ) -> list[list[tuple[str, float]]]:
        """Per sentence, ``(word, value)`` for every word (its pieces summed; ``</s>`` with ``eos``)."""
        return [
            _pairs(s.words, s.word_logprobs, s.end_logprob, surprisal, unit, eos)
            for s in self.score(sentences, **given)
        ]

    def sequence_score(
        self,
        sentences,
        *,
        reduction: Literal["sum", "mean"],
        surprisal: bool,
        unit: Unit,
        eos: bool = True,
        **given,
    ) -> list[float]:
        """Per sentence, the sum or the mean over its words (and the end, with ``eos``) of the
        log-probabilities or surprisals. ``reduction="sum"`` with ``eos=True`` is ``log p(sentence)``."""
        if reduction not in REDUCTIONS:
            raise InferenceError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
        out = []
        for s in self.score(sentences, **given):
            values = np.append(s.word_logprobs, s.end_logprob) if eos else s.word_logprobs
            total = values.sum() if reduction == "sum" else values.mean()
            out.append(float(convert(total, surprisal=surprisal, unit=unit)))
        return out

    def records(
        self, sentences, *, surprisal: bool, unit: Unit, eos: bool = False, **given
    ) -> list[dict[str, Any]]:
        """One JSON-able dict per sentence (``scores_record``), its ``sentence_id`` its position
        and ``word_unknown`` which words the model's vocabulary reads as unknown."""
        vocab = self.model.vocab
        return [
            scores_record(
                s, sentence_id=i, surprisal=surprisal, unit=unit, eos=eos,
                unknown=unknown_words(vocab, s.words),
            )  # fmt: skip
            for i, s in enumerate(self.score(sentences, **given))
        ]


class SentenceTooLongError(InferenceError):
    """A sentence longer than the model can score (its learned positions end before it does)."""


class NonFiniteScoreError(InferenceError):
    """A model gave a NaN or infinite log-probability: no score, mean or accuracy made with it means
    anything, so nothing is written."""


def finite_scores(scores: list[SentenceScores], indices: Sequence[int] | None = None) -> list[SentenceScores]:
    """``scores``, after checking that every piece's and every end's log-probability is finite
    (``NonFiniteScoreError`` naming the first sentence, by its number in ``indices`` (by default
    its position), and word that is not)."""
    for position, sentence in enumerate(scores):
        index = position if indices is None else indices[position]
        values = np.append(sentence.piece_logprobs, sentence.end_logprob)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            first = int(bad[0])
            where = (
                f"word {int(sentence.piece_word[first])} ({sentence.words[sentence.piece_word[first]]!r})"
                if first < len(sentence.piece_logprobs)
                else "the end of the sentence"
            )
            cause = (
                "the model's numbers are NaN (diverged weights, or an overflow)"
                if np.isnan(values[first])
                else "the model (or the search, which kept no derivation of it: widen the beam) rules it out"
            )
            raise NonFiniteScoreError(
                f"sentence {index} ({reprlib.repr(' '.join(sentence.words))}): {where} has the "
                f"log-probability {values[first]}: {cause}; no scores are written"
            )
    return scores


def _sentences(sentences) -> list[list[str]]:
    if isinstance(sentences, str):
        raise TypeError("sentences must be a sequence of sentences, each a sequence of words")
    out = []
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            raise TypeError(
                f"sentence {i} is a string; give each sentence as a sequence of words (line.split())"
            )
        out.append(list(sentence))
    return out


def _pairs(tokens, logprobs, end, surprisal, unit, eos) -> list[tuple[str, float]]:
    values = np.append(logprobs, end) if eos else np.asarray(logprobs)
    converted = convert(values, surprisal=surprisal, unit=unit)
    names = [*tokens, END] if eos else list(tokens)
    return [(name, float(value)) for name, value in zip(names, converted)]


def scores_record(
    scores: SentenceScores,
    *,
    sentence_id: int | str,
    surprisal: bool,
    unit: Unit,
    eos: bool = False,
    unknown: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """A sentence's scores as a JSON-able dict; every number's key says measure and unit, e.g.
    ``word_surprisal_bits``. ``end_*`` is the end entry (``</s>``, closing actions), counted in
    ``sentence_*`` only with ``eos``. ``unknown``: per word, whether the model's vocabulary reads
    it as unknown (``sentences.unknown_words``), as ``word_unknown``."""
    name = measure_name(surprisal, unit)
    words = scores.word_logprobs
    total = scores.logprob if eos else scores.prefix_logprob
    record: dict[str, Any] = {
        "sentence_id": sentence_id,
        "method": scores.method,
        "eos": eos,
        "words": list(scores.words),
    }
    if unknown is not None:
        if len(unknown) != len(scores.words):
            raise ValueError(f"{len(unknown)} unknown-word flags for {len(scores.words)} words")
        record["word_unknown"] = [bool(flag) for flag in unknown]
    record |= {
        f"word_{name}": _floats(convert(words, surprisal=surprisal, unit=unit)),
        "pieces": list(scores.pieces),
        f"piece_{name}": _floats(convert(scores.piece_logprobs, surprisal=surprisal, unit=unit)),
        f"end_{name}": _float(convert(scores.end_logprob, surprisal=surprisal, unit=unit)),
        f"sentence_{name}": _float(convert(total, surprisal=surprisal, unit=unit)),
    }
    if scores.tree is not None:
        record["tree"] = scores.tree.to_bracket()
        record["tree_logprob_nats"] = _float(scores.tree_logprob)
    if scores.details:
        record["details"] = {
            key: value.to_json() if isinstance(value, ReadingContext) else value
            for key, value in scores.details.items()
            if key not in PER_TREE_DETAILS
        }
    return record


def _float(value: float) -> float | None:
    """JSON has no infinities: −inf and nan are written as null."""
    value = float(value)
    return value if math.isfinite(value) else None


def _floats(values: Iterable[float]) -> list[float | None]:
    return [_float(v) for v in values]


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write records as JSON lines, atomically; returns the count."""
    count = 0
    with atomic_writer(path) as handle:
        for count, record in enumerate(records, 1):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return count


# --- parsing -----------------------------------------------------------------------------------------


def parse(
    model,
    sentences: Sequence[Sequence[str]],
    *,
    method: Literal["auto", "beam", "rerank", "induced"] = "auto",
    proposals: Sequence[Sequence[Tree]] | None = None,
    parser=None,
    samples: int = 300,
    seed: int = 0,
    beam: BeamSettings = PAPER_BEAM,
    batch_size: int = 16,
    progress: bool = False,
    on_estimate: Callable[[InferenceEstimate], None] | None = None,
) -> list[Tree]:
    """A tree per sentence: the beam search's best complete tree (``"beam"``), the proposal with
    the highest ``p(x, y)`` (``"rerank"``, TG §3.2; needs ``proposals``, or a proposal ``parser``
    to draw ``samples`` trees per sentence from with ``seed``), or the unlabelled binary
    tree a structure-inducing model builds (``"induced"``: PRPN, SOM). ``"auto"``: ``"induced"``
    for models that induce trees, ``"beam"`` for the others. ``on_estimate``: for the beam and
    rerank, called with the pace of the first sentences (``inference.estimate``). A proposal
    parser (``models.span_parser``) parses with its best tree (``"auto"``). The methods:
    ``methods.PARSE_METHODS``."""
    from syntaxlm.models.span_parser import SpanParser

    sentences = _sentences(sentences)
    if isinstance(model, SpanParser):
        if method != "auto":
            raise InferenceError(f"a {model.config.model} model parses with method 'auto' (its best tree)")
        return [best[0].tree for best in model.parse(sentences, batch_size=batch_size)]
    if method == "auto":
        method = "induced" if model.induces_trees else "beam"
    if method == "induced":
        if not model.induces_trees:
            raise InferenceError(f"{model.config.model} does not induce trees; use method 'beam' or 'rerank'")
        return model.induced_trees(sentences, batch_size=batch_size)
    if not ActionSpace(model.action_grammar()).tree:
        raise InferenceError("this model reads words only; it has no trees to parse with")
    options = {"batch_size": batch_size, "progress": progress}
    if method == "rerank":
        if proposals is None and parser is None:
            raise InferenceError(
                "method 'rerank' needs proposals= (a list of trees per sentence) or a parser="
            )
        proposals = None if proposals is None else list(proposals)
        if proposals is None:
            check_sample_rows(model, samples, min(batch_size, len(sentences)))
        indices = list(range(len(sentences)))

        def rerank_part(part: slice) -> list[Tree]:
            given = (
                proposals[part]
                if proposals is not None
                else [draw.trees for draw in draw_proposals(parser, sentences[part], samples, seed=seed)]
            )
            return rerank(model, sentences[part], given, indices=indices[part], **options)

        return _timed(sentences, rerank_part, batch_size, on_estimate)
    if method != "beam":
        raise InferenceError(f"method must be 'auto', 'beam', 'rerank' or 'induced', got {method!r}")

    def search_part(part: slice) -> list[SentenceScores]:
        return beam_search(model, sentences[part], beam, **options)

    trees = []
    for i, scores in enumerate(_timed(sentences, search_part, batch_size, on_estimate)):
        if scores.tree is None:
            raise InferenceError(f"sentence {i}: the beam search found no complete tree")
        trees.append(scores.tree)
    return trees


def parser_proposals(
    parser,
    sentences: Sequence[Sequence[str]],
    *,
    kbest: int | None = None,
    samples: int | None = None,
    seed: int = 0,
    batch_size: int = 16,
) -> tuple[list[str], str | None]:
    """A proposal parser's trees of each sentence as the lines of a proposal file: its ``kbest``
    trees (all of them for a sentence with fewer) or ``samples`` different sampled trees
    (``draw_proposals``), as INDEX<TAB>TREE lines after ``NO_POS_TAGS_HEADER`` (its trees have
    none), which ``read_proposals`` reads as they are; and a note saying how many sentences have
    fewer trees than asked for (``None`` when none has). One of ``kbest`` and ``samples``."""
    if (kbest is None) == (samples is None):
        raise ValueError("give kbest or samples, one of them")
    sentences = _sentences(sentences)
    if kbest is not None:
        found = [[t.tree for t in trees] for trees in parser.parse(sentences, k=kbest, batch_size=batch_size)]
        asked, why = kbest, "all of their trees are written"
    else:
        drawn = draw_proposals(parser, sentences, samples, seed=seed, batch_size=batch_size)
        found, asked = [draw.trees for draw in drawn], samples
        why = (
            "drawing stops once a sentence's trees are all drawn, after 100 draws per tree asked for, or "
            "once the trees drawn hold all but 1e-9 of the parser's probability"
        )
    lines = [f"{i}\t{tree.to_bracket()}" for i, trees in enumerate(found) for tree in trees]
    fewer = [i for i, trees in enumerate(found) if len(trees) < asked]
    note = None
    if fewer:
        note = (
            f"note: {len(fewer)} sentence(s) have fewer than {asked} different trees (sentence {fewer[0]}: "
            f"{len(found[fewer[0]])}); {why}"
        )
    return [NO_POS_TAGS_HEADER, *lines], note


def check_sample_rows(model, samples: int, batch: int) -> None:
    """``SizeError`` naming ``samples`` when that many trees per sentence drawn from a proposal
    parser, for a batch of ``batch`` sentences, would not fit side by side in the model's decoder
    (``marginal.check_proposal_rows``); checked before the parser draws them."""
    what = f"the trees drawn for a batch of {counted(batch, 'sentence')}, read side by side by the decoder"
    space = ActionSpace(model.action_grammar())
    check_proposal_rows(model, space, "samples", samples, lambda value: batch * value, what)


def _timed(sentences, score, batch_size: int, on_estimate):
    """``score(slice(None))``, through ``timed_first`` when there is an ``on_estimate``."""
    if on_estimate is None:
        return score(slice(None))
    return timed_first(sentences, score, batch_size=batch_size, on_estimate=on_estimate)


# --- perplexity ----------------------------------------------------------------------------------------


def perplexity_logprobs(
    scorer: Scorer,
    sentences: Sequence[Sequence[str]],
    *,
    scores: Sequence[SentenceScores] | None = None,
    **given,
) -> tuple[list[np.ndarray], list[float], dict[str, Any]]:
    """Per-sentence word log-probabilities, per-sentence end log-probabilities (``</s>``, or the
    closing actions after the last word for joint models) and the ``marginalisation`` metadata:
    the arguments of ``eval.perplexity.perplexity``. ``scores``: the scorer's own scores of
    ``sentences`` when already computed (they are then not computed again).

    The metadata records the context the sequences were read with (``context``, and for a
    segmented model read as trained its ``segment_length``, ``memory_length`` and ``memory``;
    ``marginal.document_context``). Read with full context, sequences longer than a segmented
    model's training segment + memory (documents) see more than training gave: one warning says
    how many."""
    if scores is None:
        scores = scorer.score(sentences, **given)
    logprobs = [s.word_logprobs for s in scores]
    ends = [float(s.end_logprob) for s in scores]
    bound = {
        "exact": "exact",
        "gold": "upper bound (one tree)",
        "proposals": "upper bound (proposal trees)",
        "beam": "approximate (beam search; an upper bound for the renormalised model)",
    }[scorer.method]
    context = scorer.read_context
    metadata: dict[str, Any] = {
        "method": scorer.method,
        "perplexity": bound,
        **document_context(scorer.model, context).to_json(),
    }
    if context == "full":
        _warn_beyond_training_context(scorer, scores)
    if scorer.method == "beam":
        settings = scorer.beam
        metadata |= {
            "action_beam": settings.action_beam,
            "word_beam": settings.word_beam,
            "fast_track": settings.fast_track,
            "renormalised": scorer.renormalise,
        }
    elif scorer.method in ("gold", "proposals"):
        metadata["renormalised"] = scorer.renormalise
    if scorer.method == "proposals" and scorer.parser is not None:
        metadata |= {"proposal_samples": scorer.samples, "proposal_seed": scorer.seed}
    return logprobs, ends, metadata


def _warn_beyond_training_context(scorer: Scorer, scores: Sequence[SentenceScores]) -> None:
    """One warning when full context reads sequences longer than the segment + memory a
    segmented model was trained with (its tree's sequence; without one, its pieces after ``<s>``)."""
    model = scorer.model
    trained = document_context(model, "training")
    if not trained.segmented:
        return
    limit = trained.segment_length + trained.memory_length
    lengths = [
        len(s.pieces) + (2 if not scorer.joint else 1)
        if s.tree is None
        else int(model.sequences([s.tree]).lengths[0])
        for s in scores
    ]
    longer = sum(length > limit for length in lengths)
    if not longer:
        return
    why = (
        "the beam search reads with full context only"
        if scorer.method == "beam"
        else "context='full' was asked for"
    )
    warnings.warn(
        f"{longer} of {len(lengths)} sequences are longer than the model's training segment + memory "
        f"({trained.segment_length} + {trained.memory_length} tokens) and are read with full "
        f"context ({why}): each token sees more than training gave; the result says context=full",
        stacklevel=3,
    )
