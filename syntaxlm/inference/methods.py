"""The names of inference's methods and units, in a module without torch, so that the command line
lists them as its choices without loading a model's machinery."""

SCORE_METHODS = ("auto", "exact", "beam", "gold", "proposals")
"""How the ``Scorer`` finds a sentence's probability (``inference.scorer``)."""

PARSE_METHODS = ("auto", "beam", "rerank", "induced")
"""How ``parse`` finds a sentence's tree (``inference.scorer.parse``)."""

UNITS = ("bits", "nats")
"""The units of log-probabilities and surprisals."""
