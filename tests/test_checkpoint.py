"""Checkpoints: what they hold, damaged files, and resuming a run killed mid-way (SIGKILL) to the very
numbers of a run that was never stopped."""

from __future__ import annotations

import csv
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import yaml

from syntaxlm.train import (
    CheckpointError,
    TrainingError,
    TrainingState,
    load_checkpoint,
    load_config,
    save_checkpoint,
    train,
)
from syntaxlm.train.checkpoint import read_training_state
from tests import test_trainer
from tests.floats import TRAINING, assert_rows_close, assert_state_dicts_close
from tests.test_trainer import tiny_config

tiny, treebank = test_trainer.tiny, test_trainer.treebank  # the fixtures, shared

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _trained_optimizer():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.8, 0.95))
    for _ in range(2):
        model(torch.randn(5, 3)).pow(2).sum().backward()
        optimizer.step()
    return model, optimizer


def test_a_checkpoint_round_trips_model_optimizer_state_and_carried_tensors(tmp_path):
    model, optimizer = _trained_optimizer()
    carried = [[torch.randn(2, 3), torch.arange(4)], None, {"memory": (torch.ones(1), 3)}]
    state = TrainingState(step=7, epoch=1, batch=3, best_valid_loss=2.5, best_step=6, bad_validations=1)
    path = save_checkpoint(
        tmp_path / "checkpoint.safetensors",
        model=model.state_dict(),
        optimizer=optimizer.state_dict(),
        state=state,
        carried=carried,
    )
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed
    loaded = load_checkpoint(path)
    assert loaded.state == state
    for name, value in model.state_dict().items():
        assert torch.equal(loaded.model[name], value)
    assert torch.equal(loaded.carried[0][0], carried[0][0]) and torch.equal(
        loaded.carried[0][1], carried[0][1]
    )
    assert loaded.carried[1] is None
    assert torch.equal(loaded.carried[2]["memory"][0], torch.ones(1)) and loaded.carried[2]["memory"][1] == 3

    fresh = torch.optim.AdamW(model.parameters(), lr=1e-2)
    fresh.load_state_dict(loaded.optimizer)
    original, restored = optimizer.state_dict(), fresh.state_dict()
    assert restored["param_groups"] == original["param_groups"]
    for index, values in original["state"].items():
        for key, value in values.items():
            assert torch.equal(restored["state"][index][key], value), (index, key)
    assert read_training_state(path).step == 7


def test_tied_weights_can_be_saved(tmp_path):
    embedding = torch.nn.Embedding(5, 3)
    output = torch.nn.Linear(3, 5, bias=False)
    output.weight = embedding.weight
    model = torch.nn.ModuleDict({"embedding": embedding, "output": output})
    path = save_checkpoint(
        tmp_path / "c.safetensors",
        model=model.state_dict(),
        optimizer={"state": {}, "param_groups": []},
        state=TrainingState(),
    )
    assert torch.equal(load_checkpoint(path).model["output.weight"], embedding.weight)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "not a checkpoint"])
def test_a_damaged_checkpoint_is_a_clear_error_naming_the_file(tmp_path, damage):
    model, optimizer = _trained_optimizer()
    path = tmp_path / "checkpoint.safetensors"
    save_checkpoint(
        path, model=model.state_dict(), optimizer=optimizer.state_dict(), state=TrainingState(step=3)
    )
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) - 40])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff" * 50)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        from safetensors.torch import save_file

        save_file({"x": torch.zeros(2)}, str(path))
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert str(path) in str(error.value)
    assert "Traceback" not in str(error.value)


def test_resuming_from_a_damaged_checkpoint_names_it(treebank, tiny, tmp_path):
    run = tmp_path / "run"
    train(tiny_config(treebank, max_steps=3), run, progress=False)
    checkpoint = run / "checkpoint.safetensors"
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=str(checkpoint)):
        train(tiny_config(treebank, max_steps=6), run, resume=True, progress=False)


# --- killed and resumed ------------------------------------------------------------------------------

SLOW_RUN = textwrap.dedent(
    """
    import sys, time
    from syntaxlm.models import MODEL_CLASSES
    from syntaxlm.train import load_config, train
    from tests.test_trainer import TINY, TinyLM

    MODEL_CLASSES["tiny"] = TINY
    loss = TinyLM.loss

    def slow_loss(self, batch, state=None):  # slow enough to be killed between two checkpoints
        time.sleep(0.03)
        return loss(self, batch, state)

    TinyLM.loss = slow_loss
    train(load_config(sys.argv[1]), sys.argv[2], progress=False)
    """
)


def _log_rows(run: Path) -> list[tuple[str, ...]]:
    with open(run / "log.csv", newline="") as handle:
        # every column but the speed, which differs from run to run
        return [tuple(v for k, v in row.items() if k != "tokens_per_s") for row in csv.DictReader(handle)]


@pytest.mark.parametrize(
    "model, settings",
    [
        ({"dropout": 0.3}, {}),
        ({"dropout": 0.3, "streams": True, "aux_weight": 0.4}, {"grad_accum": 2, "batch_size": 6}),
    ],
    ids=["shuffled", "streams"],
)
def test_a_run_killed_mid_way_resumes_to_the_same_parameters(treebank, tiny, tmp_path, model, settings):
    settings = {"max_steps": 30, "checkpoint_every": 5, "eval_every": 4, "log_every": 2, **settings}
    config = tiny_config(treebank, model, **settings)
    reference = train(config, tmp_path / "reference", progress=False)

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(config.to_dict()))
    assert load_config(recipe) == config
    run = tmp_path / "run"
    script = tmp_path / "slow_run.py"
    script.write_text(SLOW_RUN)
    environment = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    process = subprocess.Popen(
        [sys.executable, str(script), str(recipe), str(run)],
        cwd=PROJECT_ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (run / "checkpoint.safetensors").is_file():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint within 60 s"
            time.sleep(0.01)
        time.sleep(0.1)  # let it run on past the checkpoint
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    stopped_at = read_training_state(run / "checkpoint.safetensors").step
    assert 5 <= stopped_at < 30 and not (run / "last").exists()

    resumed = train(config, run, resume=True, progress=False)
    assert resumed.steps == reference.steps == 30
    # The first steps ran in another process (with its own thread count): equal up to rounding.
    assert_state_dicts_close(resumed.model.state_dict(), reference.model.state_dict())
    assert math.isclose(resumed.best_valid_loss, reference.best_valid_loss, rel_tol=TRAINING)
    assert resumed.best_step == reference.best_step
    # each step logged once, the same numbers up to rounding
    assert_rows_close(_log_rows(run), _log_rows(tmp_path / "reference"))
    from syntaxlm.models import load_model

    best = load_model(run / "best").state_dict()
    assert_state_dicts_close(best, load_model(tmp_path / "reference" / "best").state_dict())


def test_resume_of_a_folder_without_checkpoint_starts_the_run(treebank, tiny, tmp_path):
    result = train(tiny_config(treebank, max_steps=2), tmp_path / "run", resume=True, progress=False)
    assert result.steps == 2


def test_transformer_grammar_memory_is_checkpointed_and_resumed_exactly(tmp_path):
    """A real streams model (TG with segments of 24 tokens and memory) stopped at step 4 of 8."""
    settings = [
        "data.synthetic.sentences=120",
        "model.segment_length=24",
        "model.memory_length=24",
        "train.schedule=constant",  # max_steps may change on resume without changing a step
        "train.warmup_steps=2",
        "train.batch_size=6",
        "train.eval_every=3",
        "train.checkpoint_every=4",
        "train.device=cpu",
    ]
    recipe = Path(__file__).resolve().parents[1] / "configs" / "tg-tiny.yaml"
    whole = train(load_config(recipe, [*settings, "train.max_steps=8"]), tmp_path / "whole", progress=False)
    train(load_config(recipe, [*settings, "train.max_steps=4"]), tmp_path / "run", progress=False)
    checkpoint = load_checkpoint(tmp_path / "run" / "checkpoint.safetensors")
    assert checkpoint.carried[0] is not None  # the memory of every layer
    assert all(isinstance(layer, torch.Tensor) for layer in checkpoint.carried[0])
    resumed = train(
        load_config(recipe, [*settings, "train.max_steps=8"]), tmp_path / "run", resume=True, progress=False
    )
    # One process, one thread, the same batches: the same computation, so the same bits.
    for name, value in whole.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    assert resumed.last_valid_loss == whole.last_valid_loss


# --- integrity: the sha256 of the tensors ----------------------------------------------------------


def _flip_a_tensor_byte(path: Path) -> None:
    """Flip one bit of a byte in the middle of the tensor data (after the 8-byte length and the header)."""
    data = bytearray(path.read_bytes())
    start = 8 + int.from_bytes(data[:8], "little")
    data[(start + len(data)) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _drop_the_hash(path: Path) -> None:
    """Rewrite a safetensors file as it was written before the hash was added: no ``tensors_sha256``."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
        tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118
    del metadata["tensors_sha256"]
    save_file(tensors, str(path), metadata=metadata)


def _saved_checkpoint(path: Path) -> Path:
    model, optimizer = _trained_optimizer()
    state = TrainingState(step=3)
    return save_checkpoint(path, model=model.state_dict(), optimizer=optimizer.state_dict(), state=state)


def test_a_checkpoint_carries_the_sha256_of_its_tensors_in_its_header(tmp_path):
    from safetensors import safe_open

    from syntaxlm.models.base import tensors_sha256

    path = _saved_checkpoint(tmp_path / "checkpoint.safetensors")
    with safe_open(str(path), framework="pt") as handle:
        expected = handle.metadata()["tensors_sha256"]
        tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118
    assert expected == tensors_sha256(tensors) and len(expected) == 64
    # The order is defined (by name), not the dictionary's.
    assert tensors_sha256(dict(reversed(list(tensors.items())))) == expected


def test_a_flipped_byte_in_a_checkpoints_tensors_is_an_error_naming_the_file(tmp_path):
    path = _saved_checkpoint(tmp_path / "checkpoint.safetensors")
    _flip_a_tensor_byte(path)
    with pytest.raises(CheckpointError, match="do not match the sha256") as error:
        load_checkpoint(path)
    assert str(path) in str(error.value)


def test_a_checkpoint_without_the_hash_is_refused_until_sealed(tmp_path):
    from syntaxlm.models.base import seal_tensors_file

    path = _saved_checkpoint(tmp_path / "checkpoint.safetensors")
    _drop_the_hash(path)  # were the hash optional, dropping it would hide any change to the tensors
    with pytest.raises(CheckpointError, match="no tensors_sha256.*syntaxlm model seal") as error:
        load_checkpoint(path)
    assert str(path) in str(error.value)
    seal_tensors_file(path)  # the user trusts the file
    assert load_checkpoint(path).state.step == 3
    _flip_a_tensor_byte(path)
    with pytest.raises(CheckpointError, match="do not match the sha256"):
        load_checkpoint(path)


# --- disk full during a checkpoint -------------------------------------------------------------------


def test_a_full_disk_during_a_checkpoint_stops_the_run_and_keeps_the_previous_one(
    treebank, tiny, tmp_path, monkeypatch
):
    import errno

    import syntaxlm.train.checkpoint as checkpoint_module

    real_save_file = checkpoint_module.save_file
    calls = []

    def save_file_until_the_disk_is_full(tensors, filename, metadata=None):
        calls.append(filename)
        if len(calls) == 1:
            return real_save_file(tensors, filename, metadata=metadata)
        real_save_file(tensors, filename, metadata=metadata)  # then cut it: the disk filled up mid-way
        with open(filename, "r+b") as handle:
            handle.truncate(os.path.getsize(filename) // 2)
        raise OSError(errno.ENOSPC, "No space left on device", filename)

    monkeypatch.setattr(checkpoint_module, "save_file", save_file_until_the_disk_is_full)
    run = tmp_path / "run"
    config = tiny_config(treebank, max_steps=12, checkpoint_every=6, eval_every=100)
    with pytest.raises(TrainingError) as error:
        train(config, run, progress=False)
    message = str(error.value)
    assert "no space left" in message and str(run) in message
    assert f"{run / 'checkpoint.safetensors'} (step 6)" in message
    assert len(calls) == 2 and Path(calls[1]).parent == run and not Path(calls[1]).exists()
    assert not list(run.glob(".*.tmp"))  # the partial file is gone
    assert load_checkpoint(run / "checkpoint.safetensors").state.step == 6  # the previous one, intact

    monkeypatch.setattr(checkpoint_module, "save_file", real_save_file)  # space again: resume
    assert train(config, run, resume=True, progress=False).steps == 12


def test_a_full_disk_while_saving_a_model_folder_keeps_the_previous_folder(
    treebank, tiny, tmp_path, monkeypatch
):
    import errno

    from syntaxlm.models import base, load_model
    from syntaxlm.train.run_folder import save_model_folder

    result = train(tiny_config(treebank, max_steps=2), tmp_path / "run", progress=False)
    best = tmp_path / "run" / "best"
    before = (best / "model.safetensors").read_bytes()

    def full(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\0" * 100)
        raise OSError(errno.ENOSPC, "No space left on device", filename)

    monkeypatch.setattr(base, "save_file", full)
    with pytest.raises(OSError, match="No space left"):
        save_model_folder(result.model, best)
    assert (best / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in best.parent.iterdir() if p.name.startswith(".")) == []
    load_model(best)
