"""The plain LM, PLM, PLM-mask and SCLM (models/action_lm.py): the rows ``prepare`` makes, loss sums
and counts, the two restricted heads of PLM-mask, the SCLM scaffold and its weights, word log-probs
against the loss, a short training run against the unigram baseline, files, and config errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.models import build_model, load_model
from syntaxlm.models.action_lm import MODELS, ActionLM, ActionLMConfig, SkippedTreesWarning
from syntaxlm.models.base import ConfigError
from syntaxlm.structure.actions import encode_actions, tree_to_actions
from syntaxlm.structure.plm_mask import BUFFER_HEAD, STACK_HEAD, plm_mask_input
from syntaxlm.structure.sclm import ActionNgramVocab, scaffold_labels
from syntaxlm.text.base import BOS_ID, EOS_ID, UNK_ID
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree
from tests.floats import assert_tensors_close

SMALL = {"d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64, "dropout": 0.0, "attention_dropout": 0.0}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("action_lm")
    write_synthetic_treebank(folder / "data", sentences=300, seed=0)
    train = list(TreeReader(folder / "data" / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    dev = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    words = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    subwords = build_vocabulary(
        folder / "data" / "train.trees", folder / "subwords", kind="subword", vocab_size=400
    )
    return {"train": train, "dev": dev, "words": words, "subwords": subwords}


def make_model(name: str, data, vocab: str = "words", seed: int = 0, **options) -> ActionLM:
    config = ActionLMConfig(model=name, **{**SMALL, **options})
    torch.manual_seed(seed)
    return ActionLM(config, ActionLM.vocabularies_for(config, data["train"], data[vocab]))


def whole(corpus):
    """The corpus as one batch, rows in order."""
    return next(corpus.batches(len(corpus), shuffle=False))


# --- rows -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_prepare_rows(data, name):
    model = make_model(name, data)
    trees = data["dev"][:8]
    corpus = model.prepare(trees)
    expected = {"inputs", "labels"} | {"plm-mask": {"open_start"}}.get(name, set())
    expected |= {"scaffold"} if name.startswith("sclm") else set()
    assert set(corpus.fields) == expected
    assert corpus.target_fields == (
        {"lm": "labels", "scaffold": "scaffold"} if name.startswith("sclm") else {"lm": "labels"}
    )
    for row, tree in enumerate(trees):
        n = corpus.lengths[row]
        inputs, labels = corpus.fields["inputs"][row], corpus.fields["labels"][row]
        assert inputs[0] == BOS_ID and (inputs[n:] == 0).all() and (labels[n:] == 0).all()
        assert (inputs[1:n] == labels[: n - 1]).all()  # labels are the inputs shifted by one
        if name in ("plm", "plm-mask"):
            encoded = encode_actions(tree_to_actions(tree, "rnng"), data["words"])
            assert (labels[:n] == encoded.ids).all()  # every action is a target, no </s>
            if name == "plm-mask":
                expected_start = plm_mask_input(encoded).open_start[:-1]
                assert (corpus.fields["open_start"][row, :n] == expected_start).all()
        else:
            assert (labels[: n - 1] == data["words"].encode(tree.leaves())).all() and labels[n - 1] == EOS_ID
    assert corpus.n_targets["lm"] == int((corpus.fields["labels"] != 0).sum())


@pytest.mark.parametrize("direction", ["past", "next"])
def test_sclm_scaffold_labels_are_aligned(data, direction):
    model = make_model(f"sclm-{direction}", data, vocab="subwords")
    ngrams = model.vocabularies["ngrams"]
    trees = data["dev"][:6]
    corpus = model.prepare(trees)
    for row, tree in enumerate(trees):
        n = corpus.lengths[row]
        expected = scaffold_labels(tree, data["subwords"], ngrams, direction=direction)
        assert (corpus.fields["inputs"][row, :n] == expected.ids).all()
        assert (corpus.fields["scaffold"][row, :n] - 1 == expected.labels).all()
        if direction == "past":  # <s> carries the pad label, counted like the authors' loss
            assert corpus.fields["scaffold"][row, 0] - 1 == ngrams.pad_id
    assert corpus.n_targets["scaffold"] == int(corpus.lengths[: len(trees)].sum())


def test_words_spelled_like_symbols_are_unknown(data):
    tree = Tree("S", [Tree("NP", ["REDUCE", "<s>"]), Tree("VP", ["sings"])])
    for name, words_at in [("lm", [1, 2]), ("sclm-next", [1, 2]), ("plm", [3, 4])]:
        model = make_model(name, data)
        inputs = model.prepare([tree]).fields["inputs"][0]
        assert inputs[words_at].tolist() == [UNK_ID, UNK_ID]
        scores = model.word_logprobs([tree.leaves()], **({"trees": [tree]} if name == "plm" else {}))[0]
        assert scores.shape == (3,)


def test_prepare_skips_and_says_so(data):
    model = make_model("plm", data, max_actions=40)
    trees = data["dev"]
    too_many = sum(len(tree_to_actions(tree, "rnng")) > 40 for tree in trees)
    assert 0 < too_many < len(trees)
    with pytest.warns(
        SkippedTreesWarning, match=rf"skipped {too_many} of {len(trees)} trees: {too_many} with more"
    ):
        corpus = model.prepare(trees)
    assert len(corpus) == len(trees) - too_many
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_model("plm", data).prepare(trees)  # nothing skipped, no warning


# --- loss -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
@torch.no_grad()
def test_loss_sums_and_counts(data, name):
    model = make_model(name, data).eval()
    corpus = model.prepare(data["dev"])
    batch = whole(corpus)
    out = model.loss(batch)
    assert out.counts == corpus.n_targets and out.state is None
    assert set(out.sums) == set(model.loss_weights) == set(corpus.target_fields)
    # At initialisation every target costs about log |V| (or log of the n-gram labels).
    assert float(out.sums["lm"]) / out.counts["lm"] == pytest.approx(np.log(len(data["words"])), rel=0.05)
    # Sums add up over batches; counts are the batch's (the data layer's, for the global batch).
    halves = list(corpus.batches(len(corpus) // 2 + 1, shuffle=False))
    parts = [model.loss(b) for b in halves]
    for part in out.sums:
        assert sum(float(p.sums[part]) for p in parts) == pytest.approx(float(out.sums[part]), rel=1e-5)
        assert sum(p.counts[part] for p in parts) == out.counts[part]


@pytest.mark.parametrize("alpha", [0.5, 0.3])
@torch.no_grad()
def test_sclm_loss_is_weighted_lm_and_scaffold(data, alpha):
    model = make_model("sclm-next", data, scaffold_weight=alpha).eval()
    assert model.loss_weights == {"lm": pytest.approx(1 - alpha), "scaffold": pytest.approx(alpha)}
    corpus = model.prepare(data["dev"][:10])
    batch = whole(corpus)
    out = model.loss(batch)
    # The scaffold part recomputed from the hidden states and the label field.
    hidden = model(batch["inputs"].long())
    labels = batch["scaffold"].long()
    logprobs = model.scaffold_head(hidden).log_softmax(-1)
    picked = logprobs.gather(-1, (labels - 1).clamp(min=0)[..., None])[..., 0]
    assert float(out.sums["scaffold"]) == pytest.approx(-float(picked[labels != 0].sum()), rel=1e-5)
    assert out.counts["scaffold"] == int((labels != 0).sum())
    # The LM part is the plain LM's: the same rows, and words scored with the LM head alone.
    lm = make_model("lm", data)
    lm.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("scaffold_head")})
    assert float(lm.eval().loss(whole(lm.prepare(data["dev"][:10]))).sums["lm"]) == pytest.approx(
        float(out.sums["lm"]), rel=1e-6
    )


# --- PLM-mask heads ---------------------------------------------------------------------------


def test_plm_mask_heads_see_only_their_part(data):
    """Per-head attention outputs of a single layer: a row's output has zero gradient with respect
    to every key outside its head's mask (the query's own position excepted)."""
    model = make_model("plm-mask", data, n_layers=1, n_heads=4).eval()
    item = plm_mask_input(encode_actions(tree_to_actions(data["dev"][0], "rnng"), data["words"]))
    open_start = torch.from_numpy(item.open_start)[None]
    length = len(item.ids)
    attention = model.transformer.blocks[0].attention
    attention.out = nn.Identity()  # heads side by side: [B, L, H * d_head]
    d_head = attention.d_head
    mask = model.attention_mask(length, open_start)
    assert mask.shape == (1, 4, length, length)
    restricted = 0
    for t in range(length):
        s = int(item.open_start[t])
        for head in range(4):
            x = torch.randn(1, length, model.config.d_model, requires_grad=True)
            attention(x, mask)[0, t, head * d_head : (head + 1) * d_head].sum().backward()
            touched = set(torch.nonzero(x.grad[0].abs().sum(-1)).flatten().tolist())
            if head == STACK_HEAD and s >= 0:
                keys = set(range(s, t + 1))
            elif head == BUFFER_HEAD and s >= 0:
                keys = set(range(s))
                restricted += 1
            else:
                keys = set(range(t + 1))
            # Nothing outside the mask matters, every key inside does; the query's own position
            # matters too unless a single key is visible (its weight is then 1 whatever the query).
            assert keys <= touched <= keys | {t}, (t, head, s)
    assert restricted > length // 2


@torch.no_grad()
def test_plm_mask_loss_uses_the_parser_state(data):
    model = make_model("plm-mask", data).eval()
    batch = whole(model.prepare(data["dev"][:4]))
    plain = float(model.loss(batch).sums["lm"])
    batch.tensors["open_start"] = torch.full_like(batch["open_start"], -1)  # every row causal
    assert abs(float(model.loss(batch).sums["lm"]) - plain) > 1e-3
    plm = make_model("plm", data)
    plm.load_state_dict(model.state_dict())
    assert float(plm.eval().loss(batch).sums["lm"]) == pytest.approx(
        float(model.loss(batch).sums["lm"]), rel=1e-6
    )


# --- word log-probs ---------------------------------------------------------------------------


@pytest.mark.parametrize("vocab", ["words", "subwords"])
@pytest.mark.parametrize("name", ["lm", "sclm-past", "sclm-next"])
@torch.no_grad()
def test_word_logprobs_match_the_loss(data, name, vocab):
    model = make_model(name, data, vocab=vocab).eval()
    trees = data["dev"][:7]
    sentences = [tree.leaves() for tree in trees]
    with_eos = model.word_logprobs(sentences, eos=True, batch_size=3)
    without = model.word_logprobs(sentences)
    for sentence, a, b in zip(sentences, with_eos, without):
        assert a.shape == (len(sentence) + 1,) and b.shape == (len(sentence),)
        assert a.dtype == torch.float64 and torch.allclose(a[:-1], b, atol=1e-5) and (a < 0).all()
    total = sum(float(scores.sum()) for scores in with_eos)
    assert total == pytest.approx(-float(model.loss(whole(model.prepare(trees))).sums["lm"]), rel=1e-5)
    # A sentence scores the same alone and in a batch.
    alone = model.word_logprobs(sentences[2:3], eos=True)[0]
    assert torch.allclose(alone, with_eos[2], atol=1e-5)


@pytest.mark.parametrize("vocab", ["words", "subwords"])
@pytest.mark.parametrize("name", ["plm", "plm-mask"])
@torch.no_grad()
def test_joint_word_logprobs_under_trees(data, name, vocab):
    model = make_model(name, data, vocab=vocab).eval()
    trees = data["dev"][:5]
    sentences = [tree.leaves() for tree in trees]
    scores = model.word_logprobs(sentences, trees=trees, eos=True, batch_size=2)
    for tree, sentence, values in zip(trees, sentences, scores):
        one = model.loss(whole(model.prepare([tree])))
        assert values.shape == (len(sentence) + 1,)
        assert float(values.sum()) == pytest.approx(-float(one.sums["lm"]), rel=1e-5)  # log p(x, y)
    # The first word carries the NTs before it; eos=False drops the closing REDUCEs' entry. Alone
    # rather than in a batch of two (other matmul shapes): equal up to rounding.
    assert_tensors_close(model.word_logprobs(sentences[:1], trees=trees[:1])[0], scores[0][:-1])
    with pytest.raises(ValueError, match="trees="):
        model.word_logprobs(sentences)
    with pytest.raises(ValueError, match="sentence 1: the words of trees"):
        model.word_logprobs(sentences[:2], trees=[trees[0], trees[0]])
    with pytest.raises(ValueError, match="2 trees for 1 sentences"):
        model.word_logprobs(sentences[:1], trees=trees[:2])


def test_word_logprobs_bad_input(data):
    model = make_model("lm", data, max_length=8)
    with pytest.raises(TypeError, match="sentence 0 is a string"):
        model.word_logprobs(["the bird sings"])
    with pytest.raises(ValueError, match="sentence 1: 11 positions exceed max_length 8"):
        model.word_logprobs([["a"], ["a"] * 10])
    assert model.training  # scoring leaves the mode as it was


# --- training ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_short_training_beats_the_unigram_baseline(data, name):
    model = make_model(name, data)
    corpus, dev = model.prepare(data["train"]), model.prepare(data["dev"])
    # Add-one unigram over the training targets, scored on the validation targets.
    train_targets = corpus.fields["labels"][corpus.fields["labels"] != 0]
    counts = np.bincount(train_targets, minlength=len(data["words"])) + 1
    dev_targets = dev.fields["labels"][dev.fields["labels"] != 0]
    unigram = float(-np.log(counts[dev_targets] / counts.sum()).mean())

    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    weights = model.loss_weights
    steps = 0
    for epoch in range(100):
        for batch in corpus.batches(16, seed=0, epoch=epoch):
            out = model.loss(batch)
            loss = sum(w * out.sums[part] / out.counts[part] for part, w in weights.items())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if steps == 150:
                break
        if steps == 150:
            break
    with torch.no_grad():
        out = model.eval().loss(whole(dev))
        validation = float(out.sums["lm"]) / out.counts["lm"]
    assert validation < 0.9 * unigram, (validation, unigram)


# --- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sclm-past", "plm-mask"])
@torch.no_grad()
def test_save_and_load_give_the_same_model(data, tmp_path, name):
    model = make_model(name, data, vocab="subwords", tie_embeddings=name == "plm-mask").eval()
    model.save_pretrained(tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert isinstance(loaded, ActionLM) and loaded.config == model.config and not loaded.training
    assert loaded.vocab == model.vocab
    if name.startswith("sclm"):
        assert isinstance(loaded.vocabularies["ngrams"], ActionNgramVocab)
        assert loaded.vocabularies["ngrams"] == model.vocabularies["ngrams"]
    else:
        assert "lm_head.weight" not in model.state_dict()  # tied: the embeddings are the output layer
    batch = whole(model.prepare(data["dev"][:5]))
    a, b = model.loss(batch), loaded.loss(batch)  # the same weights on the same batch: the same bits
    for part in a.sums:
        assert torch.equal(a.sums[part], b.sums[part])
    trees = data["dev"][:3]
    options = {"trees": trees} if name == "plm-mask" else {}
    sentences = [tree.leaves() for tree in trees]
    for x, y in zip(model.word_logprobs(sentences, **options), loaded.word_logprobs(sentences, **options)):
        assert torch.equal(x, y)


def test_untied_embeddings_have_an_output_layer(data):
    model = make_model("lm", data, tie_embeddings=False)
    assert model.state_dict()["lm_head.weight"].shape == (len(data["words"]), SMALL["d_model"])
    assert model.lm_head.weight.data_ptr() != model.token_embedding.weight.data_ptr()


# --- config -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"model": "plm-mask", "n_heads": 1, "d_model": 32}, "at least 2 for plm-mask"),
        ({"model": "lm", "attention_dropout": 1.0}, "attention_dropout must be in"),
        ({"model": "lm", "max_length": 1}, "max_length must be at least 2"),
        ({"model": "lm", "positions": "sinusoidal"}, "positions must be one of learned, none"),
        ({"model": "sclm-next", "scaffold_weight": 1.0}, r"scaffold_weight \(α\) must be in \[0, 1\)"),
        ({"model": "plm", "max_actions": 0}, "max_actions must be at least 1"),
        ({"model": "lm", "d_model": 30, "n_heads": 4}, "multiple of model.n_heads"),
        ({"model": "lm", "pre_ln": "yes"}, "pre_ln must be bool"),
        ({"model": "lm", "max_length": 2.5}, "max_length must be int"),
        ({"model": "lm", "tied": True}, "unknown key"),
    ],
)
def test_bad_config_values(data, values, message):
    with pytest.raises(ConfigError, match=message):
        build_model(values, {"vocab": data["words"]})


def test_config_and_vocabulary_errors(data):
    with pytest.raises(ConfigError, match="not an action LM"):
        ActionLMConfig(model="tg").check()
    with pytest.raises(ConfigError, match="'ngrams' vocabulary"):
        ActionLM(ActionLMConfig(model="sclm-past", **SMALL), {"vocab": data["words"]})
    from syntaxlm.text.vocab import WordVocab

    no_actions = WordVocab.build([tree.leaves() for tree in data["train"]], symbols=["(S", "S)"])
    with pytest.raises(ConfigError, match="no REDUCE symbol"):
        ActionLM(ActionLMConfig(model="plm", **SMALL), {"vocab": no_actions})
    assert set(ActionLM.vocabularies_for(ActionLMConfig(model="lm"), data["train"], data["words"])) == {
        "vocab"
    }
