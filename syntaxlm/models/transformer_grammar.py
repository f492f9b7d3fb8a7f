"""Transformer Grammars and their Transformer-XL baselines (TG paper, Sartran et al. 2022).

One model, three inputs (``config.model``), all made by ``syntaxlm.structure.tg``:

- ``"tg"``: ``<s>`` + the Choe–Charniak actions with every closer duplicated (§2.1): the first
  copy COMPOSEs (attends to the closed constituent's opener and children, predicts nothing), the
  second STACKs (attends to everything on the stack) and predicts the next action. Relative
  positions are depth differences, ``R_ij = δ(i) − δ(j)``.
- ``"txl-trees"``: the same actions without duplication, causal attention, linear positions.
- ``"txl-terminals"``: ``<s>`` + the words + ``</s>``, causal, linear positions.

The model is Transformer-XL (§2.2): post-LN blocks whose attention adds a relative-position term
(``layers/attention.py``), over segments of ``segment_length`` positions that also see
``memory_length`` slots of earlier hidden states per layer. Dropout: ``dropout`` on the embeddings
and the sub-layer outputs, ``attention_dropout`` on the attention probabilities, ``ff_dropout`` on
the feed-forward hidden units and ``position_dropout`` on the relative position vectors (the
authors' code drops with one rate in all four places). For TG the memory is *smart*: the
positions still on the stack, so composed subtrees leave it. A sentence that fits one segment
needs no memory, and such a corpus is trained in shuffled batches cut to their longest row;
longer sequences (documents, as one ``(DOC ...)`` tree) are trained as streams that pass the
memory from batch to batch.

The STACK/COMPOSE mask and the relative positions are expanded here, on the model's device, from
per-position vectors (``stack_compose_mask``): a TXL input has no COMPOSE and nothing popped, so
the same code gives the causal mask, and the one attention layer configured with a causal mask and
linear positions *is* the Transformer-XL layer.

Ablations of §4.1 are options: ``positions="none"`` (no position information), ``"linear"`` for
TG (linear instead of depth distances), ``separate_compose`` (own attention weights for COMPOSE).

Search and sampling drive the model through ``action_grammar()`` and ``decoder()``
(``models.decoding``): a ``TGDecoder`` holds ``n`` prefixes with every layer's keys and values and,
per position, its depth and whether it is on the stack, so that one more token costs one position
of the network (two for a TG closer: its COMPOSE and STACK copies), not a pass over the prefix.
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

from syntaxlm.data.batching import Batch, RowCorpus
from syntaxlm.errors import ActionSequenceError, SentenceError
from syntaxlm.models.base import (
    AttentionMap,
    ConfigError,
    LossOutput,
    SyntacticLM,
    TransformerConfig,
    missing_symbols,
)
from syntaxlm.models.decoding import KEEP, ActionGrammar, Decoder, moving_first, symbol_ids, words_grammar
from syntaxlm.models.layers.attention import Kernel, RelativePositions, record_attention
from syntaxlm.models.layers.transformer import TransformerStack, live_first_order, next_memory
from syntaxlm.models.scoring import ScoringItem, consecutive_batches, evaluating, reject_trees
from syntaxlm.structure.tg import (
    NEVER,
    VARIANTS,
    TGSegments,
    TGSequence,
    TGSequences,
    segment_sequences,
    stack_compose_mask,
    tree_sequences,
)
from syntaxlm.text.base import BOS_ID, PAD_ID
from syntaxlm.text.symbols import closing_nonterminal
from syntaxlm.trees.tree import Tree

POSITIONS = ("auto", "depth", "linear", "none")

# Per-position fields a model batch carries, and their padding values.
_SEGMENT_FIELDS = {
    "inputs": PAD_ID,
    "labels": PAD_ID,
    "compose": 0,
    "depth": 0,
    "position": -1,
    "popped_at": NEVER,
}
# The per-position fields of a sequence (``TGSequence``).
_SEQUENCE_FIELDS = (
    "inputs",
    "input_types",
    "labels",
    "label_types",
    "label_word",
    "compose",
    "depth",
    "popped_at",
)
_MEMORY_FIELDS = {
    "memory_position": -1,
    "memory_depth": 0,
    "memory_popped_at": NEVER,
    "next_memory_source": -1,
}


@dataclass
class TransformerGrammarConfig(TransformerConfig):
    model: str = "tg"
    attention_dropout: float = 0.0
    # Dropout on the feed-forward hidden units (after the activation) and on the relative position
    # vectors, two places where the authors' code drops with its one rate (the recipes set it).
    ff_dropout: float = 0.0
    position_dropout: float = 0.0
    segment_length: int = 256
    memory_length: int = 256
    smart_memory: bool = True
    positions: str = "auto"
    # The range relative positions are clipped to (``relative_range``); unset, it is the kind's
    # own: depth differences [-1, 62] (64 buckets, as the authors), linear distances every i - j
    # a query has to a key of its segment or memory, 0 .. segment_length + memory_length - 1
    # (Transformer-XL: nothing clipped). Set, it clips linear distances too.
    relative_min: int | None = None
    relative_max: int | None = None
    learned_positions: bool = False
    separate_compose: bool = False
    pre_ln: bool = False
    tie_embeddings: bool = True

    def check(self) -> None:
        super().check()
        if self.model not in VARIANTS:
            raise ConfigError(f"model must be one of {', '.join(VARIANTS)}, got {self.model!r}")
        if self.positions not in POSITIONS:
            raise ConfigError(
                f"model.positions must be one of {', '.join(POSITIONS)}, got {self.positions!r}"
            )
        if self.positions == "depth" and self.model != "tg":
            raise ConfigError(
                f"model.positions 'depth' needs the TG input; {self.model} has linear positions"
            )
        for name in ("attention_dropout", "ff_dropout", "position_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be in [0, 1), got {getattr(self, name)}")
        if self.segment_length < 1 or self.memory_length < 0:
            raise ConfigError(
                f"model.segment_length must be >= 1 and model.memory_length >= 0, got "
                f"{self.segment_length} and {self.memory_length}"
            )
        for name in ("relative_min", "relative_max"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ConfigError(f"model.{name} must be int or null, got {type(value).__name__} {value!r}")
        if self.position_kind != "none":
            lowest, highest = self.relative_range
            if highest < lowest:
                raise ConfigError(
                    f"model.relative_min ({lowest}) must not exceed model.relative_max ({highest}) "
                    f"({self.position_kind} positions; null takes the default of that end)"
                )

    @property
    def position_kind(self) -> str:
        if self.positions != "auto":
            return self.positions
        return "depth" if self.model == "tg" else "linear"

    @property
    def relative_range(self) -> tuple[int, int]:
        """``[lowest, highest]`` relative position, the ends not set taken from the kind's default
        range: depth ``[-1, 62]``; linear ``[0, segment_length + memory_length - 1]``, the largest
        distance from a query to a key of its segment or memory. (TG's linear ablation with smart
        memory keeps stack positions from further back; their distance takes the last bucket.)"""
        if self.position_kind == "depth":
            default = (-1, 62)
        else:
            default = (0, self.segment_length + self.memory_length - 1)
        lowest = default[0] if self.relative_min is None else self.relative_min
        highest = default[1] if self.relative_max is None else self.relative_max
        return lowest, highest


class TransformerGrammar(SyntacticLM):
    config_class = TransformerGrammarConfig

    def __init__(self, config: TransformerGrammarConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        d = config.d_model
        self.embedding = nn.Embedding(len(self.vocab), d)
        nn.init.normal_(self.embedding.weight, std=0.02)
        self.embedding_dropout = nn.Dropout(config.dropout)
        relative = config.position_kind != "none"
        self.relative_positions = (
            RelativePositions(d, *config.relative_range, learned=config.learned_positions)
            if relative
            else None
        )
        self.transformer = TransformerStack(
            config.n_layers,
            d,
            config.n_heads,
            config.d_ff,
            config.dropout,
            attention_dropout=config.attention_dropout,
            ff_dropout=config.ff_dropout,
            position_dropout=config.position_dropout if relative else 0.0,
            relative=relative,
            pre_ln=config.pre_ln,
            separate_compose=config.separate_compose,
        )
        self.output = None if config.tie_embeddings else nn.Linear(d, len(self.vocab), bias=False)
        self.output_bias = nn.Parameter(torch.zeros(len(self.vocab)))
        self.kernel: Kernel = "auto"

    @property
    def variant(self) -> str:
        return self.config.model

    # --- data ------------------------------------------------------------------------------------

    def sequences(self, trees: Sequence[Tree]) -> TGSequences:
        """The model's input for each tree (Choe–Charniak view, no POS tags)."""
        return tree_sequences(trees, self.vocab, self.variant)

    def segments(self, sequences: TGSequences) -> TGSegments:
        memory = "smart" if self.config.smart_memory else "previous"
        return segment_sequences(
            sequences, self.config.segment_length, memory_length=self.config.memory_length, memory=memory
        )

    def unknown_nonterminals(self, trees: Sequence[Tree]) -> dict[int, list[str]]:
        """The ``(X``/``X)`` symbols the vocabulary lacks (every variant spells the tree's actions)."""
        return missing_symbols(trees, self.vocab, "choe-charniak")

    def prepare(self, trees: Sequence[Tree]) -> RowCorpus:
        sequences = self.sequences(trees)
        segments = self.segments(sequences)
        streams = bool(np.any(segments.segment > 0))
        names = dict(_SEGMENT_FIELDS, **(_MEMORY_FIELDS if streams else {}))
        fields = {name: getattr(segments, name) for name in names}
        return RowCorpus(
            fields=fields,
            lengths=(segments.position >= 0).sum(axis=1),
            target_fields={"lm": "labels"},
            order="streams" if streams else "shuffled",
            fill=names,
            sequence=segments.sequence,
        )

    # --- the model -------------------------------------------------------------------------------

    def forward(self, batch: Batch | dict[str, Tensor], memories: list[Tensor] | None = None):
        """Logits ``[B, L, V]`` of a batch of segments, and each layer's input (for the memory)."""
        inputs = batch["inputs"].long()
        position = batch["position"]
        compose = batch["compose"].bool()
        has_memory = "memory_position" in batch and memories is not None
        if has_memory:
            key_position = torch.cat([batch["memory_position"], position], dim=1)
            key_popped_at = torch.cat([batch["memory_popped_at"], batch["popped_at"]], dim=1)
            key_depth = torch.cat([batch["memory_depth"], batch["depth"]], dim=1)
        else:
            memories = None
            key_position, key_popped_at, key_depth = position, batch["popped_at"], batch["depth"]
        mask = stack_compose_mask(position, compose, key_position, key_popped_at)[:, None]
        relative = None
        position_table = None
        if self.relative_positions is not None:
            reach = None
            if self.config.position_kind == "depth":
                distance = batch["depth"][:, :, None] - key_depth[:, None, :]
            else:
                distance = position[:, :, None] - key_position[:, None, :]
                if self.variant != "tg" or not has_memory or not self.config.smart_memory:
                    # Consecutive keys (a memory of the positions just before the segment; only
                    # TG's smart memory keeps older ones): no distance reaches the key count.
                    reach = key_position.shape[1] - 1
            relative, position_table = self.relative_positions.lookup(distance, reach)

        x = self.embedding(inputs) * math.sqrt(self.config.d_model)
        hidden, layer_inputs = self.transformer(
            self.embedding_dropout(x),
            mask,
            memories=memories,
            relative=relative,
            position_table=position_table,
            compose=compose if self.config.separate_compose else None,
            kernel=self.kernel,
        )
        weight = self.embedding.weight if self.output is None else self.output.weight
        return F.linear(hidden, weight, self.output_bias), layer_inputs

    def loss(self, batch: Batch, state: list[Tensor] | None = None) -> LossOutput:
        tensors, memories = _used_columns(batch, state)
        logits, layer_inputs = self(tensors, memories)
        labels = tensors["labels"].long()
        targets = labels != PAD_ID  # COMPOSE positions and padding predict nothing
        nll = F.cross_entropy(logits[targets].float(), labels[targets], reduction="sum")
        next_state = None
        if "next_memory_source" in tensors:
            next_state = next_memory(memories, layer_inputs, tensors["next_memory_source"])
        return LossOutput({"lm": nll}, dict(batch.counts), next_state)

    def hidden_states(self, batch: Batch | dict[str, Tensor]) -> list[Tensor]:
        """Every layer's states ``[B, L, d]`` of a batch of segments without memory, in eval mode:
        layer 0 is the scaled embeddings, layer ``k`` the output of block ``k`` (the last one after
        the final norm of a pre-LN stack). For probes; read off the stack by a hook, so ``forward``
        pays nothing for it."""
        captured: list = []
        handle = self.transformer.register_forward_hook(lambda module, args, out: captured.append(out))
        try:
            with evaluating(self):
                self(batch)
        finally:
            handle.remove()
        last, layer_inputs = captured[0]
        return [*layer_inputs, last]

    # --- scoring ---------------------------------------------------------------------------------

    scoring_batch_size: ClassVar[int] = 32

    def token_logprobs(self, sequences: TGSequences, *, batch_size: int = 32) -> list[np.ndarray]:
        """``log p(label_t | prefix)`` at every position of every sequence (0 where no label), in
        eval mode, ``batch_size`` sequences at a time in their order."""
        out: list[np.ndarray] = []
        with evaluating(self):
            for chunk in consecutive_batches(len(sequences), batch_size):
                out.extend(self._chunk_logprobs(_joined([sequences[i] for i in chunk])))
        return out

    def _chunk_logprobs(self, sequences: TGSequences) -> list[np.ndarray]:
        segments = self.segments(sequences)
        lengths = sequences.lengths
        out = [np.zeros(int(n)) for n in lengths]
        memories = None  # per layer [n_sequences, M, d], rows indexed by sequence
        device = self.device
        for step in range(int(segments.segment.max()) + 1):
            rows = np.flatnonzero(segments.segment == step)
            owners = segments.sequence[rows]
            tensors = {
                name: torch.from_numpy(np.ascontiguousarray(getattr(segments, name)[rows])).to(device)
                for name in (*_SEGMENT_FIELDS, *_MEMORY_FIELDS)
            }
            row_memories = None if memories is None else [m[owners] for m in memories]
            logits, layer_inputs = self(tensors, row_memories if step else None)
            if step == 0:
                row_memories = None
            new = next_memory(row_memories, layer_inputs, tensors["next_memory_source"])
            if memories is None:
                memories = [m.new_zeros(len(sequences), *m.shape[1:]) for m in new]
            for layer, m in enumerate(new):
                memories[layer][owners] = m
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            labels = tensors["labels"].long()
            picked = logprobs.gather(-1, labels[..., None])[..., 0].masked_fill(labels == PAD_ID, 0.0)
            picked = picked.cpu().numpy()
            for row, owner in enumerate(owners):
                positions = segments.position[rows[row]]
                real = positions >= 0
                out[owner][positions[real]] = picked[row][real]
        return out

    def scoring_items(self, sentences: list[list[str]], trees: Sequence[Tree] | None) -> list[ScoringItem]:
        """Each sentence's sequence. TXL (terminals) reads words only: exact ``log p(w_i | w_<i)``.
        TG and TXL (trees) are joint models of words and trees: with ``trees=`` each word gets the
        log-probability of its pieces *and* of the tree actions since the previous word under that
        tree; the end entry is ``log p(</s> | sentence)`` for TXL (terminals), the closers after the
        last word for the joint models."""
        if self.variant == "txl-terminals":
            reject_trees("TXL (terminals)", trees)
            trees = [Tree("S", words) for words in sentences]
        elif trees is None:
            raise ValueError(
                f"{self.variant} is a joint model of words and trees: give trees= to score the words "
                "along those trees"
            )
        elif len(trees) != len(sentences):
            raise ValueError(f"got {len(sentences)} sentences but {len(trees)} trees")
        for i, (words, tree) in enumerate(zip(sentences, trees, strict=True)):
            if not words:
                raise SentenceError("empty sentence; expected at least one word", sentence=i)
            if tree.leaves() != words:
                raise SentenceError("the tree's words differ from the sentence", sentence=i)
        items = []
        for sequence in self.sequences(trees):
            word = sequence.label_word.astype(np.int64)
            has_label = sequence.labels != PAD_ID
            # A structure action belongs to the next word: one more than the last word seen so far.
            seen = np.maximum.accumulate(np.where(word >= 0, word, -1))
            owner = np.where(word >= 0, word, seen + 1)
            items.append(ScoringItem(sequence, sequence.labels[has_label], owner[has_label]))
        return items

    def scoring_batches(self, items: list[ScoringItem], batch_size: int) -> list[list[int]]:
        """In the sentences' order, as ``token_logprobs``."""
        return consecutive_batches(len(items), batch_size)

    def target_logprobs(self, items: list[ScoringItem]) -> list[Tensor]:
        """Each sequence's segments with memory, as in training (``_chunk_logprobs``)."""
        values = self._chunk_logprobs(_joined([item.inputs for item in items]))
        return [
            torch.from_numpy(logprobs[item.inputs.labels != PAD_ID])
            for item, logprobs in zip(items, values, strict=True)
        ]

    # --- what the figures draw ------------------------------------------------------------------

    def structure_mask(self, tree: Tree) -> TGSequence:
        """The sequence this variant makes of ``tree``: its ``attention_mask()`` is STACK/COMPOSE
        for tg and causal for the TXL baselines (TG Fig. 2b)."""
        return self.sequences([tree])[0]

    def attention_maps(self, words: Sequence[str], tree: Tree | None = None) -> list[AttentionMap]:
        """Each layer's attention over the sequence of ``tree`` (TXL (terminals): of ``words``),
        recorded during one ``token_logprobs`` pass; where a layer has separate COMPOSE weights,
        the COMPOSE rows show those. ``ValueError`` for a sequence longer than one segment."""
        sequences = self.sequences([tree if tree is not None else Tree("S", list(words))])
        sequence = sequences[0]
        n = len(sequence)
        if n > self.config.segment_length:
            raise ValueError(
                f"the input is {n} positions, longer than the model's segment of "
                f"{self.config.segment_length}; the figure shows one segment"
            )
        with evaluating(self), record_attention(self) as recorded:
            self.token_logprobs(sequences)
        tokens = [self.vocab.token(int(i)) for i in sequence.inputs]
        mask = sequence.attention_mask()[None]
        compose_rows = torch.from_numpy(sequence.compose.astype(bool))[None, :, None]
        maps = []
        for layer in range(self.config.n_layers):
            block = f"transformer.blocks.{layer}"
            weights = recorded[f"{block}.attention"][0][0, :, :n, :n]
            if recorded.get(f"{block}.compose_attention"):  # separate COMPOSE weights: rows by operation
                composed = recorded[f"{block}.compose_attention"][0][0, :, :n, :n]
                weights = torch.where(compose_rows, composed, weights)
            maps.append(AttentionMap(tokens, weights.cpu().numpy(), mask))
        return maps

    # --- search and sampling ---------------------------------------------------------------------

    def action_grammar(self) -> ActionGrammar:
        """Which ids open and close constituents: the ``(X``/``X)`` pairs of the vocabulary for TG
        and TXL (trees); none for TXL (terminals), whose sequences end with a predicted ``</s>``."""
        if self.variant == "txl-terminals":
            return words_grammar(self.vocab)
        open_label: dict[int, str] = {}
        close_label: dict[int, str | None] = {}
        for symbol in self.vocab.symbols:
            label = symbol[1:]
            if symbol.startswith("(") and label and closing_nonterminal(label) in self.vocab:
                open_label[self.vocab.index(symbol)] = label
                close_label[self.vocab.index(closing_nonterminal(label))] = label
        return ActionGrammar(
            len(self.vocab),
            open_label,
            close_label,
            style="choe-charniak",
            ends_with_eos=False,
            symbol_ids=symbol_ids(self.vocab),
        )

    def decoder(self) -> TGDecoder:
        """An incremental decoder over this model, on its device (call its ``start(n)`` first)."""
        return TGDecoder(self)


class TGDecoder(Decoder):
    """``n`` prefixes of a ``TransformerGrammar`` decoded one token at a time (``models.decoding``).

    Held per hypothesis: every layer's keys and values (``TransformerStack.step``), and per key
    slot ``[n, T]`` the position in the sequence (−1: padding), its depth, whether it is on the
    stack and whether it is an opener still open. A token is one new position, except a TG closer,
    which is two run in one step: its COMPOSE copy attends to the positions it pops (those on the
    stack from its opener on) and itself, then replaces them on the stack; its STACK copy attends
    to the stack and itself and is not pushed (Algorithm 1). In a step where some hypotheses close
    a constituent, the others get a padding slot before their token. Only the stack is ever
    attended again, so the slots off it (padding, and the positions a COMPOSE popped) are dropped
    when they pile up: the keys held per hypothesis are about its stack, not its whole sequence
    (all of it for TXL (trees), which pops nothing). Relative positions are per hypothesis (depth
    differences, or differences of sequence positions). A ``KEEP`` token leaves its prefix as it
    was (a padding slot). The hypotheses that move are held first (``_row`` maps the caller's order
    to the held one), and only they run through the network.

    Whole sequences are held, without segments: a sequence longer than ``segment_length`` is
    decoded as the model scores it with ``memory_length`` at least the sequence's length. The
    network runs in eval mode, without gradients, with the ``math`` attention kernel on the CPU and
    SDPA elsewhere (the keys grow by one or two each step, which FlexAttention would recompile for). The decoder does not check the
    grammar (the search does) except that a closer needs an open constituent.
    """

    supports_keep = True

    def __init__(self, model: TransformerGrammar):
        self.model = model
        self.duplicates_closers = model.variant == "tg"
        grammar = model.action_grammar()
        self._is_opener = _id_mask(grammar.vocab_size, grammar.open_label, model.device)
        self._is_closer = _id_mask(grammar.vocab_size, grammar.close_label, model.device)
        self.start(0)

    @property
    def size(self) -> int:
        return len(self._length)

    def _start(self, n: int) -> None:
        device = self.model.device
        self._cache = self.model.transformer.key_value_cache(n)
        self._row = torch.arange(n, device=device)  # where each prefix is held
        self._length = torch.ones(n, dtype=torch.long, device=device)
        # <s> is position 0, at depth 0, on the stack for good.
        self._position = torch.zeros(n, 1, dtype=torch.long, device=device)
        self._depth = torch.zeros(n, 1, dtype=torch.long, device=device)
        self._on_stack = torch.ones(n, 1, dtype=torch.bool, device=device)
        self._open = torch.zeros(n, 1, dtype=torch.bool, device=device)
        if n == 0:
            self._hidden = self.model.embedding.weight.new_zeros(0, self.model.config.d_model)
            return
        inputs = torch.full((n, 1), BOS_ID, dtype=torch.long, device=device)
        mask = torch.ones(n, 1, 1, 1, dtype=torch.bool, device=device)
        coordinate = self._coordinate(self._position, self._depth)
        self._hidden = self._run(inputs, mask, coordinate, coordinate, None)

    def _logprobs(self) -> Tensor:
        return torch.log_softmax(self._logits(None), dim=-1)

    def _logits(self, rows: Tensor | None) -> Tensor:
        model = self.model
        weight = model.embedding.weight if model.output is None else model.output.weight
        hidden = self._hidden[self._row if rows is None else self._row[rows]]
        return F.linear(hidden, weight, model.output_bias).float()

    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        device = self.model.device
        n, m = self.size, len(parents)
        if m == 0:
            self.start(0)
            return
        # A kept prefix gets a padding slot; the network runs on the others only.
        kept = tokens == KEEP
        tokens = torch.where(kept, PAD_ID, tokens)
        closer = self._is_closer[tokens]
        rows = self._row[parents]
        n_open = self._open.sum(dim=1)[rows]
        order, row = moving_first(kept)
        held = rows[order]
        identity = (held == torch.arange(n, device=device)).all() if m == n else torch.tensor(False)
        # One transfer from the device for everything decided on the host.
        unopened, two_positions, live, same, n_kept = torch.stack(
            [
                (closer & (n_open == 0)).any(),
                (closer & self.duplicates_closers).any(),
                self._on_stack.sum(dim=1)[rows].amax(),
                identity.to(device),
                kept.sum(),
            ]
        ).tolist()
        if unopened:
            i = int(torch.argmax((closer & (n_open == 0)).int()))
            token = self.model.vocab.token(int(tokens[i]))
            raise ActionSequenceError(
                f"{token!r} closes a constituent but none is open in prefix {int(parents[i])} "
                f"(new hypothesis {i})"
            )
        tokens, kept, closer, n_open = tokens[order], kept[order], closer[order], n_open[order]
        composes = closer & self.duplicates_closers  # the tokens that get a COMPOSE copy
        self._row = row
        if not same:
            self._select(held)
        slots = self._position.shape[1]
        if slots - live > max(16, live // 4):
            self._compact(int(live))
            slots = live

        # Two candidate positions per hypothesis: a closer's COMPOSE copy (padding for any other
        # token), then the token itself (for a closer, its STACK copy). Without a COMPOSE in this
        # step only the second is run.
        length = self._length
        slot = torch.arange(slots, device=device)
        opener_slot = torch.where(self._open, slot, -1).amax(dim=1)  # the innermost open opener
        popped = self._on_stack & (slot >= opener_slot[:, None]) & composes[:, None]
        stack = self._on_stack & ~popped
        depth = torch.where(closer, n_open, n_open + 1)  # a closer sits at its opener's depth
        inputs = torch.stack([torch.where(composes, tokens, PAD_ID), tokens], dim=1)
        position = torch.stack(
            [torch.where(composes, length, -1), torch.where(kept, -1, length + composes)], dim=1
        )
        new_depth = torch.stack([depth, depth], dim=1)
        # COMPOSE attends to what it pops and itself; STACK to the stack left, the COMPOSE copy
        # pushed on it, and itself.
        new_keys = torch.zeros(m, 2, 2, dtype=torch.bool, device=device)
        new_keys[:, 0, 0] = new_keys[:, 1, 0] = composes
        new_keys[:, 1, 1] = True
        not_any = torch.zeros_like(composes)
        keep = slice(0 if two_positions else 1, 2)
        mask = torch.cat([torch.stack([popped, stack], dim=1)[:, keep], new_keys[:, keep, keep]], dim=2)
        query_coordinate = self._coordinate(position[:, keep], new_depth[:, keep])
        key_coordinate = torch.cat([self._coordinate(self._position, self._depth), query_coordinate], dim=1)
        compose = torch.stack([composes, not_any], dim=1)[:, keep]
        moving = slice(0, m - n_kept)
        self._hidden[moving] = self._run(
            inputs[moving, keep],
            mask[moving, None],
            query_coordinate[moving],
            key_coordinate[moving],
            compose[moving],
        )

        closed = (slot == opener_slot[:, None]) & closer[:, None]
        opened = torch.stack([not_any, self._is_opener[tokens]], dim=1)[:, keep]
        pushed = torch.stack([composes, ~composes & ~kept], dim=1)[:, keep]  # a STACK copy is not pushed
        self._open = torch.cat([self._open & ~closed, opened], dim=1)
        self._on_stack = torch.cat([stack, pushed], dim=1)
        self._position = torch.cat([self._position, position[:, keep]], dim=1)
        self._depth = torch.cat([self._depth, new_depth[:, keep]], dim=1)
        self._length = length + (~kept).long() + composes.long()

    # --- internals -------------------------------------------------------------------------------

    def _coordinate(self, position: Tensor, depth: Tensor) -> Tensor:
        """δ in ``R_ij = δ(i) − δ(j)``: the depth (TG), or the position in the sequence."""
        return depth if self.model.config.position_kind == "depth" else position

    def _run(self, inputs, mask, query_coordinate, key_coordinate, compose) -> Tensor:
        """The network on new positions ``[B, Q]`` of the first ``B`` prefixes held, after their
        cached ones (the other prefixes get ``Q`` empty slots); the last position's output."""
        model = self.model
        if len(inputs) == 0:
            self._cache.append(inputs.shape[1])
            return self._hidden[:0]
        relative = position_table = None
        if model.relative_positions is not None:
            distance = query_coordinate[:, :, None] - key_coordinate[:, None, :]
            reach = None
            if model.config.position_kind == "linear":  # no key lies after position 0 or a query
                reach = int(self._length.max()) + 1
            relative, position_table = model.relative_positions.lookup(distance, reach)
        x = model.embedding(inputs) * math.sqrt(model.config.d_model)
        hidden = model.transformer.step(
            x,
            mask,
            self._cache,
            relative=relative,
            position_table=position_table,
            compose=compose if model.config.separate_compose else None,
            kernel="math" if model.device.type == "cpu" else "sdpa",
        )
        return hidden[:, -1]

    def _select(self, parents: Tensor) -> None:
        """Held row ``i`` becomes a copy of held row ``parents[i]``."""
        for name in ("_hidden", "_length", "_position", "_depth", "_on_stack", "_open"):
            setattr(self, name, getattr(self, name).index_select(0, parents))
        self._cache.select_rows(parents)

    def _compact(self, slots: int) -> None:
        """Drop the slots off the stack (padding, and positions that a COMPOSE popped): no later
        position attends them. Each hypothesis's stack moves left, in order, into ``slots``."""
        order = live_first_order(self._on_stack, slots)
        for name in ("_position", "_depth", "_on_stack", "_open"):
            setattr(self, name, getattr(self, name).gather(1, order))
        self._cache.gather_slots(order)


def _used_columns(
    batch: Batch | dict[str, Tensor], memories: list[Tensor] | None
) -> tuple[dict[str, Tensor], list[Tensor] | None]:
    """A batch of stream segments without the columns no row uses, and its memories to match.

    Stream batches are as wide as a segment, with a memory of ``memory_length`` slots, even when
    their rows are short sentences that fit a segment (a corpus streams as soon as one sequence is
    longer than a segment). The segment positions after the last one any row holds and the memory
    slots before the first one any row holds are attended by nobody: dropping them leaves every
    score the same. The next memory's sources, indices into ``[memory; segment]``, move with the
    memory's first slot; the next memory keeps its full ``memory_length`` slots."""
    names = [name for name in (*_SEGMENT_FIELDS, *_MEMORY_FIELDS) if name in batch]
    tensors = {name: batch[name] for name in names}
    if "memory_position" not in tensors:
        return tensors, memories  # shuffled batches are cut to their longest row already
    used = (tensors["position"] >= 0).any(dim=0).nonzero()
    width = int(used.max()) + 1 if len(used) else 1
    for name in _SEGMENT_FIELDS:
        tensors[name] = tensors[name][:, :width]
    if memories is None:
        return tensors, memories  # a first segment: no memory is read, the sources count all slots
    held = (tensors["memory_position"] >= 0).any(dim=0).nonzero()
    first = int(held.min()) if len(held) else tensors["memory_position"].shape[1]
    for name in ("memory_position", "memory_depth", "memory_popped_at"):
        tensors[name] = tensors[name][:, first:]
    source = tensors["next_memory_source"]
    tensors["next_memory_source"] = torch.where(source >= 0, source - first, source)
    return tensors, [memory[:, first:] for memory in memories]


def _id_mask(size: int, ids, device) -> Tensor:
    mask = torch.zeros(size, dtype=torch.bool, device=device)
    mask[list(ids)] = True
    return mask


def _joined(sequences: list[TGSequence]) -> TGSequences:
    """Sequences as one corpus of their own (``popped_at`` counts from its sequence's start, so it
    carries over unchanged)."""
    lengths = [len(sequence) for sequence in sequences]
    values = {
        name: np.concatenate([getattr(sequence, name) for sequence in sequences]) for name in _SEQUENCE_FIELDS
    }
    return TGSequences(
        variant=sequences[0].variant,
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        **values,
    )
