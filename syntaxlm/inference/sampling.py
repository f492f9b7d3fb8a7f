"""Sampling sentences (and their trees) from a model: ancestral, top-k and nucleus.

``generate`` drives the model's incremental ``Decoder`` for a batch of samples at once. At every
step the actions the grammar forbids are masked (``ActionSpace``: no closer with nothing open or
of the wrong label, no closer right after an opener, no word outside the root, nothing after the
root has closed), and so are actions after which the sample could not be completed within
``max_length`` tokens (its open constituents still to close). A joint model therefore always
emits a well-formed tree, whose yield is the sentence; a words-only model emits words up to
``</s>``. Then ``temperature`` divides the log-probabilities, ``top_k`` keeps the ``k`` most
probable actions and ``top_p`` the smallest set whose probability reaches ``p`` (Holtzman et al.
2020), and the action is drawn from what is left, renormalised.

``Sample.logprob`` is the model's own log-probability of the sampled tokens (over its whole
vocabulary, as in training; the prompt not included): ``log p(x, y)`` for a joint model.
``Sample.extra`` holds the tokens as the model spells them and ``sampling_logprob``, the
log-probability of the draw under the sampling distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from syntaxlm.inference.grammar import (
    CLOSE,
    END,
    OPEN,
    WORD,
    ActionSpace,
    InferenceError,
    Nodes,
    ParserStates,
)
from syntaxlm.inference.sentences import build_tree
from syntaxlm.models.base import Sample
from syntaxlm.models.scoring import evaluating
from syntaxlm.text.base import EOS_ID


def generate(
    model,
    n: int,
    *,
    prompts: Sequence[Sequence[str]] | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    max_length: int = 256,
    max_open: int = 50,
    max_openers: int = 8,
    batch_size: int = 64,
) -> list[Sample]:
    """``n`` samples (for each prompt, if ``prompts`` are given), in order.

    A prompt is a prefix in the model's own spelling, a sequence of tokens: words, and for a joint
    model its tree actions (``["(S", "(NP", "the"]`` for TG, ``["NT(S)", "NT(NP)", "the"]`` for
    PLM). ``max_length`` bounds the tokens of a sample after ``<s>``, the prompt included. The same
    ``seed`` gives the same samples.
    """
    if n < 0:
        raise InferenceError(f"n must be at least 0, got {n}")
    if temperature <= 0:
        raise InferenceError(f"temperature must be positive, got {temperature}")
    if top_k is not None and top_k < 1:
        raise InferenceError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise InferenceError(f"top_p must be in (0, 1], got {top_p}")
    if batch_size < 1:
        raise InferenceError(f"batch_size must be at least 1, got {batch_size}")
    space = ActionSpace(model.action_grammar(), max_open=max_open, max_openers=max_openers)
    prefixes = [()] if prompts is None else [_prompt_ids(model, space, p, i) for i, p in enumerate(prompts)]
    generator = torch.Generator().manual_seed(seed)
    samples: list[Sample] = []
    with evaluating(model):
        for index, prefix in enumerate(prefixes):
            for start in range(0, n, batch_size):
                count = min(batch_size, n - start)
                samples.extend(
                    _sample_batch(
                        model, space, prefix, count, generator, temperature, top_k, top_p, max_length, index
                    )
                )
    return samples


def _prompt_ids(model, space: ActionSpace, prompt: Sequence[str], index: int) -> tuple[int, ...]:
    """A prompt's ids, checked against the grammar (``ValueError`` naming the token)."""
    if isinstance(prompt, str):
        raise TypeError(f"prompt {index} is a string; give it as a sequence of tokens (prompt.split())")
    ids = tuple(int(i) for i in model.vocab.encode_words(list(prompt)).ids)
    states, stacks, history = ParserStates.start(1), Nodes(), Nodes()
    for position, id in enumerate(ids):
        allowed = space.allowed(states, stacks)
        kind = space.kind[id]
        ok = (
            (kind == OPEN and allowed.opens[0])
            or (kind == CLOSE and allowed.close[0] and allowed.close_id[0] == id)
            or (kind == WORD and allowed.words[0])
        )
        if not ok:
            token = model.vocab.token(id)
            raise InferenceError(
                f"prompt {index}: token {position} ({token!r}) cannot come there in a {space.grammar.style} sequence"
            )
        states = states.step(np.array([id]), space, stacks, history)
    if space.tree and (states.closed[0] or states.ended[0]):
        raise InferenceError(f"prompt {index} is already a complete sequence")
    return ids


def _finish_after(space: ActionSpace, states: ParserStates) -> dict[int, np.ndarray]:
    """The fewest tokens that complete each prefix after one more action of each kind."""
    eos = int(space.ends_with_eos)
    if not space.tree:
        return {WORD: np.ones(len(states), dtype=np.int64), END: np.zeros(len(states), dtype=np.int64)}
    depth = states.depth
    return {
        OPEN: depth + 2 + eos,  # a word, then a closer for each open constituent
        CLOSE: depth - 1 + eos,
        WORD: depth + eos,
        END: np.zeros(len(states), dtype=np.int64),
    }


def _sample_batch(model, space, prefix, count, generator, temperature, top_k, top_p, max_length, index):
    if space.finish_length(ParserStates.start(1))[0] + len(prefix) > max_length:
        raise InferenceError(f"max_length {max_length} is too short for a complete sample")
    decoder = model.decoder()
    decoder.start(count)
    stacks, history = Nodes(), Nodes()
    states = ParserStates.start(count)
    for id in prefix:
        decoder.advance(torch.arange(count), torch.full((count,), id, dtype=torch.long))
        states = states.step(np.full(count, id), space, stacks, history)
    rows = np.arange(count)  # the sample each held prefix belongs to
    tokens: list[list[int]] = [list(prefix) for _ in range(count)]
    logprob = np.zeros(count)
    sampling_logprob = np.zeros(count)
    done = np.zeros(count, dtype=bool)
    length = len(prefix)
    while len(rows):
        logprobs = decoder.logprobs().float()
        device = logprobs.device
        allowed = space.allowed(states, stacks)
        remaining = max_length - length - 1  # tokens left after this one
        finish = _finish_after(space, states)
        allowed.opens &= finish.get(OPEN, 0) <= remaining
        allowed.close &= finish.get(CLOSE, 0) <= remaining
        allowed.words &= finish[WORD] <= remaining
        mask = space.valid_mask(allowed, device)
        scores = logprobs.masked_fill(~mask, -torch.inf) / temperature
        scores = _top_k_top_p(scores, top_k, top_p)
        probs = torch.softmax(scores.double(), dim=-1).cpu()
        chosen = torch.multinomial(probs, 1, generator=generator)[:, 0]
        chosen_np = chosen.numpy()
        logprob[rows] += logprobs.gather(1, chosen.to(device)[:, None])[:, 0].double().cpu().numpy()
        sampling_logprob[rows] += np.log(probs.gather(1, chosen[:, None])[:, 0].numpy())
        for row, id in zip(rows.tolist(), chosen_np.tolist()):
            tokens[row].append(id)
        states = states.step(chosen_np, space, stacks, history)
        length += 1
        finished = (states.closed & (not space.ends_with_eos)) | states.ended
        done[rows[finished]] = True
        keep = np.flatnonzero(~finished)
        if len(keep) == 0:
            break
        decoder.advance(torch.as_tensor(keep, device=device), torch.as_tensor(chosen_np[keep], device=device))
        states = states.take(keep)
        rows = rows[keep]
    samples = []
    for row in range(count):
        ids = tokens[row]
        if space.tree:
            tree = build_tree(space, ids, vocab=model.vocab)
            words = tree.leaves()
        else:
            tree = None
            words = list(model.vocab.decode([i for i in ids if i != EOS_ID]))
        spelled = [model.vocab.token(i) for i in ids]
        extra = {"tokens": spelled, "sampling_logprob": float(sampling_logprob[row])}
        if prefix:
            extra |= {"prompt": index, "prompt_tokens": len(prefix)}
        samples.append(Sample(words=words, tree=tree, logprob=float(logprob[row]), extra=extra))
    return samples


def _top_k_top_p(scores: torch.Tensor, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """Scores with everything outside the top ``k`` and outside the nucleus ``p`` set to −inf."""
    if top_k is not None and top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, -torch.inf)
    if top_p is not None and top_p < 1:
        ordered, order = torch.sort(scores, dim=-1, descending=True)
        probs = torch.softmax(ordered.double(), dim=-1)
        before = probs.cumsum(dim=-1) - probs  # mass strictly above each action
        drop = before >= top_p
        drop[:, 0] = False
        scores = scores.scatter(-1, order, ordered.masked_fill(drop, -torch.inf))
    return scores
