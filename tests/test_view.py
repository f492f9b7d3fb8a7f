"""``syntaxlm view``: the data the page embeds is that of the result files and of the saved models'
own methods, bad inputs are named, and the page renders in a real browser (headless Chromium)."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from syntaxlm import cli, results
from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.data.treebank import read_treebank
from syntaxlm.errors import InputFormatError
from syntaxlm.eval.syntaxgym import load_suite
from syntaxlm.inference import BeamSettings, Scorer
from syntaxlm.jobs.evaluation import EvalSettings, evaluate_model
from syntaxlm.models import build_model, load_model, model_class, model_config
from syntaxlm.results import ResultFileError, read_result
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train.run_folder import save_model_folder
from syntaxlm.view import view_data, write_view
from syntaxlm.view.data import ATTENTION_LEVELS, tree_json
from syntaxlm.view.page import embedded_json, read_embedded, render_page

SMALL_BEAM = BeamSettings(5, 2, 1)
TRANSFORMER = {"d_model": 16, "n_layers": 2, "n_heads": 2, "d_ff": 32, "dropout": 0.0}
MODELS = {
    "tg": TRANSFORMER,
    "txl-terminals": TRANSFORMER,
    "plm-mask": TRANSFORMER,
    "prpn": {"d_model": 16, "hidden_size": 16, "n_layers": 2, "lookback": 2, "memory_slots": 4},
}
SENTENCES = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Untrained tiny models of the four kinds the views draw, each in a run folder as the trainer
    and the quickstart leave it (``best/``, ``config.json``, ``results/``), evaluated as the
    quickstart evaluates (test perplexity, parses, UF1, two suites), and their page."""
    folder = tmp_path_factory.mktemp("view")
    write_synthetic_treebank(folder / "data", sentences=30, items_per_suite=2)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "vocab", kind="word", min_freq=1)
    trees = read_treebank(folder / "data" / "train.trees")
    suites = sorted((folder / "data" / "suites").glob("synthetic_number_*.json"))[:2]
    settings = EvalSettings(beam=SMALL_BEAM, test_sentences=SENTENCES)
    for name, values in MODELS.items():
        torch.manual_seed(0)
        config = model_config({"model": name, **values})
        model = build_model(config, model_class(name).vocabularies_for(config, trees, vocab))
        run = folder / "runs" / name
        save_model_folder(model.eval(), run / "best")
        (run / "config.json").write_text(json.dumps({"model": name, "seed": 0}))
        evaluate_model(run / "best", run / "results", test=folder / "data" / "test.trees", suites=suites,
                       settings=settings)  # fmt: skip
    page = write_view(
        [folder / "runs" / name for name in MODELS], folder / "view.html", limit=SENTENCES, beam=SMALL_BEAM
    )
    return folder, page


def embedded(runs):
    return read_embedded(runs[1])


# --- the data equals the result files ------------------------------------------------------------------


def test_the_tables_hold_the_numbers_of_the_result_files(runs):
    folder, _ = runs
    document = embedded(runs)
    tables = {table["kind"]: table for table in document["tables"]}
    assert set(tables) == {"perplexity", "syntaxgym", "parseval", "uf1"}
    rows = {row["model"]: row for row in tables["perplexity"]["rows"]}
    for name in MODELS:
        result = read_result(folder / "runs" / name / "results" / "perplexity.json")["result"]
        cell = rows[name]["numbers"]["perplexity per word (end included; TG, Qian et al.)"]
        assert cell["values"] == [result["perplexity_per_word"]] and cell["std"] is None
        sg = [
            read_result(p)["result"]
            for p in sorted((folder / "runs" / name / "results" / "sg").glob("*.json"))
        ]
        row = next(r for r in tables["syntaxgym"]["rows"] if r["model"] == name)
        assert row["numbers"]["SG mean over scored suites"]["values"] == [
            statistics.mean(r["accuracy_pred0"] for r in sg)
        ]
    # Each number says how it was obtained, and the table warns that the rows were not alike.
    assert rows["tg"]["evaluation"]["method"] == "beam" and rows["tg"]["evaluation"]["beam"] == "5/2/1"
    assert rows["txl-terminals"]["evaluation"]["bound"] == "exact"
    assert any(line.startswith("Not evaluated alike") for line in tables["perplexity"]["notes"])
    parse = read_result(folder / "runs" / "tg" / "results" / "parseval.json")["result"]
    assert tables["parseval"]["rows"][0]["numbers"]["bracket F1"]["values"] == [parse["summary"]["all"]["f1"]]


def test_syntaxgym_items_are_those_of_eval_sg_and_the_suite_files(runs):
    folder, _ = runs
    suites = embedded(runs)["syntaxgym"]
    assert [s["suite"] for s in suites] == sorted(
        p.stem for p in (folder / "runs" / "tg" / "results" / "sg").glob("*.json")
    )
    for suite in suites:
        source = load_suite(suite["suite_file"])
        assert suite["region_names"] == list(source.region_names)
        assert suite["conditions"] == list(source.condition_names)
        assert [item["item_number"] for item in suite["items"]] == [item.item_number for item in source.items]
        for item, written in zip(suite["items"], source.items):
            assert item["regions"] == {c: list(r) for c, r in written.regions.items()}
        for name in MODELS:
            path = folder / "runs" / name / "results" / "sg" / f"{suite['suite']}.json"
            record = read_result(path)
            assert suite["runs"][name]["accuracy_pred0"] == record["result"]["accuracy_pred0"]
            assert suite["runs"][name]["method"] == ("beam 5/2/1" if name in ("tg", "plm-mask") else "exact")
            for item, result in zip(suite["items"], record["result"]["items"], strict=True):
                assert item["runs"][name] == {
                    "results": result["results"],
                    "region_surprisals_bits": result["region_surprisals_bits"],
                }


def decoded(text: str, where: np.ndarray, levels: int) -> np.ndarray:
    """The matrix the page's script reads from one character per cell."""
    matrix = np.zeros(where.shape)
    matrix[where] = [ATTENTION_LEVELS.index(c) / levels for c in text]
    return matrix


def test_the_sentence_view_holds_what_the_models_compute(runs):
    folder, _ = runs
    view = embedded(runs)["sentence_view"]
    gold = read_treebank(folder / "data" / "test.trees")[:SENTENCES]
    assert view["source"] == str(folder / "data" / "test.trees")  # named by the perplexity results
    assert view["sentences"] == [tree.leaves() for tree in gold]
    assert view["gold"] == [tree_json(tree) for tree in gold]
    for name in MODELS:
        model = load_model(folder / "runs" / name / "best")
        scores = Scorer(model, beam=SMALL_BEAM).score(view["sentences"])
        entry = view["models"][name]
        assert entry["method"] == ("beam 5/2/1" if model.joint else "exact")
        for s, shown in zip(scores, entry["sentences"], strict=True):
            assert shown["surprisal_bits"] == pytest.approx(-s.word_logprobs / math.log(2), abs=1e-4)
            assert ("parse" in shown) == model.joint
            if model.joint:
                assert shown["parse"] == tree_json(s.tree)
    prpn = load_model(folder / "runs" / "prpn" / "best")
    shown = view["models"]["prpn"]["sentences"]
    for s, distances, tree in zip(shown, prpn.syntactic_distances(view["sentences"]),
                                  prpn.induced_trees(view["sentences"])):  # fmt: skip
        assert s["distances"] == pytest.approx(distances, abs=1e-4)
        assert s["induced_tree"] == tree_json(tree)
    # Masks and attention: TG's STACK/COMPOSE mask over the gold tree; PLM-mask's heads differ.
    tg = load_model(folder / "runs" / "tg" / "best")
    attention = view["models"]["tg"]["sentences"][0]["attention"]
    read = tg.attention_maps(view["sentences"][0], gold[0])[1]
    assert attention["tokens"] == read.tokens and attention["tree"] == "gold"
    n = len(read.tokens)
    cells = (
        np.tril(np.ones((n, n), dtype=bool)) if attention["cells"] == "triangle" else np.ones((n, n), bool)
    )
    mask = decoded(attention["masks"][0], cells, 1).astype(bool)
    assert (mask == read.mask[0]).all()
    where = mask if attention["weights_over"] == "masked" else cells
    for head in range(2):
        weights = decoded(attention["weights"][1][head], where, attention["levels"])
        assert np.abs(weights - read.weights[head]).max() <= 0.5 / attention["levels"] + 1e-9
    plm = view["models"]["plm-mask"]["sentences"][0]["attention"]
    assert len(plm["masks"]) == 2 and set(plm["head_roles"].values()) == {"buffer", "stack"}
    assert "attention" not in view["models"]["prpn"]["sentences"][0]


def test_sentences_of_a_file_result_files_alone_and_bad_paths(runs, tmp_path):
    folder, _ = runs
    text = tmp_path / "sentences.txt"
    text.write_text("the dog barks\nthe cats sleep\n")
    document = view_data([folder / "runs" / "txl-terminals"], sentences_file=text, beam=SMALL_BEAM)
    view = document["sentence_view"]
    assert view["sentences"] == [["the", "dog", "barks"], ["the", "cats", "sleep"]] and view["gold"] == [
        None,
        None,
    ]
    assert len(view["models"]["txl-terminals"]["sentences"]) == 2
    # One result file: its model is named by the saved model it scored, whose folder it loads.
    one = folder / "runs" / "tg" / "results" / "perplexity.json"
    document = view_data([one], models=False)
    assert document["runs"][0]["name"] == "tg"
    assert document["runs"][0]["saved_model"] == str(folder / "runs" / "tg" / "best")
    assert document["sentence_view"]["sentences"] == []
    with pytest.raises(InputFormatError, match=r"missing: no such run folder or result file; expected a run"):
        view_data([tmp_path / "missing"])
    bad = tmp_path / "bad" / "results"
    bad.mkdir(parents=True)
    (bad / "perplexity.json").write_text('{"kind": "perplexity", "result": ')
    with pytest.raises(InputFormatError, match=r"perplexity\.json:1:\d+: invalid JSON"):
        view_data([tmp_path / "bad"])
    with pytest.raises(InputFormatError, match=r"nothing\.txt: no such file"):
        view_data([folder / "runs" / "tg"], sentences_file=tmp_path / "nothing.txt")


def test_the_page_is_one_file_whose_data_cannot_close_its_script(tmp_path):
    document = {"format": "x", "runs": [], "tables": [], "syntaxgym": [], "note": "</script><b>&"}
    page = render_page(document | {"created": "now", "syntaxlm": "0", "sentence_view": {}})
    assert page.count("</script>") == 2  # the data's and the code's, none inside the data
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    path = tmp_path / "page.html"
    path.write_text(page)
    assert read_embedded(path)["note"] == "</script><b>&"
    assert "\\u003c/script\\u003e" in embedded_json(document)


def test_the_view_command(runs, tmp_path):
    folder, _ = runs
    out = tmp_path / "page.html"
    result = CliRunner().invoke(
        app,
        [
            "view",
            str(folder / "runs" / "tg"),
            str(folder / "runs" / "prpn"),
            "--out",
            str(out),
            "--no-models",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"page written to {out}" in result.output
    assert [run["name"] for run in read_embedded(out)["runs"]] == ["tg", "prpn"]


# --- result files are untrusted input -------------------------------------------------------------------

PERPLEXITY = {"perplexity_per_word": 12.5, "perplexity_per_token": 10.0}
ITEM = {"item_number": 1, "results": [True], "region_surprisals_bits": {"match": [1.5, 2.0]}}
SUITE_RESULT = {"suite": "s", "accuracy_pred0": 1.0, "predictions": ["(1;%match%) > 0"], "items": [ITEM]}
SECRET = "root:x:0:0:root:/root:/bin/bash\n"


def result_file(path: Path, kind: str, result: Any, **record: Any) -> Path:
    """A result file holding ``result`` (NaN and Infinity as Python's json writes them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {"kind": kind, "result": result, "inputs": {}, "options": {}, "provenance": {}}
    path.write_text(json.dumps(fields | record))
    return path


def test_a_page_holds_only_the_runs_own_data_and_the_files_asked_for(tmp_path):
    """Was: a result file naming any file (``/etc/passwd``) as its test data had its lines put into
    the page as sentences. A file a run names is read only when it is inside a run folder given
    or is a treebank (suite) its reader accepts; the page and the messages say what was read and
    what was refused."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    crafted = tmp_path / "crafted"
    secret_as = {role: {"path": str(secret)} for role in ("data", "suite")}
    named_by = crafted / "results" / "perplexity.json"
    result_file(named_by, "perplexity", PERPLEXITY, inputs=secret_as)
    result_file(crafted / "results" / "sg" / "s.json", "syntaxgym", SUITE_RESULT, inputs=secret_as)
    linked = tmp_path / "linked"  # a link inside a run folder to a file outside it
    link = {"data": {"path": str(linked / "t")}}
    result_file(linked / "perplexity.json", "perplexity", PERPLEXITY, inputs=link)
    (linked / "t").symlink_to(secret)
    messages: list[str] = []
    page = write_view([crafted, linked], tmp_path / "page.html", echo=messages.append)
    assert "root:x" not in page.read_text()
    document = read_embedded(page)
    assert document["sentence_view"]["sentences"] == [] and document["syntaxgym"][0]["suite_file"] is None
    assert document["data_files"]["embedded"] == []
    refused = document["data_files"]["refused"]
    assert [(f["path"], f["what"]) for f in refused] == [
        (str(secret), f"the suite named by {crafted / 'results' / 'sg' / 's.json'} (inputs.suite.path)"),
        (str(secret), f"the test data named by {named_by} (inputs.data.path)"),
        (str(linked / "t"), f"the test data named by {linked / 'perplexity.json'} (inputs.data.path)"),
    ]
    assert refused[0]["why"] == "not a SyntaxGym suite (load_suite does not read it)"
    assert refused[1]["why"].startswith("not inside a run folder given (links resolved) and not a treebank")
    assert messages[1] == f"warning: refused {secret}: {refused[1]['what']}: {refused[1]['why']}"
    # What is the runs' own is read: a treebank a result names (the quickstart's data/test.trees,
    # outside the run folders), and any file inside a run folder given.
    treebank = tmp_path / "data" / "test.trees"
    treebank.parent.mkdir()
    treebank.write_text("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n")
    named = {"data": {"path": str(treebank)}}
    result_file(linked / "perplexity.json", "perplexity", PERPLEXITY, inputs=named)
    messages.clear()
    view = view_data([linked], echo=messages.append)["sentence_view"]
    assert view["sentences"] == [["the", "dog", "barks"]] and view["source"] == str(treebank)
    assert messages == [
        f"embedded {treebank}: the test data named by {linked / 'perplexity.json'} (inputs.data.path); "
        "a treebank, read by the treebank reader"
    ]
    own = tmp_path / "own"
    (own / "sentences.txt").parent.mkdir()
    (own / "sentences.txt").write_text("hello there\n")
    config = {"model": "m", "train_config": {"data": {"test": str(own / "sentences.txt")}}}
    (own / "config.json").write_text(json.dumps(config))
    document = view_data([own])
    assert document["sentence_view"]["sentences"] == [["hello", "there"]]
    assert document["data_files"]["embedded"][0]["why"] == f"inside the run folder {own}"
    # A file the user asks for is theirs to show.
    document = view_data([crafted], sentences_file=secret)
    assert document["sentence_view"]["sentences"] == [SECRET.split()]
    assert document["data_files"]["embedded"][0]["what"] == "the sentences asked for (--sentences)"


def test_numbers_in_a_result_file_are_finite_numbers_not_booleans(tmp_path):
    """Was: a JSON ``true`` shown as a perplexity of 1 (Python reads it as an int), and NaN failing
    the page with "Out of range float values are not JSON compliant", naming no file or field."""
    path = tmp_path / "perplexity.json"
    for value, shown in ((True, "true"), (math.nan, "NaN"), (-math.inf, "-Infinity"), ("12", "the text '12'"),
                         (10**400, "1000"), (1e101, "1e+101")):  # fmt: skip
        result_file(path, "perplexity", PERPLEXITY | {"perplexity_per_word": value})
        with pytest.raises(ResultFileError) as caught:
            view_data([path], models=False)
        assert caught.value.field == "result.perplexity_per_word" and caught.value.path == str(path)
        assert str(caught.value).startswith(f"{path}: result.perplexity_per_word is {shown}")
        assert str(caught.value).endswith("; expected a number from 0 to 1e+100")
    result_file(path, "syntaxgym", SUITE_RESULT | {"accuracy_pred0": False})
    with pytest.raises(ResultFileError, match=r"accuracy_pred0 is false; expected a number from 0 to 1$"):
        view_data([path], models=False)
    # An infinite region surprisal is what eval sg writes for a sentence a beam lost: shown as missing.
    lost = ITEM | {"region_surprisals_bits": {"match": [1.5, math.inf]}}
    result_file(path, "syntaxgym", SUITE_RESULT | {"items": [lost]})
    document = view_data([path], models=False)
    render_page(document)
    assert document["syntaxgym"][0]["items"][0]["runs"]["perplexity"]["region_surprisals_bits"] == {
        "match": [1.5, None]
    }


def test_a_result_file_of_the_wrong_shape_is_one_error_naming_the_file_and_the_field(
    tmp_path, monkeypatch, capsys
):
    """Was: TypeError, IndexError or AttributeError tracebacks from fields of the wrong type."""
    run = tmp_path / "run"
    path = run / "results" / "result.json"
    items = SUITE_RESULT["items"]
    cases = [
        ("perplexity", [], {}, "result", "an empty list; expected an object"),
        ("perplexity", "abc", {}, "result", "the text 'abc'; expected an object"),
        ("perplexity", None, {}, "result", "null; expected an object"),
        ("perplexity", {"perplexity_per_word": 3.0}, {}, "result.perplexity_per_token", "missing"),
        ("syntaxgym", SUITE_RESULT | {"suite": 5}, {}, "result.suite", "5; expected a string"),
        ("syntaxgym", SUITE_RESULT | {"items": "abc"}, {}, "result.items", "the text 'abc'; expected a list"),
        ("syntaxgym", SUITE_RESULT | {"items": [*items, ITEM | {"item_number": 2, "results": []}]}, {},
         "result.items[1].results", "an empty list; expected each prediction's outcome (true or false)"),
        ("syntaxgym", SUITE_RESULT | {"items": [*items, ITEM]}, {}, "result.items[1].item_number",
         "1, as items[0]'s"),
        ("syntaxgym", SUITE_RESULT | {"items": [ITEM | {"item_number": "1"}]}, {},
         "result.items[0].item_number", "the text '1'"),
        ("perplexity", PERPLEXITY, {"inputs": {"data": "x"}}, "inputs.data", "the text 'x'; expected an"),
        ("perplexity", PERPLEXITY, {"options": [1]}, "options", "a list of 1 value; expected an object"),
        ("perplexity", PERPLEXITY, {"options": {"action_beam": 5}}, "options.word_beam", "missing"),
        ("blimp", {"overall_accuracy": 0.5}, {"options": {"paradigms": "wh"}}, "options.paradigms",
         "the text 'wh'"),
        ("parseval", {"summary": {"all": []}}, {}, "result.summary.all", "an empty list"),
        ("uf1", {"model": {"mean_sentence_f1": 0.5}}, {}, "result.model.corpus_f1_percent", "missing"),
        ("generation", {"bleu": {"1": "high"}}, {}, "result.bleu['1']", "the text 'high'"),
    ]  # fmt: skip
    for kind, result, record, field, problem in cases:
        result_file(path, kind, result, **record)
        with pytest.raises(ResultFileError) as caught:
            view_data([run], models=False)
        assert caught.value.field == field and str(caught.value).startswith(f"{path}: {field} is {problem}")
    # The run's config.json is read as warily; the command says it in one line and exits with 2.
    result_file(path, "perplexity", PERPLEXITY)
    config = run / "config.json"
    config.write_text('{"model": "m", "seed": [1]}')
    monkeypatch.setattr(sys, "argv", ["syntaxlm", "view", str(run), "--out", str(tmp_path / "page.html")])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 2
    expected = f"error: {config}: seed is a list of 1 value; expected an integer or a string\n"
    assert capsys.readouterr().err == expected
    assert not (tmp_path / "page.html").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_among_the_result_files_is_not_read(tmp_path):
    """Was: a FIFO named ``a.json`` in a run folder blocked ``view`` forever."""
    run = tmp_path / "run"
    result_file(run / "results" / "perplexity.json", "perplexity", PERPLEXITY)
    fifo = run / "results" / "a.json"
    os.mkfifo(fifo)

    def blocked(signum, frame):
        raise TimeoutError("view waits on the FIFO")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(20)
    try:
        messages: list[str] = []
        document = view_data([run], models=False, echo=messages.append)
        with pytest.raises(InputFormatError, match=r"a\.json: not a regular file; expected a result file"):
            view_data([fifo], models=False)
        with pytest.raises(InputFormatError, match=r"a\.json: not a regular file; expected a result file"):
            read_result(fifo)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert [table["kind"] for table in document["tables"]] == ["perplexity"]
    assert messages == [
        f"warning: refused {fifo}: a *.json in the run folder {run}: a FIFO, not a regular file, so not read"
    ]
    assert [entry["path"] for entry in document["data_files"]["refused"]] == [str(fifo)]


def test_a_result_file_is_read_no_further_than_its_bound(tmp_path, monkeypatch):
    """A sparse or compressed file far larger than any result (its head a result's, then a
    gigabyte) is refused after ``MAX_RESULT_CHARS`` characters, not read whole into memory."""
    monkeypatch.setattr(results, "MAX_RESULT_CHARS", 1000)
    sparse = tmp_path / "run" / "results" / "perplexity.json"
    sparse.parent.mkdir(parents=True)
    with open(sparse, "w") as handle:
        handle.write('{"kind": "perplexity", "result": ')
        handle.truncate(2**30)
    with pytest.raises(InputFormatError, match=r"perplexity\.json: more than 1,000 characters"):
        view_data([tmp_path / "run"], models=False)
    bomb = tmp_path / "perplexity.json.gz"
    bomb.write_bytes(gzip.compress(b'{"kind": "perplexity", "result": ' + b" " * 10**7))
    with pytest.raises(InputFormatError, match=r"perplexity\.json\.gz: more than 1,000 characters"):
        view_data([bomb], models=False)


def test_ctrl_c_leaves_the_page_as_it_was(tmp_path, monkeypatch, capsys):
    """The page is written whole or not at all (``atomic_writer``): a Ctrl-C while it is written
    leaves ``--out`` as it was and no temporary file; the command says so and exits with 130."""
    run = tmp_path / "run"
    result_file(run / "perplexity.json", "perplexity", PERPLEXITY)
    out = tmp_path / "page.html"
    out.write_text("the page before")

    def interrupted(document):
        raise KeyboardInterrupt

    monkeypatch.setattr("syntaxlm.view.page.render_page", interrupted)
    monkeypatch.setattr(sys, "argv", ["syntaxlm", "view", str(run), "--out", str(out), "--no-models"])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 130
    kept = f"interrupted; no page written ({out} unchanged: a page is put in place only when complete)\n"
    assert capsys.readouterr().err == kept
    assert out.read_text() == "the page before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "run"]  # no temporary file left


# --- runs as they are given: folders, result files, suites named by relative paths ---------------------

MANY_ITEMS = 40


def many_items(folder: Path, project: Path) -> list[Path]:
    """Two run folders (tg, txl-terminals) under ``project`` scoring a suite ``many`` of
    ``MANY_ITEMS`` items (the fixture's first suite's first item, renumbered; tg passing every
    third), their result files naming the suite by a path relative to ``project``, as ``eval sg``
    run there with a relative path wrote them before paths were recorded absolute."""
    first = sorted((folder / "runs" / "tg" / "results" / "sg").glob("*.json"))[0]
    suite = json.loads(Path(read_result(first)["inputs"]["suite"]["path"]).read_text())
    suite["meta"]["name"] = "many"
    suite["items"] = [suite["items"][0] | {"item_number": k} for k in range(1, MANY_ITEMS + 1)]
    (project / "data" / "suites").mkdir(parents=True)
    (project / "data" / "suites" / "many.json").write_text(json.dumps(suite))
    given = []
    for name in ("tg", "txl-terminals"):
        record = read_result(folder / "runs" / name / "results" / "sg" / first.name)
        item = record["result"]["items"][0]
        record["result"] |= {
            "suite": "many",
            "n_items": MANY_ITEMS,
            "items": [
                item | {"item_number": k, "results": [k % 3 == 0 or name != "tg"]}
                for k in range(1, MANY_ITEMS + 1)
            ],
        }
        record["inputs"]["suite"]["path"] = "data/suites/many.json"
        run = project / "runs" / name
        (run / "results" / "sg").mkdir(parents=True)
        (run / "results" / "sg" / "many.json").write_text(json.dumps(record))
        (run / "config.json").write_text(json.dumps({"model": name}))
        given.append(run)
    return given


def test_a_suite_named_by_a_relative_path_is_found_from_another_directory(runs, tmp_path, monkeypatch):
    """Was: a page built in another directory than the evaluation's had empty region rows and
    headers "region 1…8", and said nothing. A relative path is looked for from the working
    directory, then from each folder above the result file; a suite not found is said, naming the
    file, on the page and in the messages."""
    project = tmp_path / "project"
    given = many_items(runs[0], project)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    suite = view_data(given, models=False)["syntaxgym"][0]
    source = load_suite(project / "data" / "suites" / "many.json")
    assert suite["suite_file"] == str(project / "data" / "suites" / "many.json") and suite["notes"] == []
    assert suite["region_names"] == list(source.region_names)
    assert suite["items"][0]["regions"] == {c: list(r) for c, r in source.items[0].regions.items()}
    named_by = given[0] / "results" / "sg" / "many.json"
    record = read_result(named_by)
    record["inputs"]["suite"]["path"] = "gone/many.json"
    named_by.write_text(json.dumps(record))
    messages: list[str] = []
    suite = view_data(given[:1], models=False, echo=messages.append)["syntaxgym"][0]
    why = "not there (looked for from the working directory and each folder above the file naming it)"
    what = f"the suite named by {named_by} (inputs.suite.path)"
    assert messages == [f"warning: refused gone/many.json: {what}: {why}"]
    assert suite["notes"] == [
        f"The suite file gone/many.json named by {named_by} was not read: {why}.",
        "Its regions are shown by number, without their names and texts.",
    ]
    assert suite["region_names"] == [None] * len(source.region_names) and suite["items"][0]["regions"] == {}


def test_result_files_of_one_model_given_alone_are_one_run(runs):
    """Was: two result files of one model became two runs, "tg (perplexity.json)" and
    "tg (x.json)"."""
    folder, _ = runs
    tg = folder / "runs" / "tg" / "results"
    prpn = folder / "runs" / "prpn" / "results" / "perplexity.json"
    files = [tg / "perplexity.json", *sorted((tg / "sg").glob("*.json")), prpn]
    document = view_data(files, models=False)
    assert [(run["name"], run["path"]) for run in document["runs"]] == [
        ("tg", f"3 result files under {tg}"),
        ("prpn", str(files[-1])),
    ]
    assert document["runs"][0]["saved_model"] == str(folder / "runs" / "tg" / "best")
    tables = {table["kind"]: table for table in document["tables"]}
    assert [row["model"] for row in tables["perplexity"]["rows"]] == ["tg", "prpn"]
    assert tables["syntaxgym"]["rows"][0]["numbers"]["SG suites scored"]["values"] == [2]


def test_a_folder_that_is_no_run_is_an_error(tmp_path, monkeypatch, capsys):
    """Was: an empty folder, or one holding no run, gave exit 0 and a page reading "No result
    files were found"."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(sys, "argv", ["syntaxlm", "view", str(empty), "--out", str(tmp_path / "page.html")])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        f"error: {empty}: no result file, saved model (best/) or config.json in this folder; expected a run "
        "folder (syntaxlm train --out, the quickstart's runs/MODEL) holding result files (syntaxlm eval ... "
        "--out), or result files\n"
    )
    assert not (tmp_path / "page.html").exists()
    runs = tmp_path / "runs"
    for name in ("lm", "tg"):
        result_file(runs / name / "results" / "perplexity.json", "perplexity", PERPLEXITY)
        (runs / name / "config.json").write_text(json.dumps({"model": name}))
    expected = r"runs: a folder of run folders \(lm, tg\), not a run folder; expected the run folders"
    with pytest.raises(InputFormatError, match=expected + r" themselves \(.*/runs/\*\)$"):
        view_data([runs], models=False)


# --- the page in a browser ------------------------------------------------------------------------------

# Selenium drives Debian's chromium through Debian's chromedriver, built from the same sources as
# the browser, so the two always match; Selenium itself is pure Python and is never asked to fetch
# a browser or a driver (both paths are given).
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
    "--disable-component-update --disable-sync --window-size=1280,900"
).split()


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the dev extras)")
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("no chromium and chromedriver here (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="syntaxlm-view-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def count(browser, *selectors):  # one round trip for several counts
    return browser.execute_script(
        "return arguments[0].map((s) => document.querySelectorAll(s).length)", list(selectors)
    )


def texts(browser, selector):
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.textContent)", selector
    )


def show(browser, view):
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, f'#tabs button[data-view="{view}"]').click()
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('main > section')).filter((s) => !s.hidden)"
        ".map((s) => s.id)"
    )
    assert shown == [view]


def choose(browser, select_id, value):  # as a person picks an option: the page hears a change
    browser.execute_script(
        "const s = document.getElementById(arguments[0]); s.value = arguments[1];"
        "s.dispatchEvent(new Event('change'))",
        select_id,
        value,
    )


def no_severe_errors(browser):
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


def test_the_page_renders_and_answers_clicks_in_chromium(browser, runs, tmp_path):
    from matplotlib.image import imread
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(Path(runs[1]).resolve().as_uri())
    document = embedded(runs)
    # The comparison: a table per kind of result, sortable by a click on a column.
    assert count(browser, "#table-perplexity tbody tr", "#table-syntaxgym tbody tr") == [len(MODELS)] * 2
    browser.find_element(By.CSS_SELECTOR, "#table-perplexity th:nth-child(2)").click()
    values = [float(text) for text in texts(browser, "#table-perplexity tbody tr td:nth-child(2)")]
    assert values == sorted(values) and len(values) == len(MODELS)
    # Numbers of a column have one count of decimals, and the warning of a table is one box.
    decimals = {len(text.partition(".")[2]) for text in texts(browser, "#table-perplexity td:nth-child(2)")}
    assert len(decimals) == 1
    assert count(browser, "#comparison .note")[0] == len([t for t in document["tables"] if t["notes"]])
    # SyntaxGym: suites, items, a filter (items where A passes and B fails) and an item's regions.
    show(browser, "syntaxgym")
    assert count(browser, "#sg-suites tbody tr", "#sg-items tbody tr") == [2, 4]
    headers = texts(browser, "#sg-suites th")
    assert "tgbeam 5/2/1" in headers and "txl-terminalsexact" in headers  # each model's method under it
    choose(browser, "sg-a", "tg")
    choose(browser, "sg-b", "txl-terminals")
    Select(browser.find_element(By.ID, "sg-outcome")).select_by_value("a_not_b")
    expected = sum(
        item["runs"]["tg"]["results"][0] and not item["runs"]["txl-terminals"]["results"][0]
        for suite in document["syntaxgym"]
        for item in suite["items"]
    )
    assert count(browser, "#sg-items tbody tr") == [expected]
    items = f"{expected} item{'' if expected == 1 else 's'}"
    assert texts(browser, "#sg-count") == [f"{items} (tg passes, txl-terminals fails)"]
    choose(browser, "sg-outcome", "all")
    # A click on a suite keeps the suites' order: sorted by a model's accuracy, descending.
    for _ in range(2):
        browser.find_element(By.CSS_SELECTOR, "#sg-suites th:nth-child(2)").click()
    order = texts(browser, "#sg-suites tbody td:first-child")
    browser.find_element(By.CSS_SELECTOR, "#sg-suites tbody tr:nth-child(2)").click()
    assert texts(browser, "#sg-suites tbody td:first-child") == order
    assert count(browser, "#sg-items tbody tr") == [2]
    assert count(browser, "#sg-suites th.sorted-down") == [1]
    browser.find_element(By.CSS_SELECTOR, "#sg-items tbody tr").click()
    assert count(browser, "#sg-regions tr")[0] > 1 and "item" in texts(browser, "#sg-item-detail h3")[0]
    # Regions by number and name; those the formulas compare highlighted.
    suite = next(s for s in document["syntaxgym"] if s["suite"] == order[1])
    names = suite["region_names"]
    critical = sorted({int(k) for p in suite["predictions"] for k in re.findall(r"\((\d+);", p)})
    assert texts(browser, "#sg-regions th.critical") == [f"({k}) {names[k - 1]}" for k in critical]
    assert texts(browser, "#sg-regions tr:first-child th")[2] == f"(1) {names[0]}"
    # Sentences: clicking one shows its words, surprisal bars and trees.
    show(browser, "sentences")
    browser.find_elements(By.CSS_SELECTOR, "#sentence-list li")[1].click()
    assert texts(browser, "#sentence-title") == [" ".join(document["sentence_view"]["sentences"][1])]
    captions = texts(browser, "#trees h3")
    assert captions[0] == "gold tree" and any("best parse" in c for c in captions)
    assert any("induced tree" in c for c in captions)
    assert count(browser, "#surprisal-chart rect", "svg.distances")[0] > 0
    # Bars of equal width, whatever the words' lengths.
    widths = browser.execute_script(
        "return Array.from(document.querySelectorAll('#surprisal-chart rect, svg.distances rect'))"
        ".map((r) => r.closest('svg').classList.value + r.getAttribute('width'))"
    )
    assert len(set(widths)) == 2
    # Masks and attention of the selected sentence, for TG and PLM-mask, side by side.
    show(browser, "attention")
    assert browser.execute_script("return document.getElementById('att-sentence').value") == "1"
    assert count(browser, "svg.heatmap") == [2]
    tops = browser.execute_script(
        "return Array.from(document.querySelectorAll('#heatmaps > .panel'))"
        ".map((p) => p.getBoundingClientRect().top)"
    )
    assert tops[0] == tops[1]
    # Every row label whole: none starts left of its map.
    assert browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.heatmap text[text-anchor=end]'))"
        ".every((t) => t.getBBox().x >= 0)"
    )
    choose(browser, "att-model", "plm-mask")
    assert "(buffer)" in texts(browser, "#att-head")[0] and count(browser, "svg.heatmap") == [2]
    no_severe_errors(browser)
    screenshot = tmp_path / "page.png"
    assert browser.save_screenshot(str(screenshot))
    pixels = (imread(screenshot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 50  # text, tables and heat maps, not a blank page


def fits(browser) -> bool:
    """Whether the page is no wider than the window (nothing makes it scroll sideways)."""
    return browser.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_in_a_narrow_window_charts_scroll_in_their_panels_not_the_page(browser, runs):
    """Was: a 27-word sentence's charts and trees, and the heat maps, made an 800-pixel window
    scroll sideways."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(800, 900)
    try:
        browser.get(Path(runs[1]).resolve().as_uri())
        for view in ("comparison", "syntaxgym", "sentences", "attention"):
            show(browser, view)
            if view == "syntaxgym":
                browser.find_element(By.CSS_SELECTOR, "#sg-items tbody tr").click()
            if view == "sentences":
                browser.find_elements(By.CSS_SELECTOR, "#sentence-list li")[1].click()
                assert len(texts(browser, "#sentence-title")[0].split()) == 27
                assert browser.execute_script(  # the chart's scrolling box inside its panel
                    "const right = (e) => e.getBoundingClientRect().right;"
                    "return right(document.getElementById('surprisal-chart').parentNode)"
                    "    <= right(document.getElementById('surprisal-panel'))"
                )
            assert fits(browser), view
        no_severe_errors(browser)
    finally:
        browser.set_window_size(1280, 900)


def test_a_page_built_elsewhere_shows_region_texts_and_clicks_keep_sort_and_scroll(
    browser, runs, tmp_path, monkeypatch
):
    """Was: result files naming their suite by a relative path gave a page built in another
    directory empty region rows; a click on an item redrew the items unsorted and scrolled back
    to the top, the item chosen out of sight."""
    project = tmp_path / "project"
    given = many_items(runs[0], project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    page = write_view(given, tmp_path / "many.html", models=False)
    browser.get(page.as_uri())
    show(browser, "syntaxgym")
    for _ in range(2):  # by item number, descending
        browser.execute_script("document.querySelector('#sg-items th:nth-child(2)').click()")
    order = texts(browser, "#sg-items tbody td:nth-child(2)")
    assert order == [str(k) for k in range(MANY_ITEMS, 0, -1)]
    clicked = browser.execute_script(
        "const box = document.getElementById('sg-item-box'); box.scrollTop = 400;"
        "const row = Array.from(box.querySelectorAll('tbody tr')).find((r) => r.offsetTop >= 440);"
        "row.click(); return row.children[1].textContent"
    )
    assert texts(browser, "#sg-items tbody td:nth-child(2)") == order
    assert texts(browser, "#sg-items tr.selected td:nth-child(2)") == [clicked]
    in_sight = browser.execute_script(
        "const box = document.getElementById('sg-item-box').getBoundingClientRect();"
        "const row = document.querySelector('#sg-items tr.selected').getBoundingClientRect();"
        "const detail = document.getElementById('sg-item-detail').getBoundingClientRect();"
        "return [document.getElementById('sg-item-box').scrollTop,"
        "        row.top >= box.top && row.bottom <= box.bottom,"
        "        detail.top < window.innerHeight && detail.bottom > 0]"
    )
    assert in_sight == [400, True, True]
    assert texts(browser, "#sg-item-detail h3") == [f"many, item {clicked}"]
    region_texts = texts(browser, "#sg-regions tr.region-text td:nth-child(3)")
    assert region_texts and all(region_texts)  # the suite was found: each region's text is shown
    # One model is filtered by its own outcome, never compared with itself.
    browser.get(write_view(given[:1], tmp_path / "one.html", models=False).as_uri())
    assert count(browser, "#sg-b") == [0]
    assert texts(browser, "#sg-outcome option") == ["all items", "tg passes", "tg fails"]
    no_severe_errors(browser)
