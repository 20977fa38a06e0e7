from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Path, Query, Response, status
from fastapi.responses import FileResponse

from app.api.deps import SessionDep, StateDep
from app.documents import service
from app.documents.models import Document
from app.documents.schemas import (
    ID_PATTERN,
    ChunkOut,
    DocumentOut,
    DocumentUpsert,
    DocumentUpsertResult,
)

router = APIRouter(prefix="/v2/documents", tags=["documents"])
DocumentId = Annotated[str, Path(min_length=1, max_length=128, pattern=ID_PATTERN)]


def _out(document: Document, include_text: bool) -> DocumentOut:
    return DocumentOut(
        id=document.id,
        title=document.title,
        source_path=document.source_path,
        sha256=document.sha256,
        page_count=document.page_count,
        pdf_url=f"/v2/documents/{document.id}/pdf",
        chunks=[
            ChunkOut(
                id=c.id,
                ordinal=c.ordinal,
                page_start=c.page_start,
                page_end=c.page_end,
                text=c.text if include_text else None,
            )
            for c in document.chunks
        ],
    )


@router.put(
    "/{document_id}",
    response_model=DocumentUpsertResult,
    responses={201: {"model": DocumentUpsertResult, "description": "Created"}},
)
async def put_document(
    document_id: DocumentId,
    body: DocumentUpsert,
    session: SessionDep,
    state: StateDep,
    response: Response,
    background: BackgroundTasks,
) -> DocumentUpsertResult:
    """Store a document and all its chunks, replacing what was stored; sending the same body again
    changes nothing (``changed: false``)."""
    outcome = await service.upsert_document(session, state.settings.pdf_root, document_id, body)
    if outcome.created:
        response.status_code = status.HTTP_201_CREATED
    if outcome.changed:
        # After the response (and the commit): the first highlight request then finds it ready.
        background.add_task(
            state.highlights.warm_index, outcome.document.source_path, outcome.document.sha256
        )
    return DocumentUpsertResult(
        **_out(outcome.document, include_text=False).model_dump(),
        created=outcome.created,
        changed=outcome.changed,
    )


@router.get("/{document_id}", response_model=DocumentOut)
async def get_document(
    document_id: DocumentId,
    session: SessionDep,
    include_text: Annotated[bool, Query(description="Include each chunk's text.")] = False,
) -> DocumentOut:
    return _out(await service.get_document(session, document_id), include_text)


@router.get(
    "/{document_id}/pdf",
    response_class=FileResponse,
    responses={200: {"content": {"application/pdf": {}}, "description": "The stored PDF"}},
)
async def get_document_pdf(
    document_id: DocumentId, session: SessionDep, state: StateDep
) -> FileResponse:
    path = await service.pdf_path_of(session, state.settings.pdf_root, document_id)
    return FileResponse(
        path,
        media_type="application/pdf",
        filename=f"{document_id}.pdf",
        content_disposition_type="inline",
    )
