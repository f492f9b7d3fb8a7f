"""``syntaxlm report``: tables over seeds, each number with how it was obtained, and figures, from
result files only; ``syntaxlm compare sg``: two runs' SyntaxGym items side by side."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.errors import InputFormatError
from syntaxlm.models import build_model, model_class, model_config
from syntaxlm.report.report import PERPLEXITY_PER_TOKEN, PERPLEXITY_WITHOUT_END, make_report, read_run
from syntaxlm.report.sg_items import compare_sg_items
from syntaxlm.results import result_record, write_result
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train.run_folder import save_model_folder
from syntaxlm.trees.ptb import read_trees
from tests.test_cli import run

NO_VERDICT = ("| ahead |", "| behind |", "ahead on", "behind on")
EXACT = {"method": "exact"}  # as ``eval sg`` records a words-only model's suites


def write_run(folder, model, seed, suites, perplexity):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    for name, accuracy in suites.items():
        result = {"suite": name, "accuracy_pred0": accuracy}
        write_result(folder / "sg" / f"{name}.json", result_record("syntaxgym", result))
    ppl = {"perplexity_per_word": perplexity, "perplexity_per_token": 0.9 * perplexity}
    write_result(folder / "ppl.json", result_record("perplexity", ppl))
    (folder / "notes.json").write_text('{"unrelated": true}')  # not a result file: ignored


def section_rows(text, title):
    """The rows of the table under ``## title``, by their first cell."""
    part = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in part.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    return {line.split("|")[1].strip(): line for line in lines}


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
    rows, sg = section_rows(text, "Perplexity"), section_rows(text, "SyntaxGym")
    assert "61 ± 1.4 (n=2)" in rows["TG"]  # perplexity 60, 62
    assert "0.6833 ± 0.071 (n=2)" in sg["TG"]  # mean over the three suites, 0.633 and 0.733
    assert "| 65 |" in rows["TXL (terminals)"].replace("  ", " ")
    assert (tmp_path / "report" / "sg_circuits.png").stat().st_size > 1000
    assert "SG score (31 suites" not in text  # not every suite of the set was scored
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    assert "perplexity per word (end included; TG, Qian et al.)" in header
    assert "perplexity per token (end counted as a token)" in header
    assert "| method | bound | beam (action/word/fast-track) | subset |" in header
    # Files that do not record how they were obtained say so, in every row.
    assert rows["TG"].count("not recorded") == 3 and "| none |" in rows["TG"]


def test_old_perplexity_files_are_shown_under_the_convention_they_used(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    for name, count_eos in (("with.json", True), ("without.json", False)):
        record = result_record("perplexity", {"perplexity": 50.0, "count_eos": count_eos})
        write_result(folder / name, record)
    numbers = read_run(folder).numbers
    assert [n.values for n in numbers] == [{PERPLEXITY_PER_TOKEN: 50.0}, {PERPLEXITY_WITHOUT_END: 50.0}]


def test_run_without_config_is_named_by_its_folder(tmp_path):
    (tmp_path / "lstm").mkdir()
    write_result(tmp_path / "lstm" / "b.json", result_record("blimp", {"overall_accuracy": 0.7}))
    assert [n.values for n in read_run(tmp_path / "lstm").numbers] == [{"BLiMP accuracy": 0.7}]
    assert read_run(tmp_path / "lstm").model == "lstm"
    path = make_report([tmp_path / "lstm"], tmp_path / "out")
    assert "BLiMP accuracy" in path.read_text()


def test_an_undefined_f1_is_shown_as_undefined(tmp_path):
    """Parses that match no bracket have no F1 (null in parseval.json): the table says so."""
    (tmp_path / "tg").mkdir()
    summary = {"all": {"f1": None, "recall": 0.0, "precision": 0.0}}
    write_result(tmp_path / "tg" / "parseval.json", result_record("parseval", {"summary": summary}))
    text = make_report([tmp_path / "tg"], tmp_path / "out").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| tg"))
    assert row.split("|")[2].strip() == "undefined"


def test_bad_run_folders_fail_clearly(tmp_path):
    with pytest.raises(InputFormatError, match="not a folder"):
        read_run(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{")
    with pytest.raises(InputFormatError, match="config.json:1:2: invalid JSON"):
        read_run(tmp_path / "bad")


def write_items_run(folder, model, seed, outcomes, chance=0.25, method=EXACT):
    """A run whose SG results hold per-item outcomes: ``outcomes[suite]`` is a list of 0/1."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    for name, values in outcomes.items():
        items = [{"item_number": i + 1, "results": [bool(v)]} for i, v in enumerate(values)]
        result = {
            "suite": name,
            "n_items": len(items),
            "accuracy_pred0": sum(values) / len(values),
            "chance_pred0": chance,
            "items": items,
            **method,
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


# --- how each number was obtained ---------------------------------------------------------------------

TINY = {"d_model": 16, "n_layers": 2, "n_heads": 2, "d_ff": 32, "dropout": 0.0}
SMALL_BEAM = ["--action-beam", "10", "--word-beam", "3", "--fast-track", "1"]


def invoke(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Untrained tiny TG and TXL (terminals) evaluated by the real commands: TG's perplexity along
    the gold trees and its suites by a small beam, TXL's exactly; each run folder as a trainer's."""
    folder = tmp_path_factory.mktemp("evaluated")
    write_synthetic_treebank(folder / "data", sentences=30, items_per_suite=2)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "vocab", kind="word", min_freq=1)
    trees = read_trees(folder / "data" / "train.trees")
    test = folder / "test.trees"
    lines = (folder / "data" / "test.trees").read_text().splitlines()[:3]
    test.write_text("".join(line + "\n" for line in lines))
    suites = sorted((folder / "data" / "suites").glob("synthetic_number_*.json"))[:2]
    for name in ("tg", "txl-terminals"):
        torch.manual_seed(0)
        config = model_config({"model": name, **TINY})
        model = build_model(config, model_class(name).vocabularies_for(config, trees, vocab))
        save_model_folder(model.eval(), folder / name / "best")
        (folder / name / "config.json").write_text(json.dumps({"model": name, "seed": 0}))
        method = ["--method", "gold"] if name == "tg" else []
        invoke("eval", "ppl", test, "--model", folder / name / "best", *method, "--no-progress",
               "--out", folder / name / "ppl.json")  # fmt: skip
        invoke("eval", "sg", *suites, "--model", folder / name / "best", *SMALL_BEAM,
               "--out", folder / name / "sg")  # fmt: skip
    return folder


def test_every_number_says_how_it_was_obtained_and_unlike_numbers_are_not_ranked(evaluated, tmp_path):
    """TG's gold-tree perplexity (an upper bound) beside TXL's exact one, TG's beam surprisals beside
    TXL's exact ones: each row says its method, bound, beam and subset; the perplexity tables warn
    and name what differs; the SG comparison, exact against beam estimates as in the papers, is
    ranked."""
    text = make_report([evaluated / "tg", evaluated / "txl-terminals"], tmp_path / "report").read_text()
    ppl = section_rows(text, "Perplexity")
    assert "| gold, not renormalised, in 256-token segments + 256 memory |" in ppl["tg"]
    assert "| upper bound (one tree: p(x, y) ≤ p(x)) | none | 3 sentences, " in ppl["tg"]
    exact = "| exact, in 256-token segments + 256 memory | exact | none | 3 sentences, "
    assert exact in ppl["txl-terminals"]
    assert ppl["tg"].endswith("words of test.trees |")
    part = text.split("## Perplexity\n")[1].split("\n## ")[0]
    assert "**Not evaluated alike, so not ranked.**" in part
    assert "- method: tg gold, not renormalised, in 256-token segments" in part
    assert "- an upper bound on perplexity says only that the model's perplexity is at most that" in part
    sg = section_rows(text, "SyntaxGym")
    assert "| beam | approximate (beam estimates of log p) | 10/3/1 | 2 suites (synthetic_number_" in sg["tg"]
    assert "| exact | exact | none | 2 suites" in sg["txl-terminals"] and "4 items" in sg["txl-terminals"]
    # Exact surprisals against a joint model's beam estimates: the papers' comparison, ranked, in
    # the table as in the comparisons (one rule).
    table = text.split("## SyntaxGym\n")[1].split("\n## ")[0]
    assert "as the papers compare models: exact surprisals of words-only models beside the beam " in table
    assert "Not evaluated alike" not in table
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): line for line in text.splitlines()}
    verdict = rows[("txl-terminals", "agreement")].rstrip(" |").rsplit("|", 1)[1].strip()
    assert verdict in ("ahead", "behind", "no difference"), verdict
    figure = text.split("## Perplexity and SG score\n")[1]
    assert "The SG scores here differ only in method, as the papers compare models" in figure
    assert "- method: tg gold," in figure  # the perplexities: a bound beside an exact one, not ranked


def write_record(path, kind, result, options=None, inputs=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_result(path, result_record(kind, result, inputs=inputs, options=options))


def perplexity_result(value, sentences, method="exact", **beam):
    bound = {"exact": "exact", "beam": "approximate (beam search; an upper bound for the renormalised model)"}
    marginalisation = {"method": method, "perplexity": bound[method], "context": "full",
                       "segment_length": None, "memory_length": None, "memory": None, **beam}  # fmt: skip
    return {"perplexity_per_word": value, "perplexity_per_token": value * 0.9, "n_sentences": sentences,
            "n_words": 10 * sentences, "marginalisation": marginalisation}  # fmt: skip


def test_numbers_evaluated_alike_are_averaged_and_said_to_be_alike(tmp_path):
    data = tmp_path / "test.txt"
    data.write_text("a b\n")
    for model, seed, value in (("lm", 0, 50.0), ("lm", 1, 52.0), ("lstm", 0, 60.0)):
        folder = tmp_path / f"{model}-{seed}"
        write_record(folder / "ppl.json", "perplexity", perplexity_result(value, 4), inputs={"data": data})
        (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    folders = [tmp_path / "lm-0", tmp_path / "lm-1", tmp_path / "lstm-0"]
    text = make_report(folders, tmp_path / "r").read_text()
    assert "51 ± 1.4 (n=2)" in section_rows(text, "Perplexity")["lm"]
    assert "The numbers here were evaluated alike (method, bound, beam, subset, data sha256 " in text
    assert "Not evaluated alike" not in text


def test_seeds_evaluated_differently_are_not_averaged_and_beams_and_subsets_are_named(tmp_path):
    """A seed scored on fewer sentences is a row of its own; BLiMP-10% of two paradigms and all of
    BLiMP, beams 10/3/1 and 100/10/5, are shown and named as the differences."""
    beam = {"action_beam": 100, "word_beam": 10, "fast_track": 5}
    small = {"action_beam": 10, "word_beam": 3, "fast_track": 1}
    write_record(tmp_path / "tg-0" / "ppl.json", "perplexity", perplexity_result(70.0, 4, "beam", **beam))
    write_record(tmp_path / "tg-1" / "ppl.json", "perplexity", perplexity_result(80.0, 2, "beam", **beam))
    write_record(tmp_path / "plm-0" / "ppl.json", "perplexity", perplexity_result(90.0, 4, "beam", **small))
    paradigms = ["anaphor_gender_agreement", "npi_present_1"]
    ten = {"ten_percent": True, "max_pairs": None, "paradigms": paradigms, "method": "beam", **beam}
    write_record(tmp_path / "tg-0" / "blimp.json", "blimp", {"overall_accuracy": 0.6, "n_paradigms": 2,
                 "n_pairs": 200}, options=ten)  # fmt: skip
    everything = {"ten_percent": False, "max_pairs": None, "paradigms": "all", "method": "beam", **small}
    write_record(tmp_path / "plm-0" / "blimp.json", "blimp", {"overall_accuracy": 0.7, "n_paradigms": 67,
                 "n_pairs": 67000}, options=everything)  # fmt: skip
    for name in ("tg-0", "tg-1", "plm-0"):
        (tmp_path / name / "config.json").write_text(json.dumps({"model": name[:-2], "seed": int(name[-1])}))
    text = make_report([tmp_path / "tg-0", tmp_path / "tg-1", tmp_path / "plm-0"], tmp_path / "r").read_text()
    ppl = section_rows(text, "Perplexity")
    assert set(ppl) == {"tg (beam) row 1", "tg (beam) row 2", "plm"}
    assert "| 70 |" in ppl["tg (beam) row 1"] and "4 sentences, 40 words" in ppl["tg (beam) row 1"]
    assert "| 100/10/5 |" in ppl["tg (beam) row 1"] and "| 10/3/1 |" in ppl["plm"]
    assert "upper bound (beam: a sum over the beam's trees ≤ p(x))" in ppl["plm"]
    assert "- beam: tg (beam) row 1 100/10/5; tg (beam) row 2 100/10/5; plm 10/3/1" in text
    assert "- subset: tg (beam) row 1 4 sentences, 40 words; tg (beam) row 2 2 sentences, 20 words;" in text
    blimp = section_rows(text, "BLiMP")
    assert (
        "| BLiMP-10% (first 100 pairs per paradigm); 2 paradigms: anaphor_gender_agreement, npi_present_1; "
        "200 pairs |"
    ) in blimp["tg"]
    assert "| all 67 paradigms; 67000 pairs |" in blimp["plm"]
    assert text.count("**Not evaluated alike, so not ranked.**") == 2


def test_an_unreliable_estimate_is_flagged_and_the_bounds_its_file_carries_are_rows(tmp_path):
    """An importance-sampling perplexity above the beam's proven bound: the row says unreliable and
    the warning is under the table; the beam's bound and the proposals' sum are rows of their own."""
    beam = {"action_beam": 100, "word_beam": 10, "fast_track": 5}
    estimate = perplexity_result(1620.0, 4) | {"warnings": ["unreliable: the estimate 1620.00 is above"]}
    estimate["marginalisation"] = {"method": "importance-sampling"}
    estimate["beam"] = perplexity_result(840.0, 4, "beam", **beam)
    estimate["proposal_bound"] = perplexity_result(900.0, 4)
    estimate["proposal_bound"]["marginalisation"] = {"method": "proposals"}
    write_record(tmp_path / "tg" / "ppl.json", "perplexity", estimate)
    (tmp_path / "tg" / "config.json").write_text(json.dumps({"model": "tg", "seed": 0}))
    text = make_report([tmp_path / "tg"], tmp_path / "r").read_text()
    ppl = section_rows(text, "Perplexity")
    assert set(ppl) == {"tg (importance-sampling)", "tg (beam)", "tg (proposals)"}
    estimated = ppl["tg (importance-sampling)"]
    assert "| 1620 |" in estimated and "| unreliable estimate (importance sampling" in estimated
    assert "| 840 |" in ppl["tg (beam)"] and "| 100/10/5 |" in ppl["tg (beam)"]
    assert "| 900 |" in ppl["tg (proposals)"] and "upper bound (proposal trees" in ppl["tg (proposals)"]
    assert "- **tg (importance-sampling) is unreliable:** unreliable: the estimate 1620.00 is above" in text


def test_sg_comparisons_need_the_same_beam_and_a_recorded_method(tmp_path):
    outcomes = {"synthetic_number_prep": [1] * 18 + [0] * 2}
    base = {"synthetic_number_prep": [1] * 2 + [0] * 18}
    write_items_run(tmp_path / "plm", "plm", 0, base, method={"method": "beam", "action_beam": 100,
                    "word_beam": 10, "fast_track": 5})  # fmt: skip
    write_items_run(tmp_path / "tg", "tg", 0, outcomes, method={"method": "beam", "action_beam": 10,
                    "word_beam": 3, "fast_track": 1})  # fmt: skip
    write_items_run(tmp_path / "old", "old", 0, outcomes, method={})
    text = make_report([tmp_path / "plm", tmp_path / "tg", tmp_path / "old"], tmp_path / "r").read_text()
    assert "(method: tg beam 10/3/1; plm beam 100/10/5)" in text
    assert "(method: old not recorded; plm beam 100/10/5)" in text
    table = text.split("## SyntaxGym\n")[1].split("\n## ")[0]
    assert "**Not evaluated alike, so not ranked.**" in table and "as the papers compare" not in table
    assert not [words for words in NO_VERDICT if words in text]


def test_a_suite_twice_in_a_run_folder_is_refused(tmp_path):
    write_items_run(tmp_path / "tg", "tg", 0, {"synthetic_number_prep": [1, 0]})
    record = result_record("syntaxgym", {"suite": "synthetic_number_prep", "accuracy_pred0": 0.5})
    write_result(tmp_path / "tg" / "beam-10" / "synthetic_number_prep.json", record)
    with pytest.raises(InputFormatError, match=r"a second result of suite synthetic_number_prep \(the first"):
        read_run(tmp_path / "tg")


# --- per-item SyntaxGym comparison --------------------------------------------------------------------


def test_compare_sg_splits_the_items_of_two_runs(tmp_path):
    write_items_run(tmp_path / "a", "tg", 0, {"s1": [1, 1, 0, 0, 1], "s2": [1, 0], "s3": [1]})
    write_items_run(tmp_path / "b", "txl", 0, {"s1": [1, 0, 1, 0, 0], "s2": [1, 1]})
    comparison = compare_sg_items(tmp_path / "a", tmp_path / "b" / "sg")
    s1 = comparison.suites[0]
    assert (s1.suite, s1.both, s1.only_a, s1.only_b, s1.neither) == ("s1", (1,), (2, 5), (3,), (4,))
    assert comparison.totals() == {"items": 7, "both": 2, "only_a": 2, "only_b": 2, "neither": 1}
    assert comparison.only_in_a == ("s3",) and comparison.a_method == "exact"
    result = run("compare", "sg", tmp_path / "a", tmp_path / "b")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"A: {tmp_path / 'a'} (exact)"
    assert lines[5].split() == ["s1", "5", "1", "2", "1", "1"]
    assert lines[7].split() == ["all", "suites", "7", "2", "2", "2", "1"]
    assert "s1, only A: items 2, 5" in lines and "s2, only B: items 2" in lines
    assert "scored by A only (not compared): s3" in lines
    as_json = json.loads(run("compare", "sg", tmp_path / "a", tmp_path / "b", "--json").stdout)
    assert as_json["suites"][0]["only_a"] == {"count": 2, "item_numbers": [2, 5]}


def test_compare_sg_refuses_what_it_cannot_compare(tmp_path):
    write_items_run(tmp_path / "a", "tg", 0, {"s1": [1, 1, 0]})
    write_items_run(tmp_path / "b", "txl", 0, {"s1": [1, 0]})
    write_items_run(tmp_path / "c", "txl", 0, {"s2": [1, 0]})
    (tmp_path / "empty").mkdir()
    no_items = result_record("syntaxgym", {"suite": "s1", "accuracy_pred0": 1.0})
    write_result(tmp_path / "no-items.json", no_items)
    for other, message in (
        ("c", "no suite scored by both (A: s1; B: s2)"),
        ("empty", f"{tmp_path / 'empty'}: no SyntaxGym result files here"),
        ("no-items.json", "suite s1: no per-item outcomes; expected a result written by eval sg --out"),
    ):
        with pytest.raises(InputFormatError) as error:
            compare_sg_items(tmp_path / "a", tmp_path / other)
        assert message in str(error.value)
    result = run("compare", "sg", tmp_path / "a", tmp_path / "b")
    message = f"{tmp_path / 'b' / 'sg' / 's1.json'}: suite s1: items 3 are in only one of this file and"
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_limited_evaluation_says_it_is_the_first_n_of_the_data(tmp_path):
    data = tmp_path / "test.txt"
    data.write_text("a b\n")
    options = {"method": "exact", "limit": 4, "sentences_in_data": 9}
    write_record(tmp_path / "lm" / "ppl.json", "perplexity", perplexity_result(50.0, 4), options=options,
                 inputs={"data": data})  # fmt: skip
    blimp = {"n_pairs": 40, "n_paradigms": 1, "overall_accuracy": 0.5}
    options = {"method": "exact", "paradigms": ["npi_present_1"], "limit": 40, "pairs_selected": 1000}
    write_record(tmp_path / "lm" / "blimp.json", "blimp", blimp, options=options)
    text = make_report([tmp_path / "lm"], tmp_path / "r").read_text()
    assert "4 sentences, 40 words (the first 4 of 9) of test.txt" in section_rows(text, "Perplexity")["lm"]
    assert (
        "1 paradigms: npi_present_1; 40 pairs (the first 40 of 1000 selected)"
        in section_rows(text, "BLiMP")["lm"]
    )
