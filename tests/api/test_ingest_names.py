"""Documents stored before files' names were recorded (original_name NULL): the same PDF
ingested again fills the name in and is no change, so its highlights stay valid."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.api.helpers import SAMPLE_ID, ingest_sample
from tests.fixtures.app import make_settings


async def test_an_unnamed_document_ingested_again_unchanged_is_no_change(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    first = await ingest_sample(settings)
    assert first["changed"]
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text("UPDATE document SET original_name = NULL WHERE id = :id"), {"id": SAMPLE_ID}
            )
        again = await ingest_sample(settings)
        async with engine.connect() as connection:
            name = await connection.scalar(
                text("SELECT original_name FROM document WHERE id = :id"), {"id": SAMPLE_ID}
            )
    finally:
        await engine.dispose()
    assert not again["changed"]
    assert name == "sample-assembly.pdf"
