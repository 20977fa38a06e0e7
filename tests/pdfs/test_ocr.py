"""Scanned pages read by Tesseract into the same index the locator uses.

The image-only pages are rendered from the project's own generated PDFs, so the original's text
layer is the ground truth: a sentence found on the scan must land where the text-layer index
places it on the original, in the displayed frame (rotation, crop box). Tests that run Tesseract
skip, saying so, where it is not installed; CI installs it (.ci/run).
"""

from __future__ import annotations

import shutil
from array import array
from pathlib import Path

import pymupdf
import pytest

from app.alignment.geometry import LineRect
from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.pdfs import ocr as ocr_module
from app.pdfs.extract import build_index
from app.pdfs.index_codec import decode_index, encode_index
from app.pdfs.ocr import (
    OcrLine,
    OcrOptions,
    OcrPage,
    _lines,
    ocr_document,
    pages_to_ocr,
    reads_upright,
)
from app.pdfs.sample import write_sample_pdf
from tests.fixtures.pdfs import (
    ROTATED_SENTENCES,
    write_image_only_copy,
    write_rotated_pdf,
    write_scan_pdf,
)

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-osd)",
)

SAMPLE_SENTENCES = [
    "The Minister for Water said that the Bill extends piped water to forty thousand "
    "households in the northern counties by 2027.",
    "Members asked how the counties would share the maintenance costs.",
    "Eleven bids were received and three firms were short-listed after a technical evaluation "
    "by the procurement committee.",
    "She said that road deaths rose by 8 per cent in 2024, to 4,690 people, according to the "
    "National Transport Authority.",
]


def _close(a: tuple[LineRect, ...], b: tuple[LineRect, ...], tolerance: float = 6.0) -> bool:
    """Same lines on the same page, each edge within ``tolerance`` points (OCR boxes hug the
    glyphs; a text layer's boxes span the font's ascent and descent)."""
    if len(a) != len(b):
        return False
    return all(
        x.page == y.page
        and max(abs(x.x0 - y.x0), abs(x.y0 - y.y0), abs(x.x1 - y.x1), abs(x.y1 - y.y1)) <= tolerance
        for x, y in zip(a, b, strict=True)
    )


@pytest.fixture(scope="module")
def sample_scan(tmp_path_factory: pytest.TempPathFactory) -> tuple[DocumentIndex, DocumentIndex]:
    folder = tmp_path_factory.mktemp("scan")
    original = write_sample_pdf(folder / "sample.pdf")
    scan = write_image_only_copy(original, folder / "sample-scan.pdf", dpi=200)
    if shutil.which("tesseract") is None:
        pytest.skip("Tesseract is not installed (apt-get install tesseract-ocr)")
    return build_index(original), build_index(scan, ocr_pages=ocr_document(scan, OcrOptions()))


def test_image_only_pages_are_found_and_nothing_else(tmp_path: Path) -> None:
    original = write_sample_pdf(tmp_path / "sample.pdf")
    scan = write_image_only_copy(original, tmp_path / "scan.pdf")
    assert pages_to_ocr(original, "auto") == []  # its page 3 is a small blank picture
    assert pages_to_ocr(scan, "auto") == [1, 2, 3]
    assert pages_to_ocr(write_scan_pdf(tmp_path / "blank.pdf"), "auto") == []
    assert pages_to_ocr(original, "force") == [1, 2, 3]
    assert pages_to_ocr(scan, "off") == []


def test_without_ocr_a_scan_has_no_text(tmp_path: Path) -> None:
    scan = write_image_only_copy(write_sample_pdf(tmp_path / "s.pdf"), tmp_path / "scan.pdf")
    assert locate(build_index(scan), SAMPLE_SENTENCES[0]).status == "no_text_layer"


@pytest.mark.slow  # runs Tesseract
@needs_tesseract
@pytest.mark.parametrize("sentence", SAMPLE_SENTENCES)
def test_a_sentence_on_a_scan_lands_where_the_text_layer_puts_it(
    sample_scan: tuple[DocumentIndex, DocumentIndex], sentence: str
) -> None:
    text_layer, scanned = sample_scan
    expected, found = locate(text_layer, sentence), locate(scanned, sentence)
    assert expected.status == "found"
    assert found.status == "found", sentence
    assert _close(found.rects, expected.rects), (found.rects, expected.rects)
    assert found.score >= 90


@pytest.mark.slow  # runs Tesseract
@needs_tesseract
def test_a_scan_across_a_page_break_keeps_both_pages(
    sample_scan: tuple[DocumentIndex, DocumentIndex],
) -> None:
    sentence = SAMPLE_SENTENCES[2]
    assert {r.page for r in locate(sample_scan[1], sentence).rects} == {1, 2}


@pytest.mark.slow  # runs Tesseract
@needs_tesseract
def test_rotated_and_cropped_scans_place_in_the_displayed_frame(tmp_path: Path) -> None:
    """One page per /Rotate, crop box offset from the media box: Tesseract's orientation
    detection turns each upright, and the rectangles come back where a viewer shows the words."""
    original = write_rotated_pdf(tmp_path / "rotated.pdf")
    scan = write_image_only_copy(original, tmp_path / "rotated-scan.pdf", dpi=200)
    pages = ocr_document(scan, OcrOptions())
    assert {number: page.rotation for number, page in pages.items()} == {
        1: 0,
        2: 90,
        3: 180,
        4: 270,
    }
    text_layer, scanned = build_index(original), build_index(scan, ocr_pages=pages)
    for sentence in ROTATED_SENTENCES.values():
        expected, found = locate(text_layer, sentence), locate(scanned, sentence)
        assert found.status == "found", sentence
        assert _close(found.rects, expected.rects), (sentence, found.rects, expected.rects)


def _one_line_page(confidence: int) -> dict[int, OcrPage]:
    text = "The harbour dredging ends in June after the survey."
    boxes = tuple(v for k in range(len(text)) for v in (72.0 + 6 * k, 100.0, 78.0 + 6 * k, 112.0))
    line = OcrLine(text, boxes, tuple([confidence] * len(text)))
    return {1: OcrPage(1, (line,), 0.1)}


def test_the_score_drops_with_low_ocr_confidence(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page(width=595, height=842)
    doc.save(tmp_path / "blank.pdf")
    blank = tmp_path / "blank.pdf"
    sure, fair, doubtful = (build_index(blank, ocr_pages=_one_line_page(c)) for c in (96, 81, 45))
    quote = "The harbour dredging ends in June after the survey."
    assert locate(sure, quote).score == 100.0
    assert locate(fair, quote).score == pytest.approx(90.0, abs=0.5)
    # The score says how sure the placement is; the words are still where OCR read them.
    found = locate(doubtful, quote)
    assert found.status == "found"
    assert found.score == pytest.approx(50.0, abs=0.5)


def test_ocr_text_and_confidence_survive_the_index_blob(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page(width=595, height=842)
    doc.new_page(width=595, height=842).insert_text((72, 72), "A text page.", fontname="helv")
    doc.save(tmp_path / "two.pdf")
    built = build_index(tmp_path / "two.pdf", ocr_pages=_one_line_page(45))
    decoded = decode_index(encode_index(built))
    assert decoded.ocr_pages == (1,)
    assert decoded.confidence == built.confidence
    assert len(decoded.confidence) == len(decoded.chars)
    assert decoded.chars == built.chars
    # Only the scanned page's characters carry a confidence below certainty.
    second_page = decoded.char_page_start[1]
    assert set(decoded.confidence[second_page:]) == {100}
    assert decode_index(encode_index(build_index(tmp_path / "two.pdf"))).confidence == array("i")


def test_cjk_words_join_without_spaces_and_latin_words_with_one() -> None:
    columns = "level page_num block_num par_num line_num word_num left top width height conf text"
    header = "\t".join(columns.split())
    rows = [
        "5\t1\t1\t1\t1\t1\t0\t0\t40\t20\t91\t立法院",
        "5\t1\t1\t1\t1\t2\t42\t0\t40\t20\t88\t議案",
        "5\t1\t1\t1\t2\t1\t0\t30\t50\t20\t95\tBill",
        "5\t1\t1\t1\t2\t2\t60\t30\t30\t20\t60\t80",
    ]
    first, second = _lines("\n".join([header, *rows]), 0.5, 0.5)
    assert first.text == "立法院議案"
    assert second.text == "Bill 80"
    assert second.confidence == (95, 95, 95, 95, 60, 60, 60)
    # The space spans the gap between the words; each character its share of its word.
    assert second.boxes[16:20] == (25.0, 15.0, 30.0, 25.0)
    assert second.boxes[0:4] == (0.0, 15.0, 6.25, 25.0)
    # An ideograph takes twice a digit's share of a word's width.
    (mixed,) = _lines("\n".join([header, "5\t1\t1\t1\t1\t1\t100\t0\t50\t20\t90\t第8屆"]), 1, 1)
    assert [mixed.boxes[4 * k + 2] - mixed.boxes[4 * k] for k in range(3)] == [20.0, 10.0, 20.0]


Word = tuple[str, int, int, int, int, int]  # text, left, top, width, height, confidence


def _tsv(lines: list[list[Word]]) -> str:
    """Tesseract's TSV of ``lines`` of words (level 5 rows only, as ``_lines`` reads)."""
    columns = "level page_num block_num par_num line_num word_num left top width height conf text"
    rows = ["\t".join(columns.split())]
    for line_number, words in enumerate(lines, 1):
        for number, (text, left, top, width, height, confidence) in enumerate(words, 1):
            cells = (5, 1, 1, 1, line_number, number, left, top, width, height, confidence, text)
            rows.append("\t".join(map(str, cells)))
    return "\n".join(rows)


def _read(words: list[str], confidence: int, across: bool = True) -> list[list[Word]]:
    """``words`` in four lines as Tesseract reads upright (or upside-down) text: across the
    page; or, ``across`` False, as it reads text turned a quarter: vertical lines."""
    lines: list[list[Word]] = [[] for _ in range(4)]
    for k, word in enumerate(words):
        line, length = lines[k % 4], 20 * len(word)
        along = sum(max(w[3], w[4]) + 10 for w in line)
        if across:
            line.append((word, along, 40 * (k % 4), length, 30, confidence))
        else:
            line.append((word, 40 * (k % 4), along, 30, length, confidence))
    return lines


WORDS = (
    "The ferry service resumes on Monday after the harbour works end in the spring, and the "
    "new timetable carries every crossing a quarter earlier"
).split()


def test_a_first_reading_is_upright_with_enough_sure_text_in_lines_across_the_page() -> None:
    assert reads_upright(_tsv(_read(WORDS, 93)))
    assert reads_upright(_tsv(_read(WORDS, 60)))  # a degraded scan, read less surely
    # Upside down, Tesseract still finds words, but it is unsure of them.
    assert not reads_upright(_tsv(_read(WORDS, 27)))
    # A quarter turn one way: vertical lines (the words themselves are read with confidence).
    assert not reads_upright(_tsv(_read(WORDS, 93, across=False)))
    # Too little text to tell: orientation detection decides, as it did for every page.
    assert not reads_upright(_tsv(_read(WORDS[:4], 93)))
    assert not reads_upright(_tsv([]))
    # Lines of one or two characters (a list's numbers) may stand taller than wide upright.
    numbers = [[(str(k), 0, 200 + 40 * k, 8, 30, 95)] for k in range(10)]
    assert reads_upright(_tsv([*_read(WORDS, 93), *numbers]))
    # ... but lines only of those say nothing of the text's direction.
    assert not reads_upright(_tsv(numbers * 10))


def test_characters_that_read_alike_upside_down_do_not_count_as_upright() -> None:
    # A table of 0, 1, 7 and 8 turned over, as Tesseract read it (review of issue 31): rows of
    # "L", "0" and "8", surely read, across the page; and capitals that turn into themselves.
    rows = ["LOLS", "/800", "8010", "0100", "0810", "L001", "8L80"] * 30
    assert not reads_upright(_tsv(_read(rows, 76)))
    assert not reads_upright(_tsv(_read("SOS NOON OIHO 1808 10 SWIM MOW".split() * 8, 60)))
    # The same number of lines of ordinary words is upright.
    assert reads_upright(_tsv(_read(WORDS * 2, 76)))


@pytest.mark.slow  # runs Tesseract
@needs_tesseract
def test_orientation_detection_runs_only_for_pages_not_read_upright(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's scan read upright asks no orientation detection for its pages of text (its
    third page, a blank picture, is asked, as every page was); the same scan shown sideways or
    upside down asks it on every page, and is read upright with the turn kept."""
    original = write_sample_pdf(tmp_path / "sample.pdf")
    scan = write_image_only_copy(original, tmp_path / "scan.pdf", dpi=200)
    asked: list[int] = []
    real = ocr_module._upright_turn

    def counting(image: bytes, options: OcrOptions) -> int:
        turn = real(image, options)
        asked.append(turn)
        return turn

    monkeypatch.setattr(ocr_module, "_upright_turn", counting)
    upright = ocr_document(scan, OcrOptions())
    with_text = [number for number, page in upright.items() if page.lines]
    assert with_text == [1, 2]
    assert asked == [0] * (len(upright) - len(with_text))
    assert {page.rotation for page in upright.values()} == {0}
    for rotation in (90, 180, 270):
        with pymupdf.open(scan) as doc:
            for page in doc:
                page.set_rotation(rotation)
            turned = doc.tobytes()
        asked.clear()
        pages = ocr_document(turned, OcrOptions())
        assert len(asked) == len(upright)
        for number in with_text:
            assert pages[number].rotation == rotation
            assert [line.text for line in pages[number].lines] == [
                line.text for line in upright[number].lines
            ], (rotation, number)
