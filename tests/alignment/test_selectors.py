"""W3C selectors and URL text fragments over a document's text, by property."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from app.alignment.selectors import (
    TextQuote,
    encode_fragment_term,
    quote_selector,
    resolve_quote,
    text_fragment,
)

# A small alphabet repeats itself often: the prefix and suffix must grow to be unique.
REPETITIVE = st.text(alphabet="ab \n.", min_size=1, max_size=300)


@st.composite
def text_and_span(
    draw: st.DrawFn, texts: st.SearchStrategy[str] = REPETITIVE
) -> tuple[str, int, int]:
    text = draw(texts)
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text, start, end


@settings(max_examples=400)
@given(text_and_span())
def test_a_quote_resolves_to_its_span_and_only_there(case: tuple[str, int, int]) -> None:
    text, start, end = case
    quote = quote_selector(text, start, end)
    assert quote.exact == text[start:end]
    assert resolve_quote(text, quote) == (start, end)
    whole = quote.prefix + quote.exact + quote.suffix
    first = text.find(whole)
    assert text.find(whole, first + 1) == -1


@given(text_and_span(st.text(min_size=1, max_size=200)))
def test_any_unicode_text(case: tuple[str, int, int]) -> None:
    text, start, end = case
    assert resolve_quote(text, quote_selector(text, start, end)) == (start, end)


def test_context_is_32_characters_when_that_is_unique() -> None:
    text = "".join(f"sentence number {i} of many. " for i in range(100))
    start = text.index("sentence number 50")
    end = start + len("sentence number 50 of many.")
    quote = quote_selector(text, start, end)
    assert len(quote.prefix) == len(quote.suffix) == 32


def test_a_repeated_sentence_gets_a_longer_context() -> None:
    para = "The deficit fell. " * 20
    text = "Intro. " + para + "Outro."
    start = text.index("The deficit fell.") + 18 * 10
    quote = quote_selector(text, start, start + len("The deficit fell."))
    assert len(quote.prefix) > 32
    assert resolve_quote(text, quote) == (start, start + len("The deficit fell."))


def test_a_quote_not_in_the_text_resolves_to_nothing() -> None:
    assert resolve_quote("abc", TextQuote("x", "", "")) is None


def test_fragment_terms_encode_the_directive_characters() -> None:
    assert encode_fragment_term("a-b, c&d;e") == "a%2Db%2C%20c%26d%3Be"
    assert unquote(encode_fragment_term("é-ü 10%")) == "é-ü 10%"


def test_fragment_of_a_short_sentence_with_context() -> None:
    text = "Before this one. The deficit fell to 2.1 per-cent. After that, more."
    start = text.index("The")
    end = text.index("After") - 1
    fragment = text_fragment(text, start, end)
    assert fragment == (
        "#:~:text=Before%20this%20one.-,The%20deficit%20fell%20to%202.1%20per%2Dcent.,"
        "-After%20that%2C%20more."
    )


def test_fragment_of_a_long_sentence_is_its_first_and_last_words() -> None:
    text = "one two three four five six seven eight nine ten eleven."
    assert text_fragment(text, 0, len(text)) == (
        "#:~:text=one%20two%20three%20four,eight%20nine%20ten%20eleven."
    )


def test_fragment_terms_stay_within_a_line() -> None:
    text = "Heading\n\nFirst line of it\nsecond line here.\n\nNext"
    start = text.index("First")
    end = text.index("here.") + 5
    fragment = text_fragment(text, start, end)
    assert fragment == "#:~:text=First%20line%20of%20it,second%20line%20here."


def test_fragment_of_nothing() -> None:
    assert text_fragment("a   b", 1, 3) is None


@given(text_and_span(st.text(alphabet="ab-,&; \n", min_size=1, max_size=80)))
def test_fragment_terms_never_carry_a_raw_directive_character(case: tuple[str, int, int]) -> None:
    text, start, end = case
    fragment = text_fragment(text, start, end)
    if fragment is None:
        return
    body = fragment.removeprefix("#:~:text=")
    terms = body.split(",")
    assert 1 <= len(terms) <= 4
    for term in terms:
        bare = term.removesuffix("-").removeprefix("-")
        assert not set(bare) & set("-,&; \n")
        assert unquote(bare).split() == unquote(bare).split(" ")


def test_fragment_terms_stay_within_a_table_cell() -> None:
    text = "Year\tRevenue\tMargin\n\n2024\tRevenue rose to 5 billion.\tHigh"
    start = text.index("Revenue rose")
    end = text.index("billion.") + len("billion.")
    # The neighbouring cells are other blocks to a browser: no context from them.
    assert text_fragment(text, start, end) == "#:~:text=Revenue%20rose%20to%205%20billion."
