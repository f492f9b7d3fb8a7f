"""What keeping BLiMP's log-probabilities for ``eval blimp --resume`` costs (seconds, one core).
Prints JSON.

``jobs.blimp.score_pairs`` over ``--pairs`` synthetic pairs with a scorer that costs nothing, 256
sentences a batch: without the file, with it saved every ``SAVE_EVERY_S`` seconds (as ``eval
blimp --out`` does), and saved after every batch (each write holds all pairs so far, so this grows
with the square of the pairs). Each is run ``--repeats`` times; the median is reported.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import syntaxlm.jobs.blimp as kept
from syntaxlm.eval.blimp import MinimalPair


def seconds(pairs, path, model, every_s: float) -> float:
    kept.SAVE_EVERY_S = every_s
    start = time.perf_counter()
    kept.score_pairs(
        lambda sentences: [-1.0] * len(sentences), pairs, {}, path=path, model_file=model,
        options={"method": "exact"}, batch_size=256, progress=False,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pairs = [
        MinimalPair(f"p{i // 1000}", i % 1000, "a b", "b a", "binding", "syntax") for i in range(args.pairs)
    ]
    default = kept.SAVE_EVERY_S
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "model.safetensors"
        model.write_bytes(b"weights")
        path = Path(folder) / "blimp.logprobs.json"
        runs = {
            "no file": (None, default),
            f"saved every {default:g} s": (path, default),
            "saved every batch": (path, 0.0),
        }
        medians = {
            name: statistics.median(seconds(pairs, file, model, every) for _ in range(args.repeats))
            for name, (file, every) in runs.items()
        }
    record = {
        "benchmark": "blimp_save",
        "date": date.today().isoformat(),
        "machine": platform.processor() or platform.machine(),
        "pairs": args.pairs,
        "repeats": args.repeats,
        "median_seconds": {name: round(value, 3) for name, value in medians.items()},
    }
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
