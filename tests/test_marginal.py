"""Scores along given trees (inference/marginal.py): the gold tree, proposal trees, documents.

On the toy model, the proposal marginal over *every* tree within the bounds is the exact marginal,
per piece too (shared prefixes counted once), and any subset is a lower bound; on tiny real models
the gold-tree score is minus the training loss, and words-only models are scored exactly; proposal
files; documents; reranking.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.errors import InputFormatError
from syntaxlm.inference.marginal import (
    ProposalError,
    ReadingContext,
    document_scores,
    exact_scores,
    gold_scores,
    proposal_scores,
    read_proposals,
    rerank,
)
from syntaxlm.models import build_model
from syntaxlm.structure.actions import actions_to_tree, document_tree
from syntaxlm.text.build import corpus_sentences
from syntaxlm.text.symbols import nonterminal_symbols
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree
from tests.floats import ROUNDING
from tests.test_beam import TINY, ToyModel, exact_marginals

BOUNDS = {"max_open": 3, "max_openers": 2}


def every_tree(model, words, *, max_open, max_openers) -> list[Tree]:
    """Every tree of ``words`` (one piece each) the grammar allows within the bounds, by
    depth-first enumeration."""
    grammar = model.action_grammar()
    pieces = list(model.vocab.encode_words(words).ids)
    assert len(pieces) == len(words)
    found = []

    def walk(sequence, stack, last_open, run, k):
        if stack == [] and sequence:
            if k == len(pieces):
                spelled = [words[pieces.index(t)] if t in pieces else model.vocab.token(t) for t in sequence]
                found.append(
                    actions_to_tree(spelled, grammar.style, labels=list(set(grammar.open_label.values())))
                )
            return
        if k < len(pieces) and len(stack) < max_open and run < max_openers:
            for token, label in grammar.open_label.items():
                walk([*sequence, token], [*stack, label], True, run + 1, k)
        if stack and k < len(pieces):
            walk([*sequence, pieces[k]], stack, False, 0, k + 1)
        if stack and not last_open and (len(stack) > 1 or k == len(pieces)):
            for token, label in grammar.close_label.items():
                if label in (None, stack[-1]):
                    walk([*sequence, token], stack[:-1], False, 0, k)

    walk([], [], False, 0, 0)
    return found


@pytest.mark.parametrize("style", ["choe-charniak", "rnng"])
@pytest.mark.parametrize("renormalise", [False, True])
def test_proposals_over_every_tree_give_the_exact_marginal(style, renormalise):
    model = ToyModel(style, seed=9)
    words = ["x", "z", "y"]
    trees = every_tree(model, words, **BOUNDS)
    assert len(trees) > 50
    prefix, total = exact_marginals(
        model.action_grammar(), model.decoder, model.ids(words), renormalise=renormalise, **BOUNDS
    )
    everything = proposal_scores(model, [words], [trees], renormalise=renormalise, **BOUNDS)[0]
    assert everything.logprob == pytest.approx(total, abs=1e-5)
    np.testing.assert_allclose(np.cumsum(everything.piece_logprobs), prefix, atol=1e-5)
    assert everything.details["unique_proposals"] == len(trees)
    # Any subset is a lower bound, per piece too; duplicates are counted once.
    rng = np.random.default_rng(0)
    some = [trees[i] for i in rng.choice(len(trees), 7, replace=False)]
    subset = proposal_scores(model, [words], [some + some[:3]], renormalise=renormalise, **BOUNDS)[0]
    assert subset.details == {**subset.details, "proposals": 10, "unique_proposals": 7}
    assert subset.logprob < total
    assert (np.cumsum(subset.piece_logprobs) <= prefix + 1e-6).all()
    best = int(np.argmax(subset.details["tree_logprobs"]))
    assert subset.tree == some[best] and subset.tree_logprob == max(subset.details["tree_logprobs"])


def test_gold_score_is_the_sum_of_the_tree_token_log_probabilities():
    model = ToyModel("choe-charniak", seed=1)
    tree = Tree.from_bracket("(A (B x y) (A z))")
    scores = gold_scores(model, [["x", "y", "z"]], [tree])[0]
    tokens = model.vocab.encode(["(A", "(B", "x", "y", "B)", "(A", "z", "A)", "A)"])
    decoder, prefix, values = model.decoder(), (), []
    for token in tokens:
        values.append(decoder.row_logprobs(prefix)[token].item())
        prefix = (*prefix, token)
    # Piece k collects the actions since the piece before it; the closers after "z" are the end.
    np.testing.assert_allclose(
        scores.piece_logprobs, [sum(values[:3]), values[3], sum(values[4:7])], atol=1e-6
    )
    assert scores.end_logprob == pytest.approx(sum(values[7:]), abs=1e-6)
    assert scores.tree == tree and scores.method == "gold"


def test_the_progress_bar_is_labelled_by_the_method(capsys):
    model = ToyModel("choe-charniak", seed=1)
    tree = Tree.from_bracket("(A (B x y) (A z))")
    gold_scores(model, [["x", "y", "z"]], [tree], progress=True)
    assert capsys.readouterr().err.lstrip("\r").startswith("gold: ")
    proposal_scores(model, [["x", "y", "z"]], [[tree]], progress=True)
    assert capsys.readouterr().err.lstrip("\r").startswith("proposals: ")


def test_proposals_must_fit_their_sentence():
    model = ToyModel("rnng")
    with pytest.raises(ProposalError, match="sentence 0: the words of a proposal tree"):
        proposal_scores(model, [["x", "y"]], [[Tree.from_bracket("(A x z)")]])
    with pytest.raises(ProposalError, match="sentence 1 has no proposal trees"):
        proposal_scores(model, [["x"], ["y"]], [[Tree("A", ["x"])], []])
    with pytest.raises(ValueError, match="words only"):
        gold_scores(ToyModel("words"), [["x"]], [Tree("A", ["x"])])


# --- proposal files -----------------------------------------------------------------------------------


def test_read_proposals(tmp_path):
    path = tmp_path / "proposals.txt"
    path.write_text(
        "1\t(ROOT (S (NP (DT The) (NN dog)) (VP (VBZ barks))))\n"
        "0\t(S (NP (PRP It)) (VP (VBD flew)))\n\n"
        "1\t(S (NP (DT The)) (VP (NN dog) (VBZ barks)))\n"
    )
    groups = read_proposals(path)
    assert [[t.to_bracket() for t in g] for g in groups] == [
        ["(S (NP It) (VP flew))"],
        ["(S (NP The dog) (VP barks))", "(S (NP The) (VP dog barks))"],
    ]
    assert len(read_proposals(path, n_sentences=3)) == 3
    plain = tmp_path / "plain.txt"
    plain.write_text("0\t(S (NP It) (VP flew))\n")
    assert read_proposals(plain, pos_tags=False)[0][0].to_bracket() == "(S (NP It) (VP flew))"
    for text, problem in [
        ("(S (NP It))\n", "line 1"),
        ("0\t(S (NP (PRP It))\n", "proposals.txt:1"),
        ("x\t(S (NP (PRP It)))\n", "not a proposal line"),
        ("0\t(S (NP (PRP It)))\n5\t(S (NP (PRP It)))\n", "out of range"),
    ]:
        path.write_text(text)
        with pytest.raises(InputFormatError) as error:
            read_proposals(path, n_sentences=2)
        assert problem in str(error.value) or problem.replace("line ", ":") in str(error.value)


# --- tiny real models ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("marginal")
    write_synthetic_treebank(folder / "data", sentences=120, seed=0)
    sentences, labels = corpus_sentences(folder / "data" / "train.trees")
    # Symbols for documents too: (DOC ... DOC) around the sentence trees.
    symbols = nonterminal_symbols(labels | {"DOC"}, "both")
    vocab = WordVocab.build(sentences, min_freq=2, symbols=symbols)
    trees = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    models = {}
    for name in ("tg", "txl-trees", "txl-terminals", "plm", "plm-mask", "lm"):
        torch.manual_seed(0)
        models[name] = build_model({"model": name, **TINY}, {"vocab": vocab}).eval()
    return {"models": models, "trees": sorted(trees, key=lambda t: len(t.leaves()))[:6]}


@pytest.mark.parametrize("name", ["tg", "txl-trees", "plm", "plm-mask"])
def test_gold_score_is_minus_the_training_loss(tiny, name):
    model, trees = tiny["models"][name], tiny["trees"]
    scores = gold_scores(model, [t.leaves() for t in trees], trees, batch_size=4)
    corpus = model.prepare(trees)
    with torch.no_grad():
        loss = model.loss(next(corpus.batches(len(corpus), shuffle=False))).sums["lm"].item()
    assert sum(s.logprob for s in scores) == pytest.approx(-loss, rel=1e-5)
    words = model.word_logprobs([t.leaves() for t in trees], trees=trees)
    for score, per_word in zip(scores, words):
        assert score.logprob == pytest.approx(float(per_word.sum()) + score.end_logprob, abs=1e-3)
        assert score.tree_logprob == pytest.approx(score.logprob)


@pytest.mark.parametrize("name", ["tg", "plm"])
def test_real_models_proposals_over_every_tree_give_the_exact_marginal(tiny, name):
    model = tiny["models"][name]
    words = next(t.leaves() for t in tiny["trees"] if len(set(t.leaves())) == len(t.leaves()))[:2]
    trees = every_tree(model, words, max_open=2, max_openers=1)
    assert len(trees) > 50
    pieces = model.vocab.encode_words(words).ids
    prefix, total = exact_marginals(
        model.action_grammar(), model.decoder, pieces, max_open=2, max_openers=1, renormalise=False
    )
    everything = proposal_scores(model, [words], [trees], batch_size=1)[0]
    assert everything.logprob == pytest.approx(total, abs=1e-4)
    np.testing.assert_allclose(np.cumsum(everything.piece_logprobs), prefix, atol=1e-4)
    some = proposal_scores(model, [words], [trees[::7]])[0]
    assert some.logprob < total and (np.cumsum(some.piece_logprobs) <= prefix + 1e-6).all()


@pytest.mark.parametrize("name", ["lm", "txl-terminals"])
def test_words_only_models_are_scored_exactly(tiny, name):
    model = tiny["models"][name]
    sentences = [t.leaves() for t in tiny["trees"]]
    scores = exact_scores(model, sentences, batch_size=4)
    reference = model.word_logprobs(sentences, eos=True)
    for score, expected in zip(scores, reference):
        np.testing.assert_allclose(score.word_logprobs, expected[:-1].numpy(), atol=1e-4)
        assert score.end_logprob == pytest.approx(float(expected[-1]), abs=1e-4)
    with pytest.raises(ValueError, match="joint model"):
        exact_scores(tiny["models"]["tg"], sentences)


def test_rerank_takes_the_most_probable_proposal(tiny):
    model = tiny["models"]["plm"]
    tree = tiny["trees"][3]
    words = tree.leaves()
    flat = Tree(tree.label, words)
    right = Tree(tree.label, [words[0], Tree("NP", words[1:])])
    proposals = [tree, flat, right]
    joint = [gold_scores(model, [words], [p])[0].logprob for p in proposals]
    assert rerank(model, [words], [proposals]) == [proposals[int(np.argmax(joint))]]
    scores = proposal_scores(model, [words], [proposals])[0]  # the three in one batch: up to rounding
    assert scores.logprob == pytest.approx(np.logaddexp.reduce(joint), rel=ROUNDING)


def test_documents_condition_each_sentence_on_the_best_trees_before_it(tiny):
    model = tiny["models"]["tg"]
    first, second = tiny["trees"][1], tiny["trees"][2]
    words = [first.leaves(), second.leaves()]
    # One proposal each: the document's entries sum to log p(document tree).
    document = document_scores(model, [words], [[[first], [second]]])[0]
    whole = gold_scores(model, [words[0] + words[1]], [document_tree([first, second])])[0]
    assert sum(s.logprob for s in document) == pytest.approx(whole.logprob, abs=1e-4)
    # Two proposals for the first sentence: the second sentence follows the better one.
    flat = Tree(first.label, first.leaves())
    two = document_scores(model, [words], [[[first, flat], [second]]])[0]
    logprobs = two[0].details["tree_logprobs"]
    better = [first, flat][int(np.argmax(logprobs))]
    assert two[0].tree == better and two[0].logprob == pytest.approx(np.logaddexp.reduce(logprobs))
    given_better = document_scores(model, [words], [[[better], [second]]])[0]
    # scored in batches of another size: equal up to rounding
    np.testing.assert_allclose(
        two[1].piece_logprobs, given_better[1].piece_logprobs, rtol=ROUNDING, atol=ROUNDING
    )
    assert two[1].end_logprob == pytest.approx(given_better[1].end_logprob, rel=ROUNDING, abs=ROUNDING)
    with pytest.raises(ValueError, match="no 'TEXT' constituent"):
        document_scores(model, [words], [[[first], [second]]], label="TEXT")


def _training_pass_logprobs(model, document: Tree) -> np.ndarray:
    """Written out: ``log p(action | actions before)`` of a document read as the trainer reads it,
    segment after segment with the memory passed on (``prepare``, ``forward``, ``next_memory``)."""
    from syntaxlm.models.layers.transformer import next_memory

    corpus = model.prepare([document])
    values, state, n_segments = [], None, 0
    with torch.no_grad():
        for batch in corpus.batches(1, shuffle=False):
            logits, layer_inputs = model(batch, state)
            labels = batch["labels"][0].long()
            logprobs = torch.log_softmax(logits[0].float(), dim=-1)
            predicted = labels != 0  # PAD: COMPOSE positions and padding predict nothing
            values.append(logprobs[predicted].gather(-1, labels[predicted][:, None])[:, 0].double().numpy())
            state = next_memory(state, layer_inputs, batch["next_memory_source"])
            n_segments += 1
    assert n_segments >= 3  # the document is longer than a segment
    return np.concatenate(values)


@pytest.mark.parametrize("name", ["tg", "txl-trees"])
def test_documents_are_read_with_the_training_segments_and_memory(tiny, name):
    from syntaxlm.inference.marginal import document_perplexity_logprobs
    from syntaxlm.structure.actions import tree_to_actions

    vocab = tiny["models"]["tg"].vocab
    torch.manual_seed(0)
    short = {**TINY, "segment_length": 6, "memory_length": 3}
    model = build_model({"model": name, **short}, {"vocab": vocab}).eval()
    sentences = tiny["trees"][1:4]
    words = [t.leaves() for t in sentences]
    proposals = [[[t] for t in sentences]]
    trained = document_scores(model, [words], proposals)[0]
    setting = ReadingContext("training", segment_length=6, memory_length=3, memory="smart")
    assert all(s.details["context"] == setting for s in trained)
    # Each sentence's log-probability is that of its actions in the training pass over the document:
    # (DOC, the first sentence's actions | the second's | ... | the last's, DOC).
    expected = _training_pass_logprobs(model, document_tree(sentences))
    lengths = [len(tree_to_actions(t)) for t in sentences]
    bounds = np.cumsum([0, 1 + lengths[0], *lengths[1:-1], lengths[-1] + 1])
    assert bounds[-1] == len(expected)
    for score, first, last in zip(trained, bounds[:-1], bounds[1:]):
        assert score.logprob == pytest.approx(float(expected[first:last].sum()), abs=1e-4)
    # The whole document in view is another number: the memory of 3 hides most of it.
    full = document_scores(model, [words], proposals, context="full")[0]
    assert all(s.details["context"] == ReadingContext("full") for s in full)
    assert abs(sum(s.logprob for s in full) - sum(s.logprob for s in trained)) > 1e-3
    # ... the number of a model whose segment holds the whole document.
    wide = build_model({"model": name, **TINY, "segment_length": 512, "memory_length": 512}, {"vocab": vocab})
    wide.load_state_dict(model.state_dict())
    whole = gold_scores(wide.eval(), [sum(words, [])], [document_tree(sentences)])[0]
    assert sum(s.logprob for s in full) == pytest.approx(whole.logprob, rel=1e-5)
    # The perplexity result says which context the documents were read in.
    logprobs, ends, metadata = document_perplexity_logprobs([trained])
    assert metadata["context"] == "training" and metadata["segment_length"] == 6
    assert sum(map(np.sum, logprobs)) + sum(ends) == pytest.approx(sum(s.logprob for s in trained))
    with pytest.raises(ValueError, match="context must be one of"):
        document_scores(model, [words], proposals, context="window")


@pytest.mark.parametrize("name", ["tg", "txl-terminals"])
def test_a_document_is_scored_in_the_training_segments_by_default(tiny, name):
    from syntaxlm.structure.actions import ActionKind, tree_to_actions

    vocab = tiny["models"]["tg"].vocab
    torch.manual_seed(0)
    model = build_model({"model": name, **TINY, "segment_length": 6, "memory_length": 3}, {"vocab": vocab})
    model.eval()
    sentences = tiny["trees"][1:4]
    document = document_tree(sentences)
    words = document.leaves()
    lengths = [len(t.leaves()) for t in sentences]

    def score(**options):
        if name == "tg":  # a joint model: along the document's gold tree
            return gold_scores(model, [words], [document], **options)[0]
        return exact_scores(model, [words], **options)[0]

    trained = score()
    memory = "smart" if model.config.smart_memory else "previous"
    setting = ReadingContext("training", segment_length=6, memory_length=3, memory=memory)
    assert trained.details["context"] == setting
    # Every word's log-probability (the actions before it count toward it) and the end are those of
    # the written-out pass, segment after segment with the memory; so is each sentence's.
    expected = _training_pass_logprobs(model, document)
    if name == "tg":
        is_word = tree_to_actions(document).kinds == ActionKind.WORD
    else:  # the words, then </s>
        is_word = np.arange(len(expected)) < len(words)
    assert len(is_word) == len(expected) and is_word.sum() == len(words)
    at_words = np.cumsum(expected)[is_word]
    np.testing.assert_allclose(trained.word_logprobs, np.diff(at_words, prepend=0.0), atol=1e-4)
    assert trained.end_logprob == pytest.approx(expected.sum() - at_words[-1], abs=1e-4)
    per_sentence = np.add.reduceat(np.diff(at_words, prepend=0.0), [0, *np.cumsum(lengths)[:-1]])
    got = np.add.reduceat(trained.word_logprobs, [0, *np.cumsum(lengths)[:-1]])
    np.testing.assert_allclose(got, per_sentence, atol=1e-4)
    # With the whole document in view the numbers differ, and the result says so.
    full = score(context="full")
    assert full.details["context"] == ReadingContext("full")
    assert full.details["context"].to_json() == {
        "context": "full", "segment_length": None, "memory_length": None, "memory": None
    }  # fmt: skip
    assert abs(full.logprob - trained.logprob) > 1e-3
    if name == "tg":
        with pytest.raises(ValueError, match="context='full'"):
            score(renormalise=True)
