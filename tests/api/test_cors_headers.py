"""With CORS on, a browser script can read what the service tells it in headers (Access-Control-
Expose-Headers): a 503's Retry-After, the request id to quote, the batch's ETag and cache hit, and
the PDF's ranges (PDF.js); and its preflights allow the headers such a client sends."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx

from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings

ORIGIN = "https://chat.example.org"
PDF = f"/v2/documents/{SAMPLE_ID}/pdf"


def _exposed(response: httpx.Response) -> set[str]:
    assert response.headers["access-control-allow-origin"] == ORIGIN
    listed = response.headers["access-control-expose-headers"]
    return {name.strip().lower() for name in listed.split(",")}


async def test_a_browser_script_reads_the_headers_it_needs(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root, cors_allow_origins=[ORIGIN])
    await ingest_sample(settings)
    origin = {"origin": ORIGIN}
    async with app_client(settings) as client:
        preflight = await client.options(
            PDF,
            headers={
                **origin,
                "access-control-request-method": "GET",
                "access-control-request-headers": "range,if-none-match,x-request-id",
            },
        )
        assert preflight.status_code == 200, preflight.text
        allowed = preflight.headers["access-control-allow-headers"].lower()
        assert {"range", "if-none-match", "x-request-id"} <= set(
            allowed.replace(" ", "").split(",")
        )

        answer = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN), headers=origin)
        assert answer.status_code == 200
        assert {"etag", "x-highlight-cache", "x-request-id", "retry-after"} <= _exposed(answer)
        assert answer.headers["x-request-id"]

        part = await client.get(PDF, headers={**origin, "range": "bytes=0-99"})
        assert part.status_code == 206
        assert part.headers["content-range"].startswith("bytes 0-99/")
        assert part.headers["accept-ranges"] == "bytes"
        assert {"accept-ranges", "content-range", "etag"} <= _exposed(part)

        # The PDFs' store gone: the 503 a script must wait on, readable across origins.
        shutil.move(pdf_root, tmp_path / "unmounted")
        down = await client.get(PDF, headers=origin)
        assert down.status_code == 503, down.text
        assert int(down.headers["retry-after"]) >= 1
        assert {"retry-after", "x-request-id"} <= _exposed(down)
