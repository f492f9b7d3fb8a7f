"""``syntaxlm report``: tables over seeds and figures, from result files only."""

from __future__ import annotations

import json

import pytest

from syntaxlm.errors import InputFormatError
from syntaxlm.report.report import make_report, read_run
from syntaxlm.results import result_record, write_result
from tests.test_cli import run


def write_run(folder, model, seed, suites, perplexity):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    for name, accuracy in suites.items():
        result = {"suite": name, "accuracy_pred0": accuracy}
        write_result(folder / "sg" / f"{name}.json", result_record("syntaxgym", result))
    ppl = {"perplexity_per_word": perplexity, "perplexity_per_token": 0.9 * perplexity}
    write_result(folder / "ppl.json", result_record("perplexity", ppl))
    (folder / "notes.json").write_text('{"unrelated": true}')  # not a result file: ignored


def test_report_averages_seeds_and_draws_the_figures(tmp_path):
    suites = {"number_src": 0.8, "npi_src_any": 0.5, "mvrr": 0.6}
    write_run(tmp_path / "tg-1", "TG", 1, suites, 60.0)
    write_run(tmp_path / "tg-2", "TG", 2, {k: v + 0.1 for k, v in suites.items()}, 62.0)
    write_run(tmp_path / "txl", "TXL (terminals)", 1, {"number_src": 0.7}, 65.0)
    result = run(
        "report", tmp_path / "tg-1", tmp_path / "tg-2", tmp_path / "txl", "--out", tmp_path / "report"
    )
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| T")}
    assert "61 ± 1.4 (n=2)" in rows["TG"]  # perplexity 60, 62
    assert "0.6833 ± 0.071 (n=2)" in rows["TG"]  # mean over the three suites, 0.633 and 0.733
    assert "| 65 |" in rows["TXL (terminals)"].replace("  ", " ")
    assert (tmp_path / "report" / "sg_circuits.png").stat().st_size > 1000
    assert "SG score (31 suites" not in text  # not every suite of the set was scored
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    assert "perplexity per word (end included; TG, Qian et al.)" in header
    assert "perplexity per token (end counted as a token)" in header


def test_old_perplexity_files_are_shown_under_the_convention_they_used(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    for name, count_eos in (("with.json", True), ("without.json", False)):
        record = result_record("perplexity", {"perplexity": 50.0, "count_eos": count_eos})
        write_result(folder / name, record)
    metrics = read_run(folder).metrics
    assert metrics["perplexity per token (end counted as a token)"] == 50.0
    assert metrics["perplexity per word (end left out)"] == 50.0
    assert "perplexity per word (end included; TG, Qian et al.)" not in metrics


def test_run_without_config_is_named_by_its_folder(tmp_path):
    (tmp_path / "lstm").mkdir()
    write_result(tmp_path / "lstm" / "b.json", result_record("blimp", {"overall_accuracy": 0.7}))
    assert read_run(tmp_path / "lstm").metrics == {"BLiMP accuracy": 0.7}
    assert read_run(tmp_path / "lstm").model == "lstm"
    path = make_report([tmp_path / "lstm"], tmp_path / "out")
    assert "BLiMP accuracy" in path.read_text()


def test_bad_run_folders_fail_clearly(tmp_path):
    with pytest.raises(InputFormatError, match="not a folder"):
        read_run(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{")
    with pytest.raises(InputFormatError, match="config.json:1:2: invalid JSON"):
        read_run(tmp_path / "bad")


def write_items_run(folder, model, seed, outcomes, chance=0.25):
    """A run whose SG results hold per-item outcomes: ``outcomes[suite]`` is a list of 0/1."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    for name, values in outcomes.items():
        items = [{"item_number": i + 1, "results": [bool(v)]} for i, v in enumerate(values)]
        result = {
            "suite": name,
            "accuracy_pred0": sum(values) / len(values),
            "chance_pred0": chance,
            "items": items,
        }
        write_result(folder / "sg" / f"{name}.json", result_record("syntaxgym", result))


def test_report_compares_models_by_intervals_and_says_no_difference_when_they_overlap(tmp_path):
    """Agreement: 36 of 40 items against 4 of 40 is ahead; NPI: 21 against 20 of 40 is no
    difference; the statements follow the paired difference intervals."""
    base = {"synthetic_number_prep": [1] * 2 + [0] * 18, "synthetic_number_src": [1] * 2 + [0] * 18}
    base["synthetic_npi_src_any"] = [1, 0] * 20
    tg = {"synthetic_number_prep": [1] * 18 + [0] * 2, "synthetic_number_src": [1] * 18 + [0] * 2}
    tg["synthetic_npi_src_any"] = [1, 0] * 20
    tg["synthetic_npi_src_any"][1] = 1
    write_items_run(tmp_path / "txl", "txl-terminals", 0, base)
    for seed in (0, 1):
        write_items_run(tmp_path / f"tg-{seed}", "tg", seed, tg)
    result = run(
        "report", tmp_path / "txl", tmp_path / "tg-0", tmp_path / "tg-1", "--out", tmp_path / "report"
    )
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    rows = {tuple(cell.strip() for cell in line.split("|")[1:3]): line for line in text.splitlines()}
    assert rows[("tg", "agreement")].rstrip(" |").endswith("ahead")
    assert "| 0.900 [" in rows[("tg", "agreement")] and "| 0.100 [" in rows[("tg", "agreement")]
    assert rows[("tg", "NPI licensing")].rstrip(" |").endswith("no difference")
    assert "- **tg** against txl-terminals: ahead on agreement; no difference on NPI licensing." in text
    assert "(runs: txl-terminals 1, tg 2)" in text
    assert (tmp_path / "report" / "sg_circuits.png").stat().st_size > 1000
    bad = run("report", tmp_path / "txl", "--out", tmp_path / "r2", "--baseline", "lstm")
    assert bad.returncode != 0 and "baseline 'lstm' is not a model of the runs" in bad.stderr
