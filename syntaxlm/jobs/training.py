"""Training a recipe into a run folder for a job: ``train_or_resume`` (a finished run is kept as it
is, an interrupted one is resumed from its checkpoint: nothing is trained twice) and
``train_and_evaluate`` (then its saved model evaluated into the run's ``results/``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.jobs.evaluation import evaluate_model
from syntaxlm.models import ConfigError
from syntaxlm.results import read_result


def train_or_resume(config, out: str | Path, *, progress: bool = True) -> dict[str, Any]:
    """Train ``config`` (a ``RunConfig``) into ``out`` and return the training result.

    A folder whose run finished (its ``training.json``) is not trained again, provided it was
    trained with the same recipe; a folder holding an interrupted run is resumed.
    """
    from syntaxlm.files import read_json
    from syntaxlm.train import train
    from syntaxlm.train.checkpoint import CHECKPOINT_FILE
    from syntaxlm.train.config import recorded_config
    from syntaxlm.train.run_folder import CONFIG_FILE, RESULT_FILE

    out = Path(out)
    if (out / RESULT_FILE).is_file():
        saved = read_json(out / CONFIG_FILE, InputFormatError, expected="a run configuration")
        recorded = saved.get("train_config") if isinstance(saved, dict) else None
        if not isinstance(recorded, dict) or recorded_config(recorded) != config.to_dict():
            raise ConfigError(
                f"{out} holds a finished run of another recipe; choose another output folder or remove it"
            )
        return read_result(out / RESULT_FILE)["result"]
    resume = (out / CONFIG_FILE).is_file() or (out / CHECKPOINT_FILE).is_file()
    train(config, out, resume=resume, progress=progress)
    return read_result(out / RESULT_FILE)["result"]


def train_and_evaluate(config, run: Path, *, model: str = "best", **evaluation: Any) -> dict[str, float]:
    """Train ``config`` into ``run`` (or resume it) and evaluate its ``model`` (``best`` or
    ``last``) into ``run/results`` (``evaluate_model``'s keywords); returns the seconds of each."""
    began = time.perf_counter()
    train_or_resume(config, run, progress=False)
    trained = time.perf_counter()
    evaluate_model(run / model, run / "results", **evaluation)
    return {"train": round(trained - began, 1), "evaluate": round(time.perf_counter() - trained, 1)}
