"""Model files from other people: a pickle is refused without executing anything."""

from __future__ import annotations

import pytest
import torch

from syntaxlm.models import ModelFileError, build_model, load_model
from syntaxlm.text.vocab import WordVocab
from syntaxlm.train.checkpoint import CheckpointError, load_checkpoint

MARKER = "syntaxlm-pickle-ran"


class Payload:
    """Unpickling this would create a marker file: the attack a pickle-based model file can carry."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


@pytest.fixture
def pickled(tmp_path):
    marker = tmp_path / MARKER
    path = tmp_path / "payload.bin"
    torch.save({"weights": Payload(marker)}, path)
    assert not marker.exists()
    return path, marker


def _saved_model(folder):
    vocab = WordVocab.build([["the", "bird"]], min_freq=1, symbols=["(S", "S)"])
    config = {"model": "tg", "d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 8}
    return build_model(config, {"vocab": vocab}).save_pretrained(folder)


def test_a_pickle_as_model_weights_is_refused_unexecuted(tmp_path, pickled):
    path, marker = pickled
    folder = _saved_model(tmp_path / "model")
    (folder / "model.safetensors").write_bytes(path.read_bytes())
    with pytest.raises(ModelFileError, match="cannot read the weights"):
        load_model(folder)
    assert not marker.exists()


def test_a_pickle_as_checkpoint_is_refused_unexecuted(tmp_path, pickled):
    path, marker = pickled
    checkpoint = tmp_path / "checkpoint.safetensors"
    checkpoint.write_bytes(path.read_bytes())
    with pytest.raises(CheckpointError):
        load_checkpoint(checkpoint)
    assert not marker.exists()


def test_a_config_naming_unknown_code_is_refused(tmp_path):
    folder = _saved_model(tmp_path / "model")
    text = (folder / "config.json").read_text().replace('"model": "tg"', '"model": "os.system"')
    (folder / "config.json").write_text(text)
    with pytest.raises(ModelFileError, match="unknown model 'os.system'"):
        load_model(folder)
