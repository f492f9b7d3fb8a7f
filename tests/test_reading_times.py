"""Reading times (eval/reading_times.py, eval/reading_regression.py, ``syntaxlm eval rt``): displayed
tokens aligned to model words and pieces, the exclusions, the cross-validated regression, the
corpus files and their errors, and the command end to end on tiny untrained models."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.errors import InputFormatError, OutputIsInputError, TreeFormatError
from syntaxlm.eval.reading_regression import (
    RegressionError,
    delta_loglik,
    fold_of,
    gaussian_loglik,
    heldout_loglik,
    least_squares,
    predictor_names,
)
from syntaxlm.eval.reading_times import (
    ReadingCorpus,
    ReadingTimeFormatError,
    Sentence,
    Token,
    TokenSurprisals,
    exclusions,
    read_natural_stories,
    read_reading_corpus,
    read_rt_table,
    token_surprisals,
)
from syntaxlm.eval.scorers import story_context, story_surprisals
from syntaxlm.inference import Scorer
from syntaxlm.models import build_model
from syntaxlm.results import check_result, read_result, result_record, write_result
from syntaxlm.text.subword import SubwordVocab
from syntaxlm.text.tokenize import ptb_words
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.tree import Tree
from tests.test_beam import TINY

SYMBOLS = ["(S", "S)", "(NP", "NP)", "(VP", "VP)"]

# --- a hand-made corpus in the Natural Stories layout ------------------------------------------------------

WORDS_TSV = [
    ("1.1", "The", "The", ["The"]),
    ("1.2", "old", "old", ["old"]),
    ("1.3", "mill", "mill", ["mill"]),
    ("1.4", "owners .", "owners", ["owners", "."]),
    ("1.5", "' It 's", "It 's", ["'", "It", "'s"]),
    ("1.6", "raining , '", "raining", ["raining", ",", "'"]),
    ("1.7", "she", "she", ["she"]),
    ("1.8", "said .", "said", ["said", "."]),
    ("2.1", "A", "A", ["A"]),
    ("2.2", "long - bearded", "long - bearded", ["long", "-", "bearded"]),
    ("2.3", "man", "man", ["man"]),
    ("2.4", "slept .", "slept", ["slept", "."]),
]
PARSES = """(ROOT (NP (DT The/1.1) (JJ old/1.2) (NN mill/1.3) (NNS owners/1.4.1) (. ./1.4.2)))
(ROOT
  (S (`` ``/1.5.1) (S (NP (PRP It/1.5.2)) (VP (VBZ 's/1.5.3) (VP (VBG raining/1.6.1))))
(, ,/1.6.2) ('' ''/1.6.3) (NP (PRP she/1.7)) (VP (VBD said/1.8.1)) (. ./1.8.2)))
(ROOT (S (NP (DT A/2.1) (JJ long-bearded/2.2.word) (NN man/2.3)) (VP (VBD slept/2.4.1)) (. ./2.4.2)))
"""
RTS = [350.0, 360.0, 370.0, 380.0, 390.0, 400.0, 410.0, 420.0, 330.0, 3500.0, 340.0, 350.0]


def write_natural_stories(folder, *, rts_lines=None, words_lines=None):
    (folder / "parses").mkdir(parents=True, exist_ok=True)
    lines = []
    for code, whole, word, parts in WORDS_TSV:
        lines += [f"{code}.whole\t{whole}", f"{code}.word\t{word}"]
        lines += [f"{code}.{k}\t{part}" for k, part in enumerate(parts, 1)]
    (folder / "words.tsv").write_text("\n".join(words_lines or lines) + "\n")
    if rts_lines is None:
        rts_lines = ["word\tzone\titem\tnItem\tmeanItemRT"]
        for (code, whole, _, _), rt in zip(WORDS_TSV, RTS):
            item, zone = code.split(".")
            rts_lines.append(f"{whole.replace(' ', '')}\t{zone}\t{item}\t80\t{rt}")
    (folder / "RTS_processed_wordinfo.tsv").write_text("\n".join(rts_lines) + "\n")
    counts = {"mill": "NA", "man": "0"}
    frequencies = [
        f"{code}.word\t1\t{word}\t{counts.get(word, 1000 * (i + 1))}\tNA"
        for i, (code, _, word, _) in enumerate(WORDS_TSV)
    ]
    (folder / "freqs_freqs-1.tsv").write_text("\n".join(frequencies) + "\n")
    (folder / "parses" / "all-parses-aligned.txt.penn").write_text(PARSES)
    return folder


def test_natural_stories_tokens_are_aligned_to_the_parse_leaves(tmp_path):
    corpus = read_natural_stories(write_natural_stories(tmp_path))
    assert [t.code for t in corpus.tokens] == [f"{code}.whole" for code, *_ in WORDS_TSV]
    owners, quote, raining = corpus.tokens[3], corpus.tokens[4], corpus.tokens[5]
    assert (owners.text, owners.words, owners.length) == ("owners.", ("owners", "."), 6)
    assert owners.attached_punctuation
    assert quote.words == ("``", "It", "'s") and quote.attached_punctuation and quote.length == 4
    assert raining.words == ("raining", ",", "''")
    bearded = corpus.tokens[9]
    assert bearded.words == ("long-bearded",) and not bearded.attached_punctuation and bearded.length == 12
    assert [len(s.words) for s in corpus.sentences] == [5, 9, 5]
    assert corpus.sentences[1].word_token == (4, 4, 4, 5, 5, 5, 6, 7, 7)
    assert [t.sentence for t in corpus.tokens] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert corpus.sentences[2].tree.leaves() == ["A", "long-bearded", "man", "slept", "."]
    assert "/" not in str(corpus.sentences[0].tree)
    assert corpus.tokens[2].frequency is None and corpus.tokens[10].frequency == 0
    assert corpus.tokens[9].rt == 3500.0
    assert corpus.alignment["tokens_of_several_words"] == 5
    assert corpus.alignment["leaves_differ_from_token"] == [] and corpus.alignment["rt_word_differs"] == []
    assert [t.code for t in read_natural_stories(tmp_path, stories=["2"]).tokens] == [
        "2.1.whole", "2.2.whole", "2.3.whole", "2.4.whole"
    ]  # fmt: skip


def corpus_of(stories: list[list[tuple[str, float | None, float | None]]]) -> ReadingCorpus:
    """A TSV-like corpus from stories of sentences given as (token, rt, frequency) per token, the
    sentences split where a token ends in '.'."""
    tokens, sentences = [], []
    for s, story in enumerate(stories):
        current = []
        for position, (text, rt, frequency) in enumerate(story, 1):
            words = ptb_words(text)
            plain = text.strip(".,'")
            code, name = f"{s}.{position}", str(s)
            sentence, attached = len(sentences), plain != text
            token = Token(code, name, position, text, words, sentence, rt, frequency, len(plain), attached)
            tokens.append(token)
            current.append(len(tokens) - 1)
            if text.endswith(".") or position == len(story):
                word_token = tuple(i for i in current for _ in tokens[i].words)
                words_of = tuple(w for i in current for w in tokens[i].words)
                sentences.append(Sentence(str(s), words_of, word_token))
                current = []
    return ReadingCorpus("tsv", tokens, sentences, {}, "rt", "given")


def test_exclusions_say_every_reason_and_count_them():
    story = [
        ("Mills", 300, 10), ("grind", 310, 10), ("corn", 50, 10), ("daily", 320, None), ("here", 330, 10),
        ("now.", 340, 10), ("Owners", 350, 10), ("sleep", None, 10), ("well", 360, 10), ("today", 370, 10),
    ]  # fmt: skip
    corpus = corpus_of([story])
    n = len(corpus.tokens)
    unknown = np.zeros(n, dtype=bool)
    unknown[6] = True  # "Owners"
    scored = np.ones(n, dtype=bool)
    values = TokenSurprisals(np.arange(n, dtype=float), unknown, scored)
    excluded = exclusions(corpus, {"m": values}, rt_range=(100, 3000), spillover=2)
    reasons = excluded.reasons
    assert reasons[0] == ("first_in_sentence", "no_previous_token")
    assert reasons[1] == ("no_previous_token",)
    assert reasons[2] == ("rt_out_of_range",)
    assert reasons[3] == ("no_frequency",)
    assert reasons[4] == ("previous_no_frequency",)
    assert reasons[5] == ("last_in_sentence", "attached_punctuation", "previous_no_frequency")
    assert reasons[6] == ("first_in_sentence", "unknown_word")
    assert reasons[7] == ("no_rt", "previous_unknown_word")
    assert reasons[8] == ("previous_unknown_word",) and reasons[9] == ("last_in_sentence",)
    counts = excluded.counts()
    assert counts["kept"] == 0 and counts["excluded"] == n and counts["previous_unknown_word"] == 2
    kept = exclusions(corpus, {"m": values}, spillover=1, keep_unknown=True)
    assert kept.reasons[7] == ("no_rt",) and kept.reasons[8] == () and kept.unknown_words == "kept"
    unscored = TokenSurprisals(values.bits, unknown, np.arange(n) != 8)
    assert exclusions(corpus, {"m": unscored}, spillover=1, keep_unknown=True).reasons[9] == (
        "last_in_sentence", "previous_unscored"
    )  # fmt: skip


@pytest.fixture(scope="module")
def subword_lm(tmp_path_factory):
    texts = ["the old mill owners said it was raining", "she said the owners slept", "a bearded man"] * 5
    words = [t.split() + [",", ".", "``", "''", "'s"] for t in texts]
    vocab = SubwordVocab.train(words, vocab_size=293, symbols=SYMBOLS)
    torch.manual_seed(0)
    return build_model({"model": "lm", **TINY}, {"vocab": vocab})


def test_a_tokens_surprisal_sums_its_words_and_their_pieces(tmp_path, subword_lm):
    corpus = read_natural_stories(write_natural_stories(tmp_path))
    scorer = Scorer(subword_lm)
    sentences = [list(s.words) for s in corpus.sentences]
    assert story_context(scorer, sentences, "auto")[0] == "sentence"
    stories = corpus.story_sentences()
    bits, unknown, unscored = story_surprisals(scorer, sentences, stories, context="sentence")
    assert unscored == {}
    values = token_surprisals(corpus, bits, unknown)
    pieces = scorer.score(sentences)
    assert max(len(p.pieces) - len(p.words) for p in pieces) > 3  # words of several pieces
    expected = np.zeros(len(corpus.tokens))
    for sentence, scored in zip(corpus.sentences, pieces):
        for piece_logprob, word in zip(scored.piece_logprobs, scored.piece_word):
            expected[sentence.word_token[word]] -= piece_logprob / math.log(2)
    np.testing.assert_allclose(values.bits, expected, rtol=1e-6)
    assert values.scored.all() and not values.unknown.any()  # byte fallback: no word unknown
    document = story_surprisals(scorer, sentences, stories, context="document")[0]
    alone = [scorer.score([[w for s in story for w in sentences[s]]])[0] for story in stories]
    np.testing.assert_allclose(np.concatenate(document[:2]), -alone[0].word_logprobs / math.log(2), rtol=1e-6)


def test_stories_are_read_as_documents_by_models_trained_on_documents(tmp_path):
    corpus = read_natural_stories(write_natural_stories(tmp_path))
    sentences = [list(s.words) for s in corpus.sentences]
    stories = [[w for s in story for w in sentences[s]] for story in corpus.story_sentences()]
    for symbols, expected in ((SYMBOLS, "sentence"), ([*SYMBOLS, "(DOC", "DOC)"], "document")):
        torch.manual_seed(0)
        vocab = WordVocab.build(sentences, min_freq=1, symbols=symbols)
        lm = build_model({"model": "lm", **TINY}, {"vocab": vocab})
        assert story_context(Scorer(lm), stories, "auto")[0] == expected
        assert story_context(Scorer(lm), stories, "sentence") == ("sentence", "asked for")
    assert story_context(Scorer(lm), stories, "document") == ("document", "asked for")
    with pytest.raises(ValueError, match="context must be one of"):
        story_context(Scorer(lm), stories, "paragraph")


def test_gold_trees_with_labels_the_model_does_not_know_are_not_scored(tmp_path):
    (tmp_path / "ns").mkdir()
    corpus = read_natural_stories(write_natural_stories(tmp_path / "ns"))
    sentences = [list(s.words) for s in corpus.sentences]
    torch.manual_seed(0)
    vocab = WordVocab.build(sentences, min_freq=1, symbols=SYMBOLS)
    tg = build_model({"model": "tg", **TINY}, {"vocab": vocab})
    trees = [s.tree for s in corpus.sentences]
    trees[2] = Tree("S", [Tree("NP", ["A", "long-bearded", "man"]), Tree("PP", ["slept"]), "."])
    bits, _, unscored = story_surprisals(Scorer(tg, method="gold"), sentences, corpus.story_sentences(),
                                         context="sentence", trees=trees)  # fmt: skip
    assert unscored == {2: "its tree has labels the model does not know: PP"}
    assert bits[2] is None and bits[0] is not None and np.isfinite(bits[1]).all()
    values = token_surprisals(corpus, bits, [[False] * len(w) for w in sentences])
    assert values.n_unscored == 4 and np.isnan(values.bits[8:]).all()


def test_least_squares_and_the_gaussian_likelihood_in_closed_form():
    # y = a + b x through (0, 0), (1, 1), (2, 4): b = Sxy / Sxx = 4 / 2, a = 5/3 - 2; RSS = 2/3.
    x = np.array([[1, 0], [1, 1], [1, 2]], dtype=float)
    beta, variance = least_squares(x, np.array([0.0, 1.0, 4.0]))
    np.testing.assert_allclose(beta, [-1 / 3, 2])
    assert variance == pytest.approx(2 / 9)
    assert gaussian_loglik(np.array([2.0]), np.array([1.0]), 2 / 9)[0] == pytest.approx(
        -0.5 * math.log(2 * math.pi * 2 / 9) - 1 / (2 * 2 / 9)
    )
    # Leave-one-out on four points: each held-out point under the line through the other three.
    x4, y4 = np.column_stack([np.ones(4), [0.0, 1, 2, 3]]), np.array([0.0, 1.5, 1.0, 3.5])
    folds = fold_of(4, 4, seed=3)
    assert sorted(folds) == [0, 1, 2, 3]
    held = heldout_loglik(x4, y4, folds)
    for i in range(4):
        rest = np.arange(4) != i
        slope, intercept = np.polyfit(x4[rest, 1], y4[rest], 1)
        residuals = y4[rest] - (intercept + slope * x4[rest, 1])
        var = np.mean(residuals**2)
        mean = intercept + slope * x4[i, 1]
        assert held[i] == pytest.approx(-0.5 * math.log(2 * math.pi * var) - (y4[i] - mean) ** 2 / (2 * var))
    assert np.bincount(fold_of(23, 10, seed=0)).tolist() == [3, 3, 3] + [2] * 7


def simulated(n_tokens: int, seed: int) -> tuple[ReadingCorpus, np.ndarray]:
    """A corpus whose reading times are made from length, frequency and a known surprisal (with
    spill-over), plus noise; returns it and that surprisal per token."""
    rng = np.random.default_rng(seed)
    surprisal = rng.gamma(4, 2, n_tokens)
    length = rng.integers(1, 12, n_tokens)
    frequency = np.exp(rng.normal(12, 3, n_tokens)).round()
    rt = 280 + 6 * length - 4 * np.log(frequency + 1) + np.zeros(n_tokens)
    rt[2:] += 3 * surprisal[2:] + 1.5 * surprisal[1:-1] + 0.5 * surprisal[:-2]
    rt += rng.normal(0, 25, n_tokens)
    tokens = [
        Token(str(i), "0", i, "w", ("w",), 0, float(rt[i]), float(frequency[i]), int(length[i]), False)
        for i in range(n_tokens)
    ]
    sentence = Sentence("0", ("w",) * n_tokens, tuple(range(n_tokens)))
    corpus = ReadingCorpus("tsv", tokens, [sentence], {}, "rt", "given")
    return corpus, surprisal


def test_delta_loglik_is_zero_for_noise_and_positive_for_the_true_surprisal():
    corpus, surprisal = simulated(3000, seed=1)
    kept = np.ones(3000, dtype=bool)
    kept[:2] = False
    noise = np.random.default_rng(5).gamma(4, 2, 3000)
    result = delta_loglik(corpus, kept, {"true": surprisal, "noise": noise}, spillover=2, folds=10, seed=0)
    true, random = result.models["true"], result.models["noise"]
    assert true.interval.low > 0.1, true.interval
    # Pure noise: near 0, a little below (three useless coefficients fit to the training folds).
    assert abs(random.interval.estimate) < 0.003 and random.interval.high < 0.003, random.interval
    assert true.surprisal_coefficients["surprisal"] == pytest.approx(3, abs=0.3)
    assert true.surprisal_coefficients["surprisal_prev1"] == pytest.approx(1.5, abs=0.3)
    assert result.n_tokens == 2998 and len(true.per_fold) == 10
    assert result.full_predictors == ["intercept", *predictor_names(2, surprisal=True)]
    assert float(np.mean(true.per_token)) == pytest.approx(true.interval.estimate)
    with pytest.raises(RegressionError, match="2998 tokens kept, too few for 3000-fold"):
        delta_loglik(corpus, kept, {"true": surprisal}, folds=3000)
    kept[1] = True  # its second previous token is not there
    with pytest.raises(RegressionError, match="fewer than 2 tokens before it"):
        delta_loglik(corpus, kept, {"true": surprisal})


def test_the_natural_stories_files(shared_data):
    folder = shared_data / "reading_times" / "naturalstories"
    if not folder.is_dir():
        pytest.skip(f"the Natural Stories corpus is not at {folder}")
    corpus = read_natural_stories(folder, stories=["1", "2"])
    assert corpus.stories == ["1", "2"]
    assert len(corpus.tokens) == 1073 + 990
    owners = next(t for t in corpus.tokens if t.code == "1.57.whole")
    assert owners.words == ("owners", ".") and owners.attached_punctuation and owners.rt is not None
    assert corpus.alignment["leaves_differ_from_token"] == []
    assert [d["code"] for d in corpus.alignment["rt_word_differs"]] == ["2.749.whole"]  # peeked/peaked
    assert all(s.tree is not None and s.tree.leaves() == list(s.words) for s in corpus.sentences)
    assert sum(len(s.words) for s in corpus.sentences) == corpus.alignment["model_words"]


def test_malformed_reading_time_files_name_file_and_line(tmp_path):
    def rts_error(lines):
        folder = write_natural_stories(tmp_path / f"case{len(list(tmp_path.iterdir()))}", rts_lines=lines)
        with pytest.raises(ReadingTimeFormatError) as caught:
            read_natural_stories(folder)
        assert isinstance(caught.value, InputFormatError)
        assert caught.value.path.endswith("RTS_processed_wordinfo.tsv")
        return caught.value

    missing = rts_error(["word\tzone\titem", "The\t1\t1"])
    assert missing.line == 1 and "meanItemRT" in str(missing)
    good = "word\tzone\titem\tmeanItemRT"
    assert rts_error([good, "The\t1\t1\t350", "old\t2\t1\tslow"]).line == 3
    unmatched = rts_error([good, "The\t1\t1\t350", "old\t9\t1\t350"])
    assert unmatched.line == 3 and "1.9" in str(unmatched)
    shifted = [good] + [  # each RT row one token late: the words no longer match
        f"{whole.replace(' ', '')}\t{code.split('.')[1]}\t{code.split('.')[0]}\t300"
        for (code, _, _, _), (_, whole, _, _) in zip(WORDS_TSV, WORDS_TSV[1:])
    ]
    assert "not aligned" in str(rts_error(shifted))
    assert rts_error([good, "The\t1\t1"]).line == 2  # a field missing

    table = tmp_path / "rts.tsv"
    table.write_text("text\tposition\ttoken\trt\nA\t1\tThe\t300\n")
    with pytest.raises(ReadingTimeFormatError, match="frequency") as caught:
        read_rt_table(table)
    assert caught.value.line == 1 and caught.value.path == str(table)
    table.write_text("text\tposition\ttoken\trt\tfrequency\nA\t1\tThe\t300\t5\nA\t2\tdog.\tfast\t5\n")
    with pytest.raises(ReadingTimeFormatError, match="rt is 'fast'") as caught:
        read_rt_table(table)
    assert caught.value.line == 3
    table.write_text("text\tposition\ttoken\trt\tfrequency\nA\t1\tThe\t300\t5\nA\t1\tdog.\t300\t5\n")
    with pytest.raises(ReadingTimeFormatError, match="again"):
        read_rt_table(table)
    parses = write_natural_stories(tmp_path / "parses") / "parses" / "all-parses-aligned.txt.penn"
    parses.write_text(PARSES.replace("old/1.2", "old/1.9"))
    with pytest.raises(TreeFormatError, match="1.9"):
        read_natural_stories(tmp_path / "parses")


def test_a_plain_table_reads_texts_sentences_and_predictors(tmp_path):
    table = tmp_path / "rts.tsv"
    rows = ["text\tposition\ttoken\trt\tfrequency\tsentence\tfixations",
            "B\t2\twalked.\t310\t50\t1\t2", "B\t1\tShe\t300\t90\t1\t1", "A\t1\t'Hi,'\t280\tNA\t1\t1",
            "A\t2\tsaid\tNA\t40\t1\tNA", "A\t3\tTom.\t300\t30\t2\t1"]  # fmt: skip
    table.write_text("\n".join(rows) + "\n")
    corpus = read_reading_corpus(table, predictors=["fixations"])
    assert [t.code for t in corpus.tokens] == ["B.1", "B.2", "A.1", "A.2", "A.3"]
    assert [s.words for s in corpus.sentences] == [
        ("She", "walked", "."), ("``", "Hi", ",", "''", "said"), ("Tom", ".")
    ]  # fmt: skip
    hi = corpus.tokens[2]
    assert hi.attached_punctuation and hi.length == 2 and hi.frequency is None
    assert corpus.tokens[3].rt is None and corpus.tokens[3].predictors == {"fixations": None}
    assert [t.code for t in read_reading_corpus(table, stories=["A"]).tokens] == ["A.1", "A.2", "A.3"]


# --- the command -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rt")
    rng = np.random.default_rng(0)
    lexicon = "the a dog cat mill owner man woman saw heard liked old big small near by".split()
    texts, rows = [], ["text\tposition\ttoken\trt\tfrequency"]
    for text in ("s1", "s2"):
        position = 0
        for _ in range(30):
            words = list(rng.choice(lexicon, rng.integers(4, 9)))
            texts.append(words + ["."])
            for k, word in enumerate(words):
                position += 1
                shown = word + ("." if k == len(words) - 1 else "")
                rt = 300 + 10 * len(word) + rng.normal(0, 20)
                rows.append(f"{text}\t{position}\t{shown}\t{rt:.1f}\t{1000 * (1 + lexicon.index(word))}")
    (folder / "rts.tsv").write_text("\n".join(rows) + "\n")
    vocab = WordVocab.build(texts, min_freq=1, symbols=SYMBOLS)
    for name in ("lm", "tg"):
        torch.manual_seed(0)
        build_model({"model": name, **TINY}, {"vocab": vocab}).save_pretrained(folder / name / "best")
    perplexity = {"perplexity_per_word": 250.0, "perplexity_per_token": 200.0}
    record = result_record("perplexity", perplexity | {"marginalisation": {"method": "exact"}})
    write_result(folder / "lm" / "results" / "perplexity.json", record)
    return folder


def invoke(*args, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, (result.output, result.exception)
    return result.output


BEAM = ("--action-beam", "6", "--word-beam", "2", "--fast-track", "1")


def test_eval_rt_end_to_end(tiny_models, tmp_path):
    out = tmp_path / "rt.json"
    text = invoke(
        "eval", "rt", tiny_models / "rts.tsv", "--model", tiny_models / "lm" / "best",
        "--model", tiny_models / "tg" / "best", *BEAM, "--no-progress", "--out", out,
    )  # fmt: skip
    assert "lm" in text and "tg − lm" in text
    record = read_result(out)
    check_result(record, out)
    result = record["result"]
    assert record["kind"] == "reading_times" and result["n_tokens"] == result["kept"] + result["excluded"]
    lm, tg = result["models"]
    assert (lm["method"], lm["context"], tg["method"], tg["action_beam"]) == ("exact", "sentence", "beam", 6)
    assert lm["perplexity"]["per_word"] == 250.0 and tg["perplexity"] is None
    assert result["exclusions"]["first_in_sentence"] == 60 and result["exclusions"]["last_in_sentence"] == 60
    with open(tmp_path / "rt.tokens.tsv", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) == result["n_tokens"] and rows[0]["code"] == "s1.1"
    columns = {"surprisal_bits:lm", "surprisal_bits:tg", "unknown:lm", "excluded", "reasons", "rt_ms"}
    assert columns <= set(rows[0])
    assert sum(row["excluded"] == "FALSE" for row in rows) == result["kept"]
    assert (tmp_path / "rt.png").stat().st_size > 0  # lm has a perplexity

    invoke("report", out, "--out", tmp_path / "report")
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Reading times" in report and "| lm |" in report and "| tg |" in report

    model = ("--model", str(tiny_models / "lm" / "best"))
    corpus = tmp_path / "x.tokens.tsv"
    corpus.write_text((tiny_models / "rts.tsv").read_text())
    for output in (corpus, tmp_path / "x.json"):  # the result, or the table beside it, replaces the corpus
        refused = CliRunner().invoke(app, ["eval", "rt", str(corpus), *model, "--out", str(output)])
        assert isinstance(refused.exception, OutputIsInputError), refused.output
    bad = invoke("eval", "rt", tiny_models / "rts.tsv", *model, "--rt-range", "300,100", code=2)
    assert "--rt-range" in bad
    corpus = tiny_models / "rts.tsv"
    printed = invoke("eval", "rt", corpus, *model, "--json", "--stories", "s2", "--no-progress")
    assert json.loads(printed)["stories"] == ["s2"]
    gold = invoke("eval", "rt", corpus, *model, "--method", "gold", "--action-beam", "6", code=2)
    assert "--action-beam is for the beam search" in gold


def test_eval_rt_on_two_natural_stories(shared_data, tiny_models, tmp_path):
    folder = shared_data / "reading_times" / "naturalstories"
    if not folder.is_dir():
        pytest.skip(f"the Natural Stories corpus is not at {folder}")
    out = tmp_path / "ns.json"
    invoke("eval", "rt", folder, "--stories", "1,2", "--model", tiny_models / "lm" / "best", "--keep-unknown",
           "--no-progress", "--out", out)  # fmt: skip
    result = read_result(out)["result"]
    assert (result["corpus"], result["stories"], result["n_tokens"]) == ("natural-stories", ["1", "2"], 2063)
    assert result["models"][0]["unknown_tokens"] > 1000 and result["unknown_words"] == "kept"
    assert result["exclusions"]["attached_punctuation"] > 0


def test_a_spillover_or_fold_count_the_corpus_cannot_serve_is_refused_before_scoring():
    from syntaxlm.eval.reading_regression import RegressionError, check_regression_sizes

    check_regression_sizes(100, spillover=2, folds=10)
    for spillover, folds in ((10**9, 10), (100, 10), (-1, 10), (2, 10**9), (2, 101), (2, 1)):
        with pytest.raises(RegressionError, match=r"expected .* \(the corpus has 100 tokens\)"):
            check_regression_sizes(100, spillover=spillover, folds=folds)
