"""Blocking step of the batch: open each PDF's text index once and place the chosen sentences.

Runs in a worker thread (rapidfuzz would stall the event loop); an index is built by PyMuPDF in
the bounded PDF workers (pdfs/workers.py), so a hostile PDF costs one worker a job's limits
and its citations the reason ``pdf_too_complex``, and is then refused at once.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass, field

from app.alignment.display import display_text
from app.alignment.geometry import page_boxes, points
from app.alignment.index import DocumentIndex
from app.alignment.locate import ChunkHint, LocateResult, locate
from app.core import metrics
from app.highlights.schemas import Highlight, NormalizedRect, Reason, Rect
from app.pdfs.errors import PdfChanged, PdfMissing, PdfTooComplex, StorageUnavailable
from app.pdfs.index_cache import IndexCache, IndexPending
from app.pdfs.indexing import open_index
from app.pdfs.storage import PdfStorage
from app.selection.sentences import Sentence

log = logging.getLogger(__name__)


def highlight_id(job: LocateJob, sentence: Sentence, rects: list[Rect]) -> str:
    """Deterministic, and a function of everything the highlight shows: the document, its PDF
    content, the chunk's id *and text*, the sentence's offsets and the rectangles. The same
    sentence of the same PDF placed the same way keeps its id; a re-chunked document (new text
    at the same offsets), re-ingested content or a locator that places it differently gets a new
    one, so a stored id never shows what another answer meant."""
    parts = (
        job.document_id,
        job.sha256,
        job.chunk_id,
        hashlib.sha256(job.chunk_text.encode("utf-8", "surrogatepass")).hexdigest(),
        str(sentence.start),
        str(sentence.end),
        ";".join(f"{r.page},{r.x0},{r.y0},{r.x1},{r.y1}" for r in rects),
    )
    key = "\x1f".join(parts)
    return "h_" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class LocateJob:
    chunk_id: str
    document_id: str
    source_path: str
    sha256: str
    pages: tuple[int, int]
    sentences: list[Sentence]
    # The chunk's text (sentence offsets refer to it): places a sentence the PDF prints twice.
    chunk_text: str = ""


@dataclass
class ChunkLocation:
    highlights: list[Highlight] = field(default_factory=list)
    # pdf_unavailable, storage_unavailable, pdf_changed, pdf_too_complex, no_text_layer,
    # text_layer_pending: nothing placed
    error: Reason | None = None
    unlocated: int = 0


def _open(
    storage: PdfStorage, cache: IndexCache, job: LocateJob, wait_s: float | None
) -> DocumentIndex | Reason:
    try:
        return open_index(storage, cache, job.source_path, job.sha256, wait_s)
    except IndexPending:
        log.info("the text index of %s is still being built", job.source_path)
        return Reason.text_layer_pending
    except PdfMissing as exc:
        log.warning("%s", exc.message)
        return Reason.pdf_unavailable
    except StorageUnavailable as exc:
        log.warning("%s", exc.message)
        return Reason.storage_unavailable
    except PdfChanged as exc:
        log.warning("%s", exc.message)
        metrics.PDFS_CHANGED.inc()
        return Reason.pdf_changed
    except PdfTooComplex as exc:
        log.warning("%s", exc.message)
        return Reason.pdf_too_complex
    except Exception:  # a damaged PDF must not fail the batch; the reader still gets the link
        log.exception("cannot index %s", job.source_path)
        return Reason.pdf_unavailable


def _locate_job(index: DocumentIndex, job: LocateJob) -> ChunkLocation:
    pages = index.text_pages(job.pages)
    if pages is None:
        return ChunkLocation(error=Reason.no_text_layer)
    location = ChunkLocation()
    for sentence in job.sentences:
        hint = ChunkHint(job.chunk_text, sentence.start) if job.chunk_text else None
        found = locate(index, sentence.text, pages, hint)
        if found.status != "found" or found.page is None:
            location.unlocated += 1
            continue
        location.highlights.append(_highlight(index, job, sentence, found))
    return location


def _highlight(
    index: DocumentIndex, job: LocateJob, sentence: Sentence, found: LocateResult
) -> Highlight:
    assert found.page is not None
    width, height = index.page_size(found.page)
    rects: list[Rect] = []
    normalized: list[NormalizedRect] = []
    for r in found.rects:
        page_width, page_height = index.page_size(r.page)
        rects.append(Rect.model_validate(asdict(r.rounded())))
        normalized.append(
            NormalizedRect(
                page=r.page,
                x0=_fraction(r.x0, page_width),
                y0=_fraction(r.y0, page_height),
                x1=_fraction(r.x1, page_width),
                y1=_fraction(r.y1, page_height),
            )
        )
    return Highlight(
        highlight_id=highlight_id(job, sentence, rects),
        sentence_id=sentence.index,
        text=sentence.text,
        display_text=display_text(sentence.text),
        start=sentence.start,
        end=sentence.end,
        page=found.page,
        page_width=points(width),
        page_height=points(height),
        score=round(found.score, 1),
        rects=rects,
        boxes=[Rect.model_validate(asdict(b.rounded())) for b in page_boxes(list(found.rects))],
        normalized_rects=normalized,
    )


def _fraction(value: float, size: float) -> float:
    return round(min(1.0, max(0.0, value / size)), 5) if size > 0 else 0.0


def locate_chunks(
    storage: PdfStorage, cache: IndexCache, jobs: list[LocateJob], wait_s: float | None = None
) -> dict[str, ChunkLocation]:
    """Blocking: each job's sentences placed. ``wait_s``: how long a PDF whose index is not
    built yet may hold the batch (OCR of a scan takes minutes): past it, its citations answer
    ``text_layer_pending`` and the build goes on for the next request."""
    out: dict[str, ChunkLocation] = {}
    indexes: dict[tuple[str, str], DocumentIndex | Reason] = {}
    for job in jobs:
        key = (job.source_path, job.sha256)
        if key not in indexes:
            indexes[key] = _open(storage, cache, job, wait_s)
        index = indexes[key]
        out[job.chunk_id] = (
            ChunkLocation(error=index) if isinstance(index, Reason) else _locate_job(index, job)
        )
    return out
