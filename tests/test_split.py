"""Train/dev/test splits (syntaxlm.data.split, ``syntaxlm data split``)."""

import json

import pytest

from syntaxlm.data.split import (
    SplitError,
    parse_ratios,
    split_by_file_lists,
    split_by_ratio,
    split_by_wsj_sections,
    wsj_section,
)
from syntaxlm.trees.dependency import ConlluReader
from syntaxlm.trees.ptb import read_trees
from tests.test_cli import run


def tree(word: str) -> str:
    return f"( (S (NP-SBJ (NN {word})) (VP (VBZ sings) (NP (-NONE- *T*)))) )\n"


def write_wsj(root, sections=range(25), files_per_section=2):
    """A WSJ-like folder: root/SS/wsj_SSNN.mrg, two trees a file, words naming their file."""
    for section in sections:
        folder = root / f"{section:02d}"
        folder.mkdir(parents=True)
        for number in range(1, files_per_section + 1):
            name = f"wsj_{section:02d}{number:02d}"
            (folder / f"{name}.mrg").write_text(tree(f"{name}a") + tree(f"{name}b"))
    return root


def words(path):
    return [t.leaves()[0] for t in read_trees(path)]


def test_wsj_sections_split_train_02_21_dev_22_test_23(tmp_path):
    wsj = write_wsj(tmp_path / "wsj")
    manifest = split_by_wsj_sections([wsj], tmp_path / "out")
    sentences = {name: split["sentences"] for name, split in manifest["splits"].items()}
    assert sentences == {"train": 80, "dev": 4, "test": 4}
    assert manifest["left_out"] == {"files": 6, "sentences": 12, "words": 36}  # sections 00, 01, 24
    assert words(tmp_path / "out" / "dev.trees") == ["wsj_2201a", "wsj_2201b", "wsj_2202a", "wsj_2202b"]
    train = words(tmp_path / "out" / "train.trees")
    assert train[0] == "wsj_0201a" and train[-1] == "wsj_2102b"
    # trees are written as read: function tags and traces kept, the outer bracket dropped
    first = (tmp_path / "out" / "test.trees").read_text().splitlines()[0]
    assert first == "(S (NP-SBJ (NN wsj_2301a)) (VP (VBZ sings) (NP (-NONE- *T*))))"
    assert json.loads((tmp_path / "out" / "split.json").read_text())["method"] == "wsj-sections"


def test_wsj_sections_refuse_files_without_a_section_and_empty_splits(tmp_path):
    assert wsj_section("wsj/02/wsj_0201.mrg") == 2
    with pytest.raises(SplitError, match=r"unknown WSJ section 99; expected sections 00 to 24"):
        wsj_section("wsj_9901.mrg")
    with pytest.raises(SplitError, match=r"other.mrg: no WSJ section in the file name; expected a name like"):
        wsj_section("other.mrg")
    wsj = write_wsj(tmp_path / "wsj", sections=[0, 1, 2])
    empty_dev = r"the dev split \(sections 22\) would be empty: the 6 input files are in sections 00, 01, 02"
    with pytest.raises(SplitError, match=empty_dev):
        split_by_wsj_sections([wsj], tmp_path / "out")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_ratio_split_is_seeded_keeps_input_order_and_covers_every_sentence(tmp_path):
    source = tmp_path / "all.mrg"
    source.write_text("".join(tree(f"w{i}") for i in range(20)))
    manifest = split_by_ratio([source], tmp_path / "a", [0.8, 0.1, 0.1], seed=3)
    assert [s["sentences"] for s in manifest["splits"].values()] == [16, 2, 2]
    parts = {name: words(tmp_path / "a" / f"{name}.trees") for name in ("train", "dev", "test")}
    assert sorted([w for part in parts.values() for w in part], key=lambda w: int(w[1:])) == [
        f"w{i}" for i in range(20)
    ]
    for part in parts.values():
        assert part == sorted(part, key=lambda w: int(w[1:]))
    split_by_ratio([source], tmp_path / "b", [0.8, 0.1, 0.1], seed=3)
    split_by_ratio([source], tmp_path / "c", [0.8, 0.1, 0.1], seed=4)
    assert words(tmp_path / "b" / "dev.trees") == parts["dev"]
    assert [words(tmp_path / "c" / f"{n}.trees") for n in ("dev", "test")] != [parts["dev"], parts["test"]]
    two = split_by_ratio([source], tmp_path / "d", [0.9, 0.1])
    assert list(two["splits"]) == ["train", "dev"] and not (tmp_path / "d" / "test.trees").exists()


def test_ratio_errors(tmp_path):
    with pytest.raises(SplitError, match=r"ratios 0.8,0.1,0.2 sum to 1.1; expected a sum of 1"):
        parse_ratios("0.8,0.1,0.2")
    with pytest.raises(SplitError, match=r"expected numbers separated by commas"):
        parse_ratios("0.8;0.2")
    with pytest.raises(SplitError, match=r"expected 2 \(train, dev\) or 3"):
        parse_ratios("1")
    source = tmp_path / "few.mrg"
    source.write_text(tree("a") + tree("b") + tree("c"))
    with pytest.raises(SplitError, match=r"the test split would be empty: 0.1 of 3 sentences rounds to none"):
        split_by_ratio([source], tmp_path / "out", [0.8, 0.1, 0.1])
    assert not (tmp_path / "out" / "train.trees").exists()


def test_file_lists_by_name_pattern_path_and_list_file(tmp_path):
    wsj = write_wsj(tmp_path / "wsj", sections=[0, 1])
    listed = tmp_path / "test.txt"
    listed.write_text("wsj_0102.mrg\n\n")
    manifest = split_by_file_lists(
        [wsj],
        tmp_path / "out",
        {"train": ["wsj_00*.mrg"], "dev": ["01/wsj_0101.mrg"], "test": [f"@{listed}"]},
    )
    assert {name: (s["files"], s["sentences"]) for name, s in manifest["splits"].items()} == {
        "train": (2, 4),
        "dev": (1, 2),
        "test": (1, 2),
    }
    assert words(tmp_path / "out" / "test.trees") == ["wsj_0102a", "wsj_0102b"]
    with pytest.raises(SplitError, match=r"dev: 'wsj_09\*' names none of the 4 input files"):
        split_by_file_lists([wsj], tmp_path / "x", {"train": ["wsj_00*"], "dev": ["wsj_09*"]})
    with pytest.raises(SplitError, match=r"wsj_0001.mrg is named for both train and dev"):
        split_by_file_lists([wsj], tmp_path / "x", {"train": ["wsj_00*"], "dev": ["wsj_0001.mrg"]})


def test_conllu_is_split_as_written(tmp_path):
    sentence = "# sent_id = {i}\n1\tw{i}\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    source = tmp_path / "in.conllu"
    source.write_text("".join(sentence.format(i=i) for i in range(10)))
    manifest = split_by_ratio([source], tmp_path / "out", [0.6, 0.2, 0.2])
    assert manifest["format"] == "conllu"
    texts = [(tmp_path / "out" / f"{name}.conllu").read_text() for name in ("train", "dev", "test")]
    assert sum(len(list(ConlluReader(tmp_path / "out" / f"{n}.conllu"))) for n in manifest["splits"]) == 10
    assert all(text.startswith("# sent_id = ") for text in texts)
    other = tmp_path / "other.mrg"
    other.write_text(tree("a"))
    with pytest.raises(SplitError, match=r"the inputs mix CoNLL-U .* and PTB brackets"):
        split_by_ratio([source, other], tmp_path / "mixed", [0.5, 0.5])


def test_cli_split(tmp_path):
    wsj = write_wsj(tmp_path / "wsj", sections=[0, 1])
    out = tmp_path / "out"
    result = run("data", "split", wsj / "00", wsj / "01", "--out", out, "--ratio", "0.5,0.25,0.25")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("train: 4 sentences of ") and first.endswith(f"files -> {out}/train.trees")
    both = run("data", "split", wsj, "--out", tmp_path / "x", "--ratio", "0.5,0.5", "--wsj-sections")
    assert both.returncode == 2
    assert "choose one way to split: --ratio, --wsj-sections or --train/--dev/--test" in both.stderr
    empty = run("data", "split", wsj, "--out", tmp_path / "x", "--wsj-sections")
    assert empty.returncode == 2 and empty.stderr.startswith(
        "error: the train split (sections 02-21) would be empty: the 4 input files are in sections 00, 01"
    ), empty.stderr
    posless = tmp_path / "posless.trees"
    posless.write_text("(S (NP the bird) (VP sings))\n(S (NP it) (VP flew))\n")
    refused = run("data", "split", posless, "--out", tmp_path / "p", "--ratio", "0.5,0.5")
    assert refused.returncode == 2 and refused.stderr.strip().endswith(
        "(sentence 0); for trees without POS tags (Choe–Charniak style) pass --no-pos-tags"
    ), refused.stderr
    taken = split_by_ratio([posless], tmp_path / "p", [0.5, 0.5], pos_tags=False)
    assert [split["sentences"] for split in taken["splits"].values()] == [1, 1]


def test_cli_stats_of_several_paths_reports_each_and_a_total(tmp_path):
    first, second = tmp_path / "a.mrg", tmp_path / "b.mrg"
    first.write_text(tree("a"))
    second.write_text(tree("b") + "( (S (NP (PRP It)) (VP (VBD flew) (ADVP (RB away)))) )\n")
    result = run("data", "stats", first, second, "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert [one["path"] for one in stats["paths"]] == [str(first), str(second)]
    total = stats["total"]
    assert (total["path"], total["files"], total["sentences"]) == ("total of 2 paths", 2, 3)
    assert total["words"] == 7
    assert total["sentence_length"] == {"mean": 2.33, "max": 3}
    assert total["phrase_labels"]["S"] == 3 and total["pos_tags"]["NN"] == 2
    text = run("data", "stats", first, second).stdout
    assert [line for line in text.splitlines() if line.startswith("==")] == [
        f"== {first}",
        f"== {second}",
        "== total of 2 paths",
    ]
    single = json.loads(run("data", "stats", first, "--json").stdout)
    assert single["path"] == str(first) and "total" not in single


def test_the_wsj_sample_split_of_docs_reproduce(shared_data, tmp_path):
    # docs/reproduce.md: documents 1-159 / 160-179 / 180-199 of NLTK's WSJ sample (sections 00 and 01)
    wsj = shared_data / "constituency" / "nltk_wsj_sample_noncommercial" / "combined"
    lists = {
        "train": ["wsj_00??.mrg", "wsj_01[0-5]?.mrg"],
        "dev": ["wsj_01[67]?.mrg"],
        "test": ["wsj_01[89]?.mrg"],
    }
    manifest = split_by_file_lists([wsj], tmp_path / "out", lists)
    counts = {name: (split["files"], split["sentences"]) for name, split in manifest["splits"].items()}
    assert counts == {"train": (159, 3396), "dev": (20, 273), "test": (20, 245)}
    with pytest.raises(SplitError, match=r"the train split \(sections 02-21\) would be empty: the 199 input"):
        split_by_wsj_sections([wsj], tmp_path / "wsj")
