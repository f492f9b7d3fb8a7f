"""Document trees for document-level models: grouping, cleaning, and TG reading them as streams."""

from __future__ import annotations

import pytest
import torch

from syntaxlm.data.documents import document_trees
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from syntaxlm.trees.clean import CHOE_CHARNIAK_CLEANING
from syntaxlm.trees.ptb import TreeReader, write_trees

ARTICLE_1 = "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *T*-1))) (. .)) )\n(ROOT (S (NP (PRP It)) (VP (VBD purred))))\n"
ARTICLE_2 = "(S (NP (NNS Dogs)) (VP (VBP bark)))\n"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "wsj_0001.mrg").write_text(ARTICLE_1)
    (tmp_path / "docs" / "wsj_0002.mrg").write_text(ARTICLE_2)
    return tmp_path / "docs"


def test_one_document_per_file_cleaned_with_pos_tags_kept(folder):
    documents = list(document_trees(folder))
    assert [str(d) for d in documents] == [
        "(DOC (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) (S (NP (PRP It)) (VP (VBD purred))))",
        "(DOC (S (NP (NNS Dogs)) (VP (VBP bark))))",
    ]


def test_fixed_size_documents(folder, tmp_path):
    documents = list(document_trees(folder, sentences_per_document=2))
    assert [len(d.children) for d in documents] == [2, 1]
    with pytest.raises(ValueError, match="one file"):
        list(document_trees(folder / "wsj_0002.mrg"))
    with pytest.raises(ValueError, match="at least 1"):
        list(document_trees(folder, sentences_per_document=0))


def test_tg_reads_documents_as_streams_with_memory(folder, tmp_path):
    write_trees(tmp_path / "docs.trees", document_trees(folder))
    trees = list(TreeReader(tmp_path / "docs.trees", cleaning=CHOE_CHARNIAK_CLEANING))
    assert [tree.label for tree in trees] == ["DOC", "DOC"]
    vocab = build_vocabulary(tmp_path / "docs.trees", tmp_path / "vocab", min_freq=1)
    config = {
        "model": "tg",
        "d_model": 16,
        "n_layers": 1,
        "n_heads": 2,
        "d_ff": 16,
        "segment_length": 8,
        "memory_length": 8,
    }
    model = build_model(config, {"vocab": vocab})
    corpus = model.prepare(trees)
    assert corpus.order == "streams"
    state = None
    for batch in corpus.batches(2, seed=0):
        out = model.loss(batch, state)
        state = out.state
        assert torch.isfinite(out.sums["lm"])
    assert state is not None and state[0].shape == (2, 8, 16)
