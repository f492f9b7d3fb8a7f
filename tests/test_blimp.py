import json
import math
import re
from collections import Counter

import pytest

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.blimp import (
    PHENOMENA,
    BlimpFormatError,
    BlimpScoreError,
    MinimalPair,
    blimp_10_percent,
    differing_words,
    read_blimp,
    read_blimp_logprobs,
    read_pair_logprobs,
    read_paradigm,
    score_blimp,
)


def char_logprob(sentences):
    """A deterministic fake model: every character costs one nat."""
    return [-float(len(sentence)) for sentence in sentences]


@pytest.fixture(scope="module")
def blimp_pairs(shared_data):
    return read_blimp(shared_data / "blimp" / "data")


@pytest.mark.shared_data
def test_real_data_counts_and_grouping(blimp_pairs):
    per_paradigm = Counter(pair.paradigm for pair in blimp_pairs)
    assert len(per_paradigm) == 67 and set(per_paradigm.values()) == {1000}
    terms = {pair.paradigm: pair.linguistics_term for pair in blimp_pairs}
    assert len(set(terms.values())) == 13
    phenomena = Counter(PHENOMENA[term] for term in terms.values())
    assert len(phenomena) == 12
    # The paper's paradigm counts per phenomenon; s-selection's two go to argument structure.
    assert phenomena == {
        "anaphor_agreement": 2,
        "argument_structure": 9,
        "binding": 7,
        "control_raising": 5,
        "determiner_noun_agreement": 8,
        "ellipsis": 2,
        "filler_gap_dependency": 7,
        "irregular_forms": 2,
        "island_effects": 8,
        "npi_licensing": 7,
        "quantifiers": 4,
        "subject_verb_agreement": 6,
    }
    assert {uid for uid, term in terms.items() if term == "s-selection"} == {
        "animate_subject_passive",
        "animate_subject_trans",
    }


@pytest.mark.shared_data
def test_real_data_scored_with_a_fake_model(blimp_pairs):
    result = score_blimp(blimp_pairs, char_logprob, batch_size=1000)
    assert len(result.paradigms) == 67 and len(result.phenomena) == 12
    shorter_good = Counter(pair.paradigm for pair in blimp_pairs if len(pair.good) < len(pair.bad))
    assert {p.paradigm: p.n_correct for p in result.paradigms} == {
        uid: shorter_good[uid] for uid in {pair.paradigm for pair in blimp_pairs}
    }
    assert result.overall == pytest.approx(sum(p.n_correct for p in result.paradigms) / 67_000)


@pytest.mark.shared_data
def test_blimp_10_percent_takes_the_first_100_pair_ids_numerically(blimp_pairs):
    # pairID is a string in the files, the pair's index 0..999 (README), and the lines are in that
    # order; numeric order therefore gives the first 100 lines of each paradigm. String order would
    # not: "0", "1", "10", "100", "101", ...
    subset = blimp_10_percent(blimp_pairs)
    assert len(subset) == 6700
    by_paradigm: dict[str, list[int]] = {}
    for pair in subset:
        by_paradigm.setdefault(pair.paradigm, []).append(pair.pair_id)
    assert all(ids == list(range(100)) for ids in by_paradigm.values())
    assert sorted(str(i) for i in range(1000))[:5] == ["0", "1", "10", "100", "101"]
    assert blimp_10_percent(list(reversed(blimp_pairs))) == sorted(
        subset, key=lambda pair: (-sorted(by_paradigm).index(pair.paradigm), pair.pair_id)
    )


@pytest.mark.shared_data
def test_reading_named_paradigms_only(shared_data):
    pairs = read_blimp(shared_data / "blimp" / "data", paradigms=["ellipsis_n_bar_2", "adjunct_island"])
    assert [pairs[0].paradigm, pairs[-1].paradigm] == ["ellipsis_n_bar_2", "adjunct_island"]
    assert pairs[1000] == MinimalPair(
        paradigm="adjunct_island",
        pair_id=0,
        good="Who should Derek hug after shocking Richard?",
        bad="Who should Derek hug Richard after shocking?",
        linguistics_term="island_effects",
        field="syntax",
    )
    with pytest.raises(FileNotFoundError, match="no paradigm file for nonexistent"):
        read_blimp(shared_data / "blimp" / "data", paradigms=["nonexistent"])


def pair(paradigm: str, pair_id: int, term: str) -> MinimalPair:
    return MinimalPair(paradigm, pair_id, f"good {pair_id}", f"bad {pair_id}", term, "syntax")


def test_accuracies_by_hand():
    pairs = [
        pair("a1", 0, "s-selection"),
        pair("a1", 1, "s-selection"),
        pair("a2", 0, "argument_structure"),
        pair("a2", 1, "argument_structure"),
        pair("a2", 2, "argument_structure"),
        pair("a2", 3, "argument_structure"),
        pair("b1", 0, "binding"),
    ]
    logprobs = [
        (-1.0, -2.0),  # a1: right
        (-3.0, -3.0),  # a1: a tie is wrong
        (-1.0, -5.0),  # a2: right
        (-2.0, -1.0),  # a2: wrong
        (-math.inf, -1.0),  # a2: wrong
        (-4.0, -math.inf),  # a2: right
        (-9.0, -8.0),  # b1: wrong
    ]
    result = score_blimp(pairs, logprobs=logprobs)
    assert [(p.paradigm, p.n_correct, p.n_pairs, p.accuracy) for p in result.paradigms] == [
        ("a1", 1, 2, 0.5),
        ("a2", 2, 4, 0.5),
        ("b1", 0, 1, 0.0),
    ]
    assert [p.phenomenon for p in result.paradigms] == ["argument_structure"] * 2 + ["binding"]
    assert result.phenomena == {"argument_structure": 0.5, "binding": 0.0}
    assert result.overall == pytest.approx(1 / 3)  # mean of paradigms, not of pairs (3/7)
    assert [p.correct for p in result.pairs] == [True, False, True, False, False, True, False]
    record = json.loads(json.dumps(result.to_json()))
    assert record["n_paradigms"] == 3 and record["phenomena"] == {"argument_structure": 0.5, "binding": 0.0}
    assert record["pairs"][1] == {
        "paradigm": "a1",
        "pair_id": 1,
        "logprob_good": -3.0,
        "logprob_bad": -3.0,
        "correct": False,
    }
    text = result.render(per_paradigm=True)
    assert "argument_structure" in text and "  a2" in text
    assert re.search(r"^argument_structure +2 +6 +0\.500$", text, re.MULTILINE)  # paradigms, pairs
    assert re.search(r"^overall +3 +7 +0\.333$", text, re.MULTILINE)


def test_scorer_is_called_in_batches_of_good_then_bad():
    pairs = [pair("p", i, "binding") for i in range(5)]
    calls = []

    def scorer(batch):
        calls.append(list(batch))
        return [-1.0 if sentence.startswith("good") else -2.0 for sentence in batch]

    result = score_blimp(pairs, scorer, batch_size=4)
    assert [len(batch) for batch in calls] == [4, 4, 2]
    assert calls[0] == ["good 0", "bad 0", "good 1", "bad 1"]
    assert result.overall == 1.0


@pytest.mark.parametrize(
    ("good", "bad", "in_good", "in_bad"),
    [
        ("the dog barks", "the dog bark", [2], [2]),  # substituted
        ("who did you see", "who you did see", [2], [1]),  # moved: "you" (or "did")
        ("he left", "he has left", [], [1]),  # inserted
        ("a b", "a b", [], []),
    ],
)
def test_differing_words_are_those_outside_the_shared_blocks(good, bad, in_good, in_bad):
    assert differing_words(good.split(), bad.split()) == (in_good, in_bad)


def test_unknown_words_per_paradigm_phenomenon_and_overall():
    known = {"the", "dog", "dogs", "barks", "bark"}

    def words(sentence):
        return sentence.split(), [word not in known for word in sentence.split()]

    sentences = [
        ("p1", "subject_verb_agreement", "the dog barks", "the dog bark"),  # none unknown
        ("p1", "subject_verb_agreement", "the kittens bark", "the kittens barks"),  # 2, not where they differ
        ("p1", "subject_verb_agreement", "the dog yelps", "the dog yelp"),  # 2, where they differ
        ("p2", "determiner_noun_agreement", "the dogs bark", "the kitten bark"),  # 1, where they differ
    ]
    pairs = [
        MinimalPair(uid, i, good, bad, term, "morphology") for i, (uid, term, good, bad) in enumerate(sentences)
    ]
    result = score_blimp(pairs, logprobs=[(-1.0, -2.0)] * 4, words=words)
    counts = {
        uid: (u.n_words, u.n_unknown_words, u.pairs_differing_in_unknown_word)
        for uid, u in result.unknown_words.items()
    }
    assert counts == {"p1": (18, 4, 1), "p2": (6, 1, 1)}
    overall = result.overall_unknown_words
    assert (overall.n_words, overall.n_unknown_words, overall.pairs_differing_in_unknown_word) == (24, 5, 2)
    assert overall.unknown_word_rate == 5 / 24
    record = json.loads(json.dumps(result.to_json()))
    assert record["n_unknown_words"] == 5 and record["pairs_differing_in_unknown_word"] == 2
    assert record["phenomena_unknown_words"]["determiner_noun_agreement"] == {
        "n_words": 6,
        "n_unknown_words": 1,
        "pairs_differing_in_unknown_word": 1,
        "unknown_word_rate": 1 / 6,
    }
    assert record["paradigms"][0]["unknown_word_rate"] == 4 / 18
    text = result.render(per_paradigm=True)
    assert re.search(r"subject_verb_agreement +1 +\d+ +1\.000 +22\.22%", text)
    assert re.search(r"overall +2 +4 +1\.000 +20\.83%", text)
    assert text.endswith(
        "unknown words: 5 of 24 (20.83%), read as an unknown-word class or <unk>; 2 of 4 pairs differ in one"
    )
    without = score_blimp(pairs, logprobs=[(-1.0, -2.0)] * 4)
    assert "n_words" not in without.to_json() and "unknown" not in without.render(per_paradigm=True)


def test_score_errors():
    pairs = [pair("p", 0, "binding"), pair("p", 1, "binding")]
    with pytest.raises(BlimpScoreError, match="exactly one"):
        score_blimp(pairs)
    with pytest.raises(BlimpScoreError, match="1 log-probability pairs for 2"):
        score_blimp(pairs, logprobs=[(-1.0, -2.0)])
    with pytest.raises(BlimpScoreError, match="returned 1 log-probabilities for 4 sentences"):
        score_blimp(pairs, lambda batch: [-1.0])
    with pytest.raises(BlimpScoreError, match="bad sentence of p pair 1 is nan"):
        score_blimp(pairs, logprobs=[(-1.0, -2.0), (-1.0, math.nan)])


GOOD_LINE = {
    "sentence_good": "Cats sleep.",
    "sentence_bad": "Cats sleeps.",
    "field": "morphology",
    "linguistics_term": "subject_verb_agreement",
    "UID": "toy",
    "pairID": "0",
}


@pytest.mark.parametrize(
    "second_line, message",
    [
        ('{"sentence_good": "x"', r"toy\.jsonl:2:\d+: invalid JSON"),
        ("[1, 2]", r"toy\.jsonl:2: a JSON list"),
        (json.dumps({**GOOD_LINE, "pairID": "1", "sentence_bad": ""}), "field 'sentence_bad' is ''"),
        (json.dumps({**GOOD_LINE, "pairID": "x1"}), "pairID is 'x1'"),
        (json.dumps({**GOOD_LINE, "pairID": 0}), "pairID 0 appears twice"),
        (json.dumps({**GOOD_LINE, "pairID": "1", "UID": "other"}), "toy/subject_verb_agreement"),
        (json.dumps({**GOOD_LINE, "pairID": "1", "linguistics_term": "syntax"}), "unknown linguistics_term"),
    ],
)
def test_format_errors_name_file_and_line(tmp_path, second_line, message):
    path = tmp_path / "toy.jsonl"
    path.write_text(json.dumps(GOOD_LINE) + "\n" + second_line + "\n")
    with pytest.raises(BlimpFormatError, match=message) as caught:
        read_paradigm(path)
    assert caught.value.line == 2 and caught.value.path == str(path)


def test_reading_a_folder(tmp_path):
    (tmp_path / "toy.jsonl").write_text(json.dumps(GOOD_LINE) + "\n\n")
    assert read_blimp(tmp_path) == [
        MinimalPair("toy", 0, "Cats sleep.", "Cats sleeps.", "subject_verb_agreement", "morphology")
    ]
    with pytest.raises(FileNotFoundError, match="not a folder of BLiMP paradigm files"):
        read_blimp(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no BLiMP paradigm files"):
        read_blimp(tmp_path / "empty")


def test_blimp_logprobs_are_read_by_uid_and_pair_id(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text(
        '{"UID": "a", "pairID": "7", "good": -1, "bad": -2.5}\n'
        '{"UID": "a", "pairID": 8, "good": "-3", "bad": -4}\n'
    )
    assert read_blimp_logprobs(path) == {("a", 7): (-1.0, -2.5), ("a", 8): (-3.0, -4.0)}


def _pair(pair_id: int) -> MinimalPair:
    return MinimalPair("a", pair_id, "Cats sleep.", "Cats sleeps.", "subject_verb_agreement", "morphology")


def test_pair_logprobs_come_in_the_order_of_the_pairs(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text(
        '{"UID": "a", "pairID": 7, "good": -1, "bad": -2.5}\n'
        '{"UID": "a", "pairID": 8, "good": -3, "bad": -4}\n'
        '{"UID": "b", "pairID": 0, "good": -5, "bad": -6}\n'
    )
    assert read_pair_logprobs(path, [_pair(8), _pair(7)]) == [(-3.0, -4.0), (-1.0, -2.5)]


def test_pairs_without_a_score_line_are_an_error_naming_the_file_and_the_first(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text('{"UID": "a", "pairID": 7, "good": -1, "bad": -2.5}\n')
    with pytest.raises(InputFormatError) as caught:
        read_pair_logprobs(path, [_pair(7), _pair(9), _pair(3)])
    assert caught.value.path == str(path)
    assert str(caught.value) == f"{path}: 2 pairs have no score, the first a pair 9"
    path.write_text('{"UID": "a", "pairID": 7, "good": -1}\n')
    with pytest.raises(InputFormatError) as caught:
        read_pair_logprobs(path, [_pair(7)])
    assert (caught.value.path, caught.value.line) == (str(path), 1)


FIRST_SCORE = b'{"UID": "a", "pairID": 1, "good": -1, "bad": -2}\n'


@pytest.mark.parametrize(
    ("second_line", "column", "fragment"),
    [
        (b'{"UID": "\xe9"}', 10, "invalid UTF-8"),
        (b"[" * 5000, 5000, "nested 5000 deep"),
        (b'{"UID": "a", "pairID": 1e400}', None, "pairID inf"),
        (b'{"UID": "a", "pairID": 2, "good": 1%s, "bad": 0}' % (b"0" * 400), None, "log-prob of 401 digits"),
        (b'{"UID": ["a"], "pairID": 2}', None, "UID"),
        (b'{"UID": "a", "pairID": "1", "good": -3, "bad": -4}', None, "'a' pair 1 appears twice"),
    ],
    ids=["bytes", "deep", "huge pairID", "huge log-prob", "UID not a string", "pair twice"],
)
def test_bad_blimp_logprobs_are_errors_at_their_line(tmp_path, second_line, column, fragment):
    path = tmp_path / "scores.jsonl"
    path.write_bytes(FIRST_SCORE + second_line + b"\n")
    with pytest.raises(InputFormatError) as caught:
        read_blimp_logprobs(path)
    assert (caught.value.path, caught.value.line, caught.value.column) == (str(path), 2, column)
    assert fragment in str(caught.value)


def test_scored_pairs_are_saved_on_the_way_and_a_stopped_run_leaves_them(tmp_path, monkeypatch):
    import syntaxlm.jobs.blimp as kept
    from syntaxlm.jobs.blimp import score_pairs, scored_pairs

    monkeypatch.setattr(kept, "SAVE_EVERY_S", 0.0)  # a save after every batch
    model = tmp_path / "model.safetensors"
    model.write_bytes(b"weights")
    pairs = [pair("p", i, "binding") for i in range(5)]
    calls = []

    def scorer(batch):
        calls.append(batch)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the run stops in its third batch
        return [-1.0 if sentence.startswith("good") else -2.0 for sentence in batch]

    path, options = tmp_path / "blimp.logprobs.json", {"method": "exact"}
    settings = {"path": path, "model_file": model, "options": options, "batch_size": 4, "progress": False}
    with pytest.raises(KeyboardInterrupt):
        score_pairs(scorer, pairs, {}, **settings)
    saved = scored_pairs(path, model, options)
    assert saved == {("p", i): (-1.0, -2.0) for i in range(4)}  # the two batches before the stop
    rest = [p for p in pairs if (p.paradigm, p.pair_id) not in saved]
    calls.clear()
    done = score_pairs(scorer, rest, saved, **settings)
    assert calls == [["good 4", "bad 4"]] and len(done) == 5
    assert scored_pairs(path, model, options) == done
