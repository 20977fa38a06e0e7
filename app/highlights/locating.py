"""Blocking step of the batch: open each PDF's text index once and place the chosen sentences.

Runs in a worker thread (rapidfuzz would stall the event loop); an index is built by PyMuPDF in
the bounded PDF workers (pdfs/workers.py), so a hostile PDF costs one worker a job's limits
and its citations the reason ``pdf_too_complex``, and is then refused at once. An index still
being built when the batch's wait is over gives ``index_pending`` (its text layer being read) or
``text_layer_pending`` (its scanned pages being read by OCR), with how far the build is.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import asdict, dataclass, field, replace

from app.alignment.display import display_text
from app.alignment.geometry import page_boxes, points
from app.alignment.index import DocumentIndex
from app.alignment.locate import ChunkHint, LocateResult, locate
from app.core import metrics
from app.highlights.dictionary import ENGLISH_WORDS
from app.highlights.results import pending_message
from app.highlights.schemas import Highlight, NormalizedRect, Reason, Rect
from app.pdfs.errors import (
    PdfChanged,
    PdfMissing,
    PdfTooComplex,
    PdfWorkStalled,
    StorageUnavailable,
)
from app.pdfs.index_cache import IndexCache, IndexPending
from app.pdfs.indexing import IndexBuilding, IndexWait, Pending, open_index
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
    # index_pending,
    # text_layer_pending: nothing placed
    error: Reason | None = None
    unlocated: int = 0
    # Says more than the error's standard message (how far a pending build is).
    note: str | None = None


def _open(
    storage: PdfStorage, cache: IndexCache, job: LocateJob, wait: IndexWait | None
) -> DocumentIndex | ChunkLocation:
    try:
        return open_index(storage, cache, job.source_path, job.sha256, wait)
    except IndexPending as exc:
        pending = exc.pending if isinstance(exc, IndexBuilding) else Pending()
        log.info("the text index of %s is still being built (%s)", job.source_path, pending)
        return _pending(pending, stalled=False)
    except PdfWorkStalled as exc:
        # The clock stopped the build on a busy machine: not the PDF's fault, and not
        # remembered; the next request builds it again.
        log.warning("%s", exc.message)
        return _pending(Pending(), stalled=True)
    except PdfMissing as exc:
        log.warning("%s", exc.message)
        return ChunkLocation(error=Reason.pdf_unavailable)
    except StorageUnavailable as exc:
        log.warning("%s", exc.message)
        return ChunkLocation(error=Reason.storage_unavailable)
    except PdfChanged as exc:
        log.warning("%s", exc.message)
        metrics.PDFS_CHANGED.inc()
        return ChunkLocation(error=Reason.pdf_changed)
    except PdfTooComplex as exc:
        log.warning("%s", exc.message)
        return ChunkLocation(error=Reason.pdf_too_complex)
    except Exception:  # a damaged PDF must not fail the batch; the reader still gets the link
        log.exception("cannot index %s", job.source_path)
        return ChunkLocation(error=Reason.pdf_unavailable)


def _pending(pending: Pending, stalled: bool) -> ChunkLocation:
    reason = Reason.text_layer_pending if pending.stage == "ocr" else Reason.index_pending
    return ChunkLocation(error=reason, note=pending_message(pending, stalled))


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
        # The chunk's other spellings of a pair broken at a line end decide before the dictionary.
        display_text=display_text(sentence.text, job.chunk_text, ENGLISH_WORDS),
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


def locate_text(job: LocateJob) -> ChunkLocation:
    """A web or text source's sentences: no PDF to place them on, so each is its span of the
    chunk's text (its selectors, added later, place it in the document's text). Page 1, no
    rectangles, page size 0, score 100 (the text is the source itself)."""
    location = ChunkLocation()
    for sentence in job.sentences:
        location.highlights.append(
            Highlight(
                highlight_id=highlight_id(job, sentence, []),
                sentence_id=sentence.index,
                text=sentence.text,
                display_text=" ".join(sentence.text.split()),
                start=sentence.start,
                end=sentence.end,
                page=1,
                page_width=0.0,
                page_height=0.0,
                score=100.0,
                rects=[],
                boxes=[],
                normalized_rects=[],
            )
        )
    return location


def locate_chunks(
    storage: PdfStorage, cache: IndexCache, jobs: list[LocateJob], wait: IndexWait | None = None
) -> dict[str, ChunkLocation]:
    """Blocking: each job's sentences placed. ``wait``: how long a PDF whose index is not
    built yet may hold the batch (OCR of a scan takes minutes): past it, its citations answer
    ``index_pending`` or ``text_layer_pending`` and the build goes on for the next request."""
    out: dict[str, ChunkLocation] = {}
    indexes: dict[tuple[str, str], DocumentIndex | ChunkLocation] = {}
    # One wait for the whole batch: each PDF waits for what is left of it.
    ends = time.monotonic() + max(wait.base_s, wait.max_s) if wait is not None else 0.0
    for job in jobs:
        key = (job.source_path, job.sha256)
        if key not in indexes:
            left = wait.within(ends - time.monotonic()) if wait is not None else None
            indexes[key] = _open(storage, cache, job, left)
        index = indexes[key]
        out[job.chunk_id] = (
            replace(index) if isinstance(index, ChunkLocation) else _locate_job(index, job)
        )
    return out
