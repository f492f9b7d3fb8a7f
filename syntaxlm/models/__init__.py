"""The models, by the name a config gives in its ``model`` field, and loading saved ones.

``build_model(config_dict, vocabularies)`` makes a fresh model; ``load_model(folder)`` reads one
written by ``save_pretrained``. Model modules are imported on first use.

Every name has a ``ModelCard`` (``model_card(name)``, ``model.card``): what the model is called in
tables, its paper, the syntax its training reads, the words-only baseline its paper compares it
with, whether it is a joint model of words and trees, and which figures of ``report.model_figures``
it can draw. One class serves several names (``TransformerGrammar``: tg, txl-trees, txl-terminals;
``ActionLM``: lm, plm, plm-mask, sclm-*), and these facts differ between them, so they are kept per
name here, beside the class that builds the name; the report and the quickstart ask the card, never
a list of names of their own.

Both build through ``construct_model``, which counts the values the model's tensors take as they are
made and refuses, before allocating it, the tensor that would take a model beyond
``SYNTAXLM_MAX_PARAMETERS`` (default 2,000,000,000): a hostile or mistyped ``config.json``
(``d_model: 1000000000``) is an error, not a multi-terabyte allocation.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from syntaxlm.models.base import (
    CONFIG_SHA256,
    ConfigError,
    ModelConfig,
    ModelFileError,
    SyntacticLM,
    TrainedModel,
    config_from_dict,
    document_sha256,
    read_model_config,
    read_weights_file,
)
from syntaxlm.structure.plm_mask import BUFFER_HEAD, STACK_HEAD

# The figures of ``report.model_figures`` a model may draw (``ModelCard.figures``).
STRUCTURE_MASK = "structure_mask"  # the attention mask its structure makes for a tree (TG Fig. 2b)
ATTENTION = "attention"  # one layer's and head's attention probabilities for one input
DISTANCES = "distances"  # its syntactic distances and the tree read from them (PRPN Fig. 5)
INDUCED_TREE = "induced_tree"  # the binary tree it builds over a sentence


@dataclass(frozen=True)
class ModelCard:
    """A registered model (module docstring): ``name``; ``cls``, the class that builds it
    (``"module:Class"``); ``label``, as the papers write it; ``paper``, where it comes from (and
    whether as a baseline); ``structure``, the syntax its training reads besides the words;
    ``baseline``, the words-only model its paper compares it with (``None``: it is one);
    ``contrast``, the structured model its paper sets it against to isolate what it adds (TG
    against TXL (trees): the same network reading the same actions, composition or not; PLM-mask
    against PLM: the same actions, masked heads or not); ``joint``,
    a model of words and trees ``p(x, y)``, whose ``action_grammar`` has tree-building actions and
    whose word probabilities marginalise over trees; ``figures``, what ``report.model_figures`` can
    draw for it; ``head_roles``, the attention heads its structure restricts, by role (PLM-mask's
    buffer and stack heads)."""

    name: str
    cls: str
    label: str
    paper: str
    structure: str
    baseline: str | None = None
    contrast: str | None = None
    joint: bool = False
    figures: frozenset[str] = frozenset()
    head_roles: dict[int, str] = field(default_factory=dict)


TG_CLASS = "syntaxlm.models.transformer_grammar:TransformerGrammar"
ACTION_LM_CLASS = "syntaxlm.models.action_lm:ActionLM"
SOM_CLASS = "syntaxlm.models.som:SyntacticOrderedMemory"
TG_PAPER = "Sartran et al. 2022 (TG)"
QIAN_PAPER = "Qian et al. 2021 (structural guidance)"
SOM_PAPER = "Shen et al. 2021 (SOM)"
WORDS_ONLY = "none (words only)"
MASK_AND_ATTENTION = frozenset((STRUCTURE_MASK, ATTENTION))  # a mask its structure makes, and attention
ATTENTION_ONLY = frozenset((ATTENTION,))  # attention under the causal mask: nothing structural to draw
# Each paper's models beside the words-only baseline it compares them with (and the structured
# model it contrasts them with, where it draws one: TG §3 and §3.3, Qian et al. §4): TG with the
# Transformer-XL over words (Sartran et al. 2022, Table 1); PLM, PLM-mask and SCLM with the
# transformer LM over words of the same architecture (Qian et al. 2021); PRPN and SOM with LSTM LMs
# (Shen et al. 2018's and 2021's perplexity tables); each DM- model with its base model, an LSTM or
# a transformer LM (Yang et al. 2022, §3 and Table 7).
MODEL_CARDS = {
    card.name: card
    for card in (
        ModelCard("tg", TG_CLASS, "TG", TG_PAPER, "constituency (actions, STACK/COMPOSE)",
                  "txl-terminals", contrast="txl-trees", joint=True, figures=MASK_AND_ATTENTION),
        ModelCard("txl-trees", TG_CLASS, "TXL (trees)", f"{TG_PAPER}, baseline", "constituency (actions)",
                  "txl-terminals", joint=True, figures=MASK_AND_ATTENTION),
        ModelCard("txl-terminals", TG_CLASS, "TXL (terminals)", f"{TG_PAPER}, baseline", WORDS_ONLY,
                  figures=MASK_AND_ATTENTION),
        ModelCard("lm", ACTION_LM_CLASS, "LM", f"{QIAN_PAPER}, baseline", WORDS_ONLY,
                  figures=ATTENTION_ONLY),
        ModelCard("plm", ACTION_LM_CLASS, "PLM", QIAN_PAPER, "constituency (actions)", "lm",
                  joint=True, figures=ATTENTION_ONLY),
        ModelCard("plm-mask", ACTION_LM_CLASS, "PLM-mask", QIAN_PAPER, "constituency (actions, masked heads)",
                  "lm", contrast="plm", joint=True, figures=MASK_AND_ATTENTION,
                  head_roles={BUFFER_HEAD: "buffer", STACK_HEAD: "stack"}),
        ModelCard("sclm-past", ACTION_LM_CLASS, "SCLM-past", QIAN_PAPER, "constituency (scaffold)", "lm",
                  figures=ATTENTION_ONLY),
        ModelCard("sclm-next", ACTION_LM_CLASS, "SCLM-next", QIAN_PAPER, "constituency (scaffold)", "lm",
                  figures=ATTENTION_ONLY),
        ModelCard("esom", SOM_CLASS, "eSOM", SOM_PAPER, "constituency (memory decisions)", "lstm",
                  figures=frozenset((INDUCED_TREE,))),
        ModelCard("dsom", SOM_CLASS, "dSOM", SOM_PAPER, "dependency (memory decisions)", "lstm",
                  figures=frozenset((INDUCED_TREE,))),
        ModelCard("lstm", "syntaxlm.models.lstm_lm:LSTMLM", "LSTM", "Shen et al. 2018 (PRPN), baseline",
                  WORDS_ONLY),
        ModelCard("prpn", "syntaxlm.models.prpn:PRPN", "PRPN", "Shen et al. 2018 (PRPN)",
                  "none (induces trees)", "lstm", figures=frozenset((DISTANCES,))),
        ModelCard("dm-transformer", "syntaxlm.models.dmlm:DMTransformer", "DM-Transformer",
                  "Yang et al. 2022 (DMLM)", "dependency (from head rules)", "lm"),
        ModelCard("dm-lstm", "syntaxlm.models.dmlm:DMLSTM", "DM-LSTM", "Yang et al. 2022 (DMLM)",
                  "dependency (from head rules)", "lstm"),
    )
}  # fmt: skip
# The proposal parser of the joint models (TG §3.1): trained like a model, not a language model.
PARSER_CLASSES = {"parser": "syntaxlm.models.span_parser:SpanParser"}
PARSER_NAMES = tuple(PARSER_CLASSES)
# model name -> "module:Class", every model ``syntaxlm train`` trains (tests register their own here)
MODEL_CLASSES = {name: card.cls for name, card in MODEL_CARDS.items()} | PARSER_CLASSES
MODEL_NAMES = tuple(MODEL_CARDS)  # the language models
MAX_PARAMETERS_ENV = "SYNTAXLM_MAX_PARAMETERS"
DEFAULT_MAX_PARAMETERS = 2_000_000_000  # 8 GB of float32 weights; the papers' largest models are far below
REPEATED_FIELDS = ("n_layers", "residual_blocks")  # config fields that repeat one module
MAX_REPEATS = 10_000  # the papers' deepest models have a few dozen layers


def model_class(name: str) -> type[TrainedModel]:
    if name not in MODEL_CLASSES:
        raise ConfigError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES + PARSER_NAMES)}")
    module, cls = MODEL_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def model_card(name: str) -> ModelCard:
    """The card of the registered model ``name`` (``ConfigError`` for an unknown name)."""
    if name not in MODEL_CARDS:
        raise ConfigError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES)}")
    return MODEL_CARDS[name]


def model_names_with(figure: str) -> list[str]:
    """The registered models that can draw ``figure`` (one of ``ModelCard.figures``), in order."""
    return [name for name, card in MODEL_CARDS.items() if figure in card.figures]


def model_config(values: dict[str, Any], *, where: str = "model") -> ModelConfig:
    """The config dataclass of ``values["model"]`` filled from ``values`` (``ConfigError`` if bad)."""
    if not isinstance(values, dict) or not isinstance(values.get("model"), str):
        raise ConfigError(
            f"{where}: expected a mapping with a 'model' name, one of {', '.join(MODEL_NAMES + PARSER_NAMES)}"
        )
    config = config_from_dict(model_class(values["model"]).config_class, values, where=where)
    config.check()
    return config


def build_model(config: ModelConfig | dict[str, Any], vocabularies: dict[str, Any]) -> TrainedModel:
    if isinstance(config, dict):
        config = model_config(config)
    return construct_model(model_class(config.model), config, vocabularies)


class ModelTooLargeError(ConfigError):
    """A config describing a model larger than ``max_parameters()`` (``SYNTAXLM_MAX_PARAMETERS``)."""


def max_parameters() -> int:
    """The most parameters (and buffer entries) a model may hold: ``SYNTAXLM_MAX_PARAMETERS``, or
    ``DEFAULT_MAX_PARAMETERS`` when it is not set."""
    text = os.environ.get(MAX_PARAMETERS_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_PARAMETERS
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise ConfigError(f"{MAX_PARAMETERS_ENV}={text!r}: expected a whole number of parameters") from None


def construct_model(
    cls: type[TrainedModel], config: ModelConfig, vocabularies: dict[str, Any]
) -> TrainedModel:
    """``cls(config, vocabularies)``, refused with ``ModelTooLargeError`` (naming the config's largest
    sizes) before the tensor that would take what building it allocates beyond ``max_parameters()``
    values, and for more than ``MAX_REPEATS`` layers (which would take long to build before that)."""
    limit = max_parameters()
    sizes = sorted(_integer_fields(config), reverse=True)
    largest = ", ".join(f"{name}={value:,}" for value, name in sizes[:3])
    for name in REPEATED_FIELDS:
        if getattr(config, name, 0) > MAX_REPEATS:
            raise ModelTooLargeError(
                f"{name}={getattr(config, name):,}: more than the {MAX_REPEATS:,} a model may have; check the value"
            )

    def refuse(count: int) -> None:
        raise ModelTooLargeError(
            f"the config describes a model ({config.model}) of more than {limit:,} parameters: building it "
            f"asked for {count:,} values when it was stopped (its largest sizes: {largest}); check those "
            f"values, or if the model is meant to be that large, raise the limit with the environment "
            f"variable {MAX_PARAMETERS_ENV}"
        )

    with _AllocationLimit(limit, refuse):
        return cls(config, vocabularies)


def _integer_fields(config: ModelConfig) -> list[tuple[int, str]]:
    values = [(getattr(config, field.name), field.name) for field in dataclasses.fields(config)]
    return [(value, name) for value, name in values if isinstance(value, int) and not isinstance(value, bool)]


class _AllocationLimit(TorchFunctionMode):
    """Counts the values PyTorch's factory functions (``torch.empty``, ``zeros``, ``arange``, ...) are
    asked for, and calls ``refuse(count)`` before the call that would take the count beyond ``limit``:
    every parameter and buffer starts as one. (Values made by other operations, e.g. ``repeat``,
    are not counted; models make their tensors with factories.)"""

    FACTORIES = frozenset(
        (
            torch.empty,
            torch.zeros,
            torch.ones,
            torch.full,
            torch.rand,
            torch.randn,
            torch.randint,
            torch.arange,
        )
    )

    def __init__(self, limit: int, refuse: Callable[[int], None]):
        super().__init__()
        self.limit, self.refuse, self.count = limit, refuse, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.FACTORIES:
            self.count += _values_asked(func, args, kwargs)
            if self.count > self.limit:
                self.refuse(self.count)
        return func(*args, **kwargs)


def _values_asked(func: Callable, args: tuple, kwargs: dict[str, Any]) -> int:
    """How many values a factory call makes (0 where its size is not plain numbers)."""
    if func is torch.arange:
        bounds = [float(bound) for bound in args if isinstance(bound, (int, float))]
        if not bounds:
            return 0
        start, end, step = (0.0, bounds[0], 1.0) if len(bounds) == 1 else (*bounds, 1.0)[:3]
        return max(0, math.ceil((end - start) / step)) if step else 0
    if func is torch.full:
        size = args[0] if args else kwargs.get("size")
    elif func is torch.randint:
        size = args[-1] if args and isinstance(args[-1], Sequence) else kwargs.get("size")
    else:
        size = args[0] if len(args) == 1 and isinstance(args[0], Sequence) else args or kwargs.get("size")
    if not isinstance(size, Sequence) or not all(isinstance(n, int) for n in size):
        return 0
    return math.prod(size)


SCORING_DEVICES = ("cpu", "cuda", "auto")


class DeviceError(ConfigError):
    """A device asked for that this machine does not have."""


def scoring_device(choice: str) -> str:
    """The torch device a saved model is loaded on to be scored, searched or sampled: ``"cpu"``,
    ``"cuda"`` (``DeviceError`` when no CUDA device is available) or ``"auto"`` (CUDA where
    available). A GPU pays where the output layer is wide (a real vocabulary: the beam search's
    rows times the vocabulary at every step); tiny models score faster on the CPU
    (docs/performance.md)."""
    if choice not in SCORING_DEVICES:
        raise DeviceError(f"device {choice!r}: expected one of {', '.join(SCORING_DEVICES)}")
    cuda = torch.cuda.is_available()
    if choice == "cuda" and not cuda:
        raise DeviceError("device 'cuda' asked for, but torch sees no CUDA device on this machine")
    return "cuda" if choice == "cuda" or (choice == "auto" and cuda) else "cpu"


def load_model(folder: str | Path, *, map_location: str = "cpu") -> TrainedModel:
    """A model saved with ``save_pretrained``; ``ModelFileError`` names what is missing or differs.

    The weights' header names the config they were saved with (``config_sha256``); when the
    ``config.json`` read differs, the folder was rewritten while it was read and is read once more,
    so that config, vocabularies and weights come from one save (a second difference is a config
    edited by hand, and is kept).
    """
    folder = Path(folder)
    for attempt in range(2):
        document = read_model_config(folder)
        try:
            config = model_config(document["config"], where=str(folder / "config.json"))
        except ConfigError as error:
            raise ModelFileError(str(error), path=folder) from None
        cls = model_class(config.model)
        vocabularies = cls.load_vocabularies(folder, document.get("vocabularies", []))
        tensors, metadata = read_weights_file(folder)
        saved_with = metadata.get(CONFIG_SHA256)
        if attempt or saved_with is None or saved_with == document_sha256(document):
            break
    try:
        model = construct_model(cls, config, vocabularies)
    except ModelTooLargeError as error:
        raise ModelFileError(str(error), path=folder / "config.json") from None
    except KeyError as missing:
        if not missing.args or missing.args[0] in vocabularies:
            raise
        raise ModelFileError(
            f"a {config.model} model needs the vocabulary {missing.args[0]!r}, which is not among the "
            f"vocabularies named ({', '.join(vocabularies) or 'none'})",
            path=folder / "config.json",
        ) from None
    model.load_weights(tensors, source=str(folder / "model.safetensors"))
    return model.to(map_location).eval()


def load_language_model(folder: str | Path, *, map_location: str = "cpu") -> SyntacticLM:
    """``load_model`` for the commands that score, search or sample: ``ModelFileError`` when the
    folder holds the proposal parser (``parser``), which is not a language model."""
    refusal = "is not a language model; give it as --parser where proposal trees are asked for"
    return _loaded_as(folder, SyntacticLM, refusal, map_location)


def load_parser(folder: str | Path, *, map_location: str = "cpu"):
    """The proposal parser saved in ``folder`` (``models.span_parser.SpanParser``); ``ModelFileError``
    for a language model."""
    from syntaxlm.models.span_parser import SpanParser

    refusal = "is not a parser; train one with a parser recipe (configs/parser-tiny.yaml)"
    return _loaded_as(folder, SpanParser, refusal, map_location)


def _loaded_as(folder: str | Path, cls: type, refusal: str, map_location: str):
    model = load_model(folder, map_location=map_location)
    if not isinstance(model, cls):
        raise ModelFileError(f"a {model.config.model} model {refusal}", path=Path(folder))
    return model


__all__ = [
    "ATTENTION",
    "DISTANCES",
    "INDUCED_TREE",
    "MAX_PARAMETERS_ENV",
    "MODEL_CARDS",
    "MODEL_CLASSES",
    "MODEL_NAMES",
    "PARSER_NAMES",
    "STRUCTURE_MASK",
    "ConfigError",
    "ModelCard",
    "ModelConfig",
    "ModelFileError",
    "ModelTooLargeError",
    "SyntacticLM",
    "TrainedModel",
    "build_model",
    "construct_model",
    "load_language_model",
    "load_model",
    "load_parser",
    "model_card",
    "model_class",
    "model_config",
    "model_names_with",
]
