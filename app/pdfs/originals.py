"""An Office document's original file and its converted PDF, stored by the original's content.

LibreOffice writes the time into every PDF it makes, so converting the same DOCX twice gives
two PDFs with different hashes: a document uploaded again unchanged would count as changed and
lose its stored highlights. So the first conversion of an original is recorded under the
original's hash (``converted/<original sha256>.sha256``, holding the PDF's hash), and the same
original later gets that PDF back without being converted again, for any document id and from
``ingest`` or an upload alike. The record is written once (create-only): of two uploads racing
with the same new original, both convert, one record wins and both use its PDF. A record whose
PDF is gone (or damaged) is replaced by a new conversion.

The original is kept beside the PDFs by its content too (``originals/<sha256>.<ext>``), for a
later conversion by another LibreOffice and to hand it back; the document names it
(``original_path``, ``original_sha256``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from app.pdfs.convert import OfficeConverter
from app.pdfs.errors import PdfChanged, PdfMissing
from app.pdfs.storage import PdfStorage, content_key

ORIGINALS = "originals"
CONVERTED = "converted"
_SHA256 = re.compile(rb"[0-9a-f]{64}")


@dataclass(frozen=True)
class ConvertedPdf:
    data: bytes  # the PDF
    sha256: str  # the PDF's
    source_path: str  # where the PDF is stored (content_key)
    original_path: str  # where the original is stored
    newly_stored: bool  # False: this original's PDF was stored before (nothing was converted)


def original_key(sha256: str, extension: str) -> str:
    return f"{ORIGINALS}/{sha256}.{extension}"


def record_key(sha256: str) -> str:
    return f"{CONVERTED}/{sha256}.sha256"


def known_pdf(storage: PdfStorage, data: bytes, sha256: str, extension: str) -> ConvertedPdf | None:
    """Blocking: the stored PDF of an original converted before (None: it needs converting),
    so that a known file waits for no conversion slot."""
    recorded = _recorded(storage, sha256)
    pdf = _stored_pdf(storage, recorded) if recorded is not None else None
    if recorded is None or pdf is None:
        return None
    original = _keep_original(storage, data, sha256, extension)
    return ConvertedPdf(pdf, recorded, content_key(recorded), original, False)


def converted_pdf(
    storage: PdfStorage,
    converter: OfficeConverter,
    data: bytes,
    sha256: str,
    extension: str,
    name: str,
) -> ConvertedPdf:
    """Blocking: the PDF of the Office file ``data`` (hashing to ``sha256``), converted once per
    original content and stored, with the original beside it. Raises what ``convert`` raises."""
    raw = storage.read_record(record_key(sha256))
    recorded = _parsed(raw)
    if recorded is not None:
        pdf = _stored_pdf(storage, recorded)
        if pdf is not None:
            original = _keep_original(storage, data, sha256, extension)
            return ConvertedPdf(pdf, recorded, content_key(recorded), original, False)
    pdf = converter.convert(data, extension, name)
    pdf_sha256 = hashlib.sha256(pdf).hexdigest()
    saved = storage.save(pdf, pdf_sha256)
    newly_stored = saved.newly_stored
    # Replaced only when one was there that is of no use (it named a PDF that is gone, or it
    # does not parse: left as it is, every upload would convert again to a PDF with a new
    # hash); a new record is create-only.
    written = storage.put_record(record_key(sha256), pdf_sha256.encode(), replace=raw is not None)
    if not written:
        # Another conversion of the same original was recorded first: its PDF is the one.
        winner = _recorded(storage, sha256)
        winner_pdf = _stored_pdf(storage, winner) if winner else None
        if winner is not None and winner_pdf is not None:
            pdf, pdf_sha256, newly_stored = winner_pdf, winner, False
    original = _keep_original(storage, data, sha256, extension)
    return ConvertedPdf(pdf, pdf_sha256, content_key(pdf_sha256), original, newly_stored)


def _recorded(storage: PdfStorage, sha256: str) -> str | None:
    return _parsed(storage.read_record(record_key(sha256)))


def _parsed(record: bytes | None) -> str | None:
    if record is None or not _SHA256.fullmatch(record.strip()):
        return None
    return record.strip().decode("ascii")


def _stored_pdf(storage: PdfStorage, sha256: str) -> bytes | None:
    try:
        return storage.read_verified(content_key(sha256), sha256)
    except (PdfMissing, PdfChanged):
        return None


def _keep_original(storage: PdfStorage, data: bytes, sha256: str, extension: str) -> str:
    key = original_key(sha256, extension)
    # Named by its content: one already there is the same, and not written again (up to
    # HIGHLIGHT_MAX_OFFICE_BYTES per upload of a known file).
    if not storage.has_record(key):
        storage.put_record(key, data)
    return key
