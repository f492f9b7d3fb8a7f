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
Dropout: ``dropout`` on each sub-layer's output before the residual sum (everywhere),
``attention_dropout`` on the attention probabilities, and two more places the TG authors' code
drops with its one rate (GPT-2 has neither): ``ff_dropout`` on the feed-forward layer's hidden
units after the activation, ``position_dropout`` on the relative position vectors (``Attention``).
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from syntaxlm.models.layers.attention import Attention, Kernel


class KeyValueCache:
    """Incremental decoding: the keys and values ``[rows, H, slots, d_head]`` of every attention
    module of a ``TransformerStack`` (block by block: the main one, then the COMPOSE one if any),
    for the positions decoded so far.

    They are held as one contiguous tensor ``[modules, 2, rows, H, slots, d_head]`` in one of two
    flat buffers that are reused, and grow by half again when too small. Growing by new slots
    copies the held tensor into the other buffer, and a row selection waits for that copy and
    happens in it (one ``index_select``): a decoding step copies the cache once and allocates
    nothing, and the attention reads contiguous keys. For small models, copying and allocating
    caches cost more than the attention itself (docs/performance.md)."""

    def __init__(self, rows: int, n_modules: int, n_heads: int, d_head: int, *, dtype, device):
        self.rows, self.slots = rows, 0
        self._dims = (n_modules, 2, n_heads, d_head)
        self._buffers = [torch.zeros(0, dtype=dtype, device=device) for _ in range(2)]
        self._held = self._view(0, rows, 0)
        self._selection: Tensor | None = None  # rows of ``_held`` still to be selected

    def keys_values(self, module: int) -> tuple[Tensor, Tensor]:
        """One module's keys and values ``[rows, H, slots, d_head]`` (contiguous views)."""
        self._settle(self.slots)
        return self._held[module, 0], self._held[module, 1]

    def append(self, slots: int) -> None:
        """``slots`` more slots for every row, at the end, zero until ``write`` fills them."""
        self._settle(self.slots + slots)
        self._held[:, :, :, :, self.slots - slots :] = 0

    def write(self, module: int, keys: Tensor, values: Tensor) -> None:
        """One module's keys and values ``[B, H, Q, d_head]`` of the last ``Q`` slots of the first
        ``B`` rows."""
        self._settle(self.slots)
        rows, new = slice(0, keys.shape[0]), slice(self.slots - keys.shape[2], self.slots)
        self._held[module, 0, rows, :, new] = keys
        self._held[module, 1, rows, :, new] = values

    def select_rows(self, rows: Tensor) -> None:
        """Row ``i`` becomes a copy of row ``rows[i]`` (carried out with the next copy)."""
        self._selection = rows if self._selection is None else self._selection[rows]
        self.rows = len(rows)

    def gather_slots(self, order: Tensor) -> None:
        """Slots reordered (and cut) per row: slot ``j`` of row ``i`` becomes slot ``order[i, j]``
        (``order`` ``[rows, slots]``)."""
        self._settle(self.slots)
        target = self._view(1, self.rows, order.shape[1])
        index = order[None, None, :, None, :, None].expand(target.shape)
        torch.gather(self._held, 4, index, out=target)
        self._swap(target)

    def __deepcopy__(self, memo) -> KeyValueCache:
        """A copy of the held keys and values alone."""
        self._settle(self.slots)
        copied = copy.copy(self)
        copied._buffers = [self._held.flatten().clone(), self._buffers[1].new_zeros(0)]
        copied._held = copied._view(0, self.rows, self.slots)
        return copied

    def _settle(self, slots: int) -> None:
        """Carry out a pending row selection, and make ``slots`` slots (the held ones first)."""
        if self._selection is None and slots == self.slots:
            return
        target = self._view(1, self.rows, slots)
        held_slots = target[:, :, :, :, : self.slots]
        if self._selection is None:
            held_slots.copy_(self._held)
        else:
            torch.index_select(self._held, 2, self._selection, out=held_slots)
        self._selection = None
        self._swap(target)

    def _swap(self, target: Tensor) -> None:
        self._buffers.reverse()
        self._held = target
        self.slots = target.shape[4]

    def _view(self, buffer: int, rows: int, slots: int) -> Tensor:
        """The start of buffer ``buffer`` as ``[modules, 2, rows, H, slots, d_head]`` (grown if
        need be: never the buffer holding ``_held``)."""
        modules, _, heads, d_head = self._dims
        size = modules * 2 * rows * heads * slots * d_head
        if len(self._buffers[buffer]) < size:
            self._buffers[buffer] = self._buffers[buffer].new_empty(size * 3 // 2)
        return self._buffers[buffer][:size].view(modules, 2, rows, heads, slots, d_head)


class Block(nn.Module):
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float,
        *,
        attention_dropout: float = 0.0,
        ff_dropout: float = 0.0,
        position_dropout: float = 0.0,
        relative: bool = True,
        pre_ln: bool = False,
        separate_compose: bool = False,
    ):
        super().__init__()
        self.pre_ln = pre_ln
        attention = {"dropout": attention_dropout, "position_dropout": position_dropout, "relative": relative}
        self.attention = Attention(d_model, n_heads, **attention)
        self.compose_attention = Attention(d_model, n_heads, **attention) if separate_compose else None
        self.attention_norm = nn.LayerNorm(d_model)
        self.ff_norm = nn.LayerNorm(d_model)
        # The activation and its dropout sit in one parameterless module, so that the two linear
        # layers keep their names (ff.0, ff.2) with or without the dropout.
        activation = nn.Sequential(nn.GELU(), nn.Dropout(ff_dropout)) if ff_dropout else nn.GELU()
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), activation, nn.Linear(d_ff, d_model))
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

    @property
    def attention_modules(self) -> list[Attention]:
        """The main attention, then the COMPOSE one if any (``KeyValueCache`` holds them in order)."""
        return [self.attention] + ([self.compose_attention] if self.compose_attention is not None else [])

    def _attend(self, x, mask, compose, memory, attention, keys=None) -> Tensor:
        out = self.attention(x, mask, memory=memory, keys=None if keys is None else keys[0], **attention)
        if self.compose_attention is None or compose is None:
            return out
        composed = self.compose_attention(
            x, mask, memory=memory, keys=None if keys is None else keys[1], **attention
        )
        return torch.where(compose[..., None], composed, out)

    def step(
        self,
        x: Tensor,
        mask: Tensor,
        cache: KeyValueCache,
        first_module: int,
        *,
        compose: Tensor | None = None,
        **attention,
    ) -> Tensor:
        """The block on new positions ``x`` ``[B, Q, d]``, which fill the last ``Q`` slots of the
        first ``B`` rows of the ``cache`` (its modules from ``first_module`` on): their keys and
        values are written there, and the positions attend over their row's slots. ``mask`` is
        ``[B, 1|H, Q, slots]``."""
        h = self.attention_norm(x) if self.pre_ln else x
        keys = []
        for i, module in enumerate(self.attention_modules):
            cache.write(first_module + i, *module.keys_values(h))
            k, v = cache.keys_values(first_module + i)
            keys.append((k[: len(x)], v[: len(x)]))
        return self._residuals(x, self._attend(h, mask, compose, None, attention, keys=keys))


class TransformerStack(nn.Module):
    """``n_layers`` blocks; returns the last hidden states and each layer's input (for memory)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float, **block_options):
        """``block_options``: ``Block``'s keyword options (attention_dropout, ff_dropout,
        position_dropout, relative, pre_ln, separate_compose), the same for every layer."""
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

    def key_value_cache(self, rows: int) -> KeyValueCache:
        """An empty cache of ``rows`` rows for ``step``, on the stack's device and in its dtype."""
        attention = self.blocks[0].attention
        weight = attention.query.weight
        n_modules = sum(len(block.attention_modules) for block in self.blocks)
        return KeyValueCache(
            rows, n_modules, attention.n_heads, attention.d_head, dtype=weight.dtype, device=weight.device
        )

    def step(
        self,
        x: Tensor,
        mask: Tensor,
        cache: KeyValueCache,
        *,
        relative: Tensor | None = None,
        position_table: Tensor | None = None,
        compose: Tensor | None = None,
        kernel: Kernel = "auto",
    ) -> Tensor:
        """Incremental decoding: new positions ``x`` ``[B, Q, d]`` after the ``K`` cached ones of
        the first ``B`` rows of the cache (``key_value_cache``), whose keys and values join it (the
        other rows get ``Q`` zero slots, for their masks to exclude); ``mask`` and ``relative`` are
        ``[B, ., Q, K + Q]`` over cached then new positions. Equals ``forward`` on the whole sequence
        at the new positions; the cache's ``select_rows`` reorders or copies hypotheses."""
        cache.append(x.shape[1])
        module = 0
        for block in self.blocks:
            x = block.step(
                x,
                mask,
                cache,
                module,
                compose=compose,
                relative=relative,
                position_table=position_table,
                kernel=kernel,
            )
            module += len(block.attention_modules)
        return self.final_norm(x)


def live_first_order(live: Tensor, slots: int) -> Tensor:
    """``[B, slots]``: per row, the indices of its live slots (``live`` ``[B, S]``) in order, then
    of the others (padding, or keys no later position attends)."""
    return torch.sort((~live).int(), dim=1, stable=True).indices[:, :slots]


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
