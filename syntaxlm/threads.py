"""How many CPU threads torch uses: ``syntaxlm --threads N``, else ``OMP_NUM_THREADS``, else the
cores that are not busy when the command starts.

Threads beyond the free cores slow the small models of this library down rather than up: on a
2-core machine busy with other work, one ``eval sg`` of a tiny TG took 104–115 s with torch's
default of 2 threads and 11–15 s with 1 (docs/performance.md). Worker processes the library
starts (``jobs.pool.cpu_pool``) share out the threads of the process that starts them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def free_cores(cores: int, load: float) -> int:
    """The cores of ``cores`` not taken by ``load`` runnable processes (the 1-minute load
    average), at least 1."""
    return max(1, min(cores, cores - round(load)))


def usable_cores() -> int:
    """The cores this process may run on, each counted once however many hardware threads it has
    (torch's default thread count counts them so too)."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    try:
        return len(
            {
                Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text().strip()
                for cpu in cpus
            }
        )
    except OSError:  # no CPU topology in /sys (not Linux)
        return len(cpus)


def default_threads() -> int | None:
    """The threads a command uses when not told: None (torch's own choice) when
    ``OMP_NUM_THREADS`` is set, which torch follows, or when the system has no load average;
    otherwise the usable cores less those busy now (``free_cores``)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    return free_cores(usable_cores(), load)


def use_threads(threads: int | None) -> None:
    """Make torch use ``threads`` intra-op threads (``default_threads()`` when None). Before torch
    is imported this is ``OMP_NUM_THREADS``, which torch reads when it loads and the processes this
    one starts inherit (so no command pays for importing torch here); after, torch's intra-op
    threads, and its inter-op threads while torch still allows it (before any parallel work)."""
    if threads is None:
        threads = default_threads()
        if threads is None:
            return
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" not in sys.modules:
        return
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # fixed once inter-op parallel work has started
        pass
