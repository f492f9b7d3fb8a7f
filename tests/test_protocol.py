"""Every registered model against the one interface (``models/base.py``, ``models/decoding.py``):

- the incremental decoder equals the full forward pass: gold sequences fed token by token, several
  at once and reordered between steps as a beam does, give the word log-probs of ``word_logprobs``
  and the training loss of each sentence;
- gold ``word_logprobs`` (``eos=True``) sum to minus the loss's ``lm`` part on the same sentences,
  whatever mode the model is in;
- ``save_pretrained`` → ``load_model`` gives the same config, tensors and scores, bit for bit;
- bad input (an empty sentence, one longer than ``longest_sentence()``, trees that do not match the
  sentences) is a ``ValueError`` that names the sentence.

Each model is its ``configs/<name>-tiny.yaml`` recipe made smaller, with random weights drawn from a
fixed seed, over a subword vocabulary (most words are several pieces) of synthetic trees. A model
added to ``syntaxlm.models.MODEL_NAMES`` is checked here with no change to this file. Results of two
computations that differ only in batching are compared within float32 rounding (``tests/floats.py``),
those of the same computation bit for bit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml

from syntaxlm.data.synthetic import SyntheticTreebank
from syntaxlm.models import MODEL_NAMES, SyntacticLM, build_model, load_model, model_class, model_config
from syntaxlm.structure.actions import atomic_words_as_unk, encode_actions, tree_to_actions
from syntaxlm.text.base import EOS_ID, Vocabulary
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, write_trees
from syntaxlm.trees.tree import Tree
from tests.floats import assert_tensors_close

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# The recipes' sizes made tiny, where a recipe has the field (also inside DM's base_options).
# Recurrent models read sentences from a zero state, as word_logprobs does (a stream of sentences
# would carry context from one sentence into the next), and the absolute positions stop early so
# that the longest sentence is short.
TINY = {
    "d_model": 32,
    "n_layers": 2,
    "d_ff": 64,
    "hidden_size": 32,
    "d_syntactic": 8,
    "max_length": 48,
    "order": "sentences",
}

# Wider than the models' own initialisations (GPT-2's 0.02 makes every next-token distribution
# nearly uniform): the distributions after different prefixes then differ by far more than float32
# rounding, so that a decoder that mixes up its prefixes fails the tests.
WEIGHT_STD = 0.5


@dataclass
class Data:
    trees: list[Tree]  # the training trees the vocabularies are made from
    vocab: Vocabulary
    gold: list[Tree]  # a few short trees of different lengths, scored in the tests
    other: Tree  # a tree of another sentence

    @property
    def sentences(self) -> list[list[str]]:
        return [tree.leaves() for tree in self.gold]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Data:
    folder = tmp_path_factory.mktemp("protocol")
    write_trees(folder / "train.trees", SyntheticTreebank(seed=0).trees(48))
    trees = list(TreeReader(folder / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    vocab = build_vocabulary(folder / "train.trees", folder / "vocab", kind="subword", vocab_size=500)
    shortest = sorted(trees, key=lambda tree: len(tree.leaves()))
    gold = shortest[:4]
    assert len({len(vocab.encode_words(tree.leaves()).ids) for tree in gold}) > 1  # padded batches
    return Data(trees, vocab, gold, shortest[4])


def tiny_values(name: str) -> dict:
    """The ``model`` section of ``configs/<name>-tiny.yaml`` with the ``TINY`` sizes."""
    values = yaml.safe_load((PROJECT_ROOT / "configs" / f"{name}-tiny.yaml").read_text())["model"]
    for section in (values, values.get("base_options", {})):
        section.update({field: value for field, value in TINY.items() if field in section})
    return values


@pytest.fixture(scope="module", params=MODEL_NAMES)
def model(request, data) -> SyntacticLM:
    """The model in eval mode, every parameter drawn from N(0, WEIGHT_STD)."""
    config = model_config(tiny_values(request.param))
    vocabularies = model_class(config.model).vocabularies_for(config, data.trees, data.vocab)
    torch.manual_seed(0)
    model = build_model(config, vocabularies).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, WEIGHT_STD)
    return model


def is_joint(model: SyntacticLM) -> bool:
    """Whether the model scores words under a tree (``word_logprobs`` takes ``trees=``)."""
    return model.action_grammar().style != "words"


def trees_option(model: SyntacticLM, trees: list[Tree]) -> dict:
    return {"trees": trees} if is_joint(model) else {}


def gold_tokens(model: SyntacticLM, tree: Tree) -> tuple[list[int], list[int]]:
    """The tokens a decoder is fed after ``<s>`` for ``tree`` (the actions in the grammar's style,
    or the words' pieces and ``</s>``), and the entry of ``word_logprobs(eos=True)`` each token's
    log-prob belongs to: its word, for a structure action the next word, after the last word the
    end entry."""
    grammar = model.action_grammar()
    words = tree.leaves()
    if grammar.style == "words":
        encoding = model.vocab.encode_words(atomic_words_as_unk(words, model.vocab))
        tokens, word_index = list(encoding.ids), list(encoding.word_index)
    else:
        encoded = encode_actions(tree_to_actions(tree, grammar.style), model.vocab)
        tokens, word_index = encoded.ids.tolist(), encoded.word_index.tolist()
    if grammar.ends_with_eos:
        tokens, word_index = [*tokens, EOS_ID], [*word_index, len(words)]
    owners, seen = [], -1
    for word in word_index:
        seen = max(seen, word)
        owners.append(word if word >= 0 else seen + 1)
    return tokens, owners


def beam_parents(origin: torch.Tensor, alive: list[int], generator: torch.Generator) -> torch.Tensor:
    """Parents as a beam step chooses them: one hypothesis of each sequence in ``alive`` kept, a few
    copied, the others (and every hypothesis of a finished sequence) dropped, the lot shuffled."""
    kept = []
    for sequence in alive:
        holders = (origin == sequence).nonzero()[:, 0]
        kept.append(holders[torch.randint(len(holders), (1,), generator=generator)])
    following = torch.cat(kept)
    copies = following[torch.randint(len(following), (len(alive),), generator=generator)]
    parents = torch.cat([following, copies])
    return parents[torch.randperm(len(parents), generator=generator)]


def decoded_logprobs(model: SyntacticLM, sequences: list[list[int]]) -> list[torch.Tensor]:
    """Each gold token's log-prob from one decoder holding every sequence, two hypotheses each to
    begin with, reordered, copied and dropped between steps; the hypotheses of one sequence give
    the same next-token distribution, and every distribution is normalised."""
    k = len(sequences)
    origin = torch.arange(2 * k) % k  # the sequence each hypothesis follows
    generator = torch.Generator().manual_seed(0)
    got = [torch.zeros(len(tokens), dtype=torch.float64) for tokens in sequences]
    decoder = model.decoder()
    decoder.start(len(origin))
    for t in range(max(map(len, sequences))):
        assert decoder.size == len(origin)
        logprobs = decoder.logprobs()
        assert logprobs.shape == (len(origin), len(model.vocab))
        assert_tensors_close(logprobs.exp().sum(-1), torch.ones(len(origin)), name=f"normalised, step {t}")
        for sequence in origin.unique().tolist():
            rows = (origin == sequence).nonzero()[:, 0]
            for row in rows[1:]:
                assert_tensors_close(logprobs[row], logprobs[rows[0]], name=f"sequence {sequence}, step {t}")
            got[sequence][t] = float(logprobs[rows[0], sequences[sequence][t]])
        alive = [s for s in range(k) if t + 1 < len(sequences[s])]
        if not alive:
            break
        parents = beam_parents(origin, alive, generator)
        tokens = torch.tensor([sequences[s][t] for s in origin[parents].tolist()])
        decoder.advance(parents, tokens)
        origin = origin[parents]
    return got


@torch.no_grad()
def lm_loss(model: SyntacticLM, trees: list[Tree], batch_size: int) -> tuple[torch.Tensor, int]:
    """The ``lm`` part of the loss over ``trees`` (eval mode, batches in order, state passed on)
    and the number of targets it counts."""
    corpus = model.prepare(trees)
    assert len(corpus) == len(trees)  # no tree dropped
    total, count, state = torch.zeros((), dtype=torch.float64), 0, None
    for batch in corpus.batches(batch_size, shuffle=False):
        out = model.loss(batch, state)
        total, count, state = total + out.sums["lm"].double(), count + batch.counts["lm"], out.state
    return total, count


# --- the decoder equals the full pass ----------------------------------------------------------------


def test_the_decoder_equals_the_full_pass(model, data):
    """Log-probs of the gold tokens through ``decoder()`` summed per word are ``word_logprobs``
    (a batched pass over whole sentences), and summed per sentence minus that sentence's loss
    (the training pass), which counts as many targets as the decoder was asked for."""
    sequences, owners = zip(*(gold_tokens(model, tree) for tree in data.gold), strict=True)
    decoded = decoded_logprobs(model, list(sequences))
    scored = model.word_logprobs(data.sentences, eos=True, **trees_option(model, data.gold))
    for i, (words, tokens, owner) in enumerate(zip(data.sentences, decoded, owners, strict=True)):
        per_word = torch.zeros(len(words) + 1, dtype=torch.float64).index_add_(0, torch.tensor(owner), tokens)
        assert_tensors_close(per_word, scored[i], name=f"sentence {i}")
        loss, count = lm_loss(model, [data.gold[i]], batch_size=1)
        assert count == len(tokens)
        assert_tensors_close(-loss, tokens.sum(), name=f"loss of sentence {i}")


# --- word log-probs and the loss -----------------------------------------------------------------------


def test_gold_word_logprobs_sum_to_minus_the_loss(model, data):
    """In eval mode, ``Σ word_logprobs(eos=True)`` is ``−loss.sums["lm"]`` on the same sentences
    prepared as one batch (the loss counts every piece and ``</s>``, or every action); without
    ``eos`` the same entries but the last; a model in training mode gives the same bits and stays
    in training mode."""
    option = trees_option(model, data.gold)
    scored = model.word_logprobs(data.sentences, eos=True, **option)
    assert [len(values) for values in scored] == [len(words) + 1 for words in data.sentences]
    assert all(values.dtype == torch.float64 for values in scored)
    without_end = model.word_logprobs(data.sentences, **option)
    for values, shorter in zip(scored, without_end, strict=True):
        assert torch.equal(shorter, values[:-1])
    loss, _ = lm_loss(model, data.gold, batch_size=len(data.gold))
    assert_tensors_close(-loss, sum(values.sum() for values in scored), name="lm loss")
    model.train()
    try:
        in_training = model.word_logprobs(data.sentences, eos=True, **option)
        assert model.training
    finally:
        model.eval()
    for values, again in zip(scored, in_training, strict=True):
        assert torch.equal(values, again)


# --- saving and loading ---------------------------------------------------------------------------------


def test_save_then_load_gives_the_same_model_bit_for_bit(model, data, tmp_path):
    folder = model.save_pretrained(tmp_path / model.config.model)
    loaded = load_model(folder)
    assert type(loaded) is type(model) and not loaded.training
    assert loaded.config == model.config
    assert sorted(loaded.vocabularies) == sorted(model.vocabularies)
    assert [loaded.vocab.token(i) for i in range(len(loaded.vocab))] == [
        model.vocab.token(i) for i in range(len(model.vocab))
    ]
    saved, read = model.state_dict(), loaded.state_dict()
    assert list(read) == list(saved)
    for name, tensor in saved.items():
        assert read[name].dtype == tensor.dtype and torch.equal(read[name], tensor), name
    option = trees_option(model, data.gold)
    for a, b in zip(
        loaded.word_logprobs(data.sentences, eos=True, **option),
        model.word_logprobs(data.sentences, eos=True, **option),
        strict=True,
    ):
        assert torch.equal(a, b)


# --- bad input -------------------------------------------------------------------------------------------


def refused(model: SyntacticLM, sentences, **options) -> str:
    """The message of the ``ValueError`` that ``word_logprobs`` raises."""
    with pytest.raises(ValueError) as raised:
        model.word_logprobs(sentences, **options)
    return str(raised.value)


def names_sentence(message: str, index: int) -> bool:
    """Whether ``message`` names sentence ``index`` (or its tree, ``trees[index]``)."""
    return re.search(rf"\bsentence {index}\b|\btrees\[{index}\]", message) is not None


def test_an_empty_sentence_is_refused(model, data):
    """(Joint models get an empty tree for it.)"""
    sentences = [*data.sentences[:2], []]
    message = refused(model, sentences, **trees_option(model, [*data.gold[:2], Tree(data.gold[0].label)]))
    assert names_sentence(message, 2), message


def test_a_sentence_longer_than_the_model_reads_is_refused(model, data):
    """A sentence of ``longest_sentence()`` pieces (under a flat tree for joint models) is scored,
    and a decoder reads every token of it; one twice as long is refused. A model without a limit
    (recurrent, or segments with memory) scores a sentence longer than any it was built for."""
    longest = model.longest_sentence()
    word = next(w for words in data.sentences for w in words if len(model.vocab.encode_words([w]).ids) == 1)
    label = data.gold[0].label
    if longest is None:
        words = [word] * 300
        scored = model.word_logprobs([words], **trees_option(model, [Tree(label, words)]))[0]
        assert len(scored) == 300 and bool(torch.isfinite(scored).all())
        return
    fits, too_long = [word] * longest, [word] * (2 * longest)
    scored = model.word_logprobs([fits], **trees_option(model, [Tree(label, fits)]))
    assert len(scored[0]) == longest
    decoder = model.decoder()
    decoder.start(1)
    for token in gold_tokens(model, Tree(label, fits))[0]:
        decoder.advance(torch.tensor([0]), torch.tensor([token]))
    sentences = [data.sentences[0], too_long]
    message = refused(model, sentences, **trees_option(model, [data.gold[0], Tree(label, too_long)]))
    assert names_sentence(message, 1), message


def test_a_joint_model_needs_one_tree_per_sentence_and_a_words_only_model_none(model, data):
    if not is_joint(model):
        assert "trees=" in refused(model, data.sentences[:3], trees=data.gold[:3])
        return
    assert "trees=" in refused(model, data.sentences[:3])
    message = refused(model, data.sentences[:3], trees=data.gold[:2])
    assert re.search(r"\b2 trees\b", message) and re.search(r"\b3 sentences\b", message), message
    message = refused(model, data.sentences[:3], trees=[*data.gold[:2], data.other])
    assert names_sentence(message, 2), message  # a tree must have the words of its sentence
