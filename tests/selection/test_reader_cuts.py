"""Sentences where a reader cuts them, on the text chat systems' chunkers write (issue 41):
sentences whose printed lines are separated by blank lines (pdfminer, PyMuPDF4LLM), long
sentences wrapped over many lines, numbers before capitals in prose, reference brackets and
citation lists, abbreviations with and without a capital after them, list items run together.
Each rule is held by property over generated text, not only by the examples."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.selection.sentences import split_sentences


def texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


LOWER_WORDS = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9), min_size=6, max_size=60
)


def _wrapped(words: list[str], breaks: list[bool], separator: str) -> str:
    out = [words[0]]
    for word, cut in zip(words[1:], breaks, strict=False):
        out.append(separator if cut else " ")
        out.append(word)
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(LOWER_WORDS, st.lists(st.booleans(), max_size=60), st.sampled_from(["\n\n", "\n \n", "\n"]))
def test_a_sentence_whose_lines_are_blank_line_apart_is_one_sentence(
    words: list[str], breaks: list[bool], separator: str
) -> None:
    text = "The " + _wrapped(words, breaks, separator) + "."
    assert texts(text) == [text]


def test_the_tracemonkey_abstract_as_pdfminer_writes_it() -> None:
    text = (
        "Dynamic languages such as JavaScript are more difﬁcult to com-\n\n"
        "pile than statically typed ones. Since no concrete type information\n\n"
        "is available, traditional compilers need to emit generic code that can\n\n"
        "handle all possible type combinations at runtime."
    )
    assert texts(text) == [
        "Dynamic languages such as JavaScript are more difﬁcult to com-\n\n"
        "pile than statically typed ones.",
        "Since no concrete type information\n\nis available, traditional compilers need to emit "
        "generic code that can\n\nhandle all possible type combinations at runtime.",
    ]


def test_a_heading_before_a_blank_line_is_still_its_own_sentence() -> None:
    assert texts("ROAD SAFETY\n\nThe motion was moved.\n\nthe end") == [
        "ROAD SAFETY",
        "The motion was moved.",
        "the end",
    ]
    assert texts("Revenue 4,756 4,822\n\nNet income 1,200 1,100") == [
        "Revenue 4,756 4,822",
        "Net income 1,200 1,100",
    ]


@settings(max_examples=100, deadline=None)
@given(LOWER_WORDS.filter(lambda w: len(" ".join(w)) > 60), st.integers(6, 12))
def test_a_long_sentence_wrapped_over_many_lines_is_one_sentence(
    words: list[str], per_line: int
) -> None:
    words = words * (1 + 900 // len(" ".join(words)))  # well over the 400 of a long piece
    # A few lines start with a capitalised name, as a 10-K's do ("the Company", "Board").
    lines = [" ".join(words[i : i + per_line]) for i in range(0, len(words), per_line)]
    lines = [line.capitalize() if n % 4 == 3 else line for n, line in enumerate(lines)]
    text = "Under the agreement " + "\n".join(lines) + "."
    assert len(text) > 400
    assert texts(text) == [text]


def test_a_long_list_without_punctuation_is_still_cut_at_its_lines() -> None:
    lines = [f"Schedule {n} Amendments to the Regional Water Authority Act" for n in range(12)]
    assert texts("\n".join(lines)) == lines


CITIES = st.sampled_from(["New York", "Boston", "Nairobi", "Kisumu", "Paris"])


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 999), CITIES, st.integers(2, 999), CITIES)
def test_numbers_before_capitals_in_prose_do_not_cut(a: int, x: str, b: int, y: str) -> None:
    text = f"We opened {a} {x} stores and {b} {y} stores this year."
    assert texts(text) == [text]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Docker", "Containerd", "Apptainer", "Podman"]), min_size=2))
def test_reference_brackets_do_not_cut(names: list[str]) -> None:
    listed = ", ".join(f"{name} [{n}]" for n, name in enumerate(names, 20))
    text = f"Runtimes such as {listed}, or Charliecloud [32] are used."
    assert texts(text) == [text]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Yao", "Xi", "Wang", "Park"]), st.integers(1990, 2025))))
def test_citation_lists_do_not_cut(cited: list[tuple[str, int]]) -> None:
    listed = "; ".join(f"{name} et al., {year}" for name, year in [("Lee", 2020), *cited])
    text = f"Agents plan with tools ({listed}). They work."
    assert texts(text) == [f"Agents plan with tools ({listed}).", "They work."]


def test_the_federal_registers_address_is_one_sentence() -> None:
    text = (
        "Submissions containing CBI should be sent to Doug Rudolph, Environmental Protection "
        "Agency, 901 Locust, Room 301, Kansas City, Missouri 64106. Comments are due soon."
    )
    assert texts(text)[0].endswith("Kansas City, Missouri 64106.")
    assert len(texts(text)) == 2


def test_abbreviations_with_and_without_a_capital_after_them() -> None:
    assert texts("The House met at 9 a.m. and rose at 5 p.m. on Friday.") == [
        "The House met at 9 a.m. and rose at 5 p.m. on Friday."
    ]
    assert texts("Let's ask Jane and co. They should know.") == [
        "Let's ask Jane and co.",
        "They should know.",
    ]
    assert texts("I can see Mt. Fuji from here. I live in the U.S. How about you?") == [
        "I can see Mt. Fuji from here.",
        "I live in the U.S.",
        "How about you?",
    ]
    assert texts("Wir brauchen z. B. Wasser. Die Abstimmung vom 12. Juni ist vorbei.") == [
        "Wir brauchen z. B. Wasser.",
        "Die Abstimmung vom 12. Juni ist vorbei.",
    ]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20), st.integers(2, 6), st.sampled_from([". ", ".) ", ") "]))
@example(9, 2, ". ")
def test_list_items_run_together_are_each_a_sentence(first: int, count: int, mark: str) -> None:
    items = [f"{n}{mark}The item number {n} holds words" for n in range(first, first + count)]
    assert texts("Items: " + " ".join(items)) == ["Items:", *items]


def test_a_sequence_of_initials_is_no_list() -> None:
    assert texts("Hon. J. K. Mwangi cited Art. 12. The House rose.") == [
        "Hon. J. K. Mwangi cited Art. 12.",
        "The House rose.",
    ]
    assert texts("It rose by 5. Then it rose by 6. Then it fell.") == [
        "It rose by 5.",
        "Then it rose by 6.",
        "Then it fell.",
    ]


def test_cjk_terminators_inside_brackets_and_before_a_quoting_particle() -> None:
    assert texts("我们明天一起去看《摔跤吧！爸爸》好吗？好！") == [
        "我们明天一起去看《摔跤吧！爸爸》好吗？",
        "好！",
    ]
    assert texts("彼は「行きます。」と言った。次の日も来た。") == [
        "彼は「行きます。」と言った。",
        "次の日も来た。",
    ]
    # An unclosed bracket does not hold the rest of the text.
    assert texts("《摔跤吧！爸爸好吗？好！") == ["《摔跤吧！", "爸爸好吗？", "好！"]


def test_ellipses_of_spaced_dots() -> None:
    assert texts("It slowed . . . then stopped. I waited . . . I left.") == [
        "It slowed . . . then stopped.",
        "I waited . . . I left.",
    ]
    assert texts("a period . . . . Next sentence.") == ["a period . . . .", "Next sentence."]
    # Dots that run into a word are no ellipsis: the full stop before them ends its sentence.
    assert texts("It ended. .NET is next.") == ["It ended.", ".NET is next."]
