"""Dependency-based Mixture Language Models: DM-Transformer and DM-LSTM (Yang et al. 2022, DMLM §2).

A wrapper that turns a base language model of the library into its DM- version without changing
the base architecture: ``dm-transformer`` wraps the GPT-2-style ``lm`` (``action_lm.ActionLM``),
``dm-lstm`` the LSTM LM ``lstm`` (``lstm_lm.LSTMLM``). The base model is the submodule ``base``;
its parameters and forward pass are those of the base model (DM-Transformer adds no parameter,
DM-LSTM adds only ``W_Q`` and ``W_K``). The base's output softmax now gives the *dependency
modelling* distribution ``p_dep(w | x_<τ)`` of position ``τ − 1``.

- Dependency modelling (§2.1, Eq. 1): the future-dependents set ``Z`` of every input position
  (``trees.dependency.future_dependents``: the later words that are its parent or children; the
  start symbol's set holds the root word, the last word's set the end symbol) gives one arc
  ``(source position, target token)`` per set member; ``L_DM = −Σ log p_dep(target | source)``.
  A sentence of ``P`` pieces has exactly ``P + 1`` arcs, as many as predicted tokens, so both
  parts are normalised by the same count (the reference divides by ``T·B``, empty sets included).
- Mixture (§2.2, Eq. 2–4): ``p(x_{t+1} | x_≤t) = Σ_{j ≤ t} A_{t,j} · p_dep(x_{t+1} | x_≤j)``,
  computed in log space as ``logsumexp_j(log A_{t,j} + log p_dep_j(x_{t+1}))``. DM-Transformer:
  ``A`` is the penultimate layer's attention averaged over heads, recomputed here from that
  layer's query/key projections (the shared attention layer does not return probabilities).
  DM-LSTM: ``A_{t,j} = softmax_j((W_Q h_t)·(W_K h_j) / √H)`` over ``t − L < j ≤ t`` (§4.3 window,
  ``context_length`` L).
- Two-stage training (Appendix A): ``stage: dependency`` optimises Eq. 1; ``stage: mixture``
  optimises Eq. 4 and starts from the stage-1 model folder named by ``init_from``. For a single
  run (the tiny recipes) ``stage: mixture`` with ``dependency_batches: N`` trains the first ``N``
  training batches of the model with Eq. 1 and the rest with Eq. 4: the two stages of Appendix A
  in sequence, not a joint objective. The batch counter is the buffer ``trained_batches``, saved
  with checkpoints so that a resumed run switches at the same batch.

Readings made where the paper is vague (``shared/REFERENCE_NOTES.md``, DMLM section):

- Rows are sentences ``<s> x_1 .. x_P`` with targets ``x_1 .. x_P </s>``; the start symbol plays
  the previous sentence's end symbol of the authors' streams. The DM-LSTM reads each sentence
  from a zero state (sentence-level rows, as the Transformer), not the authors' BPTT stream over
  concatenated sentences; its attention window never crosses a sentence.
- Word pieces: the first piece of a word takes the word's head, pointing at the *last* piece of
  the head word; every later piece depends on the piece before it.
- Constituency trees (PTB files, the synthetic treebank) are converted with the head rules of
  ``trees.heads``; CoNLL-U trees are used as given.
- In stage 1 the ``lm`` part (Eq. 4 under the current weights) is still computed, without
  gradient, so that validation and early stopping read the mixture perplexity in both stages.
- The mixture attention uses no attention dropout (the probabilities, not the dropped ones).
- ``init_from`` is read by the first ``prepare`` call (what the trainer does with a fresh model
  before it resumes a checkpoint), never when a saved model is loaded, so a saved stage-2 model
  does not need the stage-1 folder. It may also name a folder of the plain base model (``lm`` or
  ``lstm``), whose weights then fill ``base``.
"""

from __future__ import annotations

import math
import warnings
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus, pad_rows
from syntaxlm.models.base import (
    TRANSFORMER_FIELDS,
    ConfigError,
    LossOutput,
    ModelConfig,
    ModelFileError,
    SyntacticLM,
    TransformerConfig,
    read_model_config,
    read_weights,
)
from syntaxlm.models.decoding import ActionGrammar, Decoder, words_grammar
from syntaxlm.models.lstm_lm import select_rows
from syntaxlm.models.scoring import (
    ScoringItem,
    padded,
    reject_trees,
    sentence_item,
    word_pieces,
)
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.trees.dependency import DepTree, future_dependents
from syntaxlm.trees.heads import constituency_to_dependency
from syntaxlm.trees.tree import Tree

BASE_MODELS = {"dm-transformer": "lm", "dm-lstm": "lstm"}
STAGES = ("dependency", "mixture")
SHARED_FIELDS = ("d_model", "n_layers", "n_heads", "d_ff", "dropout")  # those of the base model's config
COUNTER = "trained_batches"


class SkippedSentencesWarning(UserWarning):
    """``prepare`` left out sentences longer than the base model's ``max_length``."""


@dataclass
class DMLMConfig(TransformerConfig):
    """``model``: ``dm-transformer`` or ``dm-lstm`` (the base is ``lm`` or ``lstm``). The shared
    fields (``d_model``, ``n_layers``, ``n_heads``, ``d_ff``, ``dropout``; the LSTM has neither
    ``n_heads`` nor ``d_ff``) and ``base_options`` (the base config's other fields) make the base
    model's config. ``stage``, ``init_from`` and ``dependency_batches``: the module docstring.
    ``context_length``: DM-LSTM's window L."""

    model: str = "dm-transformer"
    stage: str = "dependency"
    dependency_batches: int = 0
    init_from: str | None = None
    context_length: int = 36
    base_options: dict[str, Any] = field(default_factory=dict)

    def base_config(self) -> ModelConfig:
        """The wrapped model's config (``ConfigError`` naming the bad field)."""
        from syntaxlm.models import model_config

        values = {name: getattr(self, name) for name in SHARED_FIELDS}
        if self.model == "dm-lstm":
            values = {name: value for name, value in values.items() if name not in TRANSFORMER_FIELDS}
            values["order"] = "sentences"  # DM-LSTM rows are sentences (module docstring)
        return model_config(
            {**self.base_options, **values, "model": BASE_MODELS[self.model]}, where="model.base_options"
        )

    def check(self) -> None:
        if self.model not in BASE_MODELS:
            raise ConfigError(
                f"model.model {self.model!r} is not a DM model; expected one of {', '.join(BASE_MODELS)}"
            )
        super().check()
        if self.stage not in STAGES:
            raise ConfigError(f"model.stage must be one of {', '.join(STAGES)}, got {self.stage!r}")
        if self.dependency_batches < 0:
            raise ConfigError(f"model.dependency_batches must be at least 0, got {self.dependency_batches}")
        if self.dependency_batches and self.stage != "mixture":
            raise ConfigError(
                "model.dependency_batches schedules stage 1 before stage 2 in one run; it needs stage: mixture"
            )
        if self.context_length < 1:
            raise ConfigError(f"model.context_length must be at least 1, got {self.context_length}")
        clashing = sorted(set(self.base_options) & {"model", "order", *SHARED_FIELDS})
        if clashing:
            raise ConfigError(
                f"model.base_options may not set {', '.join(clashing)}: give them as model.<field>"
            )
        if self.model == "dm-transformer" and self.n_layers < 2:
            raise ConfigError(
                f"dm-transformer mixes with the penultimate layer's attention: model.n_layers must be "
                f"at least 2, got {self.n_layers}"
            )
        self.base_config()


# --- the mixture (Eq. 3) and the dependency objective (Eq. 1), as pure functions -----------------


def mixture_logprobs(log_attention: Tensor, dependency_logprobs: Tensor) -> Tensor:
    """``log p(w | x_≤t)`` for every ``w`` (Eq. 3 in log space): ``[..., T, V]`` from the log
    attention ``[..., T, K]`` over ``K`` earlier positions and their ``log p_dep`` ``[..., K, V]``."""
    return torch.logsumexp(log_attention[..., :, :, None] + dependency_logprobs[..., None, :, :], dim=-2)


def mixture_target_logprobs(log_attention: Tensor, dependency_logprobs: Tensor, targets: Tensor) -> Tensor:
    """``log p(targets_t | x_≤t)`` ``[B, T]`` (Eq. 3, 4) without the ``[B, T, T, V]`` tensor:
    ``log p_dep_j(targets_t)`` is gathered for every pair ``(t, j)``, then ``logsumexp_j``."""
    batch, length, _ = dependency_logprobs.shape
    index = targets[:, None, :].expand(batch, length, length)
    per_source = dependency_logprobs.gather(2, index)  # [B, j, t] = log p_dep_j(targets_t)
    return torch.logsumexp(log_attention + per_source.transpose(1, 2), dim=-1)


def dependency_nll(dependency_logprobs: Tensor, arc_source: Tensor, arc_target: Tensor) -> Tensor:
    """``−Σ log p_dep(arc_target | arc_source)`` over the arcs whose target is not padding (Eq. 1).

    ``dependency_logprobs`` ``[B, T, V]``; ``arc_source``/``arc_target`` ``[B, K]``: the position
    whose set holds the arc and the token id of the arc's target (0 = no arc)."""
    batch, length, vocab = dependency_logprobs.shape
    real = arc_target != PAD_ID
    rows = torch.arange(batch, device=arc_source.device)[:, None] * length + arc_source.long()
    flat = dependency_logprobs.reshape(batch * length, vocab)
    return -flat[rows[real], arc_target[real].long()].sum()


def causal_log_attention(scores: Tensor, window: int | None = None) -> Tensor:
    """``log softmax`` over keys ``j ≤ t`` (and ``t − j < window``) of scores ``[..., T, T]``."""
    length = scores.shape[-1]
    positions = torch.arange(length, device=scores.device)
    distance = positions[:, None] - positions[None, :]
    allowed = distance >= 0
    if window is not None:
        allowed &= distance < window
    return scores.masked_fill(~allowed, float("-inf")).log_softmax(-1)


def head_average(per_head: Tensor) -> Tensor:
    """``log mean_h A_h`` ``[B, T, K]`` of per-head log attention ``[B, H, T, K]``. Keys no head
    sees stay ``−inf`` without the NaN gradient of a ``logsumexp`` over only ``−inf``."""
    unseen = torch.isneginf(per_head).all(dim=1)
    averaged = torch.logsumexp(per_head.masked_fill(torch.isneginf(per_head), -1e4), dim=1)
    return (averaged - math.log(per_head.shape[1])).masked_fill(unseen, float("-inf"))


# --- training rows -------------------------------------------------------------------------------


def piece_heads(word_heads: Sequence[int], word_index: np.ndarray) -> list[int]:
    """Heads (1-based over pieces, 0 = root) of every piece: a word's first piece takes the word's
    head, pointing at the head word's last piece; every later piece depends on the one before."""
    n_words = len(word_heads)
    last_piece = np.zeros(n_words + 1, dtype=np.int64)  # last_piece[w] for 1-based word w; 0 = root
    for k, word in enumerate(word_index):
        last_piece[word + 1] = k + 1
    heads = []
    for k, word in enumerate(word_index):
        first = k == 0 or word_index[k - 1] != word
        heads.append(int(last_piece[word_heads[word]]) if first else k)
    return heads


def dependency_arcs(heads: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The arcs of the future-dependents sets of a sentence of ``len(heads)`` pieces: for each
    arc, the input position whose set holds it and the position of its target (``P + 1`` = the
    end symbol); ``P + 1`` arcs, sorted by source."""
    n = len(heads)
    tree = DepTree(words=("_",) * n, heads=tuple(heads), relations=("dep",) * n)
    sources, targets = [], []
    for position, members in enumerate(future_dependents(tree)):
        for member in members:
            sources.append(position)
            targets.append(member)
    return np.asarray(sources, dtype=np.int32), np.asarray(targets, dtype=np.int64)


def _as_dependency_tree(tree: Any, index: int) -> DepTree:
    if isinstance(tree, DepTree):
        n = len(tree.words)
        for word, head in enumerate(tree.heads, 1):
            if not 0 <= head <= n or head == word:
                raise ValueError(
                    f"trees[{index}]: word {word} has head {head}; expected 0 (root) to {n}, not itself"
                )
        return tree
    if isinstance(tree, Tree):
        return constituency_to_dependency(tree)
    raise TypeError(f"trees[{index}] is {type(tree).__name__}; expected a Tree or a DepTree")


# --- the wrapper -----------------------------------------------------------------------------------


class DependencyMixtureLM(SyntacticLM):
    """What DM-Transformer and DM-LSTM share: data, objectives, scoring (module docstring).
    Subclasses give ``dependency_network`` and ``decoder``."""

    config_class: ClassVar[type[ModelConfig]] = DMLMConfig
    reads: ClassVar[tuple[str, ...]] = ("constituency", "dependency")
    config: DMLMConfig

    def __init__(self, config: DMLMConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        from syntaxlm.models import build_model

        self.base = build_model(config.base_config(), {"vocab": self.vocab})
        if config.dependency_batches:
            self.register_buffer(COUNTER, torch.zeros((), dtype=torch.long))
        self._initialised = config.init_from is None

    @property
    def loss_weights(self) -> dict[str, float]:
        if self.config.stage == "dependency":
            return {"dependency": 1.0}
        if self.config.dependency_batches:
            return {"lm": 1.0, "dependency": 1.0}  # one of the two is detached: see loss()
        return {"lm": 1.0}

    # --- the network: subclasses ------------------------------------------------------------------

    @abstractmethod
    def dependency_network(self, inputs: Tensor) -> tuple[Tensor, Tensor]:
        """``(logits [B, T, V], log attention [B, T, T])`` of ``inputs`` ``[B, T]``: the base
        model's output scores (``p_dep``, Eq. 1) and the dependency attention (Eq. 2)."""

    def max_positions(self) -> int | None:
        """The longest row the network takes (``None``: no limit)."""
        return None

    def longest_sentence(self) -> int | None:
        limit = self.max_positions()
        return None if limit is None else limit - 2  # <s>, the pieces and </s>, which the decoder reads

    # --- training ----------------------------------------------------------------------------------

    def prepare(self, trees: Sequence[Tree | DepTree]) -> RowCorpus:
        """Rows ``inputs`` (``<s>`` + pieces), ``labels`` (pieces + ``</s>``), and the arcs of the
        future-dependents sets: ``arc_source`` (input position) and ``dependency`` (target token id,
        0 = none). Constituency trees are converted with ``trees.heads``. The first call of a model
        with ``init_from`` copies the stage-1 weights first (module docstring)."""
        if not self._initialised:
            self.initialise_from(self.config.init_from)
        rows: dict[str, list[np.ndarray]] = {"inputs": [], "labels": [], "arc_source": [], "dependency": []}
        limit = self.max_positions()
        skipped = n_trees = 0
        for index, tree in enumerate(trees):
            n_trees += 1
            row = self.training_row(_as_dependency_tree(tree, index))
            if limit is not None and len(row["inputs"]) > limit:
                skipped += 1
                self.report_problem("too_long", index, f"longer than max_length {limit} positions; dropped")
                continue
            for name, values in row.items():
                rows[name].append(values)
        if skipped:
            warnings.warn(
                f"prepare skipped {skipped} of {n_trees} sentences longer than max_length {limit} positions",
                SkippedSentencesWarning,
                stacklevel=2,
            )
        lengths = np.array([len(inputs) for inputs in rows["inputs"]], dtype=np.int64)
        fields = {name: pad_rows(values, dtype=np.int32) for name, values in rows.items()}
        return RowCorpus(
            fields, lengths, target_fields={"lm": "labels", "dependency": "dependency"}, order="shuffled"
        )

    def training_row(self, tree: DepTree) -> dict[str, np.ndarray]:
        """One sentence's row (see ``prepare``)."""
        ids, word_index = word_pieces(self.vocab, tree.words)
        sources, targets = dependency_arcs(piece_heads(tree.heads, word_index))
        tokens = np.append(ids, EOS_ID)  # the token at input position q ≥ 1 is tokens[q − 1]
        return {
            "inputs": np.concatenate(([BOS_ID], ids)),
            "labels": tokens,
            "arc_source": sources,
            "dependency": tokens[targets - 1],
        }

    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """NLL sums (nats): ``dependency`` (Eq. 1) and ``lm`` (Eq. 4); the part the current stage does
        not train is detached. Counts are the global batch's."""
        device = self.device
        inputs = batch["inputs"].to(device).long()
        labels = batch["labels"].to(device).long()
        logits, log_attention = self.dependency_network(inputs)
        logprobs = logits.float().log_softmax(-1)
        dependency = dependency_nll(logprobs, batch["arc_source"].to(device), batch["dependency"].to(device))
        target = mixture_target_logprobs(log_attention.float(), logprobs, labels)
        lm = -target[labels != PAD_ID].sum()
        training = self.training and torch.is_grad_enabled()
        if self.training_stage(count=training) == "dependency":
            lm = lm.detach()
        else:
            dependency = dependency.detach()
        return LossOutput(sums={"lm": lm, "dependency": dependency}, counts=dict(batch.counts))

    def training_stage(self, *, count: bool = False) -> str:
        """The objective of the current batch; ``count=True`` counts it as a training batch."""
        if not self.config.dependency_batches:
            return self.config.stage
        counter = getattr(self, COUNTER)
        stage = "dependency" if int(counter) < self.config.dependency_batches else "mixture"
        if count:
            counter += 1
        return stage

    def initialise_from(self, folder: str | Path) -> None:
        """Copy the weights of a saved stage-1 model (or of a plain base model) into this one."""
        folder = Path(folder)
        document = read_model_config(folder)
        saved = document["config"]
        tensors = read_weights(folder)
        if saved.get("model") == BASE_MODELS[self.config.model]:
            tensors = {f"base.{name}": tensor for name, tensor in tensors.items()}
        elif saved.get("model") != self.config.model:
            raise ModelFileError(
                f"init_from holds a {saved.get('model')!r} model; expected {self.config.model} "
                f"(a stage-1 folder such as RUN/best) or its base {BASE_MODELS[self.config.model]}",
                path=folder,
            )
        vocab = self.load_vocabularies(folder, ["vocab"])["vocab"]
        if len(vocab) != len(self.vocab) or any(
            vocab.token(i) != self.vocab.token(i) for i in range(len(vocab))
        ):
            raise ModelFileError(
                "init_from has another vocabulary than this run; point data.vocab_path at its vocab folder",
                path=folder,
            )
        own = {name for name in self.state_dict() if name != COUNTER}
        tensors = {name: tensor for name, tensor in tensors.items() if name != COUNTER}
        missing_own = own - set(tensors)
        if saved.get("model") == BASE_MODELS[self.config.model]:
            missing_own = {name for name in missing_own if name.startswith("base.")}
        if missing_own or set(tensors) - own:
            raise ModelFileError(
                "init_from does not fit this model: "
                f"missing {sorted(missing_own)[:5]}, unexpected {sorted(set(tensors) - own)[:5]}",
                path=folder,
            )
        current = self.state_dict()
        wrong = [name for name, tensor in tensors.items() if tensor.shape != current[name].shape]
        if wrong:
            raise ModelFileError(f"init_from has other shapes for {', '.join(wrong[:5])}", path=folder)
        self.load_state_dict(tensors, strict=False)
        self._initialised = True

    # --- scoring ---------------------------------------------------------------------------------

    def scoring_items(self, sentences: list[list[str]], trees: Sequence[Any] | None) -> list[ScoringItem]:
        """``<s>`` + pieces → pieces + ``</s>``, scored under the mixture (Eq. 3)."""
        reject_trees(self.config.model, trees)
        items = [sentence_item(*word_pieces(self.vocab, words), len(words)) for words in sentences]
        limit = self.max_positions()
        for index, item in enumerate(items):
            if limit is not None and len(item.inputs) > limit:
                raise ValueError(f"sentence {index}: {len(item.inputs)} positions exceed max_length {limit}")
        return items

    def target_logprobs(self, items: list[ScoringItem]) -> list[Tensor]:
        inputs = padded([item.inputs for item in items], self.device)
        targets = padded([item.targets for item in items], self.device)
        logits, log_attention = self.dependency_network(inputs)
        picked = mixture_target_logprobs(log_attention.float(), logits.float().log_softmax(-1), targets)
        return [row[: len(item.inputs)] for item, row in zip(items, picked.cpu(), strict=True)]

    # --- decoding ----------------------------------------------------------------------------------

    def action_grammar(self) -> ActionGrammar:
        """Words only, ending with ``</s>``."""
        return words_grammar(self.vocab)


class MixtureDecoder(Decoder):
    """What both DM decoders share: every prefix holds ``log p_dep`` of its positions (the list of
    §2.2's inference), ``[n, K, V]``, and the log attention of its newest position over them."""

    def __init__(self, model: DependencyMixtureLM):
        self.model = model
        self.device = model.device
        self._held: Tensor | None = None  # [n, K, V] log p_dep of the positions held
        self._log_attention: Tensor | None = None  # [n, K]

    @property
    def size(self) -> int:
        return 0 if self._held is None else self._held.shape[0]

    def _logprobs(self) -> Tensor:
        """``[n, V]`` natural-log ``p(next token | prefix)`` (Eq. 3), float32."""
        return torch.logsumexp(self._log_attention[:, :, None] + self._held, dim=1)

    def _hold(self, dependency_logprobs: Tensor, window: int | None = None) -> None:
        """Append the newest positions' ``log p_dep`` ``[n, V]``, keeping the last ``window``."""
        new = dependency_logprobs[:, None]
        held = new if self._held is None else torch.cat([self._held, new], dim=1)
        self._held = held if window is None else held[:, -window:]


# --- DM-Transformer ---------------------------------------------------------------------------------


class DMTransformer(DependencyMixtureLM):
    """DM-Transformer: the GPT-2-style ``lm`` with the penultimate layer's head-averaged attention
    as the dependency attention (§2.2). No parameter is added."""

    def max_positions(self) -> int | None:
        return self.base.config.max_length

    def dependency_network(self, inputs: Tensor) -> tuple[Tensor, Tensor]:
        base = self.base
        length = inputs.shape[1]
        if length > base.config.max_length:
            raise ValueError(
                f"a sequence of {length} positions is longer than max_length {base.config.max_length}"
            )
        # The base model's forward (ActionLM.forward), keeping each layer's input; tests/test_dmlm.py
        # checks that the two agree.
        x = base.input_vectors(inputs, torch.arange(length, device=inputs.device))
        hidden, layer_inputs = base.transformer(base.embedding_dropout(x), base.attention_mask(length))
        return base.lm_logits(hidden), self.log_attention(layer_inputs[-2])

    def penultimate_queries_keys(self, layer_input: Tensor) -> tuple[Tensor, Tensor]:
        """Queries and keys ``[B, H, T, d_head]`` of the penultimate block for its input ``[B, T, d]``."""
        block = self.base.transformer.blocks[-2]
        h = block.attention_norm(layer_input) if block.pre_ln else layer_input
        attention = block.attention
        batch, length, _ = h.shape
        q = attention.query(h).view(batch, length, attention.n_heads, attention.d_head).transpose(1, 2)
        k, _ = attention.keys_values(h)
        return q, k

    def log_attention(self, layer_input: Tensor) -> Tensor:
        """``log A`` ``[B, T, T]``: the penultimate layer's causal attention, averaged over heads."""
        q, k = self.penultimate_queries_keys(layer_input)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        return head_average(causal_log_attention(scores.float()))

    def decoder(self) -> DMTransformerDecoder:
        return DMTransformerDecoder(self)


class DMTransformerDecoder(MixtureDecoder):
    """Each layer's keys and values per prefix (as ``ActionLMDecoder``), plus ``log p_dep`` of
    every position; the newest position's query in the penultimate layer gives its attention."""

    def __init__(self, model: DMTransformer):
        super().__init__(model)
        self.length = 0
        self._cache = model.base.transformer.key_value_cache(0)

    def _start(self, n: int) -> None:
        self.length, self._held = 0, None
        self._cache = self.model.base.transformer.key_value_cache(n)
        self._run(torch.full((n,), BOS_ID, dtype=torch.long, device=self.device))

    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        if self.length >= self.model.base.config.max_length:
            raise ValueError(
                f"the prefixes already hold {self.length} positions, the model's max_length; "
                "there is no position left for another token"
            )
        self._cache.select_rows(parents)
        self._held = self._held[parents]
        self._run(tokens)

    def _run(self, tokens: Tensor) -> None:
        model, base = self.model, self.model.base
        position = torch.full((1, 1), self.length, dtype=torch.long, device=self.device)
        x = base.input_vectors(tokens[:, None], position)
        self.length += 1
        mask = torch.ones(1, 1, 1, self.length, dtype=torch.bool, device=self.device)
        blocks = base.transformer.blocks
        self._cache.append(1)
        penultimate_input = x
        for i, block in enumerate(blocks):  # one attention module per block
            if i == len(blocks) - 2:
                penultimate_input = x
            x = block.step(x, mask, self._cache, i)
        hidden = base.transformer.final_norm(x)[:, 0]
        self._hold(base.lm_logits(hidden).float().log_softmax(-1))
        q, _ = model.penultimate_queries_keys(penultimate_input)  # [n, H, 1, d_head]
        keys = self._cache.keys_values(len(blocks) - 2)[0]  # the penultimate block's, every position
        scores = (q @ keys.transpose(-1, -2))[:, :, 0] / math.sqrt(q.shape[-1])  # [n, H, K]
        self._log_attention = head_average(scores.float().log_softmax(-1))


# --- DM-LSTM --------------------------------------------------------------------------------------


class DMLSTM(DependencyMixtureLM):
    """DM-LSTM: the LSTM LM with ``q_t = W_Q h_t``, ``k_j = W_K h_j`` and scaled dot products over
    the last ``context_length`` steps as the dependency attention (Eq. 2, §4.3). ``h`` is the last
    layer's output (``LSTMLM.hidden_states``); ``W_Q`` and ``W_K`` are the only new parameters."""

    def __init__(self, config: DMLMConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        size = self.base.config.hidden_size
        self.query = nn.Linear(size, size, bias=False)  # W_Q
        self.key = nn.Linear(size, size, bias=False)  # W_K

    def dependency_network(self, inputs: Tensor) -> tuple[Tensor, Tensor]:
        hidden, _ = self.base.hidden_states(inputs, None)
        return self.base.output_logits(hidden), self.log_attention(hidden)

    def log_attention(self, hidden: Tensor) -> Tensor:
        """``log a(t)`` ``[B, T, T]`` (Eq. 2): ``softmax_j(q_t·k_j / √H)`` over ``t − L < j ≤ t``."""
        scores = self.query(hidden) @ self.key(hidden).transpose(-1, -2) / math.sqrt(hidden.shape[-1])
        return causal_log_attention(scores.float(), self.config.context_length)

    def decoder(self) -> DMLSTMDecoder:
        return DMLSTMDecoder(self)


class DMLSTMDecoder(MixtureDecoder):
    """Per prefix: the LSTM state, and the keys and ``log p_dep`` of the last ``context_length``
    positions; one step of the recurrence per ``advance``."""

    def __init__(self, model: DMLSTM):
        super().__init__(model)
        self.window = model.config.context_length
        self._state: Any = None
        self._keys: Tensor | None = None  # [n, K, H]

    def _start(self, n: int) -> None:
        self._state, self._keys, self._held = None, None, None
        self._run(torch.full((n,), BOS_ID, dtype=torch.long, device=self.device))

    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        self._state = select_rows(self._state, parents)
        self._keys, self._held = self._keys[parents], self._held[parents]
        self._run(tokens)

    def _run(self, tokens: Tensor) -> None:
        model = self.model
        hidden, self._state = model.base.hidden_states(tokens[:, None], self._state)
        hidden = hidden[:, 0]
        self._hold(model.base.output_logits(hidden).float().log_softmax(-1), self.window)
        key = model.key(hidden)[:, None]
        keys = key if self._keys is None else torch.cat([self._keys, key], dim=1)
        self._keys = keys[:, -self.window :]
        scores = (self._keys @ model.query(hidden)[:, :, None])[:, :, 0] / math.sqrt(hidden.shape[-1])
        self._log_attention = scores.float().log_softmax(-1)
