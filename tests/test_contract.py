"""The checked-in frontend contract stays true: the examples fit the OpenAPI schemas, and the
example response is exactly what the service answers to the example request today.

After a deliberate change, re-record with
    HIGHLIGHT_UPDATE_EXAMPLES=1 .venv/bin/python -m pytest tests/test_contract.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from app.cli import SAMPLE_DOCUMENT_ID
from app.services import ingest_file
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
