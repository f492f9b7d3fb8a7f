"""Training checkpoints: one safetensors file per run, written atomically, read back exactly.

``RUN/checkpoint.safetensors`` holds

- ``model.<name>``: the model's parameters and buffers;
- ``optimizer.<parameter index>.<key>``: the optimiser's per-parameter tensors (AdamW moments, step);
- ``carried.<rank>.<path>``: what each process's model carries to its next batch (Transformer-XL
  memory), so that a resumed stream continues with the same memory;

and in its JSON header (``__metadata__``, readable with any safetensors tool) the scalar state:
step, epoch, next batch, best validation loss and step, patience counter, seconds trained, the optimiser's
parameter groups, and the shape of the carried state; and ``tensors_sha256``, the sha256 of all the
tensors (``syntaxlm.models.base.tensors_sha256``), required and checked on loading (a checkpoint the
user trusts is sealed with ``syntaxlm model seal``), as is that every tensor is finite. No pickle:
loading runs no code.

Randomness needs no saving: the trainer seeds every step from ``(seed, rank, step)``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

from syntaxlm.errors import InputFormatError
from syntaxlm.files import temporary_file_beside
from syntaxlm.models.base import (
    TENSORS_SHA256,
    check_finite,
    check_tensors_sha256,
    read_safetensors,
    safetensors_write_errors,
    tensors_sha256,
)

CHECKPOINT_FILE = "checkpoint.safetensors"
FORMAT = "syntaxlm-checkpoint"
VERSION = 1
# Test hook: seconds to pause after the temporary file is written, before it is renamed (crash tests).
PAUSE_BEFORE_RENAME_ENV = "SYNTAXLM_TEST_CHECKPOINT_PAUSE_S"


class CheckpointError(InputFormatError):
    """A checkpoint file that is damaged, cut short, or was not written by ``syntaxlm train``."""


@dataclass
class TrainingState:
    """Where a run stands: ``step`` optimiser steps done; the next micro-batch is batch ``batch`` of
    epoch ``epoch``; early stopping's record; ``world_size`` of the run that wrote it."""

    step: int = 0
    epoch: int = 0
    batch: int = 0
    best_valid_loss: float | None = None
    best_step: int | None = None
    last_valid_loss: float | None = None
    last_valid_step: int | None = None
    bad_validations: int = 0
    world_size: int = 1
    log_interval: dict[str, Any] = field(default_factory=dict)  # training numbers since the last log row
    skipped_batches: int = 0  # batches skipped for a non-finite loss (train.on_nonfinite: skip)
    skipped_in_a_row: list[list[int]] = field(default_factory=list)  # [epoch, batch] of the latest ones
    train_seconds: float = 0.0  # wall-clock seconds of the training loop, over resumes (train.max_minutes)


@dataclass
class Checkpoint:
    """What ``load_checkpoint`` returns; ``carried[r]`` is process ``r``'s carried model state."""

    model: dict[str, Tensor]
    optimizer: dict[str, Any]
    state: TrainingState
    carried: list[Any] = field(default_factory=list)


def save_checkpoint(
    path: str | Path,
    *,
    model: dict[str, Tensor],
    optimizer: dict[str, Any],
    state: TrainingState,
    carried: list[Any] | None = None,
) -> Path:
    """Write a checkpoint atomically: a temporary file beside ``path``, renamed over it when complete.

    ``model`` is a state dict, ``optimizer`` an optimiser's ``state_dict()``, ``carried`` the
    carried model state of each process (``None`` entries when the model carries nothing).
    """
    path = Path(path)
    tensors = {f"model.{name}": _cpu(value) for name, value in model.items()}
    optimizer_tensors, optimizer_json = _flatten_optimizer(optimizer)
    tensors.update(optimizer_tensors)
    carried_json = []
    for rank, value in enumerate(carried or []):
        carried_json.append(_flatten(value, f"carried.{rank}", tensors))
    header = {
        "state": asdict(state),
        "optimizer": optimizer_json,
        "carried": carried_json,
    }
    metadata = {
        "format": FORMAT,
        "version": str(VERSION),
        "training": json.dumps(header),
        TENSORS_SHA256: tensors_sha256(tensors),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temporary_file_beside(path)  # a name that remove_temporary_files knows
    os.close(fd)
    try:
        with safetensors_write_errors(tmp):  # a full disk raises OSError(ENOSPC) for the trainer
            save_file(tensors, tmp, metadata=metadata)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        if os.environ.get(PAUSE_BEFORE_RENAME_ENV):
            time.sleep(float(os.environ[PAUSE_BEFORE_RENAME_ENV]))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def load_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu") -> Checkpoint:
    """A checkpoint written by ``save_checkpoint``; ``CheckpointError`` names the file if it is bad."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError("no such checkpoint file", path=path)
    expected = "a checkpoint written by syntaxlm train"
    try:
        tensors, metadata = read_safetensors(path)  # one file, even if a new one is renamed over it
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise CheckpointError(
            f"cannot read the checkpoint; the file is damaged or cut short ({error})",
            path=path,
            expected=expected,
        ) from None
    if metadata.get("format") != FORMAT or "training" not in metadata:
        raise CheckpointError("not a training checkpoint (no training state in its header)", path=path)
    if metadata.get("version") != str(VERSION):
        raise CheckpointError(
            f"checkpoint format version {metadata.get('version')!r}", path=path, expected=f"{VERSION}"
        )
    check_tensors_sha256(tensors, metadata, path, CheckpointError)
    check_finite(tensors, path, CheckpointError)
    tensors = {name: tensor.to(map_location) for name, tensor in tensors.items()}
    try:
        header = json.loads(metadata["training"])
        known = {f.name for f in fields(TrainingState)}
        state = TrainingState(**{key: value for key, value in header["state"].items() if key in known})
        model = {name[len("model.") :]: t for name, t in tensors.items() if name.startswith("model.")}
        optimizer = _unflatten_optimizer(header["optimizer"], tensors)
        carried = [_unflatten(skeleton, tensors) for skeleton in header["carried"]]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CheckpointError(
            f"the checkpoint's training state is incomplete or damaged ({type(error).__name__}: {error})",
            path=path,
            expected=expected,
        ) from None
    return Checkpoint(model=model, optimizer=optimizer, state=state, carried=carried)


def read_training_state(path: str | Path) -> TrainingState:
    """Only the scalar state of a checkpoint (cheap: reads the header, not the tensors)."""
    path = Path(path)
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        header = json.loads(metadata["training"])
        known = {f.name for f in fields(TrainingState)}
        return TrainingState(**{key: value for key, value in header["state"].items() if key in known})
    except FileNotFoundError:
        raise CheckpointError("no such checkpoint file", path=path) from None
    except (SafetensorError, OSError, ValueError, RuntimeError, KeyError, TypeError) as error:
        raise CheckpointError(f"cannot read the checkpoint's state ({error})", path=path) from None


# --- flattening ------------------------------------------------------------------------------------


def _cpu(tensor: Tensor) -> Tensor:
    # A copy: tensors that share memory (tied weights) cannot be saved as they are.
    return tensor.detach().to("cpu", copy=True).contiguous()


def _flatten_optimizer(state_dict: dict[str, Any]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    tensors: dict[str, Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, values in state_dict["state"].items():
        for key, value in values.items():
            if isinstance(value, Tensor):
                tensors[f"optimizer.{index}.{key}"] = _cpu(value)
            else:
                scalars.setdefault(str(index), {})[key] = value
    indices = [str(index) for index in state_dict["state"]]
    return tensors, {"param_groups": state_dict["param_groups"], "indices": indices, "scalars": scalars}


def _unflatten_optimizer(header: dict[str, Any], tensors: dict[str, Tensor]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for index in header["indices"]:
        values = dict(header["scalars"].get(index, {}))
        prefix = f"optimizer.{index}."
        values.update({name[len(prefix) :]: t for name, t in tensors.items() if name.startswith(prefix)})
        state[int(index)] = values
    groups = []
    for group in header["param_groups"]:
        groups.append(
            {key: tuple(v) if isinstance(v, list) and key != "params" else v for key, v in group.items()}
        )
    return {"state": state, "param_groups": groups}


def _flatten(value: Any, name: str, tensors: dict[str, Tensor]) -> Any:
    """A JSON skeleton of nested lists/tuples/dicts; tensors go into ``tensors`` under ``name``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, Tensor):
        tensors[name] = _cpu(value)
        return {"tensor": name}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_flatten(item, f"{name}.{i}", tensors) for i, item in enumerate(value)]}
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"dict": {key: _flatten(item, f"{name}.{key}", tensors) for key, item in value.items()}}
    raise TypeError(
        f"cannot save a model's carried state of type {type(value).__name__} at {name}; "
        "use tensors in lists, tuples or dicts"
    )


def _unflatten(skeleton: dict[str, Any], tensors: dict[str, Tensor]) -> Any:
    if "value" in skeleton:
        return skeleton["value"]
    if "tensor" in skeleton:
        return tensors[skeleton["tensor"]]
    if "list" in skeleton:
        return [_unflatten(item, tensors) for item in skeleton["list"]]
    if "tuple" in skeleton:
        return tuple(_unflatten(item, tensors) for item in skeleton["tuple"])
    return {key: _unflatten(item, tensors) for key, item in skeleton["dict"].items()}
