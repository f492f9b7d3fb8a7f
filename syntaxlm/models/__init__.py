"""The models, by the name a config gives in its ``model`` field, and loading saved ones.

``build_model(config_dict, vocabularies)`` makes a fresh model; ``load_model(folder)`` reads one
written by ``save_pretrained``. Model modules are imported on first use.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from syntaxlm.models.base import (
    CONFIG_SHA256,
    ConfigError,
    ModelConfig,
    ModelFileError,
    SyntacticLM,
    config_from_dict,
    document_sha256,
    read_model_config,
    read_weights_file,
)

# model name -> "module:Class"
MODEL_CLASSES = {
    "tg": "syntaxlm.models.transformer_grammar:TransformerGrammar",
    "txl-trees": "syntaxlm.models.transformer_grammar:TransformerGrammar",
    "txl-terminals": "syntaxlm.models.transformer_grammar:TransformerGrammar",
    "lm": "syntaxlm.models.action_lm:ActionLM",
    "plm": "syntaxlm.models.action_lm:ActionLM",
    "plm-mask": "syntaxlm.models.action_lm:ActionLM",
    "sclm-past": "syntaxlm.models.action_lm:ActionLM",
    "sclm-next": "syntaxlm.models.action_lm:ActionLM",
    "esom": "syntaxlm.models.som:SyntacticOrderedMemory",
    "dsom": "syntaxlm.models.som:SyntacticOrderedMemory",
    "lstm": "syntaxlm.models.lstm_lm:LSTMLM",
    "prpn": "syntaxlm.models.prpn:PRPN",
    "dm-transformer": "syntaxlm.models.dmlm:DMTransformer",
    "dm-lstm": "syntaxlm.models.dmlm:DMLSTM",
}
MODEL_NAMES = tuple(MODEL_CLASSES)


def model_class(name: str) -> type[SyntacticLM]:
    if name not in MODEL_CLASSES:
        raise ConfigError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES)}")
    module, cls = MODEL_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def model_config(values: dict[str, Any], *, where: str = "model") -> ModelConfig:
    """The config dataclass of ``values["model"]`` filled from ``values`` (``ConfigError`` if bad)."""
    if not isinstance(values, dict) or not isinstance(values.get("model"), str):
        raise ConfigError(f"{where}: expected a mapping with a 'model' name, one of {', '.join(MODEL_NAMES)}")
    config = config_from_dict(model_class(values["model"]).config_class, values, where=where)
    config.check()
    return config


def build_model(config: ModelConfig | dict[str, Any], vocabularies: dict[str, Any]) -> SyntacticLM:
    if isinstance(config, dict):
        config = model_config(config)
    return model_class(config.model)(config, vocabularies)


def load_model(folder: str | Path, *, map_location: str = "cpu") -> SyntacticLM:
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
        model = cls(config, vocabularies)
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


__all__ = [
    "MODEL_CLASSES",
    "MODEL_NAMES",
    "ConfigError",
    "ModelConfig",
    "ModelFileError",
    "SyntacticLM",
    "build_model",
    "load_model",
    "model_class",
    "model_config",
]
