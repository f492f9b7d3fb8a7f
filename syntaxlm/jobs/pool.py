"""The process pool that a job's independent stages, and the SyntaxGym suites of one model, run in:
spawned processes that share out this process's CPU threads."""

from __future__ import annotations

from collections.abc import Callable


def cpu_workers() -> int:
    """Processes for stages that run side by side (``Stages.run_independent``) by default: one per
    CPU thread torch uses, or 1 when a GPU is present (the stages would share it)."""
    import torch

    return 1 if torch.cuda.is_available() else torch.get_num_threads()


def cpu_threads(workers: int) -> int:
    """Torch threads for each of ``workers`` processes: this process's threads, shared out."""
    import torch

    return max(1, torch.get_num_threads() // workers)


def cpu_pool(workers: int, *, setup: Callable[..., None] | None = None, setup_args: tuple = ()):
    """A pool of ``workers`` spawned processes (``ProcessPoolExecutor``) sharing this process's CPU
    threads (``cpu_threads``), each calling ``setup(*setup_args)`` once when it starts.

    For the tiny models, processes use the cores better than threads: on 2 cores one epoch of the
    tiny TG takes 25.3 s with 1 thread and 22.5 s with 2, while 2 one-thread processes run side by
    side at the speed of one alone (docs/performance.md)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(cpu_threads(workers), setup, setup_args),
    )


def stop_pool(pool) -> None:
    """Cancel a pool's waiting work and end its processes now; a training stopped there resumes
    from its last checkpoint when run again."""
    processes = list((pool._processes or {}).values())  # no public way to end them before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _start_worker(threads: int, setup: Callable[..., None] | None, setup_args: tuple) -> None:
    import torch

    torch.set_num_threads(threads)
    if setup is not None:
        setup(*setup_args)
