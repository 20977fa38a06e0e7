"""Sentences where a reader cuts them, through the HTTP API (issue 41): what is lit when an
answer cites a sentence verbatim is that whole sentence, on a text source and on a chat system's
own chunks of a PDF, and the answer's claim is that whole sentence too (the answer is cut by the
same splitter).

- pySBD's golden rules (``tests/fixtures/golden_rules.json``, 62 texts in five languages): each
  text uploaded as a plain-text file, each of its sentences cited verbatim by its own marker in
  one answer; a text counts when every sentence is the claim of its marker and one highlight of
  its citation is exactly that sentence. At least 60 of 62 (the splitter alone: 61, see
  ``tests/selection/test_golden_rules.py``).
- The cases chunkers write (pdfminer's blank lines between a sentence's lines, a long sentence
  wrapped over lines, numbers before capitals, reference brackets, citation lists, abbreviations
  with and without a capital after them), stored as a caller's chunks of a generated PDF: the
  cited sentence is lit whole, with its rectangles.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import JSON, Passage, ScriptedLLM, passage_lines
from tests.fixtures.pdfs import write_text_pdf

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "golden_rules.json").read_text(encoding="utf-8")
)["cases"]


def _answer(sentences: list[str]) -> tuple[str, list[dict[str, str]]]:
    """One answer citing each sentence verbatim under its own marker."""
    parts = [f"{sentence} [{n}]" for n, sentence in enumerate(sentences, 1)]
    return " ".join(parts), [{"citation_id": str(n)} for n in range(1, len(sentences) + 1)]


async def _cited(
    client: httpx.AsyncClient, sentences: list[str], chunk_of: dict[str, str]
) -> list[dict[str, Any]]:
    answer, citations = _answer(sentences)
    for citation, sentence in zip(citations, sentences, strict=True):
        citation["chunk_id"] = chunk_of[sentence]
    body = {"query": "What does it say?", "answer": answer, "citations": citations}
    response = await client.post("/v2/highlights/batch", json=body)
    assert response.status_code == 200, response.text
    return list(response.json()["results"])


def _claims(result: dict[str, Any]) -> list[str]:
    return [claim["text"] for claim in result["claims"]]


def _lit(result: dict[str, Any]) -> list[str]:
    return [highlight["text"] for highlight in result["highlights"]]


async def _golden_results(client: httpx.AsyncClient) -> list[tuple[dict[str, Any], list[Any]]]:
    """Each golden text uploaded as a plain-text file and its sentences cited verbatim."""
    out = []
    for number, case in enumerate(GOLDEN):
        document_id = f"golden-{number}"
        response = await client.put(
            f"/v2/documents/{document_id}/file",
            content=case["text"].encode(),
            params={"filename": f"{document_id}.txt", "chunk": "true"},
            headers={"content-type": "text/plain"},
        )
        assert response.status_code == 201, response.text
        document = await client.get(f"/v2/documents/{document_id}", params={"include_text": "true"})
        chunks = document.json()["chunks"]
        chunk_of = {s: next(c["id"] for c in chunks if s in c["text"]) for s in case["sentences"]}
        out.append((case, await _cited(client, case["sentences"], chunk_of)))
    return out


def _report(wrong: list[tuple[dict[str, Any], list[Any]]]) -> str:
    return "\n".join(
        f"{case['text'][:60]!r}: "
        + "; ".join(f"claims {_claims(r)} lit {_lit(r)}" for r in results)
        for case, results in wrong
    )


def choose_the_claims_sentence(passage: Passage, allowed: list[int], body: JSON) -> list[int]:
    """A model that reads the claim and picks the sentence it quotes: it can only pick among
    the sentences the service cut, so what is lit is exactly what the cut made of the text."""

    # The prompt writes a claim's double quotes as single ones (prompts._quoted).
    def plain(text: str) -> str:
        return " ".join(text.replace('"', "'").split())

    claim = plain(passage.claim or "")
    lines = passage_lines(passage, body)
    return [i for i, text in lines if plain(text) == claim and i in allowed]


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """The golden rules test the cut, not the database: SQLite alone."""
    path = tmp_path / "highlight.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


async def test_golden_rules_are_lit_whole_when_a_model_picks_the_quoted_sentence(
    sqlite_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = choose_the_claims_sentence
    settings = make_settings(
        sqlite_url,
        pdf_root,
        llm_provider="vllm",
        llm_base_url=scripted_llm.base_url,
        llm_model="scripted-model",
    )
    async with app_client(settings) as client:
        results = await _golden_results(client)
    # No citation fell back to the word-overlap judge: the model chose every one.
    assert {result["reason"] for _, rs in results for result in rs} <= {None, "unsupported"}
    wrong = [
        (case, rs)
        for case, rs in results
        if not all(
            _claims(r) == [s] and _lit(r) == [s] for r, s in zip(rs, case["sentences"], strict=True)
        )
    ]
    assert len(GOLDEN) - len(wrong) >= 60, _report(wrong)


async def test_golden_rules_by_word_overlap_light_no_fragment(
    sqlite_url: str, pdf_root: Path
) -> None:
    """Without an LLM the word-overlap judge chooses: every claim is its whole sentence, and
    whatever is lit of it is the whole sentence, never a piece (sentences of stop words alone,
    "What is your name?", "How about you?", are lit by no overlap of words: the judge's limit)."""
    settings = make_settings(sqlite_url, pdf_root)
    async with app_client(settings) as client:
        results = await _golden_results(client)

    def whole(case: dict[str, Any], rs: list[Any]) -> bool:
        return all(
            _claims(r) == [s] and not [t for t in _lit(r) if t != s and (t in s or s in t)]
            for r, s in zip(rs, case["sentences"], strict=True)
        )

    wrong = [(case, rs) for case, rs in results if not whole(case, rs)]
    assert len(GOLDEN) - len(wrong) >= 60, _report(wrong)


# What chat systems' chunkers write of a PDF's text: (the chunk, the sentence an answer cites).
PDFMINER_LINES = (
    "Dynamic languages such as JavaScript are more difficult to com-\n\n"
    "pile than statically typed ones. Since no concrete type information\n\n"
    "is available, traditional compilers need to emit generic code that can\n\n"
    "handle all possible type combinations at runtime.",
    "Since no concrete type information is available, traditional compilers need to emit "
    "generic code that can handle all possible type combinations at runtime.",
)
LONG_SENTENCE = (
    "The Company may, subject to the terms and conditions of the agreement and to the approval\n"
    "of the Board of Directors of the Company, which approval shall not be unreasonably\n"
    "withheld, conditioned or delayed, redeem all or any part of the outstanding notes at\n"
    "any time and from time to time prior to their maturity at a redemption price equal\n"
    "to the greater of the principal amount of the notes to be redeemed and the sum of the\n"
    "present values of the remaining scheduled payments of principal and interest thereon\n"
    "discounted to the redemption date on a semi-annual basis at the applicable treasury\n"
    "rate plus fifty basis points, together with accrued and unpaid interest.",
)
CASES = {
    "pdfminer": PDFMINER_LINES,
    "long": (LONG_SENTENCE[0], " ".join(LONG_SENTENCE[0].split())),
    "numbers": (
        "Margins rose. We opened 25 New York stores and 10 Boston stores in the year. Sales grew.",
        "We opened 25 New York stores and 10 Boston stores in the year.",
    ),
    "brackets": (
        "Isolation is cheap. Runtimes such as Docker [29], Containerd [30], Apptainer [31], "
        "or Charliecloud [32] are widely used. They differ.",
        "Runtimes such as Docker [29], Containerd [30], Apptainer [31], or Charliecloud [32] "
        "are widely used.",
    ),
    "citations": (
        "Agents plan with tools (Yao et al., 2022; Xi et al., 2023; Wang et al., 2024). They work.",
        "Agents plan with tools (Yao et al., 2022; Xi et al., 2023; Wang et al., 2024).",
    ),
    "abbreviations": (
        "The House met at 9 a.m. and rose at 5 p.m. on Friday. Mr. Speaker read the U.S.A. "
        "letter. Let's ask Jane and co. They should know.",
        "Mr. Speaker read the U.S.A. letter.",
    ),
}


async def test_a_chunkers_sentences_are_lit_whole_on_the_pdf(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    paragraphs = [" ".join(chunk.split()) for chunk, _ in CASES.values()]
    data = write_text_pdf(tmp_path / "cases.pdf", paragraphs).read_bytes()
    async with app_client(make_settings(database_url, pdf_root)) as client:
        upload = await client.put(
            "/v2/documents/cases/pdf", content=data, headers={"content-type": "application/pdf"}
        )
        assert upload.status_code == 201, upload.text
        chunks = [
            {"id": f"cases-{name}", "text": chunk, "page_start": 1, "page_end": 1}
            for name, (chunk, _) in CASES.items()
        ]
        document = {"source_path": upload.json()["source_path"], "chunks": chunks}
        put = await client.put("/v2/documents/cases", json=document)
        assert put.status_code == 201, put.text
        sentences = [sentence for _, sentence in CASES.values()]
        chunk_of = {sentence: f"cases-{name}" for name, (_, sentence) in CASES.items()}
        results = await _cited(client, sentences, chunk_of)
    for name, result, sentence in zip(CASES, results, sentences, strict=True):
        assert [claim["text"] for claim in result["claims"]] == [sentence], name
        lit = [" ".join(h["display_text"].split()) for h in result["highlights"]]
        assert sentence in lit, (name, lit)
        (highlight,) = (
            h for h in result["highlights"] if " ".join(h["display_text"].split()) == sentence
        )
        assert highlight["rects"], name
