"""``syntaxlm score``, ``parse`` and ``generate``: a saved model on sentences."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from syntaxlm.cli.common import _estimate_before, _estimate_teller, _scorer, _sentences_to_score, _write_lines
from syntaxlm.cli.options import (
    BEAM_OPTIONS,
    NO_POS_TAGS_HINT,
    PAPER_BEAM,
    PARSER_SEED_MAX,
    BatchSizeOption,
    BeamOptions,
    DeviceOption,
    ModelArgument,
    PosTagsOption,
    ProgressOption,
    ScoreMethod,
    SentenceLimitOption,
    SentencesArgument,
    SkipLongOption,
    _refuse_given,
    _refuse_overwriting,
    _sizes_as_options,
    choice,
    with_beam_options,
)
from syntaxlm.inference.methods import PARSE_METHODS, UNITS
from syntaxlm.text.tokenize import TOKENIZERS


class ScoreFormat(str, Enum):
    tsv = "tsv"
    jsonl = "jsonl"


ScoreUnit = choice("ScoreUnit", UNITS)
ScoreTokenizer = choice("ScoreTokenizer", TOKENIZERS)


StimuliArgument = Annotated[
    Path,
    typer.Argument(
        help="Sentences, one per line, or ID<TAB>SENTENCE on every line; blank lines are skipped."
    ),
]


@with_beam_options
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
    beam: BeamOptions = PAPER_BEAM,
    device: DeviceOption = "cpu",
    batch_size: BatchSizeOption = 16,
    progress: ProgressOption = True,
    skip_long: SkipLongOption = False,
    limit: SentenceLimitOption = None,
) -> None:
    """Per-word surprisal of every sentence of a file under a saved model (docs/inference.md)."""
    _refuse_overwriting(out, [sentences, trees, proposals])
    from syntaxlm.data.sentences import read_stimuli
    from syntaxlm.inference.stimuli import stimuli_lines, stimuli_notes

    stimuli = read_stimuli(sentences, tokenize_as=tokenize.value)
    if method != ScoreMethod.gold:
        _refuse_given(ctx, ["trees"], "--method gold")
    if method != ScoreMethod.proposals:
        _refuse_given(ctx, ["proposals"], "--method proposals")
    if trees is None and proposals is None:
        _refuse_given(ctx, ["pos_tags"], "--trees or --proposals (how their trees are read)")
    scorer = _scorer(model, method.value, beam, device, batch_size=batch_size, progress=progress)
    if scorer.method != "beam":
        _refuse_given(ctx, BEAM_OPTIONS, f"the beam search (the method here is {scorer.method})")
    given = _given_trees(trees, proposals, len(stimuli.words), pos_tags)
    words, given = stimuli.words[:limit], {key: value[:limit] for key, value in given.items()}
    for note in stimuli_notes(stimuli, words, tokenize.value, scorer.model.vocab):
        typer.secho(note, err=True, fg=typer.colors.YELLOW)
    kept, kept_words, given = _sentences_to_score(scorer, words, given, skip_long, names=stimuli.ids)
    _estimate_before(scorer, kept_words)
    with _sizes_as_options():
        scores = scorer.score(kept_words, indices=[stimuli.ids[i] for i in kept], **given)
    vocab = scorer.model.vocab
    lines = stimuli_lines(stimuli, kept, scores, vocab, unit=unit.value, eos=eos, format=format_.value)
    _write_lines(lines, out)


def _given_trees(trees: Path | None, proposals: Path | None, n_sentences: int, pos_tags: bool) -> dict:
    """``score``'s trees given for its sentences: ``trees`` (--method gold) and ``proposals``
    (--method proposals), as the scorer takes them."""
    from syntaxlm.data.sentences import read_given_trees
    from syntaxlm.errors import MissingPosTagError
    from syntaxlm.inference import read_proposals

    given = {}
    try:
        if trees is not None:
            given["trees"] = read_given_trees(trees, pos_tags=pos_tags)
        if proposals is not None:
            given["proposals"] = read_proposals(proposals, n_sentences=n_sentences, pos_tags=pos_tags)
    except MissingPosTagError as error:
        raise error.with_hint(NO_POS_TAGS_HINT) from None
    return given


ParseMethod = choice("ParseMethod", PARSE_METHODS)


@with_beam_options
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
    beam: BeamOptions = PAPER_BEAM,
    batch_size: BatchSizeOption = 16,
    progress: ProgressOption = True,
    limit: SentenceLimitOption = None,
) -> None:
    """Parse sentences with a joint, structure-inducing or proposal-parser model: PTB brackets, one
    tree per line (a parser's k best or samples: INDEX<TAB>TREE lines)."""
    _refuse_overwriting(out, [sentences, proposals])
    from syntaxlm.data.sentences import read_sentences
    from syntaxlm.inference import parse, read_proposals
    from syntaxlm.models import SyntacticLM, load_model, load_parser
    from syntaxlm.trees.ptb import write_trees

    in_file = read_sentences(sentences)
    words = in_file[:limit]
    loaded = load_model(model)
    if not isinstance(loaded, SyntacticLM):
        _parser_trees(ctx, loaded, words, method, kbest, samples, seed, batch_size, out)
        return
    _check_joint_parse(ctx, loaded, method, proposals, parser, kbest)
    given = (
        None
        if proposals is None
        else read_proposals(proposals, n_sentences=len(in_file), pos_tags=pos_tags)[:limit]
    )
    settings = beam.settings()
    with _sizes_as_options():
        trees = parse(
            loaded, words, method=method.value, proposals=given,
            parser=None if parser is None else load_parser(parser),
            samples=300 if samples is None else samples, seed=seed,
            beam=settings, batch_size=batch_size, progress=progress,
            on_estimate=_estimate_teller(
                words, settings if method != ParseMethod.rerank else None, batch_size=batch_size
            ),
        )  # fmt: skip
    if out is None:
        typer.echo("\n".join(tree.to_bracket() for tree in trees))
    else:
        write_trees(out, trees)


def _check_joint_parse(ctx: typer.Context, model, method: ParseMethod, proposals: Path | None,
                       parser: Path | None, kbest: int | None) -> None:  # fmt: skip
    """Refuse the options of ``parse`` that its method does not take, the model being joint or
    structure-inducing."""
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
    resolved = method.value if method != ParseMethod.auto else "induced" if model.induces_trees else "beam"
    if resolved != "beam":
        _refuse_given(ctx, BEAM_OPTIONS, f"the beam search (the method here is {resolved})")


def _parser_trees(ctx: typer.Context, parser, words: list[list[str]], method: ParseMethod, kbest: int | None,
                  samples: int | None, seed: int, batch_size: int, out: Path | None) -> None:  # fmt: skip
    """``parse`` with a proposal parser as the model: its best tree per sentence, or its ``kbest``
    trees or ``samples`` different sampled trees as a proposal file (``parser_proposals``), with
    a note on stderr of how many sentences have fewer trees than asked for."""
    from syntaxlm.inference.scorer import parser_proposals

    if method != ParseMethod.auto:
        raise typer.BadParameter(
            f"--method {method.value} is for other models: a proposal parser gives its own trees",
            param_hint="--method",
        )
    _refuse_given(ctx, ["proposals", "parser", "pos_tags", *BEAM_OPTIONS], "a joint model as MODEL")
    if samples is None:
        _refuse_given(ctx, ["seed"], "--samples")
    if kbest is not None and samples is not None:
        raise typer.BadParameter("give --kbest or --samples, not both", param_hint="--kbest")
    with _sizes_as_options():
        if kbest is None and samples is None:
            best = parser.parse(words, batch_size=batch_size)
            _write_lines([trees[0].tree.to_bracket() for trees in best], out)
            return
        drawn = {"kbest": kbest, "samples": samples, "seed": seed, "batch_size": batch_size}
        lines, note = parser_proposals(parser, words, **drawn)
    _write_lines(lines, out)
    if note is not None:
        typer.echo(note, err=True)


class GenerateFormat(str, Enum):
    text = "text"
    trees = "trees"
    jsonl = "jsonl"


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
