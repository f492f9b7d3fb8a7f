"""Documents as single trees, for document-level language models (TG paper §3, "document-level").

The authors model a document as one tree whose children are its sentences,
``(DOC (S ...) (S ...))``; a long sequence is then cut into segments and read with memory like any
other. ``document_trees`` makes such trees from a treebank: one document per file of a folder (Penn
Treebank ``.mrg`` files are single articles), or every ``sentences_per_document`` consecutive trees
of a file. Sentences are cleaned as the models read them (Choe–Charniak: no traces, function tags
or ``ROOT``), POS tags kept when the input has them so that the trainer reads the result like any
treebank.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from syntaxlm.structure.actions import document_tree
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree


def document_trees(
    source: str | Path,
    *,
    sentences_per_document: int | None = None,
    pos_tags: bool = True,
    label: str = "DOC",
) -> Iterator[Tree]:
    """``(DOC ...)`` trees: per file of the folder ``source``, or per ``sentences_per_document``
    consecutive trees (of a file, or of a folder read as one stream)."""
    if sentences_per_document is not None and sentences_per_document < 1:
        raise ValueError(f"sentences_per_document must be at least 1, got {sentences_per_document}")
    cleaning = replace(CHOE_CHARNIAK_CLEANING, drop_pos_tags=False)
    reader = TreeReader(source, cleaning=cleaning, pos_tags=pos_tags)
    if sentences_per_document is None:
        if not Path(source).is_dir():
            raise ValueError(
                f"{source} is one file: give sentences_per_document, or a folder of one file per document"
            )
        for path in reader.files():
            trees = list(TreeReader(path, cleaning=cleaning, pos_tags=pos_tags))
            if trees:
                yield document_tree(trees, label)
        return
    document: list[Tree] = []
    for tree in reader:
        document.append(tree)
        if len(document) == sentences_per_document:
            yield document_tree(document, label)
            document = []
    if document:
        yield document_tree(document, label)
