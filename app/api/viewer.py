"""The reference viewer page and Swagger UI, both served from local files (no CDN): the service
works offline and in closed networks."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from app.viewer import STATIC_DIR

ASSETS = "/viewer/assets"
router = APIRouter(include_in_schema=False)


@router.get("/viewer")
async def viewer() -> FileResponse:
    """/viewer?document_id=D&highlight=h_…[&highlight=…][&expires=…&signature=…]"""
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} - API",
        swagger_js_url=f"{ASSETS}/swagger/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/swagger/favicon-32x32.png",
    )


def mount_viewer(app: FastAPI) -> None:
    app.include_router(router)
    app.mount(ASSETS, StaticFiles(directory=STATIC_DIR), name="viewer-assets")
