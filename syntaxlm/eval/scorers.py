"""A ``Scorer`` (``inference.scorer``) as the scoring callables the evaluations take.

The evaluations never see a model or a scorer: SyntaxGym reads a ``TokenScorer`` and BLiMP a
``SentenceScorer``. ``syntaxgym_scorer`` and ``blimp_scorer`` make them from a scorer, so that
inference knows nothing of the evaluations, and the evaluations themselves nothing of inference.
``inference.sentences.unknown_words`` says which words a model's vocabulary does not know (the
unknown-word counts of both evaluations; ``blimp_words`` for BLiMP's tokenisation, ``ptb_tokens``).
For reading times, ``story_surprisals`` gives per-word surprisal along stories, each read as one
document or sentence by sentence (``story_context``), and which words the model does not know.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from syntaxlm.eval.syntaxgym import ScoredTokens, TokenizerConvention
from syntaxlm.inference.scorer import END, Scorer
from syntaxlm.inference.sentences import unknown_words
from syntaxlm.text.tokenize import ptb_tokens


def syntaxgym_scorer(scorer: Scorer, *, eos: bool = False):
    """A ``TokenScorer`` for ``syntaxgym.suite_region_values`` and its ``TokenizerConvention``.

    Suite sentences are space-separated words; each word is one token whose log-probability sums
    its pieces, so tokens match the region text exactly. ``eos=True`` adds ``</s>`` as a suffix
    token (the end of the sentence, in the last region).
    """

    def score(sentences: Sequence[str]) -> list[ScoredTokens]:
        results = scorer.score([sentence.split() for sentence in sentences])
        out = []
        for s in results:
            tokens, values = list(s.words), list(s.word_logprobs)
            if eos:
                tokens.append(END)
                values.append(s.end_logprob)
            out.append(ScoredTokens(tokens=tokens, logprobs=values))
        return out

    convention = TokenizerConvention(suffix_tokens=frozenset({END}) if eos else frozenset())
    return score, convention


def blimp_scorer(scorer: Scorer, *, tokenize: Callable[[str], list[str]] = ptb_tokens):
    """A ``SentenceScorer`` for ``blimp.score_blimp``: each sentence's full log-probability
    (its words and the end), after ``tokenize`` (PTB-like splitting by default)."""

    def score(sentences: Sequence[str]) -> list[float]:
        words = [tokenize(s) for s in sentences]
        return scorer.sequence_score(words, reduction="sum", surprisal=False, unit="nats", eos=True)

    return score


def blimp_words(scorer: Scorer, *, tokenize: Callable[[str], list[str]] = ptb_tokens):
    """A ``WordReader`` for ``blimp.score_blimp``: a sentence's words as ``blimp_scorer`` gives
    them to the model (``tokenize``) and which of them its vocabulary reads as unknown."""
    vocab = scorer.model.vocab

    def read(sentence: str) -> tuple[list[str], list[bool]]:
        words = tokenize(sentence)
        return words, unknown_words(vocab, words) if words else []

    return read



def model_blimp(scorer: Scorer, pairs, *, batch_size: int, progress: bool = False):
    """``blimp.score_blimp`` of ``pairs`` under ``scorer``'s model: each sentence's full
    log-probability (``blimp_scorer``) and the words its vocabulary does not know (``blimp_words``)."""
    from syntaxlm.eval.blimp import score_blimp

    return score_blimp(
        pairs, blimp_scorer(scorer), batch_size=batch_size, progress=progress, words=blimp_words(scorer)
    )

# --- reading times: surprisal along stories ----------------------------------------------------------

DOCUMENT_LABEL = "DOC"  # the root of document-level training trees (structure.actions.document_tree)
STORY_CONTEXTS = ("auto", "document", "sentence")


def story_context(scorer: Scorer, stories: Sequence[Sequence[str]], asked: str) -> tuple[str, str]:
    """How stories are read: ``("document", why)`` (each story as one sequence, every sentence
    after the story so far) or ``("sentence", why)`` (each sentence alone). ``auto`` reads
    documents where the model allows it: it was trained on document trees (its vocabulary holds
    the ``DOC`` label) and can read every story whole (``Scorer.too_long``); ``document`` asks for
    it (refused when a story is too long for the model), ``sentence`` for sentences."""
    from syntaxlm.inference.grammar import InferenceError

    if asked not in STORY_CONTEXTS:
        raise InferenceError(f"context must be one of {', '.join(STORY_CONTEXTS)}, got {asked!r}")
    if asked == "sentence":
        return "sentence", "asked for"
    trained = f"({DOCUMENT_LABEL}" in getattr(scorer.model.vocab, "symbols", ())
    too_long = scorer.too_long(stories)
    if asked == "document":
        if too_long:
            raise InferenceError(
                f"{len(too_long)} stories have more pieces than this model can read in one sequence "
                f"({scorer.model.longest_sentence()}); read them sentence by sentence"
            )
        return "document", "asked for" + ("" if trained else "; the model was trained on sentences")
    if not trained:
        return "sentence", f"the model was trained on sentences (no {DOCUMENT_LABEL} label in its vocabulary)"
    if too_long:
        most = scorer.model.longest_sentence()
        return "sentence", f"a story is longer than the model can read ({most} pieces)"
    return "document", f"the model was trained on documents ({DOCUMENT_LABEL} trees)"


def story_surprisals(
    scorer: Scorer,
    sentences: Sequence[Sequence[str]],
    stories: Sequence[Sequence[int]],
    *,
    context: str,
    trees: Sequence | None = None,
) -> tuple[list[np.ndarray | None], list[list[bool]], dict[int, str]]:
    """Per sentence, each word's surprisal in bits (its pieces summed; ``None`` for a sentence the
    model cannot score), whether each word is unknown to the model, and why each sentence that was
    not scored was not: longer than the model can read, a tree with labels the model does not
    know (gold), or a probability the method lost (a beam that kept no derivation of a word).
    ``stories``: the sentence indices of each story; ``context``: ``"document"`` scores each story
    as one sequence (a document tree of its ``trees`` for the gold method), ``"sentence"`` each
    sentence alone; ``trees``: gold trees, per sentence."""
    vocab = scorer.model.vocab
    bits: list[np.ndarray | None] = [None] * len(sentences)
    unknown = [unknown_words(vocab, words) for words in sentences]
    unscored: dict[int, str] = {}
    if trees is not None:
        symbols = set(getattr(vocab, "symbols", ()))
        for s, tree in enumerate(trees):
            missing = sorted({t.label for t in tree.subtrees() if f"({t.label}" not in symbols})
            if missing:
                unscored[s] = f"its tree has labels the model does not know: {', '.join(missing)}"
    if context == "document":
        for story in stories:
            _score_story(scorer, sentences, story, trees, bits, unscored)
        return bits, unknown, unscored
    most = scorer.model.longest_sentence()
    for s in scorer.too_long(sentences):
        unscored[s] = f"longer than the model can read ({most} pieces)"
    kept = [s for s in range(len(sentences)) if s not in unscored]
    for s, scores in _scores_or_none(scorer, sentences, kept, trees).items():
        if scores is None:
            unscored[s] = "the method lost it (a word of log-probability -inf)"
        else:
            bits[s] = _surprisal_bits(scores)
    return bits, unknown, dict(sorted(unscored.items()))


def _score_story(scorer: Scorer, sentences, story: Sequence[int], trees, bits: list, unscored: dict) -> None:
    """Score one story as one sequence into ``bits``; when it cannot be (a sentence of it not
    scorable, a lost probability), its sentences go into ``unscored``."""
    from syntaxlm.inference.scorer import NonFiniteScoreError
    from syntaxlm.structure.actions import document_tree

    blocked = [s for s in story if s in unscored]
    if blocked:
        for s in story:
            unscored.setdefault(s, f"read as one document with sentence {blocked[0]}, which could not be")
        return
    words = [word for s in story for word in sentences[s]]
    given = {} if trees is None else {"trees": [document_tree([trees[s] for s in story], DOCUMENT_LABEL)]}
    try:
        values = _surprisal_bits(scorer.score([words], **given)[0])
    except NonFiniteScoreError:
        for s in story:
            unscored[s] = "the method lost the story (a word of log-probability -inf)"
        return
    start = 0
    for s in story:
        bits[s] = values[start : start + len(sentences[s])]
        start += len(sentences[s])


def _surprisal_bits(scores) -> np.ndarray:
    return -np.asarray(scores.word_logprobs, dtype=float) / math.log(2)


def _scores_or_none(scorer: Scorer, sentences, kept: list[int], trees) -> dict[int, object]:
    """The scores of the sentences ``kept``, all at once; where the method gives one a non-finite
    log-probability (a beam that lost it), each alone, that one ``None``."""
    from syntaxlm.inference.scorer import NonFiniteScoreError

    def given(indices: list[int]) -> dict:
        return {} if trees is None else {"trees": [trees[s] for s in indices]}

    if not kept:
        return {}
    try:
        scores = scorer.score([sentences[s] for s in kept], indices=kept, **given(kept))
        return dict(zip(kept, scores))
    except NonFiniteScoreError:
        out: dict[int, object] = {}
        for s in kept:
            try:
                out[s] = scorer.score([sentences[s]], indices=[s], **given([s]))[0]
            except NonFiniteScoreError:
                out[s] = None
        return out
