"""The LSTM LM baseline and the recurrent-LM pieces it shares with PRPN: the three public pieces
compose to the loss, stream corpora cover every word and ``</s>`` once, carried state equals one
long pass, scoring equals the incremental decoder, and saving keeps the scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from syntaxlm.data.synthetic import SyntheticTreebank
from syntaxlm.models import ConfigError, build_model, load_model, model_config
from syntaxlm.models.lstm_lm import LSTMLM, sentence_corpus, stream_corpus
from syntaxlm.text.base import BOS_ID, EOS_ID
from syntaxlm.text.vocab import WordVocab

SENTENCES = [
    ["the", "dog", "sees", "a", "cat"],
    ["a", "cat", "sleeps"],
    ["the", "cat", "sees", "the", "dog", "in", "the", "house"],
    ["dogs", "bark"],
]


def make_vocab() -> WordVocab:
    return WordVocab.build(SENTENCES, min_freq=1)


def make_model(**overrides) -> LSTMLM:
    values = {
        "model": "lstm",
        "d_model": 16,
        "hidden_size": 24,
        "n_layers": 2,
        "segment_length": 6,
        "streams": 2,
    }
    values.update(overrides)
    torch.manual_seed(0)
    return build_model(values, {"vocab": make_vocab()})


def test_config_rejects_bad_settings():
    with pytest.raises(ConfigError, match="order"):
        model_config({"model": "lstm", "order": "random"})
    with pytest.raises(ConfigError, match="recurrent_dropout"):
        model_config({"model": "lstm", "recurrent_dropout": 1.0})
    with pytest.raises(ConfigError, match="segment_length"):
        model_config({"model": "lstm", "segment_length": 0})


def test_the_three_pieces_compose_to_the_loss():
    model = make_model().eval()
    corpus = model.prepare(SENTENCES)
    batch = next(corpus.batches(2, shuffle=False))
    output = model.loss(batch)
    hidden, _ = model.hidden_states(batch["inputs"].long())
    assert model.embed(batch["inputs"].long()).shape == (*batch["inputs"].shape, 16)
    assert hidden.shape == (*batch["inputs"].shape, 24)  # the top layer's outputs
    labels = batch["labels"].long()
    logits = model.output_logits(hidden)
    expected = torch.nn.functional.cross_entropy(logits[labels != 0], labels[labels != 0], reduction="sum")
    assert torch.allclose(output.sums["lm"], expected)
    assert output.counts == batch.counts


def test_stream_corpus_targets_every_word_and_end_once():
    ids = [np.arange(4, 4 + len(s), dtype=np.int32) for s in SENTENCES]
    corpus = stream_corpus(ids, segment_length=5, streams=3)
    labels = corpus.fields["labels"]
    assert corpus.n_targets["lm"] == sum(len(s) + 1 for s in SENTENCES)
    assert not np.any(labels == BOS_ID)
    assert int(np.sum(labels == EOS_ID)) == len(SENTENCES)
    # rows of one piece are consecutive; the text read row after row is <s> w.. </s> <s> ..
    inputs = corpus.fields["inputs"]
    text = np.concatenate([inputs[r, : corpus.lengths[r]] for r in range(len(corpus))])
    expected = np.concatenate([np.concatenate(([BOS_ID], i, [EOS_ID])) for i in ids])[:-1]
    assert np.array_equal(text, expected)
    assert len(set(corpus.sequence.tolist())) == 3


def test_sentence_corpus_rows():
    corpus = sentence_corpus([np.array([5, 6], dtype=np.int32)])
    assert corpus.fields["inputs"].tolist() == [[BOS_ID, 5, 6]]
    assert corpus.fields["labels"].tolist() == [[5, 6, EOS_ID]]


def test_carried_state_equals_one_long_pass():
    model = make_model().eval()
    tokens = torch.tensor([[BOS_ID, 4, 5, 6, 7, 8, EOS_ID, BOS_ID, 9]])
    whole, _ = model.hidden_states(tokens)
    first, state = model.hidden_states(tokens[:, :4])
    second, _ = model.hidden_states(tokens[:, 4:], state)
    assert torch.allclose(torch.cat([first, second], dim=1), whole, atol=1e-6)


def test_loss_passes_state_in_streams_and_not_in_sentence_order():
    model = make_model()
    corpus = model.prepare(SENTENCES)
    batch = next(corpus.batches(2, shuffle=False))
    output = model.loss(batch)
    assert output.state is not None and output.state[0][0].shape == (2, 24)
    sentence_model = make_model(order="sentences")
    batch = next(sentence_model.prepare(SENTENCES).batches(2))
    assert sentence_model.loss(batch, output.state).sums["lm"].isfinite()


def test_word_logprobs_sum_to_the_sentence_logprob_and_match_the_decoder():
    model = make_model()
    sentence = SENTENCES[2]
    scores = model.word_logprobs([sentence], eos=True)[0]
    assert scores.dtype == torch.float64 and scores.shape == (len(sentence) + 1,)
    decoder = model.decoder()
    decoder.start(1)
    total = 0.0
    ids = model.vocab.encode(sentence) + [EOS_ID]
    for i, token in enumerate(ids):
        step = float(decoder.logprobs()[0, token])
        assert math.isclose(step, float(scores[i]), abs_tol=1e-5)
        total += step
        decoder.advance(torch.tensor([0]), torch.tensor([token]))
    assert math.isclose(total, float(scores.sum()), abs_tol=1e-4)
    assert model.training  # scoring leaves the mode as it was


def test_scores_do_not_depend_on_the_batch():
    model = make_model()
    alone = [model.word_logprobs([s])[0] for s in SENTENCES]
    together = model.word_logprobs(SENTENCES, batch_size=3)
    for a, b in zip(alone, together):
        assert torch.allclose(a, b, atol=1e-5)


def test_decoder_reorders_prefixes():
    model = make_model()
    decoder = model.decoder()
    decoder.start(2)
    decoder.advance(torch.tensor([0, 1]), torch.tensor([4, 5]))
    after_5 = decoder.logprobs()[1].clone()
    decoder.advance(torch.tensor([1, 1, 0]), torch.tensor([6, 6, 6]))
    assert decoder.size == 3
    single = model.decoder()
    single.start(1)
    single.advance(torch.tensor([0]), torch.tensor([5]))
    assert torch.allclose(single.logprobs()[0], after_5, atol=1e-6)
    single.advance(torch.tensor([0]), torch.tensor([6]))
    assert torch.allclose(decoder.logprobs()[0], single.logprobs()[0], atol=1e-6)
    with pytest.raises(ValueError, match="parent"):
        decoder.advance(torch.tensor([5]), torch.tensor([4]))


def test_unknown_words_and_bad_input():
    model = make_model()
    assert model.word_logprobs([["the", "zebra"]])[0].isfinite().all()
    with pytest.raises(TypeError, match="sentence 1 is a string"):
        model.word_logprobs([["the"], "a cat"])
    with pytest.raises(ValueError, match="sentence 0: word 1"):
        model.word_logprobs([["the", ""]])


def test_recurrent_dropout_drops_weights_in_training_only():
    model = make_model(recurrent_dropout=0.5, dropout=0.0, layer_dropout=0.0)
    tokens = torch.tensor([[BOS_ID, 4, 5, 6]])
    torch.manual_seed(1)
    a, _ = model.hidden_states(tokens)
    torch.manual_seed(2)
    b, _ = model.hidden_states(tokens)
    assert not torch.allclose(a, b)
    a.sum().backward()
    assert model.layers[0].weight_hh_l0.grad is not None
    model.eval()
    assert torch.equal(model.hidden_states(tokens)[0], model.hidden_states(tokens)[0])


def test_untied_and_projected_output_layers():
    tied = make_model()
    assert tied.projection is not None  # 24 hidden units, 16-dimensional embeddings
    untied = make_model(tie_embeddings=False)
    assert untied.projection is None and untied.decoder_weight.shape == (len(make_vocab()), 24)
    assert untied.word_logprobs([SENTENCES[0]])[0].isfinite().all()


def test_save_and_load_keep_the_scores(tmp_path):
    model = make_model()
    model.save_pretrained(tmp_path / "lstm")
    loaded = load_model(tmp_path / "lstm")
    assert torch.allclose(model.word_logprobs(SENTENCES)[1], loaded.word_logprobs(SENTENCES)[1])


def test_trains_on_the_synthetic_treebank():
    trees = SyntheticTreebank(1).trees(60)
    vocab = WordVocab.build([t.leaves() for t in trees], min_freq=1)
    torch.manual_seed(0)
    model = build_model({"model": "lstm", "d_model": 16, "hidden_size": 32, "streams": 4}, {"vocab": vocab})
    corpus = model.prepare(trees)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = last = None
    for epoch in range(4):
        state = None
        for batch in corpus.batches(4, epoch=epoch):
            output = model.loss(batch, state)
            loss = output.sums["lm"] / batch.counts["lm"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            state = tuple((h.detach(), c.detach()) for h, c in output.state)
            first = float(loss.detach()) if first is None else first
            last = float(loss.detach())
    assert last < first - 0.5


def test_character_level_mode():
    config = model_config({"model": "lstm", "d_model": 8, "hidden_size": 12, "unit": "character"})
    vocabularies = LSTMLM.vocabularies_for(config, SENTENCES, make_vocab())
    assert {"c", "a", "t", "_"} <= set(vocabularies["vocab"].words)
    torch.manual_seed(0)
    model = LSTMLM(config, vocabularies)
    ids, word_index = model._pieces(["a", "cat"])
    assert model.vocab.decode(ids.tolist()) == ["a", "_", "c", "a", "t"]
    assert word_index.tolist() == [0, 1, 1, 1, 1]
    corpus = model.prepare(SENTENCES)
    assert corpus.n_targets["lm"] == sum(len(" ".join(s)) + 1 for s in SENTENCES)
    scores = model.word_logprobs([["a", "cat"]], eos=True)[0]
    decoder = model.decoder()
    decoder.start(1)
    total = 0.0
    for token in [*ids.tolist(), EOS_ID]:
        total += float(decoder.logprobs()[0, token])
        decoder.advance(torch.tensor([0]), torch.tensor([token]))
    assert scores.shape == (3,) and math.isclose(float(scores.sum()), total, abs_tol=1e-4)
    with pytest.raises(ConfigError, match="unit"):
        model_config({"model": "lstm", "unit": "byte"})
