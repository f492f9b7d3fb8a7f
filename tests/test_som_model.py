"""Syntactic Ordered Memory (models/som.py): the Fig. 2 grid under gold decisions, Algorithm 1 on
the model's own decisions (hand-made mistakes and the reference implementation), dSOM's gradient
stopping, the cached prediction RNN, the structure metrics, word log-probs against the decoder,
trees, files, the ablation options and config errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.inference.marginal import exact_scores
from syntaxlm.models import build_model, load_model
from syntaxlm.models.base import ConfigError
from syntaxlm.models.som import (
    SharedWeight,
    SkippedTreesWarning,
    SOMConfig,
    SyntacticOrderedMemory,
    adaptive_labels,
)
from syntaxlm.structure.distances import binary_splits, nontrivial_spans
from syntaxlm.structure.som import first_siblings, memory_grid, required_slots, structure_labels
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.binarize import binarize
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.dependency import ConlluReader, dependency_to_binary_tree, parse_conllu
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree

WORDS = ["a", "b", "c", "d", "e"]
FIG2 = Tree.from_bracket("(X (X a b) (X (X c d) e))")  # structure/som.py's completion of Fig. 2
SMALL = {"d_model": 16, "d_syntactic": 4, "dropout": 0.0, "output_dropout": 0.0}


def vocabulary(sentences) -> WordVocab:
    return WordVocab.build(list(sentences) * 2, min_freq=1)


def make_model(name="esom", vocab=None, seed=0, **options) -> SyntacticOrderedMemory:
    config = SOMConfig(model=name, **{**SMALL, **options})
    torch.manual_seed(seed)
    return SyntacticOrderedMemory(config, {"vocab": vocab or vocabulary([WORDS])})


def whole(corpus):
    return next(corpus.batches(len(corpus), shuffle=False))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("som")
    write_synthetic_treebank(folder / "data", sentences=200, seed=0)
    trees = list(TreeReader(folder / "data" / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    return {"trees": trees[:40], "vocab": vocabulary(t.leaves() for t in trees)}


# --- the memory under gold decisions (Fig. 2) --------------------------------------------------------


def span_vectors(model, tree: Tree, x: torch.Tensor) -> dict[tuple[int, int], torch.Tensor]:
    """Every constituent's vector built by the cell straight from the tree (left child = M)."""
    vectors = {(t, t + 1): x[t] for t in range(len(x))}
    weights = model.cell.weights()
    for start, split, end in sorted(binary_splits(tree), key=lambda s: s[2] - s[0]):
        left, right = vectors[(start, split)], vectors[(split, end)]
        vectors[(start, end)] = model.cell(right[None], left[None], weights)[0]
    return vectors


@pytest.mark.parametrize("name", ["esom", "dsom"])
def test_gold_decisions_reproduce_the_figure_2_grid(name):
    model = make_model(name, n_slots=3).eval()
    gold = structure_labels(FIG2, 3)
    assert gold.tolist() == [3, 2, 2, 1, 1]
    ids = torch.tensor([model.vocab.encode(WORDS)])
    with torch.no_grad():
        x = model.embed(ids)[0]
        expected = span_vectors(model, FIG2, x)
        state, weights = model.initial(1), model.cell_weights()
        columns = []  # M̃_t: the memory the next step starts from; the candidates after the last word
        targets = np.append(gold, 2)
        for t in range(len(WORDS)):
            state, _ = model.step(
                state,
                x[t][None],
                weights,
                decide="gold",
                gold=torch.tensor([targets[t]]),
                gold_next=torch.tensor([targets[t + 1]]),
            )
            if t:
                columns.append(state.memory[0])
        columns.append(state.candidates[0])
    grid = memory_grid(gold, 3)
    filled = 0
    for slot in range(3):
        for t in range(len(WORDS)):
            cell = grid[slot][t]
            if cell is not None:
                torch.testing.assert_close(columns[t][slot], expected[(cell.start, cell.end)])
                filled += 1
    assert filled == 11  # the occupied cells of the grid in structure/som.py's docstring
    assert model.induced_trees([WORDS])[0].leaves() == WORDS


# --- Algorithm 1 on the model's decisions --------------------------------------------------------------


def batched_labels(tree: Tree, decisions, n_slots: int) -> list[int]:
    gold = torch.from_numpy(structure_labels(tree, n_slots))[None]
    siblings = torch.from_numpy(first_siblings(tree))[None]
    labels = adaptive_labels(gold, siblings, torch.tensor([decisions]), n_slots)
    return labels[0].tolist()


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ([3, 2, 2, 1, 1], [2, 2, 2, 1, 1]),  # gold decisions: the gold labels (ξ_0 = N shown as N − 1)
        ([3, 2, 2, 2, 1], [2, 2, 2, 1, 2]),  # d joins ((a b) c) at the root: e follows it up
        ([3, 2, 1, 1, 0], [2, 2, 2, 1, 1]),  # c paired with b alone: d is still due at slot 1
        ([3, 2, 2, 2, 2], [2, 2, 2, 1, 2]),  # a label depends only on the decisions before it
    ],
)
def test_adaptive_labels_on_mistakes(decisions, expected):
    assert batched_labels(FIG2, decisions, 3) == expected
    assert structure_labels(FIG2, 3, decisions).tolist()[1:] == expected[1:]


def random_tree(n: int, rng: np.random.Generator) -> Tree:
    def build(start, end):
        if end - start == 1:
            return str(start)
        split = int(rng.integers(start + 1, end))
        return Tree("X", (build(start, split), build(split, end)))

    built = build(0, n)
    return built if isinstance(built, Tree) else Tree("X", (built,))


def test_adaptive_labels_match_the_reference_algorithm():
    rng = np.random.default_rng(0)
    n_slots = 6
    checked = 0
    for _ in range(300):
        tree = random_tree(int(rng.integers(1, 12)), rng)
        if required_slots(tree) > n_slots:
            continue
        reference_gold = structure_labels(tree, n_slots)
        decisions = [n_slots]
        for t in range(1, len(reference_gold)):
            lowest = max((n_slots if t == 1 else decisions[-1]) - 1, 0)
            decisions.append(int(rng.integers(lowest, n_slots)))
        expected = structure_labels(tree, n_slots, decisions).tolist()
        expected[0] = n_slots - 1
        assert batched_labels(tree, decisions, n_slots) == expected
        checked += 1
    assert checked > 200


# --- training rows and losses --------------------------------------------------------------------------


def test_prepare_rows_and_counts():
    model = make_model(n_slots=3)
    corpus = model.prepare([FIG2, Tree.from_bracket("(X a)")])
    batch = whole(corpus)
    assert corpus.lengths.tolist() == [6, 2]
    eos = model.vocab.index("</s>")
    assert batch["labels"][0].tolist() == [*model.vocab.encode(WORDS), eos]
    assert batch["gold"][0].tolist() == [3, 2, 2, 1, 1, 2]
    assert batch["structure"][0].tolist() == [0, 0, 1, 1, 1, 0]
    assert batch["structure_next"][0].tolist() == [0, 1, 1, 1, 1, 0]
    assert batch.counts == {"lm": 8, "structure": 3, "structure_next": 4}
    out = model.loss(batch)
    assert set(out.sums) == {"lm", "structure", "structure_next"}
    assert all(torch.isfinite(value) and value >= 0 for value in out.sums.values())


def test_dependency_trees_and_deep_trees():
    dep = parse_conllu(
        "1\tthe\t_\t_\t_\t_\t2\tdet\t_\t_\n2\tdog\t_\t_\t_\t_\t3\tnsubj\t_\t_\n"
        "3\tbarks\t_\t_\t_\t_\t0\troot\t_\t_\n4\tloudly\t_\t_\t_\t_\t3\tadvmod\t_\t_\n\n"
    )[0]
    model = make_model(vocab=vocabulary([list(dep.words)]), n_slots=3)
    batch = whole(model.prepare([dep]))
    assert batch["gold"][0].tolist()[:4] == structure_labels(dependency_to_binary_tree(dep), 3).tolist()
    deep = Tree.from_bracket("(X a (X b (X c (X d e))))")  # right-branching: needs 4 slots
    with pytest.warns(SkippedTreesWarning, match="1 of 2"):
        assert len(model.prepare([deep, FIG2])) == 1
    with pytest.raises(TypeError, match=r"trees\[0\]"):
        model.prepare(["a b"])


def test_teacher_forcing_follows_the_gold_decisions():
    model = make_model(n_slots=3, labels="teacher-forcing").train()
    batch = whole(model.prepare([FIG2]))
    ids = batch["inputs"][:, :-1].long()
    out = model.run(ids, torch.tensor([5]), decide="gold", gold=batch["gold"].long())
    assert out.decisions[0].tolist() == [3, 2, 2, 1, 1]
    assert out.decisions_next[0].tolist() == [2, 2, 1, 1, 2]


def test_left_branching_labels():
    model = make_model(n_slots=3, labels="left-branching")
    batch = whole(model.prepare([FIG2]))
    assert batch["gold"][0].tolist() == [3, 2, 2, 2, 2, 2]


def test_no_prediction_network():
    model = make_model(n_slots=3, prediction_network=False)
    assert not hasattr(model, "reader")
    assert model.loss_weights == {"lm": 1.0, "structure": 1.0}
    batch = whole(model.prepare([FIG2]))
    assert set(model.loss(batch).sums) == {"lm", "structure"}
    with torch.no_grad():
        out = model.eval().run(batch["inputs"][:, :-1].long(), torch.tensor([5]), decide="argmax")
        assert out.logp_next is None
        state = model.initial(1)
        x = model.embed(batch["inputs"][:, :1].long())
        state, _ = model.step(state, x[:, 0], model.cell_weights(), decide="argmax")
        torch.testing.assert_close(state.hidden, state.candidates[:, -1])


def test_dsom_structure_loss_stops_at_the_semantic_segment(synthetic):
    model = make_model("dsom", vocab=synthetic["vocab"], d_model=24, d_syntactic=8, dropout=0.1).train()
    s = model.d_semantic
    batch = whole(model.prepare(synthetic["trees"][:8]))
    out = model.loss(batch)
    (out.sums["structure"] + out.sums["structure_next"]).backward()

    def zero(grad, index=...):
        return grad is None or bool((grad[index] == 0).all())

    assert zero(model.embedding.weight.grad, (slice(None), slice(0, s)))
    assert not zero(model.embedding.weight.grad, (slice(None), slice(s, None)))
    for layer in (model.cell.inner, model.cell.outer):
        assert zero(layer.semantic_weight.grad)
        assert zero(layer.bias.grad, layer.semantic_out)
        assert not zero(layer.syntactic_weight.grad)
    for norm in (model.cell.norm, model.input_norm):
        assert zero(norm.semantic.weight.grad) and zero(norm.semantic.bias.grad)
        assert not zero(norm.syntactic.weight.grad)
    for parameter in [*model.reader.parameters(), model.output_bias, model.initial_state]:
        assert zero(parameter.grad)
    # The language-model loss reaches both segments.
    model.zero_grad()
    model.loss(batch).sums["lm"].backward()
    assert not zero(model.cell.inner.semantic_weight.grad)
    assert not zero(model.embedding.weight.grad, (slice(None), slice(0, s)))


@pytest.mark.parametrize("name", ["esom", "dsom"])
def test_weight_gradients_formed_once_equal_autograds(synthetic, name, monkeypatch):
    def gradients():
        model = make_model(name, vocab=synthetic["vocab"], seed=4, dropout=0.1).train()
        batch = whole(model.prepare(synthetic["trees"][:6]))
        torch.manual_seed(5)
        out = model.loss(batch)
        sum(out.sums.values()).backward()
        return {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}

    deferred = gradients()
    original = SharedWeight.__init__

    def plain(self, weight):
        original(self, weight)
        self.deferred, self.weight = False, weight

    monkeypatch.setattr(SharedWeight, "__init__", plain)
    autograds = gradients()
    assert deferred.keys() == autograds.keys()
    for key in deferred:
        torch.testing.assert_close(deferred[key], autograds[key], rtol=1e-4, atol=1e-5, msg=key)


def test_esom_structure_loss_reaches_every_cell_parameter(synthetic):
    model = make_model("esom", vocab=synthetic["vocab"]).train()
    out = model.loss(whole(model.prepare(synthetic["trees"][:8])))
    out.sums["structure"].backward()
    assert not bool((model.cell.inner.weight.grad == 0).all())


def test_block_triangular_weights():
    model = make_model("dsom", d_model=8, d_syntactic=2)
    inner, outer = (shared.weight for shared in model.cell.weights())
    syntactic = torch.arange(8) >= 6
    inputs = torch.cat([syntactic, syntactic])
    hidden = torch.arange(32) >= 24
    assert bool((inner[hidden][:, ~inputs] == 0).all()) and bool((inner[hidden][:, inputs] != 0).all())
    assert bool((outer[syntactic.repeat(4)][:, ~hidden] == 0).all())
    n_params = sum(p.numel() for p in model.cell.parameters())
    # inner: 24 semantic rows × 16 inputs, 8 syntactic rows × 4 syntactic inputs, bias; outer: 24 × 32,
    # 8 × 8, bias; two layer norms (6 and 2 features).
    assert n_params == 24 * 16 + 8 * 4 + 32 + 24 * 32 + 8 * 8 + 32 + 2 * 6 + 2 * 2


# --- the prediction network ------------------------------------------------------------------------------


def test_cached_prediction_rnn_equals_a_fresh_run(synthetic):
    model = make_model("dsom", vocab=synthetic["vocab"], seed=3).eval()
    batch = whole(model.prepare(synthetic["trees"][:6]))
    ids = batch["inputs"][:, :-1].long()
    n = model.config.n_slots
    with torch.no_grad():
        x = model.embed(ids)
        state, weights = model.initial(len(ids)), model.cell_weights()
        for t in range(ids.shape[1]):
            state, out = model.step(state, x[:, t], weights, decide="argmax")
            for row in range(len(ids)):
                i = int(out.decision_next[row])
                h = model.initial_state[None]
                for k in range(n - 1, i, -1):
                    h = model.reader(h, state.memory[row, k][None], weights["reader"])
                h = model.reader(h, state.candidates[row, i][None], weights["reader"])
                torch.testing.assert_close(state.hidden[row], h[0])


# --- scores, trees and metrics ----------------------------------------------------------------------------


def test_word_logprobs_match_the_loss_and_the_decoder(synthetic):
    model = make_model("esom", vocab=synthetic["vocab"], seed=1).eval()
    trees = synthetic["trees"][:6]
    sentences = [t.leaves() for t in trees]
    scores = model.word_logprobs(sentences, eos=True, batch_size=4)
    assert [len(s) for s in scores] == [len(s) + 1 for s in sentences]
    assert all(s.dtype == torch.float64 for s in scores)
    with torch.no_grad():
        loss = model.loss(whole(model.prepare(trees)))
    assert float(sum(s.sum() for s in scores)) == pytest.approx(-float(loss.sums["lm"]), rel=1e-5)
    exact = exact_scores(model, sentences, batch_size=3)
    for mine, decoded in zip(scores, exact):
        np.testing.assert_allclose(mine[:-1].numpy(), decoded.piece_logprobs, rtol=1e-5, atol=1e-5)
        assert mine[-1].item() == pytest.approx(decoded.end_logprob, rel=1e-5, abs=1e-5)
    with pytest.raises(ValueError, match="sentence 1"):
        model.word_logprobs([["a"], []])


def test_structure_metrics(synthetic):
    model = make_model("dsom", vocab=synthetic["vocab"], seed=2)
    trees = synthetic["trees"][:12]
    metrics = model.evaluate_structure(trees, batch_size=5)
    assert 0 <= metrics["p_accuracy"] <= 1 and 0 <= metrics["p_next_accuracy"] <= 1
    assert metrics["perplexity"] > 1 and metrics["sentences"] == 12
    # p accuracy by hand: argmax decisions against Algorithm 1 on them.
    batch = whole(model.prepare(trees))
    n_words = (batch["labels"] != 0).sum(1) - 1
    with torch.no_grad():
        out = model.eval().run(batch["inputs"][:, :-1].long(), n_words, decide="argmax")
    xi = adaptive_labels(batch["gold"].long(), batch["siblings"].long(), out.decisions, model.config.n_slots)
    marked = batch["structure"][:, :-1] != 0
    assert metrics["p_accuracy"] == pytest.approx(float((out.decisions == xi[:, :-1])[marked].float().mean()))
    # UF1 from the trees the model induces, against the binarised gold trees.
    induced = model.induced_trees([t.leaves() for t in trees], batch_size=4)
    tp = fp = fn = 0
    for tree, predicted in zip(trees, induced):
        assert predicted.leaves() == tree.leaves()
        mine, gold = set(nontrivial_spans(predicted)), set(nontrivial_spans(binarize(tree, "left")))
        tp, fp, fn = tp + len(mine & gold), fp + len(mine - gold), fn + len(gold - mine)
    assert metrics["uf1_corpus"] == pytest.approx(200 * tp / (2 * tp + fp + fn))


def test_training_step_reduces_the_loss(synthetic):
    model = make_model("esom", vocab=synthetic["vocab"], d_model=32).train()
    batch = whole(model.prepare(synthetic["trees"][:16]))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    weights = model.loss_weights

    def objective():
        out = model.loss(batch)
        return sum(weights[k] * out.sums[k] / batch.counts[k] for k in weights)

    torch.manual_seed(0)
    first = float(objective().detach())
    for _ in range(15):
        optimizer.zero_grad()
        objective().backward()
        optimizer.step()
    assert float(objective().detach()) < first - 0.5


def test_save_and_load(tmp_path, synthetic):
    model = make_model("dsom", vocab=synthetic["vocab"]).eval()
    sentences = [t.leaves() for t in synthetic["trees"][:3]]
    model.save_pretrained(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    for a, b in zip(model.word_logprobs(sentences), loaded.word_logprobs(sentences)):
        torch.testing.assert_close(a, b)
    assert loaded.induces_trees


def test_build_model_and_config_errors():
    vocab = vocabulary([WORDS])
    assert isinstance(build_model({"model": "esom", "d_model": 8}, {"vocab": vocab}), SyntacticOrderedMemory)
    for bad, match in [
        ({"model": "dsom", "d_model": 8, "d_syntactic": 8}, "d_syntactic"),
        ({"model": "esom", "n_slots": 1}, "n_slots"),
        ({"model": "esom", "labels": "gold"}, "labels"),
        ({"model": "esom", "output_dropout": 1.0}, "output_dropout"),
    ]:
        with pytest.raises(ConfigError, match=match):
            build_model({**bad}, {"vocab": vocab})


# --- real data ------------------------------------------------------------------------------------------


def test_ud_english_ewt(shared_data):
    path = shared_data / "ud_english" / "ewt" / "en_ewt-ud-dev.conllu"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    deps = []
    for dep in ConlluReader(path):
        deps.append(dep)
        if len(deps) == 30:
            break
    model = make_model("dsom", vocab=vocabulary(d.words for d in deps))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedTreesWarning)
        metrics = model.evaluate_structure(deps, batch_size=8)
    assert metrics["sentences"] == 30 and metrics["uf1_corpus"] is not None
    trees = model.induced_trees([list(d.words) for d in deps], batch_size=8)
    assert [t.leaves() for t in trees] == [list(d.words) for d in deps]
