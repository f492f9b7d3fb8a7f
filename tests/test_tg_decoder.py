"""Incremental decoding of Transformer Grammars and the TXL baselines (``TGDecoder``): fed gold
sequences token by token, with hypotheses dropped, copied and reordered between steps, it gives the
log-probabilities of the full model; and the action grammar's ids are the vocabulary's symbols."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.errors import ActionSequenceError
from syntaxlm.models import build_model
from syntaxlm.models.decoding import KEEP, ActionGrammar
from syntaxlm.models.transformer_grammar import TGDecoder, TransformerGrammar
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, parse_tree

# A kept prefix keeps its state; its log-probabilities are recomputed with the other rows, and
# the CPU's matmul kernels may sum in another order for another row count or row position.
FLOAT_ORDER = 1e-5

SMALL = {"d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64, "dropout": 0.0}
VARIANTS = ("tg", "txl-trees", "txl-terminals")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tg_decoder")
    write_synthetic_treebank(folder / "data", sentences=300, seed=0)
    source = folder / "data" / "train.trees"
    trees = list(TreeReader(source, cleaning=CHOE_CHARNIAK_CLEANING))
    # Trees of several lengths, in no order of length: hypotheses finish at different steps.
    picked = [min(trees, key=lambda tree: abs(len(tree.leaves()) - n)) for n in (12, 3, 24, 8, 18)]
    common = {"min_freq": 1, "pos_tags": False}
    return {
        "trees": picked,
        "word": build_vocabulary(source, folder / "words", kind="word", **common),
        "subword": build_vocabulary(source, folder / "subwords", kind="subword", vocab_size=800, **common),
    }


def _model(data, variant: str, vocab: str = "word", **options) -> TransformerGrammar:
    torch.manual_seed(0)
    return build_model({"model": variant, **SMALL, **options}, {"vocab": data[vocab]}).eval()


def _gold(model: TransformerGrammar, trees) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each tree's tokens as the decoder is fed them (a TG closer once) and the full model's
    log-probability of each: the labelled positions of its sequence, in order."""
    sequences = model.sequences(trees)
    reference = model.token_logprobs(sequences)
    tokens, expected = [], []
    for i, values in enumerate(reference):
        labelled = sequences[i].labels != PAD_ID
        tokens.append(sequences[i].labels[labelled].astype(np.int64))
        expected.append(values[labelled])
    return tokens, expected


def _decode(decoder: TGDecoder, tokens: list[np.ndarray], *, shuffle: bool) -> list[list[list[float]]]:
    """Feed every gold sequence; ``got[t][k]`` holds ``log p(token k)`` from each hypothesis of
    sequence ``t``. Finished sequences are dropped; with ``shuffle`` each step keeps two copies of
    one hypothesis of every sequence, in the reverse order of the step before."""
    rows = list(range(len(tokens)))  # the sequence each hypothesis decodes
    decoder.start(len(rows))
    got: list[list[list[float]]] = [[[] for _ in t] for t in tokens]
    step = 0
    while rows:
        assert decoder.size == len(rows)
        logprobs = decoder.logprobs()
        assert logprobs.shape == (len(rows), len(decoder.model.vocab))
        for row, t in enumerate(rows):
            got[t][step].append(float(logprobs[row, tokens[t][step]]))
        going_on = [t for t in dict.fromkeys(rows) if step + 1 < len(tokens[t])]
        if shuffle:
            parents = []
            for t in reversed(going_on):
                copies = [row for row, u in enumerate(rows) if u == t]
                parents += [copies[step % len(copies)]] * 2
        else:
            parents = [row for row, t in enumerate(rows) if t in going_on]
        rows = [rows[p] for p in parents]
        decoder.advance(torch.tensor(parents), torch.tensor([tokens[t][step] for t in rows]))
        step += 1
    return got


def _check(got, expected, copies: int) -> None:
    for values, reference in zip(got, expected, strict=True):
        assert [len(v) for v in values[1:]] == [copies] * (len(values) - 1)
        for step, (value, want) in enumerate(zip(values, reference, strict=True)):
            np.testing.assert_allclose(value, want, atol=1e-5, err_msg=f"step {step}")


@pytest.mark.parametrize("vocab", ["word", "subword"])
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shuffle", [False, True], ids=["in-order", "copied-reordered"])
def test_decoder_gives_the_full_models_logprobs(data, variant, vocab, shuffle):
    model = _model(data, variant, vocab)
    tokens, expected = _gold(model, data["trees"])
    if variant == "txl-terminals":
        assert all(t[-1] == EOS_ID for t in tokens)
    decoder = model.decoder()
    got = _decode(decoder, tokens, shuffle=shuffle)
    _check(got, expected, 2 if shuffle else 1)


@pytest.mark.parametrize(
    ("variant", "options"),
    [
        ("tg", {"positions": "none"}),
        ("txl-trees", {"positions": "none"}),
        ("tg", {"positions": "linear"}),
        ("tg", {"separate_compose": True}),
        ("tg", {"pre_ln": True}),
        ("txl-terminals", {"pre_ln": True}),
        ("tg", {"learned_positions": True, "tie_embeddings": False}),
        ("tg", {"segment_length": 16, "memory_length": 1024}),
        ("txl-trees", {"segment_length": 16, "memory_length": 1024}),
    ],
)
def test_model_variants_decode_like_the_full_model(data, variant, options):
    model = _model(data, variant, **options)
    tokens, expected = _gold(model, data["trees"])
    _check(_decode(model.decoder(), tokens, shuffle=True), expected, 2)


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoder_gives_the_full_models_logprobs_at_distances_beyond_62(data, variant):
    """Sequences of several sentences joined, with the tiny recipes' segments (128) and memory
    (128): TXL's linear distances, up to the length of the sequence, are not clipped at 62 (TG's
    depths are), and the decoder, holding whole sequences, gives what the full model gives
    reading the first segment from memory."""
    picked = data["trees"]
    joined = [
        parse_tree("(S " + " ".join(tree.to_bracket() for tree in trees) + ")")
        for trees in (picked, [picked[2], picked[4]])
    ]
    model = _model(data, variant, segment_length=128, memory_length=128)
    lengths = model.sequences(joined).lengths
    assert lengths.max() - 1 > 62  # the largest distance, in every variant
    if variant != "txl-terminals":
        assert 128 < lengths.max() <= 256  # a second segment, whose memory loses nothing
    if variant != "tg":
        assert model.relative_positions.highest >= lengths.max() - 1
    tokens, expected = _gold(model, joined)
    _check(_decode(model.decoder(), tokens, shuffle=True), expected, 2)


@pytest.mark.parametrize("variant", VARIANTS)
def test_kept_prefixes_wait_unchanged_while_others_grow(data, variant):
    """``KEEP`` (beam search's waiting states): each sequence waits every third call, at its own
    phase, so prefixes of different lengths and stack shapes sit side by side; every log-prob
    equals the full model's, before and after waiting."""
    model = _model(data, variant)
    tokens, expected = _gold(model, data["trees"])
    decoder = model.decoder()
    assert decoder.supports_keep
    rows = list(range(len(tokens)))  # the sequence each hypothesis decodes
    fed = [0] * len(tokens)  # tokens fed to each sequence so far
    got: list[list[list[float]]] = [[[] for _ in t] for t in tokens]
    decoder.start(len(rows))
    call = 0
    while rows:
        logprobs = decoder.logprobs()
        for row, t in enumerate(rows):
            got[t][fed[t]].append(float(logprobs[row, tokens[t][fed[t]]]))
        parents, step = [], []
        for row, t in enumerate(rows):
            if fed[t] + 1 == len(tokens[t]):
                continue
            parents.append(row)
            if (call + t) % 3 == 0:
                step.append(KEEP)
            else:
                step.append(int(tokens[t][fed[t]]))
                fed[t] += 1
        rows = [rows[p] for p in parents]
        decoder.advance(torch.tensor(parents), torch.tensor(step))
        call += 1
    waited = 0
    for values, reference in zip(got, expected, strict=True):
        for index, (value, want) in enumerate(zip(values, reference, strict=True)):
            np.testing.assert_allclose(value, [want] * len(value), atol=1e-5, err_msg=f"token {index}")
            waited += len(value) - 1
    assert waited > len(tokens)


def test_padding_slots_are_dropped(data):
    """In a step where some TG hypotheses close a constituent, the others get a padding slot. Here
    every step has a closer and each hypothesis closes every third step, so a third of the slots
    would be padding; the decoder drops it when it exceeds a quarter of the longest prefix."""
    nps = " ".join(["(NP the dog)"] * 12)
    trees = [parse_tree(f"(S {words}{nps})") for words in ("", "the ", "the the ")]
    model = _model(data, "tg")
    tokens, expected = _gold(model, trees)
    decoder = model.decoder()
    advance, widths = decoder.advance, []

    def watched(parents, ids):
        advance(parents, ids)
        if decoder.size:
            widths.append((decoder._position.shape[1], int(decoder._length.max())))

    decoder.advance = watched
    _check(_decode(decoder, tokens, shuffle=True), expected, 2)
    assert all(slots <= longest + max(16, longest // 4) + 2 for slots, longest in widths)
    assert any(later[0] < earlier[0] for earlier, later in itertools.pairwise(widths))


@pytest.mark.parametrize("variant", ["tg", "txl-trees"])
def test_popped_positions_are_dropped_so_the_keys_follow_the_stack(data, variant):
    """Only the stack is attended again: after many COMPOSEs a TG hypothesis holds about its
    stack's slots (plus at most the compaction's slack), far fewer than its sequence; TXL (trees)
    pops nothing and holds its whole sequence."""
    model = _model(data, variant)
    tokens, expected = _gold(model, [parse_tree("(S " + "(NP the dog) " * 16 + ")")])
    decoder = model.decoder()
    advance, widths = decoder.advance, []

    def watched(parents, ids):
        advance(parents, ids)
        if decoder.size:
            stack = int(decoder._on_stack.sum(dim=1).max())
            widths.append((decoder._position.shape[1], stack, int(decoder._length.max())))

    decoder.advance = watched
    _check(_decode(decoder, tokens, shuffle=False), expected, 1)
    slots, _, length = widths[-1]
    if variant == "tg":
        # Compaction leaves at most max(16, stack // 4) spare slots; a step then adds two and its
        # COMPOSE pops three of this tree's positions (NP, the, dog) for one.
        assert all(s <= k + max(16, k // 4) + 4 for s, k, _ in widths)
        assert slots < length / 2
    else:
        assert slots == length


def test_a_step_that_keeps_every_prefix_changes_nothing(data):
    model = _model(data, "tg")
    vocab = data["word"]
    decoder = model.decoder()
    decoder.start(3)
    decoder.advance(torch.tensor([0, 1, 2]), torch.tensor([vocab.index("(S"), vocab.index("(S"), KEEP]))
    before = decoder.logprobs()
    decoder.advance(torch.tensor([2, 0, 1]), torch.tensor([KEEP, KEEP, KEEP]))
    torch.testing.assert_close(decoder.logprobs(), before[[2, 0, 1]], atol=FLOAT_ORDER, rtol=0)
    decoder.advance(torch.tensor([1, 2]), torch.tensor([vocab.index("the"), KEEP]))
    torch.testing.assert_close(decoder.logprobs()[1], before[1], atol=FLOAT_ORDER, rtol=0)


def test_decoding_a_training_model_uses_eval_mode_and_keeps_its_mode(data):
    model = _model(data, "tg", dropout=0.5)
    tokens, expected = _gold(model, data["trees"][:2])
    model.train()
    _check(_decode(model.decoder(), tokens, shuffle=False), expected, 1)
    assert model.training


def test_a_closer_with_nothing_open_is_an_error(data):
    model = _model(data, "tg")
    vocab = data["word"]
    decoder = model.decoder()
    decoder.start(2)
    opener, closer = vocab.index("(S"), vocab.index("S)")
    decoder.advance(torch.tensor([0, 1]), torch.tensor([opener, vocab.index("the")]))
    with pytest.raises(ActionSequenceError, match=r"'S\)' closes a constituent but none is open in prefix 1"):
        decoder.advance(torch.tensor([0, 1]), torch.tensor([closer, closer]))


def test_an_empty_beam_and_bad_arguments(data):
    model = _model(data, "tg")
    decoder = model.decoder()
    assert decoder.size == 0
    decoder.start(3)
    with pytest.raises(ValueError, match="parent 3 is not one of the 3 prefixes held"):
        decoder.advance(torch.tensor([0, 3]), torch.tensor([BOS_ID, BOS_ID]))
    with pytest.raises(ValueError, match="of one length"):
        decoder.advance(torch.tensor([0, 1]), torch.tensor([BOS_ID]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        decoder.advance(torch.tensor([0]), torch.tensor([len(data["word"])]))
    decoder.advance(torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long))
    assert decoder.size == 0 and decoder.logprobs().shape == (0, len(data["word"]))


@pytest.mark.parametrize("vocab", ["word", "subword"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_action_grammar_ids_round_trip_with_the_vocabulary(data, variant, vocab):
    words = data[vocab]
    grammar = _model(data, variant, vocab).action_grammar()
    assert isinstance(grammar, ActionGrammar) and grammar.vocab_size == len(words)
    if variant == "txl-terminals":
        assert grammar.style == "words" and grammar.ends_with_eos
        assert grammar.open_label == {} and grammar.close_label == {}
        return
    assert grammar.style == "choe-charniak" and not grammar.ends_with_eos
    labels = {symbol[1:] for symbol in words.symbols if symbol.startswith("(")}
    assert set(grammar.open_label.values()) == set(grammar.close_label.values()) == labels
    for i, label in grammar.open_label.items():
        assert words.token(i) == f"({label}" and words.index(f"({label}") == i
    for i, label in grammar.close_label.items():
        assert words.token(i) == f"{label})" and words.index(f"{label})") == i
    # The RNNG spellings in the same vocabulary are not tree actions of TG.
    assert not any(words.token(i).startswith("NT(") for i in grammar.close_label)
    assert words.index("REDUCE") not in grammar.close_label


def test_symbols_of_the_other_spelling_are_never_words(data):
    model = build_model({"model": "tg", **SMALL}, {"vocab": data["word"]})
    grammar = model.action_grammar()
    mask = grammar.word_mask
    for symbol in data["word"].symbols:
        assert not mask[data["word"].index(symbol)], symbol
