"""Estimates of joint-model inference time (inference/estimate.py): the first sentences timed, the
message and its suggestions, and the estimate the commands print before long work."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.eval.syntaxgym import load_suite
from syntaxlm.inference import BeamSettings, Scorer, parse
from syntaxlm.inference import estimate as estimates
from syntaxlm.inference.estimate import (
    InferenceEstimate,
    duration,
    estimate_message,
    first_sentences,
    timed_first,
)
from syntaxlm.inference.sentences import searched_words
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from tests.test_beam import TINY

SMALL_BEAM = BeamSettings(6, 2, 1)
PAPER_BEAM = BeamSettings()


def test_the_first_sentences_are_a_batch_or_an_eighth_of_small_work():
    assert first_sentences(4, 16) == 1
    assert first_sentences(40, 16) == 5
    assert first_sentences(1000, 16) == 16
    assert first_sentences(1, 16) == 1


def test_timed_first_scores_everything_in_order_and_reports_once():
    sentences = [["a"] * n for n in range(1, 21)]
    calls, told = [], []

    def score(part: slice) -> list[int]:
        calls.append(part)
        return [len(words) for words in sentences[part]]

    assert timed_first(sentences, score, batch_size=16, on_estimate=told.append) == list(range(1, 21))
    assert calls == [slice(0, 2), slice(2, None)]
    [estimate] = told
    assert (estimate.sentences, estimate.words) == (2, 3) and estimate.seconds >= 0
    # one sentence: nothing to estimate before it
    told.clear()
    sentences = sentences[:1]
    assert timed_first(sentences, score, batch_size=16, on_estimate=told.append) == [1]
    assert told == []


LIMIT = "--limit N to score the first N only"


def test_the_message_says_how_long_and_how_to_shorten_long_work():
    pace = InferenceEstimate(sentences=2, words=20, seconds=2.0)  # 0.1 s a word
    assert estimate_message(pace, sentences=10, words=50, beam=PAPER_BEAM, limit=LIMIT) is None  # 5 s
    medium = estimate_message(pace, sentences=40, words=300, beam=PAPER_BEAM, limit=LIMIT)
    assert medium == "estimate: about 30 s for 40 sentences (300 words), from the first 2 (20 words in 2.0 s)"
    long = estimate_message(pace, sentences=400, words=3000, beam=PAPER_BEAM, limit=LIMIT)
    assert long.startswith("estimate: about 5 min for 400 sentences (3000 words)")
    assert (
        "to make it shorter: a smaller beam (--action-beam 10 --word-beam 3 --fast-track 1, the "
        "quickstart's; this one is 100/10/5), or --limit N to score the first N only"
    ) in long
    # not the beam search (gold trees), or a beam no wider than the quickstart's: only --limit
    for beam in (None, BeamSettings(10, 3, 1)):
        message = estimate_message(pace, sentences=400, words=3000, beam=beam, limit=LIMIT)
        assert message.endswith("; to make it shorter: --limit N to score the first N only")
    # A command without --limit names its own way of scoring less, or none.
    suites = estimate_message(pace, sentences=400, words=3000, beam=None, limit="fewer suites per command")
    assert suites.endswith("; to make it shorter: fewer suites per command") and "--limit" not in suites
    assert "shorter" not in estimate_message(pace, sentences=400, words=3000, beam=None, limit=None)
    assert [duration(s) for s in (4.2, 89, 91, 3600 + 5 * 60)] == ["4 s", "89 s", "2 min", "1 h 5 min"]


def test_the_beam_searches_a_prefix_common_to_sentences_of_a_batch_once():
    sentences = [["a", "b", "c"], ["q"], ["a", "b", "d"], ["a", "x"], ["a", "b", "c"]]
    # In order: a b c, a b c, a b d, a x, q; each shares 3, 2, 1 and 0 words with the one before.
    assert searched_words(sentences, 16) == 12 - 6
    assert searched_words(sentences, 1) == 12  # alone, nothing is shared
    assert searched_words(sentences, 2) == 12 - 3 - 1  # batches: (a b c, a b c), (a b d, a x), (q)
    # The message's time is that of the words searched, its word count that of the sentences.
    pace = InferenceEstimate(sentences=2, words=20, seconds=20.0)
    message = estimate_message(pace, sentences=40, words=400, beam=PAPER_BEAM, limit=LIMIT, work=80)
    assert message.startswith("estimate: about 80 s for 40 sentences (400 words)")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("estimate")
    write_synthetic_treebank(folder / "data", sentences=120, seed=0, items_per_suite=4)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    trees = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    trees = sorted(trees, key=lambda t: len(t.leaves()))[:4]
    models = {}
    for name in ("tg", "lm"):
        torch.manual_seed(0)
        models[name] = build_model({"model": name, **TINY}, {"vocab": vocab}).eval()
        models[name].save_pretrained(folder / name)
    text = folder / "sentences.txt"
    text.write_text("".join(" ".join(t.leaves()) + "\n" for t in trees))
    suite = min((folder / "data" / "suites").glob("*.json"))
    return {"folder": folder, "models": models, "trees": trees, "text": text, "suite": suite}


def test_the_scorer_and_parse_time_their_first_sentences_without_changing_the_results(tiny):
    model, trees = tiny["models"]["tg"], tiny["trees"]
    sentences = [t.leaves() for t in trees]
    beams = {}
    for method, given in (("gold", {"trees": trees}), ("beam", {})):
        told = []
        timed = Scorer(model, method=method, beam=SMALL_BEAM, on_estimate=told.append)
        beams[method] = ours = timed.score(sentences, **given)
        theirs = Scorer(model, method=method, beam=SMALL_BEAM).score(sentences, **given)
        for a, b in zip(ours, theirs, strict=True):  # other batches: equal up to float32 round-off
            np.testing.assert_allclose(a.piece_logprobs, b.piece_logprobs, atol=1e-4)
            assert a.tree == b.tree or abs(a.tree_logprob - b.tree_logprob) < 1e-4  # a tie may flip
        assert [e.sentences for e in told] == [1]
        if method == "gold":
            timed.score(sentences, **given)
            assert len(told) == 1  # once, for the first scoring
    told = []
    parsed = parse(model, sentences, beam=SMALL_BEAM, on_estimate=told.append)
    assert parsed == [s.tree for s in beams["beam"]]  # the timed scorer's search, batch for batch
    assert len(told) == 1
    # a words-only model is not estimated
    assert Scorer(tiny["models"]["lm"], on_estimate=told.append).on_estimate is None


@pytest.mark.parametrize("command", ["score", "parse", "eval ppl", "eval sg"])
def test_commands_print_the_estimate_before_long_work(tiny, monkeypatch, command):
    monkeypatch.setattr(estimates, "SAY_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(estimates, "LONG_SECONDS", 0.0)
    folder, text = tiny["folder"], tiny["text"]
    beam = ("--action-beam", "12", "--word-beam", "4", "--fast-track", "2")
    args = {
        "score": ("score", folder / "tg", text),
        "parse": ("parse", folder / "tg", text),
        "eval ppl": ("eval", "ppl", text, "--model", folder / "tg"),
        "eval sg": ("eval", "sg", tiny["suite"], "--model", folder / "tg"),
    }[command]
    result = CliRunner().invoke(app, [str(a) for a in (*args, *beam, "--no-progress")])
    assert result.exit_code == 0, (result.output, result.exception)
    sentences = 4 if command != "eval sg" else len(list(load_suite(tiny["suite"]).sentences()))
    assert "estimate: about " in result.output and f"for {sentences} sentences" in result.output
    assert "a smaller beam (--action-beam 10 --word-beam 3 --fast-track 1, the quickstart's" in result.output
