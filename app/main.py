"""Application factory. The lifespan owns the engine, the LLM client and the PDF index cache."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import openai
from fastapi import FastAPI
from fastapi.routing import APIRoute

from app import __version__
from app.alignment.index import IndexCache
from app.api import documents, health, highlights
from app.api.deps import AppState
from app.core.config import Settings, get_settings
from app.core.errors import install_error_handlers
from app.db.session import create_engine, create_session_factory
from app.highlights.service import HighlightService, Limits
from app.llm.client import StructuredClient
from app.llm.providers import build_profile


def build_llm(
    settings: Settings, http_client: openai.DefaultAsyncHttpxClient | None = None
) -> StructuredClient | None:
    if settings.llm_provider == "none":
        return None
    return StructuredClient(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        profile=build_profile(
            settings.llm_provider,
            tiers=settings.llm_tiers,
            chat_template_kwargs=settings.llm_chat_template_kwargs,
        ),
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        max_tokens=settings.llm_max_tokens,
        temperature=settings.llm_temperature,
        http_client=http_client,
    )


def _operation_id(route: APIRoute) -> str:
    # Stable ids for the generated frontend client: the endpoint function's name.
    return route.name


def create_app(
    settings: Settings | None = None,
    *,
    llm_http_client: openai.DefaultAsyncHttpxClient | None = None,
) -> FastAPI:
    """``llm_http_client`` replaces the LLM client's HTTP transport (custom TLS, proxies, or a
    test that records what goes over the wire)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url)
        factory = create_session_factory(engine)
        llm = build_llm(settings, llm_http_client)
        limits = Limits(
            max_citations=settings.max_citations,
            max_query_chars=settings.max_query_chars,
            max_answer_chars=settings.max_answer_chars,
            max_sentences_per_chunk=settings.max_sentences_per_chunk,
            max_highlights_per_chunk=settings.max_highlights_per_chunk,
        )
        service = HighlightService(
            session_factory=factory,
            llm=llm,
            index_cache=IndexCache(settings.index_cache_dir),
            pdf_root=settings.pdf_root,
            limits=limits,
        )
        app.state.services = AppState(settings, engine, factory, service)
        logging.getLogger(__name__).info(
            "highlight-service ready (llm provider %s, database %s)",
            settings.llm_provider,
            engine.url.render_as_string(hide_password=True),
        )
        try:
            yield
        finally:
            if llm is not None:
                await llm.close()
            await engine.dispose()

    app = FastAPI(
        title="Citation highlight service",
        version=__version__,
        description="Highlights the sentences of cited chunks that support a chat answer, as PDF "
        "rectangles, with an explicit status and a plain page link for every citation.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
    )
    install_error_handlers(app)
    app.include_router(highlights.router)
    app.include_router(documents.router)
    app.include_router(health.router)
    return app
