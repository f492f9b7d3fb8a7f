"""Training recipes: a YAML file with three sections that map one to one onto dataclasses.

``model`` is the model's own config (``syntaxlm.models``), ``data`` says which treebank and which
vocabulary, ``train`` the optimisation. ``load_config(path, overrides)`` reads a recipe, applies
command-line overrides (``train.lr=3e-4``) and checks every key and type, the nesting and size of
the values, the ranges of integers (64 bits; seeds not negative) and that numbers are finite, before
a run writes anything; a problem raises ``ConfigError`` naming the file and the key path
(``configs/tg-tiny.yaml: train.lr must be a number, got 'fast'``).
"""

from __future__ import annotations

import dataclasses
import math
import re
import reprlib
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from syntaxlm.data.lexicon import MIN_LEXICON_SIZE
from syntaxlm.errors import InputFormatError
from syntaxlm.files import read_text
from syntaxlm.models import ConfigError, ModelConfig, model_class, model_config
from syntaxlm.models.base import without_unused_transformer_fields


@dataclass
class SyntheticData:
    """The embedded default treebank, generated into the run folder (``data/``)."""

    sentences: int = 2000
    seed: int = 0
    lexicon_size: int | None = None  # each open word class keeps its most frequent words (None: all)


@dataclass
class VocabSettings:
    """How the run builds its text vocabulary from the training trees."""

    kind: Literal["word", "subword"] = "word"
    min_freq: int = 2
    vocab_size: int = 8000


@dataclass
class DataConfig:
    """Treebank files (PTB brackets, one tree per line or spread over lines; or CoNLL-U, by the
    suffix .conllu/.conll, for models that read dependency trees) or the synthetic one."""

    train: str | None = None
    valid: str | None = None
    test: str | None = None
    synthetic: SyntheticData | None = None
    pos_tags: bool = True
    vocab: VocabSettings | None = None
    vocab_path: str | None = None
    # Sentences the model cannot train on as they are (empty, too long, unknown nonterminals):
    # "report" them and go on as the model does, "skip" them, or "fail" before training.
    on_problem: Literal["report", "skip", "fail"] = "report"

    def __post_init__(self):
        if self.vocab is None and self.vocab_path is None:
            self.vocab = VocabSettings()

    def treebank_paths(self, run: Path) -> dict[str, Path]:
        """The treebank files by role (``train``, ``valid``, ``test``: those given); the synthetic
        ones live in the run folder ``run`` (``data/``)."""
        if self.synthetic is not None:
            return {
                "train": run / "data" / "train.trees",
                "valid": run / "data" / "dev.trees",
                "test": run / "data" / "test.trees",
            }
        return {
            role: Path(path)
            for role, path in (("train", self.train), ("valid", self.valid), ("test", self.test))
            if path
        }

    def check(self, where: str) -> None:
        if self.vocab is not None and self.vocab_path is not None:
            raise ConfigError(f"{where}: give data.vocab (build one) or data.vocab_path (use one), not both")
        if self.synthetic is not None:
            if self.train or self.valid or self.test:
                raise ConfigError(f"{where}: give either data.synthetic or data.train/valid/test, not both")
            check_seed(self.synthetic.seed, "data.synthetic.seed", where)
            if self.synthetic.sentences < 10:
                raise ConfigError(
                    f"{where}: data.synthetic.sentences must be at least 10, got {self.synthetic.sentences}"
                )
            size = self.synthetic.lexicon_size
            if size is not None and size < MIN_LEXICON_SIZE:
                raise ConfigError(
                    f"{where}: data.synthetic.lexicon_size must be at least {MIN_LEXICON_SIZE} (or null: all), got {size}"
                )
        elif not (self.train and self.valid):
            raise ConfigError(f"{where}: data needs train and valid paths, or synthetic: {{sentences, seed}}")
        if self.vocab is not None:
            for name in ("min_freq", "vocab_size"):
                value = getattr(self.vocab, name)
                if value < 1:
                    raise ConfigError(f"{where}: data.vocab.{name} must be at least 1, got {value}")


@dataclass
class TrainConfig:
    """Optimisation. ``batch_size`` counts rows (sentences or segments) of one micro-batch over all
    processes; a step takes ``grad_accum`` micro-batches."""

    seed: int = 0
    batch_size: int = 32
    grad_accum: int = 1
    lr: float = 3e-4
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 0
    max_steps: int = 1000
    schedule: Literal["cosine", "inverse-sqrt", "constant"] = "cosine"
    min_lr_ratio: float = 0.0
    clip_norm: float | None = 1.0
    precision: Literal["fp32", "bf16"] = "fp32"
    eval_every: int = 200
    patience: int | None = None
    log_every: int = 10
    checkpoint_every: int = 200
    device: Literal["auto", "cpu", "cuda"] = "auto"
    epochs: int | None = None
    # A wall-clock budget: training stops at the first step boundary after this many minutes of
    # training (summed over resumes), then validates and saves as at any end. None: no budget.
    max_minutes: float | None = None
    # A NaN or infinite loss or gradient norm: "stop" the run, or "skip" the step's batches (no
    # update) and stop after ``max_skipped_batches`` skipped in a row.
    on_nonfinite: Literal["stop", "skip"] = "stop"
    max_skipped_batches: int = 10

    def check(self, where: str) -> None:
        check_seed(self.seed, "train.seed", where)
        at_least_one = [
            "batch_size",
            "grad_accum",
            "max_steps",
            "eval_every",
            "log_every",
            "checkpoint_every",
            "max_skipped_batches",
        ]
        for name in at_least_one + ["patience", "epochs"]:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{where}: train.{name} must be at least 1, got {value}")
        if self.warmup_steps < 0:
            raise ConfigError(f"{where}: train.warmup_steps must be at least 0, got {self.warmup_steps}")
        if not self.lr > 0:
            raise ConfigError(f"{where}: train.lr must be positive, got {self.lr}")
        if self.weight_decay < 0:
            raise ConfigError(f"{where}: train.weight_decay must be at least 0, got {self.weight_decay}")
        if not all(0 <= beta < 1 for beta in self.betas):
            raise ConfigError(f"{where}: train.betas must be two numbers in [0, 1), got {list(self.betas)}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ConfigError(f"{where}: train.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ConfigError(
                f"{where}: train.max_minutes must be a positive number of minutes (or null: no time "
                f"budget), got {self.max_minutes}"
            )
        if self.clip_norm is not None and not self.clip_norm > 0:
            raise ConfigError(f"{where}: train.clip_norm must be positive (or null: no clipping)")


@dataclass
class RunConfig:
    """A whole recipe: the model's config, the data and the optimisation."""

    model: ModelConfig
    data: DataConfig
    train: TrainConfig

    def to_dict(self) -> dict[str, Any]:
        return _plain(
            {
                "model": self.model.to_dict(),
                "data": dataclasses.asdict(self.data),
                "train": dataclasses.asdict(self.train),
            }
        )


# Keys added to recipes after runs were made: a run's config without one had its default.
ADDED_KEYS = {
    "data.on_problem": "report",
    "train.on_nonfinite": "stop",
    "train.max_skipped_batches": 10,
    "train.max_minutes": None,
}


def recorded_config(saved: dict[str, Any]) -> dict[str, Any]:
    """A run's recorded ``train_config`` as ``RunConfig.to_dict`` spells it today, so that it compares
    equal to the recipe it was made with: keys added since (``ADDED_KEYS``) get the values runs had
    before them, and model fields a family no longer has (``n_heads``, ``d_ff`` of LSTM, PRPN, SOM)
    are dropped."""
    recorded = {name: dict(value) if isinstance(value, dict) else value for name, value in saved.items()}
    for key, value in ADDED_KEYS.items():
        section, name = key.split(".")
        if isinstance(recorded.get(section), dict):
            recorded[section].setdefault(name, value)
    model = recorded.get("model")
    if isinstance(model, dict) and isinstance(model.get("model"), str):
        try:
            config_class = model_class(model["model"]).config_class
        except (ConfigError, ImportError):
            return recorded
        recorded["model"] = without_unused_transformer_fields(config_class, model)
    return recorded


SECTIONS = ("model", "data", "train")
MAX_SEED = 2**63 - 1  # torch.manual_seed takes 64 bits; numpy's SeedSequence no negative numbers
INT64 = range(-(2**63), 2**63)  # every integer of a recipe reaches torch or numpy as an int64
MAX_DEPTH = 32  # recipes nest 3 or 4 deep; Python's recursive readers fail at about 1,000
MAX_VALUES = 100_000  # in all, counting each use of a YAML alias: a recipe holds a few hundred


def check_seed(value: int, key: str, where: str) -> None:
    """A seed reaches torch and numpy's ``SeedSequence``: a non-negative 64-bit integer."""
    if not 0 <= value <= MAX_SEED:
        raise ConfigError(
            f"{where}: {key} must be an integer from 0 to 2**63 - 1 ({MAX_SEED}), got {_shown(value)}"
        )


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> RunConfig:
    """The recipe in a YAML file, with ``KEY=VALUE`` overrides applied (``ConfigError`` if bad)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    document = parse_yaml(read_text(path, InputFormatError), where=str(path))
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a mapping with sections {', '.join(SECTIONS)}")
    overrides = list(overrides)
    apply_overrides(document, overrides)
    where = str(path) + (f" (with {', '.join(map(_short, overrides))})" if overrides else "")
    return run_config(document, where=where)


def run_config(values: dict[str, Any], *, where: str = "config") -> RunConfig:
    """A ``RunConfig`` from a plain mapping such as a parsed YAML file."""
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping with sections {', '.join(SECTIONS)}")
    check_shape(values, where)
    unknown = sorted(set(values) - set(SECTIONS))
    if unknown:
        raise ConfigError(f"{where}: unknown section(s) {', '.join(map(str, unknown))}; expected {SECTIONS}")
    for name in ("model", "data"):
        if name not in values:
            raise ConfigError(f"{where}: the {name} section is missing")
    model = _model_section(values["model"], where)
    data = _build(DataConfig, values["data"], "data", where)
    data.check(where)
    train = _build(TrainConfig, values.get("train") or {}, "train", where)
    train.check(where)
    return RunConfig(model=model, data=data, train=train)


def _model_section(values: Any, where: str) -> ModelConfig:
    if not isinstance(values, dict) or not isinstance(values.get("model"), str):
        raise ConfigError(f"{where}: model must be a mapping with a model name (model.model)")
    try:
        config_class = model_class(values["model"]).config_class
    except ConfigError as error:
        raise ConfigError(f"{where}: model.model: {error}") from None
    except ImportError as error:
        raise ConfigError(f"{where}: model {values['model']!r} cannot be loaded ({error})") from None
    values = without_unused_transformer_fields(config_class, values)
    checked = _build(config_class, values, "model", where)  # key paths and types, with the file's name
    try:
        return model_config(dataclasses.asdict(checked), where=f"{where}: model")
    except ConfigError as error:
        text = str(error)
        raise ConfigError(text if text.startswith(where) else f"{where}: {text}") from None


# --- YAML and overrides --------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """YAML with 1.2-style floats (``3e-4`` is a number, not a string) and no duplicate keys."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise ConfigError(f"{mark.name}:{mark.line + 1}:{mark.column + 1}: duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def parse_yaml(text: str, *, where: str) -> Any:
    """The value of a YAML document; bad YAML raises ``ConfigError`` with its line and column, as
    do values nested too deep or integers too long to read (``check_yaml_events``)."""
    try:
        check_yaml_events(text, where)
        loader = _Loader(text)
        loader.name = where
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        place = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        raise ConfigError(f"{place}: invalid YAML ({error.problem})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{where}: invalid YAML ({error})") from None


_PLAIN_INTEGER = re.compile(r"[-+]?[0-9][0-9_]*")


def check_yaml_events(text: str, where: str) -> None:
    """Refuse, at their line and column, collections nested deeper than ``MAX_DEPTH`` (PyYAML builds
    values recursively) and integers longer than Python converts, reading the document's events
    (which PyYAML parses without recursion) before its values are built."""
    keys: list[list] = []  # per open collection: [is a mapping, nodes read in it, key of the current one]
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionEndEvent):
            keys.pop()
        elif isinstance(event, yaml.NodeEvent):
            if keys:
                _count_node(keys[-1], event)
            if isinstance(event, yaml.CollectionStartEvent):
                if len(keys) == MAX_DEPTH:
                    problem = f"collections nested more than {MAX_DEPTH} deep"
                    raise _yaml_value_error(event, keys, where, problem, f"at most {MAX_DEPTH} levels")
                keys.append([isinstance(event, yaml.MappingStartEvent), 0, None])
            elif _too_many_digits(event):
                digits = len(event.value.lstrip("+-"))
                problem, expected = f"an integer of {digits} digits", "an integer of 64 bits (19 digits)"
                raise _yaml_value_error(event, keys, where, problem, expected)


def _count_node(collection: list, event: yaml.NodeEvent) -> None:
    is_mapping, seen, _ = collection
    if not is_mapping:
        collection[2] = f"[{seen}]"
    elif seen % 2 == 0:  # a key: the name of the value that follows
        collection[2] = event.value if isinstance(event, yaml.ScalarEvent) else "?"
    collection[1] += 1


def _too_many_digits(event: yaml.NodeEvent) -> bool:
    if not isinstance(event, yaml.ScalarEvent) or event.style is not None:  # quoted: a string
        return False
    return len(event.value) > sys.get_int_max_str_digits() and bool(_PLAIN_INTEGER.fullmatch(event.value))


def _yaml_value_error(
    event: yaml.NodeEvent, keys: list[list], where: str, problem: str, expected: str
) -> ConfigError:
    mark = event.start_mark
    path = _key_path([key for _, _, key in keys])
    place = f"{where}:{mark.line + 1}:{mark.column + 1}: {path + ': ' if path else ''}"
    return ConfigError(f"{place}{problem}; expected {expected}")


def _key_path(keys: list) -> str:
    """``train.betas[0]``; long paths shortened to their first four keys."""
    text = ""
    for key in keys[:4]:
        key = str(key)
        text += key if key.startswith("[") or not text else "." + key
    return _short(text + ("..." if len(keys) > 4 else ""))


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


DATA_PATHS = ("data.train", "data.valid", "data.test")


def apply_overrides(document: dict[str, Any], overrides: Iterable[str]) -> None:
    """Set ``section.key[.key]=value`` entries in ``document`` (values read as YAML).

    Setting a data path (``data.train``, ...) drops a ``data.synthetic`` entry, so that a recipe made
    for the synthetic treebank can be pointed at real files from the command line.
    """
    for override in overrides:
        key, equals, text = override.partition("=")
        key = key.strip()
        if not equals or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"override {override!r}: expected KEY=VALUE, e.g. train.lr=3e-4")
        value = parse_yaml(text, where=f"override {key}")
        *parents, last = key.split(".")
        node = document
        for depth, part in enumerate(parents):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {override!r}: {'.'.join(parents[: depth + 1])} is not a section")
            node = child
        node[last] = value
        if key in DATA_PATHS and value is not None and isinstance(document.get("data"), dict):
            document["data"].pop("synthetic", None)


# --- checking values against dataclass fields ----------------------------------------------------


def check_shape(values: Any, where: str) -> None:
    """Refuse values nested deeper than ``MAX_DEPTH`` or more than ``MAX_VALUES`` in all (YAML aliases
    repeat one value without its text growing) before anything recurses into them or copies them."""
    stack: list[tuple[Any, list]] = [(values, [])]
    count = 0
    while stack:
        value, keys = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigError(
                f"{where}: more than {MAX_VALUES:,} values in all (counting every use of a YAML alias); "
                "expected a recipe of a few hundred"
            )
        if len(keys) > MAX_DEPTH:
            raise ConfigError(
                f"{where}: {_key_path(keys)}: collections nested more than {MAX_DEPTH} deep; expected at "
                f"most {MAX_DEPTH} levels"
            )
        if isinstance(value, dict):
            stack.extend((item, [*keys, key]) for key, item in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((item, [*keys, f"[{i}]"]) for i, item in enumerate(value))


def _build(cls: type, values: Any, key: str, where: str):
    """``cls(**values)`` after checking every key and converting every value to its field's type."""
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: {key} must be a mapping, got {_shown(values)}")
    try:
        hints = get_type_hints(cls)
    except (NameError, TypeError, AttributeError):  # annotations that cannot be evaluated: the class checks
        return cls(**values)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(str(name) for name in set(values) - fields)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'{key}.{name}' for name in unknown)}; expected some of {', '.join(sorted(fields))}"
        )
    converted = {name: _convert(value, hints[name], f"{key}.{name}", where) for name, value in values.items()}
    return cls(**converted)


def _convert(value: Any, hint: Any, key: str, where: str) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(hint) if arg is not type(None)]
        if value is None and len(options) < len(get_args(hint)):
            return None
        if len(options) == 1:
            return _convert(value, options[0], key, where)
        return value
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, key, where)
    if origin is Literal:
        if value not in get_args(hint):
            expected = ", ".join(repr(option) for option in get_args(hint))
            raise ConfigError(f"{where}: {key} must be one of {expected}, got {_shown(value)}")
        return value
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ConfigError(f"{where}: {key} must be a list of {len(args)} values, got {_shown(value)}")
        return tuple(
            _convert(item, arg, f"{key}[{i}]", where) for i, (item, arg) in enumerate(zip(value, args))
        )
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false, got {_shown(value)}")
        return value
    if hint is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be an integer, got {_shown(value)}")
        if value not in INT64:
            raise ConfigError(
                f"{where}: {key} must be an integer of 64 bits (at most 2**63 - 1), got {_shown(value)}"
            )
        return value
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be a number, got {_shown(value)}")
        if not _finite(value):
            raise ConfigError(f"{where}: {key} must be a finite number, got {_shown(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string, got {_shown(value)}")
        return value
    return value


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer too large for a float
        return False


def _shown(value: Any) -> str:
    return "nothing (null)" if value is None else reprlib.repr(value)


def _plain(value: Any) -> Any:
    """Tuples as lists, recursively: the JSON/YAML form of a config."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
