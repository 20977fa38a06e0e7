"""Claims from citation markers (app/selection/claims.py): examples for each marker form and
binding rule, and properties on generated answers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.selection.claims import claims_by_citation, find_markers


def texts(
    answer: str, ids: list[str], explicit: dict[str, str] | None = None
) -> dict[str, list[str]]:
    return {
        cid: [c.text for c in claims]
        for cid, claims in claims_by_citation(answer, ids, explicit).items()
    }


def test_two_sentences_two_markers() -> None:
    answer = "Revenue rose 8% [1]. Net income fell to $2.1 billion [2]."
    assert texts(answer, ["1", "2"]) == {
        "1": ["Revenue rose 8%"],
        "2": ["Net income fell to $2.1 billion"],
    }


def test_a_marker_after_the_terminator_closes_that_sentence() -> None:
    answer = "Revenue rose 8%.[1] Net income fell.[2]"
    assert texts(answer, ["1", "2"]) == {"1": ["Revenue rose 8%."], "2": ["Net income fell."]}
    spaced = "Revenue rose 8%. [1] Net income fell. [2]"
    assert texts(spaced, ["1", "2"]) == {"1": ["Revenue rose 8%."], "2": ["Net income fell."]}


def test_clauses_of_one_sentence() -> None:
    answer = "Revenue rose 8% [1], while net income fell [2]."
    assert texts(answer, ["1", "2"]) == {"1": ["Revenue rose 8%"], "2": ["while net income fell"]}


def test_several_markers_on_one_sentence_make_a_claim_of_each() -> None:
    for answer in (
        "Both margins improved [1][2].",
        "Both margins improved [1, 2].",
        "Both margins improved [1] [2].",
        "Both margins improved [1-2].",
        "Both margins improved<sup>1,2</sup>.",
        "Both margins improved【1】【2】.",
        "Both margins improved [^1][^2].",
    ):
        assert texts(answer, ["1", "2"]) == {
            "1": ["Both margins improved"],
            "2": ["Both margins improved"],
        }, answer


def test_one_citation_with_two_claims_in_answer_order() -> None:
    answer = "Sales grew [a]. Costs were flat. Margins widened [a]."
    assert texts(answer, ["a"]) == {"a": ["Sales grew", "Margins widened"]}


def test_brackets_that_name_no_citation_are_prose() -> None:
    answer = "The Act [sic] was amended in [2019] and revenue rose [1]."
    assert texts(answer, ["1"]) == {"1": ["The Act [sic] was amended in [2019] and revenue rose"]}
    assert find_markers("See [see p. 4].", ["1"]) == []


def test_no_markers_means_no_claims() -> None:
    assert claims_by_citation("Revenue rose 8%.", ["1", "2"]) == {"1": [], "2": []}


def test_an_explicit_marker() -> None:
    answer = "Revenue rose 8% (Source 3). Costs fell (Source 4)."
    explicit = {"s3": "(Source 3)", "s4": "(Source 4)"}
    assert texts(answer, ["s3", "s4"], explicit=explicit) == {
        "s3": ["Revenue rose 8%"],
        "s4": ["Costs fell"],
    }


def test_a_citation_id_that_is_the_marker_itself() -> None:
    answer = "Revenue rose 8% [1]. Costs fell [2]."
    assert texts(answer, ["[1]", "[2]"]) == {"[1]": ["Revenue rose 8%"], "[2]": ["Costs fell"]}


def test_chinese_sentences() -> None:
    answer = "營收成長百分之八【1】。淨利下降【2】。"
    assert texts(answer, ["1", "2"]) == {"1": ["營收成長百分之八"], "2": ["淨利下降"]}


def test_a_marker_opening_the_answer_claims_nothing() -> None:
    assert texts("[1] Revenue rose.", ["1"]) == {"1": []}


LABELS = ["1", "2", "3", "a"]
FORMS = ["[{}]", "[^{}]", "【{}】", "<sup>{}</sup>"]
words = st.text(alphabet="abcdefgh ,.;", min_size=0, max_size=30)


@st.composite
def answers(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        parts.append(draw(words))
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(FORMS)).format(draw(st.sampled_from(LABELS))))
    return "".join(parts)


@given(answers())
def test_claims_are_answer_spans_without_markers(answer: str) -> None:
    claims = claims_by_citation(answer, LABELS)
    assert set(claims) == set(LABELS)
    markers = find_markers(answer, LABELS)
    for found in claims.values():
        assert len(found) == len(set(found))
        assert [c.start for c in found] == sorted(c.start for c in found)
        for claim in found:
            assert claim.text == answer[claim.start : claim.end]
            assert claim.text == claim.text.strip()
            assert any(ch.isalnum() for ch in claim.text)
            assert not any(claim.start < m.end and m.start < claim.end for m in markers)


@given(answers())
def test_every_claim_of_a_label_ends_before_one_of_its_markers(answer: str) -> None:
    markers = find_markers(answer, LABELS)
    for label, found in claims_by_citation(answer, LABELS).items():
        own = [m for m in markers if label in m.labels]
        for claim in found:
            assert any(claim.end <= m.start for m in own)


def test_an_answer_of_thousands_of_markers() -> None:
    # The longest answer a batch takes (20,000 characters), a marker every four: each marker
    # is bound by a search, not by a scan of the markers and sentences before it (which took
    # 1.2 s here; the bound lives in the code, no timing is asserted).
    answer = "a[1]" * 5000
    found = claims_by_citation(answer, ["1"])["1"]
    assert len(found) == 5000
    assert {c.text for c in found} == {"a"}
    assert [c.start for c in found] == list(range(0, 20000, 4))


def test_one_literal_marks_every_citation_that_names_it() -> None:
    answer = "Revenue rose (A). Costs fell."
    claims = claims_by_citation(answer, ["x", "y"], {"x": "(A)", "y": "(A)"})
    assert [c.text for c in claims["x"]] == [c.text for c in claims["y"]] == ["Revenue rose"]


def test_a_literal_of_letters_or_digits_is_no_part_of_a_word_or_number() -> None:
    answer = "Revenue rose 18% 1. Costs fell 1."
    claims = claims_by_citation(answer, ["one"], {"one": "1"})
    assert [c.text for c in claims["one"]] == ["Revenue rose 18%", "Costs fell"]
