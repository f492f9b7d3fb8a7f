"""The evaluations end to end on trained models: a tiny TG (joint: beam search, gold trees) and a tiny
TXL (terminals) (exact), on real SyntaxGym suites and BLiMP paradigms, perplexity, and the report
made from the result files."""

from __future__ import annotations

import json

import pytest

from syntaxlm.train import load_config, train
from syntaxlm.trees.ptb import TreeReader
from tests.test_cli import run
from tests.test_recipes import CONFIGS

SUITES = ("number_prep.json", "reflexive_src_masc.json")
PARADIGMS = ("determiner_noun_agreement_1", "anaphor_number_agreement")
ITEMS = 3
PAIRS = {"tg": 4, "txl-terminals": 100}  # per paradigm: the beam search of a joint model is slower
SMALL_BEAM = ("--action-beam", "10", "--word-beam", "3", "--fast-track", "1")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Tiny TG and TXL (terminals) runs, trained briefly on the synthetic treebank."""
    folder = tmp_path_factory.mktemp("eval-models")
    steps = {"tg": 60, "txl-terminals": 150}
    for name, n_steps in steps.items():
        overrides = [
            "data.synthetic.sentences=300",
            f"train.max_steps={n_steps}",
            "train.warmup_steps=10",
            f"train.eval_every={n_steps}",
            f"train.checkpoint_every={n_steps}",
            "train.batch_size=16",
        ]
        train(load_config(CONFIGS / f"{name}-tiny.yaml", overrides), folder / name, progress=False)
    return folder


# Scored in fixtures, not in the tests that check them: the report test reads the result files
# they write into the runs, and each xdist worker makes its own runs.


@pytest.fixture(scope="module")
def sg_scored(runs, shared_data, tmp_path_factory):
    """Each model's ``eval sg --json`` summary of the first items of two real suites, whose
    result files go to the run's ``sg`` folder."""
    folder = tmp_path_factory.mktemp("suites")
    suites = []
    for name in SUITES:  # the first items of each suite keep the test short
        suite = json.loads((shared_data / "syntaxgym" / "test_suites" / "json" / name).read_text())
        suite["items"] = suite["items"][:ITEMS]
        suites.append(folder / name)
        suites[-1].write_text(json.dumps(suite))
    summaries = {}
    for name in ("tg", "txl-terminals"):
        out = runs / name / "sg"
        model = runs / name / "best"
        result = run("eval", "sg", *suites, "--model", model, *SMALL_BEAM, "--json", "--out", out)
        assert result.returncode == 0, result.stderr
        summaries[name] = json.loads(result.stdout)
    return summaries


@pytest.fixture(scope="module")
def blimp_scored(runs, shared_data):
    """Each model's ``eval blimp --json`` result on two paradigms' first pairs, also written to
    the run's ``blimp.json``."""
    paradigms = [arg for uid in PARADIGMS for arg in ("--paradigm", uid)]
    results = {}
    for name, n_pairs in PAIRS.items():
        result = run(
            "eval", "blimp", "--data", shared_data / "blimp" / "data", "--model", runs / name / "best",
            *paradigms, "--ten-percent", "--max-pairs", n_pairs, *SMALL_BEAM, "--json",
            "--out", runs / name / "blimp.json",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        results[name] = json.loads(result.stdout)
    return results


def test_sg_on_real_suites_with_each_model(runs, sg_scored):
    for name, summary in sg_scored.items():
        assert set(summary["suites"]) == {"number_prep", "reflexive_src_masc"}
        assert all(0 <= value <= 1 for value in summary["suites"].values())
        assert summary["sg_scores"]["hu2020"]["mean_over_suites"] is None  # 2 of 31 suites
        assert summary["method"] == ("beam" if name == "tg" else "exact")
        for suite in SUITES:
            record = json.loads((runs / name / "sg" / suite).read_text())
            assert record["kind"] == "syntaxgym" and record["result"]["n_items"] == ITEMS
            assert record["result"]["accuracy_pred0"] == summary["suites"][suite.removesuffix(".json")]


def test_blimp_with_each_model(blimp_scored):
    for name, scored in blimp_scored.items():
        assert {p["paradigm"] for p in scored["paradigms"]} == set(PARADIGMS)
        assert all(p["n_pairs"] == PAIRS[name] for p in scored["paradigms"])
        assert 0 <= scored["overall_accuracy"] <= 1


def test_perplexity_of_each_model_and_the_report(runs, sg_scored, blimp_scored, tmp_path):
    dev = runs / "tg" / "data" / "dev.trees"
    sentences = tmp_path / "dev.txt"
    trees = dev.read_text().splitlines()[:4]
    short = tmp_path / "dev8.trees"
    short.write_text("\n".join(trees) + "\n")
    sentences.write_text("\n".join(" ".join(t.leaves()) for t in TreeReader(short, pos_tags=True)) + "\n")
    results = {}
    for name, method, data in (
        ("tg", "gold", short),
        ("tg", "beam", sentences),
        ("txl-terminals", "auto", sentences),
    ):
        out = runs / name / f"ppl-{method}.json"
        beam = SMALL_BEAM if (name, method) == ("tg", "beam") else ()  # refused by the other methods
        result = run("eval", "ppl", data, "--model", runs / name / "best", "--method", method, *beam,
                     "--no-progress", "--json", "--out", out)  # fmt: skip
        assert result.returncode == 0, result.stderr
        results[name, method] = json.loads(result.stdout)
        assert results[name, method]["n_sentences"] == 4 and results[name, method]["end_logprob_nats"] < 0
    assert results["tg", "gold"]["marginalisation"]["method"] == "gold"
    assert results["txl-terminals", "auto"]["marginalisation"]["method"] == "exact"
    assert results["tg", "beam"]["marginalisation"]["word_beam"] == 3
    assert all(1 < result["perplexity_per_word"] < float("inf") for result in results.values())
    gold_needs_trees = run("eval", "ppl", sentences, "--model", runs / "tg" / "best", "--method", "gold")
    assert gold_needs_trees.returncode == 2 and "needs a treebank" in gold_needs_trees.stderr

    report = run("report", runs / "tg", runs / "txl-terminals", "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| tg |" in text and "| txl-terminals |" in text
    assert (tmp_path / "report" / "sg_circuits.png").is_file()
