"""Properties of the normalisation and of exact location."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.alignment.geometry import line_rects
from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.alignment.text import normalize, normalize_char, normalize_text, split_elision

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.text(max_size=200))
def test_normalisation_maps_back_to_source(source: str) -> None:
    norm = normalize(source)
    assert len(norm.origin) == len(norm.text)
    assert list(norm.origin) == sorted(norm.origin)
    assert all(0 <= i < len(source) for i in norm.origin)
    rebuilt = "".join(normalize_char(source[i]) for i in dict.fromkeys(norm.origin))
    assert rebuilt == norm.text
    assert normalize_text(source) == norm.text


@FAST
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=100), st.data())
def test_source_span_covers_the_skeleton(source: str, data: st.DataObject) -> None:
    norm = normalize(source)
    assume(norm.text)
    start = data.draw(st.integers(0, len(norm.text) - 1))
    end = data.draw(st.integers(start + 1, len(norm.text)))
    src_start, src_end = norm.source_span(start, end)
    # A source character can expand to several skeleton characters (ligatures, "ß" -> "ss").
    assert norm.text[start:end] in normalize_text(source[src_start:src_end])


def test_normalisation_examples() -> None:
    assert (
        normalize_text("\u201cSelf-evident\u201d \ufb01nd\u2014the \ufb02oor")
        == "selfevidentfindthefloor"
    )
    assert normalize_text("Stra\u00dfe CAF\u00c9 \uff21\uff22") == "strassecafeab"
    assert (
        normalize_text("\u7acb\u6cd5\u9662 \u7b2c\u4e00\u689d\u3002")
        == "\u7acb\u6cd5\u9662\u7b2c\u4e00\u689d"
    )


def test_split_elision() -> None:
    assert split_elision("first part ... last part") == ["firstpart", "lastpart"]
    assert split_elision("first part \u2026 last part") == ["firstpart", "lastpart"]
    assert split_elision("a [...] b. . . c") == ["a", "b", "c"]
    assert split_elision("no elision here") == ["noelisionhere"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_unique_substring_is_found_where_it_is(
    sample_index: DocumentIndex, data: st.DataObject
) -> None:
    text = sample_index.norm.text
    start = data.draw(st.integers(0, len(text) - 12))
    end = data.draw(st.integers(start + 12, min(len(text), start + 150)))
    src_start, src_end = sample_index.norm.source_span(start, end)
    quote = sample_index.chars[src_start:src_end]
    assume(text.count(text[start:end]) == 1)
    result = locate(sample_index, quote)
    assert result.status == "found"
    assert result.score == 100.0
    assert result.rects == tuple(line_rects(sample_index, src_start, src_end))
