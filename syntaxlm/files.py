"""File helpers used everywhere: atomic writes, transparent gzip, checksums."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` on success.

    Readers never see a half-written file; on error the temporary file is removed and any
    previous ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; written data is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def open_text(path: str | Path) -> IO[str]:
    """Open a text file for reading, decompressing ``.gz``; a leading BOM is dropped."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def first_invalid_utf8(path: str | Path) -> tuple[int, int, str]:
    """(line, column, reason) of the first byte sequence in a file that is not UTF-8; 1-based.

    Used to locate a ``UnicodeDecodeError``, which text-mode reading reports without a position.
    """
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                column = len(raw[: error.start].decode("utf-8", errors="replace")) + 1
                return lineno, column, error.reason
    return 0, 0, "unknown"
