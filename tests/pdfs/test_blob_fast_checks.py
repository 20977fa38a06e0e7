"""The decoder's one-pass checks decide as the two-pass ones they replace: every value of an
array in range (read as unsigned), every box a finite number (their top bytes looked up)."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.pdfs.blob_checks import CorruptIndex, check_within
from app.pdfs.index_codec import _finite

_FLOAT32 = st.floats(width=32) | st.sampled_from([3.4e38, -3.4e38, 2.0**127, 1e-45, -0.0])


@settings(max_examples=300, deadline=None)
@given(st.lists(_FLOAT32, max_size=8))
def test_finite_as_the_sum_says(values: list[float]) -> None:
    boxes = array("f", values)
    assert _finite(boxes) == math.isfinite(sum(boxes))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 12), max_size=6),
    # Past 2**31 too: read as unsigned, -1 is 2**32 - 1, below such a bound (review of issue 31).
    st.integers(0, 2**31 - 1) | st.integers(0, 12) | st.integers(2**31, 2**33),
)
def test_within_as_min_and_max_say(values: list[int], hi: int) -> None:
    items = array("i", values)
    inside = not items or (min(items) >= 0 and max(items) < hi)
    if inside:
        check_within(items, 0, hi, "values")
    else:
        with pytest.raises(CorruptIndex):
            check_within(items, 0, hi, "values")
