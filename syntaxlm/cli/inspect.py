"""``syntaxlm inspect``: what models read from trees, and probes of what a model holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.common import _write_result
from syntaxlm.cli.options import ModelArgument, choice
from syntaxlm.structure.tg_variants import VARIANTS

inspect_app = typer.Typer(
    no_args_is_help=True, help="Show what models read from trees: TG masks, actions, distances, SOM labels."
)


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


TGVariant = choice("TGVariant", VARIANTS)


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
    from syntaxlm.structure.tg_view import spelled_tg_sequences, tg_records, tg_table
    from syntaxlm.text.base import load_vocabulary

    if segment_length is not None and segment_length < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--segment-length")
    loaded = load_vocabulary(vocab) if vocab is not None else None
    memory = "smart" if smart_memory else "previous"
    options = {"segment_length": segment_length, "memory": memory, "memory_length": memory_length}
    read = (tree for _, tree in _inspected_trees(trees, clean, limit))
    for index, (actions, sequence, spell) in enumerate(spelled_tg_sequences(read, variant.value, loaded)):
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
