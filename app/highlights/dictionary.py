"""The English words that decide whether a hyphen at a line end is a compound's own
("long-\\nterm": "long" and "term" are words, "longterm" is not) or the typesetter's
("parlia-\\nmentary"): pyspellchecker's English word list (160,000 words from subtitles and
Wiktionary, MIT), read once per process on first use (0.2-1 s, about 30 MB of resident
memory) and kept.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_words: frozenset[str] | None = None


def english_words() -> frozenset[str]:
    """Lower-case English words; blocking on first use (call it from a worker thread)."""
    global _words
    words = _words  # read once: after the first load, no lock is taken
    if words is not None:
        return words
    with _lock:
        if _words is None:
            from spellchecker import SpellChecker

            checker = SpellChecker(language="en", case_sensitive=False)
            _words = frozenset(checker.word_frequency.keys())
        return _words


class _EnglishWords:
    """``english_words()`` as a container read on first use: most batches have no sentence with
    a line-end hyphen that the chunk's own words leave open, and they never load the list."""

    def __contains__(self, word: object) -> bool:
        return word in english_words()


ENGLISH_WORDS = _EnglishWords()
