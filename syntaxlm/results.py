"""Result files: every evaluation result is written with what produced it.

A result file is JSON: ``{"kind", "result", "inputs", "options", "provenance"}`` where ``inputs``
maps each input's role to its absolute path (a reader in another working directory finds it) and
sha256, ``options`` holds the settings that change the numbers, and ``provenance`` the package
version, the git commit of the code (when run from a checkout) and the time. Reports are made from
these files, never from live objects.
"""

from __future__ import annotations

import json
import math
import reprlib
import subprocess
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.files import atomic_writer, json_path, read_json, sha256_file
from syntaxlm.version import __version__


@cache
def git_commit() -> str | None:
    """The commit of the checkout this package runs from, or ``None`` (installed, or no git)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def result_record(
    kind: str,
    result: Any,
    *,
    inputs: dict[str, str | Path] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON record of one result (see the module docstring)."""
    return {
        "kind": kind,
        "result": result,
        "inputs": {
            role: {
                "path": str(Path(path).absolute()),
                "sha256": sha256_file(path) if Path(path).is_file() else None,
            }
            for role, path in (inputs or {}).items()
        },
        "options": options or {},
        "provenance": {
            "syntaxlm_version": __version__,
            "git_commit": git_commit(),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }


def write_result(path: str | Path, record: dict[str, Any]) -> Path:
    """Write a result record atomically (a reader never sees half a file)."""
    path = Path(path)
    with atomic_writer(path) as handle:
        json.dump(record, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    return path


MAX_RESULT_CHARS = 256 * 2**20  # far more than any result syntaxlm writes (BLiMP's 67k pairs: ~15 MB)


def refuse_another_run(
    path: str | Path, what: str, checks: Iterable[tuple[str, bool]], expected: str
) -> None:
    """A file a stopped run left (``what`` it holds), read by the run resuming it: an error naming
    the file and each of ``checks`` (a name, whether it is the same) that is not the same, since
    going on would mix two runs' numbers."""
    differs = [name for name, same in checks if not same]
    if differs:
        problem = f"{what} of another {', '.join(differs)} than this run's"
        raise InputFormatError(problem, path=path, expected=expected)


def read_result(path: str | Path) -> dict[str, Any]:
    """A result record written by ``write_result``; anything else raises ``InputFormatError``: also
    a path that is not a regular file (a FIFO, which reading would wait on forever, or a device)
    and a file of more than ``MAX_RESULT_CHARS`` characters."""
    if Path(path).exists() and not Path(path).is_file():
        raise InputFormatError("not a regular file", path=path, expected="a result file")
    record = read_json(path, InputFormatError, expected="a result file", most=MAX_RESULT_CHARS)
    missing = [
        key for key in ("kind", "result", "provenance") if not isinstance(record, dict) or key not in record
    ]
    if missing:
        raise InputFormatError(
            f"no {', '.join(missing)} field",
            path=path,
            expected="a result file written by syntaxlm (kind, result, ...)",
        )
    return record


# --- the shape of a result file, as the readers of its numbers expect it ------------------------------


class ResultFileError(InputFormatError):
    """A result file whose field does not hold what its readers expect. ``field`` is the field's
    path in the file (``result.items[3].results``), named in the message with what it holds and
    what was expected."""

    def __init__(self, field: str, problem: str, *, path: str | Path, expected: str):
        self.field = field
        super().__init__(f"{field} {problem}", path=path, expected=expected)


class _Wrong(Exception):
    """A field of the wrong shape, found by a ``Check``: ``ResultFileError`` once the file is known."""

    def __init__(self, field: str, problem: str, expected: str):
        super().__init__(field, problem, expected)
        self.field, self.problem, self.expected = field, problem, expected


Check = Callable[[Any, str], None]
"""Checks a JSON value found at a path in the file (``result.items[3]``); raises ``_Wrong``."""

MAX_NUMBER = 1e100  # a number larger than this is no result's (and overflows statistics on it)
MAX_INTEGER = 2**53  # integers a page's script reads exactly


def _shown(value: Any) -> str:
    """A JSON value in a message: what it is, the value itself where it is short."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return reprlib.repr(value)
    if isinstance(value, str):
        return f"the text {reprlib.repr(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)} value{'s' if len(value) > 1 else ''}" if value else "an empty list"
    return "an object"


def _wrong(value: Any, where: str, expected: str) -> _Wrong:
    return _Wrong(where, f"is {_shown(value)}", expected)


def number(low: float = -MAX_NUMBER, high: float = MAX_NUMBER) -> Check:
    """A JSON number (not ``true``/``false``, which Python reads as 1 and 0), finite, in ``[low, high]``."""
    expected = f"a number from {low:g} to {high:g}"
    if (low, high) == (-MAX_NUMBER, MAX_NUMBER):
        expected = f"a finite number (at most {MAX_NUMBER:g} in size)"

    def check(value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(value, where, expected)
        try:
            inside = low <= float(value) <= high
        except OverflowError:  # an integer of hundreds of digits
            inside = False
        if not inside:
            raise _wrong(value, where, expected)

    return check


def integer(low: int = 0, high: int = MAX_INTEGER) -> Check:
    """A JSON integer (not a boolean) in ``[low, high]``."""
    expected = f"an integer from {low} to {high}"
    if (low, high) == (-MAX_INTEGER, MAX_INTEGER):
        expected = "an integer (at most 2**53 in size)"
    elif (low, high) == (0, MAX_INTEGER):
        expected = "an integer from 0 to 2**53"

    def check(value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _wrong(value, where, expected)

    return check


def text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise _wrong(value, where, "a string")


def path_text(value: Any, where: str) -> None:
    if not isinstance(value, str) or "\0" in value:
        raise _wrong(value, where, "a path (a string without NUL)")


def flag(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise _wrong(value, where, "true or false")


def optional(check: Check) -> Check:
    """``check``, or JSON ``null``."""

    def checked(value: Any, where: str) -> None:
        if value is not None:
            check(value, where)

    return checked


def list_of(check: Check, *, least: int = 0, expected: str = "a list") -> Check:
    """A JSON array of at least ``least`` values, each passing ``check``."""

    def checked(value: Any, where: str) -> None:
        if not isinstance(value, list) or len(value) < least:
            at_least = f", at least {least}" if least > 1 else ", at least one" * least
            raise _wrong(value, where, expected + at_least)
        for index, member in enumerate(value):
            check(member, json_path(where, index))

    return checked


def map_of(check: Check) -> Check:
    """A JSON object whose every value passes ``check``."""

    def checked(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _wrong(value, where, "an object")
        for key, member in value.items():
            check(member, json_path(where, key))

    return checked


def fields(
    checks: dict[str, Check], *, required: tuple[str, ...] = (), rules: tuple[Check, ...] = ()
) -> Check:
    """A JSON object: each field of ``checks`` that it holds passes its check (other fields are not
    read), those ``required`` are there, and then each of ``rules`` (checks of the whole object)."""

    def checked(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _wrong(value, where, "an object")
        for key in required:
            if key not in value:
                raise _Wrong(json_path(where, key), "is missing", f"the field {key!r}")
        for key, check in checks.items():
            if key in value:
                check(value[key], json_path(where, key))
        for rule in rules:
            rule(value, where)

    return checked


def _needs(given: str, needed: str, check: Check) -> Check:
    """A rule: where the object's ``given`` is there and not null, ``needed`` is there and passes
    ``check``."""

    def rule(value: dict[str, Any], where: str) -> None:
        if value.get(given) is not None:
            if needed not in value:
                raise _Wrong(json_path(where, needed), "is missing", f"the field {needed!r} beside {given!r}")
            check(value[needed], json_path(where, needed))

    return rule


COUNT = integer()
BEAM_FIELDS = {"action_beam": optional(COUNT), "word_beam": optional(COUNT), "fast_track": optional(COUNT)}
BEAM_RULE = _needs("action_beam", "word_beam", COUNT)
FRACTION = number(0, 1)
SURPRISAL_BITS = "a number (Infinity for a sentence a beam lost) or null"


def surprisal(value: Any, where: str) -> None:
    """A region's surprisal as ``eval sg`` writes it: a number, which may be infinite (not NaN)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _wrong(value, where, SURPRISAL_BITS)


def one_of(*checks: Check, expected: str) -> Check:
    """A value that passes one of ``checks``."""

    def checked(value: Any, where: str) -> None:
        for check in checks:
            try:
                check(value, where)
                return
            except _Wrong:
                continue
        raise _wrong(value, where, expected)

    return checked


def _all(value: Any, where: str) -> None:
    if value != "all":
        raise _wrong(value, where, '"all"')


def _perplexity_convention(value: dict[str, Any], where: str) -> None:
    """Both conventions' perplexities, or (files from before they were told apart) one."""
    both = "perplexity_per_word" in value
    required = ("perplexity_per_word", "perplexity_per_token") if both else ("perplexity",)
    fields({}, required=required)(value, where)


_INPUTS = map_of(optional(fields({"path": path_text, "sha256": optional(text)})))
_OPTIONS = {
    "method": optional(text),
    **BEAM_FIELDS,
    "limit": optional(COUNT),
    "sentences_in_data": optional(COUNT),
    "skipped_too_long": optional(list_of(lambda value, where: None)),
    "ten_percent": optional(flag),
    "max_pairs": optional(COUNT),
    "paradigms": optional(one_of(_all, list_of(text), expected='"all" or a list of paradigm names')),
    "pairs_selected": optional(COUNT),
    "parses": optional(text),
    "unlabeled": optional(flag),
}
_METRIC = optional(number())
_ITEM = fields(
    {
        "item_number": integer(-MAX_INTEGER),
        "results": list_of(flag, least=1, expected="each prediction's outcome (true or false)"),
        "region_surprisals_bits": optional(map_of(list_of(surprisal))),
    },
    required=("item_number", "results"),
)


def _items_once(value: dict[str, Any], where: str) -> None:
    """Each item of a suite's result once (the page shows an item's outcome by its number)."""
    seen: dict[int, int] = {}
    for index, item in enumerate(value.get("items") or []):
        if (first := seen.setdefault(item["item_number"], index)) != index:
            at = json_path(json_path(json_path(where, "items"), index), "item_number")
            raise _Wrong(at, f"is {item['item_number']}, as items[{first}]'s", "each item number once")


# The words a model's vocabulary does not know, beside SyntaxGym and BLiMP scores (absent in files
# from before they were counted, and where the scores came from elsewhere).
_UNKNOWN_WORDS = {"n_words": COUNT, "n_unknown_words": COUNT, "unknown_word_rate": FRACTION}
_BLIMP_UNKNOWN_WORDS = {**_UNKNOWN_WORDS, "pairs_differing_in_unknown_word": COUNT}

RESULT_FIELDS: dict[str, Check] = {
    "perplexity": fields(
        {
            "perplexity_per_word": number(0),
            "perplexity_per_token": number(0),
            "perplexity": number(0),
            "count_eos": optional(flag),
            "n_sentences": optional(COUNT),
            "n_words": optional(COUNT),
            "marginalisation": optional(
                fields(
                    {
                        "method": optional(text),
                        "perplexity": optional(text),
                        "renormalised": optional(flag),
                        "segment_length": optional(COUNT),
                        "memory_length": optional(COUNT),
                        **BEAM_FIELDS,
                    },
                    rules=(BEAM_RULE, _needs("segment_length", "memory_length", COUNT)),
                )
            ),
        },
        rules=(_perplexity_convention,),
    ),
    "syntaxgym": fields(
        {
            "suite": text,
            "accuracy_pred0": FRACTION,
            "chance_pred0": optional(FRACTION),
            "n_items": optional(COUNT),
            "method": optional(text),
            **BEAM_FIELDS,
            "predictions": list_of(text, expected="the suite's predictions (strings)"),
            "items": optional(list_of(_ITEM)),
            **_UNKNOWN_WORDS,
            "items_unknown_in_critical_regions": list_of(
                integer(-MAX_INTEGER), expected="the numbers of the items (integers)"
            ),
        },
        required=("suite", "accuracy_pred0"),
        rules=(BEAM_RULE, _items_once),
    ),
    "blimp": fields(
        {
            "overall_accuracy": FRACTION,
            "n_paradigms": optional(COUNT),
            "n_pairs": optional(COUNT),
            **_BLIMP_UNKNOWN_WORDS,
            "phenomena_unknown_words": map_of(fields(_BLIMP_UNKNOWN_WORDS)),
            "paradigms": list_of(fields(_BLIMP_UNKNOWN_WORDS), expected="a list of the paradigms' results"),
        },
        required=("overall_accuracy",),
    ),
    "parseval": fields(
        {
            "summary": fields(
                {"all": fields({"f1": _METRIC, "sentences": optional(COUNT)}, required=("f1",))},
                required=("all",),
            )
        },
        required=("summary",),
    ),
    "uf1": fields(
        {
            "model": fields(
                {"mean_sentence_f1": number(), "corpus_f1_percent": _METRIC},
                required=("mean_sentence_f1", "corpus_f1_percent"),
            ),
            "n_scored": optional(COUNT),
            "max_words": optional(COUNT),
        },
        required=("model",),
    ),
    "generation": fields(
        {
            "bleu": optional(map_of(_METRIC)),
            "distinct": optional(map_of(_METRIC)),
            "self_bleu": optional(map_of(_METRIC)),
            "n_generated": optional(COUNT),
            "self_bleu_sample_size": optional(COUNT),
            "seed": optional(integer(-MAX_INTEGER)),
        }
    ),
    "reading_times": fields(
        {
            "corpus": text,
            "n_tokens": COUNT,
            "kept": COUNT,
            "stories": optional(list_of(text)),
            "models": list_of(
                fields(
                    {
                        "name": text,
                        "model": optional(path_text),
                        "method": optional(text),
                        "context": optional(text),
                        **BEAM_FIELDS,
                        "delta_loglik_per_token": number(),
                        "interval": fields(
                            {"estimate": number(), "low": number(), "high": number()},
                            required=("estimate", "low", "high"),
                        ),
                        "perplexity": optional(
                            fields({"per_word": optional(number(0)), "method": optional(text)})
                        ),
                    },
                    required=("name", "delta_loglik_per_token", "interval"),
                    rules=(BEAM_RULE,),
                ),
                least=1,
                expected="a list of the models scored",
            ),
        },
        required=("corpus", "n_tokens", "kept", "models"),
    ),
}
"""Per kind of result, the fields of ``result`` that the report and the explorer page read, and the
unknown-word counts beside the SyntaxGym and BLiMP scores."""

_RECORD = fields({"kind": text, "inputs": optional(_INPUTS)}, required=("kind", "result"))
_RECORD_OPTIONS = fields({"options": optional(fields(_OPTIONS, rules=(BEAM_RULE,)))})


def check_fields(value: Any, check: Check, path: str | Path) -> Any:
    """``value`` (the JSON of the file ``path``) when it passes ``check``, else ``ResultFileError``
    naming the file and the field."""
    try:
        check(value, "")
    except _Wrong as wrong:
        field = wrong.field or "the top level"
        raise ResultFileError(field, wrong.problem, path=path, expected=wrong.expected) from None
    return value


def _record(record: Any, where: str) -> None:
    _RECORD(record, where)
    if record["kind"] in RESULT_FIELDS:
        _RECORD_OPTIONS(record, where)
        RESULT_FIELDS[record["kind"]](record["result"], json_path(where, "result"))


def check_result(record: Any, path: str | Path) -> dict[str, Any]:
    """``record`` (read from ``path``) when every field the report and the explorer page read from
    it has the shape they expect (``RESULT_FIELDS``; numbers finite, not booleans), else
    ``ResultFileError`` naming the file and the field. Kinds they do not read are not checked."""
    return check_fields(record, _record, path)


def read_checked_result(path: str | Path) -> dict[str, Any]:
    """``read_result``, then ``check_result``."""
    return check_result(read_result(path), path)
