"""One cited chunk on its way through a batch: stored chunk -> sentences -> choice -> location ->
result. The batch and the stream carry the same records (``Cited``, keyed by chunk id: a chunk
cited twice is prepared, chosen and placed once, and answered once per citation).

A record is immutable; each step returns a new one. Giving a record a choice keeps its placement
when the choice names the same sentences, so the stream's final answer re-places only the chunks
whose sentences the LLM changed from the provisional lexical choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from app.highlights.locating import ChunkLocation, LocateJob
from app.highlights.results import MESSAGES
from app.highlights.schemas import CitationResult, CitationStatus, Reason
from app.selection.sentences import Sentence


@dataclass(frozen=True)
class StoredChunk:
    id: str
    document_id: str
    document_title: str
    text: str
    page_start: int
    page_end: int
    source_path: str
    sha256: str


@dataclass(frozen=True)
class Choice:
    """What was chosen for one chunk, and why the LLM did not choose it (when it did not)."""

    sentence_ids: tuple[int, ...] = ()
    reason: Reason | None = None


NOTHING_CHOSEN = Choice()


@dataclass(frozen=True)
class CitedChunk:
    chunk: StoredChunk
    # Capped at the service's max_sentences_per_chunk; empty for a cached answer (not split).
    sentences: tuple[Sentence, ...] = ()
    choice: Choice = NOTHING_CHOSEN
    location: ChunkLocation | None = field(default=None, compare=False)

    def chose(self, choice: Choice) -> CitedChunk:
        same = self.location is not None and choice.sentence_ids == self.choice.sentence_ids
        return replace(self, choice=choice, location=self.location if same else None)

    def job(self) -> LocateJob:
        chunk = self.chunk
        return LocateJob(
            chunk_id=chunk.id,
            document_id=chunk.document_id,
            source_path=chunk.source_path,
            sha256=chunk.sha256,
            pages=(chunk.page_start, chunk.page_end),
            sentences=[self.sentences[i - 1] for i in self.choice.sentence_ids],
            chunk_text=chunk.text,
        )

    def located(self, location: ChunkLocation) -> CitedChunk:
        return replace(self, location=location)

    def result(self, citation_id: str | None, note: str | None = None) -> CitationResult:
        """This chunk's answer for one citation of it (without links). ``note`` says more than
        the choice's reason's standard message (the deadline, a shutdown)."""
        assert self.location is not None, "a chunk is placed before it is answered"
        chunk, choice, highlights = self.chunk, self.choice, self.location.highlights
        status, reason = CitationStatus.highlighted, choice.reason
        if not highlights:
            status = CitationStatus.no_match
            if self.location.error is not None:
                status, reason = CitationStatus.fallback, self.location.error
            elif not self.sentences:
                reason = Reason.no_sentences
            elif not choice.sentence_ids:
                # After an LLM failure the empty choice is the weaker selector's: name the cause.
                reason = choice.reason or Reason.no_relevant_sentences
            else:
                reason = Reason.not_located
        message = MESSAGES[reason] if reason else None
        if reason is not None and reason == choice.reason and note:
            message = note
        if not highlights and reason == choice.reason and reason is not None:
            message = f"{message} None of them echoes the answer."
        return CitationResult(
            citation_id=citation_id,
            chunk_id=chunk.id,
            document_id=chunk.document_id,
            document_title=chunk.document_title,
            status=status,
            reason=reason,
            message=message,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            link=None,
            highlights=highlights,
        )


Cited = dict[str, CitedChunk]


def sentences_of(cited: Cited) -> dict[str, list[Sentence]]:
    """What the choosers read: each chunk's sentences by chunk id."""
    return {cid: list(record.sentences) for cid, record in cited.items()}
