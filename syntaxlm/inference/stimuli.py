"""Scoring a stimuli file (``syntaxlm score``, docs/inference.md): what a researcher should know of
how its lines were read, and the scores as JSON lines or as a TSV table of one row per word."""

from __future__ import annotations

import json
from collections.abc import Sequence

from syntaxlm.data.sentences import Stimuli
from syntaxlm.inference.scorer import scores_record
from syntaxlm.inference.sentences import SentenceScores, unknown_words
from syntaxlm.memory import counted
from syntaxlm.text.tokenize import ptb_words

SCORE_COLUMNS = (
    "sentence_id", "word_index", "word", "{measure}", "unknown", "method", "pieces", "input_word_index",
)  # fmt: skip
"""The columns of the TSV, one row per word (docs/inference.md); ``{measure}`` is
``surprisal_bits`` or ``surprisal_nats``."""


def stimuli_notes(stimuli: Stimuli, words: list[list[str]], tokenize: str, vocab) -> list[str]:
    """What a researcher should know of how the stimuli were read, before their scores: the blank
    lines left out, the words a whitespace reading (``tokenize``) left unsplit that PTB-style
    tokenisation would split (``--tokenize ptb``), and how many of the ``words`` to be scored the
    model's ``vocab`` reads as unknown (scored as their class)."""
    notes = []
    if stimuli.blank_lines:
        notes.append(
            f"note: {counted(len(stimuli.blank_lines), 'blank line')} left out "
            f"({'line' if len(stimuli.blank_lines) == 1 else 'lines'} {_listed(stimuli.blank_lines)}); "
            "sentences keep their ids "
            f"({'the id column' if stimuli.id_column else 'their line numbers'})"
        )
    every = [word for sentence in words for word in sentence]
    if tokenize == "whitespace":
        unsplit = sorted(
            {
                word
                for sentence in words
                for k, word in enumerate(sentence)
                if ptb_words(word, split_period=k == len(sentence) - 1) != (word,)
            }
        )
        if unsplit:
            notes.append(
                f"note: {counted(len(unsplit), 'word')} would be split by --tokenize ptb, as the "
                f"models' training text was (e.g. {', '.join(unsplit[:3])}); read as given"
            )
    unknown = sum(sum(unknown_words(vocab, sentence)) for sentence in words)
    if unknown:
        notes.append(
            f"note: {unknown} of {len(every)} words are unknown to the model and scored as their "
            "unknown-word class (the 'unknown' column; docs/inference.md)"
        )
    return notes


def _listed(numbers: list[int], most: int = 10) -> str:
    shown = ", ".join(map(str, numbers[:most]))
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


def stimuli_lines(
    stimuli: Stimuli,
    kept: Sequence[int],
    scores: Sequence[SentenceScores],
    vocab,
    *,
    unit: str,
    eos: bool,
    format: str,
) -> list[str]:
    """The scores of the stimuli ``kept`` (their indices; ``scores`` in the same order) as lines:
    with ``format`` "jsonl" a JSON object per sentence, its ``scores_record`` in surprisal of
    ``unit`` with the line it comes from and, per word, the index of its word in that line; with
    "tsv" a row per word (``SCORE_COLUMNS``). With ``eos``, the end of each sentence as a last entry."""
    records = []
    for i, s in zip(kept, scores, strict=True):
        record = {"line": stimuli.lines[i]} | scores_record(
            s, sentence_id=stimuli.ids[i], surprisal=True, unit=unit, eos=eos,
            unknown=unknown_words(vocab, s.words),
        )  # fmt: skip
        records.append((record | {"input_word_index": stimuli.input_words[i]}, s))
    if format == "jsonl":
        return [json.dumps(record, ensure_ascii=False) for record, _ in records]
    return _score_table(records, f"surprisal_{unit}", eos)


def _score_table(records: list[tuple[dict, SentenceScores]], measure: str, eos: bool) -> list[str]:
    """The TSV lines (``SCORE_COLUMNS``) of the records and scores: a row per word, and with
    ``eos`` a ``</s>`` row per sentence (not unknown; its pieces ``</s>``, its input word ``NA``)."""
    lines = ["\t".join(SCORE_COLUMNS).format(measure=measure)]
    for record, scores in records:
        pieces = [[] for _ in record["words"]]
        for piece, word in zip(scores.pieces, scores.piece_word):
            pieces[int(word)].append(piece)
        values = record[f"word_{measure}"]
        rows = zip(record["words"], values, record["word_unknown"], pieces, record["input_word_index"])
        if eos:
            rows = [*rows, ("</s>", record[f"end_{measure}"], False, ["</s>"], "NA")]
        for index, (word, value, unknown, word_pieces, source) in enumerate(rows):
            cells = (
                record["sentence_id"], index, word, "nan" if value is None else repr(value),
                "true" if unknown else "false", record["method"], " ".join(word_pieces), source,
            )  # fmt: skip
            lines.append("\t".join(map(str, cells)))
    return lines
