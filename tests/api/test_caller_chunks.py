"""A chat system's own chunks of a PDF, through the HTTP API (issue 42): each chunk is placed in
the PDF's own text when it is stored, its pages are hints, and its sentences are cut from the
PDF's text of its span, so how the caller's text was cut and marked up no longer decides what is
lit. One case per failure kind measured before: blank lines between a sentence's lines, a
Markdown link and bold run, a running header and page number inside a paragraph crossing a page
break, a 1,000-character window starting mid-sentence, no pages, 0-based pages, a chunk of
another document; and bounded answers to chunks made to cost."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.app import app_client, make_settings
from tests.fixtures.caller_chunks import (
    PARAGRAPHS,
    blank_line_chunk,
    crossing_paragraph,
    markdown_chunk,
    page_of,
    page_text_chunk,
    windows,
    write_minutes_pdf,
)
from tests.fixtures.sentence_cuts import cited, claims

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def sentences_of(paragraph: str) -> list[str]:
    return [s if s.endswith(".") else s + "." for s in paragraph.split(". ")]


async def stored(
    client: httpx.AsyncClient, folder: Path, chunks: list[dict[str, Any]], doc: str = "minutes"
) -> dict[str, Any]:
    data = write_minutes_pdf(folder / "minutes.pdf").read_bytes()
    upload = await client.put(
        f"/v2/documents/{doc}/pdf", content=data, headers={"content-type": "application/pdf"}
    )
    assert upload.status_code in (200, 201), upload.text
    body = {"source_path": upload.json()["source_path"], "chunks": chunks}
    put = await client.put(f"/v2/documents/{doc}", json=body)
    assert put.status_code == 201, put.text
    answer: dict[str, Any] = put.json()
    return answer


def lit_whole(result: dict[str, Any], sentence: str, page: int | None = None) -> bool:
    """The claim is the sentence, and one highlight is the whole sentence, with rectangles
    (starting on ``page``)."""
    whole = [h for h in result["highlights"] if " ".join(h["display_text"].split()) == sentence]
    on_page = all(h["page"] == page for h in whole) if page is not None else True
    return (
        claims(result) == [sentence] and bool(whole) and on_page and all(h["rects"] for h in whole)
    )


async def test_a_sentence_whose_lines_are_separated_by_blank_lines_is_lit_whole(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """pdfminer puts a blank line between a paragraph's printed lines: each line was cut as a
    sentence, and the last three words of a two-line sentence were lit, called supported."""
    chunk = {"id": "m-blank", "text": blank_line_chunk(1), "page_start": 1, "page_end": 1}
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, [chunk])
        assert put["chunks"][0]["placement"] == "placed"
        sentence = sentences_of(PARAGRAPHS[1])[1]  # "Divers found ... waterline." (two lines)
        (result,) = await cited(client, [sentence], {sentence: "m-blank"})
    assert lit_whole(result, sentence, page_of(sentence)), result


async def test_a_sentence_holding_a_markdown_link_is_lit_whole(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """A Markdown rendering's link ("[text](url)") and bold heading run are not the PDF's words:
    no sentence holding a link was ever lit."""
    chunk = {"id": "m-md", "text": markdown_chunk(4)}
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, [chunk])
        assert put["chunks"][0]["placement"] == "placed", put["chunks"]
        sentence = sentences_of(PARAGRAPHS[4])[2]  # "The full responses are published on ..."
        (result,) = await cited(client, [sentence], {sentence: "m-md"})
    assert lit_whole(result, sentence, page_of(sentence)), result


async def test_a_sentence_across_a_page_break_with_the_running_header_inside_is_lit_whole(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """pypdf's page texts joined: the page number and the next page's running header sit inside
    the paragraph crossing the break. The sentence across it is lit whole, on both pages, and
    the chunk's pages are the two pages it is printed on."""
    number = crossing_paragraph()
    chunk = {"id": "m-break", "text": page_text_chunk(number), "page_start": 1, "page_end": 2}
    crossing = next(s for s in sentences_of(PARAGRAPHS[number]) if _crosses(s))
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, [chunk])
        (placed,) = put["chunks"]
        assert placed["placement"] in ("placed", "partial"), placed
        pages = (placed["page_start"], placed["page_end"])
        (result,) = await cited(client, [crossing], {crossing: "m-break"})
    assert pages[1] == pages[0] + 1
    assert lit_whole(result, crossing), result
    (highlight,) = result["highlights"]
    assert {rect["page"] for rect in highlight["rects"]} == set(pages)


def _crosses(sentence: str) -> bool:
    from tests.fixtures.caller_chunks import layout

    first = page_of(sentence)
    tail = " ".join(sentence.split()[-3:])
    return any(tail in line.text and line.page == first + 1 for line in layout())


async def test_a_window_starting_mid_sentence_offers_the_part_it_holds(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """A character splitter's 1,000-character windows start and end anywhere: a whole sentence
    inside one is lit whole, and the sentence it starts in is offered only as far as it holds
    it (the part before the window is another chunk's)."""
    chunks = [{"id": f"m-w{k}", "text": text} for k, text in enumerate(windows())]
    second = " ".join(windows()[1].split())
    head = second.split(". ", 1)[0]  # the window's first, partial sentence
    inside = second.split(". ")[1] + "."
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, chunks)
        assert {c["placement"] for c in put["chunks"]} == {"placed"}, put["chunks"]
        (result,) = await cited(client, [inside], {inside: "m-w1"})
        assert lit_whole(result, inside, page_of(inside)), result
        (tail,) = await cited(client, [head + "."], {head + ".": "m-w1"})
    texts = [" ".join(h["display_text"].split()) for h in tail["highlights"]]
    assert texts
    assert all(len(t) <= len(head) + 2 for t in texts), (head, texts)


async def test_chunks_without_pages_are_found_on_their_pages(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    chunks = [{"id": f"m-n{k}", "text": p} for k, p in enumerate(PARAGRAPHS)]
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, chunks)
        found = [(c["page_start"], c["placement"]) for c in put["chunks"]]
        sentence = sentences_of(PARAGRAPHS[6])[1]
        (result,) = await cited(client, [sentence], {sentence: "m-n6"})
    assert found == [(page_of(p), "placed") for p in PARAGRAPHS]
    assert put["placement"]["page_offset"] is None
    assert lit_whole(result, sentence, page_of(sentence)), result
    assert result["link"].endswith(f"#page={page_of(PARAGRAPHS[6])}")


async def test_zero_based_pages_are_found_and_corrected(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """LangChain's PyPDFLoader numbers pages from 0: accepted (page 0 included), the offset
    found for the document, and every chunk's pages corrected (82% of such citations were
    not_located before, with no hint why)."""
    chunks = [
        {"id": f"m-z{k}", "text": p, "page_start": page_of(p) - 1, "page_end": page_of(p) - 1}
        for k, p in enumerate(PARAGRAPHS)
    ]
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, chunks)
        sentence = sentences_of(PARAGRAPHS[5])[0]
        (result,) = await cited(client, [sentence], {sentence: "m-z5"})
    assert put["placement"]["page_offset"] == -1
    assert all(c["page_start"] >= 1 and c["pages_corrected"] for c in put["chunks"])
    assert lit_whole(result, sentence, page_of(sentence)), result


async def test_a_chunk_of_another_document_is_told_at_put_and_never_supported(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """The Federal Register's address, a sentence of another document: not in this PDF. Its
    claim is the whole sentence (it was cut to "Kansas City, Missouri 64106")."""
    foreign = (
        "Submissions containing CBI should be sent to Doug Rudolph, Environmental Protection "
        "Agency, Region 7, 901 Locust, Room 301, Kansas City, Missouri 64106."
    )
    chunks = [{"id": "m-own", "text": PARAGRAPHS[0]}, {"id": "m-foreign", "text": foreign}]
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, chunks)
        (result,) = await cited(client, [foreign], {foreign: "m-foreign"})
    assert [c["placement"] for c in put["chunks"]] == ["placed", "not_found"]
    assert put["placement"]["not_found"] == 1
    assert claims(result) == [foreign]
    assert (result["status"], result["reason"], result["support"]) == (
        "no_match",
        "chunk_not_in_pdf",
        None,
    )


async def test_chunks_made_to_cost_get_a_bounded_answer(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """Random text, one line repeated a thousand times, and ten thousand chunks in one PUT:
    each placed or refused by bounded work (one gram lookup per character, a capped chain)."""
    rng = random.Random(42)
    noise = "".join(rng.choice("abcdefghij klmnop") for _ in range(5000))
    line = "Divers found that three of the timber piles under the fuel berth had split"
    many = [{"id": f"m-many{k}", "text": PARAGRAPHS[k % len(PARAGRAPHS)]} for k in range(10_000)]
    chunks = [
        {"id": "m-noise", "text": noise},
        {"id": "m-repeat", "text": (line + "\n") * 1000},
        *many,
    ]
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await stored(client, tmp_path, chunks)
    placements = [c["placement"] for c in put["chunks"]]
    assert placements[:2] == ["not_found", "not_found"]
    assert set(placements[2:]) == {"placed"}
    assert put["placement"]["placed"] == 10_000
