"""A model's BLiMP log-probabilities scored batch by batch into a file that a stopped run resumes
from (``eval blimp --model --out``): at the paper's beam a joint model takes hours for BLiMP-10%.

The file (``logprobs_file``: ``OUT.logprobs.json`` beside the result ``OUT.json``) is rewritten
atomically after a batch once ``SAVE_EVERY_S`` seconds have passed since the last write, and at the
end: the model file's sha256, the scoring options (method and beam) and every pair scored so far as
a score record of ``eval blimp --logprobs`` (UID, pairID, good, bad). Writing it after every batch
cost 169 s over BLiMP's 67,000 pairs (each write holds all pairs so far), five times the exact
scoring of a words-only model; a stop now loses at most ``SAVE_EVERY_S`` seconds of scoring.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LogProbs = dict[tuple[str, int], tuple[float, float]]
SAVE_EVERY_S = 30.0


def logprobs_file(out: Path) -> Path:
    """Where the pairs' log-probabilities of the result file ``out`` are kept as they are scored."""
    return out.with_name(f"{out.stem}.logprobs.json")


def scored_pairs(path: Path, model_file: Path, options: dict[str, Any]) -> LogProbs:
    """The pairs ``path`` holds, ``(UID, pairID) → (good, bad)``, scored by the same model file
    with the same ``options``; none when there is no file. A file of another model or other
    options is an error naming it and what differs, since scoring on would mix two runs."""
    from syntaxlm.errors import InputFormatError
    from syntaxlm.eval.blimp import logprob_record
    from syntaxlm.files import read_json, sha256_file
    from syntaxlm.results import refuse_another_run

    if not path.is_file():
        return {}
    expected = 'an object {"model_sha256": ..., "options": {...}, "pairs": [score records]}'
    record = read_json(path, InputFormatError, expected=expected)
    if not isinstance(record, dict) or not isinstance(record.get("pairs"), list):
        raise InputFormatError("not a file of BLiMP log-probabilities", path=path, expected=expected)
    checks = [
        ("model", record.get("model_sha256") == sha256_file(model_file)),
        (f"options {record.get('options')}", record.get("options") == options),
    ]
    expected = f"the BLiMP log-probabilities of {model_file} with {options}, or no file"
    refuse_another_run(path, "log-probabilities", checks, expected)
    return dict(logprob_record(pair, path=path) for pair in record["pairs"])


def score_pairs(
    scorer, pairs: Sequence, scored: LogProbs, *, path: Path | None, model_file: Path,
    options: dict[str, Any], batch_size: int, progress: bool,
) -> LogProbs:  # fmt: skip
    """``scored`` with ``pairs`` scored under ``scorer`` (``eval.scorers.blimp_scorer``) added;
    ``path`` (when given) holds all of them at the end, and all scored so far every
    ``SAVE_EVERY_S`` seconds on the way."""
    from syntaxlm.eval.blimp import pair_logprobs
    from syntaxlm.files import atomic_writer, sha256_file

    scored = dict(scored)
    model_sha256 = sha256_file(model_file) if path is not None else None

    def save() -> None:
        records = [{"UID": uid, "pairID": pair_id, "good": good, "bad": bad}
                   for (uid, pair_id), (good, bad) in scored.items()]  # fmt: skip
        with atomic_writer(path) as file:
            json.dump({"model_sha256": model_sha256, "options": options, "pairs": records}, file)

    saved = time.monotonic()
    for batch, logprobs in pair_logprobs(pairs, scorer, batch_size=batch_size, progress=progress):
        scored.update(((pair.paradigm, pair.pair_id), scores) for pair, scores in zip(batch, logprobs))
        if path is not None and time.monotonic() - saved >= SAVE_EVERY_S:
            save()
            saved = time.monotonic()
    if path is not None and pairs:
        save()
    return scored
