"""Throughput of PRPN against ``nn.LSTM`` of the same sizes, training and scoring. Prints JSON.

Both models read the same random token segments (``--batch`` rows of ``--bptt`` tokens from a
vocabulary of ``--vocab`` words) with the same embedding and hidden sizes and number of layers:

- ``lstm``: the ``lstm`` model (embedding → ``nn.LSTM`` layers → tied softmax), recurrent dropout
  off so that every layer is one fused ``nn.LSTM`` call;
- ``prpn``: the ``prpn`` model (parsing, reading and predict networks), dropouts as its recipe.

``train_tokens_per_s``: tokens per second of a step (forward, backward, Adam update), median of
``--steps`` timed steps after ``--warmup``; ``score_tokens_per_s``: the same for a forward pass
without gradients in eval mode. ``prpn_over_lstm``: PRPN's training tokens/s over the LSTM's
(target: at least 0.3 on CPU). ``--compile`` also times PRPN's reading layers under
``torch.compile`` (the default, eager, is what the model runs).
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import time
from datetime import date

import torch

from syntaxlm.data.batching import Batch
from syntaxlm.models import build_model
from syntaxlm.text.vocab import WordVocab


def make_vocab(size: int) -> WordVocab:
    return WordVocab.build([[f"w{i}" for i in range(size)]], min_freq=1)


def make_batches(vocab_size: int, batch: int, bptt: int, count: int, seed: int = 0) -> list[Batch]:
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        tokens = torch.randint(4, vocab_size, (batch, bptt + 1), generator=generator, dtype=torch.int32)
        counts = {"lm": batch * bptt}
        batches.append(Batch({"inputs": tokens[:, :-1], "labels": tokens[:, 1:]}, counts))
    return batches


def measure_pair(models: dict, batches: list[Batch], *, steps: int, warmup: int) -> dict[str, dict]:
    """Median step times of each model, training then scoring, the models' steps interleaved
    (a b a b ...) so that a change in the machine's load falls on all of them alike."""
    tokens = batches[0]["inputs"].numel()
    optimisers = {
        name: torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.0, 0.999))
        for name, model in models.items()
    }

    def train_step(name: str, i: int) -> None:
        model = models[name].train()
        output = model.loss(batches[i % len(batches)])
        loss = output.sums["lm"] / output.counts["lm"]
        optimisers[name].zero_grad(set_to_none=True)
        loss.backward()
        optimisers[name].step()

    def score_step(name: str, i: int) -> None:
        model = models[name].eval()
        with torch.no_grad():
            model.loss(batches[i % len(batches)])

    results: dict[str, dict] = {name: {} for name in models}
    for kind, function in (("train", train_step), ("score", score_step)):
        times: dict[str, list[float]] = {name: [] for name in models}
        for i in range(warmup + steps):
            for name in models:
                start = time.perf_counter()
                function(name, i)
                if i >= warmup:
                    times[name].append(time.perf_counter() - start)
        for name in models:
            median = statistics.median(times[name])
            results[name][f"{kind}_step_s"] = round(median, 4)
            results[name][f"{kind}_tokens_per_s"] = round(tokens / median, 1)
    return results


def model_pair(vocab, embedding: int, hidden: int, layers: int, bptt: int):
    shared = {
        "d_model": embedding,
        "hidden_size": hidden,
        "n_layers": layers,
        "segment_length": bptt,
        "order": "sentences",  # every batch from zero state: both models do the same work per step
    }
    torch.manual_seed(0)
    lstm = build_model(
        {"model": "lstm", **shared, "dropout": 0.7, "layer_dropout": 0.5, "recurrent_dropout": 0.0},
        {"vocab": vocab},
    )
    prpn = build_model(
        {"model": "prpn", **shared, "dropout": 0.7, "layer_dropout": 0.5, "recurrent_dropout": 0.5},
        {"vocab": vocab},
    )
    return lstm, prpn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200x400,800x1200", help="EMBEDDINGxHIDDEN, comma-separated")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compile", action="store_true", help="also time PRPN under torch.compile")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    vocab = make_vocab(args.vocab - 4)
    batches = make_batches(len(vocab), args.batch, args.bptt, count=4)
    results = []
    for size in args.sizes.split(","):
        embedding, hidden = (int(value) for value in size.split("x"))
        lstm, prpn = model_pair(vocab, embedding, hidden, args.layers, args.bptt)
        models = {"lstm": lstm, "prpn": prpn}
        if args.compile:
            compiled = copy.deepcopy(prpn)
            for reader in compiled.readers:
                reader.forward = torch.compile(reader.forward, dynamic=False)
            models["prpn_compiled"] = compiled
        row = {"embedding": embedding, "hidden": hidden, "layers": args.layers}
        row.update(measure_pair(models, batches, steps=args.steps, warmup=args.warmup))
        row["prpn_over_lstm"] = {
            "train": round(row["prpn"]["train_tokens_per_s"] / row["lstm"]["train_tokens_per_s"], 3),
            "score": round(row["prpn"]["score_tokens_per_s"] / row["lstm"]["score_tokens_per_s"], 3),
        }
        results.append(row)
    print(
        json.dumps(
            {
                "benchmark": "rnn_bench",
                "date": date.today().isoformat(),
                "machine": {"processor": platform.processor() or platform.machine(), "threads": args.threads},
                "torch": torch.__version__,
                "batch": args.batch,
                "bptt": args.bptt,
                "vocab": len(vocab),
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
