"""Edited quotes: a short word past a dropped one, and repeated passages elsewhere."""

from __future__ import annotations

import pymupdf
import pytest

from app.alignment import locate as locate_module
from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.alignment.matcher import Match
from app.alignment.text import split_elision
from app.pdfs.extract import build_index

APPEARANCE = [
    "STEVEN E. MERCER, ESQ., Deputy Attorney General, Los",
    "Angeles, Cal.; on behalf of the Petitioner.",
    "The clerk asked what format members preferred for the next annual meeting.",
    "The committee members voted online on it after a long debate.",
]
# Lorem-ipsum-like boilerplate: the quoted passage (second paragraph) shares its opening with
# the first paragraph and its ending with the third.
PARAGRAPHS = [
    "Stet clita kasd gubergren, no sea takimata sanctus est Lorem ipsum dolor sit amet. Nam "
    "liber tempor cum soluta nobis eleifend option congue nihil imperdiet doming id quod mazim "
    "placerat facer possim assum.",
    "Ut wisi enim ad minim veniam, quis nostrud exerci tation ullamcorper suscipit lobortis "
    "nisl ut aliquip ex ea commodo consequat. Stet clita kasd gubergren, no sea takimata "
    "sanctus est Lorem ipsum dolor sit amet. Duis autem vel eum iriure dolor in hendrerit in "
    "vulputate velit esse molestie consequat, vel illum dolore eu feugiat nulla facilisis.",
    "At vero eos et accusam et justo duo dolores et ea rebum. Duis autem vel eum iriure dolor "
    "in hendrerit in vulputate velit esse molestie consequat, vel illum dolore eu feugiat "
    "nulla facilisis at vero eros et accumsan.",
]
EDITED = (
    "gubergren, no sea takimata sanctus est Lorem ipsum dolor nostrud amet. Duis autem vel eum "
    "iriure dolor in hendrerit in vulputate velit esse molestie consequat, vel"
)


@pytest.fixture(scope="module")
def edits_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    page = doc.new_page()
    for number, line in enumerate(APPEARANCE):
        page.insert_text((72, 80 + 16 * number), line, fontsize=11)
    page = doc.new_page()
    for number, paragraph in enumerate(PARAGRAPHS):
        top = 60 + 130 * number
        page.insert_textbox(pymupdf.Rect(72, top, 520, top + 120), paragraph, fontsize=10)
    path = tmp_path_factory.mktemp("edits") / "edits.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def test_short_last_word_after_a_dropped_word(edits_index: DocumentIndex) -> None:
    whole = locate(edits_index, APPEARANCE[0])
    result = locate(edits_index, "STEVEN E. MERCER, ESQ., Deputy Attorney Los")
    assert result.status == "found"
    assert len(result.rects) == 1
    assert result.rects[0].x1 == pytest.approx(whole.rects[0].x1)
    assert result.matched_text == APPEARANCE[0]


def test_short_first_word_before_a_dropped_word(edits_index: DocumentIndex) -> None:
    result = locate(edits_index, "ESQ., Attorney General, Los Angeles, Cal.;")
    assert result.status == "found"
    assert result.matched_text.startswith("ESQ., Deputy Attorney")


def test_dropped_word_sharing_letters_with_its_neighbour(edits_index: DocumentIndex) -> None:
    # "what [format] members": the quote's "at" also ends the dropped "format"; the highlight
    # must still start at "what", not mid-word.
    result = locate(edits_index, "what members preferred for the next annual meeting")
    assert result.status == "found"
    assert result.matched_text == "what format members preferred for the next annual meeting"
    # "voted [online] on it": the quote's "on" also starts the dropped "online"; the highlight
    # must not stop mid-word at "onli".
    tail = locate(edits_index, "The committee members voted on it")
    assert tail.status == "found"
    assert tail.matched_text == "The committee members voted online on it"


def test_repeated_boilerplate_does_not_make_an_edited_quote_ambiguous(
    edits_index: DocumentIndex,
) -> None:
    # The quote could be stitched together from the first and third paragraphs, but the
    # third paragraph's "Duis autem ..." is printed again between them (in the second), so
    # that pairing is not the nearest one and is no candidate (matcher._nearest); and such a
    # stitch would explain no more of the quote than the second paragraph alone anyway.
    scored = locate_module._scored_single(edits_index, split_elision(EDITED)[0], 0, 10**9)
    best = scored[0][0]
    assert all(len(match.segments) == 1 for match, _ in scored)
    stitched = Match(((0, 40), (500, 560)), best.matched, best.quote_len, 40)
    assert locate_module._no_better_explanation(best, stitched)
    result = locate(edits_index, EDITED)
    assert result.status == "found"
    assert result.page == 2
    assert result.matched_text.startswith("gubergren, no sea takimata")
    assert all(200 < rect.y0 < 260 for rect in result.rects)  # the second paragraph


def test_exactly_repeated_passage_stays_ambiguous(edits_index: DocumentIndex) -> None:
    # Printed in two paragraphs: no stitching involved, so no reason to prefer either.
    assert locate(edits_index, "Duis autem vel eum iriure dolor in hendrerit").status == (
        "no_match"
    )
