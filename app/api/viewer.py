"""The reference viewer page and Swagger UI, both served from local files (no CDN): the service
works offline and in closed networks.

The viewer's page and assets (and Swagger UI's) are public: code without data, opened from a
reader's browser, which cannot send a token; the viewer's own data requests carry the signed link
its URL came with. /docs and /openapi.json describe the API and, with auth on, need a read token
unless HIGHLIGHT_PUBLIC_DOCS=true (create_app attaches the check).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

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


def mount_viewer(app: FastAPI, docs_access: dict[str, Any]) -> None:
    """``docs_access``: include_router's dependencies and responses for /docs and
    /openapi.json (empty: public)."""
    app.include_router(router)
    app.include_router(docs, **docs_access)
    app.mount(ASSETS, StaticFiles(directory=STATIC_DIR), name="viewer-assets")
