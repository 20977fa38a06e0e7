"""The record of an original's conversion (pdfs/originals.py) with the real LibreOffice: a
record that does not parse is replaced, and an original already stored is not written again."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.pdfs.convert import ConvertLimits, OfficeConverter
from app.pdfs.originals import converted_pdf, original_key, record_key
from app.pdfs.storage import PdfStorage
from tests.fixtures.office import rtf_bytes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) needed"),
]

RTF = rtf_bytes(["The ferry to Lamu leaves the harbour every morning at seven."])
SHA = hashlib.sha256(RTF).hexdigest()


class _Writes(PdfStorage):
    """A PdfStorage noting the keys it was asked to write."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.written: list[str] = []

    def put_record(self, key: str, data: bytes, *, replace: bool = False) -> bool:
        self.written.append(key)
        return super().put_record(key, data, replace=replace)


@pytest.fixture
def converter() -> Iterator[OfficeConverter]:
    converter = OfficeConverter(ConvertLimits())
    try:
        yield converter
    finally:
        converter.close()


def test_a_record_that_does_not_parse_is_replaced(
    tmp_path: Path, converter: OfficeConverter
) -> None:
    storage = PdfStorage(tmp_path)
    (tmp_path / record_key(SHA)).parent.mkdir(parents=True)
    (tmp_path / record_key(SHA)).write_bytes(b"not a hash\n")
    first = converted_pdf(storage, converter, RTF, SHA, "rtf", "a.rtf")
    assert (tmp_path / record_key(SHA)).read_bytes().strip() == first.sha256.encode()
    again = converted_pdf(storage, converter, RTF, SHA, "rtf", "a.rtf")
    assert (again.sha256, again.newly_stored) == (first.sha256, False)


def test_an_original_stored_before_is_not_written_again(
    tmp_path: Path, converter: OfficeConverter
) -> None:
    storage = _Writes(tmp_path)
    converted_pdf(storage, converter, RTF, SHA, "rtf", "a.rtf")
    assert original_key(SHA, "rtf") in storage.written
    storage.written.clear()
    again = converted_pdf(storage, converter, RTF, SHA, "rtf", "a.rtf")
    assert not again.newly_stored
    assert storage.written == []
