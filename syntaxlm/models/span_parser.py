"""A discriminative constituency parser: the proposal distribution ``q(y | x)`` of the joint models.

The TG paper estimates a joint model's ``p(x)`` and reranks parses with trees proposed by a
separately trained discriminative parser (Sartran et al. 2022, §3.1–3.2; theirs is an RNNG). This
one is a span-based CRF (Stern et al. 2017's span features, Zhang et al. 2020's tree CRF), chosen
because it gives what importance sampling needs exactly: samples from ``q(y | x)`` and ``log q``
of each, with ``Z`` from the inside algorithm (``models.span_chart``).

- Encoder: the words' vocabulary pieces (subwords, or words with UNK classes) embedded, between
  ``<s>`` and ``</s>``, through a bidirectional LSTM. Word pooling: the boundary before word
  ``i`` is the forward state at the last piece of word ``i − 1`` (``<s>`` for the first) and the
  backward state at the first piece of word ``i`` (``</s>`` after the last), so a span's
  features depend on its words' pieces only through the LSTM.
- Span scores (Stern et al. §3): the span ``[i, j)`` is ``[f_j − f_i; b_i − b_j]`` of its boundaries'
  forward and backward states, then a hidden layer (LayerNorm, ReLU) and one score per chain label
  and for ``NO_LABEL`` (``structure.spans``). The first layer is linear in the difference, so it is
  computed once per boundary and subtracted; dropout acts on the LSTM's states, not on the
  ``O(n²)`` span layer (the costliest tensors of a step).
- Trees: labelled, in the label set of the training trees (unary chains as one label; n-ary nodes
  recovered from the binary reading); no POS tags. ``q(y | x) ∝ exp Σ_{nodes} s[i, j, c]``.
- Training: the CRF's negative log-likelihood ``log Z − s(y_gold)``, summed per batch and
  divided by words (``validation_part`` ``tree``, nats per word); the baseline is the uniform
  distribution over the trees of each validation sentence (every score 0).

``parse`` gives the Viterbi tree (``k = 1``) or the ``k`` best, ``sample`` exact samples, each with
``log q(y | x)``; ``tree_logprobs`` gives ``log q`` of given trees.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus, pad_rows
from syntaxlm.errors import TreeError
from syntaxlm.models.base import ConfigError, LossOutput, ModelConfig, TrainedModel
from syntaxlm.models.scoring import checked_sentences, evaluating, length_batches, word_pieces
from syntaxlm.models.span_chart import (
    TreeSampler,
    inside,
    kbest_bytes,
    kbest_trees,
    tree_counts,
    tree_scores,
)
from syntaxlm.memory import check_size, counted, readable_count
from syntaxlm.structure.spans import Span, SpanLabels, binary_spans, tree_from_spans
from syntaxlm.text.base import BOS_ID, EOS_ID, PAD_ID, load_vocabulary
from syntaxlm.trees.tree import Tree

LABELS = "labels"  # the name of the chain-label vocabulary beside the model
# Drawing until ``distinct`` different trees (``SpanParser.sample``) stops after this many draws per
# tree asked for, or once the trees drawn hold all but ``UNCOVERED`` of q's mass (a new tree would
# then take about 1 / UNCOVERED draws).
MAX_DRAWS_PER_TREE = 100
UNCOVERED = 1e-9
# Memory of sampling, per word of a sentence (``SpanParser._check_samples``): a draw being made (its
# spans and the arrays of its nodes; about 600 bytes measured) and a different tree kept (its
# ``Tree``; about 200 measured).
SAMPLE_BYTES_PER_WORD = 1024
TREE_BYTES_PER_WORD = 256
SEED_BOUND = 2**63  # seeds are 0 .. SEED_BOUND - 1 (what torch.Generator.manual_seed takes, too)


@dataclass
class SpanParserConfig(ModelConfig):
    """``d_model``: piece embeddings; ``n_layers`` BiLSTM layers of ``hidden_size`` per direction;
    ``span_hidden``: the span scorer's hidden layer; ``dropout`` on the embeddings, between and
    after the LSTM layers."""

    model: str = "parser"
    d_model: int = 100
    n_layers: int = 2
    hidden_size: int = 200
    span_hidden: int = 250
    dropout: float = 0.2

    def check(self) -> None:
        if self.model != "parser":
            raise ConfigError(f"model.model {self.model!r} is not the span parser; expected 'parser'")
        super().check()
        for name in ("hidden_size", "span_hidden"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.{name} must be at least 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class ParsedTree:
    """A tree of the parser for a sentence and its ``log q(y | x)`` (natural log)."""

    tree: Tree
    logprob: float


class SpanParser(TrainedModel):
    """The span CRF parser (module docstring)."""

    config_class: ClassVar[type[ModelConfig]] = SpanParserConfig
    validation_part: ClassVar[str] = "tree"
    target_unit: ClassVar[str] = "word"
    config: SpanParserConfig

    def __init__(self, config: SpanParserConfig, vocabularies: dict[str, Any]):
        super().__init__(config, vocabularies)
        d, h = config.d_model, config.hidden_size
        self.embedding = nn.Embedding(len(self.vocab), d, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(config.dropout)
        self.encoder = nn.LSTM(
            d, h, num_layers=config.n_layers, bidirectional=True, batch_first=True,
            dropout=config.dropout if config.n_layers > 1 else 0.0,
        )  # fmt: skip
        self.boundary = nn.Linear(2 * h, config.span_hidden, bias=False)  # W [f; −b] per boundary
        self.span_bias = nn.Parameter(torch.zeros(config.span_hidden))
        self.span_norm = nn.LayerNorm(config.span_hidden)
        self.label_scores = nn.Linear(config.span_hidden, len(self.labels))

    # --- vocabularies -------------------------------------------------------------------------

    @classmethod
    def vocabularies_for(cls, config: ModelConfig, trees: Sequence[Any], vocab) -> dict[str, Any]:
        """The text vocabulary and the chain labels of the training trees."""
        return {"vocab": vocab, LABELS: SpanLabels.of_trees(trees)}

    @classmethod
    def load_vocabularies(cls, folder: Path, names: Sequence[str]) -> dict[str, Any]:
        folder = Path(folder)
        return {
            name: SpanLabels.load(folder / name) if name == LABELS else load_vocabulary(folder / name)
            for name in names
        }

    @property
    def labels(self) -> SpanLabels:
        return self.vocabularies[LABELS]

    # --- training -----------------------------------------------------------------------------

    @property
    def loss_weights(self) -> dict[str, float]:
        return {"tree": 1.0}

    def prepare(self, trees: Sequence[Any]) -> RowCorpus:
        """One row per tree: its pieces between ``<s>`` and ``</s>``, the first and last piece of
        each word, and the nodes of its binary reading. A tree with a chain label the training
        trees lack is reported (``unknown_label``) and dropped."""
        inputs, firsts, lasts, nodes = [], [], [], []
        for index, tree in enumerate(trees):
            if not isinstance(tree, Tree):
                raise TypeError(
                    f"trees[{index}] is {type(tree).__name__}; the parser trains on constituency trees"
                )
            try:
                spans = binary_spans(tree, self.labels)
            except TreeError as error:
                self.report_problem(
                    "unknown_label", index, f"not spelled in the parser's labels ({error}); dropped"
                )
                continue
            ids, first, last = self._pieces(tree.leaves())
            inputs.append(ids)
            firsts.append(first)
            lasts.append(last)
            nodes.append(np.array([(s.start, s.end, s.label) for s in spans], dtype=np.int32).reshape(-1, 3))
        lengths = [max(len(ids), len(spans)) for ids, spans in zip(inputs, nodes)]
        fields = {
            "inputs": pad_rows(inputs, PAD_ID, np.int32),
            "word_first": pad_rows(firsts, 0, np.int32),
            "word_last": pad_rows(lasts, 0, np.int32),  # > 0 for every word: the targets
            "span_start": pad_rows([n[:, 0] for n in nodes], 0, np.int32),
            "span_end": pad_rows([n[:, 1] for n in nodes], 0, np.int32),  # 0: no node
            "span_label": pad_rows([n[:, 2] for n in nodes], 0, np.int32),
        }
        return RowCorpus(fields, np.array(lengths, dtype=np.int64), target_fields={"tree": "word_last"})

    def loss(self, batch: Batch, state: Any = None) -> LossOutput:
        """``tree``: Σ over the batch's sentences of ``log Z − s(y_gold)`` (nats)."""
        if batch["inputs"].shape[0] == 0:  # no rows for this process: a zero that reaches every parameter
            zero = sum(parameter.sum() for parameter in self.parameters()) * 0.0
            return LossOutput({"tree": zero}, dict(batch.counts), None)
        batch = batch.to(self.device)
        inputs, last = batch["inputs"].long(), batch["word_last"].long()
        lengths = (last > 0).sum(1)
        scores = self._span_scores(inputs, batch["word_first"].long(), last)
        log_z = inside(scores.float(), lengths).log_z
        start, end, label = (batch[name].long() for name in ("span_start", "span_end", "span_label"))
        rows = torch.arange(len(inputs), device=inputs.device)[:, None].expand_as(start)
        real = end > 0
        gold = scores[rows[real], start[real], end[real], label[real]].float().sum()
        return LossOutput({"tree": log_z.sum() - gold}, dict(batch.counts), None)

    def baseline_loss(self, train: RowCorpus, valid: RowCorpus) -> tuple[str, float]:
        """The uniform distribution over each validation sentence's trees, in nats per word."""
        last = valid.fields["word_last"]
        lengths = torch.as_tensor((last > 0).sum(1))
        total = 0.0
        for chosen in length_batches(lengths.tolist(), 64):
            n = int(lengths[chosen].max())
            zeros = torch.zeros(len(chosen), n + 1, n + 1, len(self.labels), dtype=torch.float64)
            total += float(inside(zeros, lengths[chosen]).log_z.sum())
        return "uniform-tree", total / max(int(lengths.sum()), 1)

    # --- the network ----------------------------------------------------------------------------

    def _pieces(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``<s>`` pieces ``</s>``, and each word's first and last piece position in them."""
        ids, word_index = word_pieces(self.vocab, words)
        positions = np.arange(1, len(ids) + 1)
        first = np.full(len(words), len(ids) + 1, dtype=np.int32)
        last = np.zeros(len(words), dtype=np.int32)
        np.minimum.at(first, word_index, positions)
        np.maximum.at(last, word_index, positions)
        return np.concatenate(([BOS_ID], ids, [EOS_ID])).astype(np.int32), first, last

    def _span_scores(self, inputs: Tensor, first: Tensor, last: Tensor) -> Tensor:
        """``[B, N + 1, N + 1, C]`` label scores of every span (module docstring); ``first``/``last``
        ``[B, N]``: each word's first and last piece position (0 past a sentence's words)."""
        n_pieces = (inputs != PAD_ID).sum(1)
        embedded = self.dropout(self.embedding(inputs))
        packed = nn.utils.rnn.pack_padded_sequence(
            embedded, n_pieces.cpu(), batch_first=True, enforce_sorted=False
        )
        states, _ = self.encoder(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=inputs.shape[1])
        states = self.dropout(states)
        h = self.config.hidden_size
        forward, backward = states[..., :h], states[..., h:]
        words = (last > 0).sum(1)
        zero = torch.zeros_like(last[:, :1])
        forward_at = torch.cat([zero, last], 1)  # boundary i: the last piece of word i − 1 (<s> for 0)
        backward_at = torch.cat([first, zero], 1)  # boundary i: the first piece of word i
        backward_at = backward_at.scatter(1, words[:, None], (n_pieces - 1)[:, None])  # </s> after the last
        f = forward.gather(1, forward_at[..., None].expand(-1, -1, h))
        b = backward.gather(1, backward_at[..., None].expand(-1, -1, h))
        g = self.boundary(torch.cat([f, -b], -1))  # [B, N + 1, H]: W [f_j − f_i; b_i − b_j] = g_j − g_i
        starts, ends = torch.triu_indices(g.shape[1], g.shape[1], offset=1, device=g.device)
        hidden = torch.relu(
            self.span_norm(g[:, ends] - g[:, starts] + self.span_bias)
        )  # the spans i < j only
        scores = g.new_zeros(g.shape[0], g.shape[1], g.shape[1], len(self.labels))
        scores[:, starts, ends] = self.label_scores(hidden)
        return scores

    def _batches(self, sentences: list[list[str]], batch_size: int) -> tuple[list, list[list[int]]]:
        """Each sentence's pieces (``_pieces``) and the batches of similar length it is scored in."""
        encoded = [self._pieces(words) for words in sentences]
        return encoded, length_batches([len(ids) for ids, _, _ in encoded], batch_size)

    def _scored_batches(self, encoded: list, batches: list[list[int]]):
        """``(indices, scores [B, N + 1, N + 1, C], lengths [B])`` per batch of ``_batches``, in eval mode."""
        for chosen in batches:
            inputs = torch.as_tensor(pad_rows([encoded[i][0] for i in chosen], PAD_ID), device=self.device)
            first = torch.as_tensor(pad_rows([encoded[i][1] for i in chosen], 0), device=self.device)
            last = torch.as_tensor(pad_rows([encoded[i][2] for i in chosen], 0), device=self.device)
            yield chosen, self._span_scores(inputs, first, last).double(), (last > 0).sum(1)

    # --- parsing ---------------------------------------------------------------------------------

    def parse(
        self, sentences: Sequence[Sequence[str]], *, k: int = 1, batch_size: int = 32
    ) -> list[list[ParsedTree]]:
        """The ``k`` best trees of every sentence, best first, each with ``log q(y | x)``
        (``k = 1``: the Viterbi tree). Fewer where a sentence has fewer trees (``tree_counts``:
        a ``k`` beyond them gives all of them). ``SizeError`` before any work when the k-best
        chart of a batch would not fit in memory (``kbest_bytes``: it grows with ``k²``)."""
        k = _positive("k", k)
        sentences = checked_sentences(sentences, batch_size)
        encoded, batches = self._batches(sentences, batch_size)
        self._check_kbest(sentences, batches, k)
        out: list[list[ParsedTree]] = [[] for _ in sentences]
        with evaluating(self):
            for chosen, scores, lengths in self._scored_batches(encoded, batches):
                log_z = inside(scores, lengths).log_z.tolist()
                for i, trees, z in zip(chosen, kbest_trees(scores, lengths, k), log_z, strict=True):
                    out[i] = [
                        ParsedTree(self._tree(sentences[i], spans), score - z) for spans, score in trees
                    ]
        return out

    def sample(
        self,
        sentences: Sequence[Sequence[str]],
        n: int,
        *,
        seed: int = 0,
        batch_size: int = 32,
        distinct: int = 0,
    ) -> list[list[ParsedTree]]:
        """``n`` independent exact samples of ``q(y | x)`` per sentence (repeats kept), each with
        ``log q(y | x)``. Each sentence draws from its own stream, seeded by ``seed`` and its words,
        so the same sentence gets the same samples wherever it stands and however the sentences
        are batched.

        ``distinct``: after the ``n`` draws, go on drawing from the same stream, ``n`` at a time,
        until ``distinct`` different trees have been drawn; every draw up to the one that brings the
        last of them is returned, in order (at least ``n``: the first ``n`` are the sample with
        replacement). The trees in order of first appearance are a
        sample *without* replacement (each next one drawn with probability ``q`` renormalised over
        the trees not yet drawn), the TG paper's proposal set (§3.1). A sentence with fewer trees
        (``tree_counts``) stops once it has drawn them all; drawing also stops short of
        ``distinct`` after ``MAX_DRAWS_PER_TREE × distinct`` draws, or when the trees drawn hold
        all but ``UNCOVERED`` of ``q``.

        ``seed``: 0 to ``2**63 − 1``. ``SizeError`` before any work when the draws would not fit
        in memory (``_check_samples``)."""
        n = _positive("n", n)
        distinct = _positive("distinct", distinct, least=0)
        seed = _seed(seed)
        sentences = checked_sentences(sentences, batch_size)
        encoded, batches = self._batches(sentences, batch_size)
        # A sentence has only so many trees: drawing goes on until it has them all at most.
        counts = tree_counts(max(map(len, sentences), default=0), len(self.labels), max(n, distinct))
        self._check_samples(sentences, counts, n, distinct)
        limit = max(n, MAX_DRAWS_PER_TREE * distinct)
        out: list[list[ParsedTree]] = [[] for _ in sentences]
        with evaluating(self):
            for chosen, scores, lengths in self._scored_batches(encoded, batches):
                sampler = TreeSampler(scores, lengths)
                for b, i in enumerate(chosen):
                    stream = np.random.default_rng([seed, zlib.crc32(" ".join(sentences[i]).encode())])
                    wanted = min(distinct, counts[len(sentences[i])])
                    out[i] = self._draws(sentences[i], sampler, b, stream, n, wanted, limit)
        return out

    def _check_kbest(self, sentences: list[list[str]], batches: list[list[int]], k: int) -> None:
        """``SizeError`` (``sizes.check_size``) when the k-best chart of some batch would not fit."""
        if not batches:
            return
        longest = [max(len(sentences[i]) for i in chosen) for chosen in batches]

        def each(value: int) -> list[int]:
            """The bytes of every batch's chart (``k`` at most its longest sentence's trees)."""
            counts = tree_counts(max(longest), len(self.labels), value)
            return [kbest_bytes(len(chosen), n, counts[n]) for chosen, n in zip(batches, longest)]

        sizes = each(k)
        worst = max(range(len(batches)), key=sizes.__getitem__)
        what = (
            f"the k-best chart of a batch of {counted(len(batches[worst]), 'sentence')} of up to "
            f"{counted(longest[worst], 'word')} "
            "(it keeps k² candidates per span)"
        )
        hint = "; smaller batches need less"
        check_size("k", k, lambda value: max(each(value)), what, device=self.device, hint=hint)

    def _check_samples(self, sentences: list[list[str]], counts: list[int], n: int, distinct: int) -> None:
        """``SizeError`` (``sizes.check_size``) when ``sample``'s draws would not fit: one round of
        ``n`` draws of the longest sentence (``SAMPLE_BYTES_PER_WORD``), and every sentence's
        different trees (``TREE_BYTES_PER_WORD``) and draws (at most ``MAX_DRAWS_PER_TREE`` per tree
        asked for, even of a sentence with fewer trees), kept until the end. ``distinct`` is named
        when it is the larger."""
        name = "distinct" if distinct > n else "n"
        longest = max(map(len, sentences), default=0)

        def need(value: int) -> int:
            draws = value if name == "n" or distinct == n else n
            wanted = value if name == "distinct" or distinct == n else distinct
            kept = sum(
                min(max(draws, wanted), counts[len(words)]) * TREE_BYTES_PER_WORD * len(words)
                + max(draws, MAX_DRAWS_PER_TREE * wanted) * 8
                for words in sentences
            )
            return draws * SAMPLE_BYTES_PER_WORD * longest + kept

        what = f"the draws of {counted(len(sentences), 'sentence')} of up to {counted(longest, 'word')}"
        check_size(name, n if name == "n" else distinct, need, what)

    def _draws(
        self, words, sampler: TreeSampler, b: int, stream, n: int, distinct: int, limit: int
    ) -> list[ParsedTree]:
        """Sentence ``b``'s draws (``sample``): ``n``, then rounds of ``n`` more until the draw that
        brings the ``distinct``-th different tree, which is the last one kept, or until ``limit``
        draws (or all but ``UNCOVERED`` of ``q``)."""
        built: dict[frozenset[Span], ParsedTree] = {}  # a tree drawn again is built once
        draws: list[ParsedTree] = []
        while True:
            for spans, logprob in sampler.draw(b, n, stream):
                key = frozenset(spans)
                if key not in built:
                    if len(built) == distinct and len(draws) >= n:
                        return draws
                    built[key] = ParsedTree(self._tree(words, spans), logprob)
                draws.append(built[key])
            if len(built) >= distinct or len(draws) + n > limit:
                return draws
            covered = np.logaddexp.reduce([tree.logprob for tree in built.values()])
            if -np.expm1(covered) <= UNCOVERED:
                return draws

    def tree_logprobs(
        self, sentences: Sequence[Sequence[str]], trees: Sequence[Tree], *, batch_size: int = 32
    ) -> list[float]:
        """``log q(y | x)`` of each sentence's given tree (``TreeError`` naming the sentence for a
        tree of other words or with a label chain the parser does not have)."""
        sentences = checked_sentences(sentences, batch_size)
        if len(trees) != len(sentences):
            raise ValueError(f"{len(trees)} trees for {len(sentences)} sentences")
        encoded, batches = self._batches(sentences, batch_size)
        nodes = []
        for i, (words, tree) in enumerate(zip(sentences, trees)):
            if tree.leaves() != list(words):
                raise TreeError(f"sentence {i}: the tree's words are not the sentence's")
            try:
                nodes.append(binary_spans(tree, self.labels))
            except TreeError as error:
                raise TreeError(f"sentence {i}: {error}") from None
        out = [0.0] * len(sentences)
        with evaluating(self):
            for chosen, scores, lengths in self._scored_batches(encoded, batches):
                values = tree_scores(scores, [nodes[i] for i in chosen]) - inside(scores, lengths).log_z
                for i, value in zip(chosen, values.tolist()):
                    out[i] = value
        return out

    def _tree(self, words: Sequence[str], spans: list[Span]) -> Tree:
        return tree_from_spans(list(words), spans, self.labels)


def _positive(name: str, value: int, *, least: int = 1) -> int:
    """``value`` as an ``int`` of at least ``least`` (``TypeError``/``ValueError`` naming ``name``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def _seed(seed: int) -> int:
    """``seed`` as an ``int`` from 0 to ``SEED_BOUND − 1`` (``ValueError`` else)."""
    seed = _positive("seed", seed, least=0)
    if seed >= SEED_BOUND:
        raise ValueError(f"seed must be at most 2**63 - 1, got {readable_count(seed)}")
    return seed
