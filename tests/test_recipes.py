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
    "lm": 250,
    "sclm-past": 250,
    "sclm-next": 250,
    "esom": 120,
    "dsom": 120,
    "lstm": 250,
    "prpn": 120,
    "dm-transformer": 250,
    "dm-lstm": 250,
}


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
        ],
    )
    result = train(config, tmp_path / name, progress=False)
    assert result.best_valid_loss < result.unigram_valid_loss - 0.5, (
        result.best_valid_loss,
        result.unigram_valid_loss,
    )
    losses = [float(record["valid_loss"]) for record in read_log(tmp_path / name) if record["valid_loss"]]
    assert len(losses) == 2 and result.best_valid_loss == pytest.approx(min(losses), rel=1e-5), losses
    assert load_model(tmp_path / name / "best").config == config.model
