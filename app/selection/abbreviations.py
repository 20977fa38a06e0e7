"""What a full stop after a word means, as a maintained sentence splitter knows it. Pure.

The knowledge is pySBD's (the Python port of the Pragmatic Segmenter, whose "golden rules" are
the tests in ``tests/selection/test_golden_rules.py``): its abbreviation lists for English,
German and French, which of them stand before a name ("Mr.", "Mt.") or a number ("No.", "p."),
the words that start a sentence after an initialism ("U.S. How ..."), and the words that end in
"!" ("Yahoo!"). A chunk does not say its language, so the three languages' lists are read as one;
what a wrong guess costs is bounded by how the lists are used (``app.selection.sentence_ends``):
an abbreviation only keeps a sentence going when a digit, a bracket or a name follows it.

A few entries are this service's own, kept because parliamentary and legal text is what it
reads and pySBD's lists lack them (each says why): titles before a name ("Hon.", "Rt.") and
references before a number ("Para. 3", "Figs. 2").
"""

from __future__ import annotations

from pysbd.exclamation_words import ExclamationWords
from pysbd.lang.common.standard import Standard
from pysbd.lang.deutsch import Deutsch
from pysbd.lang.french import French


def _clean(words: list[str]) -> frozenset[str]:
    # pySBD's lists carry stray spaces ("dr ", "str  "); lower case throughout.
    return frozenset(w.strip().lower() for w in words if w.strip())


# "Hon. Justice Mary Kasango", "the Rt. Hon. Member", "e.g. The" (an example follows e.g. and
# i.e., never a new sentence): they stand before what they qualify.
_OWN_PREPOSITIVE = frozenset({"hon", "rt", "e.g", "i.e", "viz", "cf"})
# Legal and report references that a number follows ("Paras. 3-5", "Figs. 2 and 3").
_OWN_NUMBER = frozenset({"para", "paras", "arts", "secs", "figs", "vols", "ch", "chap", "approx"})

PREPOSITIVE = _clean(Standard.Abbreviation.PREPOSITIVE_ABBREVIATIONS) | _OWN_PREPOSITIVE
NUMBER = (
    _clean(Standard.Abbreviation.NUMBER_ABBREVIATIONS)
    | _clean(Deutsch.Abbreviation.NUMBER_ABBREVIATIONS)
    | _OWN_NUMBER
)
ABBREVIATIONS = (
    _clean(Standard.Abbreviation.ABBREVIATIONS)
    | _clean(Deutsch.Abbreviation.ABBREVIATIONS)
    | _clean(French.Abbreviation.ABBREVIATIONS)
    | PREPOSITIVE
    | NUMBER
)
# After an initialism ("U.S.", "E.U.") or the pronoun "I.", a capitalised word starts a new
# sentence only if it is one of these ("I live in the U.S. How about you?" against "the U.S.
# Government"): pySBD's English and German lists.
SENTENCE_STARTERS = frozenset(Standard.AbbreviationReplacer.SENTENCE_STARTERS) | frozenset(
    Deutsch.AbbreviationReplacer.SENTENCE_STARTERS
)
# Names that end in "!" ("She works at Yahoo! in ...").
EXCLAMATION_WORDS = frozenset(ExclamationWords.EXCLAMATION_WORDS)
# "vom 12. Juni": a day's number and a full stop before a month is a German date, not an end
# (pySBD's German rule; its month names).
ORDINAL_MONTHS = frozenset(
    "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split()
)
