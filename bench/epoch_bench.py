"""Training throughput of the tiny TG/TXL recipes over the trainer's own batches, by segment length.

Prints JSON. The synthetic treebank (``--sentences``, ``--lexicon-size``) is read as the trainer
reads it (``model.prepare``: shuffled batches of whole sentences cut to their longest row when
every sequence fits a segment, else streams of segments with memory), and each recipe's model is
trained on its first batches of an epoch with every ``--segment-lengths`` (memory as long as the
segment), steps of the settings interleaved so that the machine's load falls on all alike. Per
model and segment length: the corpus order, the mean batch width, the median step time over
``--steps`` timed steps (after ``--warmup``), target tokens per second and the ratio to the
recipe's own setting.
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

import torch
import yaml

from syntaxlm.data.prepare import prepared_corpus
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.data.treebank import read_treebank_positions
from syntaxlm.models import model_class, model_config
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train.config import TrainConfig
from syntaxlm.train.trainer import make_optimizer

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["txl-terminals", "txl-trees", "tg"])
    parser.add_argument("--segment-lengths", nargs="+", type=int, default=[128, 256])
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--lexicon-size", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="epoch_bench."))
    write_synthetic_treebank(
        folder / "data", sentences=args.sentences, seed=0, lexicon_size=args.lexicon_size
    )
    train = folder / "data" / "train.trees"
    treebank = read_treebank_positions(train)
    vocab = build_vocabulary(train, folder / "vocab", kind="word", min_freq=2)
    report = {
        "benchmark": "epoch",
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, cpu",
        "torch": torch.__version__,
        "sentences": args.sentences,
        "lexicon_size": args.lexicon_size,
        "batch": args.batch,
        "steps": args.steps,
        "results": {},
    }
    for name in args.models:
        recipe = yaml.safe_load((CONFIGS / f"{name}-tiny.yaml").read_text())["model"]
        runs = {}
        for length in args.segment_lengths:
            config = model_config({**recipe, "segment_length": length, "memory_length": length})
            cls = model_class(name)
            torch.manual_seed(0)
            model = cls(config, cls.vocabularies_for(config, treebank[0], vocab))
            corpus, _ = prepared_corpus(model, train, treebank, on_problem="report")
            batches = list(corpus.batches(args.batch, seed=0))[: args.warmup + args.steps]
            model.train()
            runs[length] = {
                "model": model,
                "optimiser": make_optimizer(model, TrainConfig(lr=1e-3)),
                "batches": batches,
                "order": corpus.order,
                "times": [],
                "state": None,
            }
        for i in range(args.warmup + args.steps):
            for run in runs.values():
                batch = run["batches"][i % len(run["batches"])]
                start = time.perf_counter()
                out = run["model"].loss(batch, run["state"])
                (out.sums["lm"] / max(out.counts["lm"], 1)).backward()
                run["optimiser"].step()
                run["optimiser"].zero_grad(set_to_none=True)
                run["state"] = None if out.state is None else [m.detach() for m in out.state]
                if i >= args.warmup:
                    run["times"].append(
                        (time.perf_counter() - start, batch.counts["lm"], batch["inputs"].shape[1])
                    )
        recipe_length = recipe["segment_length"]
        results = {}
        for length, run in runs.items():
            seconds = [t for t, _, _ in run["times"]]
            tokens = sum(n for _, n, _ in run["times"])
            results[str(length)] = {
                "order": run["order"],
                "mean_batch_width": round(statistics.mean(w for _, _, w in run["times"]), 1),
                "median_step_ms": round(1000 * statistics.median(seconds), 1),
                "target_tokens_per_s": round(tokens / sum(seconds)),
            }
        if str(recipe_length) in results:
            own = results[str(recipe_length)]["median_step_ms"]
            for numbers in results.values():
                numbers["step_over_recipe"] = round(numbers["median_step_ms"] / own, 2)
        report["results"][name] = results
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
