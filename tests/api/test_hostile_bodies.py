"""Hostile bodies, over real HTTP against the real service (auth on): a caller without a token is
refused before its body is read, each kind of route has its own body limit, and a big body is
validated off the event loop with the same answers as a small one."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.api.body_limit import largest_batch_bytes
from app.api.routing import OFF_LOOP_BYTES
from tests.fixtures.live import LiveService, live_service

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

READ, WRITE = "hostile-read-token", "hostile-write-token"
THIRTY_MB = 30_000_000
BODY_ROUTES = {
    ("POST", "/v2/highlights/batch"),
    ("POST", "/v2/highlights/stream"),
    ("POST", "/api/v1/v2/highlights/batch"),
    ("PUT", "/v2/documents/{document_id}"),
    ("PUT", "/v2/documents/{document_id}/pdf"),
    ("PUT", "/v2/documents/{document_id}/file"),
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, sample_pdf: Path) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("hostile")
    (work / "pdfs" / "sample").mkdir(parents=True)
    shutil.copyfile(sample_pdf, work / "pdfs" / "sample" / "sample-assembly.pdf")
    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'h.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        "HIGHLIGHT_AUTH_READ_TOKENS": json.dumps([READ]),
        "HIGHLIGHT_AUTH_WRITE_TOKENS": json.dumps([WRITE]),
    }
    with live_service(work, env, "serve") as live:
        yield live


def _auth(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def send_only_the_start(
    service: LiveService, method: str, path: str, headers: dict[str, str], chunked: bool = False
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Send the headers of a 30 MB body and its first KB only, then wait for the answer. A
    server that needed the body would wait for the rest, and this would time out."""
    host, port = service.url.removeprefix("http://").split(":")
    framing = {"transfer-encoding": "chunked"} if chunked else {"content-length": str(THIRTY_MB)}
    lines = [f"{method} {path} HTTP/1.1", f"host: {host}", "content-type: application/json"]
    lines += [f"{k}: {v}" for k, v in {**framing, **headers}.items()]
    start = b'{"query": "' + b"x" * 1000
    if chunked:
        start = f"{len(start):x}\r\n".encode() + start + b"\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + start)
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        head, body = received.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode().split("\r\n")
        answer = {
            name.lower(): value for name, value in (line.split(": ", 1) for line in header_lines)
        }
        while len(body) < int(answer["content-length"]):
            body += sock.recv(65536)
    return int(status_line.split()[1]), answer, json.loads(body)


def body_operations(service: LiveService) -> set[tuple[str, str]]:
    document = httpx.get(f"{service.url}/openapi.json", headers=_auth(READ), timeout=10).json()
    return {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    }


@pytest.mark.parametrize("token", [None, "not-a-token"], ids=["no token", "unknown token"])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_caller_without_a_valid_token_is_refused_before_its_body_is_read(
    service: LiveService, token: str | None, chunked: bool
) -> None:
    # Every operation that takes a body, as the service's own document lists them.
    operations = body_operations(service)
    assert operations == BODY_ROUTES
    # What the auth dependency answers on a route without a body: the same, word for word.
    expected = httpx.get(f"{service.url}/v2/documents/x", headers=_auth(token), timeout=10)
    assert expected.status_code == 401
    for method, path in sorted(operations):
        url_path = path.replace("{document_id}", "some-doc")
        status, headers, body = send_only_the_start(
            service, method, url_path, _auth(token), chunked
        )
        assert status == 401, (method, path, body)
        assert headers["www-authenticate"] == "Bearer"
        assert headers["connection"] == "close"  # the rest of the body is never read
        assert body == expected.json()


def test_a_read_token_on_a_put_is_refused_before_its_body_is_read(service: LiveService) -> None:
    status, headers, body = send_only_the_start(service, "PUT", "/v2/documents/d", _auth(READ))
    assert status == 403
    assert body["error"]["code"] == "forbidden"
    assert headers["connection"] == "close"


def test_a_batch_over_its_limit_is_413_naming_it_while_a_put_of_that_size_is_stored(
    service: LiveService,
) -> None:
    limit = largest_batch_bytes()
    assert limit == 576 * 1024
    padding = limit + 1 - len(json.dumps({"query": "q", "answer": "", "citations": []}))
    batch = json.dumps({"query": "q", "answer": "x" * padding, "citations": []}).encode()
    assert len(batch) == limit + 1
    with httpx.Client(base_url=service.url, timeout=30) as client:
        for path in (
            "/v2/highlights/batch",
            "/v2/highlights/stream",
            "/api/v1/v2/highlights/batch",
        ):
            refused = client.post(
                path, content=batch, headers={**_auth(READ), "content-type": "application/json"}
            )
            assert refused.status_code == 413, refused.text
            error = refused.json()["error"]
            assert error["code"] == "payload_too_large"
            assert f"a batch body is at most {limit} bytes" in error["message"]
            assert "send fewer citations or a shorter answer" in error["message"]
            assert error["details"] == {"max_bytes": limit}
        # A document's chunks are another matter: the same size is an ordinary PUT.
        text = "The House met and members spoke about the budget. " * 120
        chunks = [
            {"id": f"big-{i}", "text": text, "page_start": 1, "page_end": 1} for i in range(100)
        ]
        document = {"source_path": "sample/sample-assembly.pdf", "chunks": chunks}
        assert len(json.dumps(document)) > limit
        stored = client.put("/v2/documents/big", json=document, headers=_auth(WRITE))
        assert stored.status_code == 201, stored.text
        assert len(stored.json()["chunks"]) == 100


def _widest_batch(answer_chars: int) -> bytes:
    """A batch with every text at its ceiling, each character a code point outside the BMP
    written as a JSON escape pair (12 bytes): the longest body a valid batch can have."""
    wide = "\U0001f600"
    batch = {
        "query": wide * 4000,
        "answer": wide * answer_chars,
        "citations": [{"chunk_id": wide * 256, "citation_id": wide * 128} for _ in range(50)],
    }
    return json.dumps(batch, ensure_ascii=True, indent=2).encode()


def test_the_largest_valid_batch_fits_its_limit_and_is_answered(service: LiveService) -> None:
    body = _widest_batch(20_000)
    # Over the size that is validated off the event loop, under the batch limit.
    assert OFF_LOOP_BYTES < len(body) <= largest_batch_bytes()
    response = httpx.post(
        f"{service.url}/v2/highlights/batch",
        content=body,
        headers={**_auth(READ), "content-type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 200, response.text[:500]
    results = response.json()["results"]
    assert len(results) == 50
    assert {r["reason"] for r in results} == {"chunk_not_found"}


def test_a_big_invalid_body_gets_the_same_422_as_a_small_one(service: LiveService) -> None:
    too_long = _widest_batch(20_001)
    assert len(too_long) > OFF_LOOP_BYTES
    small = {"query": "q", "answer": "x" * 20_001, "citations": [{"chunk_id": "c"}]}
    with httpx.Client(base_url=service.url, timeout=60, headers=_auth(READ)) as client:
        big = client.post(
            "/v2/highlights/batch", content=too_long, headers={"content-type": "application/json"}
        )
        little = client.post("/v2/highlights/batch", json=small)
        broken = client.post(
            "/v2/highlights/batch",
            content=too_long[:-2],
            headers={"content-type": "application/json"},
        )
    assert big.status_code == little.status_code == 422
    assert big.json()["error"]["message"] == little.json()["error"]["message"]
    assert "body.answer" in big.json()["error"]["message"]
    # Not JSON at all: FastAPI's own JSON error, as for any malformed body.
    assert broken.status_code == 422
    assert broken.json()["error"]["code"] == "validation_error"
