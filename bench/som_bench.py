"""Throughput of eSOM and dSOM against an ``nn.LSTM`` language model of the same width.

Prints JSON. Sentences come from UD English EWT (``--data``, the dev file by default, read from
``../shared/data``) or, when that file is absent, from the synthetic treebank. Models are built at
``--width`` (Appendix A: 400 = 300 + 100) with ``--slots`` memory slots over the sentences' word
vocabulary. Each number is the median over ``--steps`` timed batches after one untimed batch:

- ``train_tokens_per_s``: predicted tokens (words and ``</s>``) per second of forward + backward +
  AdamW update, in training mode (decisions drawn from ``p_t``, dropout on);
- ``score_tokens_per_s``: the same tokens through ``word_logprobs`` (evaluation mode, argmax);
- ``cell_rows_per_token``: rows the composition cell and the prediction RNN actually computed per
  word, against the ``2N`` of the reference implementation, which runs every slot for every row.

The LSTM baseline: embedding → one ``nn.LSTM`` layer → tied output, the same vocabulary, batches
and tokens, trained with the same optimiser.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.models.som import SOMConfig, SyntacticOrderedMemory
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.dependency import ConlluReader
from syntaxlm.trees.ptb import TreeReader

SHARED_DATA = Path(
    os.environ.get("SYNTAXLM_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
EWT_DEV = SHARED_DATA / "ud_english" / "ewt" / "en_ewt-ud-dev.conllu"


class LSTMLanguageModel(nn.Module):
    """The baseline: one LSTM layer of the given width with tied input/output embeddings."""

    def __init__(self, vocab_size: int, width: int, dropout: float):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def nll(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.dropout(self.embedding(inputs)))
        logits = F.linear(self.dropout(hidden), self.embedding.weight, self.bias)
        real = targets != 0
        return F.cross_entropy(logits[real], targets[real], reduction="sum")


def read_trees(path: Path, n: int) -> tuple[list, str]:
    if path.is_file():
        trees = []
        for tree in ConlluReader(path):
            trees.append(tree)
            if len(trees) == n:
                break
        return trees, str(path)
    folder = Path(tempfile.mkdtemp())
    write_synthetic_treebank(folder, sentences=max(n * 2, 100), seed=0)
    trees = list(TreeReader(folder / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))[:n]
    return trees, "synthetic treebank"


def words_of(tree) -> list[str]:
    return list(tree.words) if hasattr(tree, "words") else tree.leaves()


def median_rate(tokens: list[int], times: list[float]) -> float:
    return statistics.median(n / t for n, t in zip(tokens, times))


def bench_som(name: str, trees, vocab, args) -> dict:
    config = SOMConfig(
        model=name, d_model=args.width, d_syntactic=args.width // 4, n_slots=args.slots, dropout=0.1
    )
    torch.manual_seed(0)
    model = SyntacticOrderedMemory(config, {"vocab": vocab})
    corpus = model.prepare(trees)
    batches = list(corpus.batches(args.batch_size, seed=0))[: args.steps + 1]
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rows = {"computed": 0}

    def count(_module, inputs, _output):
        rows["computed"] += inputs[0].shape[0]

    hooks = [model.cell.register_forward_hook(count), model.reader.register_forward_hook(count)]
    model.train()
    train_times, train_tokens, words = [], [], 0
    for i, batch in enumerate(batches):
        if i == 1:
            rows["computed"] = 0
        start = time.perf_counter()
        out = model.loss(batch)
        loss = sum(
            weight * out.sums[part] / batch.counts[part] for part, weight in model.loss_weights.items()
        )
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if i:
            train_times.append(time.perf_counter() - start)
            train_tokens.append(batch.counts["lm"])
            words += batch.counts["lm"] - batch.size
    for hook in hooks:
        hook.remove()
    sentences = [words_of(t) for t in trees[: args.batch_size * (args.steps + 1)]]
    score_times, score_tokens = [], []
    for i in range(args.steps + 1):
        chosen = sentences[i * args.batch_size : (i + 1) * args.batch_size]
        if not chosen:
            break
        start = time.perf_counter()
        model.word_logprobs(chosen, eos=True, batch_size=args.batch_size)
        if i:
            score_times.append(time.perf_counter() - start)
            score_tokens.append(sum(len(s) + 1 for s in chosen))
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_tokens_per_s": median_rate(train_tokens, train_times),
        "score_tokens_per_s": median_rate(score_tokens, score_times),
        "cell_rows_per_token": rows["computed"] / max(words, 1),
        "reference_cell_rows_per_token": 2 * args.slots,
    }


def bench_lstm(trees, vocab, args) -> dict:
    torch.manual_seed(0)
    model = LSTMLanguageModel(len(vocab), args.width, 0.1)
    # The same rows as SOM: inputs w_0..w_{T-1} after a start position, targets w_0..w_{T-1} </s>.
    som = SyntacticOrderedMemory(SOMConfig(model="esom", d_model=8, n_slots=args.slots), {"vocab": vocab})
    corpus = som.prepare(trees)
    batches = list(corpus.batches(args.batch_size, seed=0))[: args.steps + 1]
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4)
    bos = vocab.index("<s>")

    def rows(batch):
        labels = batch["labels"].long()
        inputs = torch.cat([torch.full((len(labels), 1), bos), batch["inputs"][:, :-1].long()], 1)
        return inputs, labels

    results = {}
    for mode in ("train", "score"):
        times, tokens = [], []
        model.train(mode == "train")
        for i, batch in enumerate(batches):
            inputs, labels = rows(batch)
            start = time.perf_counter()
            if mode == "train":
                loss = model.nll(inputs, labels) / batch.counts["lm"]
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
            else:
                with torch.no_grad():
                    model.nll(inputs, labels)
            if i:
                times.append(time.perf_counter() - start)
                tokens.append(batch.counts["lm"])
        results[f"{mode}_tokens_per_s"] = median_rate(tokens, times)
    results["parameters"] = sum(p.numel() for p in model.parameters())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=EWT_DEV)
    parser.add_argument("--width", type=int, default=400)
    parser.add_argument("--slots", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    trees, source = read_trees(args.data, args.batch_size * (args.steps + 1) * 2)
    vocab = WordVocab.build([words_of(t) for t in trees], min_freq=1)
    lengths = [len(words_of(t)) for t in trees]
    result = {
        "benchmark": "som_bench",
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"{args.threads} threads",
        "data": source,
        "sentences": len(trees),
        "mean_words": float(np.mean(lengths)),
        "vocab_size": len(vocab),
        "settings": vars(args) | {"data": str(args.data)},
        "models": {
            "esom": bench_som("esom", trees, vocab, args),
            "dsom": bench_som("dsom", trees, vocab, args),
            "lstm": bench_lstm(trees, vocab, args),
        },
    }
    lstm = result["models"]["lstm"]
    for name in ("esom", "dsom"):
        entry = result["models"][name]
        entry["train_vs_lstm"] = entry["train_tokens_per_s"] / lstm["train_tokens_per_s"]
        entry["score_vs_lstm"] = entry["score_tokens_per_s"] / lstm["score_tokens_per_s"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
