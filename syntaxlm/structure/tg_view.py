"""TG sequences made readable: records in the authors' field names and tables like the paper's Figure 2.

``tg_records`` gives JSON-able records with the field names and encodings of the authors' masking
code as stored in ``golden/tg_single_chunk.json`` (no segment length: one record holding the whole
sequence) and ``golden/tg_chunked_L*.json`` (one record per segment, its memory included), except
that inputs and labels are spelled as symbols instead of ids. ``tg_table`` prints, per segment, the
Figure 2a table (position, input, type, attention operation, label, depth) and the mask drawn as
a grid of relative positions. Both back ``syntaxlm inspect tg``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from syntaxlm.errors import TreeError
from syntaxlm.structure.actions import Actions, encode_actions, tree_to_actions
from syntaxlm.structure.tg import (
    TOKEN_TYPE_NAMES,
    MemoryRule,
    TGSegment,
    TGSequence,
    sparse_attention,
    tg_segments,
    tg_sequence,
)
from syntaxlm.structure.tg_variants import Variant
from syntaxlm.text.base import SPECIAL_TOKENS, Vocabulary
from syntaxlm.trees.tree import Tree

Spell = Callable[[int], str]

DENSE_CELL_LIMIT = 2**24
"""The most cells (positions × (memory slots + positions)) of one segment's dense mask that
``tg_records`` and ``tg_table`` build, a 4,096 × 4,096 mask; larger ones are refused before any is
built (a 100,000-deep tree's whole sequence would need 84 GiB for the booleans alone)."""


def spelled_tg_sequences(
    trees: Iterable[Tree], variant: Variant = "tg", vocab: Vocabulary | None = None
) -> Iterator[tuple[Actions, TGSequence, Spell]]:
    """Per tree, its actions, its TG sequence of ``variant`` and how to spell the sequence's ids:
    with ``vocab``, by its ids and pieces; without, by ids given to the tokens as they first come,
    after the special tokens (a token keeps its id over the trees)."""
    table = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    spelling = list(SPECIAL_TOKENS)
    for tree in trees:
        actions = tree_to_actions(tree)
        if vocab is not None:
            encoded = encode_actions(actions, vocab)
            sequence = tg_sequence(encoded.ids, encoded.kinds, variant, word_index=encoded.word_index)
            yield actions, sequence, vocab.token
            continue
        for token in actions.tokens:
            if token not in table:
                table[token] = len(spelling)
                spelling.append(token)
        ids = [table[token] for token in actions.tokens]
        yield actions, tg_sequence(ids, actions.kinds, variant), spelling.__getitem__


def _segments(
    sequence: TGSequence, segment_length: int | None, memory: MemoryRule, memory_length: int | None
) -> list[TGSegment]:
    if segment_length is None:
        # One segment with no memory: the whole sequence, its mask [T, T].
        segments = tg_segments(sequence, len(sequence), memory="previous", memory_length=0)
    else:
        segments = tg_segments(sequence, segment_length, memory=memory, memory_length=memory_length)
    for segment in segments:
        _check_dense_size(segment, segment_length)
    return segments


def _check_dense_size(segment: TGSegment, segment_length: int | None) -> None:
    """Refuse a segment whose dense mask would exceed ``DENSE_CELL_LIMIT``, before building it."""
    queries = len(segment.position)
    keys = len(segment.memory_position) + queries
    cells = queries * keys
    if cells <= DENSE_CELL_LIMIT:
        return
    if segment_length is None:
        what = f"its TG sequence of {queries:,} positions"
        remedy = "cut it into segments with a segment length (--segment-length)"
    else:
        what = f"a segment of {queries:,} positions and {keys - queries:,} memory slots"
        remedy = "use a shorter segment length (--segment-length) or fewer memory slots (--memory-length)"
    raise TreeError(
        f"{what} needs a dense {queries:,} × {keys:,} mask ({cells:,} cells, "
        f"{cells / 2**30:.1f} GiB as booleans alone), over the limit of {DENSE_CELL_LIMIT:,} cells; {remedy}"
    )


def _sparse(segment: TGSegment, drop_memory: bool) -> tuple[list[list[int]], list[list[int]]]:
    mask, relative = segment.attention_mask(), segment.relative_positions()
    if drop_memory:
        slots = len(segment.memory_position)
        mask, relative = mask[:, slots:], relative[:, slots:]
    return sparse_attention(mask, relative)


def tg_records(
    sequence: TGSequence,
    spell: Spell,
    *,
    segment_length: int | None = None,
    memory: MemoryRule = "smart",
    memory_length: int | None = None,
    id: int = 0,
) -> list[dict]:
    """One sequence as the authors' code lays it out (see the module docstring)."""

    def common(segment: TGSegment) -> dict:
        return {
            "inputs": [spell(i) for i in segment.inputs.tolist()],
            "inputs_ttypes": segment.input_types.tolist(),
            "labels": [spell(i) for i in segment.labels.tolist()],
            "labels_ttypes": segment.label_types.tolist(),
            "attn_indicator": segment.compose.astype(int).tolist(),
            "depth": segment.depth.tolist(),
        }

    segments = _segments(sequence, segment_length, memory, memory_length)
    if segment_length is None:
        (segment,) = segments
        keys, relative = _sparse(segment, drop_memory=True)
        return [
            {
                "id": id,
                "seq_len": len(sequence),
                **common(segment),
                "attn_mask": keys,
                "attn_relpos": relative,
                "beginning_of_seq": 1,
                "end_of_seq": 1,
            }
        ]
    records = []
    for segment in segments:
        keys, relative = _sparse(segment, drop_memory=False)
        source = segment.next_memory_source
        slots = len(source)
        records.append(
            {
                "id": id,
                "segment": segment.segment,
                **common(segment),
                "beginning_of_seq": int(segment.beginning_of_sequence),
                "end_of_seq": int(segment.end_of_sequence),
                "memory_padding_mask": (segment.memory_position >= 0).astype(int).tolist(),
                "memory_pos": segment.memory_position.tolist(),
                "attn_mask": keys,
                "attn_relpos": relative,
                "smartmem_mem_from_seq": [
                    [int(s) - slots, slot] for slot, s in enumerate(source) if s >= slots
                ],
                "smartmem_mem_from_mem": sorted(
                    [int(s), slot] for slot, s in enumerate(source) if 0 <= s < slots
                ),
            }
        )
    return records


def tg_table(
    sequence: TGSequence,
    spell: Spell,
    *,
    segment_length: int | None = None,
    memory: MemoryRule = "smart",
    memory_length: int | None = None,
) -> str:
    """The Figure 2a table and the attention grid of every segment of ``sequence``."""
    blocks = []
    for segment in _segments(sequence, segment_length, memory, memory_length):
        lines = []
        if segment_length is not None:
            held = [f"m{s}={p}" for s, p in enumerate(segment.memory_position.tolist()) if p >= 0]
            lines.append(f"segment {segment.segment}: memory " + (" ".join(held) or "empty"))
        rows = [("i", "input", "type", "attn", "label", "depth")]
        for k in np.flatnonzero(segment.position >= 0):
            compose = bool(segment.compose[k])
            label = spell(int(segment.labels[k])) if segment.labels[k] else "_"
            rows.append(
                (
                    str(segment.position[k]),
                    spell(int(segment.inputs[k])),
                    TOKEN_TYPE_NAMES[int(segment.input_types[k])],
                    "COMPOSE" if compose else "STACK",
                    label,
                    str(segment.depth[k]),
                )
            )
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
        lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        lines.append("")
        lines += _grid(segment, drop_memory=segment_length is None)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _grid(segment: TGSegment, drop_memory: bool) -> list[str]:
    """Rows attend columns: each attended cell shows its relative position, others a dot."""
    mask, relative = segment.attention_mask(), segment.relative_positions()
    keys = segment.key_position
    if drop_memory:
        slots = len(segment.memory_position)
        mask, relative, keys = mask[:, slots:], relative[:, slots:], keys[slots:]
    shown = keys >= 0
    names = [
        ("m" if k < len(keys) - len(segment.position) else "") + str(p) for k, p in enumerate(keys.tolist())
    ]
    names = [name for name, keep in zip(names, shown) if keep]
    width = max(3, *(len(name) + 1 for name in names))
    lines = [" " * 5 + "".join(name.rjust(width) for name in names)]
    for k in np.flatnonzero(segment.position >= 0):
        cells = [
            str(relative[k, j]).rjust(width) if mask[k, j] else "·".rjust(width)
            for j in np.flatnonzero(shown)
        ]
        lines.append(str(segment.position[k]).rjust(4) + " " + "".join(cells))
    return lines
