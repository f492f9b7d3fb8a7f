"""Result files carry what produced them; reading one checks it is one."""

from __future__ import annotations

import json
import re

import pytest

from syntaxlm import __version__
from syntaxlm.errors import InputFormatError
from syntaxlm.files import sha256_file
from syntaxlm.results import read_result, result_record, write_result
from tests.test_cli import run


def test_record_round_trip_with_inputs_and_provenance(tmp_path):
    data = tmp_path / "gold.trees"
    data.write_text("(S (NP a) (VP b))\n")
    record = result_record("parseval", {"f1": 0.5}, inputs={"gold": data}, options={"unlabeled": True})
    path = write_result(tmp_path / "out" / "result.json", record)
    read = read_result(path)
    assert read == record
    assert read["inputs"]["gold"] == {"path": str(data), "sha256": sha256_file(data)}
    assert read["provenance"]["syntaxlm_version"] == __version__
    assert read["provenance"]["git_commit"] is None or len(read["provenance"]["git_commit"]) == 40


def test_an_input_given_by_a_relative_path_is_recorded_absolute(tmp_path, monkeypatch):
    """A reader in another working directory (``syntaxlm view`` run elsewhere) still finds it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gold.trees").write_text("(S (NP a) (VP b))\n")
    record = result_record("parseval", {"f1": 0.5}, inputs={"gold": "gold.trees"})
    assert record["inputs"]["gold"]["path"] == str(tmp_path / "gold.trees")


@pytest.mark.parametrize(
    ("content", "message"),
    [("{", "invalid JSON"), ('{"kind": "x"}', "no result, provenance field"), ("[1, 2]", "no kind")],
)
def test_reading_something_else_fails_clearly(tmp_path, content, message):
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(InputFormatError, match=message) as error:
        read_result(path)
    assert str(path) in str(error.value)


def test_eval_out_writes_a_result_file(tmp_path):
    generated = tmp_path / "gen.txt"
    generated.write_text("a b c\na b d\n")
    assert run("eval", "gen", "--generated", generated, "--out", tmp_path / "gen.json").returncode == 0
    record = json.loads((tmp_path / "gen.json").read_text())
    assert record["kind"] == "generation" and record["inputs"]["generated"]["sha256"] == sha256_file(
        generated
    )
    # generations joined into one document: a-b b-c c-a a-b b-d, 4 distinct bigrams of 5
    assert record["result"]["distinct"]["2"] == 0.8


def test_unknown_word_counts_are_optional_and_checked(tmp_path):
    from syntaxlm.results import ResultFileError, check_result

    path = tmp_path / "r.json"
    older_sg = {"suite": "number_src", "accuracy_pred0": 0.5, "predictions": ["(1;%a%) < (1;%b%)"]}
    older_blimp = {"overall_accuracy": 0.5, "phenomena": {"binding": 0.5}, "paradigms": [{"paradigm": "x"}]}
    for kind, result in (("syntaxgym", older_sg), ("blimp", older_blimp)):  # written before the counts
        check_result(result_record(kind, result), path)
    counts = {"n_words": 10, "n_unknown_words": 2, "unknown_word_rate": 0.2}
    blimp_counts = counts | {"pairs_differing_in_unknown_word": 1}
    newer_sg = older_sg | counts | {"items_unknown_in_critical_regions": [3]}
    check_result(result_record("syntaxgym", newer_sg), path)
    newer_blimp = older_blimp | blimp_counts | {
        "phenomena_unknown_words": {"binding": blimp_counts},
        "paradigms": [{"paradigm": "x", **blimp_counts}],
    }
    check_result(result_record("blimp", newer_blimp), path)
    phenomenon = {"binding": {"unknown_word_rate": None}}
    wrong = [
        ("syntaxgym", {"unknown_word_rate": 1.5}, "unknown_word_rate is 1.5; expected a number from 0 to 1"),
        ("syntaxgym", {"n_unknown_words": -1}, "result.n_unknown_words is -1; expected an integer from 0"),
        ("syntaxgym", {"items_unknown_in_critical_regions": ["3"]}, "items_unknown_in_critical_regions[0]"),
        ("blimp", {"pairs_differing_in_unknown_word": True}, "pairs_differing_in_unknown_word is true"),
        ("blimp", {"paradigms": [{"n_words": 2.5}]}, "result.paradigms[0].n_words is 2.5"),
        ("blimp", {"phenomena_unknown_words": phenomenon}, "binding.unknown_word_rate is null"),
    ]
    for kind, change, message in wrong:
        newer = {"syntaxgym": newer_sg, "blimp": newer_blimp}[kind]
        with pytest.raises(ResultFileError, match=re.escape(message)):
            check_result(result_record(kind, newer | change), path)
