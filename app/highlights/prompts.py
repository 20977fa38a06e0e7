"""The words sent to the model. Sentences are numbered so the model answers with a verdict and
ids (the format: ``app.highlights.contract``)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from app.selection.sentences import Sentence

SYSTEM_PROMPT = """\
You check which sentences of cited source passages support an answer that was given to a user.
Each passage is cited for a claim of the answer (or for the whole answer). For every passage, \
first give a verdict on its own claim: "yes" if the passage supports it, "part" if it supports \
only part of it, "no" if nothing in it does (a sentence that merely shares words with the claim, \
or supports another claim, does not count). After "yes" or "part", list the ids of the sentences \
that state the facts the claim relies on, most important first, at most {max_per_chunk}; after \
"no", nothing. Answer with {{"results": [...]}}: one list per passage, in the order of the \
passages' numbers, e.g. {{"results": [["yes", 2, 5], ["no"], ["part", 1]]}}."""


@dataclass(frozen=True)
class PromptChunk:
    chunk_id: str
    sentences: list[Sentence]
    # The claim this passage is cited for; None: the answer as a whole.
    claim: str | None = None


def _readable(text: str) -> str:
    # PDF text carries ligature glyphs (U+FB01 "fi") and odd spaces; NFKC gives the model plain
    # words. Only the prompt changes: offsets still refer to the stored chunk text.
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    # Chunk text is untrusted: it must not close the passage it sits in.
    return re.sub(r"</?\s*passage", lambda m: m.group().replace("<", "‹"), text, flags=re.I)


def system_prompt(max_per_chunk: int) -> str:
    return SYSTEM_PROMPT.format(max_per_chunk=max_per_chunk)


def _quoted(text: str) -> str:
    return _readable(text).replace('"', "'")


def user_prompt(query: str, answer: str, chunks: list[PromptChunk]) -> str:
    """The passages numbered from 1 in the order the reply answers them. A chunk cited for two
    claims is two passages; its sentences are written out once, at its first passage."""
    parts = [f"Question:\n{query}\n", f"Answer:\n{answer}\n", "Passages:"]
    first: dict[str, int] = {}
    for n, chunk in enumerate(chunks, 1):
        cited = "the whole answer" if chunk.claim is None else f'"{_quoted(chunk.claim)}"'
        head = f'<passage n="{n}" chunk_id="{_quoted(chunk.chunk_id)}">\nCited for: {cited}\n'
        if chunk.chunk_id in first:
            body = f"(the sentences of passage {first[chunk.chunk_id]})"
        else:
            first[chunk.chunk_id] = n
            body = "\n".join(f"[{s.index}] {_readable(s.text)}" for s in chunk.sentences)
        parts.append(f"{head}{body}\n</passage>")
    return "\n".join(parts)
