from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.selection.sentences import split_sentences


def texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


def test_english_keeps_titles_and_decimals_inside_sentences() -> None:
    assert texts("Mr. Speaker, inflation was 10.5 per cent. It fell! Did it? Yes.") == [
        "Mr. Speaker, inflation was 10.5 per cent.",
        "It fell!",
        "Did it?",
        "Yes.",
    ]


def test_initials_and_section_numbers_do_not_end_a_sentence() -> None:
    assert texts("Hon. J. K. Mwangi cited Art. 12 and No. 4 of the Act. Agreed.") == [
        "Hon. J. K. Mwangi cited Art. 12 and No. 4 of the Act.",
        "Agreed.",
    ]


def test_a_form_name_ending_in_a_capital_ends_a_sentence() -> None:
    """ "10-Q." is a form's name, not an initial: Amcor's "... on Form 10-Q. You can obtain"
    was one sentence, and a citation of the second was lit with the first."""
    assert texts("It is in reports on Form 10-Q. You can obtain copies. Ask J. Smith.") == [
        "It is in reports on Form 10-Q.",
        "You can obtain copies.",
        "Ask J. Smith.",
    ]


def test_french_with_guillemets_and_ellipsis() -> None:
    assert texts("M. Dupont a dit « oui. » ATTENDU QUE le conseil… Adoptée à l'unanimité.") == [
        "M. Dupont a dit « oui. »",
        "ATTENDU QUE le conseil…",
        "Adoptée à l'unanimité.",
    ]


def test_chinese_full_width_terminators_need_no_space() -> None:
    assert texts("本法修正草案。第一條：本法施行。說明如下！「是否通過？」") == [
        "本法修正草案。",
        "第一條：本法施行。",
        "說明如下！",
        "「是否通過？」",
    ]


def test_blank_lines_end_a_heading_and_offsets_are_exact() -> None:
    text = "ROAD SAFETY\n\n  The motion was moved.  "
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == ["ROAD SAFETY", "The motion was moved."]
    assert [s.index for s in sentences] == [1, 2]
    for s in sentences:
        assert text[s.start : s.end] == s.text


def test_long_table_runs_are_cut_at_line_breaks() -> None:
    rows = "\n".join(
        f"Region {i} revenue 1,{i:03d} 2,{i:03d} 3,{i:03d} 4,{i:03d}" for i in range(20)
    )
    sentences = split_sentences(rows)
    assert len(sentences) > 1
    assert all(len(s.text) <= 450 for s in sentences)


@given(st.text(alphabet=st.sampled_from(list("ab .!?。\n M r1")), max_size=300))
def test_offsets_always_index_the_original_text(text: str) -> None:
    previous_end = 0
    for s in split_sentences(text):
        assert text[s.start : s.end] == s.text
        assert s.text == s.text.strip()
        assert s.text
        assert s.start >= previous_end
        previous_end = s.end


def test_a_bullet_after_white_space_starts_a_new_item() -> None:
    # PDF text joins a list's items on one line; each item is what a reader picks.
    text = (
        "Wholesale • Net sales of $4.2 billion, an increase of 8%; • Operating margin of 11.5%, "
        "up 40 basis points; and \uf0b7 Store count of 312."
    )
    assert texts(text) == [
        "Wholesale",
        "• Net sales of $4.2 billion, an increase of 8%;",
        "• Operating margin of 11.5%, up 40 basis points; and",
        "\uf0b7 Store count of 312.",
    ]


def test_a_bullet_inside_a_word_or_a_dash_is_not_an_item() -> None:
    assert texts("Results•2024 were flat - sales - and costs rose.") == [
        "Results•2024 were flat - sales - and costs rose."
    ]


def test_a_list_items_number_goes_with_its_item() -> None:
    # "5." alone is nothing a reader picks, nor anything the locator can place on the page.
    assert texts("Land Court.\n\n5. Hon. Justice Mary Kasango.\n\n(b) The second item.") == [
        "Land Court.",
        "5. Hon. Justice Mary Kasango.",
        "(b) The second item.",
    ]
    assert texts("It rose by 5. Then it fell.") == ["It rose by 5.", "Then it fell."]
