"""Speed of the span CRF parser and of importance sampling with it, on the CPU (or a GPU).

Prints JSON. Sentences: the WSJ sample's test split (``--data``: a treebank file; default the
shared WSJ sample, the first ``--sentences`` trees read in the models' view), else synthetic trees.
Models have random weights (speed does not depend on them) at the recipes' sizes:

- ``train_words_per_s``: training words per second of a full step (loss, backward, Adam) of the
  ``parser-ptb`` recipe's model, batches of 32 sentences, median over ``--repeats`` passes;
- ``viterbi_sentences_per_s``, ``kbest10_sentences_per_s``, ``samples300_sentences_per_s``: the
  parser's best tree, 10 best trees, and 300 exact samples per sentence;
- ``importance300_seconds_per_sentence``: the whole ``Scorer(method="proposals", parser=...)``
  for a ``tg-ptb``-size TG (16 layers, d 256): 300 samples, then ``log p(x, y)`` of every unique
  sample through the model's incremental decoder (``--tg-sentences`` sentences; 0: not measured).

    python bench/parser_bench.py --threads 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import torch
import yaml

from syntaxlm.data.treebank import read_treebank
from syntaxlm.inference import Scorer
from syntaxlm.models import build_model, model_class, model_config
from syntaxlm.text.build import build_vocabulary
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, write_trees

ROOT = Path(__file__).resolve().parents[1]
WSJ = ROOT.parent / "shared" / "data" / "constituency" / "nltk_wsj_sample_noncommercial" / "combined"


def recipe_model(name: str) -> dict:
    return yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())["model"]


def read_trees(path: Path | None, count: int) -> list:
    if path is None and WSJ.exists():
        files = sorted(WSJ.glob("*.mrg"))
        trees = (tree for f in files for tree in TreeReader(f, cleaning=CHOE_CHARNIAK_CLEANING))
        return list(itertools.islice(trees, count))
    if path is not None:
        return read_treebank(path)[:count]
    from syntaxlm.data.synthetic import SyntheticTreebank

    return list(SyntheticTreebank(seed=0).trees(count))


def timed(action, repeats: int) -> float:
    """The median wall time of ``action()`` over ``repeats`` runs (after one warm-up)."""
    action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def importance_speed(parser, trees: list, count: int, device: str) -> dict:
    """Seconds per sentence of the 300-sample estimate for a ``tg-ptb``-size TG (random weights),
    on ``count`` sentences from the longer half, each scored on its own (one warm-up run first)."""
    config = model_config(recipe_model("tg-ptb"))
    chosen = sorted(trees, key=lambda tree: len(tree.leaves()))[len(trees) // 2 :][:count]
    folder = Path(tempfile.mkdtemp(prefix="parser-bench-"))
    write_trees(folder / "train.trees", trees)
    vocab = build_vocabulary(
        folder / "train.trees", folder / "vocab", kind="word", min_freq=1, pos_tags=False
    )
    tg = build_model(config, model_class("tg").vocabularies_for(config, trees, vocab)).to(device).eval()
    scorer = Scorer(tg, method="proposals", parser=parser, samples=300, batch_size=1)
    words = [tree.leaves() for tree in chosen]
    seconds = timed(lambda: scorer.score(words), 1)
    return {
        "importance300_seconds_per_sentence": round(seconds / len(words), 2),
        "importance300_sentence_words": [len(w) for w in words],
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--data", type=Path, default=None)
    options.add_argument("--sentences", type=int, default=256)
    options.add_argument("--tg-sentences", type=int, default=3)
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--threads", type=int, default=torch.get_num_threads())
    options.add_argument("--device", default="cpu")
    args = options.parse_args()
    torch.set_num_threads(args.threads)
    trees = [tree for tree in read_trees(args.data, args.sentences) if tree.leaves()]
    words = [tree.leaves() for tree in trees]
    vocab = WordVocab.build(words, min_freq=1)
    config = model_config(recipe_model("parser-ptb"))
    torch.manual_seed(0)
    parser = build_model(config, model_class("parser").vocabularies_for(config, trees, vocab)).to(args.device)
    data = parser.prepare(trees)
    optimizer = torch.optim.Adam(parser.parameters(), lr=1e-4)
    batches = list(data.batches(32, shuffle=False))
    n_words = sum(batch.counts["tree"] for batch in batches)

    def train_pass() -> None:
        for batch in batches:
            out = parser.loss(batch)
            optimizer.zero_grad()
            (out.sums["tree"] / out.counts["tree"]).backward()
            optimizer.step()

    result = {"train_words_per_s": round(n_words / timed(train_pass, args.repeats), 1)}
    parser.eval()
    for name, action in (
        ("viterbi", lambda: parser.parse(words)),
        ("kbest10", lambda: parser.parse(words, k=10)),
        ("samples300", lambda: parser.sample(words, 300)),
    ):
        result[f"{name}_sentences_per_s"] = round(len(words) / timed(action, args.repeats), 2)

    if args.tg_sentences > 0:
        result |= importance_speed(parser, trees, args.tg_sentences, args.device)
    machine = {
        "cpu": platform.processor() or platform.machine(),
        "threads": args.threads,
        "device": args.device,
        "torch": torch.__version__,
    }
    summary = {
        "sentences": len(words),
        "words": n_words,
        "parser_parameters": sum(p.numel() for p in parser.parameters()),
    }
    print(
        json.dumps(
            {"date": str(date.today()), "machine": machine, "data": summary, "results": result}, indent=2
        )
    )


if __name__ == "__main__":
    main()
