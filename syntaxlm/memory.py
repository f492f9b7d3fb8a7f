"""What the machine can hold. Sizes a user asks for (synthetic sentences, the proposal parser's
k best trees and samples, the beam search's action beam) are checked before any work against the
memory available, and refused with a message naming the size, the estimate and the bound.

Their memory is not always a count times a size: the k-best chart grows with k², a beam with the
rows its decoder holds for every sentence of a batch. ``check_size`` takes the caller's estimate
of the bytes a value needs (each caller says what it counts; the estimates are meant to refuse
what cannot run, not to promise that what passes will) and raises ``SizeError`` naming the
argument, the estimate, the memory available and the largest value that fits.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from syntaxlm.errors import SizeError

if TYPE_CHECKING:
    import torch

MEMINFO = Path("/proc/meminfo")


def available_memory() -> int:
    """Bytes of memory the system can give without swapping: Linux's ``MemAvailable``, elsewhere the
    free physical pages (``os.sysconf``)."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 40  # a system that does not say: the check leaves the allocation to fail by itself


def available_bytes(device: torch.device | str | None = None) -> int:
    """The memory free for new work on ``device``: a CUDA device's free memory, else the host's
    (``available_memory``)."""
    import torch

    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.mem_get_info(device)[0])
    return available_memory()


def readable_bytes(count: int) -> str:
    """``count`` bytes for a message (``12.3 GiB``; a power of ten beyond exbibytes), for exact
    integers of any size (no float overflow)."""
    count = int(count)
    if count < 1024:
        return f"{count} bytes"
    for power, unit in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), 1):
        if count < 1024 ** (power + 1):
            return f"{count / 1024**power:.1f} {unit}"
    return f"10^{_digits(count) - 1} bytes"


def counted(count: int, noun: str) -> str:
    """``1 sentence``, ``3 sentences``: a count and its noun, plural when it is not one."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def readable_count(value: int) -> str:
    """An integer for a message; one too long to print whole as its number of digits."""
    return str(value) if _digits(value) <= 30 else f"a number of about {_digits(value)} digits"


def _digits(value: int) -> int:
    """Decimal digits of ``abs(value)`` (perhaps one too many), without ``str`` (which refuses
    more than 4,300 digits)."""
    value = abs(int(value))
    return math.floor(value.bit_length() * math.log10(2)) + 1 if value else 1


def check_size(
    name: str,
    value: int,
    need: Callable[[int], int],
    what: str,
    *,
    device: torch.device | str | None = None,
    hint: str = "",
) -> None:
    """``SizeError`` when ``need(value)`` bytes (an estimate, non-decreasing in the value, as an
    exact integer) are more than the memory available on ``device``: the message says what the
    bytes are for (``what``), both amounts and the largest value that fits; ``hint``
    (``"; ..."``) ends it."""
    available = available_bytes(device)
    needed = need(value)
    if needed <= available:
        return
    low, high = 0, value  # need(high) does not fit; low is 0 or fits
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if need(middle) <= available else (low, middle)
    most = f"at most {readable_count(low)} fits" if low else "not even 1 fits"
    problem = (
        f"{readable_count(value)} needs about {readable_bytes(needed)} for {what}, more than the "
        f"{readable_bytes(available)} of memory available; {most}{hint}"
    )
    raise SizeError(name, value, low, problem)
