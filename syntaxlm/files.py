"""File helpers used everywhere: atomic writes, transparent gzip, checksums, reading text and JSON
so that every problem with the bytes is reported with its place in the file."""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import os
import re
import reprlib
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from syntaxlm.errors import InputFormatError, NoSpaceError, OutputIsInputError, SyntaxlmError

ErrorType = Callable[..., InputFormatError]
"""An ``InputFormatError`` subclass, called as
``error(problem, path=..., line=..., column=..., expected=...)``."""


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` on success.

    Readers never see a half-written file; on error the temporary file is removed and any
    previous ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temporary_file_beside(path)
    try:
        binary = "b" in mode
        with _named_output(path, tmp), os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        with _named_output(path, tmp):
            os.chmod(tmp, 0o644)  # mkstemp makes the file private; written data is meant to be shared
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _named_output(path: Path, temporary: str) -> Iterator[None]:
    """An ``OSError`` while writing ``path`` through ``temporary`` names ``path``, not the temporary
    file (or no file at all, as a failed ``write`` does): the error the user sees names their output."""
    try:
        yield
    except OSError as error:
        if error.errno is None or error.filename not in (None, temporary):
            raise
        raise type(error)(error.errno, error.strerror, str(path)) from error


def os_error_message(error: OSError) -> str:
    """One line for an ``OSError`` a command could not get past (a full disk, a read-only or
    forbidden folder, a path through a file): what happened, to which file, and what to do."""
    if isinstance(error, SyntaxlmError) or error.errno is None:  # a message of the library's own
        return str(error)
    where = error.filename if error.filename is not None else "a file"
    if error.filename2 is not None:
        where = f"{error.filename} -> {error.filename2}"
    if error.errno in NO_SPACE:
        return f"no space left on the device writing {where}; free space there or choose another folder"
    if error.errno == errno.EROFS:
        return f"cannot write {where}: the file system is read-only; choose another folder"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"cannot open {where}: permission denied"
    if error.errno == errno.EEXIST and error.filename is not None and not Path(error.filename).is_dir():
        return f"cannot make the folder {where}: a file of that name is there"
    if error.errno == errno.ENOENT:
        return f"no such file or folder: {where}"
    if error.errno == errno.EISDIR:
        return f"{where} is a folder; a file was expected"
    if error.errno == errno.ENOTDIR:
        return f"cannot use {where}: a part of the path is a file, not a folder"
    return f"{where}: {error.strerror or error}"


def refuse_overwriting(output: str | Path | None, inputs: Iterable[str | Path | None]) -> None:
    """Refuse, before any work, an ``output`` that exists and is one of the ``inputs`` (by any path or
    link) or lies inside an input folder (where it would be read as an input): an output never
    replaces what its command reads."""
    if output is None or not Path(output).exists():
        return
    output = Path(output)
    for given in map(Path, filter(None, inputs)):
        if given.is_dir() and output.resolve().is_relative_to(given.resolve()):
            where = f"inside the input folder {given}"
        elif given.is_file() and os.path.samefile(output, given):
            where = "an input of this command" if output == given else f"the input {given}"
        else:
            continue
        raise OutputIsInputError(
            f"the output {output} is {where}: writing it would replace what is read; choose another output"
        )


NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


@contextlib.contextmanager
def no_space_reported(folder: str | Path, what: str) -> Iterator[None]:
    """Raise a write under ``folder`` that fails for a full disk or quota as ``NoSpaceError`` naming
    ``folder`` and ``what`` was being written (a failed ``write`` on an open file names no file)."""
    try:
        yield
    except NoSpaceError:
        raise
    except OSError as error:
        if error.errno not in NO_SPACE:
            raise
        written = f"{error.filename}, " if error.filename else ""
        raise NoSpaceError(
            error.errno,
            f"no space left on the device of {folder} (writing {written}{what}); free space there "
            "or choose another folder, then run again",
            error.filename,
        ) from error


def temporary_file_beside(path: Path) -> tuple[int, str]:
    """A new file ``.NAME.XXXXXXXX.tmp`` in ``path``'s folder (``mkstemp``: descriptor and name), for
    a write renamed over ``path`` when it is done; ``remove_temporary_files`` knows the name."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:  # named by the file it is for: the temporary name means nothing to a user
        raise type(error)(error.errno, error.strerror, str(path)) from error


# mkstemp's random part is 8 characters of [a-z0-9_].
_TEMPORARY_NAME = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


def remove_temporary_files(folder: str | Path) -> list[Path]:
    """Delete the temporary files (``temporary_file_beside``) a killed process left in ``folder``,
    not in its subfolders; returns them. Only safe while no other process writes into ``folder``."""
    removed = []
    for stale in Path(folder).glob(".*.tmp"):
        if _TEMPORARY_NAME.fullmatch(stale.name) and stale.is_file():
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
                removed.append(stale)
    return removed


def open_text(path: str | Path) -> IO[str]:
    """Open a UTF-8 text file for reading, decompressing ``.gz``; a leading BOM is dropped.

    (Not with Python's ``utf-8-sig``: it reads a file holding only the first byte or two of a BOM
    as empty instead of failing.)
    """
    path = Path(path)
    raw = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115
    try:
        if raw.peek(3)[:3] == b"\xef\xbb\xbf":
            raw.read(3)
    except BaseException:
        raw.close()
        raise
    return io.TextIOWrapper(raw, encoding="utf-8")


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
    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``, as in text mode; a leading BOM is not a column.
    """
    opener = gzip.open if Path(path).suffix == ".gz" else open
    lineno = 0
    with opener(path, "rb") as handle:
        for raw in handle:
            for piece in raw.splitlines(keepends=True):  # bytes split at \n, \r\n and \r only
                lineno += 1
                if lineno == 1 and piece.startswith(b"\xef\xbb\xbf"):
                    piece = piece[3:]
                try:
                    piece.decode("utf-8")
                except UnicodeDecodeError as error:
                    column = len(piece[: error.start].decode("utf-8", errors="replace")) + 1
                    return lineno, column, error.reason
    return 0, 0, "unknown"


@contextlib.contextmanager
def _read_errors_located(path: str | Path, error: ErrorType, line: Callable[[], int]) -> Iterator[None]:
    """Around reading a text file: bytes that are not UTF-8, and a ``.gz`` file that is not gzip or
    is cut short, raise ``error`` naming the file and the line (``line()``: the line being read)."""
    try:
        yield
    except UnicodeDecodeError:
        raise _utf8_error(path, error) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as problem:
        raise error(
            f"the compressed data is damaged or cut short ({problem})",
            path=str(path),
            line=line(),
            expected="a complete gzip file",
        ) from None


def read_lines(path: str | Path, error: ErrorType) -> Iterator[str]:
    """The lines of a text file as ``open_text`` reads them (``.gz`` decompressed, BOM dropped,
    ``\\r\\n`` and ``\\r`` read as ``\\n``). Bytes that are not UTF-8, and a ``.gz`` file that is not
    gzip or is cut short, raise ``error`` naming the file and the line."""
    number = 0
    with _read_errors_located(path, error, lambda: number + 1), open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            yield line


READ_CHUNK = 1 << 20  # characters


def read_text(path: str | Path, error: ErrorType, *, most: int | None = None) -> str:
    """The whole of a text file, read as ``read_lines`` reads it. ``most``: a file of more
    characters (decompressed) raises ``error``, read no further than that (a sparse or compressed
    file can hold far more than its size on disk)."""
    if most is None:
        return "".join(read_lines(path, error))
    chunks: list[str] = []
    size = lines = 0
    with _read_errors_located(path, error, lambda: lines + 1), open_text(path) as handle:
        while chunk := handle.read(READ_CHUNK):
            size += len(chunk)
            if size > most:
                raise error(
                    f"more than {most:,} characters", path=str(path), expected=f"at most {most:,} characters"
                )
            lines += chunk.count("\n")
            chunks.append(chunk)
    return "".join(chunks)


def _utf8_error(path: str | Path, error: ErrorType) -> InputFormatError:
    line, column, reason = first_invalid_utf8(path)
    return error(f"invalid UTF-8 ({reason})", path=str(path), line=line, column=column, expected="UTF-8 text")


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]|[\]}]|-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?')


class DuplicateKeyError(ValueError):
    """A JSON object holds a key twice (``json_loads(..., unique_keys=True)``). ``where`` is the
    object's path in the document (``items[3].conditions[0]``, ``top level``), ``key`` the key."""

    def __init__(self, where: str, key: str):
        self.where = where
        self.key = key
        super().__init__(f"{where}: key {reprlib.repr(key)} appears twice")


class _ObjectWithDuplicateKey(dict):
    """A JSON object read with a repeated key; ``duplicate`` is the first such key."""

    duplicate: str


def _duplicate_marking_hook(found: list[bool]) -> Callable[[list[tuple[str, Any]]], dict]:
    """json's ``object_pairs_hook`` that marks an object with a repeated key and sets ``found``.
    The object's path is found after reading (``_first_duplicate_key``): a hook does not know it."""

    def hook(pairs: list[tuple[str, Any]]) -> dict:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        marked = _ObjectWithDuplicateKey(obj)
        marked.duplicate = _first_repeated(key for key, _ in pairs)
        found.append(True)
        return marked

    return hook


def _first_repeated(keys: Iterable[str]) -> str:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            return key
        seen.add(key)
    raise ValueError("no key is repeated")


def _first_duplicate_key(data: Any) -> DuplicateKeyError:
    """The first object, in document order, read with a repeated key, with its path."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _ObjectWithDuplicateKey):
            return DuplicateKeyError(path or "top level", value.duplicate)
        if isinstance(value, dict):
            children = [(child, json_path(path, key)) for key, child in value.items()]
        elif isinstance(value, list):
            children = [(child, json_path(path, index)) for index, child in enumerate(value)]
        else:
            continue
        stack.extend(reversed(children))
    raise ValueError("no object with a repeated key")


def json_path(parent: str, step: str | int) -> str:
    """The path of a member of the JSON value at ``parent`` (``""``: the document): an array's
    ``items[3]``, an object's ``result.suite``, or ``inputs['a key']`` for a key that is not a name."""
    if isinstance(step, int):
        return f"{parent}[{step}]"
    if step.isidentifier() and len(step) <= 40:
        return f"{parent}.{step}" if parent else step
    return f"{parent}[{reprlib.repr(step)}]"


def json_loads(text: str, *, unique_keys: bool = False) -> Any:
    """``json.loads``, whose failures on bad text are all ``json.JSONDecodeError`` with a position:
    also arrays and objects nested deeper than the interpreter's recursion limit lets ``json``
    read, and integers with more digits than Python converts (``sys.get_int_max_str_digits``).
    With ``unique_keys``, an object that repeats a key (which ``json`` reads as its last value)
    raises ``DuplicateKeyError`` naming the object's path and the key."""
    found: list[bool] = []
    hook = _duplicate_marking_hook(found) if unique_keys else None
    try:
        data = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        depth, position = 0, (0, 0)
        for token in _JSON_TOKEN.finditer(text):
            if token.group() in "[{":
                depth += 1
                position = max(position, (depth, -token.start()))
            elif token.group() in "]}":
                depth -= 1
        problem = f"arrays and objects nested {position[0]} deep, too deep to read"
        raise json.JSONDecodeError(problem, text, -position[1]) from None
    except ValueError as error:  # int() refuses a number with too many digits
        limit = sys.get_int_max_str_digits()
        integers = (t for t in _JSON_TOKEN.finditer(text) if re.fullmatch(r"-?[0-9]+", t.group()))
        long = next((t for t in integers if len(t.group().lstrip("-")) > limit), None)
        if long is None:
            raise json.JSONDecodeError(str(error), text, 0) from None
        problem = f"an integer of {len(long.group().lstrip('-'))} digits, more than the {limit} Python reads"
        raise json.JSONDecodeError(problem, text, long.start()) from None
    if found:
        raise _first_duplicate_key(data)
    return data


def parse_json(
    text: str, error: ErrorType, *, path: str | Path, line: int | None = None, expected: str | None = None
) -> Any:
    """``json_loads`` of ``text`` read from ``path``; bad JSON raises ``error`` at its line and column
    (``line`` given: ``text`` is that one line of the file)."""
    try:
        return json_loads(text)
    except json.JSONDecodeError as problem:
        raise error(
            f"invalid JSON ({problem.msg})",
            path=str(path),
            line=problem.lineno if line is None else line,
            column=problem.colno,
            expected=expected,
        ) from None


def read_json(
    path: str | Path, error: ErrorType, *, expected: str | None = None, most: int | None = None
) -> Any:
    """A whole JSON file, every problem with its bytes or its JSON raised as ``error`` with a place;
    ``most``: the most characters read (``read_text``)."""
    return parse_json(read_text(path, error, most=most), error, path=path, expected=expected)
