"""The one interface every model implements (``SyntacticLM``), its config and its files.

A model is an ``nn.Module`` with a small dataclass config and the vocabularies it reads. The
trainer, the evaluations and the CLI talk to models only through this class:

- ``prepare(trees)`` turns a treebank into the model's training corpus (numpy rows, made once);
- ``loss(batch, state)`` returns per-part *sums* of negative log-likelihood (nats) and how many
  targets each sum covers, so that the trainer can normalise over a whole global batch (gradient
  accumulation and data parallelism then give the numbers of one big batch); ``loss_weights``
  says how the parts combine (SCLM: ``(1 − α)·lm + α·scaffold``); ``state`` carries what a stream
  of segments passes on (Transformer-XL memory);
- ``word_logprobs(sentences)``: natural-log ``p(word | prefix)`` per word;
- ``action_grammar()`` and ``decoder()``: what beam search, parsing and sampling drive
  (``models.decoding``);
- ``induced_trees(sentences)``: the trees of models that induce structure (``induces_trees``);
- ``save_pretrained(folder)`` / ``from_pretrained(folder)`` (= ``syntaxlm.models.load_model``):
  ``config.json`` + ``model.safetensors``
  + the vocabulary folders. Loading checks every tensor's name and shape and says what differs.
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus
from syntaxlm.errors import InputFormatError, SyntaxlmError
from syntaxlm.files import atomic_writer, read_json
from syntaxlm.models.decoding import ActionGrammar, Decoder

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class ModelFileError(InputFormatError):
    """A saved model folder that is missing a file or does not match its config."""


class ConfigError(SyntaxlmError, ValueError):
    """A configuration with an unknown key, a value of the wrong type or an impossible setting."""


@dataclass
class ModelConfig:
    """Fields every model config has; each model adds its own (a flat dataclass, JSON/YAML-able)."""

    model: str = ""
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def check(self) -> None:
        """Raise ``ConfigError`` for settings that cannot build a model."""
        for name in ("d_model", "n_layers", "n_heads", "d_ff"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model ({self.d_model}) must be a multiple of model.n_heads ({self.n_heads})"
            )
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"model.dropout must be in [0, 1), got {self.dropout}")


@dataclass
class LossOutput:
    """Negative log-likelihood sums (nats) per named part over the rows of a batch, the target
    counts of the *global* batch those rows belong to (``Batch.counts``: the denominators the
    trainer divides by, the same on every process), and the state to pass with the next batch of
    the same streams (``None`` when the model carries nothing)."""

    sums: dict[str, Tensor]
    counts: dict[str, int]
    state: Any = None


@dataclass
class Sample:
    """A generated sentence: its words, the tree when the model generates one, and its log-prob."""

    words: list[str]
    tree: Any = None
    logprob: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class SyntacticLM(nn.Module, ABC):
    """Base class of every model; subclasses set ``config_class`` and ``name``."""

    config_class: ClassVar[type[ModelConfig]] = ModelConfig
    # What ``prepare`` takes: "constituency" (``Tree``s, PTB files and the synthetic treebank) and/or
    # "dependency" (``DepTree``s, CoNLL-U files).
    reads: ClassVar[tuple[str, ...]] = ("constituency",)

    def __init__(self, config: ModelConfig, vocabularies: dict[str, Any]):
        super().__init__()
        config.check()
        self.config = config
        self.vocabularies = dict(vocabularies)

    # --- vocabularies -------------------------------------------------------------------------

    @classmethod
    def vocabularies_for(cls, config: ModelConfig, trees: Sequence[Any], vocab) -> dict[str, Any]:
        """The vocabularies a new model reads, given its training trees and text vocabulary."""
        return {"vocab": vocab}

    @classmethod
    def load_vocabularies(cls, folder: Path, names: Sequence[str]) -> dict[str, Any]:
        from syntaxlm.text.base import load_vocabulary

        return {name: load_vocabulary(Path(folder) / name) for name in names}

    @property
    def vocab(self):
        """The text vocabulary (words or subwords with the atomic nonterminal symbols)."""
        return self.vocabularies["vocab"]

    # --- what every model defines -------------------------------------------------------------

    @property
    def loss_weights(self) -> dict[str, float]:
        """How the parts of ``LossOutput.sums`` combine into the training objective."""
        return {"lm": 1.0}

    @abstractmethod
    def prepare(self, trees: Sequence[Any]) -> RowCorpus:
        """The training corpus of ``trees``: ``Tree``s in the Choe–Charniak view (no POS tags), or
        ``DepTree``s for models whose ``reads`` include "dependency"."""

    @abstractmethod
    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """Per-part NLL sums of a batch from ``prepare``; ``state`` is the previous ``LossOutput.state``."""

    @abstractmethod
    def action_grammar(self) -> ActionGrammar:
        """Which vocabulary ids build trees and which are words (``models.decoding``)."""

    @abstractmethod
    def decoder(self) -> Decoder:
        """An incremental decoder over this model (``models.decoding``): search and sampling use it."""

    @abstractmethod
    def word_logprobs(self, sentences: Sequence[Sequence[str]], **options) -> list[Tensor]:
        """Natural-log ``p(word | prefix)`` of every word of every sentence."""

    # --- models that induce structure (PRPN, SOM) ---------------------------------------------

    induces_trees: ClassVar[bool] = False

    def induced_trees(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 16) -> list[Any]:
        """The unlabelled binary tree the model builds over each sentence (PRPN's distances, SOM's
        memory decisions). Only models with ``induces_trees = True`` have one; ``inference.parse``
        calls this for them and beam search for joint models."""
        raise TypeError(f"{self.config.model} does not induce trees")

    # --- files --------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def save_pretrained(self, folder: str | Path) -> Path:
        """Write ``config.json``, ``model.safetensors`` and each vocabulary into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, vocabulary in self.vocabularies.items():
            vocabulary.save(folder / name)
        # Cloned: safetensors refuses tensors that share memory (tied weights).
        tensors = {name: t.detach().cpu().clone().contiguous() for name, t in self.state_dict().items()}
        tmp = folder / f".{WEIGHTS_FILE}.tmp"
        save_file(tensors, str(tmp), metadata={"model": self.config.model})
        tmp.replace(folder / WEIGHTS_FILE)
        document = {"config": self.config.to_dict(), "vocabularies": sorted(self.vocabularies)}
        with atomic_writer(folder / CONFIG_FILE) as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
        return folder

    @classmethod
    def from_pretrained(cls, folder: str | Path, *, map_location: str = "cpu") -> SyntacticLM:
        """The model saved in ``folder`` (whatever its class; see ``syntaxlm.models.load_model``)."""
        from syntaxlm.models import load_model

        return load_model(folder, map_location=map_location)

    def load_weights(self, tensors: dict[str, Tensor], *, source: str) -> None:
        """Copy ``tensors`` into the model after checking names and shapes (``ModelFileError``)."""
        own = self.state_dict()
        missing = sorted(set(own) - set(tensors))
        unexpected = sorted(set(tensors) - set(own))
        wrong = [
            f"{name}: file {tuple(tensors[name].shape)}, model {tuple(own[name].shape)}"
            for name in sorted(set(own) & set(tensors))
            if tensors[name].shape != own[name].shape
        ]
        problems = []
        if missing:
            problems.append(
                f"missing tensors {', '.join(missing[:5])}" + (" ..." if len(missing) > 5 else "")
            )
        if unexpected:
            problems.append(
                f"unexpected tensors {', '.join(unexpected[:5])}" + (" ..." if len(unexpected) > 5 else "")
            )
        if wrong:
            problems.append("shape mismatch " + "; ".join(wrong[:5]))
        if problems:
            raise ModelFileError(
                "weights do not fit the model its config describes: " + "; ".join(problems), path=source
            )
        self.load_state_dict(tensors)


def config_from_dict(config_class: type[ModelConfig], values: dict[str, Any], *, where: str) -> ModelConfig:
    """``config_class(**values)`` with a ``ConfigError`` naming ``where`` for unknown or mistyped keys."""
    known = {f.name: f for f in dataclasses.fields(config_class)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)} for model {values.get('model', '?')!r}; "
            f"expected some of {', '.join(sorted(known))}"
        )
    defaults = config_class()
    checked = {}
    for name, value in values.items():
        expected = type(getattr(defaults, name))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if expected is type(None) or getattr(defaults, name) is None:
            checked[name] = value
            continue
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(
                f"{where}: {name} must be {expected.__name__}, got {type(value).__name__} {value!r}"
            )
        checked[name] = value
    return config_class(**checked)


def read_model_config(folder: str | Path) -> dict[str, Any]:
    """The ``config.json`` document of a saved model folder."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise ModelFileError(f"no {CONFIG_FILE} (is this a saved model folder?)", path=folder)
    document = read_json(path, ModelFileError, expected="a saved model config")
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise ModelFileError("not a saved model config", path=path, expected='{"config": {...}}')
    return document


def read_weights(folder: str | Path) -> dict[str, Tensor]:
    path = Path(folder) / WEIGHTS_FILE
    if not path.is_file():
        raise ModelFileError(f"no {WEIGHTS_FILE}", path=folder)
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as error:
        raise ModelFileError(f"cannot read the weights: {error}", path=path) from None
