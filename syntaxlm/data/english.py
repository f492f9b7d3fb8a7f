"""The real-English corpus (``syntaxlm data english``): CRAFT, GUM and the WSJ sample of the Penn
Treebank made into one train/dev/test split, by document.

About as much text as the Penn Treebank's WSJ training sections (docs/real-english.md):

- **CRAFT** (gold, biomedical articles; ``craft/structural-annotation/treebank/penn/PMID.tree``):
  its own split of the articles, ``craft/articles/ids/craft-ids-{train,dev,test}.txt``;
- **GUM** (silver, the CC-licensed genres; ``gum_const_cc/GUM_*.ptb``): its own split,
  ``gum_const_cc/splits.md`` (``test2``, GENTLE, is left out: its documents are not here);
- **the WSJ sample** (gold, NLTK's 10% of the WSJ; ``nltk_wsj_sample_noncommercial/combined/
  wsj_0001.mrg`` to ``wsj_0199.mrg``): no split of its own, so by file number, 0001–0159 train,
  0160–0179 dev, 0180–0199 test.

A document (an article, a GUM text, a WSJ file) is never in two splits. The trees are written as
the recipes read them: traces, function tags and ROOT wrappers removed, POS tags kept (``Cleaning``
below); the recipes' Choe–Charniak view and EVALB's gold trees both come from these files. Users
with the real Penn Treebank or BLLIP split those with ``syntaxlm data split --wsj-sections`` (or
their file lists) and train the same recipes on them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from syntaxlm.data.split import SPLITS, SplitError, treebank_files, write_splits
from syntaxlm.trees.clean import PTB_CLEANING

CLEANING = replace(PTB_CLEANING, strip_root=True)
"""Traces, function tags and ROOT wrappers (CRAFT's ``( (S ...) )``, GUM's ``(ROOT ...)``) removed;
POS tags kept."""
WSJ_SAMPLE_SPLIT = {"train": range(1, 160), "dev": range(160, 180), "test": range(180, 200)}
_WSJ_NUMBER = re.compile(r"wsj_(\d{4})\.mrg")
_GUM_HEADING = re.compile(r"##\s+(\w+)\s*$")
_GUM_ENTRY = re.compile(r"\s*\*\s+(\S+)\s*$")


@dataclass(frozen=True)
class Treebank:
    """One treebank of the corpus: its folder under the source, the glob of its tree files under
    that folder, and ``split_of(folder)``, which gives each document file's split (``None``: left
    out)."""

    name: str
    folder: str
    files: str
    split_of: Callable[[Path], dict[str, str]]


def _craft_splits(folder: Path) -> dict[str, str]:
    """CRAFT's own split: the article ids (PubMed ids) of ``articles/ids/craft-ids-SPLIT.txt``."""
    splits = {}
    for split in SPLITS:
        listed = folder / "articles" / "ids" / f"craft-ids-{split}.txt"
        if not listed.is_file():
            raise FileNotFoundError(f"{listed}: no such file (CRAFT's list of its {split} articles)")
        for line in listed.read_text(encoding="utf-8").split():
            splits[f"{line}.tree"] = split
    return splits


def _gum_splits(folder: Path) -> dict[str, str]:
    """GUM's own split: the document names under ``## train``, ``## dev`` and ``## test`` of
    ``splits.md`` (other headings, such as ``test2``, are left out)."""
    listed = folder / "splits.md"
    if not listed.is_file():
        raise FileNotFoundError(f"{listed}: no such file (GUM's list of its documents' splits)")
    splits, heading = {}, None
    for line in listed.read_text(encoding="utf-8").splitlines():
        if found := _GUM_HEADING.match(line):
            heading = found.group(1)
        elif (found := _GUM_ENTRY.match(line)) and heading in SPLITS:
            splits[f"{found.group(1)}.ptb"] = heading
    return splits


def _wsj_sample_splits(folder: Path) -> dict[str, str]:
    """The WSJ sample by file number (``WSJ_SAMPLE_SPLIT``)."""
    splits = {}
    for path in folder.rglob("wsj_*.mrg"):
        if found := _WSJ_NUMBER.fullmatch(path.name):
            number = int(found.group(1))
            splits[path.name] = next((s for s, numbers in WSJ_SAMPLE_SPLIT.items() if number in numbers), None)
    return splits


TREEBANKS = {
    treebank.name: treebank
    for treebank in (
        Treebank("craft", "craft", "structural-annotation/treebank/penn/*.tree", _craft_splits),
        Treebank("gum", "gum_const_cc", "GUM_*.ptb", _gum_splits),
        Treebank("wsj-sample", "nltk_wsj_sample_noncommercial", "combined/wsj_*.mrg", _wsj_sample_splits),
    )
}


def make_english_corpus(
    source: str | Path, out: str | Path, treebanks: Sequence[str] = tuple(TREEBANKS)
) -> dict:
    """Write ``OUT/{train,dev,test}.trees`` and ``OUT/split.json`` from the ``treebanks`` found under
    ``source`` (the layout of ``../shared/data/constituency``, module docstring); returns the
    manifest: each split's sentences, words and files, and per treebank its documents and sentences
    in each split."""
    source = Path(source)
    unknown = sorted(set(treebanks) - set(TREEBANKS))
    if unknown or not treebanks:
        raise SplitError(
            f"unknown treebank(s) {', '.join(unknown) or '(none given)'}; expected some of {', '.join(TREEBANKS)}"
        )
    assigned: dict[Path, tuple[str, str | None]] = {}
    for name in treebanks:
        treebank = TREEBANKS[name]
        folder = source / treebank.folder
        files = sorted(folder.glob(treebank.files))
        if not files:
            raise FileNotFoundError(
                f"{folder}: no {treebank.files} files; expected the {name} treebank there (docs/real-english.md)"
            )
        splits = treebank.split_of(folder)
        for path in treebank_files(files):
            assigned[path] = (name, splits.get(path.name))
    documents = {name: Counter() for name in treebanks}
    for name, split in assigned.values():
        documents[name][split or "left out"] += 1
    sentences = {name: Counter() for name in treebanks}
    method = {
        "method": "real-english",
        "source": str(source),
        "cleaning": "traces, function tags and ROOT wrappers removed; POS tags kept",
        "wsj_sample_split": {
            split: f"wsj_{numbers.start:04d}-wsj_{numbers.stop - 1:04d}" for split, numbers in WSJ_SAMPLE_SPLIT.items()
        },
        "treebanks": {name: {"documents": documents[name], "sentences": sentences[name]} for name in treebanks},
    }

    def split_of(path: Path, _sentence: int) -> str | None:
        name, split = assigned[path]
        sentences[name][split or "left out"] += 1  # counted into the manifest as the trees are written
        return split

    return write_splits(out, list(assigned), SPLITS, split_of, method, pos_tags=True, cleaning=CLEANING)
