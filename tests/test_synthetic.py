"""The synthetic treebank: determinism, well-formed PTB trees, the grammar's invariants (checked by
independent tree walkers written here), corpus statistics, the SyntaxGym suites and the files."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest

from syntaxlm.data.lexicon import LEXICON
from syntaxlm.data.synthetic import SUITE_DESIGNS, SyntheticTreebank, write_synthetic_treebank
from syntaxlm.files import sha256_file
from syntaxlm.trees.ptb import TreeReader
from syntaxlm.trees.tree import Tree

N_TREES = 2000


@pytest.fixture(scope="module")
def trees() -> list[Tree]:
    return SyntheticTreebank(seed=0).trees(N_TREES)


@pytest.fixture(scope="module")
def suites():
    return SyntheticTreebank(seed=0).build_suites(40)


# -- independent checkers ----------------------------------------------------------------------------------
# Nodes are addressed by paths (tuples of child indices from the root).

VERB_TAGS = {"VBZ", "VBP", "VBD", "MD"}
REFLEXIVES = {"himself", "herself", "itself", "themselves"}
MASCULINE = {n.singular for n in LEXICON.masculine_nouns} | set(LEXICON.masculine_names) | {"Mr.", "he"}
FEMININE = {n.singular for n in LEXICON.feminine_nouns} | set(LEXICON.feminine_names) | {"Ms.", "Mrs.", "she"}
PERSONS = {n.singular for n in LEXICON.nouns["person"]}


def node_at(tree: Tree, path: tuple[int, ...]) -> Tree:
    for index in path:
        tree = tree.children[index]
    return tree


def all_paths(tree: Tree) -> list[tuple[int, ...]]:
    paths, stack = [], [()]
    while stack:
        path = stack.pop()
        paths.append(path)
        node = node_at(tree, path)
        stack.extend(path + (i,) for i, c in enumerate(node.children) if isinstance(c, Tree))
    return paths


def dominates(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return len(a) < len(b) and b[: len(a)] == a


def c_commands(tree: Tree, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Neither dominates the other, and the first branching node above ``a`` dominates ``b``."""
    if a == b or dominates(a, b) or dominates(b, a):
        return False
    up = a[:-1]
    while up and len(node_at(tree, up).children) < 2:
        up = up[:-1]
    return dominates(up, b)


def head_np(np: Tree) -> Tree:
    """The base NP holding the head noun: first NP child, repeatedly (NP + PP/SBAR adjunction)."""
    while (
        np.children
        and isinstance(np.children[0], Tree)
        and np.children[0].label == "NP"
        and not is_coordination(np)
    ):
        np = np.children[0]
    return np


def is_coordination(np: Tree) -> bool:
    return any(isinstance(c, Tree) and c.label == "CC" for c in np.children)


def np_number(np: Tree) -> str:
    np = head_np(np)
    if is_coordination(np):
        conjunction = next(c.children[0] for c in np.children if c.label == "CC")
        assert conjunction == "and", f"subject coordinated with {conjunction!r}: {np}"
        return "pl"
    for child in reversed(np.children):
        if child.label in ("NN", "NNP"):
            return "sg"
        if child.label in ("NNS", "NNPS"):
            return "pl"
        if child.label == "PRP":
            return "pl" if child.children[0].lower() in ("they", "them") else "sg"
    raise AssertionError(f"no head noun in {np}")


def np_gender(np: Tree) -> str:
    """masc / fem / neut / common (either) / plural."""
    if np_number(np) == "pl":
        return "plural"
    np = head_np(np)
    tagged = [c for c in np.children if c.label in ("NN", "NNP", "PRP")]
    if tagged[0].label == "NNP":
        word = tagged[0].children[0]  # first name or title decides
    else:
        word = tagged[-1].children[0].lower()
    if word in MASCULINE:
        return "masc"
    if word in FEMININE:
        return "fem"
    if word in PERSONS:
        return "common"
    return "neut"


def clause_subjects(tree: Tree):
    """(path of S, subject NP) for every finite-or-not clause with a subject: the NP right before
    the VP, or for a subject relative clause ``(NP (NP ...) (SBAR (WHNP ..) (S (VP ..))))`` the
    modified NP."""
    for path in all_paths(tree):
        node = node_at(tree, path)
        if node.label != "S":
            continue
        labels = [c.label for c in node.children]
        if "VP" not in labels:
            continue
        v = labels.index("VP")
        if v > 0 and labels[v - 1] == "NP":
            yield path, node.children[v - 1], node.children[v]
        elif len(path) >= 2:
            sbar = node_at(tree, path[:-1])
            if sbar.label == "SBAR" and sbar.children[0].label == "WHNP":
                yield path, node_at(tree, path[:-2]), node.children[v]


def finite_verbs(vp: Tree) -> list[Tree]:
    """The finite verb of a VP (after any adverbs), or those of each conjunct of a coordinated VP."""
    for child in vp.children:
        if child.label in VERB_TAGS:
            return [child]
        if child.label in ("TO", "VB", "VBN", "VBG"):
            return []
        if child.label == "VP":
            return [v for c in vp.children if c.label == "VP" for v in finite_verbs(c)]
    return []


def agreement_errors(tree: Tree) -> list[str]:
    errors = []
    for _, subject, vp in clause_subjects(tree):
        number = np_number(subject)
        for verb in finite_verbs(vp):
            word = verb.children[0].lower()
            wanted = {"VBZ": "sg", "VBP": "pl"}.get(verb.label) or {"was": "sg", "were": "pl"}.get(word)
            if wanted and wanted != number:
                errors.append(f"{' '.join(subject.leaves())!r} ({number}) with {word!r}")
    return errors


def is_no_subject(np: Tree) -> bool:
    first = head_np(np).children[0]
    return first.label == "DT" and first.children[0].lower() == "no"


def npi_errors(tree: Tree) -> list[str]:
    paths = all_paths(tree)
    licensors = [
        p
        for p in paths
        if node_at(tree, p).is_preterminal and node_at(tree, p).children[0].lower() in ("not", "n't")
    ]
    subject_paths = {}
    for s_path, subject, _ in clause_subjects(tree):
        s_node = node_at(tree, s_path)
        for i, child in enumerate(s_node.children):
            if child is subject:
                subject_paths[s_path + (i,)] = child
    licensors += [p for p, np in subject_paths.items() if is_no_subject(np)]
    errors = []
    for p in paths:
        node = node_at(tree, p)
        is_npi = node.is_preterminal and node.children[0].lower() in ("ever", "any")
        if is_npi and not any(c_commands(tree, lic, p) and lic < p for lic in licensors):
            errors.append(f"unlicensed {node.children[0]!r}")
    return errors


def reflexive_errors(tree: Tree) -> list[str]:
    errors = []
    clauses = list(clause_subjects(tree))
    for p in all_paths(tree):
        node = node_at(tree, p)
        if not (node.is_preterminal and node.children[0] in REFLEXIVES):
            continue
        # the local clause: the closest S above the reflexive that has a subject
        local = max((c for c in clauses if dominates(c[0], p)), key=lambda c: len(c[0]), default=None)
        assert local is not None, f"reflexive without a clause in {tree}"
        s_node = node_at(tree, local[0])
        assert s_node.label == "S"
        gender = np_gender(local[1])
        allowed = {
            "plural": {"themselves"},
            "masc": {"himself"},
            "fem": {"herself"},
            "common": {"himself", "herself"},
            "neut": {"itself"},
        }[gender]
        if node.children[0] not in allowed:
            errors.append(f"{node.children[0]!r} bound by {' '.join(local[1].leaves())!r} ({gender})")
    return errors


def test_checkers_catch_violations():
    bad_agreement = Tree.from_bracket(
        "(S (NP (NP (DT the) (NN author)) (PP (IN near) (NP (DT the) (NNS senators))))"
        " (VP (VBP are) (ADJP (JJ good))) (. .))",
        pos_tags=True,
    )
    assert agreement_errors(bad_agreement)
    unlicensed = Tree.from_bracket(
        "(S (NP (NP (DT the) (NN author)) (SBAR (WHNP (WDT that))"
        " (S (NP (DT no) (NNS senators)) (VP (VBD liked)))))"
        " (VP (VBZ has) (ADVP (RB ever)) (VP (VBN been) (ADJP (JJ popular)))) (. .))",
        pos_tags=True,
    )
    assert npi_errors(unlicensed)
    licensed = Tree.from_bracket(
        "(S (NP (DT no) (NN author)) (VP (VBZ has) (VP (VBN had) (NP (DT any) (NN success)))) (. .))",
        pos_tags=True,
    )
    assert not npi_errors(licensed)
    negated = Tree.from_bracket(
        "(S (NP (DT the) (NN author)) (VP (VBD did) (RB n't) (VP (VB buy) (NP (DT any) (NNS books)))) (. .))",
        pos_tags=True,
    )
    assert not npi_errors(negated)
    bad_reflexive = Tree.from_bracket(
        "(S (NP (NP (DT the) (NN king)) (PP (IN near) (NP (DT the) (NNS queens))))"
        " (VP (VBD hurt) (NP (PRP herself))) (. .))",
        pos_tags=True,
    )
    assert reflexive_errors(bad_reflexive)


# -- determinism and form ------------------------------------------------------------------------------------


def test_same_seed_same_trees_different_seed_different_trees(trees):
    again = SyntheticTreebank(seed=0).trees(300)
    assert [t.to_bracket() for t in again] == [t.to_bracket() for t in trees[:300]]
    other = SyntheticTreebank(seed=1).trees(300)
    assert sum(a != b for a, b in zip(other, trees[:300], strict=True)) > 290


def test_trees_are_well_formed_ptb(trees):
    for tree in trees:
        assert Tree.from_bracket(tree.to_bracket(), pos_tags=True) == tree
        for node in tree.subtrees():
            words = [c for c in node.children if isinstance(c, str)]
            assert not words or node.is_preterminal, f"word outside a preterminal in {tree}"
        assert tree.label == "S"
        assert tree.children[-1].label == "." and tree.leaves()[-1] == "."
        first = tree.leaves()[0]
        assert first[0].isupper() or first[0].isdigit(), tree
        assert len(tree.leaves()) <= 60


def test_fronted_subordinate_clause_is_followed_by_a_main_clause(trees):
    fronted = [t for t in trees if t.children[0].label == "SBAR"]
    assert fronted
    for tree in fronted:
        assert [c.label for c in tree.children] == ["SBAR", ",", "NP", "VP", "."], tree
        assert tree.children[0].children[0].label == "IN"
        assert tree.children[0].children[1].label == "S"


def test_relative_clauses_have_the_ptb_shape(trees):
    for tree in trees:
        for node in tree.subtrees():
            if node.label == "SBAR" and node.children[0].label == "WHNP":
                assert len(node.children) == 2 and node.children[1].label == "S"
                assert node.children[0].children[0].label in ("WDT", "WP")


# -- invariants ----------------------------------------------------------------------------------------------


def test_subject_verb_agreement(trees):
    errors = [(e, t.to_bracket()) for t in trees for e in agreement_errors(t)]
    assert not errors, errors[:3]


def test_npis_are_c_commanded_by_a_licensor(trees):
    npis = sum(1 for t in trees for w in t.leaves() if w in ("ever", "any"))
    assert npis > 100
    errors = [(e, t.to_bracket()) for t in trees for e in npi_errors(t)]
    assert not errors, errors[:3]


def test_reflexives_agree_with_the_local_subject(trees):
    errors = [(e, t.to_bracket()) for t in trees for e in reflexive_errors(t)]
    assert not errors, errors[:3]


# -- statistics ----------------------------------------------------------------------------------------------


def test_sentence_lengths_look_like_newswire(trees):
    lengths = [len(t.leaves()) for t in trees]
    assert 17 <= statistics.mean(lengths) <= 26
    assert 14 <= statistics.median(lengths) <= 24
    assert max(lengths) >= 45  # a long tail
    assert sum(n <= 6 for n in lengths) / len(lengths) < 0.1


def test_lexicon_size_and_zipfian_word_frequencies(trees):
    assert len(SyntheticTreebank().word_types()) >= 2000
    counts = Counter(w.lower() for t in trees for w in t.leaves())
    assert len(counts) >= 1500
    ranked = sorted(counts.values(), reverse=True)
    assert sum(ranked[: len(ranked) // 10]) / sum(ranked) > 0.6
    # frequency falls off roughly as a power of rank: slope of log f against log r near -1
    points = [(math.log(r), math.log(f)) for r, f in enumerate(ranked, 1) if 10 <= r <= 1000]
    slope = statistics.linear_regression([x for x, _ in points], [y for _, y in points]).slope
    assert -1.8 < slope < -0.7


def test_every_word_is_a_word_of_the_grammar(trees):
    known = SyntheticTreebank().word_types()
    for tree in trees:
        first, *rest = tree.leaves()
        assert first in known or first[:1].lower() + first[1:] in known, first
        assert set(rest) <= known, set(rest) - known


def test_a_restricted_lexicon_keeps_each_class_small_and_the_grammar_whole():
    from syntaxlm.data.lexicon import Lexicon

    small = Lexicon(12)
    assert all(len(nouns) <= 12 + 8 for nouns in small.nouns.values())  # + gendered pairs kept whole
    assert len(small.masculine_nouns) >= 4
    for masc, fem in zip(small.masculine_nouns, small.feminine_nouns, strict=True):
        assert masc.partner == fem.singular and {masc, fem} <= set(small.nouns["person"])
    assert len(small.adjectives) == 12 and len(small.years) == 12
    # Every verb frame and selection that the full lexicon can fill is still filled.
    served = lambda senses: {(s.frame, s.subject, s.object, s.reflexive) for s in senses}
    assert served(small.senses) == served(LEXICON.senses)
    assert len({s.lemma for s in small.senses}) < 40
    with pytest.raises(ValueError, match="at least 10"):
        Lexicon(3)

    bank = SyntheticTreebank(seed=0, lexicon_size=10)
    known = bank.word_types()
    assert len(known) < len(SyntheticTreebank().word_types()) / 4
    trees = bank.trees(300)
    for tree in trees:
        first, *rest = tree.leaves()
        assert first in known or first[:1].lower() + first[1:] in known, first
        assert set(rest) <= known, set(rest) - known
    suites = bank.build_suites(40)  # enough distinct items even for the smallest lexicon
    assert set(suites) == {design.name for design in SUITE_DESIGNS}
    for suite in suites.values():
        for item in suite.items:
            for regions in item.regions.values():
                first, *rest = " ".join(regions).split()
                assert first in known or first[:1].lower() + first[1:] in known, first
                assert set(rest) <= known, set(rest) - known


def test_written_treebank_records_its_lexicon_size(tmp_path):
    manifest = write_synthetic_treebank(tmp_path, sentences=40, seed=0, items_per_suite=1, lexicon_size=15)
    assert manifest["lexicon_size"] == 15
    assert manifest["lexicon_word_types"] == len(SyntheticTreebank(lexicon_size=15).word_types())


def phenomena(tree: Tree) -> set[str]:
    found = set()
    words = [w.lower() for w in tree.leaves()]
    found |= {"ever", "any"} & set(words)
    if REFLEXIVES & set(words):
        found.add("reflexive")
    if "not" in words or "n't" in words:
        found.add("negation")
    if tree.children[0].label == "SBAR":
        found.add("subordinate")
    for _, subject, _ in clause_subjects(tree):
        labels = [c.label for c in subject.children]
        if labels[:1] == ["NP"] and "PP" in labels:
            found.add("subject_pp")
        if labels[:1] == ["NP"] and "SBAR" in labels:
            found.add("subject_rc")
        if is_no_subject(subject):
            found.add("no_subject")
    for node in tree.subtrees():
        if (
            node.label == "SBAR"
            and node.children[0].label == "WHNP"
            and node.children[1].children[0].label == "NP"
        ):
            found.add("orc")
            if any(
                inner.label == "SBAR"
                and inner.children[0].label == "WHNP"
                and inner.children[1].children[0].label == "NP"
                for inner in node.children[1].children[0].subtrees()
            ):
                found.add("centre_embedding")
    return found


MINIMUM_RATES = {
    "subject_pp": 0.15,
    "subject_rc": 0.12,
    "orc": 0.12,
    "reflexive": 0.05,
    "ever": 0.04,
    "any": 0.03,
    "negation": 0.08,
    "no_subject": 0.04,
    "subordinate": 0.08,
    "centre_embedding": 0.005,
}


def test_each_phenomenon_is_frequent_enough_to_learn(trees):
    counts = Counter(p for t in trees for p in phenomena(t))
    rates = {name: counts[name] / len(trees) for name in MINIMUM_RATES}
    low = {name: rate for name, rate in rates.items() if rate < MINIMUM_RATES[name]}
    assert not low, rates


# -- suites --------------------------------------------------------------------------------------------------

FORMULA_ATOM = re.compile(r"\((\d+|\*);%([^%]+)%\)")


def test_suites_follow_the_syntaxgym_schema(suites):
    names = {d.name for d in SUITE_DESIGNS}
    assert {
        "synthetic_number_prep",
        "synthetic_number_src",
        "synthetic_number_orc",
        "synthetic_reflexive_prep",
        "synthetic_reflexive_src",
        "synthetic_npi_src_any",
        "synthetic_npi_src_ever",
        "synthetic_subordination",
        "synthetic_center_embed",
    } <= names
    for name, suite in suites.items():
        data = json.loads(json.dumps(suite.to_json()))
        assert set(data) == {"meta", "region_meta", "predictions", "items"}
        assert data["meta"]["name"] == name and data["meta"]["metric"] == "sum"
        regions = data["region_meta"]
        assert list(regions) == [str(i) for i in range(1, len(regions) + 1)]
        conditions = list(suite.design.conditions)
        for prediction in data["predictions"]:
            assert prediction["type"] == "formula"
            atoms = FORMULA_ATOM.findall(prediction["formula"])
            assert atoms
            for region, condition in atoms:
                assert condition in conditions
                assert region == "*" or 1 <= int(region) <= len(regions)
            assert prediction["formula"].count("[") == prediction["formula"].count("]")
        assert len(data["items"]) == 40
        assert [item["item_number"] for item in data["items"]] == list(range(1, 41))
        for item in data["items"]:
            assert [c["condition_name"] for c in item["conditions"]] == conditions
            for condition in item["conditions"]:
                assert [r["region_number"] for r in condition["regions"]] == list(range(1, len(regions) + 1))
                for region in condition["regions"]:
                    assert (
                        isinstance(region["content"], str) and region["content"] == region["content"].strip()
                    )


def test_grammatical_conditions_are_sentences_of_the_grammar(suites):
    for suite in suites.values():
        grammatical = set(suite.design.grammatical)
        for item in suite.items:
            assert set(item.trees) == grammatical
            for condition, tree in item.trees.items():
                text = " ".join(r for r in item.regions[condition] if r)
                assert " ".join(tree.leaves()) == text
                assert Tree.from_bracket(tree.to_bracket(), pos_tags=True) == tree
                assert not agreement_errors(tree), (suite.design.name, text)
                assert not npi_errors(tree), (suite.design.name, text)
                assert not reflexive_errors(tree), (suite.design.name, text)
                assert text.endswith(" .")


def test_ungrammatical_conditions_differ_only_in_the_critical_regions(suites):
    for suite in suites.values():
        design = suite.design
        covered = set(design.grammatical) | {c.condition for c in design.contrasts}
        assert covered == set(design.conditions)
        for item in suite.items:
            for contrast in design.contrasts:
                bad, good = item.regions[contrast.condition], item.regions[contrast.source]
                for number, (x, y) in enumerate(zip(bad, good, strict=True), 1):
                    if number in contrast.changed:
                        assert x.lower() != y.lower(), (design.name, number, x)
                    else:
                        assert x == y, (design.name, number, x, y)


def test_suite_words_are_lexicon_words(suites):
    known = SyntheticTreebank().word_types()
    for suite in suites.values():
        for item in suite.items:
            for regions in item.regions.values():
                for word in " ".join(regions).split():
                    assert word in known or word[:1].lower() + word[1:] in known, word


def test_suite_sentences_are_not_training_sentences(suites, trees):
    training = {" ".join(t.leaves()) for t in trees} | {
        " ".join(t.leaves()) for t in SyntheticTreebank(seed=0).trees(4000)[N_TREES:]
    }
    for suite in suites.values():
        for item in suite.items:
            for regions in item.regions.values():
                assert " ".join(r for r in regions if r) not in training


def test_suites_are_deterministic_and_avoid_given_sentences(suites):
    again = SyntheticTreebank(seed=0).suites(40)
    assert again == {name: suite.to_json() for name, suite in suites.items()}
    first = suites["synthetic_number_prep"].items[0]
    text = " ".join(r for r in first.regions["match_sing"] if r)
    avoided = SyntheticTreebank(seed=0).build_suites(40, avoid={text})["synthetic_number_prep"]
    assert all(" ".join(r for r in item.regions["match_sing"] if r) != text for item in avoided.items)


def test_suites_mirror_the_original_designs(suites, shared_data):
    folder = shared_data / "syntaxgym" / "test_suites" / "json"
    originals = {
        "synthetic_number_prep": "number_prep",
        "synthetic_number_src": "number_src",
        "synthetic_number_orc": "number_orc",
        "synthetic_reflexive_prep": "reflexive_prep_fem",
        "synthetic_reflexive_src": "reflexive_src_masc",
        "synthetic_reflexive_orc": "reflexive_orc_fem",
        "synthetic_npi_src_any": "npi_src_any",
        "synthetic_npi_src_ever": "npi_src_ever",
        "synthetic_npi_orc_any": "npi_orc_any",
        "synthetic_npi_orc_ever": "npi_orc_ever",
        "synthetic_subordination": "subordination",
        "synthetic_subordination_src-src": "subordination_src-src",
        "synthetic_center_embed": "center_embed",
    }
    for ours, theirs in originals.items():
        original = json.loads((folder / f"{theirs}.json").read_text())
        conditions = {c["condition_name"] for c in original["items"][0]["conditions"]}
        assert set(suites[ours].design.conditions) == conditions
        names = list(original["region_meta"].values())
        assert list(suites[ours].design.regions[: len(names)]) == names


# -- files ---------------------------------------------------------------------------------------------------


def test_write_synthetic_treebank(tmp_path: Path):
    manifest = write_synthetic_treebank(tmp_path / "out", sentences=203, seed=5, items_per_suite=4)
    out = tmp_path / "out"
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert manifest["seed"] == 5 and manifest["sentences"] == 203
    assert sum(manifest["split"].values()) == 203
    assert manifest["split"] == {"train": 162, "dev": 20, "test": 21}
    expected = SyntheticTreebank(5).trees(203)
    read = []
    for name in ("train", "dev", "test"):
        entry = manifest["files"][name]
        path = out / entry["path"]
        assert sha256_file(path) == entry["sha256"]
        reader = TreeReader(path)
        part = list(reader)
        assert len(part) == entry["sentences"] == manifest["split"][name]
        assert not reader.report.skipped
        read += part
    assert read == expected
    assert manifest["words"] == sum(len(t.leaves()) for t in expected)
    assert set(manifest["suites"]) == {d.name for d in SUITE_DESIGNS}
    for name, entry in manifest["suites"].items():
        path = out / entry["path"]
        assert sha256_file(path) == entry["sha256"]
        data = json.loads(path.read_text())
        assert data["meta"]["name"] == name and len(data["items"]) == entry["items"] == 4
    texts = {" ".join(t.leaves()) for t in expected}
    for entry in manifest["suites"].values():
        for item in json.loads((out / entry["path"]).read_text())["items"]:
            for condition in item["conditions"]:
                assert " ".join(r["content"] for r in condition["regions"] if r["content"]) not in texts


def test_written_files_are_byte_identical_for_a_seed(tmp_path: Path):
    a = write_synthetic_treebank(tmp_path / "a", sentences=50, seed=9, items_per_suite=2)
    b = write_synthetic_treebank(tmp_path / "b", sentences=50, seed=9, items_per_suite=2)
    assert a == b
    for entry in [*a["files"].values(), *a["suites"].values()]:
        assert (tmp_path / "a" / entry["path"]).read_bytes() == (tmp_path / "b" / entry["path"]).read_bytes()


@pytest.mark.parametrize("split", [(0.5, 0.5), (0.8, 0.3, -0.1), (0.7, 0.2, 0.2)])
def test_bad_split_is_refused(tmp_path: Path, split):
    with pytest.raises(ValueError, match="split"):
        write_synthetic_treebank(tmp_path, sentences=10, split=split)
    assert not (tmp_path / "train.trees").exists()
