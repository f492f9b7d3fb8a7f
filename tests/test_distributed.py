"""Data parallelism: CPU processes under ``torchrun`` (gloo) end with the parameters and losses of one
process that trains on the same global batches."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from syntaxlm.data.treebank import read_treebank
from syntaxlm.train import train
from tests import test_trainer
from tests.test_trainer import tiny_config

tiny, treebank = test_trainer.tiny, test_trainer.treebank  # the fixtures, shared

PROJECT_ROOT = Path(__file__).resolve().parents[1]

WORKER = textwrap.dedent(
    """
    import os, sys
    from safetensors.torch import save_file
    from syntaxlm.models import MODEL_CLASSES
    from syntaxlm.train import load_config, train
    from tests.test_trainer import TINY

    MODEL_CLASSES["tiny"] = TINY
    result = train(load_config(sys.argv[1]), sys.argv[2], progress=False)
    state = {name: value.contiguous() for name, value in result.model.state_dict().items()}
    save_file(state, os.path.join(sys.argv[2], f"rank{os.environ['RANK']}.safetensors"))
    os._exit(0)  # as `syntaxlm train` under torchrun: gloo's threads may abort the interpreter's teardown
    """
)


def _losses(run: Path, column: str) -> list[float]:
    with open(run / "log.csv", newline="") as handle:
        return [float(row[column]) for row in csv.DictReader(handle) if row[column]]


@pytest.mark.parametrize(
    "processes, model, settings",
    [
        # 240 training and 30 validation rows in batches of 7: the ranks get 3, 2 and 2 rows, and the
        # third none of the batch of 2 rows, which seed 16 puts second
        (3, {"aux_weight": 0.3}, {"batch_size": 7, "grad_accum": 2, "seed": 16, "eval_every": 3}),
        (2, {"streams": True}, {"batch_size": 6, "grad_accum": 2}),  # lanes 0, 2, 4 and 1, 3, 5
    ],
    ids=["shuffled", "streams"],
)
def test_several_processes_match_one_process_with_the_same_global_batch(
    treebank, tiny, tmp_path, processes, model, settings
):
    settings = {"max_steps": 8, "eval_every": 4, "log_every": 1, "checkpoint_every": 4, **settings}
    config = tiny_config(treebank, model, **settings)
    single = train(config, tmp_path / "single", progress=False)
    if not model.get("streams"):  # a process gets no row of some batch, in training and validation
        corpus = single.model.prepare(read_treebank(treebank["train"]))
        sizes = [b.size for b in corpus.batches(7, seed=16, epoch=0)][: settings["max_steps"] * 2]
        assert min(sizes) < processes
        assert len(single.model.prepare(read_treebank(treebank["valid"]))) % 7 < processes

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(config.to_dict()))
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    run = tmp_path / "ddp"
    environment = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), OMP_NUM_THREADS="1")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={processes}",
        str(worker),
        str(recipe),
        str(run),
    ]
    done = subprocess.run(
        command, check=False, cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]

    ranks = [load_file(str(run / f"rank{rank}.safetensors")) for rank in range(processes)]
    for name, value in single.model.state_dict().items():
        # DDP keeps the replicas bit for bit: every rank applies the same all-reduced gradients with
        # the same elementwise AdamW step, one thread each.
        for other in ranks[1:]:
            assert torch.equal(ranks[0][name], other[name]), f"{name} differs between the ranks"
        # Against one process only up to float order, per tensor: the ranks multiply fewer rows than
        # one process (other matmul kernels), gloo sums in another order, and AdamW's division by
        # sqrt(v) magnifies that in near-cancelling gradients of single elements (up to 1.5e-5 seen
        # on an AVX-512 machine); the tensor as a whole moves by ~1e-7 of its norm.
        difference = torch.linalg.vector_norm(ranks[0][name].float() - value.float())
        scale = torch.linalg.vector_norm(value.float()).clamp_min(1e-12)
        assert float(difference / scale) < 1e-5, (
            f"{name}: relative difference {float(difference / scale):.2e}"
        )
    for column in ("train_loss", "valid_loss"):
        assert _losses(run, column) == pytest.approx(_losses(tmp_path / "single", column), rel=1e-5)
    saved = load_file(str(run / "last" / "model.safetensors"))  # written by the first process only
    torch.testing.assert_close(saved, dict(ranks[0]))
