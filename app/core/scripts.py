"""Unicode facts the pure packages share (``alignment`` and ``selection`` import nothing else of
the app). Standard library only.
"""

from __future__ import annotations

import re

# Scripts written without spaces between words.
CJK_RANGES = (
    "\u3040-\u30ff"  # kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # ideographs
    "\uac00-\ud7af"  # hangul (skeletons hold jamo instead, about one letter each)
    "\U00020000-\U0002fa1f"
)
CJK = re.compile(f"[{CJK_RANGES}]")
# Their punctuation ("，", "。", "「", full-width forms): no space goes beside it either.
CJK_PUNCTUATION_RANGES = "\u3000-\u303f\uff00-\uffef"
CJK_PUNCTUATION = re.compile(f"[{CJK_PUNCTUATION_RANGES}]")
# CJK text: the characters and their punctuation.
CJK_TEXT_RANGES = CJK_RANGES + CJK_PUNCTUATION_RANGES
CJK_TEXT = re.compile(f"[{CJK_TEXT_RANGES}]")


def is_cjk(char: str) -> bool:
    """A character of a script written without spaces between words: such text is read in
    character bigrams (selection) and weighs more per character (alignment)."""
    return CJK.match(char) is not None
