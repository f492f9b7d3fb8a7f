"""The command line under faults and hostile options: outputs that cannot be written (a read-only
folder, a path through a file), outputs that would replace inputs, empty lists, sizes beyond what
the machine holds, and Ctrl-C. Each gives one ``error:`` line (or, for Ctrl-C, one line saying what
was kept), never a traceback, and nothing the user had is lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from syntaxlm import cli
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from tests.test_beam import TINY


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A synthetic treebank and an untrained words-only model saved from it."""
    folder = tmp_path_factory.mktemp("faults")
    write_synthetic_treebank(folder / "data", sentences=60, seed=0, items_per_suite=2)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    torch.manual_seed(0)
    build_model({"model": "lm", **TINY}, {"vocab": vocab}).save_pretrained(folder / "lm")
    (folder / "sentences.txt").write_text("the dog barks\n", encoding="utf-8")
    return folder


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str]:
    """``syntaxlm ARGS`` through the console entry point, in this process: exit status and stderr."""
    monkeypatch.setattr(sys, "argv", ["syntaxlm", *map(str, args)])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    return stopped.value.code, capsys.readouterr().err


@pytest.fixture
def read_only_folder(tmp_path):
    """A read-only file system (a tmpfs mounted ``ro``). Skips where the tests may not mount one."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True, text=True
        )
    except FileNotFoundError:
        pytest.skip("no mount command here: read-only folders are tested where tests may mount a tmpfs")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); CI runs the tests as root")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


def test_every_writing_command_says_in_one_line_that_a_read_only_folder_cannot_be_written(
    tiny, read_only_folder, monkeypatch, capsys
):
    ro = read_only_folder
    data, lm, sentences = tiny / "data", tiny / "lm", tiny / "sentences.txt"
    commands = {
        ro / "x.tsv": ["score", lm, sentences, "--out", ro / "x.tsv", "--no-progress"],
        ro / "p.json": ["eval", "ppl", sentences, "--model", lm, "--out", ro / "p.json", "--no-progress"],
        ro / "g.txt": ["generate", lm, "-n", "1", "--out", ro / "g.txt"],
        ro / "c.trees": ["data", "clean", data / "test.trees", ro / "c.trees"],
        ro / "synth": ["data", "synth", ro / "synth", "--sentences", "30"],
        ro / "split": ["data", "split", data / "train.trees", "--ratio", "0.8,0.1,0.1", "--out", ro / "split"],
        ro / "vocab": ["vocab", "build", data / "train.trees", "--out", ro / "vocab"],
        ro / "view.html": ["view", tiny / "lm", "--no-models", "--out", ro / "view.html"],
    }
    for named, args in commands.items():
        status, err = run_cli(monkeypatch, capsys, *args)
        assert status == 2 and "Traceback" not in err, (args, err)
        assert f"error: cannot write {named}: the file system is read-only" in err, (args, err)


def test_an_output_through_a_file_or_onto_an_input_is_refused_and_the_input_kept(tiny, tmp_path, monkeypatch,
                                                                                  capsys):  # fmt: skip
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "dev", "test"):
        (corpus / f"{split}.trees").write_bytes((tiny / "data" / f"{split}.trees").read_bytes())
    before = {path.name: path.read_bytes() for path in corpus.iterdir()}
    status, err = run_cli(monkeypatch, capsys, "data", "split", corpus, "--ratio", "0.8,0.1,0.1", "--out", corpus)
    assert status == 2 and f"the output {corpus / 'train.trees'} is an input of this command" in err
    assert {path.name: path.read_bytes() for path in corpus.iterdir()} == before  # the test set is not lost

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the dog barks\n", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(sentences)
    for args in (
        ["score", tiny / "lm", sentences, "--out", link, "--no-progress"],
        ["data", "clean", corpus / "test.trees", corpus / "test.trees"],
    ):
        status, err = run_cli(monkeypatch, capsys, *args)
        assert status == 2 and "writing it would replace what is read" in err, (args, err)
    assert sentences.read_text(encoding="utf-8") == "the dog barks\n"

    a_file = corpus / "test.trees"
    for out, problem in ((a_file, f"cannot make the folder {a_file}: a file of that name is there"),
                         (a_file / "sub", f"cannot use {a_file / 'sub'}: a part of the path is a file")):  # fmt: skip
        status, err = run_cli(monkeypatch, capsys, "data", "split", tiny / "data" / "train.trees",
                              "--ratio", "0.8,0.1,0.1", "--out", out)  # fmt: skip
        assert status == 2 and problem in err and "Traceback" not in err, err
    assert a_file.read_bytes() == before["test.trees"]


def test_an_empty_list_or_a_model_that_is_not_a_language_model_is_refused_before_any_work(
    tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out"
    for args, problem in (
        (["experiment", "curve", "--models", ""], "Invalid value for --models: '': expected comma-separated"),
        (["quickstart", "--models", " , "], "Invalid value for --models"),
        (["experiment", "curve", "--sizes", ","], "Invalid value for --sizes"),
        (["experiment", "curve", "--models", "parser"], "parser: not a language model"),
    ):
        status, err = run_cli(monkeypatch, capsys, *args, "--out", out)
        assert status == 2 and problem in err, (args, err)
        assert not out.exists()


def test_a_size_beyond_the_machines_memory_is_refused_before_allocating(tmp_path, monkeypatch, capsys):
    for args in (
        ["data", "synth", tmp_path / "synth", "--sentences", 10**12],
        ["experiment", "curve", "--out", tmp_path / "curve", "--sizes", 10**12, "--models", "lm"],
    ):
        status, err = run_cli(monkeypatch, capsys, *args)
        assert status == 2 and "for the synthetic treebank's trees, more than the" in err and "at most" in err, (args, err)
    assert not (tmp_path / "synth").exists()


def test_every_command_says_what_was_kept_on_ctrl_c(tiny, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("syntaxlm.data.sentences.read_stimuli", interrupted)
    status, err = run_cli(monkeypatch, capsys, "score", tiny / "lm", tiny / "sentences.txt")
    assert status == 130 and err.strip().startswith("interrupted; files this command finished are kept")

    def commands(typer_app):
        for info in typer_app.registered_commands:
            yield info.callback
        for group in typer_app.registered_groups:
            yield from commands(group.typer_instance)

    unguarded = [command.__name__ for command in commands(cli.app) if not hasattr(command, "__wrapped__")]
    assert not unguarded


@pytest.mark.parametrize(
    "error, message",
    [
        (OSError(30, "Read-only file system", "out/x.tsv"), "cannot write out/x.tsv: the file system is read-only"),
        (PermissionError(13, "Permission denied", "out/x.tsv"), "cannot open out/x.tsv: permission denied"),
        (OSError(28, "No space left on device"), "no space left on the device writing a file"),
        (FileNotFoundError(2, "No such file or directory", "in.txt"), "no such file or folder: in.txt"),
        (FileNotFoundError("no such model folder: m"), "no such model folder: m"),
    ],
)
def test_a_failed_file_operation_is_one_line(error, message, monkeypatch, capsys):
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(cli, "app", fail)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 2 and capsys.readouterr().err.strip().startswith(f"error: {message}")
