"""``syntaxlm vocab``: word and subword vocabularies."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

vocab_app = typer.Typer(no_args_is_help=True, help="Word and subword vocabularies.")


class VocabKind(str, Enum):
    word = "word"
    subword = "subword"


class SymbolSet(str, Enum):
    both = "both"
    choe_charniak = "choe-charniak"
    rnng = "rnng"
    none = "none"


class SubwordModel(str, Enum):
    unigram = "unigram"
    bpe = "bpe"


@vocab_app.command("build")
def vocab_build(
    source: Annotated[Path, typer.Argument(help="Training treebank (file or folder) or CoNLL-U file.")],
    out: Annotated[Path, typer.Option(help="Folder to save the vocabulary in.")],
    kind: Annotated[
        VocabKind, typer.Option(help="Words with Berkeley UNK classes, or sentencepiece subwords.")
    ] = (VocabKind.word),
    symbols: Annotated[
        SymbolSet, typer.Option(help="Atomic nonterminal symbols to include.")
    ] = SymbolSet.both,
    min_freq: Annotated[int, typer.Option(help="Word vocabularies: keep words seen this often.")] = 2,
    vocab_size: Annotated[int, typer.Option(help="Subword vocabularies: size (an upper bound).")] = 8000,
    model_type: Annotated[SubwordModel, typer.Option(help="Subword vocabularies: unigram or bpe.")] = (
        SubwordModel.unigram
    ),
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed trees/sentences.")] = False,
    pos_tags: Annotated[
        bool, typer.Option(help="Trees have POS tags (Penn style); --no-pos-tags for Choe–Charniak.")
    ] = True,
) -> None:
    """Build a vocabulary from a training corpus and save it beside where the model will live."""
    from syntaxlm.text.build import build_vocabulary

    vocab = build_vocabulary(
        source,
        out,
        kind=kind.value,
        symbols=symbols.value,
        min_freq=min_freq,
        vocab_size=vocab_size,
        model_type=model_type.value,
        skip_bad=skip_bad,
        pos_tags=pos_tags,
    )
    typer.echo(
        f"{kind.value} vocabulary of {len(vocab)} tokens ({len(vocab.symbols)} symbols) saved in {out}"
    )
