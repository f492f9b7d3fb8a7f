"""What the quickstart (``jobs.quickstart``) runs: its models, each paper's beside the baseline that
paper compares it with, and its budgets (``FULL``, ``FAST``)."""

from __future__ import annotations

from dataclasses import dataclass

from syntaxlm.inference.beam import BeamSettings
from syntaxlm.models import model_card

# The models trained and compared, by their cards (``syntaxlm.models.ModelCard``: paper, structure,
# baseline): each paper's model beside the words-only baseline that paper compares it with.
MODELS = tuple(
    model_card(name)
    for name in (
        "txl-terminals", "txl-trees", "tg", "lm", "plm", "plm-mask", "sclm-next", "lstm", "prpn", "esom",
        "dm-lstm",
    )
)  # fmt: skip
# The suites where the papers find structure-aware models ahead: agreement and NPI licensing.
AGREEMENT_AND_LICENSING = ("synthetic_number_", "synthetic_reflexive_", "synthetic_npi_")


@dataclass(frozen=True)
class Budget:
    """What one quickstart costs: the treebank's size and lexicon (the synthetic grammar's
    ``lexicon_size``: the most frequent words of each open class), items per suite, the passes over
    the training sentences every model makes (rows per batch), and how the models are scored."""

    sentences: int
    items_per_suite: int
    epochs: int
    batch_size: int
    test_sentences: int
    beam: BeamSettings
    lexicon_size: int | None = None
    figure_sentence: str = "The officials near the boy have seen themselves ."
    view_sentences: int = 20  # test sentences in view.html's sentence and attention views


# A lexicon of 10 words per class and 1,600 updates of 16 sentences: the words-only baseline
# learns agreement across a PP attractor there (docs/learning-curve.md's pilots: 0.925 on
# number_prep), so that the comparison measures structure, not a failure to learn.
FULL = Budget(
    sentences=4000,
    items_per_suite=20,
    epochs=8,
    batch_size=16,
    test_sentences=100,
    beam=BeamSettings(10, 3, 1),
    lexicon_size=10,
)
FAST = Budget(
    sentences=400,
    items_per_suite=2,
    epochs=1,
    batch_size=32,
    test_sentences=20,
    beam=BeamSettings(5, 2, 1),
    lexicon_size=20,
    view_sentences=5,
)
