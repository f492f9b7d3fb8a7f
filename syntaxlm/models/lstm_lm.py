"""The plain LSTM language model (the "2-layer LSTM" of PRPN's Table 3, Shen et al. 2018, §6.2)
and what every recurrent words-only model here shares (``RecurrentLM``; PRPN builds on it).

A recurrent LM is three composable pieces, public so that wrappers (the dependency-mixture LM)
can reuse them:

- ``embed(tokens)``: ``[B, T, E]`` input embeddings with the embedding dropout;
- ``hidden_states(tokens, state)``: ``([B, T, H_out], new_state)``, the last layer's outputs after
  the output dropout; ``state`` is what the recurrence carries (``None`` = zeros);
- ``output_logits(hidden)``: ``[B, T, V]``, the softmax layer (tied to the input embeddings when
  ``tie_embeddings``).

``loss`` is those three composed. Every state is a nest of tuples of batch-first tensors, so that
the incremental decoder can reorder prefixes by indexing dimension 0.

Data (``prepare``), two orders (``order``):

- ``streams`` (language modelling, as the papers): the training sentences, in treebank order,
  form one continuous text ``<s> w_1 .. w_n </s> <s> ...``; the target of each position is the
  next token, except that ``<s>`` is never a target (it follows ``</s>`` deterministically), so
  the loss covers exactly the words and ``</s>`` of every sentence, as in sentence mode. The text
  is cut into ``streams`` contiguous pieces (the classic ``batchify``; set it to the batch size to
  get exactly one piece per lane) and each piece into segments of ``segment_length`` tokens
  (truncated BPTT); the trainer deals the pieces to the batch lanes and passes each lane's state
  from one segment to the next (``LossOutput.state``, detached by the trainer). The last segment
  of a piece is padded; the padding positions run through the recurrence (their state reaches the
  next piece of that lane), which changes nothing but the carried state at one point per piece.
- ``sentences``: one row per sentence, ``<s> w_1 .. w_n`` → ``w_1 .. w_n </s>``, from zero state
  (PRPN's unsupervised-parsing mode, §6.3).

Character level (``unit: character``, PRPN §6.1): the vocabulary is the training words'
characters plus ``SPACE`` (``vocabularies_for`` builds it from the training trees and replaces
the word vocabulary the trainer made); a sentence is read as ``<s> c a t _ s a t </s>``, and a
word's log-prob is the sum over the ``SPACE`` before it and its characters.

Scoring (``word_logprobs``) always reads each sentence on its own from zero state, ``<s>`` first,
whatever order the model was trained in; a word's log-prob is the sum over its vocabulary pieces.

Dropouts of the LSTM baseline, named as in PRPN §6.2 ("input/output embeddings, between recurrent
layers, recurrent states"): ``dropout`` on the input embeddings and on the last layer's outputs,
``layer_dropout`` between layers, ``recurrent_dropout`` on the recurrent weights (DropConnect on
each layer's hidden-to-hidden matrix, one mask per batch, Merity et al. 2018): a dropout on the
recurrent *states* would need a Python loop over time and lose the fused ``nn.LSTM`` kernel, which
this baseline keeps. When the embeddings are tied and the last layer is wider than them, a linear
projection (no bias) maps the last layer to the embedding size before the softmax.
"""

from __future__ import annotations

import itertools
import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus, pad_rows
from syntaxlm.models.base import ConfigError, LossOutput, ModelConfig, SyntacticLM
from syntaxlm.models.decoding import ActionGrammar, Decoder, words_grammar
from syntaxlm.models.scoring import (
    ScoringItem,
    padded,
    picked_logprobs,
    reject_trees,
    sentence_item,
    word_pieces,
)
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.text.vocab import WordVocab

ORDERS = ("streams", "sentences")
UNITS = ("word", "character")
SPACE = "_"  # the character-level token between two words (as in the character-level PTB text)


@dataclass
class RecurrentLMConfig(ModelConfig):
    """Fields of every recurrent words-only model. ``d_model`` is the embedding size (input and
    output), ``hidden_size`` that of the recurrent layers, ``n_layers`` their number."""

    hidden_size: int = 128
    dropout: float = 0.1  # input and output embeddings
    layer_dropout: float = 0.1  # between recurrent layers
    recurrent_dropout: float = 0.1  # on the recurrent states (weights for the LSTM baseline)
    tie_embeddings: bool = True
    order: str = "streams"
    segment_length: int = 35  # truncated BPTT
    streams: int = 64  # contiguous pieces of the training text in streams order
    unit: str = "word"  # or "character": the model reads and predicts characters

    def check(self) -> None:
        super().check()
        if self.unit not in UNITS:
            raise ConfigError(f"model.unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if self.hidden_size < 1:
            raise ConfigError(f"model.hidden_size must be at least 1, got {self.hidden_size}")
        for name in ("layer_dropout", "recurrent_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be in [0, 1), got {getattr(self, name)}")
        if self.order not in ORDERS:
            raise ConfigError(f"model.order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if self.segment_length < 1:
            raise ConfigError(f"model.segment_length must be at least 1, got {self.segment_length}")
        if self.streams < 1:
            raise ConfigError(f"model.streams must be at least 1, got {self.streams}")


class RecurrentLM(SyntacticLM):
    """A words-only LM made of ``embed``, ``hidden_states`` and ``output_logits`` (module docstring)."""

    config: RecurrentLMConfig

    # --- vocabularies ----------------------------------------------------------------------------

    @classmethod
    def vocabularies_for(cls, config: ModelConfig, trees: Sequence[Any], vocab) -> dict[str, Any]:
        """The text vocabulary; at the character level, the characters of the training words and
        ``SPACE`` instead (every character seen once is kept)."""
        if getattr(config, "unit", "word") == "word":
            return {"vocab": vocab}
        spelled = ([SPACE, *SPACE.join(_leaves(tree, i))] for i, tree in enumerate(trees))
        return {"vocab": WordVocab.build(spelled, min_freq=1)}

    # --- the three pieces ---------------------------------------------------------------------

    @abstractmethod
    def embed(self, tokens: Tensor) -> Tensor:
        """``[B, T, E]`` embeddings of ``tokens`` ``[B, T]``, after the embedding dropout."""

    @abstractmethod
    def hidden_states(self, tokens: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        """The last layer's outputs ``[B, T, H_out]`` (after the output dropout) and the new state."""

    @abstractmethod
    def output_logits(self, hidden: Tensor) -> Tensor:
        """``[..., V]`` next-token scores of ``hidden`` ``[..., H_out]``."""

    # --- training -----------------------------------------------------------------------------

    def prepare(self, trees: Sequence[Any]) -> RowCorpus:
        """``inputs``/``labels`` rows (``labels`` 0 = not a target), in the config's order."""
        sentences = [self._encode(_leaves(tree, i)) for i, tree in enumerate(trees)]
        if self.config.order == "sentences":
            return sentence_corpus(sentences)
        return stream_corpus(sentences, self.config.segment_length, self.config.streams)

    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """``lm``: NLL sum (nats) over the batch's targets; the state goes on to the next segment."""
        device = self.device
        inputs = batch["inputs"].to(device).long()
        labels = batch["labels"].to(device).long()
        if inputs.shape[0] == 0:  # no rows for this process: a zero that reaches every parameter
            zero = sum(parameter.sum() for parameter in self.parameters()) * 0.0
            return LossOutput({"lm": zero}, dict(batch.counts), None)
        if self.config.order == "sentences" or not _fits(state, inputs.shape[0]):
            state = None
        hidden, state = self.hidden_states(inputs, state)
        is_target = labels != PAD_ID
        logits = self.output_logits(hidden[is_target])
        nll = F.cross_entropy(logits.float(), labels[is_target], reduction="sum")
        return LossOutput({"lm": nll}, dict(batch.counts), state)

    # --- scoring ------------------------------------------------------------------------------

    def scoring_items(self, sentences: list[list[str]], trees: Sequence[Any] | None) -> list[ScoringItem]:
        """Each sentence on its own, ``<s>`` + pieces → pieces + ``</s>``."""
        reject_trees(self.config.model, trees)
        return [sentence_item(*self._pieces(sentence), len(sentence)) for sentence in sentences]

    def target_logprobs(self, items: list[ScoringItem]) -> list[Tensor]:
        """From zero state, whatever order the model was trained in."""
        hidden, _ = self.hidden_states(padded([item.inputs for item in items], self.device).long(), None)
        return picked_logprobs(self.output_logits(hidden).float().log_softmax(-1), items)

    # --- decoding -----------------------------------------------------------------------------

    def action_grammar(self) -> ActionGrammar:
        """Words only, ending with ``</s>``."""
        return words_grammar(self.vocab)

    def decoder(self) -> RecurrentDecoder:
        return RecurrentDecoder(self)

    # --- encoding -----------------------------------------------------------------------------

    def _pieces(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Piece ids of ``words`` and the word of each piece; a word spelled like a symbol or a
        special token is read as ``<unk>``. At the character level the pieces are characters, and
        the ``SPACE`` before a word belongs to that word."""
        if self.config.unit == "character":
            ids: list[int] = []
            word_index: list[int] = []
            for i, word in enumerate(words):
                characters = list(word) if i == 0 else [SPACE, *word]
                ids.extend(self.vocab.encode(characters, sentence_initial=False))
                word_index.extend([i] * len(characters))
            return np.asarray(ids, dtype=np.int32), np.asarray(word_index, dtype=np.int32)
        return word_pieces(self.vocab, words)

    def _encode(self, words: Sequence[str]) -> np.ndarray:
        return self._pieces(words)[0]

    def _init_embedding_and_decoder(self) -> None:
        """Uniform(±init_range) embeddings (the padding row zero) and untied output weights."""
        r = self.config.init_range
        nn.init.uniform_(self.embedding.weight, -r, r)
        with torch.no_grad():
            self.embedding.weight[PAD_ID].zero_()
        if self.decoder_weight is not None:
            nn.init.uniform_(self.decoder_weight, -r, r)


# --- the LSTM baseline -------------------------------------------------------------------------------


@dataclass
class LSTMLMConfig(RecurrentLMConfig):
    """The LSTM baseline: ``n_layers`` ``nn.LSTM`` layers of ``hidden_size`` over ``d_model`` embeddings."""

    model: str = "lstm"
    init_range: float = 0.1  # embeddings drawn from U(−r, r)

    def check(self) -> None:
        if self.model != "lstm":
            raise ConfigError(f"model.model {self.model!r} is not the LSTM LM; expected 'lstm'")
        super().check()
        if not self.init_range > 0:
            raise ConfigError(f"model.init_range must be positive, got {self.init_range}")


class LSTMLM(RecurrentLM):
    """Embedding → ``n_layers`` LSTMs (``nn.LSTM``, fused) → (projection) → softmax; see the module docstring."""

    config_class: ClassVar[type[ModelConfig]] = LSTMLMConfig
    config: LSTMLMConfig

    def __init__(self, config: LSTMLMConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        vocab_size, d, h = len(self.vocab), config.d_model, config.hidden_size
        self.embedding = nn.Embedding(vocab_size, d, padding_idx=PAD_ID)
        sizes = [d] + [h] * config.n_layers
        self.layers = nn.ModuleList(
            nn.LSTM(sizes[i], sizes[i + 1], batch_first=True) for i in range(config.n_layers)
        )
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.layer_dropout = nn.Dropout(config.layer_dropout)
        self.output_dropout = nn.Dropout(config.dropout)
        tied_projection = config.tie_embeddings and h != d
        self.projection = nn.Linear(h, d, bias=False) if tied_projection else None
        self.decoder_weight = None if config.tie_embeddings else nn.Parameter(torch.empty(vocab_size, h))
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))
        self._init_weights()

    def _init_weights(self) -> None:
        self._init_embedding_and_decoder()
        if self.projection is not None:
            bound = 1 / math.sqrt(self.config.hidden_size)
            nn.init.uniform_(self.projection.weight, -bound, bound)

    def embed(self, tokens: Tensor) -> Tensor:
        return self.embedding_dropout(self.embedding(tokens))

    def hidden_states(self, tokens: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        """``state``: one ``(h, c)`` pair of ``[B, hidden_size]`` tensors per layer (``None`` = zeros)."""
        x = self.embed(tokens)
        new_state = []
        for i, layer in enumerate(self.layers):
            if i > 0:
                x = self.layer_dropout(x)
            hx = None if state is None else (state[i][0][None].contiguous(), state[i][1][None].contiguous())
            x, (h, c) = self._run_layer(layer, x, hx)
            new_state.append((h[0], c[0]))
        return self.output_dropout(x), tuple(new_state)

    def _run_layer(self, layer: nn.LSTM, x: Tensor, hx: tuple[Tensor, Tensor] | None):
        """One layer; in training with ``recurrent_dropout``, its hidden-to-hidden weights dropped
        (DropConnect, one mask for the batch)."""
        p = self.config.recurrent_dropout
        if not (self.training and p > 0):
            return layer(x, hx)
        weights = {name: value for name, value in layer.named_parameters()}
        weights["weight_hh_l0"] = F.dropout(weights["weight_hh_l0"], p, training=True)
        return torch.func.functional_call(layer, weights, (x, hx))

    def output_logits(self, hidden: Tensor) -> Tensor:
        if self.projection is not None:
            hidden = self.projection(hidden)
        weight = self.embedding.weight if self.decoder_weight is None else self.decoder_weight
        return F.linear(hidden, weight, self.decoder_bias)


# --- the incremental decoder ---------------------------------------------------------------------------


class RecurrentDecoder(Decoder):
    """``n`` prefixes of a ``RecurrentLM``: each holds the model's state after its last token and the
    log-probabilities of the next one. One ``advance`` runs one step of the recurrence (``T = 1``)
    for every prefix, with dropout off; results equal the full pass over the same sequences."""

    def __init__(self, model: RecurrentLM):
        self.model = model
        self._state: Any = None
        self._next_logprobs: Tensor | None = None

    @property
    def size(self) -> int:
        return 0 if self._next_logprobs is None else self._next_logprobs.shape[0]

    def _start(self, n: int) -> None:
        self._state = None
        self._run(torch.full((n,), BOS_ID, dtype=torch.long, device=self.model.device))

    def _logprobs(self) -> Tensor:
        return self._next_logprobs

    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        self._state = select_rows(self._state, parents)
        self._run(tokens)

    def _run(self, tokens: Tensor) -> None:
        if tokens.shape[0] == 0:
            self._next_logprobs = torch.zeros(0, len(self.model.vocab), device=self.model.device)
            return
        hidden, self._state = self.model.hidden_states(tokens[:, None], self._state)
        self._next_logprobs = self.model.output_logits(hidden[:, 0]).float().log_softmax(-1)


# --- corpora and helpers shared by the recurrent models ------------------------------------------------


def sentence_corpus(sentences: Sequence[np.ndarray]) -> RowCorpus:
    """One shuffled row per sentence: ``<s> w..`` → ``w.. </s>``."""
    inputs = [np.concatenate(([BOS_ID], ids)) for ids in sentences]
    labels = [np.append(ids, EOS_ID) for ids in sentences]
    lengths = np.array([len(row) for row in inputs], dtype=np.int64)
    fields = {"inputs": pad_rows(inputs, PAD_ID, np.int32), "labels": pad_rows(labels, PAD_ID, np.int32)}
    return RowCorpus(fields, lengths, target_fields={"lm": "labels"}, order="shuffled")


def stream_corpus(sentences: Sequence[np.ndarray], segment_length: int, streams: int) -> RowCorpus:
    """The sentences as one text ``<s> w.. </s> <s> ..`` cut into ``streams`` contiguous pieces and
    each piece into segments of ``segment_length`` (module docstring); ``<s>`` is never a target."""
    text = np.concatenate([np.concatenate(([BOS_ID], ids, [EOS_ID])) for ids in sentences] or [[BOS_ID]])
    inputs, labels = text[:-1].astype(np.int32), text[1:].astype(np.int32)
    labels = np.where(labels == BOS_ID, PAD_ID, labels).astype(np.int32)
    n_pieces = max(1, min(streams, len(inputs) // segment_length))
    bounds = np.linspace(0, len(inputs), n_pieces + 1).astype(np.int64)
    rows_in, rows_out, sequence = [], [], []
    for piece, (start, end) in enumerate(itertools.pairwise(bounds)):
        for first in range(start, end, segment_length):
            last = min(first + segment_length, end)
            rows_in.append(inputs[first:last])
            rows_out.append(labels[first:last])
            sequence.append(piece)
    lengths = np.array([len(row) for row in rows_in], dtype=np.int64)
    fields = {
        "inputs": pad_rows(rows_in, PAD_ID, np.int32, width=segment_length),
        "labels": pad_rows(rows_out, PAD_ID, np.int32, width=segment_length),
    }
    return RowCorpus(
        fields,
        lengths,
        target_fields={"lm": "labels"},
        order="streams",
        sequence=np.array(sequence, dtype=np.int64),
    )


def select_rows(state: Any, index: Tensor) -> Any:
    """``state`` (a nest of tuples/lists of batch-first tensors) with rows ``index`` of each tensor."""
    if state is None:
        return None
    if isinstance(state, Tensor):
        return state.index_select(0, index)
    return type(state)(select_rows(item, index) for item in state)


def _fits(state: Any, rows: int) -> bool:
    """Whether a carried state has ``rows`` rows (a new batch shape starts from zero state)."""
    if state is None:
        return False
    if isinstance(state, Tensor):
        return state.shape[0] == rows
    return all(_fits(item, rows) for item in state)


def _leaves(tree: Any, index: int) -> list[str]:
    if hasattr(tree, "leaves"):
        return list(tree.leaves())
    if isinstance(tree, (list, tuple)) and all(isinstance(word, str) for word in tree):
        return list(tree)
    raise TypeError(f"trees[{index}] is {type(tree).__name__}; expected a Tree or a list of words")
