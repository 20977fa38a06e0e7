"""The storage backend ``HIGHLIGHT_STORAGE_URL`` names. A module of its own so that the backends
(``storage.py``, ``objects.py``) never import each other's factory."""

from __future__ import annotations

from app.core.config import Settings
from app.pdfs.storage import PdfStorage
from app.pdfs.workers import PdfWorkers


def build_storage(settings: Settings, workers: PdfWorkers | None) -> PdfStorage:
    """The storage ``HIGHLIGHT_STORAGE_URL`` names: empty, the local folder ``HIGHLIGHT_PDF_ROOT``;
    ``s3://``, ``file://`` or ``memory://``, an object store (``objects.py``) with this
    replica's read-through copies in ``HIGHLIGHT_STORAGE_CACHE_DIR``. ``workers`` None: PDF work
    inline, without limits (tests and tools on trusted files)."""
    if not settings.storage_url:
        return PdfStorage(settings.pdf_root, workers)
    # Imported only when configured: a local-folder deployment never loads obstore.
    from app.pdfs.objects import ObjectPdfStorage

    return ObjectPdfStorage.from_url(
        settings.storage_url,
        settings.storage_cache_dir,
        workers,
        max_bytes=settings.max_pdf_bytes,
    )
