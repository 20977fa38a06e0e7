"""Blocking step of the batch: open each PDF's text index once and place the chosen sentences.

Runs in a worker thread (PyMuPDF and rapidfuzz would stall the event loop).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from app.alignment.index import DocumentIndex, IndexCache, StalePdfError
from app.alignment.locate import locate
from app.alignment.sentences import Sentence
from app.highlights.schemas import Highlight, Reason, Rect

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocateJob:
    chunk_id: str
    pdf_path: Path | None
    sha256: str
    pages: tuple[int, int]
    sentences: list[Sentence]


@dataclass
class ChunkLocation:
    highlights: list[Highlight] = field(default_factory=list)
    error: Reason | None = None  # pdf_unavailable, pdf_changed, no_text_layer: nothing placed
    unlocated: int = 0


def _open(cache: IndexCache, job: LocateJob) -> DocumentIndex | Reason:
    if job.pdf_path is None or not job.pdf_path.is_file():
        return Reason.pdf_unavailable
    try:
        return cache.get(job.pdf_path, job.sha256)
    except StalePdfError as exc:
        log.warning("%s; re-ingest the document", exc)
        return Reason.pdf_changed
    except Exception:  # a damaged PDF must not fail the batch; the reader still gets the link
        log.exception("cannot index %s", job.pdf_path)
        return Reason.pdf_unavailable


def _locate_job(index: DocumentIndex, job: LocateJob) -> ChunkLocation:
    first = max(1, min(job.pages[0], index.page_count))
    last = max(first, min(job.pages[1], index.page_count))
    if not any(index.has_text(p) for p in range(first, last + 1)):
        return ChunkLocation(error=Reason.no_text_layer)
    location = ChunkLocation()
    for sentence in job.sentences:
        found = locate(index, sentence.text, (first, last))
        if found.status != "found" or found.page is None:
            location.unlocated += 1
            continue
        width, height = index.page_size(found.page)
        location.highlights.append(
            Highlight(
                sentence_id=sentence.index,
                text=sentence.text,
                start=sentence.start,
                end=sentence.end,
                page=found.page,
                page_width=round(width, 2),
                page_height=round(height, 2),
                score=round(found.score, 1),
                rects=[
                    Rect(
                        page=r.page,
                        x0=round(r.x0, 2),
                        y0=round(r.y0, 2),
                        x1=round(r.x1, 2),
                        y1=round(r.y1, 2),
                    )
                    for r in found.rects
                ],
            )
        )
    return location


def locate_chunks(cache: IndexCache, jobs: list[LocateJob]) -> dict[str, ChunkLocation]:
    out: dict[str, ChunkLocation] = {}
    indexes: dict[Path | None, DocumentIndex | Reason] = {}
    for job in jobs:
        if job.pdf_path not in indexes:
            indexes[job.pdf_path] = _open(cache, job)
        index = indexes[job.pdf_path]
        out[job.chunk_id] = (
            ChunkLocation(error=index) if isinstance(index, Reason) else _locate_job(index, job)
        )
    return out
