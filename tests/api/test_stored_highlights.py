"""Every place a reader reaches after a batch (GET /v2/highlights/{id}, the PDF the viewer draws
on, page previews, the links in results) shows what the answer meant, or says it cannot: never
old rectangles on a new file, never another sentence under an old id, never a dead id or link.
Each test failed on a44369f."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.conftest import _pg_execute
from tests.fixtures.app import app_client, make_settings

SAMPLE = Path("sample") / "sample-assembly.pdf"
# Same length, so the sentence of each chunk has the same offsets (0, 51).
PAGE_1 = "The ferry to Lamu leaves the harbour every morning."
PAGE_2 = "The bridge at Kilifi will close for repair in June."


def _two_page_pdf(path: Path) -> None:
    assert len(PAGE_1) == len(PAGE_2)
    doc = pymupdf.open()
    for sentence in (PAGE_1, PAGE_2):
        doc.new_page(width=595, height=842).insert_text(
            (72, 100), sentence, fontname="helv", fontsize=11
        )
    doc.save(path)
    doc.close()


def _chunk(text: str, page: int) -> dict[str, Any]:
    return {"id": "ferry-c1", "text": text, "page_start": page, "page_end": page}


async def _ids(client: Any, body: dict[str, Any], path: str = "/v2/highlights/batch") -> list[str]:
    response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    return [h["highlight_id"] for r in response.json()["results"] for h in r["highlights"]]


async def test_new_text_at_the_same_offsets_gets_a_new_id(
    database_url: str, pdf_root: Path
) -> None:
    """An upstream re-chunks the same PDF: chunk ferry-c1 now holds page 2's sentence, at the
    offsets page 1's had. Its highlight must be page 2's, under an id of its own."""
    _two_page_pdf(pdf_root / "ferry.pdf")
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        for text, page, answer in ((PAGE_1, 1, "The ferry leaves every morning [1]."),
                                   (PAGE_2, 2, "The bridge will close in June [1].")):  # fmt: skip
            put = await client.put(
                "/v2/documents/ferry",
                json={"source_path": "ferry.pdf", "chunks": [_chunk(text, page)]},
            )
            assert put.status_code in (200, 201), put.text
            body = {"query": "What happens?", "answer": answer,
                    "citations": [{"chunk_id": "ferry-c1", "citation_id": "1"}]}  # fmt: skip
            (highlight_id,) = await _ids(client, body)
            stored = (await client.get(f"/v2/highlights/{highlight_id}")).json()["highlight"]
            assert (stored["text"], stored["page"]) == (text, page)
            preview = await client.get(
                f"/v2/documents/ferry/pages/{page}.png?highlight={highlight_id}"
            )
            assert preview.status_code == 200, preview.text


def _replace_on_disk(pdf: Path, tmp_path: Path) -> None:
    doc = pymupdf.open(pdf)
    doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
    doc.save(tmp_path / "other.pdf")
    doc.close()
    shutil.copyfile(tmp_path / "other.pdf", pdf)


async def test_a_pdf_replaced_on_disk_is_never_drawn_with_old_rectangles(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    original = (pdf_root / SAMPLE).read_bytes()
    async with app_client(settings) as client:
        (first, *_) = await _ids(client, batch(CHUNK_MAIN))
        stored = await client.get(f"/v2/highlights/{first}")
        assert stored.status_code == 200
        pinned = stored.json()["pdf_url"]
        assert pinned == f"/v2/documents/{SAMPLE_ID}/pdf?sha256={stored.json()['pdf_sha256']}"
        assert (await client.get(pinned)).content == original

        _replace_on_disk(pdf_root / SAMPLE, tmp_path)  # no re-ingest: the database knows nothing
        for url in (f"/v2/highlights/{first}", pinned,
                    f"/v2/documents/{SAMPLE_ID}/pages/1.png?highlight={first}"):  # fmt: skip
            changed = await client.get(url)
            assert changed.status_code == 409, (url, changed.text)
            assert changed.json()["error"]["code"] == "pdf_changed"
            assert "re-ingest" in changed.json()["error"]["message"]
        # A plain link still opens the file as it is now, under no claim to be the ingested one.
        plain = await client.get(f"/v2/documents/{SAMPLE_ID}/pdf")
        assert plain.status_code == 200
        assert plain.headers.get("etag") != f'"{stored.json()["pdf_sha256"]}"'

        (pdf_root / SAMPLE).write_bytes(original)
        assert (await client.get(f"/v2/highlights/{first}")).status_code == 200
        assert (await client.get(pinned)).status_code == 200


async def test_every_id_of_a_cached_answer_can_be_fetched(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """A document put back to its earlier content: the cached answer of that content is right
    again, but its highlight rows were deleted when the content changed in between."""
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    original = (pdf_root / SAMPLE).read_bytes()
    async with app_client(settings) as client:
        before = await _ids(client, batch(CHUNK_MAIN))
        _replace_on_disk(pdf_root / SAMPLE, tmp_path)
        await ingest_sample(settings)
        (pdf_root / SAMPLE).write_bytes(original)
        await ingest_sample(settings)
        response = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        assert response.headers["x-highlight-cache"] == "hit"
        again = [h["highlight_id"] for h in response.json()["results"][0]["highlights"]]
        assert again == before
        for highlight_id in again:
            found = await client.get(f"/v2/highlights/{highlight_id}")
            assert found.status_code == 200, found.text


async def test_links_in_answers_of_the_legacy_path_open(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        response = await client.post("/api/v1/v2/highlights/batch", json=batch(CHUNK_MAIN))
        (result,) = response.json()["results"]
        for link in (result["link"], result["viewer_link"]):
            opened = await client.get(link.split("#", 1)[0])
            assert opened.status_code == 200, link


async def test_concurrent_batches_store_every_highlight_id(
    database_url: str, pdf_root: Path
) -> None:
    await _race(database_url, pdf_root, rounds=12)


async def _race(database_url: str, pdf_root: Path, rounds: int) -> None:
    """Batches citing the same new chunks in opposite orders, all at once, each also citing a
    chunk of its own. Each round's chunks are new, so their highlight rows are inserted
    concurrently, not found committed. On PostgreSQL the inserts deadlocked (rows taken in
    request order), and the loser's own highlights were never stored."""
    settings = make_settings(database_url, pdf_root, result_cache_ttl_s=0)
    await ingest_sample(settings)
    answer = (
        "The programme will cost 12.5 billion shillings; each county pays one third of the "
        "running costs [1]. Eleven bids were received and three firms were short-listed [2]."
    )
    async with app_client(settings) as client:
        text = (await client.get(f"/v2/documents/{SAMPLE_ID}?include_text=true")).json()
        # What a PUT takes of the chunk: its text and pages (the rest is what the service says).
        main = {k: text["chunks"][0][k] for k in ("text", "page_start", "page_end")}
        answered: list[list[str]] = []
        for round_ in range(rounds):
            shared = [f"race-{round_}-c{i}" for i in range(6)]
            own = [f"race-{round_}-own{i}" for i in range(6)]
            chunks = [
                {**main, "id": chunk_id, "ordinal": i} for i, chunk_id in enumerate(shared + own)
            ]
            put = await client.put(
                f"/v2/documents/race-{round_}",
                json={"source_path": str(SAMPLE), "chunks": chunks},
            )
            assert put.status_code == 201, put.text
            orders = [shared, shared[::-1]]
            answered += await asyncio.gather(
                *(_ids(client, batch(*orders[n % 2], own[n], answer=answer)) for n in range(6))
            )
        found = {i for ids in answered for i in ids}
        assert len(found) >= 12 * rounds
        missing = []
        for highlight_id in sorted(found):
            response = await client.get(f"/v2/highlights/{highlight_id}")
            if response.status_code != 200:
                missing.append(highlight_id)
        assert not missing, f"{len(missing)} of {len(found)} answered ids are not stored"


SLOW_INSERTS = """
CREATE OR REPLACE FUNCTION slow_highlight_insert() RETURNS trigger AS $$
BEGIN PERFORM pg_sleep(0.005); RETURN NEW; END $$ LANGUAGE plpgsql;
CREATE TRIGGER slow_highlight_insert BEFORE INSERT ON highlight
FOR EACH ROW EXECUTE FUNCTION slow_highlight_insert();
"""


@pytest.mark.postgres
async def test_slow_concurrent_highlight_inserts_neither_deadlock_nor_lose_ids(
    postgres_url: str, pdf_root: Path
) -> None:
    """The same race, made certain: a trigger slows each highlight insert to 5 ms, as a loaded
    server is, so opposite-order batches always overlap. Rows taken in request order deadlock
    here every round; in id order they queue."""
    plain = postgres_url.replace("+asyncpg", "")
    await _pg_execute(plain, "TRUNCATE chunk, document, highlight, result_cache")
    await _pg_execute(plain, SLOW_INSERTS)
    try:
        await _race(postgres_url, pdf_root, rounds=3)
    finally:
        await _pg_execute(
            plain, "DROP TRIGGER IF EXISTS slow_highlight_insert ON highlight; "
            "DROP FUNCTION IF EXISTS slow_highlight_insert();"
        )  # fmt: skip
