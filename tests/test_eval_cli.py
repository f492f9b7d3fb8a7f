"""``syntaxlm eval`` on precomputed inputs: parses, distances, BLiMP scores, generations."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from syntaxlm.errors import InputFormatError
from tests.test_cli import run

GOLD = (
    "(S (NP (DT the) (NN bird)) (VP (VBZ sings)) (. .))\n(S (NP (PRP It)) (VP (VBD flew) (ADVP (RB away))))\n"
)


def test_eval_parse_with_gold_tags(tmp_path):
    gold, pred = tmp_path / "gold.trees", tmp_path / "pred.trees"
    gold.write_text(GOLD)
    pred.write_text("(S (NP the bird) (VP sings .))\n(S (NP It) (VP flew away))\n")
    result = run(
        "eval", "parse", "--gold", gold, "--pred", pred, "--gold-tags", "--json", "--out", tmp_path / "r.json"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]["all"]
    assert json.loads((tmp_path / "r.json").read_text())["result"]["summary"]["all"] == summary
    # sentence 2 misses (ADVP away): 6 of 7 gold brackets matched, all 6 test brackets right
    assert round(summary["recall"], 2) == 85.71 and summary["precision"] == 100
    text = run("eval", "parse", "--gold", gold, "--pred", pred, "--gold-tags", "--unlabeled").stdout
    assert "Bracketing FMeasure" in text


def test_eval_parse_rejects_untagged_predictions_clearly(tmp_path):
    gold, pred = tmp_path / "gold.trees", tmp_path / "pred.trees"
    gold.write_text(GOLD)
    pred.write_text("(S (NP the bird) (VP sings .))\n")
    result = run("eval", "parse", "--gold", gold, "--pred", pred, "--gold-tags")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "1 predicted sentences for 2 gold sentences" in result.stderr


def test_eval_parse_writes_evalbs_error_lines_to_stderr(tmp_path, golden):
    data = json.loads((golden / "evalb.json").read_text())
    gold, pred = tmp_path / "gold.trees", tmp_path / "pred.trees"
    gold.write_text("".join(pair["gold"] + "\n" for pair in data["pairs"]))
    pred.write_text("".join(pair["test"] + "\n" for pair in data["pairs"]))
    expected = data["corpus"]["labeled"]["stderr"]  # e.g. "2 : Length unmatch (13|14)"
    assert expected
    result = run("eval", "parse", "--gold", gold, "--pred", pred)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == expected
    assert "Bracketing FMeasure" in result.stdout and "unmatch" not in result.stdout
    as_json = run("eval", "parse", "--gold", gold, "--pred", pred, "--json")
    assert json.loads(as_json.stdout)["errors"] == expected and as_json.stderr == ""


def test_eval_uf1_accepts_the_scripts_one_word_tree(tmp_path):
    gold = tmp_path / "gold.trees"
    gold.write_text("(S (NP (DT The) (NN bird)) (VP (VBZ sings)) (. .))\n(S (VP (VB Stop)) (. !))\n")
    pred = tmp_path / "pred.txt"
    pred.write_text('[["the", "bird"], "sings"]\n"Stop"\n')  # build_tree returns a lone word bare
    result = run("eval", "uf1", "--gold", gold, "--pred", pred, "--json")
    assert result.returncode == 0, result.stderr
    model = json.loads(result.stdout)["model"]
    assert (model["tp"], model["fp"], model["fn"]) == (1, 0, 0)
    pred.write_text('[["the", "bird"], "sings"]\nStop\n')
    unquoted = run("eval", "uf1", "--gold", gold, "--pred", pred)
    assert unquoted.returncode == 2 and f"{pred}:2:1: invalid JSON" in unquoted.stderr
    assert '"word" (a one-word tree)' in unquoted.stderr


def test_eval_blimp_unknown_paradigm_lists_the_paradigms_and_the_closest(tmp_path):
    data = tmp_path / "blimp"
    data.mkdir()
    for name in ("adjunct_island", "wh_island", "passive_1"):
        (data / f"{name}.jsonl").write_text("")
    scores = tmp_path / "scores.jsonl"
    scores.write_text("")
    result = run("eval", "blimp", "--logprobs", scores, "--data", data, "--paradigm", "adjunct_islnd")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "no paradigm file for adjunct_islnd (did you mean adjunct_island?)" in result.stderr
    assert "the 3 paradigms there: adjunct_island, passive_1, wh_island" in result.stderr
    result = run("eval", "blimp", "--logprobs", scores, "--data", data, "--paradigm", "zzz")
    assert "no paradigm file for zzz; the 3 paradigms there:" in result.stderr


def test_eval_uf1_from_trees_and_from_distances(tmp_path):
    gold = tmp_path / "gold.trees"
    gold.write_text("(S (NP (DT The) (JJ blue) (NN bird)) (VP (VBZ sings) (NP (CD 3) (NNS songs))) (. .))\n")
    pred = tmp_path / "pred.txt"
    pred.write_text('[["the", ["blue", "bird"]], ["sings", ["N", "songs"]]]\n')
    result = run("eval", "uf1", "--gold", gold, "--pred", pred, "--json")
    assert result.returncode == 0, result.stderr
    model = json.loads(result.stdout)["model"]
    # gold spans [0,3) [3,6) [4,6); predicted [0,3) [1,3) [3,6) [4,6): 3 of 4 right
    assert (model["tp"], model["fp"], model["fn"]) == (3, 1, 0)
    distances = tmp_path / "d.txt"
    distances.write_text("[0, 1, 0, 5, 2, 1]\n")
    result = run("eval", "uf1", "--gold", gold, "--distances", distances, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"]["tp"] == 3
    both = run("eval", "uf1", "--gold", gold, "--distances", distances, "--pred", pred)
    assert both.returncode == 2 and "exactly one of --pred and --distances" in both.stderr


def test_eval_blimp_from_precomputed_scores(tmp_path, shared_data):
    data = tmp_path / "blimp"
    data.mkdir()
    for name in ("adjunct_island.jsonl", "anaphor_gender_agreement.jsonl"):
        shutil.copy(shared_data / "blimp" / "data" / name, data / name)
    scores = tmp_path / "scores.jsonl"
    with scores.open("w") as handle:
        for uid in ("adjunct_island", "anaphor_gender_agreement"):
            for pair in range(1000):
                good, bad = (-10.0, -12.0) if (uid == "adjunct_island" or pair % 4) else (-12.0, -10.0)
                handle.write(json.dumps({"UID": uid, "pairID": pair, "good": good, "bad": bad}) + "\n")
    result = run("eval", "blimp", "--logprobs", scores, "--data", data, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    paradigms = {p["paradigm"]: p["accuracy"] for p in report["paradigms"]}
    assert paradigms == {"adjunct_island": 1.0, "anaphor_gender_agreement": 0.75}
    ten = json.loads(
        run("eval", "blimp", "--logprobs", scores, "--data", data, "--ten-percent", "--json").stdout
    )
    assert [p["n_pairs"] for p in ten["paradigms"]] == [100, 100]
    scores.write_text('{"UID": "adjunct_island", "pairID": 0, "good": -1}\n')
    bad = run("eval", "blimp", "--logprobs", scores, "--data", data)
    assert bad.returncode == 2 and f"{scores}:1:" in bad.stderr
    scores.write_bytes(b'{"UID": "adjunct_island", "pairID": 0, "good": -1, "bad": -2}\n{"UID": "\xe9"}\n')
    bad = run("eval", "blimp", "--logprobs", scores, "--data", data)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert f"error: {scores}:2:10: invalid UTF-8" in bad.stderr


def test_eval_gen(tmp_path):
    generated, references = tmp_path / "gen.txt", tmp_path / "ref.txt"
    generated.write_text("the cat sat on the mat\na dog ran in the park\n")
    references.write_text("the cat sat on the mat\na dog ran in the park\n")
    result = run("eval", "gen", "--generated", generated, "--references", references, "--json")
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)
    assert metrics["bleu"]["1"] == 1.0
    assert run("eval", "gen", "--generated", generated).returncode == 0


INVALID_UTF8 = b"the cat sat\nthe \xff dog ran\n"  # line 2, column 5


@pytest.mark.parametrize("which", ["--generated", "--references"])
def test_eval_gen_with_invalid_utf8_is_an_error_at_the_byte(tmp_path, which):
    text, valid = tmp_path / "texts.txt", tmp_path / "valid.txt"
    text.write_bytes(INVALID_UTF8)
    valid.write_text("the cat sat\n")
    files = {"--generated": valid, "--references": valid, which: text}
    result = run("eval", "gen", *(part for option, path in files.items() for part in (option, path)))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"error: {text}:2:5: invalid UTF-8" in result.stderr and "expected UTF-8 text" in result.stderr


@pytest.mark.parametrize(
    ("contents", "line", "column"),
    [(INVALID_UTF8, 2, 5), (b"\n(S \xc3(NN a))\n", 2, 4)],  # a later line; the first non-blank one
    ids=["sentence line", "line telling a treebank"],
)
def test_eval_ppl_with_invalid_utf8_is_an_error_at_the_byte(tmp_path, contents, line, column):
    # in-process (torch is imported once); the sentences are read before the model is loaded
    from typer.testing import CliRunner

    from syntaxlm.cli import app

    text = tmp_path / "texts.txt"
    text.write_bytes(contents)
    result = CliRunner().invoke(app, ["eval", "ppl", str(text), "--model", str(tmp_path)])
    error = result.exception
    assert isinstance(error, InputFormatError), repr(error)
    assert (error.path, error.line, error.column, error.expected) == (str(text), line, column, "UTF-8 text")
    assert "invalid UTF-8" in str(error)


PROPOSAL_INDICES = [
    ("\u00b9", "not a proposal line: the sentence index '\u00b9' is not a number"),  # a digit to isdigit()
    ("\u0663", "not a proposal line: the sentence index '\u0663' is not a number"),  # int() reads it as 3
    ("9" * 5000, "not a proposal line: the sentence index has 5000 digits"),  # int() refuses > 4,300
    ("-1", "not a proposal line: the sentence index '-1' is not a number"),
    ("1_0", "not a proposal line: the sentence index '1_0' is not a number"),
    ("2", "sentence index 2 is out of range for 2 sentences"),
]


@pytest.mark.parametrize(
    ("index", "problem"), PROPOSAL_INDICES, ids=["superscript", "arabic", "5000", "-1", "1_0", "2"]
)
def test_a_proposal_index_that_is_not_a_sentence_number_is_an_error_at_its_line(tmp_path, index, problem):
    from syntaxlm.inference import read_proposals

    path = tmp_path / "proposals.txt"
    path.write_text(f"0\t(S (NP (DT a)))\n{index}\t(S (NP (DT b)))\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_proposals(path, n_sentences=2)
    expected = "a sentence index in ASCII digits (at most 18) below 2 (the number of sentences), then a tab"
    assert str(caught.value) == f"{path}:2:1: {problem}; expected {expected}"


def test_a_proposal_index_of_5000_digits_is_one_clear_line_from_the_command(tmp_path):
    from syntaxlm.models import build_model
    from syntaxlm.text.vocab import WordVocab

    vocab = WordVocab.build([["a", "b"]], min_freq=1, symbols=["(S", "S)"])
    config = {"model": "tg", "d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 8, "segment_length": 8}
    build_model(config, {"vocab": vocab}).save_pretrained(tmp_path / "tg")
    (tmp_path / "sentences.txt").write_text("a\n")  # one sentence
    proposals = tmp_path / "proposals.txt"
    proposals.write_text("9" * 5000 + "\t(S (X a))\n")
    sentences = tmp_path / "sentences.txt"
    result = run("score", tmp_path / "tg", sentences, "--method", "proposals", "--proposals", proposals)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        (
            f"error: {proposals}:1:1: not a proposal line: the sentence index has 5000 digits; expected a "
            "sentence index in ASCII digits (at most 18) below 1 (the number of sentences), then a tab"
        )
    ]


def test_eval_sg_scores_golden_draws(tmp_path, golden, shared_data):
    data = json.loads((golden / "sg_predictions.json").read_text())
    for record in data["suites"][:3]:
        draw = record["draws"][0]
        values = tmp_path / f"{record['name']}.json"
        values.write_text(json.dumps(draw))
        suite = shared_data / "syntaxgym" / "test_suites" / "json" / record["file"]
        result = run("eval", "sg", suite, "--region-values", values, "--json")
        assert result.returncode == 0, result.stderr
        scored = json.loads(result.stdout)
        assert scored["accuracy_pred0"] == draw["accuracy_pred0"]
        assert scored["accuracy_all_predictions"] == draw["accuracy_all_predictions"]
    text = run("eval", "sg", suite, "--region-values", values).stdout
    assert "published convention" in text


def test_eval_sg_bad_suite_names_the_problem(tmp_path):
    suite = tmp_path / "broken.json"
    suite.write_text('{"meta": {"name": "broken", "metric": "sum"}, "region_meta": {"1": "a"},')
    values = tmp_path / "values.json"
    values.write_text("[]")
    result = run("eval", "sg", suite, "--region-values", values)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(suite) in result.stderr


def test_eval_sg_with_a_saved_model(tmp_path):
    from syntaxlm.data.synthetic import write_synthetic_treebank
    from syntaxlm.models import build_model
    from syntaxlm.text.build import build_vocabulary

    write_synthetic_treebank(tmp_path / "data", sentences=200, seed=0)
    suite = min((tmp_path / "data" / "suites").glob("*.json"))
    vocab = build_vocabulary(tmp_path / "data" / "train.trees", tmp_path / "vocab", min_freq=1)
    config = {"model": "txl-terminals", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 16}
    build_model(config, {"vocab": vocab}).save_pretrained(tmp_path / "model")
    result = run("eval", "sg", suite, "--model", tmp_path / "model", "--json", "--out", tmp_path / "sg.json")
    assert result.returncode == 0, result.stderr
    assert f"{suite.stem}: 100%" in result.stderr  # the progress bar
    scored = json.loads(result.stdout)
    assert scored["n_items"] > 0 and 0 <= scored["accuracy_pred0"] <= 1
    saved = json.loads((tmp_path / "sg.json").read_text())
    assert saved["options"]["method"] == "exact"  # "auto" resolved: txl-terminals reads words only
    batched = run("eval", "sg", suite, "--model", tmp_path / "model", "--json", "--batch-size", "3")
    assert batched.returncode == 0, batched.stderr
    # the same items' outcomes in batches of 3 sentences (float32 sums in another order: no exact equality)
    assert json.loads(batched.stdout)["n_items"] == scored["n_items"]
    assert [item["item_number"] for item in json.loads(batched.stdout)["items"]] == [
        item["item_number"] for item in scored["items"]
    ]
    from typer.testing import CliRunner  # in-process: torch is already imported here

    from syntaxlm.cli import app

    quiet = CliRunner().invoke(
        app, ["eval", "sg", str(suite), "--model", str(tmp_path / "model"), "--no-progress"]
    )
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.output
    assert "accuracy" in quiet.stdout
    neither = run("eval", "sg", suite)
    assert neither.returncode == 2 and "one of --region-values and --model" in neither.stderr


def test_eval_sg_in_worker_processes_gives_the_results_of_one_process_and_resumes(tmp_path):
    from syntaxlm.data.synthetic import write_synthetic_treebank
    from syntaxlm.models import build_model
    from syntaxlm.text.build import build_vocabulary

    write_synthetic_treebank(tmp_path / "data", sentences=200, seed=0)
    suites = []
    for path in sorted((tmp_path / "data" / "suites").glob("*.json"))[:3]:  # their first 10 items
        suite = json.loads(path.read_text())
        suite["items"] = suite["items"][:10]
        suites.append(tmp_path / path.name)
        suites[-1].write_text(json.dumps(suite))
    vocab = build_vocabulary(tmp_path / "data" / "train.trees", tmp_path / "vocab", min_freq=1)
    config = {"model": "tg", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 16}
    build_model(config, {"vocab": vocab}).save_pretrained(tmp_path / "model")
    beam = ["--action-beam", "6", "--word-beam", "2", "--fast-track", "1"]
    outputs = {}
    for workers in ("1", "2"):
        out = tmp_path / f"sg-{workers}"
        result = run(
            "eval", "sg", *suites, "--model", tmp_path / "model", *beam, "--workers", workers, "--out", out
        )
        assert result.returncode == 0, result.stderr
        outputs[workers] = {path.name: json.loads(path.read_text())["result"] for path in out.glob("*.json")}
    assert len(outputs["1"]) == 3
    # The same outcomes and accuracies; the per-item surprisals and margins (bits) up to round-off,
    # as the worker processes run on fewer threads.
    assert_same_json(outputs["2"], outputs["1"])

    # --resume reads the suites already scored (one removed: scored again; one altered: read as is)
    # and refuses a folder scored with other options.
    out = tmp_path / "sg-1"
    (out / suites[0].name).unlink()
    altered = json.loads((out / suites[1].name).read_text())
    altered["result"]["accuracy_pred0"] = 0.123
    (out / suites[1].name).write_text(json.dumps(altered))
    resumed = run(
        "eval", "sg", *suites, "--model", tmp_path / "model", *beam, "--out", out, "--resume", "--json"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming: 2 suites read" in resumed.stderr and "1 to score" in resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["suites"][altered["result"]["suite"]] == 0.123
    assert_same_json(json.loads((out / suites[0].name).read_text())["result"], outputs["1"][suites[0].name])
    wider = run("eval", "sg", *suites, "--model", tmp_path / "model", "--out", out, "--resume")
    assert wider.returncode != 0 and str(out) in wider.stderr and "another options {" in wider.stderr
    alone = run("eval", "sg", suites[0], "--model", tmp_path / "model", "--resume")
    assert alone.returncode == 2 and "--resume goes with --model, several suites and --out" in alone.stderr


def assert_same_json(ours, theirs, where="result"):
    """Equal JSON, floats that are not accuracies up to 1e-4 bits."""
    assert type(ours) is type(theirs), where
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), where
        for key in ours:
            assert_same_json(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, list):
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_json(a, b, f"{where}[{k}]")
    elif isinstance(ours, float) and "accuracy" not in where:
        assert ours == pytest.approx(theirs, abs=1e-4), where
    else:
        assert ours == theirs, where


# Five training sentences: "the", "dog", "dogs", "bark", "barks" and "." at least twice, so in the
# vocabulary (min_freq 2); "cats" once, so out of it, its class UNK-LC-s in it.
UNKNOWN_WORDS_TRAINING = (
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .))\n" * 2
    + "(S (NP (DT the) (NNS dogs)) (VP (VBP bark)) (. .))\n" * 2
    + "(S (NP (DT the) (NNS cats)) (VP (VBP bark)) (. .))\n"
)


@pytest.fixture(scope="module")
def word_model(tmp_path_factory):
    """A tiny untrained LM with a word vocabulary of the sentences above."""
    import torch

    from syntaxlm.models import build_model
    from syntaxlm.text.build import build_vocabulary

    folder = tmp_path_factory.mktemp("unknown-words")
    (folder / "train.trees").write_text(UNKNOWN_WORDS_TRAINING)
    vocab = build_vocabulary(folder / "train.trees", folder / "vocab", kind="word")
    assert set(vocab.words) == {"the", "dog", "dogs", "bark", "barks", "."}
    torch.manual_seed(0)
    config = {"model": "lm", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 16, "dropout": 0.0}
    build_model(config, {"vocab": vocab}).save_pretrained(folder / "model")
    return vocab, folder / "model"


def invoke(*args) -> str:
    from typer.testing import CliRunner  # in-process: torch is already imported here

    from syntaxlm.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def test_eval_sg_counts_the_words_the_models_vocabulary_does_not_know(word_model, tmp_path):
    from syntaxlm.results import read_checked_result

    vocab, model = word_model
    # "kittens" is read as UNK-LC-s, "yelps" as UNK-LC-s, "yelp" as <unk> (no UNK-LC class): all unknown
    assert [vocab.map_word(w) for w in ("kittens", "yelps", "yelp")] == ["UNK-LC-s", "UNK-LC-s", "<unk>"]

    def item(number, match, mismatch):
        conditions = [
            {
                "condition_name": name,
                "regions": [{"region_number": k, "content": text} for k, text in enumerate(regions, 1)],
            }
            for name, regions in (("match", match), ("mismatch", mismatch))
        ]
        return {"item_number": number, "conditions": conditions}

    suite = {
        "meta": {"name": "tiny_agreement", "metric": "sum"},
        "region_meta": {"1": "subject", "2": "verb"},
        "predictions": [{"type": "formula", "formula": "(2;%mismatch%) > (2;%match%)"}],
        "items": [
            item(1, ("the dog", "barks"), ("the dog", "bark")),
            item(2, ("the kittens", "bark"), ("the kittens", "barks")),  # unknown, not in the verb
            item(3, ("the dog", "yelps"), ("the dog", "yelp")),  # unknown in the verb, compared
        ],
    }
    path = tmp_path / "tiny_agreement.json"
    path.write_text(json.dumps(suite))
    out = tmp_path / "sg.json"
    scored = json.loads(invoke("eval", "sg", path, "--model", model, "--json", "--no-progress", "--out", out))
    regions = [r["content"] for it in suite["items"] for c in it["conditions"] for r in c["regions"]]
    words = " ".join(regions).split()
    assert len(words) == 18 and sum(w not in vocab.words for w in words) == 4
    assert (scored["n_words"], scored["n_unknown_words"], scored["unknown_word_rate"]) == (18, 4, 4 / 18)
    assert scored["items_unknown_in_critical_regions"] == [3]
    assert read_checked_result(out)["result"]["n_unknown_words"] == 4
    text = invoke("eval", "sg", path, "--model", model, "--no-progress")
    expected = "unknown words: 4 of 18 (22.22%); 1 of 3 items have one in a region the predictions compare"
    assert expected in text
    other = tmp_path / "other.json"  # item 1 alone: no unknown word
    other_suite = suite | {"meta": {"name": "other", "metric": "sum"}, "items": suite["items"][:1]}
    other.write_text(json.dumps(other_suite))
    text = invoke("eval", "sg", path, other, "--model", model, "--no-progress")
    assert re.search(r"tiny_agreement +3 +\d\.\d{3} +(\d\.\d{3}|-) +22\.22%", text)
    assert re.search(r"other +\d +\d\.\d{3} +(\d\.\d{3}|-) +0\.00%", text)
    assert "unknown words, all suites scored: 4 of 24 (16.67%); 1 of 4 items have one" in text


def write_blimp_paradigms(data) -> None:
    """Two small paradigms of the word model's words, some unknown to it (comments: which)."""
    data.mkdir()
    paradigms = {
        ("regular_plural_subject_verb_agreement_1", "subject_verb_agreement"): [
            ("the dog barks.", "the dog bark."),  # none unknown
            ("the kittens bark.", "the kittens barks."),  # "kittens" twice, not where they differ
            ("the dog yelps.", "the dog yelp."),  # "yelps", "yelp", where they differ
        ],
        ("determiner_noun_agreement_1", "determiner_noun_agreement"): [
            ("the dogs bark.", "the kitten bark."),  # "kitten", where they differ
        ],
    }
    for (uid, term), pairs in paradigms.items():
        lines = [
            {"sentence_good": good, "sentence_bad": bad, "field": "morphology", "linguistics_term": term,
             "UID": uid, "pairID": str(i)}
            for i, (good, bad) in enumerate(pairs)
        ]  # fmt: skip
        (data / f"{uid}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_eval_blimp_counts_the_words_the_models_vocabulary_does_not_know(word_model, tmp_path):
    from syntaxlm.results import read_checked_result

    vocab, model = word_model
    data = tmp_path / "blimp"
    write_blimp_paradigms(data)
    out = tmp_path / "blimp.json"
    model_options = ("--data", data, "--model", model, "--no-progress")
    result = json.loads(invoke("eval", "blimp", *model_options, "--json", "--out", out))
    # words with the final "." apart: 4 per sentence; unknown: 4 in the first paradigm, 1 in the second
    counts = (result["n_words"], result["n_unknown_words"], result["pairs_differing_in_unknown_word"])
    assert counts == (32, 5, 2)
    assert result["unknown_word_rate"] == 5 / 32
    phenomena = result["phenomena_unknown_words"]
    assert phenomena["subject_verb_agreement"]["unknown_word_rate"] == 4 / 24
    assert phenomena["determiner_noun_agreement"] == {
        "n_words": 8, "n_unknown_words": 1, "pairs_differing_in_unknown_word": 1, "unknown_word_rate": 1 / 8
    }  # fmt: skip
    assert [p["n_unknown_words"] for p in result["paradigms"]] == [1, 4]  # paradigms in UID order
    assert read_checked_result(out)["result"]["n_unknown_words"] == 5
    text = invoke("eval", "blimp", *model_options, "--per-paradigm")
    assert re.search(r"^subject_verb_agreement +1 +\d+ +[01]\.\d\d\d +16\.67%$", text, re.M)
    assert re.search(r"^overall +2 +4 +[01]\.\d\d\d +15\.62%$", text, re.M)
    assert text.rstrip().endswith(
        "unknown words: 5 of 32 (15.62%), read as an unknown-word class or <unk>; 2 of 4 pairs differ in one"
    )


def test_eval_blimp_keeps_the_log_probabilities_as_it_scores_and_resumes_from_them(word_model, tmp_path):
    from syntaxlm.files import sha256_file

    _, model = word_model
    data = tmp_path / "blimp"
    write_blimp_paradigms(data)
    out = tmp_path / "blimp.json"
    model_options = ("--data", data, "--model", model, "--no-progress", "--json", "--out", out)
    whole = json.loads(invoke("eval", "blimp", *model_options, "--batch-size", "1"))  # 2 pairs a batch
    kept = json.loads((tmp_path / "blimp.logprobs.json").read_text())
    assert kept["model_sha256"] == sha256_file(model / "model.safetensors")
    assert kept["options"] == {"method": "exact"}
    records = {(r["UID"], r["pairID"]): (r["good"], r["bad"]) for r in kept["pairs"]}
    in_result = {(p["paradigm"], p["pair_id"]): (p["logprob_good"], p["logprob_bad"]) for p in whole["pairs"]}
    assert records == in_result

    # a run that stopped after its first batch: 2 of the 4 pairs kept, one of them marked
    first = kept["pairs"][:2]
    first[0] |= {"good": -0.5, "bad": -9.5}
    (tmp_path / "blimp.logprobs.json").write_text(json.dumps(kept | {"pairs": first}))
    resumed = json.loads(invoke("eval", "blimp", *model_options, "--resume"))
    pairs = {(p["paradigm"], p["pair_id"]): p for p in resumed["pairs"]}
    assert len(pairs) == 4
    marked = pairs[first[0]["UID"], first[0]["pairID"]]
    # read from the file, not scored again
    assert (marked["logprob_good"], marked["logprob_bad"], marked["correct"]) == (-0.5, -9.5, True)
    for before in whole["pairs"][1:]:  # scored again in other batches: equal to float32 round-off
        after = pairs[before["paradigm"], before["pair_id"]]
        assert after["logprob_good"] == pytest.approx(before["logprob_good"], abs=1e-4)
        assert after["logprob_bad"] == pytest.approx(before["logprob_bad"], abs=1e-4)
    assert len(json.loads((tmp_path / "blimp.logprobs.json").read_text())["pairs"]) == 4

    other = tmp_path / "other.logprobs.json"  # another model's log-probabilities
    other.write_text(json.dumps(kept | {"model_sha256": "0" * 64}))
    wrong = run("eval", "blimp", *model_options[:-1], tmp_path / "other.json", "--resume")
    assert wrong.returncode != 0 and str(other) in wrong.stderr and "another model" in wrong.stderr
    alone = run("eval", "blimp", "--data", data, "--model", model, "--resume")
    assert alone.returncode == 2 and "--resume goes with --model and --out" in alone.stderr


def test_the_scoring_device_is_chosen_and_a_missing_one_is_one_clear_line(word_model, tmp_path, monkeypatch):
    import torch

    from syntaxlm.models import DeviceError, scoring_device

    _, model = word_model
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the dog barks .\nthe dogs bark .\n")
    on_cpu = json.loads(invoke("eval", "ppl", sentences, "--model", model, "--no-progress", "--json"))
    chosen = json.loads(
        invoke("eval", "ppl", sentences, "--model", model, "--no-progress", "--json", "--device", "cpu")
    )
    assert chosen["perplexity_per_word"] == on_cpu["perplexity_per_word"]  # the same computation
    with pytest.raises(DeviceError, match="expected one of cpu, cuda, auto"):
        scoring_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert scoring_device("auto") == "cpu"
    with pytest.raises(DeviceError, match="no CUDA device"):
        scoring_device("cuda")
    monkeypatch.undo()
    if torch.cuda.is_available():
        return
    result = run("eval", "ppl", sentences, "--model", model, "--device", "cuda")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "device 'cuda' asked for, but torch sees no CUDA device" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_evaluation_on_the_gpu_agrees_with_the_cpu(word_model, tmp_path):
    from syntaxlm.jobs.evaluation import EvalSettings, evaluate_model
    from syntaxlm.results import read_result

    _, model = word_model
    test = tmp_path / "test.trees"
    test.write_text(
        "(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .))\n(S (NP (DT the) (NNS dogs)) (VP (VBP bark)))\n"
    )
    values = {}
    for device in ("cpu", "cuda"):
        written = evaluate_model(model, tmp_path / device, test=test, settings=EvalSettings(device=device))
        values[device] = read_result(written["perplexity"])["result"]["perplexity_per_word"]
    # float32 on both; a few dozen operations per word: agreement to about 1e-5 relative
    assert values["cuda"] == pytest.approx(values["cpu"], rel=1e-4)


def test_scoring_options_are_refused_where_precomputed_values_are_scored(tmp_path):
    suite, values = tmp_path / "suite.json", tmp_path / "values.json"
    suite.write_text("{}")
    values.write_text("{}")
    result = run("eval", "sg", suite, "--region-values", values, "--device", "cuda")
    assert result.returncode == 2 and "--device is for --model" in result.stderr
    result = run("eval", "blimp", "--data", tmp_path, "--logprobs", values, "--batch-size", "8")
    assert result.returncode == 2 and "--batch-size is for --model" in result.stderr
