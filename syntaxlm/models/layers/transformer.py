"""Transformer blocks and stacks with Transformer-XL segment memory.

``TransformerStack`` runs ``n_layers`` blocks over a segment ``[B, L, d]``. Each layer ``l`` may
also see a memory ``[B, M, d]`` of earlier hidden states *entering* that layer (Transformer-XL:
the memory of layer ``l`` holds layer ``l − 1`` outputs). After the segment, ``next_memory`` builds
the next segment's memory by gathering from ``[memory; layer input]`` with the index rows that the
structure layer computed (``TGSegments.next_memory_source``: the previous ``M`` positions, or TG's
smart memory — the positions still on the stack). Memories are detached: gradients stop at a
segment boundary, as in Transformer-XL.

Blocks are post-LN (TG, Transformer-XL) or pre-LN (GPT-2) with a GELU feed-forward layer; the
option ``separate_compose`` gives COMPOSE rows their own attention weights (a TG ablation).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from syntaxlm.models.layers.attention import Attention, Kernel

KeyCache = list[tuple[Tensor, Tensor]]
"""Per attention module of a block (the main one, then the COMPOSE one if any): keys and values
``[B, H, K, d_head]`` of the positions decoded so far."""


class Block(nn.Module):
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float,
        *,
        attention_dropout: float = 0.0,
        relative: bool = True,
        pre_ln: bool = False,
        separate_compose: bool = False,
    ):
        super().__init__()
        self.pre_ln = pre_ln
        self.attention = Attention(d_model, n_heads, attention_dropout, relative=relative)
        self.compose_attention = (
            Attention(d_model, n_heads, attention_dropout, relative=relative) if separate_compose else None
        )
        self.attention_norm = nn.LayerNorm(d_model)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor, *, compose: Tensor | None = None, **attention) -> Tensor:
        memory = attention.pop("memory", None)
        h = self.attention_norm(x) if self.pre_ln else x
        if self.pre_ln and memory is not None:
            memory = self.attention_norm(memory)
        return self._residuals(x, self._attend(h, mask, compose, memory, attention))

    def _residuals(self, x: Tensor, attended: Tensor) -> Tensor:
        """The attention output added back, then the feed-forward sub-layer (pre- or post-LN)."""
        if self.pre_ln:
            x = x + self.dropout(attended)
            return x + self.dropout(self.ff(self.ff_norm(x)))
        x = self.attention_norm(x + self.dropout(attended))
        return self.ff_norm(x + self.dropout(self.ff(x)))

    def _attend(self, x, mask, compose, memory, attention, cache=None) -> Tensor:
        keys = None if cache is None else cache[0]
        out = self.attention(x, mask, memory=memory, keys=keys, **attention)
        if self.compose_attention is None or compose is None:
            return out
        keys = None if cache is None else cache[1]
        composed = self.compose_attention(x, mask, memory=memory, keys=keys, **attention)
        return torch.where(compose[..., None], composed, out)

    def step(
        self, x: Tensor, mask: Tensor, cache: KeyCache | None, *, compose: Tensor | None = None, **attention
    ) -> tuple[Tensor, KeyCache]:
        """The block on new positions ``x`` ``[B, Q, d]`` whose keys are the cached ones followed by
        their own; returns the output and the cache grown by ``Q`` positions. ``mask`` is
        ``[B, 1|H, Q, K + Q]`` over cached then new positions."""
        h = self.attention_norm(x) if self.pre_ln else x
        modules = [self.attention] + ([self.compose_attention] if self.compose_attention is not None else [])
        grown = []
        for i, module in enumerate(modules):
            k, v = module.keys_values(h)
            if cache is not None:
                k, v = torch.cat([cache[i][0], k], dim=2), torch.cat([cache[i][1], v], dim=2)
            grown.append((k, v))
        attended = self._attend(h, mask, compose, None, attention, cache=grown)
        return self._residuals(x, attended), grown


class TransformerStack(nn.Module):
    """``n_layers`` blocks; returns the last hidden states and each layer's input (for memory)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float, **block_options):
        """``block_options``: ``Block``'s keyword options (attention_dropout, relative, pre_ln,
        separate_compose), the same for every layer."""
        super().__init__()
        self.blocks = nn.ModuleList(
            Block(d_model, n_heads, d_ff, dropout, **block_options) for _ in range(n_layers)
        )
        pre_ln = block_options.get("pre_ln", False)
        self.final_norm = nn.LayerNorm(d_model) if pre_ln else nn.Identity()

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        *,
        memories: list[Tensor] | None = None,
        relative: Tensor | None = None,
        position_table: Tensor | None = None,
        compose: Tensor | None = None,
        kernel: Kernel = "auto",
    ) -> tuple[Tensor, list[Tensor]]:
        layer_inputs = []
        for i, block in enumerate(self.blocks):
            layer_inputs.append(x)
            x = block(
                x,
                mask,
                compose=compose,
                memory=None if memories is None else memories[i],
                relative=relative,
                position_table=position_table,
                kernel=kernel,
            )
        return self.final_norm(x), layer_inputs

    def step(
        self,
        x: Tensor,
        mask: Tensor,
        caches: list[KeyCache] | None,
        *,
        relative: Tensor | None = None,
        position_table: Tensor | None = None,
        compose: Tensor | None = None,
        kernel: Kernel = "auto",
    ) -> tuple[Tensor, list[KeyCache]]:
        """Incremental decoding: new positions ``x`` ``[B, Q, d]`` after the cached ones (one
        ``KeyCache`` per layer, ``None`` at the start); ``mask`` and ``relative`` are
        ``[B, ., Q, K + Q]`` over cached then new positions. Equals ``forward`` on the whole sequence
        at the new positions; select rows of every cached tensor to reorder or copy hypotheses."""
        grown = []
        for i, block in enumerate(self.blocks):
            x, cache = block.step(
                x,
                mask,
                None if caches is None else caches[i],
                compose=compose,
                relative=relative,
                position_table=position_table,
                kernel=kernel,
            )
            grown.append(cache)
        return self.final_norm(x), grown


def select_cache_rows(caches: list[KeyCache] | None, rows: Tensor) -> list[KeyCache] | None:
    """Incremental decoding: row ``i`` of every cache becomes a copy of row ``rows[i]``."""
    if caches is None:
        return None
    return [[(k.index_select(0, rows), v.index_select(0, rows)) for k, v in cache] for cache in caches]


def padding_last_order(position: Tensor, slots: int) -> Tensor:
    """``[B, slots]``: per row, its held slots (``position ≥ 0``) in order, then padding slots."""
    return torch.sort((position < 0).int(), dim=1, stable=True).indices[:, :slots]


def gather_cache_slots(caches: list[KeyCache] | None, order: Tensor) -> list[KeyCache] | None:
    """Keys and values ``[B, H, K, d]`` reordered along ``K`` by ``order`` ``[B, slots]``."""
    if caches is None:
        return None

    def gather(t: Tensor) -> Tensor:
        return t.gather(2, order[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3]))

    return [[(gather(k), gather(v)) for k, v in cache] for cache in caches]


def next_memory(memories: list[Tensor] | None, layer_inputs: list[Tensor], source: Tensor) -> list[Tensor]:
    """Each layer's next memory ``[B, M, d]``: ``[memory; layer input][source]``, zeros where ``−1``.

    ``source`` ``[B, M]`` indexes the ``M + L`` keys of the segment just run (detached); without
    ``memories`` (a first segment) the ``M`` memory keys are empty."""
    out = []
    for i, inputs in enumerate(layer_inputs):
        if memories is None:
            empty = inputs.new_zeros(inputs.shape[0], source.shape[1], inputs.shape[-1])
            keys = torch.cat([empty, inputs], dim=1)
        else:
            keys = torch.cat([memories[i], inputs], dim=1)
        keys = keys.detach()
        index = source.clamp(min=0).long()[..., None].expand(-1, -1, keys.shape[-1])
        gathered = keys.gather(1, index)
        out.append(gathered.masked_fill((source < 0)[..., None], 0.0))
    return out
