"""syntaxlm: syntactic language models (TG, PLM/SCLM, PRPN, SOM, DMLM) behind one interface.

What a notebook needs is here at the top level (docs/inference.md, "In a notebook"):

    import syntaxlm

    model = syntaxlm.load_model("runs/tg-ptb/best")
    scorer = syntaxlm.Scorer(model, beam=syntaxlm.BeamSettings(action_beam=10, word_beam=3, fast_track=1))
    scorer.records([syntaxlm.ptb_tokens("The dog didn't bark.")], surprisal=True, unit="bits")

Each name is imported from its module on first use, so ``import syntaxlm`` itself loads neither
torch nor a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syntaxlm.exports import lazy_exports
from syntaxlm.version import __version__

# name -> the module it lives in
_EXPORTS = {
    "load_model": "syntaxlm.models",
    "Scorer": "syntaxlm.inference",
    "BeamSettings": "syntaxlm.inference",
    "parse": "syntaxlm.inference",
    "generate": "syntaxlm.inference",
    "ptb_tokens": "syntaxlm.text.tokenize",
    "load_suite": "syntaxlm.eval.syntaxgym",
    "suite_region_values": "syntaxlm.eval.syntaxgym",
    "evaluate_suite": "syntaxlm.eval.syntaxgym",
    "syntaxgym_scorer": "syntaxlm.eval.scorers",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from syntaxlm.eval.scorers import syntaxgym_scorer
    from syntaxlm.eval.syntaxgym import evaluate_suite, load_suite, suite_region_values
    from syntaxlm.inference import BeamSettings, Scorer, generate, parse
    from syntaxlm.models import load_model
    from syntaxlm.text.tokenize import ptb_tokens


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
