"""Word-synchronous beam search throughput: the incremental decoder against re-encoding every prefix.

Prints JSON. For the TG and PLM architectures of ``--scale`` (``configs/tg-tiny.yaml``, ``configs/plm-tiny.yaml``
model sections by default; untrained weights: the cost of the search does not depend on them, though the
shape of the beam does), the beam (action 100, word 10, fast track 5) scores dev sentences of the
synthetic treebank:

- ``incremental``: the search as the library runs it, hypotheses held side by side by the model's
  ``Decoder`` (``KEEP``), one ``logits``/``advance`` per round;
- two baselines that re-encode, at every expansion round, every prefix being expanded from
  ``<s>`` (the authors' cost model): ``naive_per_prefix`` restarts a decoder and re-feeds the whole
  prefix for each hypothesis (the authors' unbatched path); ``naive_batched`` re-feeds the
  prefixes of one length together through one fresh decoder (their default path batches padded
  prefixes).

All give the same numbers (checked: ``max_abs_difference``); ``speedup_*`` are ratios of words per
second on the same sentences (target: >= 20). ``batched_words_per_s`` runs more sentences through
the incremental search, ``--batch-size`` at a time in one decoder. The per-prefix baseline is
slow: ``--per-prefix-sentences`` (default 1) sentences only.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch
import yaml

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.inference import beam
from syntaxlm.inference.beam import PAPER_BEAM, HeldPrefixes, beam_search
from syntaxlm.models import build_model
from syntaxlm.models.decoding import KEEP
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


class ReencodedPrefixes:
    """The prefixes as token sequences (``HeldPrefixes``'s interface): every prefix whose logits are
    asked for is re-fed from ``<s>``, every time, those of one length together through a fresh
    decoder."""

    keeps = True

    def __init__(self, make_decoder, n):
        self.make_decoder = make_decoder
        self.sequences: list[tuple[int, ...]] = [()] * n

    def advance(self, parents, tokens):
        self.sequences = [
            self.sequences[parent] if token == KEEP else (*self.sequences[parent], token)
            for parent, token in zip(parents.tolist(), tokens.tolist())
        ]

    def logits(self, rows):
        by_length: dict[int, list[int]] = {}
        for i in rows.tolist():
            by_length.setdefault(len(self.sequences[i]), []).append(i)
        found = {}
        for length, group in by_length.items():
            decoder = self.make_decoder()
            decoder.start(len(group))
            tokens = torch.tensor([self.sequences[i] for i in group], dtype=torch.long).reshape(
                len(group), length
            )
            parents = torch.arange(len(group))
            for t in range(length):
                decoder.advance(parents, tokens[:, t])
            values = decoder.logits()
            for j, i in enumerate(group):
                found[i] = values[j]
        if len(rows) == 0:
            return torch.zeros(0, 0)
        return torch.stack([found[i] for i in rows.tolist()])


class ReencodedOneByOne(ReencodedPrefixes):
    """Every prefix asked for is re-fed alone, through a decoder restarted for it."""

    def logits(self, rows):
        out = []
        for row in rows.tolist():
            decoder = self.make_decoder()
            decoder.start(1)
            for token in self.sequences[row]:
                decoder.advance(torch.zeros(1, dtype=torch.long), torch.tensor([token]))
            out.append(decoder.logits()[0])
        return torch.stack(out) if out else torch.zeros(0, 0)


def model_section(name: str, scale: str) -> dict:
    with open(CONFIGS / f"{name}-{scale}.yaml") as handle:
        return yaml.safe_load(handle)["model"]


def timed_search(model, sentences, *, holder: type = HeldPrefixes, batch_size: int = 1):
    """The library's search with its prefixes held by ``holder``; its scores and seconds."""
    library = beam.HeldPrefixes
    beam.HeldPrefixes = holder
    try:
        start = time.perf_counter()
        scores = beam_search(model, sentences, PAPER_BEAM, batch_size=batch_size)
        seconds = time.perf_counter() - start
    finally:
        beam.HeldPrefixes = library
    return scores, seconds


def max_difference(a, b) -> float:
    return max(
        float(
            np.max(
                np.abs(
                    np.append(x.piece_logprobs, x.end_logprob) - np.append(y.piece_logprobs, y.end_logprob)
                )
            )
        )
        for x, y in zip(a, b)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=16, help="sentences for the batched incremental run")
    parser.add_argument("--naive-sentences", type=int, default=2, help="sentences for the batched baseline")
    parser.add_argument(
        "--per-prefix-sentences", type=int, default=1, help="sentences for the per-prefix baseline"
    )
    parser.add_argument("--words", type=int, nargs=2, default=(8, 12), help="sentence lengths, min max")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--scale", default="tiny", help="the configs/MODEL-SCALE.yaml architecture (tiny, ptb)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_synthetic_treebank(folder / "data", sentences=2000, seed=0)
        vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word", min_freq=2)
        trees = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    low, high = args.words
    sentences = [t.leaves() for t in trees if low <= len(t.leaves()) <= high][: args.sentences]
    both = sentences[: args.naive_sentences]

    report = {
        "benchmark": "beam_bench",
        "scale": args.scale,
        "date": date.today().isoformat(),
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
        },
        "beam": {
            "action_beam": PAPER_BEAM.action_beam,
            "word_beam": PAPER_BEAM.word_beam,
            "fast_track": PAPER_BEAM.fast_track,
        },
        "sentences": {
            "compared": len(both),
            "per_prefix": min(len(both), args.per_prefix_sentences),
            "batched": len(sentences),
            "words": [low, high],
        },
        "models": {},
    }
    for name in ("tg", "plm"):
        torch.manual_seed(0)
        model = build_model(model_section(name, args.scale), {"vocab": vocab}).eval()
        words = sum(len(s) for s in both)
        fast, fast_s = timed_search(model, both)
        slow, slow_s = timed_search(model, both, holder=ReencodedPrefixes)
        entry = {
            "incremental_words_per_s": words / fast_s,
            "naive_batched_words_per_s": words / slow_s,
            "speedup_over_naive_batched": slow_s / fast_s,
            "rounds_per_word": sum(s.details["rounds"] for s in fast) / words,
        }
        difference = max_difference(fast, slow)
        alone = both[: args.per_prefix_sentences]
        if alone:
            alone_words = sum(len(s) for s in alone)
            first, first_s = timed_search(model, alone)
            naive, naive_s = timed_search(model, alone, holder=ReencodedOneByOne)
            difference = max(difference, max_difference(first, naive))
            entry |= {
                "naive_per_prefix_words_per_s": alone_words / naive_s,
                "speedup_over_naive_per_prefix": naive_s / first_s,
            }
        _, batched_s = timed_search(model, sentences, batch_size=args.batch_size)
        entry |= {
            "max_abs_difference": difference,
            "batched_words_per_s": sum(len(s) for s in sentences) / batched_s,
        }
        report["models"][name] = entry
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
