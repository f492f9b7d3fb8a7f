"""How much a model's surprisal adds to the prediction of reading times: ΔLL under cross-validation.

The analysis of Goodkind & Bicknell (2018) and Wilcox et al. (2020): a *baseline* linear model of
a token's reading time on its length and log frequency and those of the tokens before it, against
the same plus the surprisal of the token and of the ``spillover`` tokens before it (the spill-over
effect of self-paced reading, Smith & Levy 2013). Both are fit by least squares on the training
folds of a ``folds``-fold cross-validation; each held-out token's log-likelihood is Gaussian, with
the variance of the training residuals (the maximum-likelihood ``RSS / n``). The per-token
difference, full minus baseline, is ΔLL; its mean over all tokens (each held out once) is the
model's predictive power, in nats per token, with a 95% percentile interval from the bootstrap
over tokens of those per-token values (``eval.intervals``). Two models are compared on the same
tokens, the bootstrap paired on them.

Predictors (``predictor_names``): ``length``, ``log_frequency`` (natural log of count + 1) at lags
0..spillover (``_prev1``, ``_prev2``), further given predictors at lag 0, and for the full model
``surprisal`` (bits) at lags 0..spillover; an intercept in both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from syntaxlm.errors import SyntaxlmError
from syntaxlm.eval.intervals import Interval, bootstrap_difference, bootstrap_mean
from syntaxlm.eval.reading_times import Exclusions, ReadingCorpus, TokenSurprisals, exclusions

RESAMPLES = 2000


class RegressionError(SyntaxlmError, ValueError):
    """Too few tokens for the cross-validated regression, or predictors that cannot be fit."""


def lag_name(name: str, lag: int) -> str:
    return name if lag == 0 else f"{name}_prev{lag}"


def predictor_names(spillover: int, extra: Sequence[str] = (), *, surprisal: bool) -> list[str]:
    """The columns of the design matrix after the intercept, in order."""
    names = [lag_name(base, lag) for lag in range(spillover + 1) for base in ("length", "log_frequency")]
    names += list(extra)
    if surprisal:
        names += [lag_name("surprisal", lag) for lag in range(spillover + 1)]
    return names


def check_regression_sizes(n_tokens: int, *, spillover: int, folds: int) -> None:
    """Refuse, before any scoring, a ``spillover`` or ``folds`` that the corpus's ``n_tokens`` tokens
    cannot serve: at least one token must have ``spillover`` tokens before it, every fold a token."""
    if not 0 <= spillover < n_tokens:
        raise RegressionError(
            f"spillover {spillover}: expected 0 to {n_tokens - 1} (the corpus has {n_tokens} tokens)"
        )
    if not 2 <= folds <= n_tokens:
        raise RegressionError(f"folds {folds}: expected 2 to {n_tokens} (the corpus has {n_tokens} tokens)")


def design_matrix(
    corpus: ReadingCorpus, rows: np.ndarray, spillover: int, surprisal_bits: np.ndarray | None
) -> np.ndarray:
    """The design matrix of the tokens ``rows`` (kept tokens: their ``spillover`` previous tokens
    are in the same story and have every value): an intercept, then ``predictor_names``."""
    tokens = corpus.tokens
    if spillover and any(i < spillover or tokens[i - spillover].story != tokens[i].story for i in rows):
        raise RegressionError(f"a kept token has fewer than {spillover} tokens before it in its story")
    length = np.array([token.length for token in tokens], dtype=float)
    log_frequency = np.array(
        [math.log(token.frequency + 1) if token.frequency is not None else np.nan for token in tokens]
    )
    columns = [np.ones(len(rows))]
    for lag in range(spillover + 1):
        columns += [length[rows - lag], log_frequency[rows - lag]]
    for name in corpus.predictors:
        columns.append(np.array([tokens[i].predictors[name] for i in rows], dtype=float))
    if surprisal_bits is not None:
        columns += [surprisal_bits[rows - lag] for lag in range(spillover + 1)]
    matrix = np.column_stack(columns)
    if not np.isfinite(matrix).all():
        raise RegressionError(
            "a predictor of a kept token is missing; the exclusions should have left it out"
        )
    return matrix


def least_squares(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Coefficients of ``y ≈ x β`` by least squares, and the maximum-likelihood residual variance."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    residuals = y - x @ beta
    return beta, float(np.mean(residuals**2))


def gaussian_loglik(y: np.ndarray, mean: np.ndarray, variance: float) -> np.ndarray:
    """Per value, ``log N(y; mean, variance)`` in nats."""
    return -0.5 * np.log(2 * np.pi * variance) - (y - mean) ** 2 / (2 * variance)


def fold_of(n: int, folds: int, seed: int) -> np.ndarray:
    """Each of ``n`` items' fold: a seeded shuffle dealt round the folds (sizes differ by at most 1)."""
    order = np.random.default_rng(seed).permutation(n)
    assignment = np.empty(n, dtype=np.int64)
    assignment[order] = np.arange(n) % folds
    return assignment


def heldout_loglik(x: np.ndarray, y: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Each item's log-likelihood under the model fit on the other folds (module docstring)."""
    out = np.empty(len(y))
    for fold in np.unique(folds):
        test = folds == fold
        beta, variance = least_squares(x[~test], y[~test])
        if variance <= 0:
            raise RegressionError("the training folds are fit exactly (zero residual variance)")
        out[test] = gaussian_loglik(y[test], x[test] @ beta, variance)
    return out


@dataclass(frozen=True)
class DeltaLogLik:
    """One model's ΔLL: per held-out token (nats), their mean with its bootstrap interval, the mean
    per fold, and the coefficients of its surprisal predictors fit on all tokens (ms per bit)."""

    per_token: np.ndarray
    interval: Interval
    per_fold: list[float]
    surprisal_coefficients: dict[str, float]

    def to_json(self) -> dict:
        return {
            "delta_loglik_per_token": self.interval.estimate,
            "interval": self.interval.to_json(),
            "fold_delta_loglik_per_token": self.per_fold,
            "surprisal_coefficients_ms_per_bit": self.surprisal_coefficients,
        }


@dataclass(frozen=True)
class RegressionResult:
    """The baseline's held-out log-likelihood per token and each model's ``DeltaLogLik``."""

    n_tokens: int
    baseline_loglik_per_token: float
    baseline_predictors: list[str]
    full_predictors: list[str]
    models: dict[str, DeltaLogLik]
    folds: int
    seed: int


def delta_loglik(
    corpus: ReadingCorpus,
    kept: np.ndarray,
    surprisal_bits: Mapping[str, np.ndarray],
    *,
    spillover: int = 2,
    folds: int = 10,
    seed: int = 0,
) -> RegressionResult:
    """The cross-validated ΔLL of each model's surprisal on the ``kept`` tokens (module docstring);
    the same folds for the baseline and every model."""
    rows = np.flatnonzero(kept)
    y = np.array([corpus.tokens[i].rt for i in rows], dtype=float)
    extra = list(corpus.predictors)
    n_full = 1 + len(predictor_names(spillover, extra, surprisal=True))
    if folds < 2:
        raise RegressionError(f"folds must be at least 2, got {folds}")
    # Every fold holds a token, and the training folds more rows than coefficients.
    least = max(folds, math.ceil((n_full + 1) * folds / (folds - 1)))
    if len(rows) < least:
        raise RegressionError(
            f"{len(rows)} tokens kept, too few for {folds}-fold cross-validation of {n_full} coefficients "
            f"(at least {least}); see the exclusions"
        )
    assignment = fold_of(len(rows), folds, seed)
    base_x = design_matrix(corpus, rows, spillover, None)
    baseline = heldout_loglik(base_x, y, assignment)
    models = {}
    for name, bits in surprisal_bits.items():
        full_x = design_matrix(corpus, rows, spillover, bits)
        per_token = heldout_loglik(full_x, y, assignment) - baseline
        interval = bootstrap_mean([per_token], resamples=RESAMPLES, seed=seed)
        beta, _ = least_squares(full_x, y)
        surprisal_beta = beta[-(spillover + 1) :]
        coefficients = {lag_name("surprisal", lag): float(b) for lag, b in enumerate(surprisal_beta)}
        per_fold = [float(per_token[assignment == fold].mean()) for fold in range(folds)]
        models[name] = DeltaLogLik(per_token, interval, per_fold, coefficients)
    return RegressionResult(
        n_tokens=len(rows),
        baseline_loglik_per_token=float(baseline.mean()),
        baseline_predictors=["intercept", *predictor_names(spillover, extra, surprisal=False)],
        full_predictors=["intercept", *predictor_names(spillover, extra, surprisal=True)],
        models=models,
        folds=folds,
        seed=seed,
    )


def paired_difference(a: DeltaLogLik, b: DeltaLogLik, *, seed: int = 0) -> Interval:
    """ΔLL of ``a`` minus that of ``b`` on the same tokens, with the paired bootstrap interval."""
    return bootstrap_difference([a.per_token], [b.per_token], resamples=RESAMPLES, seed=seed)


# --- the result ------------------------------------------------------------------------------------------


def reading_times_result(
    corpus: ReadingCorpus,
    surprisals: Mapping[str, TokenSurprisals],
    models: Mapping[str, Mapping[str, Any]],
    *,
    rt_range: tuple[float, float] = (100.0, 3000.0),
    spillover: int = 2,
    folds: int = 10,
    seed: int = 0,
    keep_unknown: bool = False,
) -> tuple[dict[str, Any], Exclusions]:
    """The result of ``eval rt`` (JSON) and the exclusions it was computed with: the corpus and
    its alignment, what was left out and why (counts), the regression's settings and baseline,
    and per model (``models[name]``: how its surprisals were obtained) its ΔLL with interval;
    every model after the first against the first, paired on the tokens."""
    excluded = exclusions(
        corpus, surprisals, rt_range=rt_range, spillover=spillover, keep_unknown=keep_unknown
    )
    kept = excluded.kept
    regression = delta_loglik(
        corpus, kept, {name: values.bits for name, values in surprisals.items()},
        spillover=spillover, folds=folds, seed=seed,
    )  # fmt: skip
    entries = []
    for name, values in surprisals.items():
        entries.append(
            {
                "name": name,
                **models[name],
                "unknown_tokens": values.n_unknown,
                "unscored_tokens": values.n_unscored,
                "mean_surprisal_bits": float(np.mean(values.bits[kept])),
                **regression.models[name].to_json(),
            }
        )
    names = list(surprisals)
    first = regression.models[names[0]]
    comparisons = [
        {
            "model": name,
            "against": names[0],
            "difference": paired_difference(regression.models[name], first, seed=seed).to_json(),
        }
        for name in names[1:]
    ]
    counts = excluded.counts()
    result = {
        "corpus": corpus.layout,
        "stories": corpus.stories,
        "rt_measure": corpus.rt_measure,
        "frequency": corpus.frequency_source,
        "alignment": corpus.alignment,
        "n_tokens": len(corpus.tokens),
        "kept": counts.pop("kept"),
        "excluded": counts.pop("excluded"),
        "exclusions": counts,
        "rt_range_ms": list(rt_range),
        "unknown_words": excluded.unknown_words,
        "spillover": spillover,
        "folds": folds,
        "seed": seed,
        "interval": f"95% percentile bootstrap over the held-out tokens' ΔLL ({RESAMPLES} resamples)",
        "loglik_unit": "nats per token",
        "baseline_predictors": regression.baseline_predictors,
        "full_predictors": regression.full_predictors,
        "baseline_loglik_per_token": regression.baseline_loglik_per_token,
        "models": entries,
        "comparisons": comparisons,
    }
    return result, excluded


def format_reading_times(result: Mapping[str, Any]) -> str:
    """The text ``eval rt`` prints: what was kept, then a line per model and per comparison."""
    reasons = ", ".join(f"{reason} {n}" for reason, n in result["exclusions"].items() if n)
    lines = [
        f"{result['corpus']}: {result['n_tokens']} tokens in {len(result['stories'])} stories; "
        f"{result['kept']} kept, {result['excluded']} excluded ({reasons or 'none'})",
        f"ΔLL: held-out log-likelihood gain per token (nats) of surprisal (lags 0-{result['spillover']}) "
        f"over the baseline ({', '.join(result['baseline_predictors'][1:])}), {result['folds']}-fold CV; "
        f"{result['interval']}",
    ]
    for entry in result["models"]:
        interval = Interval(**entry["interval"])
        how = entry.get("method", "?")
        if entry.get("action_beam") is not None:
            how += f" {entry['action_beam']}/{entry['word_beam']}/{entry['fast_track']}"
        lines.append(
            f"  {entry['name']:24s} ΔLL {interval.text(4)}  ({how}, {entry.get('context', '?')} context; "
            f"{entry['unknown_tokens']} tokens with unknown words, {entry['unscored_tokens']} unscored)"
        )
    for comparison in result["comparisons"]:
        interval = Interval(**comparison["difference"])
        lines.append(f"  {comparison['model']} − {comparison['against']}: {interval.text(4)}")
    return "\n".join(lines)
