"""The run folder: what a training run writes where, the lock one run holds on it, how a stopped
run's folder is checked and tidied before it resumes, and how model folders are replaced whole.

A run folder holds::

    config.json              {"model", "seed", "world_size", "train_config"} (read by the report)
    data/                    the synthetic treebank, when the recipe asks for it
    vocab/                   the text vocabulary built from the training trees (unless vocab_path)
    checkpoint.safetensors   the latest checkpoint (see ``checkpoint``)
    best/  last/             save_pretrained folders: lowest validation loss, end of training
    log.csv  tensorboard/    the training log (see ``logs``)
    training.json            the result record (``syntaxlm.results``)
    run.lock                 locked while a run trains here (see ``run_folder_lock``)
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from syntaxlm.errors import ConfigError, InputFormatError, SyntaxlmError, TrainingError
from syntaxlm.files import atomic_writer, read_json, remove_temporary_files
from syntaxlm.models import TrainedModel
from syntaxlm.train.checkpoint import CHECKPOINT_FILE, read_training_state
from syntaxlm.train.config import RunConfig, recorded_config
from syntaxlm.train.processes import Processes

CONFIG_FILE = "config.json"
RESULT_FILE = "training.json"
LOCK_FILE = "run.lock"
BEST, LAST = "best", "last"

# Keys a resumed run may change: they decide when to stop, log or save, not what a step computes
# (except that ``max_steps`` and ``epochs`` set the length the cosine schedule decays over).
RESUMABLE_CHANGES = frozenset(
    f"train.{key}"
    for key in (
        "max_steps",
        "epochs",
        "max_minutes",
        "log_every",
        "checkpoint_every",
        "eval_every",
        "patience",
        "device",
        "on_nonfinite",
        "max_skipped_batches",
    )
)


@contextlib.contextmanager
def run_folder_lock(out: Path, processes: Processes, device: torch.device) -> Iterator[None]:
    """Hold the lock of the run folder ``out`` (the first process takes it) for the whole run.

    A second training into a folder whose lock is held fails at once with a ``TrainingError`` naming
    the holder, in every process of that training. The lock is a ``flock`` on ``run.lock``, which
    the kernel releases when its holder ends in any way (SIGKILL too): a killed run's lock never
    blocks the next one. The file stays; its text only names the holder.
    """
    handle, holder = _lock_run_folder(out) if processes.main else (None, None)
    refused = processes.sum([0.0 if handle is not None or not processes.main else 1.0], device)[0]
    if refused:
        who = f"by {holder}" if holder else "(the first process's error names the holder)"
        raise TrainingError(
            f"{out} is in use by another training run {who}; wait for that run to end, or train into "
            "another folder"
        )
    try:
        yield
    finally:
        if handle is not None:
            handle.close()  # releases the lock


def _lock_run_folder(out: Path) -> tuple[Any, str | None]:
    """``(the open lock file, None)`` when this process now holds the folder's lock, else
    ``(None, the holder's pid, host and start time)``."""
    out.mkdir(parents=True, exist_ok=True)
    handle = open(out / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 (held for the whole run)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "a process that has not yet written its name"
        handle.close()
        return None, holder
    except BaseException:
        handle.close()
        raise
    handle.seek(0)
    handle.truncate()
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    handle.write(f"process {os.getpid()} on host {socket.gethostname()}, started {started}\n")
    handle.flush()
    return handle, None


def prepare_run_folder(config: RunConfig, out: Path, processes: Processes, *, resume: bool) -> bool:
    """Check that ``out`` may take this run and tidy what a crash left; True when there is no checkpoint."""
    checkpoint_path = out / CHECKPOINT_FILE
    has_run = (out / CONFIG_FILE).is_file() or checkpoint_path.is_file()
    if has_run and not resume:
        raise TrainingError(
            f"{out} already holds a run; resume it (--resume) or choose another output folder"
        )
    if has_run:
        _check_resumable(config, out / CONFIG_FILE)
    fresh = not checkpoint_path.is_file()
    processes.barrier()  # every process has looked at the folder before the first one writes to it
    if processes.main:
        out.mkdir(parents=True, exist_ok=True)
        tidy_run_folder(out)
    return fresh


def tidy_run_folder(out: Path) -> None:
    """Remove the temporary files and half-written model folders a stopped run left in ``out``."""
    for folder in (out, out / "data", out / "vocab"):  # the folders the run writes files into
        remove_temporary_files(folder)
    repair_model_folders(out)


def write_run_config(config: RunConfig, out: Path, *, world_size: int) -> None:
    """``config.json``: the run's model, seed and number of processes, and its whole recipe. From
    then on the folder holds a run (resumable, not overwritten)."""
    record = {"model": config.model.model, "seed": config.train.seed, "world_size": world_size}
    with atomic_writer(out / CONFIG_FILE) as handle:
        json.dump({**record, "train_config": config.to_dict()}, handle, indent=2)
        handle.write("\n")


def unfinished_runs(folder: str | Path) -> list[tuple[Path, int | str | None]]:
    """The run folders in ``folder`` (itself included) without a result: runs stopped before their
    end, which a resume continues. Each with the step of its checkpoint (None: none written yet)."""
    runs = []
    for lock in sorted(Path(folder).rglob(LOCK_FILE)):
        run, checkpoint = lock.parent, lock.parent / CHECKPOINT_FILE
        if not (run / RESULT_FILE).is_file():
            runs.append((run, checkpoint_step(checkpoint) if checkpoint.is_file() else None))
    return runs


def checkpoint_step(path: Path) -> int | str:
    """The step of the checkpoint ``path`` ("?" when it cannot be read)."""
    try:
        return read_training_state(path).step
    except SyntaxlmError:
        return "?"


def save_model_folder(model: TrainedModel, folder: Path) -> Path:
    """``save_pretrained`` into a temporary folder that then takes the place of ``folder`` at once.

    On Linux the two folders are swapped in one system call (``renameat2`` with
    ``RENAME_EXCHANGE``): a reader of ``folder`` finds the old model or the new one, never a
    missing folder or a partial file. Elsewhere the old folder is moved aside first, and
    ``repair_model_folders`` puts it back if the process dies before the new one is in place.
    """
    tmp = folder.with_name(f".{folder.name}.tmp")
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if folder.exists() and _exchange(tmp, folder):
        shutil.rmtree(tmp, ignore_errors=True)  # the previous model
        return folder
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return folder


def repair_model_folders(out: Path) -> None:
    """After a crash: drop half-written model folders, put back one moved aside (``save_model_folder``)."""
    for name in (BEST, LAST):
        folder, tmp, old = out / name, out / f".{name}.tmp", out / f".{name}.old"
        shutil.rmtree(tmp, ignore_errors=True)
        if old.is_dir() and not folder.exists():
            old.rename(folder)
        shutil.rmtree(old, ignore_errors=True)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:  # C library older than glibc 2.28
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
    if renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # a file system without it
        return False
    raise OSError(code, os.strerror(code), str(second))


def _check_resumable(config: RunConfig, saved_path: Path) -> None:
    """A resumed run must compute what the stopped one did: only ``RESUMABLE_CHANGES`` may differ."""
    if not saved_path.is_file():
        return
    saved = read_json(saved_path, InputFormatError, expected="a run configuration")
    saved = saved.get("train_config") if isinstance(saved, dict) else None
    if not isinstance(saved, dict):
        raise TrainingError(f"{saved_path}: no train_config; was this folder written by syntaxlm train?")
    now, before = _flat(config.to_dict()), _flat(recorded_config(saved))
    changed = sorted(key for key in now.keys() | before.keys() if now.get(key) != before.get(key))
    changed = [key for key in changed if key not in RESUMABLE_CHANGES]
    if changed:
        shown = "; ".join(
            f"{key}: {before.get(key)!r} in the run, {now.get(key)!r} now" for key in changed[:6]
        )
        raise ConfigError(
            f"{saved_path}: the config differs from the run's in what a step computes ({shown}); "
            f"only {', '.join(sorted(RESUMABLE_CHANGES))} may change on resume"
        )


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
