"""Bounded and protected: the request size limit, optional bearer tokens, signed PDF links for
readers' browsers, and CORS for the chat frontend's origin."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings

READ, WRITE = "reader-token-1", "writer-token-1"
DOC = {
    "source_path": "sample/sample-assembly.pdf",
    "chunks": [{"id": "a-1", "text": "The House met.", "page_start": 1, "page_end": 1}],
}


async def test_a_body_over_the_limit_is_413_before_it_is_parsed(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root, max_request_bytes=64 * 1024)
    big = {**DOC, "chunks": [{**DOC["chunks"][0], "text": "x" * 90_000}]}  # type: ignore[dict-item]

    async def chunked() -> AsyncIterator[bytes]:
        # No Content-Length: the limit must hold for streamed bodies too.
        for _ in range(100):
            yield b" " * 1024

    async with app_client(settings) as client:
        declared = await client.put("/v2/documents/big", json=big)
        assert declared.status_code == 413, declared.text
        assert declared.json()["error"]["code"] == "payload_too_large"
        assert "HIGHLIGHT_MAX_REQUEST_BYTES" in declared.json()["error"]["message"]
        streamed = await client.post(
            "/v2/highlights/batch", content=chunked(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413, streamed.text
        assert (await client.get("/v2/documents/big")).status_code == 404
        # Within the limit, a streamed body reaches the app unchanged.
        small = await client.put("/v2/documents/small", json=DOC)
        assert small.status_code == 201, small.text


def _auth(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


@pytest.fixture
def auth_settings(database_url: str, pdf_root: Path) -> Any:
    return make_settings(database_url, pdf_root, auth_read_tokens=[READ], auth_write_tokens=[WRITE])


@pytest.mark.parametrize(
    ("token", "read", "write"),
    [(None, 401, 401), ("wrong", 401, 401), (READ, 200, 403), (WRITE, 200, 201)],
    ids=["none", "unknown", "read", "write"],
)
async def test_tokens_grant_read_or_write(
    auth_settings: Any, token: str | None, read: int, write: int
) -> None:
    await ingest_sample(auth_settings)
    async with app_client(auth_settings) as client:
        got = await client.post(
            "/v2/highlights/batch", json=batch(CHUNK_MAIN), headers=_auth(token)
        )
        assert got.status_code == read, got.text
        document = await client.get(f"/v2/documents/{SAMPLE_ID}", headers=_auth(token))
        assert document.status_code == read
        put = await client.put("/v2/documents/w", json=DOC, headers=_auth(token))
        assert put.status_code == write, put.text
        if write == 401:
            assert put.headers["www-authenticate"] == "Bearer"
            assert put.json()["error"]["code"] == "unauthorized"
        if write == 403:
            assert put.json()["error"]["code"] == "forbidden"
        # Health stays open for load balancers.
        assert (await client.get("/healthz")).status_code == 200


async def test_signed_links_open_the_pdf_without_a_token(auth_settings: Any) -> None:
    await ingest_sample(auth_settings)
    async with app_client(auth_settings) as client:
        data = (
            await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN), headers=_auth(READ))
        ).json()
        link = data["results"][0]["link"]
        assert re.fullmatch(
            rf"/v2/documents/{SAMPLE_ID}/pdf\?expires=\d+&signature=[\w-]+#page=1", link
        ), link
        url = link.split("#")[0]
        opened = await client.get(url)
        assert opened.status_code == 200
        assert opened.headers["content-type"] == "application/pdf"
        assert (await client.get(f"/v2/documents/{SAMPLE_ID}/pdf")).status_code == 401
        tampered = url.replace("expires=", "expires=1")
        assert (await client.get(tampered)).status_code == 401
        other = url.replace(f"/documents/{SAMPLE_ID}/", "/documents/other-doc/")
        assert (await client.get(other)).status_code == 401


def test_expired_link_signatures_are_refused() -> None:
    from pydantic import SecretStr

    from app.core.security import TokenRegistry
    from app.documents.links import PdfLinks

    tokens = TokenRegistry([SecretStr(READ)], [])
    link = PdfLinks(tokens=tokens, ttl_s=3600, clock=lambda: 1_000_000.0).pdf("doc", 2)
    expires = int(re.search(r"expires=(\d+)", link).group(1))  # type: ignore[union-attr]
    signature = re.search(r"signature=([\w-]+)", link).group(1)  # type: ignore[union-attr]
    assert tokens.link_is_valid("doc", expires, signature, clock=lambda: expires - 1.0)
    assert not tokens.link_is_valid("doc", expires, signature, clock=lambda: expires + 1.0)
    assert not tokens.link_is_valid("other", expires, signature, clock=lambda: 0.0)
    # Without tokens there is nothing to sign: a plain link.
    assert PdfLinks().pdf("doc", 2) == "/v2/documents/doc/pdf#page=2"


def test_viewer_links_carry_claims_encoded_capped_and_before_the_signature() -> None:
    from urllib.parse import parse_qsl, quote_plus

    from pydantic import SecretStr

    from app.core.security import TokenRegistry
    from app.documents.links import VIEWER_CLAIM_BYTES, VIEWER_CLAIM_CHARS, VIEWER_CLAIMS, PdfLinks

    tokens = TokenRegistry([SecretStr(READ)], [])
    links = PdfLinks(tokens=tokens, ttl_s=3600, clock=lambda: 1_000_000.0)
    hostile = 'Costs rose 5% & fell #2 <img src=x onerror="alert(1)">'
    claims = [hostile, "  ", "y" * 5000, "a  claim\n over   lines", "a fourth claim"]
    link = links.viewer("doc", ["h_1", "h_2"], claims)
    path, query = link.split("?", 1)
    assert path == "/viewer"
    # Every claim character is url-encoded: none can end the parameter, the query or the URL.
    assert not re.search(r"[\s<>\"#]|&(?!(highlight|claim|expires|signature)=)", query), query
    pairs = parse_qsl(query)
    keys = ["document_id", "highlight", "highlight", "claim", "claim", "claim", "expires"]
    assert [k for k, _ in pairs] == [*keys, "signature"]
    shown = [v for k, v in pairs if k == "claim"]
    # Blank claims are left out; at most VIEWER_CLAIMS, each cut to VIEWER_CLAIM_CHARS with "…".
    assert len(shown) == VIEWER_CLAIMS == 3
    assert shown == [hostile, "y" * (VIEWER_CLAIM_CHARS - 1) + "…", "a claim over lines"]
    assert len(link) < 1000
    # The signature is the one of the same link without claims, and still valid: they are
    # display-only and not signed.
    plain = links.viewer("doc", ["h_1", "h_2"])
    assert link.endswith(plain[plain.index("&expires=") :])
    fields = dict(pairs)
    assert tokens.link_is_valid(
        "doc", int(fields["expires"]), fields["signature"], clock=lambda: 0.0
    )
    # Without auth: no signature, the claims end the link; without claims the link is as before.
    assert PdfLinks().viewer("doc", ["h_1"], ["It costs 5%."]) == (
        "/viewer?document_id=doc&highlight=h_1&claim=It+costs+5%25."
    )
    assert PdfLinks().viewer("doc", ["h_1"]) == "/viewer?document_id=doc&highlight=h_1"
    # Verdicts follow the claims, one each, in order; a link without claims may carry the whole
    # answer's; a claim without a verdict leaves them all out (they are read by position).
    both = PdfLinks().viewer("doc", ["h_1"], ["A.", "B."], ["supported", "partial"])
    assert both.endswith("&claim=A.&claim=B.&support=supported&support=partial"), both
    whole = PdfLinks().viewer("doc", ["h_1"], [], ["partial"])
    assert whole == "/viewer?document_id=doc&highlight=h_1&support=partial"
    assert "support=" not in PdfLinks().viewer("doc", ["h_1"], ["A.", "B."], ["supported"])
    # Bytes bound a claim too: 300 CJK characters would be 2.7 KB encoded.
    (chinese,) = [v for k, v in parse_qsl(PdfLinks().viewer("d", [], ["資" * 400])) if k == "claim"]
    assert chinese.endswith("…")
    assert len(quote_plus(chinese)) <= VIEWER_CLAIM_BYTES


async def _one_result(client: Any) -> Any:
    """The sample's main chunk through the batch with a read token: its one citation."""
    response = await client.post(
        "/v2/highlights/batch", json=batch(CHUNK_MAIN), headers=_auth(READ)
    )
    (result,) = response.json()["results"]
    return result


async def test_signed_viewer_links_with_claims_still_open(auth_settings: Any) -> None:
    """The batch's answer has markers, so its viewer link carries the citation's claim: the page
    and the highlight open with the link's whole query (claims included) and no token, even with
    a claim edited, and not without the signature."""
    await ingest_sample(auth_settings)
    async with app_client(auth_settings) as client:
        result = await _one_result(client)
        viewer = result["viewer_link"]
        (claim,) = result["claims"]
        verdict = f"&support={claim['support']}"
        assert f"&claim={quote_plus(claim['text'])}{verdict}&expires=" in viewer, viewer
        query = viewer.split("?", 1)[1]
        assert re.search(r"&expires=\d+&signature=[\w-]+$", query), viewer
        assert (await client.get(viewer)).status_code == 200
        highlight_id = result["highlights"][0]["highlight_id"]
        stored = await client.get(f"/v2/highlights/{highlight_id}?{query}")
        assert stored.status_code == 200, stored.text
        edited = re.sub(r"claim=[^&]*", "claim=Something+else", query)
        assert (await client.get(f"/v2/highlights/{highlight_id}?{edited}")).status_code == 200
        unsigned = query.split("&expires=")[0]
        assert (await client.get(f"/v2/highlights/{highlight_id}?{unsigned}")).status_code == 401


async def test_cors_allows_the_configured_origin_only(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(
        database_url, pdf_root, cors_allow_origins=["https://chat.example.org"]
    )
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
    }
    async with app_client(settings) as client:
        allowed = await client.options(
            "/v2/highlights/batch", headers={"origin": "https://chat.example.org", **preflight}
        )
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://chat.example.org"
        assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
        refused = await client.options(
            "/v2/highlights/batch", headers={"origin": "https://evil.example", **preflight}
        )
        assert "access-control-allow-origin" not in refused.headers


async def test_signed_viewer_links_open_highlights_and_previews_without_a_token(
    auth_settings: Any,
) -> None:
    await ingest_sample(auth_settings)
    async with app_client(auth_settings) as client:
        result = await _one_result(client)
        viewer = result["viewer_link"]
        assert viewer.startswith(f"/viewer?document_id={SAMPLE_ID}&highlight=h_")
        query = "expires=" + viewer.split("&expires=", 1)[1]
        assert re.fullmatch(r"expires=\d+&signature=[\w-]+", query), viewer
        highlight_id = result["highlights"][0]["highlight_id"]
        # What the viewer requests, with the signature its URL carries and no token:
        page = await client.get("/viewer")
        assert page.status_code == 200
        stored = await client.get(f"/v2/highlights/{highlight_id}?{query}")
        assert stored.status_code == 200, stored.text
        assert re.fullmatch(
            rf"/v2/documents/{SAMPLE_ID}/pdf\?sha256=[0-9a-f]{{64}}&expires=\d+&signature=[\w-]+",
            stored.json()["pdf_url"],
        )
        assert (await client.get(stored.json()["pdf_url"])).status_code == 200
        preview = await client.get(
            f"/v2/documents/{SAMPLE_ID}/pages/1.png?{query}&highlight={highlight_id}"
        )
        assert preview.status_code == 200
        # Without the signature, or with a token-less forged one: no.
        assert (await client.get(f"/v2/highlights/{highlight_id}")).status_code == 401
        forged = query.replace("signature=", "signature=x")
        assert (await client.get(f"/v2/highlights/{highlight_id}?{forged}")).status_code == 401
        with_token = await client.get(f"/v2/highlights/{highlight_id}", headers=_auth(READ))
        assert with_token.status_code == 200


async def test_viewer_and_docs_are_served_from_local_files(
    database_url: str, pdf_root: Path
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        viewer = await client.get("/viewer", params={"document_id": "x", "highlight": "h_1"})
        assert viewer.status_code == 200
        assert "/viewer/assets/viewer.js" in viewer.text
        script = await client.get("/viewer/assets/viewer.js")
        assert script.status_code == 200
        assert "javascript" in script.headers["content-type"]
        assert (await client.get("/viewer/assets/pdf.worker.min.mjs")).status_code == 200
        docs = await client.get("/docs")
        assert docs.status_code == 200
        # No CDN: every script and stylesheet of /docs is one of ours.
        sources = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
        assert sources
        assert all(s.startswith(("/viewer/assets/", "/openapi.json")) for s in sources), sources
        for source in sources:
            if source.startswith("/viewer/assets/"):
                assert (await client.get(source)).status_code == 200, source


@pytest.mark.parametrize("public_docs", [False, True], ids=["docs need a token", "public docs"])
async def test_with_auth_on_the_docs_need_a_read_token_and_the_viewer_is_public(
    database_url: str, pdf_root: Path, public_docs: bool
) -> None:
    settings = make_settings(
        database_url,
        pdf_root,
        auth_read_tokens=[READ],
        auth_write_tokens=[WRITE],
        public_docs=public_docs,
    )
    async with app_client(settings) as client:
        for path in ("/docs", "/openapi.json"):
            anonymous = await client.get(path)
            if public_docs:
                assert anonymous.status_code == 200, path
            else:
                assert anonymous.status_code == 401, path
                assert anonymous.headers["www-authenticate"] == "Bearer"
                assert anonymous.json()["error"]["code"] == "unauthorized"
            assert (await client.get(path, headers=_auth(READ))).status_code == 200, path
        spec = (await client.get("/openapi.json", headers=_auth(READ))).json()
        assert "/v2/highlights/batch" in spec["paths"]
        # The viewer's page, its code and Swagger UI's files hold no data: public, so a reader's
        # browser opens a signed viewer link without a token (its data calls carry the link).
        for path in (
            "/viewer?document_id=x&highlight=h_1",
            "/viewer/assets/viewer.js",
            "/viewer/assets/swagger/swagger-ui.css",
            "/healthz",
        ):
            assert (await client.get(path)).status_code == 200, path


def _clock_at(t: float) -> Callable[[], float]:
    """A clock stuck at ``t``."""
    return lambda: t


def test_a_signed_link_expires_at_its_ttl() -> None:
    from pydantic import SecretStr

    from app.core.security import TokenRegistry
    from app.documents.links import PdfLinks

    tokens = TokenRegistry([SecretStr(READ)], [])
    for made_at in (1_000_000.0, 1_000_000.4, 1_003_599.9):
        link = PdfLinks(tokens=tokens, ttl_s=60, clock=_clock_at(made_at)).pdf("doc", 1)
        expires = int(re.search(r"expires=(\d+)", link).group(1))  # type: ignore[union-attr]
        signature = re.search(r"signature=([\w-]+)", link).group(1)  # type: ignore[union-attr]
        # The expiry is rounded up to the next second, never to the hour.
        assert made_at + 60 <= expires < made_at + 61
        assert tokens.link_is_valid("doc", expires, signature, clock=_clock_at(made_at + 59))
        assert not tokens.link_is_valid("doc", expires, signature, clock=_clock_at(made_at + 61))


def test_the_access_log_filter_redacts_signatures_and_tokens() -> None:
    import logging

    from app.server import RedactQuerySecrets

    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        (
            "127.0.0.1:5000",
            "GET",
            "/viewer?document_id=d&highlight=h_1&expires=99&signature=SeCrEt-sig_1",
            "1.1",
            200,
        ),
        None,
    )
    assert RedactQuerySecrets().filter(record)
    line = record.getMessage()
    assert "SeCrEt" not in line
    assert "/viewer?document_id=d&highlight=h_1&expires=99&signature=[redacted]" in line
    for query, shown in [
        ("?access_token=abc&page=2", "?access_token=[redacted]&page=2"),
        ("?sha256=00ff&api_key=k", "?sha256=00ff&api_key=[redacted]"),
    ]:
        record.args = ("c", "GET", f"/x{query}", "1.1", 200)
        RedactQuerySecrets().filter(record)
        assert shown in record.getMessage()


@pytest.mark.slow
def test_the_served_access_log_never_shows_a_link_signature(tmp_path: Path, pdf_root: Path) -> None:
    import httpx

    from tests.api.helpers import CHUNK_MAIN as chunk
    from tests.fixtures.live import ingest_with_cli, live_service

    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'log.db'}",
        "HIGHLIGHT_PDF_ROOT": str(pdf_root),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        "HIGHLIGHT_AUTH_READ_TOKENS": f'["{READ}"]',
    }
    ingest_with_cli(env, pdf_root / "sample" / "sample-assembly.pdf", SAMPLE_ID)
    with live_service(tmp_path, env, "serve") as service:
        data = httpx.post(
            f"{service.url}/v2/highlights/batch", json=batch(chunk), headers=_auth(READ)
        ).json()
        link = data["results"][0]["link"].split("#")[0]
        signature = re.search(r"signature=([\w-]+)", link).group(1)  # type: ignore[union-attr]
        assert httpx.get(f"{service.url}{link}").status_code == 200
    served = service.output()  # after the stop: the request line is written after the response
    # One line per request names the route template, never the query string with its
    # signature (uvicorn's own access log, which printed it, is off).
    assert '"route": "/v2/documents/{document_id}/pdf"' in served
    assert signature not in served
