"""Training curves of every model's ``tiny`` recipe on real trees (a benchmark run, not a test).

Trains each ``configs/<model>-tiny.yaml`` on the NLTK 10% WSJ sample of ../shared/data (files
wsj_0001–0159 train, 0160–0179 validation; Choe–Charniak cleaning), for ``--steps`` steps,
validating every ``--eval-every``. Prints JSON (per model: the validation curve, the best
validation loss and the unigram baseline, nats per predicted token) and writes the figure
``--figure`` (default docs/figures/training_curves_wsj.png). Runs go to a temporary folder.

Losses of different models are per *their* predicted tokens (TG and PLM also predict
nonterminals), so compare each model with its own unigram baseline, not with each other.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

from syntaxlm.report.plots import read_loss_curves, save_figure, training_curves_figure
from syntaxlm.train.config import load_config
from syntaxlm.train.trainer import train
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, write_trees

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SYNTAXLM_SHARED_DATA", ROOT / "../shared/data"))
WSJ = SHARED_DATA / "constituency" / "nltk_wsj_sample_noncommercial"
MODELS = ("tg", "txl-trees", "txl-terminals", "lm", "plm", "plm-mask", "sclm-past", "sclm-next")


def split_wsj(out: Path) -> dict[str, Path]:
    """Train and validation tree files from the WSJ sample, split by document."""
    files = sorted(WSJ.rglob("wsj_*.mrg"))
    if not files:
        raise SystemExit(f"no WSJ sample under {WSJ}; set SYNTAXLM_SHARED_DATA")
    splits = {"train": files[:159], "valid": files[159:179]}
    paths = {}
    for split, members in splits.items():
        trees = [tree for path in members for tree in TreeReader(path, cleaning=CHOE_CHARNIAK_CLEANING)]
        paths[split] = out / f"{split}.trees"
        write_trees(paths[split], trees)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--figure", type=Path, default=ROOT / "docs" / "figures" / "training_curves_wsj.png")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="train_curves."))
    paths = split_wsj(folder / "data")
    report = {
        "benchmark": "train_curves",
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads",
        "data": "NLTK WSJ sample: wsj_0001-0159 train, wsj_0160-0179 validation",
        "steps": args.steps,
        "results": {},
    }
    train_curves, curves, baselines = {}, {}, {}
    for name in args.models:
        overrides = [
            "data.synthetic=null",
            "data.pos_tags=false",  # the split files are written in the Choe–Charniak view already
            f"data.train={paths['train']}",
            f"data.valid={paths['valid']}",
            f"train.max_steps={args.steps}",
            f"train.eval_every={args.eval_every}",
            f"train.checkpoint_every={args.steps}",
            "train.patience=null",
        ]
        config = load_config(ROOT / "configs" / f"{name}-tiny.yaml", overrides)
        start = time.perf_counter()
        result = train(config, folder / name, progress=False)
        train_curves[name], (steps, losses) = read_loss_curves(folder / name / "log.csv")
        curves[name] = (steps, losses)
        baselines[f"{name} unigram"] = result.baseline_valid_loss
        report["results"][name] = {
            "parameters": sum(p.numel() for p in result.model.parameters()),
            "best_valid_loss": round(result.best_valid_loss, 4),
            "best_step": result.best_step,
            "unigram_valid_loss": round(result.baseline_valid_loss, 4),
            "best_over_unigram": round(result.best_valid_loss / result.baseline_valid_loss, 3),
            "minutes": round((time.perf_counter() - start) / 60, 2),
            "curve": {"step": steps, "valid_loss": [round(x, 4) for x in losses]},
        }
        print(json.dumps({name: report["results"][name]}), flush=True)
    figure = training_curves_figure(
        train=train_curves, valid=curves, baselines=baselines, title="tiny recipes on the WSJ sample"
    )
    save_figure(figure, args.figure)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
