"""Recipes: the YAML files of ``configs/`` by name (``tg-tiny`` is ``configs/tg-tiny.yaml``), and a
recipe's ``RunConfig`` reading other treebank files: those of a data folder (``recipe_with_data``)
or the splits a job wrote (``recipe_on_splits``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError
from syntaxlm.models import ConfigError

RECIPE_FOLDER = "configs"


def recipe_folders() -> list[Path]:
    """Where recipe names are looked up: ``./configs``, then the ``configs`` of this checkout."""
    checkout = Path(__file__).resolve().parents[2] / RECIPE_FOLDER
    return list(dict.fromkeys([Path.cwd() / RECIPE_FOLDER, checkout]))


def recipe_names() -> list[str]:
    """Every recipe name found in ``recipe_folders()``."""
    return sorted({path.stem for folder in recipe_folders() for path in folder.glob("*.yaml")})


def find_recipe(name_or_path: str | Path) -> Path:
    """A recipe file: the path itself when it is one, else ``configs/NAME.yaml`` (``ConfigError`` if none)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        raise ConfigError(f"{path}: no such recipe file")
    for folder in recipe_folders():
        candidate = folder / f"{path.name}.yaml"
        if candidate.is_file():
            return candidate
    known = ", ".join(recipe_names()) or "none found"
    raise ConfigError(f"no recipe named {str(name_or_path)!r} in {RECIPE_FOLDER}/; known recipes: {known}")


def recipe_with_data(
    recipe: Path, data: Path | None, overrides: Sequence[str] = (), *, seed: int | None = None
):
    """The recipe's ``RunConfig`` with its treebank files looked up in ``data`` (by their file
    names: ``data/ptb/train.trees`` becomes ``DATA/train.trees``), then ``overrides`` applied."""
    from syntaxlm.files import read_text
    from syntaxlm.train.config import apply_overrides, parse_yaml, run_config

    document = parse_yaml(read_text(recipe, InputFormatError), where=str(recipe)) or {}
    section = document.get("data") or {}
    roles = [role for role in ("train", "valid", "test") if section.get(role)]
    if data is not None:
        if not Path(data).is_dir():
            raise FileNotFoundError(f"{data}: no such data folder")
        if section.get("synthetic") is not None:
            raise ConfigError(f"{recipe} trains on the synthetic treebank; it reads no --data")
        for role in roles:
            section[role] = str(Path(data) / Path(section[role]).name)
    changes = list(overrides) + ([f"train.seed={json.dumps(seed)}"] if seed is not None else [])
    apply_overrides(document, changes)
    if data is not None:  # checked after the overrides, which may name other files
        missing = [
            str(document["data"][role])
            for role in roles
            if document["data"].get(role) and not Path(document["data"][role]).is_file()
        ]
        if missing:
            raise ConfigError(
                f"{data}: missing {', '.join(missing)} (the file names {recipe.name} reads); give other "
                "files with --set data.train=PATH and so on"
            )
    where = str(recipe) + (f" (with {', '.join(changes)})" if changes else "")
    return run_config(document, where=where)


DATA_ROLES = (("train", "train"), ("valid", "dev"), ("test", "test"))  # recipe key, split


def recipe_on_splits(
    recipe_name: str | Path,
    splits: Mapping[str, Path],
    *,
    train: Mapping[str, Any],
    overrides: Sequence[str] = (),
    seed: int | None = None,
):
    """The recipe's ``RunConfig`` reading the treebank files ``splits`` (``train``, ``dev``,
    ``test``: those given), with ``train.KEY`` set to each value of ``train`` and then the
    ``KEY=VALUE`` ``overrides`` applied."""
    changes = [
        f"data.{role}={json.dumps(str(splits[split]))}" for role, split in DATA_ROLES if split in splits
    ]
    changes += [f"train.{key}={json.dumps(value)}" for key, value in train.items()]
    return recipe_with_data(find_recipe(recipe_name), None, [*changes, *overrides], seed=seed)

