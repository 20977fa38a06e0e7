"""W3C selectors and URL text fragments over a document's text, by property."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from app.alignment.selectors import (
    TextQuote,
    encode_fragment_term,
    find_fragment,
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


def _terms(fragment: str) -> tuple[str, str | None, str | None, str | None]:
    """A fragment made here back into (start, end, prefix, suffix)."""
    parts = [unquote(p) for p in fragment.removeprefix("#:~:text=").split(",")]
    prefix = parts.pop(0)[:-1] if parts[0].endswith("-") and len(parts) > 1 else None
    suffix = parts.pop()[1:] if parts[-1].startswith("-") else None
    return parts[0], parts[1] if len(parts) > 1 else None, prefix, suffix


def test_a_repeated_opening_gets_context_from_the_block_before() -> None:
    # The reviewer's case: "In this paper we,...than X." alone lands in the first paragraph.
    text = "In this paper we show X is good.\n\nIn this paper we show Y is better than X."
    start = text.index("In this paper we show Y")
    fragment = text_fragment(text, start, len(text))
    assert fragment is not None
    assert find_fragment(text, *_terms(fragment)) == (start, len(text))
    assert find_fragment(text, "In this paper we", "is better than X.") == (0, len(text))


OPENINGS = st.sampled_from(["In this paper we show", "We show", "The result is", "In this"])
ENDINGS = st.sampled_from(["X is good.", "Y is better than X.", "it holds.", "good."])


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(OPENINGS, ENDINGS, st.sampled_from(["\n\n", " ", "\n", "\t"])),
        min_size=2,
        max_size=8,
    ),
    st.data(),
)
def test_a_fragment_lands_on_its_sentence_first(
    sentences: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    text, spans = "", []
    for opening, ending, gap in sentences:
        sentence = f"{opening} {ending}"
        spans.append((len(text), len(text) + len(sentence)))
        text += sentence + gap
    start, end = data.draw(st.sampled_from(spans))
    fragment = text_fragment(text, start, end)
    if fragment is None:  # the same words in the same context earlier: nothing lands on it
        earlier = text[:start]
        assert text[start:end] in earlier
        return
    assert find_fragment(text, *_terms(fragment)) == (start, end)


def test_a_cjk_fragment_stays_small() -> None:
    # A line of Chinese is one "word" to str.split(): the terms and context are cut by clause
    # and characters instead (a 19,048-character fragment was seen).
    long_line = "这是一个很长的中文句子没有空格" * 300
    sentence = (
        "我们的结论是：经济增长了百分之五，而且通胀下降了，"
        "这是一个很长的句子，它还在继续说明更多的细节和原因。"
    )
    earlier = long_line + "。" + sentence + long_line + "\n\n前面的段落，说的是别的事情。\n\n"
    text = earlier + sentence + "\n\n" + long_line
    start = len(earlier)
    fragment = text_fragment(text, start, start + len(sentence))
    assert fragment is not None
    assert len(unquote(fragment)) <= 4 * 2 * 48
    assert find_fragment(text, *_terms(fragment)) == (start, start + len(sentence))
