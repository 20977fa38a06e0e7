"""Signed links as a reader meets them: one that expired says so and how to get a fresh one; one
that was altered or cut says it is not valid and is logged as a warning with the reason. Neither
talks about bearer tokens or shows the link; a browser opening one gets a page, an API client
the JSON error. A client without a link still gets the token answer."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from app.core.security import TokenRegistry
from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.core.test_error_contract import assert_error_body
from tests.fixtures.app import app_client, make_settings

READ, WRITE = "reader-token-1", "writer-token-1"
BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
PDF = f"/v2/documents/{SAMPLE_ID}/pdf"


@pytest.fixture
def settings(database_url: str, pdf_root: Path) -> Any:
    return make_settings(database_url, pdf_root, auth_read_tokens=[READ], auth_write_tokens=[WRITE])


def _expired_query(document_id: str) -> str:
    """A link this service signed (same tokens, same key), a day past its expiry."""
    tokens = TokenRegistry([SecretStr(READ)], [SecretStr(WRITE)])
    expires = int(time.time()) - 24 * 3600
    return f"expires={expires}&signature={tokens.link_signature(document_id, expires)}"


def _says_nothing_of_tokens_or_the_link(text: str, query: str) -> None:
    lowered = text.lower()
    assert "bearer" not in lowered
    assert "token" not in lowered
    assert "authorization" not in lowered
    for value in re.findall(r"=([^&]+)", query):
        assert value not in text


async def _highlight_id(client: httpx.AsyncClient) -> str:
    response = await client.post(
        "/v2/highlights/batch", json=batch(CHUNK_MAIN), headers={"authorization": f"Bearer {READ}"}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["results"][0]["highlights"][0]["highlight_id"])


async def test_an_expired_link_says_it_expired_and_how_to_get_a_fresh_one(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await ingest_sample(settings)
    expired = _expired_query(SAMPLE_ID)
    async with app_client(settings) as client:
        highlight = await _highlight_id(client)
        for path in (f"{PDF}?{expired}", f"/v2/highlights/{highlight}?{expired}"):
            refused = await client.get(path)
            assert_error_body(refused, "link_expired")
            assert refused.status_code == 401
            message = refused.json()["error"]["message"]
            assert "expired" in message
            assert "again from the chat answer" in message
            _says_nothing_of_tokens_or_the_link(refused.text, expired)

        # The reader's browser opening the PDF link itself: a page, not JSON.
        page = await client.get(f"{PDF}?{expired}", headers=BROWSER)
        assert page.status_code == 401
        assert page.headers["content-type"].startswith("text/html")
        assert "This link has expired" in page.text
        assert "again from the chat answer" in page.text
        _says_nothing_of_tokens_or_the_link(page.text, expired)

        # A read token still opens it: the link is refused, not the caller.
        with_token = await client.get(
            f"{PDF}?{expired}", headers={"authorization": f"Bearer {READ}"}
        )
        assert with_token.status_code == 200
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "link" in r.msg]


async def test_an_altered_link_is_not_valid_and_logged_as_a_warning(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await ingest_sample(settings)
    tokens = TokenRegistry([SecretStr(READ)], [SecretStr(WRITE)])
    expires = int(time.time()) + 3600
    signature = tokens.link_signature(SAMPLE_ID, expires)
    altered = {
        "signature edited": f"expires={expires}&signature=x{signature[1:]}",
        "expiry edited": f"expires={expires + 1}&signature={signature}",
        "cut before the expiry": f"signature={signature}",
    }
    async with app_client(settings) as client:
        for case, query in altered.items():
            caplog.clear()
            with caplog.at_level(logging.INFO):
                refused = await client.get(f"{PDF}?{query}")
            assert_error_body(refused, "link_invalid")
            assert refused.status_code == 401, case
            assert "not valid" in refused.json()["error"]["message"]
            _says_nothing_of_tokens_or_the_link(refused.text, query)
            warned = [r for r in caplog.records if r.levelno == logging.WARNING]
            assert [r.getMessage() for r in warned if "signed link" in r.msg], case
            for record in caplog.records:  # the service's own lines (httpx logs its request)
                if record.name.startswith("app"):
                    assert signature[2:] not in record.getMessage()
        page = await client.get(f"{PDF}?{altered['signature edited']}", headers=BROWSER)
        assert page.headers["content-type"].startswith("text/html")
        assert "This link is not valid" in page.text

        # An API client without a link is still told about tokens.
        anonymous = await client.get(PDF)
        assert_error_body(anonymous, "unauthorized")
        assert "bearer token" in anonymous.json()["error"]["message"]
