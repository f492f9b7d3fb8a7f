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
  one ``(DOC ...)`` tree, as the document models are trained.
- ``exact_scores``: words-only models, where ``p(x)`` is exact.
- ``rerank``: the proposal with the highest ``p(x, y)`` (TG §3.2).

All of them teacher-force the model's incremental ``Decoder`` (``sequence_logprobs``): every
proposal of every sentence of a batch goes through one decoder, one ``advance`` per position.
``renormalise=False`` (the default) uses the model's own distribution over its whole vocabulary,
which is what it was trained on; ``renormalise=True`` renormalises over the actions the grammar
allows, as the beam search does by default, so that the two can be compared.

Proposal files hold one tree per line after the index of its sentence and a tab (``read_proposals``):

    0<TAB>(S (NP (DT The) (NN dog)) (VP (VBZ barks)))
    0<TAB>(S (NP (DT The)) (VP (NN dog) (VBZ barks)))
    1<TAB>(S ...)

Sentences are numbered from 0 in the order of the sentence file; a sentence's trees need not be
contiguous, and duplicates are scored once.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from syntaxlm.errors import InputFormatError, TreeError, TreeFormatError
from syntaxlm.files import read_lines
from syntaxlm.inference.beam import (
    ActionSpace,
    EncodedSentence,
    InferenceError,
    Nodes,
    ParserStates,
    SentenceScores,
    encode_sentence,
    eval_mode,
    length_batches,
    logsumexp,
)
from syntaxlm.models.decoding import Decoder
from syntaxlm.structure.actions import document_tree, encode_actions, tree_to_actions
from syntaxlm.text.base import EOS_ID
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
    batch_size: int = 8,
    progress: bool = False,
) -> list[SentenceScores]:
    """Approximate marginals over each sentence's unique proposal trees (module docstring);
    ``tree`` is the best proposal (reranking) and ``details["tree_logprobs"]`` every unique
    proposal's ``log p(x, y)``. ``batch_size`` sentences' proposals share one decoder.
    ``max_open``/``max_openers``: the grammar's bounds, which the normaliser respects when
    ``renormalise`` (as in ``BeamSettings``)."""
    from tqdm import tqdm

    if len(proposals) != len(sentences):
        raise ProposalError(f"{len(proposals)} proposal sets for {len(sentences)} sentences")
    space = _joint_model_space(model, {"max_open": max_open, "max_openers": max_openers})
    encoded = [encode_sentence(model.vocab, words, i) for i, words in enumerate(sentences)]
    unique = []
    for i, (sentence, trees) in enumerate(zip(encoded, proposals)):
        if not trees:
            raise ProposalError(f"sentence {i} has no proposal trees")
        for tree in trees:
            _check_tree(tree, sentence.words, i, "a proposal tree")
        unique.append(_unique_trees(trees))
    results: list[SentenceScores | None] = [None] * len(encoded)
    batches = length_batches([len(e.ids) for e in encoded], batch_size)
    with eval_mode(model):
        for batch in tqdm(batches, desc="proposals", unit="batch", disable=not progress):
            sequences = {i: [_sequence(space, model.vocab, tree, i) for tree in unique[i]] for i in batch}
            flat = [sequence.ids for i in batch for sequence in sequences[i]]
            values = sequence_logprobs(model.decoder, space, flat, renormalise=renormalise)
            start = 0
            for i in batch:
                count = len(sequences[i])
                details = {
                    "proposals": len(proposals[i]),
                    "unique_proposals": count,
                    "renormalised": renormalise,
                }
                results[i] = _scores_from_trees(
                    encoded[i], unique[i], sequences[i], values[start : start + count], "proposals", details
                )
                start += count
    return results  # type: ignore[return-value]


def gold_scores(
    model,
    sentences: Sequence[Sequence[str]],
    trees: Sequence[Tree],
    *,
    renormalise: bool = False,
    batch_size: int = 32,
    progress: bool = False,
    **bounds,
) -> list[SentenceScores]:
    """``log p(x, y_gold)`` per piece (the actions before a piece count toward it) and the
    closing actions as ``end_logprob``; the TG/PLM papers' "approximate perplexity"."""
    if len(trees) != len(sentences):
        raise ProposalError(f"{len(trees)} trees for {len(sentences)} sentences")
    scores = proposal_scores(
        model,
        sentences,
        [[tree] for tree in trees],
        renormalise=renormalise,
        batch_size=batch_size,
        progress=progress,
        **bounds,
    )
    for score in scores:
        score.method = "gold"
        score.details = {"renormalised": renormalise}
    return scores


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
    model, sentences: Sequence[Sequence[str]], *, batch_size: int = 32, progress: bool = False
) -> list[SentenceScores]:
    """Exact per-piece log-probabilities of a words-only model, and ``log p(</s> | x)`` as the end."""
    from tqdm import tqdm

    space = ActionSpace(model.action_grammar())
    if space.tree:
        raise InferenceError(
            "this model is a joint model of words and trees: use beam search, gold or proposal trees"
        )
    encoded = [encode_sentence(model.vocab, words, i) for i, words in enumerate(sentences)]
    results: list[SentenceScores | None] = [None] * len(encoded)
    batches = length_batches([len(e.ids) for e in encoded], batch_size)
    with eval_mode(model):
        for batch in tqdm(batches, desc="exact", unit="batch", disable=not progress):
            flat = [np.append(encoded[i].ids, EOS_ID) for i in batch]
            values = sequence_logprobs(model.decoder, space, flat)
            for i, value in zip(batch, values):
                e = encoded[i]
                results[i] = SentenceScores(
                    words=e.words,
                    pieces=e.pieces,
                    piece_word=e.piece_word,
                    piece_logprobs=value[:-1],
                    end_logprob=float(value[-1]),
                    method="exact",
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
    progress: bool = False,
) -> list[list[SentenceScores]]:
    """Each sentence of each document scored over its proposals after the greedy best trees of
    the sentences before it, inside one ``(label ...)`` tree (TG §3.1, document-level models).

    The document opener counts toward the first word of the document, its closer toward the end of
    the last sentence, so a document's entries sum to the estimate of ``log p(document)``.
    """
    from tqdm import tqdm

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
    with eval_mode(model):
        for d, (document, sets) in enumerate(
            tqdm(list(zip(documents, proposals)), desc="documents", disable=not progress)
        ):
            if len(sets) != len(document):
                raise ProposalError(f"document {d}: {len(sets)} proposal sets for {len(document)} sentences")
            context = np.zeros(0, dtype=np.int64)
            scored = []
            previous = None
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
                }
                score = _scores_from_trees(sentence, unique, sequences, values, "document-proposals", details)
                scored.append(score)
                previous = unique[int(np.argmax(score.details["tree_logprobs"]))]
                context = np.concatenate(
                    [context, sequences[unique.index(previous)].ids[len(opener) if first else 0 :]]
                )
            results.append(scored)
    return results


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


def read_proposals(
    path: str | Path, *, n_sentences: int | None = None, pos_tags: bool = True
) -> list[list[Tree]]:
    """Proposal trees per sentence from ``INDEX<TAB>TREE`` lines (module docstring).

    ``pos_tags=True``: trees as parsers write them, words under POS tags, read in the models'
    view (Choe–Charniak cleaning: no POS tags, traces, function tags or ROOT); ``False``: trees
    already in that view. ``n_sentences`` checks that no index is out of range.
    """
    groups: dict[int, list[Tree]] = {}
    cleaning = CHOE_CHARNIAK_CLEANING if pos_tags else None
    expected = "a sentence index (from 0), a tab, and one tree in brackets"
    for number, line in enumerate(read_lines(path, InputFormatError), 1):
        text = line.rstrip("\n")
        if not text.strip():
            continue
        index_text, tab, tree_text = text.partition("\t")
        if not tab or not index_text.strip().isdigit():
            raise InputFormatError("not a proposal line", path=path, line=number, expected=expected)
        index = int(index_text)
        if n_sentences is not None and index >= n_sentences:
            raise InputFormatError(
                f"sentence index {index} is out of range for {n_sentences} sentences", path=path, line=number
            )
        try:
            trees = list(
                TreeReader(io.StringIO(tree_text), cleaning=cleaning, pos_tags=pos_tags, name=str(path))
            )
        except TreeFormatError as error:
            raise InputFormatError(
                error.problem, path=path, line=number, expected=error.expected or "one tree"
            ) from None
        if len(trees) != 1:
            raise InputFormatError(f"found {len(trees)} trees", path=path, line=number, expected=expected)
        groups.setdefault(index, []).append(trees[0])
    size = n_sentences if n_sentences is not None else (max(groups) + 1 if groups else 0)
    return [groups.get(i, []) for i in range(size)]


__all__ = [
    "ProposalError",
    "TreeSequence",
    "document_scores",
    "exact_scores",
    "gold_scores",
    "proposal_scores",
    "read_proposals",
    "rerank",
    "sequence_logprobs",
    "tree_sequence",
]
