"""The overall progress line of a long job (``Stages``): ``[k/n] stage ... (elapsed, about T left)``;
stages that do not depend on each other run side by side in worker processes (``jobs.pool``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from typing import Any

from syntaxlm.errors import StageError, SyntaxlmError
from syntaxlm.jobs.pool import cpu_pool, cpu_threads, stop_pool


@dataclass
class Stages:
    """An overall progress display: ``[k/n] stage ... (elapsed, about T left)``. The time left is
    the remaining stages' expected weights at the pace observed so far."""

    weights: list[tuple[str, float]]
    echo: Callable[[str], None] = print
    start: float = field(default_factory=time.perf_counter)
    done_weight: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def run(self, index: int, action: Callable[[], Any]) -> Any:
        name, weight = self.weights[index]
        elapsed = time.perf_counter() - self.start
        left = sum(w for _, w in self.weights[index:])
        eta = f", about {clock(elapsed / self.done_weight * left)} left" if self.done_weight else ""
        self.echo(f"[{index + 1}/{len(self.weights)}] {name}  ({clock(elapsed)} elapsed{eta})")
        began = time.perf_counter()
        value = action()
        self.timings[name] = round(time.perf_counter() - began, 1)
        self.done_weight += weight
        return value

    def run_independent(
        self, indices: Sequence[int], actions: Sequence[Callable[[], Any]], *, workers: int = 1
    ) -> list[Any]:
        """Run stages that do not depend on each other; returns their values in the order given.

        With ``workers`` > 1 they run in that many processes (``cpu_pool``), the heaviest first so
        that no long stage starts last, and each is reported as it ends. Each action must then
        pickle: a ``partial`` of module-level functions. An error a user can act on
        (``SyntaxlmError``, a missing file) stops the run with the stage's name; stages that have
        ended keep their files, so running again resumes."""
        if workers <= 1 or len(actions) < 2:
            return [self.run(index, action) for index, action in zip(indices, actions, strict=True)]
        workers = min(workers, len(actions))
        first, last = min(indices) + 1, max(indices) + 1
        elapsed = time.perf_counter() - self.start
        self.echo(
            f"[{first}-{last}/{len(self.weights)}] {len(actions)} stages in {workers} processes "
            f"of {cpu_threads(workers)} thread(s)  ({clock(elapsed)} elapsed)"
        )
        values: dict[int, Any] = {}
        pairs = zip(indices, actions, strict=True)
        heaviest_first = sorted(pairs, key=lambda pair: -self.weights[pair[0]][1])
        pool = cpu_pool(workers)
        try:
            running = {pool.submit(_timed_call, action): index for index, action in heaviest_first}
            for future in as_completed(running):
                index = running[future]
                name, weight = self.weights[index]
                value, seconds, failure = future.result()
                if failure is not None:
                    raise StageError(f"{name}: {failure}")
                values[index] = value
                self.timings[name] = seconds
                self.done_weight += weight
                # The time left: the stages' own seconds per unit of weight so far, the rest of
                # these stages shared among the processes, the stages after them one at a time.
                ended = sum(self.weights[i][1] for i in values)
                pace = sum(self.timings[self.weights[i][0]] for i in values) / ended if ended else 0.0
                waiting = sum(self.weights[i][1] for i in indices if i not in values)
                left = pace * (waiting / workers + sum(w for _, w in self.weights[last:]))
                elapsed = time.perf_counter() - self.start
                self.echo(
                    f"  {name}: done in {clock(seconds)}  ({clock(elapsed)} elapsed, about {clock(left)} left)"
                )
        except BaseException:
            stop_pool(pool)
            raise
        pool.shutdown()
        return [values[index] for index in indices]


def _timed_call(action: Callable[[], Any]) -> tuple[Any, float, str | None]:
    """``action()`` in a worker: its value, its seconds, and the message of an error a user can act
    on (returned rather than raised: such errors do not all survive pickling intact)."""
    began = time.perf_counter()
    try:
        value = action()
    except (SyntaxlmError, FileNotFoundError, IsADirectoryError) as error:
        return None, round(time.perf_counter() - began, 1), str(error)
    return value, round(time.perf_counter() - began, 1), None


def clock(seconds: float) -> str:
    """``m:ss``."""
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"
