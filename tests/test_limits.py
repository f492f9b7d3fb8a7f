"""``--limit N`` of ``score``, ``parse``, ``eval ppl`` and ``eval blimp``: only the first N sentences
(pairs) are scored, and the result files say that a limit was used."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from tests.test_beam import TINY

BEAM = ("--action-beam", "6", "--word-beam", "2", "--fast-track", "1")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("limits")
    write_synthetic_treebank(folder / "data", sentences=120, seed=0, items_per_suite=4)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    for name in ("tg", "lm"):
        torch.manual_seed(0)
        build_model({"model": name, **TINY}, {"vocab": vocab}).save_pretrained(folder / name)
    trees = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    trees = sorted(trees, key=lambda t: len(t.leaves()))[:4]
    (folder / "gold.trees").write_text("".join(t.to_bracket() + "\n" for t in trees))
    (folder / "sentences.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in trees))
    return folder


def invoke(*args) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def test_score_and_parse_take_the_first_n_sentences(tiny):
    text = tiny / "sentences.txt"
    table = invoke("score", tiny / "lm", text, "--limit", "2", "--no-progress").splitlines()
    assert {line.split("\t")[0] for line in table[1:]} == {"1", "2"}  # sentence ids: line numbers
    trees = invoke("parse", tiny / "tg", text, *BEAM, "--limit", "1", "--no-progress").splitlines()
    assert [tree.count(" ") > 0 for tree in trees] == [True]
    assert "--limit" in CliRunner().invoke(app, ["score", str(tiny / "lm"), str(text), "--limit", "0"]).output


def test_eval_ppl_records_the_limit(tiny):
    out = tiny / "ppl.json"
    invoke(
        "eval", "ppl", tiny / "gold.trees", "--model", tiny / "tg", "--method", "gold", "--no-pos-tags",
        "--limit", "3", "--no-progress", "--out", out,
    )  # fmt: skip
    record = json.loads(out.read_text())
    assert record["options"] | {"limit": 3, "sentences_in_data": 4} == record["options"]
    assert record["result"]["n_sentences"] == 3
    invoke("eval", "ppl", tiny / "sentences.txt", "--model", tiny / "lm", "--no-progress", "--out", out)
    assert json.loads(out.read_text())["options"]["limit"] is None


def test_eval_blimp_records_the_limit(tiny, tmp_path):
    data = tmp_path / "blimp"
    data.mkdir()
    pairs = [
        {
            "sentence_good": f"the dogs near the cat {verb} .",
            "sentence_bad": f"the dogs near the cat {verb}s .",
            "field": "morphology",
            "linguistics_term": "subject_verb_agreement",
            "UID": "distractor_agreement_relational_noun",
            "pairID": str(i),
        }
        for i, verb in enumerate(["run", "sleep", "eat", "walk", "sing"])
    ]
    (data / "distractor_agreement_relational_noun.jsonl").write_text(
        "".join(json.dumps(pair) + "\n" for pair in pairs)
    )
    out = tmp_path / "blimp.json"
    model = ("--model", tiny / "lm")
    invoke("eval", "blimp", "--data", data, *model, "--limit", "2", "--no-progress", "--out", out)
    record = json.loads(out.read_text())
    assert record["options"] | {"limit": 2, "pairs_selected": 5} == record["options"]
    assert record["result"]["n_pairs"] == 2
