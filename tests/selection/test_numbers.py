"""Figures in one canonical form (app.selection.numbers)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.selection.numbers import canonical, figures


def terms_of(text: str) -> list[str]:
    return [f.term for f in figures(text)[0]]


def test_thousands_separators_and_decimals_meet_the_plain_figure() -> None:
    assert canonical("3,142,308") == canonical("3142308") == "3142308"
    assert canonical("1.234.567") == "1234567"
    assert canonical("3\u202f142\u202f308") == "3142308"  # French: narrow no-break spaces
    assert canonical("900.0") == canonical("900") == "900"
    assert canonical("0.50") == "0.5"
    assert canonical("12,5") == "12.5"  # a decimal comma
    assert canonical("1,234.50") == canonical("1.234,5") == "1234.5"


def test_signs_parentheses_and_currency_keep_the_magnitude() -> None:
    assert terms_of("(54,979)") == terms_of("-54,979") == terms_of("\u221254,979") == ["54979"]
    assert terms_of("a loss of $54,979") == ["54979"]
    assert terms_of("-14.76") == terms_of("(14.76)") == terms_of("€14.76") == ["14.76"]


def test_percentages_in_any_spelling_are_one_term() -> None:
    for text in ("36%", "36 %", "36 percent", "36 per cent", "36 pour cent", "36,0 %"):
        assert terms_of(text) == ["36%"], text
    assert terms_of("36") == ["36"]  # a count is not a percentage


def test_dates_are_told_apart_from_claimed_figures() -> None:
    found, _ = figures("As of January 28, 2023, 47 stores and 28 janvier: 12.5 million")
    kinds = {f.term: (f.date, f.claimed) for f in found}
    assert kinds["28"] == (True, False)
    assert kinds["2023"] == (True, False)
    assert kinds["47"] == (False, True)
    assert kinds["12.5"] == (False, True)


def test_figures_are_blanked_out_of_the_text_left_for_words() -> None:
    _, rest = figures("sales rose 36 per cent to 3,142,308 units")
    assert rest.split() == ["sales", "rose", "to", "units"]


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from([",", "\u00a0", "\u202f"]))
def test_any_grouped_integer_is_its_plain_digits(value: int, separator: str) -> None:
    assert canonical(f"{value:,}".replace(",", separator)) == str(value)


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=99))
def test_a_grouped_decimal_is_its_plain_decimal(whole: int, cents: int) -> None:
    plain = canonical(f"{whole}.{cents:02d}")
    assert canonical(f"{whole:,}.{cents:02d}") == plain
    assert canonical(f"{whole:,}.{cents:02d}".replace(",", "\u00a0").replace(".", ",")) == plain
