"""The ``syntaxlm`` command line: thin wrappers that parse options and call library functions."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from syntaxlm.errors import SyntaxlmError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: rich's option tables truncate names at 80 columns
    help="Syntactic language models: data, training, scoring, parsing and the papers' evaluations.",
)
data_app = typer.Typer(
    no_args_is_help=True, help="Treebanks: synthetic data, downloads, statistics, splits, conversion."
)
vocab_app = typer.Typer(no_args_is_help=True, help="Word and subword vocabularies.")
app.add_typer(data_app, name="data")
app.add_typer(vocab_app, name="vocab")
inspect_app = typer.Typer(
    no_args_is_help=True, help="Show what models read from trees: TG masks, actions, distances, SOM labels."
)
app.add_typer(inspect_app, name="inspect")
eval_app = typer.Typer(
    no_args_is_help=True, help="The papers' evaluations; each also scores precomputed inputs."
)
app.add_typer(eval_app, name="eval")
plot_app = typer.Typer(
    no_args_is_help=True,
    help="The papers' figures from saved models: surprisal, distances, masks, attention.",
)
app.add_typer(plot_app, name="plot")
model_app = typer.Typer(no_args_is_help=True, help="Saved models and checkpoints: sealing trusted files.")
app.add_typer(model_app, name="model")


@app.callback()
def global_options(
    threads: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="CPU threads torch uses; worker processes share them out. Default: OMP_NUM_THREADS when "
            "set, else the cores not busy when the command starts (the 1-minute load average), at "
            "least 1. Numbers can differ in their last digits with the thread count.",
        ),
    ] = None,
) -> None:
    """Syntactic language models: data, training, scoring, parsing and the papers' evaluations."""
    from syntaxlm.threads import use_threads

    use_threads(threads)


def _print_json(value) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _write_result(out: Path, kind: str, result, inputs=None, options=None) -> None:
    """Write a result file (``syntaxlm.results``): the result with its inputs and options."""
    from syntaxlm.results import result_record, write_result

    write_result(out, result_record(kind, result, inputs=inputs, options=options))


def _refuse_overwriting(out: Path | None, inputs: list[Path | None]) -> None:
    """Refuse an ``--out`` that would replace one of the command's inputs, before any work."""
    from syntaxlm.files import refuse_overwriting

    refuse_overwriting(out, inputs)


# -- data ---------------------------------------------------------------------------------------------


@data_app.command("synth")
def data_synth(
    out: Annotated[Path, typer.Argument(help="Output folder.")],
    sentences: Annotated[int, typer.Option(help="Number of sentences (train+dev+test).")] = 10000,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same files.")] = 0,
    items_per_suite: Annotated[int, typer.Option(help="Items in each SyntaxGym-format suite.")] = 40,
    lexicon_size: Annotated[
        int | None,
        typer.Option(
            help="Keep the N most frequent words of each open word class (nouns of each kind, verbs, "
            "adjectives, ...; at least 10), so that a small corpus sees each word often. Default: all."
        ),
    ] = None,
) -> None:
    """Generate the synthetic treebank (train/dev/test trees) and its SyntaxGym-format suites."""
    from syntaxlm.data.synthetic import write_synthetic_treebank

    manifest = write_synthetic_treebank(
        out, sentences=sentences, seed=seed, items_per_suite=items_per_suite, lexicon_size=lexicon_size
    )
    _print_json(manifest)


@data_app.command("download")
def data_download(
    name: Annotated[str | None, typer.Argument(help="Dataset name (see --list).")] = None,
    dest: Annotated[Path | None, typer.Argument(help="Folder to download into.")] = None,
    mirror: Annotated[
        str | None,
        typer.Option(help="Base URL of a server laid out like shared/data (or $SYNTAXLM_DOWNLOAD_MIRROR)."),
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


NO_POS_TAGS_HINT = "for trees without POS tags (Choe–Charniak style) pass --no-pos-tags"


@data_app.command("stats")
def data_stats(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Treebank files or folders (PTB brackets) or .conllu files; several: each and their total."
        ),
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help='Print JSON: one object, or for several paths {"paths": [...], "total": {...}}.'
        ),
    ] = False,
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed trees/sentences and report them.")] = False,
    pos_tags: Annotated[
        bool, typer.Option(help="Trees have POS tags (Penn style); --no-pos-tags for Choe–Charniak.")
    ] = True,
) -> None:
    """Sentences, words, depth and label counts of treebanks or CoNLL-U files."""
    from syntaxlm.data.stats import corpus_stats, total_stats
    from syntaxlm.errors import MissingPosTagError

    try:
        each = [corpus_stats(path, skip_bad=skip_bad, pos_tags=pos_tags) for path in paths]
    except MissingPosTagError as error:
        raise error.with_hint(NO_POS_TAGS_HINT) from None
    reports = each if len(each) == 1 else [*each, total_stats(each)]
    if as_json:
        _print_json(each[0] if len(each) == 1 else {"paths": each, "total": reports[-1]})
        return
    for stats in reports:
        if len(reports) > 1:
            typer.echo(f"== {stats['path']}")
        for key, value in stats.items():
            if isinstance(value, dict) and key not in ("sentence_length", "depth"):
                top = ", ".join(f"{label} {count}" for label, count in list(value.items())[:15])
                value = f"{len(value)} kinds; most frequent: {top}"
            elif isinstance(value, list):
                value = f"{len(value)}" + "".join(f"\n    {item}" for item in value[:20])
            typer.echo(f"{key:>28}: {value}")


@data_app.command("split")
def data_split(
    sources: Annotated[
        list[Path],
        typer.Argument(help="Treebank files or folders (searched recursively): PTB brackets or CoNLL-U."),
    ],
    out: Annotated[
        Path, typer.Option(help="Folder for train/dev/test.trees (.conllu for CoNLL-U) and split.json.")
    ],
    ratio: Annotated[
        str | None,
        typer.Option(
            help="Deal the sentences at random: train,dev[,test] fractions summing to 1 (0.8,0.1,0.1)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of --ratio's shuffle; the same seed, the same split.")] = 0,
    wsj_sections: Annotated[
        bool,
        typer.Option(
            "--wsj-sections",
            help="The standard WSJ split by the section in each file name (wsj_0201.mrg: 02): "
            "train 02-21, dev 22, test 23.",
        ),
    ] = False,
    train: Annotated[
        list[str] | None,
        typer.Option(
            help="Files of the train split: names, paths under a folder given, or quoted glob patterns "
            "('wsj_02*.mrg'); @FILE reads them from FILE, one a line (repeatable).",
        ),
    ] = None,
    dev: Annotated[list[str] | None, typer.Option(help="Files of the dev split, as for --train.")] = None,
    test: Annotated[list[str] | None, typer.Option(help="Files of the test split, as for --train.")] = None,
    pos_tags: Annotated[
        bool, typer.Option(help="Trees have POS tags (Penn style); --no-pos-tags for Choe–Charniak.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest (split.json) as JSON.")] = False,
) -> None:
    """Split a treebank into train/dev/test files: by ratio, by file lists, or by WSJ sections."""
    from syntaxlm.data import split
    from syntaxlm.errors import MissingPosTagError

    lists = {name: given for name, given in (("train", train), ("dev", dev), ("test", test)) if given}
    ways = {"--ratio": ratio, "--wsj-sections": wsj_sections, "--train/--dev/--test": lists}
    chosen = [way for way, given in ways.items() if given]
    if len(chosen) != 1:
        raise typer.BadParameter(
            "choose one way to split: --ratio, --wsj-sections or --train/--dev/--test "
            f"(given: {', '.join(chosen) or 'none'})"
        )
    try:
        if ratio is not None:
            ratios = split.parse_ratios(ratio)
            manifest = split.split_by_ratio(sources, out, ratios, seed=seed, pos_tags=pos_tags)
        elif wsj_sections:
            manifest = split.split_by_wsj_sections(sources, out, pos_tags=pos_tags)
        else:
            manifest = split.split_by_file_lists(sources, out, lists, pos_tags=pos_tags)
    except MissingPosTagError as error:
        raise error.with_hint(NO_POS_TAGS_HINT) from None
    if as_json:
        _print_json(manifest)
        return
    for name, counts in manifest["splits"].items():
        sentences, files = counts["sentences"], counts["files"]
        typer.echo(f"{name:>5}: {sentences} sentences of {files} files -> {counts['path']}")
    left_out = manifest["left_out"]
    if left_out["files"]:
        typer.echo(f"left out: {left_out['sentences']} sentences of {left_out['files']} files")


@data_app.command("english")
def data_english(
    source: Annotated[
        Path,
        typer.Argument(
            help="The folder holding craft/, gum_const_cc/ and nltk_wsj_sample_noncommercial/ "
            "(../shared/data/constituency's layout)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Folder for train/dev/test.trees and split.json.")],
    treebanks: Annotated[
        str, typer.Option(help="The treebanks to take, comma-separated: craft, gum, wsj-sample.")
    ] = "craft,gum,wsj-sample",
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest (split.json) as JSON.")] = False,
) -> None:
    """The real-English corpus: CRAFT, GUM and the WSJ sample split by document, each treebank by
    its own split where it has one, cleaned as the recipes read them (docs/real-english.md)."""
    from syntaxlm.data.english import make_english_corpus

    manifest = make_english_corpus(source, out, _names(treebanks, "--treebanks"))
    if as_json:
        _print_json(manifest)
        return
    for name, counts in manifest["splits"].items():
        typer.echo(
            f"{name:>5}: {counts['sentences']:,} sentences, {counts['words']:,} words, "
            f"{counts['files']} documents -> {counts['path']}"
        )
    for name, counts in manifest["treebanks"].items():
        per_split = ", ".join(f"{split} {n:,}" for split, n in counts["sentences"].items())
        typer.echo(f"{name}: sentences {per_split}")


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
        typer.Option(
            help="ptb: drop traces and function tags; choe-charniak: also the ROOT wrapper and POS tags."
        ),
    ] = CleaningStyle.ptb,
    remove_punctuation: Annotated[bool, typer.Option(help="Drop punctuation (EVALB's COLLINS set).")] = False,
    collapse_unary: Annotated[bool, typer.Option(help="Merge unary chains into X+Y nodes.")] = False,
    strip_root: Annotated[bool, typer.Option(help="Remove a ROOT/TOP wrapper.")] = False,
    skip_bad: Annotated[bool, typer.Option(help="Skip malformed trees and report them at the end.")] = False,
    pretty: Annotated[bool, typer.Option(help="Indented multi-line output.")] = False,
) -> None:
    """Read, clean and rewrite a treebank."""
    _refuse_overwriting(out, [source])
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
    _refuse_overwriting(out, [source])
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


@data_app.command("documents")
def data_documents(
    source: Annotated[Path, typer.Argument(help="A folder (one document per file) or a treebank file.")],
    out: Annotated[Path, typer.Argument(help="Output file of (DOC ...) trees, one per document.")],
    sentences: Annotated[
        int | None, typer.Option(help="Sentences per document (instead of one document per file).")
    ] = None,
    pos_tags: Annotated[bool, typer.Option(help="Input has POS tags (Penn style).")] = True,
) -> None:
    """Group sentence trees into document trees (DOC (S ...) (S ...)) for document-level models."""
    _refuse_overwriting(out, [source])
    from syntaxlm.data.documents import document_trees
    from syntaxlm.trees.ptb import write_trees

    trees = document_trees(source, sentences_per_document=sentences, pos_tags=pos_tags)
    count = write_trees(out, trees)
    typer.echo(f"{count} documents written to {out}")


@data_app.command("dep2tree")
def data_dep2tree(
    source: Annotated[Path, typer.Argument(help="CoNLL-U file.")],
    out: Annotated[Path, typer.Argument(help="Output file of binary constituency trees.")],
    unlabelled: Annotated[
        bool, typer.Option(help="Label every node X instead of with its head's relation.")
    ] = False,
    skip_bad: Annotated[
        bool, typer.Option(help="Skip malformed sentences and report them at the end.")
    ] = False,
) -> None:
    """Convert dependency trees to SOM's binary constituency trees (SOM §3.3, Fig. 4)."""
    _refuse_overwriting(out, [source])
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


# -- inspect ------------------------------------------------------------------------------------------

TreesArgument = Annotated[Path, typer.Argument(help="Trees (PTB brackets; file or folder).")]
CleanOption = Annotated[
    bool, typer.Option(help="Input is Penn style: drop traces, function tags, ROOT and POS tags first.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON, one record per line.")]
LimitOption = Annotated[int | None, typer.Option(help="Show only the first N trees.")]


def _inspected_trees(path: Path, clean: bool, limit: int | None):
    from itertools import islice

    from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
    from syntaxlm.trees.ptb import TreeReader

    reader = TreeReader(path, cleaning=CHOE_CHARNIAK_CLEANING if clean else None, pos_tags=clean)
    return enumerate(islice(reader, limit))


class TGVariant(str, Enum):
    tg = "tg"
    txl_trees = "txl-trees"
    txl_terminals = "txl-terminals"


@inspect_app.command("tg")
def inspect_tg(
    trees: TreesArgument,
    segment_length: Annotated[
        int | None, typer.Option(help="Cut into segments of L (default: one segment).")
    ] = None,
    smart_memory: Annotated[
        bool, typer.Option(help="Carry the stack between segments (TG); otherwise the previous positions.")
    ] = False,
    memory_length: Annotated[
        int | None, typer.Option(help="Memory slots (default: the segment length).")
    ] = None,
    variant: Annotated[TGVariant, typer.Option(help="TG, or a Transformer-XL baseline.")] = TGVariant.tg,
    vocab: Annotated[
        Path | None, typer.Option(help="Spell with this vocabulary (its pieces and ids).")
    ] = None,
    clean: CleanOption = False,
    as_json: JsonOption = False,
    limit: LimitOption = None,
    plot: Annotated[
        Path | None, typer.Option(help="Also draw each mask (TG Fig. 2b) as DIR/tree-N.png.")
    ] = None,
) -> None:
    """The TG sequence of each tree: types, labels, STACK/COMPOSE, depth, mask and relative positions."""
    from syntaxlm.errors import TreeError
    from syntaxlm.structure.actions import encode_actions, tree_to_actions
    from syntaxlm.structure.tg import tg_sequence
    from syntaxlm.structure.tg_view import tg_records, tg_table
    from syntaxlm.text.base import SPECIAL_TOKENS, load_vocabulary

    if segment_length is not None and segment_length < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--segment-length")
    loaded = load_vocabulary(vocab) if vocab is not None else None
    table = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    spelling = list(SPECIAL_TOKENS)
    memory = "smart" if smart_memory else "previous"
    for index, tree in _inspected_trees(trees, clean, limit):
        actions = tree_to_actions(tree)
        if loaded is not None:
            encoded = encode_actions(actions, loaded)
            sequence = tg_sequence(encoded.ids, encoded.kinds, variant.value, word_index=encoded.word_index)
            spell = loaded.token
        else:
            for token in actions.tokens:
                if token not in table:
                    table[token] = len(spelling)
                    spelling.append(token)
            ids = [table[token] for token in actions.tokens]
            sequence = tg_sequence(ids, actions.kinds, variant.value)
            spell = spelling.__getitem__
        options = {"segment_length": segment_length, "memory": memory, "memory_length": memory_length}
        try:
            if as_json:
                for record in tg_records(sequence, spell, id=index, **options):
                    typer.echo(json.dumps(record, ensure_ascii=False))
            else:
                text = tg_table(sequence, spell, **options)
                typer.echo(f"tree {index}: {actions}\n{text}\n")
            if plot is not None:
                from syntaxlm.report.plots import attention_mask_figure, save_figure

                figure = attention_mask_figure(sequence, spell, title=f"tree {index}")
                save_figure(figure, plot / f"tree-{index}.png")
        except TreeError as error:  # a mask too large to build: say which tree
            raise TreeError(f"tree {index}: {error}") from None


@inspect_app.command("actions")
def inspect_actions(
    trees: TreesArgument, clean: CleanOption = False, as_json: JsonOption = False, limit: LimitOption = None
) -> None:
    """Both action spellings, the PLM-mask head ranges and the SCLM action n-grams of each tree."""
    from syntaxlm.structure.actions import tree_to_actions
    from syntaxlm.structure.plm_mask import plm_mask_record, plm_mask_table
    from syntaxlm.structure.sclm import scaffold_record, scaffold_table

    for index, tree in _inspected_trees(trees, clean, limit):
        choe_charniak, rnng = tree_to_actions(tree), tree_to_actions(tree, "rnng")
        if as_json:
            record = {
                "id": index,
                "choe_charniak": list(choe_charniak.tokens),
                "rnng": list(rnng.tokens),
                "plm_mask": plm_mask_record(rnng),
                "sclm": scaffold_record(rnng),
            }
            typer.echo(json.dumps(record, ensure_ascii=False))
        else:
            typer.echo(f"tree {index}\n  choe-charniak: {choe_charniak}\n  rnng:          {rnng}\n")
            typer.echo(plm_mask_table(rnng) + "\n")
            typer.echo(scaffold_table(rnng) + "\n")


@inspect_app.command("distances")
def inspect_distances(
    trees: TreesArgument, clean: CleanOption = False, as_json: JsonOption = False, limit: LimitOption = None
) -> None:
    """PRPN syntactic distances of each tree and the tree PRPN's parser builds from them.

    Binary trees that PRPN's parser can produce get the exact inverse (``distances_from_tree``);
    any other tree gets the height of the lowest common ancestor of adjacent words.
    """
    from syntaxlm.errors import TreeError
    from syntaxlm.structure.distances import (
        describe_distances,
        distances_from_tree,
        distances_record,
        lca_distances,
    )

    for index, tree in _inspected_trees(trees, clean, limit):
        try:
            distances, definition = distances_from_tree(tree, sentence=index), "exact inverse of the parser"
        except TreeError:
            distances, definition = lca_distances(tree), "lowest-common-ancestor heights"
        words = tree.leaves()
        if as_json:
            record = {"id": index, "gold": tree.to_bracket(), "definition": definition}
            typer.echo(
                json.dumps(record | distances_record(distances, words, sentence=index), ensure_ascii=False)
            )
        else:
            typer.echo(f"tree {index}: {tree.to_bracket()}\ndistances: {definition}")
            typer.echo(describe_distances(distances, words, sentence=index) + "\n")


@inspect_app.command("som")
def inspect_som(
    trees: Annotated[
        Path,
        typer.Argument(
            help="Trees (PTB brackets; n-ary nodes binarised left-branching, SOM Fig. 4) or a CoNLL-U file."
        ),
    ],
    slots: Annotated[
        int | None, typer.Option(help="Memory slots N (default: the fewest the tree needs).")
    ] = None,
    clean: CleanOption = False,
    as_json: JsonOption = False,
    limit: LimitOption = None,
) -> None:
    """SOM structure labels (teacher forcing) of each tree and the memory grid of Figure 2."""
    from itertools import islice

    from syntaxlm.structure.som import render_memory_grid, required_slots, som_record
    from syntaxlm.trees.binarize import binarize
    from syntaxlm.trees.dependency import dependency_to_binary_tree, is_conllu, read_conllu

    if is_conllu(trees):
        binary = enumerate(dependency_to_binary_tree(dep) for dep in islice(read_conllu(trees), limit))
    else:
        binary = ((index, binarize(tree, "left")) for index, tree in _inspected_trees(trees, clean, limit))
    for index, tree in binary:
        n_slots = slots if slots is not None else required_slots(tree, sentence=index)
        record = som_record(tree, n_slots, sentence=index)
        if as_json:
            typer.echo(json.dumps({"id": index} | record, ensure_ascii=False))
        else:
            typer.echo(f"tree {index}: {record['tree']}\nslots: {n_slots}; labels ξ: {record['labels']}")
            typer.echo(render_memory_grid(record["labels"], n_slots, record["words"], sentence=index) + "\n")


ModelArgument = Annotated[Path, typer.Argument(help="A saved model folder (written by save_pretrained).")]
SentencesArgument = Annotated[
    Path, typer.Argument(help="Sentences, one per line, words separated by spaces.")
]
PosTagsOption = Annotated[
    bool,
    typer.Option(
        "--pos-tags/--no-pos-tags",
        help="Given trees have POS tags (read in the models' view); --no-pos-tags: already without them.",
    ),
]
ActionBeamOption = Annotated[int, typer.Option(help="Beam search: action beam.")]
WordBeamOption = Annotated[int, typer.Option(help="Beam search: word beam.")]
FastTrackOption = Annotated[int, typer.Option(help="Beam search: fast-track states per round.")]
BatchSizeOption = Annotated[int, typer.Option(min=1, help="Sentences per batch.")]
DeviceOption = Annotated[
    str,
    typer.Option(
        help="Where the model scores: cpu, cuda, or auto (cuda where available). A GPU pays for the beam "
        "search of models with a real vocabulary (docs/performance.md).",
    ),
]
PARSER_SEED_MAX = 2**63 - 1  # the proposal parser's seeds: 0 .. span_parser.SEED_BOUND - 1
ProgressOption = Annotated[bool, typer.Option(help="Show a progress bar (on stderr).")]
SkipLongOption = Annotated[
    bool,
    typer.Option(
        "--skip-long",
        help="Leave out the sentences longer than the model can score (learned positions end; a warning "
        "names them) instead of stopping.",
    ),
]
SentenceLimitOption = Annotated[
    int | None, typer.Option("--limit", min=1, help="Only the first N sentences (a quick check).")
]


class ScoreMethod(str, Enum):
    auto = "auto"
    exact = "exact"
    beam = "beam"
    gold = "gold"
    proposals = "proposals"


class ScoreFormat(str, Enum):
    tsv = "tsv"
    jsonl = "jsonl"


class ScoreUnit(str, Enum):
    bits = "bits"
    nats = "nats"


class ScoreTokenizer(str, Enum):
    whitespace = "whitespace"
    ptb = "ptb"


StimuliArgument = Annotated[
    Path,
    typer.Argument(
        help="Sentences, one per line, or ID<TAB>SENTENCE on every line; blank lines are skipped."
    ),
]


@inspect_app.command("probe")
def inspect_probe(
    model: ModelArgument,
    trees: Annotated[
        Path | None,
        typer.Argument(help="POS-tagged trees to probe (default: a balanced synthetic set)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for probe.json and probe.png.")] = Path("probe"),
    per_cell: Annotated[
        int, typer.Option(help="Synthetic set: sentences per number × determiner (no/other) cell.")
    ] = 150,
    folds: Annotated[int, typer.Option(help="Cross-validation folds.")] = 5,
    l2: Annotated[float, typer.Option(help="L2 penalty of the logistic regression.")] = 1e-2,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic set, the balancing and the folds.")] = 0,
    lexicon_size: Annotated[
        int | None,
        typer.Option(
            help="Synthetic set: the lexicon size the model was trained with (data synth --lexicon-size)."
        ),
    ] = None,
) -> None:
    """Linear probes of a TG's composed subject NP, layer by layer: head-noun number and a 'no'
    determiner inside a complex subject (docs/probe.md)."""
    from syntaxlm.eval.probe import composition_probe, probe_table, read_probe_trees, synthetic_probe_trees
    from syntaxlm.models import load_model
    from syntaxlm.report.plots import probe_accuracy_figure, save_figure

    loaded = load_model(model)
    if trees is None:
        probe_trees = synthetic_probe_trees(per_cell, seed=seed, lexicon_size=lexicon_size)
        lexicon = "" if lexicon_size is None else f", lexicon {lexicon_size} per class"
        inputs, source = {"model": model / "config.json"}, f"synthetic grammar, {per_cell} per cell{lexicon}"
    else:
        probe_trees = read_probe_trees(trees)
        inputs, source = {"model": model / "config.json", "trees": trees}, trees
    result = composition_probe(loaded, probe_trees, source=source, folds=folds, seed=seed, l2=l2)
    options = {"trees": str(source), "folds": folds, "l2": l2, "seed": seed}
    _write_result(out / "probe.json", "composition-probe", result, inputs, options)
    save_figure(probe_accuracy_figure(result), out / "probe.png")
    typer.echo(probe_table(result))
    typer.echo(f"wrote {out / 'probe.json'} and {out / 'probe.png'}")


# -- eval -----------------------------------------------------------------------------------------------


def _emit(kind: str, result, as_json: bool, out: Path | None, text: str, inputs=None, options=None) -> None:
    """Print a result (JSON or text) and, with ``out``, write it as a result file (``syntaxlm.results``)."""
    if out is not None:
        _write_result(out, kind, result, inputs, options)
    if as_json:
        _print_json(result)
    else:
        typer.echo(text)


OutOption = Annotated[Path | None, typer.Option(help="Also write the result JSON to this file.")]
ResultJsonOption = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]
ModelMethodOption = Annotated[
    str, typer.Option(help="--model: auto (exact for words-only models, beam for joint ones), beam, exact.")
]


@eval_app.command("sg")
def eval_sg(
    ctx: typer.Context,
    suites: Annotated[
        list[Path], typer.Argument(help="SyntaxGym suite JSON files, or folders of them (every *.json).")
    ],
    region_values: Annotated[
        Path | None,
        typer.Option(help="Per item, per condition, a list of region values (surprisal in bits), as JSON."),
    ] = None,
    model: Annotated[
        Path | None, typer.Option(help="Instead: a saved model folder whose surprisals are scored.")
    ] = None,
    method: ModelMethodOption = "auto",
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    device: DeviceOption = "cpu",
    batch_size: BatchSizeOption = 16,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="--model: score the suites in this many processes, sharing the CPU threads "
            "(on 2 cores, 2 workers score ~1.2x faster than 1).",
        ),
    ] = 1,
    progress: ProgressOption = True,
    as_json: ResultJsonOption = False,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write the result JSON here; with several suites, a folder of SUITE.json files."
        ),
    ] = None,
) -> None:
    """Score suites: region values computed elsewhere (one suite), or a model's own surprisals (--model).

    With several suites the SG scores (the mean over the 31 suites of Hu et al. 2020 and over the 33
    of Qian et al. 2021, when all are there) and the circuit means follow the per-suite lines. With
    --model, each suite's share of words the model's vocabulary does not know stands beside its
    accuracy, and the share over the suites after the SG scores.
    """
    _refuse_overwriting(out, [*suites, region_values])
    from syntaxlm.eval.syntaxgym import format_suite_result, score_region_values

    if (region_values is None) == (model is None):
        raise typer.BadParameter("give one of --region-values and --model", param_hint="--model")
    paths = _suite_files(suites)
    if region_values is not None:
        _refuse_given(ctx, [*SCORING_OPTIONS, "workers"], "--model (a model's own surprisals)")
        if len(paths) != 1:
            raise typer.BadParameter("--region-values scores one suite", param_hint="SUITES")
        result = score_region_values(paths[0], region_values)
        inputs = {"suite": paths[0], "region_values": region_values}
        _emit("syntaxgym", result, as_json, out, format_suite_result(result), inputs)
        return
    from syntaxlm.eval.syntaxgym import format_suites_summary, suites_summary
    from syntaxlm.jobs.suites import beam_options, suite_results

    scorer = _scorer(model, method, action_beam, word_beam, fast_track, device, batch_size=batch_size)
    if workers > 1 and scorer.model.device.type != "cpu":
        raise typer.BadParameter(
            f"workers share the CPU's threads; a model on {scorer.model.device.type} scores in one process",
            param_hint="--workers",
        )
    if scorer.joint and (workers == 1 or len(paths) == 1):  # scored here, where it can be timed
        from syntaxlm.eval.syntaxgym import load_suite

        sentences = [text.split() for path in paths for _, _, text in load_suite(path).sentences()]
        _estimate_before(scorer, sentences, limit=SUITES_HINT)
    options = {"method": scorer.method} | beam_options(scorer)
    inputs = {"model": model / "model.safetensors"}
    results = {}
    for path, result in suite_results(scorer, paths, progress=progress, workers=workers):
        suite_inputs = {"suite": path} | inputs
        if len(paths) == 1:
            _emit("syntaxgym", result, as_json, out, format_suite_result(result), suite_inputs, options)
            return
        if out is not None:
            _write_result(out / f"{path.stem}.json", "syntaxgym", result, suite_inputs, options)
        results[result["suite"]] = result
    summary = suites_summary(results) | options
    if as_json:
        _print_json(summary)
        return
    typer.echo(format_suites_summary(summary))


def _suite_files(given: list[Path]) -> list[Path]:
    """The suite files named, folders expanded to their ``*.json`` files in name order."""
    paths: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise typer.BadParameter(f"{path}: no *.json suite files in this folder", param_hint="SUITES")
            paths += found
        elif path.is_file():
            paths.append(path)
        else:
            raise typer.BadParameter(f"{path}: no such suite file or folder", param_hint="SUITES")
    return paths


@eval_app.command("parse")
def eval_parse(
    gold: Annotated[Path, typer.Option(help="Gold trees (PTB brackets, with POS tags).")],
    pred: Annotated[Path, typer.Option(help="Predicted trees, one per gold tree.")],
    prm: Annotated[Path | None, typer.Option(help="EVALB parameter file (default: COLLINS.prm).")] = None,
    unlabeled: Annotated[bool, typer.Option("--unlabeled", help="Ignore labels (LABELED 0).")] = False,
    gold_tags: Annotated[
        bool,
        typer.Option("--gold-tags", help="Predicted trees have no POS tags: put the gold tags back first."),
    ] = False,
    as_json: ResultJsonOption = False,
    out: OutOption = None,
) -> None:
    """EVALB-compatible bracket scores, per sentence and for the corpus (EVALB's output by default).

    As EVALB, the text output writes a line to stderr for each sentence it cannot score
    ("2 : Length unmatch (13|14)"); --json gives them as "errors"."""
    _refuse_overwriting(out, [gold, pred, prm])
    from syntaxlm.eval.parseval import COLLINS_PARAMS, evaluate_parses, read_prm, with_gold_tags
    from syntaxlm.trees.ptb import TreeReader

    params = read_prm(prm) if prm is not None else COLLINS_PARAMS
    if unlabeled:
        params = params.as_unlabeled()
    if gold_tags:
        gold_trees = list(TreeReader(gold))
        pred_trees = list(TreeReader(pred, pos_tags=False))
        if len(pred_trees) == len(gold_trees):
            pred_trees = [
                with_gold_tags(p, g, sentence=i) for i, (p, g) in enumerate(zip(pred_trees, gold_trees))
            ]
        result = evaluate_parses(gold_trees, pred_trees, params)
    else:
        result = evaluate_parses(gold, pred, params)
    options = {"unlabeled": unlabeled, "gold_tags": gold_tags}
    inputs = {"gold": gold, "pred": pred} | ({"prm": prm} if prm else {})
    if not as_json:
        for message in result.error_messages():
            typer.echo(message, err=True)
    _emit("parseval", result.to_json(), as_json, out, result.to_text(), inputs, options)


@eval_app.command("uf1")
def eval_uf1(
    gold: Annotated[Path, typer.Option(help="Gold trees with POS tags (PTB brackets).")],
    pred: Annotated[
        Path | None,
        typer.Option(
            help='Predicted trees, one per line: brackets or JSON nested lists ("word" for a one-word tree).'
        ),
    ] = None,
    distances: Annotated[
        Path | None, typer.Option(help="Syntactic distances, one JSON list per line (PRPN's parser).")
    ] = None,
    max_words: Annotated[
        int | None, typer.Option(help="Only sentences of at most N scored words (10: WSJ10).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the RANDOM baseline.")] = 0,
    per_sentence: Annotated[bool, typer.Option(help="Text output: one line per sentence too.")] = False,
    as_json: ResultJsonOption = False,
    out: OutOption = None,
) -> None:
    """Unsupervised parsing F1 (sentence-level mean and corpus level) with the branching baselines."""
    _refuse_overwriting(out, [gold, pred, distances])
    from syntaxlm.eval.uf1 import evaluate_uf1, read_distances, read_predicted_trees
    from syntaxlm.trees.clean import PTB_CLEANING
    from syntaxlm.trees.ptb import TreeReader

    if (pred is None) == (distances is None):
        raise typer.BadParameter("give exactly one of --pred and --distances")
    gold_trees = list(TreeReader(gold, cleaning=PTB_CLEANING))
    predictions = (
        {"predicted": read_predicted_trees(pred)} if pred else {"distances": read_distances(distances)}
    )
    result = evaluate_uf1(gold_trees, max_words=max_words, random_seed=seed, **predictions)
    inputs = {"gold": gold} | ({"pred": pred} if pred else {"distances": distances})
    options = {"max_words": max_words, "seed": seed}
    _emit("uf1", result.to_json(), as_json, out, result.render(per_sentence=per_sentence), inputs, options)


@eval_app.command("blimp")
def eval_blimp(
    ctx: typer.Context,
    data: Annotated[Path, typer.Option(help="The BLiMP data folder (one .jsonl per paradigm).")],
    logprobs: Annotated[
        Path | None,
        typer.Option(
            help="Precomputed scores: one JSON object per line with UID, pairID, good and bad log-probs."
        ),
    ] = None,
    model: Annotated[
        Path | None, typer.Option(help="Instead: a saved model folder whose sentence log-probs are compared.")
    ] = None,
    method: ModelMethodOption = "auto",
    paradigms: Annotated[
        list[str] | None, typer.Option("--paradigm", help="Only these paradigms (UIDs); repeatable.")
    ] = None,
    ten_percent: Annotated[
        bool, typer.Option("--ten-percent", help="BLiMP-10%: the first 100 pairs by pairID.")
    ] = False,
    max_pairs: Annotated[
        int | None, typer.Option(help="Only the first N pairs of each paradigm by pairID (a quick check).")
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1, help="Only the first N pairs in all (after --paradigm, --ten-percent, --max-pairs)."
        ),
    ] = None,
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    device: DeviceOption = "cpu",
    batch_size: Annotated[int, typer.Option(help="--model: sentences per batch.")] = 64,
    per_paradigm: Annotated[bool, typer.Option(help="Text output: every paradigm too.")] = False,
    progress: ProgressOption = True,
    as_json: ResultJsonOption = False,
    out: OutOption = None,
) -> None:
    """BLiMP accuracy (per paradigm, per phenomenon, overall) from precomputed log-probs or a model's.

    A pair is right when log p(good) > log p(bad), each the whole sentence with its end. With
    --model, the share of words the model's vocabulary does not know stands beside each accuracy.
    """
    _refuse_overwriting(out, [data, logprobs])
    from syntaxlm.eval.blimp import blimp_10_percent, first_pairs, read_blimp, read_pair_logprobs, score_blimp

    if (logprobs is None) == (model is None):
        raise typer.BadParameter("give one of --logprobs and --model", param_hint="--model")
    if logprobs is not None:
        _refuse_given(ctx, SCORING_OPTIONS, "--model (a model's own log-probabilities)")
    pairs = read_blimp(data, paradigms=paradigms or None)
    if ten_percent:
        pairs = blimp_10_percent(pairs)
    if max_pairs is not None:
        pairs = first_pairs(pairs, max_pairs)
    options: dict[str, Any] = {
        "ten_percent": ten_percent,
        "max_pairs": max_pairs,
        "paradigms": paradigms or "all",
        "limit": limit,
    }
    if limit is not None:
        options["pairs_selected"] = len(pairs)  # the first `limit` of them scored: a subset
        pairs = pairs[:limit]
    if model is not None:
        from syntaxlm.eval.scorers import model_blimp, ptb_tokens
        from syntaxlm.jobs.suites import beam_options

        scorer = _scorer(model, method, action_beam, word_beam, fast_track, device, batch_size=batch_size)
        _estimate_before(scorer, [ptb_tokens(s) for pair in pairs for s in (pair.good, pair.bad)])
        result = model_blimp(scorer, pairs, batch_size=batch_size * 4, progress=progress)
        options |= {"method": scorer.method} | beam_options(scorer)
        inputs = {"data": data, "model": model / "model.safetensors"}
    else:
        result = score_blimp(pairs, logprobs=read_pair_logprobs(logprobs, pairs))
        inputs = {"logprobs": logprobs, "data": data}
    _emit("blimp", result.to_json(), as_json, out, result.render(per_paradigm=per_paradigm), inputs, options)


@eval_app.command("ppl")
def eval_ppl(
    ctx: typer.Context,
    data: Annotated[
        Path,
        typer.Argument(
            help="Sentences, one per line (words separated by spaces), or a treebank (PTB brackets: a file "
            "whose first character is '('), whose trees --method gold scores along."
        ),
    ],
    model: Annotated[Path, typer.Option(help="A saved model folder.")],
    method: Annotated[
        ScoreMethod,
        typer.Option(
            help="auto: exact for words-only models, beam for joint ones; gold: along the treebank's trees."
        ),
    ] = ScoreMethod.auto,
    proposals: Annotated[Path | None, typer.Option(help="--method proposals: INDEX<TAB>TREE lines.")] = None,
    parser: Annotated[
        Path | None,
        typer.Option(
            help="--method proposals: a saved proposal parser (a parser recipe's run) to draw the trees "
            "from: the importance-sampled perplexity, the sum over --samples different trees sampled "
            "without replacement (the TG paper's bound) and the beam's marginal, side by side."
        ),
    ] = None,
    samples: Annotated[
        int,
        typer.Option(
            min=1, help="--parser: trees drawn per sentence (TG: 300; at least 5, the groups of the spread)."
        ),
    ] = 300,
    seed: Annotated[
        int, typer.Option(min=0, max=PARSER_SEED_MAX, help="--parser: the seed of the draws.")
    ] = 0,
    compare_beam: Annotated[
        bool, typer.Option(help="--parser: also score the sentences with the beam search.")
    ] = True,
    context: Annotated[
        str,
        typer.Option(
            help="training: a sequence longer than one segment of a TG/TXL (a document) is read in the "
            "model's training segments with its memory; full: with the whole sequence in view. The beam "
            "(auto for joint models) always reads with full context, and warns for documents longer "
            "than the training segment + memory."
        ),
    ] = "training",
    pos_tags: PosTagsOption = True,
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    device: DeviceOption = "cpu",
    batch_size: BatchSizeOption = 16,
    progress: ProgressOption = True,
    skip_long: SkipLongOption = False,
    limit: SentenceLimitOption = None,
    as_json: ResultJsonOption = False,
    out: OutOption = None,
) -> None:
    """Word-level perplexity of a model on sentences or a treebank (pieces summed per word).

    Reports every published convention, labelled: per word (-log p of the sentences, end of
    sentence included, over the words: TG, Qian et al.), per token (the end of each sentence
    counted as a token: PTB LSTM LMs) and per word without the end (docs/evaluation.md). For joint
    models the marginalisation method and the direction of its bound go into the result, and for
    every model the context the sequences were read with (--context).
    """
    _refuse_overwriting(out, [data, proposals])
    from syntaxlm.data.sentences import is_treebank, read_given_trees, read_sentences
    from syntaxlm.inference import read_proposals
    from syntaxlm.inference.marginal import document_context
    from syntaxlm.jobs.perplexity import perplexity_evaluation

    if context not in ("training", "full"):
        raise typer.BadParameter(f"expected training or full, got {context!r}", param_hint="--context")
    trees = read_given_trees(data, pos_tags=pos_tags) if is_treebank(data) else None
    words = [tree.leaves() for tree in trees] if trees is not None else read_sentences(data)
    if method == ScoreMethod.gold and trees is None:
        raise typer.BadParameter("--method gold needs a treebank (PTB brackets) as DATA", param_hint="DATA")
    if method == ScoreMethod.proposals and (proposals is None) == (parser is None):
        raise typer.BadParameter(
            "--method proposals needs --proposals (trees) or --parser (a parser to draw them), one of them",
            param_hint="--proposals",
        )
    if parser is not None and method != ScoreMethod.proposals:
        raise typer.BadParameter("--parser is for --method proposals", param_hint="--parser")
    if method != ScoreMethod.proposals:
        _refuse_given(ctx, ["proposals"], "--method proposals")
    if trees is None and proposals is None:
        _refuse_given(ctx, ["pos_tags"], "trees: a treebank as DATA or --proposals (how they are read)")
    if parser is None:
        _refuse_given(ctx, ["samples", "seed", "compare_beam"], "--parser (the trees it draws)")
    else:
        _check_importance_samples(samples)
        with_parser = "the methods without --parser"
        _refuse_given(ctx, ["skip_long"], with_parser)
        _refuse_given(
            ctx,
            ["context"],
            f"{with_parser} (with it, the trees are read as the model was trained, the beam in full)",
        )
        if not compare_beam:
            _refuse_given(ctx, BEAM_OPTIONS, "the beam search (with --parser: --compare-beam)")
    settings = {"context": context, "batch_size": batch_size, "progress": progress}
    if parser is not None:
        from syntaxlm.inference import BeamSettings

        beam = BeamSettings(action_beam, word_beam, fast_track) if compare_beam else None
        drawn = {
            "samples": samples,
            "seed": seed,
            "beam": beam,
            "batch_size": batch_size,
            "progress": progress,
        }
        with _sizes_as_options():
            _proposal_perplexity(data, model, parser, words, drawn, limit, as_json, out, device)
        return
    scorer = _scorer(model, method.value, action_beam, word_beam, fast_track, device, **settings)
    if scorer.method != "beam":
        _refuse_given(ctx, BEAM_OPTIONS, f"the beam search (the method here is {scorer.method})")
    segmented = document_context(scorer.model, "training").segmented
    if scorer.method == "beam" and context == "training" and segmented:
        typer.echo("note: the beam search reads with full context, not in training segments", err=True)
    given: dict[str, Any] = {}
    if scorer.method == "gold":
        given["trees"] = trees
    elif scorer.method == "proposals":
        given["proposals"] = read_proposals(proposals, n_sentences=len(words), pos_tags=pos_tags)

    def choose(sentences: list[list[str]]) -> list[int]:  # --skip-long's, then the time estimate
        kept, kept_words, _ = _sentences_to_score(scorer, sentences, {}, skip_long)
        _estimate_before(scorer, kept_words)
        return kept

    with _sizes_as_options():
        evaluation = perplexity_evaluation(
            scorer, words, data=data, model_folder=model, limit=limit, choose=choose, **given
        )
    _emit(
        "perplexity", evaluation.result, as_json, out, evaluation.text, evaluation.inputs, evaluation.options
    )


def _proposal_perplexity(
    data: Path, model: Path, parser: Path, words, drawn: dict, limit, as_json: bool, out, device
) -> None:
    """``eval ppl --method proposals --parser``: ``jobs.perplexity.proposal_perplexity`` of the first
    ``limit`` sentences with the options ``drawn`` (samples, seed, beam, batch_size, progress),
    model and parser on ``device``."""
    from syntaxlm.jobs.perplexity import proposal_perplexity
    from syntaxlm.models import load_language_model, load_parser, scoring_device

    where = scoring_device(device)
    scored, proposer = load_language_model(model, map_location=where), load_parser(parser, map_location=where)
    evaluation = proposal_perplexity(
        scored, proposer, words, data=data, model_folder=model, parser_folder=parser, limit=limit, **drawn
    )
    if as_json:  # the text says them; JSON on stdout is for programs, the warnings for the reader
        for warning in evaluation.result["warnings"]:
            typer.echo(f"warning: {warning}", err=True)
    _emit(
        "perplexity", evaluation.result, as_json, out, evaluation.text, evaluation.inputs, evaluation.options
    )


@eval_app.command("gen")
def eval_gen(
    generated: Annotated[Path, typer.Option(help="Generated texts, one per line (whitespace-tokenised).")],
    references: Annotated[Path | None, typer.Option(help="References, one per line, for BLEU.")] = None,
    self_bleu_sample: Annotated[
        int | None,
        typer.Option(help="Self-BLEU within a random sample of this many texts (it is quadratic)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the Self-BLEU sample.")] = 0,
    as_json: ResultJsonOption = False,
    out: OutOption = None,
) -> None:
    """Generation metrics of the DMLM paper: BLEU-1/2, Distinct-2/3, Self-BLEU-2/3."""
    _refuse_overwriting(out, [generated, references])
    from syntaxlm.errors import InputFormatError
    from syntaxlm.eval.generation import evaluate_generation
    from syntaxlm.files import read_lines

    def lines(path: Path) -> list[str]:
        return [line.rstrip("\n") for line in read_lines(path, InputFormatError)]

    result = evaluate_generation(
        lines(generated),
        lines(references) if references else None,
        bleu_orders=(1, 2) if references else (),
        self_bleu_sample_size=self_bleu_sample,
        seed=seed,
    )
    inputs = {"generated": generated} | ({"references": references} if references else {})
    options = {"self_bleu_sample": self_bleu_sample, "seed": seed}
    _emit("generation", result.to_json(), as_json, out, result.render(), inputs, options)


class ReadingTimeMethod(str, Enum):
    auto = "auto"
    gold = "gold"


@eval_app.command("rt")
def eval_rt(
    ctx: typer.Context,
    corpus: Annotated[
        Path,
        typer.Argument(
            help="A Natural Stories folder (words.tsv, RTS_processed_wordinfo.tsv, freqs_freqs-1.tsv, "
            "parses/) or a per-token TSV file (columns text, position, token, rt, frequency; optional "
            "sentence): docs/reading-times.md."
        ),
    ],
    model: Annotated[
        list[Path],
        typer.Option(help="A saved model folder; repeatable: the models are compared on the same tokens."),
    ],
    stories: Annotated[
        str | None, typer.Option(help="Only these stories (texts), comma-separated: 1,2.")
    ] = None,
    predictor: Annotated[
        list[str] | None,
        typer.Option(help="TSV corpus: a further column added to both regressions (repeatable)."),
    ] = None,
    method: Annotated[
        ReadingTimeMethod,
        typer.Option(
            help="auto: joint models by the beam search; gold: joint models along the corpus's trees. "
            "Words-only models are always scored exactly."
        ),
    ] = ReadingTimeMethod.auto,
    context: Annotated[
        str,
        typer.Option(
            help="auto: each story read as one document where the model was trained on documents (DOC trees) "
            "and can read a story whole, else each sentence alone; document; sentence."
        ),
    ] = "auto",
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    rt_range: Annotated[
        str, typer.Option(help="Reading times kept, in ms: LOW,HIGH (others are excluded and counted).")
    ] = "100,3000",
    spillover: Annotated[
        int,
        typer.Option(
            min=0, help="Previous tokens whose surprisal, length and frequency enter the regressions."
        ),
    ] = 2,
    folds: Annotated[int, typer.Option(min=2, help="Cross-validation folds.")] = 10,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the folds and the bootstrap.")] = 0,
    keep_unknown: Annotated[
        bool, typer.Option(help="Keep tokens whose words a model does not know (counted either way).")
    ] = False,
    perplexity: Annotated[
        list[Path] | None,
        typer.Option(
            help="A perplexity result (eval ppl --out) per --model, in order, for the figure; default: each "
            "model's RUN/results/perplexity.json where there is one."
        ),
    ] = None,
    batch_size: BatchSizeOption = 16,
    progress: ProgressOption = True,
    as_json: ResultJsonOption = False,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Write the result JSON here, the per-token table beside it (OUT.tokens.tsv) and, when the "
            "models have perplexities, the figure of ΔLL against perplexity (OUT.png)."
        ),
    ] = None,
) -> None:
    """How well each model's surprisal predicts human reading times: ΔLL, the held-out log-likelihood
    gained per token over a baseline of length and frequency (docs/reading-times.md)."""
    from syntaxlm.jobs.reading_times import reading_time_evaluation, reading_time_outputs, write_reading_times

    inputs = [corpus, *model, *(perplexity or [])]
    _refuse_overwriting(out, inputs)
    if out is not None:
        for output in reading_time_outputs(out):
            _refuse_overwriting(output, inputs)
    from syntaxlm.eval.reading_regression import format_reading_times
    from syntaxlm.eval.scorers import STORY_CONTEXTS
    from syntaxlm.inference import BeamSettings

    if method == ReadingTimeMethod.gold:
        _refuse_given(ctx, BEAM_OPTIONS, "the beam search (the method here is gold)")
    if context not in STORY_CONTEXTS:
        raise typer.BadParameter(
            f"expected one of {', '.join(STORY_CONTEXTS)}, got {context!r}", param_hint="--context"
        )
    if perplexity and len(perplexity) != len(model):
        raise typer.BadParameter(
            f"{len(perplexity)} files for {len(model)} models; give one per --model, in order",
            param_hint="--perplexity",
        )
    parts = rt_range.split(",")
    try:
        low, high = (float(part) for part in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high) and 0 <= low < high):
        raise typer.BadParameter(
            f"expected LOW,HIGH in ms with 0 <= LOW < HIGH, got {rt_range!r}", param_hint="--rt-range"
        )
    chosen = _names(stories, "--stories")
    with _sizes_as_options():
        evaluation = reading_time_evaluation(
            corpus, model, stories=chosen, predictors=predictor or (), method=method.value,
            beam=BeamSettings(action_beam, word_beam, fast_track), context=context, rt_range=(low, high),
            spillover=spillover, folds=folds, seed=seed, keep_unknown=keep_unknown, perplexities=perplexity,
            batch_size=batch_size, progress=progress,
            on_scorer=functools.partial(_estimate_before, limit=STORIES_HINT),
        )  # fmt: skip
    if out is not None:
        written = write_reading_times(evaluation, out)
        typer.echo("written: " + ", ".join(map(str, written)), err=True)
    if as_json:
        _print_json(evaluation.result)
    else:
        typer.echo(format_reading_times(evaluation.result))

# -- scoring, parsing, sampling -------------------------------------------------------------------------


@app.command("score")
def score_command(
    ctx: typer.Context,
    model: ModelArgument,
    sentences: StimuliArgument,
    method: Annotated[
        ScoreMethod, typer.Option(help="auto: exact for words-only models, beam search for joint ones.")
    ] = ScoreMethod.auto,
    tokenize: Annotated[
        ScoreTokenizer,
        typer.Option(
            help="How a line becomes words: whitespace (as given) or ptb (Penn Treebank style: "
            "didn't -> did n't, company's -> company 's, punctuation apart), as the models were trained."
        ),
    ] = ScoreTokenizer.whitespace,
    format_: Annotated[
        ScoreFormat, typer.Option("--format", help="tsv: one word per line; jsonl: one sentence.")
    ] = ScoreFormat.tsv,
    out: Annotated[Path | None, typer.Option(help="Write here instead of printing.")] = None,
    unit: Annotated[ScoreUnit, typer.Option(help="Surprisal unit.")] = ScoreUnit.bits,
    eos: Annotated[
        bool, typer.Option(help="Add the end of each sentence (</s>, closing actions) as a last entry.")
    ] = False,
    trees: Annotated[Path | None, typer.Option(help="--method gold: the trees, one per sentence.")] = None,
    proposals: Annotated[Path | None, typer.Option(help="--method proposals: INDEX<TAB>TREE lines.")] = None,
    pos_tags: PosTagsOption = True,
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    device: DeviceOption = "cpu",
    batch_size: BatchSizeOption = 16,
    progress: ProgressOption = True,
    skip_long: SkipLongOption = False,
    limit: SentenceLimitOption = None,
) -> None:
    """Per-word surprisal of every sentence of a file under a saved model (docs/inference.md)."""
    _refuse_overwriting(out, [sentences, trees, proposals])
    from syntaxlm.data.sentences import read_given_trees, read_stimuli
    from syntaxlm.errors import MissingPosTagError
    from syntaxlm.inference import read_proposals, scores_record
    from syntaxlm.inference.sentences import unknown_words

    stimuli = read_stimuli(sentences, tokenize_as=tokenize.value)
    if method != ScoreMethod.gold:
        _refuse_given(ctx, ["trees"], "--method gold")
    if method != ScoreMethod.proposals:
        _refuse_given(ctx, ["proposals"], "--method proposals")
    if trees is None and proposals is None:
        _refuse_given(ctx, ["pos_tags"], "--trees or --proposals (how their trees are read)")
    beam = (action_beam, word_beam, fast_track)
    scorer = _scorer(model, method.value, *beam, device, batch_size=batch_size, progress=progress)
    if scorer.method != "beam":
        _refuse_given(ctx, BEAM_OPTIONS, f"the beam search (the method here is {scorer.method})")
    given = {}
    try:
        if trees is not None:
            given["trees"] = read_given_trees(trees, pos_tags=pos_tags)
        if proposals is not None:
            given["proposals"] = read_proposals(proposals, n_sentences=len(stimuli.words), pos_tags=pos_tags)
    except MissingPosTagError as error:
        raise error.with_hint(NO_POS_TAGS_HINT) from None
    words, given = stimuli.words[:limit], {key: value[:limit] for key, value in given.items()}
    _tell_how_stimuli_were_read(stimuli, words, tokenize.value, scorer.model.vocab)
    kept, kept_words, given = _sentences_to_score(scorer, words, given, skip_long, names=stimuli.ids)
    _estimate_before(scorer, kept_words)
    with _sizes_as_options():
        scores = scorer.score(kept_words, indices=[stimuli.ids[i] for i in kept], **given)
    vocab = scorer.model.vocab
    records = []
    for i, s in zip(kept, scores, strict=True):
        record = {"line": stimuli.lines[i]} | scores_record(
            s, sentence_id=stimuli.ids[i], surprisal=True, unit=unit.value, eos=eos,
            unknown=unknown_words(vocab, s.words),
        )  # fmt: skip
        records.append((record | {"input_word_index": stimuli.input_words[i]}, s))
    if format_ == ScoreFormat.jsonl:
        lines = [json.dumps(record, ensure_ascii=False) for record, _ in records]
    else:
        lines = _score_table(records, f"surprisal_{unit.value}", eos)
    _write_lines(lines, out)


SCORE_COLUMNS = (
    "sentence_id", "word_index", "word", "{measure}", "unknown", "method", "pieces", "input_word_index",
)  # fmt: skip
"""The columns of ``score``'s TSV, one row per word (docs/inference.md); ``{measure}`` is
``surprisal_bits`` or ``surprisal_nats``."""


def _score_table(records: list[tuple[dict, object]], measure: str, eos: bool) -> list[str]:
    """``score``'s TSV lines (``SCORE_COLUMNS``) from its records and scores: a row per word, and with
    ``eos`` a ``</s>`` row per sentence (not unknown; its pieces ``</s>``, its input word ``NA``)."""
    lines = ["\t".join(SCORE_COLUMNS).format(measure=measure)]
    for record, scores in records:
        pieces = [[] for _ in record["words"]]
        for piece, word in zip(scores.pieces, scores.piece_word):
            pieces[int(word)].append(piece)
        values = record[f"word_{measure}"]
        rows = zip(record["words"], values, record["word_unknown"], pieces, record["input_word_index"])
        if eos:
            rows = [*rows, ("</s>", record[f"end_{measure}"], False, ["</s>"], "NA")]
        for index, (word, value, unknown, word_pieces, source) in enumerate(rows):
            cells = (
                record["sentence_id"], index, word, "nan" if value is None else repr(value),
                "true" if unknown else "false", record["method"], " ".join(word_pieces), source,
            )  # fmt: skip
            lines.append("\t".join(map(str, cells)))
    return lines


def _tell_how_stimuli_were_read(stimuli, words: list[list[str]], tokenize: str, vocab) -> None:
    """Say on stderr what a researcher should know of how ``score`` read its stimuli: the blank lines
    left out, the words a whitespace reading left unsplit that PTB-style tokenisation would split
    (``--tokenize ptb``), and how many words the model reads as unknown (scored as their class)."""
    from syntaxlm.inference.sentences import unknown_words
    from syntaxlm.memory import counted
    from syntaxlm.text.tokenize import ptb_words

    def note(message: str) -> None:
        typer.secho(message, err=True, fg=typer.colors.YELLOW)

    if stimuli.blank_lines:
        note(
            f"note: {counted(len(stimuli.blank_lines), 'blank line')} left out "
            f"({'line' if len(stimuli.blank_lines) == 1 else 'lines'} {_listed(stimuli.blank_lines)}); "
            "sentences keep their ids "
            f"({'the id column' if stimuli.id_column else 'their line numbers'})"
        )
    every = [word for sentence in words for word in sentence]
    if tokenize == "whitespace":
        unsplit = sorted(
            {
                word
                for sentence in words
                for k, word in enumerate(sentence)
                if ptb_words(word, split_period=k == len(sentence) - 1) != (word,)
            }
        )
        if unsplit:
            note(
                f"note: {counted(len(unsplit), 'word')} would be split by --tokenize ptb, as the "
                f"models' training text was (e.g. {', '.join(unsplit[:3])}); read as given"
            )
    unknown = sum(sum(unknown_words(vocab, sentence)) for sentence in words)
    if unknown:
        note(
            f"note: {unknown} of {len(every)} words are unknown to the model and scored as their "
            "unknown-word class (the 'unknown' column; docs/inference.md)"
        )


def _listed(numbers: list[int], most: int = 10) -> str:
    shown = ", ".join(map(str, numbers[:most]))
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


BEAM_OPTIONS = ["action_beam", "word_beam", "fast_track"]
# the options of a model's scoring, refused where a command scores precomputed values instead
SCORING_OPTIONS = ["method", *BEAM_OPTIONS, "device", "batch_size"]
# The library's size arguments (``SizeError.name``) as the options of parse, score and eval ppl.
SIZE_OPTIONS = {
    "k": "--kbest",
    "n": "--samples",
    "distinct": "--samples",
    "samples": "--samples",
    "action_beam": "--action-beam",
}


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter ``name`` was given (on the command line or in the environment)
    rather than left at its default (by the name of its source: typer has its own click)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _refuse_given(ctx: typer.Context, names: list[str], needs: str) -> None:
    """``BadParameter`` for the first of the parameters ``names`` that was given: it is for
    ``needs``, which this command line does not have (an option is refused, never ignored)."""
    for name in names:
        if _given(ctx, name):
            param = next(param for param in ctx.command.params if param.name == name)
            negated = ctx.params.get(name) is False and param.secondary_opts
            option = param.secondary_opts[0] if negated else param.opts[0]
            raise typer.BadParameter(f"{option} is for {needs}", param_hint=option)


@contextlib.contextmanager
def _sizes_as_options() -> Iterator[None]:
    """A ``SizeError`` of a library argument (``SIZE_OPTIONS``) as the ``BadParameter`` of its
    option: the message names the option, the memory it would take and the largest value that fits."""
    from syntaxlm.errors import SizeError

    try:
        yield
    except SizeError as error:
        if error.name not in SIZE_OPTIONS:
            raise
        raise typer.BadParameter(error.problem, param_hint=SIZE_OPTIONS[error.name]) from None


def _check_importance_samples(samples: int, option: str = "--samples") -> None:
    """The trees drawn per sentence for importance sampling (``eval ppl --parser``, ``reproduce``):
    at least the groups its spread over draws comes from, before any work."""
    from syntaxlm.inference.importance import GROUPS

    if samples < GROUPS:
        raise typer.BadParameter(
            f"{samples} is too few: the spread over draws comes from {GROUPS} independent groups of each "
            f"sentence's samples; at least {GROUPS}",
            param_hint=option,
        )


def _scorer(
    model: Path, method: str, action_beam: int, word_beam: int, fast_track: int, device: str, **options
):
    """The ``Scorer`` of a saved model, loaded on ``device`` (``models.scoring_device``), from the
    scoring options; ``options`` are the Scorer's ``context``, ``batch_size`` and ``progress``."""
    from syntaxlm.inference import BeamSettings, Scorer
    from syntaxlm.models import load_language_model, scoring_device

    loaded = load_language_model(model, map_location=scoring_device(device))
    return Scorer(loaded, method=method, beam=BeamSettings(action_beam, word_beam, fast_track), **options)


LIMIT_HINT = "--limit N to score the first N only"  # how the commands with --limit score less
SUITES_HINT = "fewer suites per command (each suite's result is written as it is scored: --out)"
STORIES_HINT = "fewer stories (--stories 1,2)"


def _estimate_teller(sentences: list[list[str]], beam=None, limit: str | None = LIMIT_HINT):
    """An ``on_estimate`` for scoring ``sentences`` with a joint model: says on stderr how long the
    whole will take, and for long work how to shorten it (``inference.estimate``); ``beam``: the
    beam search's settings when it is the method; ``limit``: how the command scores less."""
    from syntaxlm.inference.estimate import estimate_message

    words = sum(map(len, sentences))

    def tell(estimate) -> None:
        message = estimate_message(estimate, sentences=len(sentences), words=words, beam=beam, limit=limit)
        if message is not None:
            typer.secho(message, err=True, fg=typer.colors.YELLOW)

    return tell


def _estimate_before(scorer, sentences: list[list[str]], limit: str | None = LIMIT_HINT) -> None:
    """Have ``scorer``, when its model is joint, say how long scoring ``sentences`` will take."""
    if scorer.joint:
        beam = scorer.beam if scorer.method == "beam" else None
        scorer.on_estimate = _estimate_teller(sentences, beam, limit)


def _sentences_to_score(
    scorer, sentences: list[list[str]], given: dict[str, list], skip_long: bool, *, names: list | None = None
) -> tuple[list[int], list[list[str]], dict[str, list]]:
    """The sentences to score, with their indices and what is given for each (``trees``,
    ``proposals``): all of them (the scorer refuses one too long for the model), or with
    ``--skip-long`` those that fit, after a warning naming the others (by ``names``, by default
    their indices)."""
    too_long = set(scorer.too_long(sentences)) if skip_long else set()
    if too_long:
        named = [names[i] if names is not None else i for i in sorted(too_long)]
        typer.secho(
            f"warning: {len(too_long)} sentence(s) longer than the model can score "
            f"({scorer.model.longest_sentence()} pieces) left out: {', '.join(map(str, named))}",
            err=True,
            fg=typer.colors.YELLOW,
        )
    kept = [i for i in range(len(sentences)) if i not in too_long]
    return kept, [sentences[i] for i in kept], {key: [value[i] for i in kept] for key, value in given.items()}


def _write_lines(lines: list[str], out: Path | None) -> None:
    if out is None:
        typer.echo("\n".join(lines))
        return
    from syntaxlm.files import atomic_writer

    with atomic_writer(out) as handle:
        handle.write("".join(line + "\n" for line in lines))


class ParseMethod(str, Enum):
    auto = "auto"
    beam = "beam"
    rerank = "rerank"
    induced = "induced"


@app.command("parse")
def parse_command(
    ctx: typer.Context,
    model: ModelArgument,
    sentences: SentencesArgument,
    method: Annotated[
        ParseMethod,
        typer.Option(
            help="beam: the beam search's best tree; rerank: the best proposal; induced: the binary tree "
            "of a structure-inducing model (PRPN, SOM); auto: induced where the model has one, the "
            "parser's best tree for a proposal parser, else beam."
        ),
    ] = ParseMethod.auto,
    proposals: Annotated[Path | None, typer.Option(help="--method rerank: INDEX<TAB>TREE lines.")] = None,
    parser: Annotated[
        Path | None, typer.Option(help="--method rerank: a saved proposal parser whose samples are reranked.")
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --parser: trees to rerank (default 300). With a parser as MODEL: write this many "
            "different trees per sentence, sampled without replacement (the TG paper's proposals), as "
            "INDEX<TAB>TREE lines (the --proposals format).",
        ),
    ] = None,
    kbest: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With a parser as MODEL: its k best trees per sentence (all of them for a sentence with "
            "fewer), as INDEX<TAB>TREE lines.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(min=0, max=PARSER_SEED_MAX, help="The seed of the parser's samples.")
    ] = 0,
    pos_tags: PosTagsOption = True,
    out: Annotated[Path | None, typer.Option(help="Write the trees here instead of printing them.")] = None,
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    batch_size: BatchSizeOption = 16,
    progress: ProgressOption = True,
    limit: SentenceLimitOption = None,
) -> None:
    """Parse sentences with a joint, structure-inducing or proposal-parser model: PTB brackets, one
    tree per line (a parser's k best or samples: INDEX<TAB>TREE lines)."""
    _refuse_overwriting(out, [sentences, proposals])
    from syntaxlm.data.sentences import read_sentences
    from syntaxlm.inference import BeamSettings, parse, read_proposals
    from syntaxlm.models import SyntacticLM, load_model, load_parser
    from syntaxlm.trees.ptb import write_trees

    in_file = read_sentences(sentences)
    words = in_file[:limit]
    loaded = load_model(model)
    if not isinstance(loaded, SyntacticLM):
        if method != ParseMethod.auto:
            raise typer.BadParameter(
                f"--method {method.value} is for other models: a proposal parser gives its own trees",
                param_hint="--method",
            )
        _refuse_given(ctx, ["proposals", "parser", "pos_tags", *BEAM_OPTIONS], "a joint model as MODEL")
        if samples is None:
            _refuse_given(ctx, ["seed"], "--samples")
        with _sizes_as_options():
            _parser_trees(loaded, words, kbest, samples, seed, batch_size, out)
        return
    if kbest is not None:
        raise typer.BadParameter("--kbest is for a proposal parser as MODEL", param_hint="--kbest")
    if method == ParseMethod.rerank and (proposals is None) == (parser is None):
        raise typer.BadParameter(
            "--method rerank needs --proposals or --parser, one of them", param_hint="--proposals"
        )
    if method != ParseMethod.rerank:
        _refuse_given(ctx, ["proposals", "parser"], "--method rerank")
    if parser is None:
        _refuse_given(ctx, ["samples", "seed"], "--method rerank with --parser (the trees it draws)")
    if proposals is None:
        _refuse_given(ctx, ["pos_tags"], "--proposals (how their trees are read)")
    resolved = method.value if method != ParseMethod.auto else "induced" if loaded.induces_trees else "beam"
    if resolved != "beam":
        _refuse_given(ctx, BEAM_OPTIONS, f"the beam search (the method here is {resolved})")
    given = (
        None
        if proposals is None
        else read_proposals(proposals, n_sentences=len(in_file), pos_tags=pos_tags)[:limit]
    )
    beam = BeamSettings(action_beam, word_beam, fast_track)
    with _sizes_as_options():
        trees = parse(
            loaded,
            words,
            method=method.value,
            proposals=given,
            parser=None if parser is None else load_parser(parser),
            samples=300 if samples is None else samples,
            seed=seed,
            beam=beam,
            batch_size=batch_size,
            progress=progress,
            on_estimate=_estimate_teller(words, beam if method != ParseMethod.rerank else None),
        )
    if out is None:
        typer.echo("\n".join(tree.to_bracket() for tree in trees))
    else:
        write_trees(out, trees)


def _parser_trees(parser, words: list[list[str]], kbest: int | None, samples: int | None, seed: int,
                  batch_size: int, out: Path | None) -> None:  # fmt: skip
    """``parse`` with a proposal parser as the model: its best tree per sentence, or its ``kbest``
    trees or ``samples`` different sampled trees (``draw_proposals``) as INDEX<TAB>TREE lines after
    ``NO_POS_TAGS_HEADER`` (its trees have none), which ``--proposals`` reads as they are. A note
    on stderr says how many sentences have fewer trees than asked for."""
    from syntaxlm.inference.importance import draw_proposals
    from syntaxlm.inference.marginal import NO_POS_TAGS_HEADER

    if kbest is not None and samples is not None:
        raise typer.BadParameter("give --kbest or --samples, not both", param_hint="--kbest")
    if kbest is None and samples is None:
        best = parser.parse(words, batch_size=batch_size)
        _write_lines([trees[0].tree.to_bracket() for trees in best], out)
        return
    if kbest is not None:
        found = [[t.tree for t in trees] for trees in parser.parse(words, k=kbest, batch_size=batch_size)]
        asked, why = kbest, "all of their trees are written"
    else:
        drawn = draw_proposals(parser, words, samples, seed=seed, batch_size=batch_size)
        found, asked = [draw.trees for draw in drawn], samples
        why = (
            "drawing stops once a sentence's trees are all drawn, after 100 draws per tree asked for, or "
            "once the trees drawn hold all but 1e-9 of the parser's probability"
        )
    lines = [f"{i}\t{tree.to_bracket()}" for i, trees in enumerate(found) for tree in trees]
    _write_lines([NO_POS_TAGS_HEADER, *lines], out)
    fewer = [i for i, trees in enumerate(found) if len(trees) < asked]
    if fewer:
        typer.echo(
            f"note: {len(fewer)} sentence(s) have fewer than {asked} different trees (sentence {fewer[0]}: "
            f"{len(found[fewer[0]])}); {why}",
            err=True,
        )


class GenerateFormat(str, Enum):
    text = "text"
    trees = "trees"
    jsonl = "jsonl"


@app.command("generate")
def generate_command(
    model: ModelArgument,
    n: Annotated[int, typer.Option("-n", help="How many samples.")] = 10,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same samples.")] = 0,
    temperature: Annotated[float, typer.Option(help="Divides the log-probabilities.")] = 1.0,
    top_k: Annotated[int | None, typer.Option(help="Sample among the k most probable actions.")] = None,
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling: the smallest set of mass p.")] = None,
    max_length: Annotated[int, typer.Option(help="Most tokens (words and tree actions) per sample.")] = 256,
    format_: Annotated[
        GenerateFormat, typer.Option("--format", help="text: the words; trees: brackets; jsonl: everything.")
    ] = GenerateFormat.text,
    out: Annotated[Path | None, typer.Option(help="Write here instead of printing.")] = None,
) -> None:
    """Sample sentences (and, from joint models, their trees: always well-formed)."""
    from syntaxlm.inference import generate
    from syntaxlm.models import load_model

    samples = generate(
        load_model(model),
        n,
        seed=seed,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        max_length=max_length,
    )
    if format_ == GenerateFormat.trees and any(s.tree is None for s in samples):
        raise typer.BadParameter("this model reads words only; it samples no trees", param_hint="--format")
    if format_ == GenerateFormat.jsonl:
        lines = [
            json.dumps(
                {
                    "words": s.words,
                    "tree": None if s.tree is None else s.tree.to_bracket(),
                    "logprob_nats": s.logprob,
                    **s.extra,
                },
                ensure_ascii=False,
            )
            for s in samples
        ]
    elif format_ == GenerateFormat.trees:
        lines = [s.tree.to_bracket() for s in samples]
    else:
        lines = [" ".join(s.words) for s in samples]
    _write_lines(lines, out)


# -- report ---------------------------------------------------------------------------------------------


@app.command("report")
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run folders holding result files (and config.json).")],
    out: Annotated[Path, typer.Option(help="Folder for report.md and its figures.")],
    figure_sentence: Annotated[
        str | None,
        typer.Option(
            help="Also load each run's saved model (RUN/best) and draw, for this sentence, the per-word "
            "surprisal under every model and the distances or tree of models that induce trees."
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="The model every other is compared with on SyntaxGym (default: the first run's)."),
    ] = None,
) -> None:
    """A Markdown report from result files: per kind of result, a table of the models' numbers (mean
    ± std over seeds) with how each was obtained (method, bound, beam, subset), warning where the
    models were not evaluated alike and ranking nothing there; SyntaxGym comparisons with intervals;
    figures."""
    from syntaxlm.report.report import make_report

    try:
        path = make_report(runs, out, figure_sentence=figure_sentence, baseline=baseline)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    typer.echo(f"report written to {path}")


compare_app = typer.Typer(no_args_is_help=True, help="Two runs side by side, item by item.")
app.add_typer(compare_app, name="compare")


@compare_app.command("sg")
def compare_sg(
    run_a: Annotated[
        Path,
        typer.Argument(
            metavar="A",
            help="SyntaxGym results of eval sg --out: a result file, or a folder (a run) of them.",
        ),
    ],
    run_b: Annotated[Path, typer.Argument(metavar="B", help="The same for the other run.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object, with every list of item numbers.")
    ] = False,
) -> None:
    """Which SyntaxGym items A gets and B does not: per suite, the items held under both, only A,
    only B and neither (prediction 0, the one the suite accuracy counts), with the item numbers."""
    from syntaxlm.report.sg_items import compare_sg_items

    comparison = compare_sg_items(run_a, run_b)
    if as_json:
        _print_json(comparison.to_json())
    else:
        typer.echo(comparison.render())


@app.command("view")
def view_command(
    runs: Annotated[
        list[Path], typer.Argument(metavar="RUN_OR_RESULTS", help="Run folders or result files.")
    ],
    out: Annotated[Path, typer.Option(help="The HTML file to write.")] = Path("view.html"),
    sentences: Annotated[
        Path | None,
        typer.Option(
            help="Sentences to show, one per line (or a treebank, whose trees are shown as gold), "
            "instead of the test data the runs name."
        ),
    ] = None,
    test: Annotated[
        Path | None, typer.Option(help="The test treebank to take sentences from (default: the runs').")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Show the first N sentences.")] = 20,
    models: Annotated[
        bool,
        typer.Option(
            help="Load each run's saved model (RUN/best) for the sentence and attention views; "
            "--no-models reads result files only."
        ),
    ] = True,
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
) -> None:
    """One HTML page that opens from disk (no server, no network): the comparison table of
    report (sortable), SyntaxGym items and region surprisals per model with filters, per-word
    surprisal, gold and model trees and distances for chosen sentences, and the masks and
    attention of the transformer models that have them."""
    from syntaxlm.inference import BeamSettings
    from syntaxlm.view import write_view

    def on_estimate(name: str, words: list[list[str]]):
        return _estimate_teller(words, beam)

    beam = BeamSettings(action_beam, word_beam, fast_track)
    try:
        path = write_view(
            runs,
            out,
            sentences_file=sentences,
            test_data=test,
            limit=limit,
            beam=beam,
            models=models,
            echo=lambda message: typer.echo(message, err=True),
            on_estimate=on_estimate,
        )
    except ValueError as error:
        if isinstance(error, SyntaxlmError):
            raise
        raise typer.BadParameter(str(error)) from None
    except KeyboardInterrupt:  # typer turns it into a silent exit 130 before main() could say this
        kept = f"{out} unchanged" if out.exists() else f"{out} not created"
        typer.echo(
            f"interrupted; no page written ({kept}: a page is put in place only when complete)", err=True
        )
        raise typer.Exit(130) from None
    typer.echo(f"page written to {path} ({path.stat().st_size / 1e6:.1f} MB)")


# -- plot -----------------------------------------------------------------------------------------------

SentenceOption = Annotated[
    str, typer.Option(help='The sentence, words separated by spaces: "the dog barks".')
]
FigureOutOption = Annotated[Path, typer.Option(help="The PNG file to write.")]
TREE_HELP = 'One tree in brackets, as the models read it (no POS tags): "(S (NP the dog) (VP barks))".'
PennOption = Annotated[
    bool, typer.Option(help="--tree is Penn style: drop traces, function tags, ROOT and POS tags first.")
]


class PlotMethod(str, Enum):
    auto = "auto"
    beam = "beam"
    exact = "exact"


@plot_app.command("surprisal")
def plot_surprisal(
    models: Annotated[list[Path], typer.Argument(help="Saved model folders (e.g. runs/tg-tiny/best).")],
    sentence: SentenceOption,
    method: Annotated[
        PlotMethod, typer.Option(help="auto: exact for words-only models, beam search for joint ones.")
    ] = PlotMethod.auto,
    out: FigureOutOption = Path("surprisal.png"),
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
) -> None:
    """Per-word surprisal (bits) along one sentence, one line per model, the method in the legend."""
    from syntaxlm.inference import BeamSettings
    from syntaxlm.report.model_figures import load_models, sentence_words, surprisal_comparison
    from syntaxlm.report.plots import save_figure

    beam = BeamSettings(action_beam, word_beam, fast_track)
    figure = surprisal_comparison(
        load_models(models), sentence_words(sentence), method=method.value, beam=beam
    )
    typer.echo(f"figure written to {save_figure(figure, out)}")


@plot_app.command("distances")
def plot_distances(model: ModelArgument, sentence: SentenceOption, out: FigureOutOption) -> None:
    """PRPN Fig. 5 from the model's own syntactic distances; for SOM models, the tree it builds."""
    from syntaxlm.models import load_model
    from syntaxlm.report.model_figures import induced_structure_figure, sentence_words
    from syntaxlm.report.plots import save_figure

    figure = induced_structure_figure(load_model(model), sentence_words(sentence))
    typer.echo(f"figure written to {save_figure(figure, out)}")


@plot_app.command("mask")
def plot_mask(
    model: ModelArgument,
    tree: Annotated[str, typer.Option(help=TREE_HELP)],
    out: FigureOutOption,
    penn: PennOption = False,
) -> None:
    """TG Fig. 2b by the model's own transform: STACK/COMPOSE (TG), causal (TXL), PLM-mask's heads."""
    from syntaxlm.models import load_model
    from syntaxlm.report.model_figures import structure_mask_figure, tree_in_model_view
    from syntaxlm.report.plots import save_figure

    figure = structure_mask_figure(load_model(model), tree_in_model_view(tree, penn=penn))
    typer.echo(f"figure written to {save_figure(figure, out)}")


@plot_app.command("attention")
def plot_attention(
    model: ModelArgument,
    out: FigureOutOption,
    layer: Annotated[int, typer.Option(help="Layer, from 0.")] = 0,
    head: Annotated[int, typer.Option(help="Head, from 0 (plm-mask: 0 buffer, 1 stack).")] = 0,
    tree: Annotated[str | None, typer.Option(help=TREE_HELP + " Joint models need one.")] = None,
    sentence: Annotated[
        str | None, typer.Option(help="Words-only models: the sentence (or give --tree).")
    ] = None,
    penn: PennOption = False,
) -> None:
    """The attention probabilities of one layer and head for one input (transformer models)."""
    from syntaxlm.models import load_model
    from syntaxlm.report.model_figures import attention_figure, sentence_words, tree_in_model_view
    from syntaxlm.report.plots import save_figure

    if (tree is None) == (sentence is None):
        raise typer.BadParameter("give one of --tree and --sentence", param_hint="--tree")
    given = {"tree": tree_in_model_view(tree, penn=penn)} if tree else {"words": sentence_words(sentence)}
    figure = attention_figure(load_model(model), layer=layer, head=head, **given)
    typer.echo(f"figure written to {save_figure(figure, out)}")


# -- model files ----------------------------------------------------------------------------------------


@model_app.command("seal")
def model_seal(
    path: Annotated[
        Path,
        typer.Argument(help="A saved model folder (its model.safetensors) or a checkpoint.safetensors file."),
    ],
) -> None:
    """Write the sha256 of a trusted file's tensors into its header, so that it loads again.

    Loading refuses model weights and checkpoints without a tensors_sha256 (files written before
    syntaxlm hashed them, or whose hash was removed). Seal only a file you trust: from then on any
    change to its tensors is detected. A file whose header holds a different hash is damaged and
    is not sealed.
    """
    from syntaxlm.models.base import WEIGHTS_FILE, seal_tensors_file

    target = path / WEIGHTS_FILE if path.is_dir() else path
    if not target.is_file():
        raise FileNotFoundError(f"no such model folder or safetensors file: {path}")
    digest, changed = seal_tensors_file(target)
    linked = f" (the file the link {target} points to)" if target.is_symlink() else ""
    sealed = target.resolve() if linked else target
    typer.echo(f"{'sealed' if changed else 'already sealed'} {sealed}{linked}: tensors_sha256 {digest}")


# -- train ----------------------------------------------------------------------------------------------


@app.command("train")
def train_command(
    config: Annotated[
        Path, typer.Argument(help="Recipe: a YAML file (configs/tg-tiny.yaml) or a recipe name (tg-tiny).")
    ],
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default: runs/<recipe name>).", show_default=False)
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config key: --set train.lr=3e-4 (repeatable)."),
    ] = None,
    data_train: Annotated[Path | None, typer.Option(help="Training treebank (replaces data.*).")] = None,
    data_valid: Annotated[Path | None, typer.Option(help="Validation treebank.")] = None,
    data_test: Annotated[Path | None, typer.Option(help="Test treebank.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out from its checkpoint.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Train a model from a recipe; under torchrun, on every process (data parallel)."""
    import os

    from syntaxlm.jobs.recipes import find_recipe
    from syntaxlm.train import TrainingInterrupted, load_config, train

    config = find_recipe(config)
    overrides = [
        f"data.{role}={json.dumps(str(path))}"  # quoted: read as a string, whatever the path
        for role, path in (("train", data_train), ("valid", data_valid), ("test", data_test))
        if path is not None
    ] + list(set_ or [])
    run_config = load_config(config, overrides)
    out = out if out is not None else Path("runs") / config.stem
    first = int(os.environ.get("RANK", "0")) == 0
    if first:
        typer.echo(f"{'resuming' if resume else 'training'} {run_config.model.model} in {out}")
    try:
        result = train(run_config, out, resume=resume, progress=progress)
    except TrainingInterrupted as interrupted:
        if first:
            data = {"train": data_train, "valid": data_valid, "test": data_test}
            again = _resume_command(config, out, data, set_ or [], progress=progress)
            several = int(os.environ.get("WORLD_SIZE", "1")) > 1
            under = " (under torchrun, with the same torchrun options)" if several else ""
            typer.echo(f"{interrupted.describe()}\nresume with{under}: {again}", err=True)
        raise typer.Exit(130) from None
    if first:
        best = "none" if result.best_valid_loss is None else f"{result.best_valid_loss:.4f}"
        last = "none" if result.last_valid_loss is None else f"{result.last_valid_loss:.4f}"
        stopped = result.stopped.replace("_", " ")
        if result.stopped == "max_minutes":
            stopped = f"time budget of {run_config.train.max_minutes:g} minutes (train.max_minutes) spent"
        typer.echo(
            f"{result.steps} steps ({stopped}); "
            f"best validation loss {best} {result.model.loss_unit} at step {result.best_step} "
            f"(model in {out / 'best'}); "
            f"last {last}; {result.baseline} baseline {result.baseline_valid_loss:.4f}"
        )
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # The run is over and its files are written. Leave without the interpreter's teardown, in
        # which gloo's threads now and then abort a finished process ("terminate called without an
        # active exception", SIGABRT) and torchrun reports the whole run as failed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _resume_command(
    recipe: Path, out: Path, data: dict[str, Path | None], overrides: list[str], *, progress: bool
) -> str:
    """The ``syntaxlm train`` command line that resumes the run in ``out`` (quoted for a shell)."""
    import shlex

    words = ["syntaxlm", "train", str(recipe), "--out", str(out)]
    for role, path in data.items():
        if path is not None:
            words += [f"--data-{role}", str(path)]
    for override in overrides:
        words += ["--set", override]
    words += ["--resume"] + ([] if progress else ["--no-progress"])
    return shlex.join(words)


@contextlib.contextmanager
def _resumed_when_run_again(out: Path) -> Iterator[None]:
    """Around commands that train runs in ``out``: a Ctrl-C says which runs stopped before their
    end and the step each resumes from, and exits with status 130."""
    try:
        yield
    except KeyboardInterrupt:
        from syntaxlm.train import unfinished_runs

        runs = unfinished_runs(out) if out.is_dir() else []
        stopped = ", ".join(
            f"{run} (checkpoint at step {step})" if step is not None else f"{run} (no checkpoint yet)"
            for run, step in runs
        )
        typer.echo(
            f"interrupted; runs that finished are kept{'; unfinished: ' + stopped if stopped else ''}\n"
            "run the same command again to resume (each unfinished run from its last checkpoint)",
            err=True,
        )
        raise typer.Exit(130) from None


# -- quickstart -------------------------------------------------------------------------------------


@app.command("quickstart")
def quickstart(
    out: Annotated[Path, typer.Option(help="Folder for everything the run makes.")] = Path("runs/quickstart"),
    data: Annotated[
        Path | None,
        typer.Option(
            help="Your treebank instead of the synthetic one: a folder with train, dev and test files "
            "(train.trees, or UD names such as en_ewt-ud-train.conllu), or one PTB-bracket file "
            "(split 80/10/10 in file order).",
            show_default=False,
        ),
    ] = None,
    fast: Annotated[
        bool, typer.Option("--fast", help="A smoke run of seconds: small data, one pass.")
    ] = False,
    models: Annotated[
        str | None, typer.Option(help="Only these models (comma-separated names).", show_default=False)
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed (data and training).")] = 0,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Models trained side by side, each in its own process with its share of the CPU "
            "threads (default: one per CPU thread; 1 on a GPU).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The main job: every model's tiny recipe trained on one treebank and compared (report.md).

    An interrupted quickstart resumes where it stopped when run again with the same options.
    """
    from syntaxlm.jobs.quickstart import run_quickstart

    chosen = _names(models, "--models")
    with _resumed_when_run_again(out):
        run_quickstart(out, data=data, fast=fast, seed=seed, models=chosen, workers=workers, echo=typer.echo)


@app.command("reproduce")
def reproduce_command(
    recipe: Annotated[
        str, typer.Argument(help="A recipe name (tg-ptb, prpn-ptb, esom-ewt, ...) or YAML file.")
    ],
    data: Annotated[
        Path | None,
        typer.Option(
            help="Folder holding the recipe's treebank files (by their names: train.trees, dev.trees, ...).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder (default: runs/reproduce/<recipe>).", show_default=False)
    ] = None,
    seeds: Annotated[
        int, typer.Option(help="Training runs, seeds 0..N-1 (the report gives mean ± std).")
    ] = 1,
    suites: Annotated[
        list[Path] | None,
        typer.Option("--suites", help="SyntaxGym suite files or folders to score every run on (repeatable)."),
    ] = None,
    blimp: Annotated[
        Path | None,
        typer.Option(
            help="A BLiMP data folder (one .jsonl per paradigm): score every run on its 10% subset "
            "(Qian et al. 2021: the first 100 pairs of each paradigm).",
            show_default=False,
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a recipe key: --set train.max_steps=2000 (repeatable)."),
    ] = None,
    test_sentences: Annotated[
        int | None, typer.Option(help="Score only the first N test sentences.", show_default=False)
    ] = None,
    parser: Annotated[
        str | None,
        typer.Option(
            help="Joint models (TG, TXL (trees), PLM): the proposal parser for importance-sampled "
            "perplexity and reranked F1, a saved parser folder or a parser recipe (default: the "
            "recipe parser-SCALE where one exists, trained once on the same data). 'none': without.",
            show_default=False,
        ),
    ] = None,
    proposal_samples: Annotated[
        int, typer.Option(min=1, help="Trees per test sentence drawn from the parser (TG: 300).")
    ] = 300,
    action_beam: ActionBeamOption = 100,
    word_beam: WordBeamOption = 10,
    fast_track: FastTrackOption = 5,
    device: DeviceOption = "cpu",
    batch_size: BatchSizeOption = 16,
) -> None:
    """A paper's table from its recipe: train (per seed) -> evaluate -> report (docs/reproduce.md).

    Runs that finished are kept and interrupted ones resume, so the command can be run again.
    """
    from syntaxlm.inference import BeamSettings
    from syntaxlm.jobs.evaluation import EvalSettings
    from syntaxlm.jobs.recipes import find_recipe
    from syntaxlm.jobs.reproduce import reproduce

    if seeds < 1:
        raise typer.BadParameter("at least one seed", param_hint="--seeds")
    if parser != "none":
        _check_importance_samples(proposal_samples, "--proposal-samples")
    settings = EvalSettings(
        beam=BeamSettings(action_beam, word_beam, fast_track),
        test_sentences=test_sentences,
        batch_size=batch_size,
        proposal_samples=proposal_samples,
        device=device,
    )
    name = find_recipe(recipe).stem
    out = out if out is not None else Path("runs") / "reproduce" / name
    with _resumed_when_run_again(out):
        reproduce(
            recipe,
            out,
            data=data,
            seeds=range(seeds),
            suites=_suite_files(suites) if suites else [],
            blimp=blimp,
            overrides=set_ or [],
            settings=settings,
            parser=parser,
            echo=typer.echo,
        )


# -- experiment -------------------------------------------------------------------------------------

experiment_app = typer.Typer(no_args_is_help=True, help="Measured experiments over many training runs.")
app.add_typer(experiment_app, name="experiment")


def _numbers(text: str | None, option: str) -> tuple[int, ...] | None:
    """``"1000,4000"`` as ``(1000, 4000)``; ``None`` stays ``None``."""
    try:
        return None if text is None else tuple(map(int, _names(text, option)))
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected comma-separated integers", param_hint=option) from None


def _names(text: str | None, option: str) -> tuple[str, ...] | None:
    """``"tg, lm"`` as ``("tg", "lm")``; ``None`` (the option left out) stays ``None``; a list given
    empty is refused, not taken for the default."""
    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise typer.BadParameter(f"{text!r}: expected comma-separated values, none given", param_hint=option)
    return names


def _sweep(text: str | None) -> tuple[str, tuple[str, ...]] | None:
    """``"model.n_layers=3,4,6"`` as ``("model.n_layers", ("3", "4", "6"))``."""
    if text is None:
        return None
    key, equals, values = text.partition("=")
    parts = tuple(part.strip() for part in values.split(","))
    if not equals or not key.strip() or not all(parts):
        raise typer.BadParameter(
            f"{text!r}: expected KEY=VALUE,VALUE,..., e.g. model.n_layers=3,4,6", param_hint="--sweep"
        )
    return key.strip(), parts


def _default_option(help_text: str):
    """An option left out takes ``CurveSettings``'s default (``None`` here: not given)."""
    return typer.Option(help=help_text, show_default=False)


@experiment_app.command("curve")
def experiment_curve(
    out: Annotated[Path, typer.Option(help="Folder for the data, the runs and the curve.")] = Path(
        "runs/curve"
    ),
    sizes: Annotated[str | None, _default_option("Training sentences per point: 1000,4000,16000.")] = None,
    seeds: Annotated[str | None, _default_option("Training seeds, e.g. 0,1,2.")] = None,
    models: Annotated[str | None, _default_option("Tiny recipes to train (comma-separated names).")] = None,
    items_per_suite: Annotated[int | None, _default_option("Items per suite.")] = None,
    lexicon_size: Annotated[
        int | None, _default_option("Words per open class of the grammar (default 10; 0: the full lexicon).")
    ] = None,
    data_seed: Annotated[int | None, _default_option("Seed of the synthetic data.")] = None,
    min_epochs: Annotated[int | None, _default_option("Passes over the largest sizes.")] = None,
    min_steps: Annotated[int | None, _default_option("About the fewest updates of a small size.")] = None,
    batch_size: Annotated[int | None, _default_option("Sentences (rows) per step.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a key of every recipe: --set model.n_layers=1 (repeatable)."),
    ] = None,
    sweep: Annotated[
        str | None,
        typer.Option(
            help="Measure against a recipe key's values instead of sizes, at one --sizes value: "
            "--sweep model.n_layers=3,4,6.",
            show_default=False,
        ),
    ] = None,
    action_beam: Annotated[int | None, _default_option("Beam search: action beam.")] = None,
    word_beam: Annotated[int | None, _default_option("Beam search: word beam.")] = None,
    fast_track: Annotated[int | None, _default_option("Beam search: fast-track states per round.")] = None,
    perplexity: Annotated[
        bool, typer.Option("--perplexity", help="Also score test perplexity (and joint models' parses).")
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Runs trained side by side, each in its own process with its share of the CPU "
            "threads (default: one per CPU thread; 1 on a GPU).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """SyntaxGym accuracy per phenomenon against training size, or against a recipe key's values
    (--sweep), for several models and seeds (curve.md, curve.png, curve.json). Options left out
    take the defaults of ``CurveSettings`` (docs/learning-curve.md). Run it again to continue
    where it stopped."""
    from dataclasses import replace

    from syntaxlm.jobs.curve import run_curve
    from syntaxlm.jobs.curve_settings import CurveSettings

    defaults = CurveSettings()
    given = {
        "sizes": _numbers(sizes, "--sizes"),
        "seeds": _numbers(seeds, "--seeds"),
        "models": _names(models, "--models"),
        "items_per_suite": items_per_suite,
        "lexicon_size": lexicon_size,
        "data_seed": data_seed,
        "min_epochs": min_epochs,
        "min_steps": min_steps,
        "batch_size": batch_size,
        "overrides": tuple(set_) if set_ else None,
        "sweep": _sweep(sweep),
    }
    beam = {"action_beam": action_beam, "word_beam": word_beam, "fast_track": fast_track}
    beam = {key: value for key, value in beam.items() if value is not None}
    settings = replace(
        defaults,
        **{key: value for key, value in given.items() if value is not None},
        beam=replace(defaults.beam, **beam),
        perplexity=perplexity,
    )
    if lexicon_size == 0:
        settings = replace(settings, lexicon_size=None)
    with _resumed_when_run_again(out):
        run_curve(out, settings, workers=workers, echo=typer.echo)


def _interrupts_say_what_was_kept(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` and its sub-apps ``_kept_on_interrupt``."""
    for info in typer_app.registered_commands:
        info.callback = _kept_on_interrupt(info.callback)
    for group in typer_app.registered_groups:
        _interrupts_say_what_was_kept(group.typer_instance)


def _kept_on_interrupt(command):
    """``command``, whose Ctrl-C prints one line saying what was kept and exits with status 130
    (typer would exit silently). Commands that train say more (``_resumed_when_run_again``)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            typer.echo(
                "interrupted; files this command finished are kept, none is left half-written "
                "(each is put in place only when complete)",
                err=True,
            )
            raise typer.Exit(130) from None

    return run


_interrupts_say_what_was_kept(app)


def main() -> None:
    """Console entry point: library errors and failed file operations become one clear message and
    exit status 2."""
    from syntaxlm.files import os_error_message

    try:
        app()
    except SyntaxlmError as error:
        _fail(str(error))
    except OSError as error:
        _fail(os_error_message(error))


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    sys.exit(2)
