"""Every model's ``tiny`` recipe, shortened, trains on the synthetic treebank to a validation loss
clearly below its unigram baseline (the recipes' full runs are in docs/training.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from syntaxlm.models import MODEL_NAMES, load_model
from syntaxlm.train import load_config, train
from tests.test_trainer import read_log

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


# Models over words alone step fast but learn less per step than those predicting trees too.
STEPS = {
    "txl-terminals": 250,
    "plm": 120,  # post-LN at 6 layers (docs/depth.md): slower to leave the baseline than pre-LN
    "plm-mask": 120,
    "lm": 250,
    "sclm-past": 250,
    "sclm-next": 250,
    "esom": 90,
    "dsom": 90,
    "lstm": 250,
    "prpn": 80,
    "dm-transformer": 250,
    "dm-lstm": 250,
}
# The slowest steps (a loop over the words) take a larger learning rate than the recipe's, so that
# a short run still ends well below the baseline: over data and training seeds 0, 1, 2 the margin
# beyond the 0.5 nats asked is at least 0.19 (esom, dsom at 90 steps) and 0.30 (prpn at 80 steps).
LEARNING_RATES = {"esom": 2e-2, "dsom": 2e-2, "prpn": 1e-2}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_tiny_recipe_trains_below_the_unigram_baseline(name, tmp_path):
    steps = STEPS.get(name, 60)
    config = load_config(
        CONFIGS / f"{name}-tiny.yaml",
        [
            "data.synthetic.sentences=400",
            f"train.max_steps={steps}",
            "train.warmup_steps=10",
            f"train.eval_every={steps // 2}",
            f"train.checkpoint_every={steps}",
            "train.batch_size=16",
            *([f"train.lr={LEARNING_RATES[name]}"] if name in LEARNING_RATES else []),
        ],
    )
    result = train(config, tmp_path / name, progress=False)
    assert result.best_valid_loss < result.baseline_valid_loss - 0.5, (
        result.best_valid_loss,
        result.baseline_valid_loss,
    )
    losses = [float(record["valid_loss"]) for record in read_log(tmp_path / name) if record["valid_loss"]]
    assert len(losses) == 2 and result.best_valid_loss == pytest.approx(min(losses), rel=1e-5), losses
    assert load_model(tmp_path / name / "best").config == config.model
