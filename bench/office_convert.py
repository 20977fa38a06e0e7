"""Office files against the PDF path: what LibreOffice's conversion adds per page.

Generates a DOCX of about 15 pages and a PPTX of 15 slides (python-docx, python-pptx), then for
each, ``--repeat`` times (median printed):

- convert: ``OfficeConverter.convert`` alone (a warm template profile; the first conversion of
  a process, which makes the template, is printed on its own);
- ingest office: ``highlight-service ingest`` of the Office file into a fresh database and
  storage (so it is converted, then chunked and indexed);
- ingest pdf: ``ingest`` of the converted PDF alone, into a fresh database and storage.

Per page: the time over the converted PDF's page count. Then the legacy formats against their
counterparts: the DOCX, the PPTX and an XLSX of as many rows saved by LibreOffice as DOC, PPT
and XLS (``soffice --convert-to``), each pair converted by ``OfficeConverter.convert`` in turn,
``--repeat`` times (medians). Needs LibreOffice (soffice).

    .venv/bin/python bench/office_convert.py [--repeat 3] [--pages 15]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings  # noqa: E402
from app.db.migrate import upgrade  # noqa: E402
from app.pdfs.convert import ConvertLimits, OfficeConverter  # noqa: E402
from app.services import ingest_file  # noqa: E402
from tests.fixtures.office import docx_bytes, xlsx_bytes  # noqa: E402

LEGACY = {"docx": "doc", "pptx": "ppt", "xlsx": "xls"}

SENTENCE = (
    "Revenue in the {n}th quarter grew by {p} percent over the year before, driven by ferry "
    "tickets on the Lamu crossing and by freight contracts signed with three new partners."
)


def _docx(pages: int) -> bytes:
    # About 12 paragraphs of this length fill a Letter page at 11 pt.
    return docx_bytes([SENTENCE.format(n=i, p=i % 17) for i in range(12 * pages)])


def _pptx(slides: int) -> bytes:
    import io

    import pptx
    from pptx.util import Inches, Pt

    deck = pptx.Presentation()
    for number in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        frame = slide.shapes.add_textbox(Inches(0.5), Inches(0.5), Inches(9), Inches(6)).text_frame
        frame.word_wrap = True
        for line in range(4):
            paragraph = frame.paragraphs[0] if line == 0 else frame.add_paragraph()
            paragraph.text = SENTENCE.format(n=number, p=line)
            paragraph.font.size = Pt(18)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _xlsx(pages: int) -> bytes:
    return xlsx_bytes([SENTENCE.format(n=i, p=i % 17) for i in range(12 * pages)])


def _legacy(source: Path, kind: str) -> Path:
    """``source`` saved by LibreOffice as the legacy format ``kind`` (beside it)."""
    profile = source.parent / "legacy-profile"
    subprocess.run(
        ["soffice", "--headless", "--norestore", f"-env:UserInstallation={profile.as_uri()}",
         "--convert-to", kind, "--outdir", str(source.parent), str(source)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return source.with_suffix(f".{kind}")


def _legacy_table(converter: OfficeConverter, root: Path, pages: int, repeat: int) -> None:
    import pymupdf

    print(f"\n{'pair':<11} {'pages':>5} {'modern s':>9} {'legacy s':>9} {'legacy/modern':>14}")
    makers = {"docx": _docx, "pptx": _pptx, "xlsx": _xlsx}
    for modern, maker in makers.items():
        source = root / f"pair.{modern}"
        source.write_bytes(maker(pages))
        old = _legacy(source, LEGACY[modern])
        files = {modern: source.read_bytes(), LEGACY[modern]: old.read_bytes()}
        pdf = converter.convert(files[modern], modern, source.name)
        count = pymupdf.open(stream=pdf, filetype="pdf").page_count
        times: dict[str, list[float]] = {kind: [] for kind in files}
        for _ in range(repeat):  # in turn, so that a busy moment weighs on both alike
            for kind, data in files.items():
                times[kind].append(_timed(lambda d=data, k=kind: converter.convert(d, k, "b")))  # type: ignore[misc]
        a, b = (statistics.median(times[kind]) for kind in files)
        print(f"{modern}/{LEGACY[modern]:<4} {count:>5} {a:>9.2f} {b:>9.2f} {b / a:>13.2f}x")


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _ingest(path: Path, template_db: Path) -> float:
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        shutil.copyfile(template_db, root / "db.sqlite")
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=f"sqlite+aiosqlite:///{root / 'db.sqlite'}",
            pdf_root=root / "pdfs",
            index_cache_dir=None,
        )
        return _timed(lambda: asyncio.run(ingest_file(settings, path, "bench", None)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pages", type=int, default=15)
    args = parser.parse_args()
    if shutil.which("soffice") is None:
        print("LibreOffice (soffice) is not installed: nothing to measure")
        return 1
    import pymupdf

    converter = OfficeConverter(ConvertLimits())
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        template_db = root / "template.sqlite"
        upgrade(f"sqlite+aiosqlite:///{template_db}")
        first = _timed(lambda: converter.convert(_docx(1), "docx", "warm-up.docx"))
        print(f"first conversion of the process (makes the template profile): {first:.2f} s")
        print(
            f"{'file':<6} {'pages':>5} {'convert s':>10} {'/page':>7} {'ingest office s':>16} "
            f"{'/page':>7} {'ingest pdf s':>13} {'/page':>7} {'office/pdf':>10}"
        )
        for kind, data in (("docx", _docx(args.pages)), ("pptx", _pptx(args.pages))):
            source = root / f"bench.{kind}"
            source.write_bytes(data)
            pdf = converter.convert(data, kind, source.name)
            pdf_path = root / f"bench-{kind}.pdf"
            pdf_path.write_bytes(pdf)
            pages = pymupdf.open(pdf_path).page_count
            convert = statistics.median(
                _timed(lambda d=data, k=kind: converter.convert(d, k, "bench"))  # type: ignore[misc]
                for _ in range(args.repeat)
            )
            office = statistics.median(_ingest(source, template_db) for _ in range(args.repeat))
            alone = statistics.median(_ingest(pdf_path, template_db) for _ in range(args.repeat))
            print(
                f"{kind:<6} {pages:>5} {convert:>10.2f} {convert / pages:>7.3f} {office:>16.2f} "
                f"{office / pages:>7.3f} {alone:>13.2f} {alone / pages:>7.3f} "
                f"{office / alone:>9.1f}x"
            )
        _legacy_table(converter, root, args.pages, args.repeat)
    converter.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
