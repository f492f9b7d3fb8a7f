"""PRPN: gates against the paper's equations on hand-made distances, structured attention that is
exactly zero where a gate is zero, the recurrence equal in one pass, in segments and step by step,
and trees from the model's distances equal to the authors' ``build_tree`` (golden file)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from syntaxlm.eval.uf1 import tree_from_nested
from syntaxlm.models import ConfigError, build_model, load_model, model_config
from syntaxlm.models.prpn import (
    PRPN,
    UNREACHABLE,
    banded_attention,
    gate_alpha,
    stick_breaking_gates,
    structured_attention,
)
from syntaxlm.text.base import BOS_ID, EOS_ID
from syntaxlm.text.vocab import WordVocab

SENTENCES = [
    ["the", "dog", "sees", "a", "cat"],
    ["a", "cat", "sleeps"],
    ["the", "cat", "sees", "the", "dog", "in", "the", "house"],
    ["dogs", "bark"],
]


def make_model(**overrides) -> PRPN:
    values = {
        "model": "prpn",
        "d_model": 16,
        "hidden_size": 24,
        "n_layers": 2,
        "lookback": 2,
        "memory_slots": 4,
        "segment_length": 6,
        "streams": 2,
    }
    values.update(overrides)
    torch.manual_seed(0)
    return build_model(values, {"vocab": WordVocab.build(SENTENCES, min_freq=1)})


def alpha_reference(difference: float, tau: float, gate: str) -> float:
    """α as the authors compute Eq. 6: (hardtanh(2τx + 1) + 1) / 2, or σ(10τx + 5)."""
    if gate == "hard":
        return (max(-1.0, min(1.0, 2 * tau * difference + 1)) + 1) / 2
    x = 10 * tau * difference + 5
    return 0.0 if x < -700 else 1 / (1 + math.exp(-x))


def gates_reference(all_distances: list[float], start: int, t: int, n_slots: int, tau: float, gate: str):
    """Eq. 5/19 by hand: the gate of memory m_i for i = t−N .. t−1 (absolute positions into
    ``all_distances``, step t at ``start + t``) is ∏_{j=i+1..t} α(d_t − d_j)."""
    now = start + t
    out = []
    for i in range(now - n_slots, now):
        product = 1.0
        for j in range(i + 1, now + 1):
            product *= alpha_reference(all_distances[now] - all_distances[j], tau, gate)
        out.append(product)
    return out


# --- gates ------------------------------------------------------------------------------------------


def test_alpha_matches_eq6_as_computed_by_the_authors():
    x = torch.tensor([-1.0, -0.1, -0.05, 0.0, 0.02, 0.5])
    for gate in ("hard", "soft"):
        expected = [alpha_reference(float(v), 10.0, gate) for v in x]
        assert torch.allclose(gate_alpha(x, 10.0, gate), torch.tensor(expected), atol=1e-6)
    assert gate_alpha(torch.tensor(0.0), 10.0).item() == 1.0  # equal distances: fully open


@pytest.mark.parametrize("gate", ["hard", "soft"])
def test_gates_equal_the_stick_breaking_products_on_hand_made_distances(gate):
    history = [UNREACHABLE, UNREACHABLE, 0.3, 0.8]
    distances = [0.5, 0.1, 0.12, 0.9, 0.2, 0.2]
    tau = 10.0
    gates = stick_breaking_gates(torch.tensor([distances]), torch.tensor([history]), tau, gate)
    assert gates.shape == (1, 6, 4)
    everything = history + distances
    for t in range(len(distances)):
        expected = gates_reference(everything, len(history), t, 4, tau, gate)
        assert np.allclose(gates[0, t].numpy(), expected, atol=1e-6), t
    # the newest memory (m_{t−1}) is always visible with the hard gate; the start is never reachable
    if gate == "hard":
        assert torch.all(gates[0, :, -1] == 1)
    assert gates[0, 0, :2].abs().max() < 1e-6


def test_lookahead_gates_compare_the_lookahead_distance_with_the_stored_ones():
    history = torch.tensor([[UNREACHABLE, 0.4, 0.6]])
    distances = torch.tensor([[0.2, 0.7]])
    lookahead = torch.tensor([[0.5, 0.3]])
    gates = stick_breaking_gates(distances, history, 10.0, query=lookahead)
    # step 0: d̂_1 = 0.5 against d_0 = 0.2 (open), d_{-1} = 0.6 (closed)
    alpha = [alpha_reference(0.5 - d, 10.0, "hard") for d in (0.2, 0.6, 0.4)]
    expected = [alpha[0] * alpha[1] * alpha[2], alpha[0] * alpha[1], alpha[0]]
    assert np.allclose(gates[0, 0].numpy(), expected, atol=1e-6)


def test_hard_limit_gives_the_dependency_range_of_eq21():
    rng = np.random.default_rng(0)
    n_slots = 12
    distances = rng.random(n_slots)
    history = np.full(n_slots, UNREACHABLE)  # the steps before the start
    gates = stick_breaking_gates(
        torch.tensor(distances[None]), torch.tensor(history[None]), 1e6, "hard"
    )  # τ → ∞
    everything = np.concatenate([history, distances])  # step t at position n_slots + t
    for t in range(n_slots):
        now = n_slots + t
        # t' = max{i < t : d_i > d_t}; g_i = 1 for t' ≤ i < t and 0 below (Eq. 21–22)
        t_prime = max(i for i in range(now) if everything[i] > everything[now])
        expected = [1.0 if i >= t_prime else 0.0 for i in range(now - n_slots, now)]
        assert gates[0, t].tolist() == expected, t


# --- structured attention --------------------------------------------------------------------------


def test_attention_weights_are_zero_where_the_gate_is_zero():
    torch.manual_seed(0)
    memory = torch.randn(3, 5, 8)
    key = torch.randn(3, 4)
    gates = torch.tensor([[0, 0, 1, 1, 1], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1.0]])
    summary, weights = structured_attention(memory, key, gates)
    assert torch.all(weights[gates == 0] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(3), atol=1e-6)
    # Eq. 10–12: the gated softmax of h_i·k/√H, and the weighted sum of the (h, c) memories
    logits = torch.einsum("bnh,bh->bn", memory[..., :4], key) / 2.0
    expected = torch.softmax(logits.masked_fill(gates == 0, -math.inf), dim=-1)
    assert torch.allclose(weights, expected, atol=1e-6)
    assert torch.allclose(summary, torch.einsum("bn,bnd->bd", weights, memory), atol=1e-6)


def test_banded_attention_equals_attention_step_by_step():
    torch.manual_seed(1)
    n_slots, steps = 3, 5
    values = torch.randn(2, n_slots + steps, 6)
    queries = torch.randn(2, steps, 6)
    gates = torch.rand(2, steps, n_slots)
    summary, weights = banded_attention(queries, values, gates, n_slots)
    for t in range(steps):
        expected, expected_weights = structured_attention(
            values[:, t : t + n_slots], queries[:, t], gates[:, t]
        )
        assert torch.allclose(summary[:, t], expected, atol=1e-5)
        assert torch.allclose(weights[:, t], expected_weights, atol=1e-6)


def test_model_reading_attention_is_zero_where_hard_gates_are_zero():
    model = make_model(tau=1e6).eval()  # the hard limit
    tokens = torch.tensor([[BOS_ID, *model.vocab.encode(SENTENCES[2]), EOS_ID]])
    _, _, details = model.run(tokens)
    gates = details["gates"]
    assert set(gates.unique().tolist()) <= {0.0, 1.0}
    closed = (gates == 0).expand_as(details["reading_attention"])
    assert closed.any()
    assert torch.all(details["reading_attention"][closed] == 0)
    assert torch.all(details["predict_attention"][details["lookahead_gates"] == 0] == 0)


# --- the recurrence --------------------------------------------------------------------------------


def test_segments_with_carried_state_equal_one_pass_and_the_step_by_step_decoder():
    model = make_model().eval()
    tokens = torch.tensor([[BOS_ID, 4, 5, 6, 7, 8, EOS_ID, BOS_ID, 9, 10]])
    whole, _ = model.hidden_states(tokens)
    first, state = model.hidden_states(tokens[:, :3])
    second, state = model.hidden_states(tokens[:, 3:7], state)
    third, _ = model.hidden_states(tokens[:, 7:], state)
    assert torch.allclose(torch.cat([first, second, third], dim=1), whole, atol=1e-5)
    decoder = model.decoder()
    decoder.start(1)
    logprobs = model.output_logits(whole).log_softmax(-1)
    for t in range(1, tokens.shape[1]):
        decoder.advance(torch.tensor([0]), tokens[0, t : t + 1])
        assert torch.allclose(decoder.logprobs()[0], logprobs[0, t], atol=1e-5), t


def test_distances_are_causal_and_padding_changes_nothing():
    model = make_model().eval()
    a = torch.tensor([[BOS_ID, 4, 5, 6, 7]])
    b = torch.tensor([[BOS_ID, 4, 5, 9, 9]])
    _, _, da = model.run(a)
    _, _, db = model.run(b)
    assert torch.allclose(da["distances"][:, :3], db["distances"][:, :3])
    assert not torch.allclose(da["distances"][:, 3:], db["distances"][:, 3:])
    alone = model.word_logprobs([SENTENCES[3]])[0]
    batched = model.word_logprobs(SENTENCES, batch_size=4)[3]
    assert torch.allclose(alone, batched, atol=1e-5)


def test_word_logprobs_sum_to_the_sentence_logprob():
    model = make_model()
    scores = model.word_logprobs(SENTENCES, eos=True)
    for sentence, values in zip(SENTENCES, scores):
        assert values.shape == (len(sentence) + 1,) and torch.all(values < 0)
    assert model.training


def test_training_step_reaches_every_network():
    model = make_model(residual_blocks=1, gate="soft")
    corpus = model.prepare(SENTENCES)
    batch = next(corpus.batches(2, shuffle=False))
    output = model.loss(batch)
    (output.sums["lm"] / batch.counts["lm"]).backward()
    for name in (
        "parser_conv.weight",
        "readers.1.key_hidden.weight",
        "predict_key.weight",
        "embedding.weight",
    ):
        gradient = dict(model.named_parameters())[name].grad
        assert gradient is not None and gradient.abs().sum() > 0, name
    assert output.state[1].shape == (2, 4)  # the distances carried to the next segment


def test_sentence_mode_and_config_errors():
    model = make_model(order="sentences")
    batch = next(model.prepare(SENTENCES).batches(4))
    assert model.loss(batch).sums["lm"].isfinite()
    with pytest.raises(ConfigError, match="gate"):
        model_config({"model": "prpn", "gate": "sharp"})
    with pytest.raises(ConfigError, match="even"):
        model_config({"model": "prpn", "hidden_size": 25})
    with pytest.raises(ConfigError, match="memory_slots"):
        model_config({"model": "prpn", "memory_slots": 0})


# --- trees ------------------------------------------------------------------------------------------


def nested_indices(tree) -> object:
    """A Tree over the leaves "0".."n-1" as the authors' nested lists of ints."""
    if isinstance(tree, str):
        return int(tree)
    children = [nested_indices(child) for child in tree.children]
    return children[0] if len(children) == 1 else children


def test_trees_from_model_distances_equal_the_authors_build_tree(golden, monkeypatch):
    cases = json.loads((golden / "uf1_distance_trees.json").read_text())["cases"]
    model = make_model()
    sentences = [[str(i) for i in range(case["n"])] for case in cases]
    distances = [np.asarray(case["dist"], dtype=np.float64) for case in cases]
    monkeypatch.setattr(model, "syntactic_distances", lambda sentences, batch_size=16: distances)
    trees = model.induced_trees(sentences)
    for case, tree in zip(cases, trees):
        assert nested_indices(tree) == case["pred_tree"], case["id"]
        assert tree == tree_from_nested(case["pred_tree"]), case["id"]


def test_induced_trees_read_the_word_distances():
    model = make_model()
    distances = model.syntactic_distances(SENTENCES)
    trees = model.induced_trees(SENTENCES)
    for sentence, values, tree in zip(SENTENCES, distances, trees):
        assert values.shape == (len(sentence),)
        assert tree.leaves() == sentence
    # the distances of a sentence are those the model computes after <s>, without </s>
    tokens = torch.tensor([[BOS_ID, *model.vocab.encode(SENTENCES[0]), EOS_ID]])
    with torch.no_grad():
        _, _, details = model.eval().run(tokens)
    assert np.allclose(details["distances"][0, 1:-1].numpy(), distances[0], atol=1e-6)
    assert model.induced_trees([["dogs"]])[0].leaves() == ["dogs"]
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        model.induced_trees([["dogs"], []])


def test_save_load_and_parse_through_the_inference_layer(tmp_path):
    from syntaxlm.inference import parse

    model = make_model()
    model.save_pretrained(tmp_path / "prpn")
    loaded = load_model(tmp_path / "prpn")
    assert torch.allclose(model.word_logprobs(SENTENCES)[0], loaded.word_logprobs(SENTENCES)[0], atol=1e-6)
    parsed = parse(loaded, SENTENCES[:2])
    assert [t.leaves() for t in _trees(parsed)] == SENTENCES[:2]


def _trees(parsed):
    return [item if hasattr(item, "leaves") else item.tree for item in parsed]


def test_character_level_model_scores_but_parses_only_words():
    config = model_config({"model": "prpn", "d_model": 8, "hidden_size": 12, "unit": "character"})
    vocab = WordVocab.build(SENTENCES, min_freq=1)
    torch.manual_seed(0)
    model = PRPN(config, PRPN.vocabularies_for(config, SENTENCES, vocab))
    scores = model.word_logprobs(SENTENCES[:2])
    assert [len(s) for s in scores] == [5, 3] and all(torch.all(s < 0) for s in scores)
    with pytest.raises(ValueError, match="sentence 0: 5 words became"):
        model.induced_trees(SENTENCES[:1])
