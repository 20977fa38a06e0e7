"""`highlight-service locate PDF`: JSON lines in (quotes), JSON lines out (rectangles)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from app.alignment.index import DocumentIndex
from app.alignment.locate import LocateResult, locate
from app.pdfs.extract import build_index


class _BadRequest(ValueError):
    pass


def _parse_pages(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise _BadRequest('"pages" must be [first, last] (1-based integers) or null')
    return value[0], value[1]


def _parse(line: str) -> tuple[Any, str, tuple[int, int] | None]:
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _BadRequest(f"invalid JSON: {exc.msg}") from exc
    if not isinstance(request, dict):
        raise _BadRequest("each line must be a JSON object")
    quote = request.get("quote")
    if not isinstance(quote, str):
        raise _BadRequest('"quote" must be a string')
    return request.get("id"), quote, _parse_pages(request.get("pages"))


def _within(pages: tuple[int, int] | None, page_count: int) -> tuple[int, int] | None:
    """``pages`` when they name pages of the PDF: a range past its end (or before page 1) is an
    error naming the page count, not a quote that was not found."""
    if pages is None:
        return None
    first, last = sorted(pages)
    if first < 1:
        raise _BadRequest(f'"pages" {list(pages)} starts before page 1 (pages are 1-based)')
    if last > page_count:
        plural = "page" if page_count == 1 else "pages"
        raise _BadRequest(f"pages {list(pages)} is past the end: the PDF has {page_count} {plural}")
    return pages


def _render(request_id: Any, result: LocateResult) -> dict[str, Any]:
    return {
        "id": request_id,
        "status": result.status,
        "score": result.score,
        "matched_text": result.matched_text,
        "rects": [asdict(r.rounded()) for r in result.rects],
    }


def _error(request_id: Any, message: str) -> dict[str, Any]:
    return {"id": request_id, "status": "error", "message": message}


def _request_id(line: str) -> Any:
    """Best-effort id of a rejected line, so the caller can still pair the error with it."""
    try:
        request = json.loads(line)
    except json.JSONDecodeError:
        return None
    return request.get("id") if isinstance(request, dict) else None


def run(
    pdf_path: Path,
    stdin: TextIO,
    stdout: TextIO,
    build: Callable[[Path], DocumentIndex] = build_index,
) -> int:
    """``build`` makes the index: the command line passes one that runs in the bounded PDF
    workers (scanned pages read by OCR there, as the service reads them), so a hostile file
    ends in one error line."""
    try:
        index = build(pdf_path)
    except Exception as exc:  # PyMuPDF raises several types for missing/corrupt files
        sys.stderr.write(f"cannot read PDF {pdf_path}: {exc}\n")
        return 1
    for line in stdin:
        if not line.strip():
            continue
        try:
            request_id, quote, pages = _parse(line)
            pages = _within(pages, index.page_count)
            output = _render(request_id, locate(index, quote, pages))
        except _BadRequest as exc:
            output = _error(_request_id(line), str(exc))
        stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
        stdout.flush()
    return 0
