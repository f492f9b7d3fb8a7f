"""The report's figures: drawn from numbers, saved as PNG."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxlm.report.plots import (
    attention_mask_figure,
    attention_weights_figure,
    binary_tree_figure,
    circuit_accuracy_figure,
    distance_tree_figure,
    head_masks_figure,
    perplexity_vs_sg_figure,
    save_figure,
    surprisal_figure,
    training_curves_figure,
)
from syntaxlm.structure.actions import read_actions
from syntaxlm.structure.tg import tg_sequence

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def figure_2_sequence():
    actions = read_actions("(S (NP the blue bird NP) (VP sings VP) S)")
    table: dict[str, int] = {}
    ids = [table.setdefault(token, len(table) + 4) for token in actions.tokens]
    spelling = {i: token for token, i in table.items()} | {1: "<s>"}
    return tg_sequence(ids, actions.kinds), spelling.__getitem__


def test_attention_mask_colours_stack_and_compose_rows(tmp_path):
    sequence, spell = figure_2_sequence()
    figure = attention_mask_figure(sequence, spell)
    cells = np.asarray(figure.axes[0].images[0].get_array())
    mask = sequence.attention_mask()
    assert np.array_equal(cells > 0, mask)
    assert set(np.unique(cells[sequence.compose][mask[sequence.compose]])) == {2}  # COMPOSE rows orange
    assert set(np.unique(cells[~sequence.compose][mask[~sequence.compose]])) == {1}
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()][:3] == ["<s>", "(S", "(NP"]
    path = save_figure(figure, tmp_path / "plots" / "mask.png")
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    assert figure.axes[0].get_legend() is not None


def test_a_causal_mask_has_no_stack_compose_legend():
    actions = read_actions("(S (NP the bird NP) S)")
    sequence = tg_sequence(list(range(4, 4 + len(actions.tokens))), actions.kinds, "txl-trees")
    figure = attention_mask_figure(sequence, str)
    cells = np.asarray(figure.axes[0].images[0].get_array())
    assert np.array_equal(cells > 0, np.tri(len(sequence), dtype=bool))
    assert figure.axes[0].get_legend() is None and figure.axes[0].get_title() == "causal attention"


def test_distance_tree_draws_a_binary_tree_over_the_words(tmp_path):
    words = ["the", "blue", "bird", "sings", "on", "the", "tree"]
    figure = distance_tree_figure(words, [0, 1, 0.5, 3, 2, 1, 0.4])
    tree_axes, bar_axes = figure.axes
    assert len(tree_axes.lines) == 2 * (len(words) - 1)  # each of n - 1 binary nodes: two edges
    assert [text.get_text() for text in tree_axes.texts] == words
    assert [bar.get_height() for bar in bar_axes.patches] == [0, 1, 0.5, 3, 2, 1, 0.4]
    assert save_figure(figure, tmp_path / "tree.png").read_bytes().startswith(PNG_SIGNATURE)


def test_circuit_bars_one_per_model_and_circuit(tmp_path):
    accuracy = {"TG": {"Agreement": 0.8, "Licensing": 0.6}, "TXL": {"Agreement": 0.7}}
    figure = circuit_accuracy_figure(accuracy, circuits=["Licensing", "Agreement"])
    heights = [bar.get_height() for bar in figure.axes[0].patches]
    assert heights[:2] == [0.6, 0.8] and heights[3] == 0.7 and np.isnan(heights[2])
    assert save_figure(figure, tmp_path / "sg.png").stat().st_size > 1000


def test_circuit_bars_show_chance_zeros_and_intervals(tmp_path):
    from syntaxlm.eval.intervals import Interval

    accuracy = {"TG": {"a": 0.8, "b": 0.0}, "TXL": {"a": 0.7, "b": 0.5}}
    intervals = {"TG": {"a": Interval(0.8, 0.6, 0.95)}, "TXL": {"a": Interval(0.7, 0.5, 0.9)}}
    chance = {"a": 0.25, "b": 0.5}
    figure = circuit_accuracy_figure(accuracy, circuits=["a", "b"], intervals=intervals, chance=chance)
    axes = figure.axes[0]
    dashed = [line for line in axes.lines if line.get_linestyle() == "--"]
    assert sorted(line.get_ydata()[0] for line in dashed) == [0.25, 0.5]  # one chance level per group
    stubs = [line for line in axes.lines if line.get_linestyle() == "-" and list(line.get_ydata()) == [0, 0]]
    assert len(stubs) == 1  # TG's 0 on b is drawn
    bars = axes.containers  # the two bar groups and the two error-bar sets
    errors = [c for c in bars if c.__class__.__name__ == "ErrorbarContainer"]
    assert len(errors) == 2
    segments = errors[0].lines[2][0].get_segments()
    assert np.allclose(segments[0][:, 1], [0.6, 0.95])  # TG's interval on a
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["TG", "TXL", "chance: conditions not told apart"]
    one_level = circuit_accuracy_figure(accuracy, chance=0.5)
    assert "chance (0.50)" in one_level.legends[0].get_texts()[-1].get_text()
    assert save_figure(figure, tmp_path / "sg.png").stat().st_size > 1000
    # Many groups wrap onto several rows, each readable.
    many = {m: {f"suite{k}": 0.5 for k in range(17)} for m in "ABCDEFGH"}
    assert len(circuit_accuracy_figure(many).axes) == 3


def test_perplexity_and_surprisal_figures(tmp_path):
    figure = perplexity_vs_sg_figure({"TG": (61.8, 0.82), "TXL": (62.6, 0.61)})
    assert [text.get_text() for text in figure.axes[0].texts] == ["TG", "TXL"]
    save_figure(figure, tmp_path / "ppl.png")
    words = ["the", "keys", "to", "the", "cabinet", "are"]
    figure = surprisal_figure(words, {"TG": [5, 8, 3, 2, 9, 4], "LM": [4, 9, 2, 3, 8, 7]})
    assert len(figure.axes[0].lines) == 2
    save_figure(figure, tmp_path / "surprisal.png")
    with pytest.raises(ValueError, match="LM: 2 surprisals for 6 words"):
        surprisal_figure(words, {"LM": [1, 2]})


def test_training_curves_figure(tmp_path):
    figure = training_curves_figure(
        {"tg": ([100, 200, 300], [4.0, 3.1, 2.7]), "lm": ([100, 200], [5.0, 4.2])}, baselines={"unigram": 5.5}
    )
    axes = figure.axes[0]
    assert [line.get_label() for line in axes.lines[:2]] == ["tg", "lm"]
    assert list(axes.lines[2].get_ydata()) == [5.5, 5.5]
    assert save_figure(figure, tmp_path / "curves.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="lm: 1 steps for 2 losses"):
        training_curves_figure({"lm": ([1], [2.0, 3.0])})


def test_binary_tree_figure(tmp_path):
    words = ["a", "b", "c", "d"]
    figure = binary_tree_figure(words, [[0, 1], [2, 3]], title="induced")
    axes = figure.axes[0]
    assert len(axes.lines) == 6 and [t.get_text() for t in axes.texts] == words
    assert axes.get_title() == "induced"
    assert save_figure(figure, tmp_path / "tree.png").read_bytes().startswith(PNG_SIGNATURE)


def test_head_masks_figure_one_panel_per_head(tmp_path):
    tokens = ["<s>", "NT(S)", "a"]
    causal = np.tri(3, dtype=bool)
    stack = np.eye(3, dtype=bool)
    figure = head_masks_figure({"head 0": causal, "head 1": stack}, tokens, title="heads")
    assert [axes.get_title() for axes in figure.axes] == ["head 0", "head 1"]
    assert np.array_equal(np.asarray(figure.axes[1].images[0].get_array()), stack.astype(int))
    assert save_figure(figure, tmp_path / "heads.png").read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(ValueError, match="head 0: a \\(2, 2\\) mask for 3 tokens"):
        head_masks_figure({"head 0": np.ones((2, 2))}, tokens)


def test_attention_weights_figure_leaves_masked_cells_white(tmp_path):
    weights = np.array([[1.0, 0.0], [0.25, 0.75]])
    figure = attention_weights_figure(weights, ["<s>", "a"], title="layer 0, head 0")
    drawn = figure.axes[0].images[0].get_array()
    assert drawn.mask.tolist() == [[False, True], [False, False]]
    assert np.array_equal(np.ma.filled(drawn, 0), weights)
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["0 <s>", "1 a"]
    assert save_figure(figure, tmp_path / "attention.png").read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(ValueError, match="for 3 x 3 tokens"):
        attention_weights_figure(weights, ["a", "b", "c"])
