"""Comparing float results of two computations that are equal in exact arithmetic but not the same
float32 computation: another batch size, row count or padding, another thread count, another
process. MKL picks its sgemm kernels by shape and thread count (on Intel Xeon: AVX-512/AMX), and
its results are not reproducible bit for bit across processes, so such results differ in their
last bits. Results of the same computation (same shapes, batch, thread count, process) are
compared with ``torch.equal``.

``ROUNDING`` is about 100 float32 ulps (2^-23 ≈ 1.2e-7) relative to a tensor's norm: room for
sums over a few hundred terms in another order. ``TRAINING`` is for parameters and losses after
tens of optimizer steps, which carry and grow the first steps' rounding differences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

ROUNDING = 1e-5
TRAINING = 1e-4


def assert_tensors_close(got: torch.Tensor, expected: torch.Tensor, *, rtol=ROUNDING, name="") -> None:
    """Integer and boolean tensors equal, float ones with ``‖got − expected‖ ≤ rtol ‖expected‖``
    (one norm per tensor: a single element may move more where the computation cancels)."""
    assert got.shape == expected.shape and got.dtype == expected.dtype, (name, got, expected)
    if not expected.is_floating_point():
        assert torch.equal(got, expected), name
        return
    difference = (got.double() - expected.double()).norm().item()
    scale = expected.double().norm().item()
    assert difference <= rtol * scale + 1e-30, f"{name}: relative difference {difference / (scale or 1):.2e}"


def assert_state_dicts_close(got: Mapping, expected: Mapping, *, rtol: float = TRAINING) -> None:
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert_tensors_close(got[name], value, rtol=rtol, name=name)


def assert_rows_close(got: Sequence[Sequence[str]], expected: Sequence[Sequence[str]], *, rtol=TRAINING):
    """Rows of text cells (``log.csv``): numbers within ``rtol``, everything else equal."""
    assert len(got) == len(expected)
    for row, (a_row, b_row) in enumerate(zip(got, expected)):
        assert len(a_row) == len(b_row), row
        for a, b in zip(a_row, b_row):
            try:
                close = a == b or math.isclose(float(a), float(b), rel_tol=rtol)
            except ValueError:  # not a number: a column left empty at this step, for example
                close = False
            assert close, (row, a_row, b_row)
