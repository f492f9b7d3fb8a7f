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
    with_beam_options,
)


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


class ParseMethod(str, Enum):
    auto = "auto"
    beam = "beam"
    rerank = "rerank"
    induced = "induced"


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
    settings = beam.settings()
    with _sizes_as_options():
        trees = parse(
            loaded,
            words,
            method=method.value,
            proposals=given,
            parser=None if parser is None else load_parser(parser),
            samples=300 if samples is None else samples,
            seed=seed,
            beam=settings,
            batch_size=batch_size,
            progress=progress,
            on_estimate=_estimate_teller(words, settings if method != ParseMethod.rerank else None),
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
