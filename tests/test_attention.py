"""Attention with masks and relative positions: the bucketed form equals the paper's formula, both
kernels agree, and rows that may attend nowhere give no NaN."""

from __future__ import annotations

import copy
import math
import warnings

import pytest
import torch

from syntaxlm.models.layers.attention import Attention, RelativePositions, flex_available, sinusoidal_table
from syntaxlm.models.layers.transformer import Block, KeyValueCache, TransformerStack, next_memory


def _inputs(batch=2, length=6, memory=3, d=16, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, d, generator=generator)
    mem = torch.randn(batch, memory, d, generator=generator)
    mask = torch.rand(batch, 1, length, memory + length, generator=generator) > 0.4
    distance = torch.randint(-3, 12, (batch, length, memory + length), generator=generator)
    return x, mem, mask, distance


def _reference(attention: Attention, x, memory, mask, distance, positions: RelativePositions):
    """s_ij = (q_i + u)ᵀ k_j + (q_i + v)ᵀ W_r p(R_ij), with r_ij materialised for every pair."""
    keys_in = torch.cat([memory, x], dim=1)
    q = attention._heads(attention.query(x))
    k, v = (attention._heads(t) for t in attention.key_value(keys_in).chunk(2, dim=-1))
    clipped = distance.clamp(positions.lowest, positions.highest)
    p = sinusoidal_table(clipped.reshape(-1), x.shape[-1]).view(*clipped.shape, -1)  # [B, Q, K, d]
    r = attention.position(p).view(*clipped.shape, attention.n_heads, attention.d_head)
    content = torch.einsum("bhqd,bhkd->bhqk", q + attention.content_bias[:, None], k)
    position = torch.einsum("bhqd,bqkhd->bhqk", q + attention.position_bias[:, None], r)
    scores = (content + position) / math.sqrt(attention.d_head)
    mask = mask | ~mask.any(-1, keepdim=True)
    weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    out = torch.einsum("bhqk,bhkd->bhqd", weights, v)
    return attention.out(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1))


def test_bucketed_position_term_equals_the_formula():
    torch.manual_seed(0)
    attention = Attention(16, 4).eval()
    with torch.no_grad():
        attention.content_bias.normal_()
        attention.position_bias.normal_()
    positions = RelativePositions(16, -1, 8)
    x, mem, mask, distance = _inputs()
    got = attention(
        x,
        mask,
        memory=mem,
        relative=positions.buckets(distance),
        position_table=positions.table(),
        kernel="sdpa",
    )
    expected = _reference(attention, x, mem, mask, distance, positions)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_position_term_changes_scores():
    torch.manual_seed(0)
    attention = Attention(16, 4).eval()
    positions = RelativePositions(16, 0, 8)
    x, mem, mask, distance = _inputs()
    a = attention(x, mask, memory=mem, relative=positions.buckets(distance), position_table=positions.table())
    b = attention(
        x, mask, memory=mem, relative=positions.buckets(distance + 1), position_table=positions.table()
    )
    assert not torch.allclose(a, b)


def test_rows_without_keys_give_finite_values():
    attention = Attention(16, 4, relative=False).eval()
    x, mem, mask, _ = _inputs()
    mask[:, :, 2] = False
    out = attention(x, mask, memory=mem)
    assert torch.isfinite(out).all()


@pytest.mark.skipif(not flex_available(), reason="this torch has no FlexAttention")
@pytest.mark.parametrize("layout", ["per_sentence", "per_head", "shared_by_the_batch"])
def test_flex_and_sdpa_kernels_agree(layout):
    torch.manual_seed(0)
    attention = Attention(16, 4).eval()
    positions = RelativePositions(16, -1, 8)
    x, mem, mask, distance = _inputs()
    if layout == "per_head":
        mask = torch.rand(2, 4, 6, 9, generator=torch.Generator().manual_seed(1)) > 0.5
    if layout == "shared_by_the_batch":  # one causal-style mask and one distance table broadcast
        mask, distance = mask[:1], distance[:1]
    arguments = {"memory": mem, "relative": positions.buckets(distance), "position_table": positions.table()}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager FlexAttention on the CPU warns that it is slow
        sdpa = attention(x, mask, kernel="sdpa", **arguments)
        flex = attention(x, mask, kernel="flex", **arguments)
    torch.testing.assert_close(flex, sdpa, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_flex_kernel_on_cuda_matches_sdpa_with_gradients():
    torch.manual_seed(0)
    attention = Attention(64, 4).cuda()
    positions = RelativePositions(64, -1, 8).cuda()
    x, mem, mask, distance = (t.cuda() for t in _inputs(batch=2, length=128, memory=128, d=64))
    arguments = {"memory": mem, "relative": positions.buckets(distance), "position_table": positions.table()}
    sdpa = attention(x, mask, kernel="sdpa", **arguments)
    grad_sdpa = torch.autograd.grad(sdpa.square().sum(), attention.query.weight)[0]
    flex = attention(x, mask, kernel="flex", **arguments)
    grad_flex = torch.autograd.grad(flex.square().sum(), attention.query.weight)[0]
    torch.testing.assert_close(flex, sdpa, atol=2e-4, rtol=2e-4)
    torch.testing.assert_close(grad_flex, grad_sdpa, atol=2e-3, rtol=2e-3)


def test_next_memory_gathers_from_memory_then_segment():
    stack = TransformerStack(1, 8, 2, 16, 0.0, relative=False).eval()
    x = torch.randn(1, 4, 8)
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool).tril()
    _, inputs = stack(x, mask)
    old = [torch.randn(1, 2, 8)]
    source = torch.tensor([[-1, 1, 3]])  # empty, old slot 1, segment position 1
    (new,) = next_memory(old, inputs, source[:, :3])
    assert torch.equal(new[0, 0], torch.zeros(8))
    assert torch.equal(new[0, 1], old[0][0, 1])
    assert torch.equal(new[0, 2], inputs[0][0, 1])


@pytest.mark.parametrize("pre_ln", [False, True])
@pytest.mark.parametrize("separate_compose", [False, True])
def test_stepping_with_cached_keys_equals_the_whole_forward(pre_ln, separate_compose):
    torch.manual_seed(0)
    stack = TransformerStack(2, 16, 4, 32, 0.0, pre_ln=pre_ln, separate_compose=separate_compose).eval()
    positions = RelativePositions(16, -1, 20)
    batch, length = 3, 7
    x = torch.randn(batch, length, 16)
    mask = torch.rand(batch, 1, length, length) > 0.3
    mask = (mask & torch.ones(length, length, dtype=torch.bool).tril()) | torch.eye(length, dtype=torch.bool)
    relative = positions.buckets(torch.randint(-2, 25, (batch, length, length)))
    compose = torch.rand(batch, length) > 0.5
    arguments = {"position_table": positions.table()}
    whole, _ = stack(x, mask, relative=relative, compose=compose, **arguments)
    cache, steps = stack.key_value_cache(batch), []
    for t in range(length):
        out = stack.step(
            x[:, t : t + 1],
            mask[:, :, t : t + 1, : t + 1],
            cache,
            relative=relative[:, t : t + 1, : t + 1],
            compose=compose[:, t : t + 1],
            **arguments,
        )
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, dim=1), whole, atol=1e-5, rtol=1e-5)


def test_position_and_feed_forward_dropout_act_in_training_only_and_keep_the_weights_names():
    """The TG authors' two extra dropouts: the relative position vectors (each sequence its own
    mask) and the feed-forward hidden units. In eval mode a block with them computes what one
    without them computes with the same weights; in training mode they make two identical
    sequences of a batch differ; the weights keep their names (models saved before load)."""
    torch.manual_seed(0)
    plain = Block(16, 4, 32, 0.0)
    dropping = Block(16, 4, 32, 0.0, ff_dropout=0.5, position_dropout=0.5)
    assert list(dropping.state_dict()) == list(plain.state_dict())
    dropping.load_state_dict(plain.state_dict())
    positions = RelativePositions(16, 0, 9)
    x = torch.randn(1, 6, 16).expand(2, -1, -1)  # two identical sequences
    mask = torch.ones(2, 1, 6, 6, dtype=torch.bool).tril()
    relative = positions.buckets(torch.arange(6)[:, None] - torch.arange(6)[None, :]).expand(2, -1, -1)
    arguments = {"relative": relative, "position_table": positions.table()}
    with torch.no_grad():
        torch.testing.assert_close(
            dropping.eval()(x, mask, **arguments), plain.eval()(x, mask, **arguments), rtol=0, atol=0
        )
        trained = dropping.train()(x, mask, **arguments)
        assert (trained[0] - trained[1]).abs().max() > 1e-3
        torch.testing.assert_close(plain.train()(x, mask, **arguments), plain.eval()(x, mask, **arguments))
        # Each alone: position dropout in the attention, the hidden units' in the feed-forward layer.
        attention = Attention(16, 4, position_dropout=0.5).train()
        alone = attention(x, mask, **arguments)
        assert (alone[0] - alone[1]).abs().max() > 1e-3
        feed_forward = Block(16, 4, 32, 0.0, ff_dropout=0.5).train()
        hidden = feed_forward.ff(x)
        assert (hidden[0] - hidden[1]).abs().max() > 1e-3


def test_the_key_value_cache_selects_appends_and_compacts_like_plain_tensors():
    """Growing past its room, selecting rows (copies, drops, reorders) and gathering slots give the
    keys and values that the same operations on plain tensors give."""
    torch.manual_seed(0)
    cache = KeyValueCache(3, 2, 4, 8, dtype=torch.float32, device="cpu")
    plain = [torch.zeros(3, 2, 2, 4, 0, 8)]

    def check():
        for module in range(2):
            keys, values = cache.keys_values(module)
            assert torch.equal(keys, plain[0][:, module, 0]) and torch.equal(values, plain[0][:, module, 1])

    for step in range(40):
        new = torch.randn(cache.rows, 2, 2, 4, 1 + step % 2, 8)
        cache.append(new.shape[4])
        for module in range(2):
            cache.write(module, new[:, module, 0], new[:, module, 1])
        plain[0] = torch.cat([plain[0], new], dim=4)
        check()
        rows = torch.randint(0, cache.rows, (int(torch.randint(1, 12, ())),))
        cache.select_rows(rows)
        plain[0] = plain[0][rows]
        check()
        if step % 7 == 6:
            order = torch.argsort(torch.rand(cache.rows, cache.slots), dim=1)[:, : cache.slots - 2]
            cache.gather_slots(order)
            plain[0] = plain[0].gather(4, order[:, None, None, None, :, None].expand(-1, 2, 2, 4, -1, 8))
            check()
    copied = copy.deepcopy(cache)
    cache.write(0, torch.ones(cache.rows, 4, 1, 8), torch.ones(cache.rows, 4, 1, 8))
    assert torch.equal(copied.keys_values(0)[0], plain[0][:, 0, 0])


def test_the_math_kernel_gives_the_sdpa_numbers():
    torch.manual_seed(0)
    attention = Attention(16, 4).eval()
    positions = RelativePositions(16, -3, 10)
    x = torch.randn(5, 2, 16)
    memory = torch.randn(5, 9, 16)
    mask = torch.rand(5, 4, 2, 11) > 0.4
    relative = positions.buckets(torch.randint(-5, 12, (5, 2, 11)))
    given = {"memory": memory, "relative": relative, "position_table": positions.table()}
    torch.testing.assert_close(
        attention(x, mask, kernel="math", **given),
        attention(x, mask, kernel="sdpa", **given),
        atol=1e-6,
        rtol=1e-5,
    )
