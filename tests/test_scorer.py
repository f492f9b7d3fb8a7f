"""The user-facing scorer (inference/scorer.py): units, measures, reductions, the end entry, methods;
result records; the adapters that let the SyntaxGym, BLiMP and perplexity evaluations score any
model; and the ``score``, ``parse`` and ``generate`` commands, round trip."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.errors import SyntaxlmError
from syntaxlm.eval.blimp import MinimalPair, score_blimp
from syntaxlm.eval.perplexity import perplexity
from syntaxlm.eval.scorers import blimp_scorer, syntaxgym_scorer
from syntaxlm.eval.syntaxgym import evaluate_suite, load_suite, suite_region_values
from syntaxlm.inference import BeamSettings, Scorer, parse, perplexity_logprobs, write_jsonl
from syntaxlm.inference.scorer import SentenceTooLongError, scores_record
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from syntaxlm.text.tokenize import ptb_tokens
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, read_trees
from syntaxlm.trees.tree import Tree
from tests.test_beam import TINY, ToyModel

SMALL_BEAM = BeamSettings(12, 4, 2)


def test_units_measures_reductions_and_the_end():
    scorer = Scorer(ToyModel("rnng", seed=1), beam=SMALL_BEAM)
    sentences = [["x", "y"], ["z", "x", "y"]]
    scores = scorer.score(sentences)
    nats = scorer.word_score(sentences, surprisal=False, unit="nats")
    bits = scorer.word_score(sentences, surprisal=True, unit="bits", eos=True)
    for s, n, b in zip(scores, nats, bits):
        assert [w for w, _ in n] == list(s.words) and [w for w, _ in b] == [*s.words, "</s>"]
        np.testing.assert_allclose([v for _, v in n], s.word_logprobs)
        np.testing.assert_allclose([v for _, v in b][:-1], -s.word_logprobs / math.log(2))
        assert b[-1][1] == pytest.approx(-s.end_logprob / math.log(2))
    pieces = scorer.token_score(sentences, surprisal=False, unit="nats", eos=True)
    assert [p for p, _ in pieces[0]] == ["x", "y", "</s>"]
    total = scorer.sequence_score(sentences, reduction="sum", surprisal=False, unit="nats")
    assert total == pytest.approx([s.logprob for s in scores])
    prefix = scorer.sequence_score(sentences, reduction="sum", surprisal=False, unit="nats", eos=False)
    assert prefix == pytest.approx([s.prefix_logprob for s in scores])
    mean_bits = scorer.sequence_score(sentences, reduction="mean", surprisal=True, unit="bits")
    assert mean_bits[1] == pytest.approx(-scores[1].logprob / 4 / math.log(2))
    assert scores[0].method == "beam" and Scorer(ToyModel("words")).method == "exact"
    for unsaid in ({"surprisal": True, "unit": "bits"}, {"reduction": "sum", "unit": "bits"}):
        with pytest.raises(TypeError):
            scorer.sequence_score(sentences, **unsaid)  # the reduction, measure and unit are always said
    for score in (scorer.word_score, scorer.token_score, scorer.records):
        with pytest.raises(TypeError):
            score(sentences)
    with pytest.raises(ValueError, match="reduction"):
        scorer.sequence_score(sentences, reduction="max", surprisal=True, unit="bits")
    with pytest.raises(ValueError, match="unit"):
        scorer.word_score(sentences, surprisal=True, unit="bans")
    with pytest.raises(TypeError, match="string"):
        scorer.score(["x y"])


def test_methods_and_what_they_need():
    joint, words = ToyModel("choe-charniak", seed=2), ToyModel("words", seed=2)
    with pytest.raises(ValueError, match="words-only"):
        Scorer(joint, method="exact")
    with pytest.raises(ValueError, match="joint model"):
        Scorer(words, method="gold")
    with pytest.raises(ValueError, match="needs trees"):
        Scorer(joint, method="gold").score([["x"]])
    with pytest.raises(ValueError, match="needs proposals"):
        Scorer(joint, method="proposals").score([["x"]])
    from syntaxlm.trees.tree import Tree

    tree = Tree.from_bracket("(A x (B y))")
    gold = Scorer(joint, method="gold").score([["x", "y"]], trees=[tree])[0]
    proposals = Scorer(joint, method="proposals").score(
        [["x", "y"]], proposals=[[tree, Tree("B", ["x", "y"])]]
    )[0]
    assert gold.logprob < proposals.logprob and gold.tree == tree
    exact = Scorer(words).score([["x", "y"]])[0]
    beam = Scorer(words, method="beam").score([["x", "y"]])[0]
    assert exact.logprob == pytest.approx(beam.logprob, abs=1e-6)


def test_records_name_their_measure_and_unit(tmp_path):
    scorer = Scorer(ToyModel("choe-charniak", seed=3), beam=SMALL_BEAM)
    records = scorer.records([["x", "y", "z"]], surprisal=True, unit="bits", eos=True)
    record = records[0]
    assert {
        "word_surprisal_bits",
        "piece_surprisal_bits",
        "end_surprisal_bits",
        "sentence_surprisal_bits",
    } <= set(record)
    assert record["eos"] is True and record["method"] == "beam" and record["tree"].startswith("(")
    assert record["sentence_surprisal_bits"] == pytest.approx(
        sum(record["word_surprisal_bits"]) + record["end_surprisal_bits"]
    )
    assert record["word_unknown"] == [False, False, False]
    logprob = scores_record(scorer.score([["x"]])[0], sentence_id="item-4", surprisal=False, unit="nats")
    assert logprob["sentence_id"] == "item-4" and "word_logprob_nats" in logprob
    assert "word_unknown" not in logprob  # not asked for
    path = tmp_path / "scores.jsonl"
    assert write_jsonl(path, records + [logprob]) == 2
    assert [json.loads(line)["sentence_id"] for line in path.read_text().splitlines()] == [0, "item-4"]


# --- the evaluations through the adapters, on tiny real models ----------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scorer")
    write_synthetic_treebank(folder / "data", sentences=120, seed=0, items_per_suite=4)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    trees = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    models = {}
    for name in ("tg", "plm", "lm"):
        torch.manual_seed(0)
        models[name] = build_model({"model": name, **TINY}, {"vocab": vocab}).eval()
        models[name].save_pretrained(folder / name)
    short = sorted(trees, key=lambda t: len(t.leaves()))[:3]
    return {"folder": folder, "models": models, "trees": short}


@pytest.mark.parametrize("name", ["tg", "lm"])
def test_syntaxgym_suites_score_with_any_model(tiny, name):
    scorer = Scorer(tiny["models"][name], beam=SMALL_BEAM)
    suite = load_suite(min((tiny["folder"] / "data" / "suites").glob("*.json")))
    token_scorer, convention = syntaxgym_scorer(scorer)
    values = suite_region_values(suite, token_scorer, convention)
    item = suite.items[0]
    condition = next(iter(item.regions))
    expected = scorer.word_score([item.sentence(condition).split()], surprisal=True, unit="bits")[0]
    assert sum(values[item.item_number][condition]) == pytest.approx(sum(v for _, v in expected))
    result = evaluate_suite(suite, values)
    assert 0 <= result.accuracy_pred0 <= 1


def test_blimp_and_perplexity_score_with_any_model(tiny):
    scorer = Scorer(tiny["models"]["plm"], beam=SMALL_BEAM)
    pairs = [
        MinimalPair("p", 0, "The man sees him.", "The man see him.", "anaphor_agreement", "syntax"),
        MinimalPair("p", 1, "Who's here?", "Who here's?", "anaphor_agreement", "syntax"),
    ]
    result = score_blimp(pairs, blimp_scorer(scorer), batch_size=3)
    words = [ptb_tokens("The man sees him.")]
    expected = scorer.sequence_score(words, reduction="sum", surprisal=False, unit="nats")[0]
    assert result.pairs[0].logprob_good == pytest.approx(expected)
    sentences = [t.leaves() for t in tiny["trees"]]
    for method, given in (("beam", {}), ("gold", {"trees": tiny["trees"]})):
        scorer = Scorer(tiny["models"]["plm"], method=method, beam=SMALL_BEAM)
        logprobs, ends, metadata = perplexity_logprobs(scorer, sentences, **given)
        assert metadata["method"] == method and [len(x) for x in logprobs] == [len(s) for s in sentences]
        ppl = perplexity(logprobs, ends, marginalisation=metadata)
        assert ppl.n_words == sum(map(len, sentences)) and ppl.per_word > ppl.per_token > 1
        # The end entry (the closing actions of the joint model) is part of log p(sentence).
        full = scorer.sequence_score(
            sentences, reduction="sum", surprisal=False, unit="nats", eos=True, **given
        )
        assert ppl.total_logprob == pytest.approx(sum(full), rel=1e-9)


def test_perplexity_says_which_context_a_document_was_read_in(tiny, tmp_path):
    torch.manual_seed(0)
    short = {"model": "tg", **TINY, "segment_length": 6, "memory_length": 3}
    model = build_model(short, {"vocab": tiny["models"]["tg"].vocab}).eval()
    document = Tree(tiny["trees"][0].label, list(tiny["trees"]))  # three sentences in one tree
    words = [document.leaves()]
    setting = {"context": "training", "segment_length": 6, "memory_length": 3, "memory": "smart"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read as trained: nothing to warn about
        trained = perplexity_logprobs(Scorer(model, method="gold"), words, trees=[document])
    assert trained[2] == trained[2] | {"method": "gold", **setting}
    unsegmented = {"context": "full", "segment_length": None, "memory_length": None, "memory": None}
    with pytest.warns(UserWarning, match=r"training segment \+ memory \(6 \+ 3 tokens\)"):
        full = perplexity_logprobs(Scorer(model, method="gold", context="full"), words, trees=[document])
    assert full[2] == full[2] | unsegmented
    assert abs(np.sum(full[0]) - np.sum(trained[0])) > 1e-3
    # The beam can only read with full context: labelled so, with one warning.
    with pytest.warns(UserWarning) as caught:
        beam = perplexity_logprobs(Scorer(model, beam=SMALL_BEAM), words)
    assert beam[2] == beam[2] | {"method": "beam", **unsegmented}
    assert [str(w.message).count("beam search reads with full context only") for w in caught] == [1]
    with pytest.raises(ValueError, match="context must be one of"):
        Scorer(model, context="window")

    # eval ppl: --context training (the default) or full, recorded in the result.
    model.save_pretrained(tmp_path / "tg-short")
    treebank = tmp_path / "documents.trees"
    treebank.write_text(document.to_bracket() + "\n")
    command = ("eval", "ppl", treebank, "--model", tmp_path / "tg-short", "--method", "gold")
    for context, expected in ((None, setting), ("full", unsegmented)):
        given = () if context is None else ("--context", context)
        out = tmp_path / f"{context}.json"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the warning of full context, checked above
            printed = invoke(*command, *given, "--no-pos-tags", "--no-progress", "--out", out)
        assert f"context={expected['context']}" in printed
        record = json.loads(out.read_text())
        assert record["result"]["marginalisation"] == record["result"]["marginalisation"] | expected
        assert record["options"]["context"] == expected["context"]
    wrong = CliRunner().invoke(app, [str(a) for a in (*command, "--context", "window")])
    assert wrong.exit_code != 0 and "--context" in wrong.output


def test_parse(tiny):
    model, trees = tiny["models"]["tg"], tiny["trees"]
    sentences = [t.leaves() for t in trees]
    beam = parse(model, sentences, beam=SMALL_BEAM)
    assert [t.leaves() for t in beam] == sentences
    flat = [type(t)(t.label, t.leaves()) for t in trees]
    reranked = parse(model, sentences, method="rerank", proposals=[[t, f] for t, f in zip(trees, flat)])
    assert all(r in (t, f) for r, t, f in zip(reranked, trees, flat))
    with pytest.raises(ValueError, match="words only"):
        parse(tiny["models"]["lm"], sentences)
    with pytest.raises(ValueError, match="tg does not induce trees"):
        parse(model, sentences, method="induced")


# --- the command line ----------------------------------------------------------------------------------------


def invoke(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def test_score_parse_generate_commands(tiny, tmp_path):
    folder, trees = tiny["folder"], tiny["trees"]
    text = tmp_path / "sentences.txt"
    text.write_text("".join(" ".join(t.leaves()) + "\n" for t in trees))
    table = invoke("score", folder / "lm", text, "--no-progress", "--eos").splitlines()
    assert table[0].split("\t") == [
        "sentence_id", "word_index", "word", "surprisal_bits", "unknown", "method", "pieces",
        "input_word_index",
    ]  # fmt: skip
    assert len(table) == 1 + sum(len(t.leaves()) + 1 for t in trees)
    expected = Scorer(tiny["models"]["lm"]).word_score([trees[0].leaves()], surprisal=True, unit="bits")[0]
    assert float(table[1].split("\t")[3]) == pytest.approx(expected[0][1])

    out = tmp_path / "scores.jsonl"
    gold = tmp_path / "gold.trees"
    gold.write_text("".join(t.to_bracket() + "\n" for t in trees))
    invoke(
        "score",
        folder / "plm",
        text,
        "--method",
        "gold",
        "--trees",
        gold,
        "--no-pos-tags",
        "--format",
        "jsonl",
        "--out",
        out,
        "--unit",
        "nats",
        "--no-progress",
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["words"] for r in records] == [t.leaves() for t in trees] and records[0]["method"] == "gold"
    assert "word_surprisal_nats" in records[0]

    proposals = tmp_path / "proposals.txt"
    proposals.write_text(
        "".join(
            f"{i}\t{t.to_bracket()}\n{i}\t({t.label} {' '.join(t.leaves())})\n" for i, t in enumerate(trees)
        )
    )
    parsed = tmp_path / "parsed.trees"
    invoke(
        "parse",
        folder / "tg",
        text,
        "--method",
        "rerank",
        "--proposals",
        proposals,
        "--no-pos-tags",
        "--out",
        parsed,
        "--no-progress",
    )
    assert [t.leaves() for t in read_trees(parsed, pos_tags=False)] == [t.leaves() for t in trees]
    beam = invoke(
        "parse", folder / "plm", text, "--action-beam", "12", "--word-beam", "4", "--no-progress"
    ).splitlines()
    assert len(beam) == len(trees) and all(line.startswith("(") for line in beam)

    samples = invoke(
        "generate", folder / "tg", "-n", "3", "--max-length", "20", "--format", "jsonl", "--seed", "3"
    ).splitlines()
    assert len(samples) == 3 and all(json.loads(s)["tree"].startswith("(") for s in samples)
    assert (
        invoke(
            "generate", folder / "tg", "-n", "3", "--max-length", "20", "--format", "jsonl", "--seed", "3"
        ).splitlines()
        == samples
    )
    words = invoke("generate", folder / "lm", "-n", "2", "--max-length", "10", "--top-k", "5").splitlines()
    assert len(words) == 2 and all(len(line.split()) <= 9 for line in words)


def test_a_sentence_longer_than_the_models_positions_is_refused_before_any_work(tiny, monkeypatch):
    lm, plm = tiny["models"]["lm"], tiny["models"]["plm"]
    word = tiny["trees"][0].leaves()[0]
    limit = lm.longest_sentence()
    assert limit == lm.config.max_length - 2 and plm.longest_sentence() == plm.config.max_length - 3
    fits, too_long = [word] * limit, [word] * (limit + 1)
    scorer = Scorer(lm, method="exact")
    assert scorer.too_long([fits, too_long, fits]) == [1]
    [scored] = scorer.score([fits])  # the longest that fits is scored, its end included
    assert len(scored.word_logprobs) == limit and np.isfinite(scored.end_logprob)
    monkeypatch.setattr("syntaxlm.inference.scorer.exact_scores", lambda *a, **k: pytest.fail("scored"))
    with pytest.raises(
        SentenceTooLongError, match=rf"sentence 1 has {limit + 1} pieces, more than the {limit}"
    ):
        scorer.score([fits, too_long])
    monkeypatch.setattr("syntaxlm.inference.scorer.beam_search", lambda *a, **k: pytest.fail("searched"))
    with pytest.raises(SentenceTooLongError, match="sentence 0 has .*1 sentence.s. in all"):
        Scorer(plm, beam=SMALL_BEAM).score([[word] * (plm.longest_sentence() + 1)])
    assert tiny["models"]["tg"].longest_sentence() is None  # segments with memory: no limit


def test_skip_long_leaves_out_what_does_not_fit_and_says_so(tiny, tmp_path):
    lm = tiny["folder"] / "lm"
    word = tiny["trees"][0].leaves()[0]
    text = tmp_path / "sentences.txt"
    long = " ".join([word] * (tiny["models"]["lm"].longest_sentence() + 1))
    text.write_text(f"{word} {word}\n{long}\n{word}\n")
    refused = CliRunner().invoke(app, ["score", str(lm), str(text), "--no-progress"])
    assert isinstance(refused.exception, SentenceTooLongError)
    assert "sentence 2 has" in str(refused.exception)  # named by its id, the line number
    out = tmp_path / "scores.jsonl"
    scored = CliRunner().invoke(
        app,
        ["score", str(lm), str(text), "--no-progress", "--skip-long", "--format", "jsonl", "--out", str(out)],
    )
    assert scored.exit_code == 0, scored.output
    assert "1 sentence(s) longer than the model can score" in scored.output and "left out: 2" in scored.output
    ids = [json.loads(line)["sentence_id"] for line in out.read_text().splitlines()]
    assert ids == [1, 3]  # line numbers
    result = tmp_path / "ppl.json"
    ppl = ["eval", "ppl", str(text), "--model", str(lm), "--no-progress", "--skip-long", "--out", str(result)]
    assert CliRunner().invoke(app, ppl).exit_code == 0
    record = json.loads(result.read_text())
    assert record["options"]["skipped_too_long"] == [1] and record["result"]["n_sentences"] == 2


def test_score_reads_stimuli_as_a_researcher_writes_them(tiny, tmp_path):
    """Ids from an id column stay with their sentences past blank lines (left out, and said);
    ``--tokenize ptb`` splits clitics and punctuation off, each word naming the input word it
    comes from; the TSV names the method, flags unknown words and lists each word's pieces."""
    lm = tiny["folder"] / "lm"
    known = tiny["trees"][0].leaves()
    text = tmp_path / "stimuli.txt"
    text.write_text(f"s1\t{' '.join(known)}\n\n  \ns2\tThe zorblax's didn't.\n")
    args = ["score", str(lm), str(text), "--tokenize", "ptb", "--eos", "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    header, *rows = [line.split("\t") for line in result.stdout.splitlines()]
    table = [dict(zip(header, row)) for row in rows]
    assert [row["sentence_id"] for row in table] == ["s1"] * (len(known) + 1) + ["s2"] * 7
    second = [row for row in table if row["sentence_id"] == "s2"]
    assert [row["word"] for row in second] == ["The", "zorblax", "'s", "did", "n't", ".", "</s>"]
    assert [row["input_word_index"] for row in second] == ["0", "1", "1", "2", "2", "2", "NA"]
    assert [row["word_index"] for row in second] == [str(i) for i in range(7)]
    assert second[1]["unknown"] == "true" and second[1]["pieces"].startswith("UNK")
    assert {row["method"] for row in table} == {"exact"}
    scorer = Scorer(tiny["models"]["lm"])
    words = [["The", "zorblax", "'s", "did", "n't", "."]]
    expected = scorer.word_score(words, surprisal=True, unit="bits")[0]
    assert [float(row["surprisal_bits"]) for row in second[:-1]] == pytest.approx([v for _, v in expected])
    assert "1 blank line left out (line 2)" not in result.stderr  # line 3 is blank too
    assert "2 blank lines left out (lines 2, 3); sentences keep their ids (the id column)" in result.stderr
    assert "unknown to the model and scored as their unknown-word class" in result.stderr

    plain = tmp_path / "plain.txt"
    plain.write_text(f"{' '.join(known)}\n\nThe company's lawyers\n")
    read = CliRunner().invoke(app, ["score", str(lm), str(plain), "--format", "jsonl", "--no-progress"])
    records = [json.loads(line) for line in read.stdout.splitlines()]
    assert [r["sentence_id"] for r in records] == [1, 3] and [r["line"] for r in records] == [1, 3]
    assert records[1]["words"] == ["The", "company's", "lawyers"]
    assert records[1]["input_word_index"] == [0, 1, 2]
    assert records[1]["word_unknown"][1] is True and records[1]["method"] == "exact"
    assert "1 word would be split by --tokenize ptb" in read.stderr and "company's" in read.stderr


def test_score_names_the_option_for_trees_without_pos_tags(tiny, tmp_path):
    trees = tiny["trees"]
    text = tmp_path / "sentences.txt"
    text.write_text("".join(" ".join(t.leaves()) + "\n" for t in trees))
    posless = tmp_path / "gold.trees"
    posless.write_text("".join(t.to_bracket() + "\n" for t in trees))
    plm = tiny["folder"] / "plm"
    args = ["score", str(plm), str(text), "--method", "gold", "--trees", str(posless), "--no-progress"]
    result = subprocess.run(
        [sys.executable, "-m", "syntaxlm", *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2 and "pass --no-pos-tags" in result.stderr, result.stderr


def test_command_errors_are_one_clear_line(tiny, tmp_path):
    text = tmp_path / "sentences.txt"
    text.write_text("a b\nitem-2\tc\n")
    result = subprocess.run(
        [sys.executable, "-m", "syntaxlm", "score", str(tiny["folder"] / "lm"), str(text), "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (
        result.returncode == 2
        and result.stderr.strip()
        == f"error: {text}:2: this line has an id (a tab), but line 1 has none; expected a sentence per "
        "line, or ID<TAB>SENTENCE on every line"
    )
    text.write_text("a b\n")
    missing = CliRunner().invoke(app, ["parse", str(tmp_path), str(text)])
    assert missing.exit_code != 0 and "config.json" in str(missing.exception)
    # Misuse is a library error too, which the entry point prints as one line.
    misuse = CliRunner().invoke(app, ["score", str(tiny["folder"] / "tg"), str(text), "--method", "exact"])
    assert isinstance(misuse.exception, SyntaxlmError) and "words-only model" in str(misuse.exception)
    words_only = CliRunner().invoke(app, ["parse", str(tiny["folder"] / "lm"), str(text)])
    assert isinstance(words_only.exception, SyntaxlmError)
