"""The training loop on tiny test-only models: schedules, loss normalisation, accumulation, NaN stop,
validation and early stopping, the run folder, the unigram baseline and the ``train`` command.

``TinyLM`` (here, so that subprocess tests can import it as ``tests.test_trainer:TinyLM``) is an
embedding + linear next-word model; ``streams: true`` makes it read segments in stream order and
carry a state from one batch to the next, like Transformer-XL memory.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from typer.testing import CliRunner

from syntaxlm.data.batching import Batch, RowCorpus, pad_rows, unigram_loss
from syntaxlm.data.treebank import read_treebank
from syntaxlm.models import MODEL_CLASSES
from syntaxlm.models.base import ConfigError, LossOutput, ModelConfig, SyntacticLM
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.train import (
    RunConfig,
    TrainConfig,
    TrainingError,
    accumulate_gradients,
    evaluate,
    lr_factor,
    planned_steps,
    run_config,
    train,
)
from syntaxlm.train.trainer import step_objective

TINY = "tests.test_trainer:TinyLM"


# --- a tiny model -------------------------------------------------------------------------------------


@dataclass
class TinyConfig(ModelConfig):
    model: str = "tiny"
    d_model: int = 16
    n_layers: int = 1
    n_heads: int = 1
    d_ff: int = 16
    dropout: float = 0.0
    streams: bool = False
    segment: int = 5
    aux_weight: float = 0.0
    nan_after: int = 0  # > 0: the training loss becomes NaN after this many batches (tests the NaN stop)


class TinyLM(SyntacticLM):
    """Embedding → dropout → tanh(linear) (+ the carried state) → softmax; an optional 2nd part."""

    config_class = TinyConfig
    joint = False  # a words-only model registered without a card (``models.MODEL_CARDS``)

    def __init__(self, config: TinyConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        size, d = len(self.vocab), config.d_model
        self.embedding = nn.Embedding(size, d)
        self.dropout = nn.Dropout(config.dropout)
        self.mix = nn.Linear(d, d)
        self.output = nn.Linear(d, size)
        self.aux = nn.Linear(d, size) if config.aux_weight else None
        self.calls = 0

    @property
    def loss_weights(self) -> dict[str, float]:
        if self.config.aux_weight:
            return {"lm": 1 - self.config.aux_weight, "aux": self.config.aux_weight}
        return {"lm": 1.0}

    def prepare(self, trees) -> RowCorpus:
        sequences = [[BOS_ID, *self.vocab.encode(tree.leaves()), EOS_ID] for tree in trees]
        targets = {"lm": "labels", "aux": "inputs"} if self.config.aux_weight else {"lm": "labels"}
        if not self.config.streams:
            inputs = [np.array(s[:-1]) for s in sequences]
            labels = [np.array(s[1:]) for s in sequences]
            fields = {"inputs": pad_rows(inputs), "labels": pad_rows(labels)}
            return RowCorpus(fields, [len(row) for row in inputs], target_fields=targets)
        inputs, labels, owner = [], [], []
        for index, s in enumerate(sequences):
            for start in range(0, len(s) - 1, self.config.segment):
                inputs.append(np.array(s[start : start + self.config.segment]))
                labels.append(np.array(s[start + 1 : start + 1 + self.config.segment]))
                owner.append(index)
        width = self.config.segment
        fields = {"inputs": pad_rows(inputs, width=width), "labels": pad_rows(labels, width=width)}
        return RowCorpus(
            fields,
            [len(row) for row in inputs],
            target_fields=targets,
            order="streams",
            sequence=np.array(owner),
        )

    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        self.calls += self.training
        inputs, labels = batch["inputs"].long(), batch["labels"].long()
        if not len(inputs):  # as the real models: a batch has rows
            raise ValueError("an empty batch")
        hidden = torch.tanh(self.mix(self.dropout(self.embedding(inputs))))
        if state is not None:
            hidden = hidden + 0.5 * state[:, None, :]
        sums = {
            "lm": F.cross_entropy(
                self.output(hidden).flatten(0, 1), labels.flatten(), reduction="sum", ignore_index=PAD_ID
            )
        }
        if self.aux is not None:
            sums["aux"] = F.cross_entropy(
                self.aux(hidden).flatten(0, 1), inputs.flatten(), reduction="sum", ignore_index=PAD_ID
            )
        if self.config.nan_after and self.calls > self.config.nan_after:
            sums["lm"] = sums["lm"] * float("nan")
        new_state = hidden[:, -1, :] if self.config.streams else None
        return LossOutput(sums, dict(batch.counts), new_state)

    def scoring_items(self, sentences, trees):
        raise NotImplementedError("the trainer tests do not score")

    def target_logprobs(self, items):
        raise NotImplementedError("the trainer tests do not score")

    def action_grammar(self):
        raise NotImplementedError("the trainer tests do not decode")

    def decoder(self):
        raise NotImplementedError("the trainer tests do not decode")


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture
def tiny(monkeypatch):
    """Register the tiny model under the name ``tiny``."""
    monkeypatch.setitem(MODEL_CLASSES, "tiny", TINY)


@pytest.fixture(scope="session")
def treebank(tmp_path_factory) -> dict[str, Path]:
    """A small synthetic treebank and its word vocabulary, made once for every test."""
    from syntaxlm.data.synthetic import write_synthetic_treebank
    from syntaxlm.text.build import build_vocabulary

    folder = tmp_path_factory.mktemp("treebank")
    write_synthetic_treebank(folder, sentences=300, seed=0)
    build_vocabulary(folder / "train.trees", folder / "vocab", kind="word", min_freq=2)
    return {"train": folder / "train.trees", "valid": folder / "dev.trees", "vocab": folder / "vocab"}


def tiny_config(treebank: dict[str, Path], model: dict | None = None, **train: Any) -> RunConfig:
    """A run config of the tiny model on ``treebank``; ``train`` entries override the defaults here."""
    settings = {
        "seed": 0,
        "batch_size": 8,
        "lr": 1e-2,
        "warmup_steps": 2,
        "max_steps": 12,
        "eval_every": 6,
        "log_every": 3,
        "checkpoint_every": 6,
        "device": "cpu",
    }
    settings.update(train)
    values = {
        "model": {"model": "tiny", **(model or {})},
        "data": {
            "train": str(treebank["train"]),
            "valid": str(treebank["valid"]),
            "vocab_path": str(treebank["vocab"]),
        },
        "train": settings,
    }
    return run_config(values, where="test")


def parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def read_log(run: Path) -> list[dict[str, str]]:
    with open(run / "log.csv", newline="") as handle:
        return list(csv.DictReader(handle))


# --- schedules ----------------------------------------------------------------------------------------


def test_cosine_schedule_warms_up_linearly_then_decays_to_the_floor():
    config = TrainConfig(warmup_steps=10, max_steps=111, schedule="cosine", min_lr_ratio=0.1)
    factors = [lr_factor(step, config) for step in range(120)]
    assert factors[0] == pytest.approx(0.1) and factors[4] == pytest.approx(0.5)
    assert factors[9] == pytest.approx(1.0) and factors[10] == pytest.approx(1.0)
    assert all(a <= b for a, b in itertools.pairwise(factors[:10]))  # rising
    assert all(a >= b for a, b in itertools.pairwise(factors[10:111]))  # falling
    assert factors[60] == pytest.approx(0.1 + 0.9 * 0.5)  # half way: the mean of peak and floor
    assert factors[110] == pytest.approx(0.1) and factors[119] == pytest.approx(0.1)  # the last step: floor


def test_planned_steps_is_the_shorter_of_max_steps_and_epochs():
    assert planned_steps(TrainConfig(max_steps=500), batches_per_epoch=7) == 500
    assert planned_steps(TrainConfig(max_steps=500, epochs=3), batches_per_epoch=7) == 21
    assert planned_steps(TrainConfig(max_steps=500, epochs=3, grad_accum=2), batches_per_epoch=7) == 11
    assert planned_steps(TrainConfig(max_steps=15, epochs=3), batches_per_epoch=7) == 15


def test_inverse_sqrt_and_constant_schedules():
    config = TrainConfig(warmup_steps=4, max_steps=100, schedule="inverse-sqrt")
    assert lr_factor(3, config) == pytest.approx(1.0)
    assert lr_factor(15, config) == pytest.approx(math.sqrt(4 / 16))
    assert lr_factor(99, config) == pytest.approx(math.sqrt(4 / 100))
    floored = TrainConfig(warmup_steps=4, schedule="inverse-sqrt", min_lr_ratio=0.3)
    assert lr_factor(99, floored) == pytest.approx(0.3)
    constant = TrainConfig(warmup_steps=0, schedule="constant")
    assert [lr_factor(step, constant) for step in (0, 5, 10**6)] == [1.0, 1.0, 1.0]
    no_warmup = TrainConfig(warmup_steps=0, max_steps=10, schedule="cosine")
    assert lr_factor(0, no_warmup) == pytest.approx(1.0) and lr_factor(9, no_warmup) == pytest.approx(0.0)


# --- the loss of a step -------------------------------------------------------------------------------


def _model_and_corpus(treebank, tiny_settings=None):
    from syntaxlm.text.base import load_vocabulary

    torch.manual_seed(0)
    model = TinyLM(TinyConfig(**(tiny_settings or {})), {"vocab": load_vocabulary(treebank["vocab"])})
    return model, model.prepare(read_treebank(treebank["train"]))


def _grads(model):
    return {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("settings", [{}, {"aux_weight": 0.3}])
def test_accumulated_micro_batches_give_the_gradient_of_one_big_batch(treebank, settings):
    model, corpus = _model_and_corpus(treebank, settings)
    big = next(corpus.batches(8, shuffle=False))
    small = list(corpus.batches(2, shuffle=False))[:4]  # the same 8 rows in 4 micro-batches
    assert np.array_equal(np.concatenate([b.rows for b in small]), big.rows)

    one = accumulate_gradients(model, [big], weights=model.loss_weights)
    big_grads = _grads(model)
    model.zero_grad()
    four = accumulate_gradients(model, small, weights=model.loss_weights)
    for name, grad in _grads(model).items():
        torch.testing.assert_close(grad, big_grads[name], rtol=1e-5, atol=1e-6, msg=name)
    assert four.counts == one.counts == big.counts
    for part in one.sums:
        assert four.sums[part] == pytest.approx(one.sums[part], rel=1e-5)

    # the gradient is that of Σ_p w_p · mean NLL of part p over the big batch
    model.zero_grad()
    output = model.loss(big)
    expected = sum(w * output.sums[p] / big.counts[p] for p, w in model.loss_weights.items())
    expected.backward()
    for name, grad in _grads(model).items():
        torch.testing.assert_close(grad, big_grads[name], rtol=1e-5, atol=1e-6, msg=name)


def test_parts_without_targets_are_left_out_of_the_objective():
    output = LossOutput({"lm": torch.tensor(6.0, requires_grad=True), "aux": torch.tensor(3.0)}, {})
    value = step_objective(output, {"lm": 0.5, "aux": 0.5}, {"lm": 3, "aux": 0})
    assert value.item() == pytest.approx(1.0)
    empty = step_objective(output, {"lm": 1.0}, {"lm": 0})
    assert empty.item() == 0.0 and empty.requires_grad


def test_evaluate_is_the_token_mean_of_the_lm_part_and_leaves_train_mode(treebank):
    model, corpus = _model_and_corpus(treebank, {"dropout": 0.5})
    model.train()
    result = evaluate(model, corpus, batch_size=16)
    assert model.training
    model.eval()
    with torch.no_grad():
        total = sum(float(model.loss(b).sums["lm"]) for b in corpus.batches(7, shuffle=False))
    assert result["tokens"] == corpus.n_targets["lm"]
    assert result["loss"] == pytest.approx(total / corpus.n_targets["lm"], rel=1e-6)
    assert result["perplexity"] == pytest.approx(math.exp(result["loss"]))


def test_unigram_baseline_is_add_one_smoothed_train_frequencies():
    train = RowCorpus({"y": np.array([[5, 5, 6, 0]])}, [4], target_fields={"lm": "y"})
    valid = RowCorpus({"y": np.array([[5, 7, 0, 0]])}, [2], target_fields={"lm": "y"})
    # 3 train targets, vocabulary 10: p(5) = 3/13, p(7) = 1/13
    expected = -(math.log(3 / 13) + math.log(1 / 13)) / 2
    assert unigram_loss(train, valid, vocab_size=10) == pytest.approx(expected)
    assert unigram_loss(train, valid) == pytest.approx(-(math.log(3 / 11) + math.log(1 / 11)) / 2)


# --- whole runs ---------------------------------------------------------------------------------------


def test_a_run_trains_below_the_unigram_baseline_and_fills_its_folder(treebank, tiny, tmp_path):
    run = tmp_path / "run"
    config = tiny_config(treebank, max_steps=60, eval_every=20, lr=3e-2)
    result = train(config, run, progress=False)
    assert result.steps == 60 and result.stopped == "max_steps"
    assert result.best_valid_loss < result.baseline_valid_loss - 0.3
    assert result.best_valid_perplexity == pytest.approx(math.exp(result.best_valid_loss))
    for name in ("config.json", "log.csv", "training.json", "checkpoint.safetensors"):
        assert (run / name).is_file(), name
    for folder in ("best", "last"):
        assert (run / folder / "model.safetensors").is_file() and (run / folder / "vocab").is_dir()
    saved = json.loads((run / "config.json").read_text())
    assert saved["model"] == "tiny" and saved["seed"] == 0
    assert saved["train_config"]["train"]["max_steps"] == 60

    rows = read_log(run)
    assert [int(r["step"]) for r in rows if r["train_loss"]] == list(range(3, 61, 3))
    assert [int(r["step"]) for r in rows if r["valid_loss"]] == [20, 40, 60]
    assert all(float(r["tokens_per_s"]) > 0 for r in rows if r["train_loss"])
    assert float(rows[-1]["lr"]) == pytest.approx(3e-2 * lr_factor(59, config.train), rel=1e-4)
    assert float(rows[0]["train_loss"]) > float(rows[-1]["train_loss"])

    record = json.loads((run / "training.json").read_text())
    assert record["kind"] == "training"
    assert record["result"]["best_valid_loss"] == pytest.approx(result.best_valid_loss)
    assert record["inputs"]["train"]["sha256"]

    from syntaxlm.models import load_model
    from syntaxlm.report.report import read_run

    best = load_model(run / "best")
    assert evaluate(best, best.prepare(read_treebank(treebank["valid"])), batch_size=8)[
        "loss"
    ] == pytest.approx(result.best_valid_loss, rel=1e-5)
    assert read_run(run).model == "tiny"  # the report reads the run folder


class TinyDependencyLM(TinyLM):
    """The tiny model over the words of dependency trees too."""

    reads = ("constituency", "dependency")

    def prepare(self, trees) -> RowCorpus:
        from syntaxlm.trees.dependency import DepTree
        from syntaxlm.trees.tree import Tree

        return super().prepare(
            [Tree("S", list(tree.words)) if isinstance(tree, DepTree) else tree for tree in trees]
        )


def _as_conllu(source: Path, target: Path) -> Path:
    """The words of a PTB file as CoNLL-U, each word headed by the next (the last is the root)."""
    from syntaxlm.trees.dependency import DepTree, write_conllu

    deps = []
    for tree in read_treebank(source):
        words = tuple(tree.leaves())
        heads = tuple(range(2, len(words) + 1)) + (0,)
        deps.append(DepTree(words, heads, ("dep",) * (len(words) - 1) + ("root",)))
    write_conllu(target, deps)
    return target


def test_conllu_treebanks_reach_models_that_read_dependency_trees(treebank, tiny, tmp_path, monkeypatch):
    from syntaxlm.trees.dependency import DepTree

    conllu = {role: _as_conllu(treebank[role], tmp_path / f"{role}.conllu") for role in ("train", "valid")}
    assert all(isinstance(tree, DepTree) for tree in read_treebank(conllu["valid"]))
    config = tiny_config({**treebank, **conllu}, max_steps=60, eval_every=30, lr=3e-2)
    with pytest.raises(
        ConfigError, match=r"train\.conllu holds dependency trees; model tiny reads constituency"
    ):
        train(config, tmp_path / "refused", progress=False)
    assert not (tmp_path / "refused").exists()

    monkeypatch.setitem(MODEL_CLASSES, "tiny-dep", "tests.test_trainer:TinyDependencyLM")
    values = config.to_dict()
    values["model"]["model"] = "tiny-dep"
    result = train(run_config(values, where="test"), tmp_path / "run", progress=False)
    assert result.best_valid_loss < result.baseline_valid_loss - 0.3


def test_synthetic_data_and_vocabulary_are_made_in_the_run_folder(tiny, tmp_path):
    values = {
        "model": {"model": "tiny"},
        "data": {"synthetic": {"sentences": 120, "seed": 3}, "vocab": {"kind": "word", "min_freq": 1}},
        "train": {"max_steps": 3, "batch_size": 4, "eval_every": 3, "device": "cpu"},
    }
    result = train(run_config(values), tmp_path / "run", progress=False)
    assert result.steps == 3
    for name in ("data/train.trees", "data/dev.trees", "data/test.trees", "vocab/vocab.json"):
        assert (tmp_path / "run" / name).is_file(), name


def test_early_stopping_after_patience_non_improving_validations(treebank, tiny, tmp_path):
    # lr so high that validation gets worse after the first evaluation
    config = tiny_config(
        treebank,
        max_steps=200,
        eval_every=2,
        patience=2,
        lr=5.0,
        schedule="constant",
        warmup_steps=0,
        clip_norm=None,
    )
    result = train(config, tmp_path / "run", progress=False)
    assert result.stopped == "early_stopping" and result.steps < 200
    rows = [r for r in read_log(tmp_path / "run") if r["valid_loss"]]
    losses = [float(r["valid_loss"]) for r in rows]
    assert len(losses) >= 3
    assert min(losses[:-2]) <= min(losses[-2:])  # the last two did not improve on the best
    assert result.best_valid_loss == pytest.approx(min(losses), rel=1e-5)
    assert result.best_step == int(rows[losses.index(min(losses))]["step"])


def test_nan_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint(treebank, tiny, tmp_path):
    from syntaxlm.train.checkpoint import read_training_state

    run = tmp_path / "run"
    config = tiny_config(treebank, {"nan_after": 8}, max_steps=20, checkpoint_every=3, grad_accum=1)
    with pytest.raises(TrainingError, match=r"loss nan at step 9 is not finite.*step 6\)"):
        train(config, run, progress=False)
    assert read_training_state(run / "checkpoint.safetensors").step == 6
    assert not (run / "last").exists()


def test_epochs_limit_ends_the_run(treebank, tiny, tmp_path):
    config = tiny_config(
        treebank, max_steps=10_000, epochs=2, batch_size=64, eval_every=1000, log_every=1, min_lr_ratio=0.25
    )
    result = train(config, tmp_path / "run", progress=False)
    _, corpus = _model_and_corpus(treebank)
    assert result.stopped == "epochs" and result.steps == 2 * corpus.n_batches(64)
    assert result.last_valid_loss is not None  # validated at the end
    # The schedule runs over the steps the epochs allow, not max_steps: the last step is at the floor.
    rows = [r for r in read_log(tmp_path / "run") if r["lr"]]
    assert int(rows[-1]["step"]) == result.steps
    assert float(rows[-1]["lr"]) == pytest.approx(config.train.lr * config.train.min_lr_ratio, rel=1e-4)


def test_stream_state_reaches_the_next_batch_and_bf16_runs(treebank, tiny, tmp_path):
    config = tiny_config(treebank, {"streams": True}, max_steps=6, precision="bf16", grad_accum=2)
    result = train(config, tmp_path / "run", progress=False)
    assert result.steps == 6 and math.isfinite(result.last_valid_loss)


def test_a_finished_run_is_not_overwritten_without_resume(treebank, tiny, tmp_path):
    train(tiny_config(treebank, max_steps=2), tmp_path / "run", progress=False)
    with pytest.raises(TrainingError, match="already holds a run"):
        train(tiny_config(treebank, max_steps=2), tmp_path / "run", progress=False)
    with pytest.raises(Exception, match=r"train.lr: 0.01 in the run, 0.5 now"):
        train(tiny_config(treebank, max_steps=4, lr=0.5), tmp_path / "run", resume=True, progress=False)
    longer = train(tiny_config(treebank, max_steps=4), tmp_path / "run", resume=True, progress=False)
    assert longer.steps == 4


# --- the command line ---------------------------------------------------------------------------------


def test_train_command(treebank, tiny, tmp_path):
    from syntaxlm.cli import app

    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(
        "model:\n  model: tiny\n  d_model: 8\n"
        f"data:\n  train: {treebank['train']}\n  valid: {treebank['valid']}\n  vocab_path: {treebank['vocab']}\n"
        "train:\n  batch_size: 8\n  max_steps: 100\n  device: cpu\n"
    )
    runner = CliRunner()
    out = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = runner.invoke(
            app, ["train", str(recipe), "--out", str(out), "--set", "train.max_steps=4", "--no-progress"]
        )
    assert done.exit_code == 0, done.output
    assert str(out) in done.output and "best validation loss" in done.output
    assert json.loads((out / "config.json").read_text())["train_config"]["train"]["max_steps"] == 4

    bad = runner.invoke(app, ["train", str(recipe), "--set", "train.lr=fast"])
    assert bad.exit_code != 0
    assert isinstance(bad.exception, Exception) and "train.lr must be a number, got 'fast'" in str(
        bad.exception
    )


# --- stopping before the end: Ctrl-C and the time budget ----------------------------------------------

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# ``syntaxlm`` with the tiny model registered; $SLOW_TINY_LM makes a run slow enough to interrupt.
SYNTAXLM_WITH_TINY = textwrap.dedent(
    """
    import os, signal, sys, time
    from syntaxlm.models import MODEL_CLASSES
    from tests.test_trainer import TINY, TinyLM

    # Ctrl-C raises KeyboardInterrupt as in a terminal, also when the tests run in the background
    # of a shell, whose children start with SIGINT ignored (Python then leaves it ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    MODEL_CLASSES["tiny"] = TINY
    if os.environ.get("SLOW_TINY_LM"):
        loss = TinyLM.loss

        def slow_loss(self, batch, state=None):
            time.sleep(0.05)
            return loss(self, batch, state)

        TinyLM.loss = slow_loss
    from syntaxlm.cli import main

    sys.argv = ["syntaxlm", *sys.argv[1:]]
    main()
    """
)


def _tiny_recipe(treebank, path: Path, **train: Any) -> Path:
    settings = {"batch_size": 8, "max_steps": 40, "device": "cpu", **train}
    data = {"train": treebank["train"], "valid": treebank["valid"], "vocab_path": treebank["vocab"]}
    path.write_text(
        "model:\n  model: tiny\n  d_model: 8\n"
        + "data:\n"
        + "".join(f"  {key}: {value}\n" for key, value in data.items())
        + "train:\n"
        + "".join(f"  {key}: {value}\n" for key, value in settings.items())
    )
    return path


def test_ctrl_c_says_the_step_the_last_checkpoint_and_the_command_that_resumes(treebank, tiny, tmp_path):
    from syntaxlm.cli import app
    from syntaxlm.train import load_checkpoint

    recipe = _tiny_recipe(treebank, tmp_path / "tiny.yaml", max_steps=100, checkpoint_every=5, eval_every=50)
    script = tmp_path / "syntaxlm_with_tiny.py"
    script.write_text(SYNTAXLM_WITH_TINY)
    environment = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), OMP_NUM_THREADS="1")
    run = tmp_path / "run"
    command = [sys.executable, str(script), "train", str(recipe), "--out", str(run), "--no-progress"]
    process = subprocess.Popen(
        command,
        cwd=PROJECT_ROOT,
        env={**environment, "SLOW_TINY_LM": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (run / "checkpoint.safetensors").is_file():  # the first checkpoint, at step 5
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no checkpoint within 60 s"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    stopped = re.search(
        r"^training in (\S+) interrupted at step (\d+); last checkpoint: step (\d+) \((\S+)\)",
        err,
        re.MULTILINE,
    )
    assert stopped, err
    step, saved = int(stopped[2]), int(stopped[3])
    assert stopped[1] == str(run) and stopped[4] == str(run / "checkpoint.safetensors")
    assert 5 <= saved <= step and saved % 5 == 0
    assert load_checkpoint(run / "checkpoint.safetensors").state.step == saved  # whole and consistent
    assert not list(run.glob(".*")) and not (run / "training.json").exists()  # nothing half-written
    again = shlex.split(re.search(r"^resume with: (.+)$", err, re.MULTILINE)[1])
    assert again == ["syntaxlm", "train", str(recipe), "--out", str(run), "--resume", "--no-progress"]

    resumed = CliRunner().invoke(app, again[1:])
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming at step {saved} " in resumed.stdout and "100 steps (max steps)" in resumed.stdout


def test_commands_that_train_many_runs_name_the_unfinished_ones_on_ctrl_c(tmp_path, monkeypatch):
    from syntaxlm.cli import app
    from syntaxlm.jobs import quickstart
    from syntaxlm.train import TrainingState, save_checkpoint

    out = tmp_path / "qs"

    def interrupted_quickstart(folder, **options):
        for name in ("tg", "prpn", "lstm"):
            (folder / "runs" / name).mkdir(parents=True)
            (folder / "runs" / name / "run.lock").write_text("")
        (folder / "runs" / "lstm" / "training.json").write_text("{}")  # finished
        state = TrainingState(step=40)
        optimizer = {"state": {}, "param_groups": []}
        save_checkpoint(
            folder / "runs" / "tg" / "checkpoint.safetensors", model={}, optimizer=optimizer, state=state
        )
        raise KeyboardInterrupt

    monkeypatch.setattr(quickstart, "run_quickstart", interrupted_quickstart)
    done = CliRunner().invoke(app, ["quickstart", "--out", str(out), "--fast"])
    assert done.exit_code == 130
    assert done.stderr == (
        f"interrupted; runs that finished are kept; unfinished: {out / 'runs' / 'prpn'} (no checkpoint yet), "
        f"{out / 'runs' / 'tg'} (checkpoint at step 40)\n"
        "run the same command again to resume (each unfinished run from its last checkpoint)\n"
    )


def _ten_seconds_a_training_batch(monkeypatch) -> None:
    """The trainer's clock advances 10 s on each training batch of TinyLM, and only then."""
    from syntaxlm.train import trainer

    now = [0.0]
    monkeypatch.setattr(trainer, "_clock", lambda: now[0])
    loss = TinyLM.loss

    def timed_loss(self, batch, state=None):
        now[0] += 10.0 if self.training else 0.0
        return loss(self, batch, state)

    monkeypatch.setattr(TinyLM, "loss", timed_loss)


def test_max_minutes_stops_at_a_step_boundary_saves_as_at_an_end_and_resumes_with_a_larger_budget(
    treebank, tiny, tmp_path, monkeypatch
):
    from syntaxlm.train import load_checkpoint

    _ten_seconds_a_training_batch(monkeypatch)
    reference = train(tiny_config(treebank), tmp_path / "reference", progress=False)  # 12 steps
    run = tmp_path / "run"
    result = train(tiny_config(treebank, max_minutes=0.5), run, progress=False)
    assert (result.stopped, result.steps, result.train_seconds) == ("max_minutes", 3, 30.0)
    record = json.loads((run / "training.json").read_text())["result"]
    assert (record["stopped"], record["steps"], record["train_seconds"]) == ("max_minutes", 3, 30.0)
    assert load_checkpoint(run / "checkpoint.safetensors").state.step == 3
    assert [int(r["step"]) for r in read_log(run) if r["valid_loss"]] == [3]  # validated at the stop
    assert (run / "best" / "model.safetensors").is_file() and (run / "last" / "model.safetensors").is_file()

    longer = train(tiny_config(treebank, max_minutes=1), run, resume=True, progress=False)
    assert (longer.stopped, longer.steps, longer.train_seconds) == ("max_minutes", 6, 60.0)
    rest = train(tiny_config(treebank), run, resume=True, progress=False)  # no budget: to max_steps
    assert (rest.stopped, rest.steps) == ("max_steps", 12)
    for name, value in reference.model.state_dict().items():  # the budget changed no step
        assert torch.equal(rest.model.state_dict()[name], value), name


def test_the_train_command_says_the_time_budget_ended_the_run(treebank, tiny, tmp_path, monkeypatch):
    from syntaxlm.cli import app

    _ten_seconds_a_training_batch(monkeypatch)
    recipe = _tiny_recipe(treebank, tmp_path / "tiny.yaml", max_minutes=0.5)
    done = CliRunner().invoke(app, ["train", str(recipe), "--out", str(tmp_path / "run"), "--no-progress"])
    assert done.exit_code == 0, done.output
    assert "3 steps (time budget of 0.5 minutes (train.max_minutes) spent)" in done.stdout


def test_max_minutes_must_be_a_positive_number(treebank, tiny):
    for value in (0, -1.5):
        with pytest.raises(ConfigError, match=rf"max_minutes must be a positive number.*got {float(value)}$"):
            tiny_config(treebank, max_minutes=value)
    with pytest.raises(ConfigError, match="train.max_minutes must be a number, got 'soon'"):
        tiny_config(treebank, max_minutes="soon")
    assert tiny_config(treebank, max_minutes=None).train.max_minutes is None


def test_rows_reach_tensorboard_when_it_is_installed(treebank, tiny, tmp_path, monkeypatch):
    from syntaxlm.train import logs

    scalars = []

    class Writer:
        def add_scalar(self, tag, value, step):
            scalars.append((tag, step))

        def flush(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(logs, "_tensorboard_writer", lambda folder, purge_step: Writer())
    train(tiny_config(treebank, max_steps=4, log_every=2, eval_every=4), tmp_path / "run", progress=False)
    assert ("loss/train", 2) in scalars and ("loss/valid", 4) in scalars and ("lr", 4) in scalars


# --- the real models ----------------------------------------------------------------------------------

RECIPES = Path(__file__).resolve().parents[1] / "configs"
SMALL = [
    "data.synthetic.sentences=200",
    "train.max_steps=10",
    "train.warmup_steps=0",
    "train.eval_every=5",
    "train.device=cpu",
]


# Every tiny recipe trains below its unigram baseline in tests/test_recipes.py; here the joint
# Transformer-XL models train on segments shorter than their sentences, carrying memory across.
@pytest.mark.parametrize("name", ["tg", "txl-trees"])
def test_the_segmented_tiny_recipes_train(name, tmp_path):
    from syntaxlm.models import load_model
    from syntaxlm.train import load_config

    segments = ["model.segment_length=32", "model.memory_length=32"]
    config = load_config(RECIPES / f"{name}-tiny.yaml", [*SMALL, *segments])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train(config, tmp_path / "run", progress=False)
    losses = [float(r["valid_loss"]) for r in read_log(tmp_path / "run") if r["valid_loss"]]
    assert len(losses) == 2 and losses[1] < losses[0], losses
    assert result.best_valid_loss == pytest.approx(losses[1], rel=1e-5)
    assert load_model(tmp_path / "run" / "best").config == config.model


# --- non-finite losses: stop or skip -------------------------------------------------------------------


def _nan_on_training_calls(monkeypatch, calls: set[int]) -> None:
    """TinyLM's loss becomes NaN on the given training calls (1-based) only."""
    loss = TinyLM.loss

    def sometimes_nan(self, batch, state=None):
        output = loss(self, batch, state)
        if self.training and self.calls in calls:
            output.sums["lm"] = output.sums["lm"] * float("nan")
        return output

    monkeypatch.setattr(TinyLM, "loss", sometimes_nan)


def test_on_nonfinite_skip_skips_the_batches_without_an_update_and_counts_them(
    treebank, tiny, tmp_path, monkeypatch, capsys
):
    from syntaxlm.train import load_checkpoint

    _nan_on_training_calls(monkeypatch, {5, 6})
    run = tmp_path / "run"
    result = train(tiny_config(treebank, max_steps=12, on_nonfinite="skip"), run, progress=False)
    out = capsys.readouterr().out
    # The step is not counted: 12 updates, over 14 batches; batches 4 and 5 were both step 5's tries.
    assert result.steps == 12 and result.skipped_batches == 2
    assert (
        "skipped step 5 (epoch 0, batch 4): the loss nan is not finite; no update (1 in a row, 1 in all)"
        in out
    )
    assert (
        "skipped step 5 (epoch 0, batch 5): the loss nan is not finite; no update (2 in a row, 2 in all)"
        in out
    )
    checkpoint = load_checkpoint(run / "checkpoint.safetensors")
    assert (checkpoint.state.epoch, checkpoint.state.batch) == (0, 14)
    assert checkpoint.state.skipped_batches == 2 and checkpoint.state.skipped_in_a_row == []
    # AdamW stepped 12 times (the skipped batches left its state alone); no NaN reached a parameter.
    assert {float(values["step"]) for values in checkpoint.optimizer["state"].values()} == {12.0}
    assert all(torch.isfinite(value).all() for value in result.model.state_dict().values())
    record = json.loads((run / "training.json").read_text())
    assert record["result"]["skipped_batches"] == 2
    assert int(read_log(run)[-1]["step"]) == 12


def test_too_many_skipped_batches_in_a_row_stop_the_run_naming_them(treebank, tiny, tmp_path):
    from syntaxlm.train.checkpoint import read_training_state

    run = tmp_path / "run"
    config = tiny_config(
        treebank,
        {"nan_after": 8},
        max_steps=20,
        checkpoint_every=3,
        on_nonfinite="skip",
        max_skipped_batches=3,
    )
    with pytest.raises(TrainingError) as error:
        train(config, run, progress=False)
    message = str(error.value)
    assert (
        "3 batches in a row had a non-finite loss or gradient norm (train.max_skipped_batches 3)" in message
    )
    assert (
        "epoch 0, batch 8; epoch 0, batch 9; epoch 0, batch 10; the last, at step 9, the loss nan" in message
    )
    assert f"the last good checkpoint is {run / 'checkpoint.safetensors'} (step 6)" in message
    assert read_training_state(run / "checkpoint.safetensors").step == 6


def test_on_nonfinite_must_be_stop_or_skip(treebank, tiny):
    with pytest.raises(ConfigError, match="train.on_nonfinite must be one of 'stop', 'skip'"):
        tiny_config(treebank, on_nonfinite="ignore")
    with pytest.raises(ConfigError, match="train.max_skipped_batches must be at least 1"):
        tiny_config(treebank, max_skipped_batches=0)


# --- problems in the training data, reported before training -------------------------------------------

EMPTY_TREE = "(S (-NONE- *T*-1))"
UNKNOWN_LABEL_TREE = "(S (XYZ (DT the) (NN cat)) (VP (VBD sat)))"


def _problem_treebank(treebank, folder: Path) -> Path:
    """The session's training trees with, at indices 3, 5 and 7, a tree cleaning leaves empty, a
    200-word sentence and a tree with a nonterminal the vocabulary lacks."""
    lines = treebank["train"].read_text().splitlines()
    long_tree = "(S (NP " + " ".join("(NN bird)" for _ in range(200)) + ") (VP (VBD sang)))"
    lines[3], lines[5], lines[7] = EMPTY_TREE, long_tree, UNKNOWN_LABEL_TREE
    path = folder / "problems.trees"
    path.write_text("\n".join(lines) + "\n")
    return path


def _plm_config(treebank, train_path: Path, on_problem: str):
    values = {
        "model": {"model": "plm", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 16, "max_length": 160},
        "data": {
            "train": str(train_path),
            "valid": str(treebank["valid"]),
            "vocab_path": str(treebank["vocab"]),
            "on_problem": on_problem,
        },
        "train": {"batch_size": 16, "max_steps": 2, "eval_every": 2, "device": "cpu"},
    }
    return run_config(values, where="test")


def test_without_a_progress_bar_a_plain_line_says_the_step_and_time_left(
    treebank, tiny, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr("syntaxlm.train.logs.PLAIN_PROGRESS_SECONDS", 0.0)  # a line every step
    train(tiny_config(treebank, max_steps=3), tmp_path / "run", progress=False)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("train: step")]
    assert [line.split(",")[0].split(" (")[0] for line in lines] == [f"train: step {k}/3" for k in (1, 2, 3)]
    assert re.match(r"train: step 1/3 \(33%\), loss \d+\.\d{4}.*; \d+ s so far, about \d+ s left$", lines[0])
    assert "left" not in lines[-1]  # the last step: nothing left
    assert "note: a joint model" not in capsys.readouterr().out  # a words-only model's loss needs no note


def test_data_problems_are_reported_with_counts_and_indices_before_training(treebank, tmp_path, capsys):
    path = _problem_treebank(treebank, tmp_path)
    with pytest.warns(UserWarning, match="skipped 1 of"):  # the model's own warning, as before
        result = train(_plm_config(treebank, path, "skip"), tmp_path / "run", progress=False)
    out = capsys.readouterr().out
    problems = result.data_problems["train"]
    assert problems["empty"] == {"count": 1, "meaning": "without words after cleaning; dropped", "first": [3]}
    assert problems["too_long"]["count"] == 1 and problems["too_long"]["first"] == [5]
    assert problems["unknown_nonterminal"]["count"] == 1 and problems["unknown_nonterminal"]["first"] == [7]
    assert result.data_problems["valid"] == {}
    assert f"data.train {path}: 1 without words after cleaning; dropped (empty): sentences 3" in out
    assert "1 longer than max_length 160 positions; dropped (too_long): sentences 5" in out
    assert "1 with nonterminals missing from the vocabulary (unknown_nonterminal): sentences 7" in out
    assert out.index("data.train") < out.index("step 2: validation loss")  # before training
    # A joint model's loss is per token of words and actions, and the log says so.
    assert "step 2: validation loss " in out and " nats/token (words and tree actions) (perplexity" in out
    assert "note: a joint model's validation loss is per token of its words and its tree's actions" in out
    record = json.loads((tmp_path / "run" / "training.json").read_text())
    assert record["result"]["data_problems"]["train"]["too_long"]["first"] == [5]


def test_data_problems_fail_or_stop_the_run_before_it_starts(treebank, tmp_path):
    path = _problem_treebank(treebank, tmp_path)
    with pytest.raises(ConfigError) as error:
        train(_plm_config(treebank, path, "fail"), tmp_path / "fail", progress=False)
    message = str(error.value)
    assert str(path) in message and "data.on_problem is fail" in message
    assert "1 without words after cleaning; dropped (empty): sentences 3" in message
    assert "1 with nonterminals missing from the vocabulary (unknown_nonterminal): sentences 7" in message
    assert "sentence 7 has NT(XYZ)" in message
    assert not (tmp_path / "fail" / "config.json").exists()
    # report: the model cannot spell the unknown label, so the run stops, as it did before, now saying where
    with pytest.raises(ConfigError, match=r"sentences 7 \(sentence 7 has NT\(XYZ\)\).*data.on_problem=skip"):
        train(_plm_config(treebank, path, "report"), tmp_path / "report", progress=False)


def test_over_long_and_empty_trees_are_reported_and_trained_around(treebank, tmp_path, capsys):
    lines = _problem_treebank(treebank, tmp_path).read_text().splitlines()
    lines[7] = lines[8]  # no unknown label: "report" trains, as the model always did, and reports
    path = tmp_path / "report.trees"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="skipped 1 of"):
        result = train(_plm_config(treebank, path, "report"), tmp_path / "run", progress=False)
    assert sorted(result.data_problems["train"]) == ["empty", "too_long"]
    assert "(too_long): sentences 5" in capsys.readouterr().out


def test_models_that_spell_trees_name_the_nonterminals_their_vocabulary_lacks():
    from syntaxlm.models import build_model
    from syntaxlm.text.vocab import WordVocab
    from syntaxlm.trees.tree import Tree

    vocab = WordVocab.build([["the", "cat"]], min_freq=1, symbols=["(S", "S)", "(NP", "NP)"])
    small = {"d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 8}
    trees = [Tree.from_bracket("(S (NP the cat))"), Tree.from_bracket("(S (XYZ the) (NP cat))")]
    assert build_model({"model": "tg", **small}, {"vocab": vocab}).unknown_nonterminals(trees) == {
        1: ["(XYZ", "XYZ)"]
    }
    assert build_model({"model": "lm", **small}, {"vocab": vocab}).unknown_nonterminals(trees) == {}
