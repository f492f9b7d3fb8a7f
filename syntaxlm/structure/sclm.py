"""SCLM: the word-synchronous action n-grams a scaffolded language model predicts (structural guidance
paper, §2.3).

SCLM reads words only, ``<s>`` followed by the word pieces, and besides the next piece predicts at
each position a label from a second vocabulary: the *action n-gram* of a word is the run of
``NT(X)``/``REDUCE`` actions between the previous word and it, joined with ``_`` (``NT(S)_NT(NP)``,
``REDUCE_NT(VP)``), or the blank label ``_`` when there is none; the *trailing* n-gram holds the
actions after the last word (``REDUCE_REDUCE``). As in the authors' ``load_data`` and
``get_batch_loss`` (IBM/transformers-struct-guidance, ``src/lm-sc.py``), for the input
``<s> p_1 .. p_P`` (``P`` word pieces) the labels are, position by position:

- ``next`` (SCLM-next): the n-gram that comes before the *next* input piece: at ``<s>`` the first
  word's n-gram, before a word's first piece that word's n-gram, before a later piece of a word the
  blank, and at the last piece the trailing n-gram;
- ``past`` (SCLM-past): the n-gram before the *current* piece: pad at ``<s>``, a word's n-gram at
  its first piece, the blank at its later pieces; the trailing n-gram is never a label.

So ``past[1:] == next[:-1]``. The authors' loss counts every one of these ``P + 1`` positions,
including the pad label at ``<s>`` in ``past``; batches should therefore pad the labels with a
value the loss ignores (the authors use −100), not with ``pad_id``. A model that appends ``</s>`` to
its input gives that position no scaffold label.

The label vocabulary (``ActionNgramVocab``) holds ``<pad>`` 0, the blank ``_`` 1, ``<unk>`` 2, then
the n-grams of the training trees, most frequent first (ties in string order). The authors' list
(``src/get_action_ngram_list.py``) counts only the n-grams followed by a word, and their lookup has
no unknown label, so a trailing n-gram never seen before a word fails with a ``KeyError``; ours
counts the trailing n-grams too and maps n-grams unseen in training to ``<unk>``. N-grams are
spelled with this package's action tokens (``REDUCE``, where the authors write ``REDUCE()``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from syntaxlm.files import atomic_writer
from syntaxlm.structure.actions import ActionKind, Actions, atomic_words_as_unk, tree_to_actions
from syntaxlm.text.base import (
    BOS,
    BOS_ID,
    FORMAT_VERSION,
    Vocabulary,
    VocabularyError,
    VocabularyFormatError,
    is_string_list,
    json_field,
    read_vocabulary_json,
)
from syntaxlm.trees.tree import Tree

Direction = Literal["next", "past"]
DIRECTIONS: tuple[Direction, ...] = ("next", "past")

PAD_LABEL = "<pad>"
BLANK_LABEL = "_"  # no action before a word, or a word piece after the first (the authors' spelling)
UNK_LABEL = "<unk>"
SPECIAL_LABELS = (PAD_LABEL, BLANK_LABEL, UNK_LABEL)
NGRAM_SEPARATOR = "_"
NGRAM_VOCAB_FILE = "action_ngrams.json"


def action_ngrams(source: Tree | Actions) -> list[str]:
    """The action n-gram before each word, then the trailing n-gram: ``n_words + 1`` labels.

    A tree is read as RNNG actions; ``Actions`` must be RNNG-style. A word with no action before
    it gets ``BLANK_LABEL``.
    """
    actions = _rnng_actions(source)
    ngrams: list[str] = []
    run: list[str] = []
    for token, kind in zip(actions.tokens, actions.kinds.tolist()):
        if kind == ActionKind.WORD:
            ngrams.append(NGRAM_SEPARATOR.join(run) if run else BLANK_LABEL)
            run = []
        else:
            run.append(token)
    ngrams.append(NGRAM_SEPARATOR.join(run) if run else BLANK_LABEL)
    return ngrams


class ActionNgramVocab:
    """The labels of the SCLM scaffold: ``<pad>``, the blank ``_``, ``<unk>``, then training n-grams.

    Build it with ``ActionNgramVocab.build`` from the training trees; ``index`` maps an n-gram never
    seen in training to ``unk_id``.
    """

    FORMAT = "syntaxlm-action-ngram-vocab"
    pad_id = 0
    blank_id = 1
    unk_id = 2

    def __init__(self, ngrams: Sequence[str], counts: Sequence[int] | None = None):
        """The vocabulary of these n-grams, in id order after the special labels; ``counts``, one
        per n-gram, say how often each was seen in training (zeros if not given)."""
        ngrams = tuple(ngrams)
        for ngram in ngrams:
            if not isinstance(ngram, str) or not ngram or any(char.isspace() for char in ngram):
                raise VocabularyError(f"action n-gram {ngram!r} is not a non-empty string without whitespace")
            if ngram in SPECIAL_LABELS:
                raise VocabularyError(f"{ngram!r} is a special label, always in the vocabulary")
        self._labels = SPECIAL_LABELS + ngrams
        self._index = {label: i for i, label in enumerate(self._labels)}
        if len(self._index) != len(self._labels):
            duplicates = sorted(label for label, n in Counter(ngrams).items() if n > 1)
            raise VocabularyError(f"action n-grams appear more than once: {duplicates[:10]}")
        counts = (0,) * len(ngrams) if counts is None else tuple(counts)
        if len(counts) != len(ngrams) or not all(type(n) is int and n >= 0 for n in counts):
            raise VocabularyError(f"expected {len(ngrams)} non-negative integer counts, one per n-gram")
        self._counts = counts

    @classmethod
    def build(cls, trees: Iterable[Tree | Actions]) -> ActionNgramVocab:
        """The n-grams of ``trees`` (trailing ones included), most frequent first, ties in string order."""
        counts: Counter[str] = Counter()
        for tree in trees:
            counts.update(ngram for ngram in action_ngrams(tree) if ngram != BLANK_LABEL)
        ngrams = sorted(counts, key=lambda ngram: (-counts[ngram], ngram))
        return cls(ngrams, [counts[ngram] for ngram in ngrams])

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, label: object) -> bool:
        return label in self._index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ActionNgramVocab):
            return NotImplemented
        return self._labels == other._labels and self._counts == other._counts

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label, in id order."""
        return self._labels

    @property
    def ngrams(self) -> tuple[str, ...]:
        """The training n-grams, in id order (after the special labels)."""
        return self._labels[len(SPECIAL_LABELS) :]

    def count(self, label: str) -> int:
        """How often the n-gram ``label`` was seen in training (0 for a special or unknown label)."""
        i = self._index.get(label, 0) - len(SPECIAL_LABELS)
        return self._counts[i] if i >= 0 else 0

    def index(self, label: str) -> int:
        """The id of a label; ``unk_id`` for an n-gram not in the vocabulary."""
        return self._index.get(label, self.unk_id)

    def label(self, id: int) -> str:
        if not 0 <= id < len(self._labels):
            raise IndexError(f"label id {id} is outside the vocabulary (0..{len(self._labels) - 1})")
        return self._labels[id]

    def encode(self, labels: Sequence[str]) -> np.ndarray:
        """Label ids, int32."""
        return np.fromiter((self.index(label) for label in labels), dtype=np.int32, count=len(labels))

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.label(int(i)) for i in ids]

    # --- files -------------------------------------------------------------------------------

    def save(self, directory: str | Path) -> Path:
        """Write ``directory/action_ngrams.json`` atomically; returns its path."""
        file = Path(directory) / NGRAM_VOCAB_FILE
        data = {
            "format": self.FORMAT,
            "version": FORMAT_VERSION,
            "specials": list(SPECIAL_LABELS),
            "ngrams": list(self.ngrams),
            "counts": list(self._counts),
        }
        with atomic_writer(file) as handle:
            json.dump(data, handle, ensure_ascii=False, indent=1)
            handle.write("\n")
        return file

    @classmethod
    def load(cls, path: str | Path) -> ActionNgramVocab:
        """The vocabulary saved in folder ``path`` (or in the JSON file ``path``).

        Raises ``VocabularyFormatError`` naming the file when it is not such a vocabulary.
        """
        path = Path(path)
        file = path / NGRAM_VOCAB_FILE if path.is_dir() else path
        if not file.is_file():
            raise FileNotFoundError(
                f"{file}: no such file (an action n-gram folder holds {NGRAM_VOCAB_FILE})"
            )
        file, data = read_vocabulary_json(file, formats=(cls.FORMAT,))
        specials = json_field(data, "specials", file, "a list of strings", is_string_list)
        ngrams = json_field(data, "ngrams", file, "a list of strings", is_string_list)
        counts = json_field(
            data,
            "counts",
            file,
            "a list of integers",
            lambda v: isinstance(v, list) and all(type(n) is int for n in v),
        )
        if tuple(specials) != SPECIAL_LABELS:
            raise VocabularyFormatError(
                f"special labels {specials}", path=file, expected=str(list(SPECIAL_LABELS))
            )
        try:
            return cls(ngrams, counts)
        except VocabularyError as error:
            raise VocabularyFormatError(str(error), path=file) from None


@dataclass(frozen=True, eq=False)
class ScaffoldLabels:
    """One tree as SCLM training data, one entry per position of the model input ``<s>`` + pieces.

    ``ids`` are the input ids, ``labels`` the n-gram label ids for ``direction`` (see the module
    docstring), ``word_index`` the word each position belongs to (−1 for ``<s>``); all int32.
    """

    ids: np.ndarray
    labels: np.ndarray
    word_index: np.ndarray
    direction: Direction

    def __len__(self) -> int:
        return len(self.ids)


def scaffold_labels(
    source: Tree | Actions, vocab: Vocabulary, ngram_vocab: ActionNgramVocab, *, direction: Direction
) -> ScaffoldLabels:
    """The SCLM input ids and the ``direction`` labels of one tree (or RNNG action sequence).

    The words are encoded with ``vocab`` on their own, without the actions: SCLM reads words only.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown scaffold direction {direction!r}; expected one of {', '.join(DIRECTIONS)}")
    actions = _rnng_actions(source)
    ngrams = action_ngrams(actions)
    encoding = vocab.encode_words(atomic_words_as_unk(actions.words, vocab))
    word_index = np.asarray(encoding.word_index, dtype=np.int32)
    # Per piece: its word's n-gram on the first piece, the blank on the others.
    is_first_piece = np.ones(len(word_index), dtype=bool)
    is_first_piece[1:] = word_index[1:] != word_index[:-1]
    ngram_ids = ngram_vocab.encode(ngrams)
    piece_labels = np.where(is_first_piece, ngram_ids[word_index], ngram_vocab.blank_id)
    if direction == "next":
        labels = np.append(piece_labels, ngram_ids[-1])
    else:
        labels = np.insert(piece_labels, 0, ngram_vocab.pad_id)
    return ScaffoldLabels(
        ids=np.insert(np.asarray(encoding.ids, dtype=np.int32), 0, BOS_ID),
        labels=labels.astype(np.int32),
        word_index=np.insert(word_index, 0, -1),
        direction=direction,
    )


# --- inspection (``syntaxlm inspect actions``) --------------------------------------------------


def scaffold_record(source: Tree | Actions) -> dict[str, Any]:
    """A JSON-able description of the SCLM labels of one tree, per word: the n-gram before it
    (``past``, its SCLM-past label) and the one after it (``next``, the SCLM-next label of its last
    piece); ``first`` is the SCLM-next label of ``<s>``, ``trailing`` the n-gram after the last word."""
    actions = _rnng_actions(source)
    ngrams = action_ngrams(actions)
    words = [
        {"index": i, "word": word, "past": ngrams[i], "next": ngrams[i + 1]}
        for i, word in enumerate(actions.words)
    ]
    return {"model": "sclm", "start": BOS, "first": ngrams[0], "trailing": ngrams[-1], "words": words}


def scaffold_table(source: Tree | Actions) -> str:
    """``scaffold_record`` as a plain-text table, one line per word."""
    record = scaffold_record(source)
    rows = [("#", "word", "past n-gram", "next n-gram"), ("", record["start"], "", record["first"])]
    rows += [(str(w["index"]), w["word"], w["past"], w["next"]) for w in record["words"]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join([row[0].rjust(widths[0])] + [c.ljust(w) for c, w in zip(row[1:], widths[1:])]).rstrip()
        for row in rows
    ]
    return "\n".join(lines)


def _rnng_actions(source: Tree | Actions) -> Actions:
    if isinstance(source, Tree):
        return tree_to_actions(source, "rnng")
    if source.style != "rnng":
        raise ValueError(
            f"action n-grams are spelled with RNNG actions (NT(X), REDUCE), not {source.style!r} ones"
        )
    return source
