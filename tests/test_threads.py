"""CPU threads (threads.py and ``syntaxlm --threads``): the option, OMP_NUM_THREADS, the default of
the free cores, and worker processes keeping their share."""

from __future__ import annotations

import os
import subprocess
import sys

from syntaxlm import threads
from syntaxlm.threads import default_threads, free_cores, usable_cores


def test_free_cores_are_the_cores_less_the_load_and_at_least_one():
    assert [free_cores(2, load) for load in (0.0, 0.4, 1.0, 2.3, 7.0)] == [2, 2, 1, 1, 1]
    assert free_cores(8, 3.4) == 5


def test_the_default_follows_omp_num_threads_else_the_free_cores(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() is None  # torch follows the variable itself
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (50.0, 0.0, 0.0))
    assert default_threads() == 1
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert default_threads() == usable_cores() >= 1


THREADS_AFTER = """
import sys
from syntaxlm.cli import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
import torch
from syntaxlm.jobs.pool import cpu_pool
with cpu_pool(2) as pool:
    print(torch.get_num_threads(), pool.submit(torch.get_num_threads).result())
"""


def test_the_threads_option_wins_over_omp_num_threads_and_workers_keep_their_share(tmp_path):
    treebank = tmp_path / "one.trees"
    treebank.write_text("(S (NP (DT the) (NN bird)) (VP (VBZ sings)))\n")
    result = subprocess.run(
        [sys.executable, "-c", THREADS_AFTER, "--threads", "2", "data", "stats", str(treebank)],
        capture_output=True, text=True, env=os.environ | {"OMP_NUM_THREADS": "1"}, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # 2 threads, and the worker process of two started after: 1, though it inherits the setting
    assert result.stdout.split()[-2:] == ["2", "1"]


def test_with_torch_loaded_its_threads_are_set_directly(monkeypatch):
    import torch

    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", str(before))  # restored after the test
    try:
        threads.use_threads(before + 1)
        assert torch.get_num_threads() == before + 1 and os.environ["OMP_NUM_THREADS"] == str(before + 1)
    finally:
        torch.set_num_threads(before)
