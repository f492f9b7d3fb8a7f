"""Word lists of the synthetic treebank's grammar: nouns, verbs, adjectives, adverbs, names.

Everything here is data plus English morphology; the grammar that uses it is ``synthetic/grammar.py``.
Each open class is a list written roughly from common to rare words; a word's position in its
list is its *rank*, and the grammar draws words with probability proportional to ``1 / rank**s``
(``ZIPF_EXPONENT``), so a few words are frequent and most are rare, as in real text.

Nouns carry a *kind* (``person``, ``org``, ``thing``, ``idea``: used for selectional
restrictions), a *gender* (``masc``/``fem`` for sex-specific person nouns, ``common`` for other
person nouns, ``neut`` otherwise) and, for count nouns, a plural (``None`` for mass nouns).
Verbs have *senses*: a subcategorisation frame with the noun kinds its subject and object accept.

All sampling goes through ``ZipfSampler.draw(rng)``, which consumes exactly one
``rng.random()``: the grammar's draws stay aligned when only features (such as number) change.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

ZIPF_EXPONENT = 1.05
"""``s`` in p(word) ∝ 1 / rank**s within each word class."""

T = TypeVar("T")


class ZipfSampler(Generic[T]):
    """Draws items with probability ∝ ``weight``; by default ``1 / rank**s`` for list position."""

    __slots__ = ("_cumulative", "_total", "items")

    def __init__(self, items: Sequence[T], weights: Sequence[float] | None = None):
        if not items:
            raise ValueError("ZipfSampler needs at least one item")
        if weights is None:
            weights = [1.0 / (rank**ZIPF_EXPONENT) for rank in range(1, len(items) + 1)]
        self.items = tuple(items)
        cumulative, total = [], 0.0
        for weight in weights:
            total += weight
            cumulative.append(total)
        self._cumulative = cumulative
        self._total = total

    def draw(self, rng) -> T:
        """One item; consumes exactly one ``rng.random()``."""
        index = bisect_right(self._cumulative, rng.random() * self._total)
        return self.items[min(index, len(self.items) - 1)]

    def probability(self, index: int) -> float:
        previous = self._cumulative[index - 1] if index else 0.0
        return (self._cumulative[index] - previous) / self._total


# -- morphology ---------------------------------------------------------------------------------------

_VOWELS = "aeiou"


def regular_plural(noun: str) -> str:
    """English regular plural: ``box -> boxes``, ``city -> cities``, ``car -> cars``."""
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in _VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"


# Verbs whose final consonant doubles before -ed/-ing (US spelling: travel -> traveled).
DOUBLING_VERBS = frozenset(
    """
    admit ban beg chat commit control drop equip grab hug jog nod omit permit plan prefer scan
    recur refer regret rob ship shop skip slip step stir stop submit tap transfer trim wrap
    occur incur deter confer compel expel patrol rebel
    begin bet cut dig forget get hit let put quit run set shut sit spin split swim upset win
    """.split()
)

# lemma past past-participle
IRREGULAR_VERBS = {
    line.split()[0]: tuple(line.split()[1:])
    for line in """
    become became become
    begin began begun
    beat beat beaten
    bend bent bent
    bite bit bitten
    blow blew blown
    break broke broken
    bring brought brought
    build built built
    buy bought bought
    catch caught caught
    choose chose chosen
    come came come
    cost cost cost
    cut cut cut
    deal dealt dealt
    dig dug dug
    draw drew drawn
    drink drank drunk
    drive drove driven
    eat ate eaten
    fall fell fallen
    feed fed fed
    feel felt felt
    fight fought fought
    find found found
    flee fled fled
    fly flew flown
    forbid forbade forbidden
    forget forgot forgotten
    forgive forgave forgiven
    freeze froze frozen
    get got gotten
    give gave given
    go went gone
    grow grew grown
    hang hung hung
    have had had
    hear heard heard
    hide hid hidden
    hit hit hit
    hold held held
    hurt hurt hurt
    keep kept kept
    know knew known
    lay laid laid
    lead led led
    leave left left
    lend lent lent
    let let let
    lose lost lost
    make made made
    mean meant meant
    meet met met
    mislead misled misled
    overcome overcame overcome
    overlook overlooked overlooked
    overtake overtook overtaken
    pay paid paid
    put put put
    quit quit quit
    read read read
    rebuild rebuilt rebuilt
    rethink rethought rethought
    ride rode ridden
    ring rang rung
    rise rose risen
    run ran run
    say said said
    see saw seen
    seek sought sought
    sell sold sold
    send sent sent
    set set set
    shake shook shaken
    shine shone shone
    shoot shot shot
    show showed shown
    shrink shrank shrunk
    shut shut shut
    sing sang sung
    sink sank sunk
    sit sat sat
    sleep slept slept
    slide slid slid
    speak spoke spoken
    spend spent spent
    split split split
    spread spread spread
    stand stood stood
    steal stole stolen
    stick stuck stuck
    strike struck struck
    swear swore sworn
    sweep swept swept
    swim swam swum
    swing swung swung
    take took taken
    teach taught taught
    tear tore torn
    tell told told
    think thought thought
    throw threw thrown
    understand understood understood
    undertake undertook undertaken
    upset upset upset
    wake woke woken
    wear wore worn
    win won won
    withdraw withdrew withdrawn
    write wrote written
    """.strip().splitlines()
}


@dataclass(frozen=True, slots=True)
class VerbForms:
    """The five forms of an English verb, by Penn Treebank tag."""

    base: str  # VB, and VBP (present, not 3rd person singular)
    third: str  # VBZ
    past: str  # VBD
    participle: str  # VBN
    gerund: str  # VBG

    def words(self) -> tuple[str, ...]:
        return (self.base, self.third, self.past, self.participle, self.gerund)


def verb_forms(lemma: str) -> VerbForms:
    """Inflect a verb: irregular verbs from ``IRREGULAR_VERBS``, the rest by spelling rules."""
    if lemma == "have":
        third = "has"
    elif lemma.endswith(("s", "x", "z", "ch", "sh", "o")):
        third = lemma + "es"
    elif lemma.endswith("y") and lemma[-2] not in _VOWELS:
        third = lemma[:-1] + "ies"
    else:
        third = lemma + "s"

    if lemma.endswith("ie"):
        gerund = lemma[:-2] + "ying"
    elif lemma.endswith(("ee", "ye", "oe")) or lemma == "be":
        gerund = lemma + "ing"
    elif lemma.endswith("e"):
        gerund = lemma[:-1] + "ing"
    elif lemma in DOUBLING_VERBS:
        gerund = lemma + lemma[-1] + "ing"
    else:
        gerund = lemma + "ing"

    if lemma in IRREGULAR_VERBS:
        past, participle = IRREGULAR_VERBS[lemma]
    else:
        if lemma.endswith("e"):
            past = lemma + "d"
        elif lemma.endswith("y") and lemma[-2] not in _VOWELS:
            past = lemma[:-1] + "ied"
        elif lemma in DOUBLING_VERBS:
            past = lemma + lemma[-1] + "ed"
        else:
            past = lemma + "ed"
        participle = past
    return VerbForms(lemma, third, past, participle, gerund)


# Words whose first letter misleads the a/an rule.
_AN_EXCEPTIONS = frozenset("honest honor honorable hour hourly heir".split())
_A_PREFIXES = ("uni", "use", "usu", "uti", "eu", "one", "once", "ura", "uro")


def indefinite_article(next_word: str) -> str:
    """``a`` or ``an`` before ``next_word`` (by sound, with the usual spelling exceptions)."""
    word = next_word.lower()
    if word in _AN_EXCEPTIONS:
        return "an"
    if word.startswith(_A_PREFIXES):
        return "a"
    return "an" if word[:1] in _VOWELS else "a"


# -- nouns --------------------------------------------------------------------------------------------
# Regular plurals are derived; "child/children" gives an irregular plural, "aircraft/aircraft" an
# unchanged one.

PERSON_NOUNS = """
official president leader member worker student teacher doctor expert analyst manager director
executive investor lawyer officer player author writer senator scientist researcher citizen
resident farmer customer client partner friend neighbor colleague reporter journalist editor artist
child/children person/people musician singer painter photographer architect engineer designer
banker trader economist historian professor critic judge witness victim suspect prisoner soldier
captain general commander guard pilot driver passenger traveler tourist visitor guest stranger
patient nurse surgeon dentist therapist chemist physicist biologist philosopher poet novelist
composer producer candidate voter politician minister diplomat ambassador governor mayor lawmaker
regulator inspector auditor accountant consultant adviser assistant secretary clerk chef cook baker
butcher carpenter plumber electrician mechanic builder gardener hunter miner sailor shepherd
merchant seller buyer owner tenant employer employee supervisor founder athlete coach referee fan
spectator adult teenager baby parent cousin relative spouse twin orphan kid volunteer activist
protester lobbyist donor sponsor shareholder borrower lender creditor bidder dealer broker agent
detective spy thief/thieves robber criminal attorney prosecutor defendant plaintiff bureaucrat
librarian curator translator interpreter narrator reader viewer listener subscriber user consumer
shopper vendor supplier contractor rancher grower veterinarian paramedic firefighter astronaut
explorer pioneer inventor entrepreneur immigrant refugee migrant villager peasant servant knight
warrior rival opponent enemy ally champion winner loser beginner veteran rookie graduate pupil
classmate roommate teammate boss chief/chiefs deputy janitor sheriff marshal representative delegate
envoy negotiator mediator observer commentator columnist blogger publisher cartoonist comedian
magician performer pianist violinist guitarist drummer conductor tutor mentor instructor trainer
intern apprentice surveyor geologist astronomer botanist psychologist sociologist linguist
mathematician pharmacist
"""

# masculine[/plural]:feminine[/plural] pairs.
GENDERED_PERSON_NOUNS = """
man/men:woman/women boy:girl father:mother king:queen son:daughter brother:sister husband:wife/wives
actor:actress uncle:aunt nephew:niece prince:princess gentleman/gentlemen:lady
grandfather:grandmother grandson:granddaughter waiter:waitress
businessman/businessmen:businesswoman/businesswomen
spokesman/spokesmen:spokeswoman/spokeswomen chairman/chairmen:chairwoman/chairwomen
policeman/policemen:policewoman/policewomen congressman/congressmen:congresswoman/congresswomen
salesman/salesmen:saleswoman/saleswomen monk:nun duke:duchess emperor:empress host:hostess
steward:stewardess groom:bride landlord:landlady hero/heroes:heroine widower:widow
stepfather:stepmother boyfriend:girlfriend schoolboy:schoolgirl god:goddess count:countess
baron:baroness headmaster:headmistress fisherman/fishermen:fisherwoman/fisherwomen
sportsman/sportsmen:sportswoman/sportswomen horseman/horsemen:horsewoman/horsewomen
"""

ORG_NOUNS = """
company government committee team agency bank firm board council party union group organization
university college club army department ministry court parliament administration corporation
business network newspaper airline bureau commission foundation charity society association
federation alliance coalition crew family/families orchestra choir jury audience crowd band
institute hospital school studio startup retailer manufacturer
cooperative
"""

THING_NOUNS = """
book car house report letter picture photograph painting map table chair desk door window wall roof
floor room kitchen garden building office library museum theater station airport hotel restaurant
shop store market factory farm field park street road bridge river lake island mountain hill forest
village town city coast beach harbor port tower castle palace prison stadium camp tent cabin
apartment hall corridor garage basement barn bus train truck plane ship boat bicycle engine machine
computer phone camera radio television screen device tool knife/knives gun weapon key lock box bag
bottle cup glass plate bowl pot pan spoon fork bed lamp clock watch mirror carpet blanket pillow
shirt coat dress hat shoe boot jacket uniform ring necklace coin ticket card envelope package
parcel gift toy ball instrument piano guitar violin drum album film movie magazine journal novel
poem article essay manuscript contract license passport certificate form file folder note list
chart graph sign poster flag statue monument sculpture tree flower plant leaf/leaves branch seed
apple orange potato/potatoes tomato/tomatoes egg sandwich cake cookie pie meal dish stone rock brick
wire cable pipe tube wheel tire seat fence gate shelf/shelves cabinet drawer dog cat horse bird
cow pig sheep/sheep goat chicken duck mouse/mice rabbit fish/fish whale shark snake lion tiger bear
elephant monkey fox deer/deer insect bee spider wolf/wolves vehicle aircraft/aircraft satellite
rocket missile tank helicopter motorcycle van taxi ambulance wagon cart trophy medal jewel diamond
crown sword shield helmet tractor crane ladder hammer rope chain basket barrel jar tray kettle
stove oven fridge sofa couch curtain towel sheet candle umbrella wallet purse suitcase backpack
notebook pencil pen brush canvas frame vase teapot cottage mansion villa
warehouse shed tunnel canal dam fountain pond valley cliff cave desert meadow orchard vineyard
lighthouse cathedral temple mosque chapel courthouse skyscraper lab clinic pharmacy bakery cafe
gallery arena pool
"""

IDEA_NOUNS = """
plan idea decision problem question issue proposal policy program project law rule bill agreement
deal offer strategy theory argument claim view opinion belief story rumor lie fact reason result
effect change choice goal dream fear concern risk threat danger crisis/crises solution answer
response reply request demand complaint suggestion recommendation warning promise statement
announcement speech lecture interview conversation discussion debate meeting conference election
campaign trial case investigation inquiry study survey analysis/analyses experiment test exam
lesson course task job career mission operation attack war battle conflict dispute protest
revolution reform movement trend pattern method approach system process procedure standard
principle concept model design version edition chapter section page paragraph sentence word phrase
message signal symbol image scene event accident incident mistake error failure victory defeat
loss gain profit cost price rate tax fee salary budget loan debt payment investment sale merger bid
bond economy industry opportunity chance advantage benefit impact role position status title award
prize honor reward penalty verdict ruling judgment right duty obligation habit tradition custom
ceremony festival holiday celebration performance concert show exhibition competition tournament
match race season period era century/centuries decade deadline schedule contest plot scandal
secret mystery puzzle joke song melody poll vote treaty strike memo
forecast estimate figure number total average guideline regulation requirement condition term
"""

MASS_THING_NOUNS = """
money water food oil gas gold silver coffee tea milk bread rice sugar salt wine beer furniture
equipment software fuel steel iron wood cotton wool land cash paint sand dust ice snow smoke meat
cheese soup clothing jewelry luggage machinery hardware plastic glassware grain flour corn
"""

MASS_IDEA_NOUNS = """
information evidence advice research news progress success help support knowledge music art damage
pollution energy power attention courage patience luck talent confidence respect training education
health wealth poverty violence crime justice peace freedom democracy history science literature
medicine traffic weather work homework fun nonsense criticism praise funding
growth inflation unemployment insurance security safety trade tourism agriculture
"""


@dataclass(frozen=True, slots=True)
class Noun:
    """A noun lemma with its agreement and selection features."""

    singular: str
    plural: str | None  # None for mass nouns
    kind: str  # person | org | thing | idea
    gender: str  # masc | fem | common | neut
    partner: str | None = None  # the other-gender counterpart of a gendered person noun

    @property
    def mass(self) -> bool:
        return self.plural is None

    def form(self, number: str) -> str:
        if number == "pl":
            if self.plural is None:
                raise ValueError(f"mass noun {self.singular!r} has no plural")
            return self.plural
        return self.singular


def _parse_count_nouns(text: str, kind: str, gender: str) -> list[Noun]:
    nouns = []
    for token in text.split():
        singular, _, plural = token.partition("/")
        nouns.append(Noun(singular, plural or regular_plural(singular), kind, gender))
    return nouns


def _parse_gendered(text: str) -> tuple[list[Noun], list[Noun]]:
    masculine, feminine = [], []
    for token in text.split():
        masc, fem = token.split(":")
        masc_sg, _, masc_pl = masc.partition("/")
        fem_sg, _, fem_pl = fem.partition("/")
        masculine.append(Noun(masc_sg, masc_pl or regular_plural(masc_sg), "person", "masc", fem_sg))
        feminine.append(Noun(fem_sg, fem_pl or regular_plural(fem_sg), "person", "fem", masc_sg))
    return masculine, feminine


# -- verbs --------------------------------------------------------------------------------------------
# Frames: i intransitive; t transitive (t+r: the object may be a reflexive); d ditransitive (a person,
# then an object of the object class); p prepositional ("rely on"; some take a reflexive object);
# s that-clause; v to-infinitive. Subject classes: person, agent (person or organisation), any.
# Object classes: person, agent, thing, idea, entity (thing or idea), any.

VERB_SENSES: list[tuple[str, str, str, str]] = [
    (
        "t+r",
        "person",
        "person",
        """
        praise blame criticize defend protect hurt injure introduce trust compare describe see
        watch help teach train push convince remind reward punish warn question forgive save
        dress wash feed amuse distract embarrass challenge promote present surprise fool deceive
        flatter insult betray expose isolate reassure calm prepare admire hate love like record
        photograph imagine picture paint draw consider excuse educate test motivate""",
    ),
    (
        "t",
        "agent",
        "person",
        """
        hire fire meet visit thank call contact invite interview elect appoint replace join follow
        lead beat defeat marry greet represent advise inform employ recruit arrest sue accuse
        charge attack chase rescue welcome support interrupt oppose ignore notice recognize
        nominate honor celebrate entertain host guide escort accompany serve treat cure examine
        hug kiss tease annoy bother frighten scare impress disappoint encourage persuade comfort
        confront approach pursue abandon dismiss suspend""",
    ),
    (
        "t",
        "agent",
        "thing",
        """
        buy sell build write read find lose open close carry bring take send use own keep hold
        break fix repair paint draw clean move sign steal hide cook eat drink wear drive fly ride
        rent borrow deliver produce design create destroy damage burn cut fill empty lift drop
        throw pack order print publish collect plant grow display inspect check replace install
        remove return purchase acquire import export ship load unload wrap polish measure weigh
        decorate restore demolish construct assemble manufacture donate auction sort scan
        photograph film count guard examine seize recover locate visit abandon need want have
        get receive""",
    ),
    (
        "t",
        "agent",
        "idea",
        """
        discuss consider approve reject support propose announce explain accept oppose adopt review
        study analyze investigate debate cancel delay complete finish start begin launch organize
        win lose attend miss remember forget understand learn ignore welcome recommend present
        report describe mention share receive obtain gain earn need want make have get take plan
        arrange schedule postpone criticize defend question challenge sign negotiate draft revise
        publish implement enforce violate follow predict solve settle resolve handle manage run
        expand reduce finance fund sponsor block veto endorse justify summarize outline evaluate
        assess prefer enjoy avoid pursue abandon improve""",
    ),
    (
        "t",
        "any",
        "any",
        """
        affect cause include require involve reflect show change improve reduce increase raise
        influence shape determine follow replace match limit define represent cover reach hit
        support contain mention describe explain""",
    ),
    (
        "t",
        "any",
        "agent",
        """
        threaten surprise worry concern interest excite disappoint bother attract help hurt""",
    ),
    (
        "i",
        "person",
        "-",
        """
        sleep laugh smile cry arrive leave wait work run walk swim dance sing speak complain retire
        resign travel relax sit stand vote shout scream whisper pray fight succeed recover
        graduate disagree apologize cheer celebrate struggle compete protest volunteer testify
        negotiate campaign""",
    ),
    (
        "i",
        "any",
        "-",
        """
        rise fall grow change disappear appear happen occur begin start end continue improve
        decline increase collapse fail exist matter vanish emerge expand shrink deteriorate
        spread stop last survive succeed suffer burn sink float shine crash explode fade stall
        rebound surge plunge soar recover""",
    ),
    (
        "p",
        "any",
        "any",
        """
        refer:to belong:to lead:to contribute:to relate:to apply:to amount:to depend:on
        point:to""",
    ),
    (
        "p",
        "agent",
        "any",
        """
        respond:to rely:on focus:on comment:on insist:on report:on look:at aim:at talk:about
        think:about worry:about care:about complain:about write:about speak:about learn:about
        read:about hear:about know:about forget:about dream:about wait:for look:for search:for
        pay:for ask:for apply:for hope:for account:for vote:for call:for deal:with agree:with
        believe:in invest:in participate:in specialize:in object:to turn:to listen:to laugh:at
        look:after""",
    ),
    (
        "p",
        "person",
        "agent",
        """
        argue:with compete:with work:with work:for smile:at stare:at""",
    ),
    (
        "s",
        "person",
        "-",
        """
        say think believe claim argue explain suggest know hope fear insist note warn admit
        realize notice learn discover expect assume suspect feel decide agree confirm predict
        promise remember reveal find mention recognize understand complain conclude estimate
        state declare stress emphasize acknowledge add reply imagine guess hear report announce
        worry""",
    ),
    (
        "s",
        "any",
        "-",
        """
        show suggest indicate prove imply reveal confirm mean say""",
    ),
    (
        "v",
        "agent",
        "-",
        """
        want try plan hope decide expect agree promise begin start continue fail attempt intend
        prepare seek need learn choose offer threaten manage wish pretend tend vote aim struggle""",
    ),
    (
        "d",
        "agent",
        "thing",
        """
        give send lend sell bring hand pay owe mail leave buy write""",
    ),
    (
        "d",
        "agent",
        "entity",
        """
        offer show tell promise award grant teach""",
    ),
]

# Verb lemmas roughly from most to least frequent in news text; they rank first, in this order, and the
# other verbs follow in the order of VERB_SENSES.
COMMON_VERBS = """
say make take get have see know think give find tell leave feel bring begin keep hold write hear
mean meet run pay lead read grow lose fall send build understand draw break spend cut rise drive buy
wear choose seek throw catch deal win offer show try call ask need want use work look help start
turn move believe happen include continue change watch follow stop create allow add expect remember
love consider appear wait serve reach suggest raise sell require report decide return explain hope
develop carry produce receive agree support hit describe visit cause open walk plan reduce
increase announce accept travel claim discuss enjoy prepare protect face learn teach join manage
approve visit compare admit reveal arrive fail argue attend avoid praise blame criticize defend hurt
"""

# Prepositional verbs whose object may be a reflexive ("relies on herself").
REFLEXIVE_PREPOSITIONAL = frozenset(
    """talk:about think:about worry:about care:about complain:about write:about speak:about
    rely:on focus:on believe:in look:at laugh:at look:after listen:to turn:to read:about
    learn:about""".split()
)

# Which noun kinds each selection class accepts.
SELECTION = {
    "person": ("person",),
    "agent": ("person", "org"),
    "thing": ("thing",),
    "idea": ("idea",),
    "entity": ("thing", "idea"),
    "any": ("person", "org", "thing", "idea"),
    "-": (),
}


@dataclass(frozen=True, slots=True)
class Sense:
    """One use of a verb: frame, accepted subject and object kinds, preposition (frame p)."""

    lemma: str
    frame: str  # i t d p s v
    subject: tuple[str, ...]  # noun kinds accepted as subject
    object: tuple[str, ...]  # noun kinds accepted as object (frame d: second object); () if none
    reflexive: bool  # the object may be a reflexive pronoun
    preposition: str | None = None


def _parse_senses() -> list[Sense]:
    senses: list[Sense] = []
    seen: set[tuple] = set()
    for frame_spec, subject, obj, text in VERB_SENSES:
        frame, _, flag = frame_spec.partition("+")
        for token in text.split():
            lemma, _, preposition = token.partition(":")
            object_kinds = SELECTION[obj]  # for d: the second object (the first is a person)
            key = (lemma, frame, preposition, SELECTION[subject], object_kinds)
            if key in seen:
                continue
            seen.add(key)
            reflexive = flag == "r" or (frame == "p" and token in REFLEXIVE_PREPOSITIONAL)
            senses.append(
                Sense(lemma, frame, SELECTION[subject], object_kinds, reflexive, preposition or None)
            )
    return senses


# -- adjectives, adverbs, names, places --------------------------------------------------------------

ADJECTIVES = """
new good old great high small large big long little young important political social local
national public private major economic international strong low hard real free full early late
special recent easy clear open serious simple poor rich happy sad angry popular famous successful
difficult dangerous safe careful quiet loud bright dark beautiful ugly pretty handsome tall short
heavy light fast slow quick warm cold hot cool dry wet clean dirty fresh empty busy tired hungry
sick healthy strange familiar foreign modern ancient traditional expensive cheap valuable useful
powerful weak brave proud calm nervous honest kind cruel generous polite rude clever smart wise
foolish friendly lonely gentle fierce patient curious eager anxious confident certain aware
afraid responsible ready interested nice fine huge tiny wide narrow deep thick thin flat round
square sharp soft smooth rough loose tight broad central northern southern eastern western
official final main basic common general complete entire whole total particular similar different
certain obvious likely possible necessary available current former
future previous original extra additional independent legal illegal military financial
industrial commercial cultural medical scientific technical digital electric nuclear natural
physical mental personal professional federal regional rural urban royal religious democratic
liberal conservative radical moderate annual daily weekly monthly fair unfair equal rare unusual
typical normal regular formal casual strict severe mild harsh bitter sweet sour salty delicious
tasty raw ripe green red blue yellow white black brown gray purple pink golden silver wooden
metal plastic glass stone leather cotton woolen silk crowded empty noisy peaceful violent
secret hidden visible invisible famous unknown mysterious magical curious grateful jealous
ashamed guilty innocent lucky unlucky wealthy broke awful terrible horrible wonderful excellent
perfect brilliant splendid magnificent elegant graceful clumsy awkward careless reckless bold
shy modest humble arrogant stubborn loyal faithful reliable honest dishonest sincere cheerful
gloomy miserable delighted pleased upset worried excited bored surprised shocked amazed
confused embarrassed frightened scared exhausted relaxed comfortable uncomfortable convenient
efficient effective active passive positive negative major minor junior senior chief prime
principal vital crucial critical essential significant relevant controversial competitive
profitable expensive affordable ambitious creative talented skilled experienced qualified
educated intelligent sensible reasonable logical rational practical realistic romantic
dramatic tragic comic classic elderly teenage adult annual historic historical
"""

# Adjectives used only before a noun, never as a predicate ("the former mayor", not "is former").
ATTRIBUTIVE_ONLY = frozenset(
    """main entire whole total particular former future previous additional extra chief prime
    principal annual daily weekly monthly northern southern eastern western central federal
    regional nuclear digital electric industrial commercial medical scientific technical
    financial military political economic cultural royal religious national international
    local public private official current original basic general teenage adult elderly
    historic historical senior junior major minor mere""".split()
)

# Adjectives that take a prepositional complement ("proud of ...") and may take a reflexive there.
ADJECTIVE_COMPLEMENTS = """
proud:of afraid:of aware:of ashamed:of sure:of fond:of jealous:of critical:of tired:of
responsible:for famous:for ready:for grateful:for known:for
interested:in involved:in
angry:with pleased:with satisfied:with familiar:with happy:with busy:with
"""

MANNER_ADVERBS = """
quickly slowly carefully quietly easily clearly badly well closely directly quickly strongly
completely openly publicly privately seriously suddenly gradually eventually immediately
finally simply briefly firmly gently politely loudly happily sadly angrily proudly calmly
nervously patiently eagerly anxiously honestly bravely wisely foolishly warmly coldly fairly
widely heavily sharply steadily rapidly smoothly properly successfully effectively efficiently
deliberately accidentally secretly silently bitterly fiercely kindly cheerfully reluctantly
confidently carelessly hastily thoroughly
"""

PREVERBAL_ADVERBS = """
also often recently still already usually sometimes just finally soon once quickly
frequently occasionally generally previously reportedly apparently probably certainly
"""

SENTENCE_ADVERBS = """
however meanwhile moreover nevertheless instead indeed therefore furthermore consequently
fortunately unfortunately surprisingly apparently obviously similarly otherwise still
"""

DEGREE_ADVERBS = """
very quite rather extremely fairly highly really too increasingly particularly relatively
remarkably unusually surprisingly somewhat incredibly
"""

MASCULINE_NAMES = """
James John Robert Michael William David Richard Joseph Thomas Charles Daniel Matthew Anthony Mark
Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George Edward Ronald Timothy Jason Jeffrey
Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin Scott Brandon Benjamin Samuel Frank
Gregory Raymond Alexander Patrick Jack Dennis Jerry Tyler Aaron Henry Peter Adam Douglas Nathan
Zachary Walter Kyle Harold Carl Arthur Roger Keith Jeremy Terry Lawrence Sean Christian Albert Joe
Ethan Austin Jesse Billy Bryan Bruce Ralph Roy Noah Dylan Eugene Wayne Alan Juan Louis Gabriel
Randy Philip Harry Vincent Bobby Johnny Logan Oliver Hugo Victor Martin Leo Oscar Felix Max Simon
Luke Ian Colin Neil Stanley Leonard Gordon Frederick Marcus Julian Theodore Isaac Ivan Omar Ahmed
Hiroshi Pedro Carlos Luis Miguel Rafael Diego Marco Pierre Hans Karl Sven Boris Dmitri
"""

FEMININE_NAMES = """
Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy Betty Margaret
Sandra Ashley Kimberly Emily Donna Michelle Carol Amanda Dorothy Melissa Deborah Stephanie Rebecca
Sharon Laura Cynthia Kathleen Amy Angela Shirley Anna Brenda Pamela Emma Nicole Helen Samantha
Katherine Christine Debra Rachel Carolyn Janet Catherine Maria Heather Diane Ruth Julie Olivia
Joyce Victoria Kelly Lauren Christina Joan Evelyn Judith Megan Andrea Cheryl Hannah Jacqueline
Martha Gloria Teresa Ann Sara Madison Frances Kathryn Janice Abigail Alice Judy Sophia Grace
Denise Amber Doris Marilyn Danielle Beverly Isabella Theresa Diana Natalie Brittany Charlotte
Marie Kayla Alexis Lori Claire Lucy Julia Irene Rose Eleanor Sophie Chloe Ella Zoe Nina Vera
Ingrid Yuki Mei Priya Fatima Elena Sofia Lucia Carmen Ines Greta Olga Natasha
"""

SURNAMES = """
Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Wilson Anderson Taylor Moore
Jackson White Harris Thompson Clark Lewis Robinson Walker Young Allen Wright Hill Green Adams Baker
Nelson Carter Mitchell Roberts Turner Phillips Campbell Parker Evans Edwards Collins Stewart Morris
Murphy Cook Rogers Morgan Cooper Peterson Reed Bailey Bell Ward Cox Richardson Wood Watson Brooks
Bennett Gray Hughes Price Sanders Myers Long Ross Foster Powell Jenkins Perry Sullivan Fisher
Henderson Coleman Simmons Patterson Reynolds Hamilton Graham Wallace Cole West Stone Hunt Black
Palmer Mills Grant Knight Ferguson Hayes Gibson Ellis Marshall Owens Harrison Fernandez Chen Wang
Zhang Liu Kim Park Lee Nguyen Tanaka Suzuki Sato Khan Singh Patel Kumar Schmidt Weber Fischer
Becker Rossi Bianchi Dubois Moreau Ivanov Petrov Novak Kowalski Jensen Larsen Berg Silva Santos
Costa Murray Walsh Byrne
"""

PLACE_NAMES = """
London Paris Tokyo Berlin Rome Madrid Moscow Beijing Shanghai Delhi Mumbai Cairo Lagos Nairobi
Toronto Chicago Boston Seattle Denver Dallas Houston Atlanta Miami Detroit Phoenix Philadelphia
Baltimore Pittsburgh Cleveland Portland Texas California Florida Ohio Michigan Oregon Nevada
Arizona Colorado Alaska Hawaii Kansas Iowa Maine Vermont Canada Mexico Brazil Argentina Chile Peru
France Germany Italy Spain Portugal Britain Ireland Norway Sweden Finland Poland Russia Ukraine
Greece Turkey Egypt Kenya Nigeria India China Japan Korea Vietnam Thailand Australia Europe Asia
Africa America Washington Vienna Prague Athens Dublin Amsterdam Brussels Geneva Zurich Oslo
Stockholm Helsinki Warsaw Budapest Lisbon Istanbul
"""

NUMBERS = "two three four five six seven eight nine ten twelve fifteen twenty thirty fifty".split()
YEARS = [str(year) for year in range(1950, 2025)]


def _words(text: str) -> list[str]:
    """The words of a list, in order, each once."""
    return list(dict.fromkeys(text.split()))


# -- the lexicon --------------------------------------------------------------------------------------


MIN_LEXICON_SIZE = 10
"""The smallest ``size`` a restricted ``Lexicon`` accepts (every word class keeps a few words)."""
MIN_GENDERED_PAIRS = 4


class Lexicon:
    """All word lists, parsed once, with cached Zipf samplers for the subsets the grammar asks for.

    ``size`` restricts every open word class (the nouns of each kind, the verb lemmas, adjectives,
    each class of adverbs, first names, surnames, places, years) to its ``size`` most frequent
    entries, so a small corpus sees each word often enough to learn its features. The grammar's
    coverage stays the same: every verb frame and selection that the full lexicon can fill keeps
    its most frequent verb, and gendered person nouns stay in masculine/feminine pairs (at least
    ``MIN_GENDERED_PAIRS`` of them).
    """

    def __init__(self, size: int | None = None) -> None:
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < MIN_LEXICON_SIZE):
            raise ValueError(f"lexicon size must be an integer of at least {MIN_LEXICON_SIZE}, got {size!r}")
        self.size = size
        masculine, feminine = _parse_gendered(GENDERED_PERSON_NOUNS)
        # Interleave masculine and feminine pairs so both genders get the same ranks.
        gendered = [noun for pair in zip(masculine, feminine, strict=True) for noun in pair]
        common = _parse_count_nouns(PERSON_NOUNS, "person", "common")
        # Person nouns: common-gender nouns first (the most frequent), gendered nouns spread in.
        persons: list[Noun] = []
        for index, noun in enumerate(common):
            persons.append(noun)
            if index % 4 == 1 and gendered:
                persons.append(gendered.pop(0))
        persons.extend(gendered)
        mass_things = [Noun(w, None, "thing", "neut") for w in _words(MASS_THING_NOUNS)]
        mass_ideas = [Noun(w, None, "idea", "neut") for w in _words(MASS_IDEA_NOUNS)]
        things = _interleave(_parse_count_nouns(THING_NOUNS, "thing", "neut"), mass_things, every=6)
        ideas = _interleave(_parse_count_nouns(IDEA_NOUNS, "idea", "neut"), mass_ideas, every=4)
        self.nouns: dict[str, list[Noun]] = {
            "person": persons,
            "org": _parse_count_nouns(ORG_NOUNS, "org", "neut"),
            "thing": things,
            "idea": ideas,
        }
        self.masculine_nouns = masculine
        self.feminine_nouns = feminine
        self.senses = _parse_senses()
        self.verbs: dict[str, VerbForms] = {}
        for sense in self.senses:
            if sense.lemma not in self.verbs:
                self.verbs[sense.lemma] = verb_forms(sense.lemma)
        # Rank of a verb lemma: its place in COMMON_VERBS, then order of first appearance.
        ranked = [v for v in _words(COMMON_VERBS) if v in self.verbs]
        ranked += [v for v in self.verbs if v not in set(ranked)]
        self.verb_rank = {lemma: rank for rank, lemma in enumerate(ranked, 1)}
        self.frames_of: dict[str, frozenset[str]] = {}
        for sense in self.senses:
            self.frames_of[sense.lemma] = self.frames_of.get(sense.lemma, frozenset()) | {sense.frame}
        self.adjectives = _words(ADJECTIVES)
        self.predicative_adjectives = [a for a in self.adjectives if a not in ATTRIBUTIVE_ONLY]
        self.adjective_complements = [tuple(t.split(":")) for t in _words(ADJECTIVE_COMPLEMENTS)]
        self.manner_adverbs = _words(MANNER_ADVERBS)
        self.preverbal_adverbs = _words(PREVERBAL_ADVERBS)
        self.sentence_adverbs = _words(SENTENCE_ADVERBS)
        self.degree_adverbs = _words(DEGREE_ADVERBS)
        self.masculine_names = _words(MASCULINE_NAMES)
        self.feminine_names = _words(FEMININE_NAMES)
        self.surnames = _words(SURNAMES)
        self.places = _words(PLACE_NAMES)
        self.numbers = list(NUMBERS)
        self.years = list(YEARS)
        if size is not None:
            self._restrict(size)
        self._samplers: dict[object, ZipfSampler | None] = {}
        self._check()

    def _restrict(self, size: int) -> None:
        """Keep the ``size`` most frequent entries of every open class (see the class docstring)."""
        persons = self.nouns["person"][:size]
        kept = {noun.singular for noun in persons}
        # A gendered noun stays only with its partner; at least MIN_GENDERED_PAIRS pairs stay, enough
        # for the reflexive-gender suite's distinct items.
        every_pair = list(zip(self.masculine_nouns, self.feminine_nouns, strict=True))
        pairs = [(m, f) for m, f in every_pair if m.singular in kept and f.singular in kept]
        pairs += [pair for pair in every_pair if pair not in pairs][: max(0, MIN_GENDERED_PAIRS - len(pairs))]
        gendered = {noun.singular for pair in pairs for noun in pair}
        persons = [n for n in persons if n.gender not in ("masc", "fem") or n.singular in gendered]
        persons += [n for pair in pairs for n in pair if n.singular not in kept]
        self.nouns = {kind: nouns[:size] for kind, nouns in self.nouns.items()} | {"person": persons}
        self.masculine_nouns = [m for m, _ in pairs]
        self.feminine_nouns = [f for _, f in pairs]
        # Verbs: the most frequent lemmas, plus the most frequent lemma of any frame and selection
        # the full lexicon can fill that they leave empty.
        lemmas = {lemma for lemma, rank in self.verb_rank.items() if rank <= size}
        by_rank = sorted(self.senses, key=lambda sense: self.verb_rank[sense.lemma])
        for sense in by_rank:
            served = lambda other, sense=sense: (
                other.frame == sense.frame
                and other.subject == sense.subject
                and other.object == sense.object
                and other.reflexive == sense.reflexive
            )
            if not any(served(other) and other.lemma in lemmas for other in self.senses):
                lemmas.add(sense.lemma)
        # ``verbs`` keeps every lemma's forms (morphology: the grammar's own tables of reporting verbs
        # and auxiliaries use them); the senses decide which verbs fill a verb phrase.
        self.senses = [sense for sense in self.senses if sense.lemma in lemmas]
        self.frames_of = {lemma: frames for lemma, frames in self.frames_of.items() if lemma in lemmas}
        for name in (
            "adjectives",
            "adjective_complements",
            "manner_adverbs",
            "preverbal_adverbs",
            "sentence_adverbs",
            "degree_adverbs",
            "masculine_names",
            "feminine_names",
            "surnames",
            "places",
            "years",
        ):
            setattr(self, name, getattr(self, name)[:size])
        self.predicative_adjectives = [a for a in self.adjectives if a not in ATTRIBUTIVE_ONLY]

    def _check(self) -> None:
        """The lists must not contradict each other (a word in two noun classes, a name clash)."""
        seen: dict[str, str] = {}
        for kind, nouns in self.nouns.items():
            for noun in nouns:
                if noun.singular in seen:
                    raise ValueError(f"noun {noun.singular!r} is listed as {seen[noun.singular]} and {kind}")
                seen[noun.singular] = kind
        first = set(self.masculine_names) | set(self.feminine_names)
        clashes = (set(self.masculine_names) & set(self.feminine_names)) | (first & set(self.surnames))
        clashes |= (first | set(self.surnames)) & set(self.places)
        if clashes:
            raise ValueError(f"names listed in two classes: {sorted(clashes)}")

    # -- samplers -------------------------------------------------------------------------------

    def sampler(self, key: object, build: Callable[[], tuple[list, list[float] | None]]) -> ZipfSampler:
        """A cached sampler; ``build`` returns (items, weights or None for rank weights)."""
        sampler = self._samplers.get(key)
        if sampler is None:
            items, weights = build()
            sampler = self._samplers[key] = ZipfSampler(items, weights)
        return sampler

    def noun_sampler(self, kind: str, *, count_only: bool = False) -> ZipfSampler[Noun]:
        def build():
            nouns = self.nouns[kind]
            ranked = [(noun, rank) for rank, noun in enumerate(nouns, 1) if not (count_only and noun.mass)]
            return [n for n, _ in ranked], [1.0 / r**ZIPF_EXPONENT for _, r in ranked]

        return self.sampler(("noun", kind, count_only), build)

    def gendered_sampler(self) -> ZipfSampler[Noun]:
        """Masculine person nouns that have a feminine partner (``king`` for ``king``/``queen``)."""
        return self.sampler(("gendered",), lambda: (list(self.masculine_nouns), None))

    def sense_sampler(
        self,
        frame: str,
        subject_kind: str | None = None,
        object_kind: str | None = None,
        *,
        reflexive: bool = False,
    ) -> ZipfSampler[Sense] | None:
        """Senses with ``frame`` accepting the subject and object kinds (``None``: any); with
        ``reflexive``, only senses whose object may be a reflexive. ``None`` if there are none."""
        key = ("sense", frame, subject_kind, object_kind, reflexive)
        if key not in self._samplers:
            senses = [
                s
                for s in self.senses
                if s.frame == frame
                and (subject_kind is None or subject_kind in s.subject)
                and (object_kind is None or object_kind in s.object)
                and (s.reflexive or not reflexive)
            ]
            if not senses:
                self._samplers[key] = None
                return None
            weights = [1.0 / self.verb_rank[s.lemma] ** ZIPF_EXPONENT for s in senses]
            self._samplers[key] = ZipfSampler(senses, weights)
        return self._samplers[key]

    def word_sampler(self, name: str) -> ZipfSampler[str]:
        """Zipf sampler over one of the word lists (``adjectives``, ``manner_adverbs``, ...)."""
        return self.sampler(("words", name), lambda: (list(getattr(self, name)), None))

    # -- inventory ----------------------------------------------------------------------------------

    def partner(self, noun: Noun) -> Noun:
        """The other-gender counterpart of a gendered person noun (``king`` -> ``queen``)."""
        others = self.feminine_nouns if noun.gender == "masc" else self.masculine_nouns
        for other in others:
            if other.singular == noun.partner:
                return other
        raise ValueError(f"{noun.singular!r} has no gendered counterpart")

    def open_class_words(self) -> set[str]:
        """Every inflected form of every open-class entry (nouns, verbs, adjectives, adverbs, names)."""
        words: set[str] = set()
        for nouns in self.nouns.values():
            for noun in nouns:
                words.add(noun.singular)
                if noun.plural:
                    words.add(noun.plural)
        for lemma in self.frames_of:
            words.update(self.verbs[lemma].words())
        words.update(self.adjectives, (adjective for adjective, _ in self.adjective_complements))
        words.update(self.manner_adverbs, self.preverbal_adverbs, self.sentence_adverbs, self.degree_adverbs)
        words.update(self.masculine_names, self.feminine_names, self.surnames, self.places)
        words.update(self.numbers, self.years)
        return words


def _interleave(first: list[Noun], second: list[Noun], every: int) -> list[Noun]:
    """``first`` with one item of ``second`` inserted after every ``every`` items (ranks mixed)."""
    merged: list[Noun] = []
    rest = list(second)
    for index, item in enumerate(first, 1):
        merged.append(item)
        if index % every == 0 and rest:
            merged.append(rest.pop(0))
    merged.extend(rest)
    return merged


LEXICON = Lexicon()
"""The one lexicon (parsed at import; immutable in use)."""
