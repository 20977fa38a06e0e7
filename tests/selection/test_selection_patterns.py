"""The lexical selector on the failure patterns seen on FinanceBench (issue 8), each written as a
small chunk of the kind the service stores: blocks joined by blank lines, bullets inline."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.selection.selection import Span, select_batch, select_claims, select_sentences
from app.selection.sentences import Sentence, split_sentences


def chosen(chunk: str, answer: str, question: str, limit: int = 5) -> list[str]:
    sentences = split_sentences(chunk)
    return [sentences[i - 1].text for i in select_sentences(sentences, answer, question, limit)]


PER_SHARE = (
    "Per share data (In dollars)\n\n"
    "Diluted earnings per share from continuing operations 3.12 2.48\n\n"
    "Shares outstanding at year end (millions) 76.4 14.2\n\n"
    "Diluted loss per share from discontinued operations (14.76) (0.35)\n\n"
    "Dividends declared per share 0.90 0.84"
)


def test_a_bare_signed_figure_finds_its_table_row() -> None:
    picked = chosen(PER_SHARE, "-14.76", "What was the loss per share in discontinued ops?")
    assert picked[0].startswith("Diluted loss per share from discontinued operations")
    # "76.4 14.2" shares the digit groups 14 and 76 but is another figure.
    assert not any(p.startswith("Shares outstanding") for p in picked)


SEGMENTS = (
    "Segment EBITDA (In thousands)\n\n"
    "North America 1,204,331 1,118,902\n\n"
    "Europe 3,142,308 2,987,114\n\n"
    "Asia Pacific 402,118 388,940"
)


def test_a_figure_written_without_separators_finds_the_grouped_one() -> None:
    answer = "Its share is 3142308/4748757, about two thirds."
    picked = chosen(SEGMENTS, answer, "Which segment contributed most of the EBITDA?")
    assert picked[0] == "Europe 3,142,308 2,987,114"


DIVIDENDS = (
    "Capital expenditures were $410 million, mostly on new stores. The board paid a quarterly "
    "dividend of $0.25 per share throughout fiscal 2023. Inventory rose 6% on new brand launches."
)


def test_a_yes_leans_on_the_question() -> None:
    picked = chosen(DIVIDENDS, "Yes.", "Did the board pay a dividend in fiscal 2023?")
    assert picked[0].startswith("The board paid a quarterly dividend")


STORES = (
    "During fiscal 2022 the Company opened 47 new stores, relocated 12 and closed none. "
    "Merchandise inventories rose to $1.6 billion. Capital expenditures were $410 million."
)


def test_a_zero_leans_on_the_question() -> None:
    picked = chosen(STORES, "zero", "How many stores did the Company close in fiscal 2022?")
    assert picked == [STORES.split(". ")[0] + "."]


GROWTH = (
    "The segment opened two plants in Ohio. Its revenues grew organically across all regions. "
    "Currency moved against it."
)


def test_revenues_meet_revenue_and_organically_meets_organic() -> None:
    picked = chosen(GROWTH, "The segment's revenue showed organic growth in every region.", "How?")
    assert picked == ["Its revenues grew organically across all regions."]


CHANNELS = (
    "Online Channel\n\n"
    "• Net sales of $2.3 billion in the current year compared to $2.6 billion in the prior "
    "year, a decrease of 12%; • Operating margin of 4.1% compared to 5.0% in the prior year.\n\n"
    "Retail Stores\n\n"
    "• Net sales of $6.1 billion in the current year compared to $5.7 billion in the prior "
    "year, an increase of 7%; • Operating margin of 9.8% compared to 10.4% in the prior year."
)


def test_the_comparison_bullets_are_chosen_not_the_two_word_heading() -> None:
    answer = "The online channel had the weakest sales, which fell while store sales increased."
    picked = chosen(CHANNELS, answer, "Which channel had the weakest sales performance?")
    # The online bullet says "decrease", not "fell": it is its heading that ties it to the answer.
    assert sorted(picked) == [
        "• Net sales of $2.3 billion in the current year compared to $2.6 billion in the prior "
        "year, a decrease of 12%;",
        "• Net sales of $6.1 billion in the current year compared to $5.7 billion in the prior "
        "year, an increase of 7%;",
    ]


def test_french_and_chinese_chunks_still_work() -> None:
    french = "Le conseil a adopté les dépenses de voirie. La séance est levée à 21 h."
    assert chosen(french, "Le conseil adopte la dépense de voirie.", "Qu'a fait le conseil ?") == [
        "Le conseil a adopté les dépenses de voirie."
    ]
    chinese = "本法修正草案已於今日三讀通過。委員會另決議延會。"
    assert chosen(chinese, "修正草案三讀通過。", "草案是否通過？") == [
        "本法修正草案已於今日三讀通過。"
    ]


def test_terms_are_weighed_against_every_cited_chunk_of_the_batch() -> None:
    # Alone, chunk A's two sentences tie (two shared terms each, same length) and the first wins;
    # beside chunk B, where steel tariffs are in every sentence, Kenya's demand is the telling one.
    chunk_a = split_sentences("Tariffs on steel rose. Demand in Kenya was very weak.")
    chunk_b = split_sentences(
        "Steel tariffs were raised twice. Tariffs on steel pipes fell. Steel tariffs cost more."
    )
    answer, question = "Steel tariffs and demand in Kenya hurt sales.", "Why did sales fall?"
    assert select_batch({"a": chunk_a}, answer, question, limit=1) == {"a": [1]}
    together = select_batch({"a": chunk_a, "b": chunk_b}, answer, question, limit=1)
    assert together["a"] == [2]


words = st.sampled_from(
    ["sales", "rose", "12%", "Kenya", "•", "(1)", "3,142", "$5", "le", "草案", "."]
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(words, max_size=12).map(" ".join), max_size=8),
    st.lists(words, max_size=8).map(" ".join),
    st.integers(min_value=1, max_value=5),
)
def test_choices_are_valid_sentence_ids_within_the_limit(
    blocks: list[str], answer: str, limit: int
) -> None:
    sentences: list[Sentence] = split_sentences("\n\n".join(blocks))
    picked = select_sentences(sentences, answer or "x", "Why?", limit)
    assert len(picked) <= limit
    assert len(set(picked)) == len(picked)
    assert set(picked) <= {s.index for s in sentences}
    # The verdict behind the choice: a share, and nothing chosen exactly when unsupported.
    wanted: dict[str, list[Span]] = {"": [None]}
    verdict = select_claims({"": sentences}, answer or "x", "Why?", wanted, limit)[""][None]
    assert list(verdict.ids) == picked
    assert 0.0 <= verdict.score <= 1.0
    assert (verdict.support == "unsupported") == (not verdict.ids)


BALANCE_SHEET = (
    "Consolidated Balance Sheets (In millions)\n\n"
    "Cash and cash equivalents $ 2,605 $ 2,921\n\n"
    "Accounts receivable, net 24,506 23,846\n\n"
    "Property, plant and equipment, net 107,434 99,696\n\n"
    "Total current liabilities 50,171 47,160\n\n"
    "Long-term debt 140,676 143,425\n\n"
    "55 Verizon 2022 Annual Report on Form 10-K"
)


def test_a_computed_answer_finds_the_lines_it_was_computed_from() -> None:
    answer = "No. The quick ratio was approximately 0.54, not a healthy liquidity profile."
    question = "Does Verizon have a healthy liquidity profile based on its quick ratio for FY 2022?"
    picked = chosen(BALANCE_SHEET, answer, question)
    # Two of the ratio's lines (the answer's two sentences bound the count per chunk), no other.
    operands = ("Cash and cash equivalents", "Accounts receivable", "Total current liabilities")
    assert len(picked) == 2
    assert all(p.startswith(operands) for p in picked), picked
    assert not any(p.startswith(("Property", "Long-term debt")) for p in picked)


def test_a_measure_nobody_named_adds_nothing() -> None:
    # Without a named measure the answer's own words decide, as before.
    answer = "Long-term debt was $140,676 million at the end of 2022."
    assert chosen(BALANCE_SHEET, answer, "How much long-term debt did Verizon carry?") == [
        "Long-term debt 140,676 143,425"
    ]


def test_a_running_footer_is_never_chosen() -> None:
    answer = "Verizon's 2022 Annual Report on Form 10-K shows its debt."
    picked = chosen(BALANCE_SHEET, answer, "What does Verizon's 2022 annual report say?")
    assert not any("Annual Report" in p for p in picked)
