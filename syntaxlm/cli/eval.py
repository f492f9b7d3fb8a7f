"""``syntaxlm eval``: the papers' benchmarks, SyntaxGym, parsing F1 and BLiMP (eval_corpus: the rest)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from syntaxlm.cli.common import SUITES_HINT, _emit, _estimate_before, _print_json, _scorer, _write_result
from syntaxlm.cli.options import (
    PAPER_BEAM,
    SCORING_OPTIONS,
    BatchSizeOption,
    BeamOptions,
    DeviceOption,
    ModelMethodOption,
    OutOption,
    ProgressOption,
    ResultJsonOption,
    _refuse_given,
    _refuse_overwriting,
    _suite_files,
    with_beam_options,
)

eval_app = typer.Typer(
    no_args_is_help=True, help="The papers' evaluations; each also scores precomputed inputs."
)


@eval_app.command("sg")
@with_beam_options
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
    beam: BeamOptions = PAPER_BEAM,
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
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="--model with several suites and --out: read the suites already scored there by the "
            "same model with the same options instead of scoring them again.",
        ),
    ] = False,
) -> None:
    """Score suites: region values computed elsewhere (one suite), or a model's own surprisals (--model).

    With several suites the SG scores (the mean over the 31 suites of Hu et al. 2020 and over the 33
    of Qian et al. 2021, when all are there) and the circuit means follow the per-suite lines. With
    --model, each suite's share of words the model's vocabulary does not know stands beside its
    accuracy, and the share over the suites after the SG scores.
    """
    _refuse_overwriting(out, [*suites, region_values])
    if (region_values is None) == (model is None):
        raise typer.BadParameter("give one of --region-values and --model", param_hint="--model")
    paths = _suite_files(suites)
    if resume and (model is None or out is None or len(paths) < 2):
        raise typer.BadParameter(
            "--resume goes with --model, several suites and --out", param_hint="--resume"
        )
    if region_values is not None:
        _refuse_given(ctx, [*SCORING_OPTIONS, "workers"], "--model (a model's own surprisals)")
        if len(paths) != 1:
            raise typer.BadParameter("--region-values scores one suite", param_hint="SUITES")
        _score_region_values(paths[0], region_values, as_json, out)
        return
    scorer = _scorer(model, method, beam, device, batch_size=batch_size)
    if workers > 1 and scorer.model.device.type != "cpu":
        raise typer.BadParameter(
            f"workers share the CPU's threads; a model on {scorer.model.device.type} scores in one process",
            param_hint="--workers",
        )
    _score_suites(scorer, model, paths, workers, progress, as_json, out, resume)


def _score_region_values(suite: Path, region_values: Path, as_json: bool, out: Path | None) -> None:
    """``eval sg --region-values``: one suite scored on region values computed elsewhere."""
    from syntaxlm.eval.syntaxgym import format_suite_result, score_region_values

    result = score_region_values(suite, region_values)
    inputs = {"suite": suite, "region_values": region_values}
    _emit("syntaxgym", result, as_json, out, format_suite_result(result), inputs)


def _score_suites(scorer, model: Path, paths: list[Path], workers: int, progress: bool, as_json: bool,
                  out: Path | None, resume: bool) -> None:  # fmt: skip
    """``eval sg --model``: the suites scored on the model's own surprisals, each suite's result
    written as it is scored (with several suites, a file per suite in ``out``; with ``resume`` the
    suites already there are read instead), then the SG scores and circuit means."""
    from syntaxlm.eval.syntaxgym import format_suite_result, format_suites_summary, load_suite, suites_summary
    from syntaxlm.jobs.suites import beam_options, scored_suites, suite_results

    options = {"method": scorer.method} | beam_options(scorer)
    inputs = {"model": model / "model.safetensors"}
    results = {}
    if resume:
        done = scored_suites(out, paths, inputs["model"], options)
        results = {result["suite"]: result for result in done.values()}
        paths = [path for path in paths if path not in done]
        typer.echo(f"resuming: {len(done)} suites read from {out}, {len(paths)} to score", err=True)
    if scorer.joint and paths and (workers == 1 or len(paths) == 1):  # scored here, where it can be timed
        sentences = [text.split() for path in paths for _, _, text in load_suite(path).sentences()]
        _estimate_before(scorer, sentences, limit=SUITES_HINT)
    for path, result in suite_results(scorer, paths, progress=progress, workers=workers):
        suite_inputs = {"suite": path} | inputs
        if len(paths) == 1 and not resume:
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
@with_beam_options
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
    beam: BeamOptions = PAPER_BEAM,
    device: DeviceOption = "cpu",
    batch_size: Annotated[int, typer.Option(help="--model: sentences per batch.")] = 64,
    per_paradigm: Annotated[bool, typer.Option(help="Text output: every paradigm too.")] = False,
    progress: ProgressOption = True,
    as_json: ResultJsonOption = False,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write the result JSON here; with --model, the pairs' log-probabilities go to "
            "OUT.logprobs.json every 30 seconds and at the end."
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="--model with --out: read the pairs already in OUT.logprobs.json, scored by the same "
            "model with the same options, instead of scoring them again.",
        ),
    ] = False,
) -> None:
    """BLiMP accuracy (per paradigm, per phenomenon, overall) from precomputed log-probs or a model's.

    A pair is right when log p(good) > log p(bad), each the whole sentence with its end. With
    --model, the share of words the model's vocabulary does not know stands beside each accuracy.
    """
    _refuse_overwriting(out, [data, logprobs])
    from syntaxlm.eval.blimp import blimp_10_percent, first_pairs, read_blimp, read_pair_logprobs, score_blimp

    if (logprobs is None) == (model is None):
        raise typer.BadParameter("give one of --logprobs and --model", param_hint="--model")
    if resume and (model is None or out is None):
        raise typer.BadParameter("--resume goes with --model and --out", param_hint="--resume")
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
        scorer = _scorer(model, method, beam, device, batch_size=batch_size)
        inputs = {"data": data, "model": model / "model.safetensors"}
        result, scoring = _model_blimp(scorer, pairs, inputs["model"], batch_size, progress, out, resume)
        options |= scoring
    else:
        result = score_blimp(pairs, logprobs=read_pair_logprobs(logprobs, pairs))
        inputs = {"logprobs": logprobs, "data": data}
    _emit("blimp", result.to_json(), as_json, out, result.render(per_paradigm=per_paradigm), inputs, options)


def _model_blimp(scorer, pairs: list, model_file: Path, batch_size: int, progress: bool, out: Path | None,
                 resume: bool):  # fmt: skip
    """``eval blimp --model``: the pairs' log-probabilities under the model (with ``out``, kept in
    ``OUT.logprobs.json`` as they are scored; with ``resume``, the pairs already there are read
    instead of scored), the result and the scoring options it records."""
    from syntaxlm.eval.blimp import score_blimp
    from syntaxlm.eval.scorers import blimp_scorer, blimp_words, ptb_tokens
    from syntaxlm.jobs.blimp import logprobs_file, score_pairs, scored_pairs
    from syntaxlm.jobs.suites import beam_options

    options = {"method": scorer.method} | beam_options(scorer)
    path = None if out is None else logprobs_file(out)
    scored = scored_pairs(path, model_file, options) if resume else {}
    todo = [pair for pair in pairs if (pair.paradigm, pair.pair_id) not in scored]
    if resume:
        read = len(pairs) - len(todo)
        typer.echo(f"resuming: {read} pairs read from {path}, {len(todo)} to score", err=True)
    if todo:
        _estimate_before(scorer, [ptb_tokens(s) for pair in todo for s in (pair.good, pair.bad)])
    scored = score_pairs(
        blimp_scorer(scorer), todo, scored, path=path, model_file=model_file, options=options,
        batch_size=batch_size * 4, progress=progress,
    )  # fmt: skip
    logprobs = [scored[pair.paradigm, pair.pair_id] for pair in pairs]
    return score_blimp(pairs, logprobs=logprobs, words=blimp_words(scorer)), options
