"""Syntactic Ordered Memory (SOM, Shen et al. 2021): eSOM and dSOM with the adaptive structural loss.

One model, two variants (``config.model``): ``"esom"`` (entangled) and ``"dsom"`` (semantic and
syntactic segments, §3.4). The memory follows ``structure.som``: slots ``0..N−1`` from the bottom,
slot ``N−1`` the root level, decisions ``θ_t`` and labels ``ξ_t`` as that module defines them.

**Ordered Memory (§3.1).** A step reads word ``w_t`` (its embedding ``x_t``, layer-normalised):

- the one-step look-ahead attention ``p_t`` over the candidates ``M̂_{t−1}`` (Eq. 1–4), scored as in
  the Ordered Memory code (REFERENCE_NOTES): ``w · ReLU(W_q x_t + W_k M̂^i_{t−1}) + b``, divided by
  ``√D``, masked to the slots ``π_{t−1}`` holds (``i ≥ θ_{t−1} − 1``);
- the decision ``θ_t`` (Eq. 12–13): drawn from ``p_t`` in training, ``argmax`` in evaluation, the
  gold label under teacher forcing. Word 0 has no decision (``θ_0 = N``: ``x_0`` goes to slot
  ``N−1``); word 1's mask leaves only slot ``N−1``;
- ``M_t = M̂_{t−1}`` at slots ``≤ θ_t`` and ``M_{t−1}`` above (Eq. 1); ``x_t`` below slot ``θ_t``
  (Eq. 2), and from slot ``θ_t`` up ``M̂^j_t = cell(M^j_t, M̂^{j−1}_t)`` (Eq. 3), the older memory
  being the left child. The cell is the gated composition of Eq. 8–9 with a hidden layer of
  ``4D`` units (the size that gives the paper's parameter counts, Table 7).

**Reading: the memory runs on the decisions.** The paper writes Eq. 1–4 for a one-hot ``p_t`` and
builds its labels from the decisions "made by our model" (Algorithm 1), so the memory is driven by
the hard decision ``θ_t``, not by the soft ``p_t`` of the original Ordered Memory. ``p_t`` and
``p'_t`` are then trained by the structural loss alone; the language-model loss trains the
embeddings and cells they read. A step rebuilds only slots ``θ_t..N−1``, and only for the rows
that need each slot (the reference code runs all ``N`` slots for every row).

**Prediction network (§3.2).** The zero-step look-ahead ``p'_t`` (Eq. 5–6) scores the candidates
``M̂_t`` alone, masked by ``π_t``. "``W^Att_1`` is an ``N × N`` matrix" and the ``√N`` divisor read
as ``D`` (the width of a slot; ``N`` is the number of slots). The decision ``i`` (drawn, argmax, or
the gold ``ξ_{t+1}`` under teacher forcing) selects the RNN input ``M^{N−1}_t, ..., M^{i+1}_t,
M̂^i_t`` (Eq. 7), run top-down from a learned initial state by a second cell of the same
architecture (its own weights). The RNN states after ``M^{N−1}..M^k`` are kept between steps:
slots above ``θ_t`` are unchanged from the step before, so a step costs two RNN calls (slot
``θ_t`` and ``M̂^i_t``) and gives exactly what a fresh run over the slots gives. The first word is
predicted from the initial state (the "context" of Fig. 1, learned here, as sentences are modelled
separately), and ``</s>`` from the state after the last word. Eq. 10: ``softmax(W_emb h_t + b)``
with the output matrix tied to the embeddings.

**Adaptive structural loss (§3.3).** Labels ``ξ`` come from Algorithm 1 (``structure.som``) on the
gold binary tree and the decisions the model made in this very pass (``adaptive_labels`` is its
batched form). Loss parts: ``structure`` = ``−log p_t(ξ_t)`` and ``structure_next`` =
``−log p'_t(ξ_{t+1})``, each normalised by its own count. Readings:

- forced decisions are neither trained nor scored: ``p_1`` and ``p'_0`` have one open slot;
- ``p'`` of the last word is trained towards ``N−1``: the sentence is complete, so ``</s>`` joins
  it at the root level (as a right child of the whole sentence would, Algorithm 1 giving
  ``max(ξ_0 − 1, μ) = N − 1``); the tree itself says nothing about it (``structure.som``);
- ``labels: teacher-forcing`` (Table 2): the memory and the prediction network follow the gold
  decisions in training; ``labels: left-branching`` (Table 2, Table 5 "LB"): Algorithm 1 on the
  left-branching tree instead of the gold one (every label is then ``N−1``);
- ``prediction_network: false`` (Table 2 "– Prediction network"): ``h_t = M̂^{N−1}_t``, the root
  candidate, and no ``p'``.

**dSOM (§3.4).** Every ``D``-vector is ``[semantic | syntactic]`` (``D_sem = d_model −
d_syntactic``). The cells' linear layers are block triangular (``SegmentedLinear``: syntactic
outputs read syntactic inputs only; the cell's hidden layer is split in the same proportion) and
their layer norms act on each segment separately, as does the input layer norm. ``p_t`` and
``p'_t`` read both segments, the semantic one detached (Eq. 14–17), so the structural loss reaches
no semantic parameter. The embeddings are split the same way (tied output over both).

**Dropout (Appendix A).** ``dropout`` before every linear layer, ``output_dropout`` before the
output layer, ``embedding_dropout`` zeroes whole word vectors (rescaled).

**Data.** ``prepare`` takes ``DepTree``s (Γ = ``dependency_to_binary_tree``, Fig. 4) or ``Tree``s
(binarised left-factored, the bias the paper uses for Γ). A word split into several vocabulary
pieces becomes a left-branching constituent of its pieces. Trees that need more than ``N`` slots
(``structure.som.required_slots``) are skipped with a ``SkippedTreesWarning``.

``d_model`` is ``D``; ``n_layers`` of ``ModelConfig`` is not read.
"""

from __future__ import annotations

import math
import warnings
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
    evaluating,
    length_batches,
    padded,
    picked_logprobs,
    reject_trees,
    word_pieces,
)
from syntaxlm.structure.distances import nontrivial_spans
from syntaxlm.structure.som import first_siblings, required_slots, structure_labels, tree_from_decisions
from syntaxlm.text.base import EOS_ID, PAD_ID, reject_string_sentence
from syntaxlm.trees.binarize import binarize
from syntaxlm.trees.dependency import DepTree, dependency_to_binary_tree
from syntaxlm.trees.tree import Tree

MODELS = ("esom", "dsom")
LABELS = ("adaptive", "teacher-forcing", "left-branching")


class SkippedTreesWarning(UserWarning):
    """``prepare`` left out trees the memory cannot hold (more than ``n_slots`` levels)."""


@dataclass
class SOMConfig(ModelConfig):
    """``d_model`` = ``D`` (eSOM's hidden size, dSOM's ``D_sem + D_syn``); ``d_syntactic`` =
    ``D_syn`` (dSOM only); ``labels`` one of ``LABELS``; ``structure_weight`` weighs both
    structure parts against the LM loss."""

    model: str = "esom"
    d_model: int = 64
    d_syntactic: int = 16
    n_slots: int = 15
    dropout: float = 0.1
    embedding_dropout: float = 0.0
    output_dropout: float = 0.1
    labels: str = "adaptive"
    prediction_network: bool = True
    structure_weight: float = 1.0

    def check(self) -> None:
        if self.model not in MODELS:
            raise ConfigError(f"model.model {self.model!r} is not SOM; expected one of {', '.join(MODELS)}")
        super().check()
        if self.model == "dsom" and not 1 <= self.d_syntactic < self.d_model:
            raise ConfigError(
                f"model.d_syntactic must be in 1..d_model−1 ({self.d_model - 1}) for dsom, got {self.d_syntactic}"
            )
        if self.n_slots < 2:
            raise ConfigError(f"model.n_slots must be at least 2, got {self.n_slots}")
        for name in ("embedding_dropout", "output_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be in [0, 1), got {getattr(self, name)}")
        if self.labels not in LABELS:
            raise ConfigError(f"model.labels must be one of {', '.join(LABELS)}, got {self.labels!r}")
        if self.structure_weight < 0:
            raise ConfigError(f"model.structure_weight must be at least 0, got {self.structure_weight}")


# --- layers ---------------------------------------------------------------------------------------


class SegmentedLinear(nn.Module):
    """A linear layer, block triangular when ``syntactic_in``/``syntactic_out`` (boolean masks over
    the input and output features) are given (§3.4): semantic outputs read every input, syntactic
    outputs only syntactic inputs. Without masks: an ordinary (entangled) linear layer."""

    def __init__(
        self, n_in: int, n_out: int, syntactic_in: Tensor | None = None, syntactic_out: Tensor | None = None
    ):
        super().__init__()
        self.segmented = syntactic_in is not None
        bound_all = 1 / math.sqrt(n_in)
        if not self.segmented:
            self.weight = nn.Parameter(torch.empty(n_out, n_in).uniform_(-bound_all, bound_all))
        else:
            self.register_buffer("syntactic_in", syntactic_in.nonzero()[:, 0], persistent=False)
            self.register_buffer("semantic_out", (~syntactic_out).nonzero()[:, 0], persistent=False)
            self.register_buffer("syntactic_out", syntactic_out.nonzero()[:, 0], persistent=False)
            n_syn_in = len(self.syntactic_in)
            # W_sem2sem and W_syn2sem: the rows of the semantic outputs; W_syn2syn: the syntactic block.
            self.semantic_weight = nn.Parameter(
                torch.empty(len(self.semantic_out), n_in).uniform_(-bound_all, bound_all)
            )
            bound_syn = 1 / math.sqrt(n_syn_in)
            self.syntactic_weight = nn.Parameter(
                torch.empty(len(self.syntactic_out), n_syn_in).uniform_(-bound_syn, bound_syn)
            )
        self.bias = nn.Parameter(torch.zeros(n_out))
        self.n_in, self.n_out = n_in, n_out

    def full_weight(self) -> Tensor:
        """The ``[n_out, n_in]`` matrix, with the zero block of a segmented layer (made once per pass)."""
        if not self.segmented:
            return self.weight
        syntactic = self.syntactic_weight.new_zeros(len(self.syntactic_out), self.n_in)
        syntactic = syntactic.index_copy(1, self.syntactic_in, self.syntactic_weight)
        weight = self.semantic_weight.new_zeros(self.n_out, self.n_in)
        weight = weight.index_copy(0, self.semantic_out, self.semantic_weight)
        return weight.index_copy(0, self.syntactic_out, syntactic)


class SegmentedLayerNorm(nn.Module):
    """Layer norm over ``D`` features, or over the semantic ``[:d_semantic]`` and syntactic parts
    separately (§3.4) when ``d_semantic`` is given."""

    def __init__(self, d: int, d_semantic: int | None = None):
        super().__init__()
        self.d_semantic = d_semantic
        if d_semantic is None:
            self.norm = nn.LayerNorm(d)
        else:
            self.semantic = nn.LayerNorm(d_semantic)
            self.syntactic = nn.LayerNorm(d - d_semantic)

    def forward(self, x: Tensor) -> Tensor:
        if self.d_semantic is None:
            return self.norm(x)
        s = self.d_semantic
        return torch.cat([self.semantic(x[..., :s]), self.syntactic(x[..., s:])], dim=-1)


class GatedCell(nn.Module):
    """The composition/recurrence cell (Eq. 8–9): ``[f; i; c; u] = W_2 ReLU(W_1 [h; M] + b_1) + b_2``,
    ``h' = LN(σ(f) ⊙ h + σ(i) ⊙ M + σ(c) ⊙ u)``; ``h`` is the right child (or the RNN state),
    ``M`` the left child (or the RNN input). Hidden layer ``4D`` wide."""

    def __init__(self, d: int, d_semantic: int | None, dropout: float):
        super().__init__()
        self.d = d
        self.dropout = nn.Dropout(dropout)
        if d_semantic is None:
            masks = (None, None, None)
        else:
            features = torch.arange(d)
            syntactic = features >= d_semantic
            hidden_syntactic = torch.arange(4 * d) >= 4 * d_semantic
            masks = (torch.cat([syntactic, syntactic]), hidden_syntactic, syntactic.repeat(4))
        self.inner = SegmentedLinear(2 * d, 4 * d, masks[0], masks[1])
        self.outer = SegmentedLinear(4 * d, 4 * d, masks[1], masks[2])
        self.norm = SegmentedLayerNorm(d, d_semantic)

    def weights(self) -> tuple[SharedWeight, SharedWeight]:
        """The two weight matrices for one pass (``SharedWeight``)."""
        return SharedWeight(self.inner.full_weight()), SharedWeight(self.outer.full_weight())

    def forward(self, h: Tensor, m: Tensor, weights: tuple[SharedWeight, SharedWeight]) -> Tensor:
        hidden = F.relu(weights[0](self.dropout(torch.cat([h, m], -1))) + self.inner.bias)
        f, i, c, u = (weights[1](self.dropout(hidden)) + self.outer.bias).split(self.d, -1)
        return self.norm(torch.sigmoid(f) * h + torch.sigmoid(i) * m + torch.sigmoid(c) * u)


class SharedWeight:
    """A weight matrix applied by many small linear calls in one pass (the cells run once per slot
    and step). Autograd would form a full ``[out, in]`` gradient at every call and add them up;
    here each call keeps its input and output gradient, and the weight's gradient is one product
    of all of them, formed once (``_WeightGradient``). Without gradients: a plain matrix product."""

    def __init__(self, weight: Tensor):
        self.calls: list[tuple[Tensor, Tensor]] = []
        self.deferred = torch.is_grad_enabled() and weight.requires_grad
        self.weight = _WeightGradient.apply(weight, self.calls) if self.deferred else weight

    def __call__(self, x: Tensor) -> Tensor:
        if self.deferred:
            return _LinearKeepingInputs.apply(x, self.weight, self.calls)
        return F.linear(x, self.weight)


class _WeightGradient(torch.autograd.Function):
    """Identity on the weight; its backward runs after every call's (autograd's order) and returns
    ``Σ_calls g_callᵀ x_call``."""

    @staticmethod
    def forward(ctx, weight: Tensor, calls: list) -> Tensor:
        ctx.calls = calls
        ctx.set_materialize_grads(False)
        return weight.view_as(weight)

    @staticmethod
    def backward(ctx, grad: Tensor):
        calls, ctx.calls = ctx.calls, None
        if not calls:
            return grad, None
        gradient = torch.cat([g for _, g in calls]).t() @ torch.cat([x for x, _ in calls])
        calls.clear()
        return gradient if grad is None else gradient + grad, None


class _LinearKeepingInputs(torch.autograd.Function):
    """``x Wᵀ`` whose backward gives ``x`` its gradient and leaves ``(x, g)`` for ``_WeightGradient``."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, calls: list) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.calls = calls
        return F.linear(x, weight)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        if ctx.needs_input_grad[1]:
            ctx.calls.append((x, grad))
        return (grad @ weight if ctx.needs_input_grad[0] else None), None, None


# --- the state of a batch of prefixes --------------------------------------------------------------


@dataclass
class MemoryState:
    """What a prefix of ``t`` words leaves for the next step, for ``B`` rows.

    ``memory`` ``M_t`` and ``candidates`` ``M̂_t`` ``[B, N, D]``; ``keys`` ``[B, N, D]``: ``W_k M̂_t``
    for ``p_{t+1}``; ``decision`` ``θ_t`` ``[B]`` (``N`` before and at the first word);
    ``readout`` ``[B, N + 1, D]``: the prediction RNN's state after ``M^{N−1}_t..M^k_t`` at ``k``
    (the initial state at ``N``); ``hidden`` ``h_t`` ``[B, D]``, what predicts the next word."""

    memory: Tensor
    candidates: Tensor
    keys: Tensor
    decision: Tensor
    readout: Tensor
    hidden: Tensor
    words: int = 0

    def select(self, rows: Tensor) -> MemoryState:
        return MemoryState(
            self.memory[rows],
            self.candidates[rows],
            self.keys[rows],
            self.decision[rows],
            self.readout[rows],
            self.hidden[rows],
            self.words,
        )


@dataclass
class StepOutput:
    """One step's attention log-probabilities (``[B, N]``, ``−inf`` outside the mask; ``p_t`` is
    ``None`` at the first word, ``p'_t`` when there is no prediction network) and decisions."""

    logp: Tensor | None
    decision: Tensor
    logp_next: Tensor | None
    decision_next: Tensor | None


@dataclass
class PassOutput:
    """A pass over a batch of sentences ``[B, T]``: ``hidden`` ``[B, T + 1, D]`` (position ``t``
    predicts word ``t``, position ``T_b`` the end), attention log-probabilities ``[B, T, N]``
    (zeros where undefined) and the decisions ``θ`` and ``θ'`` ``[B, T]``."""

    hidden: Tensor
    logp: Tensor
    logp_next: Tensor | None
    decisions: Tensor
    decisions_next: Tensor | None


# --- the model -------------------------------------------------------------------------------------


class SyntacticOrderedMemory(SyntacticLM):
    """eSOM and dSOM (module docstring)."""

    config_class: ClassVar[type[ModelConfig]] = SOMConfig
    reads: ClassVar[tuple[str, ...]] = ("constituency", "dependency")
    induces_trees: ClassVar[bool] = True
    config: SOMConfig

    def __init__(self, config: SOMConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        d, n = config.d_model, config.n_slots
        self.d_semantic = config.d_model - config.d_syntactic if config.model == "dsom" else None
        self.embedding = nn.Embedding(len(self.vocab), d)
        nn.init.normal_(self.embedding.weight, std=d**-0.5)
        self.output_bias = nn.Parameter(torch.zeros(len(self.vocab)))
        self.input_norm = SegmentedLayerNorm(d, self.d_semantic)
        self.dropout = nn.Dropout(config.dropout)
        self.output_dropout = nn.Dropout(config.output_dropout)
        self.cell = GatedCell(d, self.d_semantic, config.dropout)
        # p_t (one-step look-ahead): w · ReLU(W_q x_t + W_k M̂^i_{t−1}) + b.
        self.query = nn.Linear(d, d)
        self.score = nn.Linear(d, 1)
        # One projection of each new candidate: its key for p_{t+1} and W^Att_1 M̂^i_t of p'_t (Eq. 5).
        n_projected = 2 * d if config.prediction_network else d
        self.candidate_projection = nn.Linear(d, n_projected, bias=False)
        if config.prediction_network:
            self.next_bias = nn.Parameter(torch.zeros(d))  # b_1 of Eq. 5
            self.next_score = nn.Linear(d, 1)  # w^Att_2, b_2 of Eq. 5
            self.reader = GatedCell(d, self.d_semantic, config.dropout)  # the RNN of Eq. 7
        self.initial_state = nn.Parameter(torch.zeros(d))
        self.register_buffer("slots", torch.arange(n), persistent=False)

    @property
    def loss_weights(self) -> dict[str, float]:
        weights = {"lm": 1.0, "structure": self.config.structure_weight}
        if self.config.prediction_network:
            weights["structure_next"] = self.config.structure_weight
        return weights

    # --- one step of the memory -----------------------------------------------------------------

    def initial(self, batch: int) -> MemoryState:
        """The state before the first word: empty memory, the RNN's initial state."""
        d, n = self.config.d_model, self.config.n_slots
        zeros = self.embedding.weight.new_zeros(batch, n, d)
        readout = torch.cat([zeros.new_zeros(batch, n, d), self.initial_state.expand(batch, 1, d)], 1)
        decision = torch.full((batch,), n, dtype=torch.long, device=zeros.device)
        return MemoryState(zeros, zeros, zeros, decision, readout, self.initial_state.expand(batch, d), 0)

    def embed(self, ids: Tensor) -> Tensor:
        """``x_t``: the embeddings with word-level embedding dropout, layer-normalised."""
        x = self.embedding(ids)
        p = self.config.embedding_dropout
        if self.training and p > 0:
            keep = torch.empty(x.shape[:-1], device=x.device).bernoulli_(1 - p) / (1 - p)
            x = x * keep[..., None]
        return self.input_norm(x)

    def structural(self, x: Tensor) -> Tensor:
        """What the attentions read: dSOM detaches the semantic segment (Eq. 15, 17)."""
        if self.d_semantic is None:
            return x
        s = self.d_semantic
        return torch.cat([x[..., :s].detach(), x[..., s:]], dim=-1)

    def step(
        self,
        state: MemoryState,
        x: Tensor,
        weights: dict[str, tuple[SharedWeight, SharedWeight]],
        *,
        decide: str,
        active: Tensor | None = None,
        gold: Tensor | None = None,
        gold_next: Tensor | None = None,
    ) -> tuple[MemoryState, StepOutput]:
        """Read ``x`` ``[B, D]`` (Eq. 1–4), then predict (Eq. 5–7). ``decide``: ``"sample"``,
        ``"argmax"`` or ``"gold"`` (``gold`` = ``θ_t``, ``gold_next`` = the decision of ``p'_t``).
        ``active`` rows (all by default) are those still reading words: the cells skip the others."""
        n, d = self.config.n_slots, self.config.d_model
        batch = x.shape[0]
        active = torch.ones(batch, dtype=torch.bool, device=x.device) if active is None else active
        scale = math.sqrt(d)
        logp = None
        if state.words == 0:
            decision = torch.full((batch,), n, dtype=torch.long, device=x.device)  # θ_0 = N
            memory = state.memory
        else:
            # p_t over M̂_{t−1}, masked by π_{t−1} (Eq. 1–4).
            query = self.query(self.dropout(self.structural(x)))
            scores = self.score(self.dropout(F.relu(query[:, None] + state.keys)))[..., 0] / scale
            logp = _masked_log_softmax(scores, self.slots[None] >= (state.decision - 1)[:, None])
            decision = _decide(logp, decide, gold)
            # Eq. 1: candidates up to θ_t become memory.
            memory = torch.where(
                (self.slots[None] <= decision[:, None])[..., None], state.candidates, state.memory
            )
        # Eq. 2–3: x_t below θ_t, parents bottom-up from θ_t.
        lowest = int(torch.where(active, decision, n).min())
        h = x
        columns = [x] * min(lowest, n)
        for k in range(lowest, n):
            needs = active & (decision <= k)
            rows = needs.nonzero()[:, 0]
            if len(rows) == batch:
                h = self.cell(h, memory[:, k], weights["cell"])
            elif len(rows):
                h = h.index_copy(0, rows, self.cell(h[rows], memory[rows, k], weights["cell"]))
            columns.append(h)
        candidates = torch.stack(columns, 1)
        # The projections of the new candidates (slots ≥ θ_t − 1): keys for p_{t+1}, Eq. 5's W_1 for p'_t.
        low = max(lowest - 1, 0)
        projected = self.candidate_projection(self.dropout(self.structural(candidates[:, low:])))
        keys = torch.cat([state.keys[:, :low], projected[..., :d]], 1)
        logp_next = decision_next = None
        readout = state.readout
        if not self.config.prediction_network:
            hidden = candidates[:, n - 1]
        else:
            alpha = self.next_score(self.dropout(F.relu(projected[..., d:] + self.next_bias)))[..., 0] / scale
            alpha = torch.cat([alpha.new_zeros(batch, low), alpha], 1)
            logp_next = _masked_log_softmax(alpha, self.slots[None] >= (decision - 1)[:, None])
            decision_next = _decide(logp_next, decide, gold_next)
            if state.words > 0:  # the RNN state after M^{N−1}_t..M^{θ_t}_t (slots above are unchanged)
                above = _at(readout, decision + 1)
                new = self.reader(above, _at(memory, decision), weights["reader"])
                readout = readout.scatter(1, decision[:, None, None].expand(batch, 1, d), new[:, None])
            hidden = self.reader(
                _at(readout, decision_next + 1), _at(candidates, decision_next), weights["reader"]
            )
        new_state = MemoryState(memory, candidates, keys, decision, readout, hidden, state.words + 1)
        return new_state, StepOutput(logp, decision, logp_next, decision_next)

    def cell_weights(self) -> dict[str, tuple[SharedWeight, SharedWeight]]:
        """The cells' full weight matrices, assembled once per pass (dSOM's block-triangular ones)."""
        weights = {"cell": self.cell.weights()}
        if self.config.prediction_network:
            weights["reader"] = self.reader.weights()
        return weights

    def run(self, ids: Tensor, n_words: Tensor, *, decide: str, gold: Tensor | None = None) -> PassOutput:
        """The memory over sentences ``ids`` ``[B, T]`` of ``n_words`` ``[B]`` words (module
        docstring). ``gold`` ``[B, T + 1]``: the gold decisions ``ξ_0..ξ_T`` of each row, ``N − 1``
        at its end position (``prepare``'s ``gold`` field), for ``decide="gold"``."""
        batch, length = ids.shape
        n = self.config.n_slots
        x = self.embed(ids)
        weights = self.cell_weights()
        state = self.initial(batch)
        hidden = [state.hidden]
        logps, logps_next, decisions, decisions_next = [], [], [], []
        for t in range(length):
            active = n_words > t
            step_gold = step_gold_next = None
            if gold is not None:
                step_gold, step_gold_next = gold[:, t], gold[:, t + 1]
            state, out = self.step(
                state,
                x[:, t],
                weights,
                decide=decide,
                active=active,
                gold=step_gold,
                gold_next=step_gold_next,
            )
            hidden.append(state.hidden)
            logps.append(out.logp if out.logp is not None else x.new_zeros(batch, n))
            decisions.append(out.decision)
            if out.logp_next is not None:
                logps_next.append(out.logp_next)
                decisions_next.append(out.decision_next)
        with_next = self.config.prediction_network
        return PassOutput(
            hidden=torch.stack(hidden, 1),
            logp=torch.stack(logps, 1),
            logp_next=torch.stack(logps_next, 1) if with_next else None,
            decisions=torch.stack(decisions, 1),
            decisions_next=torch.stack(decisions_next, 1) if with_next else None,
        )

    def lm_logits(self, hidden: Tensor) -> Tensor:
        """Eq. 10: ``W_emb h_t + b`` (tied output)."""
        return F.linear(self.output_dropout(hidden), self.embedding.weight, self.output_bias)

    # --- training ---------------------------------------------------------------------------------

    def prepare(self, trees: Sequence[Any]) -> RowCorpus:
        """One row per sentence of ``T`` pieces, ``T + 1`` positions (the last one predicts ``</s>``):
        ``inputs`` (piece ids, 0 at the end position), ``labels`` (the targets: the pieces then
        ``</s>``), ``gold`` (teacher-forcing labels ``ξ``), ``siblings`` (``first_sibling``), and the
        markers of the structure targets: ``structure`` at ``t = 2..T−1`` (``p_t``),
        ``structure_next`` at ``t = 1..T−1`` (``p'_t``)."""
        rows: dict[str, list[np.ndarray]] = {
            "inputs": [],
            "labels": [],
            "gold": [],
            "siblings": [],
            "structure": [],
            "structure_next": [],
        }
        skipped = total = 0
        for index, tree in enumerate(trees):
            total += 1
            ids, binary = self._encode_tree(tree, index)
            if required_slots(binary, sentence=index) > self.config.n_slots:
                skipped += 1
                self.report_problem(
                    "too_many_slots",
                    index,
                    f"needing more than n_slots {self.config.n_slots} memory slots; dropped",
                )
                continue
            gold = structure_labels(binary, self.config.n_slots, sentence=index)
            n = len(ids)
            positions = np.arange(n + 1)
            rows["inputs"].append(np.append(ids, PAD_ID))
            rows["labels"].append(np.append(ids, EOS_ID))
            rows["gold"].append(np.append(gold, self.config.n_slots - 1))
            rows["siblings"].append(np.append(first_siblings(binary, sentence=index), -1))
            rows["structure"].append(((positions >= 2) & (positions < n)).astype(np.int8))
            rows["structure_next"].append(((positions >= 1) & (positions < n)).astype(np.int8))
        if skipped:
            warnings.warn(
                f"prepare skipped {skipped} of {total} trees that need more than {self.config.n_slots} "
                "memory slots (model.n_slots)",
                SkippedTreesWarning,
                stacklevel=2,
            )
        lengths = np.array([len(row) for row in rows["inputs"]], dtype=np.int64)
        fill = {"siblings": -1}
        fields = {
            name: pad_rows(
                values, fill=fill.get(name, 0), dtype=np.int8 if name.startswith("structure") else np.int32
            )
            for name, values in rows.items()
        }
        targets = {"lm": "labels", "structure": "structure"}
        if self.config.prediction_network:
            targets["structure_next"] = "structure_next"
        return RowCorpus(fields, lengths, target_fields=targets, order="shuffled", fill=fill)

    def _encode_tree(self, tree: Any, index: int) -> tuple[np.ndarray, Tree]:
        """Piece ids and the binary tree over the pieces whose labels train the model."""
        if isinstance(tree, DepTree):
            binary = dependency_to_binary_tree(tree, labels="none")
            words = list(tree.words)
        elif isinstance(tree, Tree):
            binary = binarize(tree, "left")
            words = tree.leaves()
        else:
            raise TypeError(f"trees[{index}] is {type(tree).__name__}; expected a Tree or a DepTree")
        ids, word_index = word_pieces(self.vocab, words)
        if len(ids) != len(words):
            counts = np.bincount(word_index, minlength=len(words))
            binary = _pieces_tree(binary, counts)
        if self.config.labels == "left-branching":
            binary = _left_branching(len(ids))
        return ids, binary

    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """NLL sums (nats): ``lm`` over the pieces and ``</s>``; ``structure`` (``p_t`` against
        ``ξ_t``) and ``structure_next`` (``p'_t`` against ``ξ_{t+1}``), the labels made by
        Algorithm 1 from this pass's decisions."""
        device = self.embedding.weight.device
        labels = batch["labels"].to(device).long()
        ids = batch["inputs"].to(device).long()[:, :-1]
        n_words = (labels != 0).sum(1) - 1
        gold = batch["gold"].to(device).long()
        if self.training:
            decide = "gold" if self.config.labels == "teacher-forcing" else "sample"
        else:
            decide = "argmax"
        out = self.run(ids, n_words, decide=decide, gold=gold if decide == "gold" else None)
        real = labels != 0
        logprobs = self.lm_logits(out.hidden[real]).float().log_softmax(-1)
        sums = {"lm": -logprobs.gather(1, labels[real][:, None]).sum()}
        xi = adaptive_labels(gold, batch["siblings"].to(device).long(), out.decisions, self.config.n_slots)
        marked = batch["structure"].to(device)[:, :-1] != 0
        sums["structure"] = -out.logp.gather(2, xi[:, :-1, None])[..., 0][marked].sum()
        if out.logp_next is not None:
            marked_next = batch["structure_next"].to(device)[:, :-1] != 0
            picked = out.logp_next.gather(2, xi[:, 1:, None])[..., 0]
            sums["structure_next"] = -picked[marked_next].sum()
        return LossOutput(sums=sums, counts=batch.counts, state=None)

    # --- evaluation -------------------------------------------------------------------------------

    def evaluate_structure(self, trees: Sequence[Any], *, batch_size: int = 32) -> dict[str, Any]:
        """Table 2's columns on gold trees, in evaluation mode (argmax decisions): perplexity (pieces
        and ``</s>``), ``p`` and ``p'`` accuracy against the adaptive labels of the model's own
        decisions (forced decisions left out), and UF1 (percent) of the incremental trees against
        the binary gold trees Γ, over every word, single words and the whole sentence left out:
        corpus level (pooled counts, EVALB's way) and the mean over sentences."""
        corpus = self.prepare(trees)
        totals = dict.fromkeys(("nll", "tokens", "p_correct", "p_total", "q_correct", "q_total"), 0.0)
        tp = fp = fn = 0
        sentence_f1 = []
        device = self.embedding.weight.device
        with evaluating(self):
            for batch in corpus.batches(batch_size, shuffle=False):
                labels = batch["labels"].to(device).long()
                n_words = (labels != 0).sum(1) - 1
                out = self.run(batch["inputs"].to(device).long()[:, :-1], n_words, decide="argmax")
                real = labels != 0
                logprobs = self.lm_logits(out.hidden[real]).float().log_softmax(-1)
                totals["nll"] -= float(logprobs.gather(1, labels[real][:, None]).sum())
                totals["tokens"] += int(real.sum())
                gold = batch["gold"].to(device).long()
                xi = adaptive_labels(
                    gold, batch["siblings"].to(device).long(), out.decisions, self.config.n_slots
                )
                marked = batch["structure"].to(device)[:, :-1] != 0
                totals["p_correct"] += int((out.decisions == xi[:, :-1])[marked].sum())
                totals["p_total"] += int(marked.sum())
                if out.decisions_next is not None:
                    marked_next = batch["structure_next"].to(device)[:, :-1] != 0
                    totals["q_correct"] += int((out.decisions_next == xi[:, 1:])[marked_next].sum())
                    totals["q_total"] += int(marked_next.sum())
                decisions, gold, n_words = (
                    out.decisions.cpu().numpy(),
                    gold.cpu().numpy(),
                    n_words.cpu().numpy(),
                )
                for b in range(len(n_words)):
                    t = int(n_words[b])
                    n = self.config.n_slots
                    predicted = set(nontrivial_spans(tree_from_decisions(decisions[b, :t], n)))
                    reference = set(nontrivial_spans(tree_from_decisions(gold[b, :t], n)))
                    hits = len(predicted & reference)
                    tp, fp, fn = tp + hits, fp + len(predicted) - hits, fn + len(reference) - hits
                    if reference or predicted:
                        precision = hits / max(len(predicted), 1)
                        recall = hits / max(len(reference), 1)
                        sentence_f1.append(
                            0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
                        )
        loss = totals["nll"] / max(totals["tokens"], 1)
        corpus_f1 = 200 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
        return {
            "sentences": len(corpus),
            "tokens": int(totals["tokens"]),
            "loss": loss,
            "perplexity": math.exp(min(loss, 700.0)),
            "p_accuracy": totals["p_correct"] / max(totals["p_total"], 1),
            "p_next_accuracy": totals["q_correct"] / totals["q_total"] if totals["q_total"] else None,
            "uf1_corpus": corpus_f1,
            "uf1_sentence_mean": 100 * float(np.mean(sentence_f1)) if sentence_f1 else None,
        }

    scoring_batch_size: ClassVar[int] = 32

    def scoring_items(self, sentences: list[list[str]], trees: Sequence[Any] | None) -> list[ScoringItem]:
        """The pieces (the memory reads no ``<s>``) → pieces + ``</s>``."""
        reject_trees(self.config.model, trees)
        items = []
        for index, words in enumerate(sentences):
            ids, word_index = self._encode_words(index, words)
            items.append(ScoringItem(ids, np.append(ids, EOS_ID), np.append(word_index, len(words))))
        return items

    def target_logprobs(self, items: list[ScoringItem]) -> list[Tensor]:
        """With the model's argmax decisions."""
        device = self.embedding.weight.device
        ids = padded([item.inputs for item in items], device)
        n_words = torch.tensor([len(item.inputs) for item in items], device=device)
        out = self.run(ids, n_words, decide="argmax")
        return picked_logprobs(self.lm_logits(out.hidden).float().log_softmax(-1), items)

    def induced_trees(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 16) -> list[Tree]:
        """The incremental binary tree of each sentence from the argmax decisions
        (``structure.som.tree_from_decisions``), nodes labelled ``X``; with a subword vocabulary
        each word sits at its first piece."""
        encoded = [self._encode_words(i, words) for i, words in enumerate(sentences)]
        trees: list[Tree] = [Tree("X")] * len(encoded)
        device = self.embedding.weight.device
        with evaluating(self):
            for chosen in length_batches([len(ids) for ids, _ in encoded], batch_size):
                ids = padded([encoded[i][0] for i in chosen], device)
                n_words = torch.tensor([len(encoded[i][0]) for i in chosen], device=device)
                decisions = self.run(ids, n_words, decide="argmax").decisions.cpu().numpy()
                for row, i in enumerate(chosen):
                    pieces, word_index = encoded[i]
                    names = [str(k) for k in range(len(pieces))]
                    tree = tree_from_decisions(
                        decisions[row, : len(pieces)], self.config.n_slots, names, sentence=i
                    )
                    trees[i] = _words_tree(tree, word_index, list(sentences[i]))
        return trees

    def _encode_words(self, index: int, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        reject_string_sentence(words, index)
        if len(words) == 0:
            raise ValueError(f"sentence {index} is empty; expected at least one word")
        return word_pieces(self.vocab, words)

    # --- incremental decoding ---------------------------------------------------------------------

    def action_grammar(self) -> ActionGrammar:
        """Words only, ending with ``</s>``: the trees are the model's own decisions."""
        return words_grammar(self.vocab)

    def decoder(self) -> SOMDecoder:
        return SOMDecoder(self)


class SOMDecoder(Decoder):
    """``n`` prefixes of a SOM, one ``MemoryState`` row each, extended a piece at a time with the
    model's argmax decisions (the same steps as ``run``), without gradients or dropout."""

    def __init__(self, model: SyntacticOrderedMemory):
        self.model = model
        self.state: MemoryState | None = None

    @property
    def size(self) -> int:
        return 0 if self.state is None else self.state.hidden.shape[0]

    def _start(self, n: int) -> None:
        self.state = self.model.initial(n)

    def _logprobs(self) -> Tensor:
        return self.model.lm_logits(self.state.hidden).float().log_softmax(-1)

    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        if len(tokens) == 0:
            self.state = self.state.select(parents)
            self.state.words += 1
            return
        state = self.state.select(parents)
        x = self.model.embed(tokens)
        self.state, _ = self.model.step(state, x, self.model.cell_weights(), decide="argmax")


# --- helpers ---------------------------------------------------------------------------------------


def adaptive_labels(gold: Tensor, siblings: Tensor, decisions: Tensor, n_slots: int) -> Tensor:
    """Algorithm 1 for a batch (``structure.som.structure_labels`` with decisions): ``gold`` ``[B, L]``
    the teacher-forcing labels (``ξ_0 = N``), ``siblings`` the first siblings (−1 for word 0),
    ``decisions`` ``θ`` ``[B, T]`` with ``T ≤ L``. Entries beyond a row's words are not meaningful.
    Positions ``T..L−1`` keep their gold values (``N − 1`` for the end position); entry 0 (``N``,
    never a target) is returned as ``N − 1``."""
    labels = gold.clone()
    length = decisions.shape[1]
    positions = torch.arange(length, device=gold.device)
    never = torch.full_like(decisions, -1)
    for t in range(1, length):
        j = siblings[:, t].clamp(min=0)
        lowest_open = (n_slots if t == 1 else decisions[:, t - 1]) - 1
        between = (positions[None] > j[:, None]) & (positions[None] < t)
        merged = torch.maximum(
            torch.where(between, decisions, never).max(1).values, torch.as_tensor(lowest_open)
        )
        labels[:, t] = torch.maximum(
            labels.gather(1, j[:, None])[:, 0] - 1, merged
        )  # ξ_t = max(ξ_j − 1, μ_t)
    return labels.clamp(max=n_slots - 1)  # ξ_0 = N is never a target; N − 1 keeps it a valid index


def _masked_log_softmax(scores: Tensor, allowed: Tensor) -> Tensor:
    return scores.float().masked_fill(~allowed, float("-inf")).log_softmax(-1)


def _decide(logp: Tensor, decide: str, gold: Tensor | None) -> Tensor:
    """Eq. 12–13: a draw in training, the argmax in evaluation, or the gold decision."""
    if decide == "gold":
        if gold is None:
            raise ValueError("teacher forcing needs the gold decisions")
        return gold
    if decide == "sample":
        return torch.multinomial(logp.detach().exp(), 1)[:, 0]
    if decide == "argmax":
        return logp.argmax(-1)
    raise ValueError(f"decide must be 'sample', 'argmax' or 'gold', got {decide!r}")


def _at(values: Tensor, slot: Tensor) -> Tensor:
    """``values[b, slot[b]]`` of ``[B, S, D]``."""
    return values.gather(1, slot[:, None, None].expand(-1, 1, values.shape[-1]))[:, 0]


def _pieces_tree(tree: Tree, pieces_per_word: np.ndarray) -> Tree:
    """``tree`` with word ``i`` replaced by a left-branching constituent of its pieces."""
    counts = iter(pieces_per_word.tolist())
    numbering = iter(range(int(pieces_per_word.sum())))

    def leaf(_: str):
        k = next(counts)
        node: Any = str(next(numbering))
        for _ in range(k - 1):
            node = Tree("X", (node, str(next(numbering))))
        return node

    return tree.rebuild(Tree, leaf=leaf)


def _left_branching(n: int) -> Tree:
    node: Any = "0"
    for k in range(1, n):
        node = Tree("X", (node, str(k)))
    return node if isinstance(node, Tree) else Tree("X", (node,))


def _words_tree(tree: Tree, word_index: np.ndarray, words: list[str]) -> Tree:
    """A tree over pieces named ``"0"``, ``"1"``, ... as a tree over ``words``: each word at its
    first piece, the other pieces dropped, nodes left with one child collapsed."""
    first = np.ones(len(word_index), dtype=bool)
    first[1:] = word_index[1:] != word_index[:-1]

    def build(label: str, children: list):
        kept = [child for child in children if child is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else Tree(label, kept)

    def leaf(piece: str):
        k = int(piece)
        return words[word_index[k]] if first[k] else None

    root = tree.rebuild(build, leaf=leaf)
    return root if isinstance(root, Tree) else Tree("X", (root,))
