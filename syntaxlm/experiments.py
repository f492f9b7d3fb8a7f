"""Experiments: the steps that ``syntaxlm quickstart`` and ``syntaxlm reproduce`` chain.

- ``find_recipe``: a recipe by file or by name (``tg-tiny`` is ``configs/tg-tiny.yaml``);
- ``train_or_resume``: train a recipe into a run folder; a finished run is kept as it is, an
  interrupted one is resumed from its checkpoint (nothing is trained twice);
- ``evaluate_model``: a saved model on a test treebank (word-level perplexity, marginalised over
  trees for joint models; EVALB F1 of the beam's parses for joint models; UF1 of the induced trees
  for PRPN and SOM) and on SyntaxGym suites, each result a result file (``syntaxlm.results``);
- ``suite_results``: a scorer on SyntaxGym suites, one result per suite (also ``eval sg --model``);
- ``recipe_on_splits``: a recipe reading given train/dev/test files, with training settings;
- ``reading_time_evaluation``: models' surprisal against human reading times (``eval rt``), and
  ``write_reading_times`` its result file, per-token table and figure;
- ``Stages``: the overall progress line of a long job, with the time left; stages that do not
  depend on each other run side by side in worker processes (``cpu_pool``).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syntaxlm.errors import InputFormatError, StageError, SyntaxlmError
from syntaxlm.inference.beam import PAPER_BEAM, BeamSettings
from syntaxlm.models import ConfigError
from syntaxlm.results import read_result, result_record, write_result

RECIPE_FOLDER = "configs"


# --- recipes --------------------------------------------------------------------------------------


def recipe_folders() -> list[Path]:
    """Where recipe names are looked up: ``./configs``, then the ``configs`` of this checkout."""
    checkout = Path(__file__).resolve().parents[1] / RECIPE_FOLDER
    return list(dict.fromkeys([Path.cwd() / RECIPE_FOLDER, checkout]))


def recipe_names() -> list[str]:
    """Every recipe name found in ``recipe_folders()``."""
    return sorted({path.stem for folder in recipe_folders() for path in folder.glob("*.yaml")})


def find_recipe(name_or_path: str | Path) -> Path:
    """A recipe file: the path itself when it is one, else ``configs/NAME.yaml`` (``ConfigError`` if none)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        raise ConfigError(f"{path}: no such recipe file")
    for folder in recipe_folders():
        candidate = folder / f"{path.name}.yaml"
        if candidate.is_file():
            return candidate
    known = ", ".join(recipe_names()) or "none found"
    raise ConfigError(f"no recipe named {str(name_or_path)!r} in {RECIPE_FOLDER}/; known recipes: {known}")


# --- progress -------------------------------------------------------------------------------------


@dataclass
class Stages:
    """An overall progress display: ``[k/n] stage ... (elapsed, about T left)``. The time left is
    the remaining stages' expected weights at the pace observed so far."""

    weights: list[tuple[str, float]]
    echo: Callable[[str], None] = print
    start: float = field(default_factory=time.perf_counter)
    done_weight: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def run(self, index: int, action: Callable[[], Any]) -> Any:
        name, weight = self.weights[index]
        elapsed = time.perf_counter() - self.start
        left = sum(w for _, w in self.weights[index:])
        eta = f", about {clock(elapsed / self.done_weight * left)} left" if self.done_weight else ""
        self.echo(f"[{index + 1}/{len(self.weights)}] {name}  ({clock(elapsed)} elapsed{eta})")
        began = time.perf_counter()
        value = action()
        self.timings[name] = round(time.perf_counter() - began, 1)
        self.done_weight += weight
        return value

    def run_independent(
        self, indices: Sequence[int], actions: Sequence[Callable[[], Any]], *, workers: int = 1
    ) -> list[Any]:
        """Run stages that do not depend on each other; returns their values in the order given.

        With ``workers`` > 1 they run in that many processes (``cpu_pool``), the heaviest first so
        that no long stage starts last, and each is reported as it ends. Each action must then
        pickle: a ``partial`` of module-level functions. An error a user can act on
        (``SyntaxlmError``, a missing file) stops the run with the stage's name; stages that have
        ended keep their files, so running again resumes."""
        if workers <= 1 or len(actions) < 2:
            return [self.run(index, action) for index, action in zip(indices, actions, strict=True)]
        workers = min(workers, len(actions))
        first, last = min(indices) + 1, max(indices) + 1
        elapsed = time.perf_counter() - self.start
        self.echo(
            f"[{first}-{last}/{len(self.weights)}] {len(actions)} stages in {workers} processes "
            f"of {cpu_threads(workers)} thread(s)  ({clock(elapsed)} elapsed)"
        )
        values: dict[int, Any] = {}
        pairs = zip(indices, actions, strict=True)
        heaviest_first = sorted(pairs, key=lambda pair: -self.weights[pair[0]][1])
        pool = cpu_pool(workers)
        try:
            running = {pool.submit(_timed_call, action): index for index, action in heaviest_first}
            for future in as_completed(running):
                index = running[future]
                name, weight = self.weights[index]
                value, seconds, failure = future.result()
                if failure is not None:
                    raise StageError(f"{name}: {failure}")
                values[index] = value
                self.timings[name] = seconds
                self.done_weight += weight
                # The time left: the stages' own seconds per unit of weight so far, the rest of
                # these stages shared among the processes, the stages after them one at a time.
                ended = sum(self.weights[i][1] for i in values)
                pace = sum(self.timings[self.weights[i][0]] for i in values) / ended if ended else 0.0
                waiting = sum(self.weights[i][1] for i in indices if i not in values)
                left = pace * (waiting / workers + sum(w for _, w in self.weights[last:]))
                elapsed = time.perf_counter() - self.start
                self.echo(
                    f"  {name}: done in {clock(seconds)}  ({clock(elapsed)} elapsed, about {clock(left)} left)"
                )
        except BaseException:
            _stop(pool)
            raise
        pool.shutdown()
        return [values[index] for index in indices]


def cpu_workers() -> int:
    """Processes for stages that run side by side (``Stages.run_independent``) by default: one per
    CPU thread torch uses, or 1 when a GPU is present (the stages would share it)."""
    import torch

    return 1 if torch.cuda.is_available() else torch.get_num_threads()


def cpu_threads(workers: int) -> int:
    """Torch threads for each of ``workers`` processes: this process's threads, shared out."""
    import torch

    return max(1, torch.get_num_threads() // workers)


def cpu_pool(workers: int, *, setup: Callable[..., None] | None = None, setup_args: tuple = ()):
    """A pool of ``workers`` spawned processes (``ProcessPoolExecutor``) sharing this process's CPU
    threads (``cpu_threads``), each calling ``setup(*setup_args)`` once when it starts.

    For the tiny models, processes use the cores better than threads: on 2 cores one epoch of the
    tiny TG takes 25.3 s with 1 thread and 22.5 s with 2, while 2 one-thread processes run side by
    side at the speed of one alone (docs/performance.md)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(cpu_threads(workers), setup, setup_args),
    )


def _stop(pool) -> None:
    """Cancel a pool's waiting work and end its processes now; a training stopped there resumes
    from its last checkpoint when run again."""
    processes = list((pool._processes or {}).values())  # no public way to end them before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _start_worker(threads: int, setup: Callable[..., None] | None, setup_args: tuple) -> None:
    import torch

    torch.set_num_threads(threads)
    if setup is not None:
        setup(*setup_args)


def _timed_call(action: Callable[[], Any]) -> tuple[Any, float, str | None]:
    """``action()`` in a worker: its value, its seconds, and the message of an error a user can act
    on (returned rather than raised: such errors do not all survive pickling intact)."""
    began = time.perf_counter()
    try:
        value = action()
    except (SyntaxlmError, FileNotFoundError, IsADirectoryError) as error:
        return None, round(time.perf_counter() - began, 1), str(error)
    return value, round(time.perf_counter() - began, 1), None


def clock(seconds: float) -> str:
    """``m:ss``."""
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


# --- training -------------------------------------------------------------------------------------


def train_or_resume(config, out: str | Path, *, progress: bool = True) -> dict[str, Any]:
    """Train ``config`` (a ``RunConfig``) into ``out`` and return the training result.

    A folder whose run finished (its ``training.json``) is not trained again, provided it was
    trained with the same recipe; a folder holding an interrupted run is resumed.
    """
    from syntaxlm.files import read_json
    from syntaxlm.train import train
    from syntaxlm.train.checkpoint import CHECKPOINT_FILE
    from syntaxlm.train.config import recorded_config
    from syntaxlm.train.run_folder import CONFIG_FILE, RESULT_FILE

    out = Path(out)
    if (out / RESULT_FILE).is_file():
        saved = read_json(out / CONFIG_FILE, InputFormatError, expected="a run configuration")
        recorded = saved.get("train_config") if isinstance(saved, dict) else None
        if not isinstance(recorded, dict) or recorded_config(recorded) != config.to_dict():
            raise ConfigError(
                f"{out} holds a finished run of another recipe; choose another output folder or remove it"
            )
        return read_result(out / RESULT_FILE)["result"]
    resume = (out / CONFIG_FILE).is_file() or (out / CHECKPOINT_FILE).is_file()
    train(config, out, resume=resume, progress=progress)
    return read_result(out / RESULT_FILE)["result"]


def train_and_evaluate(config, run: Path, *, model: str = "best", **evaluation: Any) -> dict[str, float]:
    """Train ``config`` into ``run`` (or resume it) and evaluate its ``model`` (``best`` or
    ``last``) into ``run/results`` (``evaluate_model``'s keywords); returns the seconds of each."""
    began = time.perf_counter()
    train_or_resume(config, run, progress=False)
    trained = time.perf_counter()
    evaluate_model(run / model, run / "results", **evaluation)
    return {"train": round(trained - began, 1), "evaluate": round(time.perf_counter() - trained, 1)}


# --- evaluation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalSettings:
    """How ``evaluate_model`` scores: the beam of joint models, how many test sentences (the first
    ones; ``None``: all), sentences per batch, and the context of words-only models' exact
    perplexity (``Scorer``: ``"training"`` reads a document in the model's training segments with
    its memory; the beam of joint models always reads with full context). Perplexity is reported
    in every convention (``eval.perplexity``), so there is nothing to choose about the end of
    sentence."""

    beam: BeamSettings = PAPER_BEAM
    test_sentences: int | None = None
    batch_size: int = 32
    context: str = "training"
    proposal_samples: int = 300  # trees per sentence from a proposal parser (the TG paper's 300)
    device: str = "cpu"  # where the model (and the proposal parser) score: models.scoring_device


# Sentences per scoring batch for the tiny models of the quickstart and the learning curve: the
# beam search's steps are bound by per-step overhead, and 64 sentences scored the suites 20% faster
# than 16 with the 6-layer tiny TG on one CPU thread (docs/performance.md).
TINY_EVAL_BATCH = 64


def beam_options(scorer) -> dict[str, Any]:
    """The beam settings a scorer's numbers depend on (empty unless it searches)."""
    if scorer.method != "beam":
        return {}
    beam = scorer.beam
    return {"action_beam": beam.action_beam, "word_beam": beam.word_beam, "fast_track": beam.fast_track}


def suite_results(
    scorer, suite_paths: Sequence[Path], *, progress: bool = False, workers: int = 1
) -> Iterator[tuple[Path, dict]]:
    """Per suite file, its SyntaxGym result (``evaluate_suite``'s JSON plus the words the model's
    vocabulary does not know (``suite_unknown_words``), the tokenisation warnings and the scoring
    method), in the order given. Every suite is read and checked before the model scores any. With
    ``workers`` > 1 the suites are scored in that many processes, each with its share of the CPU
    threads (same results: each suite is scored as alone)."""
    from syntaxlm.eval.syntaxgym import load_suite

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers > 1 and scorer.model.device.type != "cpu":
        raise ValueError(
            f"workers share the CPU's threads; a model on {scorer.model.device.type} scores in one process"
        )
    suites = [load_suite(path) for path in suite_paths]
    if workers == 1 or len(suites) < 2:
        for path, suite in zip(suite_paths, suites, strict=True):
            yield path, _suite_result(scorer, suite, progress)
        return
    from tqdm import tqdm

    with cpu_pool(min(workers, len(suites)), setup=_keep_worker_scorer, setup_args=(scorer,)) as pool:
        done = pool.map(_score_suite_in_worker, suites)
        for path, result in tqdm(
            zip(suite_paths, done), total=len(suites), desc="suites", unit="suite", disable=not progress
        ):
            yield path, result


def _suite_result(scorer, suite, progress: bool) -> dict:
    from syntaxlm.eval.scorers import syntaxgym_scorer
    from syntaxlm.eval.syntaxgym import evaluate_suite, suite_region_values, suite_unknown_words
    from syntaxlm.inference.sentences import unknown_words

    token_scorer, convention = syntaxgym_scorer(scorer)
    values = suite_region_values(suite, token_scorer, convention, progress=progress)
    unknown = suite_unknown_words(suite, functools.partial(unknown_words, scorer.model.vocab))
    options = {"method": scorer.method} | beam_options(scorer)
    result = evaluate_suite(suite, values).to_json()
    return {**result, **unknown, "warnings": values.warnings, **options}


_worker_scorer = None  # the scorer of a suite worker process (``suite_results``)


def _keep_worker_scorer(scorer) -> None:
    global _worker_scorer
    _worker_scorer = scorer


def _score_suite_in_worker(suite) -> dict:
    return _suite_result(_worker_scorer, suite, False)


def _tree_words(tree) -> list[str]:
    """The words of a constituency ``Tree`` or a dependency ``DepTree``."""
    return list(tree.words) if hasattr(tree, "heads") else tree.leaves()


def evaluate_model(
    model_folder: str | Path,
    out: str | Path,
    *,
    test: str | Path | None = None,
    suites: Sequence[Path] = (),
    blimp: str | Path | None = None,
    settings: EvalSettings = EvalSettings(),
    parser: str | Path | None = None,
    progress: bool = False,
) -> dict[str, Path]:
    """Evaluate a saved model and write one result file per evaluation into ``out``:

    - ``perplexity.json``: perplexity on the test sentences in each convention, labelled
      (``perplexity_per_word``: TG/Qian et al.; ``perplexity_per_token``: the end of sentence
      counted as a token), exact for words-only models; for joint models the scorer's
      marginalisation, recorded with its bound; with the context each test tree (a sentence, or a
      document as one ``(DOC ...)`` tree) was read in (``context_summary``);
    - ``parseval.json``: EVALB (COLLINS.prm) F1 of the beam's best trees, for joint models on a
      constituency test set (one beam search gives both);
    - ``uf1.json``: unsupervised F1 of the induced trees, for models that induce them;
    - with a proposal ``parser`` (a saved parser folder), for joint models on a constituency test
      set: ``perplexity-importance.json``, the importance-sampled perplexity over
      ``settings.proposal_samples`` draws per sentence with the sum over as many different trees
      sampled without replacement beside it (``proposal_perplexity``), and
      ``parseval-rerank.json``, the EVALB F1 of the tree of highest ``p(x, y)`` among them
      (reranking, TG §3.2);
    - ``sg/SUITE.json``: per SyntaxGym suite;
    - ``blimp.json``: with ``blimp`` (a BLiMP data folder), the accuracy on its 10% subset of Qian et
      al. 2021 (the first 100 pairs of each paradigm) with the words the vocabulary does not know.

    For the proposal parser (``models.span_parser``): ``parseval.json`` of its Viterbi trees on a
    constituency test set, nothing else. Returns the written files by name.
    """
    from syntaxlm.data.treebank import read_treebank, treebank_kind
    from syntaxlm.eval.parseval import evaluate_parses, with_gold_tags
    from syntaxlm.eval.perplexity import perplexity
    from syntaxlm.eval.uf1 import WORD_TAGS, evaluate_uf1
    from syntaxlm.inference import Scorer, perplexity_logprobs
    from syntaxlm.models import SyntacticLM, load_model, scoring_device
    from syntaxlm.trees.clean import PTB_CLEANING
    from syntaxlm.trees.ptb import TreeReader

    model_folder, out = Path(model_folder), Path(out)
    model = load_model(model_folder, map_location=scoring_device(settings.device))
    if not isinstance(model, SyntacticLM):  # the proposal parser: its trees' F1 only
        return _parser_results(model, model_folder, out, test, settings)
    scorer = Scorer(
        model,
        beam=settings.beam,
        context=settings.context,
        batch_size=settings.batch_size,
        progress=progress,
    )
    weights = {"model": model_folder / "model.safetensors"}
    written: dict[str, Path] = {}
    if test is not None:
        test = Path(test)
        trees = read_treebank(test)[: settings.test_sentences]
        words = [_tree_words(tree) for tree in trees]
        scores = scorer.score(words)
        logprobs, ends, marginalisation = perplexity_logprobs(scorer, words, scores=scores)
        options = {"test_sentences": len(words)}
        written["perplexity"] = write_result(
            out / "perplexity.json",
            result_record(
                "perplexity",
                perplexity(logprobs, ends, marginalisation=marginalisation).to_json(),
                inputs={"data": test, **weights},
                options=options | {"context": marginalisation["context"]},
            ),
        )
        constituency = treebank_kind(test) == "constituency"
        if scorer.joint and constituency and scorer.method == "beam":
            gold = _gold_trees(TreeReader(test), words, test)
            parses = [
                None if s.tree is None else with_gold_tags(s.tree, g, sentence=i)
                for i, (s, g) in enumerate(zip(scores, gold, strict=True))
            ]
            result = evaluate_parses(gold, parses)
            written["parseval"] = write_result(
                out / "parseval.json",
                result_record(
                    "parseval",
                    result.to_json(),
                    inputs={"gold": test, **weights},
                    options=options | beam_options(scorer) | {"parses": "the beam's best tree"},
                ),
            )
        if parser is not None and scorer.joint and constituency:
            written |= _proposal_results(
                model, Path(parser), words, test, out, weights, options, settings, progress
            )
        if model.induces_trees and constituency:
            # As the PRPN authors: the model parses the scored words only (no punctuation, §6.3).
            gold = _gold_trees(TreeReader(test, cleaning=PTB_CLEANING), words, test)
            scored = [[word for word, tag in tree.pos() if tag in WORD_TAGS] for tree in gold]
            gold = [tree for tree, kept in zip(gold, scored, strict=True) if kept]
            induced = model.induced_trees([kept for kept in scored if kept], batch_size=settings.batch_size)
            written["uf1"] = write_result(
                out / "uf1.json",
                result_record(
                    "uf1",
                    evaluate_uf1(gold, predicted=induced).to_json(),
                    inputs={"gold": test, **weights},
                    options=options,
                ),
            )
    for path, result in suite_results(scorer, suites, progress=progress):
        written[f"sg/{path.stem}"] = write_result(
            out / "sg" / f"{path.stem}.json",
            result_record(
                "syntaxgym", result, inputs={"suite": path, **weights}, options={"method": result["method"]}
            ),
        )
    if blimp is not None:
        from syntaxlm.eval.blimp import blimp_10_percent, read_blimp
        from syntaxlm.eval.scorers import model_blimp

        pairs = blimp_10_percent(read_blimp(blimp))
        result = model_blimp(scorer, pairs, batch_size=settings.batch_size * 4, progress=progress)
        written["blimp"] = write_result(
            out / "blimp.json",
            result_record(
                "blimp",
                result.to_json(),
                inputs={"data": Path(blimp), **weights},
                options={"ten_percent": True, "method": scorer.method} | beam_options(scorer),
            ),
        )
    return written


IMPORTANCE_BOUND = (
    "estimate (importance sampling over the parser's samples: consistent; high for few samples)"
)


@dataclass(frozen=True)
class ProposalEvaluation:
    """A joint model's perplexity over trees drawn from a proposal parser (``proposal_perplexity``):
    the result record's ``result``, its text, and the scored sentences (their best proposal is
    the reranked parse)."""

    result: dict[str, Any]
    text: str
    scores: list


def proposal_perplexity(
    model,
    parser,
    sentences: Sequence[Sequence[str]],
    *,
    samples: int = 300,
    seed: int = 0,
    beam: BeamSettings | None = PAPER_BEAM,
    batch_size: int = 32,
    progress: bool = False,
) -> ProposalEvaluation:
    """A joint model's word perplexity the TG paper's way, from ``samples`` trees per sentence
    drawn from ``parser`` (§3.1): the importance-sampling estimate of ``p(x)`` with its spread over
    draws (``inference.importance``; the result's headline numbers), the sum over ``samples``
    different trees sampled without replacement (``proposal_bound``: the paper's lower bound on
    ``p(x)``), and, unless ``beam`` is
    ``None``, the beam's marginal on the same sentences (``beam``: also a lower bound). All three
    use the model's own distribution, as trained (the beam without its renormalisation over valid
    actions), so that they estimate the same ``p(x)``. ``samples`` is at least ``GROUPS``
    (``InferenceError`` else: the spread over draws comes from that many groups of each sentence's
    draws); sizes that would not fit in memory, the beam's too, are refused before any work
    (``SizeError``)."""
    from syntaxlm.eval.perplexity import perplexity
    from syntaxlm.inference import InferenceError, Scorer, perplexity_logprobs
    from syntaxlm.inference.beam import check_beam_size
    from syntaxlm.inference.grammar import ActionSpace
    from syntaxlm.inference.importance import GROUPS, importance_perplexity, reliability_warnings

    if samples < GROUPS:
        raise InferenceError(
            f"samples must be at least {GROUPS}, got {samples}: the spread over draws comes from "
            f"{GROUPS} independent groups of each sentence's samples"
        )
    scorer = Scorer(
        model, method="proposals", parser=parser, samples=samples, seed=seed, batch_size=batch_size,
        progress=progress,
    )  # fmt: skip
    if beam is not None:  # checked now, not after the proposals' work
        space = ActionSpace(model.action_grammar(), max_open=beam.max_open, max_openers=beam.max_openers)
        check_beam_size(model, space, beam, min(batch_size, len(sentences)))
    scores = scorer.score(sentences)
    logprobs, ends, marginalisation = perplexity_logprobs(scorer, sentences, scores=scores)
    bound = perplexity(logprobs, ends, marginalisation=marginalisation)
    estimate = importance_perplexity(scores)
    result = estimate.to_json() | {
        "marginalisation": marginalisation
        | {"method": "importance-sampling", "perplexity": IMPORTANCE_BOUND},
        "proposal_bound": bound.to_json(),
    }
    lines = [
        estimate.render(),
        (
            f"sum over {samples} different trees sampled without replacement (TG §3.1, a lower bound "
            f"on p(x)): {bound.render()}"
        ),
    ]
    upper_bounds = {f"sum over {samples} different trees": bound.per_word}
    if beam is not None:  # over the model's own distribution, as the two above
        searcher = Scorer(
            model, method="beam", beam=beam, renormalise=False, batch_size=batch_size, progress=progress
        )
        logprobs, ends, marginalisation = perplexity_logprobs(searcher, sentences)
        searched = perplexity(logprobs, ends, marginalisation=marginalisation)
        result["beam"] = searched.to_json()
        lines.append(f"beam marginal (a lower bound on p(x)): {searched.render()}")
        upper_bounds["beam marginal"] = searched.per_word
    result["warnings"] = reliability_warnings(estimate, upper_bounds)
    lines += [f"warning: {warning}" for warning in result["warnings"]]
    return ProposalEvaluation(result, "\n".join(lines), scores)


def _parser_results(parser, folder: Path, out: Path, test, settings: EvalSettings) -> dict[str, Path]:
    """``evaluate_model`` for the proposal parser: EVALB F1 of its best trees on ``test``."""
    from syntaxlm.data.treebank import read_treebank, treebank_kind
    from syntaxlm.eval.parseval import evaluate_parses, with_gold_tags
    from syntaxlm.trees.ptb import TreeReader

    if test is None or treebank_kind(test) != "constituency":
        return {}
    test = Path(test)
    words = [_tree_words(tree) for tree in read_treebank(test)[: settings.test_sentences]]
    gold = _gold_trees(TreeReader(test), words, test)
    best = parser.parse(words, batch_size=settings.batch_size)
    parses = [with_gold_tags(trees[0].tree, g, sentence=i) for i, (trees, g) in enumerate(zip(best, gold))]
    record = result_record(
        "parseval",
        evaluate_parses(gold, parses).to_json(),
        inputs={"gold": test, "model": folder / "model.safetensors"},
        options={"test_sentences": len(words), "parses": "the parser's best tree (Viterbi)"},
    )
    return {"parseval": write_result(out / "parseval.json", record)}


def _proposal_results(
    model, parser: Path, words, test: Path, out: Path, weights, options, settings, progress
):
    """``perplexity-importance.json`` and ``parseval-rerank.json`` of ``evaluate_model``."""
    from syntaxlm.eval.parseval import evaluate_parses, with_gold_tags
    from syntaxlm.models import load_parser
    from syntaxlm.trees.ptb import TreeReader

    samples = settings.proposal_samples
    proposer = load_parser(parser, map_location=str(model.device))
    evaluation = proposal_perplexity(
        model, proposer, words, samples=samples, beam=None, batch_size=settings.batch_size, progress=progress
    )
    inputs = {"data": test, **weights, "parser": parser / "model.safetensors"}
    drawn = {"proposal_samples": samples, "proposal_seed": 0}
    written = {
        "perplexity-importance": write_result(
            out / "perplexity-importance.json",
            result_record(
                "perplexity", evaluation.result, inputs=inputs,
                options=options | drawn | {"method": "importance-sampling"},
            ),
        )
    }  # fmt: skip
    gold = _gold_trees(TreeReader(test), words, test)
    parses = [with_gold_tags(s.tree, g, sentence=i) for i, (s, g) in enumerate(zip(evaluation.scores, gold))]
    written["parseval-rerank"] = write_result(
        out / "parseval-rerank.json",
        result_record(
            "parseval", evaluate_parses(gold, parses).to_json(), inputs={"gold": test, **inputs},
            options=options | drawn
            | {"parses": f"the best of {samples} different parser samples under the model (reranked)"},
        ),
    )  # fmt: skip
    return written


def context_summary(marginalisation: Mapping[str, Any]) -> str:
    """What a perplexity result's sequences saw, in words, from its ``marginalisation``."""
    method = marginalisation.get("method", "?")
    if marginalisation.get("context") == "full":
        return f"by {method}, read with full context (each token sees the whole sequence before it)"
    if marginalisation.get("segment_length") is None:
        return f"by {method}, read as trained (the whole sequence before each token)"
    return (
        f"by {method}, read as trained: segments of {marginalisation['segment_length']} tokens, "
        f"{marginalisation['memory_length']} memory slots ({marginalisation['memory']} memory)"
    )


def _gold_trees(reader, words: Sequence[Sequence[str]], path: Path) -> list:
    """The trees of ``reader`` for the scored sentences ``words`` (the first trees of the file),
    checked to have the same number of words (traces aside) as the sentence the model scored."""
    gold = []
    for index, tree in enumerate(reader):
        if index == len(words):
            break
        n_words = sum(1 for _, tag in tree.pos() if tag != "-NONE-")
        if n_words != len(words[index]):
            raise InputFormatError(
                f"{n_words} words in the tree with POS tags, {len(words[index])} in the sentence scored",
                path=path,
                sentence=index,
                expected="trees that keep their words after cleaning (no trace-only trees)",
            )
        gold.append(tree)
    if len(gold) != len(words):
        raise InputFormatError(f"{len(gold)} trees for {len(words)} scored sentences", path=path)
    return gold


# --- reproduction ---------------------------------------------------------------------------------


def recipe_with_data(
    recipe: Path, data: Path | None, overrides: Sequence[str] = (), *, seed: int | None = None
):
    """The recipe's ``RunConfig`` with its treebank files looked up in ``data`` (by their file
    names: ``data/ptb/train.trees`` becomes ``DATA/train.trees``), then ``overrides`` applied."""
    from syntaxlm.files import read_text
    from syntaxlm.train.config import apply_overrides, parse_yaml, run_config

    document = parse_yaml(read_text(recipe, InputFormatError), where=str(recipe)) or {}
    section = document.get("data") or {}
    roles = [role for role in ("train", "valid", "test") if section.get(role)]
    if data is not None:
        if not Path(data).is_dir():
            raise FileNotFoundError(f"{data}: no such data folder")
        if section.get("synthetic") is not None:
            raise ConfigError(f"{recipe} trains on the synthetic treebank; it reads no --data")
        for role in roles:
            section[role] = str(Path(data) / Path(section[role]).name)
    changes = list(overrides) + ([f"train.seed={json.dumps(seed)}"] if seed is not None else [])
    apply_overrides(document, changes)
    if data is not None:  # checked after the overrides, which may name other files
        missing = [
            str(document["data"][role])
            for role in roles
            if document["data"].get(role) and not Path(document["data"][role]).is_file()
        ]
        if missing:
            raise ConfigError(
                f"{data}: missing {', '.join(missing)} (the file names {recipe.name} reads); give other "
                "files with --set data.train=PATH and so on"
            )
    where = str(recipe) + (f" (with {', '.join(changes)})" if changes else "")
    return run_config(document, where=where)


DATA_ROLES = (("train", "train"), ("valid", "dev"), ("test", "test"))  # recipe key, split


def recipe_on_splits(
    recipe_name: str | Path,
    splits: Mapping[str, Path],
    *,
    train: Mapping[str, Any],
    overrides: Sequence[str] = (),
    seed: int | None = None,
):
    """The recipe's ``RunConfig`` reading the treebank files ``splits`` (``train``, ``dev``,
    ``test``: those given), with ``train.KEY`` set to each value of ``train`` and then the
    ``KEY=VALUE`` ``overrides`` applied."""
    changes = [
        f"data.{role}={json.dumps(str(splits[split]))}" for role, split in DATA_ROLES if split in splits
    ]
    changes += [f"train.{key}={json.dumps(value)}" for key, value in train.items()]
    return recipe_with_data(find_recipe(recipe_name), None, [*changes, *overrides], seed=seed)


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


# --- reading times ----------------------------------------------------------------------------------


@dataclass
class ReadingTimes:
    """What ``eval rt`` computed: the corpus, each model's surprisal per token, the exclusions and
    the result (``eval.reading_regression.reading_times_result``), with its inputs and options."""

    corpus: Any
    surprisals: dict[str, Any]
    excluded: Any
    result: dict[str, Any]
    inputs: dict[str, Path]
    options: dict[str, Any]


def model_name(folder: str | Path) -> str:
    """A saved model's name: its run folder's (``runs/tg/best`` is ``tg``), else its own folder's."""
    folder = Path(folder)
    return folder.parent.name if folder.name in ("best", "last") and folder.parent.name else folder.name


def run_perplexity(folder: str | Path, given: str | Path | None = None) -> dict[str, Any] | None:
    """The test perplexity of a saved model for ``eval rt``'s figure: from the result file ``given``,
    else from ``RUN/results/perplexity.json`` of its run folder when there is one (``None`` when not):
    the per-word perplexity, how it was obtained and of which data."""
    from syntaxlm.results import read_checked_result

    folder = Path(folder)
    run = folder.parent if folder.name in ("best", "last") else folder
    path = Path(given) if given is not None else run / "results" / "perplexity.json"
    if given is None and not path.is_file():
        return None
    record = read_checked_result(path)
    if record["kind"] != "perplexity":
        raise InputFormatError(
            f"a {record['kind']} result", path=path, expected="a perplexity result (eval ppl --out)"
        )
    result = record["result"]
    value = result.get("perplexity_per_word", result.get("perplexity"))
    marginalisation, options = result.get("marginalisation") or {}, record.get("options") or {}
    method = marginalisation.get("method") or options.get("method") or "method not recorded"
    data = ((record.get("inputs") or {}).get("data") or {}).get("path")
    return {"per_word": value, "method": method, "data": data, "path": str(path)}


def reading_time_evaluation(
    corpus_path: str | Path,
    model_folders: Sequence[str | Path],
    *,
    stories: Sequence[str] | None = None,
    predictors: Sequence[str] = (),
    method: str = "auto",
    beam: BeamSettings = PAPER_BEAM,
    context: str = "auto",
    rt_range: tuple[float, float] = (100.0, 3000.0),
    spillover: int = 2,
    folds: int = 10,
    seed: int = 0,
    keep_unknown: bool = False,
    perplexities: Sequence[str | Path | None] | None = None,
    batch_size: int = 16,
    progress: bool = False,
    on_scorer: Callable[[Any, list[list[str]]], None] | None = None,
) -> ReadingTimes:
    """``syntaxlm eval rt``: each model's surprisal along the corpus's stories, its predictive power
    for the reading times (ΔLL, ``eval.reading_regression``) and the per-token table
    (docs/reading-times.md). ``method`` is for the joint models (``"auto"``: the beam search with
    ``beam``; ``"gold"``: along the corpus's trees); words-only models are always scored exactly.
    ``perplexities``: a perplexity result file per model (``None``: its run's
    ``results/perplexity.json`` where there is one), for the figure. ``on_scorer`` sees each scorer
    and the sentences it is about to score (the CLI's time estimate)."""
    from syntaxlm.eval.reading_regression import reading_times_result
    from syntaxlm.eval.reading_regression import check_regression_sizes
    from syntaxlm.eval.reading_times import read_reading_corpus, token_surprisals
    from syntaxlm.eval.scorers import story_context, story_surprisals
    from syntaxlm.inference import Scorer
    from syntaxlm.inference.grammar import InferenceError
    from syntaxlm.models import load_language_model

    if perplexities is not None and len(perplexities) != len(model_folders):
        raise ValueError(f"{len(perplexities)} perplexity files for {len(model_folders)} models")
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    corpus = read_reading_corpus(corpus_path, stories=stories, predictors=predictors)
    seconds["read corpus"] = round(time.perf_counter() - began, 1)
    check_regression_sizes(len(corpus.tokens), spillover=spillover, folds=folds)  # before any scoring
    sentences = [list(sentence.words) for sentence in corpus.sentences]
    story_words = [[w for s in story for w in sentences[s]] for story in corpus.story_sentences()]
    names: list[str] = []
    surprisals: dict[str, Any] = {}
    models: dict[str, dict[str, Any]] = {}
    inputs: dict[str, Path] = dict(corpus.inputs)
    for k, folder in enumerate(model_folders):
        name = model_name(folder)
        name = name if name not in names else f"{name} #{names.count(name) + 1}"
        names.append(name)
        began = time.perf_counter()
        loaded = load_language_model(folder)
        settings = {"beam": beam, "batch_size": batch_size, "progress": progress}
        scorer = Scorer(loaded, **settings)
        if method != "auto" and scorer.joint:  # words-only models: always exact
            scorer = Scorer(loaded, method=method, **settings)
        trees = None
        if scorer.method == "gold":
            trees = [sentence.tree for sentence in corpus.sentences]
            if any(tree is None for tree in trees):
                raise InferenceError(
                    "method 'gold' needs the corpus's trees: Natural Stories has them, a TSV not"
                )
        read_as, why = story_context(scorer, story_words, context)
        if on_scorer is not None:
            on_scorer(scorer, story_words if read_as == "document" else sentences)
        bits, unknown, unscored = story_surprisals(
            scorer, sentences, corpus.story_sentences(), context=read_as, trees=trees
        )
        surprisals[name] = token_surprisals(corpus, bits, unknown)
        seconds[f"score {name}"] = round(time.perf_counter() - began, 1)
        given = None if perplexities is None else perplexities[k]
        models[name] = {
            "model": str(folder),
            "family": scorer.model.config.model,
            "method": scorer.method,
            **beam_options(scorer),
            "context": read_as,
            "context_reason": why,
            "perplexity": run_perplexity(folder, given),
            "unscored_sentences": [
                {"sentence": s, "first_token": corpus.tokens[corpus.sentences[s].word_token[0]].code}
                | {"why": reason}
                for s, reason in unscored.items()
            ],
        }
        inputs[f"model:{name}"] = Path(folder) / "model.safetensors"
    began = time.perf_counter()
    options = {
        "rt_range": rt_range,
        "spillover": spillover,
        "folds": folds,
        "seed": seed,
        "keep_unknown": keep_unknown,
    }
    result, excluded = reading_times_result(corpus, surprisals, models, **options)
    seconds["regression"] = round(time.perf_counter() - began, 1)
    result["seconds"] = seconds
    recorded = {"method": method, "context": context, "stories": list(stories) if stories else None}
    return ReadingTimes(corpus, surprisals, excluded, result, inputs, recorded | options)


def reading_time_outputs(out: str | Path) -> tuple[Path, Path]:
    """Beside ``eval rt``'s result file ``OUT.json``: the per-token table ``OUT.tokens.tsv`` and the
    figure ``OUT.png``."""
    out = Path(out)
    stem = out.with_suffix("") if out.suffix == ".json" else out
    return stem.with_name(stem.name + ".tokens.tsv"), stem.with_name(stem.name + ".png")


def write_reading_times(evaluation: ReadingTimes, out: str | Path) -> list[Path]:
    """Write the result file ``out``, the per-token table and, when models have perplexities, the
    figure of ΔLL against perplexity (``reading_time_outputs``), each atomically; returns their paths."""
    from syntaxlm.eval.intervals import Interval
    from syntaxlm.eval.reading_times import token_table_rows
    from syntaxlm.files import atomic_writer

    table, figure_path = reading_time_outputs(out)
    record = result_record(
        "reading_times", evaluation.result, inputs=evaluation.inputs, options=evaluation.options
    )
    write_result(out, record)
    with atomic_writer(table) as handle:
        for row in token_table_rows(evaluation.corpus, evaluation.surprisals, evaluation.excluded):
            handle.write("\t".join(cell.replace("\t", " ") for cell in row) + "\n")
    written = [Path(out), table]
    points = {
        entry["name"]: (entry["perplexity"], Interval(**entry["interval"]))
        for entry in evaluation.result["models"]
        if entry.get("perplexity") and entry["perplexity"].get("per_word") is not None
    }
    if points:
        from syntaxlm.report.plots import delta_loglik_vs_perplexity_figure, save_figure

        methods = {p["method"] for p, _ in points.values()}
        named = {
            (f"{name} ({p['method']})" if len(methods) > 1 else name): (p["per_word"], interval)
            for name, (p, interval) in points.items()
        }
        xlabel = "test perplexity per word" + (f" ({methods.pop()})" if len(methods) == 1 else "")
        corpus = evaluation.result["corpus"]
        title = f"surprisal and reading times ({corpus})"
        figure = delta_loglik_vs_perplexity_figure(named, xlabel=xlabel, title=title)
        written.append(save_figure(figure, figure_path))
    return written
