"""PRPN's unsupervised parsing (§6.3) on a treebank: the data its runs train on, and UF1. Prints JSON.

``prepare``: the sentences as the authors' parsing experiments read them — only words whose POS
tag is a word tag (punctuation, ``$``, ``#`` and empty elements dropped), lowercased, digits as
``N`` (``eval.uf1.word_tree``) — written as trees without POS tags (their brackets are not read
by PRPN or the LSTM, only their words) into ``OUT/train.trees`` and ``OUT/dev.trees``, plus
``OUT/gold.trees``, the original trees to score against:

- ``--wsj FOLDER``: the WSJ sample, split by document (the first 90% of the files train, the rest
  validate); the gold trees are all sentences, as unsupervised parsing scores every sentence;
- ``--synthetic FOLDER``: a synthetic treebank folder (``train``/``dev``/``test.trees``); the gold
  trees are its test set.

``evaluate``: a trained model's trees from its syntactic distances on the gold sentences' scored
words, against the gold trees (``eval.uf1.evaluate_uf1``, sentence-level means and corpus F1),
with the LBRANCH/RBRANCH/RANDOM/UPPER baselines on the same sentences (``--max-words 10``: WSJ10).

    python bench/prpn_uf1.py prepare --wsj ../shared/data/constituency/nltk_wsj_sample_noncommercial/combined --out D
    syntaxlm train configs/prpn-tiny.yaml --out R --data-train D/train.trees --data-valid D/dev.trees \
        --set data.pos_tags=false
    python bench/prpn_uf1.py evaluate --model R/best --gold D/gold.trees --max-words 10
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import date
from pathlib import Path

import torch

from syntaxlm.eval.uf1 import evaluate_uf1, word_tree
from syntaxlm.models import load_model
from syntaxlm.trees.clean import Cleaning
from syntaxlm.trees.ptb import read_trees, write_trees

READING = Cleaning(remove_empty_elements=True)  # keeps POS tags and punctuation


def scored_trees(trees):
    """The word trees (scored words only) of the trees that have any scored word."""
    out = []
    for index, tree in enumerate(trees):
        words = word_tree(tree, sentence=index)
        if words is not None:
            out.append(words)
    return out


def prepare(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.wsj:
        files = sorted(Path(args.wsj).rglob("wsj_*.mrg"))
        if not files:
            raise SystemExit(f"no wsj_*.mrg files under {args.wsj}")
        cut = round(len(files) * 0.9)
        train = [tree for path in files[:cut] for tree in read_trees(path, cleaning=READING)]
        dev = [tree for path in files[cut:] for tree in read_trees(path, cleaning=READING)]
        gold = train + dev
    else:
        folder = Path(args.synthetic)
        train, dev, gold = (
            list(read_trees(folder / f"{name}.trees", cleaning=READING)) for name in ("train", "dev", "test")
        )
    counts = {
        "train": write_trees(out / "train.trees", scored_trees(train)),
        "dev": write_trees(out / "dev.trees", scored_trees(dev)),
        "gold": write_trees(out / "gold.trees", gold),
    }
    return {"prepared": str(out), "sentences": counts}


def evaluate(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    gold = list(read_trees(args.gold))
    words = [tree.leaves() if tree is not None else [] for tree in (word_tree(g) for g in gold)]
    keep = [i for i, sentence in enumerate(words) if sentence]
    distances = model.syntactic_distances([words[i] for i in keep], batch_size=64)
    result = evaluate_uf1([gold[i] for i in keep], distances=distances, max_words=args.max_words)
    summary = result.to_json()
    systems = {"PRPN": summary["model"], **summary["baselines"]}
    training = json.loads((Path(args.model).parent / "training.json").read_text())
    return {
        "benchmark": "prpn_uf1",
        "date": date.today().isoformat(),
        "model": str(args.model),
        "gold": str(args.gold),
        "max_words": args.max_words,
        "n_scored": summary["n_scored"],
        "sentence_f1_percent": {name: round(100 * s["mean_sentence_f1"], 1) for name, s in systems.items()},
        "corpus_f1_percent": {
            name: None if s["corpus_f1_percent"] is None else round(s["corpus_f1_percent"], 1)
            for name, s in systems.items()
        },
        "valid_perplexity": _perplexity(training),
    }


def _perplexity(training: dict) -> float | None:
    for key in ("best_valid_loss",):
        value = training.get(key) or training.get("result", {}).get(key)
        if value is not None:
            return round(math.exp(value), 2)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare")
    source = prep.add_mutually_exclusive_group(required=True)
    source.add_argument("--wsj", help="folder of wsj_*.mrg files")
    source.add_argument("--synthetic", help="folder with train/dev/test.trees")
    prep.add_argument("--out", required=True)
    ev = commands.add_parser("evaluate")
    ev.add_argument("--model", required=True, help="a saved PRPN model folder (RUN/best)")
    ev.add_argument("--gold", required=True, help="gold trees with POS tags (prepare's gold.trees)")
    ev.add_argument("--max-words", type=int, default=10)
    ev.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    report = prepare(args) if args.command == "prepare" else evaluate(args)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
