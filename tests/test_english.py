"""The real-English corpus (``syntaxlm data english``) on a slice of ``../shared/data/constituency``:
a few documents of each treebank in the same layout, with each treebank's own split lists."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from syntaxlm.cli import app
from syntaxlm.data.english import TREEBANKS, make_english_corpus
from syntaxlm.data.split import SplitError
from syntaxlm.trees.ptb import TreeReader

CRAFT_ARTICLES = {"train": 2, "dev": 1, "test": 1}  # articles of the slice, by CRAFT's own split
GUM_DOCUMENTS = {"GUM_academic_art": "train", "GUM_academic_exposure": "dev", "GUM_bio_byron": "dev"}
WSJ_FILES = {"wsj_0001.mrg": "train", "wsj_0002.mrg": "train", "wsj_0160.mrg": "dev", "wsj_0199.mrg": "test"}


@pytest.fixture(scope="module")
def source(shared_data, tmp_path_factory) -> Path:
    """A copy, in a temporary folder, of a few documents of each treebank and the split lists."""
    real = shared_data / "constituency"
    folder = tmp_path_factory.mktemp("constituency")
    craft = folder / "craft"
    (craft / "articles" / "ids").mkdir(parents=True)
    (craft / "structural-annotation" / "treebank" / "penn").mkdir(parents=True)
    for split, count in CRAFT_ARTICLES.items():
        ids = (real / "craft" / "articles" / "ids" / f"craft-ids-{split}.txt").read_text().split()
        (craft / "articles" / "ids" / f"craft-ids-{split}.txt").write_text("\n".join(ids) + "\n")
        for pmid in ids[:count]:
            shutil.copy(real / "craft/structural-annotation/treebank/penn" / f"{pmid}.tree",
                        craft / "structural-annotation/treebank/penn")  # fmt: skip
    gum = folder / "gum_const_cc"
    gum.mkdir()
    shutil.copy(real / "gum_const_cc" / "splits.md", gum)
    for name in GUM_DOCUMENTS:
        shutil.copy(real / "gum_const_cc" / f"{name}.ptb", gum)
    wsj = folder / "nltk_wsj_sample_noncommercial" / "combined"
    wsj.mkdir(parents=True)
    for name in WSJ_FILES:
        shutil.copy(real / "nltk_wsj_sample_noncommercial" / "combined" / name, wsj)
    return folder


def _trees(path: Path) -> list:
    return list(TreeReader(path))


def test_each_document_goes_whole_to_its_treebanks_split_cleaned_as_the_recipes_read(source, tmp_path):
    manifest = make_english_corpus(source, tmp_path / "english")
    # read with POS tags required: the cleaning keeps them
    written = {split: _trees(tmp_path / "english" / f"{split}.trees") for split in ("train", "dev", "test")}

    expected: dict[str, list[str]] = {split: [] for split in written}  # each split's trees, in file order
    craft = source / "craft"
    for split in written:
        ids = (craft / "articles" / "ids" / f"craft-ids-{split}.txt").read_text().split()
        for pmid in ids:
            path = craft / "structural-annotation/treebank/penn" / f"{pmid}.tree"
            if path.is_file():
                expected[split].append(path)
    for name, split in GUM_DOCUMENTS.items():
        expected[split].append(source / "gum_const_cc" / f"{name}.ptb")
    for name, split in WSJ_FILES.items():
        expected[split].append(source / "nltk_wsj_sample_noncommercial" / "combined" / name)
    for split, trees in written.items():
        files = sorted(expected[split], key=lambda path: (str(path.parent), path.name))
        words = [tree.leaves() for path in files for tree in TreeReader(path, cleaning=_cleaning())]
        assert sorted(map(tuple, (t.leaves() for t in trees))) == sorted(map(tuple, words))
        assert manifest["splits"][split]["sentences"] == len(trees)
        assert manifest["splits"][split]["words"] == sum(len(w) for w in words)
        assert manifest["splits"][split]["files"] == len(files)
        for tree in trees:
            text = tree.to_bracket()
            assert "-NONE-" not in text and "NP-SBJ" not in text and tree.label not in ("ROOT", "")
    per_treebank = manifest["treebanks"]
    assert set(per_treebank) == set(TREEBANKS)
    assert dict(per_treebank["craft"]["documents"]) == CRAFT_ARTICLES
    assert per_treebank["wsj-sample"]["documents"] == {"train": 2, "dev": 1, "test": 1}
    assert sum(sum(counts["sentences"].values()) for counts in per_treebank.values()) == sum(
        len(trees) for trees in written.values()
    )
    on_disk = json.loads((tmp_path / "english" / "split.json").read_text())
    assert on_disk["splits"] == manifest["splits"] and on_disk["method"] == "real-english"


def _cleaning():
    from syntaxlm.data.english import CLEANING

    return CLEANING


def test_the_command_line_and_its_errors(source, tmp_path):
    result = CliRunner().invoke(
        app, ["data", "english", str(source), "--out", str(tmp_path / "wsj"), "--treebanks", "wsj-sample"]
    )
    assert result.exit_code == 0, result.output
    assert "train: " in result.output and "wsj-sample: sentences train" in result.output
    assert not (tmp_path / "wsj" / "train.trees").read_text().count("(TITLE")  # no CRAFT in it
    with pytest.raises(SplitError, match="unknown treebank.*penn"):
        make_english_corpus(source, tmp_path / "x", ["penn"])
    with pytest.raises(FileNotFoundError, match="no GUM_\\*.ptb files; expected the gum treebank"):
        make_english_corpus(tmp_path, tmp_path / "x", ["gum"])
