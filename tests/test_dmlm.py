"""Dependency-based mixture LMs (models/dmlm.py): the mixture against hand-computed numbers, the
dependency objective against a brute-force loop, the wrapped base models left as they are, the
decoders against the full pass, the two training stages and how they chain, files, config errors,
real UD data, and the optional spaCy parsing step (data/dependency_parse.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from syntaxlm.data.batching import RowCorpus
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.inference.sampling import generate
from syntaxlm.models import build_model, load_model
from syntaxlm.models.action_lm import ActionLM
from syntaxlm.models.base import ConfigError, ModelFileError
from syntaxlm.models.dmlm import (
    DMLSTM,
    DMLMConfig,
    DMTransformer,
    causal_log_attention,
    dependency_arcs,
    dependency_nll,
    mixture_logprobs,
    mixture_target_logprobs,
    piece_heads,
)
from syntaxlm.models.lstm_lm import LSTMLM
from syntaxlm.models.scoring import word_pieces
from syntaxlm.text.base import BOS_ID, EOS_ID
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.dependency import ConlluReader, DepTree, future_dependents, parse_conllu
from syntaxlm.trees.heads import constituency_to_dependency
from syntaxlm.trees.ptb import TreeReader

TRANSFORMER = {
    "model": "dm-transformer",
    "d_model": 32,
    "n_layers": 3,
    "n_heads": 4,
    "d_ff": 64,
    "dropout": 0.0,
    "base_options": {"attention_dropout": 0.0, "max_length": 128},
}
LSTM = {
    "model": "dm-lstm",
    "d_model": 24,
    "n_layers": 2,
    "n_heads": 1,
    "dropout": 0.0,
    "context_length": 4,
    "base_options": {"hidden_size": 40, "layer_dropout": 0.0, "recurrent_dropout": 0.0},
}
CONFIGS = {"dm-transformer": TRANSFORMER, "dm-lstm": LSTM}

# DMLM's Figure 1 sentence (tests/test_dependency.py has the same analysis).
FIGURE_1 = """1\tred\t_\t_\t_\t_\t2\tamod\t_\t_
2\tfigures\t_\t_\t_\t_\t6\tnsubj\t_\t_
3\ton\t_\t_\t_\t_\t5\tcase\t_\t_
4\tthe\t_\t_\t_\t_\t5\tdet\t_\t_
5\tscreen\t_\t_\t_\t_\t2\tnmod\t_\t_
6\tindicate\t_\t_\t_\t_\t0\troot\t_\t_
7\tfalling\t_\t_\t_\t_\t8\tamod\t_\t_
8\tstocks\t_\t_\t_\t_\t6\tobj\t_\t_
9\t.\t_\t_\t_\t_\t6\tpunct\t_\t_

"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dmlm")
    write_synthetic_treebank(folder / "data", sentences=200, seed=0)
    train = list(TreeReader(folder / "data" / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    words = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    subwords = build_vocabulary(
        folder / "data" / "train.trees", folder / "subwords", kind="subword", vocab_size=500
    )
    return {"train": train, "words": words, "subwords": subwords, "folder": folder}


def make(name: str, data, vocab: str = "words", seed: int = 0, **options):
    torch.manual_seed(seed)
    return build_model({**CONFIGS[name], **options}, {"vocab": data[vocab]})


def whole(corpus: RowCorpus):
    return next(corpus.batches(len(corpus), shuffle=False))


# --- the mixture (Eq. 2-4) ------------------------------------------------------------------------


def test_mixture_equals_a_hand_computed_example():
    # Two positions, three tokens: p_dep of position 0 and 1, and the attention of each position.
    p_dep = torch.tensor([[[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]])
    attention = torch.tensor([[[1.0, 0.0], [0.25, 0.75]]])
    mixed = mixture_logprobs(attention.log(), p_dep.log()).exp()
    # t = 1: 0.25·(0.5, 0.3, 0.2) + 0.75·(0.1, 0.1, 0.8) = (0.2, 0.15, 0.65)
    assert torch.allclose(mixed, torch.tensor([[[0.5, 0.3, 0.2], [0.2, 0.15, 0.65]]]))
    picked = mixture_target_logprobs(attention.log(), p_dep.log(), torch.tensor([[1, 2]]))
    assert torch.allclose(picked, torch.tensor([[math.log(0.3), math.log(0.65)]]))


def test_mixture_in_log_space_does_not_underflow():
    # Probabilities far below float32's smallest number: a sum of probabilities gives log 0.
    log_p = torch.tensor([[[-200.0, -0.0], [-300.0, -0.0]]])
    log_a = torch.tensor([[[0.0, float("-inf")], [math.log(0.5), math.log(0.5)]]])
    picked = mixture_target_logprobs(log_a, log_p, torch.tensor([[0, 0]]))
    expected = math.log(0.5) + -200.0 + math.log1p(math.exp(-100.0))
    assert torch.isfinite(picked).all() and math.isclose(float(picked[0, 1]), expected, rel_tol=1e-6)


def test_target_gather_equals_the_full_mixture():
    torch.manual_seed(1)
    log_a = causal_log_attention(torch.randn(3, 6, 6))
    log_p = torch.randn(3, 6, 11).log_softmax(-1)
    targets = torch.randint(0, 11, (3, 6))
    full = mixture_logprobs(log_a, log_p).gather(-1, targets[..., None])[..., 0]
    assert torch.allclose(mixture_target_logprobs(log_a, log_p, targets), full, atol=1e-6)


def test_lstm_attention_is_eq_2_with_its_window(data):
    model = make("dm-lstm", data).eval()
    torch.manual_seed(2)
    hidden = torch.randn(1, 7, 40)
    got = model.log_attention(hidden).exp()[0]
    q, k = hidden[0] @ model.query.weight.T, hidden[0] @ model.key.weight.T
    for t in range(7):
        window = list(range(max(0, t - 4 + 1), t + 1))  # the last context_length = 4 steps
        scores = torch.stack([q[t] @ k[j] for j in window]) / math.sqrt(40)
        expected = torch.zeros(7)
        expected[window] = scores.softmax(0)
        assert torch.allclose(got[t], expected, atol=1e-6)


def test_transformer_attention_is_the_penultimate_layers(data):
    model = make("dm-transformer", data).eval()
    block = model.base.transformer.blocks[-2]
    torch.manual_seed(3)
    x = torch.randn(2, 5, 32)
    q, k = model.penultimate_queries_keys(x)
    per_head = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(
        ~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")
    )
    probabilities = per_head.softmax(-1)  # [B, H, T, T]
    # These probabilities reproduce the layer's own (SDPA) attention output ...
    _, v = block.attention.keys_values(block.attention_norm(x))
    by_hand = block.attention.out((probabilities @ v).transpose(1, 2).reshape(2, 5, 32))
    causal = torch.ones(1, 1, 5, 5, dtype=torch.bool).tril()
    assert torch.allclose(block.attention(block.attention_norm(x), causal), by_hand, atol=1e-5)
    # ... and the dependency attention is their average over heads.
    assert torch.allclose(model.log_attention(x).exp(), probabilities.mean(1), atol=1e-6)


# --- the dependency objective (Eq. 1) ------------------------------------------------------------


def test_figure_1_arcs():
    dep = parse_conllu(FIGURE_1)[0]
    sources, targets = dependency_arcs(dep.heads)
    # "figures" (position 2) predicts "screen" (5) and "indicate" (6); <s> the root; "." the end.
    assert sources.tolist() == [0, 1, 2, 2, 3, 4, 6, 6, 7, 9]
    assert targets.tolist() == [6, 2, 5, 6, 5, 5, 8, 9, 8, 10]


def test_piece_heads_follow_the_authors():
    # Words: w1 -> w2, w2 root, w3 -> w2; pieces: w1 = p1 p2, w2 = p3 p4 p5, w3 = p6.
    heads = piece_heads([2, 0, 2], np.array([0, 0, 1, 1, 1, 2]))
    assert heads == [5, 1, 0, 3, 4, 5]


@pytest.mark.parametrize("name", ["dm-transformer", "dm-lstm"])
def test_dependency_loss_equals_a_brute_force_loop(data, name):
    model = make(name, data).eval()
    trees = data["train"][:6]
    batch = whole(model.prepare(trees))
    with torch.no_grad():
        output = model.loss(batch)
        brute = 0.0
        for tree in trees:
            dep = constituency_to_dependency(tree)
            ids = word_pieces(model.vocab, dep.words)[0].tolist()
            inputs = torch.tensor([[BOS_ID, *ids]])
            logprobs = model.dependency_network(inputs)[0][0].log_softmax(-1)
            tokens = [*ids, EOS_ID]
            for position, members in enumerate(future_dependents(dep)):
                for member in members:
                    brute -= float(logprobs[position, tokens[member - 1]])
    assert math.isclose(float(output.sums["dependency"]), brute, rel_tol=1e-5)
    assert output.counts["dependency"] == output.counts["lm"] == sum(len(t.leaves()) + 1 for t in trees)


def test_dependency_nll_skips_padding():
    logprobs = torch.tensor([[[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]]])
    nll = dependency_nll(logprobs, torch.tensor([[0, 1, 0]]), torch.tensor([[2, 1, 0]]))
    assert float(nll) == 3.0 + 5.0


# --- the base models are left as they are -----------------------------------------------------------


def test_dm_transformer_adds_no_parameters_and_keeps_the_forward(data):
    model = make("dm-transformer", data).eval()
    base = ActionLM(model.config.base_config(), {"vocab": data["words"]}).eval()
    base.load_state_dict(model.base.state_dict())
    assert all(name.startswith("base.") for name, _ in model.named_parameters())
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in base.parameters())
    inputs = torch.tensor([[BOS_ID, 5, 9, 12, 7]])
    logits, _ = model.dependency_network(inputs)
    assert torch.allclose(logits, base.lm_logits(base(inputs)), atol=1e-6)


def test_dm_transformer_s_copy_of_the_action_lm_forward_stays_the_same(data):
    """``DMTransformer.dependency_network`` repeats ``ActionLM.forward`` to keep each layer's input:
    the same outputs in training mode (the same dropout draws) and the same length check."""
    model = make("dm-transformer", data, dropout=0.3).train()
    base = ActionLM(model.config.base_config(), {"vocab": data["words"]}).train()
    base.load_state_dict(model.base.state_dict())
    inputs = torch.tensor([[BOS_ID, 5, 9, 12, 7], [BOS_ID, 6, 8, 0, 0]])
    torch.manual_seed(3)
    logits, _ = model.dependency_network(inputs)
    torch.manual_seed(3)
    assert torch.equal(logits, base.lm_logits(base(inputs)))
    too_long = torch.full((1, base.config.max_length + 1), 5)
    for network in (model.dependency_network, base):
        with pytest.raises(ValueError, match="longer than max_length"):
            network(too_long)


def test_dm_lstm_adds_only_the_query_and_key_matrices(data):
    model = make("dm-lstm", data).eval()
    base = LSTMLM(model.config.base_config(), {"vocab": data["words"]}).eval()
    base.load_state_dict(model.base.state_dict())
    extra = {name: tuple(p.shape) for name, p in model.named_parameters() if not name.startswith("base.")}
    assert extra == {"query.weight": (40, 40), "key.weight": (40, 40)}
    inputs = torch.tensor([[BOS_ID, 5, 9, 12, 7]])
    logits, _ = model.dependency_network(inputs)
    assert torch.allclose(logits, base.output_logits(base.hidden_states(inputs)[0]), atol=1e-6)


# --- scoring and decoding ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dm-transformer", "dm-lstm"])
@pytest.mark.parametrize("vocab", ["words", "subwords"])
def test_word_logprobs_sum_to_the_loss(data, name, vocab):
    model = make(name, data, vocab).eval()
    trees = data["train"][:5]
    with torch.no_grad():
        lm = float(model.loss(whole(model.prepare(trees))).sums["lm"])
    scores = model.word_logprobs([t.leaves() for t in trees], eos=True, batch_size=2)
    assert [len(s) for s in scores] == [len(t.leaves()) + 1 for t in trees]
    assert math.isclose(-sum(float(s.sum()) for s in scores), lm, rel_tol=1e-5)


@pytest.mark.parametrize("name", ["dm-transformer", "dm-lstm"])
@pytest.mark.parametrize("vocab", ["words", "subwords"])
def test_decoder_equals_the_full_pass(data, name, vocab):
    model = make(name, data, vocab).eval()
    sentences = [t.leaves() for t in data["train"][:2]]
    rows = [[BOS_ID, *word_pieces(model.vocab, s)[0].tolist(), EOS_ID] for s in sentences]
    length = min(len(r) for r in rows)
    inputs = torch.tensor([r[:length] for r in rows])
    with torch.no_grad():
        logits, log_attention = model.dependency_network(inputs)
        full = mixture_logprobs(log_attention, logits.log_softmax(-1))
    decoder = model.decoder()
    decoder.start(3)
    parents = torch.tensor([1, 0, 0])  # held prefix i follows sentence 1 - i ... then swaps back
    follow = [1, 0]
    for t in range(length):
        got = decoder.logprobs()
        for held, sentence in enumerate(follow):
            assert torch.allclose(got[held], full[sentence, t], atol=1e-4), (t, held)
        if t + 1 < length:
            follow = [follow[int(p)] for p in parents[:2]]
            decoder.advance(parents[:2], inputs[follow, t + 1])
            parents = torch.tensor([1, 0])


@pytest.mark.parametrize("name", ["dm-transformer", "dm-lstm"])
def test_nucleus_sampling_through_generate(data, name):
    model = make(name, data)
    first = generate(model, 4, top_p=0.9, seed=5, max_length=40)
    again = generate(model, 4, top_p=0.9, seed=5, max_length=40)
    assert [s.words for s in first] == [s.words for s in again]
    assert all(s.extra["tokens"][-1] == "</s>" or len(s.extra["tokens"]) == 40 for s in first)


# --- training stages ------------------------------------------------------------------------------


def test_stage_weights_and_the_one_run_schedule(data):
    assert make("dm-lstm", data, stage="dependency").loss_weights == {"dependency": 1.0}
    assert make("dm-lstm", data, stage="mixture").loss_weights == {"lm": 1.0}
    model = make("dm-lstm", data, stage="mixture", dependency_batches=2)
    assert model.loss_weights == {"lm": 1.0, "dependency": 1.0}
    batch = whole(model.prepare(data["train"][:4]))
    model.eval()
    evaluated = model.loss(batch)  # evaluation does not count
    assert not evaluated.sums["lm"].requires_grad and int(model.trained_batches) == 0
    model.train()
    trained = [model.loss(batch).sums for _ in range(3)]
    assert [s["dependency"].requires_grad for s in trained] == [True, True, False]
    assert [s["lm"].requires_grad for s in trained] == [False, False, True]
    assert int(model.trained_batches) == 3


def test_stage_one_trains_no_attention_matrix(data):
    model = make("dm-lstm", data, stage="dependency").train()
    output = model.loss(whole(model.prepare(data["train"][:4])))
    output.sums["dependency"].backward()
    assert model.query.weight.grad is None and model.base.embedding.weight.grad is not None


@pytest.mark.parametrize("name", ["dm-transformer", "dm-lstm"])
def test_stage_two_starts_from_the_stage_one_folder(data, tmp_path, name):
    stage_one = make(name, data, stage="dependency", seed=1)
    stage_one.save_pretrained(tmp_path / "stage1")
    stage_two = make(name, data, stage="mixture", dependency_batches=0, init_from=str(tmp_path / "stage1"))
    different = stage_two.state_dict()
    assert any(not torch.equal(different[k], v) for k, v in stage_one.state_dict().items())
    stage_two.prepare(data["train"][:2])
    assert all(torch.equal(stage_two.state_dict()[k], v) for k, v in stage_one.state_dict().items())
    # The saved stage-2 model loads without the stage-1 folder.
    stage_two.save_pretrained(tmp_path / "stage2")
    (tmp_path / "stage1" / "model.safetensors").unlink()
    loaded = load_model(tmp_path / "stage2")
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in stage_two.state_dict().items())


def test_init_from_a_plain_base_model_and_bad_folders(data, tmp_path):
    base = ActionLM(make("dm-transformer", data).config.base_config(), {"vocab": data["words"]})
    base.save_pretrained(tmp_path / "lm")
    model = make("dm-transformer", data, stage="mixture", init_from=str(tmp_path / "lm"))
    model.prepare(data["train"][:2])
    assert all(torch.equal(model.base.state_dict()[k], v) for k, v in base.state_dict().items())
    other = make("dm-transformer", data, vocab="subwords", stage="mixture", init_from=str(tmp_path / "lm"))
    with pytest.raises(ModelFileError, match="another vocabulary"):
        other.prepare(data["train"][:2])
    make("dm-lstm", data).save_pretrained(tmp_path / "lstm")
    wrong = make("dm-transformer", data, stage="mixture", init_from=str(tmp_path / "lstm"))
    with pytest.raises(ModelFileError, match="'dm-lstm' model"):
        wrong.prepare(data["train"][:2])


def test_save_and_load_keep_the_scores(data, tmp_path):
    model = make("dm-lstm", data, stage="mixture", dependency_batches=3)
    model.save_pretrained(tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert isinstance(loaded, DMLSTM) and int(loaded.trained_batches) == 0
    sentences = [t.leaves() for t in data["train"][:3]]
    for a, b in zip(model.word_logprobs(sentences), loaded.word_logprobs(sentences)):
        assert torch.allclose(a, b)


# --- data and errors ------------------------------------------------------------------------------


def test_prepare_reads_dependency_and_constituency_trees(data):
    model = make("dm-transformer", data)
    dep = parse_conllu(FIGURE_1)[0]
    corpus = model.prepare([dep, data["train"][0]])
    assert corpus.lengths.tolist() == [10, len(data["train"][0].leaves()) + 1]
    assert corpus.fields["arc_source"][0][:10].tolist() == [0, 1, 2, 2, 3, 4, 6, 6, 7, 9]
    labels = corpus.fields["labels"][0]
    assert corpus.fields["dependency"][0][9] == EOS_ID and corpus.fields["dependency"][0][0] == labels[5]


def test_bad_input_names_the_sentence(data):
    model = make("dm-lstm", data)
    with pytest.raises(TypeError, match=r"trees\[1\] is int"):
        model.prepare([data["train"][0], 7])
    looping = DepTree(words=("a", "b"), heads=(2, 5), relations=("x", "y"))
    with pytest.raises(ValueError, match=r"trees\[0\]: word 2 has head 5"):
        model.prepare([looping])
    with pytest.raises(TypeError, match="sentence 0 is a string"):
        model.word_logprobs(["a b c"])
    long = make("dm-transformer", data, base_options={"attention_dropout": 0.0, "max_length": 4})
    with pytest.raises(ValueError, match="sentence 0: 6 positions exceed max_length 4"):
        long.word_logprobs([["a", "b", "c", "d", "e"]])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"n_layers": 1}, "penultimate"),
        ({"stage": "both"}, "model.stage"),
        ({"stage": "dependency", "dependency_batches": 5}, "needs stage: mixture"),
        ({"base_options": {"d_model": 8}}, "may not set d_model"),
        ({"base_options": {"attention_dropout": 2.0}}, "attention_dropout"),
        ({"context_length": 0}, "context_length"),
    ],
)
def test_config_errors(options, message):
    with pytest.raises(ConfigError, match=message):
        DMLMConfig(**{**TRANSFORMER, **options}).check()


def test_models_are_registered(data):
    assert isinstance(make("dm-transformer", data), DMTransformer)
    assert isinstance(make("dm-lstm", data), DMLSTM)


@pytest.mark.shared_data
def test_ud_english_ewt_rows(data, shared_data, tmp_path):
    path = shared_data / "ud_english" / "ewt" / "en_ewt-ud-dev.conllu"
    trees = [tree for _, tree in zip(range(60), ConlluReader(path))]
    vocab = build_vocabulary(path, tmp_path / "vocab", kind="word")
    torch.manual_seed(0)
    model = build_model(TRANSFORMER, {"vocab": vocab})
    corpus = model.prepare(trees)
    assert corpus.n_targets["dependency"] == corpus.n_targets["lm"] == sum(len(t) + 1 for t in trees)
    output = model.loss(whole(corpus))
    assert all(torch.isfinite(value) for value in output.sums.values())


# --- the optional spaCy step ------------------------------------------------------------------------


def test_parse_to_conllu_needs_the_extra_or_writes_trees(tmp_path):
    from syntaxlm.data.dependency_parse import SpacyMissingError, parse_to_conllu

    text = tmp_path / "raw.txt"
    text.write_text("The red figures on the screen indicate falling stocks.\n\nIt rained.\n")
    out = tmp_path / "parsed.conllu"
    try:
        import spacy  # noqa: F401
    except ImportError:
        with pytest.raises(SpacyMissingError, match=r"syntaxlm\[spacy\]"):
            parse_to_conllu(text, out)
        return
    count = parse_to_conllu(text, out)
    trees = list(ConlluReader(out))
    assert count == len(trees) >= 2
    assert trees[0].words[:3] == ("The", "red", "figures")
