"""The command line, run as a user runs it (a subprocess), on small files made here."""

import json
import subprocess
import sys

import pytest

from syntaxlm.trees.ptb import read_trees
from syntaxlm.trees.tree import Tree

TREES = "( (S (NP-SBJ (DT The) (NN bird)) (VP (VBZ sings) (NP (-NONE- *T*))) (. .)) )\n( (S (NP (PRP It)) (VP (VBD flew))) )\n"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "syntaxlm", *map(str, args)], capture_output=True, text=True, check=False
    )


def test_stats_and_clean(tmp_path):
    source = tmp_path / "in.mrg"
    source.write_text(TREES)
    result = run("data", "stats", source, "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert (stats["sentences"], stats["words"], stats["empty_elements"]) == (2, 6, 1)

    out = tmp_path / "clean.trees"
    result = run("data", "clean", source, out, "--style", "choe-charniak", "--remove-punctuation")
    assert result.returncode == 0, result.stderr
    assert [t.to_bracket() for t in read_trees(out, pos_tags=False)] == [
        "(S (NP The bird) (VP sings))",
        "(S (NP It) (VP flew))",
    ]
    posless = json.loads(run("data", "stats", out, "--no-pos-tags", "--json").stdout)
    assert (posless["sentences"], posless["words"], posless["phrase_labels"]) == (
        2,
        5,
        {"S": 2, "NP": 2, "VP": 2},
    )
    left = tmp_path / "left.trees"
    assert run("data", "transform", out, left, "--kind", "left-branching").returncode == 0
    assert next(iter(read_trees(left, pos_tags=False))) == Tree.from_bracket("(S (NP (VP The bird) sings))")


def test_dep2tree(tmp_path):
    source = tmp_path / "in.conllu"
    source.write_text(
        "1\tdogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"
    )
    out = tmp_path / "out.trees"
    result = run("data", "dep2tree", source, out)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "(root dogs bark)\n"


@pytest.mark.parametrize(
    "command",
    [
        ("data", "stats", "{source}"),
        ("data", "dep2tree", "{source}", "{out}"),
        ("vocab", "build", "{source}", "--out", "{out}"),
    ],
    ids=["data stats", "data dep2tree", "vocab build"],
)
def test_a_conllu_head_of_5000_digits_is_one_clear_line(tmp_path, command):
    # more digits than int() converts (4,300): refused at the HEAD field, before conversion
    source = tmp_path / "in.conllu"
    head = "9" * 5000
    source.write_text(f"1\tdogs\t_\t_\t_\t_\t{head}\tnsubj\t_\t_\n2\tbark\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    result = run(*(part.format(source=source, out=tmp_path / "out") for part in command))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip() == (
        f"error: {source}:1:16: HEAD holds a number of 5000 digits; "
        "expected word numbers of at most 18 digits (sentence 0)"
    )


def test_bad_input_is_one_clear_line(tmp_path):
    source = tmp_path / "bad.mrg"
    source.write_text("(S (NP the (NN bird)))\n")
    result = run("data", "stats", source)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {source}:1:12: word 'the' outside a preterminal: (NP ...) holds both words and brackets; "
        "expected every word alone under a POS tag, e.g. (NN word) (sentence 0); "
        "for trees without POS tags (Choe–Charniak style) pass --no-pos-tags"
    )
    assert "Traceback" not in result.stderr
    skipped = run("data", "stats", source, "--skip-bad", "--json")
    assert skipped.returncode == 0 and len(json.loads(skipped.stdout)["skipped"]) == 1
    missing = run("data", "stats", tmp_path / "nope.mrg")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_download_list():
    result = run("data", "download", "--list")
    assert result.returncode == 0
    for name in ("ud-english-ewt", "ud-english-pud", "ud-english-pronouns", "blimp", "syntaxgym"):
        assert name in result.stdout


def test_vocab_build(tmp_path):
    from syntaxlm.text.base import load_vocabulary

    source = tmp_path / "in.mrg"
    source.write_text(TREES * 3)
    for kind in ("word", "subword"):
        out = tmp_path / kind
        result = run(
            "vocab", "build", source, "--out", out, "--kind", kind, "--vocab-size", "300", "--min-freq", "1"
        )
        assert result.returncode == 0, result.stderr
        vocab = load_vocabulary(out)
        assert "(NP" in vocab and "NP)" in vocab and "NT(NP)" in vocab and "REDUCE" in vocab
        assert "(NP-SBJ" not in vocab and "(-NONE-" not in vocab
