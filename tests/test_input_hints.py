"""Errors that say what to do instead: a training run's folder given where a model folder is
expected, and trees without POS tags read as Penn trees (the recipes' default)."""

import json

import pytest

from syntaxlm.errors import MissingPosTagError
from syntaxlm.models import ModelFileError, load_model
from syntaxlm.train import train
from syntaxlm.train.config import run_config
from tests.test_cli import run

POSLESS = "(S (NP the bird) (VP sings))\n(S (NP it) (VP flew))\n"


def make_run_folder(folder, models=("best", "last")):
    """What ``syntaxlm train`` leaves in a run folder, with empty stand-ins for the models."""
    folder.mkdir()
    run_record = {"model": "tg", "train_config": {"model": {"model": "tg"}}}
    (folder / "config.json").write_text(json.dumps(run_record))
    for name in models:
        (folder / name).mkdir()
        (folder / name / "config.json").write_text("{}")
    return folder


def test_a_run_folder_given_as_a_model_names_its_models(tmp_path):
    both = make_run_folder(tmp_path / "wsj-tg")
    with pytest.raises(ModelFileError) as error:
        load_model(both)
    assert str(error.value) == (
        f"{both}: a training run folder, not a saved model; its models are {both}/best and {both}/last"
    )
    only_last = make_run_folder(tmp_path / "early", models=("last",))
    with pytest.raises(ModelFileError, match=r"; its model is .*early/last$"):
        load_model(only_last)
    (only_last / "config.json").unlink()  # found by last/ alone
    with pytest.raises(ModelFileError, match=r"a training run folder, not a saved model; its model is"):
        load_model(only_last)
    started = make_run_folder(tmp_path / "started", models=())
    with pytest.raises(ModelFileError, match=r"holds none yet; its models will be .*/best and .*/last$"):
        load_model(started)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ModelFileError, match=r"no config.json \(is this a saved model folder\?\)"):
        load_model(plain)


def test_score_names_the_run_folders_models(tmp_path):
    folder = make_run_folder(tmp_path / "wsj-tg", models=("best",))
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the bird sings\n")
    result = run("score", folder, sentences)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {folder}: a training run folder, not a saved model; its model is {folder}/best"
    )


def test_training_on_trees_without_pos_tags_says_how_to_read_them(tmp_path):
    trees = tmp_path / "choe-charniak.trees"
    trees.write_text(POSLESS)
    values = {
        "model": {"model": "lm", "d_model": 8, "n_layers": 1, "n_heads": 1, "d_ff": 8},
        "data": {"train": str(trees), "valid": str(trees)},
        "train": {"max_steps": 1, "device": "cpu"},
    }
    with pytest.raises(MissingPosTagError) as error:
        train(run_config(values, where="test"), tmp_path / "run", progress=False)
    assert str(error.value).endswith(
        "(sentence 0); the recipes read Penn trees with POS tags: clean with "
        "`syntaxlm data clean --style ptb` (not choe-charniak), or read trees without POS tags with "
        "data.pos_tags=false "
        "(--set data.pos_tags=false)"
    )
    values["data"]["pos_tags"] = False
    result = train(run_config(values, where="test"), tmp_path / "run", progress=False)
    assert result.steps == 1
