"""Composition probe: what a Transformer Grammar's composed subject carries, layer by layer.

In a TG the COMPOSE position of a constituent (the first copy of its closer) reads its children's
states of the layer below, so a word's information climbs one level of nesting per layer (TG paper
§2.3). Whether a fact about a complex subject, ``(NP (NP No president) (SBAR ...))``, reaches the
subject's composed state at all is then a matter of depth: a model too shallow *cannot* carry it,
however long it trains. This probe tells "not learnt" from "cannot be learnt" by reading it off.

- **Items.** Each sentence whose subject is complex: the NP before the first VP of an ``S``,
  whose first child is an NP (the *inner* NP) and which has a PP or SBAR after it, as in the
  SyntaxGym agreement and NPI suites. The first such subject in the tree (pre-order) is used.
  Trees must keep their POS tags (the targets are read from them); the model reads them without.
- **Targets.** ``number``: the tag of the inner NP's head noun (its last NN/NNS child;
  a subject without one is skipped); ``negation``: whether the inner NP starts with ``no``. Each
  target's items are balanced by dropping, at random, items of its larger class.
- **Sites.** ``subject``: the subject NP's COMPOSE position; ``inner``: the inner NP's COMPOSE
  position, a control that holds the words directly and should be decodable from layer 1. TXL
  (trees) has no COMPOSE: its sites are the closers themselves; TXL (terminals) has no closers:
  its sites are the constituents' last words.
- **States.** Layers ``0..L`` (``TransformerGrammar.hidden_states``; 0 is the embeddings) of the
  sequence's first segment; items whose site lies beyond it are dropped and counted.
- **Probe.** Multinomial logistic regression with an L2 penalty on standardised states
  (``fit_logistic``), per site, target and layer, with stratified ``k``-fold cross-validation:
  the accuracy over every held-out item, a Wilson 95% interval over those items, and the
  majority-class baseline (each fold's training majority, scored on its held-out items).

``synthetic_probe_trees`` writes a balanced probe set with the synthetic grammar: subjects drawn
with each number × determiner (``no`` or other) combination in equal numbers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from syntaxlm.errors import InputFormatError
from syntaxlm.eval.intervals import Interval
from syntaxlm.trees.clean import Cleaning, drop_pos_tags
from syntaxlm.trees.tree import Tree

TARGETS = {"number": ("singular", "plural"), "negation": ("other", "no")}
"""Each target's classes, in label order."""
SITES = ("subject", "inner")
MODIFIERS = ("PP", "SBAR")
HEAD_TAGS = {"NN": "singular", "NNS": "plural"}
SITE_NAMES = {
    "tg": "COMPOSE position (first copy of the closer)",
    "txl-trees": "closing nonterminal",
    "txl-terminals": "last word of the constituent",
}
ELIGIBLE = "trees with a subject NP whose first child is an NP with an NN/NNS head, followed by a PP or SBAR"


@dataclass(frozen=True)
class ProbeItem:
    """One sentence of the probe: its index in the input, the POS-tagged tree, the class of each
    target, and per site the index of the constituent's closer among the Choe–Charniak actions,
    the number of closers before it and the index of its last word."""

    index: int
    tree: Tree
    labels: dict[str, int]
    sites: dict[str, tuple[int, int, int]]


# --- items ---------------------------------------------------------------------------------------


def complex_subject(tree: Tree) -> tuple[Tree, Tree] | None:
    """The first complex subject in ``tree`` (pre-order) and its inner NP, or ``None``."""
    for node in tree.subtrees():
        if node.is_preterminal or node.label != "S":
            continue
        labels = [child.label if isinstance(child, Tree) else None for child in node.children]
        if "VP" not in labels or labels.index("VP") == 0:
            continue
        subject = node.children[labels.index("VP") - 1]
        if not isinstance(subject, Tree) or subject.label != "NP" or subject.is_preterminal:
            continue
        kids = [child.label if isinstance(child, Tree) else None for child in subject.children]
        if kids[0] == "NP" and any(label in MODIFIERS for label in kids[1:]):
            return subject, subject.children[0]
    return None


def subject_labels(inner: Tree) -> dict[str, int] | None:
    """The class of each target for an inner NP (see ``TARGETS``), or ``None`` without an NN/NNS head."""
    heads = [
        child.label
        for child in inner.children
        if isinstance(child, Tree) and child.is_preterminal and child.label in HEAD_TAGS
    ]
    if not heads:
        return None
    negated = inner.leaves()[0].lower() == "no"
    return {
        "number": TARGETS["number"].index(HEAD_TAGS[heads[-1]]),
        "negation": TARGETS["negation"].index("no" if negated else "other"),
    }


def closer_actions(tree: Tree) -> dict[int, tuple[int, int, int]]:
    """For each phrase of a POS-tagged tree (keyed by ``id``), where it closes in the tree's
    Choe–Charniak actions (POS tags dropped): the action index of its closer, the number of closers
    before it, and the index of its last word."""
    found: dict[int, tuple[int, int, int]] = {}
    action = closers = words = 0
    stack: list[tuple[Tree | str, bool]] = [(tree, False)]
    while stack:
        node, done = stack.pop()
        if done:
            found[id(node)] = (action, closers, words - 1)
            action += 1
            closers += 1
        elif not isinstance(node, Tree) or node.is_preterminal:
            action += 1
            words += 1
        else:
            action += 1  # the opener
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
    return found


def probe_items(trees: Sequence[Tree]) -> list[ProbeItem]:
    """The trees with a complex subject whose inner NP has an NN/NNS head, as ``ProbeItem``s."""
    items = []
    for index, tree in enumerate(trees):
        found = complex_subject(tree)
        if found is None:
            continue
        subject, inner = found
        labels = subject_labels(inner)
        if labels is None:
            continue
        closing = closer_actions(tree)
        sites = {"subject": closing[id(subject)], "inner": closing[id(inner)]}
        items.append(ProbeItem(index, tree, labels, sites))
    return items


def site_position(site: tuple[int, int, int], variant: str) -> int:
    """The sequence position a site is read at (``<s>`` is position 0): TG duplicates every earlier
    closer, and its COMPOSE copy comes first; TXL (trees) has each action once; TXL (terminals)
    has the words only."""
    action, closers_before, last_word = site
    if variant == "tg":
        return 1 + action + closers_before
    if variant == "txl-trees":
        return 1 + action
    return 1 + last_word


def balanced(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices (sorted) keeping every class of ``labels`` at the size of the smallest one."""
    classes = np.unique(labels)
    size = min(int((labels == c).sum()) for c in classes)
    keep = [rng.choice(np.flatnonzero(labels == c), size, replace=False) for c in classes]
    return np.sort(np.concatenate(keep))


# --- the linear probe ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LogisticProbe:
    """A fitted multinomial logistic regression over standardised features."""

    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray  # [d, classes]
    bias: np.ndarray  # [classes]

    def scores(self, x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.weight + self.bias

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.argmax(self.scores(x), axis=1)


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-2, max_iter: int = 50) -> LogisticProbe:
    """Multinomial logistic regression: mean cross-entropy + ``l2`` · ‖W‖² (the bias unpenalised)
    on features standardised with their training mean and deviation, minimised by Newton's method
    with backtracking (float64; torch, so that it keeps to torch's thread count)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if x.ndim != 2 or y.shape != (len(x),):
        raise ValueError(f"expected x [n, d] and y [n], got shapes {x.shape} and {y.shape}")
    if len(x) == 0 or y.min() < 0:
        raise ValueError("expected at least one item and class labels 0, 1, ...")
    n, d = x.shape
    classes = max(int(y.max()) + 1, 2)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    features = torch.from_numpy(np.hstack([(x - mean) / scale, np.ones((n, 1))]))
    onehot = torch.eye(classes, dtype=torch.float64)[torch.from_numpy(y)]
    penalty = torch.full((d + 1, 1), l2, dtype=torch.float64)
    penalty[-1] = 1e-8  # keeps the Hessian invertible; the bias is otherwise free
    size = (d + 1) * classes
    diagonal = torch.diag((2 * penalty).expand(d + 1, classes).reshape(size))

    def objective(w: torch.Tensor) -> tuple[float, torch.Tensor]:
        log_p = torch.log_softmax(features @ w, dim=1)
        return float(-(onehot * log_p).sum() / n + (penalty * w * w).sum()), log_p.exp()

    w = torch.zeros(d + 1, classes, dtype=torch.float64)
    loss, p = objective(w)
    for _ in range(max_iter):
        gradient = features.T @ (p - onehot) / n + 2 * penalty * w
        # Hessian over (feature, class) pairs: X^T diag(p_c (δ_ck − p_k)) X / n, plus the penalty.
        curvature = p[:, :, None] * (torch.eye(classes, dtype=torch.float64) - p[:, None, :])
        blocks = torch.empty(d + 1, classes, d + 1, classes, dtype=torch.float64)
        for c in range(classes):
            for k in range(classes):
                blocks[:, c, :, k] = (features * curvature[:, c, k, None]).T @ features / n
        hessian = blocks.reshape(size, size) + diagonal
        step = torch.linalg.solve(hessian, gradient.reshape(size)).reshape(d + 1, classes)
        decrease = float((gradient * step).sum())
        t = 1.0
        candidate, new_p = objective(w - step)
        while candidate > loss - 1e-4 * t * decrease and t > 1e-8:  # backtracking (Armijo)
            t /= 2
            candidate, new_p = objective(w - t * step)
        w, improvement, loss, p = w - t * step, loss - candidate, candidate, new_p
        if improvement < 1e-10:
            break
    return LogisticProbe(mean, scale, w[:-1].numpy(), w[-1].numpy())


def stratified_folds(labels: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """The fold (0..folds-1) of each item: each class shuffled and dealt round the folds."""
    fold = np.empty(len(labels), dtype=np.int64)
    start = 0
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        fold[members] = (start + np.arange(len(members))) % folds
        start += len(members)
    return fold


def wilson_interval(successes: int, n: int, *, z: float = 1.959964) -> Interval:
    """The proportion ``successes / n`` with its Wilson score interval (95% for the default ``z``)."""
    if n <= 0:
        raise ValueError("the Wilson interval needs at least one trial")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high)


def cross_validated_accuracy(
    x: np.ndarray, y: np.ndarray, *, folds: int = 5, seed: int = 0, l2: float = 1e-2
) -> dict[str, Any]:
    """Held-out accuracy of ``fit_logistic`` over ``folds`` stratified folds, with its Wilson
    interval, and the majority-class baseline scored the same way."""
    y = np.asarray(y, dtype=np.int64)
    smallest = min(int((y == c).sum()) for c in np.unique(y))
    if len(np.unique(y)) < 2 or smallest < folds:
        raise ValueError(f"{folds}-fold cross-validation needs two classes of at least {folds} items each")
    fold = stratified_folds(y, folds, np.random.default_rng(seed))
    correct = majority = 0
    for k in range(folds):
        train, test = fold != k, fold == k
        probe = fit_logistic(x[train], y[train], l2=l2)
        correct += int((probe.predict(x[test]) == y[test]).sum())
        majority += int((y[test] == np.bincount(y[train]).argmax()).sum())
    interval = wilson_interval(correct, len(y))
    return {
        "accuracy": interval.estimate,
        "low": interval.low,
        "high": interval.high,
        "correct": correct,
        "n": len(y),
        "majority": majority / len(y),
    }


# --- the probe -----------------------------------------------------------------------------------


def site_states(model, trees: Sequence[Tree], positions: dict[str, np.ndarray], *, batch_size: int = 64):
    """``{site: [n, L + 1, d]}``: every layer's state at each tree's site position (first segment)."""
    sequences = model.sequences([drop_pos_tags(tree) for tree in trees])
    segments = model.segments(sequences)
    first = np.flatnonzero(segments.segment == 0)
    rows = first[np.argsort(segments.sequence[first])]
    out: dict[str, list[np.ndarray]] = {site: [] for site in positions}
    device = model.device
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        batch = {
            name: torch.from_numpy(np.ascontiguousarray(getattr(segments, name)[chunk])).to(device)
            for name in ("inputs", "labels", "compose", "depth", "position", "popped_at")
        }
        layers = model.hidden_states(batch)
        span = torch.arange(len(chunk), device=device)
        for site, where in positions.items():
            picked = torch.as_tensor(where[start : start + len(chunk)], device=device)
            states = torch.stack([layer[span, picked] for layer in layers], dim=1)
            out[site].append(states.float().cpu().numpy())
    return sequences, {site: np.concatenate(parts) for site, parts in out.items()}


def composition_probe(
    model,
    trees: Sequence[Tree],
    *,
    source: str | Path | None = None,
    folds: int = 5,
    seed: int = 0,
    l2: float = 1e-2,
    batch_size: int = 64,
) -> dict[str, Any]:
    """Probe ``model`` (a ``TransformerGrammar``: TG, TXL (trees) or TXL (terminals)) on POS-tagged
    ``trees`` (module docstring); ``source`` names them in errors. Returns the result record."""
    if not hasattr(model, "hidden_states") or not hasattr(model, "variant"):
        raise TypeError(f"the composition probe reads Transformer Grammar models, not {type(model).__name__}")
    variant = model.variant
    items = probe_items(trees)
    if not items:
        raise InputFormatError(
            f"none of the {len(trees)} trees has a complex subject", path=source, expected=ELIGIBLE
        )
    limit = model.config.segment_length
    kept = [
        item for item in items if all(site_position(s, variant) < limit for s in item.sites.values())
    ]
    if not kept:
        raise InputFormatError(
            f"every complex subject closes beyond the first segment ({limit} positions)", path=source
        )
    positions = {
        site: np.array([site_position(item.sites[site], variant) for item in kept]) for site in SITES
    }
    sequences, states = site_states(model, [item.tree for item in kept], positions, batch_size=batch_size)
    _check_sites(model, sequences, positions)

    rng = np.random.default_rng(seed)
    n_layers = states["subject"].shape[1] - 1
    targets: dict[str, Any] = {}
    probes: dict[str, dict[str, Any]] = {site: {} for site in SITES}
    for target, classes in TARGETS.items():
        labels = np.array([item.labels[target] for item in kept])
        counts = {name: int((labels == c).sum()) for c, name in enumerate(classes)}
        if min(counts.values()) < folds:
            raise InputFormatError(
                f"too few items of each {target} class for {folds}-fold cross-validation: {counts}",
                path=source,
                expected=f"at least {folds} complex subjects of each class ({', '.join(classes)})",
            )
        chosen = balanced(labels, rng)
        targets[target] = {"classes": list(classes), "available": counts, "n": len(chosen)}
        for site in SITES:
            probes[site][target] = [
                {"layer": layer}
                | cross_validated_accuracy(
                    states[site][chosen, layer], labels[chosen], folds=folds, seed=seed, l2=l2
                )
                for layer in range(n_layers + 1)
            ]
    return {
        "model": {"variant": variant, "n_layers": n_layers, "d_model": int(states["subject"].shape[2])},
        "site": SITE_NAMES[variant],
        "items": {
            "trees": len(trees),
            "complex_subjects": len(items),
            "beyond_first_segment": len(items) - len(kept),
            "used": len(kept),
        },
        "targets": targets,
        "probes": probes,
    }


def _check_sites(model, sequences, positions: dict[str, np.ndarray]) -> None:
    """Every site must be read at an ``NP)`` (a COMPOSE copy for TG): the walk over the tree and
    the model's sequence agree."""
    if model.variant == "txl-terminals":
        return
    from syntaxlm.text.symbols import closing_nonterminal

    closer = model.vocab.index(closing_nonterminal("NP"))
    for site, where in positions.items():
        for i, p in enumerate(where):
            sequence = sequences[i]
            if sequence.inputs[p] != closer or (model.variant == "tg" and not sequence.compose[p]):
                raise AssertionError(f"{site} site of item {i} is position {p}, not an NP) that composes")


def probe_table(result: dict[str, Any]) -> str:
    """The result as a text table: held-out accuracy [95% interval] per layer, site and target."""
    columns = [(site, target) for site in SITES for target in TARGETS]
    header = ["layer"] + [f"{site}:{target}" for site, target in columns]
    rows = []
    for layer in range(result["model"]["n_layers"] + 1):
        cells = [str(layer)]
        for site, target in columns:
            r = result["probes"][site][target][layer]
            cells.append(f"{r['accuracy']:.3f} [{r['low']:.3f}, {r['high']:.3f}]")
        rows.append(cells)
    majority = ["majority"] + [f"{result['probes'][s][t][0]['majority']:.3f}" for s, t in columns]
    rows.append(majority)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]]
    items = result["items"]
    counts = ", ".join(f"{t} {v['n']}" for t, v in result["targets"].items())
    model = result["model"]
    lines.insert(
        0,
        f"{model['variant']}, {model['n_layers']} layers; site: {result['site']}; "
        f"{items['used']} complex subjects; balanced items: {counts}",
    )
    return "\n".join(lines)


# --- probe sets ----------------------------------------------------------------------------------


def synthetic_probe_trees(
    per_cell: int = 150, *, seed: int = 0, lexicon_size: int | None = None
) -> list[Tree]:
    """``4 · per_cell`` sentences of the synthetic grammar whose subject is complex (PP, subject or
    object relative clause, in turn), ``per_cell`` for each number × (``no`` / other determiner),
    shuffled. The grammar runs from a seed derived from ``seed`` and ``"composition-probe"``, so
    these are not the treebank's sentences for the same seed; ``lexicon_size`` restricts its words
    as the model's training data was (``syntaxlm.data.lexicon.Lexicon``), so that the probe's words
    are the model's words."""
    from syntaxlm.data.lexicon import LEXICON, Lexicon
    from syntaxlm.data.synthetic import MAX_WORDS, Grammar, derive_seed, finish

    if per_cell < 1:
        raise ValueError(f"per_cell must be at least 1, got {per_cell}")
    rng = random.Random(derive_seed(seed, "composition-probe"))
    grammar = Grammar(rng, LEXICON if lexicon_size is None else Lexicon(lexicon_size))
    cells: dict[tuple[int, int], list[Tree]] = {(n, g): [] for n in (0, 1) for g in (0, 1)}
    modifiers = ("pp", "src", "orc")
    attempt = 0
    while any(len(trees) < per_cell for trees in cells.values()):
        number, negation = [cell for cell, trees in cells.items() if len(trees) < per_cell][0]
        subject = {
            "number": ("sg", "pl")[number],
            "det": "no" if negation else None,
            "modifier": modifiers[attempt % len(modifiers)],
            "form": "common",
            "coordinate": False,
        }
        attempt += 1
        tree = finish(grammar.clause(0, subject=subject))
        found = complex_subject(tree)
        labels = None if found is None else subject_labels(found[1])
        if labels is None or len(tree.leaves()) > MAX_WORDS:
            continue
        cell = cells[labels["number"], labels["negation"]]
        if len(cell) < per_cell:
            cell.append(tree)
    trees = [tree for cell in cells.values() for tree in cell]
    rng.shuffle(trees)
    return trees


def read_probe_trees(path: str | Path) -> list[Tree]:
    """POS-tagged trees of a file or folder, without traces, function tags or a ROOT wrapper (the
    model's view of them is these trees without their POS tags)."""
    from syntaxlm.trees.ptb import TreeReader

    cleaning = Cleaning(remove_empty_elements=True, strip_function_tags=True, strip_root=True)
    return list(TreeReader(path, cleaning=cleaning, pos_tags=True))
