"""Training runs and model files under crashes and concurrent readers: damaged model files are
refused by their sha256, a run killed with SIGKILL at random moments (one of them inside a
checkpoint write) resumes to the parameters of a run never stopped, and processes that read a
model folder or checkpoint while it is being rewritten never see a partial file."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import yaml

from syntaxlm.models import ModelFileError, build_model, load_model
from syntaxlm.text.vocab import WordVocab
from syntaxlm.train import load_checkpoint, train
from syntaxlm.train.checkpoint import PAUSE_BEFORE_RENAME_ENV
from tests import test_trainer
from tests.floats import ROUNDING, TRAINING, assert_rows_close, assert_state_dicts_close
from tests.test_checkpoint import _drop_the_hash, _flip_a_tensor_byte, _log_rows
from tests.test_trainer import tiny_config

tiny, treebank = test_trainer.tiny, test_trainer.treebank  # the fixtures, shared

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
SENTENCES = [["the", "bird", "sings"], ["a", "bird"], ["the", "the", "bird", "bird"]] * 4


def _saved_model(folder: Path) -> Path:
    vocab = WordVocab.build([["the", "bird"], ["a", "sings"]], min_freq=1, symbols=["(S", "S)", "(NP", "NP)"])
    config = {"model": "txl-terminals", "d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 8}
    torch.manual_seed(0)
    return build_model(config, {"vocab": vocab}).save_pretrained(folder)


def _scores(model) -> list[float]:
    return [float(values.sum()) for values in model.word_logprobs(SENTENCES)]


# --- model files: integrity ----------------------------------------------------------------------


def test_a_flipped_byte_in_a_models_weights_is_an_error_naming_the_file(tmp_path):
    folder = _saved_model(tmp_path / "model")
    load_model(folder)
    _flip_a_tensor_byte(folder / "model.safetensors")
    with pytest.raises(ModelFileError, match="do not match the sha256") as error:
        load_model(folder)
    assert str(folder / "model.safetensors") in str(error.value)


def test_cut_model_weights_are_an_error_naming_the_file(tmp_path):
    folder = _saved_model(tmp_path / "model")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-7])
    with pytest.raises(ModelFileError, match="cannot read the weights") as error:
        load_model(folder)
    assert str(weights) in str(error.value)


def test_model_weights_without_the_hash_are_refused_until_sealed(tmp_path):
    from syntaxlm.models.base import seal_tensors_file

    folder = _saved_model(tmp_path / "model")
    expected = _scores(load_model(folder))
    weights = folder / "model.safetensors"
    _drop_the_hash(weights)  # were the hash optional, dropping it would switch the check off
    with pytest.raises(ModelFileError, match="no tensors_sha256.*syntaxlm model seal") as error:
        load_model(folder)
    assert str(weights) in str(error.value)
    seal_tensors_file(weights)  # the user trusts the file
    assert _scores(load_model(folder)) == expected  # the same weights scored the same way: same bits


# --- killed at random moments ----------------------------------------------------------------------

KILLED_RUN = textwrap.dedent(
    """
    import sys, time
    import torch._dynamo  # imported by the optimiser; here, so that the kills land in the run
    from syntaxlm.models import MODEL_CLASSES
    from syntaxlm.train import load_config, train
    from tests.test_trainer import TINY, TinyLM

    MODEL_CLASSES["tiny"] = TINY
    loss = TinyLM.loss

    def slow_loss(self, batch, state=None):  # slow enough to be killed anywhere in a step
        time.sleep(0.01)
        return loss(self, batch, state)

    TinyLM.loss = slow_loss
    print("ready", flush=True)
    train(load_config(sys.argv[1]), sys.argv[2], resume=True, progress=False)
    """
)


def _start(script: Path, recipe: Path, run: Path, **environment: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, str(script), str(recipe), str(run)],
        cwd=PROJECT_ROOT,
        env={**ENVIRONMENT, **environment},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "ready", process.stderr.read()
    return process


def _kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    process.stdout.close()
    process.stderr.close()


def _logged_step(run: Path) -> int:
    """The step of the last ``log.csv`` row (one row per step here), 0 before the first."""
    try:
        last = (run / "log.csv").read_text().rstrip("\n").rsplit("\n", 1)[-1]
        return int(last.split(",", 1)[0])
    except (FileNotFoundError, ValueError):  # not there yet, the header, or a row half written
        return 0


def test_a_run_killed_at_random_moments_resumes_to_the_same_parameters(treebank, tiny, tmp_path):
    """Killed at three random moments (seeded: a random step of the run, then a random fraction of
    a step's time) and once inside a checkpoint write (between its temporary file and the rename);
    each time the last checkpoint loads; then resumed to the end."""
    config = tiny_config(
        treebank, {"dropout": 0.3}, max_steps=40, checkpoint_every=3, eval_every=5, log_every=1
    )
    reference = train(config, tmp_path / "reference", progress=False)
    recipe, script, run = tmp_path / "recipe.yaml", tmp_path / "killed_run.py", tmp_path / "run"
    recipe.write_text(yaml.safe_dump(config.to_dict()))
    script.write_text(KILLED_RUN)
    checkpoint = run / "checkpoint.safetensors"
    rng = random.Random(7)
    first, second, third = sorted(rng.sample(range(2, 37), 3))
    steps = []
    for moment in [first, "inside a checkpoint write", second, third]:
        if moment == "inside a checkpoint write":
            process = _start(script, recipe, run, **{PAUSE_BEFORE_RENAME_ENV: "60"})
            deadline = time.monotonic() + 60
            while not list(run.glob(".checkpoint.safetensors.*.tmp")):
                assert process.poll() is None, process.stderr.read()
                assert time.monotonic() < deadline, "no checkpoint write within 60 s"
                time.sleep(0.002)
        else:
            process = _start(script, recipe, run)
            deadline = time.monotonic() + 60
            while _logged_step(run) < moment:
                assert process.poll() is None, process.stderr.read()
                assert time.monotonic() < deadline, f"step {moment} not reached within 60 s"
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.05))
        assert process.poll() is None, "the run ended before it was killed"
        _kill(process)
        if moment == "inside a checkpoint write":
            assert list(run.glob(".checkpoint.safetensors.*.tmp"))  # killed with the write half done
        if checkpoint.is_file() or steps:
            steps.append(load_checkpoint(checkpoint).state.step)  # always there and loadable
        assert steps == sorted(steps) and (not steps or steps[-1] < 40)

    resumed = train(config, run, resume=True, progress=False)
    assert not list(run.glob(".*.tmp"))
    assert resumed.steps == reference.steps == 40
    # Most steps ran in the killed processes (with their own thread count): equal up to rounding.
    assert_state_dicts_close(resumed.model.state_dict(), reference.model.state_dict())
    assert math.isclose(resumed.best_valid_loss, reference.best_valid_loss, rel_tol=TRAINING)
    assert resumed.best_step == reference.best_step
    assert_rows_close(_log_rows(run), _log_rows(tmp_path / "reference"))
    best, reference_best = load_model(run / "best"), load_model(tmp_path / "reference" / "best")
    assert_state_dicts_close(best.state_dict(), reference_best.state_dict())


# --- concurrent readers ------------------------------------------------------------------------------

SCORER = textwrap.dedent(
    """
    import json, sys
    from syntaxlm.models import load_model
    from tests.reliability.test_training_runs import SENTENCES

    model = load_model(sys.argv[1])
    print(json.dumps([float(values.sum()) for values in model.word_logprobs(SENTENCES)]))
    """
)


def test_two_processes_load_and_score_one_model_folder_at_once(tmp_path):
    folder = _saved_model(tmp_path / "model")
    script = tmp_path / "score.py"
    script.write_text(SCORER)
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), str(folder)],
            cwd=PROJECT_ROOT,
            env=ENVIRONMENT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err for _, err in outputs]
    expected = _scores(load_model(folder))
    for out, _ in outputs:  # other processes, with their own thread count: equal up to rounding
        assert json.loads(out) == pytest.approx(expected, rel=ROUNDING)


READER = textwrap.dedent(
    """
    import json, sys, traceback
    from pathlib import Path
    from syntaxlm.models import MODEL_CLASSES, load_model
    from syntaxlm.train import load_checkpoint
    from tests.test_trainer import TINY

    MODEL_CLASSES["tiny"] = TINY
    run = Path(sys.argv[1])
    loads = {"checkpoint": 0, "best": 0, "last": 0}
    seen, errors = set(), []
    print("ready", flush=True)
    while not (run.parent / "stop").exists() and len(errors) < 5:
        for name in loads:
            path = run / ("checkpoint.safetensors" if name == "checkpoint" else name)
            if name not in seen and not path.exists():
                continue  # not written yet; once written, it must always be there
            seen.add(name)
            try:
                if name == "checkpoint":
                    load_checkpoint(path)
                else:
                    load_model(path)
                loads[name] += 1
            except Exception:
                errors.append(f"{name}: {traceback.format_exc(limit=3)}")
    print(json.dumps({"loads": loads, "errors": errors}), flush=True)
    """
)


def test_readers_never_see_a_partial_checkpoint_or_model_folder_while_a_run_writes_them(
    treebank, tiny, tmp_path
):
    run = tmp_path / "run"
    script = tmp_path / "reader.py"
    script.write_text(READER)
    reader = subprocess.Popen(
        [sys.executable, str(script), str(run)],
        cwd=PROJECT_ROOT,
        env=ENVIRONMENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == "ready", reader.stderr.read()
        # A checkpoint every step and a validation (a new best/ whenever it improves) every 2 steps;
        # then a second run writes last/ again and again (resumed runs of one more step each).
        config = tiny_config(treebank, max_steps=40, checkpoint_every=1, eval_every=2, lr=3e-3)
        train(config, run, progress=False)
        for steps in range(41, 51):
            train(
                tiny_config(treebank, max_steps=steps, checkpoint_every=1, eval_every=2, lr=3e-3),
                run,
                resume=True,
                progress=False,
            )
        (tmp_path / "stop").touch()
        out, err = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.communicate()
    assert reader.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["errors"] == []
    assert all(count > 0 for count in report["loads"].values()), report


# --- one run at a time in a run folder ----------------------------------------------------------------


def test_a_second_training_into_a_folder_in_use_fails_at_once_naming_the_holder(treebank, tiny, tmp_path):
    """While a run trains in a folder (a process of its own), a second training there, fresh or
    resumed, fails at once naming the first's process; once the first is killed with SIGKILL, its
    lock no longer blocks and the folder's run resumes."""
    from syntaxlm.train import TrainingError

    config = tiny_config(treebank, max_steps=1000, checkpoint_every=2, eval_every=100, log_every=1)
    recipe, script, run = tmp_path / "recipe.yaml", tmp_path / "first_run.py", tmp_path / "run"
    recipe.write_text(yaml.safe_dump(config.to_dict()))
    script.write_text(KILLED_RUN)
    process = _start(script, recipe, run)
    try:
        deadline = time.monotonic() + 60
        while _logged_step(run) < 3:
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "step 3 not reached within 60 s"
            time.sleep(0.01)
        for resume in (False, True):
            began = time.monotonic()
            holder = rf"in use by another training run by process {process.pid} on host"
            with pytest.raises(TrainingError, match=holder):
                train(config, run, resume=resume, progress=False)
            assert time.monotonic() - began < 10
        assert process.poll() is None, "the first run was disturbed"
    finally:
        _kill(process)
    steps = _logged_step(run) + 2
    longer = tiny_config(treebank, max_steps=steps, checkpoint_every=2, eval_every=100, log_every=1)
    resumed = train(longer, run, resume=True, progress=False)
    assert resumed.steps == steps
    assert f"process {os.getpid()} on" in (run / "run.lock").read_text()


def test_resume_removes_the_temporary_files_of_every_write_a_killed_run_left(tiny, tmp_path):
    """A run killed in its first write of config.json leaves ``.config.json.*.tmp``; others are left
    by writes of the checkpoint, the synthetic treebank and the vocabulary. A resumed run deletes
    them all, and nothing else."""
    from syntaxlm.files import temporary_file_beside
    from syntaxlm.train import run_config

    run = tmp_path / "run"
    (run / "data").mkdir(parents=True)
    (run / "vocab").mkdir()
    written = ["config.json", "checkpoint.safetensors", "data/train.trees", "vocab/vocab.json"]
    left = [temporary_file_beside(run / name) for name in written]
    for fd, _ in left:
        os.write(fd, b"half written")
        os.close(fd)
    (run / ".notes.tmp").write_text("not syntaxlm's")
    values = {
        "model": {"model": "tiny"},
        "data": {"synthetic": {"sentences": 60, "seed": 3}, "vocab": {"kind": "word", "min_freq": 1}},
        "train": {"max_steps": 2, "batch_size": 4, "eval_every": 2, "device": "cpu"},
    }
    assert train(run_config(values), run, resume=True, progress=False).steps == 2
    assert not [name for _, name in left if Path(name).exists()]
    assert sorted(path.name for path in run.rglob(".*.tmp")) == [".notes.tmp"]
