"""Fuzzing every input path with hypothesis, on a budget that keeps the test run short.

The targets and what counts as an allowed outcome are in ``fuzz_targets.py``; the same targets
run for longer in ``scripts/fuzz_campaign.py`` (see docs/reliability.md for its record). Here each
target gets a bounded number of examples (``EXAMPLES``), its atheris decoder is checked on its
seeds and on random bytes, and the no-silent-truncation promise of the two treebank readers is
checked as a property: a file of N valid trees with one broken among them gives the N - 1 others
back, and says so when it skips the broken one.
"""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syntaxlm.errors import ConlluFormatError, TreeFormatError
from syntaxlm.trees.dependency import ConlluReader, parse_conllu
from syntaxlm.trees.ptb import TreeReader
from tests.reliability.fuzz_targets import TARGETS, conllu_sentence
from tests.strategies import pos_tagged_trees

# per target; the whole directory runs in well under a minute
EXAMPLES = {"parseval": 150, "tg": 200, "parser_options": 100}
DEFAULT_EXAMPLES = 300
FUZZ_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("name", list(TARGETS))
def test_broken_input_gives_a_result_or_a_located_error(name, folder):
    target = TARGETS[name]

    @settings(max_examples=EXAMPLES.get(name, DEFAULT_EXAMPLES), **FUZZ_SETTINGS)
    @given(target.strategy())
    def run(value):
        target.check(value, folder)

    run()


@pytest.mark.parametrize("name", list(TARGETS))
def test_raw_bytes_decode_into_target_inputs(name, folder):
    """What atheris feeds the campaign: the valid seeds, and random bytes of every length class."""
    target = TARGETS[name]
    rng = random.Random(name)
    raw = [b"", b"\x00", b"\xff" * 7, *(rng.randbytes(size) for size in (1, 2, 3, 16, 64, 300, 2000))]
    for data in [*target.seeds(), *raw]:
        target.check(target.from_bytes(data), folder)


@st.composite
def treebank_with_one_broken_tree(draw) -> tuple[list, bytes, int]:
    """Trees one per line, one of them with brackets and text put in or taken out (as text: bytes
    that are not UTF-8 make the whole file unreadable, not one tree)."""
    trees = draw(st.lists(pos_tagged_trees(8), min_size=2, max_size=6))
    lines = [tree.to_bracket() for tree in trees]
    bad = draw(st.integers(0, len(lines) - 1))
    line = lines[bad]
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(line)))
        if draw(st.booleans()):
            line = line[:at] + draw(st.sampled_from(["(", ")", "((", "()", "(X", " x"])) + line[at:]
        else:
            line = line[:at] + line[at + draw(st.integers(1, 3)) :]
    lines[bad] = line
    return trees, "".join(line + "\n" for line in lines).encode(), bad


@settings(max_examples=200, **FUZZ_SETTINGS)
@given(treebank_with_one_broken_tree())
def test_a_broken_tree_costs_that_tree_only_and_is_reported(tmp_path_factory, case):
    trees, data, bad = case
    path = tmp_path_factory.mktemp("skip") / "trees.mrg"
    path.write_bytes(data)
    reader = TreeReader(path, skip_bad=True)
    read = list(reader)
    others = iter(tree for k, tree in enumerate(trees) if k != bad)
    expected = next(others, None)
    for tree in read:  # the others, in order, none lost (the broken one may be read as some tree)
        if tree == expected:
            expected = next(others, None)
    assert expected is None, f"lost {expected}"
    assert len(read) + len(reader.report.skipped) >= len(trees)  # the broken one is read or reported
    assert reader.report.trees == len(read)
    if reader.report.skipped:
        try:
            list(TreeReader(path))
        except TreeFormatError as error:
            assert error.path == str(path) and error.line is not None
        else:
            raise AssertionError("skip_bad skipped a tree that strict reading accepts")


@settings(max_examples=200, **FUZZ_SETTINGS)
@given(st.lists(conllu_sentence(), min_size=2, max_size=5), st.data())
def test_a_broken_sentence_costs_that_sentence_only_and_is_reported(sentences, data):
    bad = data.draw(st.integers(0, len(sentences) - 1))
    lines = sentences[bad].rstrip("\n").split("\n")  # its token lines
    at = data.draw(st.integers(0, len(lines) - 1))
    lines[at] = lines[at].replace("\t", " ", 1)  # nine columns
    text = "".join(sentences[:bad]) + "\n".join(lines) + "\n\n" + "".join(sentences[bad + 1 :])
    reader = ConlluReader(io.StringIO(text, newline=None), skip_bad=True)
    read = list(reader)
    assert read == [parse_conllu(s)[0] for k, s in enumerate(sentences) if k != bad]
    assert [error.sentence for error in reader.report.skipped] == [bad]
    with pytest.raises(ConlluFormatError) as caught:
        parse_conllu(text)
    assert caught.value.sentence == bad and caught.value.column == 1
