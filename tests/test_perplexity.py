import json
import math

import numpy as np
import pytest
import torch

from syntaxlm.eval.perplexity import CONVENTIONS, LogprobError, perplexity, surprisal_bits

HALF, QUARTER, TENTH = math.log(0.5), math.log(0.25), math.log(0.1)


def test_each_convention_by_hand():
    # Two sentences: words p = ½ ½ ½ with end 1/10, and the word p = ¼ with end 1/10.
    result = perplexity([[HALF, HALF, HALF], [QUARTER]], [TENTH, TENTH])
    assert (result.n_words, result.n_sentences) == (4, 2)
    # −log p(x) summed over sentences, ends included: 3 log 2 + log 10 + 2 log 2 + log 10.
    total = -(5 * math.log(2) + 2 * math.log(10))
    assert result.total_logprob == pytest.approx(total)
    assert result.word_logprob == pytest.approx(-5 * math.log(2))
    assert result.end_logprob == pytest.approx(-2 * math.log(10))
    # TG §3.1 / Qian et al.: (Π p(x))^(−1/N_w) = (2^5 · 10^2)^(1/4).
    assert result.per_word == pytest.approx((2**5 * 10**2) ** (1 / 4))
    # PTB LSTM-LM tradition: the end of each sentence is one more token: (2^5 · 10^2)^(1/6).
    assert result.per_token == pytest.approx((2**5 * 10**2) ** (1 / 6))
    # The end terms left out: (2^5)^(1/4).
    assert result.per_word_without_end == pytest.approx(2 ** (5 / 4))
    # Per sentence, per word with its end: (2^3 · 10)^(1/3) and (4 · 10)^(1/1).
    assert result.sentence_perplexities_per_word == pytest.approx([80 ** (1 / 3), 40.0])


def test_the_per_word_numerator_includes_the_end_of_sentence():
    words = [[HALF, HALF]]
    likely_end = perplexity(words, [math.log(0.9)])
    unlikely_end = perplexity(words, [math.log(0.01)])
    # Same words, same denominator: only the end term differs, and it moves the per-word number.
    assert unlikely_end.per_word > likely_end.per_word
    assert unlikely_end.per_word == pytest.approx(math.exp(-(2 * HALF + math.log(0.01)) / 2))
    assert unlikely_end.per_word_without_end == likely_end.per_word_without_end == pytest.approx(2.0)


def test_corpus_perplexity_pools_words_not_sentences():
    result = perplexity([[HALF, HALF], [QUARTER]], [0.0, 0.0])
    # exp(−(2 log ½ + log ¼) / 3) = 2^(4/3), not the mean of the sentences' 2 and 4.
    assert result.per_word == pytest.approx(2 ** (4 / 3))
    assert result.sentence_perplexities_per_word == pytest.approx([2.0, 4.0])


def test_inputs_may_be_arrays_or_tensors_and_impossible_words_give_inf():
    words = [np.log([0.5, 0.5]), torch.log(torch.tensor([0.5], dtype=torch.float64))]
    result = perplexity(words, np.zeros(2))
    assert result.per_word == pytest.approx(2.0)
    impossible = perplexity([[0.0, -math.inf]], [0.0])
    assert impossible.per_word == math.inf and impossible.sentence_perplexities_per_word == [math.inf]
    assert perplexity([[-1.0]], [-math.inf]).per_token == math.inf  # an impossible end
    assert perplexity([[-1000.0]], [0.0]).per_word == math.inf  # overflow, not an error


def test_result_is_json_with_every_convention_labelled():
    metadata = {"method": "gold-tree", "bound": "upper"}
    result = perplexity([[HALF]], [HALF], marginalisation=metadata)
    record = json.loads(json.dumps(result.to_json()))
    assert record["marginalisation"] == metadata
    assert record["perplexity_per_word"] == pytest.approx(4.0)
    assert record["perplexity_per_token"] == pytest.approx(2.0)
    assert record["perplexity_per_word_without_end"] == pytest.approx(2.0)
    assert record["total_logprob_nats"] == pytest.approx(2 * HALF)
    assert record["end_logprob_nats"] == pytest.approx(HALF)
    assert (record["n_words"], record["n_sentences"]) == (1, 1)
    assert record["conventions"] == CONVENTIONS and "§3.1" in CONVENTIONS["per_word"]
    assert "perplexity" not in record  # no number without its convention
    text = result.render()
    assert "per word 4.00" in text and "per token 2.00" in text and "method=gold-tree, bound=upper" in text
    assert perplexity([[0.0]], [0.0]).to_json()["marginalisation"] is None


def test_surprisal_bits():
    assert surprisal_bits(math.log(0.25)) == pytest.approx(2.0)
    assert surprisal_bits([math.log(0.5), 0.0]) == pytest.approx(np.array([1.0, 0.0]))
    assert isinstance(surprisal_bits(np.float32(-1.0)), float)


def test_errors_name_the_sentence():
    with pytest.raises(LogprobError, match="no sentences"):
        perplexity([], [])
    with pytest.raises(LogprobError, match="2 sentences but 1 end"):
        perplexity([[-1.0], [-1.0]], [-1.0])
    with pytest.raises(LogprobError, match="sentence 1 has no word log-probabilities"):
        perplexity([[-1.0], []], [-1.0, -1.0])
    with pytest.raises(LogprobError, match="entry 1 of sentence 0 is nan"):
        perplexity([[-1.0, math.nan]], [-1.0])
    with pytest.raises(LogprobError, match="entry 0 of sentence 0 is inf"):
        perplexity([[math.inf]], [-1.0])
    with pytest.raises(LogprobError, match="end log-probability of sentence 1 is nan"):
        perplexity([[-1.0], [-1.0]], [-1.0, math.nan])
    with pytest.raises(LogprobError, match="not JSON-able"):
        perplexity([[-1.0]], [-1.0], marginalisation={"beam": object()})
