"""``syntaxlm inspect``: TG records in the authors' layout, tables, and the other linearisations."""

from __future__ import annotations

import json

import pytest

from syntaxlm.structure.actions import tree_to_actions
from syntaxlm.structure.tg import tg_sequence
from syntaxlm.errors import TreeError
from syntaxlm.report.plots import attention_mask_figure
from syntaxlm.structure.tg_view import DENSE_CELL_LIMIT, tg_records, tg_table
from syntaxlm.trees.tree import Tree
from tests.test_cli import run

TREES = (
    "(S (NP the blue bird) (VP sings))\n(S (NP (NP the dog) (PP of (NP mine))) (VP barks (ADVP loudly)))\n"
)
CONLLU = "1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tbird\tbird\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n3\tsings\tsing\tVERB\tVBZ\t_\t0\troot\t_\t_\n\n"


@pytest.fixture(scope="module")
def golden_trees(golden):
    data = json.loads((golden / "tg_trees.json").read_text())
    vocab = data["vocab"]
    index = {token: i for i, token in enumerate(vocab)}
    sequences = {}
    for record in data["trees"]:
        actions = tree_to_actions(Tree.from_bracket(record["tree"]))
        sequences[record["id"]] = tg_sequence([index[t] for t in actions.tokens], actions.kinds)
    return vocab, sequences


def spelled(record: dict, vocab: list[str]) -> dict:
    return record | {
        "inputs": [vocab[i] for i in record["inputs"]],
        "labels": [vocab[i] for i in record["labels"]],
    }


def test_single_records_are_the_golden_runs_spelled(golden, golden_trees):
    vocab, sequences = golden_trees
    for run_ in json.loads((golden / "tg_single_chunk.json").read_text())["runs"][:40]:
        sequence = sequences[run_["id"]]
        padded = run_["seq_len"] - len(sequence)
        (record,) = tg_records(sequence, vocab.__getitem__, id=run_["id"])
        # The golden runs are padded by 0-5 positions; our single record is unpadded.
        expected = spelled(run_, vocab)
        for key in (
            "inputs",
            "inputs_ttypes",
            "labels",
            "labels_ttypes",
            "attn_indicator",
            "depth",
            "attn_mask",
            "attn_relpos",
        ):
            assert record[key] == expected[key][: len(expected[key]) - padded], (run_["id"], key)


def test_chunked_records_are_the_golden_chunks_spelled(golden, golden_trees):
    vocab, sequences = golden_trees
    for run_ in json.loads((golden / "tg_chunked_L8.json").read_text())["runs"][:40]:
        records = tg_records(sequences[run_["id"]], vocab.__getitem__, segment_length=8, id=run_["id"])
        assert [{k: v for k, v in r.items() if k not in ("id", "segment")} for r in records] == [
            spelled(chunk, vocab) for chunk in run_["chunks"]
        ]
        assert [r["segment"] for r in records] == list(range(len(records)))


def test_table_shows_figure_2a_and_the_grid():
    actions = tree_to_actions(Tree.from_bracket("(S (NP the blue bird) (VP sings))"))
    table = {token: i + 4 for i, token in enumerate(dict.fromkeys(actions.tokens))}
    spelling = {i: t for t, i in table.items()} | {0: "<pad>", 1: "<s>"}
    text = tg_table(tg_sequence([table[t] for t in actions.tokens], actions.kinds), spelling.__getitem__)
    lines = text.splitlines()
    assert lines[0].split() == ["i", "input", "type", "attn", "label", "depth"]
    assert lines[7].split() == ["6", "NP)", "CNT1", "COMPOSE", "_", "2"]
    assert lines[8].split() == ["7", "NP)", "CNT2", "STACK", "(VP", "2"]
    grid_row_6 = next(line for line in lines[16:] if line.split()[0] == "6")
    assert grid_row_6.split() == ["6", "·", "·", "0", "-1", "-1", "-1", "0", *["·"] * 7]


def test_inspect_tg_command(tmp_path):
    source = tmp_path / "t.trees"
    source.write_text(TREES)
    result = run("inspect", "tg", source, "--limit", "1")
    assert result.returncode == 0, result.stderr
    assert "tree 0: (S (NP the blue bird NP) (VP sings VP) S)" in result.stdout
    assert "COMPOSE" in result.stdout
    result = run("inspect", "tg", source, "--segment-length", "8", "--smart-memory", "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["id"], r["segment"]) for r in records] == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)]
    assert records[1]["memory_pos"] == [-1, -1, -1, -1, -1, 0, 1, 6]
    assert records[0]["labels"][6] == "<pad>" and records[0]["inputs"][6] == "NP)"
    assert run("inspect", "tg", source, "--plot", tmp_path / "masks").returncode == 0
    assert sorted(p.name for p in (tmp_path / "masks").iterdir()) == ["tree-0.png", "tree-1.png"]
    terminals = run("inspect", "tg", source, "--variant", "txl-terminals", "--json", "--limit", "1")
    assert json.loads(terminals.stdout)["inputs"] == ["<s>", "the", "blue", "bird", "sings", "</s>"]


def test_inspect_tg_refuses_a_dense_mask_too_large_before_building_it(tmp_path):
    # A 100,000-deep tree's single segment would need a 300,002 × 300,002 mask (84 GiB of booleans).
    source = tmp_path / "deep.trees"
    source.write_text("(X " * 100_000 + "a" + ")" * 100_000 + "\n")
    result = run("inspect", "tg", source)
    assert result.returncode == 2
    refusal = "tree 0: its TG sequence of 300,002 positions needs a dense 300,002 × 300,002 mask"
    assert refusal in result.stderr
    assert "--segment-length" in result.stderr and "Traceback" not in result.stderr


def test_a_deep_tree_is_refused_whole_and_shown_in_segments(tmp_path):
    depth = 3_000  # 9,002 positions: 81 million cells whole, over DENSE_CELL_LIMIT
    actions = tree_to_actions(Tree.from_bracket("(X " * depth + "a" + ")" * depth))
    sequence = tg_sequence([{"(X": 1, "a": 2, "X)": 3}[t] for t in actions.tokens], actions.kinds)
    assert len(sequence) ** 2 > DENSE_CELL_LIMIT
    for show in (tg_records, tg_table, attention_mask_figure):
        with pytest.raises(TreeError, match="9,002"):
            show(sequence, str)
    records = tg_records(sequence, str, segment_length=64)
    assert len(records) == -(-len(sequence) // 64) and records[-1]["end_of_seq"] == 1
    with pytest.raises(TreeError, match="--memory-length"):
        tg_table(sequence, str, segment_length=64, memory_length=300_000)


def test_inspect_tg_with_a_vocabulary(tmp_path):
    source = tmp_path / "t.trees"
    source.write_text(TREES)
    vocab = tmp_path / "vocab"
    assert (
        run(
            "vocab",
            "build",
            source,
            "--out",
            vocab,
            "--min-freq",
            "2",
            "--symbols",
            "choe-charniak",
            "--no-pos-tags",
        ).returncode
        == 0
    )
    result = run("inspect", "tg", source, "--vocab", vocab, "--json", "--limit", "1")
    assert result.returncode == 0, result.stderr
    inputs = json.loads(result.stdout)["inputs"]
    assert inputs[:6] == ["<s>", "(S", "(NP", "the", "UNK-LC", "UNK-LC"]  # "blue", "bird" are rare


def test_inspect_actions_distances_som(tmp_path):
    source = tmp_path / "t.trees"
    source.write_text(TREES)
    result = run("inspect", "actions", source, "--json", "--limit", "1")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert " ".join(record["rnng"]) == "NT(S) NT(NP) the blue bird REDUCE NT(VP) sings REDUCE REDUCE"
    assert record["sclm"]["trailing"] == "REDUCE_REDUCE"
    text = run("inspect", "actions", source).stdout
    assert "stack head" in text and "next n-gram" in text

    result = run("inspect", "distances", source, "--json")
    assert result.returncode == 0, result.stderr
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["definition"] == "lowest-common-ancestor heights"  # (NP the blue bird) is ternary
    assert second["definition"] == "exact inverse of the parser"
    assert second["tree"] == "(X (X (X the dog) (X of mine)) (X barks loudly))"

    conllu = tmp_path / "t.conllu"
    conllu.write_text(CONLLU)
    result = run("inspect", "som", conllu, "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["words"] == ["the", "bird", "sings"] and len(record["labels"]) == 3
    assert "slot" in run("inspect", "som", source, "--slots", "4").stdout


def test_inspect_bad_trees_is_one_clear_line(tmp_path):
    source = tmp_path / "bad.trees"
    source.write_text("(S (NP the bird) (VP sings)\n")
    result = run("inspect", "tg", source)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {source}:1:")
    assert "Traceback" not in result.stderr
