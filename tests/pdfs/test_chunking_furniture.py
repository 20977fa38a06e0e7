"""Chunk text without page furniture, and a line's words in order (issue 33, "clean chunk text").

Generated PDFs draw their running headers, footers and page numbers before the body, as the
Traditional Chinese bill of the shared corpus does, so in drawing order they sit between a
page's last sentence and the next page's first.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from app.pdfs.chunking import chunk_pdf

WIDTH, HEIGHT = 595.0, 842.0
HEADER = "Annual Report of the Harbour Board 2024"
CROSSING = (
    "The harbour master reported that the northern breakwater, damaged in the winter storms, "
    "was repaired by the end of May at a cost well below the estimate."
)


def _prose(n: int) -> str:
    return (
        f"Paragraph {n} records the tonnage landed at the quays, the berths let to the "
        f"fishing fleet and the dues collected from visiting vessels in the quarter {n}."
    )


def _lines(text: str, size: float, width: float = 450.0) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if line and pymupdf.get_text_length(trial, fontsize=size) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line]


def _report(path: Path) -> None:
    """Four pages, a running header and "Page N of 4" on each, drawn first; page 1 opens with
    the title (the header's text, set large); a sentence crosses the break from page 1 to 2;
    page 3 has a heading of its own in the top band."""
    doc = pymupdf.open()
    for _ in range(4):
        doc.new_page(width=WIDTH, height=HEIGHT)
    pages = [doc[number] for number in range(4)]  # new_page orphans the page before
    for number, page in enumerate(pages, start=1):
        if number > 1:
            page.insert_text((72, 50), HEADER, fontsize=9)
        page.insert_text((270, 815), f"Page {number} of 4", fontsize=9)
    pages[0].insert_text((72, 60), HEADER, fontsize=18)
    pages[2].insert_text((72, 80), "Appendix on tolls", fontsize=12)
    at, y = 0, 130.0
    placed = False
    for n in range(1, 30):
        paragraph = _prose(n)
        if not placed and y + 15 * len(_lines(paragraph, 11)) > 740:
            paragraph, placed = CROSSING, True  # starts on page 1 and runs over to page 2
        for line in _lines(paragraph, 11):
            if y > 740:
                at, y = at + 1, 130.0
            pages[at].insert_text((72, y), line, fontsize=11)
            y += 15
        y += 10
    doc.save(path)


def test_furniture_is_left_out_and_a_sentence_reads_on_across_the_page_break(
    tmp_path: Path,
) -> None:
    _report(tmp_path / "report.pdf")
    chunks, pages = chunk_pdf(tmp_path / "report.pdf", target_chars=600, max_chars=900)
    text = "\n".join(chunk.text for chunk in chunks)
    assert pages == 4
    assert not any(f"Page {n} of 4" in text for n in range(1, 5))
    # The first page's title stays (once); the headers repeating it do not.
    assert text.count(HEADER) == 1
    assert chunks[0].text.startswith(HEADER)
    # A heading printed once in the top band is the page's own text.
    assert "Appendix on tolls" in text
    (crossing,) = [chunk for chunk in chunks if CROSSING in chunk.text]
    assert (crossing.page_start, crossing.page_end) == (1, 2)


BILL_HEADER = "立法院第八屆第二會期第二次會議議案關係文書"
CLAUSE = "勞工本於勞動契約所生之工資資遣費退休金等債權有優先受清償之權利"
BILL_CROSSING = (
    "三、而為保障受僱者之債權，國內已有雇傭契約之債權優先其他債權之立法前例，依據海商法"
    "第二十四條之規定，船長、海員及其他在船上服務之人員，本於僱傭契約所生之債權有優先受償之權。"
)


def _cjk(page: pymupdf.Page, point: tuple[float, float], text: str, size: float = 14) -> None:
    page.insert_text(point, text, fontsize=size, fontname="china-t")


def _bill(path: Path) -> None:
    """Four pages of Traditional Chinese set 30 characters a line, a running header and a
    footer "委 13N" on each, drawn first, and a stamp drawn last in page 1's top band. Page 1
    ends within BILL_CROSSING, on a full line; page 2 goes on with it."""
    per_line, per_page = 30, 28
    filler = "".join(f"{n}、{CLAUSE}。" for n in range(1, 40))[: per_line * (per_page - 2)]
    text = filler + BILL_CROSSING
    lines = [text[i : i + per_line] for i in range(0, len(text), per_line)]
    fourth = "四、" + CLAUSE + "，以保障勞工基本生存權。"
    lines += [fourth[i : i + per_line] for i in range(0, len(fourth), per_line)]
    doc = pymupdf.open()
    for _ in range(4):
        doc.new_page(width=WIDTH, height=HEIGHT)
    pages = [doc[number] for number in range(4)]  # new_page orphans the page before
    for number, page in enumerate(pages, start=1):
        _cjk(page, (187, 80), BILL_HEADER, 11)
        _cjk(page, (282, 798), f"委 {132 + number}", 11)
    for at, line in enumerate(lines):
        number, row = divmod(at, per_page)
        _cjk(pages[number], (80, 120 + 22 * row), line)
    _cjk(pages[0], (80, 60), "更正本")
    doc.save(path)


def test_a_cjk_sentence_reads_on_across_the_page_break_without_the_furniture(
    tmp_path: Path,
) -> None:
    _bill(tmp_path / "bill.pdf")
    chunks, _ = chunk_pdf(tmp_path / "bill.pdf")
    text = "\n".join(chunk.text for chunk in chunks)
    assert BILL_HEADER not in text
    assert "委" not in text
    assert "更正本" in text  # printed once: the page's own
    (crossing,) = [chunk for chunk in chunks if BILL_CROSSING in chunk.text]
    assert (crossing.page_start, crossing.page_end) == (1, 2)
    # The paragraph that starts on page 2 is a paragraph of its own still.
    assert "。\n\n四、" in crossing.text


def _run_in_headings(path: Path) -> None:
    """A paper's front matter: a bold run-in heading and its text on one printed line, drawn as
    two lines (another font), the text wrapping under the heading; once to a short last line,
    once to one as wide as the column."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    rows = [
        ("General Terms", "Design, Experimentation, Measurement, Perfor-", "mance."),
        (
            "Categories and Subject Descriptors",
            "D.3.4 [Programming Lan-",
            "guages]: Processors - Incremental compilers, code generation.",
        ),
    ]
    y = 100.0
    for heading, text, wrapped in rows:
        page.insert_text((54, y), heading, fontsize=9, fontname="hebo")
        after = 54 + pymupdf.get_text_length(heading, fontname="hebo", fontsize=9) + 9
        page.insert_text((after, y), text, fontsize=9, fontname="helv")
        page.insert_text((54, y + 10), wrapped, fontsize=9, fontname="helv")
        y += 26
    doc.save(path)


def test_a_run_in_heading_and_its_text_read_in_order(tmp_path: Path) -> None:
    _run_in_headings(tmp_path / "paper.pdf")
    (chunk,) = chunk_pdf(tmp_path / "paper.pdf")[0]
    text = " ".join(chunk.text.split())
    assert "General Terms Design, Experimentation, Measurement, Perfor- mance." in text
    assert "Categories and Subject Descriptors D.3.4 [Programming Lan- guages]: Processors" in text


def test_a_stamp_up_the_side_margin_of_every_page_is_left_out(tmp_path: Path) -> None:
    """The Federal Register prints "jbell on DSKJLSW7X2PROD with PROPOSALS" up the margin of
    each page; PyMuPDF reads it between two lines of a sentence."""
    stamp = "jbell on DSKJLSW7X2PROD with PROPOSALS"
    sentence = (
        "The actions required by this proposed directive may be done by inserting a copy of "
        "figures 1 through 9 into the existing flight manual of each affected airplane."
    )
    doc = pymupdf.open()
    for _ in range(3):
        doc.new_page(width=612, height=792)
    for page in (doc[number] for number in range(3)):
        first, *rest = _lines(sentence, 10, 400)
        page.insert_text((72, 100), first, fontsize=10)
        page.insert_text((20, 700), stamp, fontsize=8, rotate=90)  # drawn mid-sentence
        for at, line in enumerate(rest, start=1):
            page.insert_text((72, 100 + 12 * at), line, fontsize=10)
    doc.save(tmp_path / "register.pdf")
    chunks, _ = chunk_pdf(tmp_path / "register.pdf")
    text = "\n".join(chunk.text for chunk in chunks)
    assert "DSKJLSW7X2PROD" not in text
    assert text.count(sentence) == 3


def test_statement_heads_under_the_running_header_stay(tmp_path: Path) -> None:
    """A 10-K prints each statement's heads near the top of its page, under the running header:
    they recur in the top band of several pages too, but are the table's column heads (its years
    are no page numbers). Only the outermost block, clear of the rest, is furniture."""
    doc = pymupdf.open()
    for _ in range(4):
        doc.new_page(width=612, height=792)
    for number in range(4):
        page = doc[number]
        page.insert_text((54, 30), "Table of Contents", fontsize=9)
        heads = ["ACME CORP AND SUBSIDIARIES", "(In millions)", "For the Years Ended December 31,"]
        for at, head in enumerate(heads):
            page.insert_text((230, 52 + 11 * at), head, fontsize=9)
        page.insert_text((400, 85), "2023", fontsize=9)
        page.insert_text((460, 85), "2022", fontsize=9)
        for row in range(20):
            y = 100 + 11 * row
            page.insert_text((54, y), f"Line item {number}-{row} of the statement", fontsize=9)
            page.insert_text((400, y), f"{1000 + 37 * row:,}", fontsize=9)
            page.insert_text((460, y), f"{900 + 41 * row:,}", fontsize=9)
        page.insert_text((300, 770), f"F-{number + 1}", fontsize=9)
    doc.save(tmp_path / "statements.pdf")
    chunks, _ = chunk_pdf(tmp_path / "statements.pdf", target_chars=400, max_chars=800)
    text = "\n".join(chunk.text for chunk in chunks)
    assert "Table of Contents" not in text
    assert not any(f"F-{n}" in text for n in range(1, 5))
    assert text.count("For the Years Ended December 31,") == 4
    assert text.count("(In millions)") == 4
    assert text.count("2023 2022") == 4
