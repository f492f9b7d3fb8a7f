import csv
import json
import math
import re

import pytest
import typer

from syntaxlm.cli import _numbers
from syntaxlm.curve import (
    PHENOMENA,
    CurveSettings,
    aggregate_curve,
    outcome_tables,
    phenomenon_of,
    prepare_curve_data,
    run_curve,
    run_folder,
    write_curve_report,
)
from syntaxlm.data.synthetic import SUITE_DESIGNS
from syntaxlm.errors import InputFormatError
from syntaxlm.eval.intervals import bootstrap_mean
from syntaxlm.inference.beam import BeamSettings
from syntaxlm.models import ConfigError
from syntaxlm.results import read_result, result_record, write_result

from .test_cli import run

# Seconds: 2 sizes x 2 models x 1 seed of 1-layer models, a few steps each, 2 items per suite.
TINY = CurveSettings(
    sizes=(80, 40),
    seeds=(0,),
    models=("txl-terminals", "tg"),
    dev_sentences=10,
    test_sentences=10,
    items_per_suite=2,
    min_epochs=1,
    min_steps=4,
    batch_size=16,
    overrides=(
        "model.n_layers=1",
        "model.d_model=16",
        "model.n_heads=2",
        "model.d_ff=32",
        "train.warmup_steps=0",
    ),
    beam=BeamSettings(2, 1, 1),
    resamples=200,
)


@pytest.fixture(scope="module")
def curve(tmp_path_factory):
    out = tmp_path_factory.mktemp("curve")
    lines = []
    result = run_curve(out, TINY, workers=2, echo=lines.append)
    return out, result, lines


def test_the_budget_rule_gives_small_sizes_more_passes():
    settings = CurveSettings()
    assert settings.epochs(1000) == max(settings.min_epochs, math.ceil(settings.min_steps * 32 / 1000))
    assert settings.epochs(16000) == settings.min_epochs
    assert settings.epochs(1000) > settings.epochs(4000) >= settings.epochs(16000)
    for size in settings.sizes:  # the cap is never what ends a run
        assert settings.max_steps(size) >= 2 * settings.epochs(size) * math.ceil(size / settings.batch_size)
    assert (TINY.epochs(40), TINY.epochs(80)) == (2, 1)
    with pytest.raises(ConfigError, match="sizes must be distinct"):
        CurveSettings(sizes=(100, 100))
    with pytest.raises(ConfigError, match="batch_size must be at least 1"):
        CurveSettings(batch_size=0)


def test_every_synthetic_suite_belongs_to_one_phenomenon():
    found = {design.name: phenomenon_of(design.name) for design in SUITE_DESIGNS}
    assert None not in found.values()
    assert set(found.values()) == set(PHENOMENA)
    assert found["synthetic_reflexive_gender"] == "reflexives"
    assert found["synthetic_center_embed_double"] == "centre embedding"


def test_the_sizes_are_nested_prefixes_of_one_training_split(curve):
    out, _, _ = curve
    data = out / "data"
    small, large = ((data / f"train-{n}.trees").read_text().splitlines() for n in (40, 80))
    full = (data / "train.trees").read_text().splitlines()
    assert (len(small), len(large), len(full)) == (40, 80, 80)
    assert large[:40] == small and large == full
    assert len((data / "dev.trees").read_text().splitlines()) == 10
    assert len((data / "test.trees").read_text().splitlines()) == 10
    assert len(list((data / "suites").glob("*.json"))) == len(SUITE_DESIGNS)
    for size in (40, 80):
        training = read_result(run_folder(out, "tg", size, 0) / "training.json")
        assert training["inputs"]["train"]["path"].endswith(f"train-{size}.trees")
        assert training["inputs"]["valid"]["path"] == str(data / "dev.trees")


def test_the_lexicon_size_reaches_the_generator_and_other_data_is_refused(tmp_path):
    settings = CurveSettings(
        sizes=(20, 10), dev_sentences=5, test_sentences=5, items_per_suite=1, lexicon_size=30
    )
    data = prepare_curve_data(tmp_path, settings)
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert manifest["lexicon_size"] == 30
    assert sorted(data["train"]) == [10, 20] and len(data["suites"]) == len(SUITE_DESIGNS)
    with pytest.raises(ConfigError, match="lexicon_size 30 -> None"):
        prepare_curve_data(tmp_path, CurveSettings(**{**settings.__dict__, "lexicon_size": None}))


def test_each_run_makes_its_passes_and_ends_its_schedule_at_the_floor(curve):
    out, result, _ = curve
    assert len(result["runs"]) == 4
    for entry in result["runs"]:
        assert entry["stopped"] == "epochs"
        assert entry["epochs"] == TINY.epochs(entry["size"])
        assert entry["train_seconds"] > 0 and entry["evaluate_seconds"] > 0
        folder = run_folder(out, entry["model"], entry["size"], entry["seed"])
        config = read_result(folder / "training.json")["options"]["config"]["train"]
        with open(folder / "log.csv", newline="") as handle:
            rates = [float(row["lr"]) for row in csv.DictReader(handle) if row.get("lr")]
        assert rates[-1] == pytest.approx(config["lr"] * config["min_lr_ratio"])
        assert rates[0] > rates[-1]


def test_a_second_call_trains_and_scores_nothing(curve):
    out, _, _ = curve
    files = [
        path
        for model in TINY.models
        for size in TINY.sizes
        for path in (
            run_folder(out, model, size, 0) / "training.json",
            *sorted((run_folder(out, model, size, 0) / "results" / "sg").glob("*.json")),
        )
    ]
    before = [path.stat().st_mtime_ns for path in files]
    lines = []
    run_curve(out, TINY, echo=lines.append)
    assert [path.stat().st_mtime_ns for path in files] == before
    assert not any(line.startswith("[") for line in lines)
    assert "4 of 4 runs already evaluated; they are kept" in lines
    with pytest.raises(ConfigError, match="other settings .*dev_sentences 10 -> 12"):
        run_curve(out, CurveSettings(**{**TINY.__dict__, "dev_sentences": 12}), echo=lines.append)
    with pytest.raises(ConfigError, match="finished run of another recipe"):
        run_curve(out, CurveSettings(**{**TINY.__dict__, "min_steps": 8}), echo=lines.append)


def test_the_files_agree(curve):
    out, result, lines = curve
    # The 4 runs train side by side; each is reported when it ends, with the time left.
    assert [line for line in lines if line.startswith("[")] == ["[1-4/4] 4 stages in 2 processes of 1 thread(s)  (0:00 elapsed)"]
    pattern = r"  train and evaluate txl-terminals size 80 seed 0: done in \d+:\d\d  \(\d+:\d\d elapsed, about \d+:\d\d left\)"
    assert any(re.fullmatch(pattern, line) for line in lines)
    timing = json.loads((run_folder(out, "tg", 40, 0) / "timing.json").read_text())
    assert timing["train_seconds"] > 0 and timing["evaluate_seconds"] > 0
    record = read_result(out / "curve.json")
    assert record["kind"] == "learning_curve" and record["result"] == result
    cells = {(c["model"], c["size"], c["phenomenon"]): c for c in result["cells"]}
    assert len(cells) == 2 * 2 * len(PHENOMENA)
    # Chance per phenomenon: two comparisons at once (agreement) is 0.25; one (centre embedding) 0.5.
    assert result["chance"]["agreement"] == pytest.approx(0.25, abs=0.01)
    assert result["chance"]["centre embedding"] == pytest.approx(0.5, abs=0.01)
    assert {c["n_seeds"] for c in cells.values()} == {1}
    for phenomenon in PHENOMENA:
        suites = [design for design in SUITE_DESIGNS if phenomenon_of(design.name) == phenomenon]
        assert cells["tg", 40, phenomenon]["n_items"] == len(suites) * TINY.items_per_suite
    report = (out / "curve.md").read_text()
    for phenomenon in PHENOMENA:
        section = report.split(f"## {phenomenon} ")[1].split("\n## ")[0]
        for model, name in (("txl-terminals", "TXL (terminals)"), ("tg", "TG")):
            row = [c.strip() for c in section.split(f"| {name} |")[1].split("\n")[0].strip(" |").split("|")]
            for size, text in zip((40, 80), row, strict=True):
                c = cells[model, size, phenomenon]
                assert c["low"] <= c["estimate"] <= c["high"]
                assert text == f"{c['estimate']:.2f} [{c['low']:.2f}, {c['high']:.2f}]"
    assert len(result["comparisons"]) == 2 * len(PHENOMENA)
    for comparison in result["comparisons"]:
        difference = comparison["difference"]
        expected = (
            "ahead" if difference["low"] > 0 else "behind" if difference["high"] < 0 else "no difference"
        )
        assert comparison["verdict"] == expected
        assert comparison["model"] == "tg" and comparison["baseline"] == "txl-terminals"
    assert report.count("- 40 sentences: TG") == len(PHENOMENA)
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![learning curve](curve.png)" in report


def _suite_result(folder, suite, outcomes):
    result = {
        "suite": suite,
        "items": [{"item_number": k, "results": [ok, True], "all": ok} for k, ok in enumerate(outcomes, 1)],
    }
    write_result(folder / "results" / "sg" / f"{suite}.json", result_record("syntaxgym", result))


def test_cells_pool_the_items_of_a_phenomenons_suites_over_seeds(tmp_path):
    settings = CurveSettings(sizes=(10,), seeds=(0, 1), models=("txl-terminals", "tg"), resamples=500)
    number = ("synthetic_number_prep", "synthetic_number_src")
    npi = "synthetic_npi_src_any"
    outcomes = {  # model, seed -> suite -> prediction 0 per item
        ("tg", 0): {number[0]: [1, 1, 1], number[1]: [1, 1, 0], npi: [1]},
        ("tg", 1): {number[0]: [1, 0, 1], number[1]: [1, 1, 1], npi: [1]},
        ("txl-terminals", 0): {number[0]: [0, 0, 0], number[1]: [0, 0, 0], npi: [1]},
        ("txl-terminals", 1): {number[0]: [0, 1, 0], number[1]: [0, 0, 0], npi: [0]},
    }
    for (model, seed), suites in outcomes.items():
        for suite, values in suites.items():
            _suite_result(run_folder(tmp_path, model, 10, seed), suite, [bool(v) for v in values])
    result = aggregate_curve(tmp_path, settings)
    cells = {(c["model"], c["phenomenon"]): c for c in result["cells"]}
    assert set(cells) == {(m, p) for m in settings.models for p in ("agreement", "NPI licensing")}
    agreement = cells["tg", "agreement"]
    assert (agreement["n_items"], agreement["n_seeds"], agreement["seeds"]) == (6, 2, [0, 1])
    assert agreement["estimate"] == pytest.approx(10 / 12)
    # items in order (number_prep, 1), (number_prep, 2), ..., (number_src, 3); one row per seed
    table = [[1, 1, 1, 1, 1, 0], [1, 0, 1, 1, 1, 1]]
    expected = bootstrap_mean(table, resamples=500)
    assert (agreement["low"], agreement["high"]) == pytest.approx((expected.low, expected.high))
    assert agreement["low"] < agreement["estimate"] < agreement["high"]
    assert cells["txl-terminals", "agreement"]["estimate"] == pytest.approx(1 / 12)
    assert cells["txl-terminals", "NPI licensing"]["estimate"] == pytest.approx(1 / 2)
    verdicts = {c["phenomenon"]: c["verdict"] for c in result["comparisons"]}
    assert verdicts["agreement"] == "ahead"  # 0.83 against 0.08 on the same 6 items
    assert verdicts["NPI licensing"] == "no difference"  # one item
    write_curve_report(tmp_path)
    report = (tmp_path / "curve.md").read_text()
    assert "| TG | 0.83 [" in report
    assert "TG is ahead of TXL (terminals) (+0.75 [" in report
    assert "TG: no difference from TXL (terminals)" in report
    assert (tmp_path / "curve.png").is_file()

    _suite_result(run_folder(tmp_path, "tg", 10, 1), "synthetic_number_orc", [True])
    with pytest.raises(InputFormatError, match="other agreement items"):
        outcome_tables([run_folder(tmp_path, "tg", 10, seed) for seed in (0, 1)])

    # A run without every suite's result (being evaluated) is left out, and the report says so.
    suites = tmp_path / "data" / "suites"
    suites.mkdir(parents=True)
    for suite in (*number, npi):
        (suites / f"{suite}.json").write_text("{}")
    (run_folder(tmp_path, "tg", 10, 1) / "results" / "sg" / f"{number[1]}.json").unlink()
    result = aggregate_curve(tmp_path, settings)
    cells = {(c["model"], c["phenomenon"]): c for c in result["cells"]}
    assert cells["tg", "agreement"]["seeds"] == [0]
    assert cells["tg", "agreement"]["estimate"] == pytest.approx(5 / 6)
    write_curve_report(tmp_path)
    report = (tmp_path / "curve.md").read_text()
    assert "**Incomplete:** 3 of 4 runs evaluated" in report
    assert "TG 10: 0; " in report and "TXL (terminals) 10: 0, 1" in report


def test_curve_command_options():
    result = run("experiment", "curve", "--help")
    assert result.returncode == 0
    options = ("--sizes", "--seeds", "--models", "--set", "--lexicon-size", "--min-steps", "--perplexity")
    for option in options:
        assert option in result.stdout
    assert _numbers("1000, 4000,", "--sizes") == (1000, 4000)
    with pytest.raises(typer.BadParameter, match="comma-separated integers"):
        _numbers("10,x", "--sizes")
