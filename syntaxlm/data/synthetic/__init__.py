"""The synthetic treebank, syntaxlm's embedded default data: a seeded English-like grammar that
writes Penn Treebank trees (``grammar.py``), SyntaxGym-format suites built with the same grammar
(``suites.py``), and the treebank's sentence stream and files (``treebank.py``).
``docs/synthetic-treebank.md`` documents it in full.
"""

from syntaxlm.data.synthetic.grammar import (
    MAX_WORDS,
    Grammar,
    Referent,
    Table,
    closed_class_words,
    derive_seed,
    finish,
)
from syntaxlm.data.synthetic.suites import (
    SUITE_DESIGNS,
    Contrast,
    GeneratedItem,
    GeneratedSuite,
    SuiteDesign,
    build_suite,
)
from syntaxlm.data.synthetic.treebank import SyntheticTreebank, phenomenon_counts, write_synthetic_treebank

__all__ = [
    "MAX_WORDS",
    "SUITE_DESIGNS",
    "Contrast",
    "GeneratedItem",
    "GeneratedSuite",
    "Grammar",
    "Referent",
    "SuiteDesign",
    "SyntheticTreebank",
    "Table",
    "build_suite",
    "closed_class_words",
    "derive_seed",
    "finish",
    "phenomenon_counts",
    "write_synthetic_treebank",
]
