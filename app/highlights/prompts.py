"""The words sent to the model. Sentences are numbered so the model answers with ids."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from app.selection.sentences import Sentence

SYSTEM_PROMPT = """\
You check which sentences of cited source passages support an answer that was given to a user.
For every passage, list the ids of the sentences that state facts the answer relies on, most \
important first, at most {max_per_chunk} per passage. Choose only sentences that support the \
answer; if no sentence of a passage does, give an empty list for it. Include every passage once, \
in the order given, with its chunk_id exactly as written."""


@dataclass(frozen=True)
class PromptChunk:
    chunk_id: str
    sentences: list[Sentence]


def _readable(text: str) -> str:
    # PDF text carries ligature glyphs (U+FB01 "fi") and odd spaces; NFKC gives the model plain
    # words. Only the prompt changes: offsets still refer to the stored chunk text.
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    # Chunk text is untrusted: it must not close the passage it sits in.
    return re.sub(r"</?\s*passage", lambda m: m.group().replace("<", "‹"), text, flags=re.I)


def system_prompt(max_per_chunk: int) -> str:
    return SYSTEM_PROMPT.format(max_per_chunk=max_per_chunk)


def user_prompt(query: str, answer: str, chunks: list[PromptChunk]) -> str:
    parts = [f"Question:\n{query}\n", f"Answer:\n{answer}\n", "Passages:"]
    for chunk in chunks:
        lines = [f"[{s.index}] {_readable(s.text)}" for s in chunk.sentences]
        parts.append(f'<passage chunk_id="{chunk.chunk_id}">\n' + "\n".join(lines) + "\n</passage>")
    return "\n".join(parts)
