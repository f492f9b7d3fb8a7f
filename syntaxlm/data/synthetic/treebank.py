"""The synthetic treebank: ``SyntheticTreebank`` (the grammar's sentence stream and its suites,
deterministic given a seed), per-phenomenon sentence counts, and ``write_synthetic_treebank``,
which writes the splits, the suites and a manifest.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path

from syntaxlm.data.lexicon import LEXICON, Lexicon
from syntaxlm.data.synthetic.grammar import MAX_WORDS, REFLEXIVES, Grammar, closed_class_words, derive_seed
from syntaxlm.data.synthetic.suites import SUITE_DESIGNS, GeneratedSuite, build_suite
from syntaxlm.files import atomic_writer, no_space_reported, sha256_file
from syntaxlm.memory import check_size
from syntaxlm.trees.ptb import write_trees
from syntaxlm.trees.tree import Tree
from syntaxlm.version import __version__

TREE_BYTES = 4096  # memory a generated tree takes while the treebank is written (about 1.9 KB measured)


class SyntheticTreebank:
    """Trees and SyntaxGym-format suites from the grammar, deterministic given ``seed``.

    ``trees(n)`` is always the first ``n`` trees of the same stream, so ``trees(100)`` starts with
    ``trees(10)``. Suites are built from a seed derived from ``seed`` (``suite_seed``), so their
    sentences are not the training sentences.
    """

    def __init__(self, seed: int = 0, *, lexicon_size: int | None = None):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, not {type(seed).__name__}")
        self.seed = seed
        self.suite_seed = derive_seed(seed, "syntaxgym-suites")
        # ``lexicon_size``: each open word class keeps its most frequent words (``Lexicon``).
        self.lexicon = LEXICON if lexicon_size is None else Lexicon(lexicon_size)

    def iter_trees(self) -> Iterator[Tree]:
        """The endless stream of sentences (a sentence over ``MAX_WORDS`` tokens is drawn again)."""
        grammar = Grammar(random.Random(self.seed), self.lexicon)
        while True:
            tree = grammar.sentence()
            if len(tree.leaves()) <= MAX_WORDS:
                yield tree

    def trees(self, n: int) -> list[Tree]:
        """The first ``n`` sentences."""
        if n < 0:
            raise ValueError(f"number of sentences must be >= 0, got {n}")
        return list(islice(self.iter_trees(), n))

    def build_suites(
        self, items_per_suite: int = 40, *, avoid: frozenset[str] | set[str] = frozenset()
    ) -> dict[str, GeneratedSuite]:
        """Every suite, by name; items whose sentences are in ``avoid`` (texts) are drawn again."""
        if items_per_suite < 1:
            raise ValueError(f"items per suite must be >= 1, got {items_per_suite}")
        return {
            design.name: build_suite(design, self.suite_seed, items_per_suite, avoid, self.lexicon)
            for design in SUITE_DESIGNS
        }

    def suites(
        self, items_per_suite: int = 40, *, avoid: frozenset[str] | set[str] = frozenset()
    ) -> dict[str, dict]:
        """Every suite as SyntaxGym JSON (a dict), by name."""
        return {
            name: suite.to_json() for name, suite in self.build_suites(items_per_suite, avoid=avoid).items()
        }

    def word_types(self) -> set[str]:
        """Every word the grammar can produce (lower case; sentence-initial capitals aside)."""
        return self.lexicon.open_class_words() | closed_class_words()


# -- statistics and files ------------------------------------------------------------------------------------


def phenomenon_counts(trees: Sequence[Tree]) -> dict[str, int]:
    """How many sentences show each phenomenon (a sentence counts once per phenomenon)."""
    counts = dict.fromkeys(
        (
            "subject_pp",
            "subject_relative_clause",
            "object_relative_clause",
            "centre_embedding",
            "reflexive",
            "npi_ever",
            "npi_any",
            "no_subject",
            "negation",
            "fronted_subordinate_clause",
            "sentential_complement",
        ),
        0,
    )
    for tree in trees:
        found: set[str] = set()
        first = tree.children[0]
        if first.label == "SBAR":
            found.add("fronted_subordinate_clause")
        for node in tree.subtrees():
            if node.is_preterminal:
                word = node.children[0].lower()
                if word in REFLEXIVES:
                    found.add("reflexive")
                elif word == "ever":
                    found.add("npi_ever")
                elif word == "any":
                    found.add("npi_any")
                elif word in ("not", "n't"):
                    found.add("negation")
                continue
            labels = [child.label for child in node.children]
            if node.label == "S" and "VP" in labels:
                subject = node.children[labels.index("VP") - 1] if labels.index("VP") > 0 else None
                if subject is not None and subject.label == "NP":
                    kids = [c.label for c in subject.children]
                    if kids[:1] == ["NP"] and "PP" in kids:
                        found.add("subject_pp")
                    if kids[:1] == ["NP"] and "SBAR" in kids:
                        found.add("subject_relative_clause")
                    if subject.leaves()[0].lower() == "no":
                        found.add("no_subject")
            if node.label == "SBAR" and labels[0] == "WHNP" and len(node.children[1].children) == 2:
                found.add("object_relative_clause")
                rc_subject = node.children[1].children[0]
                if any(
                    inner.label == "SBAR"
                    and inner.children[0].label == "WHNP"
                    and len(inner.children[1].children) == 2
                    for inner in rc_subject.subtrees()
                ):
                    found.add("centre_embedding")
            if (
                node.label == "VP"
                and "SBAR" in labels
                and node.children[labels.index("SBAR")].children[0].label != "WHNP"
            ):
                sbar = node.children[labels.index("SBAR")]
                if sbar.children[0].label == "S" or sbar.children[0].children[0] == "that":
                    found.add("sentential_complement")
        for name in found:
            counts[name] += 1
    return counts


def _split_counts(total: int, split: Sequence[float]) -> list[int]:
    if len(split) != 3 or any(f < 0 for f in split) or abs(sum(split) - 1.0) > 1e-6:
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {tuple(split)}")
    train = round(total * split[0])
    dev = min(round(total * split[1]), total - train)
    return [train, dev, total - train - dev]


def write_synthetic_treebank(
    out_dir: str | Path,
    *,
    sentences: int,
    seed: int = 0,
    split: Sequence[float] = (0.8, 0.1, 0.1),
    items_per_suite: int = 40,
    lexicon_size: int | None = None,
) -> dict:
    """Write ``train.trees``/``dev.trees``/``test.trees`` (one tree per line), ``suites/<name>.json``
    (SyntaxGym format) and ``manifest.json`` into ``out_dir``; return the manifest.

    The suites' items are drawn from a seed derived from ``seed`` and never repeat a sentence of the
    written trees. Every file is written atomically; a full disk is a ``NoSpaceError`` naming
    ``out_dir``.
    """
    if not isinstance(sentences, int) or sentences < 1:
        raise ValueError(f"sentences must be a positive integer, got {sentences!r}")
    check_size("sentences", sentences, lambda n: n * TREE_BYTES, "the synthetic treebank's trees")
    counts = _split_counts(sentences, split)
    out = Path(out_dir)
    bank = SyntheticTreebank(seed, lexicon_size=lexicon_size)
    trees = bank.trees(sentences)
    with no_space_reported(out, "the synthetic treebank"):
        files: dict[str, dict] = {}
        start = 0
        for name, count in zip(("train", "dev", "test"), counts, strict=True):
            part = trees[start : start + count]
            start += count
            path = out / f"{name}.trees"
            write_trees(path, part)
            files[name] = {
                "path": path.name,
                "sentences": count,
                "words": sum(len(t.leaves()) for t in part),
                "sha256": sha256_file(path),
            }
        texts = {" ".join(tree.leaves()) for tree in trees}
        suites = bank.build_suites(items_per_suite, avoid=texts)
        suite_entries: dict[str, dict] = {}
        for name, suite in suites.items():
            path = out / "suites" / f"{name}.json"
            with atomic_writer(path) as handle:
                json.dump(suite.to_json(), handle, indent=4, ensure_ascii=False)
                handle.write("\n")
            suite_entries[name] = {
                "path": f"suites/{name}.json",
                "items": len(suite.items),
                "conditions": list(suite.design.conditions),
                "sha256": sha256_file(path),
            }
        lengths = sorted(len(tree.leaves()) for tree in trees)
        vocabulary = {word for tree in trees for word in tree.leaves()}
        manifest = {
            "format": "syntaxlm-synthetic-treebank",
            "version": 1,
            "generator": f"syntaxlm {__version__} syntaxlm.data.synthetic",
            "seed": seed,
            "suite_seed": bank.suite_seed,
            "sentences": sentences,
            "split": dict(zip(("train", "dev", "test"), counts, strict=True)),
            "files": files,
            "words": sum(len(tree.leaves()) for tree in trees),
            "word_types": len(vocabulary),
            "lexicon_size": lexicon_size,
            "lexicon_word_types": len(bank.word_types()),
            "sentence_length": {
                "mean": round(sum(lengths) / len(lengths), 2),
                "median": lengths[len(lengths) // 2],
                "max": lengths[-1],
            },
            "phenomena": phenomenon_counts(trees),
            "suites": suite_entries,
        }
        with atomic_writer(out / "manifest.json") as handle:
            json.dump(manifest, handle, indent=2)
            handle.write("\n")
        return manifest
