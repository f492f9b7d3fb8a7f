"""Recipes by name, recipes on the user's data folder, and ``reproduce`` (train per seed, evaluate,
report) on a tiny synthetic recipe."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.inference import BeamSettings
from syntaxlm.jobs.evaluation import EvalSettings, evaluate_model
from syntaxlm.jobs.recipes import find_recipe, recipe_with_data
from syntaxlm.jobs.reproduce import reproduce
from syntaxlm.models import ConfigError
from syntaxlm.results import read_result

QUICK = ["data.synthetic.sentences=80", "train.max_steps=2", "train.eval_every=2", "train.batch_size=16"]


def test_recipes_are_found_by_name_and_unknown_names_list_the_known_ones(tmp_path):
    assert find_recipe("tg-tiny").name == "tg-tiny.yaml"
    assert find_recipe(find_recipe("prpn-ptb")) == find_recipe("prpn-ptb")
    with pytest.raises(ConfigError, match="no recipe named 'tg-huge'.*tg-tiny"):
        find_recipe("tg-huge")
    with pytest.raises(ConfigError, match="no such recipe file"):
        find_recipe(tmp_path / "missing.yaml")


def test_a_recipe_reads_its_files_from_the_data_folder(tmp_path):
    data = tmp_path / "ptb"
    write_synthetic_treebank(data, sentences=30, items_per_suite=1)
    config = recipe_with_data(find_recipe("tg-ptb"), data, seed=3)
    assert (config.data.train, config.data.valid, config.data.test) == tuple(
        str(data / name) for name in ("train.trees", "dev.trees", "test.trees")
    )
    assert config.train.seed == 3

    (data / "test.trees").rename(data / "final.trees")
    with pytest.raises(ConfigError, match=r"missing .*test\.trees.*--set data\.train=PATH"):
        recipe_with_data(find_recipe("tg-ptb"), data)
    # The message's advice works: an override naming another file is checked instead.
    other = f"data.test={json.dumps(str(data / 'final.trees'))}"
    assert recipe_with_data(find_recipe("tg-ptb"), data, [other]).data.test == str(data / "final.trees")

    with pytest.raises(ConfigError, match="synthetic treebank; it reads no --data"):
        recipe_with_data(find_recipe("tg-tiny"), data)
    with pytest.raises(FileNotFoundError, match="no such data folder"):
        recipe_with_data(find_recipe("tg-ptb"), tmp_path / "nowhere")


def test_reproduce_trains_each_seed_evaluates_and_reports_mean_and_spread(tmp_path):
    suites = write_synthetic_treebank(tmp_path / "suites-data", sentences=20, items_per_suite=1)
    suite_files = sorted((tmp_path / "suites-data" / "suites").glob("*.json"))[:2]
    assert suites and suite_files
    settings = EvalSettings(beam=BeamSettings(3, 2, 1), test_sentences=3, batch_size=4)
    lines: list[str] = []
    out = tmp_path / "repro"
    report = reproduce(
        "txl-terminals-tiny",
        out,
        seeds=(0, 1),
        suites=suite_files,
        overrides=QUICK,
        settings=settings,
        echo=lines.append,
    )
    for seed in (0, 1):
        results = out / f"seed-{seed}" / "results"
        ppl = read_result(results / "perplexity.json")["result"]
        assert ppl["n_sentences"] == 3 and ppl["perplexity_per_word"] > ppl["perplexity_per_token"] > 1
        # The per-word convention divides -log p(sentences), end included, by the words alone.
        assert ppl["perplexity_per_word"] == pytest.approx(
            math.exp(-ppl["total_logprob_nats"] / ppl["n_words"]), rel=1e-12
        )
        assert ppl["end_logprob_nats"] < 0 and "TG" in ppl["conventions"]["per_word"]
        assert {p.stem for p in (results / "sg").glob("*.json")} == {p.stem for p in suite_files}
        assert read_result(out / f"seed-{seed}" / "training.json")["result"]["steps"] == 2
    text = report.read_text()
    assert "(n=2)" in text and "±" in text
    assert lines[-1] == f"report: {report}"

    # Run again: the finished runs are kept, not trained again.
    stamp = (out / "seed-0" / "training.json").stat().st_mtime_ns
    reproduce(
        "txl-terminals-tiny",
        out,
        seeds=(0,),
        suites=suite_files,
        overrides=QUICK,
        settings=settings,
        echo=lines.append,
    )
    assert (out / "seed-0" / "training.json").stat().st_mtime_ns == stamp
    # Another recipe into the same folder is refused rather than mixed in.
    with pytest.raises(ConfigError, match="finished run of another recipe"):
        reproduce(
            "txl-terminals-tiny",
            out,
            seeds=(0,),
            overrides=[*QUICK, "train.lr=0.01"],
            settings=settings,
            echo=lines.append,
        )


def test_reproduce_command_refuses_bad_arguments(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["reproduce", "tg-huge", "--out", str(tmp_path / "r")])
    assert isinstance(result.exception, ConfigError) and "no recipe named 'tg-huge'" in str(result.exception)
    result = runner.invoke(app, ["reproduce", "tg-tiny", "--seeds", "0", "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "at least one seed" in result.output


def test_evaluate_model_scores_the_ten_percent_of_blimp_with_the_unknown_words(tmp_path):
    import torch

    from syntaxlm.eval.blimp import read_blimp
    from syntaxlm.models import build_model
    from syntaxlm.text.build import build_vocabulary
    from tests.test_beam import TINY

    write_synthetic_treebank(tmp_path / "data", sentences=40, seed=0, items_per_suite=2)
    vocab = build_vocabulary(tmp_path / "data" / "train.trees", tmp_path / "words", kind="word")
    torch.manual_seed(0)
    build_model({"model": "lm", **TINY}, {"vocab": vocab}).save_pretrained(tmp_path / "lm")
    blimp = tmp_path / "blimp"
    blimp.mkdir()
    for uid, term, n in (("regular_plural_subject_verb_agreement_1", "subject_verb_agreement", 120),
                         ("anaphor_gender_agreement", "anaphor_agreement", 3)):  # fmt: skip
        lines = [
            json.dumps({"sentence_good": "the dog barks .", "sentence_bad": "the dog bark .", "UID": uid,
                        "pairID": str(i), "linguistics_term": term, "field": "morphology"})  # fmt: skip
            for i in range(n)
        ]
        (blimp / f"{uid}.jsonl").write_text("\n".join(lines) + "\n")
    written = evaluate_model(tmp_path / "lm", tmp_path / "results", blimp=blimp)
    record = read_result(written["blimp"])
    assert record["options"]["ten_percent"] is True and record["options"]["method"] == "exact"
    result = record["result"]
    assert result["n_pairs"] == 100 + 3  # the first 100 pairs of each paradigm
    assert len(read_blimp(blimp)) == 123
    assert result["n_words"] == 103 * 2 * 4 and 0 <= result["unknown_word_rate"] <= 1  # 4 words a sentence


@pytest.mark.parametrize("name", ["lm", "tg"])
def test_eval_ppl_writes_the_perplexity_record_evaluate_model_writes(tmp_path, name):
    """One evaluation path: ``eval ppl --limit N --out`` and ``evaluate_model`` with ``test_sentences
    N`` write the same ``perplexity.json``, but for its creation time (words-only: exact; TG: beam)."""
    import torch

    from syntaxlm.models import build_model
    from syntaxlm.text.build import build_vocabulary
    from tests.test_beam import TINY

    write_synthetic_treebank(tmp_path / "data", sentences=40, seed=0, items_per_suite=1)
    vocab = build_vocabulary(tmp_path / "data" / "train.trees", tmp_path / "words", kind="word")
    torch.manual_seed(0)
    build_model({"model": name, **TINY}, {"vocab": vocab}).save_pretrained(tmp_path / name)
    test = tmp_path / "data" / "test.trees"
    beam = ["--action-beam", "3", "--word-beam", "2", "--fast-track", "1"] if name == "tg" else []
    # One thread (the command sets it first) and one sentence per batch for both: sums can differ
    # in their last digits with the thread count, and with the batches (the command times its
    # first sentences alone for its estimate of a joint model's time).
    result = CliRunner().invoke(
        app,
        ["--threads", "1", "eval", "ppl", str(test), "--model", str(tmp_path / name), "--limit", "3",
         "--batch-size", "1", *beam, "--no-progress", "--out", str(tmp_path / "ppl.json")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    settings = EvalSettings(beam=BeamSettings(3, 2, 1), test_sentences=3, batch_size=1)
    written = evaluate_model(tmp_path / name, tmp_path / "results", test=test, settings=settings)
    job, command = read_result(written["perplexity"]), read_result(tmp_path / "ppl.json")
    assert job["result"]["marginalisation"]["method"] == ("beam" if name == "tg" else "exact")
    assert job["options"]["limit"] == 3 and job["result"]["n_sentences"] == 3
    for record in (job, command):
        del record["provenance"]["created"]
    assert job == command
