"""Transformer Grammars: the transformed sequence, STACK/COMPOSE attention, segments with memory.

TG paper §2.1–2.2 and Algorithm 1, matched to the authors' masking code (REFERENCE_NOTES).

**Sequence.** ``<s>`` followed by the Choe–Charniak actions; every closer ``X)`` is duplicated:
the first copy (CNT1) performs COMPOSE and predicts nothing (label 0), the second (CNT2) performs
STACK and carries the original next-token label. ``depth`` is the tree depth (``<s>`` 0, a child
one deeper than its parent, both closer copies at their opener's depth).

**Attention as three vectors.** Algorithm 1 walks a stack; the mask it produces is fully
described by, per position ``j``, the position ``popped_at[j]`` of the COMPOSE that pops it
(``NEVER`` if none; a CNT2 is never pushed, so its own position):

- a STACK row ``i`` attends ``j`` iff ``j <= i < popped_at[j]`` (``j`` is on the stack at ``i``);
- a COMPOSE row ``i`` attends ``j`` iff ``popped_at[j] == i`` (the closed constituent's opener
  and children);
- every real row attends itself; padding attends nothing and is never attended.

``popped_at`` is computed without a per-token loop: the closer that pops a token is the first
closer after it at its owner's depth (closers at one depth never nest), found by one sorted
search. ``stack_compose_mask`` expands the rule into a dense mask using only array operators, so
the same function runs on numpy arrays here and on torch tensors on the model's device: the dense
``L × (M + L)`` matrices, which dominate the authors' C++ data path, need never be built on the
CPU. Relative positions are ``R_ij = δ(i) − δ(j)`` with δ the depth (``relative_positions``).

**Variants from one entry point** (``tg_sequences``): ``"tg"``; ``"txl-trees"``, the same actions
without duplication, causal attention (nothing is ever popped) and linear distance (δ = position);
``"txl-terminals"``, ``<s>`` + the words + ``</s>``, causal, linear distance (the end symbol is
predicted so that word-string probabilities are normalised; results say whether it is counted).

**Many sequences at once.** Everything works on a corpus laid out flat (one array per field and
``offsets``), with numpy operations over the whole corpus; one sequence is the case ``N = 1``.

**Segments and memory** (``segment_sequences``, §2.2). Each sequence is cut into segments of
length ``L`` (its last one padded); a segment sees ``M`` memory slots (``M = L`` by default). The
next segment's memory is gathered from ``[memory; segment]`` by ``next_memory_source``:

- ``memory="smart"`` (TG's default): the positions still on the stack after the segment's last
  real token, oldest first, right-aligned into the ``M`` slots. Positions that fell out of memory
  earlier are skipped; when more than ``M`` remain, the oldest are dropped, exactly as the authors'
  code does, and later attention to them is lost (``attention_loss`` measures how much; a memory
  longer than the segment, ``M > L``, loses less);
- ``memory="previous"``: the ``M`` positions before the segment (Transformer-XL). For the TXL
  variants, where nothing is popped, both rules give this same memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from syntaxlm.errors import ActionSequenceError
from syntaxlm.structure.actions import ActionKind, EncodedActions, encode_actions, tree_to_actions
from syntaxlm.structure.tg_variants import VARIANTS, Variant
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID, Vocabulary
from syntaxlm.trees.tree import Tree

# Token types of the authors' code (transformer_grammars/models/masking/constants.py).
PAD_TYPE, SOS_TYPE, OPENING_NT, TERMINAL, CLOSING_NT, CLOSING_NT_2 = 0, 1, 2, 3, 4, 14
TOKEN_TYPE_NAMES = {
    PAD_TYPE: "PAD",
    SOS_TYPE: "SOS",
    OPENING_NT: "ONT",
    TERMINAL: "T",
    CLOSING_NT: "CNT1",
    CLOSING_NT_2: "CNT2",
}
_TYPE_OF_KIND = np.array([OPENING_NT, TERMINAL, CLOSING_NT], dtype=np.int8)  # indexed by ActionKind

NEVER = np.iinfo(np.int32).max
"""``popped_at`` of a position that is never popped."""

MemoryRule = Literal["smart", "previous"]

# Per-position fields of a sequence, with the value that pads them in a segment.
_POSITION_FIELDS = (
    ("inputs", PAD_ID),
    ("input_types", PAD_TYPE),
    ("labels", PAD_ID),
    ("label_types", PAD_TYPE),
    ("label_word", -1),
    ("compose", False),
    ("depth", 0),
    ("popped_at", NEVER),
)


# --- the mask and the relative positions ----------------------------------------------------


def stack_compose_mask(query_position, query_compose, key_position, key_popped_at):
    """The dense STACK/COMPOSE mask ``[..., Q, K]`` from per-query and per-key vectors.

    Positions are indices in the whole sequence (−1 for padding or an empty memory slot). Uses only
    array operators, so it works on numpy arrays and torch tensors (with leading batch axes) alike.
    With ``query_compose`` all false and ``key_popped_at`` all ``NEVER`` it is the causal mask.
    """
    query = query_position[..., :, None]
    key = key_position[..., None, :]
    popped_at = key_popped_at[..., None, :]
    compose = query_compose[..., :, None]
    on_stack = (key <= query) & (query < popped_at)
    composed = popped_at == query
    return (query >= 0) & (key >= 0) & ((key == query) | (compose & composed) | (~compose & on_stack))


def relative_positions(query_coordinate, key_coordinate):
    """``R_ij = δ(i) − δ(j)`` as ``[..., Q, K]`` (numpy or torch); meaningful where the mask is 1."""
    return query_coordinate[..., :, None] - key_coordinate[..., None, :]


def sparse_attention(mask: np.ndarray, relative: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    """A dense ``[Q, K]`` mask and relative positions as per-row lists: the keys each row attends
    (ascending) and the relative positions at those keys (the authors' sparse form)."""
    keys = [np.flatnonzero(row).tolist() for row in mask]
    return keys, [relative[i, k].tolist() for i, k in enumerate(keys)]


# --- sequences ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _PerPosition:
    """The per-position arrays of a sequence (see ``TGSequence``)."""

    variant: Variant
    inputs: np.ndarray
    input_types: np.ndarray
    labels: np.ndarray
    label_types: np.ndarray
    label_word: np.ndarray
    compose: np.ndarray
    depth: np.ndarray
    popped_at: np.ndarray


@dataclass(frozen=True, eq=False)
class TGSequence(_PerPosition):
    """One whole sequence as the model reads it; every array has one entry per position.

    ``labels[i]`` is the token predicted at ``i`` (0 where nothing is predicted), ``label_word[i]``
    the word it belongs to (−1 for nonterminals and non-predictions), so per-word scores can be
    summed from per-position ones. ``popped_at`` is relative to the sequence.
    """

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def positions(self) -> np.ndarray:
        return np.arange(len(self.inputs), dtype=np.int32)

    @property
    def relative_coordinate(self) -> np.ndarray:
        """δ in ``R_ij = δ(i) − δ(j)``: the depth for TG, the position for the TXL baselines."""
        return self.depth if self.variant == "tg" else self.positions

    def attention_mask(self) -> np.ndarray:
        """The dense ``[T, T]`` boolean mask of Algorithm 1 (the causal mask for the TXL variants)."""
        positions = self.positions
        return stack_compose_mask(positions, self.compose, positions, self.popped_at)

    def relative_positions(self) -> np.ndarray:
        """The dense ``[T, T]`` relative positions, 0 wherever the mask is 0."""
        coordinate = self.relative_coordinate
        return np.where(self.attention_mask(), relative_positions(coordinate, coordinate), 0)


@dataclass(frozen=True, eq=False)
class TGSequences(_PerPosition):
    """Many sequences laid out flat: sequence ``i`` is ``[offsets[i], offsets[i + 1])`` of each field."""

    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __getitem__(self, index: int) -> TGSequence:
        if not -len(self) <= index < len(self):
            raise IndexError(f"sequence {index} out of range for {len(self)} sequences")
        window = slice(self.offsets[index], self.offsets[index + 1])
        values = {name: getattr(self, name)[window] for name, _ in _POSITION_FIELDS}
        return TGSequence(variant=self.variant, **values)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def tg_sequences(
    ids: Sequence[int] | np.ndarray,
    kinds: Sequence[int] | np.ndarray,
    offsets: Sequence[int] | np.ndarray,
    variant: Variant = "tg",
    *,
    word_index: Sequence[int] | np.ndarray | None = None,
) -> TGSequences:
    """The sequences of ``variant`` for many trees given as flat action ids and ``ActionKind``s.

    Tree ``i`` is ``ids[offsets[i]:offsets[i + 1]]`` (no ``<s>``), one entry per piece as in
    ``EncodedActions``, where a word may be several terminal pieces; ``word_index`` gives each
    piece's word within its tree (−1 for nonterminals); without it every terminal piece is a word.
    Raises ``ActionSequenceError`` (naming the tree and action) for a sequence that is not one
    tree or has an empty constituent.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    ids = _integers(ids, "ids", np.int32)
    kinds = _integers(kinds, "kinds", np.int8)
    offsets = _integers(offsets, "offsets", np.int64)
    _check_actions(ids, kinds, offsets)
    n_trees = len(offsets) - 1
    tree_of_action = np.repeat(np.arange(n_trees), np.diff(offsets))
    is_word = kinds == ActionKind.WORD
    if word_index is None:
        words_before = np.cumsum(is_word) - is_word
        word_index = np.where(is_word, words_before - words_before[offsets[:-1]][tree_of_action], -1)
    word_index = _integers(word_index, "word_index", np.int32)
    if word_index.shape != ids.shape:
        raise ValueError(f"word_index has shape {word_index.shape}, expected {ids.shape}")

    if variant == "txl-terminals":
        lengths = np.bincount(tree_of_action[is_word], minlength=n_trees)
        starts, inner = _insert_positions(lengths, before=1, after=1)
        seq_ids = _fill(starts, inner, ids[is_word], BOS_ID, EOS_ID)
        types = _fill(starts, inner, np.full(int(lengths.sum()), TERMINAL, np.int8), SOS_TYPE, TERMINAL)
        words = _fill(starts, inner, word_index[is_word], -1, -1)
        return _causal(variant, starts, seq_ids, types, words, np.zeros(len(seq_ids), dtype=np.int32))

    starts, inner = _insert_positions(np.diff(offsets), before=1, after=0)
    seq_ids = _fill(starts, inner, ids, BOS_ID, None)
    types = _fill(starts, inner, _TYPE_OF_KIND[kinds], SOS_TYPE, None)
    words = _fill(starts, inner, word_index, -1, None)
    step = np.zeros(len(seq_ids), dtype=np.int32)
    step[types == OPENING_NT] = 1
    step[types == CLOSING_NT] = -1
    is_closer = types == CLOSING_NT
    # Trees are balanced, so the running level is 0 at every <s>: no per-tree correction needed.
    depth = (np.cumsum(step) - step + ~is_closer).astype(np.int32)
    depth[starts[:-1]] = 0
    if variant == "txl-trees":
        return _causal(variant, starts, seq_ids, types, words, depth)
    return _with_compose(variant, starts, seq_ids, types, words, depth)


def _with_compose(
    variant: Variant,
    starts: np.ndarray,
    seq_ids: np.ndarray,
    types: np.ndarray,
    words: np.ndarray,
    depth: np.ndarray,
) -> TGSequences:
    """TG's sequences from the trees' action sequences (``tg_sequences``): every closer doubled,
    and when each token is popped from the stack (TG §2.1, Algorithm 1)."""
    is_closer = types == CLOSING_NT
    # Duplicate closers: copy 1 is COMPOSE (label PAD), copy 2 is STACK (CLOSING_NT_2).
    repeat = 1 + is_closer
    first_copy = np.cumsum(repeat) - repeat  # position of each token's first copy
    closer_first = first_copy[is_closer]
    labels, label_types, label_word = _shifted_labels(starts, seq_ids, types, words)
    inputs = np.repeat(seq_ids, repeat)
    input_types = np.repeat(types, repeat)
    input_types[closer_first + 1] = CLOSING_NT_2
    labels = np.repeat(labels, repeat)
    labels[closer_first] = PAD_ID
    label_types = np.repeat(label_types, repeat)
    label_types[closer_first] = PAD_TYPE
    label_word = np.repeat(label_word, repeat)
    label_word[closer_first] = -1
    compose = np.zeros(len(inputs), dtype=bool)
    compose[closer_first] = True

    # A token is popped by the COMPOSE of the constituent holding it on the stack: its own for an
    # opener, its parent's for a word or a composed constituent (Algorithm 1, lines 4-11). That
    # closer is the first closer after the token at the owner's depth, always in the same tree;
    # owner depth 0 is <s>, never popped.
    owner_depth = (depth - (types != OPENING_NT)).astype(np.int64)
    token = np.arange(len(seq_ids), dtype=np.int64)
    span = len(seq_ids) + 1
    closer_token = token[is_closer]
    closer_key = depth[is_closer].astype(np.int64) * span + closer_token
    order = np.argsort(closer_key, kind="stable")
    closer_key, closer_token = closer_key[order], closer_token[order]
    found = np.searchsorted(closer_key, owner_depth * span + token, side="right")
    found = np.minimum(found, max(len(closer_key) - 1, 0))
    has_owner = owner_depth >= 1
    sequence_offsets = first_copy[starts[:-1]]
    token_start = np.repeat(sequence_offsets, np.diff(starts))
    if len(closer_token):
        popped = np.where(has_owner, first_copy[closer_token[found]] - token_start, NEVER)
    else:
        popped = np.full(len(seq_ids), NEVER)
    popped_at = np.repeat(popped.astype(np.int32), repeat)
    popped_at[closer_first + 1] = closer_first + 1 - np.repeat(token_start, repeat)[closer_first + 1]
    return TGSequences(
        variant=variant,
        offsets=np.append(sequence_offsets, len(inputs)),
        inputs=inputs,
        input_types=input_types,
        labels=labels,
        label_types=label_types,
        label_word=label_word,
        compose=compose,
        depth=np.repeat(depth, repeat),
        popped_at=popped_at,
    )


def tg_sequence(
    ids: Sequence[int] | np.ndarray,
    kinds: Sequence[int] | np.ndarray,
    variant: Variant = "tg",
    *,
    word_index: Sequence[int] | np.ndarray | None = None,
) -> TGSequence:
    """``tg_sequences`` for one tree."""
    return tg_sequences(ids, kinds, [0, len(ids)], variant, word_index=word_index)[0]


def encoded_sequences(encoded: Sequence[EncodedActions], variant: Variant = "tg") -> TGSequences:
    """``tg_sequences`` of trees spelled by ``encode_actions`` (Choe–Charniak style)."""
    for i, actions in enumerate(encoded):
        if actions.actions.style != "choe-charniak":
            raise ValueError(
                f"tree {i} is spelled in {actions.actions.style} style; TG reads choe-charniak actions"
            )
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])])

    def flat(name: str, dtype) -> np.ndarray:
        return np.concatenate([getattr(e, name) for e in encoded]) if encoded else np.zeros(0, dtype)

    return tg_sequences(
        flat("ids", np.int32),
        flat("kinds", np.int8),
        offsets,
        variant,
        word_index=flat("word_index", np.int32),
    )


def tree_sequences(trees: Iterable[Tree], vocab: Vocabulary, variant: Variant = "tg") -> TGSequences:
    """``tg_sequences`` of trees, spelled with ``vocab`` (its symbols must include ``(X``/``X)``)."""
    return encoded_sequences([encode_actions(tree_to_actions(tree), vocab) for tree in trees], variant)


def _insert_positions(lengths: np.ndarray, *, before: int, after: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of sequences grown by ``before``/``after`` extra positions, and where the originals go."""
    grown = lengths + before + after
    starts = np.concatenate([[0], np.cumsum(grown)]).astype(np.int64)
    inner = np.arange(int(lengths.sum())) + np.repeat(
        starts[:-1] + before - np.cumsum(lengths) + lengths, lengths
    )
    return starts, inner


def _fill(starts: np.ndarray, inner: np.ndarray, values: np.ndarray, first, last) -> np.ndarray:
    out = np.empty(int(starts[-1]), dtype=values.dtype)
    out[inner] = values
    out[starts[:-1]] = first
    if last is not None:
        out[starts[1:] - 1] = last
    return out


def _shifted_labels(
    starts: np.ndarray, ids: np.ndarray, types: np.ndarray, words: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Labels are the inputs shifted left by one, nothing at a sequence's end (TG ``lshift``)."""
    ends = starts[1:] - 1
    shifted = []
    for values, fill in ((ids, PAD_ID), (types, PAD_TYPE), (words, -1)):
        out = np.empty_like(values)
        out[:-1] = values[1:]
        out[ends] = fill
        shifted.append(out)
    return tuple(shifted)


def _causal(variant: Variant, starts: np.ndarray, ids, types, words, depth) -> TGSequences:
    labels, label_types, label_word = _shifted_labels(starts, ids, types, words)
    return TGSequences(
        variant=variant,
        offsets=starts,
        inputs=ids,
        input_types=types,
        labels=labels,
        label_types=label_types,
        label_word=label_word,
        compose=np.zeros(len(ids), dtype=bool),
        depth=depth,
        popped_at=np.full(len(ids), NEVER, dtype=np.int32),
    )


def _integers(values, name: str, dtype) -> np.ndarray:
    """``values`` as an array of ``dtype``; ``ValueError`` unless they are integers in its range
    (numpy would refuse some with an ``OverflowError`` and cut floats down without a word)."""
    try:
        array = np.asarray(values)
    except ValueError as error:  # a ragged nesting of lists
        raise ValueError(f"{name} must be a flat sequence of integers: {error}") from None
    if array.size == 0:
        return array.astype(dtype)
    limits = np.iinfo(dtype)
    if array.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must be integers from {limits.min} to {limits.max}, not {array.dtype} values"
        )
    outside = (array < limits.min) | (array > limits.max)
    if outside.any():
        raise ValueError(
            f"{name} must be integers from {limits.min} to {limits.max}, not {array[outside][0]}"
        )
    return array.astype(dtype, copy=False)


def _check_actions(ids: np.ndarray, kinds: np.ndarray, offsets: np.ndarray) -> None:
    """Each tree's actions must build one tree without empty constituents (TG's COMPOSE needs them)."""
    if ids.ndim != 1 or ids.shape != kinds.shape:
        raise ValueError(
            f"ids and kinds must be 1-d and of one length, got shapes {ids.shape} and {kinds.shape}"
        )
    if (
        offsets.ndim != 1
        or len(offsets) < 1
        or offsets[0] != 0
        or offsets[-1] != len(ids)
        or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError(f"offsets must rise from 0 to {len(ids)}")

    def fail(problem: str, action: int) -> None:
        tree = int(np.searchsorted(offsets, action, side="right")) - 1
        raise ActionSequenceError(problem, action=int(action - offsets[tree]), sentence=tree)

    empty_tree = np.flatnonzero(np.diff(offsets) == 0)
    if len(empty_tree):
        raise ActionSequenceError(
            "no actions; expected at least one constituent with a word", sentence=int(empty_tree[0])
        )
    if np.any(ids <= 0):
        fail("action ids must be positive (0 is padding)", int(np.argmax(ids <= 0)))
    if np.any((kinds < 0) | (kinds > ActionKind.CLOSE)):
        fail("unknown action kind", int(np.argmax((kinds < 0) | (kinds > ActionKind.CLOSE))))
    if len(ids) == 0:
        return
    level = np.cumsum((kinds == ActionKind.OPEN).astype(np.int64) - (kinds == ActionKind.CLOSE))
    level_before_tree = np.concatenate([[0], level[offsets[1:-1] - 1]])
    level -= np.repeat(level_before_tree, np.diff(offsets))
    last = np.zeros(len(ids), dtype=bool)
    last[offsets[1:] - 1] = True
    first = offsets[:-1]
    bad = np.where(last, level != 0, level <= 0)
    bad[first] |= kinds[first] != ActionKind.OPEN
    if np.any(bad):
        at = int(np.argmax(bad))
        if at in first and kinds[at] != ActionKind.OPEN:
            problem = "a tree must start with an opening nonterminal"
        elif level[at] <= 0:
            problem = "the root constituent closes before the tree's last action"
        else:
            problem = f"the tree ends with {level[at]} open constituent(s)"
        fail(f"actions do not form one tree: {problem}", at)
    empty = np.zeros(len(ids), dtype=bool)
    empty[1:] = (kinds[:-1] == ActionKind.OPEN) & (kinds[1:] == ActionKind.CLOSE)
    if np.any(empty):
        fail(
            "empty constituent (an opening nonterminal directly closed); TG's COMPOSE needs children",
            int(np.argmax(empty)),
        )


# --- segments ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TGSegment(_PerPosition):
    """One segment of ``L`` positions and the ``M`` memory slots it sees.

    Per position: the sequence fields plus ``position`` (index in the whole sequence, −1 for
    padding). Per memory slot: ``memory_position`` (−1 empty), ``memory_depth``,
    ``memory_popped_at``. ``next_memory_source[s]`` is the index into ``[memory; segment]`` that the
    next segment's slot ``s`` is gathered from (−1: empty). Attention keys are ``[memory; segment]``.
    """

    sequence: int
    segment: int
    position: np.ndarray
    memory_position: np.ndarray
    memory_depth: np.ndarray
    memory_popped_at: np.ndarray
    next_memory_source: np.ndarray
    beginning_of_sequence: bool
    end_of_sequence: bool

    @property
    def key_position(self) -> np.ndarray:
        return np.concatenate([self.memory_position, self.position], axis=-1)

    @property
    def key_popped_at(self) -> np.ndarray:
        return np.concatenate([self.memory_popped_at, self.popped_at], axis=-1)

    @property
    def query_coordinate(self) -> np.ndarray:
        """δ of each position (depth for TG, position for TXL)."""
        return self.depth if self.variant == "tg" else self.position

    @property
    def key_coordinate(self) -> np.ndarray:
        if self.variant == "tg":
            return np.concatenate([self.memory_depth, self.depth], axis=-1)
        return self.key_position

    def attention_mask(self) -> np.ndarray:
        """Dense ``[..., L, M + L]`` mask over ``[memory; segment]``."""
        return stack_compose_mask(self.position, self.compose, self.key_position, self.key_popped_at)

    def relative_positions(self) -> np.ndarray:
        """Dense ``[..., L, M + L]`` relative positions, 0 where the mask is 0."""
        return np.where(
            self.attention_mask(), relative_positions(self.query_coordinate, self.key_coordinate), 0
        )


@dataclass(frozen=True, eq=False)
class TGSegments(TGSegment):
    """Segments stacked into rows: the fields of ``TGSegment`` with a leading axis of rows.

    ``sequence[r]``/``segment[r]`` say which sequence row ``r`` comes from and its place in it;
    ``beginning_of_sequence``/``end_of_sequence`` are boolean columns. A batch of rows is what a
    model consumes; ``self[r]`` is one row as a ``TGSegment``.
    """

    def __len__(self) -> int:
        return len(self.sequence)

    def __getitem__(self, row: int) -> TGSegment:
        values = {f.name: getattr(self, f.name) for f in fields(TGSegment)}
        values = {name: value if name == "variant" else value[row] for name, value in values.items()}
        values["sequence"], values["segment"] = int(values["sequence"]), int(values["segment"])
        values["beginning_of_sequence"] = bool(values["beginning_of_sequence"])
        values["end_of_sequence"] = bool(values["end_of_sequence"])
        return TGSegment(**values)

    def __iter__(self):
        return (self[r] for r in range(len(self)))


def segment_sequences(
    sequences: TGSequences,
    segment_length: int,
    *,
    memory_length: int | None = None,
    memory: MemoryRule = "smart",
) -> TGSegments:
    """Cut every sequence into segments of ``segment_length`` with memory (module docstring)."""
    if segment_length < 1:
        raise ValueError(f"segment_length must be at least 1, got {segment_length}")
    slots = segment_length if memory_length is None else memory_length
    if slots < 0:
        raise ValueError(f"memory_length must be at least 0, got {slots}")
    if memory not in ("smart", "previous"):
        raise ValueError(f"unknown memory rule {memory!r}; expected 'smart' or 'previous'")
    size = segment_length
    lengths = sequences.lengths
    n_segments = np.maximum(-(-lengths // size), 1)
    n_rows = int(n_segments.sum())
    row_sequence = np.repeat(np.arange(len(sequences)), n_segments)
    row_segment = np.arange(n_rows) - np.repeat(np.cumsum(n_segments) - n_segments, n_segments)
    row_length = lengths[row_sequence]
    start = row_segment * size
    local = start[:, None] + np.arange(size)
    valid = local < row_length[:, None]
    flat_index = np.where(valid, sequences.offsets[row_sequence][:, None] + local, 0)
    values = {
        name: np.where(valid, getattr(sequences, name)[flat_index], fill).astype(
            getattr(sequences, name).dtype
        )
        for name, fill in _POSITION_FIELDS
    }
    position = np.where(valid, local, -1).astype(np.int32)
    last = np.minimum(start + size, row_length) - 1

    # Next memory, first from the segment alone: kept positions, newest right-aligned.
    if memory == "smart":
        kept = valid & (values["popped_at"] > last[:, None])
    else:
        kept = valid.copy()
    newest_rank = np.cumsum(kept[:, ::-1], axis=1)[:, ::-1]  # 1 = newest kept position
    take = kept & (newest_rank <= slots)
    rows, columns = np.nonzero(take)
    source = np.full((n_rows, slots), -1, dtype=np.int32)
    source[rows, slots - newest_rank[rows, columns]] = slots + columns
    memory_position = np.full((n_rows, slots), -1, dtype=np.int32)

    # Rows after the first of their sequence see a memory and may keep part of it: sequentially.
    for row in np.flatnonzero(row_segment > 0):
        previous = row - 1
        keys = np.concatenate([memory_position[previous], position[previous]])
        gathered = source[previous]
        memory_position[row] = np.where(gathered >= 0, keys[np.maximum(gathered, 0)], -1)
        room = slots - int(np.count_nonzero(take[row]))
        if room == 0:
            continue
        held = memory_position[row]
        offset = sequences.offsets[row_sequence[row]]
        if memory == "smart":
            keep = (held >= 0) & (sequences.popped_at[offset + np.maximum(held, 0)] > last[row])
        else:
            keep = held >= 0
        kept_slots = np.flatnonzero(keep)[-room:]
        source[row, room - len(kept_slots) : room] = kept_slots

    held = memory_position >= 0
    held_index = sequences.offsets[row_sequence][:, None] + np.maximum(memory_position, 0)
    return TGSegments(
        variant=sequences.variant,
        sequence=row_sequence,
        segment=row_segment,
        position=position,
        memory_position=memory_position,
        memory_depth=np.where(held, sequences.depth[held_index], 0).astype(np.int32),
        memory_popped_at=np.where(held, sequences.popped_at[held_index], NEVER).astype(np.int32),
        next_memory_source=source,
        beginning_of_sequence=row_segment == 0,
        end_of_sequence=row_segment == n_segments[row_sequence] - 1,
        **values,
    )


def tg_segments(
    sequence: TGSequence,
    segment_length: int,
    *,
    memory_length: int | None = None,
    memory: MemoryRule = "smart",
) -> list[TGSegment]:
    """The segments of one sequence (``segment_sequences`` for a corpus of one)."""
    single = TGSequences(
        offsets=np.array([0, len(sequence)]),
        **{f.name: getattr(sequence, f.name) for f in fields(TGSequence)},
    )
    return list(segment_sequences(single, segment_length, memory_length=memory_length, memory=memory))


def attention_loss(
    sequences: Iterable[TGSequence], segment_length: int, *, memory_length: int | None = None
) -> dict:
    """How much STACK/COMPOSE attention smart memory loses when the stack outgrows the memory.

    Counts the (query, key) pairs of the whole-sequence masks and of the segmented ones.
    """
    total = kept = 0
    for sequence in sequences:
        total += int(np.count_nonzero(sequence.attention_mask()))
        for segment in tg_segments(sequence, segment_length, memory_length=memory_length):
            kept += int(np.count_nonzero(segment.attention_mask()))
    return {
        "segment_length": segment_length,
        "memory_length": segment_length if memory_length is None else memory_length,
        "attention_pairs": total,
        "attention_pairs_kept": kept,
        "lost_fraction": (total - kept) / total if total else 0.0,
    }
