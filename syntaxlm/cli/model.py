"""``syntaxlm model``: saved models and checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

model_app = typer.Typer(no_args_is_help=True, help="Saved models and checkpoints: sealing trusted files.")


@model_app.command("seal")
def model_seal(
    path: Annotated[
        Path,
        typer.Argument(help="A saved model folder (its model.safetensors) or a checkpoint.safetensors file."),
    ],
) -> None:
    """Write the sha256 of a trusted file's tensors into its header, so that it loads again.

    Loading refuses model weights and checkpoints without a tensors_sha256 (files written before
    syntaxlm hashed them, or whose hash was removed). Seal only a file you trust: from then on any
    change to its tensors is detected. A file whose header holds a different hash is damaged and
    is not sealed.
    """
    from syntaxlm.models.base import WEIGHTS_FILE, seal_tensors_file

    target = path / WEIGHTS_FILE if path.is_dir() else path
    if not target.is_file():
        raise FileNotFoundError(f"no such model folder or safetensors file: {path}")
    digest, changed = seal_tensors_file(target)
    linked = f" (the file the link {target} points to)" if target.is_symlink() else ""
    sealed = target.resolve() if linked else target
    typer.echo(f"{'sealed' if changed else 'already sealed'} {sealed}{linked}: tensors_sha256 {digest}")
