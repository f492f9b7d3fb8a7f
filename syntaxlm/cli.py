"""The ``syntaxlm`` command line: thin wrappers that parse options and call library functions."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from syntaxlm.errors import SyntaxlmError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Syntactic language models: data, training, scoring, parsing and the papers' evaluations.",
)
data_app = typer.Typer(no_args_is_help=True, help="Treebanks: synthetic data, downloads, statistics, conversion.")
vocab_app = typer.Typer(no_args_is_help=True, help="Word and subword vocabularies.")
app.add_typer(data_app, name="data")
app.add_typer(vocab_app, name="vocab")


def _print_json(value) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


# -- data ---------------------------------------------------------------------------------------------


@data_app.command("synth")
def data_synth(
    out: Annotated[Path, typer.Argument(help="Output folder.")],
    sentences: Annotated[int, typer.Option(help="Number of sentences (train+dev+test).")] = 10000,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same files.")] = 0,
    items_per_suite: Annotated[int, typer.Option(help="Items in each SyntaxGym-format suite.")] = 40,
) -> None:
    """Generate the synthetic treebank (train/dev/test trees) and its SyntaxGym-format suites."""
    from syntaxlm.data.synthetic import write_synthetic_treebank

    manifest = write_synthetic_treebank(out, sentences=sentences, seed=seed, items_per_suite=items_per_suite)
    _print_json(manifest)


@data_app.command("download")
def data_download(
    name: Annotated[Optional[str], typer.Argument(help="Dataset name (see --list).")] = None,
    dest: Annotated[Optional[Path], typer.Argument(help="Folder to download into.")] = None,
    mirror: Annotated[
        Optional[str], typer.Option(help="Base URL of a server laid out like shared/data (or $SYNTAXLM_DOWNLOAD_MIRROR).")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the datasets and exit.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Download a public dataset from its canonical URL, verified by sha256, resumable."""
    from syntaxlm.data import download as downloads

    if list_ or name is None:
        typer.echo(downloads.describe_datasets())
        return
    if dest is None:
        raise typer.BadParameter("give the folder to download into", param_hint="DEST")
    paths = downloads.download(name, dest, mirror=mirror, progress=progress)
    typer.echo(f"{name}: {len(paths)} files verified in {dest}")


@data_app.command("stats")
def data_stats(
    path: Annotated[Path, typer.Argument(help="Treebank file or folder (PTB brackets) or a .conllu file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed trees/sentences and report them.")] = False,
    pos_tags: Annotated[bool, typer.Option(help="Trees have POS tags (Penn style); --no-pos-tags for Choe–Charniak.")] = True,
) -> None:
    """Sentences, words, depth and label counts of a treebank or CoNLL-U file."""
    from syntaxlm.data.stats import corpus_stats

    stats = corpus_stats(path, skip_bad=skip_bad, pos_tags=pos_tags)
    if as_json:
        _print_json(stats)
        return
    for key, value in stats.items():
        if isinstance(value, dict) and key not in ("sentence_length", "depth"):
            top = ", ".join(f"{label} {count}" for label, count in list(value.items())[:15])
            value = f"{len(value)} kinds; most frequent: {top}"
        elif isinstance(value, list):
            value = f"{len(value)}" + "".join(f"\n    {item}" for item in value[:20])
        typer.echo(f"{key:>28}: {value}")


class CleaningStyle(str, Enum):
    ptb = "ptb"
    choe_charniak = "choe-charniak"
    none = "none"


@data_app.command("clean")
def data_clean(
    source: Annotated[Path, typer.Argument(help="Treebank file or folder.")],
    out: Annotated[Path, typer.Argument(help="Output file (one tree per line).")],
    style: Annotated[
        CleaningStyle,
        typer.Option(help="ptb: drop traces and function tags; choe-charniak: also the ROOT wrapper and POS tags."),
    ] = CleaningStyle.ptb,
    remove_punctuation: Annotated[bool, typer.Option(help="Drop punctuation (EVALB's COLLINS set).")] = False,
    collapse_unary: Annotated[bool, typer.Option(help="Merge unary chains into X+Y nodes.")] = False,
    strip_root: Annotated[bool, typer.Option(help="Remove a ROOT/TOP wrapper.")] = False,
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed trees and report them at the end.")] = False,
    pretty: Annotated[bool, typer.Option(help="Indented multi-line output.")] = False,
) -> None:
    """Read, clean and rewrite a treebank."""
    from dataclasses import replace

    from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING, PTB_CLEANING, Cleaning
    from syntaxlm.trees.ptb import TreeReader, write_trees

    base = {"ptb": PTB_CLEANING, "choe-charniak": CHOE_CHARNIAK_CLEANING, "none": Cleaning()}[style.value]
    cleaning = replace(
        base,
        remove_punctuation=base.remove_punctuation or remove_punctuation,
        collapse_unary_chains=base.collapse_unary_chains or collapse_unary,
        strip_root=base.strip_root or strip_root,
    )
    reader = TreeReader(source, cleaning=cleaning, skip_bad=skip_bad)
    count = write_trees(out, reader, pretty=pretty)
    typer.echo(f"{count} trees written to {out}; {reader.report.summary()}")


class Transform(str, Enum):
    left_branching = "left-branching"
    right_branching = "right-branching"
    reversed = "reversed"
    binarize_left = "binarize-left"
    binarize_right = "binarize-right"
    unbinarize = "unbinarize"


@data_app.command("transform")
def data_transform(
    source: Annotated[Path, typer.Argument(help="Treebank file or folder.")],
    out: Annotated[Path, typer.Argument(help="Output file.")],
    kind: Annotated[Transform, typer.Option(help="The transform (TG §4.1.1 ablations, binarisation).")],
    pos_tags: Annotated[bool, typer.Option(help="Input has POS tags (Penn style).")] = False,
) -> None:
    """Apply a tree transform to every tree of a file."""
    from syntaxlm.trees import binarize, transforms
    from syntaxlm.trees.ptb import TreeReader, write_trees

    function = {
        "left-branching": transforms.left_branching,
        "right-branching": transforms.right_branching,
        "reversed": transforms.reversed_tree,
        "binarize-left": lambda tree: binarize.binarize(tree, "left"),
        "binarize-right": lambda tree: binarize.binarize(tree, "right"),
        "unbinarize": binarize.unbinarize,
    }[kind.value]
    count = write_trees(out, (function(tree) for tree in TreeReader(source, pos_tags=pos_tags)))
    typer.echo(f"{count} trees written to {out}")


@data_app.command("dep2tree")
def data_dep2tree(
    source: Annotated[Path, typer.Argument(help="CoNLL-U file.")],
    out: Annotated[Path, typer.Argument(help="Output file of binary constituency trees.")],
    unlabelled: Annotated[bool, typer.Option(help="Label every node X instead of with its head's relation.")] = False,
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed sentences and report them at the end.")] = False,
) -> None:
    """Convert dependency trees to SOM's binary constituency trees (SOM §3.3, Fig. 4)."""
    from syntaxlm.trees.dependency import ConlluReader, dependency_to_binary_tree
    from syntaxlm.trees.ptb import write_trees

    reader = ConlluReader(source, skip_bad=skip_bad)
    labels = "none" if unlabelled else "relation"
    count = write_trees(out, (dependency_to_binary_tree(dep, labels=labels) for dep in reader))
    typer.echo(f"{count} trees written to {out}; {reader.report.summary()}")


# -- vocab --------------------------------------------------------------------------------------------


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
    kind: Annotated[VocabKind, typer.Option(help="Words with Berkeley UNK classes, or sentencepiece subwords.")] = (
        VocabKind.word
    ),
    symbols: Annotated[SymbolSet, typer.Option(help="Atomic nonterminal symbols to include.")] = SymbolSet.both,
    min_freq: Annotated[int, typer.Option(help="Word vocabularies: keep words seen this often.")] = 2,
    vocab_size: Annotated[int, typer.Option(help="Subword vocabularies: size (an upper bound).")] = 8000,
    model_type: Annotated[SubwordModel, typer.Option(help="Subword vocabularies: unigram or bpe.")] = (
        SubwordModel.unigram
    ),
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed trees/sentences.")] = False,
) -> None:
    """Build a vocabulary from a training corpus and save it beside where the model will live."""
    from syntaxlm.text.build import build_vocabulary

    vocab = build_vocabulary(
        source, out, kind=kind.value, symbols=symbols.value, min_freq=min_freq, vocab_size=vocab_size,
        model_type=model_type.value, skip_bad=skip_bad,
    )
    typer.echo(f"{kind.value} vocabulary of {len(vocab)} tokens ({len(vocab.symbols)} symbols) saved in {out}")


# -- quickstart -------------------------------------------------------------------------------------


@app.command("quickstart")
def quickstart(
    out: Annotated[Path, typer.Option(help="Folder for everything the run makes.")] = Path("runs/quickstart"),
    sentences: Annotated[int, typer.Option(help="Synthetic sentences (train+dev+test).")] = 5000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """The main job: synthetic treebank -> statistics -> Choe–Charniak view -> vocabularies."""
    import time

    from syntaxlm.quickstart import run_quickstart

    start = time.perf_counter()
    summary = run_quickstart(out, sentences=sentences, seed=seed)
    train = summary["treebank"]["train"]
    words, subwords = summary["word_vocabulary"], summary["subword_vocabulary"]
    lines = [
        f"synthetic treebank (seed {seed}) in {out / 'data'}:",
        *(
            f"  {split:5} {s['sentences']:6d} sentences, {s['words']:7d} words, "
            f"mean length {s['sentence_length']['mean']}, mean depth {s['depth']['mean']}"
            for split, s in summary["treebank"].items()
        ),
        f"  {summary['word_types_train']} word types in train; "
        f"{len(summary['suites'] or [])} SyntaxGym-format suites in {out / 'data' / 'suites'}",
        f"word vocabulary ({out / 'vocab' / 'words'}): {words['size']} tokens, {words['symbols']} nonterminal "
        f"symbols, {100 * words['dev_unknown_rate']:.2f}% of dev words unknown (mapped to UNK classes)",
        f"subword vocabulary ({out / 'vocab' / 'subwords'}): {subwords['size']} pieces, "
        f"{subwords['pieces_per_word_dev']} pieces per dev word",
        "a dev sentence (Choe–Charniak view) and its pieces:",
        f"  {summary['sample']['tree']}",
        "  " + " ".join(summary["sample"]["pieces"]),
        f"summary: {out / 'summary.json'}  ({time.perf_counter() - start:.1f} s; {train['sentences']} training trees)",
    ]
    typer.echo("\n".join(lines))


def main() -> None:
    """Console entry point: library errors become one clear message and exit status 2."""
    try:
        app()
    except (SyntaxlmError, FileNotFoundError, IsADirectoryError) as error:
        typer.secho(f"error: {error}", err=True, fg=typer.colors.RED)
        sys.exit(2)
