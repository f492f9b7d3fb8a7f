"""Figures drawn from saved models (``syntaxlm plot ...``, ``report --figure-sentence``): the numbers
drawn are the model's own (Scorer surprisals, PRPN distances, SOM trees, structure masks, recorded
attention), the PNGs are images, and models without the figure's ingredient are refused clearly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from matplotlib.image import imread
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.inference import BeamSettings, Scorer
from syntaxlm.models import (
    DISTANCES,
    INDUCED_TREE,
    MODEL_CARDS,
    build_model,
    load_model,
    model_class,
    model_config,
)
from syntaxlm.models.layers.attention import record_attention
from syntaxlm.report.model_figures import (
    FigureError,
    attention_figure,
    attention_weights,
    induced_structure_figure,
    load_models,
    model_name,
    nested_indices,
    structure_mask_figure,
    surprisal_comparison,
    tree_in_model_view,
)
from syntaxlm.report.report import make_report
from syntaxlm.structure.actions import encode_actions, tree_to_actions
from syntaxlm.structure.plm_mask import plm_mask_input
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train.run_folder import save_model_folder
from syntaxlm.trees.ptb import parse_tree
from tests.test_cli import run

TREES = [
    "(S (NP the blue bird) (VP sings (PP with (NP the cat))) .)",
    "(S (NP a cat) (VP sees (NP the dog)) .)",
]
TREE = "(S (NP the cat) (VP chases (NP a bird)))"  # "chases" is not in the vocabulary
SENTENCE = "the cat chases a bird"
SMALL_BEAM = BeamSettings(10, 3, 1)
TRANSFORMER = {"d_model": 16, "n_layers": 2, "n_heads": 2, "d_ff": 32, "dropout": 0.0}
CONFIGS = {
    **{
        name: TRANSFORMER
        for name in ("tg", "txl-trees", "txl-terminals", "lm", "plm", "plm-mask", "sclm-past")
    },
    "prpn": {"d_model": 16, "hidden_size": 16, "n_layers": 2, "lookback": 2, "memory_slots": 4},
    "esom": {"d_model": 16, "d_syntactic": 4, "dropout": 0.0, "output_dropout": 0.0},
    "lstm": {"d_model": 16, "hidden_size": 16},
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Untrained tiny models of every family the figures treat, saved as a trainer saves them."""
    folder = tmp_path_factory.mktemp("model-figures")
    (folder / "train.trees").write_text("\n".join(TREES) + "\n")
    vocab = build_vocabulary(
        folder / "train.trees", folder / "vocab", kind="word", min_freq=1, pos_tags=False
    )
    trees = [parse_tree(text) for text in TREES]
    for name, values in CONFIGS.items():
        torch.manual_seed(0)
        config = model_config({"model": name, **values})
        model = build_model(config, model_class(name).vocabularies_for(config, trees, vocab))
        save_model_folder(model.eval(), folder / name / "best")
    return folder


def model(saved, name):
    return load_model(saved / name / "best")


def is_png(path) -> bool:
    return path.is_file() and path.read_bytes().startswith(b"\x89PNG") and imread(path).ndim == 3


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


# --- the cards ---------------------------------------------------------------------------------------


def test_cards_say_what_the_models_do(saved):
    """A model's card (the registry's facts the figures ask) agrees with the model: joint exactly
    when its action grammar builds trees, a tree figure exactly when it induces trees."""
    assert list(MODEL_CARDS) == [card.name for card in MODEL_CARDS.values()]
    for name in CONFIGS:
        m = model(saved, name)
        assert m.card is MODEL_CARDS[name]
        assert m.joint == (m.action_grammar().style != "words"), name
        assert bool(m.card.figures & {DISTANCES, INDUCED_TREE}) == m.induces_trees, name
        assert m.card.baseline is None or not MODEL_CARDS[m.card.baseline].joint, name


# --- surprisal -----------------------------------------------------------------------------------------


def test_surprisal_lines_are_the_scorers_values(saved, tmp_path):
    words = SENTENCE.split()
    models = load_models([saved / name / "best" for name in ("tg", "lm", "prpn")])
    assert list(models) == ["tg", "lm", "prpn"]  # RUN/best is named by its run
    figure = surprisal_comparison(models, words, beam=SMALL_BEAM)
    lines = figure.axes[0].lines
    assert [line.get_label() for line in lines] == ["tg (beam)", "lm (exact)", "prpn (exact)"]
    for line, m in zip(lines, models.values()):
        expected = Scorer(m, beam=SMALL_BEAM).word_score([words], surprisal=True, unit="bits")[0]
        assert list(line.get_ydata()) == pytest.approx([value for _, value in expected])
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == words

    out = tmp_path / "surprisal.png"
    result = invoke(
        "plot", "surprisal", saved / "lm" / "best", saved / "plm" / "best", "--sentence", SENTENCE,
        "--out", out, "--action-beam", 10, "--word-beam", 3, "--fast-track", 1,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert is_png(out)
    exact = invoke("plot", "surprisal", saved / "tg" / "best", "--sentence", SENTENCE, "--method", "exact")
    assert "needs a words-only model" in str(exact.exception)


def test_model_names_in_legends(tmp_path):
    assert model_name(tmp_path / "tg-seed1" / "best") == "tg-seed1"
    assert model_name(tmp_path / "my-model") == "my-model"


# --- distances and induced trees -----------------------------------------------------------------------


def test_prpn_figure_draws_its_own_distances(saved, tmp_path):
    prpn, words = model(saved, "prpn"), SENTENCE.split()
    figure = induced_structure_figure(prpn, words)
    tree_axes, bar_axes = figure.axes
    [distances] = prpn.syntactic_distances([words])
    assert [bar.get_height() for bar in bar_axes.patches] == pytest.approx(list(distances))
    assert len(tree_axes.lines) == 2 * (len(words) - 1)
    out = tmp_path / "prpn.png"
    assert (
        invoke("plot", "distances", saved / "prpn" / "best", "--sentence", SENTENCE, "--out", out).exit_code
        == 0
    )
    assert is_png(out)


def test_prpn_figure_from_near_equal_distances_says_its_splits_are_tie_breaks(saved):
    """A parser head that gives every word about the same distance (as early in training): the
    tree is drawn, and the figure says its splits are tie-breaks."""
    prpn, words = model(saved, "prpn"), "the officials near the boy have praised themselves .".split()
    with torch.no_grad():
        prpn.parser_heads.weight.mul_(1e-3)
    [distances] = prpn.syntactic_distances([words])
    assert np.ptp(distances) < 0.01 * distances.max()
    figure = induced_structure_figure(prpn, words)
    [note] = figure.texts
    assert "every split is in effect a tie-break" in note.get_text()
    assert len(figure.axes[0].collections[0].get_offsets()) == len(words) - 1  # every node marked


def test_som_figure_draws_its_induced_tree(saved, tmp_path):
    som, words = model(saved, "esom"), SENTENCE.split()
    [tree] = som.induced_trees([words])
    figure = induced_structure_figure(som, words)
    assert len(figure.axes) == 1 and [t.get_text() for t in figure.axes[0].texts] == words
    assert len(figure.axes[0].lines) == 2 * (len(words) - 1)
    assert nested_indices(parse_tree("(X (X a b) (X c (X d e)))")) == [[0, 1], [2, [3, 4]]]
    assert nested_indices(tree) == nested_indices(parse_tree(tree.to_bracket()))
    out = tmp_path / "som.png"
    assert (
        invoke("plot", "distances", saved / "esom" / "best", "--sentence", SENTENCE, "--out", out).exit_code
        == 0
    )
    assert is_png(out)


def test_a_model_without_trees_is_refused(saved, tmp_path):
    with pytest.raises(FigureError, match="lstm induces no trees"):
        induced_structure_figure(model(saved, "lstm"), SENTENCE.split())
    result = run(
        "plot", "distances", saved / "tg" / "best", "--sentence", SENTENCE, "--out", tmp_path / "x.png"
    )
    assert result.returncode == 2 and "tg induces no trees" in result.stderr
    assert not (tmp_path / "x.png").exists()


# --- structure masks -----------------------------------------------------------------------------------


def test_tg_mask_is_the_models_own_transform(saved, tmp_path):
    tree = parse_tree(TREE)
    for name in ("tg", "txl-trees"):
        m = model(saved, name)
        sequence = m.sequences([tree])[0]
        figure = structure_mask_figure(m, tree)
        cells = np.asarray(figure.axes[0].images[0].get_array())
        assert np.array_equal(cells > 0, sequence.attention_mask())
        assert np.array_equal(cells.max(axis=1) == 2, sequence.compose.astype(bool))  # COMPOSE rows
        labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
        assert labels == [m.vocab.token(int(i)) for i in sequence.inputs]
    assert labels[:3] == ["<s>", "(S", "(NP"] and "chases" not in labels  # unseen: the vocabulary's UNK class
    assert not np.triu(cells, 1).any()  # TXL (trees): causal
    out = tmp_path / "mask.png"
    assert invoke("plot", "mask", saved / "tg" / "best", "--tree", TREE, "--out", out).exit_code == 0
    assert is_png(out)
    penn_tree = "(S (NP (DT the) (NN cat)) (VP (VBZ sleeps)))"
    penn = invoke(
        "plot", "mask", saved / "tg" / "best", "--tree", penn_tree, "--penn", "--out", tmp_path / "penn.png"
    )
    assert penn.exit_code == 0, penn.output


def test_plm_mask_heads_are_its_masks(saved):
    m, tree = model(saved, "plm-mask"), parse_tree(TREE)
    figure = structure_mask_figure(m, tree)
    expected = plm_mask_input(encode_actions(tree_to_actions(tree, "rnng"), m.vocab)).head_masks(2)
    for head, axes in enumerate(figure.axes):
        assert np.array_equal(np.asarray(axes.images[0].get_array()).astype(bool), expected[head])
    assert [axes.get_title() for axes in figure.axes] == ["head 0 (buffer)", "head 1 (stack)"]
    for name in ("plm", "lm", "prpn"):
        with pytest.raises(FigureError, match=f"not available for this model \\({name}\\)"):
            structure_mask_figure(model(saved, name), tree)


# --- attention -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tg", "txl-trees", "txl-terminals", "lm", "plm", "plm-mask", "sclm-past"])
def test_attention_rows_sum_to_one_and_follow_the_mask(saved, name):
    m, tree = model(saved, name), parse_tree(TREE)
    for layer in (0, 1):
        attention = attention_weights(m, layer=layer, tree=tree)
        weights, mask = attention.weights, np.broadcast_to(attention.mask, attention.weights.shape)
        assert weights.shape == (2, len(attention.tokens), len(attention.tokens))
        assert np.allclose(weights.sum(-1), 1, atol=1e-5)
        assert not weights[~mask].any() and (weights[mask] > 0).all()
    figure = attention_figure(m, layer=1, head=1, tree=tree)
    assert np.allclose(np.ma.filled(figure.axes[0].images[0].get_array(), 0), weights[1])


def test_recorded_attention_is_what_the_layer_computes(saved):
    """Layer 0 of the plain LM by hand (pre-LN, absolute positions, causal), and the outputs
    unchanged while recording."""
    m = model(saved, "lm")
    words = SENTENCE.split()
    attention = attention_weights(m, layer=0, words=words)
    ids = torch.tensor([[m.vocab.index(t) for t in attention.tokens]])
    block = m.transformer.blocks[0]
    with torch.no_grad():
        x = block.attention_norm(m.input_vectors(ids, torch.arange(ids.shape[1])))
        q = block.attention._heads(block.attention.query(x))
        k, _ = block.attention.keys_values(x)
        scores = q @ k.transpose(-1, -2) / math.sqrt(block.attention.d_head)
        causal = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).tril()
        expected = scores.masked_fill(~causal, float("-inf")).softmax(-1)[0]
    assert np.allclose(attention.weights, expected.numpy(), atol=1e-6)
    before = m.word_logprobs([words])[0]
    with record_attention(m) as recorded:
        during = m.word_logprobs([words])[0]
    # Recording only adds a computation beside the forward pass, which is unchanged: the same bits.
    assert torch.equal(before, during) and len(recorded["transformer.blocks.0.attention"]) == 1
    assert all(module.recorded is None for module in m.modules() if hasattr(module, "recorded"))


def test_attention_errors(saved, tmp_path):
    tree = parse_tree(TREE)
    with pytest.raises(FigureError, match="transformer models"):
        attention_weights(model(saved, "prpn"), layer=0, words=SENTENCE.split())
    with pytest.raises(FigureError, match="2 layers"):
        attention_weights(model(saved, "lm"), layer=2, words=SENTENCE.split())
    with pytest.raises(FigureError, match="2 heads"):
        attention_figure(model(saved, "lm"), layer=0, head=5, words=SENTENCE.split())
    with pytest.raises(FigureError, match="tg reads words and trees: give a tree"):
        attention_weights(model(saved, "tg"), layer=0, words=SENTENCE.split())
    with pytest.raises(FigureError, match="words differ"):
        attention_weights(model(saved, "lm"), layer=0, words=["a", "cat"], tree=tree)
    out = tmp_path / "attention.png"
    result = invoke("plot", "attention", saved / "txl-terminals" / "best", "--sentence", SENTENCE,
                    "--layer", 1, "--head", 0, "--out", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert is_png(out)
    both = invoke(
        "plot", "attention", saved / "lm" / "best", "--out", out, "--tree", TREE, "--sentence", "a b"
    )
    assert both.exit_code != 0 and "one of --tree and --sentence" in both.output
    with pytest.raises(FigureError, match="nothing is left"):
        tree_in_model_view("(S (-NONE- *))", penn=True)


# --- the report ----------------------------------------------------------------------------------------


def test_report_draws_the_figures_of_the_runs_models(saved, tmp_path):
    runs = [saved / "lm", saved / "prpn", saved / "esom", tmp_path / "no-model"]
    runs[-1].mkdir()
    for folder in runs:
        (folder / "config.json").write_text(json.dumps({"model": folder.name, "seed": 0}))
    out = tmp_path / "report"
    result = invoke("report", *runs, "--out", out, "--figure-sentence", SENTENCE)
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert "## Figures from the models" in text and f"*{SENTENCE}*" in text
    assert "![per-word surprisal](surprisal.png)" in text and "No saved model (`best/`) in" in text
    for name in ("surprisal", "structure-prpn", "structure-esom"):
        assert is_png(out / f"{name}.png")
    assert not (out / "structure-lm.png").exists()
    plain = make_report(runs, tmp_path / "plain")  # without the option: result files only
    assert "Figures from the models" not in plain.read_text()
