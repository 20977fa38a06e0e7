"""One box per page around a highlight's line rectangles (geometry.page_boxes)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.alignment.geometry import LineRect, page_boxes


def test_a_sentence_across_a_page_break() -> None:
    rects = [
        LineRect(1, 72, 700, 540, 712),
        LineRect(1, 72, 714, 300, 726),
        LineRect(2, 72, 60, 410, 72),
    ]
    assert page_boxes(rects) == [LineRect(1, 72, 700, 540, 726), LineRect(2, 72, 60, 410, 72)]


coordinate = st.floats(0, 800, allow_nan=False)


@st.composite
def line_rects(draw: st.DrawFn) -> LineRect:
    x0, x1 = sorted((draw(coordinate), draw(coordinate)))
    y0, y1 = sorted((draw(coordinate), draw(coordinate)))
    return LineRect(draw(st.integers(1, 3)), x0, y0, x1, y1)


@given(st.lists(line_rects(), max_size=12))
def test_each_page_box_holds_exactly_that_pages_rects(rects: list[LineRect]) -> None:
    boxes = page_boxes(rects)
    assert [b.page for b in boxes] == sorted({r.page for r in rects})
    for box in boxes:
        mine = [r for r in rects if r.page == box.page]
        assert all(
            box.x0 <= r.x0 and r.x1 <= box.x1 and box.y0 <= r.y0 and r.y1 <= box.y1 for r in mine
        )
        # Tight: each side touches one of the page's rects.
        assert box.x0 == min(r.x0 for r in mine)
        assert box.y0 == min(r.y0 for r in mine)
        assert box.x1 == max(r.x1 for r in mine)
        assert box.y1 == max(r.y1 for r in mine)
