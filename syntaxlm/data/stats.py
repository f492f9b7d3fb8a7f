"""Corpus statistics for treebanks (Penn brackets) and CoNLL-U files: ``syntaxlm data stats``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from syntaxlm.trees.clean import EMPTY_ELEMENT_TAG, PTB_CLEANING, strip_function_tag
from syntaxlm.trees.dependency import ConlluReader, is_conllu, projectivize
from syntaxlm.trees.ptb import TreeReader


def _summary(lengths: list[int]) -> dict:
    if not lengths:
        return {"mean": 0.0, "max": 0}
    return {"mean": round(sum(lengths) / len(lengths), 2), "max": max(lengths)}


def treebank_stats(path: str | Path, *, skip_bad: bool = False, pos_tags: bool = True) -> dict:
    """Counts for a bracketed treebank file or directory.

    ``words`` excludes empty elements (``-NONE-``); ``tokens_with_empty_elements`` counts every
    leaf. ``words_with_unicode_space`` counts words holding a non-ASCII space (U+00A0, U+2009, ...):
    legal in brackets, but tools that split text on any whitespace will break them apart. Depth and labels are measured after removing empty elements and function tags (the
    form in which the trees are used); label counts are split into phrases and POS tags.
    ``pos_tags=False`` reads POS-less (Choe–Charniak) trees, where every node is a phrase.
    """
    reader = TreeReader(path, skip_bad=skip_bad, pos_tags=pos_tags)
    sentences = words = empty = unicode_space = 0
    lengths: list[int] = []
    depths: list[int] = []
    phrases: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for tree in reader:
        sentences += 1
        if not pos_tags:
            leaves = tree.leaves()
            words += len(leaves)
            lengths.append(len(leaves))
            unicode_space += sum(1 for word in leaves if any(c.isspace() for c in word))
            depths.append(tree.depth())
            phrases.update(strip_function_tag(node.label) for node in tree.subtrees())
            continue
        pairs = tree.pos()
        n_empty = sum(1 for _, tag in pairs if tag == EMPTY_ELEMENT_TAG)
        empty += n_empty
        words += len(pairs) - n_empty
        lengths.append(len(pairs) - n_empty)
        unicode_space += sum(1 for word, _ in pairs if any(c.isspace() for c in word))
        cleaned = PTB_CLEANING(tree)
        if cleaned is None:
            continue
        depths.append(cleaned.depth())
        for node in cleaned.subtrees():
            (tags if node.is_preterminal else phrases)[strip_function_tag(node.label)] += 1
    return {
        "format": "ptb",
        "path": str(path),
        "files": len(reader.files()),
        "sentences": sentences,
        "words": words,
        "empty_elements": empty,
        "tokens_with_empty_elements": words + empty,
        "words_with_unicode_space": unicode_space,
        "sentence_length": _summary(lengths),
        "depth": _summary(depths),
        "phrase_labels": dict(phrases.most_common()),
        "pos_tags": dict(tags.most_common()),
        "skipped": [str(error) for error in reader.report.skipped],
    }


def conllu_stats(path: str | Path, *, skip_bad: bool = False) -> dict:
    """Counts for a CoNLL-U file: syntactic words, surface tokens, tree depth, relations."""
    reader = ConlluReader(path, skip_bad=skip_bad)
    sentences = words = tokens = multiword = empty = non_projective = 0
    lengths: list[int] = []
    depths: list[int] = []
    relations: Counter[str] = Counter()
    for dep in reader:
        sentences += 1
        n = len(dep)
        words += n
        lengths.append(n)
        covered = sum(t.last - t.first + 1 for t in dep.multiword_tokens)
        tokens += n - covered + len(dep.multiword_tokens)
        multiword += len(dep.multiword_tokens)
        empty += len(dep.empty_nodes)
        relations.update(dep.relations)
        if projectivize(dep.heads) != list(dep.heads):
            non_projective += 1
        level = [0] * (n + 1)
        for word in range(1, n + 1):  # depth of each word: number of arcs up to the root
            chain, node = [], word
            while node and not level[node]:
                chain.append(node)
                node = dep.heads[node - 1]
            base = level[node]
            for offset, visited in enumerate(reversed(chain), 1):
                level[visited] = base + offset
        depths.append(max(level))
    return {
        "format": "conllu",
        "path": str(path),
        "sentences": sentences,
        "words": words,
        "tokens": tokens,
        "multiword_tokens": multiword,
        "empty_nodes": empty,
        "non_projective_sentences": non_projective,
        "sentence_length": _summary(lengths),
        "depth": _summary(depths),
        "relations": dict(relations.most_common()),
        "skipped": [str(error) for error in reader.report.skipped],
    }


def corpus_stats(path: str | Path, *, skip_bad: bool = False, pos_tags: bool = True) -> dict:
    """``conllu_stats`` or ``treebank_stats`` depending on the file name."""
    if is_conllu(path):
        return conllu_stats(path, skip_bad=skip_bad)
    return treebank_stats(path, skip_bad=skip_bad, pos_tags=pos_tags)


def total_stats(stats: list[dict]) -> dict:
    """The ``corpus_stats`` of several paths added up: counts summed, label counts merged, means
    weighted by sentences, maxima of the maxima; ``format`` is ``mixed`` when the formats differ."""
    total: dict = {}
    for key in dict.fromkeys(key for one in stats for key in one):
        values = [one[key] for one in stats if key in one]
        if key == "format":
            total[key] = values[0] if len(set(values)) == 1 else "mixed"
        elif key == "path":
            total[key] = f"total of {len(stats)} paths"
        elif key in ("sentence_length", "depth"):
            weights = [one["sentences"] for one in stats if key in one]
            mean = sum(v["mean"] * w for v, w in zip(values, weights)) / max(sum(weights), 1)
            total[key] = {"mean": round(mean, 2), "max": max(v["max"] for v in values)}
        elif isinstance(values[0], dict):
            counts: Counter[str] = Counter()
            for value in values:
                counts.update(value)
            total[key] = dict(counts.most_common())
        elif isinstance(values[0], list):
            total[key] = [item for value in values for item in value]
        else:
            total[key] = sum(values)
    return total
