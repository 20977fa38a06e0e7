"""HTML, Markdown and plain-text sources: stored as text, highlighted by character offsets.

The seam the upload door (``DocumentService.upload_file``) and ``ingest`` call for the ``text``
family once the file is sniffed and within HIGHLIGHT_MAX_TEXT_BYTES. Not enabled yet: every
text source is refused with a 415 that says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.errors import UnsupportedMediaType
from app.core.formats import SourceFormat

if TYPE_CHECKING:  # the service calls this module, not the other way round
    from app.documents.service import DocumentService, Upload


async def upload_text(
    documents: DocumentService,
    document_id: str,
    data: bytes,
    fmt: SourceFormat,
    *,
    sha256: str,
    filename: str | None,
    chunk: bool,
    title: str | None,
) -> Upload:
    """Store the text source ``data`` (``fmt`` html, markdown or text; ``sha256`` its hash;
    ``filename`` the name it was sent with) for ``document_id``; with ``chunk``, also split it
    and put the document (``Upload.document``), as a PDF upload with chunk=true does."""
    raise UnsupportedMediaType(
        "HTML, Markdown and text sources are not enabled yet; send the document as a PDF or an "
        "Office file",
        details={"detected": fmt.value},
    )
