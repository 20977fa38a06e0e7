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
from datetime import datetime
from functools import lru_cache

from app.core.formats import SourceFormat
from app.documents.placing import PlacementStatus
from app.highlights.locating import ChunkLocation, LocateJob
from app.highlights.results import MESSAGES
from app.highlights.schemas import (
    CitationResult,
    CitationStatus,
    Claim,
    Highlight,
    Reason,
    Support,
)
from app.selection.selection import Span
from app.selection.sentences import Sentence, split_sentences
from app.selection.support import Verdict

# Reasons that say the LLM was not used this time: the word-overlap judge stood in, and its
# verdict is told in the message, the failure in the reason (such an answer is not cached).
_STOOD_IN = frozenset(
    {
        Reason.llm_pending,
        Reason.llm_unavailable,
        Reason.llm_busy,
        Reason.llm_rejected,
        Reason.llm_truncated,
        Reason.llm_invalid_output,
    }
)

# Longer chunk texts are split again each time (see sentences); ingest makes chunks of at most
# 1,600 characters, so the memo holds at most about 1024 x 12 KB.
MEMO_CHARS = 4_000


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
    # When the document's content last changed: other chunks' texts weigh its words.
    updated_at: datetime | None = None
    # What the document was made from (a SourceFormat value) and the name it was sent with.
    source_format: str = "pdf"
    original_name: str | None = None
    # How the chunk was placed in its PDF at PUT (documents/placing.PlacementStatus's values);
    # None for a text source's and for chunks stored before placing.
    placement: str | None = None

    @property
    def not_in_pdf(self) -> bool:
        return self.placement == PlacementStatus.not_found


@dataclass(frozen=True)
class Choice:
    """What was judged for one chunk, per claim it is cited for (None: the answer as a whole):
    the supporting sentence ids and the verdict; and why the LLM did not judge it (when it did
    not)."""

    by_claim: tuple[tuple[Span, Verdict], ...] = ()
    reason: Reason | None = None

    @classmethod
    def of(cls, by_claim: dict[Span, Verdict], reason: Reason | None = None) -> Choice:
        return cls(tuple(by_claim.items()), reason)

    @property
    def sentence_ids(self) -> tuple[int, ...]:
        """Every sentence chosen for any claim, each once: what is placed."""
        return tuple(dict.fromkeys(i for _, v in self.by_claim for i in v.ids))

    def verdict_for(self, span: Span) -> Verdict | None:
        return next((v for s, v in self.by_claim if s == span), None)

    def ids_for(self, span: Span) -> tuple[int, ...]:
        verdict = self.verdict_for(span)
        return verdict.ids if verdict is not None else ()


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
        verdicts = [choice.verdict_for(span) for span in spans]
        chosen = [set(v.ids) if v is not None else set() for v in verdicts]
        highlights = _for_claims(self.location.highlights, chosen, bool(claims))
        # A chunk not found in its PDF whose chosen sentences are not found there either: no
        # verdict, it says nothing the document shows.
        unplaced = chunk.not_in_pdf and not highlights
        if unplaced:
            verdicts = [None for _ in verdicts]
        support, score = _overall(verdicts) if self.sentences else (None, None)
        status, reason = CitationStatus.highlighted, choice.reason
        # The deadline, a shutdown: says more than the reason's standard message.
        message = note if reason is not None and note else MESSAGES[reason] if reason else None
        if not highlights:
            status = CitationStatus.no_match
            if self.location.error is not None:
                status, reason = CitationStatus.fallback, self.location.error
            elif unplaced:
                reason = Reason.chunk_not_in_pdf
            elif not self.sentences:
                reason = Reason.no_sentences
            elif support == Support.unsupported or not any(chosen):
                reason = choice.reason if choice.reason in _STOOD_IN else Reason.unsupported
            else:
                reason = Reason.not_located
            message = note if reason == choice.reason and note else MESSAGES[reason]
            if reason == self.location.error and self.location.note:
                message = self.location.note
            if reason == Reason.unsupported and choice.reason == Reason.llm_disabled:
                message += " (Judged by word overlap: no LLM is configured.)"
            elif reason in _STOOD_IN:
                message += " By word overlap, nothing in this chunk supports it."
        judged = [
            claim
            if verdict is None
            else claim.model_copy(
                update={"support": Support(verdict.support), "support_score": verdict.score}
            )
            for (_, claim), verdict in zip(claims, verdicts, strict=False)
        ]
        return CitationResult(
            citation_id=citation_id,
            chunk_id=chunk.id,
            document_id=chunk.document_id,
            document_title=chunk.document_title,
            source_format=SourceFormat(chunk.source_format),
            original_name=chunk.original_name,
            status=status,
            reason=reason,
            message=message,
            support=support,
            support_score=score,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            link=None,
            pdf_url=None,
            claims=judged,
            highlights=highlights,
        )


def _overall(verdicts: Sequence[Verdict | None]) -> tuple[Support | None, float | None]:
    """The citation's verdict from its claims': supported when every claim is, unsupported when
    none is, else partial; the mean score."""
    judged = [v for v in verdicts if v is not None]
    if not judged:
        return None, None
    kinds = {v.support for v in judged}
    support = Support(next(iter(kinds))) if len(kinds) == 1 else Support.partial
    return support, round(sum(v.score for v in judged) / len(judged), 3)


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


def sentences(text: str, cap: int) -> tuple[Sentence, ...]:
    # Memoised: the same chunks are cited again and again (follow-up questions, a conversation
    # reopened), and splitting them was a tenth of a lexical batch. Only chunks of a usual size
    # (at most 1024 of them held): an outsized one would hold megabytes for a rare repeat, and
    # is split only as far as the cap (the sentences after it are never used).
    if len(text) <= MEMO_CHARS:
        return _split_memo(text)[:cap]
    return tuple(split_sentences(text, limit=cap))


@lru_cache(maxsize=1024)
def _split_memo(text: str) -> tuple[Sentence, ...]:
    return tuple(split_sentences(text))
