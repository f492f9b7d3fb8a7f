"""The span CRF parser and what it proposes: binary readings of trees, the chart algorithms against
brute-force enumeration, the trained parser's trees and files, importance sampling with an exact
posterior, and reranking with an oracle model."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.synthetic import SyntheticTreebank
from syntaxlm.errors import SyntaxlmError, TreeError
from syntaxlm.inference import proposal_scores, rerank
from syntaxlm.inference.importance import (
    ImportanceResult,
    ProposalDraw,
    importance_perplexity,
    reliability_warnings,
    sentence_estimate,
    with_draws,
)
from syntaxlm.inference.marginal import NO_POS_TAGS_HEADER, gold_scores
from syntaxlm.models import build_model, load_model, model_class, model_config
from syntaxlm.models.decoding import Decoder
from syntaxlm.models.span_chart import inside, kbest_trees, sample_trees, tree_scores
from syntaxlm.models.span_parser import SpanParser
from syntaxlm.structure.actions import encode_actions, tree_to_actions
from syntaxlm.structure.spans import NO_LABEL, Span, SpanLabels, binary_spans, tree_from_spans
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, write_trees
from syntaxlm.trees.tree import Tree

PROJECT_ROOT = Path(__file__).resolve().parents[1]
LABELS = 3  # score columns in the brute-force tests: NO_LABEL and two chain labels


# --- binary readings -----------------------------------------------------------------------------------


def test_binary_reading_of_unary_chains_bare_words_and_wide_nodes():
    tree = Tree.from_bracket("(S (NP he) (VP (VP sees) (NP the big dog) (PP at (NP home))) .)")
    labels = SpanLabels.of_trees([tree])
    spans = binary_spans(tree, labels)
    assert len(spans) == 2 * len(tree.leaves()) - 1
    by_span = {(s.start, s.end): s.label for s in spans}
    assert labels.chain(by_span[0, 1]) == ("NP",)  # a word alone under a phrase
    assert by_span[5, 6] == NO_LABEL  # "dog" shares its NP with other words
    assert by_span[1, 8] == NO_LABEL  # S's children after the first, binarised to the right
    assert tree_from_spans(tree.leaves(), spans, labels) == tree
    chain = Tree.from_bracket("(S (VP (VP go) (ADVP now)))")
    chain_labels = SpanLabels.of_trees([chain])
    assert ("S", "VP") in chain_labels.chains
    assert tree_from_spans(chain.leaves(), binary_spans(chain, chain_labels), chain_labels) == chain


def test_every_synthetic_tree_reads_back_and_unlabelled_nodes_are_right_children(corpus):
    _, trees, _ = corpus
    labels = SpanLabels.of_trees(trees)
    for tree in trees:
        spans = binary_spans(tree, labels)
        assert tree_from_spans(tree.leaves(), spans, labels) == tree
        assert spans[0].label != NO_LABEL  # the root
        nodes = {(s.start, s.end): s.label for s in spans}
        for i, j in nodes:
            if j - i > 1:
                k = next(k for k in range(i + 1, j) if (i, k) in nodes and (k, j) in nodes)
                assert k - i == 1 or nodes[i, k] != NO_LABEL  # a wide left child is labelled


def test_a_chain_the_labels_lack_and_spans_that_are_no_tree_are_errors(tmp_path):
    labels = SpanLabels([("NP",)])
    with pytest.raises(TreeError, match="VP"):
        binary_spans(Tree.from_bracket("(NP a (VP b))"), labels)
    with pytest.raises(TreeError, match="root"):
        tree_from_spans(["a"], [Span(0, 1, NO_LABEL)], labels)
    with pytest.raises(TreeError, match="not a binary tree"):
        tree_from_spans(["a", "b"], [Span(0, 2, 1), Span(0, 1, 0)], labels)
    labels.save(tmp_path)
    assert SpanLabels.load(tmp_path) == labels
    (tmp_path / "labels.json").write_text('{"chains": [["NP"], ["NP"]]}')
    with pytest.raises(Exception, match="labels.json"):
        SpanLabels.load(tmp_path)


# --- the charts against brute force --------------------------------------------------------------------


def all_trees(n: int, columns: int = LABELS) -> list[list[Span]]:
    """Every binary tree over ``n`` words with ``columns`` score columns that a reading can be: the
    root and every left child of more than one word labelled (1 ..), the others anything."""

    def shapes(i, j):
        if j - i == 1:
            yield [(i, j, "any")]
            return
        for k in range(i + 1, j):
            for left in shapes(i, k):
                for right in shapes(k, j):
                    yield [(i, j, "any"), *([(i, k, "lab")] + left[1:] if k - i > 1 else left), *right]

    out = []
    for shape in shapes(0, n):
        shape = [(0, n, "lab"), *shape[1:]]
        choices = [range(1, columns) if role == "lab" else range(columns) for _, _, role in shape]
        for labels in itertools.product(*choices):
            out.append([Span(i, j, c) for (i, j, _), c in zip(shape, labels)])
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_inside_gives_log_z_and_marginals_of_enumeration(n):
    torch.manual_seed(n)
    scores = torch.randn(1, n + 1, n + 1, LABELS, dtype=torch.float64, requires_grad=True)
    chart = inside(scores, torch.tensor([n]))
    trees = all_trees(n)
    assert len({tuple(sorted((s.start, s.end, s.label) for s in t)) for t in trees}) == len(trees)
    values = tree_scores(scores.expand(len(trees), -1, -1, -1), trees)
    assert float(chart.log_z[0].detach()) == pytest.approx(
        float(torch.logsumexp(values.detach(), 0)), abs=1e-9
    )
    (marginals,) = torch.autograd.grad(chart.log_z.sum(), scores)
    expected = torch.zeros_like(scores)
    for tree, p in zip(trees, torch.softmax(values.detach(), 0)):
        for span in tree:
            expected[0, span.start, span.end, span.label] += p
    assert torch.allclose(marginals, expected, atol=1e-9)
    best = kbest_trees(scores.detach(), torch.tensor([n]), 5)[0]
    top = torch.sort(values.detach(), descending=True).values[:5].tolist()
    assert [score for _, score in best] == pytest.approx(top[: len(best)], abs=1e-9)
    assert len(best) == min(5, len(trees))
    for spans, score in best:
        assert float(tree_scores(scores.detach(), [spans])[0]) == pytest.approx(score, abs=1e-9)


def test_a_padded_batch_gives_each_sentence_its_own_log_z():
    torch.manual_seed(0)
    scores = torch.randn(3, 6, 6, LABELS, dtype=torch.float64)
    lengths = torch.tensor([5, 2, 3])
    batch = inside(scores, lengths).log_z
    for b, n in enumerate(lengths.tolist()):
        alone = inside(scores[b : b + 1, : n + 1, : n + 1], torch.tensor([n])).log_z[0]
        assert float(batch[b]) == pytest.approx(float(alone), abs=1e-12)


def test_samples_follow_the_exact_distribution():
    """20,000 samples over a 3-word sentence's 270 trees: the chi-square statistic against the
    exact ``q`` stays below the 0.999 quantile (fixed seed), and each sample's ``log q`` is exact."""
    torch.manual_seed(3)
    n, draws = 3, 20_000
    scores = torch.randn(1, n + 1, n + 1, LABELS, dtype=torch.float64)
    trees = all_trees(n)
    key = lambda spans: tuple(sorted((s.start, s.end, s.label) for s in spans))
    log_z = float(inside(scores, torch.tensor([n])).log_z[0])
    values = tree_scores(scores.expand(len(trees), -1, -1, -1), trees) - log_z
    exact = {key(t): float(v) for t, v in zip(trees, values)}
    samples = sample_trees(scores, torch.tensor([n]), draws, [np.random.default_rng(0)])[0]
    counts: dict = {}
    for spans, logprob in samples:
        assert logprob == pytest.approx(exact[key(spans)], abs=1e-9)
        counts[key(spans)] = counts.get(key(spans), 0) + 1
    expected = {k: draws * math.exp(v) for k, v in exact.items()}
    chi2 = sum((counts.get(k, 0) - e) ** 2 / e for k, e in expected.items())
    df = len(trees) - 1
    # 0.999 quantile of chi-square(df), Wilson-Hilferty: df (1 - 2/(9 df) + z sqrt(2/(9 df)))^3
    bound = df * (1 - 2 / (9 * df) + 3.09 * math.sqrt(2 / (9 * df))) ** 3
    assert chi2 < bound, (chi2, bound)
    assert chi2 > df / 2  # not suspiciously exact either


# --- the trained parser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """160 short synthetic trees (of at most 12 words) in the view the models read."""
    folder = tmp_path_factory.mktemp("parser")
    generated = [tree for tree in SyntheticTreebank(seed=0).trees(600) if len(tree.leaves()) <= 12][:160]
    assert len(generated) == 160
    write_trees(folder / "train.trees", generated)
    trees = list(TreeReader(folder / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    vocab = build_vocabulary(folder / "train.trees", folder / "vocab", kind="word", min_freq=1)
    return folder, trees, vocab


def recipe_values(name: str, **sizes) -> dict:
    values = yaml.safe_load((PROJECT_ROOT / "configs" / f"{name}-tiny.yaml").read_text())["model"]
    return values | sizes


@pytest.fixture(scope="module")
def parser(corpus) -> SpanParser:
    """The tiny recipe's parser (smaller) after 40 Adam steps on 150 short synthetic trees."""
    _, trees, vocab = corpus
    config = model_config(recipe_values("parser", d_model=32, hidden_size=32, span_hidden=32))
    torch.manual_seed(0)
    model = build_model(config, SpanParser.vocabularies_for(config, trees, vocab))
    data = model.prepare(trees[:150])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for batch in itertools.islice(itertools.cycle(data.batches(16, shuffle=False)), 40):
        out = model.loss(batch)
        loss = out.sums["tree"] / out.counts["tree"]
        first = float(loss.detach()) if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.first_loss, model.last_loss = first, float(loss.detach())
    return model.eval()


def test_the_parser_learns_below_its_uniform_baseline(parser, corpus):
    _, trees, _ = corpus
    data = parser.prepare(trees[150:])
    name, baseline = parser.baseline_loss(data, data)
    assert name == "uniform-tree" and baseline > 3
    assert parser.first_loss > baseline - 0.5  # it starts near uniform ...
    assert parser.last_loss < baseline / 2  # ... and learns


def test_parse_kbest_and_samples_are_trees_of_the_words_with_exact_log_q(parser, corpus):
    _, trees, _ = corpus
    gold = trees[150:156]
    words = [tree.leaves() for tree in gold]
    best = parser.parse(words, k=4, batch_size=4)
    for sentence, found in zip(words, best):
        assert 1 <= len(found) <= 4
        assert all(t.tree.leaves() == sentence for t in found)
        assert len({t.tree for t in found}) == len(found)  # distinct trees
        values = [t.logprob for t in found]
        assert values == sorted(values, reverse=True) and all(v <= 1e-9 for v in values)
        again = parser.tree_logprobs([sentence] * len(found), [t.tree for t in found])
        assert again == pytest.approx(values, abs=1e-4)  # float32 scores, other batches
    viterbi = parser.parse(words, batch_size=4)  # the same batches as the k best: the same scores
    assert [v[0].tree for v in viterbi] == [b[0].tree for b in best]
    drawn = parser.sample(words, 30, seed=1, batch_size=2)
    assert drawn == parser.sample(words, 30, seed=1, batch_size=2)
    assert drawn != parser.sample(words, 30, seed=2, batch_size=2)
    for sentence, samples in zip(words, drawn):
        assert len(samples) == 30 and all(s.tree.leaves() == sentence for s in samples)
        unique = {s.tree: s.logprob for s in samples}
        exact = parser.tree_logprobs([sentence] * len(unique), list(unique))
        assert list(unique.values()) == pytest.approx(exact, abs=1e-4)
    gold_logq = parser.tree_logprobs(words, gold)
    assert all(v < 0 for v in gold_logq)


def test_drawing_until_distinct_trees_continues_the_stream_of_the_plain_sample(parser, corpus):
    """The first ``n`` draws are the plain sample (the importance sample); drawing goes on in rounds
    of ``n`` until ``distinct`` different trees, each with its exact ``log q``; a one-word
    sentence, whose trees are its few label chains, stops once they hold all of q."""
    from syntaxlm.inference.importance import draw_proposals

    _, trees, _ = corpus
    words = [t.leaves() for t in trees[150:154]]
    plain = parser.sample(words, 10, seed=3, batch_size=2)
    drawn = parser.sample(words, 10, seed=3, batch_size=2, distinct=25)
    for sentence, first, every in zip(words, plain, drawn):
        assert every[:10] == first
        different = {t.tree.to_bracket(): t.logprob for t in every}
        assert len(different) == 25 and len({t.tree.to_bracket() for t in every[:-1]}) == 24
        exact = parser.tree_logprobs([sentence] * len(different), [Tree.from_bracket(b) for b in different])
        assert list(different.values()) == pytest.approx(exact, abs=1e-4)
    proposals = draw_proposals(parser, words, 10, seed=3, batch_size=2)
    for draw, first in zip(proposals, plain):
        assert len(draw.trees) == 10 and len({t.to_bracket() for t in draw.trees}) == 10
        assert [draw.trees[i] for i in draw.sample] == [t.tree for t in first]
        assert draw.counts.sum() == 10 and draw.samples == 10
    one_word = parser.sample([["hello"]], 5, seed=0, distinct=1000)[0]
    chains = {t.tree.to_bracket(): t.logprob for t in one_word}
    assert len(chains) < 1000 and len(one_word) < 100 * 1000
    assert -np.expm1(np.logaddexp.reduce(list(chains.values()))) <= 1e-9


def test_a_saved_parser_loads_with_its_labels_and_parses_from_the_command_line(parser, corpus, tmp_path):
    _, trees, _ = corpus
    parser.save_pretrained(tmp_path / "parser")
    loaded = load_model(tmp_path / "parser")
    assert isinstance(loaded, SpanParser) and loaded.labels == parser.labels
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("".join(" ".join(t.leaves()) + "\n" for t in trees[150:153]))
    result = CliRunner().invoke(app, ["parse", str(tmp_path / "parser"), str(sentences), "--kbest", "2"])
    assert result.exit_code == 0, result.output
    header, *lines = result.output.strip().splitlines()
    assert header == NO_POS_TAGS_HEADER  # the parser's trees have no POS tags: --proposals reads them so
    assert [line.split("\t")[0] for line in lines][:2] == ["0", "0"]
    assert Tree.from_bracket(lines[0].split("\t")[1]).leaves() == trees[150].leaves()
    refused = CliRunner().invoke(app, ["eval", "ppl", str(sentences), "--model", str(tmp_path / "parser")])
    assert refused.exit_code != 0 and "not a language model" in str(refused.exception)


# --- importance sampling and reranking with a joint model ---------------------------------------------


@pytest.fixture(scope="module")
def tg(corpus):
    """A tiny TG with random weights (wide, so that trees get very different probabilities)."""
    _, trees, vocab = corpus
    folder = corpus[0]
    vocab = build_vocabulary(folder / "train.trees", folder / "tg-vocab", kind="word", min_freq=1)
    config = model_config(recipe_values("tg", d_model=32, n_layers=2, d_ff=64))
    torch.manual_seed(0)
    model = build_model(config, model_class("tg").vocabularies_for(config, trees, vocab)).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5)
    return model


def small_trees(words: list[str]) -> list[Tree]:
    """Every tree of ``words`` whose nodes are all S (and bare words)."""
    labels = SpanLabels([("S",)])
    found = {}
    for spans in all_trees(len(words), columns=2):
        found.setdefault(
            tree_from_spans(words, spans, labels).to_bracket(), tree_from_spans(words, spans, labels)
        )
    return list(found.values())


def test_importance_sampling_with_the_exact_posterior_gives_the_exact_marginal(tg, corpus):
    """With ``q`` the joint model's own posterior over a set of trees, every weight is ``Σ p(x, y)``:
    the estimate is exact, whatever was drawn."""
    _, trees, _ = corpus
    words = min((t.leaves() for t in trees), key=len)[:3]
    candidates = small_trees(words)
    joint = np.array([s.logprob for s in gold_scores(tg, [words] * len(candidates), candidates)])
    marginal = float(np.logaddexp.reduce(joint))
    posterior = joint - marginal
    drawn = np.random.default_rng(0).choice(len(candidates), size=40, p=np.exp(posterior))
    draw = ProposalDraw(candidates, posterior, drawn, samples=len(drawn))
    scores = proposal_scores(tg, [words], [candidates])[0]
    scored = with_draws(scores, draw)
    assert scored.details["importance"]["logprob"] == pytest.approx(marginal, abs=1e-9)
    assert scored.details["importance"]["effective_samples"] == pytest.approx(40, rel=1e-9)
    assert scores.logprob == pytest.approx(marginal, abs=1e-9)  # the sum over all of them, too
    result = importance_perplexity([scored], groups=4)
    assert result.total_logprob == pytest.approx(marginal, abs=1e-9)
    assert result.standard_error == pytest.approx(0.0, abs=1e-9)
    low, high = result.interval_per_word
    assert low == pytest.approx(result.per_word) and high == pytest.approx(result.per_word)


def test_the_estimate_is_unbiased_for_p_of_x():
    """Weights drawn from a skewed proposal: the mean of ``p̂`` over many draws is ``Σ p``."""
    generator = np.random.default_rng(0)
    joint = np.log(np.array([0.5, 0.2, 0.05, 0.01]))
    proposal = np.log(np.array([0.1, 0.3, 0.3, 0.3]))
    estimates = []
    for _ in range(4000):
        drawn = generator.choice(4, size=10, p=np.exp(proposal))
        counts = np.bincount(drawn, minlength=4)
        kept = counts > 0
        estimates.append(math.exp(sentence_estimate((joint - proposal)[kept], counts[kept])))
    assert np.mean(estimates) == pytest.approx(0.76, rel=0.03)  # 4,000 draws: s.e. about 1%


def importance_result(per_word: float, effective: float, samples: int = 300):
    total = -math.log(per_word) * 100
    return ImportanceResult(
        total_logprob=total, n_words=100, n_sentences=10, samples=samples, standard_error=0.1,
        group_perplexities=[per_word] * 5, mean_unique=samples / 2, mean_effective_samples=effective,
        mean_proposals=samples, mean_draws=samples, sentence_logprobs=[total / 10] * 10,
    )  # fmt: skip


def test_an_estimate_on_few_effective_samples_or_above_a_proven_bound_is_flagged():
    bounds = {"beam marginal": 840.0, "sum over 300 different trees": 900.0}
    assert reliability_warnings(importance_result(800.0, effective=120.0), bounds) == []
    few = reliability_warnings(importance_result(800.0, effective=1.2, samples=20), bounds)
    assert len(few) == 1 and few[0].startswith("few effective samples: 1.2 per sentence on average of 20")
    assert reliability_warnings(importance_result(800.0, effective=14.0), bounds)  # under 5% of 300
    above = reliability_warnings(importance_result(1620.0, effective=120.0), bounds)
    assert len(above) == 1 and above[0].startswith("unreliable: the estimate 1620.00 is above a proven upper")
    assert "beam marginal 840.00, sum over 300 different trees 900.00" in above[0]
    assert "at most 840.00 (beam marginal)" in above[0]


class OracleDecoder(Decoder):
    """Puts probability 1 − ε on the next token of ``gold`` after a prefix of ``gold``, the rest
    evenly: a joint model whose best tree is the gold one."""

    def __init__(self, model, gold: list[int]):
        self.model, self.gold, self.prefixes = model, gold, []

    @property
    def size(self) -> int:
        return len(self.prefixes)

    def _start(self, n):
        self.prefixes = [()] * n

    def _advance(self, parents, tokens):
        self.prefixes = [self.prefixes[p] + (t,) for p, t in zip(parents.tolist(), tokens.tolist())]

    def _logprobs(self):
        size = len(self.model.vocab)
        out = torch.full((len(self.prefixes), size), math.log(1e-3 / size))
        for row, prefix in enumerate(self.prefixes):
            if len(prefix) < len(self.gold) and list(prefix) == self.gold[: len(prefix)]:
                out[row, self.gold[len(prefix)]] = math.log(1 - 1e-3)
        return out


def test_reranking_picks_the_gold_tree_with_an_oracle_model(tg, parser, corpus):
    _, trees, _ = corpus
    gold = min(trees[150:], key=lambda t: len(t.leaves()))
    words = gold.leaves()
    ids = encode_actions(tree_to_actions(gold, tg.action_grammar().style), tg.vocab).ids.tolist()
    proposals = [t.tree for t in parser.sample([words], 20, seed=0)[0]] + [gold]
    oracle = tg
    original = oracle.decoder
    oracle.decoder = lambda: OracleDecoder(oracle, ids)
    try:
        assert rerank(oracle, [words], [proposals]) == [gold]
        assert rerank(oracle, [words], [proposals[:-1]]) != [gold] or gold in proposals[:-1]
    finally:
        oracle.decoder = original


def test_proposal_perplexity_from_the_command_line(tg, parser, corpus, tmp_path):
    _, trees, _ = corpus
    tg.save_pretrained(tmp_path / "tg")
    parser.save_pretrained(tmp_path / "parser")
    sentences = tmp_path / "sentences.txt"
    sentences.write_text(
        "".join(" ".join(t.leaves()) + "\n" for t in sorted(trees[150:], key=lambda t: len(t.leaves()))[:2])
    )
    out = tmp_path / "ppl.json"
    result = CliRunner().invoke(
        app,
        ["eval", "ppl", str(sentences), "--model", str(tmp_path / "tg"), "--method", "proposals",
         "--parser", str(tmp_path / "parser"), "--samples", "10", "--action-beam", "20", "--word-beam", "4",
         "--fast-track", "1", "--no-progress", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    from syntaxlm.results import read_result

    record = read_result(out)["result"]
    assert record["marginalisation"]["method"] == "importance-sampling"
    assert record["samples_per_sentence"] == 10
    # The bound sums over 10 different trees per sentence (sampled without replacement), at least
    # as many as the importance sample's unique trees.
    assert record["mean_proposal_trees"] == 10 and record["mean_unique_trees"] <= 10
    assert record["mean_draws"] >= 10
    # All three from the model's own distribution: the sum over some trees is below the estimate
    # of the sum over all of them only by what the unique samples miss; both are finite numbers.
    for key in ("perplexity_per_word",):
        assert math.isfinite(record[key]) and math.isfinite(record["proposal_bound"][key])
        assert math.isfinite(record["beam"][key])
    assert record["beam"]["marginalisation"]["renormalised"] is False
    # Ten draws cannot give ten effective samples unless the parser were the model's posterior.
    assert any(w.startswith("few effective samples") for w in record["warnings"])
    assert "warning: few effective samples: " in result.output


def test_evaluating_a_saved_parser_scores_its_best_trees(parser, corpus, tmp_path):
    from syntaxlm.jobs.evaluation import evaluate_model
    from syntaxlm.results import read_result

    folder, trees, _ = corpus
    parser.save_pretrained(tmp_path / "parser")
    written = evaluate_model(tmp_path / "parser", tmp_path / "results", test=folder / "train.trees")
    assert set(written) == {"parseval"}
    record = read_result(written["parseval"])
    assert record["options"]["parses"] == "the parser's best tree (Viterbi)"
    summary = record["result"]["summary"]["all"]
    assert summary["sentences"] == len(trees) and 0 < summary["f1"] <= 100


# --- sizes, options and messages of the parser's commands ---------------------------------------------


def test_tree_counts_are_the_enumerations_and_k_beyond_them_gives_them_all(parser, corpus):
    from syntaxlm.models.span_chart import tree_counts

    assert tree_counts(4, LABELS, 10**30) == [0, *(len(all_trees(n)) for n in range(1, 5))]
    assert tree_counts(4, LABELS, 100) == [0, 2, 18, 100, 100]  # capped: never more than asked for
    words = min((t.leaves() for t in corpus[1][150:]), key=len)[:2]
    every = tree_counts(2, len(parser.labels), 10**30)[-1]
    found = parser.parse([words], k=10**20)[0]  # no 10**20-wide chart: the sentence's trees, all of them
    assert len(found) == every and len({t.tree for t in found}) == every
    assert np.logaddexp.reduce([t.logprob for t in found]) == pytest.approx(0.0, abs=1e-6)
    # Drawing until more different trees than a one-word sentence has ends with all of them.
    chains = {t.tree for t in parser.sample([words[:1]], 5, distinct=10**5)[0]}
    assert len(chains) <= tree_counts(1, len(parser.labels), 10**5)[-1]


def test_sizes_beyond_memory_are_refused_before_any_work_naming_the_bound(parser):
    from syntaxlm.errors import SizeError

    words = [["the", "bird", "sings"]] * 4
    for call, name in [
        (lambda: parser.parse(words, k=10**9), "k"),
        (lambda: parser.parse(words, k=10**20), "k"),
        (lambda: parser.sample(words, 10**9), "n"),
        (lambda: parser.sample(words, 3, distinct=10**20), "distinct"),
    ]:
        with pytest.raises(SizeError) as caught:
            call()
        assert caught.value.name == name and caught.value.most >= 1
        message = str(caught.value)
        assert f"at most {caught.value.most} fits" in message and "memory available" in message
    for seed in (-1, 2**63):
        with pytest.raises(ValueError, match="seed must be"):
            parser.sample(words, 2, seed=seed)
    assert parser.sample(words[:1], 2, seed=2**63 - 1)


@pytest.fixture(scope="module")
def saved(tg, parser, corpus, tmp_path_factory):
    """The tiny TG and the parser saved, three short sentences, the parser's proposals for them
    and a proposals file whose tree for sentence 1 has other words."""
    _, trees, _ = corpus
    folder = tmp_path_factory.mktemp("commands")
    tg.save_pretrained(folder / "tg")
    parser.save_pretrained(folder / "parser")
    short = sorted(trees[150:], key=lambda t: len(t.leaves()))[:3]
    (folder / "sentences.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in short))
    (folder / "proposals.txt").write_text("".join(f"{i}\t{t.to_bracket()}\n" for i, t in enumerate(short)))
    (folder / "bad.txt").write_text(
        f"0\t{short[0].to_bracket()}\n1\t(S other words)\n2\t{short[2].to_bracket()}\n"
    )
    return folder


def invoke(folder: Path, *args) -> tuple[int, str]:
    """The command line in this process, run in ``folder`` (names there: tg, parser, the files)."""
    names = {"TG": "tg", "P": "parser", "S": "sentences.txt", "F": "proposals.txt", "BAD": "bad.txt"}
    args = [str(folder / names[a]) if a in names else str(a) for a in args]
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    error = result.exception
    assert error is None or isinstance(error, (SystemExit, SyntaxlmError)), repr(error)
    said = f"error: {error}" if isinstance(error, SyntaxlmError) else ""  # as main() says it
    return result.exit_code, " ".join(f"{result.output} {said}".split())


BEAM = ("--action-beam", "5", "--word-beam", "2", "--fast-track", "1")
IGNORED = [
    (("parse", "P", "S", "--method", "beam"), "--method", "--method beam is for other models"),
    (("parse", "P", "S", "--method", "induced"), "--method", "--method induced is for other models"),
    (("parse", "P", "S", "--method", "rerank", "--parser", "P"), "--method", "--method rerank is for other"),
    (("parse", "P", "S", "--proposals", "F"), "--proposals", "--proposals is for a joint model as MODEL"),
    (("parse", "P", "S", "--action-beam", "5"), "--action-beam", "--action-beam is for a joint model"),
    (("parse", "P", "S", "--seed", "3"), "--seed", "--seed is for --samples"),
    (("parse", "TG", "S", "--samples", "5"), "--samples", "--samples is for --method rerank with --parser"),
    (("parse", "TG", "S", "--seed", "5"), "--seed", "--seed is for --method rerank with --parser"),
    (("parse", "TG", "S", "--proposals", "F"), "--proposals", "--proposals is for --method rerank"),
    (("parse", "TG", "S", "--method", "rerank", "--proposals", "F", "--no-pos-tags", "--word-beam", "3"),
     "--word-beam", "--word-beam is for the beam search (the method here is rerank)"),
    (("score", "TG", "S", "--proposals", "F"), "--proposals", "--proposals is for --method proposals"),
    (("score", "TG", "S", "--trees", "F"), "--trees", "--trees is for --method gold"),
    (("score", "TG", "S", "--no-pos-tags"), "--no-pos-tags", "--no-pos-tags is for --trees or --proposals"),
    (("score", "TG", "S", "--method", "proposals", "--proposals", "F", "--no-pos-tags", *BEAM),
     "--action-beam", "--action-beam is for the beam search (the method here is proposals)"),
    (("eval", "ppl", "S", "--model", "TG", "--proposals", "F"), "--proposals", "is for --method proposals"),
    (("eval", "ppl", "S", "--model", "TG", "--samples", "5"), "--samples", "--samples is for --parser"),
    (("eval", "ppl", "S", "--model", "TG", "--seed", "1"), "--seed", "--seed is for --parser"),
    (("eval", "ppl", "S", "--model", "TG", "--no-compare-beam"), "--no-compare-beam", "is for --parser"),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--parser", "P", "--context", "full"),
     "--context", "--context is for the methods without --parser"),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--parser", "P", "--no-compare-beam",
      "--word-beam", "3"), "--word-beam", "is for the beam search (with --parser: --compare-beam)"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "option", "message"), IGNORED, ids=[" ".join(a) for a, _, _ in IGNORED])
def test_an_option_the_model_or_method_does_not_use_is_refused_not_ignored(saved, args, option, message):
    code, output = invoke(saved, *args)
    assert code == 2 and f"Invalid value for {option}: " in output and message in output, output


SIZES = [
    (("parse", "P", "S", "--kbest", 10**9), "--kbest", 10**9),
    (("parse", "P", "S", "--kbest", 10**20), "--kbest", 10**20),
    (("parse", "P", "S", "--samples", 10**9), "--samples", 10**9),
    (("parse", "P", "S", "--samples", 10**20), "--samples", 10**20),
    (("parse", "TG", "S", "--method", "rerank", "--parser", "P", "--samples", 10**9), "--samples", 10**9),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--parser", "P", "--samples", 10**20),
     "--samples", 10**20),
    (("score", "TG", "S", "--action-beam", 10**9), "--action-beam", 10**9),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--parser", "P", "--action-beam", 10**9),
     "--action-beam", 10**9),
]  # fmt: skip


@pytest.mark.parametrize(("args", "option", "value"), SIZES, ids=[" ".join(map(str, a)) for a, _, _ in SIZES])
def test_a_size_beyond_memory_is_refused_naming_the_option_and_the_bound(saved, args, option, value):
    code, output = invoke(saved, *args)
    assert code == 2, output
    pattern = rf"Invalid value for {option}: {value} needs about .+ memory available; at most \d+ fits"
    assert re.search(pattern, output), output


def test_k_best_beyond_a_sentences_trees_writes_them_all_with_a_note(saved, parser):
    from syntaxlm.models.span_chart import tree_counts

    two = saved / "two.txt"
    two.write_text(" ".join((saved / "sentences.txt").read_text().split()[:2]) + "\n")
    code, output = invoke(saved, "parse", "P", two, "--kbest", 10**20, "--out", saved / "all.txt")
    every = tree_counts(2, len(parser.labels), 10**30)[-1]
    note = f"note: 1 sentence(s) have fewer than {10**20} different trees (sentence 0: {every})"
    assert code == 0 and note in output, output
    assert len((saved / "all.txt").read_text().splitlines()) == 1 + every  # the header, then every tree


NUMBERS = [
    (("parse", "P", "S", "--samples", "2", "--seed", "-1"), "'--seed'"),
    (("parse", "TG", "S", "--method", "rerank", "--parser", "P", "--seed", "-1"), "'--seed'"),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--parser", "P", "--seed", str(2**63)),
     "'--seed'"),
    (("parse", "P", "S", "--batch-size", "0"), "'--batch-size'"),
    (("parse", "P", "S", "--kbest", "2", "--batch-size", "-1"), "'--batch-size'"),
    (("score", "TG", "S", "--batch-size", "0"), "'--batch-size'"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "option"), NUMBERS, ids=[" ".join(a) for a, _ in NUMBERS])
def test_seeds_and_batch_sizes_out_of_range_are_refused_by_their_option(saved, args, option):
    code, output = invoke(saved, *args)
    assert code == 2 and f"Invalid value for {option}" in output, output


MISLEADING = [
    (("parse", "TG", "S", "--method", "rerank", "--proposals", "BAD", "--no-pos-tags"),
     "sentence 1: the words of a proposal tree ('other words') differ from the sentence"),
    # score names a sentence by its id, here its line number
    (("score", "TG", "S", "--method", "proposals", "--proposals", "BAD", "--no-pos-tags"),
     "sentence 2: the words of a proposal tree ('other words') differ from the sentence"),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--proposals", "BAD", "--no-pos-tags"),
     "sentence 1: the words of a proposal tree ('other words') differ from the sentence"),
    (("eval", "ppl", "S", "--model", "TG", "--method", "proposals", "--parser", "P", "--samples", "4"),
     "Invalid value for --samples: 4 is too few: the spread over draws comes from 5 independent groups"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), MISLEADING, ids=[" ".join(a) for a, _ in MISLEADING])
def test_messages_name_the_sentence_and_the_reason(saved, args, message):
    """The first sentences are scored apart (to time them): the rest keep their numbers; the
    importance estimate's groups are checked before any work."""
    code, output = invoke(saved, *args)
    assert code != 0 and message in output, output


def test_the_parsers_trees_read_back_as_proposals(saved):
    """``parse PARSER --samples/--kbest --out F``, then ``--proposals F`` with the default --pos-tags:
    the file says its trees have none."""
    for kind, value in (("--samples", "3"), ("--kbest", "2")):
        code, output = invoke(saved, "parse", "P", "S", kind, value, "--out", saved / "parsed.txt")
        assert code == 0, output
        parsed = saved / "parsed.txt"
        code, output = invoke(saved, "parse", "TG", "S", "--method", "rerank", "--proposals", parsed)
        assert code == 0 and len(output.split("(")) > 3, output
        ppl = ("eval", "ppl", "S", "--model", "TG", "--method", "proposals")
        code, output = invoke(saved, *ppl, "--proposals", parsed)
        assert code == 0 and "perplexity per word" in output, output


def test_eval_ppl_with_a_parser_writes_the_record_evaluate_model_writes(tg, parser, corpus, tmp_path):
    """One path for the proposal parser's perplexity: ``eval ppl --parser --no-compare-beam`` and
    ``evaluate_model(parser=...)`` write the same record (``perplexity-importance.json``), but for
    its creation time."""
    from syntaxlm.inference import BeamSettings
    from syntaxlm.jobs.evaluation import EvalSettings, evaluate_model
    from syntaxlm.results import read_result

    folder, trees, _ = corpus
    tg.save_pretrained(tmp_path / "tg")
    parser.save_pretrained(tmp_path / "parser")
    test = folder / "train.trees"  # Penn style, as a test treebank of evaluate_model
    result = CliRunner().invoke(  # first: it sets the one thread both score with (as last digits vary)
        app,
        ["--threads", "1", "eval", "ppl", str(test), "--model", str(tmp_path / "tg"), "--method", "proposals",
         "--parser", str(tmp_path / "parser"), "--samples", "10", "--no-compare-beam", "--limit", "2",
         "--batch-size", "4", "--no-progress", "--out", str(tmp_path / "ppl.json")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    settings = EvalSettings(beam=BeamSettings(3, 2, 1), test_sentences=2, batch_size=4, proposal_samples=10)
    written = evaluate_model(tmp_path / "tg", tmp_path / "results", test=test, settings=settings,
                             parser=tmp_path / "parser")  # fmt: skip
    job, command = read_result(written["perplexity-importance"]), read_result(tmp_path / "ppl.json")
    assert job["options"]["limit"] == 2 and job["options"]["sentences_in_data"] == len(trees)
    for record in (job, command):
        del record["provenance"]["created"]
    assert job == command
