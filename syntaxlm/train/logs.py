"""What a training run shows and records: ``log.csv``, TensorBoard events (when the ``tensorboard``
package is installed) and a progress bar with the loss, tokens per second and the time left;
without the bar (``progress=False``: logs, batch jobs), a plain line with the same every
``PLAIN_PROGRESS_SECONDS``."""

from __future__ import annotations

import csv
import math
import os
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from syntaxlm.inference.estimate import duration

LOG_FILE = "log.csv"
PLAIN_PROGRESS_SECONDS = 60.0
COLUMNS = (
    "step",
    "epoch",
    "train_loss",
    "lr",
    "tokens_per_s",
    "grad_norm",
    "valid_loss",
    "valid_perplexity",
)

TENSORBOARD_TAGS = {
    "train_loss": "loss/train",
    "valid_loss": "loss/valid",
    "valid_perplexity": "perplexity/valid",
    "lr": "lr",
    "tokens_per_s": "speed/tokens_per_s",
    "grad_norm": "grad_norm",
}


def truncate_log(path: str | Path, last_step: int) -> None:
    """Keep the header and the rows up to ``last_step`` (a resumed run logs the later steps again)."""
    path = Path(path)
    if not path.is_file():
        return
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    kept = [row for row in rows[1:] if row and row[0].isdigit() and int(row[0]) <= last_step]
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(kept)
    os.replace(tmp, path)


class RunLog:
    """Rows of ``log.csv`` (appended and flushed one by one), TensorBoard scalars, a tqdm bar.

    Made on every process; only the one with ``enabled`` writes or shows anything.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        start_step: int,
        total_steps: int,
        enabled: bool = True,
        progress: bool = True,
    ):
        self.enabled = enabled
        self.folder = Path(folder)
        self._csv = None
        self._writer = None
        self._tensorboard = None
        self._bar = None
        self._start_step, self._step, self._total_steps = start_step, start_step, total_steps
        self._started = self._last_line = time.monotonic()
        if not enabled:
            return
        path = self.folder / LOG_FILE
        truncate_log(path, start_step)
        new = not path.is_file()
        self._csv = open(path, "a", newline="", encoding="utf-8")  # noqa: SIM115
        self._writer = csv.writer(self._csv)
        if new:
            self._writer.writerow(COLUMNS)
            self._csv.flush()
        self._tensorboard = _tensorboard_writer(self.folder / "tensorboard", purge_step=start_step or None)
        if progress:
            self._bar = tqdm(
                total=total_steps, initial=start_step, desc="train", unit="step", dynamic_ncols=True
            )

    def row(self, **values: Any) -> None:
        """One line of ``log.csv`` (missing columns empty) and the same numbers to TensorBoard."""
        if not self.enabled:
            return
        self._writer.writerow([_cell(values.get(column)) for column in COLUMNS])
        self._csv.flush()
        if self._tensorboard is not None:
            step = values["step"]
            for column, tag in TENSORBOARD_TAGS.items():
                if values.get(column) is not None:
                    self._tensorboard.add_scalar(tag, values[column], step)
            self._tensorboard.flush()

    def advance(self, steps: int, *, loss: float | None = None, tokens_per_s: float | None = None) -> None:
        """``steps`` more taken: the bar moves, or without one a plain line now and then."""
        self._step += steps
        if self._bar is None:
            if self.enabled and time.monotonic() - self._last_line >= PLAIN_PROGRESS_SECONDS:
                self._last_line = time.monotonic()
                print(self._plain_line(loss, tokens_per_s), flush=True)
            return
        postfix = {}
        if loss is not None:
            postfix["loss"] = f"{loss:.4f}"
        if tokens_per_s is not None:
            postfix["tok/s"] = f"{tokens_per_s:.0f}"
        if postfix:
            self._bar.set_postfix(postfix, refresh=False)
        self._bar.update(steps)

    def _plain_line(self, loss: float | None, tokens_per_s: float | None) -> str:
        """``train: step 120/2400 (5%), loss 3.2104, 930 tok/s; 2 min so far, about 38 min left``."""
        done = self._step / max(self._total_steps, 1)
        line = f"train: step {self._step}/{self._total_steps} ({done:.0%})"
        if loss is not None:
            line += f", loss {loss:.4f}"
        if tokens_per_s is not None:
            line += f", {tokens_per_s:.0f} tok/s"
        elapsed = time.monotonic() - self._started
        line += f"; {duration(elapsed)} so far"
        taken = self._step - self._start_step  # in this process: a resumed run's pace is its own
        if taken > 0 and self._step < self._total_steps:
            line += f", about {duration(elapsed * (self._total_steps - self._step) / taken)} left"
        return line

    def note(self, text: str) -> None:
        """A message printed above the progress bar (or plainly when there is none)."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(text)
        else:
            print(text, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._tensorboard is not None:
            self._tensorboard.close()
            self._tensorboard = None
        if self._csv is not None:
            self._csv.close()
            self._csv = None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def _tensorboard_writer(folder: Path, *, purge_step: int | None):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # the optional ``tensorboard`` extra is not installed
        return None
    return SummaryWriter(str(folder), purge_step=purge_step)
