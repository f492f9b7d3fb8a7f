"""``syntaxlm ... --help``: readable at 80 columns, and option texts that hold for their command."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from syntaxlm.cli import app


def commands(group, path: tuple[str, ...] = ()):
    """``(words, command)`` for every command under ``group``, subcommands included."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


ALL_COMMANDS = list(commands(typer.main.get_command(app)))


def help_text(*words: str) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_data_clean_help_shows_every_option_name_in_full_at_80_columns():
    text = help_text("data", "clean")
    for name in ("--style", "--remove-punctuation", "--no-remove-punctuation", "--collapse-unary"):
        assert name in text
    assert "…" not in text and max(map(len, text.splitlines())) <= 80


@pytest.mark.parametrize(("words", "command"), ALL_COMMANDS, ids=[" ".join(w) for w, _ in ALL_COMMANDS])
def test_every_help_shows_its_option_names_in_full_at_80_columns(words, command):
    text = help_text(*words)
    for parameter in command.params:
        for name in (*parameter.opts, *parameter.secondary_opts):
            if name.startswith("-"):  # an option's name, not an argument's
                assert name in text, f"{' '.join(words)}: {name}"
    assert "…" not in text


def flat_help(*words: str) -> str:
    return " ".join(help_text(*words).split())


@pytest.mark.parametrize("name", ["sg", "parse", "uf1", "blimp", "ppl", "gen"])
def test_eval_json_prints_one_object(name):
    text = flat_help("eval", name)
    assert "--json Print the result as one JSON object." in text and "record per line" not in text


@pytest.mark.parametrize("name", ["tg", "actions", "distances", "som"])
def test_inspect_json_prints_one_record_per_line(name):
    assert "--json Print JSON, one record per line." in flat_help("inspect", name)


@pytest.mark.parametrize("name", ["sg", "blimp", "ppl"])
def test_eval_commands_that_score_with_a_model_take_no_progress(name):
    assert "--progress / --no-progress Show a progress bar (on stderr)." in flat_help("eval", name)
