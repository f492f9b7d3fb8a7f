"""Incremental decoding of the plain LM, PLM, PLM-mask and SCLM (``ActionLM.decoder``): next-token
log-probs equal the full forward pass at every position, with hypotheses kept in order or reordered,
copied and dropped between steps, and with prefixes kept unchanged (``KEEP``) while others grow;
PLM-mask's per-row head masks equal those of the whole sequence; the action grammar agrees with
the vocabulary; errors."""

from __future__ import annotations

import itertools

import pytest
import torch

from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.errors import ActionSequenceError
from syntaxlm.models import build_model
from syntaxlm.models.action_lm import ACTION_MODELS, MODELS, ActionLM, ActionLMConfig
from syntaxlm.models.decoding import KEEP
from syntaxlm.structure.actions import ActionKind, encode_actions, tree_to_actions
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from syntaxlm.text.build import build_vocabulary
from syntaxlm.text.symbols import REDUCE, open_action
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader

# A kept prefix keeps its state; its log-probabilities are recomputed with the other rows, and
# the CPU's matmul kernels may sum in another order for another row count or row position.
FLOAT_ORDER = 1e-5

SMALL = {"d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64, "dropout": 0.0, "attention_dropout": 0.0}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("action_lm_decoder")
    write_synthetic_treebank(folder / "data", sentences=120, seed=1)
    train = list(TreeReader(folder / "data" / "train.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    dev = list(TreeReader(folder / "data" / "dev.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    words = build_vocabulary(folder / "data" / "train.trees", folder / "words", kind="word")
    subwords = build_vocabulary(
        folder / "data" / "train.trees", folder / "subwords", kind="subword", vocab_size=400
    )
    short = sorted(dev, key=lambda tree: len(tree.leaves()))[:7]  # few steps: a fast test
    return {"train": train, "short": short, "words": words, "subwords": subwords}


def make_model(name: str, data, vocab: str = "words", **options) -> ActionLM:
    config = ActionLMConfig(model=name, **{**SMALL, **options})
    torch.manual_seed(0)
    return ActionLM(config, ActionLM.vocabularies_for(config, data["train"], data[vocab])).eval()


def gold_sequences(model: ActionLM, trees) -> tuple[torch.Tensor, torch.Tensor | None, list[int]]:
    """Whole sequences ``[k, L]`` (``<s>`` + every target), padded after their end with ``<unk>``
    words, which the decoder must take like any other token; plm-mask's ``open_start`` ``[k, L]``
    (−1 from the closing of the root on); each sequence's real length."""
    corpus = model.prepare(trees)
    inputs, labels = corpus.fields["inputs"], corpus.fields["labels"]
    lengths = [int(n) + 1 for n in corpus.lengths]
    gold = torch.full((len(trees), max(lengths)), UNK_ID, dtype=torch.long)
    open_start = torch.full(gold.shape, -1, dtype=torch.long)
    for row, length in enumerate(lengths):
        gold[row, 0] = int(inputs[row, 0])
        gold[row, 1:length] = torch.from_numpy(labels[row, : length - 1]).long()
        if "open_start" in corpus.fields:  # of the inputs: every position but the root's REDUCE
            open_start[row, : length - 1] = torch.from_numpy(corpus.fields["open_start"][row, : length - 1])
    return gold, (open_start if "open_start" in corpus.fields else None), lengths


@torch.no_grad()
def full_logprobs(model: ActionLM, gold: torch.Tensor, open_start: torch.Tensor | None) -> torch.Tensor:
    """``[k, L, V]`` next-token log-probs of the whole sequences, from one forward pass."""
    return model.lm_logits(model(gold, open_start)).float().log_softmax(-1)


def random_parents(origin: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """Parents that keep one hypothesis of each of the ``k`` gold sequences, copy some (0 to 2k
    extra), drop the rest, and shuffle the lot."""
    keep = []
    for sequence in range(k):
        holders = (origin == sequence).nonzero()[:, 0]
        keep.append(holders[torch.randint(len(holders), (1,), generator=generator)])
    extra = int(torch.randint(2 * k + 1, (1,), generator=generator))
    parents = torch.cat([*keep, torch.randint(len(origin), (extra,), generator=generator)])
    return parents[torch.randperm(len(parents), generator=generator)]


def check_decoder(model: ActionLM, gold, open_start, *, shuffle: bool) -> torch.Tensor:
    """Feed the gold sequences through a decoder, two hypotheses per sequence to begin with; check
    every step's log-probs (and plm-mask's masks) against the full pass. Returns the gold tokens'
    log-probs ``[k, L − 1]`` taken from the decoder."""
    reference = full_logprobs(model, gold, open_start)
    masks = model.attention_mask(gold.shape[1], open_start) if open_start is not None else None
    k, length = gold.shape
    origin = torch.arange(2 * k) % k  # which gold sequence each hypothesis follows
    generator = torch.Generator().manual_seed(0)
    decoder = model.decoder()
    decoder.start(len(origin))
    gold_logprobs = torch.zeros(k, length - 1)
    for t in range(length):
        assert decoder.size == len(origin) and decoder.length == t + 1
        logprobs = decoder.logprobs()
        assert logprobs.shape == (len(origin), len(model.vocab))
        torch.testing.assert_close(logprobs, reference[origin, t], atol=1e-5, rtol=0)
        if masks is not None:
            assert torch.equal(decoder.row_mask(), masks[origin, :, t : t + 1, : t + 1])
        if t + 1 == length:
            break
        gold_logprobs[origin, t] = logprobs.gather(1, gold[origin, t + 1][:, None])[:, 0]
        parents = random_parents(origin, k, generator) if shuffle else torch.arange(len(origin))
        origin = origin[parents]
        decoder.advance(parents, gold[origin, t + 1])
    return gold_logprobs


# --- the decoder against the full pass --------------------------------------------------------


@pytest.mark.parametrize("shuffle", [False, True], ids=["in-order", "reordered"])
@pytest.mark.parametrize("vocab", ["words", "subwords"])
@pytest.mark.parametrize("name", MODELS)
def test_decoder_equals_the_full_pass(data, name, vocab, shuffle):
    model = make_model(name, data, vocab=vocab)
    trees = data["short"][:4]
    gold, open_start, lengths = gold_sequences(model, trees)
    assert len(set(lengths)) > 1  # sequences of different lengths, padded after their end
    gold_logprobs = check_decoder(model, gold, open_start, shuffle=shuffle)
    # The gold targets' log-probs add up to the loss (every action for PLM, pieces and </s> otherwise).
    real = torch.arange(gold.shape[1] - 1)[None, :] < torch.tensor(lengths)[:, None] - 1
    with torch.no_grad():
        loss = model.loss(next(model.prepare(trees).batches(len(trees), shuffle=False)))
    assert float(gold_logprobs[real].sum()) == pytest.approx(-float(loss.sums["lm"]), rel=1e-5)
    ends = gold[torch.arange(len(trees)), torch.tensor(lengths) - 1]
    expected_end = model.vocab.index(REDUCE) if name.startswith("plm") else EOS_ID
    assert (ends == expected_end).all()


@pytest.mark.parametrize("name", ["lm", "plm-mask"])
def test_a_model_without_positions_decodes_like_its_full_pass(data, name):
    """``positions: none``: no position embeddings (the causal mask alone orders the tokens)."""
    model = make_model(name, data, positions="none")
    assert model.position_embedding is None
    assert not any("position" in key for key in model.state_dict())
    gold, open_start, _ = gold_sequences(model, data["short"][:3])
    check_decoder(model, gold, open_start, shuffle=True)


def test_plm_mask_decoder_uses_the_parser_state(data):
    """Same weights, same sequences: plm-mask's decoder differs from plm's, and each equals its own
    full pass (so the masks matter and are the right ones)."""
    masked = make_model("plm-mask", data)
    plain = make_model("plm", data)
    plain.load_state_dict(masked.state_dict())
    gold, open_start, _ = gold_sequences(masked, data["short"][4:7])
    a, b = masked.decoder(), plain.decoder()
    parents = torch.arange(len(gold))
    for decoder in (a, b):
        decoder.start(len(gold))
        for t in range(1, gold.shape[1]):
            decoder.advance(parents, gold[:, t])
    assert (a.logprobs() - b.logprobs()).abs().max() > 1e-3
    full = full_logprobs(masked, gold, open_start)[:, -1]
    torch.testing.assert_close(a.logprobs(), full, atol=1e-5, rtol=0)
    assert a.row_mask().shape == (len(gold), SMALL["n_heads"], 1, gold.shape[1])
    assert b.row_mask().shape == (1, 1, 1, gold.shape[1])


def test_decoder_runs_without_dropout_and_leaves_the_mode(data):
    model = make_model("plm-mask", data, dropout=0.3, attention_dropout=0.3)
    gold, open_start, _ = gold_sequences(model, data["short"][:3])
    model.train()
    decoder = model.decoder()
    decoder.start(len(gold))
    for t in range(1, gold.shape[1]):
        decoder.advance(torch.arange(len(gold)), gold[:, t])
    assert model.training
    model.eval()
    torch.testing.assert_close(
        decoder.logprobs(), full_logprobs(model, gold, open_start)[:, -1], atol=1e-5, rtol=0
    )


def test_decoder_restarts_and_changes_size(data):
    model = make_model("lm", data)
    decoder = model.decoder()
    assert decoder.size == 0
    decoder.start(3)
    first = decoder.logprobs()
    # every prefix is <s>; rows 0 and 2 of one matmul only up to float order (row position)
    torch.testing.assert_close(first[0], first[2], atol=FLOAT_ORDER, rtol=0)
    decoder.advance(torch.tensor([0, 0, 1, 2, 2]), torch.tensor([5, 6, 7, 8, 9]))
    assert decoder.size == 5 and decoder.length == 2
    decoder.advance(torch.tensor([4]), torch.tensor([10]))
    assert decoder.size == 1 and decoder.length == 3
    expected = full_logprobs(model, torch.tensor([[BOS_ID, 9, 10]]), None)[0, -1]
    torch.testing.assert_close(decoder.logprobs()[0], expected, atol=1e-5, rtol=0)
    decoder.start(2)  # a fresh start forgets everything: it equals a new decoder of that size
    assert decoder.size == 2 and decoder.length == 1
    fresh = model.decoder()
    fresh.start(2)
    assert torch.equal(decoder.logprobs(), fresh.logprobs())  # the same rows and shapes: the same bits
    # Against the 3-row start only up to float order: the CPU's matmul kernels may differ by row count.
    torch.testing.assert_close(decoder.logprobs(), first[:2], atol=1e-5, rtol=0)


# --- kept prefixes (KEEP) --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lm", "plm-mask"])
def test_a_step_that_keeps_every_prefix_changes_nothing(data, name):
    model = make_model(name, data)
    decoder = model.decoder()
    decoder.start(3)
    decoder.advance(torch.tensor([0, 1, 2]), torch.tensor([5, KEEP, 6]))
    before = decoder.logprobs()
    decoder.advance(torch.tensor([2, 0, 1]), torch.tensor([KEEP, KEEP, KEEP]))
    torch.testing.assert_close(decoder.logprobs(), before[[2, 0, 1]], atol=FLOAT_ORDER, rtol=0)
    decoder.advance(torch.tensor([1, 0]), torch.tensor([7, KEEP]))
    if name == "lm":
        expected = full_logprobs(model, torch.tensor([[BOS_ID, 5, 7]]), None)[0, -1]
        torch.testing.assert_close(decoder.logprobs()[0], expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(decoder.logprobs()[1], before[2], atol=FLOAT_ORDER, rtol=0)


def decode_with_waits(
    model: ActionLM, gold, lengths, waits, *, on_advance=None
) -> list[list[list[torch.Tensor]]]:
    """Feed each gold sequence through one decoder, one hypothesis per sequence, in a new random
    order every call; sequence ``t`` gets ``KEEP`` on the calls where ``waits(call, t)``, and is
    dropped once fed. Returns, per sequence and per position, the log-prob rows the decoder gave
    after it (one per call spent there). ``on_advance(decoder, rows)`` runs after every call
    (``rows[i]``: the sequence of hypothesis ``i``)."""
    generator = torch.Generator().manual_seed(0)
    decoder = model.decoder()
    assert decoder.supports_keep
    rows = list(range(len(lengths)))  # the sequence each hypothesis decodes
    fed = [1] * len(lengths)  # positions of each sequence held (<s> included)
    got: list[list[list[torch.Tensor]]] = [[[] for _ in range(n)] for n in lengths]
    decoder.start(len(rows))
    call = 0
    while rows:
        logprobs = decoder.logprobs()
        for row, t in enumerate(rows):
            got[t][fed[t] - 1].append(logprobs[row])
        parents, step = [], []
        for row in torch.randperm(len(rows), generator=generator).tolist():
            t = rows[row]
            if fed[t] == lengths[t]:
                continue
            parents.append(row)
            if waits(call, t):
                step.append(KEEP)
            else:
                step.append(int(gold[t, fed[t]]))
                fed[t] += 1
        rows = [rows[p] for p in parents]
        decoder.advance(torch.tensor(parents, dtype=torch.long), torch.tensor(step, dtype=torch.long))
        if on_advance is not None:
            on_advance(decoder, rows)
        call += 1
    return got


def check_waits(model: ActionLM, gold, open_start, got) -> int:
    """Every row of ``got`` equals the full pass of its sequence at its position; returns how many
    were given while the prefix waited."""
    reference = full_logprobs(model, gold, open_start)
    waited = 0
    for t, per_position in enumerate(got):
        for position, values in enumerate(per_position):
            assert values, f"sequence {t}: no log-probs after position {position}"
            for value in values:
                torch.testing.assert_close(value, reference[t, position], atol=1e-5, rtol=0)
            waited += len(values) - 1
    return waited


def mask_checker(model: ActionLM, gold, open_start):
    """plm-mask: after every call, each prefix's row of head masks is its sequence's, on the
    prefix's own slots, and no head attends a padding slot."""
    masks = model.attention_mask(gold.shape[1], open_start)

    def check(decoder, rows):
        got = decoder.row_mask()
        for prefix, t in enumerate(rows):
            row = int(decoder._row[prefix])  # where the decoder holds the prefix
            own = decoder._position[row] >= 0
            newest = int(decoder._length[row]) - 1
            assert torch.equal(decoder._position[row][own], torch.arange(newest + 1))
            assert not got[row][..., ~own].any()
            assert torch.equal(got[row][:, :, own], masks[t, :, newest : newest + 1, : newest + 1])

    return check


@pytest.mark.parametrize("name", MODELS)
def test_kept_prefixes_wait_unchanged_while_others_grow(data, name):
    """``KEEP`` (beam search's waiting states): each sequence waits every third call, at its own
    phase, so prefixes of different lengths (and plm-mask parser states) sit side by side; every
    log-prob equals that of the sequence's full pass, before and after waiting."""
    model = make_model(name, data)
    gold, open_start, lengths = gold_sequences(model, data["short"][:5])
    assert len(set(lengths)) > 1
    check = mask_checker(model, gold, open_start) if open_start is not None else None
    got = decode_with_waits(model, gold, lengths, lambda call, t: (call + t) % 3 == 0, on_advance=check)
    assert check_waits(model, gold, open_start, got) > len(lengths)


@pytest.mark.parametrize("name", ACTION_MODELS)
def test_padding_slots_are_dropped(data, name):
    """Each prefix waits two calls of every three, so two slots in three would be padding; the
    decoder drops it when it exceeds a quarter of the longest prefix (at least 16 slots)."""
    model = make_model(name, data)
    longest = sorted(data["train"], key=lambda tree: len(tree.leaves()))[-3:]
    gold, open_start, lengths = gold_sequences(model, longest)
    widths = []

    def watch(decoder, rows):
        if rows:
            widths.append((decoder._position.shape[1], int(decoder._length.max())))
        if open_start is not None:
            mask_checker(model, gold, open_start)(decoder, rows)

    got = decode_with_waits(model, gold, lengths, lambda call, t: (call + t) % 3 != 0, on_advance=watch)
    check_waits(model, gold, open_start, got)
    assert all(slots <= longest + max(16, longest // 4) + 1 for slots, longest in widths)
    assert any(later[0] < earlier[0] for earlier, later in itertools.pairwise(widths))


# --- the action grammar -----------------------------------------------------------------------


@pytest.mark.parametrize("vocab", ["words", "subwords"])
@pytest.mark.parametrize("name", MODELS)
def test_action_grammar_agrees_with_the_vocabulary(data, name, vocab):
    model = make_model(name, data, vocab=vocab)
    text = model.vocab
    grammar = model.action_grammar()
    assert grammar.vocab_size == len(text)
    assert grammar.word_mask.shape == (len(text),)
    assert not grammar.word_mask[[PAD_ID, BOS_ID, EOS_ID]].any() and grammar.word_mask[UNK_ID]
    if not name.startswith("plm"):
        assert grammar.open_label == {} and grammar.close_label == {}
        assert grammar.style == "words" and grammar.ends_with_eos
        return
    assert grammar.style == "rnng" and not grammar.ends_with_eos
    assert grammar.close_label == {text.index(REDUCE): None}
    nt_symbols = {symbol for symbol in text.symbols if symbol.startswith("NT(")}
    assert {text.token(i) for i in grammar.open_label} == nt_symbols and nt_symbols
    for i, label in grammar.open_label.items():
        assert text.token(i) == open_action(label) and text.index(open_action(label)) == i
    # The kinds of an encoded action sequence are what the grammar says of its ids.
    for tree in data["short"]:
        encoded = encode_actions(tree_to_actions(tree, "rnng"), text)
        for token, kind in zip(encoded.ids.tolist(), encoded.kinds.tolist()):
            assert (token in grammar.open_label) == (kind == ActionKind.OPEN)
            assert (token in grammar.close_label) == (kind == ActionKind.CLOSE)
            assert grammar.word_mask[token] == (kind == ActionKind.WORD)


# --- errors -----------------------------------------------------------------------------------


def test_decoder_errors(data):
    model = make_model("plm-mask", data, max_length=4)
    decoder = model.decoder()
    with pytest.raises(RuntimeError, match="start"):
        decoder.advance(torch.tensor([0]), torch.tensor([UNK_ID]))
    with pytest.raises(RuntimeError, match="start"):
        decoder.logprobs()
    decoder.start(2)
    reduce = model.vocab.index(REDUCE)
    with pytest.raises(ActionSequenceError, match="prefix 1: a closer with no open constituent"):
        decoder.advance(torch.tensor([0, 1]), torch.tensor([UNK_ID, reduce]))
    with pytest.raises(ValueError, match="parent 2 is not one of the 2 prefixes"):
        decoder.advance(torch.tensor([0, 2]), torch.tensor([UNK_ID, UNK_ID]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        decoder.advance(torch.tensor([0]), torch.tensor([len(model.vocab)]))
    with pytest.raises(ValueError, match="1-d tensors of one length"):
        decoder.advance(torch.tensor([0, 1]), torch.tensor([UNK_ID]))
    with pytest.raises(TypeError, match="integer"):
        decoder.advance(torch.tensor([0.0]), torch.tensor([UNK_ID]))
    assert decoder.size == 2 and decoder.length == 1  # failed calls change nothing
    nt = model.vocab.index(next(s for s in model.vocab.symbols if s.startswith("NT(")))
    for token in (nt, UNK_ID, reduce):
        decoder.advance(torch.tensor([0, 1]), torch.tensor([token, token]))
    assert decoder.length == 4
    with pytest.raises(ValueError, match="4 positions, the model's max_length"):
        decoder.advance(torch.tensor([0, 1]), torch.tensor([UNK_ID, UNK_ID]))
    with pytest.raises(ValueError, match="at least 0"):
        decoder.start(-1)


@pytest.mark.parametrize("name", ["plm", "lm"])
def test_symbols_of_any_spelling_are_never_words(name, data):
    vocab = data["words"]
    model = build_model(
        {"model": name, "d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 32}, {"vocab": vocab}
    )
    mask = model.action_grammar().word_mask
    assert not any(mask[vocab.index(symbol)] for symbol in vocab.symbols)
