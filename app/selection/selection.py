"""Lexical selector: per cited chunk and per claim it is cited for, the sentences that support
the claim and a verdict on whether the chunk supports it at all. Pure.

It serves when no LLM is configured or the LLM fails, so a reader still gets highlights, and
tells the reader when a cited chunk does not support its claim rather than lighting a sentence
that merely shares words with it. What a claim needs a source to show, how sentences are chosen
and how the verdict is reached: ``app.selection.support``. This module reads chunks into units:

* a chunk's sentences, a table's rows one by one (``app.selection.sentences``, ``rows``);
* headings (``app.selection.sections``) are never chosen; their words count, at half weight, for
  the sentences of their section ("Online Channel" above "Net sales fell 12%");
* running headers and footers (a page number beside a short title) are never chosen;
* a chunk's caption scale ("In millions") reads its bare figures.

Word weights come from the cited chunk's whole document when the caller has its statistics
(``stats.DocumentStats``), else from the batch's cited chunks.

Claims (``select_claims``): a citation whose markers close claims of the answer is judged per
claim; the rest of the answer only ranks sentences that show the same. Where one chunk is cited
for several claims, a sentence goes to the claims for which it shows nearly as much of the claim
as for the claim it shows most of, so a sentence on net income is not also the revenue claim's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache

from app.selection.sections import Line, sections
from app.selection.sentences import Sentence
from app.selection.stats import DocumentStats
from app.selection.support import Claim, Unit, Verdict, directed, judge, shown_by, shown_weight
from app.selection.terms import (
    Language,
    chunk_marker_counts,
    language_by_counts,
    marker_counts,
    read,
    terms,
)
from app.selection.values import chunk_scale, values

__all__ = ["Verdict", "select_batch", "select_claims", "select_sentences", "terms"]

# A claim (start, end) of the answer, or None: the answer as a whole.
Span = tuple[int, int] | None
# Where a chunk is cited for several claims, a claim takes a sentence that shows at least this
# share of what the sentence shows of the claim it shows most of.
SHARE = 0.8
# A chunk's units are memoised when its sentences hold at most this many characters (at most
# 256 chunks; ingest makes chunks of at most 1,600): a chunk's units take about 18 times its
# text in memory (366 KB for 20,000 characters), so the memo stays within about 20 MB.
MEMO_CHARS = 4_000


# A running header or footer: a page number before or after a short title ("23 Verizon 2022
# Annual Report on Form 10-K"), once years and form names are set aside. Such a line shares the
# company's name and the year with every question about the filing, and supports none.
_PAGE_NUMBER_AND_TITLE = re.compile(r"\s*\d{1,3}\s+\D+|\D+\s\d{1,3}\s*")
_YEARS_AND_FORMS = re.compile(r"\b(?:19|20)\d\d\b|\b10-[KQ]\b")
_FURNITURE_WORDS = 12
# A page's number in its count, alone on its line: "Page 9 of 15", "- 3 -", "p. 12/40".
_PAGE_OF = re.compile(
    r"\s*(?:(?:page|p\.|pg\.?)?\s*\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?|-\s*\d{1,4}\s*-)\s*",
    re.IGNORECASE,
)


def is_page_furniture(text: str) -> bool:
    if len(text.split()) > _FURNITURE_WORDS:
        return False
    return bool(
        _PAGE_OF.fullmatch(text) or _PAGE_NUMBER_AND_TITLE.fullmatch(_YEARS_AND_FORMS.sub("", text))
    )


def units_of(text: str, sentences: Sequence[Sentence], language: Language | None) -> list[Unit]:
    """A chunk's units: its sentences but headings and page furniture, with their terms, their
    heading's terms and their values."""
    readings = [read(s.text, language) for s in sentences]
    lines = [
        Line(s.text, r.terms, r.claimed, r.dates) for s, r in zip(sentences, readings, strict=True)
    ]
    headings, context = sections(lines)
    scale = chunk_scale(text)
    return [
        Unit(i, s.text, directed(lines[i].terms), context[i], values(s.text), scale)
        for i, s in enumerate(sentences)
        if not headings[i] and not is_page_furniture(s.text)
    ]


# Memoised like _units: counting a chunk's words for its language was a tenth of a batch.
_markers = lru_cache(maxsize=256)(chunk_marker_counts)


@lru_cache(maxsize=256)
def _units(texts: tuple[str, ...], language: Language | None) -> tuple[Unit, ...]:
    """``units_of`` a chunk's sentence texts, memoised (up to ``MEMO_CHARS``): a chunk cited
    again (a follow-up question, a conversation reopened) reads the same units, and reading
    them (stemming, figures, headings) was a third of a lexical batch. Units are never changed
    once made."""
    sentences = [Sentence(i, 0, len(text), text) for i, text in enumerate(texts, 1)]
    return tuple(units_of(" ".join(texts), sentences, language))


def select_claims(
    chunks: Mapping[str, Sequence[Sentence]],
    answer: str,
    query: str,
    wanted: Mapping[str, Sequence[Span]],
    limit: int,
    stats: Mapping[str, DocumentStats] | None = None,
) -> dict[str, dict[Span, Verdict]]:
    """Per chunk id and per claim it is cited for (``wanted``; None: the answer as a whole), the
    verdict: the ids of up to ``limit`` sentences that support the claim, best first, whether
    the chunk supports it, and how much of it is shown. ``stats``: per chunk id, its document's
    term statistics; chunks without are weighed against the batch's cited chunks."""
    texts = {cid: tuple(s.text for s in sentences) for cid, sentences in chunks.items()}
    small = {cid: sum(map(len, t)) <= MEMO_CHARS for cid, t in texts.items()}
    language = language_by_counts(
        [
            marker_counts(answer),
            marker_counts(query),
            *((_markers if small[c] else chunk_marker_counts)(t) for c, t in texts.items()),
        ]
    )
    units = {
        cid: list(_units(texts[cid], language))
        if small[cid]
        else units_of(" ".join(texts[cid]), chunks[cid], language)
        for cid in chunks
    }
    batch: DocumentStats | None = None
    # The whole answer's terms, read once: each claim's context is the rest of them.
    answer_terms = (
        terms(answer, language) if any(s for spans in wanted.values() for s in spans) else set()
    )
    claims: dict[tuple[Span, int], Claim] = {}
    out: dict[str, dict[Span, Verdict]] = {}
    for cid, sentences in chunks.items():
        doc = (stats or {}).get(cid)
        if doc is None or doc.language != language:
            # No statistics, or stemmed for another language: the batch's cited chunks.
            batch = batch or _batch_stats(units, language)
            doc = batch
        spans = list(dict.fromkeys(wanted.get(cid, ())))
        mine = {}
        for span in spans:
            key = (span, id(doc))
            if key not in claims:
                said = answer if span is None else answer[span[0] : span[1]]
                rest = set() if span is None else answer_terms - terms(said, language)
                claims[key] = Claim.of(said, query, doc, language, rest)
            mine[span] = claims[key]
        shares = _shares(units[cid], mine) if len(mine) > 1 else {}
        out[cid] = {}
        for span, claim in mine.items():
            verdict = judge(units[cid], claim, limit, shares.get(span))
            ids = tuple(sentences[i].index for i in verdict.ids)
            out[cid][span] = Verdict(ids, verdict.support, verdict.score)
    return out


def _shares(units: list[Unit], claims: Mapping[Span, Claim]) -> dict[Span, set[int]]:
    """Which units each claim may take: those showing at least ``SHARE`` of what they show of
    the claim they show most of."""
    shown = {span: {u.position: _share(claim, u) for u in units} for span, claim in claims.items()}
    best = {u.position: max(by[u.position] for by in shown.values()) for u in units}
    return {
        span: {p for p, value in by.items() if value > 0 and value >= SHARE * best[p]}
        for span, by in shown.items()
    }


def _share(claim: Claim, unit: Unit) -> float:
    return shown_weight(claim, [shown_by(unit, claim)]) / (claim.total or 1.0)


def _batch_stats(units: Mapping[str, list[Unit]], language: Language | None) -> DocumentStats:
    """Document frequencies over the batch's cited chunks, from the terms already read."""
    df: Counter[str] = Counter()
    for found in units.values():
        df.update(set().union(*(u.own for u in found)))
    return DocumentStats(len(units), dict(df), language)


def select_batch(
    chunks: Mapping[str, Sequence[Sentence]], answer: str, query: str, limit: int
) -> dict[str, list[int]]:
    """The ids ``select_claims`` chooses with every chunk cited for the answer as a whole."""
    wanted: dict[str, list[Span]] = {cid: [None] for cid in chunks}
    chosen = select_claims(chunks, answer, query, wanted, limit)
    return {cid: list(by_claim[None].ids) for cid, by_claim in chosen.items()}


def select_sentences(sentences: list[Sentence], answer: str, query: str, limit: int) -> list[int]:
    """``select_batch`` for a single chunk."""
    return select_batch({"": sentences}, answer, query, limit)[""]
