"""What a learning curve (``jobs.curve``) depends on (``CurveSettings``), and where its runs live:
``OUT/runs/MODEL/size-N/seed-S/``, or for a sweep ``OUT/runs/MODEL/KEY-VALUE/seed-S/``."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from syntaxlm.inference.beam import BeamSettings
from syntaxlm.models import MODEL_NAMES, ConfigError

TIMING_FILE = "timing.json"  # a run's seconds of training and evaluation
# Recipe keys a sweep may not set: the curve sets them itself (the budget, the seed, the data).
CURVE_KEYS = ("data.", "train.batch_size", "train.epochs", "train.max_steps", "train.seed")
SWEEP_VALUE = re.compile(r"[A-Za-z0-9_.+-]+")  # a value names run folders


@dataclass(frozen=True)
class CurveSettings:
    """Everything a learning curve depends on.

    - ``sizes``: training sentences of each point of the curve (the first N of one training split);
    - ``seeds``: training seeds of each (model, size); the data is the same for every seed
      (``data_seed``);
    - ``models``: tiny recipes (``configs/MODEL-tiny.yaml``), ``overrides`` (``KEY=VALUE``, e.g.
      ``model.n_layers=1``) applied to every one;
    - ``sweep``: ``(KEY, (VALUE, ...))``, a recipe key and its values (as YAML text, e.g.
      ``("model.n_layers", ("3", "4", "6"))``): the points of the curve are the values, each set
      in every model's recipe, at the one training size ``sizes`` then holds; ``None``: the points
      are the sizes;
    - ``dev_sentences``, ``test_sentences``: the shared dev split (validation, once at the end of a
      run) and test split (perplexity, when ``perplexity``);
    - ``items_per_suite``: items of each SyntaxGym suite; ``lexicon_size``: caps the synthetic
      grammar's open-class word lists (``None``: the full lexicon; 10, as the quickstart: a
      lexicon these budgets learn agreement with, docs/learning-curve.md);
    - the budget rule: ``epochs(size) = max(min_epochs, ceil(min_steps * batch_size / size))``
      passes, ``batch_size`` rows per step;
    - ``beam``: the joint models' word-synchronous beam for the suites (and perplexity/parses);
    - ``perplexity``: also score test perplexity (and the beam's parse F1 for joint models);
    - ``level``, ``resamples``: the bootstrap intervals.
    """

    sizes: tuple[int, ...] = (1000, 4000, 16000)
    seeds: tuple[int, ...] = (0, 1, 2)
    models: tuple[str, ...] = ("txl-terminals", "txl-trees", "tg", "lm", "plm-mask")
    data_seed: int = 0
    dev_sentences: int = 500
    test_sentences: int = 500
    items_per_suite: int = 20
    lexicon_size: int | None = 10
    min_epochs: int = 3
    min_steps: int = 1000
    batch_size: int = 32
    overrides: tuple[str, ...] = ()
    sweep: tuple[str, tuple[str, ...]] | None = None
    beam: BeamSettings = field(default_factory=lambda: BeamSettings(10, 3, 1))
    perplexity: bool = False
    level: float = 0.95
    resamples: int = 2000

    def __post_init__(self) -> None:
        counts = {
            "dev_sentences": self.dev_sentences,
            "test_sentences": self.test_sentences,
            "items_per_suite": self.items_per_suite,
            "min_epochs": self.min_epochs,
            "min_steps": self.min_steps,
            "batch_size": self.batch_size,
            "resamples": self.resamples,
        }
        for name, value in counts.items():
            if value < 1:
                raise ConfigError(f"curve: {name} must be at least 1, got {value}")
        if not self.sizes or min(self.sizes) < 1 or len(set(self.sizes)) != len(self.sizes):
            raise ConfigError(f"curve: sizes must be distinct positive numbers, got {self.sizes}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"curve: seeds must be distinct, got {self.seeds}")
        if not self.models or len(set(self.models)) != len(self.models):
            raise ConfigError(f"curve: models must be distinct names, got {self.models}")
        if not set(self.models) <= set(MODEL_NAMES):
            unknown = ", ".join(sorted(set(self.models) - set(MODEL_NAMES)))
            raise ConfigError(
                f"curve: {unknown}: not a language model; the curve measures the SyntaxGym accuracy of "
                f"language models: {', '.join(MODEL_NAMES)}"
            )
        if self.lexicon_size is not None and self.lexicon_size < 1:
            raise ConfigError(f"curve: lexicon_size must be at least 1 or None, got {self.lexicon_size}")
        if self.sweep is not None:
            self._check_sweep()

    def _check_sweep(self) -> None:
        key, values = self.sweep
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+", key):
            raise ConfigError(f"curve: sweep key {key!r} is not a recipe key such as model.n_layers")
        if key.startswith(CURVE_KEYS):
            raise ConfigError(
                f"curve: sweep key {key} is set by the curve itself (its data, budget and seeds); "
                "sweep a model or optimiser key, e.g. model.n_layers or train.lr"
            )
        if not values or len(set(values)) != len(values):
            raise ConfigError(f"curve: sweep {key} needs distinct values, got {list(values)}")
        for value in values:
            if not SWEEP_VALUE.fullmatch(value):
                raise ConfigError(
                    f"curve: sweep value {value!r} of {key}: expected a number, word or boolean "
                    "(letters, digits, '.', '_', '+', '-'; it names the runs' folders)"
                )
        if len(self.sizes) != 1:
            raise ConfigError(
                f"curve: a sweep measures one training size, got sizes {list(self.sizes)}; give one --sizes value"
            )

    @property
    def points(self) -> tuple:
        """The curve's points in order: the sizes (ascending), or the swept values as given."""
        return self.sweep[1] if self.sweep is not None else tuple(sorted(self.sizes))

    def size_of(self, point) -> int:
        """Training sentences of a point."""
        return self.sizes[0] if self.sweep is not None else point

    def point_overrides(self, point) -> tuple[str, ...]:
        """The recipe overrides of a point: ``overrides``, then the swept key's value."""
        return self.overrides + ((f"{self.sweep[0]}={point}",) if self.sweep is not None else ())

    def epochs(self, size: int) -> int:
        """Passes over ``size`` training sentences: at least ``min_epochs``, and enough for about
        ``min_steps`` updates of ``batch_size`` sentences."""
        return max(self.min_epochs, math.ceil(self.min_steps * self.batch_size / size))

    def max_steps(self, size: int) -> int:
        """A cap on a run's steps that its passes end first: 4 x its batches of sentences (a row of
        a segment model holds at least a quarter of a sentence)."""
        return 4 * self.epochs(size) * math.ceil(size / self.batch_size)

    def data_settings(self) -> dict[str, Any]:
        """What the treebank and the suites depend on."""
        return {
            "train_sentences": max(self.sizes),
            "dev_sentences": self.dev_sentences,
            "test_sentences": self.test_sentences,
            "data_seed": self.data_seed,
            "items_per_suite": self.items_per_suite,
            "lexicon_size": self.lexicon_size,
        }

    def to_json(self) -> dict[str, Any]:
        values = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        values["sweep"] = (
            None if self.sweep is None else {"key": self.sweep[0], "values": list(self.sweep[1])}
        )
        return values | {"epochs_rule": "max(min_epochs, ceil(min_steps * batch_size / size))"}


def run_folder(out: Path, model: str, point, seed: int, settings: CurveSettings) -> Path:
    """``OUT/runs/MODEL/size-N/seed-S``, or for a sweep ``OUT/runs/MODEL/KEY-VALUE/seed-S``."""
    where = f"size-{point}" if settings.sweep is None else f"{settings.sweep[0]}-{point}"
    return out / "runs" / model / where / f"seed-{seed}"


def is_evaluated(run: Path, suites: Sequence[Path], settings: CurveSettings) -> bool:
    """Whether ``run`` has a result for every suite (and perplexity, when asked for)."""
    results = run / "results"
    if settings.perplexity and not (results / "perplexity.json").is_file():
        return False
    return all((results / "sg" / f"{suite.stem}.json").is_file() for suite in suites)


def point_name(point, settings: CurveSettings | Mapping[str, Any]) -> str:
    """A point as the report and the progress line write it: ``size 4,000`` or ``model.n_layers=6``."""
    sweep = settings.sweep if isinstance(settings, CurveSettings) else settings.get("sweep")
    if sweep is None:
        return f"size {point:,}"
    key = sweep[0] if isinstance(sweep, tuple) else sweep["key"]
    return f"{key}={point}"
