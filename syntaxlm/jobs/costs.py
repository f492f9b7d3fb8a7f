"""What the tiny models' training and evaluation cost, relative to one another: the weights of the
quickstart's and the learning curve's stages in their time left (``jobs.stages``).

Seconds per training epoch and seconds of evaluation on 2 CPU cores (the quickstart's FULL budget,
2026-11-28, 2 cores of an Intel Xeon, each model in a process of 1 thread, the transformers with 6
layers), in units of TXL (terminals)' epoch (8.6 s: 3,200 sentences, batch 16), on suites of 20
items. Measurements of one machine, not facts of the models."""

from __future__ import annotations

TRAIN_WEIGHT = {
    "txl-terminals": 1.0, "txl-trees": 2.5, "tg": 3.6, "lm": 0.7, "plm": 1.8, "plm-mask": 2.1,
    "sclm-next": 0.8, "lstm": 0.2, "prpn": 2.2, "esom": 3.5, "dm-lstm": 0.4,
}  # fmt: skip
EVAL_WEIGHT = {"txl-trees": 13.7, "tg": 14.9, "plm": 11.7, "plm-mask": 11.4}
WORDS_ONLY_EVAL_WEIGHT = 0.7  # the exact scorers: a few seconds
MEASURED_SENTENCES = 3200  # training sentences of one epoch of TRAIN_WEIGHT
MEASURED_ITEMS = 20  # items per suite of EVAL_WEIGHT


def evaluation_weight(model: str) -> float:
    """A model's evaluation cost: measured for the joint models (the beam search), else the exact
    scorers' few seconds."""
    return EVAL_WEIGHT.get(model, WORDS_ONLY_EVAL_WEIGHT)
