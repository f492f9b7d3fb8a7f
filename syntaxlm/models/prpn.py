"""PRPN, the Parsing-Reading-Predict Network (Shen et al. 2018, "Neural language modeling by jointly
learning syntax and lexicon"): a language model over raw text that induces a syntactic distance
between every pair of adjacent tokens and uses it to gate its attention; the authors' code is
yikangshen/PRPN@42212fb (``REFERENCE_NOTES.md``, PRPN section).

The three networks, per token ``t`` (memories hold the ``N = memory_slots`` previous steps):

- **Parsing network** (§4.2): a convolution over the current and ``L = lookback`` previous
  embeddings (Eq. 7), batch norm, ReLU, then a grouped 1×1 convolution giving two numbers: the
  syntactic distance ``d_t`` (Eq. 8) and the look-ahead distance ``d̂_{t+1}`` of the predict
  network (Eq. 13). Before the first token the previous embeddings are zero vectors and the
  previous distances "unreachable" (larger than any distance), so nothing before the start is
  attended to. The gate of memory ``m_i`` (``i < t``) is the stick-breaking CDF (Eq. 5, 19)
  ``g_i^t = ∏_{j=i+1..t} α(d_t − d_j)``; the factor ``j = t`` is ``α(0)``.
- **Reading network** (§5.1): per layer, LSTMN-style tapes of the last ``N`` hidden and cell
  states; key ``k_t = W [x_t; h_{t−1}]`` (Eq. 9), structured attention
  ``s_i = g_i·exp(h_i·k_t/√δ) / (Σ_i g_i·exp(h_i·k_t/√δ) + 1e-8)`` (Eq. 10–11), summaries
  ``h̃_t, c̃_t = Σ s_i (h_i, c_i)`` (Eq. 12) as the previous state of a layer-normalised LSTM cell.
- **Predict network** (§5.2): attention over the last ``N`` top-layer hidden states with the
  look-ahead gates ``g^{t+1}`` (from ``d̂_{t+1}``), key ``W h_t``; ``f̂([h_t; summary])`` (Eq. 14)
  = ``residual_blocks`` residual blocks then Linear → batch norm → tanh; the softmax layer is tied
  to the input embeddings (``tie_embeddings``).

Readings where the paper is vague or differs from the authors' code (we follow the code, whose
numbers the paper reports, unless said otherwise):

- α (Eq. 6). The code computes ``α(x) = (hardtanh(2τx + 1) + 1)/2 = clamp(τx + 1, 0, 1)``: Eq. 6
  shifted so that ``α = 1`` at equal distances (Eq. 6 gives 0.5) — the ``j = t`` factor of every
  gate is then 1 and ``m_{t−1}`` is always visible, as Eq. 5's product (which stops at ``t − 1``)
  says. ``gate = "soft"`` is the code's smooth variant ``σ(10τx + 5)``. As ``τ → ∞`` both become
  Eq. 20–21: ``g_i^t = 1`` for ``t' ≤ i < t`` and 0 below, ``t' = max{i : d_i > d_t}``.
- The distances go through a sigmoid (the code at 42212fb), not the ReLU of Eq. 8/13: a ReLU lets
  all distances fall to 0 together, which gives only right-branching trees.
- Dropouts (§6.2 names three: input/output embeddings, between layers, recurrent states):
  ``dropout`` on the first layer's cell input and on the predict network's output (the code
  drops the embeddings there, not before the parser); ``layer_dropout`` on the cell input of the
  other layers and, as the code, inside the parsing network (its input and hidden layer), the
  reading keys (input and output of ``W``) and the predict network (key, residual blocks, MLP);
  ``recurrent_dropout`` on ``h̃_t`` before the cell, one mask per row fixed over the segment (the
  code draws one mask for the whole batch).
- Batch norm, in training, takes its statistics over the real tokens only (padding left out).
  Layer norm is ``nn.LayerNorm`` (the code divides by the unbiased standard deviation plus ε).
- Embeddings are drawn from ``U(−init_range, init_range)`` and the output bias starts at zero, as
  the code; other layers keep PyTorch's default initialisation.
- Trees (Appendix A/C): ``τ → ∞`` at test time means the tree is read off the distances
  themselves: each sentence is read alone as ``<s> w_1 .. w_n </s>`` from zero state, the
  distances of ``<s>`` and ``</s>`` are dropped and ``structure.distances.tree_from_distances``
  splits at the largest distance (ties: the first), as the authors' ``build_tree``.

Speed: everything that is not recurrent runs over the whole segment at once — the parsing network
(a convolution), all gates (a cumulative product), every layer's input projections and key halves,
the predict network's attention (one banded matrix product over the segment) and its MLP. Layers
run one after the other over the whole segment (layer ``j`` at ``t`` needs only layer ``j − 1`` at
``t``), so the Python loop over time holds just the recurrence: two matrix products, the attention
over ``N`` slots and the cell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from syntaxlm.models.base import ConfigError, ModelConfig
from syntaxlm.models.lstm_lm import RecurrentLM, RecurrentLMConfig
from syntaxlm.models.scoring import checked_sentences, evaluating, length_batches
from syntaxlm.structure.distances import tree_from_distances
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.trees.tree import Tree

GATES = ("hard", "soft")
# Distance of the steps before the start: larger than any distance (they lie in [0, 1]), so that
# every gate reaching them is 0. Finite, so that gradients through the gates stay finite.
UNREACHABLE = 1.0e4


@dataclass
class PRPNConfig(RecurrentLMConfig):
    """PRPN's sizes (``d_model`` embeddings, ``hidden_size`` reading layers and parser), the look-back
    range ``lookback`` (L), the memory span ``memory_slots`` (N_m), the temperature ``tau`` (τ),
    the gate kind, and the predict network's ``residual_blocks`` (0: the MLP alone)."""

    model: str = "prpn"
    lookback: int = 5
    memory_slots: int = 15
    tau: float = 10.0
    gate: str = "hard"
    residual_blocks: int = 0
    init_range: float = 0.01

    def check(self) -> None:
        if self.model != "prpn":
            raise ConfigError(f"model.model {self.model!r} is not PRPN; expected 'prpn'")
        super().check()
        if self.lookback < 0:
            raise ConfigError(f"model.lookback must be at least 0, got {self.lookback}")
        if self.memory_slots < 1:
            raise ConfigError(f"model.memory_slots must be at least 1, got {self.memory_slots}")
        if not self.tau > 0:
            raise ConfigError(f"model.tau must be positive, got {self.tau}")
        if self.gate not in GATES:
            raise ConfigError(f"model.gate must be one of {', '.join(GATES)}, got {self.gate!r}")
        if self.residual_blocks < 0:
            raise ConfigError(f"model.residual_blocks must be at least 0, got {self.residual_blocks}")
        if self.hidden_size % 2:
            raise ConfigError(
                f"model.hidden_size must be even (the parser's two heads each read half), got {self.hidden_size}"
            )
        if not self.init_range > 0:
            raise ConfigError(f"model.init_range must be positive, got {self.init_range}")


# --- gates and structured attention (pure functions) ----------------------------------------------


def gate_alpha(difference: Tensor, tau: float, gate: str = "hard") -> Tensor:
    """α of a distance difference ``d_t − d_j`` (Eq. 6 as the authors compute it; module docstring)."""
    if gate == "hard":
        return (F.hardtanh(2 * tau * difference + 1) + 1) / 2
    return torch.sigmoid(10 * tau * difference + 5)


def stick_breaking_gates(
    distances: Tensor, history: Tensor, tau: float, gate: str = "hard", *, query: Tensor | None = None
) -> Tensor:
    """Gates ``[B, T, N]`` of the ``N`` memories before each of ``T`` steps, oldest first.

    ``distances`` ``[B, T]`` are the steps' ``d_t``; ``history`` ``[B, N]`` the distances of the ``N``
    steps before the first, oldest first. Entry ``[b, t, N − 1 − k]`` gates memory ``m_{t−1−k}``:
    ``∏_{k'=0..k} α(q_t − d_{t−k'})`` (Eq. 5, 19) with ``q_t = d_t`` (the ``k' = 0`` factor is then
    ``α(0)``), or ``q_t = query[:, t]``: the look-ahead gates of the predict network compare
    ``d̂_{t+1}`` with the stored ``d_{t−N+1} .. d_t`` (Eq. 13), as the authors' code does.
    """
    n_slots = history.shape[1]
    query = distances if query is None else query
    # windows[:, t] = d_{t−N+1} .. d_t, oldest first
    windows = torch.cat([history, distances], dim=1).unfold(1, n_slots, 1)[:, 1:]
    alpha = gate_alpha(query[:, :, None] - windows, tau, gate)
    return torch.cumprod(alpha.flip(-1), dim=-1).flip(-1)  # products from the newest slot backwards


def structured_attention(memory: Tensor, key: Tensor, gates: Tensor) -> tuple[Tensor, Tensor]:
    """``(Σ_i s_i·memory_i, s)`` for memories ``[B, N, D]`` (hidden state first ``H`` features), key
    ``[B, H]`` and gates ``[B, N]``: ``s_i = g_i·exp(l_i) / (Σ g·exp(l) + 1e-8)``,
    ``l_i = h_i·k/√H`` (Eq. 10–12). Where a gate is 0 its weight is exactly 0."""
    size = key.shape[-1]
    logits = torch.bmm(memory[..., :size], key[:, :, None])[..., 0] / math.sqrt(size)
    weights = torch.exp(logits - logits.max(dim=-1, keepdim=True).values) * gates
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-8)
    return torch.bmm(weights[:, None], memory)[:, 0], weights


def banded_attention(queries: Tensor, values: Tensor, gates: Tensor, n_slots: int) -> tuple[Tensor, Tensor]:
    """Structured attention of ``T`` queries ``[B, T, H]`` at once, query ``t`` over
    ``values[:, t : t + N]`` (``values`` ``[B, N + T, H]``: ``N`` remembered states, then the
    segment's), gated by ``gates`` ``[B, T, N]``: one matrix product and a gather, no loop."""
    batch, steps, size = queries.shape
    scores = torch.bmm(queries, values.transpose(1, 2)) / math.sqrt(size)  # [B, T, N + T]
    band = torch.arange(steps, device=queries.device)[:, None] + torch.arange(n_slots, device=queries.device)
    band = band.expand(batch, steps, n_slots)
    logits = scores.gather(2, band)
    weights = torch.exp(logits - logits.max(dim=-1, keepdim=True).values) * gates
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-8)
    spread = scores.new_zeros(scores.shape).scatter(2, band, weights)
    return torch.bmm(spread, values), weights


# --- the model ------------------------------------------------------------------------------------


class ReadingLayer(nn.Module):
    """One layer of the reading network: keys, structured attention and a layer-normalised LSTM cell."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.input_gates = nn.Linear(input_size, 4 * hidden_size)
        self.input_norm = nn.LayerNorm(4 * hidden_size)
        self.hidden_gates = nn.Linear(hidden_size, 4 * hidden_size)
        self.hidden_norm = nn.LayerNorm(4 * hidden_size)
        self.cell_norm = nn.LayerNorm(hidden_size)
        # Eq. 9, W [x_t; h_{t−1}] split into its two halves
        self.key_input = nn.Linear(input_size, hidden_size)
        self.key_hidden = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(
        self,
        cell_inputs: Tensor,
        key_inputs: Tensor,
        memory: Tensor,
        gates: Tensor,
        recurrent_mask: Tensor | None,
        key_dropout: float,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Run the layer over a segment. ``cell_inputs``/``key_inputs`` ``[B, T, in]`` (dropped for
        the cell / not yet for the key); ``memory`` ``[B, N, 2H]`` the (h, c) tape, oldest first;
        ``gates`` ``[B, T, N]``. Returns the outputs ``h`` ``[B, T, H]``, the new tape and the
        attention weights ``[B, T, N]``."""
        size, steps = self.hidden_size, cell_inputs.shape[1]
        input_part = self.input_norm(self.input_gates(cell_inputs))  # [B, T, 4H], all steps at once
        key_part = self.key_input(F.dropout(key_inputs, key_dropout, self.training))  # [B, T, H]
        # The key's dropout masks (on h_{t−1} and on k_t), drawn for the whole segment at once.
        hidden_masks = _dropout_masks(key_part, key_dropout, self.training)
        key_masks = _dropout_masks(key_part, key_dropout, self.training)
        window = memory  # [B, N, 2H]: (h, c) of the last N steps, oldest first
        outputs, attention = [], []
        for t in range(steps):
            previous_h = window[:, -1, :size]
            if hidden_masks is not None:
                previous_h = previous_h * hidden_masks[:, t]
            key = key_part[:, t] + self.key_hidden(previous_h)
            if key_masks is not None:
                key = key * key_masks[:, t]  # Eq. 9
            summary, weights = structured_attention(window, key, gates[:, t])  # Eq. 10–12
            summary_h, summary_c = summary[:, :size], summary[:, size:]
            if recurrent_mask is not None:
                summary_h = summary_h * recurrent_mask
            cell_gates = input_part[:, t] + self.hidden_norm(self.hidden_gates(summary_h))
            i, f, g, o = cell_gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * summary_c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(self.cell_norm(c))
            window = torch.cat([window[:, 1:], torch.cat([h, c], dim=-1)[:, None]], dim=1)  # write
            outputs.append(h)
            attention.append(weights)
        return torch.stack(outputs, dim=1), window, torch.stack(attention, dim=1)


class ResidualBlock(nn.Module):
    """The predict network's residual block: ``relu(x + BN(W₂ drop(relu(BN(W₁ x)))))``."""

    def __init__(self, size: int):
        super().__init__()
        self.first = nn.Linear(size, size)
        self.first_norm = nn.BatchNorm1d(size)
        self.second = nn.Linear(size, size)
        self.second_norm = nn.BatchNorm1d(size)

    def forward(self, x: Tensor, dropout: float) -> Tensor:
        y = F.dropout(F.relu(self.first_norm(self.first(x))), dropout, self.training)
        return F.relu(x + self.second_norm(self.second(y)))


class PRPN(RecurrentLM):
    """Parsing, reading and predict networks (module docstring); ``induced_trees`` reads the
    unlabelled binary tree of each sentence off its syntactic distances."""

    config_class: ClassVar[type[ModelConfig]] = PRPNConfig
    config: PRPNConfig
    induces_trees: ClassVar[bool] = True

    def __init__(self, config: PRPNConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        vocab_size, d, h = len(self.vocab), config.d_model, config.hidden_size
        self.embedding = nn.Embedding(vocab_size, d, padding_idx=PAD_ID)
        # parsing network (Eq. 7, 8, 13)
        self.parser_conv = nn.Conv1d(d, h, config.lookback + 1)
        self.parser_norm = nn.BatchNorm1d(h)
        self.parser_heads = nn.Conv1d(h, 2, 1, groups=2)  # d_t and the look-ahead d̂_{t+1}
        # reading network (§5.1)
        self.readers = nn.ModuleList(ReadingLayer(d if i == 0 else h, h) for i in range(config.n_layers))
        # predict network (§5.2)
        self.predict_key = nn.Linear(h, h)
        self.predict_blocks = nn.ModuleList(ResidualBlock(2 * h) for _ in range(config.residual_blocks))
        self.predict_out = nn.Linear(2 * h, d)
        self.predict_norm = nn.BatchNorm1d(d)
        self.decoder_weight = None if config.tie_embeddings else nn.Parameter(torch.empty(vocab_size, d))
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))
        self._init_weights()

    def _init_weights(self) -> None:
        self._init_embedding_and_decoder()

    # --- state ----------------------------------------------------------------------------------

    def initial_state(self, batch: int) -> tuple[Any, ...]:
        """Zero state: ``(previous embeddings [B, L, E], previous distances [B, N], reading tapes
        (one [B, N, 2H] per layer), predict memory [B, N, H])``, oldest first."""
        c, device = self.config, self.device
        return (
            torch.zeros(batch, c.lookback, c.d_model, device=device),
            torch.full((batch, c.memory_slots), UNREACHABLE, device=device),
            tuple(torch.zeros(batch, c.memory_slots, 2 * c.hidden_size, device=device) for _ in self.readers),
            torch.zeros(batch, c.memory_slots, c.hidden_size, device=device),
        )

    # --- the three pieces -----------------------------------------------------------------------

    def embed(self, tokens: Tensor) -> Tensor:
        return F.dropout(self.embedding(tokens), self.config.dropout, self.training)

    def parse_distances(self, embeddings: Tensor, previous: Tensor, real: Tensor) -> tuple[Tensor, Tensor]:
        """``(d_t, d̂_{t+1})``, each ``[B, T]`` in ``(0, 1)``, from the embeddings ``[B, T, E]`` of a
        segment and the ``L`` before it ``[B, L, E]`` (Eq. 7, 8, 13)."""
        p = self.config.layer_dropout
        window = F.dropout(torch.cat([previous, embeddings], dim=1), p, self.training)
        hidden = self.parser_conv(window.transpose(1, 2))  # [B, H, T]
        hidden = _apply_flat(self.parser_norm, hidden.transpose(1, 2), real, self.training)
        hidden = F.dropout(F.relu(hidden), p, self.training)
        both = torch.sigmoid(self.parser_heads(hidden.transpose(1, 2)))  # [B, 2, T]
        return both[:, 0], both[:, 1]

    def hidden_states(self, tokens: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        output, state, _ = self.run(tokens, state)
        return output, state

    def run(self, tokens: Tensor, state: Any = None) -> tuple[Tensor, Any, dict[str, Tensor]]:
        """The predict network's outputs ``[B, T, E]`` (after the output dropout), the new state and
        what the networks computed: ``distances``, ``lookahead`` ``[B, T]``, ``gates``,
        ``lookahead_gates`` ``[B, T, N]``, ``reading_attention`` ``[layers, B, T, N]`` and
        ``predict_attention`` ``[B, T, N]`` (memory slots oldest first)."""
        c = self.config
        batch = tokens.shape[0]
        previous_embeddings, previous_distances, tapes, predict_memory = (
            self.initial_state(batch) if state is None else state
        )
        real = tokens != PAD_ID
        raw = self.embedding(tokens)
        distances, lookahead = self.parse_distances(raw, previous_embeddings, real)
        gates = stick_breaking_gates(distances, previous_distances, c.tau, c.gate)  # Eq. 5–6
        lookahead_gates = stick_breaking_gates(distances, previous_distances, c.tau, c.gate, query=lookahead)

        layer_input, new_tapes, attention = raw, [], []
        for i, reader in enumerate(self.readers):
            cell_input = F.dropout(layer_input, c.dropout if i == 0 else c.layer_dropout, self.training)
            mask = _recurrent_mask(batch, c.hidden_size, c.recurrent_dropout, self.training, raw)
            layer_input, tape, weights = reader(
                cell_input, layer_input, tapes[i], gates, mask, c.layer_dropout
            )
            new_tapes.append(tape)
            attention.append(weights)
        top = layer_input  # [B, T, H]

        # predict network: attention over the previous top-layer states with the look-ahead gates
        p = c.layer_dropout
        query = F.dropout(self.predict_key(F.dropout(top, p, self.training)), p, self.training)
        values = torch.cat([predict_memory, top], dim=1)
        summary, predict_attention = banded_attention(query, values, lookahead_gates, c.memory_slots)
        x = torch.cat([top, summary], dim=-1)  # Eq. 14
        for block in self.predict_blocks:
            x = _apply_flat(lambda flat, block=block: block(flat, p), x, real, self.training)
        x = self.predict_out(F.dropout(x, p, self.training))
        x = torch.tanh(_apply_flat(self.predict_norm, x, real, self.training))
        output = F.dropout(x, c.dropout, self.training)

        everything = torch.cat([previous_embeddings, raw], dim=1)
        new_state = (
            everything[:, everything.shape[1] - c.lookback :],
            torch.cat([previous_distances, distances], dim=1)[:, -c.memory_slots :],
            tuple(new_tapes),
            values[:, -c.memory_slots :],
        )
        details = {
            "distances": distances,
            "lookahead": lookahead,
            "gates": gates,
            "lookahead_gates": lookahead_gates,
            "reading_attention": torch.stack(attention),
            "predict_attention": predict_attention,
        }
        return output, new_state, details

    def output_logits(self, hidden: Tensor) -> Tensor:
        weight = self.embedding.weight if self.decoder_weight is None else self.decoder_weight
        return F.linear(hidden, weight, self.decoder_bias)

    # --- parsing --------------------------------------------------------------------------------

    def syntactic_distances(
        self, sentences: Sequence[Sequence[str]], *, batch_size: int = 16
    ) -> list[np.ndarray]:
        """Each word's ``d_i`` (the distance between it and the token before it), each sentence read
        alone as ``<s> w_1 .. w_n </s>`` in eval mode; the boundary tokens' distances are dropped."""
        sentences = checked_sentences(sentences, batch_size)
        rows = [np.concatenate(([BOS_ID], self._encode(sentence), [EOS_ID])) for sentence in sentences]
        for index, (sentence, row) in enumerate(zip(sentences, rows)):
            if len(row) != len(sentence) + 2:
                raise ValueError(
                    f"sentence {index}: {len(sentence)} words became {len(row) - 2} vocabulary pieces; "
                    "trees over words need a word-level model (unit: word and a word vocabulary)"
                )
        out: list[np.ndarray] = [np.zeros(0)] * len(rows)
        with evaluating(self):
            for chosen in length_batches([len(row) for row in rows], batch_size):
                width = max(len(rows[i]) for i in chosen)
                tokens = torch.full((len(chosen), width), PAD_ID, dtype=torch.long)
                for k, i in enumerate(chosen):
                    tokens[k, : len(rows[i])] = torch.from_numpy(rows[i]).long()
                tokens = tokens.to(self.device)
                previous = torch.zeros(
                    len(chosen), self.config.lookback, self.config.d_model, device=self.device
                )
                distances, _ = self.parse_distances(self.embedding(tokens), previous, tokens != PAD_ID)
                distances = distances.double().cpu().numpy()
                for k, i in enumerate(chosen):
                    out[i] = distances[k, 1 : len(rows[i]) - 1]
        return out

    def induced_trees(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 16) -> list[Tree]:
        """The binary tree of each sentence from its distances (Appendix A; τ → ∞), leaves = words,
        every node labelled ``X``."""
        sentences = checked_sentences(sentences, batch_size)
        distances = self.syntactic_distances(sentences, batch_size=batch_size)
        trees = []
        for index, (sentence, values) in enumerate(zip(sentences, distances)):
            trees.append(tree_from_distances(values, sentence, sentence=index))
        return trees


# --- helpers ----------------------------------------------------------------------------------------


def _dropout_masks(like: Tensor, p: float, training: bool) -> Tensor | None:
    """Inverted-dropout masks shaped like ``like`` (``None`` when nothing is dropped)."""
    if not (training and p > 0):
        return None
    return torch.bernoulli(torch.full_like(like, 1 - p)) / (1 - p)


def _recurrent_mask(batch: int, size: int, p: float, training: bool, like: Tensor) -> Tensor | None:
    if not (training and p > 0):
        return None
    return torch.bernoulli(like.new_full((batch, size), 1 - p)) / (1 - p)


def _apply_flat(function, x: Tensor, real: Tensor, training: bool) -> Tensor:
    """``function`` on the ``[N, C]`` matrix of the positions of ``x`` ``[B, T, C]``: in training only
    the real ones (padding gives 0, so batch statistics see real tokens only), in eval all."""
    if not training or bool(real.all()) or not bool(real.any()):
        return function(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], -1)
    picked = function(x[real])
    out = picked.new_zeros(*x.shape[:-1], picked.shape[-1])
    out[real] = picked
    return out
