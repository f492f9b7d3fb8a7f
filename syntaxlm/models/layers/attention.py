"""Multi-head attention with a boolean mask and Transformer-XL relative positions.

One module serves every transformer in the library, configured by what it is given:

- ``mask``: ``[B, 1 or H, Q, K]`` booleans, ``True`` = may attend (causal, TG's STACK/COMPOSE, or
  PLM-mask's per-head masks); keys are ``[memory; segment]``.
- ``relative``: bucket indices ``[B, Q, K]`` into a table of ``n_buckets`` relative positions, or
  ``None`` for attention without position terms (GPT-2-style models add absolute positions to
  their inputs; TG's no-position ablation uses none at all).

With relative positions the score is Transformer-XL's (Dai et al. 2019; TG paper §2.2)

    s_ij = (q_i + u)ᵀ k_j + (q_i + v)ᵀ r_{R_ij},    r_b = W_r p_b,

with ``p_b`` a sinusoidal (or learned) vector of relative position ``b`` (in training, dropped
out at ``position_dropout`` for each sequence of the batch on its own, as the TG authors' code
does before ``W_r``). The position term is
computed once per bucket, ``[B, H, Q, n_buckets]``, and gathered at ``R_ij``: the ``Q × K × d``
tensor of the naive form is never built.

Kernels: ``sdpa`` (the default, ``auto``) folds the mask and the position term into one additive
float mask for ``scaled_dot_product_attention``, which runs and has a backward on the CPU and on
CUDA. ``flex`` gives FlexAttention the position term as a ``score_mod`` and the mask as a block
mask, so fully masked blocks are skipped; it has no attention dropout, and compiled (on CUDA) it
pays a compilation per new shape. Measured on an H100 (``docs/performance.md``), PTB-size TG
steps on treebank sentences are bound by kernel launches, not attention FLOPs, and SDPA was
twice as fast, so ``auto`` takes SDPA everywhere; ``kernel="flex"`` opts in. ``math`` computes
the scores, their softmax and the weighted sum as separate operations: the incremental decoders
use it on the CPU, where for one or two new queries over cached keys it beats the fused SDPA
kernel (1.8× on a tiny TG's beam steps). The kernels give the same numbers
(``tests/test_attention.py``).

``record_attention(model)`` keeps the attention probabilities ``[B, H, Q, K]`` of every
``Attention`` inside ``model`` while it is active (for figures and analysis); outside it nothing
is recorded and nothing more is computed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Kernel = Literal["auto", "sdpa", "flex", "math"]


def sinusoidal_table(positions: Tensor, d_model: int) -> Tensor:
    """``[P, d_model]`` sinusoidal vectors of (possibly negative) relative positions (Vaswani et al.)."""
    half = d_model // 2
    frequencies = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / max(half, 1))
    angles = positions.float()[:, None] * frequencies[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    if d_model % 2:
        table = F.pad(table, (0, 1))
    return table


class RelativePositions(nn.Module):
    """The relative positions ``lowest..highest`` (clipped into that range) as a table of vectors."""

    def __init__(self, d_model: int, lowest: int, highest: int, *, learned: bool = False):
        super().__init__()
        if highest < lowest:
            raise ValueError(f"relative position range [{lowest}, {highest}] is empty")
        self.lowest, self.highest = lowest, highest
        positions = torch.arange(lowest, highest + 1)
        if learned:
            self.learned = nn.Parameter(torch.randn(len(positions), d_model) * 0.02)
        else:
            self.learned = None
            self.register_buffer("sinusoids", sinusoidal_table(positions, d_model), persistent=False)

    @property
    def n_buckets(self) -> int:
        return self.highest - self.lowest + 1

    def table(self) -> Tensor:
        return self.learned if self.learned is not None else self.sinusoids

    def buckets(self, relative: Tensor) -> Tensor:
        """Relative positions → bucket indices (clipped into the range)."""
        return self.lookup(relative)[0]

    def lookup(self, relative: Tensor, reach: int | None = None) -> tuple[Tensor, Tensor]:
        """The bucket indices of ``relative`` and the table they index. ``reach``: the largest
        relative position any attended pair can have (e.g. the key count − 1 for linear positions
        over consecutive keys); the table then stops at its bucket, so the attention computes the
        position term ``[B, H, Q, n_buckets]`` only for buckets in use. The scores are unchanged:
        no attended pair lies beyond ``reach``, and masked pairs may take any bucket."""
        highest = self.highest if reach is None else max(self.lowest, min(self.highest, reach))
        buckets = (relative.clamp(self.lowest, highest) - self.lowest).long()
        return buckets, self.table()[: highest - self.lowest + 1]


class Attention(nn.Module):
    """Multi-head attention over ``[memory; x]`` (see the module docstring)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        *,
        position_dropout: float = 0.0,
        relative: bool = True,
    ):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.query = nn.Linear(d_model, d_model)
        self.key_value = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = dropout
        self.position_dropout = position_dropout
        if relative:
            self.position = nn.Linear(d_model, d_model, bias=False)  # W_r
            self.content_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))  # u
            self.position_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))  # v
        else:
            self.position = None
        self.recorded: list[Tensor] | None = None  # set by ``record_attention``

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        *,
        memory: Tensor | None = None,
        keys: tuple[Tensor, Tensor] | None = None,
        relative: Tensor | None = None,
        position_table: Tensor | None = None,
        kernel: Kernel = "auto",
    ) -> Tensor:
        """``x`` ``[B, Q, d]``, ``memory`` ``[B, M, d]``, ``mask`` ``[B, 1|H, Q, M+Q]``,
        ``relative`` ``[B, Q, M+Q]`` bucket indices into ``position_table`` ``[n_buckets, d]``.

        ``keys``: the keys and values ``[B, H, K, d_head]`` of every attended position, already
        projected (``keys_values``) — incremental decoding keeps them instead of recomputing them;
        then ``memory`` is not used and ``K`` replaces ``M + Q`` above."""
        batch, length, _ = x.shape
        q = self._heads(self.query(x))
        if keys is None:
            k, v = self.keys_values(x if memory is None else torch.cat([memory, x], dim=1))
        else:
            k, v = keys
        scale = 1.0 / math.sqrt(self.d_head)
        bias = None
        if self.position is not None:
            if relative is None or position_table is None:
                raise ValueError("this attention has relative positions: give relative and position_table")
            table = position_table.to(x.dtype)
            if self.training and self.position_dropout:
                table = F.dropout(table.expand(batch, *table.shape), self.position_dropout)
            r = self.position(table).view(*table.shape[:-1], self.n_heads, self.d_head)
            # (q_i + v)ᵀ r_b for every bucket b, then gathered at b = R_ij: [B, H, Q, n_buckets].
            query = q + self.position_bias[:, None]
            if r.dim() == 3:
                per_bucket = torch.einsum("bhqd,nhd->bhqn", query, r) * scale
            else:  # a table per sequence
                per_bucket = torch.einsum("bhqd,bnhd->bhqn", query, r) * scale
            bias = (per_bucket, relative)
            q = q + self.content_bias[:, None]
        # A row that may attend nowhere (padding) attends everywhere instead: no NaN, never used.
        mask = mask | ~mask.any(dim=-1, keepdim=True)
        dropout = self.dropout if self.training else 0.0
        if kernel == "flex":
            out = _flex_attention(q, k, v, mask, bias, scale, dropout)
        elif kernel == "math":
            out = _math_attention(q, k, v, mask, bias, scale, dropout)
        else:
            additive = self._additive_mask(mask, bias, q)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout, scale=scale)
        if self.recorded is not None:
            self.recorded.append(_attention_weights(q.float(), k.float(), mask, bias, scale).detach())
        return self.out(out.transpose(1, 2).reshape(batch, length, -1))

    def _additive_mask(self, mask: Tensor, bias: tuple[Tensor, Tensor] | None, q: Tensor) -> Tensor:
        """The position term gathered at every ``(i, j)`` (or zeros), −inf where ``mask`` forbids."""
        batch, _, length, _ = q.shape
        additive = torch.zeros(mask.shape, dtype=q.dtype, device=q.device)
        if bias is not None:
            per_bucket, relative = bias
            index = relative[:, None].expand(batch, self.n_heads, length, relative.shape[-1])
            additive = per_bucket.gather(-1, index)
        return additive.masked_fill(~mask, float("-inf"))

    def keys_values(self, keys_in: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values ``[B, H, K, d_head]`` of the inputs ``[B, K, d]`` at the attended positions."""
        k, v = self.key_value(keys_in).chunk(2, dim=-1)
        return self._heads(k), self._heads(v)

    def _heads(self, t: Tensor) -> Tensor:
        return t.view(t.shape[0], t.shape[1], self.n_heads, self.d_head).transpose(1, 2)


def _attention_weights(q, k, mask, bias, scale) -> Tensor:
    """The attention probabilities ``[B, H, Q, K]``: scores, the position term, the mask, softmax."""
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if bias is not None:
        per_bucket, relative = bias
        scores = scores + per_bucket.to(scores.dtype).gather(-1, relative[:, None].expand(scores.shape))
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def _math_attention(q, k, v, mask, bias, scale, dropout) -> Tensor:
    """Scores, softmax and the weighted sum as separate tensor operations (the ``math`` kernel)."""
    weights = _attention_weights(q, k, mask, bias, scale)
    weights = F.dropout(weights, dropout) if dropout else weights
    return torch.einsum("bhqk,bhkd->bhqd", weights, v)


@contextmanager
def record_attention(model: nn.Module) -> Iterator[dict[str, list[Tensor]]]:
    """While active, every ``Attention`` module inside ``model`` appends the attention
    probabilities of each call, ``[B, H, Q, K]`` (float32, detached, before dropout), to the list of
    its qualified name (``"transformer.blocks.0.attention"``). The outputs are unchanged."""
    recorded: dict[str, list[Tensor]] = {}
    modules = [(name, m) for name, m in model.named_modules() if isinstance(m, Attention)]
    for name, module in modules:
        module.recorded = recorded.setdefault(name, [])
    try:
        yield recorded
    finally:
        for _, module in modules:
            module.recorded = None


def flex_available() -> bool:
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


_compiled_flex = None


def _flex_attention(q, k, v, mask, bias, scale, dropout) -> Tensor:
    """FlexAttention: the position term as a score_mod, the mask as a block mask (CUDA path)."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    global _compiled_flex
    if dropout:
        raise ValueError("FlexAttention has no attention dropout; set the model's attention dropout to 0")
    batch, heads, length, _ = q.shape
    n_keys = k.shape[2]
    per_head_mask = mask.shape[1] > 1
    mask = mask.expand(batch, -1, length, n_keys)  # a mask shared by the batch is indexed by b too

    def mask_mod(b, h, q_idx, kv_idx):
        return mask[b, h if per_head_mask else 0, q_idx, kv_idx]

    block_mask = create_block_mask(
        mask_mod, batch, heads if per_head_mask else None, length, n_keys, device=q.device, _compile=q.is_cuda
    )
    score_mod = None
    if bias is not None:
        per_bucket, relative = bias
        relative = relative.expand(batch, length, n_keys)

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + per_bucket[b, h, q_idx, relative[b, q_idx, kv_idx]]

    attend = flex_attention
    if q.is_cuda:
        if _compiled_flex is None:
            _compiled_flex = torch.compile(flex_attention, dynamic=True)  # one compilation for all lengths
        attend = _compiled_flex
    return attend(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)
