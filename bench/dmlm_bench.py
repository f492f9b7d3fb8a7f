"""DMLM reproduction on UD English EWT at a reduced budget: LSTM vs DM-LSTM and Transformer vs
DM-Transformer trained with equal steps, batches, vocabulary and architecture; test perplexity and
the generation metrics of DMLM §3.1 (BLEU-1/2, Distinct-2/3, Self-BLEU-2/3) of continuations.

Prints JSON (and writes OUT/<model>.json). For each model of ``--models``, in turn:

- training with ``syntaxlm.train.train``: the architecture and optimiser are the same for a base
  model and its DM- version (``--d-model``, ``--layers``, ``--steps``, ...); the DM models run
  both stages of Appendix A inside the one run (``dependency_batches``: half of the steps for the
  Transformer, 30 + 30 epochs in the paper; a fifth for the LSTM, 100 + 400 epochs). Base models
  read EWT's words as flat trees ``(S w_1 .. w_n)``, the DM models EWT's own dependency trees;
  all four share one vocabulary built from the training words. ``(`` and ``)`` (also inside words,
  ``:)``) are spelled ``-LRB-``/``-RRB-`` in both, as the PTB reader needs. The LSTMs read sentence rows from zero
  state (DM-LSTM's rows), with no truncation;
- test perplexity of the best checkpoint (validation loss), per word with the end symbol;
- generation: for the first ``--prompts`` test sentences of at least 10 words, the first
  ``--prompt-words`` words as the prompt and a nucleus sample (``--top-p``, 0.5 in §3.1) of the
  rest, scored against the sentence's true continuation.

    python bench/dmlm_bench.py --out runs/dmlm-ewt --models lstm dm-lstm lm dm-transformer
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from datetime import date
from pathlib import Path

import torch

from syntaxlm.eval.generation import evaluate_generation
from syntaxlm.inference import generate
from syntaxlm.models import load_model
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train import load_config, train
from syntaxlm.trees.dependency import ConlluReader, DepTree, write_conllu

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "ud_english" / "ewt"
RECIPES = {
    "lm": "lm-ptb",
    "dm-transformer": "dm-transformer-ewt",
    "lstm": "lstm-ptb",
    "dm-lstm": "dm-lstm-ewt",
}
BRACKETS = {"(": "-LRB-", ")": "-RRB-"}


def escaped(tree: DepTree) -> DepTree:
    words = tuple(word.replace("(", BRACKETS["("]).replace(")", BRACKETS[")"]) for word in tree.words)
    return DepTree(words=words, heads=tree.heads, relations=tree.relations)


def write_splits(data: Path, folder: Path) -> dict[str, dict[str, Path]]:
    """EWT as CoNLL-U (DM models) and as flat trees (base models), brackets escaped."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Path]] = {"conllu": {}, "trees": {}}
    for split in ("train", "dev", "test"):
        trees = [escaped(tree) for tree in ConlluReader(data / f"en_ewt-ud-{split}.conllu")]
        files["conllu"][split] = folder / f"{split}.conllu"
        write_conllu(files["conllu"][split], trees)
        files["trees"][split] = folder / f"{split}.trees"
        files["trees"][split].write_text("".join(f"(S {' '.join(t.words)})\n" for t in trees))
    return files


def overrides(name: str, args, files, vocab: Path) -> list[str]:
    kind = "conllu" if name.startswith("dm-") else "trees"
    common = [
        f"data.train={files[kind]['train']}",
        f"data.valid={files[kind]['dev']}",
        "data.test=null",
        "data.vocab=null",
        f"data.vocab_path={vocab}",
        "data.pos_tags=false",
        f"model.d_model={args.d_model}",
        f"model.n_layers={args.layers}",
        f"model.dropout={args.dropout}",
        f"train.max_steps={args.steps}",
        "train.epochs=null",
        f"train.batch_size={args.batch_size}",
        f"train.eval_every={args.steps // 2}",
        f"train.checkpoint_every={args.steps}",
        "train.patience=null",
        "train.log_every=50",
        "train.schedule=cosine",
        "train.min_lr_ratio=0.1",
        f"train.warmup_steps={args.steps // 20}",
        "train.clip_norm=1.0",
        "train.weight_decay=0.01",
    ]
    transformer = [
        f"model.n_heads={args.heads}",
        f"model.d_ff={4 * args.d_model}",
        "train.lr=1e-3",
        "train.betas=[0.9, 0.98]",
    ]
    lstm = ["model.n_heads=1", "train.lr=3e-3", "train.betas=[0.0, 0.999]"]
    if name == "lm":
        return common + transformer + ["model.attention_dropout=0.1", "model.max_length=256"]
    if name == "dm-transformer":
        return (
            common
            + transformer
            + [
                "model.stage=mixture",
                f"model.dependency_batches={args.steps // 2}",
                "model.base_options.attention_dropout=0.1",
                "model.base_options.max_length=256",
                "model.base_options.pre_ln=true",
            ]
        )
    rnn = {"hidden_size": args.hidden, "layer_dropout": 0.25, "recurrent_dropout": 0.25}
    if name == "lstm":
        return common + lstm + [f"model.{k}={v}" for k, v in rnn.items()] + ["model.order=sentences"]
    return (
        common
        + lstm
        + [f"model.base_options.{k}={v}" for k, v in rnn.items()]
        + [
            "model.stage=mixture",
            f"model.dependency_batches={args.steps // 5}",
            f"model.context_length={args.context_length}",
        ]
    )


def test_perplexity(model, sentences: list[list[str]]) -> dict[str, float]:
    scores = model.word_logprobs(sentences, eos=True, batch_size=32)
    total = -sum(float(s.sum()) for s in scores)
    tokens = sum(len(s) for s in scores)
    return {"perplexity": math.exp(total / tokens), "nats_per_token": total / tokens, "tokens": tokens}


def generation(model, sentences: list[list[str]], args) -> dict:
    chosen = [s for s in sentences if len(s) >= 10][: args.prompts]
    prompts = [s[: args.prompt_words] for s in chosen]
    samples = generate(model, 1, prompts=prompts, top_p=args.top_p, seed=0, max_length=60)
    generated = [" ".join(sample.words[args.prompt_words :]) for sample in samples]
    references = [" ".join(s[args.prompt_words :]) for s in chosen]
    result = evaluate_generation(generated, references)
    return {
        **result.to_json(),
        "top_p": args.top_p,
        "prompt_words": args.prompt_words,
        "examples": generated[:5],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("runs/dmlm-ewt"))
    parser.add_argument("--models", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--context-length", type=int, default=36)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--prompt-words", type=int, default=4)
    parser.add_argument("--top-p", type=float, default=0.5)
    args = parser.parse_args()

    files = write_splits(args.data, args.out / "data")
    vocab = args.out / "vocab"
    if not (vocab / "vocab.json").is_file():
        build_vocabulary(files["conllu"]["train"], vocab, kind="word", min_freq=2)
    test = [list(tree.words) for tree in ConlluReader(files["conllu"]["test"])]
    results = {}
    for name in args.models:
        config = load_config(ROOT / "configs" / f"{RECIPES[name]}.yaml", overrides(name, args, files, vocab))
        run = args.out / name
        start = time.perf_counter()
        trained = train(config, run, progress=False)
        seconds = time.perf_counter() - start
        model = load_model(run / "best")
        results[name] = {
            "steps": trained.steps,
            "train_seconds": round(seconds, 1),
            "parameters": sum(p.numel() for p in model.parameters()),
            "best_valid_loss": trained.best_valid_loss,
            "test": test_perplexity(model, test),
            "generation": generation(model, test, args),
            "config": config.to_dict(),
        }
        (args.out / f"{name}.json").write_text(json.dumps(results[name], indent=2) + "\n")
    machine = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads()}
    print(json.dumps({"date": str(date.today()), "machine": machine, "results": results}, indent=2))


if __name__ == "__main__":
    main()
