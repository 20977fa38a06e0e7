"""Web and text sources (HTML, Markdown, plain text): stored as text, chunked by paragraphs,
highlighted in their text without a PDF.

An upload keeps two files in the storage, each named by its content hash: the original bytes
as an Office original is kept (``originals/<sha256>.<ext>``, ``original_path``/``original_sha256``)
and the document's text extracted from them (``texts/<sha256>.txt``, ``source_path``/``sha256``,
UTF-8; ``documents/text_extract.py`` and ``markdown_text.py``, deterministic from the bytes),
extracted once, at upload, in a thread. Neither has a PDF's name:
``ingested/`` holds PDFs only. A document stored before that (both under ``ingested/<sha256>.pdf``)
moves to these names when the same bytes are uploaded again, still unchanged.
The chunks are consecutive blocks of that text (paragraphs, headings, items, rows) of at most
``CHUNK_CHARS`` characters, joined by the blank line that separates them in the text, so the
chunks tile the text: ``text[source_start:source_end]`` is each chunk's text, and the text is
the chunks' texts joined by a blank line (what the highlights' selectors index,
``highlights/sources.py``). A text source has one page: ``page_count`` 1, every chunk on page 1.
The blocks (kind, heading level, offsets) are kept with the document in the upload's transaction
(``Document.text_blocks``, JSON), so ``GET /v2/documents/{id}/text`` reads text and blocks from
the database alone: never the storage, never an extraction. A text source stored before blocks
were kept (migration 0004) is served with its chunks as paragraphs until its file is uploaded
again, which fills them in (no change to its text or highlights).

Text must be UTF-8 (a BOM is allowed): anything else is refused by ``sniff`` with a 422 saying
to save it as UTF-8. The upload door (``DocumentService.upload_file``, ``ingest``) refuses a file
over HIGHLIGHT_MAX_TEXT_BYTES (413) before it is read here: HTML is read at about 5 MB/s and
Markdown at 2 MB/s on one core (bench/selectors_bench.py); Markdown built to be slow, at 70 KB/s
or more (bench/markdown_bench.py), in a thread that leaves the event loop free.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, get_args

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import BadRequest
from app.core.fields import CHUNK_ID_MAX
from app.core.formats import TEXT, SourceFormat
from app.db.session import in_transaction, transaction
from app.documents import repository
from app.documents.errors import ChunkIdsTaken, DocumentNotFound
from app.documents.markdown_text import markdown_to_text
from app.documents.models import Chunk, Document
from app.documents.text_extract import (
    SEPARATOR,
    BlockKind,
    PlacedBlock,
    SourceDocument,
    html_to_text,
    plain_to_text,
)
from app.pdfs.errors import PdfChanged, PdfMissing
from app.pdfs.originals import original_key
from app.pdfs.storage import PdfFacts, PdfStorage, SavedPdf
from app.pdfs.titles import title_from_name

if TYPE_CHECKING:
    from app.documents.service import DocumentService, Upload

log = logging.getLogger(__name__)
# Blocks are put together into chunks up to this size (ingest's PDF chunks are as large).
CHUNK_CHARS = 1_600
WRITE_ATTEMPTS = 3
TEXTS = "texts"
# The original's extension in its stored name (``originals/<sha256>.<ext>``).
EXTENSIONS = {SourceFormat.html: "html", SourceFormat.markdown: "md", SourceFormat.text: "txt"}
_KINDS = frozenset(get_args(BlockKind))


@dataclass(frozen=True)
class TextChunk:
    id: str
    ordinal: int
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class TextUpload:
    document: Document
    created: bool
    changed: bool
    saved: SavedPdf  # the stored text, the document's source_path (newly_stored: new bytes)
    original: SavedPdf  # the stored original
    source: SourceDocument


def extract(data: bytes, fmt: SourceFormat) -> SourceDocument:
    """The document's text of a web or text source's bytes (UTF-8, sniffed before)."""
    if fmt not in TEXT:
        raise ValueError(f"{fmt} is not a text source")
    try:
        decoded = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"the text is not UTF-8 (byte {exc.start} cannot be read): save it as UTF-8 and "
            "upload it again",
            details={"offset": exc.start},
        ) from exc
    if fmt is SourceFormat.html:
        return html_to_text(decoded)
    if fmt is SourceFormat.markdown:
        return markdown_to_text(decoded)
    return plain_to_text(decoded)


def chunk_source(source: SourceDocument, document_id: str) -> list[TextChunk]:
    """Consecutive blocks up to ``CHUNK_CHARS`` (a longer block alone); a heading starts a new
    chunk, so a section's heading is read with its first paragraph."""
    prefix = document_id[: CHUNK_ID_MAX - 6]
    spans: list[tuple[int, int]] = []
    only_headings = False  # the current chunk holds headings alone (a title over a subtitle)
    for block in source.blocks:
        heading = block.kind == "heading"
        if spans and (not heading or only_headings) and block.end - spans[-1][0] <= CHUNK_CHARS:
            spans[-1] = (spans[-1][0], block.end)
            only_headings = only_headings and heading
            continue
        spans.append((block.start, block.end))
        only_headings = heading
    return [
        TextChunk(f"{prefix}-c{i:04d}", i, source.text[start:end], start, end)
        for i, (start, end) in enumerate(spans)
    ]


def text_key(sha256: str) -> str:
    """Where a text source's text is stored, by its content, relative to the storage's root."""
    return f"{TEXTS}/{sha256}.txt"


def _stored(storage: PdfStorage, data: bytes, key_of: Callable[[str], str]) -> tuple[SavedPdf, str]:
    """Blocking: ``data`` at its content's key, written once (create-only, as ``originals.py``
    keeps an Office original); a file already there that is not this content (damaged) is
    replaced."""
    sha256 = hashlib.sha256(data).hexdigest()
    key = key_of(sha256)
    if storage.put_record(key, data):
        return SavedPdf(key, newly_stored=True), sha256
    try:
        storage.read_verified(key, sha256)
    except (PdfMissing, PdfChanged):
        storage.put_record(key, data, replace=True)
        return SavedPdf(key, newly_stored=True), sha256
    return SavedPdf(key, newly_stored=False), sha256


def _store(
    storage: PdfStorage, data: bytes, fmt: SourceFormat
) -> tuple[SourceDocument, SavedPdf, str, SavedPdf, str]:
    """Blocking: extract, then store the original and the text, each by its content."""
    source = extract(data, fmt)
    if not source.text.strip():
        raise BadRequest(f"the {fmt.value} file has no text to highlight")
    original, original_sha = _stored(
        storage, data, lambda sha256: original_key(sha256, EXTENSIONS[fmt])
    )
    text, text_sha = _stored(storage, source.text.encode("utf-8"), text_key)
    return source, original, original_sha, text, text_sha


def _chunked(source: SourceDocument, document_id: str) -> tuple[list[TextChunk], str]:
    """Blocking (a long text has many blocks): its chunks and its blocks as kept."""
    return chunk_source(source, document_id), encode_blocks(source.blocks)


async def store_text(
    session_factory: async_sessionmaker[AsyncSession],
    storage: PdfStorage,
    document_id: str,
    data: bytes,
    fmt: SourceFormat,
    *,
    original_name: str | None = None,
    title: str | None = None,
) -> TextUpload:
    """Store a web or text source and put its document and chunks (replacing the id's chunks,
    as a document PUT does), in one transaction. The same bytes again change nothing."""
    source, original, original_sha, text, text_sha = await asyncio.to_thread(
        _store, storage, data, fmt
    )
    chunks, blocks = await asyncio.to_thread(_chunked, source, document_id)
    shown = (
        title
        or source.title
        or (title_from_name(original_name) if original_name else "")
        or document_id
    )[:500]

    async def write(session: AsyncSession) -> tuple[Document, bool, bool]:
        owners = await repository.chunk_owners(session, [c.id for c in chunks])
        foreign = sorted(cid for cid, owner in owners.items() if owner != document_id)
        if foreign:
            raise ChunkIdsTaken(foreign)
        document = await repository.get_document(session, document_id, with_blocks=True)
        facts = (shown, text_sha, fmt.value, original_name, original_sha)
        incoming = [(c.id, c.ordinal, c.text, c.start, c.end) for c in chunks]
        if document is not None:
            known = (
                document.title,
                document.sha256,
                document.source_format,
                document.original_name,
                document.original_sha256,
            )
            stored = sorted(
                (c.id, c.ordinal, c.text, c.source_start, c.source_end) for c in document.chunks
            )
            if known == facts and stored == incoming:
                # The same content: stored under older names (``ingested/``) it moves to these,
                # and stored before blocks were kept it gets them; it is no change (its
                # highlights are of this same text).
                paths = (text.source_path, original.source_path)
                if (document.source_path, document.original_path, document.text_blocks) != (
                    *paths,
                    blocks,
                ):
                    document.source_path, document.original_path = paths
                    document.text_blocks = blocks
                    await session.flush()
                return document, False, False
        created = document is None
        if document is None:
            document = Document(id=document_id, created_at=datetime.now(UTC))
            session.add(document)
        document.title = shown
        document.source_path = text.source_path
        document.sha256 = text_sha
        document.page_count = 1
        document.source_format = fmt.value
        document.original_name = original_name
        document.original_sha256 = original_sha
        document.original_path = original.source_path
        document.text_blocks = blocks
        document.updated_at = datetime.now(UTC)
        await session.flush()
        rows = [
            Chunk(
                id=c.id,
                document_id=document_id,
                ordinal=c.ordinal,
                text=c.text,
                page_start=1,
                page_end=1,
                source_start=c.start,
                source_end=c.end,
            )
            for c in chunks
        ]
        await repository.replace_chunks(session, document, rows)
        await session.refresh(document, ["chunks"])
        return document, created, True

    document, created, changed = await in_transaction(
        session_factory, write, attempts=WRITE_ATTEMPTS
    )
    return TextUpload(document, created, changed, text, original, source)


async def upload_text(
    documents: DocumentService,
    document_id: str,
    data: bytes,
    fmt: SourceFormat,
    *,
    sha256: str | None = None,
    filename: str | None = None,
    chunk: bool = True,
    title: str | None = None,
) -> Upload:
    """The upload door's seam (``PUT /v2/documents/{id}/file``, ``ingest``): a web or text
    source stored and its document put. It is always chunked (``chunk`` has no other meaning
    here: its text is only ever highlighted through its own chunks); ``sha256`` is the
    caller's hash of ``data``, unused (the original is hashed as it is stored)."""
    # The service calls this module: its names are imported when used.
    from app.documents.service import Upload
    from app.documents.upserting import UpsertOutcome, origin_of

    del sha256, chunk
    stored = await store_text(
        documents.session_factory,
        documents.storage,
        document_id,
        data,
        fmt,
        original_name=filename,
        title=title,
    )
    document = stored.document
    facts = PdfFacts(document.sha256, document.page_count, document.title)
    outcome = UpsertOutcome(document, stored.created, stored.changed)
    return Upload(facts, stored.saved, outcome, origin_of(document))


def joined(chunks: list[TextChunk]) -> str:
    """The document's text again from its chunks (the invariant the selectors rely on)."""
    return SEPARATOR.join(c.text for c in chunks)


def encode_blocks(blocks: Sequence[PlacedBlock]) -> str:
    """A text source's blocks as its document keeps them (``Document.text_blocks``): JSON, one
    ``[kind, level, start, end]`` per block."""
    return json.dumps([[b.kind, b.level, b.start, b.end] for b in blocks], separators=(",", ":"))


def decode_blocks(stored: str | None, text: str) -> list[PlacedBlock] | None:
    """The blocks a document keeps, or None when it keeps none that tile ``text`` (a text source
    stored before blocks were kept; a PDF)."""
    if not stored:
        return None
    try:
        blocks = [
            PlacedBlock(kind, level, start, end) for kind, level, start, end in json.loads(stored)
        ]
    except (ValueError, TypeError):
        log.warning("stored blocks that cannot be read", exc_info=True)
        return None
    at = 0
    for block in blocks:
        if block.kind not in _KINDS or not at <= block.start < block.end <= len(text):
            return None
        at = block.end
    return blocks if blocks and at == len(text) else None


def own_paragraphs(text: str) -> list[PlacedBlock]:
    """A PDF's own text's paragraphs (separated by a blank line), as its blocks."""
    spans, at = [], 0
    for part in text.split(SEPARATOR):
        if part.strip():
            spans.append(PlacedBlock("paragraph", 0, at, at + len(part)))
        at += len(part) + len(SEPARATOR)
    return spans


def _paragraphs(document: Document) -> list[PlacedBlock]:
    """The document's chunks as paragraphs: its blocks when it keeps none (a PDF's are its
    chunks)."""
    spans, at = [], 0
    for chunk in document.chunks:
        spans.append(PlacedBlock("paragraph", 0, at, at + len(chunk.text)))
        at += len(chunk.text) + len(SEPARATOR)
    return spans


async def document_text(
    session_factory: async_sessionmaker[AsyncSession], document_id: str
) -> tuple[Document, str, list[PlacedBlock]]:
    """A document's text and its blocks, from the database alone: a PDF's own text (its
    chunks placed in it) and its paragraphs; a text source's text (its chunks joined by a blank
    line) and the blocks kept at upload (never extracted again per request). A PDF stored
    before placing, and a text source stored before blocks were kept, are served as their
    chunks joined, as paragraphs (put again, they are served as the others)."""
    async with transaction(session_factory) as session:
        document = await repository.get_document(
            session, document_id, with_blocks=True, with_text=True
        )
    if document is None:
        raise DocumentNotFound(document_id)
    if document.reading_text is not None:  # a PDF's own text, its chunks placed in it
        return document, document.reading_text, own_paragraphs(document.reading_text)
    text = SEPARATOR.join(c.text for c in document.chunks)
    blocks = None
    if SourceFormat(document.source_format) in TEXT:
        blocks = await asyncio.to_thread(decode_blocks, document.text_blocks, text)
    return document, text, blocks if blocks is not None else _paragraphs(document)
