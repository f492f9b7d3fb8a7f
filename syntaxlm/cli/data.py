"""``syntaxlm data``: treebanks: synthetic data, downloads, statistics, splits, conversion."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.common import _print_json
from syntaxlm.cli.options import NO_POS_TAGS_HINT, _names, _refuse_overwriting, choice
from syntaxlm.trees.clean import CLEANING_STYLES
from syntaxlm.trees.transforms import TRANSFORMS

data_app = typer.Typer(
    no_args_is_help=True, help="Treebanks: synthetic data, downloads, statistics, splits, conversion."
)


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


CleaningStyle = choice("CleaningStyle", CLEANING_STYLES)


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

    from syntaxlm.trees.ptb import TreeReader, write_trees

    base = CLEANING_STYLES[style.value]
    cleaning = replace(
        base,
        remove_punctuation=base.remove_punctuation or remove_punctuation,
        collapse_unary_chains=base.collapse_unary_chains or collapse_unary,
        strip_root=base.strip_root or strip_root,
    )
    reader = TreeReader(source, cleaning=cleaning, skip_bad=skip_bad)
    count = write_trees(out, reader, pretty=pretty)
    typer.echo(f"{count} trees written to {out}; {reader.report.summary()}")


Transform = choice("Transform", TRANSFORMS)


@data_app.command("transform")
def data_transform(
    source: Annotated[Path, typer.Argument(help="Treebank file or folder.")],
    out: Annotated[Path, typer.Argument(help="Output file.")],
    kind: Annotated[Transform, typer.Option(help="The transform (TG §4.1.1 ablations, binarisation).")],
    pos_tags: Annotated[bool, typer.Option(help="Input has POS tags (Penn style).")] = False,
) -> None:
    """Apply a tree transform to every tree of a file."""
    _refuse_overwriting(out, [source])
    from syntaxlm.trees.ptb import TreeReader, write_trees

    function = TRANSFORMS[kind.value]
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
