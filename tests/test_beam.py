"""Word-synchronous beam search (inference/beam.py) against exhaustive enumeration.

A toy decoder (next-token log-probs drawn from a seeded generator keyed by the whole prefix) and
tiny untrained TG and PLM models: with unbounded beams the search equals the exact marginal found
by enumerating every derivation within the depth bounds; with finite beams it is a lower bound
that grows towards it; every prefix the search ever holds is a valid prefix of a tree of the
sentence (property test); the three ways of holding prefixes agree; continuation pieces, forced
pieces and exhausted searches; one decoder call per round.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.inference.beam import KEEP, BeamSettings, beam_search, search_pieces
from syntaxlm.models import build_model
from syntaxlm.models.decoding import ActionGrammar, Decoder
from syntaxlm.structure.actions import actions_to_tree
from syntaxlm.text.base import EOS_ID
from syntaxlm.text.build import build_vocabulary
from syntaxlm.text.symbols import REDUCE, closing_nonterminal, open_action, opening_nonterminal
from syntaxlm.text.vocab import WordVocab
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader

STYLES = ("choe-charniak", "rnng", "words")
EXHAUSTIVE = BeamSettings(10**9, 10**9, 10**9, max_open=3, max_openers=2)
TINY = {"d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64, "dropout": 0.0}


# --- a toy model whose exact marginals can be enumerated ---------------------------------------------


class ToyDecoder(Decoder):
    """``log p(next | prefix)``: a seeded normal draw per whole prefix, log-softmaxed. Keeps prefixes
    (``supports_keep``) unless told not to; counts its calls; ``forbid`` gets log-prob −inf."""

    def __init__(self, model: ToyModel, *, keeps: bool = True, scale: float = 2.0, forbid=()):
        self.model, self.vocab_size, self.seed, self.scale = model, len(model.vocab), model.seed, scale
        self.supports_keep = keeps
        self.forbid = list(forbid)
        self.rows: list[tuple[int, ...]] = []
        self.calls = {"logprobs": 0, "advance": 0}
        self.rows_advanced = 0

    def _start(self, n: int) -> None:
        self.rows = [()] * n

    def row_logprobs(self, prefix: tuple[int, ...]) -> torch.Tensor:
        rng = np.random.default_rng([self.seed, 1, *prefix])
        logits = torch.tensor(rng.normal(size=self.vocab_size) * self.scale)
        logits[self.forbid] = -math.inf
        return torch.log_softmax(logits, -1).float()

    def _logprobs(self) -> torch.Tensor:
        self.calls["logprobs"] += 1
        if not self.rows:
            return torch.zeros(0, self.vocab_size)
        return torch.stack([self.row_logprobs(row) for row in self.rows])

    def _advance(self, parents, tokens) -> None:
        self.calls["advance"] += 1
        self.rows_advanced += len(parents)
        rows = []
        for parent, token in zip(parents.tolist(), tokens.tolist()):
            if token == KEEP:
                assert self.supports_keep
                rows.append(self.rows[parent])
            else:
                rows.append((*self.rows[parent], token))
        self.rows = rows

    @property
    def size(self) -> int:
        return len(self.rows)


class ToyModel(torch.nn.Module):
    """What inference needs of a model: a module with ``device``, ``vocab``, ``action_grammar()``,
    ``decoder()``; labels A, B and the words x, y, z in the given action style."""

    device = torch.device("cpu")

    def __init__(self, style: str = "choe-charniak", seed: int = 0, *, keeps: bool = True, **decoder):
        super().__init__()
        labels = ("A", "B")
        if style == "choe-charniak":
            symbols = [opening_nonterminal(x) for x in labels] + [closing_nonterminal(x) for x in labels]
        elif style == "rnng":
            symbols = [open_action(x) for x in labels] + [REDUCE]
        else:
            symbols = []
        self.style, self.seed, self.keeps, self.options = style, seed, keeps, decoder
        self.vocab = WordVocab.build([["x", "y", "z"]], min_freq=1, symbols=symbols, unknown="single")
        self.decoders: list[ToyDecoder] = []

    def action_grammar(self) -> ActionGrammar:
        v = self.vocab
        if self.style == "choe-charniak":
            opens = {v.index(opening_nonterminal(x)): x for x in "AB"}
            closes = {v.index(closing_nonterminal(x)): x for x in "AB"}
            return ActionGrammar(len(v), opens, closes, "choe-charniak", False)
        if self.style == "rnng":
            opens = {v.index(open_action(x)): x for x in "AB"}
            return ActionGrammar(len(v), opens, {v.index(REDUCE): None}, "rnng", False)
        return ActionGrammar(len(v), {}, {}, "words", True)

    def decoder(self) -> ToyDecoder:
        decoder = ToyDecoder(self, keeps=self.keeps, **self.options)
        self.decoders.append(decoder)
        return decoder

    def longest_sentence(self) -> None:  # a seeded draw per prefix: any length
        return None

    def ids(self, words) -> list[int]:
        return [self.vocab.index(w) for w in words]


# --- exhaustive enumeration, written apart from the search -----------------------------------------


def exact_marginals(grammar: ActionGrammar, make_decoder, pieces, *, max_open, max_openers, renormalise):
    """``log p(pieces_≤k)`` for every ``k`` and ``log p(sentence)`` by enumerating every derivation,
    breadth first: the prefixes of one length are held by one decoder."""
    tree = grammar.style != "words"
    words = [i for i in range(grammar.vocab_size) if grammar.word_mask[i]]
    opens = sorted(grammar.open_label)
    P = len(pieces)
    prefix: list[list[float]] = [[] for _ in range(P)]
    complete: list[float] = []
    decoder = make_decoder()
    decoder.start(1)
    # A prefix: open labels, last action opened, run of openers, pieces so far, root closed, score.
    level = [((), False, 0, 0, False, 0.0)]
    while level:
        logprobs = decoder.logprobs().double()
        parents, tokens, following = [], [], []
        for row, (stack, last_open, run, k, closed, score) in enumerate(level):
            valid = []
            if tree:
                if not closed and len(stack) < max_open and run < max_openers:
                    valid += opens
                if stack and not last_open:
                    valid += [c for c, label in grammar.close_label.items() if label in (None, stack[-1])]
                if stack:
                    valid += words
                if grammar.ends_with_eos and closed:
                    valid.append(EOS_ID)
            else:
                valid = words + ([EOS_ID] if k else [])
            norm = torch.logsumexp(logprobs[row, valid], 0).item() if renormalise and tree else 0.0
            for action in valid:
                value = score + logprobs[row, action].item() - norm
                if action in grammar.open_label:
                    if k == P:
                        continue
                    state = (stack + (grammar.open_label[action],), True, run + 1, k, False, value)
                elif action in grammar.close_label:
                    if len(stack) == 1 and k < P:
                        continue
                    if len(stack) == 1 and not grammar.ends_with_eos:
                        complete.append(value)
                        continue
                    state = (stack[:-1], False, 0, k, len(stack) == 1, value)
                elif action == EOS_ID:
                    if k == P:
                        complete.append(value)
                    continue
                else:
                    if k == P or action != pieces[k]:
                        continue
                    prefix[k].append(value)
                    state = (stack, False, 0, k + 1, closed, value)
                parents.append(row)
                tokens.append(action)
                following.append(state)
        if not following:
            break
        decoder.advance(torch.tensor(parents), torch.tensor(tokens))
        level = following

    def lse(values):
        return float(np.logaddexp.reduce(values)) if values else -math.inf

    return np.array([lse(v) for v in prefix]), lse(complete)


def spelled(model, ids) -> list[str]:
    return [model.vocab.token(i) for i in ids]


# --- the toy: exactness, bounds, convergence -------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("renormalise", [True, False])
def test_unbounded_beams_are_exact(style, renormalise):
    model = ToyModel(style, seed=3)
    grammar = model.action_grammar()
    for words in (["x"], ["x", "y"], ["z", "x", "y"]):
        pieces = model.ids(words)
        settings = BeamSettings(10**9, 10**9, 10**9, max_open=3, max_openers=2)
        found = search_pieces(grammar, model.decoder, [pieces], settings, renormalise=renormalise)[0]
        prefix, total = exact_marginals(
            grammar, model.decoder, pieces, max_open=3, max_openers=2, renormalise=renormalise
        )
        np.testing.assert_allclose(found.prefix_logprobs, prefix, atol=1e-5)
        assert found.logprob == pytest.approx(total, abs=1e-5)
        if style != "words":
            assert found.exhausted_pieces == len(pieces)  # every continuation explored


@pytest.mark.parametrize("style", ["choe-charniak", "rnng"])
def test_beams_are_lower_bounds_that_grow_to_the_exact_marginal(style):
    model = ToyModel(style, seed=5)
    grammar = model.action_grammar()
    pieces = model.ids(["x", "y", "z", "x"])
    prefix, total = exact_marginals(
        grammar, model.decoder, pieces, max_open=3, max_openers=2, renormalise=True
    )
    estimates = []
    for action_beam, word_beam, fast_track in [
        (1, 1, 0),
        (2, 1, 1),
        (5, 2, 1),
        (20, 5, 2),
        (100, 10, 5),
        (10**6,) * 3,
    ]:
        settings = BeamSettings(action_beam, word_beam, fast_track, max_open=3, max_openers=2)
        found = search_pieces(grammar, model.decoder, [pieces], settings)[0]
        assert (found.prefix_logprobs <= prefix + 1e-6).all()  # a sum over some derivations only
        assert found.logprob <= total + 1e-6
        estimates.append(found.logprob)
    assert estimates[-1] == pytest.approx(total, abs=1e-5)
    errors = total - np.array(estimates)
    assert errors[-2] < errors[0] and errors[0] > 0.1  # the paper's beam is much closer than a greedy one


def test_sentences_of_a_batch_are_searched_independently_with_one_call_per_round():
    model = ToyModel("choe-charniak", seed=2)
    sentences = [model.ids(s) for s in (["x", "y", "z"], ["y"], ["z", "z", "x", "y"])]
    settings = BeamSettings(8, 3, 2, max_open=3, max_openers=2)
    together = search_pieces(model.action_grammar(), model.decoder, sentences, settings)
    decoder = model.decoders[-1]
    rounds = max(r.rounds for r in together)
    assert decoder.calls["logprobs"] == rounds and decoder.calls["advance"] == rounds - 1
    for pieces, joint in zip(sentences, together):
        alone = search_pieces(model.action_grammar(), model.decoder, [pieces], settings)[0]
        # The toy decoder computes each row by itself (no matmul over rows): alone or in a batch,
        # the same numbers.
        np.testing.assert_allclose(alone.prefix_logprobs, joint.prefix_logprobs, rtol=0, atol=1e-9)
        assert alone.best == joint.best


def _same_search(found, alone):
    np.testing.assert_allclose(found.prefix_logprobs, alone.prefix_logprobs, rtol=0, atol=1e-9)
    assert found.logprob == pytest.approx(alone.logprob, abs=1e-9) or found.logprob == alone.logprob
    assert found.best == alone.best
    assert (found.exhausted_pieces, found.forced_pieces) == (alone.exhausted_pieces, alone.forced_pieces)


@pytest.mark.parametrize("forbid", [(), ("y",)])
def test_a_prefix_shared_by_sentences_of_a_batch_is_searched_once(forbid):
    """Sentences that begin alike (one a prefix of another, the same sentence twice, a leader
    sharing less with its own leader) get what each gets alone, forced pieces included, while the
    decoder advances fewer hypotheses than the searches alone do together."""
    model = ToyModel("choe-charniak", seed=2)
    model.options["forbid"] = [model.vocab.index(w) for w in forbid]
    words = [["x", "y", "z", "x"], ["x", "y", "z", "y"], ["x", "y"], ["x", "y", "z", "x"], ["x", "z"], ["y"]]
    sentences = [model.ids(s) for s in words]
    settings = BeamSettings(8, 3, 2, max_open=3, max_openers=2)
    together = search_pieces(model.action_grammar(), model.decoder, sentences, settings)
    shared_rows = model.decoders[-1].rows_advanced
    alone_rows = 0
    for sentence, pieces, found in zip(words, sentences, together):
        alone = search_pieces(model.action_grammar(), model.decoder, [pieces], settings)[0]
        alone_rows += model.decoders[-1].rows_advanced
        _same_search(found, alone)
        assert found.forced_pieces == (sentence.count("y") if forbid else 0)
    assert shared_rows < 0.7 * alone_rows


def test_the_same_pieces_read_as_other_words_share_no_prefix():
    """Pieces are shared only with their word starts: a continuation piece is searched without
    opening or closing before it, so the same ids split differently are a different prefix."""
    model = ToyModel("choe-charniak", seed=3)
    pieces = model.ids(["x", "y", "z"])
    starts = [[True, True, True], [True, False, True]]
    settings = BeamSettings(8, 3, 2, max_open=3, max_openers=2)
    grammar = model.action_grammar()
    together = search_pieces(grammar, model.decoder, [pieces, pieces], settings, word_starts=starts)
    for found, start in zip(together, starts):
        alone = search_pieces(grammar, model.decoder, [pieces], settings, word_starts=[start])[0]
        _same_search(found, alone)
    assert together[0].logprob != together[1].logprob


def test_sentences_whose_shared_prefix_no_state_can_reach_fail_together():
    """With every opener forbidden an RNNG-style grammar cannot place the first word (it needs an
    open constituent): the leader fails at its first piece, and so do the sentences sharing it."""
    model = ToyModel("rnng", seed=1)
    model.options["forbid"] = sorted(model.action_grammar().open_label)
    sentences = [model.ids(s) for s in (["x", "y"], ["x", "y", "z"], ["x", "z"], ["y"])]
    for found in search_pieces(model.action_grammar(), model.decoder, sentences):
        assert found.logprob == -np.inf and found.best is None
        assert len(found.prefix_logprobs) == 0 or np.isneginf(found.prefix_logprobs).all()


# --- every held prefix is valid (property test) --------------------------------------------------------


class CheckingDecoder(ToyDecoder):
    """Fails on any prefix that is not the start of a well-formed tree of ``words``."""

    def __init__(self, model: ToyModel, words, starts, **options):
        super().__init__(model, **options)
        self.words, self.starts = list(words), list(starts)
        grammar = model.action_grammar()
        self.opens, self.closes = grammar.open_label, grammar.close_label

    def _advance(self, parents, tokens) -> None:
        super()._advance(parents, tokens)
        for row in set(self.rows):
            self.check(row)

    def check(self, prefix) -> None:
        stack, closed, pieces, last = [], False, 0, None
        for token in prefix:
            assert not closed, f"{spelled(self.model, prefix)}: an action after the root closed"
            if token in self.opens:
                assert pieces < len(self.words), "an opener after the last word"
                assert self.starts[pieces], "an opener inside a word"
                stack.append(self.opens[token])
            elif token in self.closes:
                assert stack, "a closer with nothing open"
                assert self.closes[token] in (None, stack[-1]), "a closer of the wrong label"
                assert last not in self.opens, "an empty constituent"
                assert pieces == len(self.words) or len(stack) > 1, "the root closed before the last word"
                assert pieces == len(self.words) or self.starts[pieces], "a closer inside a word"
                stack.pop()
                closed = not stack
            else:
                assert stack, "a word outside the root"
                assert pieces < len(self.words) and token == self.words[pieces], (
                    "not the sentence's next piece"
                )
                pieces += 1
            last = token


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    style=st.sampled_from(["choe-charniak", "rnng"]),
    seed=st.integers(0, 10**6),
    words=st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=5),
    starts=st.lists(st.booleans(), min_size=5, max_size=5),
    beams=st.tuples(st.integers(1, 30), st.integers(1, 6), st.integers(0, 4)),
    bounds=st.tuples(st.integers(1, 4), st.integers(1, 3)),
)
def test_the_search_only_ever_holds_valid_prefixes(style, seed, words, starts, beams, bounds):
    model = ToyModel(style, seed=seed)
    pieces = model.ids(words)
    starts = [True] + starts[1 : len(words)]  # which pieces begin a word
    settings = BeamSettings(*beams, max_open=bounds[0], max_openers=bounds[1])

    def make():
        return CheckingDecoder(model, pieces, starts)

    found = search_pieces(model.action_grammar(), make, [pieces], settings, word_starts=[starts])[0]
    assert found.forced_pieces == 0 and np.isfinite(found.logprob)
    assert len(found.prefix_logprobs) == len(pieces) and (np.diff(found.prefix_logprobs) <= 1e-9).all()
    tree = actions_to_tree(spelled(model, found.best), style)
    assert tree.leaves() == words
    assert found.best_logprob <= found.logprob + 1e-9


# --- pieces of one word, forced pieces, words-only models ---------------------------------------------


def test_no_constituent_opens_or_closes_inside_a_word():
    model = ToyModel("choe-charniak", seed=11)
    pieces = model.ids(["x", "y", "z", "y"])
    starts = [True, False, True, False]  # two words of two pieces each
    settings = BeamSettings(10**6, 10**6, 10**6, max_open=3, max_openers=2)
    found = search_pieces(model.action_grammar(), model.decoder, [pieces], settings, word_starts=[starts])[0]
    free = search_pieces(model.action_grammar(), model.decoder, [pieces], settings)[0]
    assert found.logprob < free.logprob  # fewer derivations
    best = found.best
    at = [i for i, t in enumerate(best) if t in pieces]
    assert at[1] == at[0] + 1 and at[3] == at[2] + 1


def test_a_piece_no_state_can_generate_is_forced_and_reported():
    model = ToyModel("rnng", seed=1, forbid=[])
    y = model.vocab.index("y")
    model.options["forbid"] = [y]
    found = search_pieces(model.action_grammar(), model.decoder, [model.ids(["x", "y", "z"])])[0]
    assert found.forced_pieces == 1
    assert np.isfinite(found.prefix_logprobs).all()
    assert found.prefix_logprobs[1] - found.prefix_logprobs[0] <= -1000 + 1e-6


@pytest.mark.parametrize("keeps", [True, False])
def test_words_only_models_are_scored_exactly_with_one_hypothesis(keeps):
    """One hypothesis per sentence never waits: any decoder serves, with ``KEEP`` or without."""
    model = ToyModel("words", seed=4, keeps=keeps)
    pieces = model.ids(["z", "y", "x"])
    found = search_pieces(model.action_grammar(), model.decoder, [pieces], BeamSettings(1, 1, 0))[0]
    decoder = model.decoder()
    expected, prefix = [], ()
    for token in [*pieces, EOS_ID]:
        expected.append(decoder.row_logprobs(prefix)[token].item())
        prefix = (*prefix, token)
    np.testing.assert_allclose(found.prefix_logprobs, np.cumsum(expected[:-1]), atol=1e-6)
    assert found.logprob == pytest.approx(sum(expected), abs=1e-6)
    assert found.best == [*pieces, EOS_ID] and found.exhausted_pieces == 0


def test_bad_input():
    model = ToyModel()
    with pytest.raises(ValueError, match="no word pieces"):
        search_pieces(model.action_grammar(), model.decoder, [[]])
    with pytest.raises(ValueError, match="not word pieces"):
        search_pieces(model.action_grammar(), model.decoder, [[model.vocab.index("(A")]])
    with pytest.raises(ValueError, match="action_beam"):
        BeamSettings(0)
    without_keep = ToyModel(keeps=False)
    with pytest.raises(ValueError, match="supports_keep"):
        search_pieces(without_keep.action_grammar(), without_keep.decoder, [without_keep.ids(["x"])])


# --- tiny real models -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beam")
    write_synthetic_treebank(folder / "data", sentences=120, seed=0)
    vocab = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    trees = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    models = {}
    for name in ("tg", "plm"):
        torch.manual_seed(0)
        models[name] = build_model({"model": name, **TINY}, {"vocab": vocab}).eval()
    return {"models": models, "trees": sorted(trees, key=lambda t: len(t.leaves()))}


@pytest.mark.parametrize("name", ["tg", "plm"])
def test_real_models_unbounded_beam_equals_enumeration(tiny, name):
    model = tiny["models"][name]
    words = tiny["trees"][0].leaves()[:2]
    pieces = model.vocab.encode_words(words).ids
    settings = BeamSettings(10**6, 10**6, 10**6, max_open=2, max_openers=1)
    found = search_pieces(model.action_grammar(), model.decoder, [pieces], settings)[0]
    prefix, total = exact_marginals(
        model.action_grammar(), model.decoder, pieces, max_open=2, max_openers=1, renormalise=True
    )
    np.testing.assert_allclose(found.prefix_logprobs, prefix, atol=1e-4)
    assert found.logprob == pytest.approx(total, abs=1e-4)
    small = search_pieces(
        model.action_grammar(), model.decoder, [pieces], BeamSettings(5, 2, 1, max_open=2, max_openers=1)
    )
    assert small[0].logprob < total and (small[0].prefix_logprobs <= prefix + 1e-6).all()


@pytest.mark.parametrize("name", ["tg", "plm"])
def test_real_models_beam_search(tiny, name):
    model = tiny["models"][name]
    sentences = [tree.leaves() for tree in tiny["trees"][:3]]
    results = beam_search(model, sentences, BeamSettings(20, 5, 2), batch_size=2)
    for words, scores in zip(sentences, results):
        assert scores.tree is not None and scores.tree.leaves() == words
        assert len(scores.piece_logprobs) == len(words) and (scores.piece_logprobs < 0).all()
        assert scores.tree_logprob <= scores.logprob + 1e-9
        assert scores.details["forced_pieces"] == 0
    alone = beam_search(model, sentences[1:2], BeamSettings(20, 5, 2))[0]
    assert alone.logprob == pytest.approx(results[1].logprob, abs=1e-4)


def test_the_row_logsumexp_in_blocks_is_torchs_over_every_row():
    from syntaxlm.inference.grammar import LOGSUMEXP_BLOCK_ROWS, row_logsumexp

    generator = torch.Generator().manual_seed(0)
    values = torch.randn(3 * LOGSUMEXP_BLOCK_ROWS + 5, 1000, generator=generator) * 10
    bias = torch.zeros(1000).masked_fill(torch.arange(1000) % 3 == 0, -torch.inf)
    # float32 sums of 1,000 terms of at most 1: the order of summation moves them by ~1e-6 relative
    torch.testing.assert_close(row_logsumexp(values), torch.logsumexp(values, dim=1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(
        row_logsumexp(values, bias), torch.logsumexp(values + bias, dim=1), rtol=1e-5, atol=1e-5
    )
    masked = torch.full((LOGSUMEXP_BLOCK_ROWS + 1, 1000), -torch.inf)
    assert torch.equal(row_logsumexp(masked), torch.full((LOGSUMEXP_BLOCK_ROWS + 1,), -torch.inf))
