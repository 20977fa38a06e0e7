"""Request dependencies: the app's state, a transaction per request, and the auth checks.

The session dependency owns the transaction and commits before the response is sent
(scope="function"), so a client never sees 200 for a write that was lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.config import Settings
from app.core.errors import Forbidden, Unauthorized
from app.core.fields import DOCUMENT_ID_MAX, ID_PATTERN
from app.core.security import Scope, TokenRegistry
from app.db.session import transaction
from app.highlights.service import HighlightService
from app.highlights.stored import StoredHighlights
from app.pdfs.storage import PdfStorage


@dataclass(frozen=True)
class AppState:
    settings: Settings
    engine: AsyncEngine
    session_factory: async_sessionmaker[AsyncSession]
    storage: PdfStorage
    tokens: TokenRegistry
    highlights: HighlightService
    stored: StoredHighlights


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.services
    return state


async def _state(request: Request) -> AppState:
    # async: FastAPI runs a plain def dependency in its thread pool, a thread hop per request.
    return get_state(request)


StateDep = Annotated[AppState, Depends(_state)]


async def get_session(state: StateDep) -> AsyncIterator[AsyncSession]:
    async with transaction(state.session_factory) as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]

# The auth dependencies below are attached by create_app only when tokens are configured, so the
# OpenAPI document of a deployment says whether it needs a token (and the demo's does not).
bearer = HTTPBearer(
    auto_error=False,
    description="A read or write token from HIGHLIGHT_AUTH_READ_TOKENS / _WRITE_TOKENS.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def token_scope(state: AppState, credentials: HTTPAuthorizationCredentials | None) -> Scope:
    if not state.tokens.enabled:
        return Scope.write
    return state.tokens.scope_of(credentials.credentials if credentials else None)


def check_scope(granted: Scope, needed: Scope, has_credentials: bool) -> None:
    if granted >= needed:
        return
    if granted == Scope.none:
        raise Unauthorized(
            "send a valid bearer token (Authorization: Bearer <token>)"
            if not has_credentials
            else "the bearer token is not one this service knows"
        )
    raise Forbidden("this token may read but not write; use a write token")


def _require(needed: Scope) -> Callable[[StateDep, Credentials], Awaitable[None]]:
    async def dependency(state: StateDep, credentials: Credentials) -> None:
        check_scope(token_scope(state, credentials), needed, credentials is not None)

    return dependency


CanRead = Depends(_require(Scope.read))
CanWrite = Depends(_require(Scope.write))


async def authorize_from_headers(request: Request, needed: Scope) -> None:
    """CanRead/CanWrite's check from the headers alone, with the same answers: FastAPI reads and
    parses a body before it solves dependencies, so routes that take a body call this first
    (api/routing.py) and a caller without a token is refused before its body is read."""
    state = get_state(request)
    credentials = await bearer(request)
    check_scope(token_scope(state, credentials), needed, credentials is not None)


LINK_SIGNATURE = r"^[A-Za-z0-9_-]{1,64}$"


async def _pdf_access(
    state: StateDep,
    credentials: Credentials,
    document_id: Annotated[str, Path(min_length=1, max_length=DOCUMENT_ID_MAX, pattern=ID_PATTERN)],
    expires: Annotated[
        int | None, Query(description="Expiry (Unix time) of a signed link from a batch result.")
    ] = None,
    signature: Annotated[
        str | None,
        Query(pattern=LINK_SIGNATURE, description="The signed link's signature."),
    ] = None,
) -> None:
    """A reader's browser cannot send a token: the signed link a batch result carries is enough."""
    if not state.tokens.link_is_valid(document_id, expires, signature):
        check_scope(token_scope(state, credentials), Scope.read, credentials is not None)


CanReadPdf = Depends(_pdf_access)


HIGHLIGHT_ID = r"^h_[0-9a-f]{32}$"


async def _highlight_access(
    state: StateDep,
    credentials: Credentials,
    highlight_id: Annotated[str, Path(pattern=HIGHLIGHT_ID)],
    expires: Annotated[
        int | None, Query(description="Expiry of the document's signed link (viewer links).")
    ] = None,
    signature: Annotated[
        str | None, Query(pattern=LINK_SIGNATURE, description="The signed link's signature.")
    ] = None,
) -> None:
    """A read token, or the signed link of the highlight's document (the reference viewer opened
    from a batch result carries it, not a token)."""
    granted = token_scope(state, credentials)
    if granted >= Scope.read:
        return
    if signature is not None:
        document_id = await state.stored.document_of(highlight_id)
        if document_id and state.tokens.link_is_valid(document_id, expires, signature):
            return
    check_scope(granted, Scope.read, credentials is not None)


CanReadHighlight = Depends(_highlight_access)
