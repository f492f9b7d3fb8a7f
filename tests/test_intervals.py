"""Bootstrap intervals over items and seeds, and model comparisons from them."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxlm.eval.intervals import (
    Interval,
    OutcomesError,
    bootstrap_difference,
    bootstrap_mean,
    compare,
    verdict,
)


def bernoulli(rng, p, seeds, items):
    return (rng.random((seeds, items)) < p).astype(float)


def test_interval_value():
    a = Interval(0.5, 0.4, 0.6)
    assert a.contains(0.4) and a.contains(0.6) and not a.contains(0.61)
    assert a.overlaps(Interval(0.65, 0.6, 0.7)) and not a.overlaps(Interval(0.7, 0.61, 0.8))
    assert a.to_json() == {"estimate": 0.5, "low": 0.4, "high": 0.6, "level": 0.95}
    assert a.text() == "0.500 [0.400, 0.600]"


def test_95_percent_intervals_cover_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(20)
    p = 0.7
    covered = [
        bootstrap_mean(bernoulli(rng, p, 1, 60), resamples=500, seed=k).contains(p) for k in range(400)
    ]
    # 400 intervals: the binomial standard error of the coverage is about 1.1 points.
    assert 0.92 <= np.mean(covered) <= 0.98
    covered_80 = [
        bootstrap_mean(bernoulli(rng, p, 1, 60), level=0.8, resamples=500, seed=k).contains(p)
        for k in range(400)
    ]
    assert 0.75 <= np.mean(covered_80) <= 0.86  # the level is honoured, not just "wide"


def test_interval_holds_the_mean_and_shrinks_with_more_items():
    rng = np.random.default_rng(1)
    widths = []
    for items in (25, 100, 400):
        outcomes = bernoulli(rng, 0.6, 1, items)
        interval = bootstrap_mean(outcomes)
        assert interval.estimate == pytest.approx(outcomes.mean())
        assert interval.low <= interval.estimate <= interval.high
        widths.append(interval.high - interval.low)
    assert widths[0] > 1.5 * widths[1] > 1.5 * 1.5 * widths[2]  # about 1/sqrt(items): halves per 4x


def test_seeds_that_disagree_widen_the_interval():
    rng = np.random.default_rng(2)
    # Three runs on the same 200 items, with run-level accuracies 0.4, 0.6 and 0.8.
    outcomes = np.stack([bernoulli(rng, p, 1, 200)[0] for p in (0.4, 0.6, 0.8)])
    both = bootstrap_mean(outcomes)
    one_run = bootstrap_mean(outcomes[1:2])
    assert both.estimate == pytest.approx(outcomes.mean())
    assert both.high - both.low > 2 * (one_run.high - one_run.low)
    # Identical runs: resampling seeds adds nothing.
    same = bootstrap_mean(np.repeat(outcomes[1:2], 3, axis=0))
    assert same.low == pytest.approx(one_run.low) and same.high == pytest.approx(one_run.high)


def test_the_same_seed_gives_the_same_interval():
    outcomes = bernoulli(np.random.default_rng(3), 0.5, 2, 50)
    assert bootstrap_mean(outcomes, seed=7) == bootstrap_mean(outcomes.tolist(), seed=7)
    other = 1 - outcomes
    assert bootstrap_difference(outcomes, other, seed=7) == bootstrap_difference(outcomes, other, seed=7)
    assert bootstrap_mean(outcomes, seed=7) != bootstrap_mean(outcomes, seed=8)


def test_all_correct_gives_a_point_interval():
    assert bootstrap_mean([[1.0] * 10, [True] * 10]) == Interval(1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("outcomes", "message"),
    [
        ([], "no seeds"),
        ([[]], "no items"),
        ([[1, 0, 1], [1, 0]], r"ragged table, rows of \[2, 3\] items"),
        ([1, 0, 1], r"2-D table \[seeds\]\[items\]"),
        ("101", r"2-D table"),
        ([[1, 0], [1, float("nan")]], "missing or non-finite outcomes, the first at seed 1, item 1"),
        ([[1, "yes"]], "not numbers"),
        (np.zeros((2, 2, 2)), r"2-D table"),
    ],
)
def test_bad_outcomes_fail_clearly(outcomes, message):
    with pytest.raises(OutcomesError, match=message):
        bootstrap_mean(outcomes)


def test_bad_settings_and_mismatched_items_fail_clearly():
    with pytest.raises(ValueError, match="level 95"):
        bootstrap_mean([[1, 0]], level=95)
    with pytest.raises(ValueError, match="resamples 0"):
        bootstrap_mean([[1, 0]], resamples=0)
    with pytest.raises(OutcomesError, match="a has 2 items and b has 3"):
        bootstrap_difference([[1, 0]], [[1, 0, 1]])
    with pytest.raises(OutcomesError, match="3 labels for 2 items"):
        bootstrap_mean([[1, 0]], groups=["x", "x", "y"])


def test_compare_on_clear_and_overlapping_cases():
    rng = np.random.default_rng(4)
    strong, weak = bernoulli(rng, 0.9, 1, 200), bernoulli(rng, 0.3, 1, 200)
    assert compare(strong, weak) == "ahead"
    assert compare(weak, strong) == "behind"
    close = bernoulli(rng, 0.88, 1, 200)
    difference = bootstrap_difference(strong, close)
    assert difference.contains(0) and compare(strong, close) == "no difference"
    assert verdict(difference) == "no difference"
    # Several runs of one model against one run of another.
    assert compare(bernoulli(rng, 0.9, 3, 200), weak) == "ahead"


def test_pairing_on_shared_items_narrows_the_difference():
    rng = np.random.default_rng(5)
    # Item difficulty shared by both models: b is a, with a tenth of the items flipped to wrong.
    a = bernoulli(rng, 0.5, 1, 300)
    b = a.copy()
    b[0, rng.choice(np.flatnonzero(a[0]), 15, replace=False)] = 0.0
    difference = bootstrap_difference(a, b)
    assert difference.estimate == pytest.approx(0.05)
    assert difference.low > 0  # paired: the 15 flips are the whole difference
    # Were the items drawn independently for a and b, the spread would be that of two 0.5-accuracy
    # means, about +-0.08, and the interval would contain 0.
    assert difference.high - difference.low < 0.08
    # A difference of a table with itself is exactly 0.
    assert bootstrap_difference(a, a) == Interval(0.0, 0.0, 0.0)


def test_groups_weight_each_group_equally_and_resample_within_groups():
    outcomes = [[1.0] * 10 + [0.0, 1.0]]  # group x: 10 items all right; group y: 2 items, half right
    groups = ["x"] * 10 + ["y"] * 2
    interval = bootstrap_mean(outcomes, groups=groups)
    assert interval.estimate == pytest.approx(0.75)  # (1.0 + 0.5) / 2, not 11/12
    # Within-group resampling: group x is always 1.0, so the mean stays in [0.5, 1.0].
    assert 0.5 <= interval.low < interval.estimate < interval.high <= 1.0
