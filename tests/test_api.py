"""The top-level API (syntaxlm/__init__.py): what a notebook needs, imported on first use; and the
notebook example of docs/inference.md, run as written on a tiny model and a synthetic suite."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest
import torch

import syntaxlm
from syntaxlm.data.synthetic import write_synthetic_treebank
from syntaxlm.models import build_model
from syntaxlm.text.build import build_vocabulary
from tests.conftest import PROJECT_ROOT
from tests.test_beam import TINY

DOCS = PROJECT_ROOT / "docs" / "inference.md"
EXAMPLE_MODEL = "runs/tg-ptb/best"
EXAMPLE_SUITE = "syntaxgym/suites/number_prep.json"


def test_import_syntaxlm_is_cheap_and_names_resolve_on_first_use():
    code = "import sys, syntaxlm; print('torch' in sys.modules, 'numpy' in sys.modules)"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT
    )
    assert loaded.stdout.split() == ["False", "False"]
    for name, module in syntaxlm._EXPORTS.items():
        assert getattr(syntaxlm, name) is getattr(importlib.import_module(module), name)
    assert set(syntaxlm.__all__) == {"__version__", *syntaxlm._EXPORTS}
    assert set(dir(syntaxlm)) >= set(syntaxlm.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Scorrer'"):
        syntaxlm.Scorrer  # noqa: B018


def test_a_model_says_which_registered_model_it_is():
    from syntaxlm.text.vocab import WordVocab

    vocab = WordVocab.build([["a", "b"]], min_freq=1, symbols=["(S", "S)"])
    txl = build_model({"model": "txl-terminals", **TINY}, {"vocab": vocab})
    tg = build_model({"model": "tg", **TINY}, {"vocab": vocab})
    assert type(txl) is type(tg)  # one class serves TG and both TXL baselines
    assert repr(txl).splitlines()[:2] == [
        "TransformerGrammar(",
        "  model='txl-terminals': TXL (terminals), words only",
    ]
    assert "model='tg': TG, joint model of words and trees" in repr(tg)
    assert (txl.card.name, txl.card.label, txl.card.joint) == ("txl-terminals", "TXL (terminals)", False)


def notebook_example() -> str:
    """The Python block of the "In a notebook" section of docs/inference.md."""
    section = DOCS.read_text().split("## In a notebook", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_notebook_example_of_the_docs_runs(tmp_path, capsys):
    write_synthetic_treebank(tmp_path / "data", sentences=60, seed=0, items_per_suite=2)
    vocab = build_vocabulary(tmp_path / "data" / "train.trees", tmp_path / "words", kind="word")
    torch.manual_seed(0)
    build_model({"model": "tg", **TINY}, {"vocab": vocab}).save_pretrained(tmp_path / "tg")
    code = notebook_example()
    assert EXAMPLE_MODEL in code and EXAMPLE_SUITE in code
    suite = tmp_path / "data" / "suites" / "synthetic_number_prep.json"
    code = code.replace(EXAMPLE_MODEL, str(tmp_path / "tg")).replace(EXAMPLE_SUITE, str(suite))
    names: dict = {}
    exec(compile(code, str(DOCS), "exec"), names)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("TransformerGrammar(") and "model='tg': TG" in printed[1]
    words = [line.split() for line in printed if line.split()[:2] in (["0", "beam"], ["1", "beam"])]
    second = [w[2] for w in words if w[0] == "1"]
    assert second == ["The", "company", "'s", "lawyers", "did", "n't", "agree", "."]
    assert any(w[-1] == "unknown" for w in words)  # the synthetic vocabulary lacks "lawyers"
    result = names["result"]
    assert 0 <= result.accuracy_pred0 <= 1 and printed[-1].startswith("synthetic_number_prep")
