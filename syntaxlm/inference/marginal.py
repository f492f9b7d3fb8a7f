"""Word probabilities of joint models from given trees: the gold tree, proposal trees, documents.

A joint model gives ``p(x, y)``; these functions score sentences along trees someone supplies
(TG paper §3.1; the structural-guidance paper's "approximate perplexity"):

- ``gold_scores``: ``log p(x, y_gold)``, a lower bound on ``log p(x)`` (so an *upper* bound on
  perplexity). Its sum over a corpus is minus the model's training loss on the same trees.
- ``proposal_scores``: ``log Σ_{y ∈ Y'} p(x, y)`` over the unique trees ``Y'`` a proposal parser
  gives for the sentence (TG: 300 samples of a discriminative RNNG), a tighter lower bound on
  ``log p(x)``. Per-piece values come from the prefix sums: ``p(x_≤k)`` is summed over the
  *distinct* partial derivations the proposals share up to piece ``k`` (two trees with one
  prefix count it once), so per-piece log-probabilities telescope to the sentence's.
- ``document_scores``: the document-level variant of §3.1 in its simple form: each sentence is
  scored over its proposals after the greedy best trees of the sentences before it, all inside
  one ``(DOC ...)`` tree, as the document models are trained. ``context="training"`` (the
  default) reads the document with the segment and memory lengths the model was trained with
  (TG/TXL: segments of ``segment_length`` and ``memory_length`` memory slots, §2.2), as the
  authors score documents; ``context="full"`` lets every token see the whole document before it.
  Which one was used is in every sentence's ``details["context"]`` and, through
  ``document_perplexity_logprobs``, in the perplexity result.
- ``exact_scores``: words-only models, where ``p(x)`` is exact.
- ``rerank``: the proposal with the highest ``p(x, y)`` (TG §3.2).

All of them teacher-force the model's incremental ``Decoder`` (``sequence_logprobs``): every
proposal of every sentence of a batch goes through one decoder, one ``advance`` per position.
The exception is a sequence longer than one segment of a segmented model (TG, TXL: a document as
one ``(DOC ...)`` tree or its words), which the decoder would read with the whole sequence in
view: with ``context="training"`` (the default of ``exact_scores``, ``gold_scores`` and
``proposal_scores``) it is scored by the model's own segmented pass, with its segment length,
memory length and memory kind, as it was trained; ``context="full"`` keeps the decoder. Within
one segment the two agree. Every result records its context in ``details["context"]``.
``renormalise=False`` (the default) uses the model's own distribution over its whole vocabulary,
which is what it was trained on; ``renormalise=True`` renormalises over the actions the grammar
allows, as the beam search does by default, so that the two can be compared.

Proposal files hold one tree per line after the index of its sentence and a tab (``read_proposals``):

    0<TAB>(S (NP (DT The) (NN dog)) (VP (VBZ barks)))
    0<TAB>(S (NP (DT The)) (VP (NN dog) (VBZ barks)))
    1<TAB>(S ...)

Sentences are numbered from 0 in the order of the sentence file; a sentence's trees need not be
contiguous, and duplicates are scored once. A first line ``# trees without POS tags``
(``NO_POS_TAGS_HEADER``, as the proposal parser writes it) says that the trees have no POS tags.
"""

from __future__ import annotations

import dataclasses
import io
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from syntaxlm.errors import InputFormatError, TreeError, TreeFormatError
from syntaxlm.files import read_lines
from syntaxlm.inference.beam import hypothesis_bytes, logsumexp
from syntaxlm.inference.grammar import ActionSpace, InferenceError, Nodes, ParserStates
from syntaxlm.inference.sentences import EncodedSentence, SentenceScores, encode_sentence, piece_batches
from syntaxlm.models.decoding import Decoder
from syntaxlm.models.scoring import evaluating
from syntaxlm.memory import check_size
from syntaxlm.structure.actions import ActionKind, document_tree, encode_actions, tree_to_actions
from syntaxlm.structure.tg import tg_sequences
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree


class ProposalError(InferenceError):
    """Proposal trees that cannot be used for a sentence (none, or other words); names the sentence."""


# --- teacher forcing -------------------------------------------------------------------------------


def sequence_logprobs(
    make_decoder: Callable[[], Decoder],
    space: ActionSpace,
    sequences: Sequence[np.ndarray],
    *,
    context: np.ndarray | None = None,
    renormalise: bool = False,
) -> list[np.ndarray]:
    """``log p(token_t | <s> context tokens_<t)`` for every token of every sequence, through one
    decoder: the shared ``context`` (if any) is read once, then every sequence after it."""
    sequences = [np.asarray(s, dtype=np.int64) for s in sequences]
    context = np.zeros(0, dtype=np.int64) if context is None else np.asarray(context, dtype=np.int64)
    out = [np.zeros(len(s)) for s in sequences]
    if not sequences:
        return out
    order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]))
    lengths = np.array([len(sequences[i]) for i in order])
    decoder = make_decoder()
    stacks, history = Nodes(), Nodes()
    states = ParserStates.start(1)
    renormalise = renormalise and space.tree
    decoder.start(1)

    def step(tokens: np.ndarray, parents: np.ndarray) -> np.ndarray:
        """Log-probabilities of ``tokens`` after the held prefixes ``parents``, then advance."""
        nonlocal states
        logits = decoder.logits(torch.as_tensor(parents))
        rows = torch.as_tensor(parents, device=logits.device)
        tokens_t = torch.as_tensor(tokens, device=logits.device)
        picked = logits.gather(1, tokens_t[:, None])[:, 0].double().cpu().numpy()
        states = states.take(parents)
        allowed = space.allowed(states, stacks) if renormalise else None
        picked = picked - space.log_normaliser(logits, allowed)
        decoder.advance(rows, tokens_t)
        states = states.step(tokens, space, stacks, history)
        return picked

    with torch.no_grad():
        for token in context:
            step(np.array([token]), np.zeros(1, dtype=np.int64))
        # Longest first: the sequences still going at step t are the first n of the order.
        for t in range(int(lengths[0])):
            n = int((lengths > t).sum())
            tokens = np.array([sequences[order[j]][t] for j in range(n)], dtype=np.int64)
            parents = np.zeros(n, dtype=np.int64) if t == 0 else np.arange(n)
            values = step(tokens, parents)
            for j in range(n):
                out[order[j]][t] = values[j]
    return out


# --- sentences along trees --------------------------------------------------------------------------


DOCUMENT_CONTEXTS = ("training", "full")


@dataclass(frozen=True)
class TreeSequence:
    """A tree as the model's tokens: ids (after ``<s>``), and the word of each word piece (−1 else)."""

    ids: np.ndarray
    piece_word: np.ndarray


def tree_sequence(space: ActionSpace, vocab, tree: Tree) -> TreeSequence:
    """The tokens a joint model reads for ``tree`` (``TreeError`` for an empty constituent)."""
    encoded = encode_actions(tree_to_actions(tree, space.grammar.style), vocab)
    return TreeSequence(
        np.asarray(encoded.ids, dtype=np.int64), np.asarray(encoded.word_index, dtype=np.int64)
    )


def _check_tree(tree: Tree, words: Sequence[str], sentence: int, what: str) -> None:
    if not isinstance(tree, Tree):
        raise TypeError(f"sentence {sentence}: {what} is {type(tree).__name__}, not a Tree")
    if tree.leaves() != list(words):
        raise ProposalError(
            f"sentence {sentence}: the words of {what} ({' '.join(tree.leaves())!r}) differ from the sentence"
        )


def _prefix_marginals(
    sequences: Sequence[TreeSequence], logprobs: Sequence[np.ndarray], n_pieces: int
) -> tuple[np.ndarray, np.ndarray]:
    """``log p(pieces_≤k)`` summed over the distinct partial derivations of the sequences, for
    each ``k``, and each complete sequence's log-probability."""
    trie: dict[tuple[int, int], int] = {}
    at_piece: list[dict[int, float]] = [{} for _ in range(n_pieces)]
    totals = np.zeros(len(sequences))
    for s, (sequence, values) in enumerate(zip(sequences, logprobs)):
        node, cumulative, piece = -1, 0.0, 0
        for token, word, value in zip(sequence.ids.tolist(), sequence.piece_word.tolist(), values.tolist()):
            node = trie.setdefault((node, token), len(trie))
            cumulative += value
            if word >= 0:
                at_piece[piece].setdefault(node, cumulative)
                piece += 1
        totals[s] = cumulative
    prefix = np.array([logsumexp(np.fromiter(d.values(), dtype=np.float64)) for d in at_piece])
    return prefix, totals


def _scores_from_trees(
    sentence: EncodedSentence,
    trees: Sequence[Tree],
    sequences: Sequence[TreeSequence],
    logprobs: Sequence[np.ndarray],
    method: str,
    details: dict,
) -> SentenceScores:
    prefix, totals = _prefix_marginals(sequences, logprobs, len(sentence.ids))
    best = int(np.argmax(totals))
    with np.errstate(invalid="ignore"):
        return SentenceScores(
            words=sentence.words,
            pieces=sentence.pieces,
            piece_word=sentence.piece_word,
            piece_logprobs=np.diff(prefix, prepend=0.0),
            end_logprob=float(logsumexp(totals) - prefix[-1]),
            method=method,
            tree=trees[best],
            tree_logprob=float(totals[best]),
            details=dict(details, tree_logprobs=totals.tolist()),
        )


def _joint_model_space(model, bounds: dict) -> ActionSpace:
    space = ActionSpace(model.action_grammar(), **bounds)
    if not space.tree:
        raise InferenceError("this model reads words only: score it exactly (exact_scores), not along trees")
    return space


def _unique_trees(trees: Sequence[Tree]) -> list[Tree]:
    seen: dict[str, Tree] = {}
    for tree in trees:
        seen.setdefault(tree.to_bracket(), tree)
    return list(seen.values())


def proposal_scores(
    model,
    sentences: Sequence[Sequence[str]],
    proposals: Sequence[Sequence[Tree]],
    *,
    renormalise: bool = False,
    max_open: int = 50,
    max_openers: int = 8,
    context: str = "training",
    batch_size: int = 8,
    progress: bool = False,
    method: str = "proposals",
    indices: Sequence[int] | None = None,
) -> list[SentenceScores]:
    """Approximate marginals over each sentence's unique proposal trees (module docstring);
    ``tree`` is the best proposal (reranking) and ``details["tree_logprobs"]`` every unique
    proposal's ``log p(x, y)``. ``batch_size`` sentences' proposals share one decoder
    (``SizeError`` before any work when a batch's would not fit in memory).
    ``max_open``/``max_openers``: the grammar's bounds, which the normaliser respects when
    ``renormalise`` (as in ``BeamSettings``). ``context``: as in ``exact_scores``; recorded in
    ``details["context"]``. ``method`` names the results and the progress bar (``gold_scores``
    passes "gold"). ``indices``: the numbers errors name the sentences by (by default their
    positions; a part of a longer list of sentences gives their positions there)."""
    from tqdm import tqdm

    if len(proposals) != len(sentences):
        raise ProposalError(f"{len(proposals)} proposal sets for {len(sentences)} sentences")
    names = list(range(len(sentences))) if indices is None else list(indices)
    if len(names) != len(sentences):
        raise ValueError(f"{len(names)} indices for {len(sentences)} sentences")
    recorded = document_context(model, context)
    space = _joint_model_space(model, {"max_open": max_open, "max_openers": max_openers})
    encoded = [encode_sentence(model.vocab, words, names[i]) for i, words in enumerate(sentences)]
    unique = []
    for i, (sentence, trees) in enumerate(zip(encoded, proposals)):
        if not trees:
            raise ProposalError(f"sentence {names[i]} has no proposal trees")
        for tree in trees:
            _check_tree(tree, sentence.words, names[i], "a proposal tree")
        unique.append(_unique_trees(trees))
    results: list[SentenceScores | None] = [None] * len(encoded)
    batches = piece_batches(encoded, batch_size)
    rows = max((sum(len(unique[i]) for i in batch) for batch in batches), default=0)
    what = "the unique proposal trees of a batch of sentences, read side by side by the decoder"
    check_proposal_rows(model, space, "proposals", rows, lambda value: value, what)
    with evaluating(model):
        for batch in tqdm(batches, desc=method, unit="batch", disable=not progress):
            sequences = {
                i: [_sequence(space, model.vocab, tree, names[i]) for tree in unique[i]] for i in batch
            }
            # Read as trained, a sentence longer than a segment goes through the model's segmented
            # pass; the rest go through the decoder (within one segment the two agree).
            values = {
                i: _training_pass_logprobs(model, unique[i], sequences[i], renormalise=renormalise)
                for i in batch
                if _longer_than_a_segment(model, recorded, unique[i])
            }
            decoded = [i for i in batch if i not in values]
            flat = [sequence.ids for i in decoded for sequence in sequences[i]]
            logprobs = sequence_logprobs(model.decoder, space, flat, renormalise=renormalise) if flat else []
            start = 0
            for i in decoded:
                values[i] = logprobs[start : start + len(sequences[i])]
                start += len(sequences[i])
            for i in batch:
                details = {
                    "proposals": len(proposals[i]),
                    "unique_proposals": len(sequences[i]),
                    "renormalised": renormalise,
                    "context": recorded,
                }
                results[i] = _scores_from_trees(
                    encoded[i], unique[i], sequences[i], values[i], method, details
                )
    return results  # type: ignore[return-value]


def gold_scores(
    model,
    sentences: Sequence[Sequence[str]],
    trees: Sequence[Tree],
    *,
    renormalise: bool = False,
    context: str = "training",
    batch_size: int = 32,
    progress: bool = False,
    indices: Sequence[int] | None = None,
    **bounds,
) -> list[SentenceScores]:
    """``log p(x, y_gold)`` per piece (the actions before a piece count toward it) and the
    closing actions as ``end_logprob``; the TG/PLM papers' "approximate perplexity". ``context``:
    as in ``exact_scores`` (a document tree longer than a segment is read as trained by default);
    ``indices``: as in ``proposal_scores``."""
    if len(trees) != len(sentences):
        raise ProposalError(f"{len(trees)} trees for {len(sentences)} sentences")
    scores = proposal_scores(
        model,
        sentences,
        [[tree] for tree in trees],
        method="gold",
        renormalise=renormalise,
        context=context,
        batch_size=batch_size,
        progress=progress,
        indices=indices,
        **bounds,
    )
    for score in scores:
        score.details = {"renormalised": renormalise, "context": score.details["context"]}
    return scores


def check_proposal_rows(
    model, space: ActionSpace, name: str, value: int, rows: Callable[[int], int], what: str
) -> None:
    """``SizeError`` (``sizes.check_size``) naming ``name`` when ``rows(value)`` trees read side by
    side by the model's decoder (``sequence_logprobs``: every proposal of a batch of sentences)
    would not fit in memory, each taking ``beam.hypothesis_bytes``."""
    each = hypothesis_bytes(model, space)
    device = getattr(model, "device", None)
    check_size(name, value, lambda v: rows(v) * each, what, device=device, hint="; smaller batches need less")


def _sequence(space: ActionSpace, vocab, tree: Tree, sentence: int) -> TreeSequence:
    try:
        return tree_sequence(space, vocab, tree)
    except TreeError as error:
        raise ProposalError(f"sentence {sentence}: {error}") from None


def rerank(
    model, sentences: Sequence[Sequence[str]], proposals: Sequence[Sequence[Tree]], **options
) -> list[Tree]:
    """For each sentence, the proposal tree with the highest ``p(x, y)`` under the model (TG §3.2)."""
    return [score.tree for score in proposal_scores(model, sentences, proposals, **options)]


def exact_scores(
    model,
    sentences: Sequence[Sequence[str]],
    *,
    context: str = "training",
    batch_size: int = 32,
    progress: bool = False,
) -> list[SentenceScores]:
    """Exact per-piece log-probabilities of a words-only model, and ``log p(</s> | x)`` as the end.

    ``context``: ``"training"`` (the default) reads a sequence longer than one segment of a
    segmented model (TXL (terminals): a document) as the model was trained, by its own segmented
    pass with its segment and memory lengths (TG §2.2); ``"full"`` through the incremental
    decoder, which sees the whole sequence before each token. Within one segment the two agree.
    Recorded in ``details["context"]`` (``document_context``).
    """
    from tqdm import tqdm

    recorded = document_context(model, context)
    space = ActionSpace(model.action_grammar())
    if space.tree:
        raise InferenceError(
            "this model is a joint model of words and trees: use beam search, gold or proposal trees"
        )
    encoded = [encode_sentence(model.vocab, words, i) for i, words in enumerate(sentences)]
    results: list[SentenceScores | None] = [None] * len(encoded)
    batches = piece_batches(encoded, batch_size)
    with evaluating(model):
        for batch in tqdm(batches, desc="exact", unit="batch", disable=not progress):
            values = {
                i: _training_pass_word_logprobs(model, encoded[i])
                for i in batch
                # <s> pieces </s> longer than a segment: the model's own segmented pass
                if recorded.segmented and len(encoded[i].ids) + 2 > recorded.segment_length
            }
            decoded = [i for i in batch if i not in values]
            flat = [np.append(encoded[i].ids, EOS_ID) for i in decoded]
            values.update(zip(decoded, sequence_logprobs(model.decoder, space, flat) if flat else []))
            for i in batch:
                e, value = encoded[i], values[i]
                results[i] = SentenceScores(
                    words=e.words,
                    pieces=e.pieces,
                    piece_word=e.piece_word,
                    piece_logprobs=value[:-1],
                    end_logprob=float(value[-1]),
                    method="exact",
                    details={"context": recorded},
                )
    return results  # type: ignore[return-value]


# --- documents ----------------------------------------------------------------------------------------


def document_scores(
    model,
    documents: Sequence[Sequence[Sequence[str]]],
    proposals: Sequence[Sequence[Sequence[Tree]]],
    *,
    label: str = "DOC",
    renormalise: bool = False,
    max_open: int = 50,
    max_openers: int = 8,
    context: str = "training",
    progress: bool = False,
) -> list[list[SentenceScores]]:
    """Each sentence of each document scored over its proposals after the greedy best trees of
    the sentences before it, inside one ``(label ...)`` tree (TG §3.1, document-level models).

    The document opener counts toward the first word of the document, its closer toward the end of
    the last sentence, so a document's entries sum to the estimate of ``log p(document)``.
    ``context``: ``"training"`` reads each document prefix as the model was trained to, in its
    segments with its memory (for a model that reads whole sequences this is the whole prefix);
    ``"full"`` through the incremental decoder, which sees the whole prefix. Recorded in
    ``details["context"]`` (``document_context``).
    """
    from tqdm import tqdm

    recorded = document_context(model, context)
    segmented = recorded.segmented
    space = _joint_model_space(model, {"max_open": max_open, "max_openers": max_openers})
    if len(proposals) != len(documents):
        raise ProposalError(f"{len(proposals)} proposal sets for {len(documents)} documents")
    if label not in space.labels or label not in space.grammar.open_label.values():
        raise InferenceError(
            f"the model has no {label!r} constituent to hold a document; document-level models are "
            f"trained on ({label} ...) trees (structure.actions.document_tree)"
        )
    index = space.labels.index(label)
    opener = space.open_ids[space.open_labels == index][:1]
    closer = np.array([space.typed_close[index] if space.typed_close[index] >= 0 else space.reduce_id])
    results = []
    with evaluating(model):
        for d, (document, sets) in enumerate(
            tqdm(list(zip(documents, proposals)), desc="documents", disable=not progress)
        ):
            if len(sets) != len(document):
                raise ProposalError(f"document {d}: {len(sets)} proposal sets for {len(document)} sentences")
            context = np.zeros(0, dtype=np.int64)
            scored = []
            previous = None
            chosen: list[Tree] = []
            for i, (words, trees) in enumerate(zip(document, sets)):
                if not trees:
                    raise ProposalError(f"document {d}, sentence {i} has no proposal trees")
                for tree in trees:
                    _check_tree(tree, list(words), i, "a proposal tree")
                unique = _unique_trees(trees)
                sequences = [_in_document(space, model.vocab, previous, tree, label) for tree in unique]
                sentence = _as_read(model.vocab, words, sequences[0])
                first, last = i == 0, i == len(document) - 1
                sequences = [
                    _framed(s, opener if first else None, closer if last else None) for s in sequences
                ]
                if segmented:
                    start = 0 if first else len(opener) + len(context)
                    values = _segmented_logprobs(model, chosen, unique, label, sequences, start, renormalise)
                else:
                    values = sequence_logprobs(
                        model.decoder,
                        space,
                        [s.ids for s in sequences],
                        context=np.concatenate([opener, context]) if not first else None,
                        renormalise=renormalise,
                    )
                details = {
                    "document": d,
                    "sentence": i,
                    "unique_proposals": len(unique),
                    "renormalised": renormalise,
                    "context": recorded,
                }
                score = _scores_from_trees(sentence, unique, sequences, values, "document-proposals", details)
                scored.append(score)
                previous = unique[int(np.argmax(score.details["tree_logprobs"]))]
                chosen.append(previous)
                context = np.concatenate(
                    [context, sequences[unique.index(previous)].ids[len(opener) if first else 0 :]]
                )
            results.append(scored)
    return results


@dataclass(frozen=True)
class ReadingContext:
    """What a sequence's tokens see when it is scored: the ``context`` asked for (``"training"``
    or ``"full"``) and, for a segmented model read as trained, its ``segment_length``,
    ``memory_length`` and ``memory`` (``"smart"`` or ``"previous"``); ``None`` where the whole
    prefix is seen. Results record it as ``to_json()``."""

    context: str
    segment_length: int | None = None
    memory_length: int | None = None
    memory: str | None = None

    @property
    def segmented(self) -> bool:
        return self.segment_length is not None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def document_context(model, context: str) -> ReadingContext:
    """What a document's tokens see under ``context`` (``document_scores``): the model's training
    segments and memory for a segmented model read as trained, else the whole prefix."""
    if context not in DOCUMENT_CONTEXTS:
        raise InferenceError(f"context must be one of {', '.join(DOCUMENT_CONTEXTS)}, got {context!r}")
    config = getattr(model, "config", None)  # a model without one reads whole sequences
    segmented = context == "training" and all(
        hasattr(target, name)
        for target, name in ((model, "token_logprobs"), (model, "sequences"), (config, "memory_length"))
    )
    if not segmented:
        return ReadingContext(context)
    memory = "smart" if getattr(config, "smart_memory", False) else "previous"
    return ReadingContext(context, int(config.segment_length), int(config.memory_length), memory)


def _segmented_logprobs(
    model,
    before: list[Tree],
    trees: list[Tree],
    label: str,
    sequences: list[TreeSequence],
    start: int,
    renormalise: bool,
) -> list[np.ndarray]:
    """``log p(token | document before it)`` for each sequence's tokens by the model's own
    segmented pass over the whole document ``(label before... tree)`` from ``<s>``
    (``_training_pass_logprobs``); the sequence is its tokens from ``start`` on."""
    documents = [document_tree([*before, tree], label) for tree in trees]
    return _training_pass_logprobs(model, documents, sequences, start=start, renormalise=renormalise)


def _longer_than_a_segment(model, recorded: ReadingContext, trees: Sequence[Tree]) -> bool:
    """Whether any of ``trees`` is, as the model reads it, longer than one of the segments it is
    read in under ``recorded`` (never when the whole sequence is seen)."""
    return recorded.segmented and int(model.sequences(trees).lengths.max()) > recorded.segment_length


def _training_pass_logprobs(
    model,
    trees: Sequence[Tree],
    sequences: Sequence[TreeSequence],
    *,
    start: int = 0,
    renormalise: bool = False,
) -> list[np.ndarray]:
    """``log p(token | tokens before it)`` for each sequence's tokens by the model's own segmented
    pass over its tree from ``<s>`` (``token_logprobs``: its training segment and memory lengths,
    exact for the tree); the sequence is the tree's tokens from ``start`` on."""
    if renormalise:
        raise InferenceError(
            "renormalise=True is computed by the incremental decoder, which reads a sequence longer "
            "than a segment with full context: use context='full' with it"
        )
    full = model.sequences(trees)
    values = model.token_logprobs(full)
    out = []
    for i, sequence in enumerate(sequences):
        predicted = full[i].labels != PAD_ID  # one prediction per action after <s>, in order
        ids, logprobs = full[i].labels[predicted], values[i][predicted]
        end = start + len(sequence.ids)
        if not np.array_equal(ids[start:end], sequence.ids):
            raise InferenceError(f"proposal {i}: the model's tokens differ from the tree's tokens")
        out.append(np.asarray(logprobs[start:end], dtype=np.float64))
    return out


def _training_pass_word_logprobs(model, sentence: EncodedSentence) -> np.ndarray:
    """``log p(piece | pieces before it)`` for each piece of a words-only segmented model's
    sentence and then ``</s>``, by the model's own segmented pass (``token_logprobs``)."""
    # TXL (terminals) reads <s> pieces </s>; the bracket around the pieces only makes them one
    # tree for ``tg_sequences`` and is not read.
    n = len(sentence.ids)
    ids = np.concatenate([[BOS_ID], sentence.ids, [BOS_ID]])
    kinds = np.concatenate([[ActionKind.OPEN], np.full(n, ActionKind.WORD), [ActionKind.CLOSE]])
    words = np.concatenate([[-1], sentence.piece_word, [-1]])
    sequences = tg_sequences(ids, kinds, [0, n + 2], "txl-terminals", word_index=words)
    predicted = sequences[0].labels != PAD_ID
    if not np.array_equal(sequences[0].labels[predicted], np.append(sentence.ids, EOS_ID)):
        raise InferenceError("the model's tokens differ from the sentence's pieces")
    return np.asarray(model.token_logprobs(sequences)[0][predicted], dtype=np.float64)


def document_perplexity_logprobs(
    scores: Sequence[Sequence[SentenceScores]],
) -> tuple[list[np.ndarray], list[float], dict[str, Any]]:
    """``document_scores``' results as the arguments of ``eval.perplexity.perplexity`` (one entry
    per sentence of every document; the totals are the documents' ``log p``), with the context
    the documents were read in and the bound in ``marginalisation``."""
    flat = [score for document in scores for score in document]
    if not flat:
        raise InferenceError("no scored sentences")
    metadata: dict[str, Any] = {
        "method": "document-proposals",
        "perplexity": "upper bound (greedy best trees of earlier sentences, proposal trees)",
        "renormalised": flat[0].details["renormalised"],
        **flat[0].details["context"].to_json(),
    }
    return [s.word_logprobs for s in flat], [float(s.end_logprob) for s in flat], metadata


def _in_document(space: ActionSpace, vocab, previous: Tree | None, tree: Tree, label: str) -> TreeSequence:
    """``tree``'s tokens as the document model reads them after ``previous`` (its first word is
    not the document's first, which a word vocabulary's unknown-word classes tell apart)."""
    if previous is None:
        return tree_sequence(space, vocab, tree)
    both = tree_sequence(space, vocab, document_tree([previous, tree], label))
    before = tree_sequence(space, vocab, document_tree([previous], label))
    start = len(before.ids) - 1  # the document's closer ends `before`
    ids, words = both.ids[start:-1], both.piece_word[start:-1]
    return TreeSequence(ids, np.where(words >= 0, words - len(previous.leaves()), -1))


def _as_read(vocab, words: Sequence[str], sequence: TreeSequence) -> EncodedSentence:
    """The sentence as the pieces of a tree sequence."""
    is_piece = sequence.piece_word >= 0
    ids = sequence.ids[is_piece]
    return EncodedSentence(
        words=tuple(words),
        ids=ids,
        pieces=tuple(vocab.token(int(i)) for i in ids),
        piece_word=sequence.piece_word[is_piece],
    )


def _framed(sequence: TreeSequence, before: np.ndarray | None, after: np.ndarray | None) -> TreeSequence:
    ids, words = sequence.ids, sequence.piece_word
    if before is not None:
        ids, words = np.concatenate([before, ids]), np.concatenate([np.full(len(before), -1), words])
    if after is not None:
        ids, words = np.concatenate([ids, after]), np.concatenate([words, np.full(len(after), -1)])
    return TreeSequence(ids, words)


# --- proposal files -------------------------------------------------------------------------------------


NO_POS_TAGS_HEADER = "# trees without POS tags"
"""A first line of a proposal file whose trees have no POS tags (``read_proposals``), as the
proposal parser writes them (``syntaxlm parse PARSER SENTENCES --kbest K``/``--samples N``)."""
INDEX_DIGITS = 18  # digits of a sentence index at most: no corpus has 10**18 sentences


def read_proposals(
    path: str | Path, *, n_sentences: int | None = None, pos_tags: bool = True
) -> list[list[Tree]]:
    """Proposal trees per sentence from ``INDEX<TAB>TREE`` lines (module docstring).

    ``pos_tags=True``: trees as parsers write them, words under POS tags, read in the models'
    view (Choe–Charniak cleaning: no POS tags, traces, function tags or ROOT); ``False``: trees
    already in that view. A file whose first line is ``NO_POS_TAGS_HEADER`` says that its trees
    have none, and is read so whatever ``pos_tags`` says. ``n_sentences`` checks that no index is
    out of range. An index is ASCII digits (at most ``INDEX_DIGITS``); ``InputFormatError`` names
    the line of any that is not, or of a tree that cannot be read.
    """
    groups: dict[int, list[Tree]] = {}
    expected = "a sentence index (from 0), a tab, and one tree in brackets"
    for number, line in enumerate(read_lines(path, InputFormatError), 1):
        text = line.rstrip("\n")
        if number == 1 and text.strip() == NO_POS_TAGS_HEADER:
            pos_tags = False
            continue
        if not text.strip():
            continue
        index_text, tab, tree_text = text.partition("\t")
        if not tab:
            problem = "not a proposal line: no tab after a sentence index"
            raise InputFormatError(problem, path=path, line=number, expected=expected)
        index = _sentence_index(index_text, n_sentences, path, number)
        cleaning = CHOE_CHARNIAK_CLEANING if pos_tags else None
        try:
            trees = list(
                TreeReader(io.StringIO(tree_text), cleaning=cleaning, pos_tags=pos_tags, name=str(path))
            )
        except TreeFormatError as error:
            column = None if error.column is None else error.column + len(index_text) + 1
            raise InputFormatError(
                error.problem, path=path, line=number, column=column, expected=error.expected or "one tree"
            ) from None
        if len(trees) != 1:
            raise InputFormatError(f"found {len(trees)} trees", path=path, line=number, expected=expected)
        groups.setdefault(index, []).append(trees[0])
    size = n_sentences if n_sentences is not None else (max(groups) + 1 if groups else 0)
    return [groups.get(i, []) for i in range(size)]


def _sentence_index(text: str, n_sentences: int | None, path: str | Path, line: int) -> int:
    """The sentence index of a proposal line (``read_proposals``), checked before ``int`` reads it
    (which takes other digits than ASCII's and refuses more than 4,300 of them)."""
    digits = text.strip()
    bound = "from 0" if n_sentences is None else f"below {n_sentences} (the number of sentences)"
    expected = f"a sentence index in ASCII digits (at most {INDEX_DIGITS}) {bound}, then a tab"
    if not (digits.isascii() and digits.isdigit()):
        problem = f"not a proposal line: the sentence index {reprlib.repr(digits)} is not a number"
        raise InputFormatError(problem, path=path, line=line, column=1, expected=expected)
    if len(digits) > INDEX_DIGITS:
        problem = f"not a proposal line: the sentence index has {len(digits)} digits"
        raise InputFormatError(problem, path=path, line=line, column=1, expected=expected)
    index = int(digits)
    if n_sentences is not None and index >= n_sentences:
        problem = f"sentence index {index} is out of range for {n_sentences} sentences"
        raise InputFormatError(problem, path=path, line=line, column=1, expected=expected)
    return index


__all__ = [
    "DOCUMENT_CONTEXTS",
    "NO_POS_TAGS_HEADER",
    "ProposalError",
    "TreeSequence",
    "ReadingContext",
    "document_context",
    "document_perplexity_logprobs",
    "document_scores",
    "exact_scores",
    "gold_scores",
    "proposal_scores",
    "read_proposals",
    "rerank",
    "sequence_logprobs",
    "tree_sequence",
]
