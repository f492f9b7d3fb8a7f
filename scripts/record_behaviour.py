"""Record what the command line does, to check that a restructuring of the code changes no behaviour.

``record`` runs a fixed list of ``syntaxlm`` commands (every command and sub-command that runs in
seconds, on small inputs made here: the synthetic treebank, hand-written trees, tiny models trained
for a few steps, and small slices of ../shared/data where a command needs real data; a step whose
data is not there is recorded as skipped) and bad inputs whose messages must stay the same. Each
runs as a user runs it (``python -m syntaxlm ...``, a process of its own; the --help of every
command all in one process) in one work folder, with one thread, fixed seeds and no GPU. It writes
one JSON file, the record: per command its argv, exit status, stdout and stderr, and every file it
wrote or changed in the work folder.

``compare`` reads two records and prints, command by command, what differs; it exits 1 when
anything does. Record before the change, record after it (same machine, same environment),
compare::

    python scripts/record_behaviour.py record --out /tmp/before.json [--workdir DIR]
    (change the code)
    python scripts/record_behaviour.py record --out /tmp/after.json
    python scripts/record_behaviour.py compare /tmp/before.json /tmp/after.json

Run it with the project's Python (the one with torch); the commands run from this checkout
(``PYTHONPATH`` is set to it). The work folder is a temporary one, removed afterwards, unless
``--workdir`` names one (empty; kept). ``--only WORD`` runs just the steps whose names contain WORD
(the steps they depend on are not run: mostly for working on the recorder itself). A recording
takes about 10 minutes of CPU (one core at a time), longer on busy cores.

What differs between two runs of unchanged code is normalised, so that it compares equal: the work
folder's and the checkout's paths (``<WORK>``, ``<ROOT>``), times, dates, durations and speeds
(``<TIME>``, ``<DURATION>``, ``<SPEED>``), the git commit, host name and process ids, the
provenance of result files (``created``, ``git_commit``), every JSON value (in a file or printed)
under a key ``seconds`` or ending in ``_seconds`` (training's ``train_seconds``, the jobs' and
``eval rt``'s timings), progress bars (taken out, and
summed up in a last line as the set of their descriptions and totals: how often a bar is redrawn
depends on the time), the lines that are said or not by how fast the machine is (the scoring
estimate shown for work of more than 10 s, training's plain progress line a minute), a traceback
(its last line kept: the code's files and line numbers move in a restructuring), and the sha256 of
a file whose contents hold such things or of a safetensors file (the safetensors library writes the
header's metadata in another order on each run). Numbers (losses, perplexities, accuracies,
surprisals) are kept exactly. Files are recorded as text (JSON re-indented, also the data of the
explorer page; other large files as a sha256 of their normalised text, a line count and the first
lines), safetensors files as their header metadata and each tensor's dtype, shape and sha256, PNG
files as their size and the sha256 of their pixels (not their bytes: matplotlib's metadata may
differ), other binary files as their sha256. Not a test: it takes minutes, and is run by hand.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FORMAT = "syntaxlm-behaviour-record"
VERSION = 1

# --- the commands ----------------------------------------------------------------------------------

TINY_TRANSFORMER = ["model.n_layers=1", "model.d_model=16", "model.n_heads=2", "model.d_ff=32"]
FEW_STEPS = [
    "train.max_steps=3",
    "train.eval_every=3",
    "train.checkpoint_every=3",
    "train.batch_size=16",
    "train.warmup_steps=1",
]
BEAM = ["--action-beam", "6", "--word-beam", "2", "--fast-track", "1"]
SYNTH_DATA = [
    "--data-train",
    "syn/train.trees",
    "--data-valid",
    "syn/dev.trees",
    "--data-test",
    "syn/test.trees",
]
SENTENCE = "the official near the players is invited ."
TREE = "(S (NP the official) (VP is (VP invited)) .)"


def sets(*overrides: str) -> list[str]:
    return [part for override in overrides for part in ("--set", override)]


@dataclass
class Step:
    """One command (``argv``, after ``python -m syntaxlm``) or one preparation of inputs
    (``prepare(workdir)``, run here; its files are recorded too). ``needs``: a folder of
    ../shared/data the step reads; without it the step is recorded as skipped."""

    name: str
    argv: list[str] | None = None
    prepare: Callable[[Path], None] | None = None
    needs: str | None = None
    help: bool = False  # a --help: run with the others in one process (``HELP_RUNNER``)


def steps() -> list[Step]:
    """Every step, in order; later steps read what earlier ones wrote."""
    s: list[Step] = []

    def cmd(name: str, *parts: str | list[str], needs: str | None = None) -> None:
        """A command: ``parts`` after ``python -m syntaxlm``, a string split at spaces (as a shell
        does), a list taken as it is."""
        argv = [word for part in parts for word in (shlex.split(part) if isinstance(part, str) else part)]
        s.append(Step(name, argv, needs=needs))

    # help of every command: the sub-apps' command lists and every option
    s.append(Step("help", ["--help"], help=True))
    for group, commands in COMMANDS.items():
        s.append(Step(f"help {group}", [group, "--help"], help=True))
        for command in commands:
            s.append(Step(f"help {group} {command}", [group, command, "--help"], help=True))

    # data
    s.append(Step("prepare hand-written inputs", prepare=prepare_small_inputs))
    cmd("data synth", "data synth syn --sentences 200 --items-per-suite 2 --lexicon-size 10")
    s.append(Step("prepare inputs from the synthetic data", prepare=prepare_synthetic_inputs))
    cmd("data stats", "data stats small/in.mrg")
    cmd("data stats --json", "data stats small/in.mrg --json")
    cmd("data stats several", "data stats syn/train.trees syn/dev.trees small/in.conllu")
    cmd("data stats several --json", "data stats syn small/in.mrg --json")
    cmd("data stats conllu", "data stats small/in.conllu --json")
    cmd("error: data stats bad tree", "data stats small/bad.mrg")
    cmd("data stats bad tree --skip-bad", "data stats small/bad.mrg --skip-bad --json")
    cmd("error: data stats missing file", "data stats small/nope.mrg")
    cmd("error: data stats 5000-digit head", "data stats small/head5000.conllu")
    cmd("data split --ratio", "data split syn/train.trees --out split-ratio --ratio 0.8,0.1,0.1")
    cmd(
        "data split --ratio --json",
        "data split syn/dev.trees --out split-ratio2 --ratio 0.5,0.5 --seed 3 --json",
    )
    cmd(
        "data split by files",
        "data split small/docs --out split-files --train a.mrg --dev b.mrg --test c.mrg",
    )
    cmd("data split --wsj-sections", "data split small/wsj --out split-wsj --wsj-sections --json")
    cmd(
        "error: data split two methods",
        "data split syn/train.trees --out split-bad --ratio 0.8,0.1,0.1 --wsj-sections",
    )
    cmd("error: data split bad ratio", "data split syn/train.trees --out split-bad --ratio 0.8,0.3")
    cmd("data clean", "data clean small/in.mrg clean/ptb.trees")
    cmd(
        "data clean choe-charniak",
        "data clean small/in.mrg clean/cc.trees --style choe-charniak --remove-punctuation",
    )
    cmd(
        "data clean options",
        "data clean small/in.mrg clean/other.trees --style none --collapse-unary --strip-root --pretty",
    )
    cmd("data clean --skip-bad", "data clean small/mixed.mrg clean/skipped.trees --skip-bad")
    for kind in ("left-branching", "right-branching", "reversed", "binarize-left", "binarize-right"):
        cmd(f"data transform {kind}", f"data transform clean/cc.trees transform/{kind}.trees --kind {kind}")
    cmd(
        "data transform unbinarize",
        "data transform transform/binarize-right.trees transform/unbinarized.trees --kind unbinarize",
    )
    cmd(
        "data transform --pos-tags",
        "data transform syn/dev.trees transform/dev-left.trees --kind left-branching --pos-tags",
    )
    cmd("data documents by file", "data documents small/docs docs/by-file.trees")
    cmd("data documents --sentences", "data documents syn/dev.trees docs/by-3.trees --sentences 3")
    cmd("data dep2tree", "data dep2tree small/in.conllu dep/labelled.trees")
    cmd("data dep2tree --unlabelled", "data dep2tree small/in.conllu dep/unlabelled.trees --unlabelled")
    cmd("error: data dep2tree 5000-digit head", "data dep2tree small/head5000.conllu dep/bad.trees")
    s.append(
        Step("prepare a slice of the real-English treebanks", prepare=prepare_english, needs="constituency")
    )
    cmd("data english", "data english english-src --out english --json", needs="constituency")
    cmd(
        "data english two treebanks",
        "data english english-src --out english2 --treebanks gum,wsj-sample",
        needs="constituency",
    )
    cmd("data download --list", "data download --list")
    cmd("error: data download unknown name", "data download no-such-dataset downloads")

    # vocabularies and what models read from trees
    cmd("vocab build word", "vocab build syn/train.trees --out vocab/word --min-freq 1")
    cmd("vocab build rnng symbols", "vocab build small/in.mrg --out vocab/rnng --symbols rnng --min-freq 1")
    cmd(
        "vocab build subword",
        "vocab build syn/train.trees --out vocab/subword --kind subword --vocab-size 400 --model-type bpe",
    )
    cmd(
        "error: vocab build subword too small",
        "vocab build syn/train.trees --out vocab/small --kind subword --vocab-size 120",
    )
    cmd("vocab build conllu", "vocab build small/in.conllu --out vocab/conllu --min-freq 1")
    cmd("error: vocab build 5000-digit head", "vocab build small/head5000.conllu --out vocab/bad")
    cmd("inspect tg", "inspect tg clean/cc.trees")
    cmd(
        "inspect tg segments --json",
        "inspect tg clean/cc.trees --segment-length 6 --smart-memory --memory-length 4 --json",
    )
    cmd(
        "inspect tg txl-trees --vocab --clean",
        "inspect tg syn/dev.trees --clean --variant txl-trees --vocab vocab/word --limit 2",
    )
    cmd(
        "error: inspect tg with a vocabulary of other symbols",
        "inspect tg small/in.mrg --clean --vocab vocab/rnng",
    )
    cmd(
        "inspect tg txl-terminals --limit",
        "inspect tg syn/dev.trees --clean --variant txl-terminals --limit 1",
    )
    cmd("inspect tg --plot", "inspect tg clean/cc.trees --limit 1 --plot inspect-plots")
    cmd("inspect actions", "inspect actions clean/cc.trees")
    cmd("inspect actions --json --clean", "inspect actions syn/dev.trees --clean --json --limit 2")
    cmd("inspect distances", "inspect distances clean/cc.trees")
    cmd("inspect distances --json --clean", "inspect distances syn/dev.trees --clean --json --limit 2")
    cmd("inspect som", "inspect som clean/cc.trees")
    cmd("inspect som conllu --json", "inspect som small/in.conllu --json --slots 4")
    cmd("error: inspect tg missing file", "inspect tg small/nope.trees")

    # training: a words-only model, joint ones, a structure-inducing one, the proposal parser
    tiny = sets(*TINY_TRANSFORMER, *FEW_STEPS)
    cmd("train lm", "train lm-tiny --out runs/lm", SYNTH_DATA, tiny, "--no-progress")
    cmd("train lm to resume", "train lm-tiny --out runs/lm-resumed", SYNTH_DATA, tiny, "--no-progress")
    cmd(
        "train lm --resume more steps",
        "train lm-tiny --out runs/lm-resumed",
        SYNTH_DATA,
        tiny,
        sets("train.max_steps=5"),
        "--resume --no-progress",
    )
    cmd("train tg", "train tg-tiny --out runs/tg", SYNTH_DATA, tiny, "--no-progress")
    cmd(
        "train txl-terminals on its own synthetic data",
        "train txl-terminals-tiny --out runs/txl",
        tiny,
        sets("data.synthetic.sentences=60"),
        "--no-progress",
    )
    cmd("train prpn", "train prpn-tiny --out runs/prpn", SYNTH_DATA, FEW_STEPS_SETS_PRPN, "--no-progress")
    cmd(
        "train parser",
        "train parser-tiny --out runs/parser",
        SYNTH_DATA,
        sets("model.d_model=16", "model.hidden_size=16", "model.span_hidden=16", *FEW_STEPS),
        "--no-progress",
    )
    cmd("error: train unknown recipe", "train tg-huge --out runs/none")
    cmd("error: train unknown key", "train lm-tiny --out runs/none", sets("model.n_layer=1"))
    cmd(
        "error: train into a folder holding a run",
        "train tg-tiny --out runs/lm",
        SYNTH_DATA,
        tiny,
        "--no-progress",
    )

    # scoring, parsing, generating
    lm, tg, prpn, parser = "runs/lm/best", "runs/tg/best", "runs/prpn/best", "runs/parser/best"
    cmd("score lm", f"score {lm} data/sentences.txt --no-progress")
    cmd(
        "score lm jsonl --eos nats",
        f"score {lm} data/sentences.txt --format jsonl --eos --unit nats --out score/lm.jsonl --no-progress",
    )
    cmd("score tg beam", f"score {tg} data/sentences.txt", BEAM, "--limit 3 --no-progress")
    cmd(
        "score tg gold",
        f"score {tg} data/sentences.txt --method gold --trees data/test8.trees --format jsonl --no-progress",
    )
    cmd("score prpn", f"score {prpn} data/sentences.txt --no-progress --limit 2")
    cmd(
        "error: score proposal index of 5000 digits",
        f"score {tg} data/one-sentence.txt --method proposals --proposals small/proposals-5000.txt",
    )
    cmd("error: score missing model", "score runs/none data/sentences.txt")
    cmd("parse tg beam", f"parse {tg} data/sentences.txt", BEAM, "--limit 3 --no-progress")
    cmd("parse prpn induced", f"parse {prpn} data/sentences.txt --no-progress --out parse/prpn.trees")
    cmd("parse prpn words alone", f"parse {prpn} data/words.txt --no-progress --out parse/prpn-words.trees")
    cmd("parse parser best", f"parse {parser} data/sentences.txt --no-progress")
    cmd("parse parser --kbest", f"parse {parser} data/sentences.txt --kbest 2 --no-progress")
    cmd(
        "parse parser --samples",
        f"parse {parser} data/sentences.txt --samples 5 --seed 1 --out parse/proposals.txt --no-progress",
    )
    cmd(
        "parse tg rerank proposals",
        f"parse {tg} data/sentences.txt --method rerank --proposals parse/proposals.txt --no-progress",
    )
    cmd(
        "parse tg rerank --parser",
        f"parse {tg} data/sentences.txt --method rerank --parser {parser} --samples 3 --limit 2 "
        f"--no-progress",
    )
    cmd(
        "score tg proposals",
        f"score {tg} data/sentences.txt --method proposals --proposals parse/proposals.txt --no-progress",
    )
    cmd("error: parse a words-only model", f"parse {lm} data/sentences.txt --no-progress")
    cmd("generate lm", f"generate {lm} -n 3 --max-length 30")
    cmd("generate tg trees", f"generate {tg} -n 3 --format trees --max-length 40 --seed 2")
    cmd(
        "generate tg jsonl top-k",
        f"generate {tg} -n 2 --format jsonl --top-k 5 --max-length 40 --out generate/tg.jsonl",
    )
    cmd("generate lm top-p temperature", f"generate {lm} -n 3 --top-p 0.9 --temperature 0.7 --max-length 30")

    # evaluations
    suite = "data/suites3/synthetic_number_prep.json"
    cmd("eval sg region values", f"eval sg {suite} --region-values data/region-values.json")
    cmd(
        "eval sg region values --json --out",
        f"eval sg {suite} --region-values data/region-values.json --json --out eval/sg-values.json",
    )
    cmd("eval sg lm", f"eval sg data/suites3 --model {lm} --no-progress --out runs/lm/results/sg")
    cmd("eval sg lm all suites --json", f"eval sg syn/suites --model {lm} --no-progress --json")
    cmd("eval sg lm with a progress bar", f"eval sg {suite} --model {lm} --batch-size 3")
    cmd("eval sg tg", f"eval sg data/suites3 --model {tg}", BEAM, "--no-progress --out runs/tg/results/sg")
    cmd("error: eval sg neither input", f"eval sg {suite}")
    cmd(
        "error: eval sg broken suite",
        "eval sg small/broken-suite.json --region-values data/region-values.json",
    )
    cmd(
        "error: eval sg --device with region values",
        f"eval sg {suite} --region-values data/region-values.json --device cuda",
    )
    cmd("eval parse", "eval parse --gold small/gold.trees --pred small/pred.trees --gold-tags")
    cmd(
        "eval parse --json --out",
        "eval parse --gold small/gold.trees --pred small/pred.trees --gold-tags --json --out eval/parse.json",
    )
    cmd(
        "eval parse --unlabeled",
        "eval parse --gold small/gold.trees --pred small/pred.trees --gold-tags --unlabeled",
    )
    cmd(
        "eval parse unmatched lengths",
        "eval parse --gold small/gold.trees --pred small/pred-tagged-other.trees",
    )
    cmd(
        "eval parse model parses",
        "eval parse --gold data/test8.trees --pred parse/prpn.trees --gold-tags --json --out "
        "runs/prpn/results/parseval.json",
    )
    cmd(
        "error: eval parse fewer predictions",
        "eval parse --gold small/gold.trees --pred small/pred-short.trees --gold-tags",
    )
    cmd("eval uf1 trees", "eval uf1 --gold small/uf1-gold.trees --pred small/uf1-pred.txt")
    cmd(
        "eval uf1 distances --json",
        "eval uf1 --gold small/uf1-gold1.trees --distances small/uf1-distances.txt --json --out "
        "eval/uf1.json",
    )
    cmd(
        "eval uf1 model parses --per-sentence",
        "eval uf1 --gold data/test8.trees --pred parse/prpn-words.trees --per-sentence --max-words 30 "
        "--out runs/prpn/results/uf1.json",
    )
    cmd(
        "error: eval uf1 both inputs",
        "eval uf1 --gold small/uf1-gold.trees --distances small/uf1-distances.txt --pred small/uf1-pred.txt",
    )
    cmd(
        "error: eval uf1 unquoted word",
        "eval uf1 --gold small/uf1-gold.trees --pred small/uf1-pred-unquoted.txt",
    )
    cmd("eval blimp logprobs", "eval blimp --logprobs data/blimp-logprobs.jsonl --data data/blimp")
    cmd(
        "eval blimp logprobs --json --per-paradigm",
        "eval blimp --logprobs data/blimp-logprobs.jsonl --data data/blimp --json --max-pairs 3",
    )
    cmd(
        "eval blimp lm",
        f"eval blimp --data data/blimp --model {lm} --no-progress --per-paradigm --out "
        f"runs/lm/results/blimp.json",
    )
    cmd(
        "eval blimp tg",
        f"eval blimp --data data/blimp --model {tg}",
        BEAM,
        "--no-progress --json --paradigm anaphor_number_agreement",
    )
    cmd(
        "error: eval blimp unknown paradigm",
        "eval blimp --logprobs data/blimp-logprobs.jsonl --data data/blimp --paradigm "
        "anaphor_number_agreemnt",
    )
    cmd(
        "error: eval blimp --batch-size with logprobs",
        "eval blimp --logprobs data/blimp-logprobs.jsonl --data data/blimp --batch-size 8",
    )
    cmd(
        "eval ppl lm",
        f"eval ppl data/sentences.txt --model {lm} --no-progress --out runs/lm/results/perplexity.json",
    )
    cmd("eval ppl lm treebank --json", f"eval ppl data/test8.trees --model {lm} --no-progress --json")
    cmd(
        "eval ppl tg beam",
        f"eval ppl data/sentences.txt --model {tg}",
        BEAM,
        "--no-progress --out runs/tg/results/perplexity.json",
    )
    cmd("eval ppl tg gold", f"eval ppl data/test8.trees --model {tg} --method gold --no-progress --json")
    cmd(
        "eval ppl tg --parser",
        f"eval ppl data/sentences.txt --model {tg} --method proposals --parser {parser} --samples 5",
        BEAM,
        "--limit 3 --no-progress --json",
    )
    cmd(
        "eval ppl prpn",
        f"eval ppl data/test8.trees --model {prpn} --no-progress --out runs/prpn/results/perplexity.json",
    )
    cmd("error: eval ppl no CUDA", f"eval ppl data/sentences.txt --model {lm} --device cuda")
    cmd("eval gen", "eval gen --generated small/gen.txt --references small/ref.txt")
    cmd(
        "eval gen --json self-bleu sample",
        "eval gen --generated small/gen.txt --self-bleu-sample 2 --json --out eval/gen.json",
    )
    cmd("error: eval gen invalid UTF-8", "eval gen --generated small/invalid-utf8.txt")
    cmd(
        "eval rt",
        f"eval rt data/rts.tsv --model {lm} --model {tg}",
        BEAM,
        "--folds 2 --no-progress --out eval/rt.json",
    )
    cmd(
        "eval rt --json one story",
        f"eval rt data/rts.tsv --model {lm} --folds 2 --stories s2 --spillover 1 --no-progress --json",
    )
    cmd(
        "error: eval rt beam option with gold",
        f"eval rt data/rts.tsv --model {lm} --method gold --action-beam 6",
    )
    s.append(
        Step("prepare the Natural Stories corpus", prepare=prepare_natural_stories, needs="reading_times")
    )
    cmd(
        "eval rt natural stories",
        f"eval rt rt-ns --stories 1 --model {lm} --keep-unknown --folds 2 --no-progress",
        needs="reading_times",
    )

    # reports, comparisons, the explorer page, figures
    cmd("report", "report runs/lm runs/tg runs/prpn --out report")
    cmd(
        "report --figure-sentence --baseline",
        "report runs/lm runs/tg runs/prpn --out report-figures --figure-sentence",
        [SENTENCE],
        "--baseline tg",
    )
    cmd("report reading times", "report eval/rt.json --out report-rt")
    cmd("report a folder without results", "report small --out report-none")
    cmd("compare sg", "compare sg runs/lm/results/sg runs/tg/results/sg")
    cmd("compare sg --json", "compare sg runs/lm runs/tg --json")
    cmd("error: compare sg missing", "compare sg runs/lm runs/none")
    cmd("view", "view runs/lm runs/tg runs/prpn --out view/view.html --limit 3", BEAM)
    cmd("view --no-models", "view runs/lm runs/tg --out view/results-only.html --no-models")
    cmd(
        "view result files --sentences",
        "view runs/lm/results/perplexity.json runs/lm/results/sg --out view/files.html --sentences "
        "data/sentences.txt --limit 2",
    )
    cmd("error: view no run", "view small --out view/none.html")
    cmd(
        "plot surprisal",
        f"plot surprisal {lm} {tg} --sentence",
        [SENTENCE],
        "--out plots/surprisal.png",
        BEAM,
    )
    cmd("plot distances", f"plot distances {prpn} --sentence", [SENTENCE], "--out plots/distances.png")
    cmd("plot mask", f"plot mask {tg} --tree", [TREE], "--out plots/mask.png")
    cmd("plot attention tg", f"plot attention {tg} --tree", [TREE], "--out plots/attention-tg.png --head 1")
    cmd("plot attention lm", f"plot attention {lm} --sentence", [SENTENCE], "--out plots/attention-lm.png")
    cmd(
        "error: plot distances of a transformer",
        f"plot distances {lm} --sentence",
        [SENTENCE],
        "--out plots/none.png",
    )
    cmd("inspect probe", f"inspect probe {tg} --out probe --per-cell 8 --folds 2 --lexicon-size 10")

    # sealing model files
    s.append(Step("prepare unsealed and damaged model files", prepare=prepare_seal_inputs))
    cmd("model seal", "model seal seal/unsealed")
    cmd("model seal again", "model seal seal/unsealed")
    cmd("error: model seal damaged", "model seal seal/damaged")
    cmd("error: model seal missing", "model seal seal/none")
    cmd("error: load an unsealed model", "score seal/unsealed-copy data/sentences.txt")

    # the jobs
    cmd(
        "reproduce",
        "reproduce txl-terminals-tiny --out reproduce --seeds 2 --suites data/suites3 --blimp data/blimp "
        "--test-sentences 3",
        BEAM,
        "--batch-size 4",
        sets(
            "data.synthetic.sentences=80",
            "train.max_steps=2",
            "train.eval_every=2",
            "train.batch_size=16",
            *TINY_TRANSFORMER,
        ),
    )
    cmd(
        "reproduce again keeps the runs",
        "reproduce txl-terminals-tiny --out reproduce --seeds 1 --suites data/suites3 --test-sentences 3",
        BEAM,
        "--batch-size 4",
        sets(
            "data.synthetic.sentences=80",
            "train.max_steps=2",
            "train.eval_every=2",
            "train.batch_size=16",
            *TINY_TRANSFORMER,
        ),
    )
    cmd("error: reproduce no seeds", "reproduce tg-tiny --seeds 0 --out reproduce-none")
    cmd("quickstart --fast", "quickstart --out quickstart --fast --models txl-terminals --workers 1")
    cmd("error: quickstart unknown model", "quickstart --out quickstart-none --fast --models gpt")
    curve = ["--sizes", "40", "--seeds", "0", "--models", "txl-terminals,tg", "--items-per-suite", "2",
             "--min-epochs", "1", "--min-steps", "4", "--batch-size", "16", *sets(*TINY_TRANSFORMER),
             "--action-beam", "2", "--word-beam", "1", "--fast-track", "1", "--workers", "1"]  # fmt: skip
    cmd("experiment curve", "experiment curve --out curve", curve)
    cmd("experiment curve again", "experiment curve --out curve", curve)
    cmd(
        "error: experiment curve bad sweep key",
        "experiment curve --out curve-none --sizes 40 --models txl-terminals --sweep model.n_layer=1,2",
    )
    cmd(
        "error: experiment curve sweep without values",
        "experiment curve --out curve-none --sizes 40 --models txl-terminals --sweep model.n_layers",
    )
    cmd("error: global --threads 0", "--threads 0 data stats small/in.mrg")
    cmd("global --threads 1", "--threads 1 data stats small/in.mrg --json")
    return s


FEW_STEPS_SETS_PRPN = sets(
    "model.d_model=16", "model.hidden_size=16", "model.n_layers=1", "model.streams=4",
    "model.segment_length=10",
    *FEW_STEPS,
)  # fmt: skip

COMMANDS = {
    "score": [],
    "parse": [],
    "generate": [],
    "report": [],
    "view": [],
    "train": [],
    "quickstart": [],
    "reproduce": [],
    "data": ["synth", "download", "stats", "split", "english", "clean", "transform", "documents", "dep2tree"],
    "vocab": ["build"],
    "inspect": ["tg", "actions", "distances", "som", "probe"],
    "eval": ["sg", "parse", "uf1", "blimp", "ppl", "gen", "rt"],
    "plot": ["surprisal", "distances", "mask", "attention"],
    "model": ["seal"],
    "compare": ["sg"],
    "experiment": ["curve"],
}


# --- inputs made here ------------------------------------------------------------------------------

TREES = "( (S (NP-SBJ (DT The) (NN bird)) (VP (VBZ sings) (NP (-NONE- *T*))) (. .)) )\n( (S (NP (PRP It)) (VP (VBD flew))) )\n"
GOLD = (
    "(S (NP (DT the) (NN bird)) (VP (VBZ sings)) (. .))\n(S (NP (PRP It)) (VP (VBD flew) (ADVP (RB away))))\n"
)
CONLLU = (
    "# sent_id = 1\n# text = dogs bark\n"
    "1\tdogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"
    "# sent_id = 2\n"
    "1\tThe\tthe\tDET\tDT\t_\t3\tdet\t_\t_\n2\told\told\tADJ\tJJ\t_\t3\tamod\t_\t_\n"
    "3\tcat\tcat\tNOUN\tNN\t_\t4\tnsubj\t_\t_\n4\tsaw\tsee\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "5\tthe\tthe\tDET\tDT\t_\t6\tdet\t_\t_\n6\tdog\tdog\tNOUN\tNN\t_\t4\tobj\t_\t_\n"
    "7\tnear\tnear\tADP\tIN\t_\t9\tcase\t_\t_\n8\tthe\tthe\tDET\tDT\t_\t9\tdet\t_\t_\n"
    "9\tmill\tmill\tNOUN\tNN\t_\t6\tnmod\t_\t_\n10\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_\n\n"
)


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def prepare_small_inputs(work: Path) -> None:
    small = work / "small"
    write(small / "in.mrg", TREES)
    write(small / "bad.mrg", "(S (NP the (NN bird)))\n")
    write(small / "mixed.mrg", TREES + "(S (NP the (NN bird)))\n" + GOLD)
    write(small / "in.conllu", CONLLU)
    write(
        small / "head5000.conllu",
        f"1\tdogs\t_\t_\t_\t_\t{'9' * 5000}\tnsubj\t_\t_\n2\tbark\t_\t_\t_\t_\t0\troot\t_\t_\n\n",
    )
    write(small / "gold.trees", GOLD)
    write(small / "pred.trees", "(S (NP the bird) (VP sings .))\n(S (NP It) (VP flew away))\n")
    write(small / "pred-short.trees", "(S (NP the bird) (VP sings .))\n")
    write(small / "pred-tagged-other.trees",
          "(S (NP (DT the) (NN bird)) (VP (VBZ sings) (. .)))\n(S (NP (PRP It)) (VP (VBD flew)))\n")  # fmt: skip
    write(small / "uf1-gold.trees",
          "(S (NP (DT The) (JJ blue) (NN bird)) (VP (VBZ sings) (NP (CD 3) (NNS songs))) (. .))\n"
          "(S (VP (VB Stop)) (. !))\n")  # fmt: skip
    write(small / "uf1-pred.txt", '[["the", ["blue", "bird"]], ["sings", ["N", "songs"]]]\n"Stop"\n')
    write(small / "uf1-pred-unquoted.txt", '[["the", ["blue", "bird"]], ["sings", ["N", "songs"]]]\nStop\n')
    write(
        small / "uf1-gold1.trees",
        "(S (NP (DT The) (JJ blue) (NN bird)) (VP (VBZ sings) (NP (CD 3) (NNS songs))) (. .))\n",
    )
    write(small / "uf1-distances.txt", "[0, 1, 0, 5, 2, 1]\n")
    write(small / "gen.txt", "the cat sat on the mat\na dog ran in the park\nthe dog sat in the park\n")
    write(small / "ref.txt", "the cat sat on the mat\na dog ran in the park\nthe cat ran on the mat\n")
    write(small / "invalid-utf8.txt", b"the cat sat\nthe \xff dog ran\n")
    write(
        small / "broken-suite.json",
        '{"meta": {"name": "broken", "metric": "sum"}, "region_meta": {"1": "a"},',
    )
    write(small / "proposals-5000.txt", "9" * 5000 + "\t(S (X a))\n")
    trees = [line for line in GOLD.splitlines()] + [line.strip() for line in TREES.splitlines()]
    for name, tree in zip("abc", trees):
        write(small / "docs" / f"{name}.mrg", tree + "\n" + tree + "\n")
    for name, tree in (("wsj_0201.mrg", trees[0]), ("wsj_2201.mrg", trees[1]), ("wsj_2301.mrg", trees[2])):
        write(small / "wsj" / name[4:6] / name, tree + "\n")


PRETERMINAL = re.compile(r"\(([^\s()]+) ([^\s()]+)\)")


def tree_words(line: str) -> list[str]:
    return [word for _, word in PRETERMINAL.findall(line)]


def prepare_synthetic_inputs(work: Path) -> None:
    """Sentences, suites, region values, BLiMP pairs and reading times from the synthetic data
    (``data synth syn``); plain Python: nothing of syntaxlm is imported here."""
    data, syn = work / "data", work / "syn"
    test = (syn / "test.trees").read_text(encoding="utf-8").splitlines()
    write(data / "test8.trees", "\n".join(test[:8]) + "\n")
    write(data / "sentences.txt", "".join(" ".join(tree_words(line)) + "\n" for line in test[:8]))
    write(data / "one-sentence.txt", " ".join(tree_words(test[0])) + "\n")
    punctuation = {".", ",", ":", "``", "''", "-LRB-", "-RRB-"}
    write(data / "words.txt", "".join(" ".join(w for w in tree_words(line) if w not in punctuation) + "\n"
                                      for line in test[:8]))  # fmt: skip
    names = ("synthetic_number_prep", "synthetic_reflexive_src", "synthetic_npi_orc_any")
    suites = {
        name: json.loads((syn / "suites" / f"{name}.json").read_text(encoding="utf-8")) for name in names
    }
    (data / "suites3").mkdir(parents=True)
    for name in names:
        shutil.copy(syn / "suites" / f"{name}.json", data / "suites3" / f"{name}.json")
    values = []
    for item in suites["synthetic_number_prep"]["items"]:
        conditions = {}
        for c, condition in enumerate(item["conditions"]):
            conditions[condition["condition_name"]] = [
                round(1.5 + (item["item_number"] * 7 + c * 3 + region["region_number"] * 5) % 11 * 0.75, 2)
                for region in condition["regions"]
            ]
        values.append({"item_number": item["item_number"], "values": conditions})
    write(data / "region-values.json", json.dumps(values, indent=1) + "\n")

    def sentence(condition: dict) -> str:
        text = " ".join(region["content"] for region in condition["regions"] if region["content"])
        return text.replace(" .", ".")

    paradigms = {
        ("regular_plural_subject_verb_agreement_1", "subject_verb_agreement", "morphology"): (
            suites["synthetic_number_prep"], [("match_sing", "mismatch_sing"), ("match_plural", "mismatch_plural")]
        ),
        ("anaphor_number_agreement", "anaphor_agreement", "morphology"): (suites["synthetic_reflexive_src"], None),
    }  # fmt: skip
    logprobs = []
    for (uid, term, field), (suite, pairs) in paradigms.items():
        lines = []
        for item in suite["items"]:
            by_name = {c["condition_name"]: c for c in item["conditions"]}
            chosen = pairs or [
                (a, b)
                for a in by_name
                if a.startswith("match")
                for b in by_name
                if b.startswith("mismatch") and b.split("_", 1)[1:] == a.split("_", 1)[1:]
            ]
            for good, bad in chosen:
                pair = len(lines)
                lines.append(
                    {
                        "sentence_good": sentence(by_name[good]),
                        "sentence_bad": sentence(by_name[bad]),
                        "field": field,
                        "linguistics_term": term,
                        "UID": uid,
                        "pairID": str(pair),
                    }
                )
                logprobs.append(
                    {"UID": uid, "pairID": pair, "good": -20.0 - pair, "bad": -21.5 + 2 * (pair % 2)}
                )
        write(data / "blimp" / f"{uid}.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    write(data / "blimp-logprobs.jsonl", "".join(json.dumps(line) + "\n" for line in logprobs))

    # reading times: dev and test sentences of words alone (and a final "."), two texts
    dev = (syn / "dev.trees").read_text(encoding="utf-8").splitlines()
    plain = [
        w
        for w in (tree_words(line) for line in dev + test)
        if w[-1] == "." and all(x.isalpha() for x in w[:-1])
    ]
    rows = ["text\tposition\ttoken\trt\tfrequency"]
    for t, text in enumerate(("s1", "s2")):
        position = 0
        for words in plain[t::2][:8]:
            for k, word in enumerate(words[:-1]):
                position += 1
                shown = word + ("." if k == len(words) - 2 else "")
                rt = 250 + 12 * len(word) + (position * 37) % 23
                rows.append(f"{text}\t{position}\t{shown}\t{rt}\t{1000 * (1 + len(word))}")
    write(data / "rts.tsv", "\n".join(rows) + "\n")


def shared_data() -> Path:
    return Path(os.environ.get("SYNTAXLM_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()


def prepare_english(work: Path) -> None:
    """Per treebank, its smallest document of each split (and its split lists)."""
    source, out = shared_data() / "constituency", work / "english-src"
    craft = source / "craft"
    for split in ("train", "dev", "test"):
        listed = craft / "articles" / "ids" / f"craft-ids-{split}.txt"
        write(out / "craft" / "articles" / "ids" / listed.name, listed.read_text(encoding="utf-8"))
        files = [
            craft / "structural-annotation" / "treebank" / "penn" / f"{i}.tree"
            for i in listed.read_text().split()
        ]
        smallest = min((f for f in files if f.is_file()), key=lambda f: (f.stat().st_size, f.name))
        write(
            out / "craft" / "structural-annotation" / "treebank" / "penn" / smallest.name,
            smallest.read_bytes(),
        )
    gum = source / "gum_const_cc"
    write(out / "gum_const_cc" / "splits.md", (gum / "splits.md").read_bytes())
    heading, splits = None, {}
    for line in (gum / "splits.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        elif line.strip().startswith("* ") and heading in ("train", "dev", "test"):
            splits.setdefault(heading, []).append(gum / f"{line.strip()[2:].strip()}.ptb")
    for split, files in splits.items():
        smallest = min((f for f in files if f.is_file()), key=lambda f: (f.stat().st_size, f.name))
        write(out / "gum_const_cc" / smallest.name, smallest.read_bytes())
    wsj = source / "nltk_wsj_sample_noncommercial" / "combined"
    for low, high in ((1, 160), (160, 180), (180, 200)):
        files = [f for f in wsj.glob("wsj_*.mrg") if low <= int(f.stem[4:]) < high]
        for f in sorted(files, key=lambda f: (f.stat().st_size, f.name))[:2]:
            write(out / "nltk_wsj_sample_noncommercial" / "combined" / f.name, f.read_bytes())


def prepare_natural_stories(work: Path) -> None:
    shutil.copytree(shared_data() / "reading_times" / "naturalstories", work / "rt-ns")


def _rewrite_safetensors(path: Path, out: Path, metadata: Callable[[dict], dict], flip: bool = False) -> None:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    header["__metadata__"] = metadata(header.get("__metadata__", {}))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    data = bytearray(raw[8 + n :])
    if flip:
        data[0] ^= 1
    write(out, struct.pack("<Q", len(text)) + text + bytes(data))


def prepare_seal_inputs(work: Path) -> None:
    best = work / "runs" / "lm" / "best"
    for name in ("unsealed", "unsealed-copy", "damaged"):
        shutil.copytree(best, work / "seal" / name)
    drop = lambda m: {k: v for k, v in m.items() if k != "tensors_sha256"}
    for name in ("unsealed", "unsealed-copy"):
        _rewrite_safetensors(best / "model.safetensors", work / "seal" / name / "model.safetensors", drop)
    _rewrite_safetensors(
        best / "model.safetensors", work / "seal" / "damaged" / "model.safetensors", dict, True
    )


# --- normalisation -----------------------------------------------------------------------------------

VOLATILE_KEYS = {"created", "git_commit", "seconds", "started", "host", "hostname", "pid", "tokens_per_s"}
"""JSON keys whose values are replaced, with every key ending in ``_seconds`` (``train_seconds``,
the jobs' ``total_seconds``, ...)."""
TIME_PATTERNS = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z| UTC)?"), "<TIME>"),
    (re.compile(r"\b\d+(\.\d+)?(it|s)/(s|it)\b"), "<SPEED>"),
    (re.compile(r"\[\d+:\d\d(:\d\d)?<[^\]]*\]"), "[<DURATION>]"),
    (re.compile(r"\b[\d,]+(\.\d+)? (tok|tokens|sentences|items|words|steps)/s\b"), "<SPEED>"),
    (re.compile(r"\bprocess \d+ on host \S+"), "process <PID> on host <HOST>"),
    (re.compile(r"\b\d+:\d\d (elapsed|in all)\b"), r"<DURATION> \1"),  # the jobs' stages
    (re.compile(r"\babout \d+:\d\d left\b"), "about <DURATION> left"),
    (re.compile(r"\b\d+ (s|min) so far\b"), "<DURATION> so far"),  # training without a bar
    (re.compile(r"\babout (\d+ h )?\d+ (s|min) left\b"), "about <DURATION> left"),
]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BAR = re.compile(r"^(?P<desc>.*?):? *\d+%\|.*\| *\d+/(?P<total>\d+)( \[.*)?$")
BAR_NO_TOTAL = re.compile(r"^(?P<desc>.*?):? *\d+(?P<total>)it \[.*$")
TIMED_LINES = [re.compile(r"^estimate: about "), re.compile(r"^train: step \d+/\d+ .*so far")]


def volatile_key(key: str) -> bool:
    return key in VOLATILE_KEYS or key.endswith("_seconds")


class Normaliser:
    def __init__(self, work: Path):
        self.paths = sorted(
            {str(work), str(work.resolve()), str(ROOT), str(ROOT.resolve())}, key=len, reverse=True
        )
        self.names = {str(work): "<WORK>", str(work.resolve()): "<WORK>", str(ROOT): "<ROOT>",
                      str(ROOT.resolve()): "<ROOT>"}  # fmt: skip
        self.words: dict[str, str] = {}
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()
        if commit:
            self.words[commit] = "<COMMIT>"
        self.words[socket.gethostname()] = "<HOST>"
        self.volatile_sha: dict[str, str] = {}

    def text(self, text: str) -> str:
        for path in self.paths:
            name = self.names[path]
            text = text.replace(path, name).replace(path.replace("/", "\\/"), name)
        for sha, name in self.volatile_sha.items():
            text = text.replace(sha, name)
        for word, name in self.words.items():
            if len(word) > 3:
                text = re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", name, text)
        for pattern, name in TIME_PATTERNS:
            text = pattern.sub(name, text)
        return text

    def stream(self, text: str) -> list[str]:
        """Output of a command, normalised. Progress bars (tqdm's, redrawn with \\r, nested ones
        moved with escape codes) are taken out and summed up in a last line, the set of their
        descriptions and totals: how often a bar is redrawn depends on the time. Lines said or not
        by how fast the machine is (the scoring estimate shown for work of more than 10 s, the
        plain training progress line a minute) are left out. A traceback is cut to its last line."""
        text = self.json_output(text)
        bars: set[str] = set()
        lines: list[str] = []
        for line in text.split("\n"):
            parts = [ANSI.sub("", part) for part in line.split("\r")]
            if len(parts) > 1 or BAR.match(parts[0]) or BAR_NO_TOTAL.match(parts[0]):
                kept = []
                for part in parts:
                    found = BAR.match(part) or BAR_NO_TOTAL.match(part)
                    if found:
                        bars.add(f"{found['desc']} ({found['total'] or '?'})")
                    elif part.strip():
                        kept.append(part)
                lines += kept
            else:
                lines.append(parts[0])
        out, in_traceback = [], False
        for line in map(self.text, lines):
            if any(pattern.match(line) for pattern in TIMED_LINES):
                continue
            if line.startswith("Traceback (most recent call last):"):
                in_traceback = True
                out.append("Traceback (most recent call last): <frames left out>")
                continue
            if in_traceback and (line.startswith(" ") or not line):
                continue
            in_traceback = False
            out.append(line)
        while out and not out[-1]:
            out.pop()
        if bars:
            out.append(f"<progress bars: {', '.join(sorted(bars))}>")
        return out

    def json_output(self, text: str) -> str:
        """Printed JSON (``--json``; JSON lines) as printed, unless normalising its values changes
        any (timings under a ``seconds`` key): then re-dumped normalised, indented by 2."""

        def normalised(document: str, indent: int | None) -> str | None:
            try:
                value = json.loads(document)
            except ValueError:
                return None
            replaced = self.json_value(value)
            if replaced == self.json_value(value, replace=False):
                return document
            return json.dumps(replaced, indent=indent, ensure_ascii=False)

        stripped = text.strip()
        if stripped[:1] in ("{", "[") and (whole := normalised(stripped, 2)) is not None:
            return text if whole == stripped else whole + "\n"
        return "\n".join(
            (normalised(line, None) or line) if line.startswith("{") else line for line in text.split("\n")
        )

    def json_value(self, value: Any, replace: bool = True) -> Any:
        """A JSON value normalised: volatile keys' values replaced, strings normalised as text, a
        string holding JSON (safetensors metadata) read. ``replace=False``: read, nothing replaced."""
        if isinstance(value, dict):
            return {
                k: "<VOLATILE>" if replace and volatile_key(k) else self.json_value(v, replace)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.json_value(v, replace) for v in value]
        if isinstance(value, str):
            stripped = value.strip()
            if stripped[:1] in "{[" and len(stripped) > 1:
                try:
                    return {"<json text>": self.json_value(json.loads(stripped), replace)}
                except ValueError:
                    pass
            return self.text(value) if replace else value
        return value

    def csv(self, text: str, delimiter: str) -> str:
        lines = text.split("\n")
        header = lines[0].split(delimiter)
        masked = [k for k, column in enumerate(header) if volatile_key(column)]
        if not masked:
            return text
        rows = []
        for line in lines[1:]:
            cells = line.split(delimiter)
            rows.append(delimiter.join("<VOLATILE>" if k in masked and c else c for k, c in enumerate(cells)))
        return "\n".join([lines[0], *rows])


class Unchanged:
    """A normaliser that replaces nothing, only reshapes (JSON re-indented) as ``Normaliser``
    does: what a file would be without normalisation, to tell whether normalisation changed it."""

    def __init__(self, norm: Normaliser):
        self.norm = norm

    def text(self, text: str) -> str:
        return text

    def json_output(self, text: str) -> str:
        """Printed JSON as printed (``Normaliser.json_output`` with nothing replaced)."""
        return text

    def json_value(self, value: Any, replace: bool = True) -> Any:
        return self.norm.json_value(value, replace=False)

    def csv(self, text: str, delimiter: str) -> str:
        return text


TEXT_LIMIT = 64 * 1024  # larger text files are recorded as a digest and their first lines
HEAD_LINES = 20


def describe_file(path: Path, norm: Normaliser) -> dict[str, Any]:
    """A file as the record holds it (see the module docstring). The sha256 of a file whose contents
    normalisation changed, and of every safetensors file (the safetensors library writes the
    header's metadata in an order of its own each time), is registered: where a later output names
    it, it reads ``<sha256 of NAME ~ D>``, D a digest of what the record holds of the file."""
    raw = path.read_bytes()
    raw_sha = hashlib.sha256(raw).hexdigest()
    if path.suffix == ".safetensors":
        entry = describe_safetensors(raw, norm)
        volatile = entry.pop("volatile") or entry["kind"] == "safetensors"
    elif raw[:8] == b"\x89PNG\r\n\x1a\n":
        entry, volatile = describe_png(path, raw), False
    else:
        try:
            text = raw.decode("utf-8")
            if "\0" in text:
                raise ValueError
        except ValueError:
            return {"kind": "binary", "bytes": len(raw), "sha256": raw_sha}
        normalised = normalise_text_file(path, text, norm)
        volatile = normalised != normalise_text_file(path, text, Unchanged(norm))
        lines = normalised.split("\n")
        if len(normalised) > TEXT_LIMIT and path.suffix != ".html":
            entry = {
                "kind": "text digest",
                "sha256": hashlib.sha256(normalised.encode()).hexdigest(),
                "lines": len(lines),
                "head": lines[:HEAD_LINES],
            }
        else:
            entry = {"kind": "text", "lines": lines}
    if volatile:
        digest = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:16]
        norm.volatile_sha[raw_sha] = f"<sha256 of {path.name} ~ {digest}>"
    return entry


JSON_SCRIPT = re.compile(r"(<script[^>]*application/json[^>]*>)(.*?)(</script>)", re.DOTALL)


def normalise_json_text(text: str, norm: Normaliser) -> str:
    try:
        return json.dumps(norm.json_value(json.loads(text)), indent=1, ensure_ascii=False) + "\n"
    except ValueError:
        return norm.text(text)


def normalise_text_file(path: Path, text: str, norm: Normaliser) -> str:
    if path.suffix == ".json" or path.name.endswith(".jsonl"):
        try:
            if path.suffix == ".json":
                return json.dumps(norm.json_value(json.loads(text)), indent=1, ensure_ascii=False) + "\n"
            return "".join(
                json.dumps(norm.json_value(json.loads(line)), ensure_ascii=False) + "\n"
                if line.strip()
                else "\n"
                for line in text.splitlines()
            )
        except ValueError:
            pass
    if path.suffix == ".html":  # the explorer page: its data (JSON) re-indented, one value a line
        return JSON_SCRIPT.sub(
            lambda found: found[1] + "\n" + normalise_json_text(found[2], norm) + found[3], text
        )
    if path.suffix in (".csv", ".tsv"):
        text = norm.csv(text, "," if path.suffix == ".csv" else "\t")
    return norm.text(text)


def describe_safetensors(raw: bytes, norm: Normaliser) -> dict[str, Any]:
    try:
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + n])
    except (struct.error, ValueError):
        return {
            "kind": "binary",
            "bytes": len(raw),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "volatile": False,
        }
    metadata = header.pop("__metadata__", {})
    normalised = norm.json_value(metadata)
    data = raw[8 + n :]
    tensors = {
        name: [info["dtype"], info["shape"], hashlib.sha256(data[slice(*info["data_offsets"])]).hexdigest()]
        for name, info in sorted(header.items())
    }
    volatile = normalised != norm.json_value(metadata, replace=False)
    return {"kind": "safetensors", "metadata": normalised, "tensors": tensors, "volatile": volatile}


def describe_png(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        from PIL import Image

        with Image.open(path) as image:
            image.load()
            return {
                "kind": "png",
                "size": list(image.size),
                "mode": image.mode,
                "pixels_sha256": hashlib.sha256(image.tobytes()).hexdigest(),
            }
    except ImportError:  # without Pillow: the image's size from its header
        width, height = struct.unpack(">II", raw[16:24])
        return {"kind": "png", "size": [width, height], "pixels_sha256": None}


# --- recording -------------------------------------------------------------------------------------

HELP_RUNNER = r"""
import contextlib, io, json, runpy, sys
results = []
for argv in json.load(sys.stdin):
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = ["syntaxlm", *argv]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("syntaxlm", run_name="__main__", alter_sys=True)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    results.append({"exit_code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
sys.__stdout__.write(json.dumps(results))
"""
"""``python -m syntaxlm ARGS`` for each ARGS of a JSON list read from stdin, in one process (the
--help of every command: a second each on their own): a JSON list of exit codes and outputs."""


def run_helps(
    python: str, argvs: list[list[str]], work: Path, env: dict[str, str], timeout: int
) -> list[dict]:
    done = subprocess.run(
        [python, "-c", HELP_RUNNER], input=json.dumps(argvs), cwd=work, env=env, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"error: the --help runner failed:\n{done.stderr}")
    return json.loads(done.stdout)


def snapshot(work: Path) -> dict[str, tuple[int, int, int]]:
    found = {}
    for folder, _, files in os.walk(work):
        for name in files:
            path = Path(folder, name)
            if path.is_symlink():
                continue
            stat = path.stat()
            found[path.relative_to(work).as_posix()] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    return found


def environment(python: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNTAXLM_", "TQDM_", "PYTORCH_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        PYTHONHASHSEED="0",
        CUDA_VISIBLE_DEVICES="",
        COLUMNS="100",
        LINES="50",
        TERM="dumb",
        NO_COLOR="1",
        TZ="UTC",
        LC_ALL="C.UTF-8",
        MPLBACKEND="Agg",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONIOENCODING="utf-8",
    )
    if "SYNTAXLM_SHARED_DATA" in os.environ:
        env["SYNTAXLM_SHARED_DATA"] = os.environ["SYNTAXLM_SHARED_DATA"]
    return env


def versions(python: str) -> dict[str, str]:
    code = (
        "import json, platform, sys\n"
        "out = {'python': sys.version.split()[0], 'platform': platform.platform()}\n"
        "for name in ('torch', 'numpy', 'typer', 'click', 'matplotlib', 'safetensors', 'sentencepiece', 'tqdm'):\n"
        "    try:\n"
        "        out[name] = __import__(name).__version__\n"
        "    except Exception:\n"
        "        out[name] = None\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=False, env=environment(python)
    )
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"error": done.stderr[-500:]}


def record(out: Path, workdir: Path | None, python: str, only: str | None, timeout: int) -> int:
    if workdir is None:
        work = Path(tempfile.mkdtemp(prefix="syntaxlm-behaviour-"))
        keep = False
    else:
        work = workdir.absolute()
        if work.exists() and any(work.iterdir()):
            sys.exit(f"error: the work folder {work} is not empty")
        work.mkdir(parents=True, exist_ok=True)
        keep = True
    norm = Normaliser(work)
    env = environment(python)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout
    result: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "about": {  # not compared: what produced the record
            "commit": commit,
            "uncommitted_changes": bool(dirty.strip()),
            "root": str(ROOT),
            "workdir": str(work),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "versions": versions(python),
            "shared_data": str(shared_data()),
        },
        "steps": [],
    }
    began = time.monotonic()
    chosen = [step for step in steps() if not only or only in step.name]
    helps = [step for step in chosen if step.help]
    helped: dict[str, dict[str, Any]] = {}
    try:
        for step in chosen:
            entry: dict[str, Any] = {"name": step.name}
            if step.needs and not (shared_data() / step.needs).is_dir():
                entry["skipped"] = f"needs {shared_data() / step.needs}, which is not there"
                result["steps"].append(entry)
                print(f"skipped  {step.name}: {entry['skipped']}", flush=True)
                continue
            before = snapshot(work)
            start = time.monotonic()
            if step.prepare is not None:
                step.prepare(work)
            elif step.help:
                if not helped:
                    outputs = run_helps(python, [h.argv for h in helps], work, env, timeout)
                    helped = {h.name: output for h, output in zip(helps, outputs, strict=True)}
                    helped["seconds"] = time.monotonic() - start
                entry["argv"] = ["syntaxlm", *step.argv]
                entry["exit_code"] = helped[step.name]["exit_code"]
                entry["stdout"] = norm.stream(helped[step.name]["stdout"])
                entry["stderr"] = norm.stream(helped[step.name]["stderr"])
                start = time.monotonic() - helped["seconds"] / len(helps)  # its share of the runner's time
            else:
                entry["argv"] = ["syntaxlm", *step.argv]
                try:
                    done = subprocess.run(
                        [python, "-m", "syntaxlm", *step.argv],
                        cwd=work,
                        env=env,
                        capture_output=True,
                        timeout=timeout,
                        stdin=subprocess.DEVNULL,
                        check=False,
                    )
                    entry["exit_code"] = done.returncode
                    entry["stdout"] = norm.stream(done.stdout.decode("utf-8", "backslashreplace"))
                    entry["stderr"] = norm.stream(done.stderr.decode("utf-8", "backslashreplace"))
                except subprocess.TimeoutExpired:
                    entry["exit_code"] = f"timed out after {timeout} s"
            seconds = time.monotonic() - start
            after = snapshot(work)
            changed = sorted(path for path, stat in after.items() if before.get(path) != stat)
            entry["files"] = {path: describe_file(work / path, norm) for path in changed}
            removed = sorted(set(before) - set(after))
            if removed:
                entry["removed"] = removed
            entry["seconds"] = round(seconds, 2)  # not compared
            result["steps"].append(entry)
            code = entry.get("exit_code", "-")
            print(f"{seconds:6.1f} s  exit {code}  {step.name}  ({len(changed)} files)", flush=True)
    finally:
        result["about"]["seconds"] = round(time.monotonic() - began, 1)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"recorded {len(result['steps'])} steps in {result['about']['seconds']} s: {out}")
    return 0


# --- comparing ---------------------------------------------------------------------------------------


def _lines(entry: dict[str, Any] | None) -> list[str]:
    if entry is None:
        return []
    if entry.get("kind") == "text":
        return entry["lines"]
    return json.dumps(entry, indent=1, ensure_ascii=False).split("\n")


def _diff(a: list[str], b: list[str], what: str, most: int) -> list[str]:
    lines = list(difflib.unified_diff(a, b, f"before: {what}", f"after: {what}", n=2, lineterm=""))
    if len(lines) > most:
        lines = lines[:most] + [f"... {len(lines) - most} more diff lines"]
    return lines


def compare_steps(a: dict[str, Any], b: dict[str, Any], most: int) -> list[str]:
    out: list[str] = []
    if a.get("skipped") != b.get("skipped"):
        out.append(f"skipped: {a.get('skipped')!r} -> {b.get('skipped')!r}")
    for key in ("argv", "exit_code"):
        if a.get(key) != b.get(key):
            out.append(f"{key}: {a.get(key)!r} -> {b.get(key)!r}")
    for key in ("stdout", "stderr"):
        if a.get(key) != b.get(key):
            out += [f"{key} differs:", *_diff(a.get(key) or [], b.get(key) or [], key, most)]
    files_a, files_b = a.get("files", {}), b.get("files", {})
    for path in sorted(set(files_a) | set(files_b)):
        if path not in files_b:
            out.append(f"file {path}: written before, not after")
        elif path not in files_a:
            out.append(f"file {path}: written after, not before")
        elif files_a[path] != files_b[path]:
            out += [f"file {path} differs:", *_diff(_lines(files_a[path]), _lines(files_b[path]), path, most)]
    if a.get("removed") != b.get("removed"):
        out.append(f"removed files: {a.get('removed')} -> {b.get('removed')}")
    return out


def compare(before: Path, after: Path, most: int) -> int:
    records = []
    for path in (before, after):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            sys.exit(f"error: {path} is not a behaviour record")
        records.append(data)
    a, b = ({step["name"]: step for step in r["steps"]} for r in records)
    names = list(a) + [name for name in b if name not in a]
    differing = 0
    for name in names:
        if name not in b:
            report = ["recorded before only"]
        elif name not in a:
            report = ["recorded after only"]
        else:
            report = compare_steps(a[name], b[name], most)
        if report:
            differing += 1
            print(f"== {name}")
            for line in report:
                print(f"   {line}")
    for r, label in zip(records, ("before", "after")):
        about = r["about"]
        changes = " (with changes)" if about.get("uncommitted_changes") else ""
        print(f"{label}: commit {about['commit'][:12]}{changes},"
              f" {len(r['steps'])} steps, {about.get('seconds')} s")  # fmt: skip
    versions = [r["about"].get("versions") for r in records]
    if versions[0] != versions[1]:
        print(f"note: other versions: {versions[0]} -> {versions[1]}")
    print(f"{differing} of {len(names)} steps differ" if differing else f"all {len(names)} steps alike")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="run the commands and write a record")
    rec.add_argument("--out", type=Path, required=True, help="the record (JSON) to write")
    rec.add_argument(
        "--workdir", type=Path, help="an empty folder to run in, kept afterwards (default: a temporary one)"
    )
    rec.add_argument(
        "--python", default=sys.executable, help="the Python that runs syntaxlm (default: this one)"
    )
    rec.add_argument("--only", help="only the steps whose names contain this text")
    rec.add_argument("--timeout", type=int, default=600, help="seconds a command may run")
    cmp = commands.add_parser("compare", help="print how two records differ; exit 1 when they do")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    cmp.add_argument("--max-lines", type=int, default=60, help="diff lines shown per output or file")
    args = parser.parse_args()
    if args.command == "record":
        return record(args.out, args.workdir, args.python, args.only, args.timeout)
    return compare(args.before, args.after, args.max_lines)


if __name__ == "__main__":
    sys.exit(main())
