"""Answers full of markers: what finding claims and choosing per claim cost, per request. Prints
milliseconds; not a test (tests/highlights/test_claim_bounds.py checks the bounds themselves).

Before the bounds (MAX_CLAIMS_PER_CITATION, MAX_PASSAGES in app/highlights/claims.py) the range
storm made 76,900 claims and took 31 s to find them, on the event loop.

    .venv/bin/python bench/claim_storm.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.highlights.claims import citation_claims, wanted_claims  # noqa: E402
from app.highlights.schemas import HighlightBatchRequest  # noqa: E402
from app.selection.selection import select_claims  # noqa: E402
from app.selection.sentences import split_sentences  # noqa: E402

CHUNK = split_sentences(" ".join(f"Sentence {i} says Ab c and more words." for i in range(120)))
STORM = ("Ab c [1-50]. " * 2000)[:20_000]
FIFTY = [{"chunk_id": f"c{i}", "citation_id": str(i)} for i in range(1, 51)]
ONE_CHUNK = [{"chunk_id": "c", "citation_id": str(i)} for i in range(1, 51)]
CASES: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("50 citations, [1-50] x 1,540", STORM, FIFTY),
    ("one chunk cited 50 times", STORM, ONE_CHUNK),
    ("one citation, [1] x 2,857", "Ab [1] " * 2857, [{"chunk_id": "c", "citation_id": "1"}]),
    (
        "literal marker 'a' x 5,000",
        " ".join(["a b"] * 5000),
        [{"chunk_id": "c", "citation_id": "x", "marker": "a"}],
    ),
]


def main() -> None:
    print(f"{'answer':30} {'claims':>7} {'passages':>9} {'find ms':>8} {'choose ms':>10}")
    for name, answer, citations in CASES:
        request = HighlightBatchRequest.model_validate(
            {"query": "q", "answer": answer, "citations": citations}
        )
        started = time.perf_counter()
        claims = citation_claims(request)
        found = time.perf_counter() - started
        wanted = wanted_claims(request, claims, {c["chunk_id"] for c in citations})
        started = time.perf_counter()
        select_claims(dict.fromkeys(wanted, CHUNK), answer, "q", wanted, 5)
        chosen = time.perf_counter() - started
        passages = sum(map(len, wanted.values()))
        print(
            f"{name:30} {sum(map(len, claims)):7} {passages:9} {found * 1000:8.1f} "
            f"{chosen * 1000:10.1f}"
        )


if __name__ == "__main__":
    main()
