"""SyntaxGym: suites, the formula language, tokens → regions, prediction results and SG scores.

The golden tests replay ``shared/golden/sg_predictions.json`` (every suite × draw: per-item,
per-prediction results and accuracies) and ``sg_region_tokenization.json`` (tokens → region tokens,
region sums, OOVs, warnings, errors), both outputs of the ``syntaxgym`` 0.6.0 package on the 34 suite
files of ``shared/data/syntaxgym``, identified by file name and sha256.
"""

import json
import math
import re
from pathlib import Path

import pytest

from syntaxlm.data.synthetic import SyntheticTreebank
from syntaxlm.errors import SuiteFormatError
from syntaxlm.eval.sg_formula import (
    BinaryOperation,
    Constant,
    FormulaError,
    RegionReference,
    evaluate_formula,
    parse_formula,
)
from syntaxlm.eval.syntaxgym import (
    CIRCUIT_OF_SUITE,
    HU_2020_SUITES,
    QIAN_2021_SUITES,
    RegionTokenizationError,
    RegionValuesError,
    ScoredTokens,
    TokenizerConvention,
    align_regions,
    chance_accuracy,
    evaluate_suite,
    critical_regions,
    format_suite_result,
    format_suites_summary,
    load_suite,
    region_sums,
    region_surprisals,
    region_values_from_json,
    score_region_values,
    sg_scores,
    suite_from_json,
    suite_region_values,
    suite_unknown_words,
    suites_summary,
    surprisal_bits,
)
from syntaxlm.files import sha256_file


@pytest.fixture(scope="module")
def suite_folder(shared_data) -> Path:
    return shared_data / "syntaxgym" / "test_suites" / "json"


@pytest.fixture(scope="module")
def golden_predictions(golden) -> dict:
    return json.loads((golden / "sg_predictions.json").read_text())


@pytest.fixture(scope="module")
def golden_tokenization(golden) -> dict:
    return json.loads((golden / "sg_region_tokenization.json").read_text())


def small_suite(**changes) -> dict:
    """A two-item suite; ``changes`` replace top-level fields."""
    regions = {"match": ["The keys", "are", "here"], "mismatch": ["The keys", "is", "here"]}
    suite = {
        "meta": {"name": "tiny_agreement", "metric": "sum"},
        "region_meta": {"1": "subject", "2": "verb", "3": "rest"},
        "predictions": [{"type": "formula", "formula": "[(2;%mismatch%) > (2;%match%)]"}],
        "items": [
            {
                "item_number": number,
                "conditions": [
                    {
                        "condition_name": name,
                        "regions": [{"region_number": k, "content": c} for k, c in enumerate(contents, 1)],
                    }
                    for name, contents in regions.items()
                ],
            }
            for number in (1, 2)
        ],
    }
    suite.update(changes)
    return suite


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


# -- golden: predictions -------------------------------------------------------------------------------------


@pytest.mark.golden
def test_golden_suites_load_with_their_sha256_and_stripped_regions(golden_predictions, suite_folder):
    assert len(golden_predictions["suites"]) == 34
    for record in golden_predictions["suites"]:
        path = suite_folder / record["file"]
        assert sha256_file(path) == record["sha256"], record["file"]
        suite = load_suite(path)
        assert suite.name == record["name"]
        assert len(suite.items) == record["n_items"]
        assert [p.formula for p in suite.predictions] == record["predictions_original"]
        assert suite.stripped_regions == record["regions_stripped"]
        for original, as_fed in zip(record["predictions_original"], record["predictions_as_fed"]):
            assert parse_formula(original) == parse_formula(as_fed)  # '[ ]' read as '( )'


@pytest.mark.golden
def test_golden_prediction_results_and_accuracies(golden_predictions, suite_folder):
    n_results = 0
    for record in golden_predictions["suites"]:
        suite = load_suite(suite_folder / record["file"])
        for draw in record["draws"]:
            values = {item["item_number"]: item["values"] for item in draw["items"]}
            result = evaluate_suite(suite, values)
            where = (record["name"], draw["seed"])
            assert [item.item_number for item in result.items] == [i["item_number"] for i in draw["items"]]
            for ours, theirs in zip(result.items, draw["items"]):
                assert list(ours.results) == theirs["results"], (*where, ours.item_number)
                assert ours.all == theirs["all"], (*where, ours.item_number)
                n_results += len(ours.results)
            assert list(result.accuracy_per_prediction) == draw["accuracy_per_prediction"], where
            assert result.accuracy_pred0 == draw["accuracy_pred0"], where
            assert result.accuracy_all_predictions == draw["accuracy_all_predictions"], where
    assert n_results == 1734


@pytest.mark.golden
def test_scoring_a_values_file_gives_the_draw_back(golden_predictions, suite_folder, tmp_path):
    record = next(r for r in golden_predictions["suites"] if r["name"] == "fgd_hierarchy")
    draw = record["draws"][0]
    values_path = write_json(tmp_path / "values.json", draw)
    scored = score_region_values(suite_folder / record["file"], values_path)
    assert scored["suite_sha256"] == record["sha256"]
    assert scored["region_values_sha256"] == sha256_file(values_path)
    assert [{k: i[k] for k in ("item_number", "results", "all")} for i in scored["items"]] == [
        {k: i[k] for k in ("item_number", "results", "all")} for i in draw["items"]
    ]
    for key in ("accuracy_per_prediction", "accuracy_pred0", "accuracy_all_predictions"):
        assert scored[key] == draw[key]
    assert json.loads(json.dumps(scored)) == scored
    text = format_suite_result(scored)
    lines = text.splitlines()
    assert lines[0] == "suite fgd_hierarchy: 24 items, 2 predictions"
    assert len([line for line in lines if re.match(r"\s+\d+\s+(True|False)", line)]) == 24
    assert f"accuracy (prediction 0, published convention): {draw['accuracy_pred0']:.4f}" in text
    bare_list = write_json(tmp_path / "items.json", draw["items"])  # a bare list of items works too
    assert score_region_values(suite_folder / record["file"], bare_list)["items"] == scored["items"]


# -- golden: tokens → regions ----------------------------------------------------------------------------------


def convention_from_spec(spec: dict) -> TokenizerConvention:
    tokenizer, vocabulary = spec["tokenizer"], spec["vocabulary"]
    assert not vocabulary["special_types"] and tokenizer.get("sentinel_position", "initial") == "initial"
    return TokenizerConvention(
        prefix_tokens=frozenset(vocabulary["prefix_types"]),
        suffix_tokens=frozenset(vocabulary["suffix_types"]),
        subword_marker=tokenizer["sentinel_pattern"] if tokenizer["type"] == "subword" else None,
        cased=tokenizer["cased"],
    )


@pytest.mark.golden
def test_golden_region_tokenization(golden_tokenization, suite_folder):
    cases = golden_tokenization["cases"]
    assert len(cases) == 26 and sum(case["error"] is not None for case in cases) == 2
    for case in cases:
        convention = convention_from_spec(case["spec"])
        item = load_suite(suite_folder / f"{case['suite']}.json").item(case["item_number"])
        unknown_types = set(case["spec"]["vocabulary"]["unk_types"])
        consecutive: set[str] = set()
        oov_lists: dict[str, set[str]] = {}
        for k, condition in enumerate(case["conditions"]):
            where = (case["suite"], case["tokenizer"], condition)
            tokens, mask = case["tokens"][k], case["unk_mask"][k]
            assert [bool(m) for m in mask] == [
                t in unknown_types for t in tokens
            ]  # the oracle looks at types
            assert item.sentence(condition) == case["sentences"][k]
            if case["error"] is not None:
                assert case["error"].startswith(
                    "ValueError: Region content has leading and/or trailing space"
                )
                with pytest.raises(RegionTokenizationError, match="leading, trailing or repeated whitespace"):
                    align_regions(case["region_contents"][k], tokens, convention, mask)
                continue
            assert list(item.regions[condition]) == case["region_contents"][k]
            alignment = align_regions(case["region_contents"][k], tokens, convention, mask)
            expected = [case["region_tokens"][k][str(n)] for n in range(1, len(alignment.oovs) + 1)]
            assert [list(region) for region in alignment.region_tokens] == expected, where
            assert list(region_sums(alignment, case["token_surprisals"][k])) == case["region_sums"][k], where
            assert [list(words) for words in alignment.oovs] == case["oovs"][k], where
            if alignment.long_unknown_runs:
                consecutive.add(condition)
            oov_lists[condition] = {str(list(words)) for words in alignment.oovs if words}
        # syntaxgym's warnings: "Consecutive OOVs" per condition, and OOV lists of some regions (it
        # names region r's list on leaving region r + 1, never the last region's)
        messages = case.get("warnings") or []
        assert consecutive == {re.search(r'Condition "(.+)"!', m)[1] for m in messages if "Consecutive" in m}
        for message in messages:
            if found := re.fullmatch(r'OOVs found in Item \d+, Condition "(.+)": "(.+)"', message):
                assert found[2] in oov_lists[found[1]], (case["suite"], message)


# -- suites --------------------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_the_34_real_suites_load(suite_folder):
    paths = sorted(suite_folder.glob("*.json"))
    assert len(paths) == 34
    suites = {path.stem: load_suite(path) for path in paths}
    assert all(suite.name == name for name, suite in suites.items())
    assert set(suites) == set(QIAN_2021_SUITES) | {"nn-nv-rpl"}
    assert sum(len(s.items) for s in suites.values()) == 842
    number_orc = suites["number_orc"]
    orders = {tuple(item.regions) for item in number_orc.items}
    assert len(orders) == 2  # one item lists its conditions in another order
    sentences = list(suites["cleft"].sentences())
    assert sentences[0] == (1, "np_mismatch", "What he did was the meal")  # empty region 5 skipped


def test_synthetic_suites_load():
    suites = SyntheticTreebank(seed=0).suites(3)
    assert len(suites) == 17
    for name, data in suites.items():
        suite = suite_from_json(data)
        assert suite.name == name and len(suite.items) == 3
        assert suite.stripped_regions == 0
        for item in suite.items:
            for condition, regions in item.regions.items():
                assert item.sentence(condition) == " ".join(r for r in regions if r)
        values = {
            item.item_number: {c: [1.0] * len(suite.region_names) for c in item.regions}
            for item in suite.items
        }
        evaluate_suite(suite, values)  # every formula evaluates


def test_region_contents_are_stripped_and_counted():
    data = small_suite()
    data["items"][0]["conditions"][0]["regions"][0]["content"] = " The keys "
    suite = suite_from_json(data)
    assert suite.items[0].regions["match"][0] == "The keys" and suite.stripped_regions == 1
    assert suite.items[0].sentence("match") == "The keys are here"


def suite_error(tmp_path: Path, data) -> str:
    path = tmp_path / "bad_suite.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(SuiteFormatError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert message.startswith(str(path) + ":")
    return message


def test_malformed_json_is_reported_with_line_and_column(tmp_path):
    text = json.dumps(small_suite(), indent=2).replace('"are"', '"are",,', 1)
    message = suite_error(tmp_path, text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if '"are",,' in row)
    assert re.match(rf".*bad_suite\.json:{line}:\d+: malformed JSON", message)


def test_unknown_condition_in_a_formula_names_suite_prediction_and_position(tmp_path):
    formula = "[(2;%mismatch%) > (2;%mtach%)]"
    message = suite_error(tmp_path, small_suite(predictions=[{"type": "formula", "formula": formula}]))
    assert "suite 'tiny_agreement', prediction 0 (predictions[0])" in message
    assert f"unknown condition 'mtach' at character {formula.index('(2;%mtach') + 1}" in message
    assert "expected one of 'match', 'mismatch'" in message


def test_region_numbers_that_do_not_exist_are_rejected(tmp_path):
    formula = "(2;%mismatch%) > (7;%match%)"
    message = suite_error(tmp_path, small_suite(predictions=[{"type": "formula", "formula": formula}]))
    assert f"region 7 does not exist at character {formula.index('(7') + 1}" in message
    data = small_suite()
    data["items"][1]["conditions"][1]["regions"][2]["region_number"] = 9
    message = suite_error(tmp_path, data)
    assert "suite 'tiny_agreement', item 2 (items[1]), condition 'mismatch', region 9 (regions[2])" in message
    assert "expected a region of region_meta (1 to 3)" in message


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda d: d.pop("items"), "suite 'tiny_agreement', top level: missing field 'items'"),
        (lambda d: d["meta"].pop("name"), "suite, meta: missing field 'name'"),
        (lambda d: d["meta"].update(metric="mean"), "unsupported metric 'mean'; expected 'sum'"),
        (lambda d: d["region_meta"].pop("2"), "region_meta: region numbers [1, 3]"),
        (lambda d: d.update(predictions=[]), "predictions: no predictions"),
        (lambda d: d["predictions"][0].update(type="exact"), "unknown prediction type 'exact'"),
        (lambda d: d["items"][1].update(item_number=1), "items[1]: item number 1 appears twice"),
        (lambda d: d["items"][0].update(item_number="1"), "items[0]: field 'item_number' is a JSON string"),
        (lambda d: d["items"][1]["conditions"].pop(), "item 2 (items[1]): conditions differ from item 1's"),
        (
            lambda d: d["items"][0]["conditions"][0]["regions"].pop(),
            "item 1 (items[0]), condition 'match': 2 regions; expected regions 1 to 3",
        ),
        (
            lambda d: d["items"][0]["conditions"][0]["regions"].reverse(),
            "condition 'match', region 3 (regions[0]): region 3 where region 1 belongs",
        ),
        (
            lambda d: d["items"][0]["conditions"][1]["regions"][1].pop("content"),
            "condition 'mismatch', regions[1]: missing field 'content'",
        ),
        (
            lambda d: d["predictions"][0].update(formula="[(2;%mismatch%) > (2;%match%)"),
            "bracket '[' is not closed at character 1",
        ),
    ],
)
def test_bad_suites_are_rejected_precisely(tmp_path, change, fragment):
    data = small_suite()
    change(data)
    assert fragment in suite_error(tmp_path, data)


# -- formulas ------------------------------------------------------------------------------------------------


VALUES = {"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0]}


def check(formula: str) -> bool:
    return evaluate_formula(parse_formula(formula), VALUES)


def test_formula_precedence_and_associativity():
    tree = parse_formula("(1;%a%) + (2;%a%) < (3;%a%) & (1;%b%) > 0 | 0 > 1")
    assert isinstance(tree, BinaryOperation) and tree.operator == "|"  # & and | share a level, left first
    assert (
        tree.left.operator == "&" and tree.left.left.operator == "<" and tree.left.left.left.operator == "+"
    )
    assert check("(3;%a%) - (2;%a%) - (1;%a%) = 0")  # (3 - 2) - 1, not 3 - (2 - 1)
    assert not check("(3;%a%) - [(2;%a%) - (1;%a%)] = 0")
    assert check("0 > 1 & 0 > 1 | 1 > 0")  # (F & F) | T
    assert not check("0 > 1 & [0 > 1 | 1 > 0]")
    assert check("(*;%b%) = 60") and check("(1;%a%)-1 = 0") and check("(1;%a%) - -1 = 2")
    assert check("[ ( 2 ;% a % ) + 1e1 ] > 11.5")


def test_strict_comparisons_and_approximate_equality():
    assert not check("(1;%a%) < (1;%a%)") and not check("(1;%a%) > (1;%a%)")
    values = {"a": [1e6], "b": [1e6 + 10.00105]}
    # |a - b| <= 1e-3 + 1e-5 * |b|: the tolerance scales with the right-hand side
    assert evaluate_formula(parse_formula("(1;%b%) = (1;%a%)"), values) is False
    assert evaluate_formula(parse_formula("(1;%a%) = (1;%b%)"), values) is True
    assert evaluate_formula(parse_formula("0 = 0.001"), {}) and not evaluate_formula(
        parse_formula("0 = 0.0011"), {}
    )


def test_formula_tree_records_positions():
    assert parse_formula("(12;%no-sub_x%)>-2") == BinaryOperation(
        ">", RegionReference(12, "no-sub_x", 0), Constant(-2.0, 16), 15
    )


@pytest.mark.parametrize(
    ("formula", "problem", "position"),
    [
        ("", "empty formula", 0),
        ("(1;%a%) <", "the formula ends where a value should be", 9),
        ("[(1;%a%) < (1;%b%)", "bracket '[' is not closed", 0),
        ("[(1;%a%) < (1;%b%))", "bracket '[' is not closed", 0),
        ("(1;%a%) < (1;%b%)]", "unmatched closing bracket", 17),
        ("(1;%a%) < (1;%b%) < 3", "comparisons cannot be chained ('<' then '<')", 18),
        ("(1;%a%) & (1;%b%) < 0", "'&' joins comparisons, but its left side is a number", 8),
        ("[(1;%a%) < 0] + 1 > 0", "'+' adds numbers, but its left side is a comparison", 14),
        ("(1;%a%) + (1;%b%)", "the formula is a number, not a comparison", 0),
        ("(1;a) < 0", "malformed region reference", 0),
        ("(1;%a%) < 0 ! 1", "unexpected '!'", 12),
        ("(1;%a b%) < 0", "malformed region reference", 0),
    ],
)
def test_malformed_formulas_are_rejected_with_the_position(formula, problem, position):
    with pytest.raises(FormulaError) as caught:
        parse_formula(formula)
    assert caught.value.problem == problem and caught.value.position == position
    assert f"at character {position + 1} of formula {formula!r}" in str(caught.value)


# -- evaluation ----------------------------------------------------------------------------------------------


def test_conditions_are_found_by_name_and_accuracies_follow_both_conventions():
    data = small_suite(
        predictions=[
            {"type": "formula", "formula": "(2;%mismatch%) > (2;%match%)"},
            {"type": "formula", "formula": "(3;%mismatch%) = (3;%match%)"},
        ]
    )
    data["items"][1]["conditions"].reverse()  # item 2 lists mismatch first
    suite = suite_from_json(data)
    values = {
        1: {"match": [5.0, 1.0, 2.0], "mismatch": [5.0, 3.0, 2.0005]},  # p0 holds, p1 holds (approx)
        2: {"mismatch": [5.0, 3.0, 9.0], "match": [5.0, 1.0, 2.0]},  # p0 holds, p1 fails
    }
    result = evaluate_suite(suite, values)
    assert [item.results for item in result.items] == [(True, True), (True, False)]
    assert result.accuracy_pred0 == 1.0 and result.accuracy_all_predictions == 0.5
    assert result.accuracy_per_prediction == (1.0, 0.5)
    item = result.to_json()["items"][1]
    assert {k: item[k] for k in ("item_number", "results", "all")} == {
        "item_number": 2,
        "results": [True, False],
        "all": False,
    }


def test_results_keep_the_region_surprisals_margins_and_near_ties():
    data = small_suite(
        predictions=[
            {"type": "formula", "formula": "[(2;%mismatch%) > (2;%match%)]"},
            {"type": "formula", "formula": "[(2;%mismatch%) > (2;%match%)] & [(3;%mismatch%) < (3;%match%)]"},
        ]
    )
    suite = suite_from_json(data)
    values = {
        1: {"match": [5.0, 1.0, 2.0], "mismatch": [5.0, 3.5, 1.0]},  # clear: margins 2.5 and 1.0
        2: {"mismatch": [5.0, 4.0, 2.0], "match": [5.0, 4.004, 2.0]},  # a tie at the verb, and region 3
    }
    scored = evaluate_suite(suite, values)
    assert [item.tie for item in scored.items] == [False, True]
    assert scored.ties == 1 and scored.ties_per_prediction == (1, 1)
    result = json.loads(json.dumps(scored.to_json()))  # plain JSON
    clear, tie = result["items"]
    assert clear["region_surprisals_bits"] == {"match": [5.0, 1.0, 2.0], "mismatch": [5.0, 3.5, 1.0]}
    assert tie["region_surprisals_bits"] == {"match": [5.0, 4.004, 2.0], "mismatch": [5.0, 4.0, 2.0]}
    p0, p1 = clear["predictions"]
    assert p0["holds"] and p0["margin_bits"] == pytest.approx(2.5) and not p0["tie"]
    assert p0["comparisons"] == [
        {"operator": ">", "left_bits": 3.5, "right_bits": 1.0, "holds": True, "margin_bits": 2.5}
    ]
    # A conjunction is as far from flipping as its closest comparison.
    assert p1["holds"] and p1["margin_bits"] == pytest.approx(1.0)
    assert [c["margin_bits"] for c in p1["comparisons"]] == [pytest.approx(2.5), pytest.approx(1.0)]
    assert not clear["tie"] and clear["results"] == [True, True]
    t0, t1 = tie["predictions"]
    assert not t0["holds"] and t0["margin_bits"] == pytest.approx(-0.004) and t0["tie"]
    assert t0["comparisons"][0]["left_bits"] == 4.0 and t0["comparisons"][0]["right_bits"] == 4.004
    # Both comparisons of p1 are near ties (-0.004 at the verb, 0.0 at region 3); "&" keeps the smaller.
    assert t1["tie"] and t1["margin_bits"] == pytest.approx(-0.004)
    assert tie["tie"] and tie["results"] == [False, False]
    assert result["ties"] == 1 and result["ties_per_prediction"] == [1, 1]
    assert result["tie_threshold_bits"] == 0.01
    assert "1 of 2 items" in result["tie_note"] and "round-off" in result["tie_note"]
    assert result["accuracy_pred0"] == 0.5  # old readers see the same fields
    text = format_suite_result(result)
    assert "~-0.0040" in text and "+2.5000" in text and "near ties: 1 of 2 items" in text


@pytest.mark.parametrize(
    ("formula", "chance"),
    [
        ("(2;%a%) < (2;%b%)", 1 / 2),
        ("[(2;%a%) < (2;%b%)] & [(2;%c%) < (2;%d%)]", 1 / 4),  # number_*, reflexive_*
        ("[(2;%a%) < (2;%b%)] | [(2;%c%) < (2;%d%)]", 3 / 4),
        # npi_*: a < b, c < d and a < d hold together in 5 of the 24 orderings of a, b, c, d
        ("[(2;%a%) < (2;%b%)] & [(2;%c%) < (2;%d%)] & [(2;%a%) < (2;%d%)]", 5 / 24),
        ("(2;%a%) = (2;%b%)", 0.0),  # continuous values are never equal
    ],
)
def test_chance_is_exact_for_comparisons_of_regions(formula, chance):
    assert chance_accuracy(parse_formula(formula), 3) == pytest.approx(chance, abs=1e-12)


def test_chance_of_sums_and_differences_is_estimated():
    # center_embed: a sum against a sum, symmetric, so 1/2; mvrr's third comparison of differences.
    assert chance_accuracy(parse_formula("[(1;%a%) + (2;%a%)] < [(1;%b%) + (2;%b%)]"), 3) == pytest.approx(
        0.5, abs=0.005
    )
    assert chance_accuracy(parse_formula("(*;%a%) < (*;%b%)"), 3) == pytest.approx(0.5, abs=0.005)
    # (a - b) > 0 is a > b
    assert chance_accuracy(parse_formula("[(1;%a%) - (1;%b%)] > 0"), 3) == pytest.approx(0.5, abs=0.005)
    result = evaluate_suite(
        suite_from_json(small_suite()), {n: {"match": [1, 2, 3], "mismatch": [1, 3, 3]} for n in (1, 2)}
    )
    assert result.to_json()["chance_pred0"] == 0.5 and result.chance_per_prediction == (0.5,)


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({1: {"match": [1, 2, 3], "mismatch": [1, 2, 3]}}, "no values for item 2"),
        ({**{n: {"match": [1, 2, 3], "mismatch": [1, 2, 3]} for n in (1, 2)}, 3: {}}, "items [3]"),
        ({n: {"match": [1, 2, 3]} for n in (1, 2)}, "item 1 has values for conditions ['match']"),
        ({n: {"match": [1, 2], "mismatch": [1, 2, 3]} for n in (1, 2)}, "expected a list of 3 numbers"),
        ({n: {"match": [1, "2", 3], "mismatch": [1, 2, 3]} for n in (1, 2)}, "region 2: value '2'"),
        ({n: {"match": [1, math.nan, 3], "mismatch": [1, 2, 3]} for n in (1, 2)}, "region 2: value nan"),
    ],
)
def test_region_values_must_fit_the_suite(values, fragment):
    with pytest.raises(RegionValuesError, match=re.escape(fragment)):
        evaluate_suite(suite_from_json(small_suite()), values)


def test_region_values_files_are_checked(tmp_path):
    suite = suite_from_json(small_suite())
    with pytest.raises(RegionValuesError, match=r"values\.json: items\[0\] is"):
        region_values_from_json([{"item": 1}], suite, path=tmp_path / "values.json")
    with pytest.raises(RegionValuesError, match="item 1 appears twice"):
        row = {"item_number": 1, "values": {}}
        region_values_from_json({"items": [row, row]}, suite)
    suite_path = write_json(tmp_path / "suite.json", small_suite())
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(RegionValuesError, match=r"broken\.json:1:3: malformed JSON"):
        score_region_values(suite_path, broken)


def region_values_text(values: str) -> str:
    """A region-values file for small_suite's items 1 and 2, both with ``values`` (JSON text)."""
    return "[" + ", ".join('{"item_number": %d, "values": %s}' % (n, values) for n in (1, 2)) + "]"


@pytest.mark.parametrize(
    ("value", "shown"),
    [("Infinity", "inf"), ("-Infinity", "-inf"), ("1e400", "inf"), ("1" + "0" * 400, "1000")],
)
def test_non_finite_region_values_are_refused_as_nan_is(tmp_path, value, shown):
    # 1e400 is read as infinity; an integer of 401 digits has no float value
    suite_path = write_json(tmp_path / "suite.json", small_suite())
    values = tmp_path / "values.json"
    values.write_text(region_values_text('{"match": [1, %s, 3], "mismatch": [1, 2, 3]}' % value))
    with pytest.raises(RegionValuesError) as caught:
        score_region_values(suite_path, values)
    where = "suite 'tiny_agreement': item 1, condition 'match', region 2"
    assert str(caught.value).startswith(f"{values}: {where}: value {shown}")
    assert str(caught.value).endswith("expected a finite number")


def test_a_key_repeated_in_a_suite_file_is_an_error_naming_its_path(tmp_path):
    text = json.dumps(small_suite()).replace('"content": "are"', '"content": "is", "content": "are"', 1)
    message = suite_error(tmp_path, text)
    assert "suite, items[0].conditions[0].regions[1]: key 'content' appears twice" in message
    assert "expected each key once in an object" in message
    assert "top level: key 'meta' appears twice" in suite_error(tmp_path, '{"meta": {}, "meta": {}}')


def test_a_key_repeated_in_a_region_values_file_is_an_error_naming_its_path(tmp_path):
    suite_path = write_json(tmp_path / "suite.json", small_suite())
    values = tmp_path / "values.json"
    repeated = '{"match": [1, 2, 3], "mismatch": [1, 2, 3], "match": [3, 2, 1]}'
    values.write_text(region_values_text(repeated))
    expected = f"{values}: items[0].values: key 'match' appears twice; expected each key once in an object"
    with pytest.raises(RegionValuesError, match=re.escape(expected)):
        score_region_values(suite_path, values)
    values.write_text('{"items": [], "items": []}')
    with pytest.raises(RegionValuesError, match="top level: key 'items' appears twice"):
        score_region_values(suite_path, values)


# -- tokens → regions ----------------------------------------------------------------------------------------

WORDS = TokenizerConvention(suffix_tokens=frozenset({"<eos>"}))
GPT2 = TokenizerConvention(prefix_tokens=frozenset({"<|endoftext|>"}), subword_marker="Ġ")


def test_bos_joins_region_one_and_eos_the_last_region():
    contents = ["", "The keys", "are", ""]
    alignment = align_regions(contents, ["<|endoftext|>", "The", "Ġke", "ys", "Ġare"], GPT2)
    assert alignment.region_tokens == (
        ("<|endoftext|>",),
        ("The", "Ġke", "ys"),
        ("Ġare",),
        (),
    )  # even if empty
    alignment = align_regions(contents, ["The", "keys", "are", "<eos>"], WORDS)
    assert alignment.region_tokens == ((), ("The", "keys"), ("are",), ("<eos>",))


def test_uncased_tokenizers_match_lower_cased_text():
    uncased = TokenizerConvention(subword_marker="Ġ", cased=False)
    alignment = align_regions(["The Keys", "ARE"], ["the", "Ġke", "ys", "Ġare"], uncased)
    assert alignment.region_tokens == (("the", "Ġke", "ys"), ("Ġare",))


def test_an_unknown_run_goes_to_the_region_where_it_starts():
    contents = ["the", "old", "", "keys", "are"]
    tokens = ["the", "<unk>", "<unk>", "are", "<eos>"]
    alignment = align_regions(contents, tokens, WORDS, [t == "<unk>" for t in tokens])
    assert alignment.region_tokens == (("the",), ("<unk>", "<unk>"), (), (), ("are", "<eos>"))
    assert alignment.oovs == ((), ("old", "", "keys"), (), (), ())
    assert alignment.long_unknown_runs == (1,)
    assert alignment.warnings()[-1] == "region 2: unknown words ['old', '', 'keys']"


def test_an_unknown_word_that_begins_with_the_next_token_covers_text():
    # syntaxgym matches "a" at the start of "at" and loses the tokens after it
    tokens = ["We", "looked", "<unk>", "a", "cat", "<eos>"]
    alignment = align_regions(["We looked", "at a cat"], tokens, WORDS, [t == "<unk>" for t in tokens])
    assert alignment.region_tokens == (("We", "looked"), ("<unk>", "a", "cat", "<eos>"))
    assert alignment.oovs == ((), ("at",))


@pytest.mark.parametrize(
    ("contents", "tokens", "fragment"),
    [
        (
            ["The keys", "are"],
            ["The", "keys", "were", "<eos>"],
            "token 2 ('were'): does not match the text of region 2",
        ),
        (
            ["The keys", "are"],
            ["The", "keys", "are", "here"],
            "token 3 ('here'): no text left in the last region",
        ),
        (["The keys", "are"], ["The", "keys", "<eos>", "are"], "token 3 ('are'): follows a suffix"),
        (["The keys", "are"], ["The", "keys", "<eos>"], "the tokens end before the text 'are' (region 2)"),
        (["The keys ", "are"], ["The", "keys", "are"], "region 1 content 'The keys ' has leading, trailing"),
    ],
)
def test_tokens_that_do_not_fit_the_text_are_rejected(contents, tokens, fragment):
    with pytest.raises(RegionTokenizationError, match=re.escape(fragment)):
        align_regions(contents, tokens, WORDS)


def test_region_surprisals_are_bits_summed_per_region():
    suite = suite_from_json(small_suite())
    tokens = ["<|endoftext|>", "The", "Ġkeys", "Ġa", "re", "Ġhere"]
    logprobs = [0.0, -math.log(2), -math.log(4), -math.log(2), -math.log(2), -math.log(8)]
    surprisals = region_surprisals(suite, 2, "match", tokens, logprobs, convention=GPT2)
    assert surprisals.values_bits == pytest.approx((3.0, 2.0, 3.0))
    assert surprisals.warnings == ()
    assert surprisal_bits([-math.log(2)]) == pytest.approx([1.0])
    with pytest.raises(RegionTokenizationError, match=r"suite 'tiny_agreement', item 2, condition 'match'"):
        region_surprisals(suite, 2, "match", tokens[:-1], logprobs[:-1], convention=GPT2)


def test_suite_region_values_from_a_token_scorer_feed_evaluation():
    suite = suite_from_json(small_suite())
    seen: list[str] = []

    def scorer(sentences):  # whitespace tokens; "is" is surprising
        seen.extend(sentences)
        return [
            ScoredTokens(s.split() + ["<eos>"], [-5.0 if w == "is" else -1.0 for w in s.split()] + [-1.0])
            for s in sentences
        ]

    region_values = suite_region_values(suite, scorer, WORDS, batch_size=3)
    assert seen == ["The keys are here", "The keys is here"] * 2
    assert region_values[1]["mismatch"] == pytest.approx(
        [2 / math.log(2), 5 / math.log(2), 2 / math.log(2)]
    )
    assert evaluate_suite(suite, region_values).accuracy_pred0 == 1.0  # as docs/inference.md calls it


# -- words the model does not know -------------------------------------------------------------------------

KNOWN = {"The", "keys", "are", "is", "here"}


def known_words(words):
    return [word not in KNOWN for word in words]


def suite_with_unknown_words(formula: str = "[(2;%mismatch%) > (2;%match%)]"):
    """``small_suite`` with "yonder" for "here" in item 1's match (region 3, not compared) and
    "iz" for "is" in item 2's mismatch (region 2, compared)."""
    data = small_suite(predictions=[{"type": "formula", "formula": formula}])
    data["items"][0]["conditions"][0]["regions"][2]["content"] = "yonder"
    data["items"][1]["conditions"][1]["regions"][1]["content"] = "iz"
    return suite_from_json(data)


def test_unknown_words_are_counted_with_the_items_whose_compared_regions_hold_one():
    counts = suite_unknown_words(suite_with_unknown_words(), known_words)
    # 2 items x 2 conditions x 4 words; "yonder" and "iz" unknown; only "iz" in region 2
    assert {key: counts[key] for key in ("n_words", "n_unknown_words", "unknown_word_rate")} == {
        "n_words": 16,
        "n_unknown_words": 2,
        "unknown_word_rate": 2 / 16,
    }
    assert counts["items_unknown_in_critical_regions"] == [2]
    every_region = suite_with_unknown_words("(*;%match%) > (2;%mismatch%)")
    assert critical_regions(every_region) == {"match": {1, 2, 3}, "mismatch": {2}}
    assert suite_unknown_words(every_region, known_words)["items_unknown_in_critical_regions"] == [1, 2]
    values = {n: {"match": [1, 1, 1], "mismatch": [1, 2, 1]} for n in (1, 2)}
    result = evaluate_suite(suite_with_unknown_words(), values)
    text = format_suite_result({**result.to_json(), **counts})
    expected = "unknown words: 2 of 16 (12.50%); 1 of 2 items have one in a region the predictions compare"
    assert expected in text
    assert "unknown words" not in format_suite_result(result.to_json())


def test_the_summary_of_suites_pools_their_unknown_words():
    def result(unknown: int) -> dict:
        return {
            "accuracy_pred0": 0.5,
            "chance_pred0": 0.25,
            "n_items": 4,
            "n_words": 100,
            "n_unknown_words": unknown,
            "unknown_word_rate": unknown / 100,
            "items_unknown_in_critical_regions": [1] if unknown else [],
        }

    results = {name: result(10 if name == "number_src" else 0) for name in HU_2020_SUITES}
    summary = suites_summary(results)
    assert summary["unknown_word_rates"]["number_src"] == 0.1
    pooled = summary["unknown_words"]
    assert (pooled["n_words"], pooled["n_unknown_words"], pooled["n_items_unknown_in_critical_regions"]) == (
        3100, 10, 1
    )
    assert pooled["sg_score_sets"]["hu2020"]["unknown_word_rate"] == 10 / 3100
    assert "qian2021" not in pooled["sg_score_sets"]  # fgd-embed3 and fgd-embed4 not scored
    text = format_suites_summary(summary)
    assert re.search(r"number_src +4 +0\.500 +0\.250 +10\.00%", text)  # items, accuracy, chance
    assert "(circuits: Agreement 0.500" in text and ", chance 0.250); unknown words 0.32%" in text
    assert "unknown words, all suites scored: 10 of 3100 (0.32%); 1 of 124 items have one" in text
    without = suites_summary({name: {"accuracy_pred0": 0.5} for name in HU_2020_SUITES})
    assert "unknown_words" not in without and "unknown" not in format_suites_summary(without)
    assert re.search(r"number_src +- +0\.500 +-$", format_suites_summary(without), re.MULTILINE)


# -- circuits and the SG score -------------------------------------------------------------------------------

# GPT-2's suite accuracies in Hu et al. (2020), cpllab/syntactic-generalization notebooks/suites.csv
GPT2_HU_2020 = {
    "center_embed": 0.9285714285714286,
    "center_embed_mod": 0.8571428571428571,
    "cleft": 1.0,
    "cleft_modifier": 0.925,
    "fgd_hierarchy": 0.625,
    "fgd_object": 0.9583333333333334,
    "fgd_pp": 0.875,
    "fgd_subject": 0.5,
    "mvrr": 0.7857142857142857,
    "mvrr_mod": 0.75,
    "npi_orc_any": 0.9736842105263158,
    "npi_orc_ever": 1.0,
    "npi_src_any": 0.5789473684210527,
    "npi_src_ever": 0.9210526315789473,
    "npz_ambig": 0.9166666666666666,
    "npz_ambig_mod": 0.8333333333333334,
    "npz_obj": 1.0,
    "npz_obj_mod": 1.0,
    "number_orc": 0.631578947368421,
    "number_prep": 0.7894736842105263,
    "number_src": 0.7894736842105263,
    "reflexive_orc_fem": 0.47368421052631576,
    "reflexive_orc_masc": 0.8421052631578947,
    "reflexive_prep_fem": 0.21052631578947367,
    "reflexive_prep_masc": 0.7894736842105263,
    "reflexive_src_fem": 0.15789473684210525,
    "reflexive_src_masc": 0.631578947368421,
    "subordination": 0.9565217391304348,
    "subordination_orc-orc": 0.8695652173913043,
    "subordination_pp-pp": 0.9130434782608695,
    "subordination_src-src": 0.8260869565217391,
}


def test_circuits_cover_the_suites_of_both_papers():
    assert len(HU_2020_SUITES) == 31 and len(QIAN_2021_SUITES) == 33
    assert set(QIAN_2021_SUITES) - set(HU_2020_SUITES) == {"fgd-embed3", "fgd-embed4"}
    assert "nn-nv-rpl" not in CIRCUIT_OF_SUITE
    counts = {c: list(CIRCUIT_OF_SUITE.values()).count(c) for c in set(CIRCUIT_OF_SUITE.values())}
    assert counts == {
        "Agreement": 3,
        "Center Embedding": 2,
        "Garden-Path Effects": 6,
        "Gross Syntactic State": 4,
        "Licensing": 10,
        "Long-Distance Dependencies": 8,
    }


def test_sg_scores_reproduce_hu_et_al_and_label_both_averages():
    scores = sg_scores({**GPT2_HU_2020, "nn-nv-rpl": 0.0})
    hu = scores["hu2020"]
    assert hu["mean_over_suites"] == pytest.approx(0.7842, abs=5e-5)  # as reported for GPT-2
    assert hu["missing_suites"] == [] and hu["n_suites"] == 31
    licensing = [GPT2_HU_2020[s] for s in QIAN_2021_SUITES if CIRCUIT_OF_SUITE[s] == "Licensing"]
    assert hu["circuits"]["Licensing"]["mean_over_suites"] == pytest.approx(sum(licensing) / 10)
    circuit_mean = sum(c["mean_over_suites"] for c in hu["circuits"].values()) / 6
    assert hu["mean_over_circuits"] == pytest.approx(circuit_mean)
    assert abs(hu["mean_over_circuits"] - hu["mean_over_suites"]) > 0.01
    qian = scores["qian2021"]
    assert qian["mean_over_suites"] is None and qian["missing_suites"] == ["fgd-embed3", "fgd-embed4"]
    assert qian["circuits"]["Long-Distance Dependencies"]["mean_over_suites"] is None
    assert (
        qian["circuits"]["Agreement"]["mean_over_suites"] == hu["circuits"]["Agreement"]["mean_over_suites"]
    )
    complete = sg_scores({**GPT2_HU_2020, "fgd-embed3": 1.0, "fgd-embed4": 1.0})["qian2021"]
    assert complete["mean_over_suites"] == pytest.approx((sum(GPT2_HU_2020.values()) + 2) / 33)
