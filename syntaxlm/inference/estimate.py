"""How long joint-model inference will take, said before the bulk of it: the first sentences are
scored on their own and timed, and the whole work estimated from its words at their pace
(sentences × words per sentence × the seconds per word measured). The first sentences are a
batch, or fewer for small inputs, so that the estimate comes early; they are taken in the order
given, not the shortest first."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from syntaxlm.inference.beam import BeamSettings

SAY_AFTER_SECONDS = 10.0
"""Work estimated to take less than this is done without a word."""

LONG_SECONDS = 60.0
"""Work estimated to take longer than this comes with a suggestion to make it shorter."""

QUICKSTART_BEAM = BeamSettings(action_beam=10, word_beam=3, fast_track=1)
"""The smaller beam the quickstart scores with, suggested for long work."""

T = TypeVar("T")


@dataclass(frozen=True)
class InferenceEstimate:
    """The pace of the first sentences scored: ``seconds`` for ``sentences`` sentences of
    ``words`` words."""

    sentences: int
    words: int
    seconds: float

    def seconds_for(self, words: int) -> float:
        """The seconds ``words`` words take at this pace."""
        return self.seconds * words / max(self.words, 1)


def first_sentences(sentences: int, batch_size: int) -> int:
    """How many sentences to time first: one batch, or an eighth of the work when that is fewer
    (at least 1)."""
    return max(1, min(batch_size, sentences // 8))


def timed_first(
    sentences: Sequence[Sequence[str]],
    score: Callable[[slice], list[T]],
    *,
    batch_size: int,
    on_estimate: Callable[[InferenceEstimate], None],
) -> list[T]:
    """``score(slice(None))``, done as ``score`` of the first sentences (``first_sentences``),
    timed and given to ``on_estimate``, then of the rest."""
    first = first_sentences(len(sentences), batch_size)
    if first >= len(sentences):
        return score(slice(None))
    began = time.perf_counter()
    scores = score(slice(0, first))
    seconds = time.perf_counter() - began
    on_estimate(InferenceEstimate(first, sum(len(words) for words in sentences[:first]), seconds))
    return scores + score(slice(first, None))


def estimate_message(
    estimate: InferenceEstimate,
    *,
    sentences: int,
    words: int,
    beam: BeamSettings | None,
    limit: str | None,
    work: float | None = None,
) -> str | None:
    """What to tell a user about to score ``sentences`` sentences of ``words`` words at the pace
    of ``estimate`` (None for short work); for long work, how to make it shorter: the quickstart's
    beam when ``beam`` (the beam search's settings, None for other methods) is wider, and ``limit``,
    how the command at hand scores less (``"--limit N to score the first N only"``; None where it
    has no such option). ``work``: the words at the estimate's pace that the whole takes, where
    that is not ``words`` (a beam search searches a prefix common to sentences of a batch once)."""
    seconds = estimate.seconds_for(words if work is None else work)
    if seconds < SAY_AFTER_SECONDS:
        return None
    message = (
        f"estimate: about {duration(seconds)} for {sentences} sentences ({words} words), from the first "
        f"{estimate.sentences} ({estimate.words} words in {estimate.seconds:.1f} s)"
    )
    if seconds <= LONG_SECONDS:
        return message
    shorter = [limit] if limit is not None else []
    if beam is not None and beam.action_beam > QUICKSTART_BEAM.action_beam:
        small = QUICKSTART_BEAM
        shorter.insert(
            0,
            f"a smaller beam (--action-beam {small.action_beam} --word-beam {small.word_beam} "
            f"--fast-track {small.fast_track}, the quickstart's; this one is {beam.action_beam}/"
            f"{beam.word_beam}/{beam.fast_track})",
        )
    return f"{message}; to make it shorter: {', or '.join(shorter)}" if shorter else message


def duration(seconds: float) -> str:
    """``45 s``, ``3 min``, ``2 h 5 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"
