"""``syntaxlm view``: the data the page embeds is that of the result files and of the saved models'
own methods, bad inputs are named, and the page renders in a real browser (headless Chromium)."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.data.treebank import read_treebank
from syntaxlm.errors import InputFormatError
from syntaxlm.eval.syntaxgym import load_suite
from syntaxlm.experiments import EvalSettings, evaluate_model
from syntaxlm.inference import BeamSettings, Scorer
from syntaxlm.models import build_model, load_model, model_class, model_config
from syntaxlm.results import read_result
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train.trainer import save_model_folder
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


def test_the_page_renders_and_answers_clicks_in_chromium(browser, runs, tmp_path):
    from matplotlib.image import imread
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def count(*selectors):  # one round trip for several counts
        return browser.execute_script(
            "return arguments[0].map((s) => document.querySelectorAll(s).length)", list(selectors)
        )

    def texts(selector):
        return browser.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.textContent)", selector
        )

    def show(view):
        browser.find_element(By.CSS_SELECTOR, f'#tabs button[data-view="{view}"]').click()
        shown = browser.execute_script(
            "return Array.from(document.querySelectorAll('main > section')).filter((s) => !s.hidden)"
            ".map((s) => s.id)"
        )
        assert shown == [view]

    def choose(select_id, value):  # as a person picks an option: the page hears a change
        browser.execute_script(
            "const s = document.getElementById(arguments[0]); s.value = arguments[1];"
            "s.dispatchEvent(new Event('change'))",
            select_id,
            value,
        )

    browser.get(Path(runs[1]).resolve().as_uri())
    document = embedded(runs)
    # The comparison: a table per kind of result, sortable by a click on a column.
    assert count("#table-perplexity tbody tr", "#table-syntaxgym tbody tr") == [len(MODELS)] * 2
    browser.find_element(By.CSS_SELECTOR, "#table-perplexity th:nth-child(2)").click()
    values = [float(text) for text in texts("#table-perplexity tbody tr td:nth-child(2)")]
    assert values == sorted(values) and len(values) == len(MODELS)
    # SyntaxGym: suites, items, a filter (items where A passes and B fails) and an item's regions.
    show("syntaxgym")
    assert count("#sg-suites tbody tr", "#sg-items tbody tr") == [2, 4]
    choose("sg-a", "tg")
    choose("sg-b", "txl-terminals")
    Select(browser.find_element(By.ID, "sg-outcome")).select_by_value("a_not_b")
    expected = sum(
        item["runs"]["tg"]["results"][0] and not item["runs"]["txl-terminals"]["results"][0]
        for suite in document["syntaxgym"]
        for item in suite["items"]
    )
    assert count("#sg-items tbody tr") == [expected]
    assert texts("#sg-count")[0].startswith(f"{expected} item")
    choose("sg-outcome", "all")
    browser.find_element(By.CSS_SELECTOR, "#sg-items tbody tr").click()
    assert count("#sg-regions tr")[0] > 1 and "item" in texts("#sg-item-detail h3")[0]
    # Sentences: clicking one shows its words, surprisal bars and trees.
    show("sentences")
    browser.find_elements(By.CSS_SELECTOR, "#sentence-list li")[1].click()
    assert texts("#sentence-title") == [" ".join(document["sentence_view"]["sentences"][1])]
    captions = texts("#trees h3")
    assert captions[0] == "gold tree" and any("best parse" in c for c in captions)
    assert any("induced tree" in c for c in captions)
    assert count("#surprisal-chart rect", "svg.distances")[0] > 0
    # Masks and attention of the selected sentence, for TG and PLM-mask.
    show("attention")
    assert browser.execute_script("return document.getElementById('att-sentence').value") == "1"
    assert count("svg.heatmap") == [2]
    choose("att-model", "plm-mask")
    assert "(buffer)" in texts("#att-head")[0] and count("svg.heatmap") == [2]
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    screenshot = tmp_path / "page.png"
    assert browser.save_screenshot(str(screenshot))
    pixels = (imread(screenshot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 50  # text, tables and heat maps, not a blank page
