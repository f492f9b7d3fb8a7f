"""Sampling (inference/sampling.py): every sample of a joint model is a well-formed tree whose yield
is its sentence, within ``max_length`` (property test on random toy models); samples follow the
model's distribution renormalised over valid actions; top-k, nucleus, prompts, seeds; tiny real
models, whose ``Sample.logprob`` is the teacher-forced log-probability of the sampled tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.inference.grammar import ActionSpace
from syntaxlm.inference.marginal import sequence_logprobs
from syntaxlm.inference.sampling import generate
from syntaxlm.models import build_model
from syntaxlm.structure.actions import actions_to_tree
from syntaxlm.text.build import build_vocabulary
from tests.test_beam import TINY, ToyModel


def check_sample(model, sample, max_length: int) -> None:
    tokens = sample.extra["tokens"]
    assert len(tokens) <= max_length
    style = model.action_grammar().style
    if style == "words":
        assert tokens[-1] == "</s>" and "</s>" not in tokens[:-1] and sample.tree is None
        assert sample.words == model.vocab.decode([model.vocab.index(t) for t in tokens[:-1]])
    else:
        tree = actions_to_tree(tokens, style, labels=["A", "B"] if isinstance(model, ToyModel) else None)
        # Pieces of a subword vocabulary are joined into the sample's words: the same constituents.
        assert [n.label for n in tree.subtrees()] == [n.label for n in sample.tree.subtrees()]
        assert sample.tree.leaves() == sample.words


@settings(max_examples=30, deadline=None)
@given(
    style=st.sampled_from(["choe-charniak", "rnng", "words"]),
    seed=st.integers(0, 10**6),
    max_length=st.integers(4, 14),
    top_k=st.one_of(st.none(), st.integers(1, 4)),
    top_p=st.one_of(st.none(), st.floats(0.05, 1.0)),
    temperature=st.floats(0.3, 3.0),
    bounds=st.tuples(st.integers(1, 3), st.integers(1, 3)),
)
def test_samples_are_always_well_formed(style, seed, max_length, top_k, top_p, temperature, bounds):
    model = ToyModel(style, seed=seed, scale=4.0)
    samples = generate(
        model,
        5,
        seed=seed,
        max_length=max_length,
        top_k=top_k,
        top_p=top_p,
        temperature=temperature,
        max_open=bounds[0],
        max_openers=bounds[1],
    )
    assert len(samples) == 5
    for sample in samples:
        check_sample(model, sample, max_length)
        assert sample.extra["sampling_logprob"] <= 1e-9


def test_samples_follow_the_renormalised_distribution():
    model = ToyModel("rnng", seed=3, scale=1.0)
    samples = generate(model, 600, seed=1, max_length=40)
    space = ActionSpace(model.action_grammar())
    first = model.decoder().row_logprobs(())[space.open_ids].double()
    expected = torch.softmax(first, 0).numpy()  # only the two openers may start a tree
    roots = np.array([s.tree.label == "A" for s in samples]).mean()
    sigma = math.sqrt(expected[0] * (1 - expected[0]) / len(samples))
    assert abs(roots - expected[0]) < 4 * sigma


def test_seeds_top_k_and_nucleus():
    model = ToyModel("choe-charniak", seed=8)
    a = generate(model, 6, seed=4, max_length=16)
    assert [s.extra["tokens"] for s in a] == [
        s.extra["tokens"] for s in generate(model, 6, seed=4, max_length=16)
    ]
    assert [s.extra["tokens"] for s in a] != [
        s.extra["tokens"] for s in generate(model, 6, seed=5, max_length=16)
    ]
    greedy = generate(model, 4, seed=0, max_length=16, top_k=1)
    assert len({tuple(s.extra["tokens"]) for s in greedy}) == 1 and greedy[0].extra["sampling_logprob"] == 0
    tiny_nucleus = generate(model, 4, seed=9, max_length=16, top_p=1e-6)
    assert [s.extra["tokens"] for s in tiny_nucleus] == [s.extra["tokens"] for s in greedy]


def test_prompts():
    model = ToyModel("choe-charniak", seed=2)
    samples = generate(model, 3, prompts=[["(A", "x"], ["(B", "(A", "y"]], seed=0, max_length=12)
    assert len(samples) == 6
    assert all(s.extra["tokens"][:2] == ["(A", "x"] for s in samples[:3])
    assert all(s.extra["tokens"][:3] == ["(B", "(A", "y"] for s in samples[3:])
    for sample in samples:
        check_sample(model, sample, 12)
    with pytest.raises(ValueError, match=r"token 1 \('B\)'\)"):
        generate(model, 1, prompts=[["(A", "B)"]])
    with pytest.raises(ValueError, match="token 0"):
        generate(model, 1, prompts=[["x"]])
    with pytest.raises(ValueError, match="too short"):
        generate(model, 1, max_length=2)
    with pytest.raises(TypeError, match="string"):
        generate(model, 1, prompts=["(A x"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sampling")
    write_synthetic_treebank(folder / "data", sentences=120, seed=0)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    subwords = build_vocabulary(
        folder / "data" / "train.trees", folder / "subwords", kind="subword", vocab_size=400
    )
    return {"word": vocab, "subword": subwords}


@pytest.mark.parametrize(
    "name, vocab",
    [
        ("tg", "word"),
        ("txl-trees", "subword"),
        ("plm", "subword"),
        ("plm-mask", "word"),
        ("lm", "word"),
        ("txl-terminals", "subword"),
    ],
)
def test_real_models_sample_well_formed_trees(tiny, name, vocab):
    torch.manual_seed(0)
    model = build_model({"model": name, **TINY}, {"vocab": tiny[vocab]}).eval()
    samples = generate(model, 4, seed=0, max_length=30, top_p=0.95)
    space = ActionSpace(model.action_grammar())
    sequences = [np.array([model.vocab.index(t) for t in s.extra["tokens"]]) for s in samples]
    forced = sequence_logprobs(model.decoder, space, sequences)
    for sample, values in zip(samples, forced):
        check_sample(model, sample, 30)
        assert sample.logprob == pytest.approx(values.sum(), abs=1e-3)
