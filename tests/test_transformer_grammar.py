"""Transformer Grammars and the TXL baselines: composition, memory, scoring, files."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from syntaxlm.models import ConfigError, ModelFileError, build_model, load_model
from syntaxlm.models.layers.attention import RelativePositions
from syntaxlm.models.layers.transformer import next_memory
from syntaxlm.models.transformer_grammar import TransformerGrammar, _used_columns
from syntaxlm.text.base import PAD_ID
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.ptb import parse_tree
from tests.test_attention import _reference

TREES = [
    "(S (NP the blue bird) (VP sings (PP with (NP the cat))) .)",
    "(S (NP (NP the dog) (PP near (NP the park))) (VP barks))",
    "(S (NP a cat) (VP sees (NP the blue dog)) .)",
    "(S (VP sings))",
]
# Longer than the tiny recipes' segment of 256 positions (txl-trees: 453 and 444 positions,
# txl-terminals: 272 and 203), and no longer than segment + memory, so nothing is lost.
LONG_TREES = [
    "(S " + " ".join(["(NP the blue dog)"] * 90) + ")",
    "(S " + " ".join(["(NP a cat) (VP sees (NP the bird))"] * 39) + " .)",
]
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture(scope="module")
def trees():
    return [parse_tree(text) for text in TREES]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory, trees):
    folder = tmp_path_factory.mktemp("tg")
    path = folder / "train.trees"
    path.write_text("\n".join(TREES) + "\n")
    return build_vocabulary(path, folder / "vocab", kind="word", min_freq=1, pos_tags=False)


def _model(vocab, model="tg", seed=0, **options) -> TransformerGrammar:
    torch.manual_seed(seed)
    config = {"model": model, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64, "dropout": 0.0}
    return build_model({**config, **options}, {"vocab": vocab}).eval()


def _recipe_model(vocab, name: str, scale: str = "tiny", seed=0, **options) -> TransformerGrammar:
    """The model of ``configs/<name>-<scale>.yaml`` (eval mode), ``options`` replacing its settings."""
    config = yaml.safe_load((CONFIGS / f"{name}-{scale}.yaml").read_text())["model"]
    torch.manual_seed(seed)
    return build_model({**config, **options}, {"vocab": vocab}).eval()


def _one_batch(model, trees):
    corpus = model.prepare(trees)
    return next(corpus.batches(len(corpus), shuffle=False))


def test_compose_at_layer_one_sees_only_the_opener_and_children(vocab, trees):
    model = _model(vocab, n_layers=2)
    captured = {}
    model.embedding.register_forward_hook(lambda m, i, out: captured.update(embedded=out) or None)
    model.transformer.blocks[0].register_forward_hook(lambda m, i, out: captured.update(layer1=out) or None)
    sequences = model.sequences(trees)
    batch = _one_batch(model, trees)
    model(batch)
    embedded, layer1 = captured["embedded"], captured["layer1"]
    checked = 0
    direction = torch.randn(layer1.shape[-1])  # (a LayerNorm output's plain sum is constant)
    for row in range(len(trees)):
        sequence = sequences[row]
        for p in np.flatnonzero(sequence.compose):
            (grad,) = torch.autograd.grad(layer1[row, p] @ direction, embedded, retain_graph=True)
            depends = set(np.flatnonzero(grad[row].abs().sum(-1).numpy() > 0).tolist())
            children = set(np.flatnonzero(sequence.popped_at == p).tolist())
            assert depends == children | {int(p)}, (row, p)
            assert grad[np.arange(len(trees)) != row].abs().sum() == 0
            opener = min(children)
            assert sequence.input_types[opener] == 2  # the constituent's opening nonterminal
            checked += 1
    assert checked == sum(int(s.compose.sum()) for s in sequences)


def _reference_txl(model: TransformerGrammar, batch) -> torch.Tensor:
    """A Transformer-XL forward written out over whole sequences: causal mask, relative positions
    the plain distances i - j (nothing clipped), post-LN."""
    inputs, position = batch["inputs"].long(), batch["position"]
    mask = (position[:, None, :] <= position[:, :, None]) & (position[:, None, :] >= 0)
    mask = mask & (position[:, :, None] >= 0)
    distance = position[:, :, None] - position[:, None, :]
    unclipped = RelativePositions(model.config.d_model, int(distance.min()), int(distance.max()))
    x = model.embedding(inputs) * math.sqrt(model.config.d_model)
    for block in model.transformer.blocks:
        empty = x[:, :0]
        attended = _reference(block.attention, x, empty, mask[:, None], distance, unclipped)
        x = block.attention_norm(x + attended)
        x = block.ff_norm(x + block.ff(x))
    return torch.nn.functional.linear(x, model.embedding.weight, model.output_bias)


@pytest.mark.parametrize("model_name", ["txl-trees", "txl-terminals", "tg"])
def test_causal_linear_configuration_is_transformer_xl(vocab, trees, model_name):
    """TG's attention given a TXL input (no COMPOSE, nothing popped) and linear positions is TXL."""
    txl = _model(vocab, "txl-trees" if model_name == "tg" else model_name)
    model = _model(vocab, model_name, positions="linear")
    model.load_state_dict(txl.state_dict())
    batch = _one_batch(txl, trees)
    logits, _ = model(batch)
    real = batch["position"] >= 0
    torch.testing.assert_close(logits[real], _reference_txl(txl, batch)[real], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("model_name", ["txl-trees", "txl-terminals"])
def test_txl_recipes_score_like_transformer_xl_at_every_distance(vocab, model_name):
    """The TXL recipes' model, over sequences longer than a segment (the second reads the first
    from memory), gives the log-probabilities of a Transformer-XL over the whole sequence with the
    distances i - j unclipped: distances far beyond TG's depth clip of 62 keep their own vector."""
    model = _recipe_model(vocab, model_name)
    with torch.no_grad():  # position terms as large as training makes them: a wrong vector shows
        for block in model.transformer.blocks:
            block.attention.position.weight.normal_(std=0.5)
            block.attention.content_bias.normal_()
            block.attention.position_bias.normal_()
    sequences = model.sequences([parse_tree(text) for text in LONG_TREES])
    lengths = sequences.lengths
    assert lengths.max() > model.config.segment_length
    assert lengths.max() <= model.config.segment_length + model.config.memory_length
    assert lengths.min() - 1 > 62  # the largest distance in every sequence
    got = model.token_logprobs(sequences)

    width = int(lengths.max())
    inputs = torch.full((len(lengths), width), PAD_ID)
    labels = torch.full((len(lengths), width), PAD_ID)
    position = torch.full((len(lengths), width), -1)
    for i, n in enumerate(lengths):
        inputs[i, :n] = torch.from_numpy(sequences[i].inputs.astype(np.int64))
        labels[i, :n] = torch.from_numpy(sequences[i].labels.astype(np.int64))
        position[i, :n] = torch.arange(n)
    with torch.no_grad():
        logits = _reference_txl(model, {"inputs": inputs, "position": position})
    expected = torch.log_softmax(logits, dim=-1).gather(-1, labels[..., None])[..., 0]
    expected = expected.masked_fill(labels == PAD_ID, 0.0)
    for i, n in enumerate(lengths):
        assert np.count_nonzero(got[i]) > n // 2
        np.testing.assert_allclose(got[i], expected[i, :n].numpy(), atol=1e-4)


@pytest.mark.parametrize(
    ("model_name", "expected"),
    [("tg", (-1, 62)), ("txl-trees", (0, 256 + 256 - 1)), ("txl-terminals", (0, 256 + 256 - 1))],
)
def test_recipes_clip_depths_to_62_and_cover_every_linear_distance(vocab, model_name, expected):
    """TG's depth differences take 64 buckets, [-1, 62], as the authors'; the TXL baselines' table
    runs from 0 to the farthest key of a query's segment (256) and memory (256)."""
    positions = _recipe_model(vocab, model_name).relative_positions
    assert (positions.lowest, positions.highest) == expected
    distance = torch.tensor([0, 62, 63, 200, 511])
    buckets = positions.buckets(distance)
    if model_name == "tg":
        assert buckets.tolist() == [1, 63, 63, 63, 63]
    else:
        assert buckets.tolist() == distance.tolist()


def test_a_txl_model_saved_with_a_clip_range_keeps_it(vocab, trees, tmp_path):
    """A config.json that sets relative_min/relative_max (as every TXL model saved while linear
    distances were clipped to [-1, 62] does) loads and clips as it says."""
    _model(vocab, "txl-trees").save_pretrained(tmp_path / "a")
    document = json.loads((tmp_path / "a" / "config.json").read_text())
    assert document["config"]["relative_min"] is None and document["config"]["relative_max"] is None
    document["config"].update(relative_min=-1, relative_max=62)
    (tmp_path / "a" / "config.json").write_text(json.dumps(document))
    loaded = load_model(tmp_path / "a")
    assert loaded.config.relative_range == (-1, 62)
    assert loaded.relative_positions.buckets(torch.tensor([62, 63, 200])).tolist() == [63, 63, 63]


@pytest.mark.parametrize("name", ["tg", "txl-trees", "txl-terminals"])
def test_recipes_drop_attention_probabilities_in_training_only(vocab, trees, name):
    """Every TG/TXL recipe has the authors' attention dropout, 0.1, and the attention kernel the
    model uses applies it in training mode (two passes differ with every other dropout off) and
    not in eval mode."""
    for scale in ("tiny", "ptb", "bllip"):
        config = yaml.safe_load((CONFIGS / f"{name}-{scale}.yaml").read_text())["model"]
        assert config["attention_dropout"] == 0.1, scale
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        no_other = {"dropout": 0.0, "ff_dropout": 0.0, "position_dropout": 0.0}
        model = _recipe_model(vocab, name, **no_other).to(device)
        assert model.config.attention_dropout == 0.1
        batch = _one_batch(model, trees).to(device)
        real = batch["position"] >= 0

        def twice():
            with torch.no_grad():
                return model(batch)[0][real], model(batch)[0][real]

        model.train()
        a, b = twice()
        assert (a - b).abs().max() > 1e-3, device
        model.eval()
        a, b = twice()
        torch.testing.assert_close(a, b, rtol=0, atol=0)
        # The control: without attention dropout nothing else is random in training mode.
        without = _recipe_model(vocab, name, **no_other, attention_dropout=0.0).to(device).train()
        with torch.no_grad():
            torch.testing.assert_close(without(batch)[0][real], without(batch)[0][real], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["tg", "txl-trees", "txl-terminals"])
def test_recipes_drop_out_where_the_authors_code_does(vocab, name):
    """The authors' one rate also drops the feed-forward hidden units and the relative position
    vectors (``layers.transformer``), in the paper-size recipes (not the tiny ones, where it slows
    learning); the GPT-2-style models (``action_lm``) drop neither."""
    for scale in ("ptb", "bllip"):
        config = yaml.safe_load((CONFIGS / f"{name}-{scale}.yaml").read_text())["model"]
        assert config["ff_dropout"] == config["position_dropout"] == config["dropout"] == 0.1, scale
    tiny = yaml.safe_load((CONFIGS / f"{name}-tiny.yaml").read_text())["model"]
    assert tiny["ff_dropout"] == tiny["position_dropout"] == 0.0  # measured: docs/depth.md
    model = _recipe_model(vocab, name, scale="ptb", d_model=16, n_layers=2, n_heads=2, d_ff=32)
    rate = model.config.dropout
    for block in model.transformer.blocks:
        assert block.attention.position_dropout == rate
        assert [m.p for m in block.ff.modules() if isinstance(m, torch.nn.Dropout)] == [rate]
    from syntaxlm.models.action_lm import ActionLM, ActionLMConfig

    gpt2 = ActionLM(ActionLMConfig(model="lm", d_model=16, n_heads=2, d_ff=32), {"vocab": vocab})
    for block in gpt2.transformer.blocks:
        assert block.attention.position is None
        assert not any(isinstance(m, torch.nn.Dropout) for m in block.ff.modules())


@pytest.mark.parametrize("model_name", ["tg", "txl-trees", "txl-terminals"])
def test_segments_with_memory_score_like_one_segment(vocab, trees, model_name):
    """With a memory long enough to lose nothing, cutting sequences into short segments changes no
    log-probability: the memory gather and its masks reproduce whole-sequence attention."""
    whole = _model(vocab, model_name, segment_length=256, memory_length=0)
    cut = _model(vocab, model_name, segment_length=5, memory_length=64)
    cut.load_state_dict(whole.state_dict())
    sequences = whole.sequences(trees)
    for a, b in zip(whole.token_logprobs(sequences), cut.token_logprobs(sequences), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
        assert np.count_nonzero(a) > 0


@pytest.mark.parametrize("model_name", ["tg", "txl-trees"])
def test_stream_batches_drop_only_columns_nobody_uses(vocab, trees, model_name):
    """Stream batches lose the segment positions after every row's end and the memory slots before
    every row's memory; the losses and the memories passed on stay those of the full batch."""
    model = _model(vocab, model_name, segment_length=12, memory_length=16)
    corpus = model.prepare([*trees, *(parse_tree(text) for text in LONG_TREES)])
    assert corpus.order == "streams"
    full_state = trimmed_state = None
    narrower = 0
    with torch.no_grad():
        for batch in corpus.batches(3, seed=1):
            logits, layer_inputs = model(batch, full_state)
            labels = batch["labels"].long()
            targets = labels != PAD_ID
            expected = torch.nn.functional.cross_entropy(logits[targets], labels[targets], reduction="sum")
            out = model.loss(batch, trimmed_state)
            torch.testing.assert_close(out.sums["lm"], expected, rtol=1e-5, atol=1e-4)
            full_state = next_memory(full_state, layer_inputs, batch["next_memory_source"])
            for full, trimmed in zip(full_state, out.state, strict=True):
                torch.testing.assert_close(trimmed, full, rtol=1e-5, atol=1e-5)
            trimmed_state = out.state
            columns, _ = _used_columns(batch, full_state)
            narrower += columns["position"].shape[1] < 12 or columns["memory_position"].shape[1] < 16
    assert narrower > 0


def test_smart_memory_keeps_what_previous_memory_loses(vocab, trees):
    """With a memory shorter than the sequence (but as long as its stack), TG's smart memory keeps
    every position still attendable; the previous-M rule does not."""
    whole = _model(vocab, "tg", segment_length=256, memory_length=0)
    smart = _model(vocab, "tg", segment_length=4, memory_length=8)
    previous = _model(vocab, "tg", segment_length=4, memory_length=8, smart_memory=False)
    for other in (smart, previous):
        other.load_state_dict(whole.state_dict())
    sequences = whole.sequences(trees[:1])
    (a,), (b,), (c,) = (m.token_logprobs(sequences) for m in (whole, smart, previous))
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert not np.allclose(a, c, atol=1e-3)


@pytest.mark.parametrize("model_name", ["tg", "txl-trees", "txl-terminals"])
def test_word_logprobs_add_up_to_the_loss(vocab, trees, model_name):
    model = _model(vocab, model_name)
    sentences = [tree.leaves() for tree in trees]
    given = None if model_name == "txl-terminals" else trees
    scores = model.word_logprobs(sentences, trees=given, eos=True)
    assert [len(s) for s in scores] == [len(w) + 1 for w in sentences]
    with torch.no_grad():
        out = model.loss(_one_batch(model, trees))
    total = sum(float(s.sum()) for s in scores)
    assert total == pytest.approx(-float(out.sums["lm"]), rel=1e-5)
    assert all((s[:-1] < 0).all() for s in scores)
    without_end = model.word_logprobs(sentences, trees=given)  # the same batches: the same bits
    assert all(torch.equal(a, b[:-1]) for a, b in zip(without_end, scores, strict=True))


def test_joint_models_need_trees_to_score_words(vocab, trees):
    with pytest.raises(ValueError, match="joint model"):
        _model(vocab, "tg").word_logprobs([trees[0].leaves()])


def test_compose_positions_are_not_predicted(vocab, trees):
    model = _model(vocab, "tg")
    batch = _one_batch(model, trees)
    assert (batch["labels"][batch["compose"].bool()] == 0).all()
    assert batch.counts["lm"] == sum(len(tree.leaves()) + 2 * len(list(tree.subtrees())) for tree in trees)


@pytest.mark.parametrize(
    "options", [{"positions": "none"}, {"positions": "linear"}, {"separate_compose": True}, {"pre_ln": True}]
)
def test_ablations_train(vocab, trees, options):
    model = _model(vocab, "tg", **options).train()
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = _one_batch(model, trees)
    losses = []
    for _ in range(30):
        out = model.loss(batch)
        loss = out.sums["lm"] / out.counts["lm"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_separate_compose_weights_only_change_compose_rows(vocab, trees):
    model = _model(vocab, "tg", separate_compose=True, n_layers=1)
    batch = _one_batch(model, trees)
    before, _ = model(batch)
    with torch.no_grad():
        model.transformer.blocks[0].compose_attention.out.bias.normal_()
    after, _ = model(batch)
    changed = (before - after).abs().sum(-1) > 1e-6
    assert torch.equal(changed, batch["compose"].bool())


def test_save_and_load_round_trip(vocab, trees, tmp_path):
    model = _model(vocab, "tg")
    model.save_pretrained(tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    batch = _one_batch(model, trees)
    torch.testing.assert_close(loaded(batch)[0], model(batch)[0])
    assert loaded.config == model.config


def test_loading_weights_of_another_shape_names_the_tensor(vocab, tmp_path):
    _model(vocab, "tg", d_model=32).save_pretrained(tmp_path / "a")
    config = (tmp_path / "a" / "config.json").read_text().replace('"d_ff": 64', '"d_ff": 128')
    (tmp_path / "a" / "config.json").write_text(config)
    with pytest.raises(ModelFileError, match=r"shape mismatch .*ff\.0\.weight"):
        load_model(tmp_path / "a")


@pytest.mark.parametrize(
    "vocabularies, message",
    [
        (["ocab"], "names the vocabulary 'ocab', but the model folder has no folder 'ocab'"),
        (["../vocab"], "names the vocabulary '../vocab'"),
        ("vocab", "vocabularies: 'vocab'; expected a list of the folder's vocabulary folders"),
        ([], "a tg model needs the vocabulary 'vocab', which is not among the vocabularies named"),
    ],
)
def test_a_config_naming_the_wrong_vocabularies_is_a_located_error(tmp_path, vocab, vocabularies, message):
    _model(vocab, "tg", d_model=32).save_pretrained(tmp_path / "a")
    document = json.loads((tmp_path / "a" / "config.json").read_text())
    document["vocabularies"] = vocabularies
    (tmp_path / "a" / "config.json").write_text(json.dumps(document))
    with pytest.raises(ModelFileError, match="config.json: " + re.escape(message)):
        load_model(tmp_path / "a")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"positions": "depth", "model": "txl-trees"}, "needs the TG input"),
        ({"positions": "tree"}, "positions must be one of"),
        ({"d_model": 30}, "multiple of"),
        ({"segment_length": 0}, "segment_length"),
        ({"relative_min": 5, "relative_max": 2}, "must not exceed"),
        ({"relative_min": 63}, r"relative_min \(63\) must not exceed model.relative_max \(62\)"),
        ({"model": "txl-trees", "segment_length": 8, "memory_length": 8, "relative_min": 16}, r"\(15\)"),
        ({"relative_max": 62.5}, "relative_max must be int or null"),
        ({"relative_min": True}, "relative_min must be int or null"),
        ({"n_layer": 2}, "unknown key"),
        ({"d_model": "big"}, "d_model must be int"),
    ],
)
def test_bad_configs_are_named(vocab, options, message):
    with pytest.raises(ConfigError, match=message):
        _model(vocab, **options)
