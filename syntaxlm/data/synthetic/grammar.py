"""The synthetic treebank's grammar: a seeded English-like grammar that writes Penn Treebank
trees (``treebank.py`` writes the files; ``suites.py`` builds SyntaxGym-format suites with it).

The grammar is a probabilistic context-free grammar over feature-bearing categories: noun
phrases carry number, gender, kind (person, organisation, thing, idea) and whether their
determiner is ``no``; verb phrases know the subject they agree with and whether they are in the
scope of a negative. The rule tables below give the probabilities; the ``Grammar`` methods expand
one category each, top to bottom. Phenomena the evaluations probe, and how the grammar makes them:

- subject-verb agreement: present-tense verbs and auxiliaries take the number of the subject's
  head noun, never of a noun inside a PP or relative clause on the subject (an *attractor*);
- reflexives (``himself``/``herself``/``itself``/``themselves``) agree in number and gender with
  the subject of their own clause;
- NPIs (``ever``, ``any``) appear only c-commanded by a licensor: a ``no`` subject (licensing its
  whole VP) or ``not``/``n't`` (licensing the rest of its VP); a ``no`` inside a subject's PP or
  relative clause licenses nothing outside it;
- a fronted subordinate clause (``Because ...,``) is always followed by a main clause;
- object relative clauses nest inside object relative clauses (centre embedding, depth <= 2).

Randomness comes only from ``random.Random`` instances created from the seed, and every draw is
one ``rng.random()`` call, so the same seed gives byte-identical output on every platform.
``docs/synthetic-treebank.md`` documents the grammar in full.
"""

from __future__ import annotations

import hashlib
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from syntaxlm.data.lexicon import LEXICON, Lexicon, Noun, Sense, indefinite_article
from syntaxlm.trees.tree import Tree

# -- rule tables -----------------------------------------------------------------------------------------


class Table:
    """A rule table: outcomes with probabilities. ``draw`` consumes exactly one ``rng.random()``."""

    __slots__ = ("_cumulative", "_variants", "outcomes", "weights")

    def __init__(self, weights: dict[str, float]):
        total = sum(weights.values())
        if total <= 0:
            raise ValueError("a rule table needs a positive total weight")
        self.weights = dict(weights)
        self.outcomes = tuple(weights)
        running, cumulative = 0.0, []
        for weight in weights.values():
            running += weight / total
            cumulative.append(running)
        self._cumulative = cumulative
        self._variants: dict[object, Table] = {}

    def draw(self, rng: random.Random) -> str:
        index = bisect_right(self._cumulative, rng.random())
        return self.outcomes[min(index, len(self.outcomes) - 1)]

    def restricted(self, allowed: Sequence[str]) -> Table:
        """The table over the outcomes in ``allowed`` only (renormalised)."""
        key = ("only", tuple(allowed))
        if key not in self._variants:
            self._variants[key] = Table({k: w for k, w in self.weights.items() if k in allowed})
        return self._variants[key]

    def decayed(self, depth: int, rest: str = "none") -> Table:
        """Every outcome but ``rest`` scaled by ``DEPTH_DECAY ** depth``; ``rest`` takes the remainder."""
        key = ("depth", depth, rest)
        if key not in self._variants:
            total = sum(self.weights.values())
            factor = DEPTH_DECAY**depth
            scaled = {k: (w / total) * factor for k, w in self.weights.items() if k != rest}
            self._variants[key] = Table({rest: max(0.0, 1.0 - sum(scaled.values())), **scaled})
        return self._variants[key]


DEPTH_DECAY = 0.75
"""Recursion (modifiers, adjuncts, embedded clauses) gets this much less likely per level of depth."""

MAX_WORDS = 60
"""Sentences longer than this (tokens, with punctuation) are drawn again."""

# fmt: off
SENTENCE_FORMS = Table(
    {"clause": 0.54, "fronted_subordinate": 0.16, "fronted_adverbial": 0.1, "coordinated": 0.1,
     "reported": 0.1}
)
FRONTED_ADVERBIALS = Table({"adverb": 0.4, "pp": 0.4, "time": 0.2})
SENTENCE_COORDINATORS = Table({"and": 0.6, "but": 0.4})
SUBORDINATORS = Table(
    {"because": 0.2, "although": 0.14, "when": 0.14, "after": 0.12, "while": 0.1, "as": 0.08, "if": 0.08,
     "before": 0.06, "since": 0.04, "though": 0.04}
)
REPORTING_VERBS = Table(
    {"say": 0.62, "add": 0.08, "explain": 0.06, "note": 0.06, "argue": 0.05, "claim": 0.05, "insist": 0.04,
     "report": 0.04}
)

# Noun phrases, by the role they fill.
NP_FORMS = {
    "subject": Table({"common": 0.8, "pronoun": 0.11, "name": 0.09}),
    "object": Table({"common": 0.86, "pronoun": 0.07, "name": 0.07}),
    "pp": Table({"common": 0.9, "pronoun": 0.03, "name": 0.07}),
    "rc_subject": Table({"common": 0.82, "pronoun": 0.1, "name": 0.08}),
    "predicate": Table({"common": 1.0}),
}
NOUN_KINDS = Table({"person": 0.46, "org": 0.12, "thing": 0.2, "idea": 0.22})
PLURAL = 0.38
MODIFIERS = {  # at depth 0; scaled by DEPTH_DECAY per level
    "subject": Table({"none": 0.38, "pp": 0.26, "src": 0.14, "orc": 0.13, "pp+rc": 0.09}),
    "object": Table({"none": 0.46, "pp": 0.32, "src": 0.11, "orc": 0.11}),
    "pp": Table({"none": 0.72, "pp": 0.14, "src": 0.07, "orc": 0.07}),
    "rc_subject": Table({"none": 0.76, "pp": 0.08, "src": 0.04, "orc": 0.12}),
    "predicate": Table({"none": 1.0}),
}
MAX_ORC_NESTING = 2  # object relative clauses inside object relative clauses: at most this deep
NP_COORDINATION = 0.04
DETERMINERS = {
    "sg": Table({"the": 0.46, "a": 0.25, "this": 0.04, "that": 0.02, "every": 0.02, "each": 0.02,
                 "another": 0.02, "no": 0.06, "possessive": 0.11}),
    "pl": Table({"the": 0.4, "": 0.2, "some": 0.06, "many": 0.05, "several": 0.04, "these": 0.03,
                 "those": 0.03, "no": 0.07, "cardinal": 0.05, "possessive": 0.07}),
    "mass": Table({"the": 0.4, "": 0.33, "some": 0.1, "no": 0.07, "this": 0.02, "possessive": 0.08}),
    "predicate_sg": Table({"a": 0.8, "the": 0.2}),
    "predicate_pl": Table({"": 0.8, "the": 0.2}),
    "predicate_mass": Table({"": 0.9, "the": 0.1}),
}
POSSESSIVES = Table({"his": 0.3, "her": 0.2, "its": 0.2, "their": 0.3})
ADJECTIVE = 0.3  # probability of an adjective before the noun (and again for a second one)
SECOND_ADJECTIVE = 0.15
DEGREE_ADVERB = 0.1  # "a very old house"
SUBJECT_PRONOUNS = Table({"he": 0.32, "she": 0.24, "it": 0.18, "they": 0.26})
OBJECT_PRONOUN = {"he": "him", "she": "her", "it": "it", "they": "them"}
IT_KINDS = Table({"thing": 0.4, "idea": 0.35, "org": 0.25})
THEY_KINDS = Table({"person": 0.55, "org": 0.1, "thing": 0.15, "idea": 0.2})
NAME_FORMS = Table({"full": 0.45, "first": 0.2, "title": 0.35})
NAME_GENDERS = Table({"masc": 0.55, "fem": 0.45})
TITLES = {"masc": Table({"Mr.": 1.0}), "fem": Table({"Ms.": 0.7, "Mrs.": 0.3})}
PLACE_OBJECT = 0.25  # a place name as the object of a locative preposition
YEAR_OBJECT = 0.3  # "in 1995"

NP_PREPOSITIONS = Table(
    {"of": 0.3, "in": 0.13, "with": 0.1, "from": 0.08, "near": 0.07, "for": 0.06, "on": 0.06, "about": 0.05,
     "behind": 0.04, "at": 0.04, "beside": 0.03, "like": 0.02, "under": 0.02}
)
VP_PREPOSITIONS = Table(
    {"in": 0.22, "at": 0.1, "on": 0.1, "with": 0.1, "for": 0.1, "during": 0.06, "after": 0.06, "before": 0.05,
     "from": 0.05, "near": 0.04, "into": 0.04, "against": 0.03, "through": 0.03, "across": 0.02}
)
# What each preposition takes as its object: noun kinds, "place" (a place name), "year".
PREPOSITION_OBJECTS = {
    "of": ("person", "org", "thing", "idea"),
    "in": ("thing", "org", "place", "year"),
    "with": ("person", "thing"),
    "from": ("person", "org", "place"),
    "near": ("person", "thing", "place"),
    "for": ("person", "org", "thing", "idea"),
    "on": ("thing", "idea"),
    "about": ("person", "thing", "idea"),
    "behind": ("person", "thing"),
    "at": ("thing", "org", "place"),
    "beside": ("person", "thing"),
    "like": ("person", "thing"),
    "under": ("thing",),
    "during": ("idea",),
    "after": ("idea",),
    "before": ("idea",),
    "into": ("thing",),
    "against": ("person", "org", "idea"),
    "through": ("thing",),
    "across": ("thing", "place"),
}
COPULA_PREPOSITIONS = Table({"in": 0.45, "at": 0.2, "near": 0.15, "behind": 0.1, "under": 0.05, "from": 0.05})

# Verb phrases.
PREDICATES = {
    "agentive": Table({"verbal": 0.87, "copula": 0.13}),
    "other": Table({"verbal": 0.7, "copula": 0.3}),
}
FRAMES = {  # subcategorisation, by whether the subject is a person/organisation or not
    "agentive": Table({"t": 0.36, "i": 0.08, "p": 0.1, "s": 0.14, "v": 0.08, "d": 0.04, "passive": 0.08,
                       "reflexive": 0.12}),
    "other": Table({"t": 0.42, "i": 0.3, "p": 0.08, "s": 0.06, "passive": 0.14}),
}
INFINITIVE_FRAMES = Table({"t": 0.6, "i": 0.2, "p": 0.2})
TENSES = Table({"past": 0.58, "present": 0.42})
MODAL = 0.12
PERFECT = 0.12
PROGRESSIVE = 0.07
NEGATION = 0.11
MODALS = Table({"will": 0.3, "would": 0.2, "can": 0.14, "could": 0.14, "may": 0.07, "might": 0.06,
                "should": 0.06, "must": 0.03})
NEGATIONS = Table({"n't": 0.55, "not": 0.45})
EVER = 0.35  # "ever" in a licensed VP
ANY = 0.55  # "any" on a licensed object that can take it (plural or mass)
PREVERBAL_ADVERB = 0.08  # "also", "often", ...
REFLEXIVE_OBJECT = 0.2  # a reflexive object for a verb that allows one, outside the "reflexive" frame
COPULA_PREDICATES = Table({"adjective": 0.5, "adjective_complement": 0.1, "noun": 0.22, "pp": 0.18})
COMPLEMENTIZER = 0.8  # "said that S" rather than "said S"
BY_AGENT = 0.4  # passive with a by-phrase
VP_COORDINATION = 0.05
VP_ADJUNCTS = {"pp": 0.55, "manner": 0.06, "time": 0.08, "subordinate": 0.1}  # at depth 0, decayed
OBJECT_COORDINATORS = Table({"and": 0.85, "or": 0.15})
RELATIVIZERS = Table({"that": 0.6, "wh": 0.4})
TIME_EXPRESSIONS = Table(
    {"last year": 0.2, "last week": 0.14, "last month": 0.1, "this year": 0.1, "yesterday": 0.12,
     "today": 0.08, "next year": 0.06, "last night": 0.06, "this week": 0.06, "next month": 0.04,
     "last summer": 0.04}
)

BE = {"VB": "be", "VBZ": "is", "VBP": "are", "VBN": "been", "VBG": "being"}
HAVE = {"VB": "have", "VBZ": "has", "VBP": "have", "VBD": "had", "VBN": "had", "VBG": "having"}
DO = {"VB": "do", "VBZ": "does", "VBP": "do", "VBD": "did"}
AUXILIARY_LEMMAS = {"perfect": "have", "progressive": "be", "passive": "be", "do": "do"}
NEXT_FORM = {"modal": "VB", "do": "VB", "perfect": "VBN", "progressive": "VBG", "passive": "VBN"}
NEGATIVE_CLITIC = {"will": "wo", "can": "ca"}  # "wo n't", "ca n't"
NO_CLITIC = frozenset({"may", "might", "must"})  # these take "not", never "n't"

REFLEXIVES = frozenset({"himself", "herself", "itself", "themselves"})
# fmt: on


# -- features ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Referent:
    """Agreement and selection features of a noun phrase."""

    number: str  # sg | pl
    gender: str  # masc | fem | common | neut
    kind: str  # person | org | thing | idea | place
    negative: bool = False  # its determiner is "no": it licenses NPIs in the VP it is the subject of

    @property
    def agentive(self) -> bool:
        return self.kind in ("person", "org")


def other_number(number: str) -> str:
    return "pl" if number == "sg" else "sg"


_PRETERMINALS: dict[tuple[str, str], Tree] = {}


def leaf(tag: str, word: str) -> Tree:
    """The preterminal ``(tag word)``; shared, since trees are immutable."""
    node = _PRETERMINALS.get((tag, word))
    if node is None:
        node = _PRETERMINALS[(tag, word)] = Tree(tag, (word,))
    return node


COMMA = leaf(",", ",")
PERIOD = leaf(".", ".")


class Grammar:
    """The expansion code: one method per category, each drawing from ``rng`` only.

    Every method takes optional keyword arguments that force a choice (a noun, a number, a
    determiner, a verb sense, a tense...); the random generator leaves them unset and the suite
    builders set them, so suite sentences are built by the same code as the training sentences.
    """

    def __init__(self, rng: random.Random, lexicon: Lexicon = LEXICON):
        self.rng = rng
        self.lex = lexicon

    def chance(self, probability: float) -> bool:
        return self.rng.random() < probability

    def word(self, list_name: str) -> str:
        return self.lex.word_sampler(list_name).draw(self.rng)

    # -- sentences ------------------------------------------------------------------------------------

    def sentence(self) -> Tree:
        """One sentence: ``(S ... (. .))``."""
        form = SENTENCE_FORMS.draw(self.rng)
        if form == "fronted_subordinate":
            children = [self.subordinate_clause(1), COMMA, *self.clause(0)]
        elif form == "fronted_adverbial":
            children = [self.fronted_adverbial(), COMMA, *self.clause(0)]
        elif form == "coordinated":
            coordinator = SENTENCE_COORDINATORS.draw(self.rng)
            children = [Tree("S", self.clause(1)), COMMA, leaf("CC", coordinator), Tree("S", self.clause(1))]
        elif form == "reported":
            children = [Tree("S", self.clause(1)), COMMA, *self.reporting_clause()]
        else:
            children = self.clause(0)
        return finish(children)

    def clause(
        self, depth: int, *, licensed: bool = False, subject: dict | None = None, vp: dict | None = None
    ) -> list[Tree]:
        """Subject and predicate, ``[NP, VP]``; ``licensed``: in the scope of a licensor above."""
        subject_tree, referent = self.noun_phrase("subject", depth, **(subject or {}))
        predicate = self.verb_phrase(referent, depth, licensed or referent.negative, **(vp or {}))
        return [subject_tree, predicate]

    def subordinate_clause(self, depth: int, *, subordinator: str | None = None, **clause) -> Tree:
        """``(SBAR (IN because) (S ...))``."""
        word = subordinator or SUBORDINATORS.draw(self.rng)
        return Tree("SBAR", [leaf("IN", word), Tree("S", self.clause(depth, **clause))])

    def fronted_adverbial(self) -> Tree:
        form = FRONTED_ADVERBIALS.draw(self.rng)
        if form == "adverb":
            return Tree("ADVP", [leaf("RB", self.word("sentence_adverbs"))])
        if form == "time":
            return self.time_expression()
        return self.adjunct_pp(1)

    def reporting_clause(self) -> list[Tree]:
        """``the analyst said`` after a quoted-style clause: ``[NP, VP]``."""
        subject_tree, referent = self.noun_phrase("subject", 1, kinds=("person",), modifier="none")
        lemma = REPORTING_VERBS.draw(self.rng)
        tense = "past" if self.chance(0.8) else "present"
        tag, word = self.finite_form(lemma, tense, referent.number)
        return [subject_tree, Tree("VP", [leaf(tag, word)])]

    def time_expression(self) -> Tree:
        words = TIME_EXPRESSIONS.draw(self.rng).split()
        if len(words) == 1:
            return Tree("NP", [leaf("NN", words[0])])
        return Tree("NP", [leaf("DT" if words[0] == "this" else "JJ", words[0]), leaf("NN", words[1])])

    # -- noun phrases ---------------------------------------------------------------------------------

    def noun_phrase(
        self,
        role: str,
        depth: int,
        *,
        kinds: Sequence[str] | None = None,
        form: str | None = None,
        noun: Noun | None = None,
        number: str | None = None,
        det: str | None = None,
        adjectives: int | None = None,
        modifier: str | None = None,
        npi_any: bool = False,
        pp: dict | None = None,
        rc: dict | None = None,
        orc_nesting: int = 0,
        coordinate: bool | None = None,
        coordinated: bool = False,
    ) -> tuple[Tree, Referent]:
        """A noun phrase for ``role`` (subject, object, pp, rc_subject, predicate) and its features.

        ``kinds`` restricts the noun kinds (selectional restriction of the verb or preposition);
        ``npi_any`` makes the determiner ``any`` (the caller has checked that it is licensed).
        """
        rng = self.rng
        kinds = tuple(kinds) if kinds else NOUN_KINDS.outcomes
        if form is None:
            forms = NP_FORMS[role]
            if npi_any:
                form = "common"
            elif "person" not in kinds:
                form = forms.restricted(("common", "pronoun")).draw(rng)
            else:
                form = forms.draw(rng)
        if form == "pronoun":
            return self.pronoun(role, kinds)
        if form == "name":
            return self.name()
        if coordinate is None:
            coordinate = (
                role in ("subject", "object") and depth <= 1 and not npi_any and self.chance(NP_COORDINATION)
            )
        if coordinate:
            return self.coordinated_noun_phrase(role, depth, kinds)

        kind = NOUN_KINDS.restricted(kinds).draw(rng) if noun is None else noun.kind
        if noun is None:
            noun = self.lex.noun_sampler(kind, count_only=role == "predicate").draw(rng)
        drawn_number = "pl" if self.chance(PLURAL) else "sg"
        if noun.mass:
            number = "sg"
        elif number is None:
            number = "pl" if npi_any else drawn_number
        head = noun.form(number)
        tag = "NN" if number == "sg" else "NNS"

        words: list[Tree] = []
        if adjectives is None:
            adjectives = (1 + self.chance(SECOND_ADJECTIVE)) if self.chance(ADJECTIVE) else 0
        for _ in range(adjectives):
            if self.chance(DEGREE_ADVERB):  # only gradable (predicative) adjectives take "very"
                degree, adjective = self.word("degree_adverbs"), self.word("predicative_adjectives")
                words.append(Tree("ADJP", [leaf("RB", degree), leaf("JJ", adjective)]))
            else:
                words.append(leaf("JJ", self.word("adjectives")))
        words.append(leaf(tag, head))

        if det is None:
            det = "any" if npi_any else self.determiner(role, number, noun.mass, coordinated=coordinated)
        negative = det == "no"
        if det:
            next_word = words[0].leaves()[0]
            words.insert(0, self.determiner_leaf(det, next_word))
        base = Tree("NP", words)
        referent = Referent(number, noun.gender, kind, negative)

        if modifier is None:
            table = MODIFIERS[role].decayed(depth)
            if orc_nesting >= MAX_ORC_NESTING or role == "predicate":
                table = table.restricted(("none", "pp", "src"))
            modifier = table.draw(rng)
        if modifier == "none":
            return base, referent
        modifiers: list[Tree] = []
        if modifier in ("pp", "pp+rc"):
            modifiers.append(self.pp_modifier(referent, depth, **(pp or {})))
        if modifier in ("src", "orc", "pp+rc"):
            relative = modifier if modifier != "pp+rc" else ("src" if self.chance(0.5) else "orc")
            nesting = orc_nesting + 1 if relative == "orc" else 0
            modifiers.append(
                self.relative_clause(
                    referent,
                    depth,
                    "subject" if relative == "src" else "object",
                    orc_nesting=nesting,
                    **(rc or {}),
                )
            )
        return Tree("NP", [base, *modifiers]), referent

    def determiner(self, role: str, number: str, mass: bool, *, coordinated: bool) -> str:
        rng = self.rng
        if role == "predicate":
            table = DETERMINERS["predicate_mass" if mass else f"predicate_{number}"]
        else:
            table = DETERMINERS["mass" if mass else number]
        det = table.draw(rng)
        if det == "no" and coordinated:
            det = "the"
        return det

    def determiner_leaf(self, det: str, next_word: str) -> Tree:
        rng = self.rng
        if det == "a":
            return leaf("DT", indefinite_article(next_word))
        if det == "possessive":
            return leaf("PRP$", POSSESSIVES.draw(rng))
        if det == "cardinal":
            return leaf("CD", self.word("numbers"))
        if det in ("many", "several"):
            return leaf("JJ", det)
        return leaf("DT", det)

    def pronoun(self, role: str, kinds: Sequence[str]) -> tuple[Tree, Referent]:
        rng = self.rng
        allowed = [p for p in SUBJECT_PRONOUNS.outcomes if p in ("it", "they") or "person" in kinds]
        pronoun = SUBJECT_PRONOUNS.restricted(allowed).draw(rng)
        if pronoun == "it":
            kind = IT_KINDS.restricted([k for k in kinds if k != "person"] or ["thing"]).draw(rng)
            referent = Referent("sg", "neut", kind)
        elif pronoun == "they":
            referent = Referent("pl", "common", THEY_KINDS.restricted(kinds).draw(rng))
        else:
            referent = Referent("sg", "masc" if pronoun == "he" else "fem", "person")
        word = pronoun if role in ("subject", "rc_subject") else OBJECT_PRONOUN[pronoun]
        return Tree("NP", [leaf("PRP", word)]), referent

    def name(self) -> tuple[Tree, Referent]:
        rng = self.rng
        gender = NAME_GENDERS.draw(rng)
        form = NAME_FORMS.draw(rng)
        first = self.word("masculine_names" if gender == "masc" else "feminine_names")
        surname = self.word("surnames")
        if form == "first":
            words = [first]
        elif form == "title":
            words = [TITLES[gender].draw(rng), surname]
        else:
            words = [first, surname]
        return Tree("NP", [leaf("NNP", w) for w in words]), Referent("sg", gender, "person")

    def place(self) -> Tree:
        return Tree("NP", [leaf("NNP", self.word("places"))])

    def coordinated_noun_phrase(self, role: str, depth: int, kinds: Sequence[str]) -> tuple[Tree, Referent]:
        """``(NP (NP ...) (CC and) (NP ...))``: plural; subjects are joined by ``and`` only.

        The conjuncts never have ``no``: a licensor is a whole subject, not part of one.
        """
        kind = NOUN_KINDS.restricted(kinds).draw(self.rng)
        conjuncts = []
        for _ in range(2):
            tree, _ = self.noun_phrase(
                role,
                depth + 1,
                kinds=(kind,),
                form="common",
                modifier="none",
                coordinate=False,
                coordinated=True,
            )
            conjuncts.append(tree)
        coordinator = "and" if role == "subject" else OBJECT_COORDINATORS.draw(self.rng)
        number = "pl" if coordinator == "and" else "sg"
        return Tree("NP", [conjuncts[0], leaf("CC", coordinator), conjuncts[1]]), Referent(
            number, "common", kind
        )

    def pp_modifier(
        self, head: Referent, depth: int, *, prep: str | None = None, obj: dict | None = None
    ) -> Tree:
        """A PP on a noun: ``(PP (IN near) (NP ...))``."""
        if prep is None:
            prep = NP_PREPOSITIONS.draw(self.rng)
            if prep == "about" and head.kind not in ("thing", "idea"):
                prep = "of"
        return Tree("PP", [leaf("IN", prep), self.prepositional_object(prep, depth + 1, obj)])

    def prepositional_object(self, prep: str, depth: int, spec: dict | None = None) -> Tree:
        allowed = PREPOSITION_OBJECTS[prep]
        if spec is None:
            if "year" in allowed and self.chance(YEAR_OBJECT):
                return Tree("NP", [leaf("CD", self.word("years"))])
            if "place" in allowed and self.chance(PLACE_OBJECT):
                return self.place()
        kinds = [k for k in allowed if k not in ("place", "year")]
        tree, _ = self.noun_phrase("pp", depth, kinds=kinds, **(spec or {}))
        return tree

    def adjunct_pp(self, depth: int) -> Tree:
        prep = VP_PREPOSITIONS.draw(self.rng)
        return Tree("PP", [leaf("IN", prep), self.prepositional_object(prep, depth + 1)])

    def relative_clause(
        self,
        head: Referent,
        depth: int,
        gap: str,
        *,
        relativizer: str | None = None,
        subject: dict | None = None,
        vp: dict | None = None,
        orc_nesting: int = 0,
    ) -> Tree:
        """``(SBAR (WHNP (WDT that)) (S ...))``; ``gap`` is ``subject`` or ``object``.

        Subject RC: the RC's verb agrees with ``head``. Object RC: a transitive verb whose object
        is ``head`` (missing: no traces), agreeing with the RC's own subject.
        """
        rng = self.rng
        if relativizer is None:
            relativizer = RELATIVIZERS.draw(rng)
            if relativizer == "wh":
                relativizer = "who" if head.kind == "person" else "which"
        whnp = Tree("WHNP", [leaf("WP" if relativizer == "who" else "WDT", relativizer)])
        vp = dict(vp or {})
        if gap == "subject":
            body = [self.verb_phrase(head, depth + 1, False, **vp)]
        else:
            sense = vp.pop("sense", None) or self.sense("t", object_kind=head.kind)
            spec = {"kinds": sense.subject, **(subject or {})}
            subject_tree, referent = self.noun_phrase(
                "rc_subject", depth + 1, orc_nesting=orc_nesting, **spec
            )
            body = [
                subject_tree,
                self.verb_phrase(referent, depth + 1, referent.negative, sense=sense, gap=True, **vp),
            ]
        return Tree("SBAR", [whnp, Tree("S", body)])

    # -- verb phrases -----------------------------------------------------------------------------------

    def sense(
        self,
        frame: str,
        *,
        subject_kind: str | None = None,
        object_kind: str | None = None,
        reflexive: bool = False,
    ) -> Sense:
        sampler = self.lex.sense_sampler(frame, subject_kind, object_kind, reflexive=reflexive)
        if sampler is None:
            raise ValueError(
                f"no verb sense for frame {frame} with subject {subject_kind}, object {object_kind}"
            )
        return sampler.draw(self.rng)

    def choose_frame(self, subject: Referent) -> str:
        """Predicate type and subcategorisation frame for a subject: a frame, or ``copula``."""
        group = "agentive" if subject.agentive else "other"
        if PREDICATES[group].draw(self.rng) == "copula":
            return "copula"
        table = FRAMES[group]
        available = [f for f in table.outcomes if self.frame_available(f, subject.kind)]
        return table.restricted(available).draw(self.rng)

    def frame_available(self, frame: str, kind: str) -> bool:
        if frame == "passive":
            return self.lex.sense_sampler("t", None, kind) is not None
        if frame == "reflexive":
            return self.lex.sense_sampler("t", kind, None, reflexive=True) is not None
        return self.lex.sense_sampler(frame, kind, None) is not None

    def finite_form(self, lemma: str, tense: str, number: str) -> tuple[str, str]:
        """(tag, word) of a finite verb agreeing with a subject of ``number``."""
        if lemma == "be":
            if tense == "past":
                return "VBD", "was" if number == "sg" else "were"
            return ("VBZ", "is") if number == "sg" else ("VBP", "are")
        if tense == "past":
            tag = "VBD"
        else:
            tag = "VBZ" if number == "sg" else "VBP"
        return tag, self.form(lemma, tag)

    def form(self, lemma: str, tag: str) -> str:
        if lemma == "be":
            return BE[tag]
        if lemma == "have":
            return HAVE[tag]
        if lemma == "do":
            return DO[tag]
        forms = self.lex.verbs[lemma]
        return {
            "VB": forms.base,
            "VBP": forms.base,
            "VBZ": forms.third,
            "VBD": forms.past,
            "VBN": forms.participle,
            "VBG": forms.gerund,
        }[tag]

    def reflexive(self, subject: Referent) -> Tree:
        """The reflexive pronoun agreeing with ``subject``; always one draw (common gender: his/her)."""
        masculine = self.chance(0.5)
        if subject.number == "pl":
            word = "themselves"
        elif subject.gender == "masc" or (subject.gender == "common" and masculine):
            word = "himself"
        elif subject.gender in ("fem", "common"):
            word = "herself"
        else:
            word = "itself"
        return Tree("NP", [leaf("PRP", word)])

    def verb_phrase(
        self,
        subject: Referent,
        depth: int,
        licensed: bool,
        *,
        frame: str | None = None,
        sense: Sense | None = None,
        tense: str | None = None,
        modal: bool | None = None,
        perfect: bool | None = None,
        progressive: bool | None = None,
        negation: bool | None = None,
        ever: bool | None = None,
        npi_any: bool | None = None,
        reflexive: bool | None = None,
        preverbal: bool | None = None,
        adjuncts: bool | None = None,
        coordinate: bool | None = None,
        obj: dict | None = None,
        gap: bool = False,
        infinitive: bool = False,
        plain: bool = False,
    ) -> Tree:
        """A VP whose finite verb agrees with ``subject``.

        ``licensed``: a c-commanding licensor (``no`` subject, or a negation above) is in scope.
        ``gap``: the object is missing (object relative clause). ``infinitive``: ``to`` + base
        form. ``plain``: no negation, NPIs, adverbs, adjuncts or coordination unless asked for
        (the suites use it for short, controlled sentences).
        """
        rng = self.rng
        if plain:
            negation = False if negation is None else negation
            ever = False if ever is None else ever
            npi_any = False if npi_any is None else npi_any
            preverbal = False if preverbal is None else preverbal
            adjuncts = False if adjuncts is None else adjuncts
            coordinate = False if coordinate is None else coordinate
        if coordinate is None:
            coordinate = not (gap or infinitive) and depth == 0 and self.chance(VP_COORDINATION)
        if coordinate:
            tense = tense or TENSES.draw(rng)
            first = self.verb_phrase(
                subject, depth + 1, licensed, tense=tense, coordinate=False, adjuncts=False
            )
            second = self.verb_phrase(subject, depth + 1, licensed, tense=tense, coordinate=False)
            return Tree("VP", [first, leaf("CC", "and"), second])

        if sense is not None:
            frame = frame or ("reflexive" if reflexive and sense.frame == "t" else sense.frame)
        if frame is None:
            frame = INFINITIVE_FRAMES.draw(rng) if infinitive else self.choose_frame(subject)
            if gap:
                frame = "t"
        if sense is None and frame != "copula":
            if frame == "passive":
                sense = self.sense("t", object_kind=subject.kind)
            elif frame == "reflexive":
                sense = self.sense("t", subject_kind=subject.kind, reflexive=True)
            else:
                sense = self.sense(frame, subject_kind=subject.kind)
        passive = frame == "passive"
        if frame == "reflexive":
            reflexive = True
        lemma = "be" if frame == "copula" else sense.lemma

        # Auxiliary chain: [modal] [have +en] [be +ing] [be +en] verb; "do" carries a lone negation.
        if infinitive:
            modal = perfect = progressive = negation = False
        else:
            tense = tense or TENSES.draw(rng)
            modal = self.chance(MODAL) if modal is None else modal
            perfect = self.chance(PERFECT) if perfect is None else perfect
            progressive = self.chance(PROGRESSIVE) if progressive is None else progressive
            negation = self.chance(NEGATION) if negation is None else negation
        steps = [
            step
            for step, on in (
                ("modal", modal),
                ("perfect", perfect),
                ("progressive", progressive and frame != "copula"),
                ("passive", passive),
            )
            if on
        ]
        if negation and not steps and lemma != "be":
            steps.append("do")
        chain = self.conjugate([*steps, lemma], tense, subject.number, infinitive)

        # NPIs and adverbs go in the slot after the first auxiliary (or before a lone verb).
        below = licensed or negation  # what follows the negation is in its scope
        if ever is None:
            ever = below and not infinitive and self.chance(EVER)
        if (ever or npi_any) and not below:
            raise ValueError("an NPI needs a licensor: a 'no' subject or a negation before it")
        if preverbal is None:
            preverbal = not (ever or negation or infinitive) and self.chance(PREVERBAL_ADVERB)
        slot: list[Tree] = []
        if ever:
            slot.append(Tree("ADVP", [leaf("RB", "ever")]))
        elif preverbal:
            slot.append(Tree("ADVP", [leaf("RB", self.word("preverbal_adverbs"))]))

        complements = self.complements(
            frame,
            sense,
            subject,
            depth,
            below,
            gap=gap,
            npi_any=npi_any,
            reflexive=reflexive,
            obj=obj,
            passive=passive,
        )
        if adjuncts is None:
            adjuncts = not infinitive
        if adjuncts:
            complements.extend(self.vp_adjuncts(depth))

        # Build from the inside out: (VP aux [neg] [slot] (VP ... (VP verb complements))).
        first_tag, first_word = chain[0]
        head: list[Tree] = []
        if negation:
            negative = self.negation_leaf(first_word)
            if negative.children[0] == "n't" and first_word in NEGATIVE_CLITIC:
                first_word = NEGATIVE_CLITIC[first_word]  # "wo n't", "ca n't"
            head = [negative]
        head += slot
        if len(chain) == 1 and lemma != "be":  # a lone lexical verb: (VP [slot] verb ...)
            node = Tree("VP", [*slot, leaf(first_tag, first_word), *complements])
        elif len(chain) == 1:  # a lone copula behaves as an auxiliary: "is n't ever happy"
            node = Tree("VP", [leaf(first_tag, first_word), *head, *complements])
        else:
            node = Tree("VP", [leaf(*chain[-1]), *complements])
            for tag, word in reversed(chain[1:-1]):
                node = Tree("VP", [leaf(tag, word), node])
            node = Tree("VP", [leaf(first_tag, first_word), *head, node])
        if infinitive:
            return Tree("S", [Tree("VP", [leaf("TO", "to"), node])])
        return node

    def conjugate(
        self, steps: list[str], tense: str | None, number: str, infinitive: bool
    ) -> list[tuple[str, str]]:
        """(tag, word) for each verb of an auxiliary chain: the first is finite (agreeing with
        ``number``) unless ``infinitive``; each auxiliary fixes the form of the next verb."""
        chain: list[tuple[str, str]] = []
        required = "VB" if infinitive else None  # None: finite
        for step in steps:
            if step == "modal":
                chain.append(("MD", MODALS.draw(self.rng)))
            else:
                lemma = AUXILIARY_LEMMAS.get(step, step)
                if required is None:
                    chain.append(self.finite_form(lemma, tense, number))
                else:
                    chain.append((required, self.form(lemma, required)))
            required = NEXT_FORM.get(step)
        return chain

    def negation_leaf(self, first_word: str) -> Tree:
        if first_word in NO_CLITIC:
            return leaf("RB", "not")
        return leaf("RB", NEGATIONS.draw(self.rng))

    def complements(
        self,
        frame: str,
        sense: Sense | None,
        subject: Referent,
        depth: int,
        licensed: bool,
        *,
        gap: bool,
        npi_any: bool | None,
        reflexive: bool | None,
        obj: dict | None,
        passive: bool,
    ) -> list[Tree]:
        """What follows the verb, by frame; ``licensed``: NPIs allowed on the object."""
        obj = dict(obj or {})
        if frame == "copula":
            return [self.copula_predicate(subject, depth)]
        if passive:
            if self.chance(BY_AGENT):
                agent, _ = self.noun_phrase("pp", depth + 1, kinds=sense.subject)
                return [Tree("PP", [leaf("IN", "by"), agent])]
            return []
        if frame == "i":
            return []
        if frame in ("s", "v"):
            if frame == "v":
                return [
                    self.verb_phrase(
                        subject, depth + 1, licensed, infinitive=True, adjuncts=False, reflexive=False
                    )
                ]
            clause = Tree("S", self.clause(depth + 1, licensed=licensed))
            if self.chance(COMPLEMENTIZER):
                return [Tree("SBAR", [leaf("IN", "that"), clause])]
            return [Tree("SBAR", [clause])]
        if gap:
            return []
        # t, reflexive, d, p: an object (after the preposition for p)
        if frame == "d":
            first, _ = self.noun_phrase("object", depth + 1, kinds=("person",), modifier="none")
            second = self.object(sense.object, depth, licensed, npi_any, obj)
            return [first, second]
        if reflexive is None:
            reflexive = sense.reflexive and subject.agentive and self.chance(REFLEXIVE_OBJECT)
        if reflexive and not sense.reflexive:
            raise ValueError(f"{sense.lemma} does not take a reflexive object")
        target = (
            self.reflexive(subject) if reflexive else self.object(sense.object, depth, licensed, npi_any, obj)
        )
        if frame == "p":
            return [Tree("PP", [leaf("IN", sense.preposition), target])]
        return [target]

    def object(
        self, kinds: Sequence[str], depth: int, licensed: bool, npi_any: bool | None, spec: dict
    ) -> Tree:
        """A direct object; ``any`` as its determiner with probability ``ANY`` when licensed."""
        if npi_any is None:
            npi_any = licensed and self.chance(ANY)
        if npi_any and not licensed:
            raise ValueError("'any' needs a licensor: a 'no' subject or a negation before it")
        tree, _ = self.noun_phrase("object", depth + 1, kinds=kinds, npi_any=npi_any, **spec)
        return tree

    def copula_predicate(self, subject: Referent, depth: int) -> Tree:
        rng = self.rng
        form = COPULA_PREDICATES.draw(rng)
        if form == "adjective_complement":
            adjective, prep = self.lex.word_sampler("adjective_complements").draw(rng)
            if subject.agentive and self.chance(0.3):
                target = self.reflexive(subject)
            else:
                target, _ = self.noun_phrase("pp", depth + 1)
            return Tree("ADJP", [leaf("JJ", adjective), Tree("PP", [leaf("IN", prep), target])])
        if form == "noun":
            tree, _ = self.noun_phrase(
                "predicate", depth + 1, kinds=(subject.kind,), number=subject.number, form="common"
            )
            return tree
        if form == "pp":
            prep = COPULA_PREPOSITIONS.draw(rng)
            return Tree("PP", [leaf("IN", prep), self.prepositional_object(prep, depth + 1)])
        adjective = leaf("JJ", self.word("predicative_adjectives"))
        if self.chance(DEGREE_ADVERB * 2.5):
            return Tree("ADJP", [leaf("RB", self.word("degree_adverbs")), adjective])
        return Tree("ADJP", [adjective])

    def vp_adjuncts(self, depth: int) -> list[Tree]:
        """Optional PP, manner adverb, time expression and final subordinate clause."""
        factor = DEPTH_DECAY**depth
        adjuncts: list[Tree] = []
        if self.chance(VP_ADJUNCTS["pp"] * factor):
            adjuncts.append(self.adjunct_pp(depth))
            if self.chance(VP_ADJUNCTS["pp"] * factor / 2):
                adjuncts.append(self.adjunct_pp(depth))
        if self.chance(VP_ADJUNCTS["manner"] * factor):
            adjuncts.append(Tree("ADVP", [leaf("RB", self.word("manner_adverbs"))]))
        if self.chance(VP_ADJUNCTS["time"] * factor):
            adjuncts.append(self.time_expression())
        if depth == 0 and self.chance(VP_ADJUNCTS["subordinate"]):
            adjuncts.append(self.subordinate_clause(depth + 1))
        return adjuncts


def finish(children: list[Tree]) -> Tree:
    """The root ``(S ... (. .))`` with the first word capitalised."""
    return capitalise_first_word(Tree("S", [*children, PERIOD]))


def capitalise_first_word(tree: Tree) -> Tree:
    path: list[Tree] = []
    node = tree
    while not node.is_preterminal:
        path.append(node)
        node = node.children[0]
    word = node.children[0]
    new: Tree = leaf(node.label, word[:1].upper() + word[1:])
    for parent in reversed(path):
        new = Tree(parent.label, (new, *parent.children[1:]))
    return new


# -- seeds and words -------------------------------------------------------------------------------------


def derive_seed(seed: int, *labels: object) -> int:
    """A 64-bit seed derived from ``seed`` and labels (sha256; the same on every platform)."""
    text = ":".join(str(part) for part in (seed, *labels))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def closed_class_words() -> set[str]:
    """Function words and punctuation of the grammar's rule tables."""
    words = {",", ".", "to", "that", "who", "which", "any", "ever", "n't", "not", "by", "than"}
    for table in (
        SENTENCE_COORDINATORS,
        SUBORDINATORS,
        POSSESSIVES,
        MODALS,
        NEGATIONS,
        OBJECT_COORDINATORS,
        NP_PREPOSITIONS,
        VP_PREPOSITIONS,
        COPULA_PREPOSITIONS,
    ):
        words.update(table.outcomes)
    for table in DETERMINERS.values():
        words.update(w for w in table.outcomes if w not in ("", "possessive", "cardinal"))
    words.update({"a", "an"}, SUBJECT_PRONOUNS.outcomes, OBJECT_PRONOUN.values(), REFLEXIVES)
    words.update(BE.values(), HAVE.values(), DO.values(), {"was", "were"}, NEGATIVE_CLITIC.values())
    for table in TITLES.values():
        words.update(table.outcomes)
    for expression in TIME_EXPRESSIONS.outcomes:
        words.update(expression.split())
    for lemma in REPORTING_VERBS.outcomes:
        words.update(LEXICON.verbs[lemma].words())
    words.update(sense.preposition for sense in LEXICON.senses if sense.preposition)
    words.update(prep for _, prep in LEXICON.adjective_complements)
    words.discard("")
    return words
