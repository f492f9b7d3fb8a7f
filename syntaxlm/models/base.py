"""The one interface every language model implements (``SyntacticLM``), its config and its files.

A model is an ``nn.Module`` with a small dataclass config and the vocabularies it reads. What the
trainer needs (``prepare``, ``loss``, ``validation_part`` and ``baseline_loss``, the files) is
``TrainedModel``, which the proposal parser (``models.span_parser``) also is; the evaluations and
the CLI talk to language models through ``SyntacticLM``, which adds the rest:

- ``prepare(trees)`` turns a treebank into the model's training corpus (numpy rows, made once),
  reporting every tree it drops or cuts with ``report_problem`` (``prepare_with_problems`` collects
  them into ``DataProblems``); ``unknown_nonterminals(trees)`` names the labels it cannot spell;
- ``loss(batch, state)`` returns per-part *sums* of negative log-likelihood (nats) and how many
  targets each sum covers, so that the trainer can normalise over a whole global batch (gradient
  accumulation and data parallelism then give the numbers of one big batch); ``loss_weights``
  says how the parts combine (SCLM: ``(1 − α)·lm + α·scaffold``); ``state`` carries what a stream
  of segments passes on (Transformer-XL memory);
- ``word_logprobs(sentences)``: natural-log ``p(word | prefix)`` per word, the same for every model
  (``models.scoring``: checks, length batches, eval mode, word sums and ``</s>``) around two hooks,
  ``scoring_items`` (what the network reads for each sentence) and ``target_logprobs`` (the
  log-probabilities of a batch's targets);
- ``action_grammar()`` and ``decoder()``: what beam search, parsing and sampling drive
  (``models.decoding``);
- ``induced_trees(sentences)``: the trees of models that induce structure (``induces_trees``);
- ``card`` (``joint`` from it): the registry's facts of the model (``syntaxlm.models.ModelCard``:
  label, paper, baseline, joint, figures); ``structure_mask``, ``attention_maps`` and
  ``syntactic_distances``: what ``report.model_figures`` draws, for the models whose card says so;
- ``save_pretrained(folder)`` / ``from_pretrained(folder)`` (= ``syntaxlm.models.load_model``):
  ``config.json`` + ``model.safetensors``
  + the vocabulary folders. Loading checks every tensor's name and shape and says what differs.

``model.safetensors`` carries in its header the sha256 of its tensors (``tensors_sha256``) and of
the config it was saved with (``config_sha256``). Loading requires the tensors' hash (a file without
one is refused; ``seal_tensors_file`` = ``syntaxlm model seal`` adds it to a file the user trusts),
refuses NaN and infinite weights, and checks the config's hash when present.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save_file
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus, unigram_loss
from syntaxlm.data.treebank import DataProblems
from syntaxlm.errors import ConfigError, InputFormatError
from syntaxlm.files import atomic_writer, read_json, temporary_file_beside
from syntaxlm.models.decoding import ActionGrammar, Decoder
from syntaxlm.models.scoring import ScoringItem, checked_sentences, evaluating, length_batches, word_sums

if TYPE_CHECKING:
    import numpy as np

    from syntaxlm.models import ModelCard

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TENSORS_SHA256 = "tensors_sha256"  # safetensors header key: ``tensors_sha256`` of the file's tensors
CONFIG_SHA256 = "config_sha256"  # safetensors header key: sha256 of the config.json document saved with them
TRANSFORMER_FIELDS = ("n_heads", "d_ff")  # the fields ``TransformerConfig`` adds


class ModelFileError(InputFormatError):
    """A saved model folder that is missing a file or does not match its config."""


@dataclass
class ModelConfig:
    """Fields every model config has; each family adds its own (a flat dataclass, JSON/YAML-able)."""

    model: str = ""
    d_model: int = 64
    n_layers: int = 2
    dropout: float = 0.1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def check(self) -> None:
        """Raise ``ConfigError`` for settings that cannot build a model."""
        for name in ("d_model", "n_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"model.dropout must be in [0, 1), got {self.dropout}")


@dataclass
class TransformerConfig(ModelConfig):
    """The fields of the transformer families: ``n_heads`` attention heads (dividing ``d_model``)
    and the feed-forward width ``d_ff``."""

    n_heads: int = 4
    d_ff: int = 256

    def check(self) -> None:
        super().check()
        for name in ("n_heads", "d_ff"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model ({self.d_model}) must be a multiple of model.n_heads ({self.n_heads})"
            )


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


@dataclass
class AttentionMap:
    """One layer's attention for one input (``SyntacticLM.attention_maps``): ``weights[h, i, j]``
    (probabilities, rows sum to 1) and ``mask[h or 0, i, j]`` (``True`` = may attend) over the
    ``tokens`` the model read."""

    tokens: list[str]
    weights: np.ndarray
    mask: np.ndarray


class TrainedModel(nn.Module, ABC):
    """What every model ``syntaxlm train`` trains has: a config, vocabularies, a training corpus and
    loss, and its files. Subclasses set ``config_class`` and ``name``; the language models are
    ``SyntacticLM``s, the proposal parser (``models.span_parser``) is not one."""

    config_class: ClassVar[type[ModelConfig]] = ModelConfig
    # What ``prepare`` takes: "constituency" (``Tree``s, PTB files and the synthetic treebank) and/or
    # "dependency" (``DepTree``s, CoNLL-U files).
    reads: ClassVar[tuple[str, ...]] = ("constituency",)

    def __init__(self, config: ModelConfig, vocabularies: dict[str, Any]):
        super().__init__()
        config.check()
        self.config = config
        self.vocabularies = dict(vocabularies)
        self._problems: DataProblems | None = None  # collecting what prepare reports

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

    def report_problem(self, kind: str, index: int, meaning: str) -> None:
        """What ``prepare`` calls for each tree it drops or cuts: ``kind`` a short name (``too_long``),
        ``index`` the tree's index in ``trees``, ``meaning`` what it is and what was done ("longer than
        max_length 512 positions; dropped"). Collected by ``prepare_with_problems``."""
        if self._problems is not None:
            self._problems.add(kind, index, meaning)

    def prepare_with_problems(self, trees: Sequence[Any]) -> tuple[RowCorpus, DataProblems]:
        """``prepare(trees)`` and the problems it reported (indices into ``trees``)."""
        self._problems = problems = DataProblems()
        try:
            corpus = self.prepare(trees)
        finally:
            self._problems = None
        return corpus, problems

    def unknown_nonterminals(self, trees: Sequence[Any]) -> dict[int, list[str]]:
        """``{tree index: its nonterminal symbols the vocabulary lacks}`` for the trees ``prepare``
        could not spell; models that read only the words have none."""
        return {}

    @abstractmethod
    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """Per-part NLL sums of a batch from ``prepare``; ``state`` is the previous ``LossOutput.state``."""

    # The part of ``LossOutput.sums`` whose per-target mean is the validation loss, and the name of
    # what one target is, in the trainer's log.
    validation_part: ClassVar[str] = "lm"
    target_unit: ClassVar[str] = "token"

    @property
    def loss_unit(self) -> str:
        """The unit of the validation loss, as the trainer prints it."""
        return f"nats/{self.target_unit}"

    @property
    def loss_note(self) -> str | None:
        """What a reader of the validation loss must know to compare it with other models', if anything."""
        return None

    def baseline_loss(self, train: RowCorpus, valid: RowCorpus) -> tuple[str, float]:
        """A validation loss every trained model must beat clearly, and what it is: for language
        models, the add-one-smoothed unigram distribution of the training targets."""
        return "unigram", unigram_loss(train, valid, vocab_size=len(self.vocab))

    # --- files --------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def extra_repr(self) -> str:
        """The first line of ``repr(model)``: which registered model this is (``config.model``),
        since one class serves several (``TransformerGrammar``: TG and both TXL baselines)."""
        return f"model={self.config.model!r}"

    def save_pretrained(self, folder: str | Path) -> Path:
        """Write ``config.json``, ``model.safetensors`` and each vocabulary into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, vocabulary in self.vocabularies.items():
            vocabulary.save(folder / name)
        # Cloned: safetensors refuses tensors that share memory (tied weights).
        tensors = {name: t.detach().cpu().clone().contiguous() for name, t in self.state_dict().items()}
        document = {"config": self.config.to_dict(), "vocabularies": sorted(self.vocabularies)}
        metadata = {
            "model": self.config.model,
            TENSORS_SHA256: tensors_sha256(tensors),
            CONFIG_SHA256: document_sha256(document),
        }
        tmp = folder / f".{WEIGHTS_FILE}.tmp"
        try:
            with safetensors_write_errors(tmp):
                save_file(tensors, str(tmp), metadata=metadata)
            tmp.replace(folder / WEIGHTS_FILE)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        with atomic_writer(folder / CONFIG_FILE) as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
        return folder

    @classmethod
    def from_pretrained(cls, folder: str | Path, *, map_location: str = "cpu") -> TrainedModel:
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


JOINT_LOSS_NOTE = (
    "a joint model's validation loss is per token of its words and its tree's actions (the actions are "
    "easy to predict), so it is lower than a words-only model's without being better: compare models "
    "by perplexity per word (syntaxlm eval ppl)"
)


class SyntacticLM(TrainedModel):
    """Base class of every language model: a words-only model, a joint model of words and trees,
    or one that induces trees; what scoring, search, sampling and the figures use."""

    @abstractmethod
    def action_grammar(self) -> ActionGrammar:
        """Which vocabulary ids build trees and which are words (``models.decoding``)."""

    @abstractmethod
    def decoder(self) -> Decoder:
        """An incremental decoder over this model (``models.decoding``): search and sampling use it."""

    def longest_sentence(self) -> int | None:
        """The most pieces (vocabulary tokens) a sentence may have for this model to score it, or
        None where the model has no limit (recurrent and segment-with-memory models)."""
        return None

    # --- scoring: models give the two hooks, ``scoring_items`` and ``target_logprobs`` ---------

    scoring_batch_size: ClassVar[int] = 16  # sentences per batch when word_logprobs is not told

    def word_logprobs(
        self,
        sentences: Sequence[Sequence[str]],
        *,
        trees: Sequence[Any] | None = None,
        eos: bool = False,
        batch_size: int | None = None,
    ) -> list[Tensor]:
        """Natural-log ``p(word | prefix)`` of every word (its pieces summed), one float64 tensor per
        sentence, in eval mode; ``eos=True`` appends one more entry, ``log p(</s> | sentence)`` (for
        joint models, the actions after the last word), so that the entries sum to ``log p(x)``
        (``log p(x, y)``). Joint models of words and trees score the words along ``trees=`` (one
        per sentence); marginalising over trees is ``syntaxlm.inference``'s work."""
        batch_size = self.scoring_batch_size if batch_size is None else batch_size
        sentences = checked_sentences(sentences, batch_size)
        items = self.scoring_items(sentences, trees)
        scores: list[Tensor] = [torch.zeros(0)] * len(items)
        with evaluating(self):
            for chosen in self.scoring_batches(items, batch_size):
                for i, values in zip(chosen, self.target_logprobs([items[i] for i in chosen]), strict=True):
                    scores[i] = values
        return [
            word_sums(values, item.group, len(words), eos=eos)
            for words, item, values in zip(sentences, items, scores, strict=True)
        ]

    @abstractmethod
    def scoring_items(self, sentences: list[list[str]], trees: Sequence[Any] | None) -> list[ScoringItem]:
        """What the network reads to score each (checked) sentence, and the word of each target."""

    @abstractmethod
    def target_logprobs(self, items: list[ScoringItem]) -> list[Tensor]:
        """The natural-log probability of every target of every item of one batch, one 1-d tensor
        per item (called in eval mode, without gradients)."""

    def scoring_batches(self, items: list[ScoringItem], batch_size: int) -> list[list[int]]:
        """The items of each batch of ``target_logprobs``: by increasing length."""
        return length_batches([len(item.inputs) for item in items], batch_size)

    # --- models that induce structure (PRPN, SOM) ---------------------------------------------

    induces_trees: ClassVar[bool] = False

    def induced_trees(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 16) -> list[Any]:
        """The unlabelled binary tree the model builds over each sentence (PRPN's distances, SOM's
        memory decisions). Only models with ``induces_trees = True`` have one; ``inference.parse``
        calls this for them and beam search for joint models."""
        raise TypeError(f"{self.config.model} does not induce trees")

    def syntactic_distances(
        self, sentences: Sequence[Sequence[str]], *, batch_size: int = 16
    ) -> list[np.ndarray]:
        """Each word's syntactic distance (PRPN, whose trees are read from them; the models whose
        card lists the ``distances`` figure)."""
        raise TypeError(f"{self.config.model} has no syntactic distances")

    # --- what the model is, and what the figures of report.model_figures draw ----------------

    @property
    def card(self) -> ModelCard:
        """This model's entry in the registry (``syntaxlm.models.ModelCard``): its label, paper,
        baseline, whether it is joint, the figures it can draw."""
        from syntaxlm.models import model_card

        return model_card(self.config.model)

    def extra_repr(self) -> str:
        """``model='txl-terminals': TXL (terminals), words only``: the registered model, as its
        paper names it, and whether it is a joint model of words and trees."""
        from syntaxlm.models import MODEL_CARDS

        card = MODEL_CARDS.get(self.config.model)  # none for a class only a test registered
        if card is None:
            return super().extra_repr()
        kind = "joint model of words and trees" if card.joint else "words only"
        return f"{super().extra_repr()}: {card.label}, {kind}"

    @property
    def joint(self) -> bool:
        """Whether this is a joint model of words and trees, ``p(x, y)``: it reads trees, and its
        word probabilities marginalise over them (``syntaxlm.inference``)."""
        return self.card.joint

    @property
    def loss_unit(self) -> str:
        """A joint model's targets are its words and its tree's actions: its loss per token is not
        a words-only model's (``loss_note``)."""
        return f"{super().loss_unit} (words and tree actions)" if self.joint else super().loss_unit

    @property
    def loss_note(self) -> str | None:
        return JOINT_LOSS_NOTE if self.joint else None

    def structure_mask(self, tree: Any) -> Any:
        """The attention mask this model's structure makes for ``tree``, as ``structure/`` builds it:
        a ``TGSequence`` (``attention_mask()``) or a ``PlmMaskInput`` (``head_masks``). Only the
        models whose card lists the ``structure_mask`` figure have one."""
        raise TypeError(f"{self.config.model} has no structural attention mask")

    def attention_maps(self, words: Sequence[str], tree: Any = None) -> list[AttentionMap]:
        """The attention probabilities of every layer (the first first) for one input, recorded in
        one pass in eval mode: ``words``, and for joint models their ``tree``. Only the models whose
        card lists the ``attention`` figure have them; ``ValueError`` for an input they cannot read
        in one pass."""
        raise TypeError(f"{self.config.model} has no attention")


def missing_symbols(trees: Sequence[Any], vocab, style: str) -> dict[int, list[str]]:
    """``{index: symbols}`` of the trees whose tree-building actions in ``style`` (``choe-charniak``,
    ``rnng``) are not symbols of ``vocab`` (trees without actions, e.g. with an empty constituent,
    are left to ``prepare``)."""
    from syntaxlm.errors import TreeError
    from syntaxlm.structure.actions import ActionKind, tree_to_actions

    symbols = frozenset(vocab.symbols)
    missing = {}
    for index, tree in enumerate(trees):
        try:
            actions = tree_to_actions(tree, style)
        except TreeError:
            continue
        unknown = {
            token
            for token, kind in zip(actions.tokens, actions.kinds.tolist(), strict=True)
            if kind != ActionKind.WORD and token not in symbols
        }
        if unknown:
            missing[index] = sorted(unknown)
    return missing


def without_unused_transformer_fields(
    config_class: type[ModelConfig], values: dict[str, Any]
) -> dict[str, Any]:
    """``values`` without ``n_heads`` and ``d_ff`` where ``config_class`` has no such field."""
    # Configs (saved models, recipes) written when every family had these fields hold them everywhere.
    known = {f.name for f in dataclasses.fields(config_class)}
    return {name: value for name, value in values.items() if name in known or name not in TRANSFORMER_FIELDS}


def config_from_dict(config_class: type[ModelConfig], values: dict[str, Any], *, where: str) -> ModelConfig:
    """``config_class(**values)`` with a ``ConfigError`` naming ``where`` for unknown or mistyped keys."""
    known = {f.name: f for f in dataclasses.fields(config_class)}
    values = without_unused_transformer_fields(config_class, values)
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


RUN_MODEL_FOLDERS = ("best", "last")
"""The model folders a training run writes (``syntaxlm.train``): lowest validation loss, latest step."""
RUN_FILE = "training.json"


def read_model_config(folder: str | Path) -> dict[str, Any]:
    """The ``config.json`` document of a saved model folder; a training run's folder given instead
    is an error that names the run's model folders."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        _refuse_run_folder(folder)
        raise ModelFileError(f"no {CONFIG_FILE} (is this a saved model folder?)", path=folder)
    document = read_json(path, ModelFileError, expected="a saved model config")
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        _refuse_run_folder(folder)
        raise ModelFileError("not a saved model config", path=path, expected='{"config": {...}}')
    names = document.get("vocabularies", [])
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ModelFileError(
            f"vocabularies: {names!r}", path=path, expected="a list of the folder's vocabulary folders"
        )
    for name in names:
        if Path(name).name != name or name in (".", "..") or not (Path(folder) / name).is_dir():
            raise ModelFileError(
                f"names the vocabulary {name!r}, but the model folder has no folder {name!r}", path=path
            )
    return document


def _refuse_run_folder(folder: str | Path) -> None:
    """Raise ``ModelFileError`` naming the models of ``folder`` if it is a training run's folder: it
    has ``best/`` or ``last/`` holding a model, a ``training.json``, or a ``config.json`` with the
    run's ``train_config``."""
    folder = Path(folder)
    models = [folder / name for name in RUN_MODEL_FOLDERS if (folder / name / CONFIG_FILE).is_file()]
    run_config = folder / CONFIG_FILE
    is_run = bool(models) or (folder / RUN_FILE).is_file()
    if not is_run and run_config.is_file():
        with contextlib.suppress(ModelFileError):
            document = read_json(run_config, ModelFileError)
            is_run = isinstance(document, dict) and "train_config" in document
    if not is_run:
        return
    if not models:
        raise ModelFileError(
            "a training run folder, not a saved model, and it holds none yet; its models will be "
            + " and ".join(str(folder / name) for name in RUN_MODEL_FOLDERS),
            path=folder,
        )
    listed = " and ".join(str(model) for model in models)
    are = "s are" if len(models) > 1 else " is"
    raise ModelFileError(
        f"a training run folder, not a saved model; its model{are} {listed}",
        path=folder,
    )


def read_weights(folder: str | Path) -> dict[str, Tensor]:
    """The tensors of ``folder/model.safetensors``, checked against the sha256 in its header."""
    return read_weights_file(folder)[0]


def read_weights_file(folder: str | Path) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The tensors of ``folder/model.safetensors`` (checked against its ``tensors_sha256``, all finite)
    and its header's metadata; ``ModelFileError`` naming the file when it is missing, damaged, cut
    short, unsealed or holds NaN or infinite weights."""
    path = Path(folder) / WEIGHTS_FILE
    if not path.is_file():
        raise ModelFileError(f"no {WEIGHTS_FILE}", path=folder)
    try:
        tensors, metadata = read_safetensors(path)
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise ModelFileError(f"cannot read the weights: {error}", path=path) from None
    check_tensors_sha256(tensors, metadata, path, ModelFileError)
    check_finite(tensors, path, ModelFileError)
    return tensors, metadata


# --- integrity of tensor files ---------------------------------------------------------------------


def read_safetensors(path: str | Path) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The tensors (on the CPU) and header metadata of a safetensors file, read through one open file.

    ``safe_open`` opens the file by name for its header and again for each tensor's storage, so a
    file renamed over ``path`` in between (a checkpoint or model being saved) would give tensors of
    two files. Here every read goes through the descriptor opened first (``/proc/self/fd``); where
    there is none, the whole file is read at once.
    """
    with open(path, "rb") as handle:
        opened = f"/proc/self/fd/{handle.fileno()}"
        if not os.path.exists(opened):
            data = handle.read()
            tensors = load_safetensors_bytes(data)
            header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
            return tensors, header.get("__metadata__") or {}
        with safe_open(opened, framework="pt") as file:
            metadata = file.metadata() or {}
            tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118
    return tensors, metadata


def tensors_sha256(tensors: dict[str, Tensor]) -> str:
    """The sha256 (hex) of a safetensors file's tensors, over the tensors in the order of their names
    (Unicode code points): for each, the line ``"<name> <dtype> <shape as a JSON list>\\n"`` (UTF-8;
    dtype as torch names it without ``torch.``, e.g. ``float32``), then its bytes in row-major order,
    little-endian, as safetensors stores them."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach()
        dtype = str(tensor.dtype).removeprefix("torch.")
        digest.update(f"{name} {dtype} {json.dumps(list(tensor.shape))}\n".encode())
        flat = tensor.to("cpu").contiguous().reshape(-1)
        if flat.numel():
            digest.update(flat.view(torch.uint8).numpy().data)
    return digest.hexdigest()


def check_tensors_sha256(
    tensors: dict[str, Tensor], metadata: dict[str, str], path: str | Path, error: type[InputFormatError]
) -> None:
    """Raise ``error`` naming ``path`` when the header has no ``tensors_sha256`` or it does not match.

    The hash is required: were a file without one accepted, deleting it from a header would switch
    the check off."""
    expected = metadata.get(TENSORS_SHA256)
    if expected is None:
        raise error(
            f"the file's header has no {TENSORS_SHA256}, so its tensors cannot be checked (written before "
            f"syntaxlm hashed its files, or the hash was removed); if you trust the file, seal it with "
            f"`syntaxlm model seal {path}`",
            path=path,
        )
    if tensors_sha256(tensors) != expected:
        raise error(
            "the tensors do not match the sha256 in the file's header: the file is damaged",
            path=path,
            expected=f"tensors with sha256 {expected}",
        )


def check_finite(tensors: dict[str, Tensor], path: str | Path, error: type[InputFormatError]) -> None:
    """Raise ``error`` naming ``path`` and the first tensor (by name) holding a NaN or an infinity."""
    for name in sorted(tensors):
        tensor = tensors[name]
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise error(
                f"tensor {name!r} holds NaN or infinite values, so nothing computed with it would mean "
                "anything (saved from a run that diverged?); use an earlier checkpoint or model",
                path=path,
            )


def seal_tensors_file(path: str | Path) -> tuple[str, bool]:
    """Write the sha256 of a trusted safetensors file's tensors into its header (``tensors_sha256``),
    replacing the file atomically. Returns the hash and whether the file was changed (a file that
    already holds the right hash is left as it is). ``ModelFileError`` for an unreadable file, and
    for one whose header holds a different hash: that file is damaged, and sealing would hide it.
    A symbolic link is followed: the file it points to is sealed and the link kept."""
    path = Path(path).resolve()
    try:
        tensors, metadata = read_safetensors(path)
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise ModelFileError(f"cannot read the tensors: {error}", path=path) from None
    digest = tensors_sha256(tensors)
    given = metadata.get(TENSORS_SHA256)
    if given == digest:
        return digest, False
    if given is not None:
        raise ModelFileError(
            "the tensors do not match the sha256 in the file's header: the file is damaged; not sealed "
            "(restore it from a copy or use an earlier checkpoint)",
            path=path,
        )
    descriptor, tmp = temporary_file_beside(path)  # a new file of its own: never a link planted there
    os.close(descriptor)
    try:
        with safetensors_write_errors(tmp):
            save_file(tensors, tmp, metadata={**metadata, TENSORS_SHA256: digest})
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return digest, True


@contextlib.contextmanager
def safetensors_write_errors(path: str | Path) -> Iterator[None]:
    """Raise a failed safetensors write as the ``OSError`` it is: safetensors reports a full disk as
    ``SafetensorError("... No space left on device (os error 28)")``, which ``except OSError`` (and
    the trainer's handling of a full disk) would miss."""
    try:
        yield
    except SafetensorError as error:
        code = re.search(r"\(os error (\d+)\)", str(error))
        if code is None:
            raise
        number = int(code.group(1))
        raise OSError(number, os.strerror(number), str(path)) from error


def document_sha256(document: Any) -> str:
    """The sha256 of a JSON document in a canonical spelling (sorted keys, no spaces)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()
