import csv
import json
import math
import re

import pytest
import typer

from syntaxlm.cli.options import _numbers
from syntaxlm.data.synthetic import SUITE_DESIGNS
from syntaxlm.errors import InputFormatError
from syntaxlm.eval.intervals import bootstrap_mean
from syntaxlm.inference.beam import BeamSettings
from syntaxlm.jobs.curve import prepare_curve_data, run_curve
from syntaxlm.jobs.curve_report import write_curve_report
from syntaxlm.jobs.curve_results import PHENOMENA, aggregate_curve, outcome_tables, phenomenon_of
from syntaxlm.jobs.curve_settings import CurveSettings, run_folder
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
        training = read_result(run_folder(out, "tg", size, 0, TINY) / "training.json")
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
        folder = run_folder(out, entry["model"], entry["size"], entry["seed"], TINY)
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
            run_folder(out, model, size, 0, TINY) / "training.json",
            *sorted((run_folder(out, model, size, 0, TINY) / "results" / "sg").glob("*.json")),
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
    assert [line for line in lines if line.startswith("[")] == [
        "[1-4/4] 4 stages in 2 processes of 1 thread(s)  (0:00 elapsed)"
    ]
    pattern = r"  train and evaluate txl-terminals size 80 seed 0: done in \d+:\d\d  \(\d+:\d\d elapsed, about \d+:\d\d left\)"
    assert any(re.fullmatch(pattern, line) for line in lines)
    timing = json.loads((run_folder(out, "tg", 40, 0, TINY) / "timing.json").read_text())
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
        assert comparison["model"] == "tg" and comparison["reference"] == "txl-terminals"
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
            _suite_result(run_folder(tmp_path, model, 10, seed, settings), suite, [bool(v) for v in values])
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

    _suite_result(run_folder(tmp_path, "tg", 10, 1, settings), "synthetic_number_orc", [True])
    with pytest.raises(InputFormatError, match="other agreement items"):
        outcome_tables([run_folder(tmp_path, "tg", 10, seed, settings) for seed in (0, 1)])

    # A run without every suite's result (being evaluated) is left out, and the report says so.
    suites = tmp_path / "data" / "suites"
    suites.mkdir(parents=True)
    for suite in (*number, npi):
        (suites / f"{suite}.json").write_text("{}")
    (run_folder(tmp_path, "tg", 10, 1, settings) / "results" / "sg" / f"{number[1]}.json").unlink()
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


def test_a_sweep_measures_each_value_of_a_recipe_key_like_a_size(tmp_path):
    settings = CurveSettings(
        **{
            **TINY.__dict__,
            "sizes": (40,),
            "overrides": tuple(o for o in TINY.overrides if not o.startswith("model.n_layers")),
            "sweep": ("model.n_layers", ("1", "2")),
        }
    )
    lines = []
    result = run_curve(tmp_path, settings, workers=2, echo=lines.append)
    assert result["axis"] == "model.n_layers"
    assert {(r["model"], r["point"]) for r in result["runs"]} == {
        (m, v) for m in ("txl-terminals", "tg") for v in ("1", "2")
    }
    for value in ("1", "2"):
        folder = run_folder(tmp_path, "tg", value, 0, settings)
        assert folder == tmp_path / "runs" / "tg" / f"model.n_layers-{value}" / "seed-0"
        config = read_result(folder / "training.json")["options"]["config"]
        assert config["model"]["n_layers"] == int(value)
        assert config["train"]["epochs"] == settings.epochs(40)
        assert read_result(folder / "training.json")["inputs"]["train"]["path"].endswith("train-40.trees")
    assert any("train and evaluate tg model.n_layers=2 seed 0: done" in line for line in lines)
    assert {(c["point"], c["size"]) for c in result["cells"]} == {("1", 40), ("2", 40)}
    comparisons = {(c["model"], c["reference"], c["point"]) for c in result["comparisons"]}
    assert comparisons == {("tg", "txl-terminals", "1"), ("tg", "txl-terminals", "2")}
    report = (tmp_path / "curve.md").read_text()
    assert report.startswith("# Sweep: SyntaxGym accuracy against model.n_layers")
    assert "| model | model.n_layers=1 | model.n_layers=2 |" in report
    assert "- model.n_layers = 2: TG" in report
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines.clear()
    run_curve(tmp_path, settings, echo=lines.append)
    assert "4 of 4 runs already evaluated; they are kept" in lines


def test_models_are_compared_with_their_baseline_and_their_papers_contrast(tmp_path):
    settings = CurveSettings(
        sizes=(10,),
        seeds=(0,),
        models=("txl-terminals", "txl-trees", "tg", "lm", "plm-mask"),
        sweep=("model.pre_ln", ("true", "false")),
        resamples=200,
    )
    for model in settings.models:
        for value in ("true", "false"):
            outcomes = [True] * 6 if model == "tg" else [False] * 6
            _suite_result(run_folder(tmp_path, model, value, 0, settings), "synthetic_number_prep", outcomes)
    result = aggregate_curve(tmp_path, settings)
    found = {
        (c["model"], c["relation"], c["reference"], c["point"]): c["verdict"] for c in result["comparisons"]
    }
    for value in ("true", "false"):
        assert found["tg", "baseline", "txl-terminals", value] == "ahead"
        assert found["tg", "contrast", "txl-trees", value] == "ahead"
        assert found["txl-trees", "baseline", "txl-terminals", value] == "no difference"
        assert found["plm-mask", "baseline", "lm", value] == "no difference"
    assert len(found) == 2 * 4  # PLM, PLM-mask's contrast, was not run
    write_curve_report(tmp_path)
    report = (tmp_path / "curve.md").read_text()
    assert "- model.pre_ln = false: " in report and "TG is ahead of TXL (trees) (+1.00 [" in report


@pytest.mark.parametrize(
    ("sweep", "sizes", "message"),
    [
        (("train.epochs", ("1", "2")), (40,), "set by the curve itself"),
        (("n_layers", ("1", "2")), (40,), "not a recipe key"),
        (("model.n_layers", ("1", "1")), (40,), "distinct values"),
        (("model.n_layers", ("1", "a/b")), (40,), "names the runs' folders"),
        (("model.n_layers", ("1", "2")), (40, 80), "one training size"),
    ],
)
def test_a_bad_sweep_is_refused_before_anything_runs(sweep, sizes, message):
    with pytest.raises(ConfigError, match=message):
        CurveSettings(sizes=sizes, sweep=sweep)


def test_a_sweep_key_or_value_the_recipes_refuse_is_one_clear_error(tmp_path):
    for sweep, message in (
        ("model.n_layer=1,2", "error: sweep model.n_layer=1 for txl-terminals: .*unknown key model.n_layer"),
        ("model.n_layers=1,two", "error: sweep model.n_layers=two for txl-terminals: .*must be an integer"),
        ("model.n_layers", "expected KEY=VALUE,VALUE"),
    ):
        result = run("experiment", "curve", "--out", str(tmp_path / "out"), "--sizes", "40",
                     "--models", "txl-terminals", "--sweep", sweep)  # fmt: skip
        assert result.returncode == 2
        assert re.search(message, result.stderr)
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
