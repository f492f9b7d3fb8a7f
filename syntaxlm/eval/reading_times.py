"""Reading-time corpora: the tokens readers saw, the model words each holds, their reading times,
and which tokens an analysis leaves out and why.

A *displayed token* is what a reader saw at once (one self-paced-reading window, one fixation
region): ``owners.`` or ``'It's``. A language model reads Penn-Treebank-style words (``owners``
``.``; `````` ``It`` ``'s``), each one or more pieces of its vocabulary. A token's surprisal is the
sum over its words (and so over their pieces: the scorer's word surprisal already sums them).

Two layouts are read (docs/reading-times.md):

- **Natural Stories** (Futrell et al. 2021), a folder as distributed: ``words.tsv`` (the token
  codes ``STORY.POSITION.whole|word|K``), ``RTS_processed_wordinfo.tsv`` (per token, the mean
  self-paced reading time over readers, ``meanItemRT``, keyed by ``item`` = story and ``zone`` =
  position), ``freqs_freqs-1.tsv`` (Google Books unigram counts per code) and
  ``parses/all-parses-aligned.txt.penn`` (hand-corrected Penn trees whose leaves carry their code,
  ``owners/1.57.1``): the trees give the sentences, the model words of each token (the leaves of
  its code) and the gold trees.
- **A plain per-token TSV** (Dundee, Provo, your own): a header and one row per displayed token
  with columns ``text`` (story or text id), ``position`` (the token's place in its text, an
  integer), ``token`` (as displayed), ``rt`` (milliseconds, averaged over readers; ``NA`` or empty
  when missing) and ``frequency`` (a corpus count of the word; ``NA`` when unknown); optionally
  ``sentence`` (a sentence number within the text; without it a sentence ends at a token ending in
  ``.``, ``?`` or ``!``) and any further columns, which ``predictors`` adds to both regressions.
  Tokens are split into words as the Penn Treebank does (``ptb_words``).

``exclusions`` says, per token, every reason it is left out of the regression: no reading time or
one outside the range, first or last of its sentence, punctuation attached, no frequency, a word a
model does not know or cannot score, and the same for the tokens whose values enter its
prediction as spill-over. Nothing is dropped without a reason that is counted.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from syntaxlm.errors import InputFormatError, TreeFormatError
from syntaxlm.files import read_lines
from syntaxlm.text.tokenize import ptb_words
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree


class ReadingTimeFormatError(InputFormatError):
    """A reading-time corpus file that does not follow its layout: a missing column, a value that
    is not a number, a token code that matches no token, tokens that do not line up."""


# --- the corpus ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    """One displayed token. ``words``: the model words it holds; ``sentence``: its sentence's index
    in ``ReadingCorpus.sentences``; ``rt``: milliseconds (``None``: no reading time);
    ``frequency``: a corpus count of its word (``None``: unknown); ``length``: characters of the
    word without attached punctuation; ``predictors``: further values given for it."""

    code: str
    story: str
    position: int
    text: str
    words: tuple[str, ...]
    sentence: int
    rt: float | None
    frequency: float | None
    length: int
    attached_punctuation: bool
    predictors: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Sentence:
    """One sentence: its model words, the token (index in ``ReadingCorpus.tokens``) of each word,
    and its gold tree (the models' view: no traces, function tags or POS tags) where the corpus has
    one."""

    story: str
    words: tuple[str, ...]
    word_token: tuple[int, ...]
    tree: Tree | None = None


@dataclass
class ReadingCorpus:
    """A reading-time corpus as the analysis reads it. ``inputs``: each file read, by role;
    ``alignment``: how displayed tokens, model words and reading-time rows lined up."""

    layout: str
    tokens: list[Token]
    sentences: list[Sentence]
    inputs: dict[str, Path]
    rt_measure: str
    frequency_source: str
    predictors: tuple[str, ...] = ()
    alignment: dict[str, Any] = field(default_factory=dict)

    @property
    def stories(self) -> list[str]:
        return list(dict.fromkeys(token.story for token in self.tokens))

    def story_sentences(self) -> list[list[int]]:
        """The sentence indices of each story, in order."""
        stories: dict[str, list[int]] = {}
        for index, sentence in enumerate(self.sentences):
            stories.setdefault(sentence.story, []).append(index)
        return list(stories.values())


def alignment_summary(tokens: Sequence[Token], sentences: Sequence[Sentence]) -> dict[str, Any]:
    """Counts that show how displayed tokens map to model words."""
    several = [token for token in tokens if len(token.words) > 1]
    return {
        "displayed_tokens": len(tokens),
        "model_words": sum(len(sentence.words) for sentence in sentences),
        "sentences": len(sentences),
        "tokens_of_several_words": len(several),
        "examples_of_several_words": [
            {"code": token.code, "token": token.text, "words": list(token.words)} for token in several[:5]
        ],
    }


# --- Natural Stories ------------------------------------------------------------------------------------

NATURAL_STORIES_FILES = {
    "words": "words.tsv",
    "rts": "RTS_processed_wordinfo.tsv",
    "frequencies": "freqs_freqs-1.tsv",
    "parses": "parses/all-parses-aligned.txt.penn",
}
NATURAL_STORIES_RT = "meanItemRT"  # the mean over readers of each token's self-paced reading time
_CODE = re.compile(r"(\d+)\.(\d+)\.(whole|word|\d+)")
_LEAF_CODE = re.compile(r"(\d+)\.(\d+)(?:\.(?:word|whole|\d+))?")
# A mismatch of the RT file's word with words.tsv is a typo of the experiment as run (the corpus
# README says so); more than this share of them is a misalignment of RTs and tokens.
MAX_WORD_FORM_DIFFERENCES = 0.01


def is_natural_stories(path: str | Path) -> bool:
    """Whether ``path`` is a folder in the Natural Stories layout (it holds ``words.tsv``)."""
    return Path(path).is_dir() and (Path(path) / NATURAL_STORIES_FILES["words"]).is_file()


def read_natural_stories(folder: str | Path, *, stories: Sequence[str] | None = None) -> ReadingCorpus:
    """The Natural Stories corpus from its folder (module docstring); ``stories``: only these
    (story numbers as strings), in corpus order. Every problem is a ``ReadingTimeFormatError``
    naming the file and line (or ``TreeFormatError`` for the parses)."""
    folder = Path(folder)
    paths = {role: folder / name for role, name in NATURAL_STORIES_FILES.items()}
    for role, path in paths.items():
        if not path.is_file():
            raise ReadingTimeFormatError(
                f"no {NATURAL_STORIES_FILES[role]} in the corpus folder",
                path=folder,
                expected=f"the Natural Stories layout ({', '.join(NATURAL_STORIES_FILES.values())})",
            )
    whole, word_form = _natural_stories_words(paths["words"])
    known = {story for story, _ in whole}
    if stories is not None:
        missing = [story for story in stories if story not in known]
        if missing:
            raise ReadingTimeFormatError(
                f"no story {', '.join(missing)} in words.tsv",
                path=paths["words"],
                expected=f"stories among {', '.join(sorted(known, key=int))}",
            )
    chosen = set(stories) if stories is not None else known
    rts, differences = _natural_stories_rts(paths["rts"], whole)
    frequencies = _natural_stories_frequencies(paths["frequencies"])
    leaves = _natural_stories_parses(paths["parses"], whole, chosen)

    tokens: list[Token] = []
    sentences: list[Sentence] = []
    leaf_differences = []
    for tree, coded in leaves:
        story = coded[0][2][0]
        words = tuple(word for word, _, _ in coded)
        word_token = []
        for word_index, (word, _, key) in enumerate(coded):
            if word_index == 0 or coded[word_index - 1][2] != key:
                shown, plain = whole[key], word_form[key]
                token_words = tuple(w for w, _, k in coded if k == key)
                if _plain(" ".join(token_words)) != _plain(shown):
                    leaf_differences.append(
                        {"code": f"{key[0]}.{key[1]}.whole", "token": shown, "leaves": list(token_words)}
                    )
                tokens.append(
                    Token(
                        code=f"{key[0]}.{key[1]}.whole",
                        story=story,
                        position=key[1],
                        text=shown.replace(" ", ""),
                        words=token_words,
                        sentence=len(sentences),
                        rt=rts.get(key),
                        frequency=frequencies.get(f"{key[0]}.{key[1]}.word"),
                        length=len(plain.replace(" ", "")),
                        attached_punctuation=plain != shown,
                    )
                )
            word_token.append(len(tokens) - 1)
        sentences.append(Sentence(story, words, tuple(word_token), tree))
    alignment = alignment_summary(tokens, sentences)
    alignment["rt_word_differs"] = [d for d in differences if d["code"].split(".")[0] in chosen]
    alignment["leaves_differ_from_token"] = leaf_differences
    return ReadingCorpus(
        layout="natural-stories",
        tokens=tokens,
        sentences=sentences,
        inputs=paths,
        rt_measure=f"{NATURAL_STORIES_RT} (mean self-paced reading time over readers, ms)",
        frequency_source="Google Books unigram count of the token without punctuation (freqs_freqs-1.tsv)",
        alignment=alignment,
    )


def _plain(text: str) -> str:
    """A token's characters for comparing displayed text with Penn leaves: no spaces, one quote."""
    for ptb, shown in (("``", '"'), ("''", '"'), ("'", '"'), ("-LRB-", "("), ("-RRB-", ")")):
        text = text.replace(ptb, shown)
    return text.replace(" ", "")


def _split_fields(line: str) -> list[str]:
    return line.rstrip("\n").split("\t")


def _natural_stories_words(path: Path) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], str]]:
    """``words.tsv``: per token ``(story, position)``, its whole and its ``word`` form."""
    whole: dict[tuple[str, int], str] = {}
    word: dict[tuple[str, int], str] = {}
    for number, line in enumerate(read_lines(path, ReadingTimeFormatError), 1):
        if not line.strip():
            continue
        fields = _split_fields(line)
        match = _CODE.fullmatch(fields[0]) if len(fields) == 2 else None
        if match is None:
            raise ReadingTimeFormatError(
                f"{line.rstrip()!r} is not a token code and a token",
                path=path,
                line=number,
                expected="CODE<TAB>TOKEN, CODE being STORY.POSITION.whole, .word or .K (1.57.whole)",
            )
        key = (match.group(1), int(match.group(2)))
        if match.group(3) == "whole":
            if key in whole:
                raise ReadingTimeFormatError(
                    f"a second {fields[0]}", path=path, line=number, expected="each code once"
                )
            whole[key] = fields[1]
        elif match.group(3) == "word":
            word[key] = fields[1]
    if not whole:
        raise ReadingTimeFormatError(
            "no STORY.POSITION.whole codes", path=path, expected="the tokens of the stories"
        )
    for key in whole:
        if key not in word:
            raise ReadingTimeFormatError(
                f"token {key[0]}.{key[1]} has a .whole code and no .word code",
                path=path,
                expected="both for every token",
            )
    return whole, word


class _Table:
    """A TSV file with a header row: its columns by name, rows with their line numbers."""

    def __init__(self, path: Path, required: Sequence[str], what: str):
        self.path = path
        numbered = enumerate(read_lines(path, ReadingTimeFormatError), 1)
        lines = ((n, line) for n, line in numbered if line.strip())
        first = next(lines, None)
        if first is None:
            raise ReadingTimeFormatError("the file is empty", path=path, expected=f"a header row and {what}")
        self.header = [name.strip() for name in _split_fields(first[1])]
        missing = [name for name in required if name not in self.header]
        if missing:
            raise ReadingTimeFormatError(
                f"no column {', '.join(repr(m) for m in missing)} in the header ({', '.join(self.header)})",
                path=path,
                line=first[0],
                expected=f"a header naming the columns {', '.join(required)}",
            )
        if len(set(self.header)) != len(self.header):
            repeated = next(name for name in self.header if self.header.count(name) > 1)
            raise ReadingTimeFormatError(
                f"the column {repeated!r} twice in the header",
                path=path,
                line=first[0],
                expected="each column once",
            )
        self.lines = lines

    def rows(self) -> Iterator[tuple[int, dict[str, str]]]:
        for number, line in self.lines:
            fields = _split_fields(line)
            if len(fields) != len(self.header):
                raise ReadingTimeFormatError(
                    f"{len(fields)} tab-separated fields, the header has {len(self.header)}",
                    path=self.path,
                    line=number,
                    expected="one value per column",
                )
            yield number, dict(zip(self.header, (value.strip() for value in fields)))

    def number(self, value: str, column: str, line: int, *, missing_ok: bool = True) -> float | None:
        """A column's value as a finite number; ``NA`` or empty is ``None`` (when ``missing_ok``)."""
        if missing_ok and value in ("", "NA", "NaN", "nan"):
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ReadingTimeFormatError(
                f"{column} is {value!r}, not a number",
                path=self.path,
                line=line,
                expected=f"a number{' (NA when missing)' if missing_ok else ''}",
            )
        return number

    def integer(self, value: str, column: str, line: int) -> int:
        if not re.fullmatch(r"-?[0-9]{1,18}", value):
            raise ReadingTimeFormatError(
                f"{column} is {value!r}, not an integer", path=self.path, line=line, expected="an integer"
            )
        return int(value)


def _natural_stories_rts(
    path: Path, whole: Mapping[tuple[str, int], str]
) -> tuple[dict[tuple[str, int], float | None], list[dict[str, str]]]:
    """``RTS_processed_wordinfo.tsv``: per token, the mean reading time; and the rows whose word
    differs from ``words.tsv`` (typos of the experiment), refused when there are many (a shift)."""
    table = _Table(path, ("word", "zone", "item", NATURAL_STORIES_RT), "a row per token")
    rts: dict[tuple[str, int], float | None] = {}
    differences = []
    for number, row in table.rows():
        key = (str(table.integer(row["item"], "item", number)), table.integer(row["zone"], "zone", number))
        if key not in whole:
            raise ReadingTimeFormatError(
                f"item {key[0]}, zone {key[1]} is the token code {key[0]}.{key[1]}, which words.tsv does "
                "not have",
                path=path,
                line=number,
                expected="item and zone of a token of words.tsv (STORY.POSITION)",
            )
        if key in rts:
            raise ReadingTimeFormatError(
                f"a second row for token {key[0]}.{key[1]}",
                path=path,
                line=number,
                expected="one row per token",
            )
        rts[key] = table.number(row[NATURAL_STORIES_RT], NATURAL_STORIES_RT, number)
        if row["word"] != whole[key].replace(" ", ""):
            differences.append(
                {
                    "code": f"{key[0]}.{key[1]}.whole",
                    "words_tsv": whole[key].replace(" ", ""),
                    "rt_file": row["word"],
                    "line": number,
                }
            )
    if rts and len(differences) > MAX_WORD_FORM_DIFFERENCES * len(rts):
        first = differences[0]
        raise ReadingTimeFormatError(
            f"{len(differences)} of {len(rts)} rows name another word than words.tsv (first: "
            f"{first['rt_file']!r} where words.tsv has {first['words_tsv']!r} for {first['code']}): the "
            "reading times are not aligned with the tokens",
            path=path,
            line=first["line"],
            expected="the word of each token code, bar a few typos "
            f"(at most {MAX_WORD_FORM_DIFFERENCES:.0%})",
        )
    return rts, differences


def _natural_stories_frequencies(path: Path) -> dict[str, float | None]:
    """``freqs_freqs-1.tsv`` (no header: code, order, token, count, context count): per code, its count."""
    counts: dict[str, float | None] = {}
    for number, line in enumerate(read_lines(path, ReadingTimeFormatError), 1):
        if not line.strip():
            continue
        fields = _split_fields(line)
        if len(fields) < 4 or _CODE.fullmatch(fields[0]) is None:
            raise ReadingTimeFormatError(
                f"{line.rstrip()[:80]!r} is not a frequency row",
                path=path,
                line=number,
                expected="CODE<TAB>ORDER<TAB>TOKEN<TAB>COUNT<TAB>CONTEXT COUNT",
            )
        value = fields[3].strip()
        count = None if value == "NA" else _count(value)
        if value != "NA" and count is None:
            raise ReadingTimeFormatError(
                f"the count is {value!r}", path=path, line=number, expected="a count (0 or more) or NA"
            )
        counts[fields[0]] = count
    return counts


def _count(value: str) -> float | None:
    try:
        count = float(value)
    except ValueError:
        return None
    return count if math.isfinite(count) and count >= 0 else None


def _natural_stories_parses(
    path: Path, whole: Mapping[tuple[str, int], str], stories: set[str]
) -> list[tuple[Tree, list[tuple[str, str, tuple[str, int]]]]]:
    """The trees of ``stories`` (the models' view, leaves without their codes) with each leaf's
    word, code and token; checks that every token of those stories has its leaves, in order, in
    one sentence."""
    cleaning = CHOE_CHARNIAK_CLEANING
    read: list[tuple[Tree, list[tuple[str, str, tuple[str, int]]]]] = []
    placed: dict[tuple[str, int], int] = {}
    previous: tuple[str, int] | None = None
    for index, tree in enumerate(TreeReader(path, cleaning=cleaning, line_starts_tree=False)):
        coded = []
        for leaf in tree.leaves():
            word, _, code = leaf.rpartition("/")
            match = _LEAF_CODE.fullmatch(code)
            if not word or match is None:
                raise TreeFormatError(
                    f"the leaf {leaf!r} carries no token code",
                    path=path,
                    sentence=index,
                    expected="WORD/CODE leaves (owners/1.57.1)",
                )
            key = (match.group(1), int(match.group(2)))
            if key not in whole:
                raise TreeFormatError(
                    f"the leaf {leaf!r} names token {key[0]}.{key[1]}, which words.tsv does not have",
                    path=path,
                    sentence=index,
                    expected="codes of words.tsv",
                )
            if key != previous:
                if key in placed:
                    raise TreeFormatError(
                        f"the leaves of token {key[0]}.{key[1]} are not together (also in sentence "
                        f"{placed[key]})",
                        path=path,
                        sentence=index,
                        expected="each token's leaves one after another, in one sentence",
                    )
                if previous is not None and previous[0] == key[0] and key[1] < previous[1]:
                    raise TreeFormatError(
                        f"token {key[0]}.{key[1]} after token {previous[0]}.{previous[1]}",
                        path=path,
                        sentence=index,
                        expected="the tokens of a story in order",
                    )
                placed[key] = index
            previous = key
            coded.append((word, code, key))
        if coded and coded[0][2][0] in stories:
            if len({key[0] for _, _, key in coded}) > 1:
                raise TreeFormatError(
                    "a sentence with tokens of two stories",
                    path=path,
                    sentence=index,
                    expected="one story per tree",
                )
            read.append((tree.with_leaves([word for word, _, _ in coded]), coded))
    missing = [key for key in whole if key[0] in stories and key not in placed]
    if missing:
        raise TreeFormatError(
            f"{len(missing)} token(s) of words.tsv have no leaf in the parses, the first "
            f"{missing[0][0]}.{missing[0][1]} ({whole[missing[0]]!r})",
            path=path,
            expected="every token of the stories read among the leaves",
        )
    return read


# --- a plain per-token TSV -------------------------------------------------------------------------------

TSV_COLUMNS = ("text", "position", "token", "rt", "frequency")
_SENTENCE_END = re.compile(r"[.?!][\"')\]’”»]*$")


def without_edge_punctuation(token: str) -> str:
    """``token`` without the punctuation at its start and end (``'It's,`` → ``It's``)."""
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(token[end - 1]).startswith("P"):
        end -= 1
    return token[start:end]


def read_rt_table(
    path: str | Path, *, predictors: Sequence[str] = (), texts: Sequence[str] | None = None
) -> ReadingCorpus:
    """A plain per-token TSV (module docstring); ``predictors``: further columns to read as numbers;
    ``texts``: only these texts."""
    path = Path(path)
    table = _Table(path, TSV_COLUMNS, "a row per displayed token")
    _check_predictors(table, predictors, path)
    has_sentences = "sentence" in table.header
    rows = _rows_by_text(table, predictors, path, has_sentences)
    if texts is not None:
        missing = [text for text in texts if text not in rows]
        if missing:
            raise ReadingTimeFormatError(
                f"no text {', '.join(map(repr, missing))}",
                path=path,
                expected=f"texts among {', '.join(rows)}",
            )
        rows = {text: rows[text] for text in texts}
    tokens, sentences = _tokens_and_sentences(rows, has_sentences)
    return ReadingCorpus(
        layout="tsv",
        tokens=tokens,
        sentences=sentences,
        inputs={"rts": path},
        rt_measure="rt (ms, one value per token)",
        frequency_source="the frequency column",
        predictors=tuple(predictors),
        alignment=alignment_summary(tokens, sentences),
    )


def _check_predictors(table: _Table, predictors: Sequence[str], path: Path) -> None:
    """The further predictors asked for are columns of the table, and not the analysis' own."""
    unknown = [name for name in predictors if name not in table.header]
    if unknown:
        raise ReadingTimeFormatError(
            f"no column {', '.join(repr(u) for u in unknown)} for the predictors asked for",
            path=path,
            line=1,
            expected=f"predictors among the columns {', '.join(table.header)}",
        )
    clash = [name for name in predictors if name in (*TSV_COLUMNS, "sentence")]
    if clash:
        raise ReadingTimeFormatError(
            f"{', '.join(clash)} cannot be a further predictor (the analysis uses it already)",
            path=path,
            line=1,
            expected="further predictors of other columns",
        )


def _rows_by_text(
    table: _Table, predictors: Sequence[str], path: Path, has_sentences: bool
) -> dict[str, list[tuple[int, int, dict[str, Any]]]]:
    """Each text's rows as ``(position, line, values)``, checked, in the file's order."""
    rows: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    seen: dict[tuple[str, int], int] = {}
    for number, row in table.rows():
        text = row["text"]
        if not text:
            raise ReadingTimeFormatError("the text id is empty", path=path, line=number, expected="a text id")
        position = table.integer(row["position"], "position", number)
        if (text, position) in seen:
            raise ReadingTimeFormatError(
                f"text {text!r} position {position} again (first at line {seen[text, position]})",
                path=path,
                line=number,
                expected="one row per token",
            )
        seen[text, position] = number
        if not row["token"] or any(c.isspace() for c in row["token"]):
            raise ReadingTimeFormatError(
                f"the token {row['token']!r} is empty or holds spaces",
                path=path,
                line=number,
                expected="one displayed token per row",
            )
        rt = table.number(row["rt"], "rt", number)
        frequency = table.number(row["frequency"], "frequency", number)
        if frequency is not None and frequency < 0:
            raise ReadingTimeFormatError(
                f"frequency is {row['frequency']}", path=path, line=number, expected="a count, 0 or more"
            )
        values = {
            "token": row["token"],
            "rt": rt,
            "frequency": frequency,
            "sentence": table.integer(row["sentence"], "sentence", number) if has_sentences else None,
            "predictors": {name: table.number(row[name], name, number) for name in predictors},
        }
        rows.setdefault(text, []).append((position, number, values))
    if not rows:
        raise ReadingTimeFormatError(
            "no rows after the header", path=path, expected="a row per displayed token"
        )
    return rows


def _tokens_and_sentences(
    rows: dict[str, list[tuple[int, int, dict[str, Any]]]], has_sentences: bool
) -> tuple[list[Token], list[Sentence]]:
    """The tokens of each text in position order, and its sentences: by the sentence column, else
    ended by a token that ends one."""
    tokens: list[Token] = []
    sentences: list[Sentence] = []
    for text, entries in rows.items():
        entries.sort(key=lambda entry: entry[0])
        current: list[int] = []
        for k, (position, number, values) in enumerate(entries):
            words = ptb_words(values["token"])
            plain = without_edge_punctuation(values["token"])
            tokens.append(
                Token(
                    code=f"{text}.{position}",
                    story=text,
                    position=position,
                    text=values["token"],
                    words=words,
                    sentence=len(sentences),
                    rt=values["rt"],
                    frequency=values["frequency"],
                    length=len(plain),
                    attached_punctuation=plain != values["token"] and bool(plain),
                    predictors=values["predictors"],
                )
            )
            current.append(len(tokens) - 1)
            last = k == len(entries) - 1
            if has_sentences:
                ends = last or entries[k + 1][2]["sentence"] != values["sentence"]
            else:
                ends = last or bool(_SENTENCE_END.search(values["token"]))
            if ends:
                words_of = [(word, i) for i in current for word in tokens[i].words]
                sentences.append(Sentence(text, tuple(w for w, _ in words_of), tuple(i for _, i in words_of)))
                current = []
    return tokens, sentences


def read_reading_corpus(
    path: str | Path, *, stories: Sequence[str] | None = None, predictors: Sequence[str] = ()
) -> ReadingCorpus:
    """A Natural Stories folder or a plain per-token TSV file (module docstring)."""
    path = Path(path)
    if path.is_dir():
        if not is_natural_stories(path):
            raise ReadingTimeFormatError(
                "a folder without words.tsv",
                path=path,
                expected="a Natural Stories folder (words.tsv, RTS_processed_wordinfo.tsv, ...) or a TSV "
                "file",
            )
        if predictors:
            raise ReadingTimeFormatError(
                "further predictors are columns of a plain TSV corpus", path=path, expected="a TSV file"
            )
        return read_natural_stories(path, stories=stories)
    if not path.is_file():
        raise ReadingTimeFormatError("no such file or folder", path=path, expected="a reading-time corpus")
    return read_rt_table(path, predictors=predictors, texts=stories)


# --- surprisal per token and the exclusions -----------------------------------------------------------------


@dataclass(frozen=True)
class TokenSurprisals:
    """One model's values per displayed token: ``bits`` (NaN where not scored), whether any of its
    words is unknown to the model (``unknown``) and whether it was scored (``scored``)."""

    bits: np.ndarray
    unknown: np.ndarray
    scored: np.ndarray

    @property
    def n_unknown(self) -> int:
        return int(self.unknown.sum())

    @property
    def n_unscored(self) -> int:
        return int((~self.scored).sum())


def token_surprisals(
    corpus: ReadingCorpus,
    word_bits: Sequence[np.ndarray | None],
    word_unknown: Sequence[Sequence[bool]],
) -> TokenSurprisals:
    """Per displayed token, the sum of its words' surprisals (each already the sum of its pieces).
    ``word_bits[s]``: sentence ``s``'s per-word surprisal in bits, ``None`` when the model could not
    score it; ``word_unknown[s]``: per word, whether the model's vocabulary lacks it."""
    n = len(corpus.tokens)
    bits = np.zeros(n)
    unknown = np.zeros(n, dtype=bool)
    scored = np.ones(n, dtype=bool)
    if len(word_bits) != len(corpus.sentences) or len(word_unknown) != len(corpus.sentences):
        raise ValueError(f"{len(word_bits)} scored sentences for {len(corpus.sentences)} in the corpus")
    for index, sentence in enumerate(corpus.sentences):
        tokens = np.asarray(sentence.word_token, dtype=np.int64)
        flags = np.asarray(word_unknown[index], dtype=bool)
        if len(flags) != len(tokens):
            raise ValueError(f"sentence {index}: {len(flags)} unknown-word flags for {len(tokens)} words")
        np.logical_or.at(unknown, tokens, flags)
        values = word_bits[index]
        if values is None:
            scored[tokens] = False
            continue
        values = np.asarray(values, dtype=float)
        if values.shape != tokens.shape:
            raise ValueError(f"sentence {index}: {values.size} surprisals for {tokens.size} words")
        np.add.at(bits, tokens, values)
    bits[~scored] = np.nan
    return TokenSurprisals(bits, unknown, scored)


NO_RT = "no_rt"
RT_OUT_OF_RANGE = "rt_out_of_range"
FIRST_IN_SENTENCE = "first_in_sentence"
LAST_IN_SENTENCE = "last_in_sentence"
ATTACHED_PUNCTUATION = "attached_punctuation"
NO_FREQUENCY = "no_frequency"
MISSING_PREDICTOR = "missing_predictor"
UNKNOWN_WORD = "unknown_word"
UNSCORED = "unscored"
NO_PREVIOUS_TOKEN = "no_previous_token"
PREVIOUS = "previous_"  # prefixes a reason of a spill-over token: previous_unknown_word
REASONS = (
    NO_RT,
    RT_OUT_OF_RANGE,
    FIRST_IN_SENTENCE,
    LAST_IN_SENTENCE,
    ATTACHED_PUNCTUATION,
    NO_FREQUENCY,
    MISSING_PREDICTOR,
    UNKNOWN_WORD,
    UNSCORED,
    NO_PREVIOUS_TOKEN,
    PREVIOUS + NO_FREQUENCY,
    PREVIOUS + UNKNOWN_WORD,
    PREVIOUS + UNSCORED,
)


@dataclass(frozen=True)
class Exclusions:
    """Per token, the reasons it is left out (empty: kept), and the settings that decided them."""

    reasons: list[tuple[str, ...]]
    rt_range: tuple[float, float]
    spillover: int
    unknown_words: str  # "excluded" or "kept"

    @property
    def kept(self) -> np.ndarray:
        return np.array([not reasons for reasons in self.reasons], dtype=bool)

    def counts(self) -> dict[str, int]:
        """Tokens per reason (a token may have several), then ``excluded`` (any) and ``kept``."""
        counted = Counter(reason for reasons in self.reasons for reason in reasons)
        out = {reason: counted.get(reason, 0) for reason in REASONS}
        out["excluded"] = sum(1 for reasons in self.reasons if reasons)
        out["kept"] = len(self.reasons) - out["excluded"]
        return out


def exclusions(
    corpus: ReadingCorpus,
    surprisals: Mapping[str, TokenSurprisals],
    *,
    rt_range: tuple[float, float] = (100.0, 3000.0),
    spillover: int = 2,
    keep_unknown: bool = False,
) -> Exclusions:
    """Every reason each token is left out (module docstring). A token is judged with the same
    rules for every model, so that all are compared on the same tokens: a word unknown to any
    model, or a sentence any model could not score, leaves the token out for all. The ``spillover``
    tokens before a token (in its story) enter its prediction, so their frequency and surprisal must
    be there too."""
    low, high = rt_range
    tokens = corpus.tokens
    n = len(tokens)
    unknown = np.zeros(n, dtype=bool)
    unscored = np.zeros(n, dtype=bool)
    for values in surprisals.values():
        unknown |= values.unknown
        unscored |= ~values.scored
    own: list[list[str]] = []
    for i, token in enumerate(tokens):
        reasons = []
        if token.rt is None:
            reasons.append(NO_RT)
        elif not low <= token.rt <= high:
            reasons.append(RT_OUT_OF_RANGE)
        sentence = corpus.sentences[token.sentence].word_token
        if sentence[0] == i:
            reasons.append(FIRST_IN_SENTENCE)
        if sentence[-1] == i:
            reasons.append(LAST_IN_SENTENCE)
        if token.attached_punctuation:
            reasons.append(ATTACHED_PUNCTUATION)
        if token.frequency is None:
            reasons.append(NO_FREQUENCY)
        if any(value is None for value in token.predictors.values()):
            reasons.append(MISSING_PREDICTOR)
        if unknown[i] and not keep_unknown:
            reasons.append(UNKNOWN_WORD)
        if unscored[i]:
            reasons.append(UNSCORED)
        own.append(reasons)
    reasons_of: list[tuple[str, ...]] = []
    for i, token in enumerate(tokens):
        reasons = list(own[i])
        for lag in range(1, spillover + 1):
            j = i - lag
            if j < 0 or tokens[j].story != token.story:
                reasons.append(NO_PREVIOUS_TOKEN)
                break
            for reason in (NO_FREQUENCY, UNKNOWN_WORD, UNSCORED):
                if reason in own[j] and PREVIOUS + reason not in reasons:
                    reasons.append(PREVIOUS + reason)
        reasons_of.append(tuple(reasons))
    return Exclusions(reasons_of, (low, high), spillover, "kept" if keep_unknown else "excluded")


def token_table_rows(
    corpus: ReadingCorpus, surprisals: Mapping[str, TokenSurprisals], excluded: Exclusions
) -> Iterator[list[str]]:
    """The per-token table (header first): code, story, position, token, its model words, sentence,
    RT, length, frequency, each model's surprisal (bits) and unknown flag, excluded and why."""
    names = list(surprisals)
    yield [
        "code", "story", "position", "token", "words", "sentence", "rt_ms", "length", "frequency",
        *[f"surprisal_bits:{name}" for name in names], *[f"unknown:{name}" for name in names],
        *corpus.predictors, "excluded", "reasons",
    ]  # fmt: skip
    for i, token in enumerate(corpus.tokens):
        yield [
            token.code,
            token.story,
            str(token.position),
            token.text,
            " ".join(token.words),
            str(token.sentence),
            _cell(token.rt),
            str(token.length),
            _cell(token.frequency),
            *[_cell(float(surprisals[name].bits[i]), digits=6) for name in names],
            *[str(bool(surprisals[name].unknown[i])).upper() for name in names],
            *[_cell(token.predictors.get(name)) for name in corpus.predictors],
            "TRUE" if excluded.reasons[i] else "FALSE",
            ";".join(excluded.reasons[i]),
        ]


def _cell(value: float | None, digits: int = 10) -> str:
    """A number for R's ``read.delim``: ``NA`` when missing."""
    if value is None or not math.isfinite(value):
        return "NA"
    return f"{value:.{digits}g}"
