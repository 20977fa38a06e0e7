"""The checked-in frontend contract stays true: the examples fit the OpenAPI schemas, and the
example response is exactly what the service answers to the example request today.

After a deliberate change, re-record with
    HIGHLIGHT_UPDATE_EXAMPLES=1 .venv/bin/python -m pytest tests/test_contract.py
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import jsonschema
import pytest
from pydantic import BaseModel

from app.cli import SAMPLE_DOCUMENT_ID
from app.core.errors import AppError
from app.documents.schemas import ChunkIn, DocumentUpsert
from app.highlights.schemas import CitationIn, HighlightBatchRequest
from app.main import create_app
from app.services import ingest_file
from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample, sse_events
from tests.api.test_highlights import batch
from tests.conftest import PROJECT_ROOT
from tests.fixtures.app import app_client, make_settings

CONTRACT = PROJECT_ROOT / "frontend-contract"


def load(name: str) -> Any:
    return json.loads((CONTRACT / name).read_text())


def validator_for(component: str) -> jsonschema.Draft202012Validator:
    spec = load("openapi.json")
    # OpenAPI 3.1 schemas are JSON Schema 2020-12; refs point into #/components/schemas.
    schema = {"$ref": f"#/components/schemas/{component}", "components": spec["components"]}
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize(
    ("example", "component"),
    [
        ("examples/batch-request.json", "HighlightBatchRequest"),
        ("examples/batch-response.json", "HighlightBatchResponse"),
    ],
)
def test_examples_fit_the_openapi_schemas(example: str, component: str) -> None:
    validator_for(component).validate(load(example))


@pytest.mark.slow  # ingests in the PDF worker processes
async def test_example_response_is_what_the_service_answers(
    tmp_path: Path, sample_pdf: Path
) -> None:
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", tmp_path / "pdfs")
    from app.db.migrate import upgrade

    upgrade(settings.database_url)
    await ingest_file(settings, sample_pdf, SAMPLE_DOCUMENT_ID)
    async with app_client(settings) as client:
        response = await client.post(
            "/v2/highlights/batch", json=load("examples/batch-request.json")
        )
    if os.environ.get("HIGHLIGHT_UPDATE_EXAMPLES") == "1":
        # Deliberate behaviour changes: re-record, then review the diff before committing.
        text = json.dumps(response.json(), indent=2, ensure_ascii=True) + "\n"
        (CONTRACT / "examples" / "batch-response.json").write_text(text)
    assert response.json() == load("examples/batch-response.json")


# -- what the service always sends is required; the headers a client reads are declared --

# Response fields the service may leave out, and why. Every other field of every response schema
# must be required: the service always sends it (null where the schema allows null).
MAY_BE_LEFT_OUT = {("ErrorDetail", "details"): "error_response drops it when there are none"}
REQUEST_MODELS: list[type[BaseModel]] = [HighlightBatchRequest, CitationIn, DocumentUpsert, ChunkIn]
CHUNK = {"id": "contract-1", "text": "The House met.", "page_start": 1, "page_end": 1}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.rsplit("/", 1)[1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _reachable(spec: dict[str, Any], roots: Iterable[str]) -> set[str]:
    schemas, seen, todo = spec["components"]["schemas"], set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_refs(schemas[name]))
    return seen


def _operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def response_schemas(spec: dict[str, Any]) -> set[str]:
    """Every schema a response body (or a stream event's data) may use."""
    roots = [
        name
        for _, _, operation in _operations(spec)
        for response in operation["responses"].values()
        for name in _refs(response.get("content", {}))
    ]
    return _reachable(spec, roots)


def request_schemas(spec: dict[str, Any]) -> set[str]:
    roots = [name for _, _, op in _operations(spec) for name in _refs(op.get("requestBody", {}))]
    return _reachable(spec, roots)


def test_response_fields_the_service_always_sends_are_required() -> None:
    spec = load("openapi.json")
    schemas = spec["components"]["schemas"]
    responses = response_schemas(spec)
    assert {"HighlightBatchResponse", "CitationEvent", "StoredHighlightOut"} <= responses
    optional = {
        (name, field)
        for name in responses
        for field in schemas[name].get("properties", {})
        if field not in schemas[name].get("required", [])
    }
    assert optional == set(MAY_BE_LEFT_OUT)
    # One schema per model, as the models are named: no model is both sent and received, so
    # pydantic never splits one into Name-Input and Name-Output.
    assert not responses & request_schemas(spec)
    assert not [name for name in schemas if name.endswith(("-Input", "-Output"))]


def test_request_fields_with_defaults_stay_optional() -> None:
    schemas = load("openapi.json")["components"]["schemas"]
    optional = set()
    for model in REQUEST_MODELS:
        needed = {name for name, field in model.model_fields.items() if field.is_required()}
        assert set(schemas[model.__name__]["required"]) == needed, model.__name__
        optional |= {
            (model.__name__, f) for f in set(schemas[model.__name__]["properties"]) - needed
        }
    assert ("CitationIn", "citation_id") in optional


def _header(spec: dict[str, Any], response: dict[str, Any], name: str) -> dict[str, Any] | None:
    header = response.get("headers", {}).get(name)
    if header is not None and "$ref" in header:
        header = spec["components"]["headers"][header["$ref"].rsplit("/", 1)[1]]
    return cast("dict[str, Any] | None", header)


def test_every_503_declares_retry_after_and_every_response_its_request_id() -> None:
    spec = load("openapi.json")
    answering_503 = []
    for path, method, operation in _operations(spec):
        for status, response in operation["responses"].items():
            request_id = _header(spec, response, "X-Request-ID")
            assert request_id is not None, (method, path, status)
            assert request_id["required"] is True
        if "503" in operation["responses"]:
            answering_503.append(path)
            retry_after = _header(spec, operation["responses"]["503"], "Retry-After")
            assert retry_after is not None, f"{method} {path}: 503 without Retry-After"
            assert retry_after["required"] is True
            assert retry_after["schema"]["type"] == "integer"
    assert {"/v2/highlights/batch", "/v2/highlights/stream", "/readyz"} <= set(answering_503)


def _subclasses(cls: type[AppError]) -> Iterator[type[AppError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_error_answered_503_carries_retry_after() -> None:
    # The modules that define errors, so that every subclass exists.
    import app.documents.errors
    import app.highlights.errors
    import app.llm.errors
    import app.pdfs.errors  # noqa: F401

    unavailable = [cls for cls in _subclasses(AppError) if cls.status_code == 503]
    assert {c.__name__ for c in unavailable} >= {"StorageUnavailable", "Busy", "PdfWorkStalled"}
    for cls in unavailable:
        assert int((cls.headers or {}).get("Retry-After", "0")) >= 1, cls.__name__


def _fits(component: str, response: httpx.Response, status: int = 200) -> Any:
    """The response's body, after checking its status, that it fits the schema (every required
    field present, of its type) and that it carries its request id."""
    assert response.status_code == status, response.text
    assert response.headers["x-request-id"]
    data = response.json()
    validator_for(component).validate(data)
    return data


@pytest.mark.slow  # the PDF worker processes
async def test_real_responses_carry_every_field_the_schema_requires(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    """A known and an unknown chunk (the nullable fields null), through every route a frontend
    or an ingestion reads JSON from."""
    shutil.copyfile(sqlite_template, tmp_path / "c.db")
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", pdf_root)
    await ingest_sample(settings)
    body = batch(CHUNK_MAIN, "no-such-chunk")
    upload = {"content-type": "application/pdf"}
    pdf = (pdf_root / "sample" / "sample-assembly.pdf").read_bytes()
    async with app_client(settings) as client:
        answer = _fits(
            "HighlightBatchResponse", await client.post("/v2/highlights/batch", json=body)
        )
        known, unknown = answer["results"]
        assert known["highlights"]
        assert known["claims"]
        assert (unknown["pdf_url"], unknown["link"], unknown["document_title"]) == (None,) * 3

        stream = await client.post("/v2/highlights/stream", json=body)
        assert stream.status_code == 200
        events = sse_events(stream.text)
        assert [name for name, _ in events] == ["citation", "citation", "summary"]
        for name, data in events:
            validator_for("CitationEvent" if name == "citation" else "BatchSummary").validate(data)

        highlight_id = known["highlights"][0]["highlight_id"]
        _fits("StoredHighlightOut", await client.get(f"/v2/highlights/{highlight_id}"))
        for query in ("", "?include_text=true"):
            _fits("DocumentOut", await client.get(f"/v2/documents/{SAMPLE_ID}{query}"))
        document = {"source_path": "sample/sample-assembly.pdf", "chunks": [CHUNK]}
        put = await client.put("/v2/documents/contract", json=document)
        _fits("DocumentUpsertResult", put, 201)
        stored = await client.put("/v2/documents/up/pdf", content=pdf, headers=upload)
        assert _fits("PdfUploadResult", stored, 201)["chunks"] is None
        chunked = await client.put(
            "/v2/documents/up/pdf", content=pdf, headers=upload, params={"chunk": "true"}
        )
        assert _fits("PdfUploadResult", chunked, 201)["chunks"]
        _fits("ErrorBody", await client.get("/v2/documents/nothing-here"), 404)
        _fits("ErrorBody", await client.post("/v2/highlights/batch", json={}), 422)
        _fits("Health", await client.get("/healthz"))
        _fits("Liveness", await client.get("/livez"))
        _fits("Readiness", await client.get("/readyz"))


def _retry_after_declared(path: str, method: str = "get") -> None:
    response = load("openapi.json")["paths"][path][method]["responses"]["503"]
    assert "Retry-After" in response["headers"], path


def _unavailable(response: httpx.Response, path: str) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["x-request-id"]
    _retry_after_declared(path)


@pytest.mark.slow  # the PDF worker processes
async def test_a_real_503_carries_the_retry_after_its_operation_declares(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    """The PDFs' folder gone (an unmounted volume): every route that needs it is 503 with
    Retry-After, and so is /readyz; then a shutdown beginning, as SIGTERM does."""
    shutil.copyfile(sqlite_template, tmp_path / "c.db")
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", pdf_root)
    await ingest_sample(settings)
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        answer = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        highlight_id = answer["results"][0]["highlights"][0]["highlight_id"]
        shutil.move(pdf_root, tmp_path / "unmounted")
        pdf = "/v2/documents/{document_id}/pdf"
        _unavailable(await client.get(f"/v2/documents/{SAMPLE_ID}/pdf"), pdf)
        _unavailable(
            await client.get(f"/v2/highlights/{highlight_id}"), "/v2/highlights/{highlight_id}"
        )
        preview = f"/v2/documents/{SAMPLE_ID}/pages/1.png?highlight={highlight_id}"
        _unavailable(await client.get(preview), "/v2/documents/{document_id}/pages/{page}.png")
        _unavailable(await client.get("/readyz"), "/readyz")
        shutil.move(tmp_path / "unmounted", pdf_root)
        assert (await client.get("/readyz")).status_code == 200
        app.state.services.highlights.begin_shutdown()
        draining = await client.get("/readyz")
        _unavailable(draining, "/readyz")
        assert draining.json()["problems"] == ["shutting down"]
