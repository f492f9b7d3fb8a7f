"""SyntaxGym-format test suites built with the synthetic grammar: one suite design per phenomenon
(``SUITE_DESIGNS``) and ``build_suite``, which draws a design's items from derived seeds.

Each item's grammatical conditions are built by the grammar (``grammar.py``) with some choices
forced; the ungrammatical conditions copy a grammatical one and change only the critical region(s).
A ``GeneratedSuite`` holds the items as generated, with the grammar's tree for every grammatical
condition; its ``to_json`` is the SyntaxGym file, which ``syntaxlm.eval.syntaxgym`` reads.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from syntaxlm.data.lexicon import LEXICON, Lexicon, Noun, Sense
from syntaxlm.data.synthetic.grammar import (
    COMMA,
    NOUN_KINDS,
    NP_PREPOSITIONS,
    PLURAL,
    PREPOSITION_OBJECTS,
    SUBORDINATORS,
    Grammar,
    Referent,
    derive_seed,
    finish,
    leaf,
    other_number,
)
from syntaxlm.trees.tree import Tree


@dataclass(frozen=True)
class Contrast:
    """An ungrammatical condition: ``source`` (grammatical) with the regions ``changed`` altered."""

    condition: str
    source: str
    changed: tuple[int, ...]  # region numbers, from 1


@dataclass(frozen=True)
class SuiteDesign:
    """What a suite tests: regions, conditions, predictions, and how its items are built."""

    name: str
    regions: tuple[str, ...]  # region names; region i + 1 is regions[i]
    conditions: tuple[str, ...]
    formulas: tuple[str, ...]
    grammatical: tuple[str, ...]
    contrasts: tuple[Contrast, ...]
    comment: str
    build: Callable[[int, Lexicon], GeneratedItem]  # (item seed, lexicon) -> item; _Retry: another seed


@dataclass(frozen=True)
class GeneratedItem:
    """One item as the generator builds it: the regions of every condition, and the grammar's tree
    for each grammatical one. ``GeneratedSuite.to_json`` numbers the items and writes their regions;
    ``syntaxlm.eval.syntaxgym`` reads them back as its own ``SuiteItem`` (number and regions only)."""

    regions: dict[str, tuple[str, ...]]  # condition -> region contents
    trees: dict[str, Tree]  # grammatical condition -> the tree the grammar built


@dataclass(frozen=True)
class GeneratedSuite:
    """A suite's design and generated items; ``to_json`` gives the SyntaxGym file's contents."""

    design: SuiteDesign
    items: tuple[GeneratedItem, ...]

    def to_json(self) -> dict:
        design = self.design
        return {
            "meta": {
                "name": design.name,
                "metric": "sum",
                "comment": design.comment,
                "reference": SUITE_REFERENCE,
                "author": "syntaxlm",
            },
            "region_meta": {str(number): name for number, name in enumerate(design.regions, 1)},
            "predictions": [{"type": "formula", "formula": formula} for formula in design.formulas],
            "items": [
                {
                    "item_number": number,
                    "conditions": [
                        {
                            "condition_name": condition,
                            "regions": [
                                {"region_number": region, "content": content}
                                for region, content in enumerate(item.regions[condition], 1)
                            ],
                        }
                        for condition in design.conditions
                    ],
                }
                for number, item in enumerate(self.items, 1)
            ],
        }


SUITE_REFERENCE = (
    "syntaxlm synthetic treebank (docs/synthetic-treebank.md); design after the SyntaxGym suites of "
    "Hu, Gauthier, Qian, Wilcox and Levy (2020), A Systematic Assessment of Syntactic Generalization in "
    "Neural Language Models"
)
MAX_CONTINUATION = 8  # words after the critical region, "." included


class _Retry(Exception):
    """This item seed gave an unsuitable item (e.g. a long continuation); try the next seed."""


def sentence_text(regions: Sequence[str]) -> str:
    return " ".join(r for r in regions if r)


def build_suite(
    design: SuiteDesign,
    seed: int,
    items: int,
    avoid: frozenset[str] | set[str],
    lexicon: Lexicon = LEXICON,
) -> GeneratedSuite:
    made: list[GeneratedItem] = []
    seen: set[tuple[str, ...]] = set()
    attempt = 0
    while len(made) < items:
        if attempt >= 200 * items:
            raise RuntimeError(
                f"suite {design.name}: only {len(made)} of {items} distinct items could be built"
            )
        item_seed = derive_seed(seed, design.name, attempt)
        attempt += 1
        try:
            item = design.build(item_seed, lexicon)
        except _Retry:
            continue
        texts = tuple(sentence_text(item.regions[c]) for c in design.grammatical)
        if texts in seen or any(text in avoid for text in texts):
            continue
        for condition, tree in item.trees.items():
            if " ".join(tree.leaves()) != sentence_text(item.regions[condition]):
                raise AssertionError(f"suite {design.name}: regions of {condition} do not match its tree")
        seen.add(texts)
        made.append(item)
    return GeneratedSuite(design, tuple(made))


def words(tree: Tree) -> list[str]:
    """The tree's words (the text of a region)."""
    return tree.leaves()


def capitalised(regions: list[str]) -> tuple[str, ...]:
    """Regions with the sentence's first letter upper-cased, as ``finish`` does to the tree."""
    out = list(regions)
    for index, region in enumerate(out):
        if region:
            out[index] = region[:1].upper() + region[1:]
            break
    return tuple(out)


def replaced(regions: tuple[str, ...], changes: dict[int, str]) -> tuple[str, ...]:
    """``regions`` with region numbers (from 1) replaced; the first letter stays capitalised."""
    out = list(regions)
    for number, content in changes.items():
        out[number - 1] = content
    return capitalised(out)


def _count_noun(g: Grammar, kinds: Sequence[str]) -> Noun:
    """A count noun whose plural differs from its singular (so that number is visible)."""
    kind = NOUN_KINDS.restricted(kinds).draw(g.rng)
    sampler = g.lex.noun_sampler(kind, count_only=True)
    for _ in range(50):
        noun = sampler.draw(g.rng)
        if noun.plural != noun.singular:
            return noun
    raise _Retry


def _strict_sense(g: Grammar, frame: str, forbidden: set[str], **kinds) -> Sense:
    """A sense whose verb has no frame in ``forbidden`` (strictly transitive / intransitive)."""
    for _ in range(100):
        sense = g.sense(frame, **kinds)
        if not (g.lex.frames_of[sense.lemma] & forbidden):
            return sense
    raise _Retry


_RC_VP = {
    "tense": "past",
    "plain": True,
    "modal": False,
    "perfect": False,
    "progressive": False,
    "reflexive": False,
}
_SIMPLE_NP = {"det": "the", "adjectives": 0, "modifier": "none", "form": "common", "coordinate": False}


def _modified_subject(
    g: Grammar,
    modifier: str,
    number: str,
    head_noun: Noun,
    attractor_kinds: Sequence[str] | None,
    attractor_number: str,
    *,
    det: str = "the",
    rc_det: str = "the",
    attractor: Noun | None = None,
) -> tuple[Tree, Referent, list[str]]:
    """``the author near the senators`` (pp), ``the author that liked the senators`` (src),
    ``the author that the senators liked`` (orc): tree, features and the words region by region."""
    base, head = g.noun_phrase("subject", 1, **_SIMPLE_NP | {"noun": head_noun, "number": number, "det": det})
    if modifier == "pp":
        allowed = [
            p
            for p in NP_PREPOSITIONS.outcomes
            if (p != "about" or head.kind in ("thing", "idea"))
            and (attractor_kinds is None or set(attractor_kinds) & set(PREPOSITION_OBJECTS[p]))
        ]
        prep = NP_PREPOSITIONS.restricted(allowed).draw(g.rng)
        kinds = [k for k in PREPOSITION_OBJECTS[prep] if k not in ("place", "year")]
        if attractor_kinds is not None:
            kinds = [k for k in kinds if k in attractor_kinds]
        noun = attractor or _count_noun(g, kinds)
        attached = g.pp_modifier(
            head, 1, prep=prep, obj=dict(_SIMPLE_NP, noun=noun, number=attractor_number, det=rc_det)
        )
        pieces = [words(base)[0], words(base)[1], *words(attached)]
    elif modifier == "src":
        sense = g.sense("t", subject_kind=head.kind)
        kinds = [k for k in sense.object if attractor_kinds is None or k in attractor_kinds]
        if not kinds:
            raise _Retry
        noun = attractor or _count_noun(g, kinds)
        vp = dict(_RC_VP, sense=sense, obj=dict(_SIMPLE_NP, noun=noun, number=attractor_number, det=rc_det))
        attached = g.relative_clause(head, 1, "subject", relativizer="that", vp=vp)
        pieces = [words(base)[0], words(base)[1], *words(attached)]
    else:  # orc
        sense = g.sense("t", object_kind=head.kind)
        kinds = [k for k in sense.subject if attractor_kinds is None or k in attractor_kinds]
        if not kinds:
            raise _Retry
        noun = attractor or _count_noun(g, kinds)
        subject = dict(_SIMPLE_NP, noun=noun, number=attractor_number, det=rc_det)
        attached = g.relative_clause(
            head, 1, "object", relativizer="that", subject=subject, vp=dict(_RC_VP, sense=sense)
        )
        pieces = [words(base)[0], words(base)[1], *words(attached)]
    if len(pieces) != 6 - (modifier == "pp"):
        raise AssertionError(f"unexpected subject shape: {pieces}")
    return Tree("NP", [base, attached]), head, pieces


# Present tense forms that differ only in number: VBZ <-> VBP, was <-> were.
_OTHER_NUMBER_FORM = {
    "is": "are",
    "are": "is",
    "was": "were",
    "were": "was",
    "has": "have",
    "have": "has",
    "does": "do",
    "do": "does",
}
for _forms in LEXICON.verbs.values():
    if _forms.base not in ("have",):
        _OTHER_NUMBER_FORM.setdefault(_forms.third, _forms.base)
        _OTHER_NUMBER_FORM.setdefault(_forms.base, _forms.third)


def _number_item(modifier: str) -> Callable[[int, Lexicon], GeneratedItem]:
    def build(seed: int, lexicon: Lexicon) -> GeneratedItem:
        regions, trees = {}, {}
        for number, match, mismatch in (
            ("sg", "match_sing", "mismatch_sing"),
            ("pl", "match_plural", "mismatch_plural"),
        ):
            g = Grammar(random.Random(seed), lexicon)
            head_noun = _count_noun(g, NOUN_KINDS.outcomes)
            subject, head, pieces = _modified_subject(
                g, modifier, number, head_noun, None, other_number(number)
            )
            vp = g.verb_phrase(head, 2, False, tense="present", modal=False, plain=True)
            verb, *rest = words(vp)
            if len(rest) + 1 > MAX_CONTINUATION:
                raise _Retry
            trees[match] = finish([subject, vp])
            regions[match] = capitalised([*pieces, verb, " ".join([*rest, "."])])
            critical = len(pieces) + 1
            regions[mismatch] = replaced(regions[match], {critical: _OTHER_NUMBER_FORM[verb]})
        _require_same(
            regions["match_sing"], regions["match_plural"], keep={2, _ATTRACTOR_REGION[modifier], critical}
        )
        return GeneratedItem(regions, trees)

    return build


_ATTRACTOR_REGION = {"pp": 5, "src": 6, "orc": 5}  # region number of the attractor noun


def _require_same(a: tuple[str, ...], b: tuple[str, ...], keep: set[int]) -> None:
    """The two variants of an item must agree everywhere except the regions in ``keep`` (1-based)."""
    for number, (x, y) in enumerate(zip(a, b, strict=True), 1):
        if number not in keep and x != y:
            raise _Retry


def _reflexive_word(number: str, gender: str) -> str:
    if number == "pl":
        return "themselves"
    return "himself" if gender == "masc" else "herself"


def _gendered_noun(g: Grammar, gender: str) -> Noun:
    noun = g.lex.gendered_sampler().draw(g.rng)
    return noun if gender == "masc" else g.lex.partner(noun)


def _reflexive_item(modifier: str) -> Callable[[int, Lexicon], GeneratedItem]:
    def build(seed: int, lexicon: Lexicon) -> GeneratedItem:
        regions, trees = {}, {}
        for number, match, mismatch in (
            ("sg", "match_sing", "mismatch_sing"),
            ("pl", "match_plural", "mismatch_plural"),
        ):
            g = Grammar(random.Random(seed), lexicon)
            gender = "masc" if g.chance(0.5) else "fem"
            head_noun = _gendered_noun(g, gender)
            subject, head, pieces = _modified_subject(
                g, modifier, number, head_noun, ("person",), other_number(number)
            )
            sense = g.sense("t", subject_kind="person", reflexive=True)
            vp = g.verb_phrase(head, 2, False, sense=sense, **_RC_VP | {"reflexive": True})
            verb, reflexive = words(vp)
            trees[match] = finish([subject, vp])
            regions[match] = capitalised([*pieces, verb, reflexive, "."])
            critical = len(pieces) + 2
            wrong = _reflexive_word(other_number(number), gender)
            regions[mismatch] = replaced(regions[match], {critical: wrong})
        _require_same(
            regions["match_sing"], regions["match_plural"], keep={2, _ATTRACTOR_REGION[modifier], critical}
        )
        return GeneratedItem(regions, trees)

    return build


def _reflexive_gender_item(seed: int, lexicon: Lexicon) -> GeneratedItem:
    regions, trees = {}, {}
    for gender, match, mismatch in (
        ("masc", "match_masc", "mismatch_masc"),
        ("fem", "match_fem", "mismatch_fem"),
    ):
        g = Grammar(random.Random(seed), lexicon)
        head_noun = _gendered_noun(g, gender)
        attractor = _gendered_noun(g, "fem" if gender == "masc" else "masc")
        subject, head, pieces = _modified_subject(
            g, "pp", "sg", head_noun, ("person",), "sg", attractor=attractor
        )
        sense = g.sense("t", subject_kind="person", reflexive=True)
        vp = g.verb_phrase(head, 2, False, sense=sense, **_RC_VP | {"reflexive": True})
        verb, reflexive = words(vp)
        trees[match] = finish([subject, vp])
        regions[match] = capitalised([*pieces, verb, reflexive, "."])
        wrong = "herself" if gender == "masc" else "himself"
        regions[mismatch] = replaced(regions[match], {7: wrong})
    _require_same(regions["match_masc"], regions["match_fem"], keep={2, 5, 7})
    return GeneratedItem(regions, trees)


def _npi_item(modifier: str, npi: str) -> Callable[[int, Lexicon], GeneratedItem]:
    def build(seed: int, lexicon: Lexicon) -> GeneratedItem:
        regions, trees = {}, {}
        for rc_det, grammatical, ungrammatical in (
            ("the", "neg_pos", "pos_pos"),
            ("no", "neg_neg", "pos_neg"),
        ):
            g = Grammar(random.Random(seed), lexicon)
            number = "pl" if g.chance(PLURAL) else "sg"
            attractor_number = "pl" if g.chance(0.6) else "sg"
            head_noun = _count_noun(g, NOUN_KINDS.outcomes)
            subject, head, pieces = _modified_subject(
                g, modifier, number, head_noun, None, attractor_number, det="no", rc_det=rc_det
            )
            if npi == "any":
                vp = g.verb_phrase(
                    head,
                    2,
                    True,
                    frame="t",
                    npi_any=True,
                    reflexive=False,
                    modal=False,
                    progressive=False,
                    plain=True,
                )
            else:
                vp = g.verb_phrase(
                    head,
                    2,
                    True,
                    ever=True,
                    perfect=True,
                    modal=False,
                    progressive=False,
                    reflexive=False,
                    plain=True,
                )
            vp_words = words(vp)
            at = vp_words.index(npi)
            rest = vp_words[at + 1 :] + ["."]
            if at == 0 or len(rest) > MAX_CONTINUATION:
                raise _Retry
            trees[grammatical] = finish([subject, vp])
            regions[grammatical] = capitalised([*pieces, " ".join(vp_words[:at]), npi, " ".join(rest)])
            regions[ungrammatical] = replaced(regions[grammatical], {1: "the"})
        _require_same(regions["neg_pos"], regions["neg_neg"], keep={5 if modifier == "src" else 4})
        return GeneratedItem(regions, trees)

    return build


def _subordination_item(
    subject_modifier: str, object_modifier: str
) -> Callable[[int, Lexicon], GeneratedItem]:
    simple = subject_modifier == "none"

    def build(seed: int, lexicon: Lexicon) -> GeneratedItem:
        g = Grammar(random.Random(seed), lexicon)
        subordinator = SUBORDINATORS.draw(g.rng)
        subject, referent = g.noun_phrase(
            "subject", 1, form="common", det="the", modifier=subject_modifier, coordinate=False
        )
        vp = g.verb_phrase(
            referent,
            1,
            False,
            frame="t",
            tense="past",
            modal=False,
            perfect=False,
            progressive=False,
            reflexive=False,
            plain=True,
            obj={"form": "common", "det": "the", "modifier": object_modifier, "coordinate": False},
        )
        main = g.clause(2, vp={"plain": True})
        if len(words(Tree("S", main))) > 12:
            raise _Retry
        sub_tree = finish([Tree("SBAR", [leaf("IN", subordinator), Tree("S", [subject, vp])]), COMMA, *main])
        plain_tree = finish([subject, vp])
        matrix = " ".join([",", *words(Tree("S", main)), "."])
        verb, obj = vp.children[0], vp.children[1]
        if simple:
            parts = [" ".join(words(subject)), " ".join(words(vp))]
        else:
            subject_base, subject_modifier_tree = subject.children
            object_base, object_modifier_tree = obj.children
            parts = [
                " ".join(words(subject_base)),
                " ".join(words(subject_modifier_tree)),
                " ".join([*words(verb), *words(object_base)]),
                " ".join(words(object_modifier_tree)),
            ]
        with_sub = [f"{subordinator} {parts[0]}", *parts[1:]]
        regions = {
            "sub_matrix": capitalised([*with_sub, matrix]),
            "no-sub_no-matrix": capitalised([*parts, "."]),
        }
        last = len(regions["sub_matrix"])
        regions["sub_no-matrix"] = replaced(regions["sub_matrix"], {last: "."})
        regions["no-sub_matrix"] = replaced(regions["no-sub_no-matrix"], {last: matrix})
        return GeneratedItem(regions, {"sub_matrix": sub_tree, "no-sub_no-matrix": plain_tree})

    return build


def _center_embed_item(seed: int, lexicon: Lexicon) -> GeneratedItem:
    g = Grammar(random.Random(seed), lexicon)
    head_noun = _count_noun(g, NOUN_KINDS.outcomes)
    number = "pl" if g.chance(PLURAL) else "sg"
    inner = _strict_sense(g, "t", {"i"}, object_kind=head_noun.kind)
    intransitive = _strict_sense(g, "i", {"t", "d"}, subject_kind=head_noun.kind)
    base, head = g.noun_phrase("subject", 1, noun=head_noun, number=number, **_SIMPLE_NP)
    rc = g.relative_clause(
        head, 1, "object", relativizer="that", subject=_SIMPLE_NP, vp=dict(_RC_VP, sense=inner)
    )
    vp = g.verb_phrase(head, 1, False, sense=intransitive, **_RC_VP)
    tree = finish([Tree("NP", [base, rc]), vp])
    pieces = [*words(base), *words(rc), *words(vp), "."]
    if len(pieces) != 8:
        raise AssertionError(f"unexpected centre-embedding shape: {pieces}")
    plausible = capitalised(pieces)
    return GeneratedItem(
        {"plaus": plausible, "implaus": replaced(plausible, {6: pieces[6], 7: pieces[5]})}, {"plaus": tree}
    )


def _center_embed_double_item(seed: int, lexicon: Lexicon) -> GeneratedItem:
    g = Grammar(random.Random(seed), lexicon)
    head_noun = _count_noun(g, NOUN_KINDS.outcomes)
    number = "pl" if g.chance(PLURAL) else "sg"
    middle = _strict_sense(g, "t", {"i"}, subject_kind="person", object_kind=head_noun.kind)
    inner = _strict_sense(g, "t", {"i"}, subject_kind="person", object_kind="person")
    intransitive = _strict_sense(g, "i", {"t", "d"}, subject_kind=head_noun.kind)
    base, head = g.noun_phrase("subject", 1, noun=head_noun, number=number, **_SIMPLE_NP)
    innermost = {
        "relativizer": "that",
        "subject": dict(_SIMPLE_NP, kinds=("person",)),
        "vp": dict(_RC_VP, sense=inner),
    }
    rc = g.relative_clause(
        head,
        1,
        "object",
        relativizer="that",
        subject=dict(_SIMPLE_NP, kinds=("person",), modifier="orc", rc=innermost),
        vp=dict(_RC_VP, sense=middle),
    )
    vp = g.verb_phrase(head, 1, False, sense=intransitive, **_RC_VP)
    tree = finish([Tree("NP", [base, rc]), vp])
    pieces = [*words(base), *words(rc), *words(vp), "."]
    if len(pieces) != 12:
        raise AssertionError(f"unexpected centre-embedding shape: {pieces}")
    plausible = capitalised(pieces)
    return GeneratedItem(
        {"plaus": plausible, "implaus": replaced(plausible, {10: pieces[10], 11: pieces[9]})}, {"plaus": tree}
    )


_NUMBER_CONDITIONS = ("match_sing", "mismatch_sing", "match_plural", "mismatch_plural")
_NPI_CONDITIONS = ("neg_pos", "neg_neg", "pos_pos", "pos_neg")
_SUBORDINATION_CONDITIONS = ("sub_no-matrix", "no-sub_no-matrix", "sub_matrix", "no-sub_matrix")


def _number_design(
    name: str, modifier: str, regions: tuple[str, ...], critical: int, kind: str
) -> SuiteDesign:
    bracket = "[ {} ] & [ {} ]" if kind == "reflexive" else "[{}] & [{}]"
    formula = bracket.format(
        f"({critical};%match_sing%) < ({critical};%mismatch_sing%)",
        f"({critical};%match_plural%) < ({critical};%mismatch_plural%)",
    )
    what = (
        "the matrix verb agrees with the head noun, not with the attractor"
        if kind == "number"
        else "the reflexive agrees with the head noun, not with the attractor"
    )
    return SuiteDesign(
        name=name,
        regions=regions,
        conditions=_NUMBER_CONDITIONS,
        formulas=(formula,),
        grammatical=("match_sing", "match_plural"),
        contrasts=(
            Contrast("mismatch_sing", "match_sing", (critical,)),
            Contrast("mismatch_plural", "match_plural", (critical,)),
        ),
        comment=f"Synthetic-grammar version of {name.removeprefix('synthetic_')}: {what} "
        f"({'PP' if modifier == 'pp' else modifier.upper()} modifier on the subject). "
        f"Grammatical conditions: match_sing, match_plural.",
        build=(_number_item if kind == "number" else _reflexive_item)(modifier),
    )


NPI_FORMULA = (
    "[ (8;%neg_pos%) < (8;%pos_pos%) ] & [ (8;%neg_neg%) < (8;%pos_neg%) ] & "
    "[ (8;%neg_pos%) < (8;%pos_neg%) ]"
)


def _npi_design(modifier: str, npi: str) -> SuiteDesign:
    if modifier == "src":
        # region names as in the originals (npi_src_ever calls the RC object "rc_subj")
        regions = (
            "Licensor",
            "np",
            "compl",
            "rc_verb",
            "rc_dp",
            "rc_obj" if npi == "any" else "rc_subj",
            "matrix_v" if npi == "any" else "has",
            "npi",
            "continuation",
        )
        rc_det = 5
    else:
        regions = (
            "Licensor",
            "np",
            "compl",
            "rc_dp",
            "rc_subj",
            "rc_verb",
            "matrix_v" if npi == "any" else "has",
            "npi",
            "continuation",
        )
        rc_det = 4
    name = f"synthetic_npi_{modifier}_{npi}"
    return SuiteDesign(
        name=name,
        regions=regions,
        conditions=_NPI_CONDITIONS,
        formulas=(NPI_FORMULA,),
        grammatical=("neg_pos", "neg_neg"),
        contrasts=(Contrast("pos_pos", "neg_pos", (1,)), Contrast("pos_neg", "neg_neg", (1,))),
        comment=f"Synthetic-grammar version of npi_{modifier}_{npi}: '{npi}' is licensed by a 'no' subject "
        f"(region 1) and not by a 'no' inside the subject's relative clause (region {rc_det}). "
        "Grammatical conditions: neg_pos, neg_neg.",
        build=_npi_item(modifier, npi),
    )


def _subordination_design(subject_modifier: str, object_modifier: str) -> SuiteDesign:
    if subject_modifier == "none":
        name, regions, critical = (
            "synthetic_subordination",
            ("Subordinate clause 1", "Subordinate clause 2", "Main clause"),
            3,
        )
    else:
        label = {"pp": "pp-pp", "src": "src-src", "orc": "orc-orc"}[subject_modifier]
        name = f"synthetic_subordination_{label}"
        regions = (
            "Subordinate clause 1",
            "subj_modifier",
            "Subordinate clause 2",
            "obj_modifier",
            "Main clause",
        )
        critical = 5
    return SuiteDesign(
        name=name,
        regions=regions,
        conditions=_SUBORDINATION_CONDITIONS,
        formulas=(
            (
                f"[({critical};%sub_no-matrix%) > ({critical};%no-sub_no-matrix%) ] & "
                f"[({critical};%sub_matrix%) < ({critical};%no-sub_matrix%) ]"
            ),
        ),
        grammatical=("no-sub_no-matrix", "sub_matrix"),
        contrasts=(
            Contrast("sub_no-matrix", "sub_matrix", (critical,)),
            Contrast("no-sub_matrix", "no-sub_no-matrix", (critical,)),
        ),
        comment=(
            f"Synthetic-grammar version of {name.removeprefix('synthetic_')}: a fronted subordinate "
            "clause must be followed by a main clause, and a main clause cannot be followed by another "
            "after a comma. Grammatical conditions: no-sub_no-matrix, sub_matrix."
        ),
        build=_subordination_item(subject_modifier, object_modifier),
    )


SUITE_DESIGNS: tuple[SuiteDesign, ...] = (
    _number_design(
        "synthetic_number_prep",
        "pp",
        ("intro", "np_sing", "prep", "the", "prep_np", "matrix_v", "continuation"),
        6,
        "number",
    ),
    _number_design(
        "synthetic_number_src",
        "src",
        ("intro", "np_sing", "that", "embed_vp", "the", "embed_np", "matrix_v", "continuation"),
        7,
        "number",
    ),
    _number_design(
        "synthetic_number_orc",
        "orc",
        ("intro", "np_sing", "that", "the", "embed_np", "embed_vp", "matrix_v", "continuation"),
        7,
        "number",
    ),
    _number_design(
        "synthetic_reflexive_prep",
        "pp",
        ("intro", "np_sing", "prep", "the", "prep_np", "matrix_v", "reflexive", "end"),
        7,
        "reflexive",
    ),
    _number_design(
        "synthetic_reflexive_src",
        "src",
        ("intro", "np_sing", "that", "embed_vp", "the", "embed_np", "matrix_v", "reflexive", "end"),
        8,
        "reflexive",
    ),
    _number_design(
        "synthetic_reflexive_orc",
        "orc",
        ("intro", "np_sing", "that", "the", "embed_np", "embed_vp", "matrix_v", "reflexive", "end"),
        8,
        "reflexive",
    ),
    SuiteDesign(
        name="synthetic_reflexive_gender",
        regions=("intro", "np", "prep", "the", "prep_np", "matrix_v", "reflexive", "end"),
        conditions=("match_masc", "mismatch_masc", "match_fem", "mismatch_fem"),
        formulas=("[ (7;%match_masc%) < (7;%mismatch_masc%) ] & [ (7;%match_fem%) < (7;%mismatch_fem%) ]",),
        grammatical=("match_masc", "match_fem"),
        contrasts=(
            Contrast("mismatch_masc", "match_masc", (7,)),
            Contrast("mismatch_fem", "match_fem", (7,)),
        ),
        comment="Reflexive gender agreement across a PP holding a noun of the other gender (all singular). "
        "Grammatical conditions: match_masc, match_fem.",
        build=_reflexive_gender_item,
    ),
    _npi_design("src", "any"),
    _npi_design("src", "ever"),
    _npi_design("orc", "any"),
    _npi_design("orc", "ever"),
    _subordination_design("none", "none"),
    _subordination_design("src", "src"),
    _subordination_design("orc", "orc"),
    _subordination_design("pp", "pp"),
    SuiteDesign(
        name="synthetic_center_embed",
        regions=("intro", "np_1", "that", "det_2", "np_2", "verb1", "verb2", "end"),
        conditions=("plaus", "implaus"),
        formulas=("[ (6;%plaus%) + (7;%plaus%) ] < [ (6;%implaus%) + (7;%implaus%) ]",),
        grammatical=("plaus",),
        contrasts=(Contrast("implaus", "plaus", (6, 7)),),
        comment="Centre embedding: an object relative clause inside the subject. verb1 is strictly "
        "transitive (the RC verb), verb2 strictly intransitive (the matrix verb); implaus swaps them. "
        "Grammatical condition: plaus.",
        build=_center_embed_item,
    ),
    SuiteDesign(
        name="synthetic_center_embed_double",
        regions=(
            "intro",
            "np_1",
            "that_1",
            "det_2",
            "np_2",
            "that_2",
            "det_3",
            "np_3",
            "verb1",
            "verb2",
            "verb3",
            "end",
        ),
        conditions=("plaus", "implaus"),
        formulas=("[ (10;%plaus%) + (11;%plaus%) ] < [ (10;%implaus%) + (11;%implaus%) ]",),
        grammatical=("plaus",),
        contrasts=(Contrast("implaus", "plaus", (10, 11)),),
        comment="Double centre embedding: an object relative clause inside the subject of an object relative "
        "clause. verb2 is strictly transitive (the outer RC verb), verb3 strictly intransitive (the "
        "matrix verb); implaus swaps them. Grammatical condition: plaus.",
        build=_center_embed_double_item,
    ),
)
