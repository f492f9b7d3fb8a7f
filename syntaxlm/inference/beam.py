"""Word-synchronous beam search: surprisals and incremental parses of joint models of words and trees.

A joint model (TG, TXL (trees), PLM, PLM-mask) scores a word *and* a tree, ``p(x, y)``; the
probability of a word given its prefix needs ``p(x_≤k) = Σ_y p(x_≤k, y_≤k)`` over the partial trees
of the prefix. The word-synchronous beam search of Stern et al. (2017), as used by the structural
guidance paper (§3.2) and its authors' code, approximates that sum with a beam of partial parses
that advances one word piece at a time. For piece ``k``:

1. ``next`` starts empty; the *current* states are the word beam left by piece ``k − 1``;
2. every current state is expanded by every valid action: an opening nonterminal, the closer
   that fits, or generating piece ``k`` (the only word action: the sentence fixes it); the
   candidates are sorted by their cumulative log-probability;
3. of the best ``action_beam`` candidates, those that generated piece ``k`` go to ``next`` and
   the others become the current states; below the cut at most ``fast_track`` piece-generating
   candidates also go to ``next``;
4. 2–3 repeat while ``next`` holds fewer than ``action_beam`` states (and current states remain);
5. the best ``word_beam`` states of ``next`` are the word beam; ``log p(x_≤k)`` is estimated by the
   logsumexp of their scores. A piece's surprisal is the difference of successive estimates, a
   word's the sum over its pieces.

After the last piece every state of the word beam closes its open constituents (and emits
``</s>`` where the grammar ends with it); the best complete tree is the incremental parse and the
logsumexp of the complete scores estimates ``log p(x)``.

Departures from the authors' code, each fixing one of its bugs (REFERENCE_NOTES):

- **normalisation**: a model's next-token distribution covers its whole vocabulary, including
  actions that cannot follow the prefix (a closer with nothing open or of the wrong label, a
  closer right after an opener, a word outside the root, anything after the root has closed,
  ``<s>``). With ``renormalise=True`` (the default) the distribution is renormalised over the
  actions the *grammar* allows, so that ``p(x, y)`` sums to one over well-formed trees within the
  bounds below. The sentence itself is not part of that normaliser: the probability of piece
  ``k`` is taken against every word the grammar allows there, not against piece ``k`` alone (the
  authors' intended mask, which would make every word certain). Depth (``max_open``) and runs of
  openers (``max_openers``) are bounded, and the bounds belong to the grammar too.
- **termination**: when the current states run out before ``next`` is full the piece ends with
  what ``next`` holds, and ``exhausted_pieces`` counts it (a search that explored every
  continuation within the bounds is exact). If no state can generate a piece (the model gives it
  probability zero) the best current states are forced to generate it at a floor log-probability
  (``FORCED_LOGPROB``) and ``forced_pieces`` counts it.
- **no re-encoding**: hypotheses live in the model's incremental ``Decoder``; every expansion round
  of every sentence of a batch is one ``advance`` call (and one ``logits`` call per block of rows).
- **shared prefixes**: the search of piece ``k`` reads pieces ``≤ k`` only, so sentences of a batch
  that begin alike (SyntaxGym's conditions, BLiMP's pairs) search their common prefix once: a
  sentence starts from the word beam of the earlier sentence it shares most pieces with, handed
  over after those pieces (``shared_prefixes``), and gets the numbers it would get alone.

A waiting state (in ``next`` while other states are expanded) must stay unchanged while others
grow, so prefixes of different lengths live side by side in one decoder (``HeldPrefixes``):
decoders that set ``supports_keep = True`` read the token id ``KEEP`` (−1) in ``advance`` as "keep
``prefix[parents[i]]`` unchanged". A search over trees needs such a decoder; a words-only search
never keeps a prefix waiting, so any decoder does.

Words-only models (grammar style ``"words"``) have one derivation per sentence: the search is
exact scoring with the model's own distribution (no renormalisation), one hypothesis per sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from syntaxlm.inference.grammar import ActionSpace, Allowed, InferenceError, Nodes, ParserStates
from syntaxlm.inference.sentences import (
    EncodedSentence,
    SentenceScores,
    build_tree,
    common_prefix,
    encode_sentence,
    prefix_batches,
)
from syntaxlm.models.decoding import KEEP, ActionGrammar, Decoder
from syntaxlm.models.scoring import evaluating
from syntaxlm.memory import check_size, counted
from syntaxlm.text.base import EOS_ID

FORCED_LOGPROB = -1000.0
"""Log-probability (nats) given to a piece no state of the beam can generate."""

# The memory of a hypothesis held by the search (``hypothesis_bytes``): positions of the decoder's
# state it holds at least (TG's decoder keeps up to 16 padding slots before compacting), and the
# search's and the decoder's bookkeeping (parser states, masks, coordinates, the history of nodes).
HYPOTHESIS_SLOTS = 16
HYPOTHESIS_OVERHEAD = 4096

# Logits per block of rows on the CPU (``_Search._logprobs``): 2**20 float32 values are 4 MB, 54
# rows of a 19,200-word vocabulary, which stay in cache while their normaliser and candidates are
# read; the logits of all 1,600 rows of a round are 120 MB that the allocator maps afresh each
# round (docs/performance.md).
LOGITS_BLOCK_ELEMENTS = 2**20

# Roles of a held hypothesis in the search.
CURRENT, NEXT, FINISH = 0, 1, 2


@dataclass(frozen=True)
class BeamSettings:
    """Sizes and bounds of the search (the paper's 100 / 10 / 5 by default).

    ``max_open``: constituents open at once (the authors' ``max_open_nt`` is 50);
    ``max_openers``: opening actions in a row (a unary chain of that many nodes). Whether the
    model's distribution is renormalised over the grammar's valid actions is the search's
    ``renormalise`` argument (module docstring), not a size.
    """

    action_beam: int = 100
    word_beam: int = 10
    fast_track: int = 5
    max_open: int = 50
    max_openers: int = 8

    def __post_init__(self):
        for name in ("action_beam", "word_beam", "max_open", "max_openers"):
            if getattr(self, name) < 1:
                raise InferenceError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.fast_track < 0:
            raise InferenceError(f"fast_track must be at least 0, got {self.fast_track}")


PAPER_BEAM = BeamSettings()
"""Action beam 100, word beam 10, fast track 5: the structural-guidance paper's settings."""


# --- prefixes held by a decoder ------------------------------------------------------------------


class HeldPrefixes:
    """The search's prefixes, side by side in one decoder from ``make_decoder``: ``logits(rows)``
    of held prefixes and ``advance(parents, tokens)``, where a token may be ``KEEP`` if the decoder
    ``keeps`` prefixes (``supports_keep``)."""

    def __init__(self, make_decoder: Callable[[], Decoder], n: int):
        self.decoder = make_decoder()
        self.decoder.start(n)
        self.keeps = self.decoder.supports_keep
        self._device: torch.device | None = None

    @property
    def device(self) -> torch.device:
        """Where the decoder's logits live (known after the first ``logits``; the CPU before)."""
        return self._device or torch.device("cpu")

    def logits(self, rows: np.ndarray) -> Tensor:
        """``[len(rows), V]``: the decoder's next-token logits (``Decoder.logits``) after the held
        prefixes ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        every = len(rows) == self.decoder.size and (rows == np.arange(len(rows))).all()
        selected = None if every else torch.from_numpy(rows).to(self._device or "cpu")
        out = self.decoder.logits(selected)
        self._device = out.device
        return out

    def advance(self, parents: np.ndarray, tokens: np.ndarray) -> None:
        device = self._device or torch.device("cpu")
        self.decoder.advance(
            torch.as_tensor(np.asarray(parents, dtype=np.int64), dtype=torch.long, device=device),
            torch.as_tensor(np.asarray(tokens, dtype=np.int64), dtype=torch.long, device=device),
        )


# --- the search --------------------------------------------------------------------------------


@dataclass
class PieceBeam:
    """The search's result for one sentence given as piece ids.

    ``prefix_logprobs[k]``: estimate of ``log p(pieces[:k + 1])`` (structure included);
    ``logprob``: of the complete sentence (closed tree, ``</s>``); ``best``: the token ids (after
    ``<s>``) of the best complete derivation and ``best_logprob`` its log-probability.
    """

    prefix_logprobs: np.ndarray
    logprob: float
    best: list[int] | None
    best_logprob: float
    exhausted_pieces: int = 0
    forced_pieces: int = 0
    rounds: int = 0


@dataclass
class _Handover:
    """A leader's word beam after the pieces it shares with a follower: the new hypotheses (parent
    rows, tokens, scores) and the leader's record of those pieces."""

    parent: np.ndarray
    token: np.ndarray
    score: np.ndarray
    prefix: list[float]
    exhausted: int
    forced: int
    rounds: int


@dataclass
class _Sentence:
    pieces: np.ndarray
    k: int = 0
    n_next: int = 0
    prefix: list[float] = field(default_factory=list)
    finals: list[tuple[float, int]] = field(default_factory=list)
    exhausted: int = 0
    forced: int = 0
    rounds: int = 0
    failed: bool = False
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # Sharing a prefix with an earlier sentence of the batch (``shared_prefixes``): the sentence
    # leading it, how many pieces they share, and the word beam the leader hands over after them
    # (``_Handover``) until the next round starts this sentence from it.
    leader: int | None = None
    shared: int = 0
    start: _Handover | None = None

    @property
    def finishing(self) -> bool:
        return self.k >= len(self.pieces)


def logsumexp(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return -np.inf
    top = values.max()
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.exp(values - top).sum()))


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first (ties: earlier first)."""
    order = np.argsort(-scores, kind="stable")
    return order[:k]


def search_pieces(
    grammar: ActionGrammar | ActionSpace,
    make_decoder: Callable[[], Decoder],
    sentences: Sequence[Sequence[int]],
    settings: BeamSettings = PAPER_BEAM,
    *,
    word_starts: Sequence[Sequence[bool]] | None = None,
    renormalise: bool = True,
) -> list[PieceBeam]:
    """The word-synchronous beam search over sentences given as word-piece ids, all of them
    through one decoder from ``make_decoder`` (each round: one ``logprobs``, one ``advance``).

    ``word_starts[i][k]``: whether piece ``k`` of sentence ``i`` begins a word (default: all do).
    A piece that continues a word follows the piece before it directly: no constituent opens or
    closes inside a word (such actions still count in the normaliser; they are not expanded).
    A search over trees needs a decoder with ``supports_keep`` (module docstring).
    ``renormalise``: renormalise over the grammar's valid actions (module docstring).
    """
    space = (
        grammar
        if isinstance(grammar, ActionSpace)
        else ActionSpace(grammar, max_open=settings.max_open, max_openers=settings.max_openers)
    )
    if word_starts is None:
        word_starts = [np.ones(len(pieces), dtype=bool) for pieces in sentences]
    if len(word_starts) != len(sentences):
        raise InferenceError(f"{len(word_starts)} word_starts for {len(sentences)} sentences")
    state = []
    for i, (pieces, starts) in enumerate(zip(sentences, word_starts)):
        pieces = np.asarray(pieces, dtype=np.int64)
        starts = np.asarray(starts, dtype=bool)
        if len(pieces) == 0:
            raise InferenceError(f"sentence {i} has no word pieces")
        if starts.shape != pieces.shape:
            raise InferenceError(f"sentence {i}: word_starts must have one entry per piece")
        if ((pieces < 0) | (pieces >= space.vocab_size)).any() or not space.word_mask[pieces].all():
            raise InferenceError(f"sentence {i} holds ids that are not word pieces of the grammar")
        state.append(_Sentence(pieces, starts=starts))
    if not state:
        return []
    same = {}
    for i, (leader, shared) in enumerate(shared_prefixes([(s.pieces, s.starts) for s in state])):
        if leader is not None and shared == len(state[i].pieces) == len(state[leader].pieces):
            same[i] = leader  # the same sentence again: its leader's result
        elif leader is not None:
            state[i].leader, state[i].shared = leader, shared
    searched = [i for i in range(len(state)) if i not in same]
    roots = [i for i in searched if state[i].leader is None]
    held = HeldPrefixes(make_decoder, len(roots))
    if space.tree and not held.keeps:
        raise InferenceError("a search over trees needs a decoder that keeps prefixes (supports_keep)")
    sentences = [state[i] for i in searched]
    position = {i: p for p, i in enumerate(searched)}
    for sentence in sentences:
        if sentence.leader is not None:
            sentence.leader = position[sentence.leader]
    roots = np.array([position[i] for i in roots], dtype=np.int64)
    search = _Search(space, settings, sentences, held, roots, renormalise=renormalise)
    with torch.no_grad():
        while search.round():
            pass
    found = {i: search.result(state[i]) for i in searched}
    return [found[same.get(i, i)] for i in range(len(state))]


def shared_prefixes(sentences: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[tuple[int | None, int]]:
    """For each sentence (pieces and word starts), the earliest sentence before it with which it
    shares the longest prefix, and that prefix's number of pieces (``(None, 0)`` where none shares
    a piece). The search of a sentence then starts from its leader's word beam after those pieces:
    a leader's own leader shares fewer pieces with it than it does with its follower, so the
    leader's search passes through them."""
    keys = [list(zip(pieces.tolist(), starts.tolist())) for pieces, starts in sentences]
    found: list[tuple[int | None, int]] = []
    for i, key in enumerate(keys):
        best, shared = None, 0
        for j in range(i):
            n = common_prefix(key, keys[j])
            if n > shared:
                best, shared = j, n
        found.append((best, shared))
    return found


class _Next:
    """The hypotheses one round hands to ``advance``: sentence, parent row, token (or ``KEEP``),
    role, score; added sentence by sentence, in order."""

    def __init__(self):
        self.owners: list[np.ndarray] = []
        self.parents: list[np.ndarray] = []
        self.tokens: list[np.ndarray] = []
        self.roles: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []

    def add(self, owner: int, parent: np.ndarray, token: np.ndarray, role: int, score: np.ndarray) -> None:
        self.owners.append(np.full(len(parent), owner, dtype=np.int64))
        self.parents.append(np.asarray(parent, dtype=np.int64))
        self.tokens.append(np.asarray(token, dtype=np.int64))
        self.roles.append(np.full(len(parent), role, dtype=np.int8))
        self.scores.append(np.asarray(score, dtype=np.float64))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.parents:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, np.zeros(0, dtype=np.int8), np.zeros(0)
        parts = (self.owners, self.parents, self.tokens, self.roles, self.scores)
        return tuple(np.concatenate(part) for part in parts)


class _Search:
    """The search's state between rounds: the held hypotheses (rows of the decoder), each with its
    sentence, role (CURRENT, NEXT, FINISH), score and parser state; rows grouped by sentence."""

    def __init__(
        self,
        space: ActionSpace,
        settings: BeamSettings,
        sentences: list[_Sentence],
        held: HeldPrefixes,
        roots: np.ndarray,
        *,
        renormalise: bool,
    ):
        self.space = space
        self.settings = settings
        self.renormalise = renormalise and space.tree
        self.sentences = sentences
        self.held = held
        self.stacks, self.history = Nodes(), Nodes()
        n = len(roots)
        self.owner = np.asarray(roots, dtype=np.int64)  # the sentences that share no prefix start
        self.role = np.full(n, CURRENT, dtype=np.int8)
        self.score = np.zeros(n)
        self.states = ParserStates.start(n)
        self.width = len(space.open_ids) + 2  # candidate columns: openers, the fitting closer, the piece

    def round(self) -> bool:
        """One expansion round of every sentence; False when every sentence is complete."""
        if not len(self.owner):
            return False
        space = self.space
        allowed = space.allowed(self.states, self.stacks)
        cur = np.flatnonzero(self.role == CURRENT)
        fin = np.flatnonzero(self.role == FINISH)
        cand_ids, ok = self._candidates(cur, allowed)
        fin_token, fin_valid = self._closers(fin, allowed)
        # Only the rows being expanded or closed need their log-probabilities (``at``: their index
        # among those): of the candidates of a current row, of the forced token of a finishing one.
        active = np.flatnonzero(self.role != NEXT)
        at = np.full(len(self.owner), -1, dtype=np.int64)
        at[active] = np.arange(len(active))
        columns = np.zeros((len(active), self.width), dtype=np.int64)
        columns[at[cur]] = cand_ids
        columns[at[fin]] = fin_token[:, None]
        picked = self._logprobs(active, columns, allowed)
        cand = self.score[cur, None] + picked[at[cur]]
        piece_logprob = picked[at[cur], -1]
        cand[~ok] = -np.inf
        fin_score = self.score[fin] + picked[at[fin], 0]
        fin_score[~fin_valid] = -np.inf

        n_sentences = len(self.sentences)
        bounds = np.searchsorted(self.owner, np.arange(n_sentences + 1))
        cur_bounds = np.searchsorted(self.owner[cur], np.arange(n_sentences + 1))
        fin_bounds = np.searchsorted(self.owner[fin], np.arange(n_sentences + 1))
        out = _Next()
        for s, sentence in enumerate(self.sentences):
            if bounds[s] == bounds[s + 1]:
                if sentence.start is not None:
                    self._start_follower(s, sentence, out)
                continue
            sentence.rounds += 1
            if sentence.finishing:
                f = slice(fin_bounds[s], fin_bounds[s + 1])
                self._finish(s, sentence, fin[f], fin_token[f], fin_score[f], out)
            else:
                c = slice(cur_bounds[s], cur_bounds[s + 1])
                waiting = bounds[s] + np.flatnonzero(self.role[bounds[s] : bounds[s + 1]] == NEXT)
                self._expand(
                    s, sentence, cur[c], cand_ids[c], cand[c], piece_logprob[c], waiting, allowed, out
                )

        owner, parent, token, role, score = out.arrays()
        if len(parent) == 0:
            self.owner = parent
            return False
        self.held.advance(parent, token)
        self.owner, self.role, self.score = owner, role, score
        self.states = self.states.take(parent).step(token, space, self.stacks, self.history)
        return True

    def _logprobs(self, rows: np.ndarray, columns: np.ndarray, allowed: Allowed) -> np.ndarray:
        """``[len(rows), C]`` float64: the log-probabilities of the tokens ``columns`` after the held
        prefixes ``rows`` (renormalised over what ``allowed`` allows if the search renormalises).
        On the CPU in blocks of rows whose logits stay in cache (``LOGITS_BLOCK_ELEMENTS``): the
        logits of all rows at once are too large for it, and are allocated afresh every round."""
        out = np.zeros(columns.shape)
        if len(rows) == 0:
            return out
        block = len(rows)
        if self.held.device.type == "cpu":
            block = max(1, LOGITS_BLOCK_ELEMENTS // self.space.vocab_size)
        for first in range(0, len(rows), block):
            part = slice(first, first + block)
            logits = self.held.logits(rows[part])
            norm = self.space.log_normaliser(logits, allowed.take(rows[part]) if self.renormalise else None)
            with np.errstate(invalid="ignore"):  # −inf − −inf where nothing is allowed: not a candidate
                out[part] = _pick(logits, columns[part]) - norm[:, None]
        return out

    def _candidates(self, cur: np.ndarray, allowed: Allowed) -> tuple[np.ndarray, np.ndarray]:
        """Candidate ids ``[m, C]`` of the current rows (the openers, the fitting closer, the
        sentence's piece) and whether each may be taken."""
        space, C = self.space, self.width
        O = C - 2
        ids = np.zeros((len(cur), C), dtype=np.int64)
        ok = np.zeros((len(cur), C), dtype=bool)
        if len(cur) == 0:
            return ids, ok
        owner = self.owner[cur]
        piece = np.array([s.pieces[s.k] if not s.finishing else 0 for s in self.sentences], dtype=np.int64)
        structure = np.array([s.finishing or s.starts[s.k] for s in self.sentences], dtype=bool)[owner]
        ids[:, :O] = space.open_ids
        ids[:, O] = np.maximum(allowed.close_id[cur], 0)
        ids[:, O + 1] = piece[owner]
        ok[:, :O] = (allowed.opens[cur] & structure)[:, None]
        # Closing the root would end the sentence before its last piece.
        ok[:, O] = allowed.close[cur] & (self.states.depth[cur] >= 2) & structure
        ok[:, O + 1] = allowed.words[cur]
        return ids, ok

    def _closers(self, fin: np.ndarray, allowed: Allowed) -> tuple[np.ndarray, np.ndarray]:
        """The forced next action of each finishing row (its closer, or ``</s>`` once closed) and
        whether the grammar allows it."""
        closing = self.states.depth[fin] > 0
        token = np.where(closing, allowed.close_id[fin], EOS_ID)
        valid = np.where(closing, allowed.close[fin], allowed.eos[fin])
        return np.maximum(token, 0), valid

    def _finish(self, s: int, sentence: _Sentence, rows, tokens, scores, out: _Next) -> None:
        """Close what is open (one action per round); complete hypotheses leave the decoder."""
        closes_root = (self.states.depth[rows] == 1) & (not self.space.ends_with_eos)
        done = (tokens == EOS_ID) | closes_root | ~np.isfinite(scores)
        if done.any():
            nodes = self.history.add(self.states.node[rows[done]], tokens[done])
            sentence.finals.extend(zip(scores[done].tolist(), nodes.tolist()))
        out.add(s, rows[~done], tokens[~done], FINISH, scores[~done])

    def _expand(self, s, sentence, cur, cand_ids, cand, piece_logprob, waiting, allowed, out: _Next) -> None:
        """Steps 2–5 of the module docstring for one sentence's current rows ``cur``."""
        A, W, F = self.settings.action_beam, self.settings.word_beam, self.settings.fast_track
        C = self.width
        flat = cand.ravel()
        flat_ids = cand_ids.ravel()
        good = np.flatnonzero(flat > -np.inf)
        order = good[np.argsort(-flat[good], kind="stable")]
        is_piece = order % C == C - 1
        top, rest = order[:A], order[A:]
        grown_next = np.concatenate([top[is_piece[:A]], rest[is_piece[A:]][:F]])
        grown_cur = top[~is_piece[:A]]
        sentence.n_next += len(grown_next)
        # Only the best word_beam states of next can survive the piece: keep just those.
        parent = np.concatenate([waiting, cur[grown_next // C]])
        token = np.concatenate([np.full(len(waiting), KEEP), flat_ids[grown_next]])
        score = np.concatenate([self.score[waiting], flat[grown_next]])
        best = _top(score, W)
        parent, token, score = parent[best], token[best], score[best]
        if sentence.n_next < A and len(grown_cur):
            out.add(s, cur[grown_cur // C], flat_ids[grown_cur], CURRENT, flat[grown_cur])
            out.add(s, parent, token, NEXT, score)
            return
        # The piece is done: the word beam moves on to the next piece (or to closing).
        if len(grown_cur) == 0 and sentence.n_next < A and self.space.tree:
            sentence.exhausted += 1
        if len(parent) == 0:
            parent, token, score = self._forced(sentence, cur, allowed, piece_logprob)
            if len(parent) == 0:
                self._fail(s, sentence)
                return
        sentence.prefix.append(logsumexp(score))
        sentence.k += 1
        sentence.n_next = 0
        out.add(s, parent, token, FINISH if sentence.finishing else CURRENT, score)
        for follower in self.sentences[s + 1 :]:
            if follower.leader == s and follower.shared == sentence.k:
                follower.start = _Handover(
                    parent, token, score, list(sentence.prefix),
                    sentence.exhausted, sentence.forced, sentence.rounds,
                )  # fmt: skip

    def _start_follower(self, s: int, sentence: _Sentence, out: _Next) -> None:
        """A follower takes over its leader's word beam after the pieces they share (handed over
        in this round), as if it had searched them itself: the search of a prefix does not look
        past its last piece."""
        start, sentence.start = sentence.start, None
        sentence.prefix = start.prefix
        sentence.k = sentence.shared
        sentence.exhausted, sentence.forced, sentence.rounds = start.exhausted, start.forced, start.rounds
        out.add(s, start.parent, start.token, FINISH if sentence.finishing else CURRENT, start.score)

    def _fail(self, s: int, sentence: _Sentence) -> None:
        """No state can generate the piece: the sentence (and its followers not yet started, whose
        prefixes hold that piece) gets probability zero from there on."""
        sentence.failed = True
        sentence.prefix.extend([-np.inf] * (len(sentence.pieces) - sentence.k))
        for f, follower in enumerate(self.sentences[s + 1 :], start=s + 1):
            if follower.leader == s and follower.shared > sentence.k:
                follower.prefix = sentence.prefix[: follower.shared]
                follower.k = follower.shared
                follower.exhausted, follower.forced = sentence.exhausted, sentence.forced
                self._fail(f, follower)
        sentence.k = len(sentence.pieces)

    def _forced(self, sentence: _Sentence, cur, allowed: Allowed, piece_logprob):
        """No state generated the piece: the best current states that may emit a word are made
        to, at the model's log-probability floored at ``FORCED_LOGPROB``."""
        can = np.flatnonzero(allowed.words[cur])
        if len(can) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        sentence.forced += 1
        chosen = can[_top(self.score[cur[can]], self.settings.word_beam)]
        step = piece_logprob[chosen]
        step = np.where(np.isfinite(step), np.maximum(step, FORCED_LOGPROB), FORCED_LOGPROB)
        token = np.full(len(chosen), sentence.pieces[sentence.k], dtype=np.int64)
        return cur[chosen], token, self.score[cur[chosen]] + step

    def result(self, sentence: _Sentence) -> PieceBeam:
        finals = np.array([value for value, _ in sentence.finals])
        logprob = logsumexp(finals) if len(finals) and not sentence.failed else -np.inf
        best, best_logprob = None, -np.inf
        if len(finals) and np.isfinite(finals.max()):
            i = int(np.argmax(finals))
            best, best_logprob = self.history.path(sentence.finals[i][1]), float(finals[i])
        return PieceBeam(
            prefix_logprobs=np.array(sentence.prefix, dtype=np.float64),
            logprob=logprob,
            best=best,
            best_logprob=best_logprob,
            exhausted_pieces=sentence.exhausted,
            forced_pieces=sentence.forced,
            rounds=sentence.rounds,
        )


def _pick(values: Tensor, columns: np.ndarray) -> np.ndarray:
    """``values[i, columns[i, j]]`` as float64 on the host, gathering only those entries."""
    picked = values.gather(1, torch.from_numpy(columns).to(values.device))
    return picked.double().cpu().numpy()


def beam_search(
    model,
    sentences: Sequence[Sequence[str]],
    settings: BeamSettings = PAPER_BEAM,
    *,
    renormalise: bool = True,
    batch_size: int = 16,
    progress: bool = False,
) -> list[SentenceScores]:
    """Word-synchronous beam search on sentences of words with a model that offers
    ``action_grammar()``, ``decoder()`` and ``vocab``: per-piece log-probabilities (prefix
    differences), the end, and the incremental parse (``tree``; None for words-only models).
    ``renormalise``: over the grammar's valid actions (module docstring).

    Sentences are searched ``batch_size`` at a time in one decoder, in the order of their pieces
    (``prefix_batches``): those that begin alike share a batch, and a prefix common to sentences
    of a batch is searched once (``search_pieces``).
    ``SizeError`` before any work when the hypotheses of a batch would not fit in memory
    (``check_beam_size``).
    """
    from tqdm import tqdm

    space = ActionSpace(model.action_grammar(), max_open=settings.max_open, max_openers=settings.max_openers)
    encoded = [encode_sentence(model.vocab, words, i) for i, words in enumerate(sentences)]
    results: list[SentenceScores | None] = [None] * len(encoded)
    batches = prefix_batches(encoded, batch_size)
    check_beam_size(model, space, settings, max(map(len, batches), default=0))
    with evaluating(model):
        for batch in tqdm(batches, desc="beam", unit="batch", disable=not progress):
            found = search_pieces(
                space,
                model.decoder,
                [encoded[i].ids for i in batch],
                settings,
                word_starts=[encoded[i].word_starts for i in batch],
                renormalise=renormalise,
            )
            for i, beam in zip(batch, found):
                results[i] = _beam_scores(space, encoded[i], beam, settings, renormalise)
    return results  # type: ignore[return-value]


def hypothesis_bytes(model, space: ActionSpace) -> int:
    """About the least memory a hypothesis of the search takes (measured 1.5 to 4 times as much
    with a tiny TG): its row of float32 logits over the vocabulary, its candidates (ids and
    scores), ``HYPOTHESIS_SLOTS`` positions of the decoder's state (a float32 key and value per
    layer of the model's width each) and ``HYPOTHESIS_OVERHEAD`` of bookkeeping."""
    config = getattr(model, "config", None)
    position = 8 * int(getattr(config, "n_layers", 1)) * int(getattr(config, "d_model", 0))
    candidates = 32 * (len(space.open_ids) + 2)
    return HYPOTHESIS_OVERHEAD + 4 * space.vocab_size + candidates + HYPOTHESIS_SLOTS * position


def check_beam_size(model, space: ActionSpace, settings: BeamSettings, batch: int) -> None:
    """``SizeError`` (``sizes.check_size``) naming ``action_beam`` when the hypotheses a search of
    ``batch`` sentences holds would not fit in memory: per sentence, the current states (at most
    the action beam) and those waiting for the next piece (at most the word beam, and at most
    twice the action beam and the fast track's share of the candidates: a word beam or fast track
    larger than that changes nothing), each ``hypothesis_bytes``."""
    width = len(space.open_ids) + 2  # the candidates of a state (``_Search.width``)
    each = hypothesis_bytes(model, space)

    def need(action_beam: int) -> int:
        waiting = min(settings.word_beam, 2 * action_beam + min(settings.fast_track, action_beam * width))
        return batch * (action_beam + waiting) * each

    what = f"the beam search's hypotheses of a batch of {counted(batch, 'sentence')}"
    hint = "; smaller batches need less"
    device = getattr(model, "device", None)
    check_size("action_beam", settings.action_beam, need, what, device=device, hint=hint)


def _beam_scores(
    space: ActionSpace, sentence: EncodedSentence, beam: PieceBeam, settings: BeamSettings, renormalise: bool
) -> SentenceScores:
    prefix = beam.prefix_logprobs
    with np.errstate(invalid="ignore"):
        piece_logprobs = np.diff(prefix, prepend=0.0)
        end = beam.logprob - prefix[-1]
    tree = None
    if space.tree and beam.best is not None:
        tree = build_tree(space, beam.best, words=sentence.words, piece_word=sentence.piece_word)
    details = {
        "action_beam": settings.action_beam,
        "word_beam": settings.word_beam,
        "fast_track": settings.fast_track,
        "renormalised": bool(renormalise and space.tree),
        "exhausted_pieces": beam.exhausted_pieces,
        "forced_pieces": beam.forced_pieces,
        "rounds": beam.rounds,
    }
    return SentenceScores(
        words=sentence.words,
        pieces=sentence.pieces,
        piece_word=sentence.piece_word,
        piece_logprobs=piece_logprobs,
        end_logprob=float(end),
        method="beam" if space.tree else "exact",
        tree=tree,
        tree_logprob=beam.best_logprob if space.tree else float("nan"),
        details=details,
    )
