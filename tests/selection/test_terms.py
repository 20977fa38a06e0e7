"""Index terms of the lexical selector (app.selection.terms)."""

from __future__ import annotations

from app.selection.terms import language_of, read, terms


def test_inflected_forms_meet_their_stem() -> None:
    assert terms("revenues", "english") == terms("revenue", "english")
    assert terms("organically", "english") == terms("organic", "english")
    assert terms("repurchased", "english") == terms("repurchases", "english")


def test_french_is_stemmed_before_its_accents_are_folded() -> None:
    assert terms("adoptée", "french") == terms("adopté", "french") == terms("adoptées", "french")
    assert terms("dépenses", "french") == terms("dépense", "french")


def test_function_words_and_bare_verdicts_are_not_terms() -> None:
    assert terms("Yes, it was.", "english") == set()
    assert terms("Oui, elle est dans le budget.", "french") == {"budget"}


def test_chinese_runs_become_bigrams_whatever_the_language() -> None:
    assert terms("修正草案", "english") == {"修正", "正草", "草案"}


def test_the_language_is_read_from_common_words() -> None:
    assert language_of(["The council adopted the budget and the levy."]) == "english"
    assert language_of(["Le conseil a adopté le budget et la taxe."]) == "french"
    assert language_of(["本法修正草案。", "3,142,308"]) is None


def test_figures_and_dates_are_terms_but_only_figures_are_claims() -> None:
    text = "On March 3, 2024 sales were 3,142,308 (up 8.4%)."
    assert {"2024", "3142308", "8.4%"} <= terms(text, "english")
    assert "3" not in terms(text, "english")  # a lone digit would match any footnote mark
    reading = read(text, "english")
    assert (reading.claimed, reading.dates) == ({"3142308", "8.4%"}, {"2024"})
