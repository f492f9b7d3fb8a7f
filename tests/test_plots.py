"""The report's figures: drawn from numbers, saved as PNG."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from syntaxlm.errors import InputFormatError
from syntaxlm.report.plots import (
    attention_mask_figure,
    attention_weights_figure,
    binary_tree_figure,
    circuit_accuracy_figure,
    distance_tree_figure,
    head_masks_figure,
    perplexity_vs_sg_figure,
    read_loss_curves,
    save_figure,
    surprisal_figure,
    tie_break_spans,
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
    values = [text.get_text() for text in bar_axes.texts]  # each bar's value above it
    assert values == ["0.00", "1.00", "0.50", "3.00", "2.00", "1.00", "0.40"]
    assert not tree_axes.collections and not figure.texts  # distinct distances: no tie-break marks
    assert save_figure(figure, tmp_path / "tree.png").read_bytes().startswith(PNG_SIGNATURE)


def text_boxes(figure, texts):
    renderer = FigureCanvasAgg(figure).get_renderer()
    return [text.get_window_extent(renderer) for text in texts]


def overlapping(boxes):
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a.overlaps(b)]


LONG_WORDS = ["the", "officials", "near", "the", "boy", "have", "praised", "themselves", "."]


def test_tree_words_do_not_run_together():
    """Words of any length keep apart under the tree ("praised themselves", not "praisedthemselves")."""
    words = [*LONG_WORDS, "internationalisation", "a", "incomprehensibilities", "b"]
    for figure in (
        distance_tree_figure(words, np.linspace(0.1, 0.9, len(words))),
        binary_tree_figure(words, [0, [1, list(range(2, len(words)))]]),
    ):
        boxes = text_boxes(figure, figure.axes[0].texts)
        assert len(boxes) == len(words) and not overlapping(boxes)
        assert all(b.x0 - a.x1 > 5 for a, b in zip(boxes, boxes[1:]))  # a visible gap, in pixels


def test_a_tree_from_flat_distances_says_its_splits_are_tie_breaks(tmp_path):
    flat = [0.518, 0.523, 0.520, 0.517, 0.523, 0.513, 0.522, 0.518, 0.521]  # ~0.52 everywhere
    figure = distance_tree_figure(LONG_WORDS, flat)
    [note] = figure.texts
    assert "All 9 distances lie within 2% of each other (0.513 to 0.523)" in note.get_text()
    assert "tie-break" in note.get_text()
    circles = figure.axes[0].collections[0].get_offsets()
    assert len(circles) == len(LONG_WORDS) - 1  # every node
    # The note stands below the bars' word labels, not over them.
    renderer = FigureCanvasAgg(figure).get_renderer()
    assert note.get_window_extent(renderer).y1 < figure.axes[1].get_tightbbox(renderer).y0
    save_figure(figure, tmp_path / "flat.png")

    # One near-tie: only the nodes its split makes are marked, and the note counts them.
    figure = distance_tree_figure(LONG_WORDS[:4], [0.1, 0.745, 0.75, 0.2])
    [note] = figure.texts
    assert note.get_text().startswith("2 of the tree's 3 nodes (open circles) come from near-ties")
    assert len(figure.axes[0].collections[0].get_offsets()) == 2


def test_tie_break_spans_follow_the_parser():
    assert tie_break_spans([0.1, 0.9, 0.2, 0.5]) == set()
    assert tie_break_spans([0.5, 0.5, 0.5]) == {(0, 3), (1, 3)}
    # The root splits (0, 4) at word 1 by a hair, making (0, 4) and (1, 4); below, (2, 4) is clear.
    assert tie_break_spans([0.1, 0.9, 0.895, 0.2]) == {(0, 4), (1, 4)}
    assert tie_break_spans([1.0]) == set()


def test_circuit_bars_one_per_model_and_circuit(tmp_path):
    accuracy = {"TG": {"Agreement": 0.8, "Licensing": 0.6}, "TXL": {"Agreement": 0.7}}
    figure = circuit_accuracy_figure(accuracy, circuits=["Licensing", "Agreement"])
    heights = [bar.get_height() for bar in figure.axes[0].patches]
    assert heights[:2] == [0.6, 0.8] and heights[3] == 0.7 and np.isnan(heights[2])
    assert save_figure(figure, tmp_path / "sg.png").stat().st_size > 1000


def test_circuit_bars_of_eleven_models_have_eleven_colours():
    # The quickstart draws eleven models: the default cycle's ten colours would give two the same.
    accuracy = {f"model-{k}": {"Agreement": 0.5} for k in range(11)}
    figure = circuit_accuracy_figure(accuracy, circuits=["Agreement"])
    colours = {tuple(bar.get_facecolor()) for bar in figure.axes[0].patches}
    assert len(colours) == 11


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
    figure = perplexity_vs_sg_figure({"TG": (61.8, 0.82), "TXL": (62.6, 0.61)}, chance=0.5)
    axes = figure.axes[0]
    assert [text.get_text() for text in axes.texts] == ["chance 0.50", "TG", "TXL"]
    assert [line.get_ydata()[0] for line in axes.lines if line.get_linestyle() == "--"] == [0.5]
    assert axes.get_xlabel() == "perplexity (lower is better)"
    assert axes.get_ylabel() == "SG score (higher is better)"
    save_figure(figure, tmp_path / "ppl.png")
    words = ["the", "keys", "to", "the", "cabinet", "are"]
    figure = surprisal_figure(words, {"TG": [5, 8, 3, 2, 9, 4], "LM": [4, 9, 2, 3, 8, 7]})
    first, second = figure.axes[0].lines
    assert first.get_linestyle() != second.get_linestyle() and first.get_marker() != second.get_marker()
    save_figure(figure, tmp_path / "surprisal.png")
    with pytest.raises(ValueError, match="LM: 2 surprisals for 6 words"):
        surprisal_figure(words, {"LM": [1, 2]})


def test_crowded_point_labels_do_not_overlap():
    """Models with nearly the same perplexity and SG score: each name finds a place of its own."""
    points = {
        "txl-terminals": (46.8, 0.356), "prpn": (46.7, 0.350), "txl-trees": (62.6, 0.52), "tg": (56.7, 0.465),
        "esom": (37.5, 0.324), "sclm-next": (51.4, 0.312), "plm-mask": (74.8, 0.309),
        "dm-lstm": (188.1, 0.309), "lm": (47.0, 0.352), "lstm": (45.9, 0.349),
    }  # fmt: skip
    figure = perplexity_vs_sg_figure(points, chance=0.27)
    axes = figure.axes[0]
    names = [text for text in axes.texts if text.get_text() in points]
    assert [text.get_text() for text in names] == list(points)
    boxes = text_boxes(figure, axes.texts)  # the names and the chance label
    assert not overlapping(boxes)
    drawn = [axes.transData.transform(collection.get_offsets()) for collection in axes.collections]
    marks = [xy for offsets in drawn for xy in offsets]
    assert len(marks) == len(points)
    for box in boxes:  # no name covers a point
        assert not any(box.x0 < x < box.x1 and box.y0 < y < box.y1 for x, y in marks)
    inside = axes.get_window_extent(FigureCanvasAgg(figure).get_renderer())
    assert all(inside.x0 <= box.x0 and box.x1 <= inside.x1 for box in boxes)
    assert len({text.get_color() for text in names}) == len(points)  # each name in its point's colour


def test_training_curves_figure(tmp_path):
    train = {"tg": ([10, 20, 30, 40], [5.0, 4.0, 3.5, 3.2]), "lm": ([10, 20, 30, 40], [5.2, 4.8, 4.5, 4.4])}
    valid = {"tg": ([100, 200, 300], [4.0, 3.1, 2.7]), "lm": ([100, 200], [5.0, 4.2])}
    baselines = {"tg unigram": 5.5, "lm unigram": 5.5}
    figure = training_curves_figure(train=train, valid=valid, baselines=baselines)
    train_axes, valid_axes = figure.axes
    assert [axes.get_title() for axes in figure.axes] == ["training loss", "validation loss"]
    assert [line.get_label() for line in valid_axes.lines[:2]] == ["tg", "lm"]
    assert list(valid_axes.lines[1].get_ydata()) == [5.0, 4.2]

    # The runs differ in colour, line style and marker, and keep them from panel to panel.
    def looks(lines):
        return [(line.get_color(), line.get_linestyle(), line.get_marker()) for line in lines]

    assert all(len({look[i] for look in looks(train_axes.lines)}) == 2 for i in range(3))
    assert looks(train_axes.lines) == looks(valid_axes.lines[:2])
    [baseline] = valid_axes.lines[2:]
    assert list(baseline.get_ydata()) == [5.5, 5.5]
    assert [text.get_text() for text in valid_axes.texts] == ["tg unigram, lm unigram"]  # one line
    assert "lower is better" in valid_axes.get_ylabel()
    assert [text.get_text() for text in figure.legends[0].get_texts()] == ["tg", "lm"]
    assert save_figure(figure, tmp_path / "curves.png").stat().st_size > 1000
    assert len(training_curves_figure(valid={"lm": ([1], [2.0])}).axes) == 1
    with pytest.raises(ValueError, match="lm: 1 steps for 2 losses"):
        training_curves_figure(valid={"lm": ([1], [2.0, 3.0])})
    with pytest.raises(ValueError, match="no curves given"):
        training_curves_figure()


def test_loss_curves_are_read_from_a_run_log(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(
        "step,epoch,train_loss,lr,tokens_per_s,grad_norm,valid_loss,valid_perplexity\n"
        "10,0.1,6.5,0.001,2000,1.3,,\n"
        "20,0.2,6.1,0.001,2000,1.4,,\n"
        "20,0.2,,,,,5.9,365.0\n"
    )
    assert read_loss_curves(log) == (([10, 20], [6.5, 6.1]), ([20], [5.9]))
    log.write_text("step,train_loss,valid_loss\n10,6.5,\nten,6.1,\n")
    with pytest.raises(InputFormatError, match=r"log.csv:3: step 'ten', train_loss '6.1'"):
        read_loss_curves(log)


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
