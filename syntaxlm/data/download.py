"""Download the public datasets from their canonical locations, verified by sha256.

``download("blimp", "data/blimp")`` fetches every file of a registered dataset into a folder.
Each file comes from raw.githubusercontent.com at the commit pinned in the registry below, is
streamed to ``<file>.part`` (resumed with an HTTP range request after an interruption), and is
renamed into place only when its size and sha256 match the registry; a file whose bytes differ
is deleted and reported. Files already present with the right sha256 are not fetched again.

A mirror replaces GitHub: a base URL (``mirror=`` or ``$SYNTAXLM_DOWNLOAD_MIRROR``) under which
the files are laid out like the project's shared data folder, for example
``<mirror>/ud_english/ewt/en_ewt-ud-train.conllu``. The checksums are the same either way.
"""

from __future__ import annotations

import errno
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path

from tqdm import tqdm

from syntaxlm.errors import DownloadError, SyntaxlmError
from syntaxlm.files import sha256_file
from syntaxlm.version import __version__

MIRROR_VARIABLE = "SYNTAXLM_DOWNLOAD_MIRROR"
"""Environment variable holding a mirror base URL, used when ``download`` gets no ``mirror``."""

_CHUNK_BYTES = 1 << 16


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset: where it comes from, where it lands, what its bytes must be."""

    url: str  # canonical raw-file URL at a pinned commit
    path: str  # where the file lands, relative to the download folder ("/"-separated)
    sha256: str
    size: int  # bytes
    mirror_path: str  # where the file sits on a mirror laid out like the shared data folder


@dataclass(frozen=True)
class Dataset:
    """A downloadable dataset: what it is, its licence, where it comes from, and its files."""

    name: str
    description: str
    licence: str
    source: str  # the repository at the pinned commit
    files: tuple[RemoteFile, ...]

    @property
    def size(self) -> int:
        """Total bytes of the dataset's files."""
        return sum(remote.size for remote in self.files)


class UnknownDatasetError(SyntaxlmError, ValueError):
    """A dataset name that is not in the registry."""


class ChecksumError(DownloadError):
    """Downloaded bytes whose size or sha256 differ from the registry's."""

    def __init__(
        self,
        path: str,
        url: str,
        *,
        expected_sha256: str,
        actual_sha256: str,
        expected_size: int,
        actual_size: int,
    ):
        self.path = path
        self.url = url
        self.expected_sha256 = expected_sha256
        self.actual_sha256 = actual_sha256
        self.expected_size = expected_size
        self.actual_size = actual_size
        super().__init__(
            f"{path}: the file from {url} failed verification and was deleted; "
            f"expected sha256 {expected_sha256} ({expected_size} bytes), "
            f"got sha256 {actual_sha256} ({actual_size} bytes)"
        )


def _from_github(
    *, name: str, description: str, licence: str, repo: str, commit: str, mirror_root: str, manifest: str
) -> Dataset:
    """A dataset whose files come from one GitHub repository at one commit.

    ``manifest`` has one line per file: ``sha256 size path-in-repository``. A file lands in the
    download folder under its base name and sits on a mirror at ``mirror_root/path-in-repository``.
    """
    files = []
    for line in manifest.strip().splitlines():
        sha256, size, repo_path = line.split()
        files.append(
            RemoteFile(
                url=f"https://raw.githubusercontent.com/{repo}/{commit}/{repo_path}",
                path=repo_path.rsplit("/", 1)[-1],
                sha256=sha256,
                size=int(size),
                mirror_path=f"{mirror_root}/{repo_path}",
            )
        )
    return Dataset(
        name=name,
        description=description,
        licence=licence,
        source=f"https://github.com/{repo}/tree/{commit}",
        files=tuple(files),
    )


# The sizes and sha256 are those of the copies in the project's shared data folder. EWT's train
# file is not stored in the repository snapshot those copies came from; its copy was rebuilt with
# the treebank's own recipe (dev and test rebuilt that way are byte-identical to the released files).
_REGISTRY = (
    _from_github(
        name="ud-english-ewt",
        description=(
            "Universal Dependencies English Web Treebank: 16,622 sentences (254k words) of weblogs, "
            "newsgroups, emails, reviews and Yahoo! Answers; CoNLL-U train/dev/test"
        ),
        licence="CC BY-SA 4.0",
        repo="UniversalDependencies/UD_English-EWT",
        commit="15d613d8447b3478787d4c278730a1e48a945efb",
        mirror_root="ud_english/ewt",
        manifest="""
b3d1b0f4c6ae151f7eb78738f46ebd5ee140f8a7f76501ba26af123140d35ae7    20014 LICENSE.txt
3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b 14203025 en_ewt-ud-train.conllu
531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6  1805545 en_ewt-ud-dev.conllu
e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd  1804515 en_ewt-ud-test.conllu
""",
    ),
    _from_github(
        name="ud-english-pud",
        description=(
            "English part of the Parallel Universal Dependencies treebanks (CoNLL 2017 shared task): "
            "1,000 sentences of news and Wikipedia text; CoNLL-U test set only"
        ),
        licence="CC BY-SA 3.0",
        repo="UniversalDependencies/UD_English-PUD",
        commit="f16eba4ae7f3d161870ed320676c5088b8fa476c",
        mirror_root="ud_english/pud",
        manifest="""
b278eb53fe50b8bb7fa0d90fb8536c35fdcaa80f9d63812cb51db539555d2a89    19556 LICENSE.txt
c80584f2bc2b31d5bada78a1136f9feec7ac49e5e18898db02dea434b5b8f0aa  1386858 en_pud-ud-test.conllu
""",
    ),
    _from_github(
        name="ud-english-pronouns",
        description=(
            "UD English-Pronouns: 285 sentences built around pronouns (independent genitives such "
            "as 'hers', 'theirs'); CoNLL-U test set only"
        ),
        licence="CC BY-SA 4.0",
        repo="UniversalDependencies/UD_English-Pronouns",
        commit="e4fdbb16a6857576dc94459a89d0f1807ca82f9c",
        mirror_root="ud_english/pronouns",
        manifest="""
899b1804a12ebc090b96339614eede1b64b686721b650a71430b55b5235f7f79      202 LICENSE.txt
d43e6517f07381bfcd18a74433eed8a1b345b67ede95931ddb57868ef9acd711   142029 en_pronouns-ud-test.conllu
""",
    ),
    _from_github(
        name="blimp",
        description=(
            "BLiMP, the Benchmark of Linguistic Minimal Pairs: 67 paradigms x 1,000 minimal pairs, "
            "one JSON-lines file per paradigm"
        ),
        licence="CC BY 4.0",
        repo="alexwarstadt/blimp",
        commit="3e56b06fcabca9b30822fc66435fca6b1aa40bb1",
        mirror_root="blimp",
        manifest="""
ecc71c452516de03deeb9262b4203e45220dc52727327a08eef07c79c01eac8b   359284 data/adjunct_island.jsonl
fd7d6e47196fa1310a251d3aa88ae9a62bb64d3cec35fc02617229d5799767e1   436749 data/anaphor_gender_agreement.jsonl
05c16b8bfe4feb5b3552dc2c53d1742ce0c91d9a1c896684335bdddd4373cc9b   450861 data/anaphor_number_agreement.jsonl
245e91961cf597150244c3945c6d0033e691b27ba6cf298c62920d355426e70c   462292 data/animate_subject_passive.jsonl
a7bffeda200f648c33dd215d91d8f5756fcd1e3f410bab467f1ed9235f215850   433098 data/animate_subject_trans.jsonl
2e1006cc24094a3049586888105b22181d77e09e11dea65a326b49977bb366f1   317162 data/causative.jsonl
1c92472731dd9a21eb222d64bee756042a3763c3797b5283d5b84ab8e3cbb74c   392362 data/complex_NP_island.jsonl
47e0e04efeb320449a8eb2ac722b895041a8609580fec2880dbc719f50fba194   571696 data/coordinate_structure_constraint_complex_left_branch.jsonl
d01c27a7a893f3ec071a7913efa504d297671d86a987f26ddb565de914db2fd7   366045 data/coordinate_structure_constraint_object_extraction.jsonl
f48065fd760d0fd1a895012860d38bdf3c2ac115cd221e521684cc430c0f1855   468642 data/determiner_noun_agreement_1.jsonl
8ae7eff7c7bd384ff5ef3113984834f4d78b34559203aa9d5cb14ea8394291a9   488856 data/determiner_noun_agreement_2.jsonl
4f350e88db9e29e53ae96f1f0b5991c7809fd4fd403190907330b721e1e6e264   474932 data/determiner_noun_agreement_irregular_1.jsonl
d688af0ccd0614d24a936e0929276784f37554f3ad3e247c3bade8dcaa9099df   490854 data/determiner_noun_agreement_irregular_2.jsonl
8d2828d7dfbfc3f7191024514060fedb033ea2e232304f63448c33051a85d2b3   526806 data/determiner_noun_agreement_with_adj_2.jsonl
1f4c6e42a48f4220afec629679641479feac3883cd7fa346d9e9e129cd7e8f55   499664 data/determiner_noun_agreement_with_adj_irregular_1.jsonl
aa3f297a7ce0c03b5fc00458834f89e54eb855973be098497f766a390b4bc669   528528 data/determiner_noun_agreement_with_adj_irregular_2.jsonl
2c3de4e7b7aea499fb7cf1b23b9c3b63662289880f991b9ffabe5ceb94cf7430   504676 data/determiner_noun_agreement_with_adjective_1.jsonl
37c1553f4c6594b162256edce0f6b40bad1898b311c8aaa69605b526b6494a34   525650 data/distractor_agreement_relational_noun.jsonl
854728b6db8f23f12583f7332b654835351eaedb50783e6f2a3bf6c101b8c422   564770 data/distractor_agreement_relative_clause.jsonl
e262339a262a57a8f56dc41941ee1dc32c62eb97054b27d33cd8c356a6e62064   304196 data/drop_argument.jsonl
3cc0bcf91631a4476ce573ea9dbf9627d52efbe071c26019e2c2448b68769d09   411980 data/ellipsis_n_bar_1.jsonl
3dfc2b378ea4867186917ec9cce5ce927e4d3bb6addf018bc31b870dd2aa8474   427551 data/ellipsis_n_bar_2.jsonl
3781bfd54ec1208fc634f4d365189f948ec246526a7345b5148dd3ab6023ff4f   550672 data/existential_there_object_raising.jsonl
4bd0f6dee3c1824b51b0dafb9fce2b00933e8053fcd4a7b99b6202e1b8b49f9e   357321 data/existential_there_quantifiers_1.jsonl
b1a80f4ebebae90a90927259f95b680059020e6bb4e38e64a41eb8e53bc3f617   359216 data/existential_there_quantifiers_2.jsonl
7c6f5b13225f73a777755c1948beef5cfa31d135ae8a0e7ba8853d256fbece23   394453 data/existential_there_subject_raising.jsonl
15ed3a52c978ecfe5eda7f64b0304b5bd133439cccb2c97fde20834f39874c93   587648 data/expletive_it_object_raising.jsonl
d9389a7130ca84c6f920c9d892cc60c1b20f378d28e7041b1c53ae589fc84f1d   298709 data/inchoative.jsonl
9af9f3f30c891cd21623922b62fd97685552b4ae94a6cfd5617a5f0cb0f731b3   305487 data/intransitive.jsonl
5e490be0723989499391ac14d11b3bb6677f4b470514486b2db3fbfe76d56b3c   444520 data/irregular_past_participle_adjectives.jsonl
75a990117c1a403d3b479e0fbe170f6919c2408def738ffcea8c62b49b70a555   420119 data/irregular_past_participle_verbs.jsonl
0066174143671bffa54232d89254d14221afab666273edfefdfb625fbb75e226   460705 data/irregular_plural_subject_verb_agreement_1.jsonl
9b22db814e7b7251f4abafe8beb9616f2f46eaa58f7cdb701cbc737cc8f1a124   453376 data/irregular_plural_subject_verb_agreement_2.jsonl
7dadbe3c5a5ceadb78b9408807ac88230ddd748abfe8de8121f064e2bce94ad8   482617 data/left_branch_island_echo_question.jsonl
e2a64b8a1b7b8d94f931018cf9325836e9c79953a01379233da255eac5e8cd71   343450 data/left_branch_island_simple_question.jsonl
657c9d6e6d50a9cd651881fcbc57cef2fd998611f6f53158ed05e48822fcd2b5   457806 data/matrix_question_npi_licensor_present.jsonl
9aa85dc5c2b0d85ea51f21db50d6d327ab5b45d1669e386d54b1360d3ac954af   438013 data/npi_present_1.jsonl
52fcfa230a40ae27998273cc08ecd062aad17025c92389df3404a85ed519909b   422136 data/npi_present_2.jsonl
475c6595187a32e4dcfb868d3db90394e89669a94a9312ebd60f88dad1665f1c   459170 data/only_npi_licensor_present.jsonl
ca1f0671643e37936515f02125036bc2904ab9b35c4689b0e7a3ea3914e571f6   583720 data/only_npi_scope.jsonl
e9374307bca5c24e9df18597a0859f7fb5ca4cfe5f136ec894d1ba69f4c90116   340272 data/passive_1.jsonl
4d49e438185bed4122a252dd9ee69bc8eccb2fe6c1b09ccc78198fd925fed8c5   308350 data/passive_2.jsonl
74c8111666542c797dee1c38c9e432b0b65751dfa0faa51874a990f2cbfc76fc   527689 data/principle_A_c_command.jsonl
7efb5246fe315dc2cf56b80739783cffcddee9e52650716cf5aa0f6987f7644d   477239 data/principle_A_case_1.jsonl
5de6db4c21a8433bc1f1030e81d5ee151efce02078460f7de7ca5e9566afd914   492973 data/principle_A_case_2.jsonl
2276dc35a51396c7d11a401e378e0f4b31cd10d7916c73e9a361703cb96eddc5   499865 data/principle_A_domain_1.jsonl
9d14e5ae911fb8ddf571484ef2d6a6e6a053765c1c6d34253aec2c11f7d7306a   493189 data/principle_A_domain_2.jsonl
a0d66b9d8541ab1df08f629161c6c4e8bca3aa2693eaa342edd2097e6b579bdd   513886 data/principle_A_domain_3.jsonl
65dc403c4d6e9a609f2c4cc2ec6c8baa05cf6fce89b920a816b0d9932204b2a3   345494 data/principle_A_reconstruction.jsonl
1a18d94062c8e792c0a200a3b00dff0e051a92bb084c05e9b5e5c73bee32a620   451850 data/regular_plural_subject_verb_agreement_1.jsonl
e5b4668811e63b00ac4c9569cb9553281a39c21df43256905ad78e59ae24942c   456477 data/regular_plural_subject_verb_agreement_2.jsonl
c43405aca13ba4aa6ad87f9b051e4ba5fc458f24e683cfe0af23e6e09ec7268b   490996 data/sentential_negation_npi_licensor_present.jsonl
6c341ccc39c94bea45c0412986751bf2f6eca48626728e30e23d2b6a22c8b949   614930 data/sentential_negation_npi_scope.jsonl
a286b67cc5912aafeb06750b38923abf3338786ffa4309e0a6a07b1dbe2444bd   365822 data/sentential_subject_island.jsonl
bebc5c5ff28cf226cc35293c60cde1fcf7565a7b58cb219d01ac8908b952a497   381189 data/superlative_quantifiers_1.jsonl
4bef08f3e6bd3fbb46021dda34000f3c00222c5576babe4882a8541f6820a106   516120 data/superlative_quantifiers_2.jsonl
8eb3a1ecbdbd969c5b77e2f85b12a39d33723bdc58d673e5067bb456da91d0e5   343026 data/tough_vs_raising_1.jsonl
a6db2f24a8aee0c90a9be63e6bb6787fe04e990c518761115f69f27c7438b5ae   364074 data/tough_vs_raising_2.jsonl
48de2025571897c7590659c793d2d1ce85c247808d4199bad60f66cf2eb179ef   460291 data/transitive.jsonl
77824ca8c0008fb7a204e785ca2dcee1b2803f666bb545bd95cb8a51e04f1a4c   448630 data/wh_island.jsonl
685c74eb8c199f30a24bba1bfabf9d9dff7962a64430e62b9b5f61d5369241ff   387435 data/wh_questions_object_gap.jsonl
3c33e4efc7182824211ff3288694cf010f4ce84f85c8df67410d784139c722b3   389983 data/wh_questions_subject_gap.jsonl
985bae202dbc5566b9b5c51bd77dd9d1dbcd87e0f38e008c34a11d7aa07db788   462660 data/wh_questions_subject_gap_long_distance.jsonl
6a25d0d1499e9f522696a62ce9dba8c49f58c5446fddc6d852bf562d1016163c   383262 data/wh_vs_that_no_gap.jsonl
968faf59602a67f9cfd7c2e91a314a3f7342fd5daf41c21cadd25288fc85fdcf   441429 data/wh_vs_that_no_gap_long_distance.jsonl
56f1ca988a8ca368234f12359792c414fdfec2891154e3f8ce6404da1d3f3212   367776 data/wh_vs_that_with_gap.jsonl
3cb19100d6384264e512801e96c20e172a3c0c7778276b80ed60c65e97b86ab5   425985 data/wh_vs_that_with_gap_long_distance.jsonl
""",
    ),
    _from_github(
        name="syntaxgym",
        description=(
            "The 34 SyntaxGym test suites of Hu et al. (2020), 'A Systematic Assessment of Syntactic "
            "Generalization in Neural Language Models'; one JSON file per suite"
        ),
        licence="MIT",
        repo="cpllab/syntactic-generalization",
        commit="43f1f86b746254406dafc89bd17b9d4976607ef6",
        mirror_root="syntaxgym",
        manifest="""
58349ba6415bab546a8937e45a42ed2be94c368d36d0603bd2d12c37a203124f     1096 LICENSE
cc8b60e34eff4ec723a295d0378af07cceaf9bdccddd5a9508a1284e40d3390c    68895 test_suites/json/center_embed.json
9688aebd2c4a8ff68ca25873fb9039304e3c70996488b74ffb69681dd236e8d7    78070 test_suites/json/center_embed_mod.json
b6e19bedec743fc8af079638d145e4af224efa4d671e403d2d7ff4a395d10713   169883 test_suites/json/cleft.json
d9823123e538ea8d3150c7f584881e1e7137339e9a136077d033c7cd5ae4f2a3   199953 test_suites/json/cleft_modifier.json
35db2d0535f2b4f896157149b3aa625e5fd08694480b4978fcc31a34156462ba   108837 test_suites/json/fgd-embed3.json
6933e47b9bc5e0635412bfa3dc89d44b34889e73f780f615ba6575dd069ab20b   110548 test_suites/json/fgd-embed4.json
ed5ddf73c04fc0bf577f6fcd4aef62b660b01c4fecb5b69216b1164128924693   224609 test_suites/json/fgd_hierarchy.json
64045162cd8158f07bcf9efc9b2ba9ad60324009f71bae8d58bb9a841e72eee5   133880 test_suites/json/fgd_object.json
8baa56588f01f9807d465d910159ad0c89829a211088de88d8a9d2cb4df574ff   133709 test_suites/json/fgd_pp.json
bb641e69be1e4ad4d4077ceeb5fd86c87fcd1df69795b8654702bf7746386746   133832 test_suites/json/fgd_subject.json
5201adc7f9019caffc0bc54ca2d71db601f187d5a0dce55df0e90fd5592b2581   123524 test_suites/json/mvrr.json
e6f7cea18cd1b5d22faaae0f2f9a08fecab53665dfc2926fabb1c6841637d2d2   141633 test_suites/json/mvrr_mod.json
7b06181fe8aa7cc6d3c3a224485b3023be2be638ca2ae16ef2dc1ee2c74d4dec     4246 test_suites/json/nn-nv-rpl.json
96f6bd4ab779633f4837132d2a17d89568e46b154a7052636da208ac360f7685   228769 test_suites/json/npi_orc_any.json
7c69bb7c2d01df8107a650703ab12dfb900a09afb2d8e9c54da8ac82eaefd99d   228557 test_suites/json/npi_orc_ever.json
3ce002cc8a88beb0012dba511fff56edb60c58b5934275dbf4f8d36274505f75   228760 test_suites/json/npi_src_any.json
cd7735f62dc7a301e0c48c825fb93b1824add388c7337954971f7da4bc2523f2   228557 test_suites/json/npi_src_ever.json
2b46dd51f5985e62527e59e7f536656e28f462e33de9e3459cd635f73d5ca5e3   104837 test_suites/json/npz_ambig.json
3cac79834de52d9cc4ff9b3ab0c8c8160cd9d602f1be2e503b6b622a4a2a582a   120603 test_suites/json/npz_ambig_mod.json
6852eddee888fce984dbe7734f90bfccd185e8b4d11affb8141434d5362b5cb6   105377 test_suites/json/npz_obj.json
2c7d32dbf0167750510b6d7c30788665537210246024b30d9aa6545228ecb3bc   121149 test_suites/json/npz_obj_mod.json
b5c96cb8ed8306cc2c90f3bb65a4ba1c4d27c004bdb34855bfc7ec2973c934ac   103660 test_suites/json/number_orc.json
5c6a54fa244df2962b0700a2a6d6e03b8c0db8a1482cccfe64d16d01f8b3eeca    92583 test_suites/json/number_prep.json
8c3a1db336d275fe7d10dac418450f83fc40c5456e94beb3a547ce314753f6df   103660 test_suites/json/number_src.json
d18ce6a3a970b1356721ed8415e400b89020b5e0d76a3017d6be28689404b7b7   103872 test_suites/json/reflexive_orc_fem.json
03d31c93a4225e94decf38fe0c28cd01e869da2f209ae1ef7fb1d5c310323e7c   103845 test_suites/json/reflexive_orc_masc.json
e192369294f0780b1133349ec3d9a75532b0bce310ae50ddab9b2e2d394137e9    92927 test_suites/json/reflexive_prep_fem.json
81934e17431b72a553ab3a501471cb0b0eaa101ca7f78799abc48905a21f16ca    92936 test_suites/json/reflexive_prep_masc.json
4e821bfd260762d996a72989fa350e64802e4f22e2188c0d5f58abcce2160a58   103844 test_suites/json/reflexive_src_fem.json
645ef6786dc63433c407de9d0085233df3b212579bef7b04f6e20493d37ec312   103845 test_suites/json/reflexive_src_masc.json
065fc960d7346cd96f152c389c36816bf330b415661319e7dc6022ff610855b4    60306 test_suites/json/subordination.json
91232f6eb5247b5fdccb399af642eb86411e099db2ba91b45b434401326a3497    92607 test_suites/json/subordination_orc-orc.json
e9eb380ba720048c4b6a503c23ccef2680db55bdd4093b41afb0d281ae0bb912    92423 test_suites/json/subordination_pp-pp.json
f0b84b08402fbde49b9e2ae07db0a3e663ff149a4dcffc4c8c931ef8bbc843a5    92541 test_suites/json/subordination_src-src.json
""",
    ),
)

DATASETS: dict[str, Dataset] = {dataset.name: dataset for dataset in _REGISTRY}
"""The downloadable datasets by name. Only permissively licensed sets are here."""


def list_datasets() -> list[str]:
    """Names of the downloadable datasets."""
    return list(DATASETS)


def get_dataset(name: str) -> Dataset:
    """The registry entry called ``name``; an unknown name raises an error listing the known ones."""
    try:
        return DATASETS[name]
    except KeyError:
        known = ", ".join(DATASETS)
        raise UnknownDatasetError(f"unknown dataset {name!r}; expected one of: {known}") from None


def describe_datasets() -> str:
    """A human-readable summary of every dataset: name, files, size, licence, what it is, source."""
    blocks = []
    for dataset in DATASETS.values():
        blocks.append(
            f"{dataset.name}: {len(dataset.files)} files, {dataset.size / 1e6:.1f} MB, {dataset.licence}\n"
            f"    {dataset.description}\n"
            f"    {dataset.source}"
        )
    return "\n".join(blocks)


def file_url(remote: RemoteFile, mirror: str | None = None) -> str:
    """The URL ``remote`` is fetched from: its canonical URL, or its place under ``mirror``."""
    if mirror is None:
        return remote.url
    return mirror.rstrip("/") + "/" + urllib.parse.quote(remote.mirror_path)


def download(
    name: str,
    dest: str | Path,
    *,
    mirror: str | None = None,
    progress: bool = True,
    timeout: float = 60,
) -> list[Path]:
    """Fetch dataset ``name`` into folder ``dest``, verify it, and return its files' paths.

    Files already in ``dest`` with the registered sha256 are kept as they are. Others are fetched
    from ``mirror`` (default: ``$SYNTAXLM_DOWNLOAD_MIRROR``, else the canonical GitHub URLs) to
    ``<file>.part``, resuming a ``.part`` left by an interrupted run, and renamed into place once
    their size and sha256 match. Raises ``ChecksumError`` (the ``.part`` is deleted) when the bytes
    differ, ``DownloadError`` when the server cannot be reached or the transfer breaks off (the
    ``.part`` is kept for the next run), ``UnknownDatasetError`` for a name not in ``DATASETS``.
    ``timeout`` is in seconds, per connection attempt and per read.
    """
    dataset = get_dataset(name)
    if mirror is None:
        mirror = os.environ.get(MIRROR_VARIABLE) or None
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    targets = [dest / remote.path for remote in dataset.files]
    to_fetch = [
        (remote, target) for remote, target in zip(dataset.files, targets) if not _verified(target, remote)
    ]
    with tqdm(
        total=sum(remote.size for remote, _ in to_fetch),
        unit="B",
        unit_scale=True,
        desc=dataset.name,
        disable=not progress,
    ) as bar:
        for remote, target in to_fetch:
            bar.set_postfix_str(remote.path)
            _fetch(remote, target, file_url(remote, mirror), timeout=timeout, bar=bar)
    return targets


def _verified(path: Path, remote: RemoteFile) -> bool:
    return path.is_file() and path.stat().st_size == remote.size and sha256_file(path) == remote.sha256


def _fetch(remote: RemoteFile, target: Path, url: str, *, timeout: float, bar: tqdm) -> None:
    """Bring ``target`` into place from ``url`` by way of ``<target>.part``."""
    part = target.with_name(target.name + ".part")
    if part.is_symlink():
        raise _linked_part(remote, part)
    offset = part.stat().st_size if part.is_file() else 0
    if offset > remote.size or (offset == remote.size and sha256_file(part) != remote.sha256):
        part.unlink()  # a leftover that cannot be the start of this file
        offset = 0
    bar.update(offset)
    if offset < remote.size:
        _transfer(remote, url, part, offset, timeout=timeout, bar=bar)
        actual_size = part.stat().st_size
        actual_sha256 = sha256_file(part)
        if actual_size != remote.size or actual_sha256 != remote.sha256:
            part.unlink()
            raise ChecksumError(
                remote.path,
                url,
                expected_sha256=remote.sha256,
                actual_sha256=actual_sha256,
                expected_size=remote.size,
                actual_size=actual_size,
            )
    os.replace(part, target)


def _linked_part(remote: RemoteFile, part: Path) -> DownloadError:
    return DownloadError(
        f"{remote.path}: {part} is a symbolic link; downloads are written only to files of their own, "
        "never through a link (it would overwrite the link's target): remove it and run again"
    )


def _open_part(remote: RemoteFile, part: Path, *, append: bool):
    """``part`` opened for writing, refusing a symbolic link even if one appears after the check
    in ``_fetch`` (``O_NOFOLLOW``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
    try:
        descriptor = os.open(part, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _linked_part(remote, part) from None
        raise
    return os.fdopen(descriptor, "ab" if append else "wb")


def _transfer(remote: RemoteFile, url: str, part: Path, offset: int, *, timeout: float, bar: tqdm) -> None:
    """Write the bytes of ``url`` from ``offset`` on to ``part``, which holds the first ``offset``.

    The server may answer a range request with the whole file (200); then ``part`` starts over.
    Reading stops one byte past the expected size, enough to show that a response is too long.
    """
    request = urllib.request.Request(url, headers={"User-Agent": f"syntaxlm/{__version__}"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    written = offset
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            if offset and response.status == 206:
                content_range = response.headers.get("Content-Range", "")
                start = re.match(r"bytes (\d+)-", content_range)
                if start is None or int(start[1]) != offset:
                    raise DownloadError(
                        f"{remote.path}: {url} answered a request for bytes {offset}- "
                        f"with Content-Range {content_range!r}"
                    )
            elif offset:
                bar.update(-offset)
                written = 0
            declared = response.headers.get("Content-Length", "")
            end = written + int(declared) if declared.isdigit() else None
            with _open_part(remote, part, append=bool(written)) as out:
                while written <= remote.size:
                    chunk = response.read(min(_CHUNK_BYTES, remote.size + 1 - written))
                    if not chunk:
                        break
                    out.write(chunk)
                    written += len(chunk)
                    bar.update(len(chunk))
            if end is not None and written < min(end, remote.size + 1):
                # http.client reads a body cut short as a plain end of data
                raise ConnectionError(f"connection closed after {written} of {end} bytes")
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # the .part is no prefix of what the server holds
            part.unlink()
            bar.update(-offset)
            _transfer(remote, url, part, 0, timeout=timeout, bar=bar)
            return
        raise DownloadError(
            f"{remote.path}: cannot download {url}: HTTP {error.code} {error.reason}"
        ) from error
    except urllib.error.URLError as error:
        raise DownloadError(f"{remote.path}: cannot reach {url}: {error.reason}") from error
    except (OSError, HTTPException) as error:
        kept = f"; {written} bytes kept in {part} for the next run" if written else ""
        raise DownloadError(f"{remote.path}: download of {url} broke off: {error!r}{kept}") from error
