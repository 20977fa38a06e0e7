"""The reference viewer page and Swagger UI, both served from local files (no CDN): the service
works offline and in closed networks.

The viewer's page and assets (and Swagger UI's) are public: code without data, opened from a
reader's browser, which cannot send a token; the viewer's own data requests carry the signed link
its URL came with. /docs and /openapi.json describe the API and, with auth on, need a read token
unless HIGHLIGHT_PUBLIC_DOCS=true (create_app attaches the check).
"""

from __future__ import annotations

from html import escape
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from app.core.errors import LinkExpired, LinkInvalid, Unauthorized, error_response
from app.viewer import STATIC_DIR

ASSETS = "/viewer/assets"
OPENAPI_URL = "/openapi.json"
router = APIRouter(include_in_schema=False)
docs = APIRouter(include_in_schema=False)


@router.get("/viewer")
async def viewer() -> FileResponse:
    """/viewer?document_id=D&highlight=h_…[&highlight=…][&claim=…][&expires=…&signature=…]"""
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


@docs.get(OPENAPI_URL)
async def openapi_document(request: Request) -> JSONResponse:
    # Served here rather than by FastAPI (openapi_url=None), so it can take the auth check.
    return JSONResponse(request.app.openapi())


@docs.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=OPENAPI_URL,
        title=f"{request.app.title} - API",
        swagger_js_url=f"{ASSETS}/swagger/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/swagger/favicon-32x32.png",
    )


_LINK_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;
color:#222}}h1{{font-size:1.4rem}}</style></head>
<body><h1>{title}</h1><p>{message}</p></body></html>
"""
_LINK_TITLES = {
    LinkExpired: "This link has expired",
    LinkInvalid: "This link is not valid",
}


def _wants_html(request: Request) -> bool:
    """A browser opening the link itself (a navigation asks for text/html first); PDF.js,
    fetch() and API clients ask for */* or JSON and get the JSON error."""
    accept = request.headers.get("accept", "")
    return request.method == "GET" and accept.split(",", 1)[0].strip().startswith("text/html")


async def _refused_link(request: Request, exc: Exception) -> Response:
    """A reader who opened an expired or altered signed link (a PDF link from a chat answer):
    a page that says what happened and what to do, without the link itself (it is in the
    address bar already, and a page echoing it is one more place a signature is copied)."""
    if not isinstance(exc, Unauthorized):  # registered for the link errors only
        raise exc
    if not _wants_html(request):
        return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)
    title = _LINK_TITLES.get(type(exc), "This link cannot be opened")
    page = _LINK_PAGE.format(title=escape(title), message=escape(exc.message))
    return HTMLResponse(page, status_code=exc.status_code, headers={"Cache-Control": "no-store"})


def mount_viewer(app: FastAPI, docs_access: dict[str, Any]) -> None:
    """``docs_access``: include_router's dependencies and responses for /docs and
    /openapi.json (empty: public). Also answers a browser that opens an expired or altered
    signed link with a page for a reader (``_refused_link``)."""
    app.add_exception_handler(LinkExpired, _refused_link)
    app.add_exception_handler(LinkInvalid, _refused_link)
    app.include_router(router)
    app.include_router(docs, **docs_access)
    app.mount(ASSETS, StaticFiles(directory=STATIC_DIR), name="viewer-assets")
