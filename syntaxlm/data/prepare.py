"""A training run's data made ready: the input files checked, the synthetic treebank a recipe asks
for, the vocabulary built from the training trees, and a model's corpus of a treebank with the
problems found in it.

``data`` is a recipe's data section (``syntaxlm.train.DataConfig``) and ``out`` the run folder,
which holds the synthetic treebank (``data/``) and the vocabulary built (``vocab/``).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from syntaxlm.data.batching import RowCorpus
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.data.treebank import DataProblems, treebank_kind
from syntaxlm.errors import ConfigError
from syntaxlm.text.base import Vocabulary, load_vocabulary
from syntaxlm.text.build import build_vocabulary

POS_TAGS_HINT = (
    "the recipes read Penn trees with POS tags: clean with `syntaxlm data clean --style ptb` (not "
    "choe-charniak), or read trees without POS tags with data.pos_tags=false (--set data.pos_tags=false)"
)


def check_inputs(data: Any, out: Path, *, model: str, reads: Collection[str]) -> None:
    """Fail before anything is written when a treebank file or the vocabulary folder is missing,
    or a treebank holds trees the model ``model`` does not read (``reads``: ``SyntacticLM.reads``)."""
    if data.synthetic is None:
        for role, path in data.treebank_paths(out).items():
            if not path.is_file():
                raise ConfigError(f"data.{role}: no such file {path} (set data.{role} or --data-{role})")
    if data.vocab_path is not None and not Path(data.vocab_path).exists():
        raise ConfigError(f"data.vocab_path: no such vocabulary folder {data.vocab_path}")
    for role, path in data.treebank_paths(out).items():
        if treebank_kind(path) not in reads:
            raise ConfigError(
                f"data.{role}: {path} holds {treebank_kind(path)} trees; model {model} reads "
                f"{' or '.join(reads)} trees"
            )


def write_data_files(data: Any, out: Path, *, fresh: bool) -> None:
    """Write the synthetic treebank and build the vocabulary where the recipe asks for them, when
    the run is ``fresh`` (no checkpoint) or they are missing. One process writes them."""
    paths = data.treebank_paths(out)
    if data.synthetic is not None and (fresh or not paths["train"].is_file()):
        write_synthetic_treebank(
            out / "data",
            sentences=data.synthetic.sentences,
            seed=data.synthetic.seed,
            lexicon_size=data.synthetic.lexicon_size,
        )
    if data.vocab_path is None and (fresh or not (out / "vocab" / "vocab.json").is_file()):
        build_vocabulary(
            paths["train"],
            out / "vocab",
            kind=data.vocab.kind,
            min_freq=data.vocab.min_freq,
            vocab_size=data.vocab.vocab_size,
            pos_tags=data.pos_tags,
            # Nonterminal labels only in the validation/test trees must be spellable too.
            label_sources=[paths[split] for split in ("valid", "test") if paths.get(split)],
        )


def run_vocabulary(data: Any, out: Path) -> Vocabulary:
    """The run's text vocabulary: the one at ``data.vocab_path``, or the one built into ``out``."""
    return load_vocabulary(data.vocab_path if data.vocab_path is not None else out / "vocab")


def prepared_corpus(
    model: Any, path: Path, treebank: tuple[list, list[int], list[int]], *, on_problem: str
) -> tuple[RowCorpus, DataProblems]:
    """The corpus ``model`` (a ``TrainedModel``) prepares from the treebank ``path`` (as
    ``read_treebank_positions`` gives it) and the problems found in it, by sentence index in the
    file: trees left empty by cleaning, nonterminals the vocabulary lacks, and what ``prepare``
    drops. ``on_problem``: ``report`` (trees the model cannot spell stop the run, as they would in
    ``prepare``), ``skip`` (they are left out) or ``fail`` (any problem is a ``ConfigError``)."""
    trees, positions, empty = treebank
    problems = DataProblems()
    for index in empty:
        problems.add("empty", index, "without words after cleaning; dropped")
    unknown = model.unknown_nonterminals(trees)
    for index in unknown:
        problems.add("unknown_nonterminal", positions[index], "with nonterminals missing from the vocabulary")
    if (unknown and on_problem != "skip") or (problems and on_problem == "fail"):
        raise ConfigError(_problem_message(path, problems, on_problem, unknown, positions))
    if unknown:
        kept = [i for i in range(len(trees)) if i not in unknown]
        trees, positions = [trees[i] for i in kept], [positions[i] for i in kept]
    corpus, dropped = model.prepare_with_problems(trees)
    problems = problems.merged(dropped, positions)
    if problems and on_problem == "fail":
        raise ConfigError(_problem_message(path, problems, on_problem, {}, positions))
    return corpus, problems


def _problem_message(
    path: Path, problems: DataProblems, on_problem: str, unknown: dict[int, list[str]], positions: list[int]
) -> str:
    text = f"{path}: " + "; ".join(problems.lines())
    if unknown:
        first = next(iter(unknown))
        text += f" (sentence {positions[first]} has {', '.join(unknown[first][:5])})"
    if on_problem == "fail":
        return text + " (data.on_problem is fail; set it to skip to train without these sentences)"
    return text + "; build the vocabulary from these trees, or set data.on_problem=skip to leave them out"
