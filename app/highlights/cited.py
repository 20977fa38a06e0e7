"""One cited chunk on its way through a batch: stored chunk -> sentences -> choice -> location ->
result. The batch and the stream carry the same records (``Cited``, keyed by chunk id: a chunk
cited twice is prepared and placed once, chosen once per claim it is cited for, and answered once
per citation, with the sentences chosen for that citation's own claims).

A record is immutable; each step returns a new one. Giving a record a choice keeps its placement
when the choice names the same sentences, so the stream's final answer re-places only the chunks
whose sentences the LLM changed from the provisional lexical choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.highlights.locating import ChunkLocation, LocateJob
from app.highlights.results import MESSAGES
from app.highlights.schemas import CitationResult, CitationStatus, Claim, Highlight, Reason
from app.selection.selection import Span
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
    """What was chosen for one chunk, per claim it is cited for (None: the answer as a whole),
    and why the LLM did not choose it (when it did not)."""

    by_claim: tuple[tuple[Span, tuple[int, ...]], ...] = ()
    reason: Reason | None = None

    @classmethod
    def of(cls, by_claim: dict[Span, list[int]], reason: Reason | None = None) -> Choice:
        return cls(tuple((span, tuple(ids)) for span, ids in by_claim.items()), reason)

    @property
    def sentence_ids(self) -> tuple[int, ...]:
        """Every sentence chosen for any claim, each once: what is placed."""
        return tuple(dict.fromkeys(i for _, ids in self.by_claim for i in ids))

    def ids_for(self, span: Span) -> tuple[int, ...]:
        return next((ids for s, ids in self.by_claim if s == span), ())


NOTHING_CHOSEN = Choice()


@dataclass(frozen=True)
class CitedChunk:
    chunk: StoredChunk
    # Capped at the service's max_sentences_per_chunk; empty for a cached answer (not split).
    sentences: tuple[Sentence, ...] = ()
    choice: Choice = NOTHING_CHOSEN
    location: ChunkLocation | None = field(default=None, compare=False)

    def chose(self, choice: Choice) -> CitedChunk:
        # The same sentences in another order (the LLM's after the lexical choice) are placed.
        same = self.location is not None and set(choice.sentence_ids) == set(
            self.choice.sentence_ids
        )
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

    def result(
        self,
        citation_id: str | None,
        claims: Sequence[tuple[Span, Claim]] = (),
        note: str | None = None,
    ) -> CitationResult:
        """This chunk's answer for one citation of it (without links): the sentences chosen for
        the citation's own ``claims`` (none: for the answer as a whole), in reading order.
        ``note`` says more than the choice's reason's standard message (the deadline, a
        shutdown)."""
        assert self.location is not None, "a chunk is placed before it is answered"
        chunk, choice = self.chunk, self.choice
        spans: list[Span] = [span for span, _ in claims] or [None]
        chosen = [set(choice.ids_for(span)) for span in spans]
        highlights = _for_claims(self.location.highlights, chosen, bool(claims))
        status, reason = CitationStatus.highlighted, choice.reason
        if not highlights:
            status = CitationStatus.no_match
            if self.location.error is not None:
                status, reason = CitationStatus.fallback, self.location.error
            elif not self.sentences:
                reason = Reason.no_sentences
            elif not any(chosen):
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
            claims=[claim for _, claim in claims],
            highlights=highlights,
        )


def _for_claims(placed: list[Highlight], chosen: list[set[int]], tagged: bool) -> list[Highlight]:
    """The placed highlights chosen for any of the claims, each tagged with the indexes of its
    claims (when the citation has claims), in reading order: page, then place in the chunk."""
    out = []
    for highlight in placed:
        mine = [k for k, ids in enumerate(chosen) if highlight.sentence_id in ids]
        if mine:
            out.append(highlight.model_copy(update={"claims": mine if tagged else []}))
    return sorted(out, key=lambda h: (h.page, h.start))


Cited = dict[str, CitedChunk]


def sentences_of(cited: Cited) -> dict[str, list[Sentence]]:
    """What the choosers read: each chunk's sentences by chunk id."""
    return {cid: list(record.sentences) for cid, record in cited.items()}
