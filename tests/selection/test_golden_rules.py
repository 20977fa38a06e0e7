"""pySBD's golden rules as a peer suite: 62 texts in English, French, German, Chinese and
Japanese, each with the sentences a reader cuts it into (``tests/fixtures/golden_rules.json``,
copied from pySBD's tests with their provenance). The splitter does not know a text's language:
one rule set reads them all. pySBD itself, told each text's language, gets 61; sentencex 57;
this splitter got 33 before issue 41. The one pySBD marks as failing ("At 5 a.m. Mr. Smith ...
at 6 P.M. Mr. Smith then ...") needs to know that "at 6 P.M." closes a clause and "At 5 a.m."
opens one; no rule here guesses it.

The same cases go through the HTTP API in ``tests/api/test_sentence_cuts.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.selection.sentences import split_sentences

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "golden_rules.json").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = GOLDEN["cases"]
# The figure the issue asks for: at least 60 of the 62 whole.
REQUIRED = 60


def test_the_peer_suite_is_whole() -> None:
    assert len(CASES) == 62
    assert {c["language"] for c in CASES} == {"en", "fr", "de", "zh", "ja"}


def test_at_least_60_of_the_62_golden_rules() -> None:
    wrong = []
    for case in CASES:
        got = [s.text for s in split_sentences(case["text"])]
        if got != case["sentences"]:
            wrong.append((case["text"], got))
    right = len(CASES) - len(wrong)
    report = "\n".join(f"  {text[:70]!r}\n    -> {got}" for text, got in wrong)
    assert right >= REQUIRED, f"{right}/62 golden rules; wrong:\n{report}"


def test_offsets_of_every_golden_sentence_are_exact() -> None:
    for case in CASES:
        text = case["text"]
        for sentence in split_sentences(text):
            assert text[sentence.start : sentence.end] == sentence.text
