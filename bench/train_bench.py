"""Training throughput of every model, TG's cost over TXL (trees), and TXL's share of matmul peak.

Prints JSON. Measured on this machine, each number the median over ``--steps`` timed steps after
``--warmup`` untimed ones; a step is forward + backward + AdamW update of the model's
``configs/<model>-<scale>.yaml`` architecture on batches of the synthetic treebank:

- ``tokens_per_s``: predicted tokens per second, fp32 and bf16 autocast, per model and scale;
- ``tg_over_txl_trees``: TG step time / TXL (trees) step time on *identical batches* — the same
  TG segments fed to both, TXL reading them causally with linear positions (no COMPOSE, nothing
  popped), so the difference is the cost of TG's mask and depth positions alone
  (target: <= 1.05 on CPU; <= 0.8 on a GPU with the block-sparse kernel);
- ``matmul_peak_gflops``: fp32 ``[n, n] @ [n, n]`` throughput, and ``txl_fraction_of_peak``: the
  model FLOPs of TXL (trees) training (6 per parameter per token plus attention, Kaplan et al.
  2020) over that peak (target: >= 0.4).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch
import yaml

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.models import build_model, model_class, model_config
from syntaxlm.structure.tg import NEVER
from syntaxlm.text.build import build_vocabulary
from syntaxlm.train.config import TrainConfig
from syntaxlm.train.trainer import make_optimizer
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
MODELS = ("tg", "txl-trees", "txl-terminals", "lm", "plm", "plm-mask", "sclm-past", "sclm-next")


def model_section(name: str, scale: str) -> dict:
    with open(CONFIGS / f"{name}-{scale}.yaml") as handle:
        return yaml.safe_load(handle)["model"]


def matmul_peak_gflops(device: str, n: int = 2048, repeats: int = 10) -> float:
    """fp32 ``[n, n] @ [n, n]`` throughput on ``device`` (the peak the model FLOPs are put against)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    rates = []
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        rates.append(2 * n**3 / (time.perf_counter() - start) / 1e9)
    return statistics.median(rates)


def step_times(model, batches, *, steps: int, warmup: int, precision: str) -> list[float]:
    model.train()
    optimiser = make_optimizer(model, TrainConfig(lr=1e-4))  # the trainer's (fused) AdamW
    autocast = (
        torch.autocast(model.device.type, dtype=torch.bfloat16)
        if precision == "bf16"
        else contextlib.nullcontext()
    )
    times = []
    for i in range(warmup + steps):
        batch = batches[i % len(batches)]
        start = time.perf_counter()
        with autocast:
            out = model.loss(batch)
        loss = out.sums["lm"] / max(out.counts["lm"], 1)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if model.device.type == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def causal_view(batch):
    """The same segment tensors read as TXL reads them: no COMPOSE, nothing popped."""
    tensors = dict(batch.tensors)
    tensors["compose"] = torch.zeros_like(tensors["compose"])
    tensors["popped_at"] = torch.full_like(tensors["popped_at"], NEVER)
    return type(batch)(tensors, batch.counts, batch.rows)


def training_flops_per_token(model, context: float) -> float:
    """6 N (matmuls forward and backward) + 6 · layers · d · context (attention scores and values)."""
    config = model.config
    n = sum(p.numel() for name, p in model.named_parameters() if "embedding" not in name)
    return 6 * n + 6 * config.n_layers * config.d_model * context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", nargs="+", default=["tiny", "ptb"])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.manual_seed(0)

    folder = Path(tempfile.mkdtemp(prefix="train_bench."))
    write_synthetic_treebank(folder / "data", sentences=args.sentences, seed=0)
    train = folder / "data" / "train.trees"
    trees = list(TreeReader(train, cleaning=CHOE_CHARNIAK_CLEANING))
    vocab = build_vocabulary(train, folder / "vocab", kind="word", min_freq=1)
    peak = matmul_peak_gflops(args.device)
    report = {
        "benchmark": "train",
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, {args.device}",
        "torch": torch.__version__,
        "batch": args.batch,
        "steps": args.steps,
        "matmul_peak_gflops": round(peak, 1),
        "results": {},
    }
    for scale in args.scales:
        results = report["results"].setdefault(scale, {})
        for name in args.models:
            section = model_section(name, scale)
            config = model_config(section)
            vocabularies = model_class(config.model).vocabularies_for(config, trees, vocab)
            model = build_model(config, vocabularies).to(args.device)
            corpus = model.prepare(trees)
            batches = [b.to(args.device) for _, b in zip(range(8), corpus.batches(args.batch, seed=0))]
            tokens = statistics.median(b.counts["lm"] for b in batches)
            entry = {"parameters": sum(p.numel() for p in model.parameters())}
            for precision in ("fp32", "bf16"):
                times = step_times(model, batches, steps=args.steps, warmup=args.warmup, precision=precision)
                entry[f"step_ms_{precision}"] = round(1000 * statistics.median(times), 1)
                entry[f"tokens_per_s_{precision}"] = round(tokens / statistics.median(times), 1)
            results[name] = entry
            print(json.dumps({scale: {name: entry}}), flush=True)

        # TG over TXL (trees) on identical batches; TXL's model FLOPs against the matmul peak.
        tg = build_model(model_section("tg", scale), {"vocab": vocab}).to(args.device)
        txl = build_model(model_section("txl-trees", scale), {"vocab": vocab}).to(args.device)
        txl.load_state_dict(tg.state_dict())
        tg_batches = [
            b.to(args.device) for _, b in zip(range(8), tg.prepare(trees).batches(args.batch, seed=0))
        ]
        txl_batches = [causal_view(b) for b in tg_batches]
        tg_times, txl_times = [], []
        for _ in range(3):  # interleaved, so that drifts of the shared machine hit both alike
            tg_times += step_times(tg, tg_batches, steps=args.steps, warmup=1, precision="fp32")
            txl_times += step_times(txl, txl_batches, steps=args.steps, warmup=1, precision="fp32")
        tg_time, txl_time = statistics.median(tg_times), statistics.median(txl_times)
        width = np.median([b["inputs"].shape[1] for b in tg_batches])
        positions = np.median([int((b["position"] >= 0).sum()) for b in tg_batches])
        flops = training_flops_per_token(txl, context=width / 2) * positions
        results["tg_step_ms"] = round(1000 * tg_time, 1)
        results["txl_trees_step_ms"] = round(1000 * txl_time, 1)
        results["tg_over_txl_trees"] = round(tg_time / txl_time, 3)
        results["txl_trees_gflops"] = round(flops / txl_time / 1e9, 1)
        results["txl_fraction_of_peak"] = round(flops / txl_time / 1e9 / peak, 3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
