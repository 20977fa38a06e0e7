"""Uploads waiting for a LibreOffice slot wait on the event loop, not in a thread: a thread
blocked on the slots would hold one of the default executor's few threads (6 on 2 cores) for
up to the conversion timeout, and every other blocking call (a batch, /readyz) would queue
behind them. The converter here is a real process, a script that runs until told to stop."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.office import docx_bytes

# Longer than any machine takes to run the probe below, so the probe never waits for it.
TIMEOUT_S = 20.0


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


def _one_slot_settings(sqlite_url: str, tmp_path: Path, started: Path, stop: Path) -> Settings:
    """One conversion slot, and a converter that notes its start in ``started`` and runs until
    ``stop`` exists, then fails."""
    fake = tmp_path / "soffice"
    fake.write_text(
        f"#!/bin/sh\necho $$ >> {started}\nwhile [ ! -e {stop} ]; do sleep 0.05; done\nexit 1\n"
    )
    fake.chmod(0o755)
    return make_settings(
        sqlite_url,
        tmp_path / "pdfs",
        soffice_path=str(fake),
        office_timeout_s=TIMEOUT_S,
        pdf_workers=1,
    )


def _ten_uploads(client: httpx.AsyncClient) -> list[asyncio.Task[httpx.Response]]:
    return [
        asyncio.create_task(
            client.put(
                f"/v2/documents/doc{n}/file",
                params={"filename": f"doc{n}.docx"},
                content=docx_bytes([f"The ferry number {n} leaves at seven."]),
                headers={"content-type": "application/octet-stream"},
            )
        )
        for n in range(10)
    ]


async def test_uploads_waiting_for_a_slot_hold_no_thread(sqlite_url: str, tmp_path: Path) -> None:
    started, stop = tmp_path / "started", tmp_path / "stop"
    settings = _one_slot_settings(sqlite_url, tmp_path, started, stop)
    async with app_client(settings) as client:
        uploads = _ten_uploads(client)
        try:
            while not started.exists():  # one conversion holds the only slot
                assert not all(upload.done() for upload in uploads), uploads[0].result().text
                await asyncio.sleep(0.05)
            # With the waiting uploads each blocked in a thread, this waits for a thread to
            # free, which is when the first of them gives up (ConversionBusy) after TIMEOUT_S.
            probe = await asyncio.to_thread(lambda: "ran")
            waiting = sum(not upload.done() for upload in uploads)
        finally:
            stop.touch()
            for upload in uploads:
                upload.cancel()
            await asyncio.gather(*uploads, return_exceptions=True)
    assert probe == "ran"
    assert waiting == len(uploads)


async def test_a_cancelled_upload_keeps_its_slot_until_its_conversion_ends(
    sqlite_url: str, tmp_path: Path
) -> None:
    # An upload cancelled (a client gone, a shutdown) while its conversion runs: the conversion
    # goes on in its thread, so its slot must stay taken. Given back at the cancellation, the
    # next waiting upload would go to a thread and block there on the converter's own slots;
    # seven such cancellations would hold every one of the executor's six threads.
    started, stop = tmp_path / "started", tmp_path / "stop"
    settings = _one_slot_settings(sqlite_url, tmp_path, started, stop)
    async with app_client(settings) as client:
        uploads = _ten_uploads(client)
        try:
            while not started.exists():
                await asyncio.sleep(0.05)
            for upload in uploads[:7]:  # the holder first, then six that were waiting
                upload.cancel()
                await asyncio.gather(upload, return_exceptions=True)
                await asyncio.sleep(0.05)  # time for a released slot to be taken
            probe = await asyncio.to_thread(lambda: "ran")
            waiting = sum(not upload.done() for upload in uploads[7:])
            conversions = len(started.read_text().split())
        finally:
            stop.touch()
            for upload in uploads:
                upload.cancel()
            await asyncio.gather(*uploads, return_exceptions=True)
    assert probe == "ran"
    assert waiting == 3  # none gave up (ConversionBusy) waiting for a thread
    assert conversions == 1  # the cancelled one's conversion still holds the only slot
