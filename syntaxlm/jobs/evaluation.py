"""Evaluate a saved model (``evaluate_model``): each evaluation of a run a result file in its
``results/`` folder, as the quickstart, the learning curve and ``reproduce`` evaluate their runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from syntaxlm.errors import InputFormatError
from syntaxlm.inference.beam import PAPER_BEAM, BeamSettings
from syntaxlm.jobs.perplexity import perplexity_evaluation, proposal_perplexity
from syntaxlm.jobs.suites import beam_options, suite_results
from syntaxlm.results import result_record, write_result


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
      document as one ``(DOC ...)`` tree) was read in (``context_summary``); the record
      ``syntaxlm eval ppl --out`` writes (``jobs.perplexity.perplexity_evaluation``);
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
    from syntaxlm.inference import Scorer
    from syntaxlm.models import SyntacticLM, load_model, scoring_device

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
    written: dict[str, Path] = {}
    if test is not None:
        written |= _test_results(scorer, model_folder, Path(test), out, settings, parser, progress)
    weights = {"model": model_folder / "model.safetensors"}
    for path, result in suite_results(scorer, suites, progress=progress):
        options = {"method": result["method"]}
        record = result_record("syntaxgym", result, inputs={"suite": path, **weights}, options=options)
        written[f"sg/{path.stem}"] = write_result(out / "sg" / f"{path.stem}.json", record)
    if blimp is not None:
        written["blimp"] = _blimp_result(scorer, weights, Path(blimp), out, settings, progress)
    return written


def _test_results(
    scorer, model_folder: Path, test: Path, out: Path, settings: EvalSettings, parser, progress: bool
) -> dict[str, Path]:
    """``evaluate_model``'s results on the test treebank: perplexity, the beam's parses, the
    proposal parser's perplexity and reranked parses, the induced trees' UF1."""
    from syntaxlm.data.treebank import read_treebank, treebank_kind
    from syntaxlm.eval.parseval import evaluate_parses, with_gold_tags
    from syntaxlm.trees.ptb import TreeReader

    every = [_tree_words(tree) for tree in read_treebank(test)]
    evaluation = perplexity_evaluation(
        scorer, every, data=test, model_folder=model_folder, limit=settings.test_sentences
    )
    written = {"perplexity": write_result(out / "perplexity.json", evaluation.record())}
    words = every[: settings.test_sentences]
    weights = {"model": model_folder / "model.safetensors"}
    options = {"test_sentences": len(words)}
    constituency = treebank_kind(test) == "constituency"
    if scorer.joint and constituency and scorer.method == "beam":
        gold = _gold_trees(TreeReader(test), words, test)
        parses = [
            None if s.tree is None else with_gold_tags(s.tree, g, sentence=i)
            for i, (s, g) in enumerate(zip(evaluation.scores, gold, strict=True))
        ]
        record = result_record(
            "parseval",
            evaluate_parses(gold, parses).to_json(),
            inputs={"gold": test, **weights},
            options=options | beam_options(scorer) | {"parses": "the beam's best tree"},
        )
        written["parseval"] = write_result(out / "parseval.json", record)
    if parser is not None and scorer.joint and constituency:
        written |= _proposal_results(
            scorer.model, model_folder, Path(parser), every, test, out, settings, progress
        )
    if scorer.model.induces_trees and constituency:
        written["uf1"] = _uf1_result(scorer.model, words, test, out, weights, options, settings)
    return written


def _uf1_result(model, words, test: Path, out: Path, weights, options, settings: EvalSettings) -> Path:
    """``uf1.json`` of ``evaluate_model``: the model's induced trees of the scored words only (no
    punctuation, as the PRPN authors, §6.3)."""
    from syntaxlm.eval.uf1 import WORD_TAGS, evaluate_uf1
    from syntaxlm.trees.clean import PTB_CLEANING
    from syntaxlm.trees.ptb import TreeReader

    gold = _gold_trees(TreeReader(test, cleaning=PTB_CLEANING), words, test)
    scored = [[word for word, tag in tree.pos() if tag in WORD_TAGS] for tree in gold]
    gold = [tree for tree, kept in zip(gold, scored, strict=True) if kept]
    induced = model.induced_trees([kept for kept in scored if kept], batch_size=settings.batch_size)
    record = result_record(
        "uf1",
        evaluate_uf1(gold, predicted=induced).to_json(),
        inputs={"gold": test, **weights},
        options=options,
    )
    return write_result(out / "uf1.json", record)


def _blimp_result(scorer, weights, blimp: Path, out: Path, settings: EvalSettings, progress: bool) -> Path:
    """``blimp.json`` of ``evaluate_model``: the 10% subset of Qian et al. 2021."""
    from syntaxlm.eval.blimp import blimp_10_percent, read_blimp
    from syntaxlm.eval.scorers import model_blimp

    pairs = blimp_10_percent(read_blimp(blimp))
    result = model_blimp(scorer, pairs, batch_size=settings.batch_size * 4, progress=progress)
    record = result_record(
        "blimp",
        result.to_json(),
        inputs={"data": blimp, **weights},
        options={"ten_percent": True, "method": scorer.method} | beam_options(scorer),
    )
    return write_result(out / "blimp.json", record)


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
    model, model_folder: Path, parser: Path, every, test: Path, out: Path, settings: EvalSettings, progress
) -> dict[str, Path]:
    """``perplexity-importance.json`` and ``parseval-rerank.json`` of ``evaluate_model``, on the
    first ``settings.test_sentences`` of the test sentences ``every``."""
    from syntaxlm.eval.parseval import evaluate_parses, with_gold_tags
    from syntaxlm.models import load_parser
    from syntaxlm.trees.ptb import TreeReader

    samples = settings.proposal_samples
    proposer = load_parser(parser, map_location=str(model.device))
    evaluation = proposal_perplexity(
        model, proposer, every, data=test, model_folder=model_folder, parser_folder=parser,
        limit=settings.test_sentences, samples=samples, beam=None, batch_size=settings.batch_size,
        progress=progress,
    )  # fmt: skip
    words = every[: settings.test_sentences]
    written = {
        "perplexity-importance": write_result(out / "perplexity-importance.json", evaluation.record())
    }
    gold = _gold_trees(TreeReader(test), words, test)
    parses = [with_gold_tags(s.tree, g, sentence=i) for i, (s, g) in enumerate(zip(evaluation.scores, gold))]
    drawn = {"proposal_samples": samples, "proposal_seed": 0}
    parses_are = f"the best of {samples} different parser samples under the model (reranked)"
    record = result_record(
        "parseval",
        evaluate_parses(gold, parses).to_json(),
        inputs={"gold": test, **evaluation.inputs},
        options={"test_sentences": len(words)} | drawn | {"parses": parses_are},
    )
    written["parseval-rerank"] = write_result(out / "parseval-rerank.json", record)
    return written


def _tree_words(tree) -> list[str]:
    """The words of a constituency ``Tree`` or a dependency ``DepTree``."""
    return list(tree.words) if hasattr(tree, "heads") else tree.leaves()


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
