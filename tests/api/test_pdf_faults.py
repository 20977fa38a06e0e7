"""PDF files that change under a running service, rotated pages and encrypted files: a highlight is
either on the words a viewer shows, or it is not given at all."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import httpx
import pymupdf
import pytest
from obstore.store import S3Store

from app.core.errors import BadRequest
from tests.api.helpers import CHUNK_MAIN, ingest_sample, similarity
from tests.api.test_highlights import batch
from tests.core.test_error_contract import assert_error_body
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.live import free_port
from tests.fixtures.pdfs import (
    ROTATED_SENTENCES,
    write_encrypted_pdf,
    write_rotated_pdf,
    write_text_pdf,
)
from tests.fixtures.s3 import S3Bucket, create_bucket, moto_server

SAMPLE = Path("sample") / "sample-assembly.pdf"


async def _batch(client: Any, *chunk_ids: str, answer: str | None = None) -> dict[str, Any]:
    body = batch(*chunk_ids) if answer is None else batch(*chunk_ids, answer=answer)
    response = await client.post("/v2/highlights/batch", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _replace_with_other_content(pdf: Path, tmp_path: Path) -> None:
    doc = pymupdf.open(pdf)
    doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
    other = tmp_path / "other.pdf"
    doc.save(other)
    doc.close()
    shutil.copyfile(other, pdf)  # in place: same inode, as an editor or `cp` would do


async def test_pdf_replaced_while_its_index_is_cached_is_pdf_changed(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    pdf = pdf_root / SAMPLE
    original = pdf.read_bytes()
    async with app_client(settings) as client:
        first = await _batch(client, CHUNK_MAIN)
        assert first["results"][0]["status"] == "highlighted"

        _replace_with_other_content(pdf, tmp_path)
        (changed,) = (await _batch(client, CHUNK_MAIN))["results"]
        assert (changed["status"], changed["reason"]) == ("fallback", "pdf_changed")
        assert changed["highlights"] == []
        assert changed["link"].endswith("/pdf#page=1")

        pdf.write_bytes(original[: len(original) // 2])  # truncated by a failed copy
        (truncated,) = (await _batch(client, CHUNK_MAIN))["results"]
        assert (truncated["status"], truncated["reason"]) == ("fallback", "pdf_changed")

        pdf.write_bytes(original)  # put back: the ingested content highlights again
        (restored,) = (await _batch(client, CHUNK_MAIN))["results"]
        assert restored["status"] == "highlighted"


def _ink_box(page: pymupdf.Page) -> pymupdf.Rect:
    """Bounding box of the dark pixels of the page as rendered, i.e. as a viewer shows it, in PDF
    points (rendered at 72 dpi, so one pixel is one point)."""
    pix = page.get_pixmap(dpi=72, colorspace=pymupdf.csGRAY)
    samples = pix.samples
    xs: list[int] = []
    ys: list[int] = []
    for y in range(pix.height):
        row = samples[y * pix.stride : y * pix.stride + pix.width]
        dark = [x for x, value in enumerate(row) if value < 128]
        if dark:
            xs += (dark[0], dark[-1])
            ys.append(y)
    return pymupdf.Rect(min(xs), min(ys), max(xs) + 1, max(ys) + 1)


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
async def test_rects_are_in_the_displayed_frame_of_a_rotated_page(
    database_url: str, pdf_root: Path, rotation: int
) -> None:
    write_rotated_pdf(pdf_root / "rotated.pdf")
    page_number = list(ROTATED_SENTENCES).index(rotation) + 1
    sentence = ROTATED_SENTENCES[rotation]
    chunk = {"id": "rot", "text": sentence, "page_start": page_number, "page_end": page_number}
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/rotated", json={"source_path": "rotated.pdf", "chunks": [chunk]}
        )
        assert put.status_code == 201, put.text
        (result,) = (await _batch(client, "rot", answer=sentence))["results"]
    assert result["status"] == "highlighted", result
    (highlight,) = result["highlights"]
    with pymupdf.open(pdf_root / "rotated.pdf") as doc:
        page = doc[page_number - 1]
        assert (highlight["page_width"], highlight["page_height"]) == (
            pytest.approx(page.rect.width),
            pytest.approx(page.rect.height),
        )
        ink = _ink_box(page)
        rects = [pymupdf.Rect(r["x0"], r["y0"], r["x1"], r["y1"]) for r in highlight["rects"]]
        union = pymupdf.Rect(rects[0])
        for rect in rects[1:]:
            union |= rect
        # The drawn rectangles cover the ink of the sentence, as displayed, and not much more.
        assert union.contains(ink + (2, 2, -2, -2)), (union, ink)
        assert union.get_area() < 1.6 * ink.get_area(), (union, ink)
        # And the words under them, read in the displayed frame, are the sentence.
        derotate = page.derotation_matrix
        under = " ".join(page.get_textbox(rect * derotate) for rect in rects)
    assert similarity(under, sentence) >= 90, under


async def test_encrypted_pdf_is_refused_at_put_and_ingest(
    database_url: str, pdf_root: Path, sample_pdf: Path
) -> None:
    from app.services import ingest_file

    write_encrypted_pdf(sample_pdf, pdf_root / "locked.pdf")
    chunk = {"id": "l1", "text": "The House met.", "page_start": 1, "page_end": 1}
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        response = await client.put(
            "/v2/documents/locked", json={"source_path": "locked.pdf", "chunks": [chunk]}
        )
        assert response.status_code == 422, response.text
        message = response.json()["error"]["message"]
        assert "locked.pdf is encrypted with a user password" in message
        assert str(pdf_root) not in message
        assert (await client.get("/v2/documents/locked")).status_code == 404
    with pytest.raises(BadRequest, match="encrypted with a user password"):
        await ingest_file(settings, pdf_root / "locked.pdf", "locked")


# -- the object store down or read-only: statuses that say so, never "the document is gone" --

FERRY = [
    "The ferry to Lamu leaves the harbour every morning at seven.",
    "Tickets cost four hundred shillings for adults and half that for children.",
]
UPLOAD = {"content-type": "application/pdf"}


def _ferry_batch() -> dict[str, Any]:
    return {
        "query": "When does the ferry leave?",
        "answer": "The ferry leaves the harbour every morning at seven [1].",
        "citations": [{"chunk_id": "ferry-c0000", "citation_id": "1"}],
    }


def _assert_store_down(response: Any) -> None:
    assert_error_body(response, "storage_unavailable")
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
    message = response.json()["error"]["message"]
    assert "missing" not in message
    assert "test-secret-key" not in message
    assert "127.0.0.1" not in message


@pytest.mark.slow
async def test_a_replica_that_cannot_reach_the_store_says_503_never_404(
    s3_bucket: S3Bucket, sqlite_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas share a bucket; the second has no copy of the PDF and the store goes away
    (a port where nothing listens). Every route that needs the store answers 503 with
    Retry-After, and a batch's citation says storage_unavailable: the document is not gone."""
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    url = f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"
    first = make_settings(
        url, tmp_path / "pdfs", storage_url=s3_bucket.url, storage_cache_dir=tmp_path / "a"
    )
    data = write_text_pdf(tmp_path / "ferry.pdf", FERRY, "Ferry").read_bytes()
    async with app_client(first) as client:
        put = await client.put(
            "/v2/documents/ferry/pdf", content=data, headers=UPLOAD, params={"chunk": "true"}
        )
        assert put.status_code == 201, put.text
        batch = await client.post("/v2/highlights/batch", json=_ferry_batch())
        (result,) = batch.json()["results"]
        assert result["status"] == "highlighted", result
        highlight = result["highlights"][0]["highlight_id"]

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    second = first.model_copy(update={"storage_cache_dir": tmp_path / "b", "index_cache_dir": None})
    async with app_client(second) as client:
        _assert_store_down(await client.get("/v2/documents/ferry/pdf"))
        _assert_store_down(await client.get(f"/v2/highlights/{highlight}"))
        _assert_store_down(
            await client.get("/v2/documents/ferry/pages/1.png", params={"highlight": highlight})
        )
        other = write_text_pdf(tmp_path / "other.pdf", FERRY[:1], "Other").read_bytes()
        _assert_store_down(
            await client.put("/v2/documents/other/pdf", content=other, headers=UPLOAD)
        )
        (cited,) = (await client.post("/v2/highlights/batch", json=_ferry_batch())).json()[
            "results"
        ]
        assert (cited["status"], cited["reason"]) == ("fallback", "storage_unavailable"), cited
        assert "not gone" in cited["message"]
        ready = await client.get("/readyz")
        assert (ready.status_code, ready.json()["storage"]) == (503, "unreachable")


@pytest.mark.slow
async def test_a_local_pdf_folder_gone_is_503_not_404(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    """The local-folder backend's outage (an unmounted volume): the same 503, not 404."""
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        assert (await client.get("/v2/documents/sample/pdf")).status_code == 200
        shutil.move(pdf_root, tmp_path / "unmounted")
        _assert_store_down(await client.get("/v2/documents/sample/pdf"))
        shutil.move(tmp_path / "unmounted", pdf_root)
        (pdf_root / SAMPLE).unlink()  # the folder is there and says: no such file
        missing = await client.get("/v2/documents/sample/pdf")
        assert_error_body(missing, "not_found")
        assert missing.status_code == 404


@contextmanager
def _read_only_bucket() -> Iterator[tuple[S3Bucket, dict[str, str]]]:
    """A bucket on a moto server of its own that checks credentials and IAM policies, and the
    AWS_* variables of a user who may list and read it but not write: a read-only key, as an
    operator might hand the service by mistake."""
    with moto_server() as endpoint:
        bucket = S3Bucket(endpoint, create_bucket(endpoint))
        iam = _iam(endpoint)
        iam.create_user(UserName="reader")
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    # AWS checks a listing as s3:ListBucket and a HEAD as s3:GetObject; moto
                    # 5.2 checks the operations' own names (ListObjects, ListObjectsV2,
                    # HeadObject): without them it refused the probe's listing (/readyz said
                    # "unreachable", not "read_only") and the upload's HEAD (not the write).
                    "Action": [
                        "s3:GetObject",
                        "s3:ListBucket",
                        "s3:ListObjects",
                        "s3:ListObjectsV2",
                        "s3:HeadObject",
                    ],
                    "Resource": "*",
                }
            ],
        }
        iam.put_user_policy(
            UserName="reader", PolicyName="read-only", PolicyDocument=json.dumps(policy)
        )
        # From here on moto checks every request's signature and the user's policy.
        httpx.post(f"{endpoint}/moto-api/reset-auth", content=b"0", timeout=10).raise_for_status()
        env = {
            **bucket.env(),
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
        }
        yield bucket, env


@pytest.mark.slow
async def test_a_read_only_bucket_is_not_ready_and_uploads_say_the_write_was_refused(
    sqlite_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    with _read_only_bucket() as (bucket, env):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings = make_settings(
            f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}",
            tmp_path / "pdfs",
            storage_url=bucket.url,
            storage_cache_dir=tmp_path / "cache",
        )
        async with app_client(settings) as client:
            ready = await client.get("/readyz")
            assert ready.status_code == 503, ready.text
            assert ready.json()["storage"] == "read_only"
            (problem,) = ready.json()["problems"]
            assert (
                problem
                == f"the object store {bucket.url} is not writable: AccessDenied (HTTP 403) on put"
            )

            data = write_text_pdf(tmp_path / "ferry.pdf", FERRY, "Ferry").read_bytes()
            upload = await client.put("/v2/documents/ferry/pdf", content=data, headers=UPLOAD)
            assert_error_body(upload, "storage_unavailable")
            assert upload.status_code == 503
            message = upload.json()["error"]["message"]
            assert "not writable: AccessDenied" in message
            assert "refused" in message
            assert "credentials" not in message


@pytest.mark.slow
def test_the_write_probe_asks_the_store_once_per_interval() -> None:
    """Readiness is polled every few seconds by every replica: the write probe's answer stands
    for its interval (a flapping store is asked once a minute per replica, not per poll), and
    the store is asked again once it is over."""
    from app.pdfs.object_store import WRITE_PROBE_PREFIX, WriteProbe

    now = [0.0]
    with _read_only_bucket() as (bucket, env):
        reader = S3Store(
            bucket.bucket,
            prefix=bucket.prefix,
            endpoint=bucket.endpoint,
            access_key_id=env["AWS_ACCESS_KEY_ID"],
            secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region="us-east-1",
            client_options={"allow_http": True},
        )
        probe = WriteProbe(reader, "the store", interval_s=60, clock=lambda: now[0])
        refused = "the store is not writable: AccessDenied (HTTP 403) on put"
        assert probe.problem() == refused
        _allow_writes(bucket.endpoint)
        for _ in range(20):  # 40 s of polls: the answer stands, the store is not asked
            now[0] += 2
            assert probe.problem() == refused
        now[0] += 60
        assert probe.problem() is None
        assert list(reader.list(WRITE_PROBE_PREFIX)) == []  # the probe object was deleted

        # Credentials are blamed when the store says they are wrong, and only then.
        wrong = S3Store(
            bucket.bucket,
            prefix=bucket.prefix,
            endpoint=bucket.endpoint,
            access_key_id=env["AWS_ACCESS_KEY_ID"],
            secret_access_key="not-the-secret",
            region="us-east-1",
            client_options={"allow_http": True},
        )
        assert WriteProbe(wrong, "the store").problem() == (
            "the store is not writable: the credentials were refused "
            "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) on put"
        )


def _allow_writes(endpoint: str) -> None:
    """Give the reader PutObject and DeleteObject (moto's checks off for the change, then on)."""
    httpx.post(f"{endpoint}/moto-api/reset-auth", content=b"inf", timeout=10).raise_for_status()
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": "*"}],
    }
    _iam(endpoint).put_user_policy(
        UserName="reader", PolicyName="read-only", PolicyDocument=json.dumps(policy)
    )
    httpx.post(f"{endpoint}/moto-api/reset-auth", content=b"0", timeout=10).raise_for_status()


def _iam(endpoint: str) -> Any:
    return boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="admin",
        aws_secret_access_key="admin",
    )
