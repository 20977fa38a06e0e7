"""A well-formed lie in the shared store is never believed (moto's S3 server, real HTTP, the
real app): the reliability probe's attack, reproduced.

The probe built a PDF's text index, moved every box 300 pt down, encoded it again with the
project's own codec and put it in the bucket under the PDF's index name: a fresh replica loaded
it and answered ``highlighted`` on the wrong lines. Here the same lie is put there unsigned (the
probe's blob), signed by a wrong or unknown key, and signed by the right key but for another
PDF; each time a fresh replica answers the lines the honest replica answered, counts the
rejection, and puts a blob of its own, signed and bound to the PDF, in the lie's place.
"""

from __future__ import annotations

import hashlib
import shutil
from array import array
from dataclasses import replace
from pathlib import Path, PurePosixPath

import httpx
import pytest
from prometheus_client import REGISTRY

from app.alignment.index import DocumentIndex
from app.core.config import Settings
from app.pdfs.extract import build_index
from app.pdfs.index_cache import blob_name
from app.pdfs.index_codec import decode_index, encode_index
from app.pdfs.index_signing import Binding, SigningKey, SigningKeys, open_blob, seal
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import write_text_pdf
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.slow  # a moto_server process

SECRET = "the-deployment-secret-of-32-characters-or-more"
KEY = f"2026-11:{SECRET}"
# Hansard-like: one speech, many lines, the cited sentence in the middle of the page.
LINES = [
    "Mr Speaker, the House will recall the debate on the county roads last session.",
    "The committee visited eleven wards and heard the residents of each of them.",
    "The ferry to Lamu leaves the harbour every morning at seven o'clock sharp.",
    "Tickets cost four hundred shillings for adults and half that for children.",
    "The committee recommends that the fares be reviewed before the next budget.",
    "Members will find the full schedule of sittings annexed to this report.",
]
SENTENCE = LINES[3]
BATCH = {
    "query": "What does a ferry ticket cost?",
    "answer": SENTENCE.removesuffix(".") + " [1].",
    "citations": [{"chunk_id": "hansard-c0000", "citation_id": "1"}],
}
SHIFT = 300.0  # points down the page, as the probe moved them


@pytest.fixture
def hansard(tmp_path: Path) -> bytes:
    return write_text_pdf(tmp_path / "hansard.pdf", LINES).read_bytes()


def _settings(
    tmp_path: Path, database: str, bucket: S3Bucket, replica: str, keys: list[str]
) -> Settings:
    """A replica of its own (empty read-through copy and index folder), the shared database and
    bucket; no result cache, so every batch places its highlights again."""
    return make_settings(
        database,
        tmp_path / "pdfs",
        storage_url=bucket.url,
        storage_cache_dir=tmp_path / replica / "storage-cache",
        index_cache_dir=tmp_path / replica / "index-cache",
        result_cache_ttl_s=0,
        index_signing_keys=keys,
    )


async def _lines(client: httpx.AsyncClient) -> list[tuple[int, float, float]]:
    """Where the cited sentence was highlighted: page and top and bottom of each line."""
    response = await client.post("/v2/highlights/batch", json=BATCH)
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    rects = [rect for highlight in result["highlights"] for rect in highlight["rects"]]
    assert rects
    return [(r["page"], round(r["y0"], 1), round(r["y1"], 1)) for r in rects]


def _moved_down(index: DocumentIndex) -> DocumentIndex:
    boxes = array("f", index.boxes)
    for at in range(0, len(boxes), 4):
        boxes[at + 1] += SHIFT
        boxes[at + 3] += SHIFT
    return replace(index, boxes=boxes)


def _rejected(reason: str) -> float:
    labels = {"source": "shared", "reason": reason}
    return REGISTRY.get_sample_value("highlight_index_blobs_rejected_total", labels) or 0.0


def _the_index_blob(bucket: S3Bucket, sha: str) -> tuple[str, Binding]:
    """The key of the PDF's index blob in the bucket, and what it is bound to (the OCR settings
    are part of its name when OCR is on)."""
    (path,) = [meta["path"] for batch in bucket.store().list("index/") for meta in batch]
    name = PurePosixPath(path).name
    assert name.startswith(blob_name(sha).removesuffix(".idx"))
    variant = name.removeprefix(blob_name(sha).removesuffix(".idx")).removesuffix(".idx")
    return f"index/{name}", Binding(sha, variant.removeprefix("."))


def _forged(how: str, lie: bytes, binding: Binding) -> bytes:
    if how == "unsigned":  # the probe's blob: the codec's own bytes
        return lie
    if how == "wrong_key":  # the deployment's key id, a guessed secret
        return seal(lie, binding, SigningKey("2026-11", b"a-guessed-secret-of-32-characters"))
    if how == "unknown_key":
        return seal(lie, binding, SigningKey("pipeline", SECRET.encode()))
    # Signed by the right key, but bound to another PDF: a genuine blob copied under this name.
    other = replace(binding, sha256=hashlib.sha256(b"another pdf").hexdigest())
    return seal(lie, other, _keys().current)


def _keys() -> SigningKeys:
    return SigningKeys([SigningKey("2026-11", SECRET.encode())])


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("unsigned", "unsigned"),
        ("wrong_key", "bad_mac"),
        ("unknown_key", "unknown_key"),
        ("other_pdf", "wrong_pdf"),
    ],
)
async def test_a_fresh_replica_never_believes_a_moved_index(
    s3_bucket: S3Bucket,
    sqlite_template: Path,
    tmp_path: Path,
    hansard: bytes,
    how: str,
    reason: str,
) -> None:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    database = f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"
    sha = hashlib.sha256(hansard).hexdigest()

    # The honest replica: uploads, chunks and indexes the PDF (the index goes to the bucket).
    async with app_client(_settings(tmp_path, database, s3_bucket, "a", [KEY])) as client:
        await _upload(client, hansard)
        honest = await _lines(client)
    assert_on_the_cited_line(honest, build_index(hansard))
    key, binding = _the_index_blob(s3_bucket, sha)

    # The lie: the real index of the same PDF, every box 300 pt down, through the real codec.
    real = build_index(hansard)
    lie = encode_index(_moved_down(real))
    moved = decode_index(lie)
    assert moved.chars == real.chars
    assert moved.boxes[1] == pytest.approx(real.boxes[1] + SHIFT)
    s3_bucket.store().put(key, _forged(how, lie, binding))
    before = _rejected(reason)

    async with app_client(_settings(tmp_path, database, s3_bucket, "b", [KEY])) as client:
        assert await _lines(client) == honest
    assert _rejected(reason) == before + 1
    # The lie is gone from the bucket: in its place the index the replica built, signed.
    replaced = bytes(s3_bucket.store().get(key).bytes())
    assert decode_index(open_blob(replaced, binding, _keys()).payload).boxes == real.boxes


async def test_without_a_key_the_shared_store_is_not_believed(
    s3_bucket: S3Bucket, sqlite_template: Path, tmp_path: Path, hansard: bytes
) -> None:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    database = f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"
    sha = hashlib.sha256(hansard).hexdigest()
    async with app_client(_settings(tmp_path, database, s3_bucket, "a", [KEY])) as client:
        put = await _upload(client, hansard)
        honest = await _lines(client)
    key, _ = _the_index_blob(s3_bucket, sha)
    lie = encode_index(_moved_down(build_index(hansard)))
    s3_bucket.store().put(key, lie)
    before = _rejected("unsigned")

    async with app_client(_settings(tmp_path, database, s3_bucket, "b", [])) as client:
        assert await _lines(client) == honest
    # Neither read (nothing refused) nor written: the lie is still there, answered around.
    assert _rejected("unsigned") == before
    assert bytes(s3_bucket.store().get(key).bytes()) == lie
    assert put.status_code == 201


async def _upload(client: httpx.AsyncClient, pdf: bytes) -> httpx.Response:
    put = await client.put(
        "/v2/documents/hansard/pdf",
        content=pdf,
        headers={"content-type": "application/pdf"},
        params={"chunk": "true"},
    )
    assert put.status_code == 201, put.text
    return put


def assert_on_the_cited_line(lines: list[tuple[int, float, float]], index: DocumentIndex) -> None:
    """Every highlighted line sits on the cited sentence's line of the PDF as it really is."""
    start = index.chars.index(SENTENCE)
    tops = [index.boxes[4 * at + 1] for at in range(start, start + len(SENTENCE))]
    bottoms = [index.boxes[4 * at + 3] for at in range(start, start + len(SENTENCE))]
    for page, top, bottom in lines:
        assert page == 1
        assert min(tops) - 1 <= (top + bottom) / 2 <= max(bottoms) + 1, (lines, min(tops))
