from __future__ import annotations

from app.selection.selection import select_sentences, terms
from app.selection.sentences import split_sentences

CHUNK = (
    "The House met at 2.30 p.m. The Minister said the programme will cost 12.5 billion "
    "shillings over three years. Members asked about maintenance. The final figures show a "
    "deficit of 5.1 per cent."
)


def test_picks_the_sentences_that_echo_the_answer_best_first() -> None:
    sentences = split_sentences(CHUNK)
    answer = "It will cost 12.5 billion shillings over three years; the deficit is 5.1 per cent."
    picked = select_sentences(sentences, answer, "What will it cost?", limit=5)
    assert picked == [2, 4]


def test_nothing_is_picked_when_nothing_overlaps() -> None:
    sentences = split_sentences(CHUNK)
    assert select_sentences(sentences, "Road deaths rose in 2024.", "Road safety?", limit=5) == []


def test_limit_is_respected() -> None:
    sentences = split_sentences(CHUNK)
    answer = "programme cost billion shillings years members maintenance final figures deficit"
    assert len(select_sentences(sentences, answer, "", limit=1)) == 1


def test_terms_fold_accents_and_split_chinese_into_bigrams() -> None:
    assert {"resolution", "adoptee"} <= terms("Résolution adoptée")
    assert {"修正", "正草", "草案"} <= terms("修正草案")
    assert "5" not in terms("5.1 per cent")
    assert "2024" in terms("in 2024")
