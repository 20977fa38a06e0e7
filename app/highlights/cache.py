"""The result cache's key and rules: a repeated batch (a conversation reopened) answers from the
database without asking the LLM again.

The key is a hash of everything the answer depends on: the question, the answer, the cited chunk
ids in order, the text of each chunk and the content hash of each PDF (so a changed chunk or a
re-ingested PDF misses), the LLM (provider, endpoint, model, request settings) and the version of
the prompt, the selector and the locator. A PDF replaced on disk without re-ingest keeps its
stored hash, so every hit is also checked against the files (``PdfStorage.verify``).

The word-overlap judge weighs words by the cited document's other chunks too; they are not in
the key, so a document re-chunked around the same cited chunks keeps its cached answers (and one
put back to earlier content finds them again).

Only answers that would come out the same again are cached: an answer that fell back because the
LLM failed this time, or because a PDF could not be opened, is not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from app import __version__
from app.alignment.index import INDEX_VERSION
from app.highlights.cited import StoredChunk
from app.highlights.prompts import SYSTEM_PROMPT
from app.highlights.schemas import HighlightBatchRequest, HighlightBatchResponse, Reason

# Bump when the selection, the prompt's wording or format, or the alignment changes what is
# answered without changing the inputs above (a release also changes __version__).
ANSWER_VERSION = 10  # 7: chunk text without page furniture, a line's words in order; locator:
# "&" = "and", nearest pieces, table zigzags refused, repeated passages by their differing words;
# 8: a CJK table's title and heading row are sentences of their own; 9: sentences where a reader
# cuts them (pySBD's golden rules, list items, blank lines inside a sentence, prose figures);
# 10: a placed chunk's sentences cut from its PDF's own text, chunk_not_in_pdf
STABLE_REASONS = frozenset(
    {
        None,
        Reason.llm_disabled,
        Reason.unsupported,
        Reason.not_located,
        Reason.no_sentences,
        Reason.no_text_layer,
        Reason.chunk_not_found,
        Reason.chunk_not_in_pdf,
    }
)


def cache_key(
    request: HighlightBatchRequest,
    chunks: Mapping[str, StoredChunk],
    llm_identity: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> str:
    parts = {
        "versions": [ANSWER_VERSION, __version__, INDEX_VERSION, _sha(SYSTEM_PROMPT)],
        "query": request.query,
        "answer": request.answer,
        "citations": [[c.chunk_id, c.citation_id, c.marker] for c in request.citations],
        "chunks": {
            cid: [
                _sha(chunk.text),
                chunk.page_start,
                chunk.page_end,
                chunk.document_id,
                chunk.document_title,
                chunk.sha256,
                chunk.source_format,
                chunk.original_name,
                chunk.placement,
            ]
            for cid, chunk in sorted(chunks.items())
        },  # fmt: skip
        "llm": dict(llm_identity),
        "settings": dict(settings),
    }
    return _sha(json.dumps(parts, sort_keys=True, ensure_ascii=False))


def cacheable(response: HighlightBatchResponse) -> bool:
    return all(result.reason in STABLE_REASONS for result in response.results)


def etag(body: bytes) -> str:
    return f'"{hashlib.sha256(body).hexdigest()[:32]}"'


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
