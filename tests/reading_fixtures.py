"""What the tests of reading predictions files share (tests/sources/ and tests/interpretation/): one set of logits and
labels, written in every format and read back, and the check that a reading gives them back.

Test modules in either folder import it by name (`from reading_fixtures import LOGITS, same`): tests/conftest.py puts
tests/ on sys.path (there is no tests/__init__.py). `RNG` is one generator shared by every module that draws from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RNG = np.random.default_rng(7)
N, K = 40, 4
LOGITS = RNG.normal(size=(N, K)).astype(np.float32)
LABELS = RNG.integers(0, K, N).astype(np.int64)
REPO = Path(__file__).resolve().parents[1]


def same(pred, logits=LOGITS, labels=LABELS):
    """`pred` holds `logits` (to float32 rounding) and exactly `labels`."""
    np.testing.assert_allclose(pred.logits, logits, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(pred.labels, labels)


def csv_text(rows, header=None, sep=","):
    """The text of a table: an optional header line, then one line per row, cells joined by `sep`."""
    lines = [sep.join(header)] if header else []
    lines += [sep.join(str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"
