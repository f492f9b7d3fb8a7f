"""The statistics of the real data match the counts in their SOURCES.md files."""

import pytest

from syntaxlm.data.stats import corpus_stats

CONSTITUENCY = "constituency"


def test_wsj_sample(shared_data):
    stats = corpus_stats(shared_data / CONSTITUENCY / "nltk_wsj_sample_noncommercial/combined")
    # SOURCES.md: 3,914 trees, 100,676 leaves (incl. -NONE-)
    assert (stats["sentences"], stats["tokens_with_empty_elements"]) == (3914, 100_676)
    assert stats["empty_elements"] == 6592 and stats["words"] == 94_084
    assert stats["files"] == 199 and not stats["skipped"]


def test_craft(shared_data):
    stats = corpus_stats(shared_data / CONSTITUENCY / "craft/structural-annotation/treebank/penn")
    # SOURCES.md: 30,830 trees, 793,630 tokens (excluding -NONE-), 37,181 -NONE- elements.
    # 21 tokens hold a non-ASCII space (e.g. "Xpd\u200aTTD"); the SOURCES count missed them.
    assert stats["sentences"] == 30_830
    assert stats["empty_elements"] == 37_181
    assert stats["words_with_unicode_space"] == 21
    assert stats["words"] - stats["words_with_unicode_space"] == 793_630
    assert stats["phrase_labels"]["NP"] > 100_000 and "NP-SBJ" not in stats["phrase_labels"]


def test_gum(shared_data):
    stats = corpus_stats(shared_data / CONSTITUENCY / "gum_const_cc")
    # SOURCES.md: 4,636 trees, 98,349 tokens. 14 preterminals have their word on the next line,
    # "(NN\n   hermit)"; counting "(TAG word)" on single lines misses them: 98,349 + 14.
    assert stats["sentences"] == 4636
    assert stats["words"] == 98_349 + 14
    assert stats["phrase_labels"]["ROOT"] == 4636


@pytest.mark.parametrize(
    "path, sentences, words",
    [
        ("ewt/en_ewt-ud-train.conllu", 12_544, 204_577),
        ("ewt/en_ewt-ud-dev.conllu", 2001, 25_147),
        ("ewt/en_ewt-ud-test.conllu", 2077, 25_094),
        ("pud/en_pud-ud-test.conllu", 1000, 21_180),
        ("pronouns/en_pronouns-ud-test.conllu", 285, 1705),
        ("partut/en_partut-ud-train.conllu", 1781, 43_504),
        ("partut/en_partut-ud-dev.conllu", 156, 2722),
        ("partut/en_partut-ud-test.conllu", 153, 3408),
        ("lines/en_lines-ud-train.conllu", 3457, 64_684),
        ("lines/en_lines-ud-dev.conllu", 1118, 21_637),
        ("lines/en_lines-ud-test.conllu", 1121, 19_984),
        ("gum/en_gum-ud-dev.conllu", 1575, 28_119),
        ("gum/en_gum-ud-test.conllu", 1464, 28_397),
    ],
)
def test_ud_english(shared_data, path, sentences, words):
    stats = corpus_stats(shared_data / "ud_english" / path)
    assert (stats["sentences"], stats["words"]) == (sentences, words)
    assert not stats["skipped"]
