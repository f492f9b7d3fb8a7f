"""Model files and runs against a full disk, unsealed or NaN weights, and configs describing huge models.

The full-disk tests run twice: on a real full disk (a small tmpfs, mounted where the tests may mount:
CI runs them as root) and with a writer made to fail as a full disk does, which runs everywhere.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError
from typer.testing import CliRunner

from syntaxlm.errors import NoSpaceError
from syntaxlm.models import ModelFileError, build_model, load_model
from syntaxlm.text.base import load_vocabulary
from syntaxlm.train import CheckpointError, TrainingError, load_checkpoint, save_checkpoint, train
from syntaxlm.train.checkpoint import TrainingState
from tests import test_trainer
from tests.test_checkpoint import _drop_the_hash, _flip_a_tensor_byte
from tests.test_trainer import tiny_config

tiny, treebank = test_trainer.tiny, test_trainer.treebank  # the fixtures, shared

SAFETENSORS_FULL_DISK = "Error while serializing: I/O error: No space left on device (os error 28)"


def _mount_small_disk(folder: Path, size: str) -> Path:
    """A tmpfs of ``size`` at ``folder``: a disk that really fills up. Skips the test where mounting
    is not allowed (not root, no mount command, a container without the capability)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        pytest.skip("no mount command here: the real full disk is tested where tests may mount a tmpfs")
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({mounted.stderr.strip()}): the real full disk is tested where "
            "tests may mount one (CI runs them as root)"
        )
    return folder


@pytest.fixture
def small_disk(tmp_path):
    """A mounter of small tmpfs disks under ``tmp_path``, unmounted after the test."""
    mounted = []

    def mount(name: str, size: str) -> Path:
        mounted.append(_mount_small_disk(tmp_path / name, size))
        return mounted[-1]

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _model(vocab, **config):
    values = {"model": "lstm", "d_model": 8, "hidden_size": 8, "d_ff": 8, "streams": 2, **config}
    return build_model(values, {"vocab": vocab})


@pytest.fixture
def vocab(treebank):
    return load_vocabulary(treebank["vocab"])


def _checkpoint(path: Path, model) -> Path:
    optimizer = torch.optim.AdamW(model.parameters())
    state = TrainingState(step=3)
    return save_checkpoint(path, model=model.state_dict(), optimizer=optimizer.state_dict(), state=state)


# --- a full disk ------------------------------------------------------------------------------------


def test_a_full_disk_reported_by_safetensors_is_an_oserror_enospc_leaving_no_partial_file(
    tmp_path, vocab, monkeypatch
):
    import syntaxlm.train.checkpoint as checkpoint_module

    def full(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\0" * 100)
        raise SafetensorError(SAFETENSORS_FULL_DISK)  # what safetensors raises, not an OSError

    monkeypatch.setattr(checkpoint_module, "save_file", full)
    with pytest.raises(OSError) as error:
        _checkpoint(tmp_path / "checkpoint.safetensors", _model(vocab))
    assert error.value.errno == errno.ENOSPC and Path(error.value.filename).parent == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_reported_by_safetensors_stops_the_run_with_a_training_error(
    treebank, tiny, tmp_path, monkeypatch
):
    import syntaxlm.train.checkpoint as checkpoint_module

    real_save_file = checkpoint_module.save_file
    calls = []

    def full_after_the_first(tensors, filename, metadata=None):
        calls.append(filename)
        if len(calls) > 1:
            raise SafetensorError(SAFETENSORS_FULL_DISK)
        real_save_file(tensors, filename, metadata=metadata)

    monkeypatch.setattr(checkpoint_module, "save_file", full_after_the_first)
    run = tmp_path / "run"
    with pytest.raises(TrainingError, match="no space left") as error:
        train(tiny_config(treebank, max_steps=12, checkpoint_every=6, eval_every=100), run, progress=False)
    assert f"{run / 'checkpoint.safetensors'} (step 6)" in str(error.value)
    assert load_checkpoint(run / "checkpoint.safetensors").state.step == 6


def test_a_real_full_disk_during_a_checkpoint_stops_the_run_and_resume_goes_on(
    treebank, tiny, tmp_path, small_disk
):
    disk = small_disk("disk", "4m")
    run = disk / "run"
    config = tiny_config(treebank, max_steps=6, checkpoint_every=6, eval_every=100)
    train(config, run, progress=False)
    checkpoint = run / "checkpoint.safetensors"
    # Fill the disk but for half a checkpoint: the next one cannot be written.
    filler = disk / "filler"
    stats = os.statvfs(disk)
    filler.write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - checkpoint.stat().st_size // 2))
    longer = tiny_config(treebank, max_steps=12, checkpoint_every=6, eval_every=100)
    with pytest.raises(TrainingError, match="no space left") as error:
        train(longer, run, resume=True, progress=False)
    assert f"{checkpoint} (step 6)" in str(error.value)
    assert not list(run.glob(".*.tmp")) and load_checkpoint(checkpoint).state.step == 6
    filler.unlink()
    assert train(longer, run, resume=True, progress=False).steps == 12


def test_the_synthetic_treebank_writer_reports_a_full_disk_as_a_typed_error(tmp_path, monkeypatch):
    from syntaxlm.data.synthetic import treebank

    def full(path, trees, **options):
        raise OSError(errno.ENOSPC, "No space left on device")  # a failed write() names no file

    monkeypatch.setattr(treebank, "write_trees", full)
    with pytest.raises(NoSpaceError) as error:
        treebank.write_synthetic_treebank(tmp_path / "data", sentences=20)
    assert f"no space left on the device of {tmp_path / 'data'}" in str(error.value)
    assert error.value.errno == errno.ENOSPC


def test_the_synthetic_treebank_on_a_real_full_disk_is_a_typed_error_and_leaves_no_partial_files(
    small_disk,
):
    from syntaxlm.data.synthetic import write_synthetic_treebank

    disk = small_disk("disk", "64k")
    with pytest.raises(NoSpaceError, match=f"no space left on the device of {disk / 'data'}"):
        write_synthetic_treebank(disk / "data", sentences=3000)
    assert not list((disk / "data").rglob(".*.tmp"))


def test_the_cli_reports_a_full_disk_in_one_line(small_disk):
    disk = small_disk("disk", "64k")
    result = subprocess.run(
        [sys.executable, "-m", "syntaxlm", "data", "synth", str(disk / "data"), "--sentences", "3000"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"error: no space left on the device of {disk / 'data'}" in result.stderr


def test_a_full_disk_outside_the_library_s_own_writes_is_one_clear_line(monkeypatch, capsys):
    from syntaxlm import cli

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "runs/x/model.safetensors")

    monkeypatch.setattr(cli, "app", full)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error: no space left on the device writing runs/x/model.safetensors; free space there or "
        "choose another folder"
    )


def test_a_recipe_describing_a_huge_model_is_refused_before_allocating_it(treebank, tiny, tmp_path):
    from syntaxlm.models import ModelTooLargeError

    with pytest.raises(ModelTooLargeError, match="more than 2,000,000,000 parameters.*d_model=1,000,000,000"):
        train(tiny_config(treebank, {"d_model": 1_000_000_000}), tmp_path / "run", progress=False)


# --- the tensors' hash is required ---------------------------------------------------------------------


def test_sealing_a_trusted_model_folder_and_checkpoint_from_the_command_line(tmp_path, vocab):
    folder = _model(vocab).save_pretrained(tmp_path / "model")
    checkpoint = _checkpoint(tmp_path / "checkpoint.safetensors", _model(vocab))
    for path in (folder / "model.safetensors", checkpoint):
        _drop_the_hash(path)
    with pytest.raises(ModelFileError, match="no tensors_sha256.*syntaxlm model seal"):
        load_model(folder)
    with pytest.raises(CheckpointError, match="no tensors_sha256.*syntaxlm model seal"):
        load_checkpoint(checkpoint)

    from syntaxlm.cli import app

    for path, target in ((folder, folder / "model.safetensors"), (checkpoint, checkpoint)):
        sealed = CliRunner().invoke(app, ["model", "seal", str(path)])
        assert sealed.exit_code == 0 and f"sealed {target}: tensors_sha256 " in sealed.output
        again = CliRunner().invoke(app, ["model", "seal", str(path)])
        assert again.exit_code == 0 and again.output.startswith("already sealed")
    load_model(folder)
    assert load_checkpoint(checkpoint).state.step == 3


def test_a_damaged_file_is_not_sealed(tmp_path, vocab):
    from syntaxlm.models.base import seal_tensors_file

    folder = _model(vocab).save_pretrained(tmp_path / "model")
    weights = folder / "model.safetensors"
    _flip_a_tensor_byte(weights)
    damaged = weights.read_bytes()
    with pytest.raises(ModelFileError, match="damaged; not sealed"):
        seal_tensors_file(weights)
    assert weights.read_bytes() == damaged


def test_sealing_through_a_link_seals_the_file_it_points_to_and_keeps_the_link(tmp_path, vocab):
    folder = _model(vocab).save_pretrained(tmp_path / "model")
    real = tmp_path / "elsewhere.safetensors"
    (folder / "model.safetensors").rename(real)
    (folder / "model.safetensors").symlink_to(real)
    _drop_the_hash(real)
    from syntaxlm.cli import app

    sealed = CliRunner().invoke(app, ["model", "seal", str(folder)])
    assert sealed.exit_code == 0, sealed.output
    assert f"sealed {real} (the file the link {folder / 'model.safetensors'} points to)" in sealed.output
    assert (folder / "model.safetensors").is_symlink()
    load_model(folder)  # through the link, the sealed file
    assert not list(tmp_path.glob(".*.tmp")) and not list(folder.glob(".*.tmp"))


# --- configs describing huge models ---------------------------------------------------------------------


def _edit_config(folder: Path, **values) -> None:
    document = json.loads((folder / "config.json").read_text())
    document["config"].update(values)
    (folder / "config.json").write_text(json.dumps(document))


@pytest.mark.parametrize(("key", "value"), [("d_model", 1_000_000_000), ("hidden_size", 100_000)])
def test_a_config_describing_a_huge_model_is_refused_before_allocating(tmp_path, vocab, key, value):
    folder = _model(vocab).save_pretrained(tmp_path / "model")
    _edit_config(folder, **{key: value})
    with pytest.raises(ModelFileError) as error:
        load_model(folder)
    message = str(error.value)
    assert str(folder / "config.json") in message and f"{key}={value:,}" in message
    assert "more than 2,000,000,000 parameters" in message and "SYNTAXLM_MAX_PARAMETERS" in message


def test_a_config_with_a_hundred_million_layers_is_refused_before_building_them(tmp_path, vocab):
    folder = _model(vocab).save_pretrained(tmp_path / "model")
    _edit_config(folder, n_layers=100_000_000)
    with pytest.raises(ModelFileError, match="n_layers=100,000,000: more than the 10,000"):
        load_model(folder)


def test_the_parameter_limit_is_set_by_an_environment_variable(tmp_path, vocab, monkeypatch):
    model = _model(vocab)
    count = sum(t.numel() for t in [*model.parameters(), *model.buffers()])
    folder = model.save_pretrained(tmp_path / "model")
    monkeypatch.setenv("SYNTAXLM_MAX_PARAMETERS", str(count // 2))
    with pytest.raises(ModelFileError, match=rf"model \(lstm\) of more than {count // 2:,} parameters"):
        load_model(folder)
    monkeypatch.setenv("SYNTAXLM_MAX_PARAMETERS", str(count * 2))
    load_model(folder)


# --- NaN weights and scores ---------------------------------------------------------------------------


def _with_nan(model):
    with torch.no_grad():
        next(iter(model.parameters())).view(-1)[0] = float("nan")
    return model


def test_nan_weights_in_a_model_folder_or_checkpoint_are_refused_naming_the_tensor(tmp_path, vocab):
    model = _with_nan(_model(vocab))
    name = next(iter(model.state_dict()))
    folder = model.save_pretrained(tmp_path / "model")  # with a valid hash
    with pytest.raises(ModelFileError, match=f"tensor '{name}' holds NaN") as error:
        load_model(folder)
    assert str(folder / "model.safetensors") in str(error.value)
    checkpoint = _checkpoint(tmp_path / "checkpoint.safetensors", model)
    with pytest.raises(CheckpointError, match=f"tensor 'model.{name}' holds NaN") as error:
        load_checkpoint(checkpoint)
    assert str(checkpoint) in str(error.value)


def test_resuming_from_a_checkpoint_with_nan_weights_is_refused(treebank, tiny, tmp_path):
    run = tmp_path / "run"
    config = tiny_config(treebank, max_steps=6, checkpoint_every=6, eval_every=100)
    train(config, run, progress=False)
    path = run / "checkpoint.safetensors"
    saved = load_checkpoint(path)
    name = next(iter(saved.model))
    saved.model[name].view(-1)[0] = float("nan")
    save_checkpoint(
        path, model=saved.model, optimizer=saved.optimizer, state=saved.state, carried=saved.carried
    )
    longer = tiny_config(treebank, max_steps=12, checkpoint_every=6, eval_every=100)
    with pytest.raises(CheckpointError, match=f"tensor 'model.{name}' holds NaN"):
        train(longer, run, resume=True, progress=False)


def _blimp_folder(folder: Path) -> Path:
    folder.mkdir()
    record = {
        "sentence_good": "the bird sings .",
        "sentence_bad": "the bird sing .",
        "UID": "regular_plural_subject_verb_agreement_1",
        "pairID": "0",
        "linguistics_term": "subject_verb_agreement",
        "field": "morphology",
    }
    (folder / "regular_plural_subject_verb_agreement_1.jsonl").write_text(json.dumps(record) + "\n")
    return folder


def test_every_command_writing_scores_refuses_nan_scores_naming_the_sentence(
    tmp_path, vocab, treebank, monkeypatch
):
    from syntaxlm.cli import app
    from syntaxlm.inference.scorer import NonFiniteScoreError
    from syntaxlm.models import base

    folder = _with_nan(_model(vocab)).save_pretrained(tmp_path / "model")
    monkeypatch.setattr(base, "check_finite", lambda *args: None)  # as if NaN came from the computation
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the bird sings .\n")
    suite = next((treebank["train"].parent / "suites").glob("*.json"))
    out = tmp_path / "out.json"
    commands = {
        "score": ["score", folder, sentences, "--out", out, "--no-progress"],
        "eval ppl": ["eval", "ppl", sentences, "--model", folder, "--out", out, "--no-progress"],
        "eval sg": ["eval", "sg", suite, "--model", folder, "--out", out],
        "eval blimp": ["eval", "blimp", "--data", _blimp_folder(tmp_path / "blimp"), "--model", folder]
        + ["--out", out],
    }
    for command, args in commands.items():
        result = CliRunner().invoke(app, [str(arg) for arg in args])
        assert isinstance(result.exception, NonFiniteScoreError), (command, result.output, result.exception)
        # score names a sentence by its id: the id column's, else its line number (from 1)
        named = "sentence 1 " if command == "score" else "sentence 0"
        assert named in str(result.exception) and "nan" in str(result.exception), command
        assert not out.exists(), command
