"""Training: recipes (``config``), the loop (``trainer``), the run folder (``run_folder``), the
data-parallel processes (``processes``), checkpoints and logs.

``train(load_config("configs/tg-tiny.yaml"), "runs/tg-tiny")`` trains a model into a run folder;
``syntaxlm train CONFIG`` does the same from the command line, and under ``torchrun`` on several
processes.
"""

from syntaxlm.train.checkpoint import (
    CHECKPOINT_FILE,
    Checkpoint,
    CheckpointError,
    TrainingState,
    load_checkpoint,
    save_checkpoint,
)
from syntaxlm.train.config import (
    DataConfig,
    RunConfig,
    SyntheticData,
    TrainConfig,
    VocabSettings,
    apply_overrides,
    load_config,
    run_config,
)
from syntaxlm.train.run_folder import unfinished_runs
from syntaxlm.train.trainer import (
    TrainingError,
    TrainingInterrupted,
    TrainResult,
    accumulate_gradients,
    evaluate,
    lr_factor,
    planned_steps,
    train,
)

__all__ = [
    "CHECKPOINT_FILE",
    "Checkpoint",
    "CheckpointError",
    "DataConfig",
    "RunConfig",
    "SyntheticData",
    "TrainConfig",
    "TrainResult",
    "TrainingError",
    "TrainingInterrupted",
    "TrainingState",
    "VocabSettings",
    "accumulate_gradients",
    "apply_overrides",
    "evaluate",
    "load_checkpoint",
    "load_config",
    "lr_factor",
    "planned_steps",
    "run_config",
    "save_checkpoint",
    "train",
    "unfinished_runs",
]
