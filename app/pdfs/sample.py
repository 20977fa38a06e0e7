"""A small sample PDF the project generates itself, so the demo and the tests need no download.

It imitates a parliamentary record and carries the usual PDF hazards on purpose: a line-end
hyphenated word, fi/fl ligature glyphs (U+FB01, U+FB02), a sentence that crosses a page break,
and a last page that is an image only (no text layer).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

TITLE = "Sample Assembly - Official Report, Thursday 20 November 2025"

PAGE_1_LINES = [
    "The House met at 2.30 p.m. The Speaker, Mr. J. Otieno, in the Chair.",
    "",
    "WATER SUPPLY (AMENDMENT) BILL",
    "The Minister for Water said that the Bill extends piped water to forty",
    "thousand households in the northern counties by 2027. She told the parlia-",
    "mentary committee that the programme will cost 12.5 billion shillings over",
    "three years. Members asked how the counties would share the maintenance",
    "costs. The Minister replied that each county pays one third of the running",
    "costs and the national government pays the rest.",
    "",
    "Mr. Kamau (Nyeri Town) asked whether the tender had been advertised. The",
    "Minister confirmed that the tender was advertised in March and closed on",
    "30 April. Eleven bids were received and three firms were short-listed after",
]
PAGE_2_LINES = [
    "a technical evaluation by the procurement committee. The House then",
    "adjourned the debate on the Bill to Tuesday next week.",
    "",
    "ROAD SAFETY MOTION",
    "Ms. Wanjiru moved the motion urging the Government to install speed cameras",
    "on the four busiest highways. She said that road deaths rose by 8 per cent",
    "in 2024, to 4,690 people, according to the National Transport Authority.",
]
LIGATURE_PARAGRAPH = (
    "The Committee on Finance noted that the \ufb01nal \ufb01gures for the \ufb01scal year "
    "show a de\ufb01cit of 5.1 per cent, and that cash \ufb02ows to the counties were delayed "
    "by an average of \ufb01fty-two days."
)


def _write_lines(page: pymupdf.Page, lines: list[str], top: float) -> float:
    y = top
    for line in lines:
        if line:
            page.insert_text((72, y), line, fontname="helv", fontsize=11)
        y += 15
    return y


def write_sample_pdf(path: Path) -> Path:
    """Write the sample (3 pages) to ``path`` and return it. Deterministic content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    doc.set_metadata({"title": TITLE, "creationDate": "", "modDate": ""})
    page = doc.new_page(width=595, height=842)  # A4
    page.insert_text((72, 60), TITLE, fontname="hebo", fontsize=12)
    _write_lines(page, PAGE_1_LINES, 90)
    page = doc.new_page(width=595, height=842)
    bottom = _write_lines(page, PAGE_2_LINES, 72)
    # HTML layout embeds a Unicode font, so the ligature code points survive into the text layer.
    page.insert_htmlbox(
        pymupdf.Rect(72, bottom, 523, bottom + 120),
        f"<p style='font-size:11pt'>{LIGATURE_PARAGRAPH}</p>",
    )
    page = doc.new_page(width=595, height=842)
    pixmap = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 200, 100), False)
    pixmap.clear_with(200)
    page.insert_image(pymupdf.Rect(72, 72, 472, 272), pixmap=pixmap)
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return path
