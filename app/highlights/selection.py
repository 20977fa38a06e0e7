"""Lexical selector: the sentences that share the most content words with the answer.

It serves when no LLM is configured or the LLM fails, so a reader still gets highlights. Pure.
"""

from __future__ import annotations

import math
import re
import unicodedata

from app.alignment.sentences import Sentence

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset(
    """
    the a an and or but of to in on at by for with from as is are was were be been being it its
    this that these those which who whom what when where why how not no than then there their they
    them he she his her we our you your i me my has have had do does did will would shall should
    can could may might must also into over under about after before between during such per
    le la les un une des du de et ou en au aux est sont pour par sur dans que qui ce cette ces il
    elle ils elles pas plus
    """.split()
)
MIN_SCORE = 0.2


def _is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F") and ch.isalpha()


def terms(text: str) -> set[str]:
    """Content words, lower-cased and accent-folded; CJK runs become character bigrams because
    Chinese has no spaces to split on."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    out: set[str] = set()
    for word in _WORD.findall(folded):
        cjk = [ch for ch in word if _is_cjk(ch)]
        if cjk:
            run = "".join(cjk)
            out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
            word = "".join(ch for ch in word if not _is_cjk(ch))
        # Numbers count (figures are what answers cite) but not lone digits, which "5.1" and
        # "12.5" split into and which match anything.
        if (word.isdigit() and len(word) > 1) or (len(word) > 2 and word not in _STOPWORDS):
            out.add(word)
    return out


def select_sentences(sentences: list[Sentence], answer: str, query: str, limit: int) -> list[int]:
    """Ids of up to ``limit`` sentences, best first, whose overlap with the answer (and, less, the
    question) reaches MIN_SCORE; an empty list when nothing in the chunk echoes the answer."""
    answer_terms = terms(answer)
    query_terms = terms(query) - answer_terms
    scored: list[tuple[float, int]] = []
    for sentence in sentences:
        words = terms(sentence.text)
        if not words:
            continue
        hits = len(words & answer_terms) + 0.3 * len(words & query_terms)
        # Dividing by sqrt(length) keeps long table rows from winning by size alone.
        score = hits / math.sqrt(len(words))
        if score >= MIN_SCORE and hits >= 2:
            scored.append((score, sentence.index))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [index for _, index in scored[:limit]]
