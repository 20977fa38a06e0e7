"""Request dependencies: the service's parts, one typed dependency each, and the auth checks.
Every use case owns its transactions (the services commit before they answer), so a client never
sees 200 for a write that was lost."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Settings
from app.core.errors import Forbidden, LinkExpired, LinkInvalid, Unauthorized
from app.core.fields import DOCUMENT_ID_MAX, ID_PATTERN
from app.core.security import LinkCheck, Scope, TokenRegistry
from app.documents.links import PdfLinks
from app.documents.service import DocumentService
from app.highlights.service import HighlightService
from app.highlights.stored import StoredHighlights
from app.pdfs.storage import PdfStorage
from app.services import Services

T = TypeVar("T")
log = logging.getLogger(__name__)


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def _part(get: Callable[[Services], T]) -> Callable[[Request], Awaitable[T]]:
    # async: FastAPI runs a plain def dependency in its thread pool, a thread hop per request.
    async def dependency(request: Request) -> T:
        return get(get_services(request))

    return dependency


# What a route may ask for: each the one part it uses, never the whole of Services.
SettingsDep = Annotated[Settings, Depends(_part(lambda s: s.settings))]
TokensDep = Annotated[TokenRegistry, Depends(_part(lambda s: s.tokens))]
LinksDep = Annotated[PdfLinks, Depends(_part(lambda s: s.links))]
DocumentsDep = Annotated[DocumentService, Depends(_part(lambda s: s.documents))]
HighlightsDep = Annotated[HighlightService, Depends(_part(lambda s: s.highlights))]
StoredDep = Annotated[StoredHighlights, Depends(_part(lambda s: s.stored))]
EngineDep = Annotated[AsyncEngine, Depends(_part(lambda s: s.engine))]
StorageDep = Annotated[PdfStorage, Depends(_part(lambda s: s.storage))]

# The auth dependencies below are attached by create_app only when tokens are configured, so the
# OpenAPI document of a deployment says whether it needs a token (and the demo's does not).
bearer = HTTPBearer(
    auto_error=False,
    description="A read or write token from HIGHLIGHT_AUTH_READ_TOKENS / _WRITE_TOKENS.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def token_scope(tokens: TokenRegistry, credentials: HTTPAuthorizationCredentials | None) -> Scope:
    if not tokens.enabled:
        return Scope.write
    return tokens.scope_of(credentials.credentials if credentials else None)


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


def _require(needed: Scope) -> Callable[[TokensDep, Credentials], Awaitable[None]]:
    async def dependency(tokens: TokensDep, credentials: Credentials) -> None:
        check_scope(token_scope(tokens, credentials), needed, credentials is not None)

    return dependency


CanRead = Depends(_require(Scope.read))
CanWrite = Depends(_require(Scope.write))


async def authorize_from_headers(request: Request, needed: Scope) -> None:
    """CanRead/CanWrite's check from the headers alone, with the same answers: FastAPI reads and
    parses a body before it solves dependencies, so routes that take a body call this first
    (api/routing.py) and a caller without a token is refused before its body is read."""
    tokens = get_services(request).tokens
    credentials = await bearer(request)
    check_scope(token_scope(tokens, credentials), needed, credentials is not None)


LINK_SIGNATURE = r"^[A-Za-z0-9_-]{1,64}$"


async def _pdf_access(
    tokens: TokensDep,
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
    verdict = tokens.check_link(document_id, expires, signature)
    if verdict is not LinkCheck.valid:
        _link_or_token(tokens, credentials, verdict, document_id)


def _link_or_token(
    tokens: TokenRegistry,
    credentials: HTTPAuthorizationCredentials | None,
    verdict: LinkCheck,
    document_id: str | None,
) -> None:
    """A request whose signed link did not do: a read token still does. Otherwise a request
    that came with a link (a reader's browser) is told about the link, in words for a reader,
    never about tokens; an API client without a link gets the token answer."""
    granted = token_scope(tokens, credentials)
    if granted >= Scope.read or verdict is LinkCheck.absent:
        check_scope(granted, Scope.read, credentials is not None)
        return
    if verdict is LinkCheck.expired:
        log.info("signed link for document %r refused: expired", document_id)
        raise LinkExpired(
            "This link has expired: links to a document are valid for a limited time. Open the "
            "citation again from the chat answer to get a fresh link."
        )
    # Worth a look: a link edited by hand, cut by a mail or chat client, or guessed. The
    # signature and any token stay out of the log.
    log.warning("signed link for document %r refused: %s", document_id, verdict.value)
    raise LinkInvalid(
        "This link is not valid: it was changed or cut when it was copied. Open the citation "
        "again from the chat answer."
    )


CanReadPdf = Depends(_pdf_access)


HIGHLIGHT_ID = r"^h_[0-9a-f]{32}$"


async def _highlight_access(
    tokens: TokensDep,
    stored: StoredDep,
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
    if token_scope(tokens, credentials) >= Scope.read:
        return
    verdict, document_id = LinkCheck.absent, None
    if signature is not None:
        document_id = await stored.document_of(highlight_id)
        # An unknown highlight has no document to check the signature against: the link is
        # refused as not valid, which says nothing about which ids exist.
        verdict = (
            tokens.check_link(document_id, expires, signature)
            if document_id
            else LinkCheck.tampered
        )
        if verdict is LinkCheck.valid:
            return
    _link_or_token(tokens, credentials, verdict, document_id)


CanReadHighlight = Depends(_highlight_access)
