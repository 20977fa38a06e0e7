"""LibreOffice conversions as pdfs/convert.py runs them: the real soffice, private profiles (two
at once do not collide), and a conversion past its clock killed with its whole process group."""

from __future__ import annotations

import dataclasses
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pymupdf
import pytest

from app.pdfs import convert, soffice
from app.pdfs.convert import ConvertLimits, OfficeConverter
from app.pdfs.errors import ConversionTimedOut, ConversionTooLarge
from tests.fixtures.office import docx_bytes, odt_linking, rtf_bytes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) needed"),
]


def _text(pdf: bytes) -> str:
    with pymupdf.open(stream=pdf) as doc:
        return " ".join(" ".join(page.get_text() for page in doc).split())


def _converters_running(under: Path) -> list[str]:
    """LibreOffice processes whose profile is under ``under`` (this test's, not another's)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if "soffice" in line and str(under) in line:
            found.append(line[:120])
    return found


def test_two_conversions_at_once_each_get_their_own_pdf() -> None:
    converter = OfficeConverter(ConvertLimits(slots=2))
    results: dict[str, str] = {}

    def convert(word: str) -> None:
        data = docx_bytes([f"The {word} ferry leaves at seven."])
        results[word] = _text(converter.convert(data, "docx", f"{word}.docx"))

    try:
        threads = [threading.Thread(target=convert, args=(w,)) for w in ("blue", "green")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        converter.close()
    assert results == {
        "blue": "The blue ferry leaves at seven.",
        "green": "The green ferry leaves at seven.",
    }


def test_a_conversion_past_its_clock_is_killed_with_its_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The converter's folders (profiles, its files) under this test's own folder.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # 60,000 paragraphs take LibreOffice minutes (20,000 took 102 s), far past the 1 s allowed
    # on any machine: 6,000 once converted within the second on a quiet one.
    big = rtf_bytes([f"Paragraph {n} of a long report about ferries." for n in range(60_000)])
    converter = OfficeConverter(ConvertLimits())
    try:
        # The template first, with time to spare: with 1 s its own first start would time out
        # and the conversion below would never run on the template's copy, as real ones do.
        converter.convert(rtf_bytes(["A short note."]), "rtf", "note.rtf")
        assert converter._template is not None
        converter.limits = dataclasses.replace(converter.limits, timeout_s=1.0)
        with pytest.raises(ConversionTimedOut, match=r"report\.rtf was not converted"):
            converter.convert(big, "rtf", "report.rtf")
    finally:
        converter.close()
    # Killed with the group by the time the error is raised, not left to notice on its own
    # that the script that started it is gone.
    assert _converters_running(tmp_path) == []


class _Requests(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.seen.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def picture_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on this machine's loopback, recording what is asked of it."""
    seen: list[str] = []
    handler = type("Handler", (_Requests,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/picture.png", seen
    finally:
        server.shutdown()
        server.server_close()


def _fetches(url: str, isolate: bool | None) -> None:
    converter = OfficeConverter(ConvertLimits(isolate_network=isolate))
    try:
        assert _text(converter.convert(odt_linking(url), "odt", "linked.odt")) == "A picture:"
    finally:
        converter.close()


@pytest.mark.skipif(not soffice.can_isolate(), reason="user namespaces are not permitted here")
def test_a_linked_picture_is_fetched_by_neither_guard_alone(
    picture_server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = picture_server
    _fetches(url, None)  # both guards: the profile's settings and the network namespace
    assert seen == []
    monkeypatch.setattr(convert, "_SETTINGS", "")
    _fetches(url, None)  # the namespace alone: its loopback is not this machine's
    assert seen == []
    _fetches(url, False)  # neither: LibreOffice fetches it, as a document asks
    assert seen == ["/picture.png"]


def test_the_profile_alone_keeps_a_linked_picture_unfetched(
    picture_server: tuple[str, list[str]],
) -> None:
    url, seen = picture_server
    _fetches(url, False)
    assert seen == []


def test_a_conversion_over_its_memory_is_refused_naming_the_setting() -> None:
    # 128 MB: LibreOffice cannot even map its libraries (it needs about 256 MB to start).
    converter = OfficeConverter(ConvertLimits(memory_mb=128))
    try:
        with pytest.raises(ConversionTooLarge, match=r"more than 128 MB .*OFFICE_MEMORY_MB"):
            converter.convert(docx_bytes(["The ferry leaves at seven."]), "docx", "a.docx")
    finally:
        converter.close()


def test_a_pdf_over_the_size_cap_is_refused() -> None:
    converter = OfficeConverter(ConvertLimits(max_output_bytes=4096))
    try:
        with pytest.raises(ConversionTooLarge, match=r"larger than this service accepts \(4096"):
            converter.convert(docx_bytes(["The ferry leaves at seven."]), "docx", "a.docx")
    finally:
        converter.close()


def test_without_a_template_each_profile_still_keeps_a_linked_picture_unfetched(
    picture_server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = picture_server
    starts: list[Path] = []

    def cannot(self: OfficeConverter, program: str, profile: Path) -> None:
        starts.append(profile)
        raise OSError("no template here (as when LibreOffice's first start fails)")

    monkeypatch.setattr(OfficeConverter, "_first_start", cannot)
    converter = OfficeConverter(ConvertLimits(isolate_network=False))
    try:
        for _ in range(2):
            assert _text(converter.convert(odt_linking(url), "odt", "linked.odt")) == "A picture:"
    finally:
        converter.close()
    assert seen == []  # the settings are in each conversion's own profile
    assert len(starts) == 1  # a failed template is not tried again per conversion


# Run in a process of its own: it makes itself a subreaper (as PID 1 in a container without an
# init is), so the converter's orphans are handed to it, and lists its zombie children after.
_ORPHANS = """
import ctypes, sys
import psutil
from app.pdfs.convert import ConvertLimits, OfficeConverter
from app.pdfs.errors import ConversionTimedOut
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
converter = OfficeConverter(ConvertLimits(soffice=sys.argv[1], timeout_s=1.0,
                                          isolate_network=False))
try:
    converter.convert(b"{\\\\rtf1 x}", "rtf", "a.rtf")
except ConversionTimedOut:
    pass
me = psutil.Process()
print(len([c for c in me.children() if c.status() == psutil.STATUS_ZOMBIE]))
"""


def test_a_killed_conversion_leaves_no_zombie_to_its_reaper(tmp_path: Path) -> None:
    # soffice's own shape: a script whose child outlives it (soffice.bin under oosplash).
    fake = tmp_path / "soffice"
    fake.write_text("#!/bin/sh\nsleep 300 &\nsleep 300\n")
    fake.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-c", _ORPHANS, str(fake)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
