"""The local-folder backend's additions for uploads and probes: content-addressed saving that
rewrites nothing the second time, the readiness check, and the factory's default."""

from __future__ import annotations

import hashlib
from pathlib import Path

from app.core.config import Settings
from app.pdfs.backends import build_storage
from app.pdfs.storage import PdfStorage
from tests.fixtures.pdfs import write_text_pdf


def test_the_default_storage_is_the_local_folder(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, pdf_root=tmp_path / "pdfs")
    storage = build_storage(settings, None)
    assert type(storage) is PdfStorage
    assert storage.root == (tmp_path / "pdfs").resolve()
    assert storage.index_blobs() is None


def test_save_is_content_addressed_and_idempotent(tmp_path: Path) -> None:
    data = write_text_pdf(tmp_path / "a.pdf", ["The ferry leaves at seven."]).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    storage = PdfStorage(tmp_path / "pdfs")
    first = storage.save(data, sha)
    assert (first.source_path, first.newly_stored) == (f"ingested/{sha}.pdf", True)
    target = tmp_path / "pdfs" / first.source_path
    written = target.stat().st_mtime_ns
    assert storage.save(data, sha).newly_stored is False
    assert target.stat().st_mtime_ns == written
    assert storage.verify(first.source_path, sha) == target.resolve()

    target.write_bytes(b"%PDF-1.7 damaged")  # a damaged copy is replaced, not trusted
    assert storage.save(data, sha).newly_stored is True
    assert target.read_bytes() == data


def test_problem_says_why_without_the_servers_path(tmp_path: Path) -> None:
    root = tmp_path / "pdfs"
    storage = PdfStorage(root)
    problem = storage.problem()
    assert problem == "the PDF folder (HIGHLIGHT_PDF_ROOT) does not exist"
    root.mkdir()
    assert storage.problem() is None
