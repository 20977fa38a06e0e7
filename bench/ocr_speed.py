"""OCR speed: the service's reading of a scanned page against Tesseract run directly on the same
image.

For each page, ``ours`` is ``app.pdfs.ocr.ocr_page`` (render at 300 dpi, Tesseract, and what
else it runs: orientation detection, a second reading of a turned page) and ``floor`` is
``tesseract page.png - -l LANG --dpi 300 tsv`` on the identical 300-dpi grey render, written to
a file beforehand (same language, same page segmentation, the default 3; ``OMP_THREAD_LIMIT=1``
for both, as the service runs it: with OpenMP's threads Tesseract spins several times the CPU
for the same words). Time is CPU: this process's own plus its waited-for children's
(``resource.getrusage(RUSAGE_CHILDREN)``), best of ``--repeat``, ours and the floor interleaved.
Prints per page floor, ours and ratio, then the totals; a page shown sideways is timed apart
(it is read twice, turned, by design).

Pages: the generated sample (``app.pdfs.sample``) and a table page (``gen_cells.py``) as 300-dpi
image-only copies, and from ../shared/pdfs when present: the scan without a text layer
(``ocrmypdf_linn``), a German scan (its invisible OCR layer ignored), and a Chinese page
(``twly_bill``) as an image-only copy. ``--root DIR`` imports ``app`` from another checkout (the
commit before, for the "before" column).

    .venv/bin/python bench/ocr_speed.py [--repeat 3] [--root DIR] [--no-sideways]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "pdfs"
DPI = 300


@dataclass(frozen=True)
class Page:
    name: str
    pdf: Path
    number: int  # 1-based
    languages: str


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def best_cpu(function: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = _cpu()
        function()
        best = min(best, _cpu() - started)
    return best


def _image_copy(src: Path, number: int, out: Path, rotation: int = 0) -> Path:
    """``src``'s page ``number`` alone, as a 300-dpi grey scan (no text layer)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from ocr_images import Variant, scan

    with pymupdf.open(src) as doc, pymupdf.open() as copy:
        page = doc[number - 1]
        page.set_rotation(0)
        image, rect, _ = scan(page, Variant(DPI), random.Random(0))
        new = copy.new_page(width=page.rect.width, height=page.rect.height)
        new.insert_image(rect, stream=image)
        new.set_rotation(rotation)
        copy.save(out, garbage=3, deflate=True)
    return out


def pages(folder: Path) -> tuple[list[Page], Page]:
    """The pages timed, and the sideways one."""
    sys.path.insert(0, str(ROOT / "bench"))
    from gen_cells import make_tables

    from app.pdfs.sample import write_sample_pdf

    sample = write_sample_pdf(folder / "sample.pdf")
    make_tables(folder / "tables.pdf", seed=1, pages=1)
    found = [
        Page("sample p1 (generated)", _image_copy(sample, 1, folder / "sample-scan.pdf"), 1, "eng"),
        Page(
            "table (generated)",
            _image_copy(folder / "tables.pdf", 1, folder / "tables-scan.pdf"),
            1,
            "eng",
        ),
    ]
    if (SHARED / "ocrmypdf_linn_scan-no-text.pdf").is_file():
        found.append(Page("linn scan", SHARED / "ocrmypdf_linn_scan-no-text.pdf", 1, "eng"))
    if (SHARED / "pymupdf_scan-ocr-layer_test_4224_de.pdf").is_file():
        found.append(
            Page("German scan", SHARED / "pymupdf_scan-ocr-layer_test_4224_de.pdf", 1, "deu")
        )
    twly = SHARED / "twly_bill_LCEWA01_080202_00016_zh-hant.pdf"
    if twly.is_file():
        found.append(
            Page("Chinese p2", _image_copy(twly, 2, folder / "twly-scan.pdf"), 1, "chi_tra")
        )
    sideways = Page(
        "sample p1 sideways", _image_copy(sample, 1, folder / "sideways.pdf", rotation=90), 1, "eng"
    )
    return found, sideways


def direct(png: Path, languages: str) -> None:
    """Tesseract on its own, as one would run it on the image."""
    subprocess.run(
        ["tesseract", str(png), "-", "-l", languages, "--dpi", str(DPI), "tsv"],
        check=True,
        capture_output=True,
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
    )


def render(page: Page, out: Path) -> Path:
    """The 300-dpi grey image the service reads (the page as displayed), as a PNG file."""
    zoom = DPI / 72
    with pymupdf.open(page.pdf) as doc:
        pixmap = doc[page.number - 1].get_pixmap(
            matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY
        )
        pixmap.save(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to import app from")
    parser.add_argument("--no-sideways", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    from app.pdfs.ocr import OcrOptions, ocr_page, tesseract_languages

    installed = tesseract_languages()
    if installed is None:
        print("Tesseract is not installed: OCR speed not measured")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        timed, sideways = pages(folder)
        timed = [p for p in timed if set(p.languages.split("+")) <= installed]
        print(
            f"OCR CPU s (own + children), best of {args.repeat}, app from {args.root}; floor: "
            f"tesseract PNG - --dpi {DPI} tsv on the same render"
        )
        totals = [0.0, 0.0]
        rows = [*timed, *([] if args.no_sideways else [sideways])]
        for page in rows:
            png = render(page, folder / "page.png")
            options = OcrOptions(languages=page.languages, dpi=DPI)
            floor = ours = float("inf")
            for _ in range(args.repeat):  # interleaved: the machine's load hits both alike
                floor = min(floor, best_cpu(lambda: direct(png, page.languages), 1))  # noqa: B023
                ours = min(ours, best_cpu(lambda: ocr_page(page.pdf, page.number, options), 1))  # noqa: B023
            if page is not sideways:
                totals[0] += floor
                totals[1] += ours
            print(f"  {page.name:<24} floor {floor:6.2f}  ours {ours:6.2f}  {ours / floor:.2f}x")
        print(
            f"  {'total (upright pages)':<24} floor {totals[0]:6.2f}  ours {totals[1]:6.2f}  "
            f"{totals[1] / totals[0]:.2f}x (goal <= 1.2x)"
        )


if __name__ == "__main__":
    main()
