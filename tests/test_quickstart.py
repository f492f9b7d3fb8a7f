import json
import re
import shutil
from functools import partial

import pytest
import torch

from syntaxlm.errors import StageError
from syntaxlm.inference.beam import BeamSettings
from syntaxlm.jobs.quickstart import run_quickstart, user_splits
from syntaxlm.jobs.quickstart_report import contrast_statement, model_numbers, pattern_statement
from syntaxlm.jobs.quickstart_settings import FAST, FULL, MODELS, Budget
from syntaxlm.jobs.recipes import find_recipe, recipe_names
from syntaxlm.jobs.stages import Stages
from syntaxlm.models import ConfigError
from syntaxlm.results import read_result
from syntaxlm.trees.ptb import read_trees

from .test_cli import run

TINY = Budget(
    sentences=120, items_per_suite=1, epochs=1, batch_size=16, test_sentences=4, beam=BeamSettings(3, 2, 1)
)
CHOSEN = ["txl-terminals", "tg", "prpn"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    out = tmp_path_factory.mktemp("quickstart")
    lines = []
    summary = run_quickstart(out, budget=TINY, models=CHOSEN, workers=2, echo=lines.append)
    return out, summary, lines


def _table_rows(report: str) -> dict[str, list[str]]:
    rows = {}
    for line in report.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in {m.name for m in MODELS}:
            rows.setdefault(cells[0], cells)
    return rows


def test_every_model_is_trained_evaluated_and_reported(quickstart):
    out, summary, lines = quickstart
    assert summary["models"] == CHOSEN
    # The models train and are evaluated side by side, each reported when it ends.
    assert [line.split("]")[0] for line in lines if line.startswith("[")] == ["[1/5", "[2-4/5", "[5/5"]
    assert lines[1].startswith("[2-4/5] 3 stages in 2 processes of 1 thread(s)")
    ended = [line.split(":")[0].strip() for line in lines if line.startswith("  ")]
    assert sorted(ended) == sorted(f"train and evaluate {name}" for name in CHOSEN)
    assert set(summary["seconds"]) == {
        "prepare the data",
        *(f"{step} {name}" for name in CHOSEN for step in ("train", "evaluate")),
        "write the report",
    }
    report = (out / "report.md").read_text()
    assert set(_table_rows(report)) == set(CHOSEN)
    assert b'id="view-data"' in (out / "view.html").read_bytes()  # the explorer page beside it
    for figure in ("sg_suites", "perplexity_vs_sg", "training", "surprisal", "structure-prpn"):
        assert (out / "figures" / f"{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"figures/{figure}.png" in report
    results = out / "runs" / "tg" / "results"
    assert {p.name for p in results.iterdir()} == {"perplexity.json", "parseval.json", "sg"}
    assert len(list((results / "sg").glob("*.json"))) == len(list((out / "data" / "suites").glob("*.json")))
    assert (out / "runs" / "prpn" / "results" / "uf1.json").is_file()
    assert not (out / "runs" / "txl-terminals" / "results" / "parseval.json").exists()
    tg = read_result(results / "perplexity.json")
    assert tg["result"]["marginalisation"]["method"] == "beam"
    assert (tg["result"]["n_sentences"], tg["options"]["limit"]) == (4, 4)


def test_the_reports_numbers_are_those_of_the_result_files(quickstart):
    out, _, _ = quickstart
    rows = _table_rows((out / "report.md").read_text())
    for name in CHOSEN:
        numbers = model_numbers(out / "runs" / name)
        row = rows[name]
        assert row[4].startswith(f"{numbers['perplexity_per_word']:.2f} ({numbers['perplexity_method']})")
        assert row[5] == f"{numbers['sg_mean']:.3f}"
        ppl = read_result(out / "runs" / name / "results" / "perplexity.json")["result"]
        assert numbers["perplexity_per_word"] == ppl["perplexity_per_word"]
    prpn_uf1 = read_result(out / "runs" / "prpn" / "results" / "uf1.json")["result"]["model"][
        "mean_sentence_f1"
    ]
    assert rows["prpn"][8] == f"{100 * prpn_uf1:.1f}"
    assert rows["txl-terminals"][7] == "–"
    tg_f1 = read_result(out / "runs" / "tg" / "results" / "parseval.json")["result"]["summary"]["all"]["f1"]
    assert rows["tg"][7] == f"{tg_f1 or 0.0:.1f}"


def test_a_parse_matching_no_bracket_scores_zero_not_missing(quickstart, tmp_path):
    out, _, _ = quickstart
    run = tmp_path / "tg"
    shutil.copytree(out / "runs" / "tg", run)
    path = run / "results" / "parseval.json"
    record = json.loads(path.read_text())
    record["result"]["summary"]["all"].update(matched=0, recall=0.0, precision=0.0, f1=None)
    path.write_text(json.dumps(record))
    assert model_numbers(run)["parse_f1"] == 0.0


def test_a_second_run_resumes_without_training_again(quickstart):
    out, _, _ = quickstart
    # The words-only model: its evaluation (run again) is exact, not TG's beam search.
    training = out / "runs" / "txl-terminals" / "training.json"
    before = training.stat().st_mtime_ns
    run_quickstart(out, budget=TINY, models=["txl-terminals"], echo=lambda line: None)
    assert training.stat().st_mtime_ns == before
    other = Budget(**{**TINY.__dict__, "epochs": 2})
    with pytest.raises(ConfigError, match="finished run of another recipe"):
        run_quickstart(out, budget=other, models=["tg"], echo=lambda line: None)
    # In worker processes the error names the stage it stopped.
    with pytest.raises(StageError, match="train and evaluate (tg|prpn): .*finished run of another recipe"):
        run_quickstart(out, budget=other, models=["tg", "prpn"], workers=2, echo=lambda line: None)


def test_a_user_treebank_is_split_and_has_no_suites(tmp_path, quickstart):
    out, _, _ = quickstart
    trees = list(read_trees(out / "data" / "train.trees"))[:40]
    source = tmp_path / "mine.mrg"
    source.write_text("\n".join(tree.to_bracket() for tree in trees) + "\n")
    summary = run_quickstart(tmp_path / "run", data=source, budget=TINY, models=["txl-terminals"], echo=print)
    assert [summary["treebank"][s]["sentences"] for s in ("train", "dev", "test")] == [32, 4, 4]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "No SyntaxGym suites were scored" in report
    assert "`" + str(source) + "`" in report


def test_a_user_folder_may_name_its_splits_as_ud_does(tmp_path):
    for name in ("en_x-ud-train.conllu", "en_x-ud-dev.conllu", "en_x-ud-test.conllu", "README.md"):
        (tmp_path / name).write_text("")
    splits = user_splits(tmp_path, tmp_path / "out")
    assert {split: path.name for split, path in splits.items()} == {
        "train": "en_x-ud-train.conllu",
        "dev": "en_x-ud-dev.conllu",
        "test": "en_x-ud-test.conllu",
    }
    (tmp_path / "valid.conllu").write_text("")
    with pytest.raises(ValueError, match=r"2 dev files \(en_x-ud-dev.conllu, valid.conllu\)"):
        user_splits(tmp_path, tmp_path / "out")


def test_bad_choices_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown quickstart model"):
        run_quickstart(tmp_path, budget=TINY, models=["gpt"], echo=print)
    with pytest.raises(FileNotFoundError, match="no such treebank"):
        run_quickstart(tmp_path, data=tmp_path / "missing.mrg", budget=TINY, echo=print)
    folder = tmp_path / "bank"
    folder.mkdir()
    (folder / "train.trees").write_text("(S (NN a))\n")
    with pytest.raises(ValueError, match="no dev file"):
        run_quickstart(tmp_path / "x", data=folder, budget=TINY, echo=print)


def _scored(accuracy_by_suite: dict[str, list[float]]) -> dict:
    """A model's numbers as ``model_numbers`` reads them: per-suite accuracy and item outcomes."""
    suites = {s: sum(v) / len(v) for s, v in accuracy_by_suite.items()}
    return {
        "suites": suites,
        "suite_items": accuracy_by_suite,
        "agreement_licensing": sum(suites.values()) / len(suites),
    }


def test_each_model_is_compared_with_its_papers_baseline_plainly_either_way():
    n = 40
    half = [1.0, 0.0] * (n // 2)  # 0.5 on each suite
    base = _scored({"synthetic_number_src": half, "synthetic_npi_src_any": half})
    nearly_all = [1.0] * (n - 2) + [0.0] * 2
    strong = _scored({"synthetic_number_src": [1.0] * n, "synthetic_npi_src_any": nearly_all})
    text = pattern_statement({"txl-terminals": base, "tg": strong})
    assert "the pattern the papers report" in text and "does not" not in text
    assert "(80 items in 2 suites)" in text
    assert re.search(
        r"- against txl-terminals 0\.500 \[0\.\d{3}, 0\.\d{3}\]: ahead: tg 0\.975 \[0\.9\d\d, 1\.000\]\.",
        text,
    )
    weak = _scored({"synthetic_number_src": [0.0] * n, "synthetic_npi_src_any": [1 - v for v in nearly_all]})
    text = pattern_statement({"txl-terminals": base, "tg": weak})
    assert re.search(r": behind: tg 0\.025 ", text)
    assert "does not appear at this scale" in text
    # One item in eighty better than the baseline: a higher point accuracy, but no difference.
    close = _scored({"synthetic_number_src": [1.0, 1.0] + half[2:], "synthetic_npi_src_any": half})
    assert close["agreement_licensing"] > base["agreement_licensing"]
    text = pattern_statement({"txl-terminals": base, "tg": strong, "txl-trees": close})
    assert re.search(r"ahead: tg 0\.975 \[[^]]+\]; no difference: txl-trees 0\.512", text)
    assert "appears only for the models ahead" in text
    # Each model against its own paper's baseline: PLM-mask against the transformer LM.
    text = pattern_statement({"txl-terminals": base, "tg": weak, "lm": weak, "plm-mask": strong})
    assert "- against txl-terminals 0.500" in text and "- against lm 0.025" in text
    assert re.search(r"- against lm [^:]+: ahead: plm-mask 0\.975", text)
    # A baseline not run, or without per-item outcomes: no comparison claimed.
    assert "- plm-mask: not compared (the baseline lm was not run)." in pattern_statement(
        {"plm-mask": strong}
    )
    unscored = {"suites": {"synthetic_number_src": 0.5}, "agreement_licensing": 0.5}
    text = pattern_statement({"txl-terminals": unscored, "tg": strong})
    assert "- tg: not compared (the baseline txl-terminals has no per-item outcomes" in text
    assert "No model could be compared with its baseline." in text


def test_stages_estimate_the_time_left_from_the_pace_so_far():
    lines = []
    stages = Stages([("a", 1.0), ("b", 3.0)], echo=lines.append)
    stages.run(0, lambda: None)
    stages.start -= 10  # as if stage a took 10 s
    stages.run(1, lambda: None)
    assert lines[0] == "[1/2] a  (0:00 elapsed)"
    assert lines[1].startswith("[2/2] b  (0:10 elapsed, about 0:30 left)")


def test_independent_stages_run_side_by_side_and_return_in_order():
    lines = []
    stages = Stages([("a", 1.0), ("b", 1.0), ("c", 2.0), ("d", 1.0), ("e", 1.0)], echo=lines.append)
    stages.run(0, lambda: None)
    actions = [partial(pow, 2, 3), partial(pow, 3, 2), partial(pow, 2, 2)]
    assert stages.run_independent([1, 2, 3], actions, workers=2) == [8, 9, 4]
    threads = max(1, torch.get_num_threads() // 2)
    assert lines[1] == f"[2-4/5] 3 stages in 2 processes of {threads} thread(s)  (0:00 elapsed)"
    assert sorted(line.split(":")[0] for line in lines[2:]) == ["  b", "  c", "  d"]
    ended = r"  [bcd]: done in 0:00  \(\d:\d\d elapsed, about 0:00 left\)"
    assert all(re.fullmatch(ended, line) for line in lines[2:])
    assert set(stages.timings) == {"a", "b", "c", "d"} and stages.done_weight == 5.0
    # One worker: the stages run here, one after another, each announced as it starts.
    assert stages.run_independent([4], [partial(pow, 5, 1)], workers=2) == [5]
    assert lines[-1].startswith("[5/5] e  (")


def test_budgets_and_recipes():
    assert FAST.sentences < FULL.sentences and FAST.epochs <= FULL.epochs
    for model in MODELS:
        assert find_recipe(f"{model.name}-tiny").is_file()
    assert "tg-ptb" in recipe_names()
    assert find_recipe(find_recipe("tg-tiny")) == find_recipe("tg-tiny")
    with pytest.raises(ConfigError, match="no recipe named 'tg-huge'.*known recipes: .*tg-tiny"):
        find_recipe("tg-huge")
    with pytest.raises(ConfigError, match="no such recipe file"):
        find_recipe("nowhere/tg.yaml")


def test_quickstart_command_options():
    result = run("quickstart", "--help")
    assert result.returncode == 0
    for option in ("--fast", "--data", "--models", "--out"):
        assert option in result.stdout


def test_synth_command_is_deterministic(tmp_path):
    for name in ("a", "b"):
        result = run(
            "data", "synth", tmp_path / name, "--sentences", "200", "--seed", "7", "--items-per-suite", "5"
        )
        assert result.returncode == 0, result.stderr
    for file in ("train.trees", "dev.trees", "test.trees"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["seed"] == 7


def test_the_papers_contrasts_between_structured_models_are_stated_with_intervals():
    n = 40
    half = [1.0, 0.0] * (n // 2)
    everything = [1.0] * n
    strong = _scored({"synthetic_number_src": everything, "synthetic_npi_src_any": everything})
    base = _scored({"synthetic_number_src": half, "synthetic_npi_src_any": half})
    text = contrast_statement({"tg": strong, "txl-trees": base, "plm-mask": base, "plm": base})
    assert re.search(
        r"- tg 1\.000 \[1\.000, 1\.000\] is ahead of txl-trees 0\.500 \[[^]]+\] \(\+0\.500 \[", text
    )
    assert "TG against TXL (trees), the same network reading the same actions" in text
    assert re.search(
        r"- plm-mask 0\.500 \[[^]]+\] is no different from plm 0\.500 \[[^]]+\] \(\+0\.000 \[", text
    )
    text = contrast_statement({"tg": strong, "plm-mask": base})
    assert "- tg against txl-trees: not compared (txl-trees was not run)." in text
    assert "- plm-mask against plm: not compared (plm was not run)." in text
    other_items = _scored({"synthetic_number_prep": half})
    assert "was not scored on the same items" in contrast_statement({"tg": strong, "txl-trees": other_items})
    assert contrast_statement({"lm": base, "txl-terminals": base}) == ""
