"""The service's parts, built once from ``Settings`` in one place: by the server's lifespan
(``main.py``) and by the commands (``cli.py``), so both run the same objects with the same limits.
Routes get the part they use through typed dependencies (``api/deps.py``), not this whole."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.config import Settings
from app.core.security import TokenRegistry
from app.db.session import create_engine, create_session_factory, dispose_engine
from app.documents.links import PdfLinks
from app.documents.service import DocumentService
from app.documents.sources import SourceLimits
from app.highlights.limits import Limits
from app.highlights.service import HighlightService
from app.highlights.stored import StoredHighlights
from app.llm.providers import build_profile
from app.pdfs.backends import build_storage
from app.pdfs.convert import ConvertLimits, OfficeConverter
from app.pdfs.index_cache import IndexCache
from app.pdfs.index_signing import SigningKeys
from app.pdfs.indexing import ocr_options
from app.pdfs.storage import PdfStorage
from app.pdfs.workers import pdf_workers

if TYPE_CHECKING:  # openai takes a second to import: only where an LLM client is built
    import openai

    from app.llm.client import StructuredClient

log = logging.getLogger(__name__)


def build_llm(
    settings: Settings, http_client: openai.DefaultAsyncHttpxClient | None = None
) -> StructuredClient | None:
    if settings.llm_provider == "none":
        return None
    settings.require_llm_settings()
    from app.llm.client import StructuredClient

    return StructuredClient(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key.get_secret_value(),
        profile=build_profile(
            settings.llm_provider,
            tiers=settings.llm_tiers,
            chat_template_kwargs=settings.llm_chat_template_kwargs,
            reasoning_effort=settings.llm_reasoning_effort,
        ),
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        max_tokens=settings.llm_max_tokens,
        temperature=settings.llm_temperature,
        http_client=http_client,
    )


def build_converter(settings: Settings) -> OfficeConverter:
    """LibreOffice for Office files, within the conversion limits; as many conversions at once
    as PDF workers (each is a process of up to office_memory_mb)."""
    return OfficeConverter(
        ConvertLimits(
            soffice=settings.soffice_path,
            timeout_s=settings.office_timeout_s,
            memory_mb=settings.office_memory_mb,
            max_output_bytes=settings.max_pdf_bytes,
            slots=settings.pdf_workers,
        )
    )


@dataclass(frozen=True)
class Services:
    settings: Settings
    engine: AsyncEngine
    session_factory: async_sessionmaker[AsyncSession]
    storage: PdfStorage
    tokens: TokenRegistry
    links: PdfLinks
    documents: DocumentService
    highlights: HighlightService
    stored: StoredHighlights


@asynccontextmanager
async def open_services(
    settings: Settings,
    *,
    command: bool = False,
    llm_http_client: openai.DefaultAsyncHttpxClient | None = None,
) -> AsyncIterator[Services]:
    """Every part, closed again on exit. ``command``: for a one-shot command (ingest, demo's
    ingest), which asks no LLM (a half-set LLM configuration blocks only what uses it) and says
    a missing Tesseract at INFO. ``llm_http_client`` replaces the LLM client's HTTP transport
    (custom TLS, proxies, or a test that records what goes over the wire)."""
    engine = create_engine(
        settings.database_url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
    )
    factory = create_session_factory(engine)
    llm = None if command else build_llm(settings, llm_http_client)
    # The same bounded workers for the server and the commands: a PDF bomb is refused in one
    # line, not a kill.
    storage = build_storage(settings, pdf_workers(settings))
    # Shared through the object store when there is one: a new replica loads the indexes others
    # built instead of building every one cold, if they are signed by a key it has.
    index_cache = IndexCache(
        settings.index_cache_dir,
        shared=storage.index_blobs(),
        ocr=ocr_options(settings, command=command),
        signing=SigningKeys.from_settings(settings.index_signing_keys),
    )
    tokens = TokenRegistry(settings.auth_read_tokens, settings.auth_write_tokens)
    services = Services(
        settings=settings,
        engine=engine,
        session_factory=factory,
        storage=storage,
        tokens=tokens,
        links=PdfLinks(tokens, settings.auth_link_ttl_s, settings.public_base_url),
        documents=DocumentService(
            factory,
            storage,
            index_cache,
            build_converter(settings),
            SourceLimits.from_settings(settings),
        ),
        highlights=HighlightService(
            session_factory=factory,
            llm=llm,
            index_cache=index_cache,
            storage=storage,
            limits=Limits.from_settings(settings),
        ),
        stored=StoredHighlights(
            factory,
            storage,
            preview_max_pixels=settings.preview_max_pixels,
            max_concurrent_previews=settings.max_concurrent_previews,
        ),
    )
    try:
        yield services
    finally:
        try:
            if llm is not None:
                await llm.close()
            await dispose_engine(engine)
        finally:
            services.highlights.close()
            # Blocking (it joins the worker processes), so not on the loop.
            await asyncio.to_thread(storage.workers.close)
            if services.documents.converter is not None:
                await asyncio.to_thread(services.documents.converter.close)


async def ingest_file(
    settings: Settings, pdf: Path, document_id: str | None, title: str | None = None
) -> dict[str, object]:
    """The ``ingest`` command's use case: the PDF (or Office file, converted) chunked and stored
    (``DocumentService.ingest``), then the highlights of the document's earlier content
    forgotten, as a document PUT does. Answers what ``ingest`` prints."""
    async with open_services(settings, command=True) as services:
        outcome = await services.documents.ingest(pdf, document_id, title)
        document = outcome.document
        if outcome.changed:
            try:
                await services.stored.forget_other_content(document.id)
            except Exception as exc:  # reads skip them anyway; the document is stored
                log.warning("could not delete the old highlights of %s: %r", document.id, exc)
    return {
        "document_id": document.id,
        "title": document.title,
        "source_path": document.source_path,
        "source_format": document.source_format,
        "original_name": document.original_name,
        "pages": document.page_count,
        "chunks": [c.id for c in document.chunks],
        "created": outcome.created,
        "changed": outcome.changed,
    }
