"""GPT-2-style transformers over words or RNNG actions: the plain LM, PLM, PLM-mask and SCLM
(structural guidance paper, Qian et al. 2021, §2; the authors' code is IBM/transformers-struct-guidance).

One model, five readings of a tree, chosen by ``config.model``:

- ``lm``: ``<s> w_1 .. w_n </s>`` (words as vocabulary pieces); loss on every piece and on ``</s>``:
  ``p(x) = ∏_t p(x_t | x_<t)`` (Eq. 1).
- ``plm``: ``<s>`` + the RNNG actions ``NT(X) .. words .. REDUCE`` (a word as its pieces, an
  ``NT(X)`` or ``REDUCE`` one token); loss on every action: the joint ``p(x, y) = ∏_t p(a_t | a_<t)``
  (Eq. 2, 6). No end symbol: the ``REDUCE`` that closes the root ends the sequence.
- ``plm-mask``: PLM with two heads of every layer restricted by the parser state after each action
  (§2.2): head 0 (buffer) sees only what precedes the innermost open constituent, head 1 (stack)
  only that constituent; the other heads are causal. The masks are built on the device from the
  per-position ``open_start`` field (``structure.plm_mask``); they replace ``M`` in Eq. 5 per head.
- ``sclm-past`` / ``sclm-next``: the ``lm`` input plus a scaffold: a second softmax over action
  n-grams on the last hidden state (Eq. 7), labelled as ``structure.sclm.scaffold_labels`` says.
  Objective ``(1 − α)·lm + α·scaffold`` (Eq. 8, α = ``scaffold_weight``); words are scored with the
  LM head alone.

The blocks are ``layers.TransformerStack`` (pre-LN by default, GELU feed-forward), with learned
absolute positions added to the token embeddings (GPT-2; ``positions="none"``: no position
information but the causal mask's), and the output layer tied to the token embeddings
(``tie_embeddings``). Softmaxes run over the whole vocabulary, as in the authors' code.

Search and sampling drive the model through ``action_grammar()`` and ``decoder()``
(``models.decoding``): an ``ActionLMDecoder`` holds ``n`` prefixes with each layer's keys and
values, and for plm-mask the ``open_start`` of every position held, so that one more token costs
one position of the network, not a pass over the whole prefix. It reads ``KEEP`` (a prefix left
as it is), so beam search holds prefixes of different lengths in one decoder.

Training data (``prepare``): trees with more than ``max_actions`` RNNG actions, with an empty
constituent, or longer than ``max_length`` positions are skipped, as the authors' oracle skips
them, whatever the model, so that all five train on the same sentences; a ``SkippedTreesWarning``
says how many.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus, pad_rows
from syntaxlm.errors import ActionSequenceError, TreeError
from syntaxlm.models.base import (
    AttentionMap,
    ConfigError,
    LossOutput,
    ModelConfig,
    SyntacticLM,
    TransformerConfig,
    missing_symbols,
)
from syntaxlm.models.decoding import KEEP, ActionGrammar, Decoder, moving_first, symbol_ids, words_grammar
from syntaxlm.models.layers.attention import record_attention
from syntaxlm.models.layers.transformer import KeyValueCache, TransformerStack, live_first_order
from syntaxlm.models.scoring import (
    ScoringItem,
    evaluating,
    padded,
    reject_trees,
    sentence_item,
    word_pieces,
)
from syntaxlm.structure.actions import (
    ActionKind,
    Actions,
    encode_actions,
    read_actions,
    tree_to_actions,
)
from syntaxlm.structure.plm_mask import (
    NOT_AN_ACTION,
    PlmMaskInput,
    attention_head_masks,
    open_constituent_starts,
    plm_mask_input,
)
from syntaxlm.structure.sclm import ActionNgramVocab, scaffold_labels
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID
from syntaxlm.text.symbols import REDUCE
from syntaxlm.trees.tree import Tree

MODELS = ("lm", "plm", "plm-mask", "sclm-past", "sclm-next")
POSITIONS = ("learned", "none")
ACTION_MODELS = ("plm", "plm-mask")
SCAFFOLD_DIRECTIONS = {"sclm-past": "past", "sclm-next": "next"}
NGRAMS = "ngrams"  # the name of the SCLM label vocabulary among the model's vocabularies


class SkippedTreesWarning(UserWarning):
    """``prepare`` left out trees it cannot train on (too many actions, an empty constituent, too long)."""


@dataclass
class ActionLMConfig(TransformerConfig):
    """``model`` is one of ``MODELS``; the other fields are those of a GPT-2-style transformer
    (``positions``: ``"learned"`` absolute positions, GPT-2's, or ``"none"``), plus
    ``scaffold_weight`` (SCLM's α) and ``max_actions`` (training trees with more RNNG actions are
    skipped)."""

    model: str = "lm"
    attention_dropout: float = 0.1
    max_length: int = 1024
    positions: str = "learned"
    pre_ln: bool = True
    tie_embeddings: bool = True
    scaffold_weight: float = 0.5
    max_actions: int = 500

    def check(self) -> None:
        if self.model not in MODELS:
            raise ConfigError(
                f"model.model {self.model!r} is not an action LM; expected one of {', '.join(MODELS)}"
            )
        super().check()
        if self.model == "plm-mask" and self.n_heads < 2:
            raise ConfigError(
                f"model.n_heads must be at least 2 for plm-mask (a buffer and a stack head), got {self.n_heads}"
            )
        if not 0 <= self.attention_dropout < 1:
            raise ConfigError(f"model.attention_dropout must be in [0, 1), got {self.attention_dropout}")
        if self.max_length < 2:
            raise ConfigError(f"model.max_length must be at least 2 positions, got {self.max_length}")
        if self.positions not in POSITIONS:
            raise ConfigError(
                f"model.positions must be one of {', '.join(POSITIONS)}, got {self.positions!r}"
            )
        if not 0 <= self.scaffold_weight < 1:
            raise ConfigError(
                f"model.scaffold_weight (α) must be in [0, 1): the LM part weighs 1 − α, got {self.scaffold_weight}"
            )
        if self.max_actions < 1:
            raise ConfigError(f"model.max_actions must be at least 1, got {self.max_actions}")


class ActionLM(SyntacticLM):
    """The plain LM, PLM, PLM-mask and SCLM (see the module docstring)."""

    config_class: ClassVar[type[ModelConfig]] = ActionLMConfig
    config: ActionLMConfig

    def __init__(self, config: ActionLMConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        self.reads_actions = config.model in ACTION_MODELS
        self.direction = SCAFFOLD_DIRECTIONS.get(config.model)
        vocab = self.vocab
        if self.reads_actions and REDUCE not in vocab.symbols:
            raise ConfigError(
                f"{config.model} reads RNNG actions, but the vocabulary has no {REDUCE} symbol; "
                "build it with the treebank's rnng (or both) nonterminal symbols"
            )
        if self.direction and NGRAMS not in self.vocabularies:
            raise ConfigError(
                f"{config.model} needs the {NGRAMS!r} vocabulary of action n-grams "
                "(ActionLM.vocabularies_for makes it from the training trees)"
            )

        d = config.d_model
        self.token_embedding = nn.Embedding(len(vocab), d)
        self.position_embedding = (
            nn.Embedding(config.max_length, d) if config.positions == "learned" else None
        )
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.transformer = TransformerStack(
            config.n_layers,
            d,
            config.n_heads,
            config.d_ff,
            config.dropout,
            attention_dropout=config.attention_dropout,
            relative=False,
            pre_ln=config.pre_ln,
        )
        # Tied: the logits are computed with the token embeddings (Eq. 6), no second matrix.
        self.lm_head = None if config.tie_embeddings else nn.Linear(d, len(vocab), bias=False)
        self.scaffold_head = nn.Linear(d, len(self.vocabularies[NGRAMS])) if self.direction else None
        self._init_weights()

    def _init_weights(self) -> None:
        """GPT-2: N(0, 0.02) weights, zero biases, residual projections scaled by 1/√(2·n_layers)."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
        residual_std = 0.02 / math.sqrt(2 * self.config.n_layers)
        for block in self.transformer.blocks:
            nn.init.normal_(block.attention.out.weight, std=residual_std)
            nn.init.normal_(block.ff[-1].weight, std=residual_std)

    # --- vocabularies -------------------------------------------------------------------------

    @classmethod
    def vocabularies_for(cls, config: ModelConfig, trees: Sequence[Any], vocab) -> dict[str, Any]:
        """The text vocabulary, and for SCLM the action n-grams of the (usable) training trees."""
        if config.model not in SCAFFOLD_DIRECTIONS:
            return {"vocab": vocab}
        usable = (actions for actions in map(_rnng_actions, trees) if actions is not None)
        return {"vocab": vocab, NGRAMS: ActionNgramVocab.build(usable)}

    @classmethod
    def load_vocabularies(cls, folder: Path, names: Sequence[str]) -> dict[str, Any]:
        loaded = super().load_vocabularies(folder, [name for name in names if name != NGRAMS])
        if NGRAMS in names:
            loaded[NGRAMS] = ActionNgramVocab.load(Path(folder) / NGRAMS)
        return loaded

    @property
    def loss_weights(self) -> dict[str, float]:
        if self.direction:
            alpha = self.config.scaffold_weight
            return {"lm": 1.0 - alpha, "scaffold": alpha}  # Eq. 8 with the authors' α
        return {"lm": 1.0}

    # --- the network --------------------------------------------------------------------------

    def forward(self, inputs: Tensor, open_start: Tensor | None = None) -> Tensor:
        """Last hidden states ``[B, L, d]`` of ``inputs`` ``[B, L]`` (``open_start`` ``[B, L]`` for
        plm-mask: where the innermost open constituent after each position began, −1 if none)."""
        length = inputs.shape[1]
        if length > self.config.max_length:
            raise ValueError(
                f"a sequence of {length} positions is longer than max_length {self.config.max_length}"
            )
        x = self.input_vectors(inputs, torch.arange(length, device=inputs.device))
        hidden, _ = self.transformer(self.embedding_dropout(x), self.attention_mask(length, open_start))
        return hidden

    def input_vectors(self, tokens: Tensor, positions: Tensor) -> Tensor:
        """The first block's input: token embeddings ``[..., L, d]`` of ``tokens`` plus, with
        learned positions, the embeddings of their ``positions`` ``[..., L]`` (or ``[L]``)."""
        x = self.token_embedding(tokens)
        return x if self.position_embedding is None else x + self.position_embedding(positions)

    def attention_mask(self, length: int, open_start: Tensor | None = None) -> Tensor:
        """``True`` = may attend: causal ``[1, 1, L, L]``, or for plm-mask ``[B, H, L, L]`` with the
        buffer (0) and stack (1) heads restricted by ``open_start``. Right padding needs no mask:
        padded keys lie in the future of every real position."""
        device = self.token_embedding.weight.device
        positions = torch.arange(length, device=device)
        if self.config.model != "plm-mask":
            return (positions[None, :] <= positions[:, None])[None, None]
        if open_start is None:
            raise ValueError("plm-mask needs open_start, the parser state of every position")
        return attention_head_masks(open_start.to(device), positions, positions, self.config.n_heads)

    def lm_logits(self, hidden: Tensor) -> Tensor:
        """Scores over the vocabulary (Eq. 6): hidden states times the (tied) output embeddings."""
        if self.lm_head is None:
            return F.linear(hidden, self.token_embedding.weight)
        return self.lm_head(hidden)

    # --- training -----------------------------------------------------------------------------

    def prepare(self, trees: Sequence[Tree]) -> RowCorpus:
        """Rows ``inputs``/``labels`` (``labels[t]`` = the token after ``inputs[t]``, 0 = none), plus
        ``open_start`` for plm-mask and ``scaffold`` (n-gram label id + 1, 0 = none) for SCLM.

        SCLM rows: ``inputs`` ``<s> p_1 .. p_P`` with one scaffold label per position; the label of
        ``<s>`` in sclm-past is the pad label, counted as in the authors' loss.
        """
        rows: dict[str, list[np.ndarray]] = {"inputs": [], "labels": []}
        if self.config.model == "plm-mask":
            rows["kinds"] = []  # turned into the open_start field below
        if self.direction:
            rows["scaffold"] = []
        skipped = {"too_many_actions": 0, "empty_constituent": 0, "too_long": 0}
        meaning = {
            "too_many_actions": f"with more than max_actions {self.config.max_actions} actions; dropped",
            "empty_constituent": "with an empty constituent; dropped",
            "too_long": f"longer than max_length {self.config.max_length} positions; dropped",
        }
        n_trees = 0
        for index, tree in enumerate(trees):
            n_trees += 1
            actions = _rnng_actions(tree)
            problem = None
            if actions is None:
                problem = "empty_constituent"
            elif len(actions) > self.config.max_actions:
                problem = "too_many_actions"
            else:
                row = self._training_row(tree, actions)
                if len(row["inputs"]) > self.config.max_length:
                    problem = "too_long"
            if problem is not None:
                skipped[problem] += 1
                self.report_problem(problem, index, meaning[problem])
                continue
            for name, values in row.items():
                rows[name].append(values)
        if any(skipped.values()):
            warnings.warn(
                f"prepare skipped {sum(skipped.values())} of {n_trees} trees: "
                f"{skipped['too_many_actions']} with more than {self.config.max_actions} actions, "
                f"{skipped['empty_constituent']} with an empty constituent, "
                f"{skipped['too_long']} longer than max_length {self.config.max_length} positions",
                SkippedTreesWarning,
                stacklevel=2,
            )
        lengths = np.array([len(inputs) for inputs in rows["inputs"]], dtype=np.int64)
        kinds = rows.pop("kinds", None)
        fields = {name: pad_rows(values, dtype=np.int32) for name, values in rows.items()}
        fill = {}
        if kinds is not None:
            fields["open_start"], fill["open_start"] = open_starts(kinds), -1
        targets = {"lm": "labels", "scaffold": "scaffold"} if self.direction else {"lm": "labels"}
        return RowCorpus(fields, lengths, target_fields=targets, order="shuffled", fill=fill)

    def unknown_nonterminals(self, trees: Sequence[Tree]) -> dict[int, list[str]]:
        """The RNNG symbols the vocabulary lacks, for the models that read actions."""
        if not self.reads_actions:
            return {}
        return missing_symbols(trees, self.vocab, "rnng")

    def _training_row(self, tree: Tree, actions: Actions) -> dict[str, np.ndarray]:
        if self.reads_actions:
            ids, kinds, _ = self._action_sequence(actions)
            row = {"inputs": ids[:-1], "labels": ids[1:]}
            if self.config.model == "plm-mask":
                row["kinds"] = kinds[:-1]
            return row
        if self.direction:
            scaffold = scaffold_labels(
                actions, self.vocab, self.vocabularies[NGRAMS], direction=self.direction
            )
            ids = scaffold.ids
            return {"inputs": ids, "labels": np.append(ids[1:], EOS_ID), "scaffold": scaffold.labels + 1}
        ids, _ = word_pieces(self.vocab, actions.words)
        return {"inputs": np.concatenate(([BOS_ID], ids)), "labels": np.append(ids, EOS_ID)}

    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """NLL sums (nats): ``lm`` over the targets of ``labels`` (every action for PLM), and for SCLM
        ``scaffold`` over the n-gram labels; counts are the global batch's (``batch.counts``)."""
        device = self.token_embedding.weight.device
        inputs = batch["inputs"].to(device).long()
        labels = batch["labels"].to(device).long()
        open_start = batch["open_start"].to(device) if self.config.model == "plm-mask" else None
        hidden = self(inputs, open_start)
        is_target = labels != PAD_ID
        sums = {"lm": F.cross_entropy(self.lm_logits(hidden[is_target]), labels[is_target], reduction="sum")}
        if self.direction:
            scaffold = batch["scaffold"].to(device).long()
            has_label = scaffold != 0
            logits = self.scaffold_head(hidden[has_label])
            sums["scaffold"] = F.cross_entropy(logits, scaffold[has_label] - 1, reduction="sum")  # Eq. 7
        return LossOutput(sums=sums, counts=dict(batch.counts))

    # --- scoring ------------------------------------------------------------------------------

    def scoring_items(self, sentences: list[list[str]], trees: Sequence[Tree] | None) -> list[ScoringItem]:
        """``lm`` and SCLM: ``<s>`` + pieces → pieces + ``</s>`` (SCLM scored by its LM head alone).
        ``plm`` and ``plm-mask`` model the joint ``p(x, y)``: ``<s>`` + the actions under ``trees=``
        (one per sentence, whose leaves are the sentence); a structure action counts toward the next
        word, the closing ``REDUCE``s after the last word toward the end entry."""
        if not self.reads_actions:
            reject_trees(self.config.model, trees)
            items = [sentence_item(*word_pieces(self.vocab, words), len(words)) for words in sentences]
        elif trees is None:
            raise ValueError(
                f"{self.config.model} is a joint model of words and trees: give trees= (one per "
                "sentence) to score words under a tree; marginalising over trees belongs to syntaxlm.inference"
            )
        else:
            trees = list(trees)
            if len(trees) != len(sentences):
                raise ValueError(f"got {len(trees)} trees for {len(sentences)} sentences")
            items = [self._joint_item(i, *pair) for i, pair in enumerate(zip(sentences, trees))]
        for index, item in enumerate(items):
            if len(item.inputs) > self.config.max_length:
                raise ValueError(
                    f"sentence {index}: {len(item.inputs)} positions exceed max_length {self.config.max_length}"
                )
        return items

    def _joint_item(self, index: int, words: Sequence[str], tree: Tree) -> ScoringItem:
        """``<s>`` + actions under ``tree``; a structure action counts toward the next word."""
        if not isinstance(tree, Tree):
            raise TypeError(f"trees[{index}] is {type(tree).__name__}, not a Tree")
        if tree.leaves() != list(words):
            raise ValueError(f"sentence {index}: the words of trees[{index}] differ from the sentence")
        try:
            actions = tree_to_actions(tree, "rnng")
        except TreeError as error:
            raise ValueError(f"trees[{index}]: {error}") from None
        ids, kinds, word_index = self._action_sequence(actions)
        word_index = word_index[1:]  # of the targets: every position after <s>
        started = np.cumsum(_first_pieces(word_index))  # words begun up to each action
        group = np.where(word_index >= 0, word_index, started)
        return ScoringItem(ids[:-1], ids[1:], group, {"kinds": kinds[:-1]})

    def target_logprobs(self, items: list[ScoringItem]) -> list[Tensor]:
        """``log p(targets[t] | inputs[:t + 1])``, the output layer run on the real positions only."""
        device = self.token_embedding.weight.device
        inputs = padded([item.inputs for item in items], device)
        targets = padded([item.targets for item in items], device)
        open_start = None
        if self.config.model == "plm-mask":
            open_start = torch.from_numpy(open_starts([item.extra["kinds"] for item in items])).to(device)
        hidden = self(inputs, open_start)
        lengths = torch.tensor([len(item.inputs) for item in items], device=device)
        real = torch.arange(inputs.shape[1], device=device)[None, :] < lengths[:, None]
        logprobs = self.lm_logits(hidden[real]).float().log_softmax(-1)
        return list(logprobs.gather(-1, targets[real][:, None])[:, 0].cpu().split(lengths.tolist()))

    # --- what the figures draw ----------------------------------------------------------------

    def structure_mask(self, tree: Tree) -> PlmMaskInput:
        """PLM-mask: ``<s>`` + the RNNG actions of ``tree`` with each position's parser state, whose
        ``head_masks`` restrict the buffer and stack heads; ``ValueError`` beyond ``max_length``."""
        if self.config.model != "plm-mask":
            return super().structure_mask(tree)
        return self._figure_input(tree.leaves(), tree)[1]

    def attention_maps(self, words: Sequence[str], tree: Tree | None = None) -> list[AttentionMap]:
        """Each layer's attention over ``<s>`` + the word pieces of ``words`` (lm, SCLM) or + the
        RNNG actions of ``tree`` (PLM, PLM-mask), recorded in one pass; ``ValueError`` beyond
        ``max_length``."""
        ids, read = self._figure_input(words, tree)
        starts = None
        if self.config.model == "plm-mask":
            starts = torch.from_numpy(read.open_start.astype(np.int64))[None].to(self.device)
        with evaluating(self), record_attention(self) as recorded:
            self(torch.from_numpy(ids)[None].long().to(self.device), starts)
        mask = self.attention_mask(len(ids), starts)[0].cpu().numpy()
        tokens = [self.vocab.token(int(i)) for i in ids]
        return [
            AttentionMap(tokens, recorded[f"transformer.blocks.{layer}.attention"][0][0].cpu().numpy(), mask)
            for layer in range(self.config.n_layers)
        ]

    def _figure_input(
        self, words: Sequence[str], tree: Tree | None
    ) -> tuple[np.ndarray, PlmMaskInput | None]:
        """The ids the figures read (``<s>`` first) and, for PLM and PLM-mask, ``plm_mask_input``."""
        read = None
        if self.reads_actions:
            read = plm_mask_input(encode_actions(tree_to_actions(tree, "rnng"), self.vocab))
            ids = read.ids.astype(np.int64)
        else:
            ids = np.concatenate(([BOS_ID], word_pieces(self.vocab, words)[0])).astype(np.int64)
        if len(ids) > self.config.max_length:
            raise ValueError(
                f"the input is {len(ids)} positions, more than the model's {self.config.max_length}"
            )
        return ids, read

    # --- incremental decoding -----------------------------------------------------------------

    def action_grammar(self) -> ActionGrammar:
        """PLM and PLM-mask: every ``NT(X)`` of the vocabulary opens ``X`` and ``REDUCE`` closes
        whatever is open; the ``REDUCE`` that closes the root ends the sequence. The plain LM and
        SCLM: words only, ending with ``</s>``."""
        vocab = self.vocab
        if not self.reads_actions:
            return words_grammar(vocab)
        symbols = read_actions(vocab.symbols, "rnng")
        open_label = {
            vocab.index(token): token[len("NT(") : -len(")")]
            for token, kind in zip(symbols.tokens, symbols.kinds)
            if kind == ActionKind.OPEN
        }
        reduce = {vocab.index(REDUCE): None}
        return ActionGrammar(
            len(vocab), open_label, reduce, style="rnng", ends_with_eos=False, symbol_ids=symbol_ids(vocab)
        )

    def longest_sentence(self) -> int:
        """Learned absolute positions stop at ``max_length``: the start, the pieces and the end
        (``</s>``, or for the joint models the root's opening and closing actions) must fit; the
        decoder reads every token it scores."""
        return self.config.max_length - (3 if self.reads_actions else 2)

    def decoder(self) -> ActionLMDecoder:
        """An incremental decoder over this model; ``start(n)`` it before use."""
        return ActionLMDecoder(self)

    # --- encoding -----------------------------------------------------------------------------

    def _action_sequence(self, actions: Actions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``<s>`` + the encoded actions: piece ids, kinds (``NOT_AN_ACTION`` for ``<s>``) and the
        word of each piece (−1 for ``<s>`` and NT/REDUCE)."""
        encoded = encode_actions(actions, self.vocab)
        ids = np.concatenate(([BOS_ID], encoded.ids)).astype(np.int32)
        kinds = np.concatenate(([NOT_AN_ACTION], encoded.kinds)).astype(np.int8)
        word_index = np.concatenate(([-1], encoded.word_index)).astype(np.int32)
        return ids, kinds, word_index


class ActionLMDecoder(Decoder):
    """``n`` prefixes of an ``ActionLM``, extended one token at a time (``models.decoding.Decoder``).

    Held per prefix, in key slots ``[n, S]``: each layer's keys and values (``TransformerStack.step``)
    and the sequence position of every slot (−1: padding); per prefix its number of positions, and
    for plm-mask the ``open_start`` of each of its positions (indexed by position), as
    ``open_constituent_starts`` gives it for the whole sequence. A new position's ``open_start``
    follows from its token: ``NT(X)`` opens a constituent at the new position; ``REDUCE`` closes the
    innermost one, opened at ``s``, and what stays open is what was innermost just before it,
    ``open_start[s − 1]``; a word piece changes nothing. The held values are thus the stack of open
    constituents.

    Every call appends one slot to every prefix. A token sits there at its prefix's own next
    position (with that position's embedding); a ``KEEP`` token leaves its prefix as it was, and its
    slot is padding, never attended (``supports_keep``, as in ``TGDecoder``), so prefixes of
    different lengths grow side by side. The prefixes that move are held first (``_row`` maps the
    caller's order to the held one) and only they run through the network. A position attends to
    its own prefix's positions (causal), for plm-mask head by head as ``attention_head_masks`` says
    for its position and ``open_start``. Padding slots are dropped when they pile up, so the slots
    stay close to the longest prefix.

    The network runs without gradients and with dropout off, whatever mode the model is in. Each
    step costs one position: attention over the ``S`` slots held, ``O(n·S·d)``, plus the
    position's own ``O(n·d²)`` (and ``O(n·d·V)`` for ``logits``).
    """

    supports_keep = True

    def __init__(self, model: ActionLM):
        self.model = model
        self.masked = model.config.model == "plm-mask"
        self.device = model.token_embedding.weight.device
        grammar = model.action_grammar()
        kinds = torch.full((grammar.vocab_size,), ActionKind.WORD, dtype=torch.long)
        kinds[list(grammar.open_label)] = ActionKind.OPEN
        kinds[list(grammar.close_label)] = ActionKind.CLOSE
        self._kind_of_id = kinds.to(self.device)
        self.length = 0  # positions held by the longest prefix, <s> included
        self._cache: KeyValueCache | None = None
        self._row: Tensor | None = None  # [n]: the row holding each prefix (moving prefixes first)
        self._position: Tensor | None = None  # [n, S]: each slot's position in its prefix, −1 = padding
        self._length: Tensor | None = None  # [n]: positions held per prefix
        self._open_start: Tensor | None = None  # [n, ≥ length], by position; plm-mask only
        self._padded = False  # whether a slot may be padding (a KEEP since start)
        self._hidden: Tensor | None = None  # [n, d]: last hidden state of each prefix's newest position

    @property
    def size(self) -> int:
        return 0 if self._hidden is None else self._hidden.shape[0]

    def _start(self, n: int) -> None:
        self.length, self._padded, self._hidden = 1, False, None
        self._cache = self.model.transformer.key_value_cache(n)
        self._row = torch.arange(n, device=self.device)  # where each prefix is held
        self._position = torch.zeros(n, 1, dtype=torch.long, device=self.device)  # <s> at position 0
        self._length = torch.ones(n, dtype=torch.long, device=self.device)
        if self.masked:
            self._open_start = torch.full((n, 1), -1, dtype=torch.long, device=self.device)
        self._run(torch.full((n,), BOS_ID, dtype=torch.long, device=self.device))

    def _logprobs(self) -> Tensor:
        """``[n, V]`` natural-log ``p(next token | prefix)``, float32, computed on each call."""
        return self._logits(None).log_softmax(-1)

    def _logits(self, rows: Tensor | None) -> Tensor:
        hidden = self._hidden[self._row if rows is None else self._row[rows]]
        return self.model.lm_logits(hidden).float()

    def _advance(self, parents: Tensor, tokens: Tensor) -> None:
        n = self.size
        kept = tokens == KEEP
        rows = self._row[parents]
        run_tokens = torch.where(kept, PAD_ID, tokens)
        length = self._length[rows]
        too_long = ~kept & (length >= self.model.config.max_length)
        nothing_open = torch.zeros_like(kept)
        if self.masked:
            new_open_start, nothing_open = self._next_open_start(rows, run_tokens, length)
        order, row = moving_first(kept)
        held = rows[order]
        same = kept.new_zeros(())
        if len(parents) == n:
            same = (held == torch.arange(n, device=self.device)).all()
        # One transfer from the device for everything decided on the host.
        flags = torch.stack(
            [
                too_long.any(),
                nothing_open.any(),
                same,
                kept.sum(),
                F.pad(length, (0, 1)).amax(),  # the longest prefix selected (0 if none)
                F.pad(length + ~kept, (0, 1)).amax(),  # ... after this step
            ]
        ).tolist()
        any_too_long, any_nothing_open, same, n_kept, longest, longest_after = flags
        if any_too_long:
            first = int(too_long.nonzero()[0, 0])
            raise ValueError(
                f"prefix {first} already holds {int(length[first])} positions, the model's max_length; "
                "there is no position left for another token"
            )
        if any_nothing_open:
            first = int(nothing_open.nonzero()[0, 0])
            raise ActionSequenceError(
                f"prefix {first}: a closer with no open constituent", action=int(length[first]) - 1
            )

        kept, run_tokens, length = kept[order], run_tokens[order], length[order]
        self._row = row
        if not same:
            self._select(held)
        if self._position.shape[1] - longest > max(16, longest // 4):  # as TGDecoder
            self._compact(int(longest))
        # The new slot: the token at its prefix's next position, or padding for a kept prefix.
        self._position = torch.cat([self._position, torch.where(kept, -1, length)[:, None]], dim=1)
        self._length = length + ~kept
        if self.masked:
            if self._open_start.shape[1] <= longest:
                self._open_start = F.pad(self._open_start, (0, 1), value=-1)
            # A kept prefix writes past its end, where its next position will write again.
            self._open_start = self._open_start.scatter(1, length[:, None], new_open_start[order, None])
        self._padded = self._padded or n_kept > 0
        self.length = int(longest_after)
        self._run(run_tokens[: len(order) - n_kept])

    def row_mask(self) -> Tensor:
        """``True`` = may attend, for the newest position of every prefix over the ``S`` slots held:
        its own positions, ``[1, 1, 1, S]`` while no slot is padding, else ``[n, 1, 1, S]``; for
        plm-mask ``[n, H, 1, S]``, the row of ``attention_head_masks`` for its position and
        ``open_start``, without the padding slots."""
        slots = self._position.shape[1]
        if not self.masked:
            if not self._padded:
                return torch.ones(1, 1, 1, slots, dtype=torch.bool, device=self.device)
            return (self._position >= 0)[:, None, None, :]
        newest = (self._length - 1)[:, None]
        open_start = self._open_start.gather(1, newest)
        masks = attention_head_masks(open_start, newest, self._position, self.model.config.n_heads)
        # A padding slot (position −1) lies in every row's causal past: masked out here.
        return masks & (self._position >= 0)[:, None, None, :] if self._padded else masks

    def _run(self, tokens: Tensor) -> None:
        """The network on the newest slot of the first ``len(tokens)`` prefixes held, ``tokens``
        at the slot's position (the other prefixes, kept, get a padding slot)."""
        model = self.model
        if len(tokens) == 0:  # nothing moves: nothing to run (the blocks take no empty batch)
            self._cache.append(1)
            if self._hidden is None:
                self._hidden = model.token_embedding.weight.new_zeros(0, model.config.d_model)
            return
        moving = slice(0, len(tokens))
        position = self._position[moving, -1]
        x = model.input_vectors(tokens[:, None], position[:, None])
        hidden = model.transformer.step(
            model.embedding_dropout(x),
            self.row_mask()[moving],
            self._cache,
            kernel="math" if self.device.type == "cpu" else "sdpa",
        )
        if self._hidden is None or len(self._hidden) == len(tokens):
            self._hidden = hidden[:, 0]
        else:
            self._hidden[moving] = hidden[:, 0]

    def _next_open_start(self, parents: Tensor, tokens: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
        """``open_start`` of the new position after each token (class docstring), and which tokens
        close a constituent when none is open; ``length``: positions held by each parent."""
        held = self._open_start
        current = held[parents, length - 1]
        kind = self._kind_of_id[tokens]
        closes = kind == ActionKind.CLOSE
        enclosing = held[parents, (current - 1).clamp(min=0)]
        after = torch.where(closes, enclosing, current)
        return torch.where(kind == ActionKind.OPEN, length, after), closes & (current < 0)

    def _select(self, parents: Tensor) -> None:
        """Prefix ``i`` becomes a copy of ``parents[i]`` (all but ``_length``, which ``advance`` sets)."""
        self._position = self._position.index_select(0, parents)
        self._hidden = self._hidden.index_select(0, parents)
        if self.masked:
            self._open_start = self._open_start.index_select(0, parents)
        self._cache.select_rows(parents)

    def _compact(self, slots: int) -> None:
        """Drop padding slots: each prefix's positions move left, in order, into ``slots`` slots."""
        order = live_first_order(self._position >= 0, slots)
        self._position = self._position.gather(1, order)
        self._cache.gather_slots(order)


def _rnng_actions(tree: Tree) -> Actions | None:
    """The RNNG actions of ``tree``, or ``None`` if it has an empty constituent (skipped)."""
    try:
        return tree_to_actions(tree, "rnng")
    except TreeError:
        return None


def _first_pieces(word_index: np.ndarray) -> np.ndarray:
    """Whether each position is the first piece of a word (``word_index`` −1 = not a word)."""
    previous = np.concatenate(([-1], word_index[:-1]))
    return (word_index >= 0) & (word_index != previous)


def open_starts(kinds: list[np.ndarray], chunk: int = 1024) -> np.ndarray:
    """``open_constituent_starts`` of ragged rows of kinds, as one ``[R, longest]`` int32 array (−1
    beyond a row's end), computed a chunk of rows at a time."""
    lengths = np.array([len(row) for row in kinds], dtype=np.int64)
    padded = pad_rows(kinds, fill=NOT_AN_ACTION, dtype=np.int8)
    starts = [open_constituent_starts(padded[i : i + chunk]) for i in range(0, len(padded), chunk)]
    starts = np.concatenate(starts) if starts else padded.astype(np.int32)
    return np.where(np.arange(padded.shape[1])[None, :] < lengths[:, None], starts, -1).astype(np.int32)
