"""The word-overlap judge (app.selection.support via select_claims): support, not overlap. Each
test is a failure a reader met (issue 28), written as a small chunk of the kind the service
stores; document statistics are built from the chunks given, as the service builds them from a
document's stored chunks."""

from __future__ import annotations

import pytest

from app.selection.claims import claims_by_citation
from app.selection.selection import Span, Verdict, select_claims
from app.selection.sentences import split_sentences
from app.selection.stats import DocumentStats
from app.selection.support import (
    MAX_ABBREVIATIONS,
    MAX_FIGURES,
    MAX_WORDS,
    Claim,
    spells,
)
from app.selection.values import values

# A 10-K's other chunks: "revenue", "fiscal", "million" are everywhere, "Creative Cloud" is not.
FILLER = [
    f"Revenue for fiscal {year} was reported in millions of dollars in the consolidated "
    f"statements, and management discussed revenue, margins and the fiscal year {n}."
    for n, year in enumerate((2020, 2021, 2022) * 6)
]
HEDGING = (
    "Hedging gains of $36 million were recorded in revenue in fiscal 2022. We enter into "
    "forward contracts to hedge a portion of our forecasted foreign currency revenue."
)
CREATIVE = (
    "Creative Cloud revenue was $10,459 million in fiscal 2022, up 11% from fiscal 2021. "
    "Document Cloud revenue grew to $2,375 million."
)


def judge(
    chunk: str, answer: str, question: str, others: list[str] | None = None, span: Span = None
) -> tuple[Verdict, list[str]]:
    sentences = split_sentences(chunk)
    stats = DocumentStats.of([chunk, *(others if others is not None else FILLER)], "english")
    verdict = select_claims({"c": sentences}, answer, question, {"c": [span]}, 5, {"c": stats})
    chosen = verdict["c"][span]
    return chosen, [sentences[i - 1].text for i in chosen.ids]


def test_shared_generic_words_are_not_support() -> None:
    answer = "Creative Cloud revenue was $10,459 million in fiscal 2022."
    verdict, picked = judge(HEDGING, answer, "What was Creative Cloud revenue in fiscal 2022?")
    assert (verdict.support, picked) == ("unsupported", [])
    assert verdict.score < 0.35


def test_the_sentence_stating_the_claim_is_supported() -> None:
    answer = "Creative Cloud revenue was $10,459 million in fiscal 2022."
    verdict, picked = judge(CREATIVE, answer, "What was Creative Cloud revenue in fiscal 2022?")
    assert verdict.support == "supported"
    assert picked == [CREATIVE.split(". ")[0] + "."]


def test_a_figure_stated_differently_for_the_same_measure_contradicts() -> None:
    contradicting = CREATIVE.replace("$10,459 million", "$9,546 million")
    answer = "Creative Cloud revenue was $10,459 million in fiscal 2022."
    verdict, picked = judge(contradicting, answer, "What was Creative Cloud revenue?")
    assert (verdict.support, verdict.score, picked) == ("unsupported", 0.0, [])


STATEMENT = (
    "Consolidated Statements of Income (In millions)\n"
    "Net sales $ 14,694 $ 14,544 $ 12,861 Cost of sales (11,969) (11,724) (10,129) "
    "Gross profit 2,725 2,820 2,732 Selling, general and administrative expenses (1,246) "
    "(1,284) (1,158) Research and development expenses (102) (106) (96) Operating income "
    "1,198 1,238 1,089"
)


def test_a_table_answer_lights_its_row_not_the_block() -> None:
    answer = "Research and development expenses were $102 million."
    verdict, picked = judge(STATEMENT, answer, "How much did it spend on research and development?")
    assert verdict.support == "supported"
    assert picked == ["Research and development expenses (102) (106) (96)"]


def test_a_computed_measure_lights_its_operands_rows() -> None:
    answer = "The gross margin declined slightly, to 18.5%."
    verdict, picked = judge(STATEMENT, answer, "Does it have an improving gross margin profile?")
    # Its operands' rows, one each: gross profit and what it is a margin of.
    assert verdict.support in ("supported", "partial")
    assert "Gross profit 2,725 2,820 2,732" in picked
    assert 2 <= len(picked) <= 3
    assert all(p.startswith(("Gross profit", "Net sales", "Cost of sales")) for p in picked)


def test_a_scale_word_meets_the_caption_scale() -> None:
    verdict, picked = judge(STATEMENT, "Net sales were $14.7 billion.", "What were net sales?")
    assert verdict.support == "supported"
    assert picked == ["Net sales $ 14,694 $ 14,544 $ 12,861"]


@pytest.mark.parametrize("gap", ["  ", " \n", "\n  "])
def test_a_scale_word_a_few_spaces_or_a_line_away_still_scales(gap: str) -> None:
    """pdfminer's text of a justified line: "$2.0  billion", "$2.0 \nbillion". Read as $2.0,
    the claim's figure was missing from the sentence that states it, which came back
    unsupported."""
    chunk = "On February 8, 2023, the Board authorized a new $2.0 billion share repurchase plan."
    answer = chunk.replace(" billion", f"{gap}billion")
    verdict, picked = judge(chunk, answer, "What did the Board authorize?")
    assert (verdict.support, picked) == ("supported", [chunk])
    assert values(f"$2.0{gap}billion")[0].amount == 2e9
    # A one-letter scale stays with its figure only: "b)" on the next line is a list's item.
    assert values("$5 \nb) the next item")[0].amount == 5


BALANCE = (
    "Balance sheet data (In millions)\n"
    "Cash and cash equivalents 2,605 2,921\n"
    "Property, plant and equipment, net 107,434 99,696\n"
    "Total assets 379,680 366,596"
)


def test_an_abbreviation_meets_the_words_it_abbreviates() -> None:
    assert spells("PPNE", "Property, plant and equipment, net")
    assert spells("PP&E", "property, plant and equipment")
    assert spells("SG&A", "Selling, general and administrative expenses")
    assert not spells("PPNE", "Plant operations and equipment")
    for name in ("PPNE", "PP&E"):
        verdict, picked = judge(BALANCE, f"{name} was $107,434 million.", f"What was {name}?")
        assert verdict.support == "supported", name
        assert picked == ["Property, plant and equipment, net 107,434 99,696"], name


GEOGRAPHIES = (
    "We operate in the United States, where most of our revenue is earned. Our EMEA business "
    "grew in 2022. In APAC card billings rose. LACC, our Latin America, Canada and Caribbean "
    "segment, recovered. Marketing expense increased."
)


def test_each_item_of_a_list_gets_its_sentence() -> None:
    answer = "United States, EMEA, APAC, and LACC"
    verdict, picked = judge(GEOGRAPHIES, answer, "What are the geographies it operates in?")
    assert verdict.support == "supported"
    assert len(picked) == 4
    assert not any(p.startswith("Marketing") for p in picked)


def test_a_long_run_of_function_words_is_no_trouble() -> None:
    """A hostile chunk: 20,000 "and"s after a word, and a claim whose abbreviation they could
    spell almost all of (tried way by way this ran out of stack)."""
    assert not spells("ANNNNNX", "apple " + "and " * 20_000 + "y")
    verdict, picked = judge("Apple " + "and " * 20_000 + "pear.", "ANNNNNX rose.", "What rose?")
    assert (verdict.support, picked) == ("unsupported", [])


def test_one_sentence_chunks_repeated_verbatim_are_highlighted() -> None:
    """40 chunks of one sentence each (a document of them), each cited for an answer that
    repeats it word for word: before, word weights over one sentence came out as zero and half
    of them got no_match."""
    subjects = ["ferry", "bridge", "clinic", "school", "market", "road", "dam", "port"]
    verbs = ["opens", "closes", "reopens", "expands"]
    chunks = [
        f"The {subjects[i % 8]} at site {i} {verbs[i % 4]} in week {i + 3}." for i in range(40)
    ]
    for chunk in chunks:
        for others in (chunks, []):  # with its document's statistics, and alone
            verdict, picked = judge(chunk, chunk, "What happens?", others)
            assert (verdict.support, picked) == ("supported", [chunk]), (chunk, others == [])


DIVIDENDS = (
    "Capital expenditures were $410 million, mostly on new stores. The board paid a quarterly "
    "dividend of $0.25 per share throughout fiscal 2023. Inventory rose 6% on new brand launches."
)
SECURITIES = (
    "Registrant's telephone number: (212) 640-2000. Securities registered pursuant to Section "
    "12(b) of the Act: Common Shares (par value $0.20 per Share), New York Stock Exchange. "
    "Indicate by check mark if the registrant is a well-known seasoned issuer."
)


def test_short_claims_bound_to_their_marker_keep_their_evidence() -> None:
    cases = [
        ("Yes [1].", "Did the board pay a dividend in fiscal 2023?", DIVIDENDS, "The board paid"),
        (
            "There are none [1].",
            "Which debt securities are registered pursuant to Section 12(b) of the Act?",
            SECURITIES,
            "Securities registered",
        ),
    ]
    for answer, question, chunk, expected in cases:
        (claim,) = claims_by_citation(answer, ["1"])["1"]
        verdict, picked = judge(chunk, answer, question, span=(claim.start, claim.end))
        assert verdict.support != "unsupported", answer
        assert picked, answer
        assert picked[0].startswith(expected), (answer, picked)


def test_a_decrease_in_other_words_is_the_same_direction() -> None:
    chunk = "Net sales declined 12% in the online channel. Store count was unchanged."
    verdict, picked = judge(chunk, "Online sales fell 12%.", "How did online sales do?")
    assert verdict.support == "supported"
    assert picked == ["Net sales declined 12% in the online channel."]


def test_a_huge_claim_is_read_into_a_bounded_claim() -> None:
    """A 20,000-character answer cited as a whole: every sentence of every cited chunk is held
    against each of its words and figures, so what it is read into is bounded (the weightiest
    words kept); repeated figures are one, and citation markers' numbers are none."""

    def name(n: int) -> str:  # a distinct word per n: "Baba", "Babb", ...
        return "Ba" + "".join(chr(97 + (n // 26**k) % 26) for k in range(2))

    sentences = (
        f"{name(n).title()} revenue rose {n}.5% to ${n},{n:03d} million per AB{chr(65 + n % 26)}"
        f" [1-50]."
        for n in range(400)
    )
    answer = " ".join(sentences)[:20_000]
    stats = DocumentStats.of([answer], "english")
    claim = Claim.of(answer, "What rose?", stats, "english")
    assert len(claim.words) == MAX_WORDS
    assert len(claim.figures) == MAX_FIGURES
    assert len(claim.letters) <= MAX_ABBREVIATIONS
    marked = Claim.of("Sales rose 12% [1][2] and 12% [3-50].", "q", stats, "english")
    assert [(f.value.amount, f.value.percent) for f in marked.figures] == [(12.0, True)]
