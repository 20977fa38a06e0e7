"""The error contract is true: every error the service really sends is documented for its route
and status in the OpenAPI document, and fits the documented schema (ErrorBody), including the
routing errors FastAPI would otherwise answer with its own ``{"detail": ...}``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from app.main import create_app
from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings

DOC: dict[str, Any] = {
    "source_path": "sample/sample-assembly.pdf",
    "chunks": [{"id": "e-1", "text": "The House met.", "page_start": 1, "page_end": 1}],
}
SPEC = create_app(make_settings("sqlite+aiosqlite:///unused.db", Path("unused"))).openapi()


def _template(path: str, spec: dict[str, Any]) -> str:
    for template in spec["paths"]:
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path):
            return str(template)
    raise AssertionError(f"{path} is not in the OpenAPI document")


def _validator(
    schema: dict[str, Any], spec: dict[str, Any] = SPEC
) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**schema, "components": spec["components"]})


def assert_documented(response: httpx.Response, spec: dict[str, Any] = SPEC) -> None:
    """``response`` is documented for its operation and status in ``spec`` (the OpenAPI document
    of the app that answered), and its body fits the schema."""
    request = response.request
    operation = spec["paths"][_template(request.url.path, spec)][request.method.lower()]
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, (
        f"{request.method} {request.url.path} answered {response.status_code}, which its "
        f"OpenAPI operation does not document ({sorted(operation['responses'])})"
    )
    schema = documented["content"]["application/json"]["schema"]
    _validator(schema, spec).validate(response.json())


def assert_error_body(response: httpx.Response, code: str) -> None:
    _validator({"$ref": "#/components/schemas/ErrorBody"}).validate(response.json())
    assert response.json()["error"]["code"] == code
    assert "detail" not in response.json()


PROBES = ("/healthz", "/livez", "/readyz")


def test_no_route_documents_fastapis_own_validation_error() -> None:
    assert "HTTPValidationError" not in SPEC["components"]["schemas"]
    for path, operations in SPEC["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                # The probes answer 503 with their own report of what is wrong.
                if status.startswith(("4", "5")) and path not in PROBES:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)


@pytest.mark.slow  # ingests in the PDF worker processes
async def test_real_error_bodies_fit_the_documented_schemas(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root, max_request_bytes=4096)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        cases = [
            (await client.get("/v2/documents/nope"), 404),
            (await client.get("/v2/documents/nope/pdf"), 404),
            (await client.get("/v2/documents/bad%20id"), 422),
            (await client.post("/v2/highlights/batch", json={"query": "q"}), 422),
            (await client.put("/v2/documents/e", json={**DOC, "source_path": "gone.pdf"}), 422),
            (await client.put("/v2/documents/e", json={**DOC, "title": "x" * 5000}), 413),
            (
                await client.post(
                    "/v2/highlights/batch",
                    content=b'{"query": "P\xff"}',
                    headers={"content-type": "application/json"},
                ),
                422,
            ),
        ]
        claimed = {**DOC, "chunks": [{**DOC["chunks"][0], "id": f"{SAMPLE_ID}-c0000"}]}
        cases.append((await client.put("/v2/documents/e", json=claimed), 409))
        for response, status in cases:
            assert response.status_code == status, response.text
            assert_documented(response)
        unknown = await client.get("/v2/nothing-here")
        assert unknown.status_code == 404
        assert_error_body(unknown, "not_found")
        wrong_method = await client.delete(f"/v2/documents/{SAMPLE_ID}")
        assert wrong_method.status_code == 405
        # Every method of the path, although GET and PUT are two routes.
        assert wrong_method.headers["allow"] == "GET, PUT"
        assert_error_body(wrong_method, "method_not_allowed")
        options = await client.options(f"/v2/documents/{SAMPLE_ID}/pdf")
        assert (options.status_code, options.headers["allow"]) == (405, "GET, PUT")
        ok = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        assert_documented(ok)


def test_the_document_says_whether_a_token_is_needed() -> None:
    # The demo's (and the checked-in contract's) document: no security, no 401.
    assert "securitySchemes" not in SPEC["components"]
    assert not any(
        "401" in op["responses"] or "security" in op
        for ops in SPEC["paths"].values()
        for op in ops.values()
    )
    secured = create_app(
        make_settings("sqlite+aiosqlite:///unused.db", Path("unused"), auth_read_tokens=["r"])
    ).openapi()
    assert secured["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, ops in secured["paths"].items():
        for method, op in ops.items():
            if path in PROBES:
                assert "security" not in op
                continue
            assert op["security"] == [{"HTTPBearer": []}], (method, path)
            assert "401" in op["responses"]
            assert ("403" in op["responses"]) == (method == "put")
    pdf_params = [
        p["name"] for p in secured["paths"]["/v2/documents/{document_id}/pdf"]["get"]["parameters"]
    ]
    assert {"expires", "signature"} <= set(pdf_params)


async def test_auth_errors_fit_the_documented_schemas(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(
        database_url, pdf_root, auth_read_tokens=["r-token"], auth_write_tokens=["w-token"]
    )
    spec = create_app(settings).openapi()
    async with app_client(settings) as client:
        for response, status in [
            (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN)), 401),
            (await client.get("/v2/documents/x"), 401),
            (await client.get("/v2/documents/x/pdf"), 401),
            (
                await client.put(
                    "/v2/documents/x", json=DOC, headers={"authorization": "Bearer r-token"}
                ),
                403,
            ),
        ]:
            assert response.status_code == status, response.text
            assert_documented(response, spec)
        bad_signature = await client.get("/v2/documents/x/pdf?expires=99999999999&signature=%C3%80")
        assert bad_signature.status_code == 422
        assert_documented(bad_signature, spec)


@pytest.mark.parametrize(
    "path",
    [
        "/v2/highlights/batch",
        # Its PUT ingests in the PDF worker processes.
        pytest.param("/v2/documents/x", marks=pytest.mark.slow),
        "/healthz",
        "/readyz",
    ],
)
async def test_database_outage_errors_fit_the_documented_schemas(pdf_root: Path, path: str) -> None:
    settings = make_settings("postgresql+asyncpg://nobody@127.0.0.1:9/none", pdf_root)
    async with app_client(settings) as client:
        if path == "/v2/highlights/batch":
            response = await client.post(path, json=batch(CHUNK_MAIN))
        elif path in PROBES:
            response = await client.get(path)
        else:
            response = await client.put(path, json=DOC)
    assert response.status_code == 503, response.text
    assert_documented(response)
