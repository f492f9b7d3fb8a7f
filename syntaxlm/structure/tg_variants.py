"""The sequence variants of ``tg.tg_sequences`` by name: TG and its two Transformer-XL baselines
(TG §4.1). Apart from tg.py, which needs numpy, so that the command line lists them without it."""

from __future__ import annotations

from typing import Literal

Variant = Literal["tg", "txl-trees", "txl-terminals"]
VARIANTS: tuple[Variant, ...] = ("tg", "txl-trees", "txl-terminals")
