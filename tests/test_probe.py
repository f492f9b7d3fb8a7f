"""The composition probe: items and sites, the logistic regression, the probe end to end, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.probe import (
    TARGETS,
    closer_actions,
    complex_subject,
    composition_probe,
    cross_validated_accuracy,
    fit_logistic,
    probe_items,
    site_position,
    synthetic_probe_trees,
    wilson_interval,
)
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from syntaxlm.text.symbols import closing_nonterminal
from syntaxlm.trees.clean import drop_pos_tags
from syntaxlm.trees.ptb import parse_tree

NO_SUBJECT = "(S (NP (NP (DT No) (NNS dogs)) (PP (IN near) (NP (DT the) (NN park)))) (VP (VBP bark)) (. .))"


@pytest.fixture(scope="module")
def probe_trees():
    return synthetic_probe_trees(8, seed=3)


@pytest.fixture(scope="module")
def vocab(tmp_path_factory, probe_trees):
    folder = tmp_path_factory.mktemp("probe")
    path = folder / "train.trees"
    texts = [drop_pos_tags(tree).to_bracket() for tree in [*probe_trees, parse_tree(NO_SUBJECT)]]
    path.write_text("\n".join(texts) + "\n")
    return build_vocabulary(path, folder / "vocab", kind="word", min_freq=1, pos_tags=False)


def _model(vocab, variant="tg", n_layers=2):
    torch.manual_seed(0)
    config = {"model": variant, "d_model": 16, "n_layers": n_layers, "n_heads": 2, "d_ff": 32, "dropout": 0.1}
    return build_model(config, {"vocab": vocab})


def test_subject_sites_by_hand(vocab):
    tree = parse_tree(NO_SUBJECT)
    (item,) = probe_items([tree])
    assert item.labels == {"number": TARGETS["number"].index("plural"), "negation": TARGETS["negation"].index("no")}
    # TG: <s> (S (NP (NP No dogs NP) NP) (PP near (NP the park NP) NP) PP) PP) NP) NP) ...
    #     0   1  2   3   4  5    6   7   8   9    10  11  12   13  14  15  16  17  18
    tg = {"inner": 6, "subject": 17}
    # TXL (trees): <s> (S (NP (NP No dogs NP) (PP near (NP the park NP) PP) NP) ...
    #              0   1  2   3   4  5    6   7   8    9   10  11   12  13  14
    txl = {"inner": 6, "subject": 14}
    words = {"inner": 2, "subject": 5}  # <s> No dogs near the park bark . </s>
    for site in ("inner", "subject"):
        assert site_position(item.sites[site], "tg") == tg[site]
        assert site_position(item.sites[site], "txl-trees") == txl[site]
        assert site_position(item.sites[site], "txl-terminals") == words[site]
    np_closer = vocab.index(closing_nonterminal("NP"))
    for variant, expected in (("tg", tg), ("txl-trees", txl)):
        sequence = _model(vocab, variant).sequences([drop_pos_tags(tree)])[0]
        for position in expected.values():
            assert sequence.inputs[position] == np_closer
            assert sequence.compose[position] == (variant == "tg")
        if variant == "tg":  # the STACK copy follows; the subject's COMPOSE pops the inner NP and PP
            assert sequence.inputs[tg["subject"] + 1] == np_closer and not sequence.compose[tg["subject"] + 1]
            popped = np.flatnonzero(sequence.popped_at == tg["subject"]).tolist()
            assert popped == [2, 6, 15]  # its opener, the inner NP and the PP (COMPOSE copies)


def test_items_skip_simple_and_coordinated_subjects():
    simple = parse_tree("(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))")
    coordinated = parse_tree(
        "(S (NP (NP (DT the) (NN dog)) (CC and) (NP (DT the) (NN cat))) (VP (VBP bark)) (. .))"
    )
    pronoun = parse_tree("(S (NP (NP (PRP they)) (PP (IN in) (NP (NN town)))) (VP (VBP bark)) (. .))")
    assert complex_subject(simple) is None and complex_subject(coordinated) is None
    assert probe_items([simple, coordinated, pronoun]) == []


def test_closer_actions_match_the_choe_charniak_actions():
    from syntaxlm.structure.actions import tree_to_actions

    tree = parse_tree(NO_SUBJECT)
    tokens = tree_to_actions(drop_pos_tags(tree)).tokens
    for node in tree.subtrees():
        if not node.is_preterminal:
            action, closers_before, _ = closer_actions(tree)[id(node)]
            assert tokens[action] == closing_nonterminal(node.label)
            assert sum(token.endswith(")") for token in tokens[:action]) == closers_before


def test_synthetic_probe_set_is_balanced(probe_trees):
    items = probe_items(probe_trees)
    assert len(items) == len(probe_trees) == 32
    cells = [(item.labels["number"], item.labels["negation"]) for item in items]
    assert sorted(set(cells)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(cells.count(cell) == 8 for cell in set(cells))


def test_synthetic_probe_set_speaks_a_restricted_lexicon():
    from syntaxlm.data.synthetic import SyntheticTreebank

    known = SyntheticTreebank(lexicon_size=10).word_types()
    trees = synthetic_probe_trees(4, seed=3, lexicon_size=10)
    assert len(probe_items(trees)) == 16
    for tree in trees:
        first, *rest = tree.leaves()
        assert first[:1].lower() + first[1:] in known or first in known
        assert set(rest) <= known, set(rest) - known


def test_logistic_regression_separates_a_separable_set():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 5))
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 0.0]) > 0.3).astype(int)
    probe = fit_logistic(x, y, l2=1e-4)
    assert (probe.predict(x) == y).all()
    shuffled = rng.permutation(y)  # labels unrelated to the features: held out, near chance
    assert cross_validated_accuracy(x, y, folds=5)["accuracy"] > 0.85
    assert cross_validated_accuracy(x, shuffled, folds=5)["accuracy"] < 0.85


def test_wilson_interval():
    interval = wilson_interval(45, 50)
    assert interval.low < 0.9 < interval.high <= 1.0
    assert wilson_interval(50, 50).high == pytest.approx(1.0) and wilson_interval(50, 50).low > 0.9
    wide, narrow = wilson_interval(5, 10), wilson_interval(500, 1000)
    assert wide.high - wide.low > narrow.high - narrow.low


@pytest.mark.parametrize("variant", ["tg", "txl-trees"])
def test_probe_returns_one_accuracy_per_layer_and_target(vocab, probe_trees, variant):
    model = _model(vocab, variant, n_layers=2)
    result = composition_probe(model, probe_trees, folds=4)
    assert model.training  # the probe ran in eval mode and left the model as it was
    assert result["model"]["n_layers"] == 2
    assert result["items"]["used"] == 32
    for site in ("subject", "inner"):
        for target in TARGETS:
            rows = result["probes"][site][target]
            assert [row["layer"] for row in rows] == [0, 1, 2]
            for row in rows:
                assert 0 <= row["low"] <= row["accuracy"] <= row["high"] <= 1
                assert row["n"] == 32 and row["majority"] == pytest.approx(0.5)
    # Layer 0 at a closer is the closer's embedding, the same for every item: nothing to decode.
    assert result["probes"]["subject"]["negation"][0]["accuracy"] <= 0.6


def test_hidden_states_match_the_forward_pass(vocab, probe_trees):
    model = _model(vocab, "tg", n_layers=3).eval()
    corpus = model.prepare([drop_pos_tags(tree) for tree in probe_trees[:4]])
    batch = next(corpus.batches(4, shuffle=False))
    layers = model.hidden_states(batch)
    assert len(layers) == 4
    logits, layer_inputs = model(batch)
    for a, b in zip(layers[:3], layer_inputs, strict=True):
        torch.testing.assert_close(a, b)
    weight = model.embedding.weight
    torch.testing.assert_close(torch.nn.functional.linear(layers[-1], weight, model.output_bias), logits)


def test_no_eligible_sentence_names_the_file(vocab, tmp_path):
    model = _model(vocab)
    path = tmp_path / "simple.trees"
    with pytest.raises(InputFormatError, match="simple.trees.*complex subject"):
        composition_probe(model, [parse_tree("(S (NP (DT The) (NN dog)) (VP (VBZ barks)))")], source=path)


def test_cli_writes_result_and_figure(vocab, probe_trees, tmp_path):
    from typer.testing import CliRunner

    from syntaxlm.cli import app

    model_dir = tmp_path / "model"
    _model(vocab).save_pretrained(model_dir)
    trees = tmp_path / "probe.trees"
    trees.write_text("\n".join(tree.to_bracket() for tree in probe_trees) + "\n")
    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["inspect", "probe", str(model_dir), str(trees), "--out", str(out), "--folds", "4"])
    assert done.exit_code == 0, done.output
    assert "subject:negation" in done.output
    record = json.loads((out / "probe.json").read_text())
    assert record["kind"] == "composition-probe"
    assert len(record["result"]["probes"]["inner"]["number"]) == 3
    assert (out / "probe.png").stat().st_size > 0

    empty = tmp_path / "simple.trees"
    empty.write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks)))\n")
    done = CliRunner().invoke(app, ["inspect", "probe", str(model_dir), str(empty), "--out", str(out)])
    assert done.exit_code != 0
    assert "simple.trees" in done.output or "simple.trees" in str(done.exception)
