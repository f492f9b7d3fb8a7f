"""``syntaxlm eval`` over a corpus of text: perplexity, generated text, reading times."""

from __future__ import annotations

import functools
import math
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from syntaxlm.cli.common import (
    STORIES_HINT,
    _emit,
    _estimate_before,
    _print_json,
    _scorer,
    _sentences_to_score,
)
from syntaxlm.cli.eval import eval_app
from syntaxlm.cli.options import (
    BEAM_OPTIONS,
    PAPER_BEAM,
    PARSER_SEED_MAX,
    BatchSizeOption,
    BeamOptions,
    DeviceOption,
    OutOption,
    PosTagsOption,
    ProgressOption,
    ResultJsonOption,
    ScoreMethod,
    SentenceLimitOption,
    SkipLongOption,
    _check_importance_samples,
    _names,
    _refuse_given,
    _refuse_overwriting,
    _sizes_as_options,
    with_beam_options,
)


@eval_app.command("ppl")
@with_beam_options
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
    beam: BeamOptions = PAPER_BEAM,
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
    from syntaxlm.jobs.perplexity import perplexity_evaluation

    if context not in ("training", "full"):
        raise typer.BadParameter(f"expected training or full, got {context!r}", param_hint="--context")
    trees = read_given_trees(data, pos_tags=pos_tags) if is_treebank(data) else None
    words = [tree.leaves() for tree in trees] if trees is not None else read_sentences(data)
    _check_perplexity_options(ctx, method, trees, proposals, parser, samples, compare_beam)
    if parser is not None:
        drawn = {"samples": samples, "seed": seed, "beam": beam.settings() if compare_beam else None}
        drawn |= {"batch_size": batch_size, "progress": progress}
        with _sizes_as_options():
            _proposal_perplexity(data, model, parser, words, drawn, limit, as_json, out, device)
        return
    settings = {"context": context, "batch_size": batch_size, "progress": progress}
    scorer = _scorer(model, method.value, beam, device, **settings)
    _check_scorer_options(ctx, scorer, context)
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
    _emit_evaluation(evaluation, as_json, out)


def _check_perplexity_options(
    ctx: typer.Context, method: ScoreMethod, trees, proposals, parser, samples: int, compare_beam: bool
) -> None:
    """``eval ppl``'s options that the method, the data or the parser leave unused are refused."""
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
        return
    _check_importance_samples(samples)
    with_parser = "the methods without --parser"
    _refuse_given(ctx, ["skip_long"], with_parser)
    read_as_trained = "with it, the trees are read as the model was trained, the beam in full"
    _refuse_given(ctx, ["context"], f"{with_parser} ({read_as_trained})")
    if not compare_beam:
        _refuse_given(ctx, BEAM_OPTIONS, "the beam search (with --parser: --compare-beam)")


def _check_scorer_options(ctx: typer.Context, scorer, context: str) -> None:
    """The beam's options refused unless the method is the beam search, which reads in full context."""
    from syntaxlm.inference.marginal import document_context

    if scorer.method != "beam":
        _refuse_given(ctx, BEAM_OPTIONS, f"the beam search (the method here is {scorer.method})")
    segmented = document_context(scorer.model, "training").segmented
    if scorer.method == "beam" and context == "training" and segmented:
        typer.echo("note: the beam search reads with full context, not in training segments", err=True)


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
    _emit_evaluation(evaluation, as_json, out)


def _emit_evaluation(evaluation, as_json: bool, out: Path | None) -> None:
    """A perplexity evaluation (``jobs.perplexity``) printed and, with ``out``, written."""
    result, text = evaluation.result, evaluation.text
    _emit("perplexity", result, as_json, out, text, evaluation.inputs, evaluation.options)


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
@with_beam_options
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
    beam: BeamOptions = PAPER_BEAM,
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

    _check_reading_time_options(ctx, method, context, model, perplexity)
    low, high = _rt_range(rt_range)
    chosen = _names(stories, "--stories")
    with _sizes_as_options():
        evaluation = reading_time_evaluation(
            corpus, model, stories=chosen, predictors=predictor or (), method=method.value,
            beam=beam.settings(), context=context, rt_range=(low, high),
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


def _check_reading_time_options(ctx: typer.Context, method: ReadingTimeMethod, context: str,
                                model: list[Path], perplexity: list[Path] | None) -> None:  # fmt: skip
    """Refuse the options of ``eval rt`` that do not go together, before any work."""
    from syntaxlm.eval.scorers import STORY_CONTEXTS

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


def _rt_range(text: str) -> tuple[float, float]:
    """``--rt-range LOW,HIGH`` (ms) as ``(low, high)``, with 0 <= LOW < HIGH."""
    parts = text.split(",")
    try:
        low, high = (float(part) for part in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high) and 0 <= low < high):
        raise typer.BadParameter(
            f"expected LOW,HIGH in ms with 0 <= LOW < HIGH, got {text!r}", param_hint="--rt-range"
        )
    return low, high
