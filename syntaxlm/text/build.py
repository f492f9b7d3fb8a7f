"""Vocabularies built from a corpus: the words of a treebank or CoNLL-U file, plus the atomic
nonterminal symbols of its trees (``syntaxlm vocab build``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

from syntaxlm.text.subword import SubwordVocab
from syntaxlm.text.symbols import SymbolStyle, nonterminal_symbols
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.dependency import ConlluReader, is_conllu
from syntaxlm.trees.ptb import TreeReader


def corpus_sentences(
    path: str | Path, *, skip_bad: bool = False, pos_tags: bool = True
) -> tuple[list[list[str]], set[str]]:
    """The word sequences of a corpus and the nonterminal labels of its trees.

    Treebanks are read in the Choe–Charniak view (no traces, function tags, ROOT or POS tags), so
    the labels are those the models will see; ``pos_tags=False`` reads trees already without POS
    tags (words directly under phrases). CoNLL-U files give words and no labels.
    """
    if is_conllu(path):
        return [list(dep.words) for dep in ConlluReader(path, skip_bad=skip_bad)], set()
    sentences: list[list[str]] = []
    labels: set[str] = set()
    cleaning = CHOE_CHARNIAK_CLEANING if pos_tags else replace(CHOE_CHARNIAK_CLEANING, drop_pos_tags=False)
    for tree in TreeReader(path, cleaning=cleaning, skip_bad=skip_bad, pos_tags=pos_tags):
        sentences.append(tree.leaves())
        labels.update(node.label for node in tree.subtrees())
    return sentences, labels


def build_vocabulary(
    source: str | Path,
    out: str | Path,
    *,
    kind: Literal["word", "subword"] = "word",
    symbols: SymbolStyle = "both",
    min_freq: int = 2,
    vocab_size: int = 8000,
    model_type: Literal["unigram", "bpe"] = "unigram",
    skip_bad: bool = False,
    pos_tags: bool = True,
    label_sources: Sequence[str | Path] = (),
) -> WordVocab | SubwordVocab:
    """Build a word or subword vocabulary from a corpus and save it in ``out``.

    ``label_sources`` (e.g. the validation and test treebanks) add their nonterminal labels to the
    atomic symbols, so that a label seen only there can still be spelled; their words are not used.
    """
    sentences, labels = corpus_sentences(source, skip_bad=skip_bad, pos_tags=pos_tags)
    for extra in label_sources:
        labels |= corpus_sentences(extra, skip_bad=skip_bad, pos_tags=pos_tags)[1]
    atomic = nonterminal_symbols(labels, symbols)
    if kind == "word":
        vocab: WordVocab | SubwordVocab = WordVocab.build(sentences, min_freq=min_freq, symbols=atomic)
    else:
        vocab = SubwordVocab.train(sentences, vocab_size=vocab_size, model_type=model_type, symbols=atomic)
    vocab.save(out)
    return vocab
