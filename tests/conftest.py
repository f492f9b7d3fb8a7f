"""Shared test fixtures: where the real data and the reference outputs live.

``../shared/data`` and ``../shared/golden`` (relative to the project root) hold real data and the
authors'-code outputs. ``SYNTAXLM_SHARED_DATA`` and ``SYNTAXLM_GOLDEN`` override the paths. Tests
that use the ``shared_data``/``golden`` fixtures are marked accordingly and skipped, with a message
saying why, when the folder is absent. ``SYNTAXLM_HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) makes
the property tests deterministic.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples (the same on every run), so that a
# landing never depends on luck; locally (and in scripts/fuzz_campaign.py) examples are random.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("SYNTAXLM_HYPOTHESIS_PROFILE", "default"))

# One thread per test process: the suite runs one process per core (pytest -n auto), and two
# threads per process on tiny tensors oversubscribe the cores many times over.
torch.set_num_threads(1)

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _folder(variable: str, default: Path) -> Path:
    return Path(os.environ.get(variable, default)).resolve()


SHARED_DATA = _folder("SYNTAXLM_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data")
GOLDEN = _folder("SYNTAXLM_GOLDEN", PROJECT_ROOT.parent / "shared" / "golden")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder; the test is skipped when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (set SYNTAXLM_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def golden() -> Path:
    """The reference-output folder; the test is skipped when it is absent."""
    if not GOLDEN.is_dir():
        pytest.skip(f"reference outputs not found at {GOLDEN} (set SYNTAXLM_GOLDEN)")
    return GOLDEN


def pytest_collection_modifyitems(items):
    for item in items:
        for name in ("shared_data", "golden"):
            if name in getattr(item, "fixturenames", ()):
                item.add_marker(getattr(pytest.mark, name))
