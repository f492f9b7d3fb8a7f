"""``syntaxlm reproduce``: a paper's table from a recipe, trained once per seed and evaluated on the
recipe's test set, the suites and BLiMP, with a joint model also over a proposal parser's trees."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from syntaxlm.jobs.evaluation import EvalSettings, evaluate_model
from syntaxlm.jobs.perplexity import context_summary
from syntaxlm.jobs.recipes import find_recipe, recipe_names, recipe_with_data
from syntaxlm.jobs.training import train_or_resume
from syntaxlm.results import read_result


def reproduce(
    recipe_name: str | Path,
    out: str | Path,
    *,
    data: str | Path | None = None,
    seeds: Sequence[int] = (0,),
    suites: Sequence[Path] = (),
    blimp: str | Path | None = None,
    overrides: Sequence[str] = (),
    settings: EvalSettings = EvalSettings(),
    parser: str | Path | None = None,
    echo=print,
) -> Path:
    """A paper's table from a recipe: train it once per seed (``OUT/seed-S``, resumed when
    interrupted), evaluate each run on the recipe's test set, ``suites`` and ``blimp`` (a BLiMP data
    folder: its 10% subset), and write
    ``OUT/report.md`` (mean ± std over seeds). Returns the report's path.

    A joint model (``ModelCard.joint``) is also evaluated over a proposal parser's samples
    (``evaluate_model``'s ``parser``: importance-sampled perplexity, reranked F1), as the TG paper:
    ``parser`` is a saved parser folder or a parser recipe, trained once into ``OUT/parser`` on the
    recipe's data (its ``data.*`` overrides applied); by default the recipe ``parser-SCALE`` of the
    same scale, where there is one; ``"none"``: no parser."""
    from syntaxlm.models import MODEL_CARDS
    from syntaxlm.report.report import make_report

    recipe = find_recipe(recipe_name)
    out = Path(out)
    configs = {seed: recipe_with_data(recipe, data and Path(data), overrides, seed=seed) for seed in seeds}
    card = MODEL_CARDS.get(next(iter(configs.values())).model.model)
    proposer = _proposal_parser(recipe, parser, out, data, overrides, echo) if card and card.joint else None
    runs = []
    for k, (seed, config) in enumerate(configs.items(), 1):
        run = out / f"seed-{seed}"
        echo(f"[{k}/{len(configs)}] seed {seed}: training {config.model.model} in {run}")
        train_or_resume(config, run, progress=True)
        test = config.data.treebank_paths(run).get("test")  # a synthetic recipe's lives in the run
        echo(f"[{k}/{len(configs)}] seed {seed}: evaluating {run / 'best'}")
        written = evaluate_model(
            run / "best", run / "results", test=test, suites=suites, blimp=blimp, settings=settings,
            parser=proposer, progress=True,
        )  # fmt: skip
        if "perplexity" in written:
            marginalisation = read_result(written["perplexity"])["result"]["marginalisation"]
            echo(f"[{k}/{len(configs)}] seed {seed}: perplexity {context_summary(marginalisation)}")
        runs.append(run)
    path = make_report(runs, out)
    echo(f"report: {path}")
    return path


def _proposal_parser(
    recipe: Path, parser: str | Path | None, out: Path, data, overrides, echo
) -> Path | None:
    """The saved proposal parser ``reproduce`` evaluates a joint model with (its docstring)."""
    if parser is not None and str(parser) == "none":
        return None
    if parser is not None and (Path(parser) / "model.safetensors").is_file():
        return Path(parser)
    if parser is None:
        scale = recipe.stem.rsplit("-", 1)[-1]
        if f"parser-{scale}" not in recipe_names():
            echo(f"no parser-{scale} recipe: the joint model is evaluated without proposal trees")
            return None
        parser = f"parser-{scale}"
    data_overrides = [change for change in overrides if change.startswith("data.")]
    config = recipe_with_data(find_recipe(parser), data and Path(data), data_overrides)
    echo(f"training the proposal parser ({Path(str(parser)).stem}) in {out / 'parser'}")
    train_or_resume(config, out / "parser", progress=True)
    return out / "parser" / "best"
