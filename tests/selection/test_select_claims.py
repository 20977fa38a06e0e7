"""The lexical selector per claim (select_claims): each claim gets the sentences that support it,
and a chunk cited for two claims gives each its own."""

from __future__ import annotations

from app.selection.selection import Verdict, select_claims
from app.selection.sentences import split_sentences

CHUNK = split_sentences(
    "The annual report was published in March. Revenue rose 8% to $4.2 billion on strong "
    "demand for cloud services. Operating costs were flat. Net income fell to $2.1 billion "
    "because of a one-off impairment charge. The board proposed a dividend of $0.55 per share."
)
ANSWER = "Revenue rose 8% to $4.2 billion [1]. Net income fell to $2.1 billion [2]."
QUESTION = "How did revenue and net income change?"


def span(text: str) -> tuple[int, int]:
    start = ANSWER.index(text)
    return start, start + len(text)


REVENUE, INCOME = span("Revenue rose 8% to $4.2 billion"), span("Net income fell to $2.1 billion")


def texts(verdict: Verdict) -> list[str]:
    return [CHUNK[i - 1].text for i in verdict.ids]


def test_one_chunk_two_claims_each_its_own_sentence() -> None:
    chosen = select_claims({"c": CHUNK}, ANSWER, QUESTION, {"c": [REVENUE, INCOME]}, 5)["c"]
    assert texts(chosen[REVENUE]) == [CHUNK[1].text]
    assert texts(chosen[INCOME]) == [CHUNK[3].text]


def test_the_whole_answer_takes_both() -> None:
    chosen = select_claims({"c": CHUNK}, ANSWER, QUESTION, {"c": [None]}, 5)["c"][None]
    assert set(texts(chosen)) == {CHUNK[1].text, CHUNK[3].text}


def test_a_claim_of_two_statements_may_have_a_sentence_for_each() -> None:
    answer = "Revenue rose 8% to $4.2 billion, and net income fell to $2.1 billion [1]."
    chosen = select_claims({"c": CHUNK}, answer, QUESTION, {"c": [(0, len(answer) - 5)]}, 5)
    assert set(texts(chosen["c"][(0, len(answer) - 5)])) == {CHUNK[1].text, CHUNK[3].text}


def test_another_claim_is_context_never_enough_on_its_own() -> None:
    # Cited only for revenue: the net income sentence shares the answer's other claim only.
    chosen = select_claims({"c": CHUNK}, ANSWER, QUESTION, {"c": [REVENUE]}, 5)["c"][REVENUE]
    assert CHUNK[3].index not in chosen.ids
