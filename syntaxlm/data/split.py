"""Train/dev/test splits of a treebank (``syntaxlm data split``): by ratio with a seed, by lists of
files, or the standard WSJ sections (train 02–21, dev 22, test 23).

The input is PTB brackets (``.mrg`` and every layout the reader takes) or CoNLL-U, in one or more
files or folders (searched recursively). Each split is written to ``OUT/<split>.trees`` (one tree
per line, as read: traces, function tags and POS tags kept) or ``OUT/<split>.conllu``, with
``OUT/split.json`` saying how it was made. Files are written atomically, and a split that would
be empty stops everything before a file is replaced.
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from syntaxlm.errors import SyntaxlmError
from syntaxlm.files import atomic_writer, refuse_overwriting
from syntaxlm.trees.dependency import CONLLU_SUFFIXES, ConlluReader, is_conllu
from syntaxlm.trees.clean import Cleaning
from syntaxlm.trees.ptb import TREEBANK_SUFFIXES, TreeReader

SPLITS = ("train", "dev", "test")
WSJ_SECTIONS = {"train": range(2, 22), "dev": range(22, 23), "test": range(23, 24)}
"""The standard split of the Penn Treebank's WSJ sections (Collins 1997 and after)."""
WSJ_SECTION_COUNT = 25  # sections 00-24
_WSJ_NAME = re.compile(r"wsj_(\d\d)\d\d(?!\d)", re.IGNORECASE)  # wsj_0201.mrg: section 02
MANIFEST = "split.json"


class SplitError(SyntaxlmError, ValueError):
    """A split that cannot be made as asked: bad ratios, a file without a WSJ section, a file list
    that names no input, a split left empty."""


def treebank_files(sources: Sequence[str | Path]) -> list[Path]:
    """The files named and the treebank files under the folders named (recursively, sorted), each
    once; all PTB brackets or all CoNLL-U."""
    files: dict[Path, Path] = {}
    for source in map(Path, sources):
        if source.is_dir():
            found = sorted(
                path
                for path in source.rglob("*")
                if path.is_file() and path.name.endswith(TREEBANK_SUFFIXES + CONLLU_SUFFIXES)
            )
            if not found:
                suffixes = ", *".join(TREEBANK_SUFFIXES + CONLLU_SUFFIXES)
                raise FileNotFoundError(f"{source}: no treebank files (*{suffixes})")
        elif source.exists():
            found = [source]
        else:
            raise FileNotFoundError(f"{source}: no such file or directory")
        for path in found:
            files.setdefault(path.resolve(), path)
    paths = list(files.values())
    if not paths:
        raise SplitError("no input files given")
    kinds = {is_conllu(path): path for path in paths}
    if len(kinds) > 1:
        raise SplitError(
            f"the inputs mix CoNLL-U ({kinds[True]}) and PTB brackets ({kinds[False]}); "
            "split one kind at a time"
        )
    return paths


def parse_ratios(text: str) -> list[float]:
    """``"0.8,0.1,0.1"`` (train, dev, test) or ``"0.9,0.1"`` (train, dev), checked by ``check_ratios``."""
    try:
        ratios = [float(part) for part in text.split(",")]
    except ValueError:
        raise SplitError(f"ratios {text!r}: expected numbers separated by commas, e.g. 0.8,0.1,0.1") from None
    check_ratios(ratios)
    return ratios


def check_ratios(ratios: Sequence[float]) -> None:
    """Raise ``SplitError`` unless there are 2 or 3 ratios, each above 0, summing to 1."""
    shown = ",".join(f"{ratio:g}" for ratio in ratios)
    if len(ratios) not in (2, 3):
        raise SplitError(f"ratios {shown}: expected 2 (train, dev) or 3 (train, dev, test) numbers")
    if not all(0 < ratio < 1 for ratio in ratios):
        raise SplitError(f"ratios {shown}: expected each between 0 and 1")
    if abs(sum(ratios) - 1) > 1e-6:
        raise SplitError(f"ratios {shown} sum to {sum(ratios):g}; expected a sum of 1, e.g. 0.8,0.1,0.1")


def split_by_ratio(
    sources: Sequence[str | Path],
    out: str | Path,
    ratios: Sequence[float],
    *,
    seed: int = 0,
    pos_tags: bool = True,
) -> dict:
    """Deal the sentences of all the inputs into train/dev(/test) by ``ratios``: a shuffle seeded by
    ``seed`` picks each split's sentences, which are written in their order in the inputs."""
    check_ratios(ratios)
    sources = [Path(source) for source in sources]
    files = treebank_files(sources)
    names = SPLITS[: len(ratios)]
    total = sum(1 for _ in _read_all(files, pos_tags))
    bounds = [0]
    running = 0.0
    for ratio in ratios[:-1]:
        running += ratio
        bounds.append(round(total * running))
    bounds.append(total)
    for name, ratio, start, end in zip(names, ratios, bounds, bounds[1:]):
        if start == end:
            raise SplitError(
                f"the {name} split would be empty: {ratio:g} of {total} sentences rounds to none; "
                "expected more sentences or a larger ratio"
            )
    order = list(range(total))
    random.Random(seed).shuffle(order)
    split_of = bytearray(total)
    for index, (start, end) in enumerate(itertools.pairwise(bounds)):
        for sentence in order[start:end]:
            split_of[sentence] = index
    method = {"method": "ratio", "ratios": list(ratios), "seed": seed, "sources": [str(s) for s in sources]}
    return write_splits(
        out, files, names, lambda _file, sentence: names[split_of[sentence]], method, pos_tags
    )


def wsj_section(path: str | Path) -> int:
    """The WSJ section a file's name carries: ``wsj_0201.mrg`` is in section 2."""
    match = _WSJ_NAME.search(Path(path).name)
    if match is None:
        raise SplitError(
            f"{path}: no WSJ section in the file name; expected a name like wsj_0201.mrg (section 02)"
        )
    section = int(match.group(1))
    if section >= WSJ_SECTION_COUNT:
        raise SplitError(f"{path}: unknown WSJ section {match.group(1)}; expected sections 00 to 24")
    return section


def split_by_wsj_sections(sources: Sequence[str | Path], out: str | Path, *, pos_tags: bool = True) -> dict:
    """The standard WSJ split by the section in each file's name: train 02–21, dev 22, test 23
    (sections 00, 01 and 24 are left out)."""
    sources = [Path(source) for source in sources]
    files = treebank_files(sources)
    sections = {path: wsj_section(path) for path in files}
    assigned = {
        path: next((name for name, wanted in WSJ_SECTIONS.items() if section in wanted), None)
        for path, section in sections.items()
    }
    for name, wanted in WSJ_SECTIONS.items():
        if name not in assigned.values():
            found = sorted({f"{section:02d}" for section in sections.values()})
            raise SplitError(
                f"the {name} split (sections {_section_range(wanted)}) would be empty: the {len(files)} "
                f"input files are in sections {', '.join(found)}; "
                "expected the WSJ folder with all its sections"
            )
    method = {
        "method": "wsj-sections",
        "sections": {name: _section_range(wanted) for name, wanted in WSJ_SECTIONS.items()},
        "sources": [str(source) for source in sources],
    }
    return write_splits(out, files, SPLITS, lambda file, _sentence: assigned[file], method, pos_tags)


def split_by_file_lists(
    sources: Sequence[str | Path], out: str | Path, lists: dict[str, Sequence[str]], *, pos_tags: bool = True
) -> dict:
    """Each split from the input files its list names: file names, paths under a folder given, or
    glob patterns (``wsj_02*.mrg``); an entry ``@FILE`` reads more entries from FILE, one a line.
    Input files no list names are left out; a file named for two splits is an error."""
    sources = [Path(source) for source in sources]
    files = treebank_files(sources)
    names = [name for name in SPLITS if lists.get(name)]
    if not names:
        raise SplitError("no file list given; expected files for at least one of train, dev, test")
    assigned: dict[Path, str] = {}
    for name in names:
        for pattern in _expand_lists(lists[name]):
            matched = [path for path in files if _matches(path, pattern, sources)]
            if not matched:
                raise SplitError(
                    f"{name}: {pattern!r} names none of the {len(files)} input files "
                    f"(e.g. {files[0].name}); expected a file name, a path or a glob pattern"
                )
            for path in matched:
                if assigned.setdefault(path, name) != name:
                    raise SplitError(f"{path} is named for both {assigned[path]} and {name}")
    method = {
        "method": "file-lists",
        "lists": {name: list(lists[name]) for name in names},
        "sources": [str(source) for source in sources],
    }
    return write_splits(out, files, names, lambda file, _sentence: assigned.get(file), method, pos_tags)


def _expand_lists(entries: Sequence[str]) -> Iterator[str]:
    for entry in entries:
        if not entry.startswith("@"):
            yield entry
            continue
        listed = Path(entry[1:])
        if not listed.is_file():
            raise FileNotFoundError(f"{listed}: no such file (named by {entry!r}, a list of files)")
        yield from (line.strip() for line in listed.read_text(encoding="utf-8").splitlines() if line.strip())


def _matches(path: Path, pattern: str, sources: list[Path]) -> bool:
    """Whether ``pattern`` names ``path``: its name, the path as found, or the path under a folder given."""
    candidates = [path.name, str(path)]
    candidates.extend(str(path.relative_to(folder)) for folder in sources if path.is_relative_to(folder))
    return any(fnmatch.fnmatchcase(candidate, pattern) for candidate in candidates)


def _section_range(sections: range) -> str:
    first, last = sections[0], sections[-1]
    return f"{first:02d}" if first == last else f"{first:02d}-{last:02d}"


def _read(path: Path, pos_tags: bool, cleaning: Cleaning | None = None) -> Iterator[tuple[str, int]]:
    """The trees of a file, each as the text it is written with (after ``cleaning``), and its words."""
    if is_conllu(path):
        return ((tree.to_conllu(), len(tree)) for tree in ConlluReader(path))
    trees = TreeReader(path, pos_tags=pos_tags, cleaning=cleaning)
    return ((tree.to_bracket() + "\n", len(tree.leaves())) for tree in trees)


def _read_all(files: list[Path], pos_tags: bool) -> Iterator[str]:
    for path in files:
        yield from _read(path, pos_tags)


def write_splits(
    out: str | Path,
    files: list[Path],
    names: Sequence[str],
    split_of: Callable[[Path, int], str | None],
    method: dict,
    pos_tags: bool,
    cleaning: Cleaning | None = None,
) -> dict:
    """Write each sentence (by its file and its index among all inputs) to the split ``split_of``
    names (``None``: left out), then the manifest (sentences, words and files of each split); a
    split left empty writes nothing. ``cleaning`` is applied to PTB-bracket trees as they are read."""
    out = Path(out)
    suffix = ".conllu" if is_conllu(files[0]) else ".trees"
    splits = {
        name: {"path": str(out / f"{name}{suffix}"), "files": 0, "sentences": 0, "words": 0} for name in names
    }
    for output in [*(out / f"{name}{suffix}" for name in names), out / MANIFEST]:
        refuse_overwriting(output, files)
    left_out = {"files": 0, "sentences": 0, "words": 0}
    with contextlib.ExitStack() as stack:
        handles = {name: stack.enter_context(atomic_writer(out / f"{name}{suffix}")) for name in names}
        sentence = 0
        for path in files:
            seen: set[str | None] = set()
            for text, words in _read(path, pos_tags, cleaning):
                name = split_of(path, sentence)
                sentence += 1
                if name is not None:
                    handles[name].write(text)
                counts = left_out if name is None else splits[name]
                counts["sentences"] += 1
                counts["words"] += words
                seen.add(name)
            for name in seen:
                (left_out if name is None else splits[name])["files"] += 1
        for name, counts in splits.items():
            if not counts["sentences"]:
                raise SplitError(f"the {name} split would be empty: its files hold no sentences")
    manifest = {
        **method,
        "input_files": len(files),
        "format": "conllu" if suffix == ".conllu" else "ptb",
        "splits": splits,
        "left_out": left_out,
    }
    with atomic_writer(out / MANIFEST) as handle:
        handle.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest
