"""Very long chunks on a miss: what splitting ten 100k-character chunks costs, and selecting.

The service keeps a chunk's first ``max_sentences_per_chunk`` (200) sentences. Splitting the
whole chunk and then cutting the list (the call before, ``split_sentences(text)[:cap]``) costs
the whole text; ``split_sentences(text, limit=cap)`` stops once it has them. Printed, in CPU
time of this process (best of ``--repeat``), for the ten chunks together:

* ``before``: the whole text split, then capped;
* ``after``: the split with ``limit=cap`` (the service's call);
* ``floor``: the same splitter on only the text the capped sentences span (each chunk cut just
  after its 200th sentence), what producing those sentences cannot cost less than;
* ``select``: the lexical selector on the capped sentences (the rest of a miss's CPU per chunk;
  the same before and after);

and the ratios after/floor and before/after. The chunks are corpus-like text: the text layers of
../shared/pdfs joined (prose, tables, lists, French, Chinese), or, without it, generated prose,
table rows and bullets. ``--root DIR`` imports ``app`` from another checkout (e.g. the commit
before, whose splitter has no ``limit``: then only ``before`` and ``select`` are printed).

    .venv/bin/python bench/long_chunks.py [--chunks 10] [--chars 100000] [--repeat 5] [--root DIR]
"""

from __future__ import annotations

import argparse
import inspect
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "pdfs"
CAP = 200


def _generated(rng: random.Random, chars: int) -> str:
    words = "the board said revenue rose in each region after costs fell and margins held".split()
    parts: list[str] = []
    size = 0
    while size < chars:
        kind = rng.random()
        if kind < 0.7:
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 30)))
            part = sentence.capitalize() + rng.choice([". ", "? ", "! ", ".\n\n"])
        elif kind < 0.9:
            figures = " ".join(f"{rng.randint(1, 9)},{rng.randint(100, 999)}" for _ in range(2))
            part = f"Region {rng.randint(1, 99)} revenue {figures}\n"
        else:
            part = " \u2022 " + " ".join(rng.choice(words) for _ in range(8)) + " "
        parts.append(part)
        size += len(part)
    return "".join(parts)[:chars]


def corpus_text(chars: int, seed: int) -> str:
    """One long text of the corpus's text layers (pages in a seeded order), or generated."""
    rng = random.Random(seed)
    pdfs = sorted(SHARED.glob("*.pdf")) if SHARED.is_dir() else []
    pages: list[str] = []
    if pdfs:
        import pymupdf

        for pdf in pdfs:
            with pymupdf.open(pdf) as doc:
                pages += [page.get_text("text") for page in doc.pages(0, min(len(doc), 40))]
    pages = [p for p in pages if p.strip()]
    if not pages:
        return _generated(rng, chars)
    rng.shuffle(pages)
    return "\n\n".join(pages)


def chunks(count: int, chars: int, seed: int) -> list[str]:
    text = corpus_text(chars * count, seed)
    while len(text) < chars * count:
        text += "\n\n" + text
    return [text[i * chars : (i + 1) * chars] for i in range(count)]


def best_cpu(function: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        function()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to import app from")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    from app.selection.selection import select_batch
    from app.selection.sentences import split_sentences

    texts = chunks(args.chunks, args.chars, args.seed)
    answer = "Revenue rose in each region after costs fell, the board said."
    has_limit = "limit" in inspect.signature(split_sentences).parameters
    capped = {f"c{i}": split_sentences(text)[:CAP] for i, text in enumerate(texts)}
    lengths = [len(capped[f"c{i}"]) for i in range(len(texts))]

    def before() -> object:
        return [split_sentences(text)[:CAP] for text in texts]

    def select() -> object:
        return select_batch(capped, answer, "What happened to revenue?", 5)

    rows = {"before": best_cpu(before, args.repeat)}
    if has_limit:
        limited: Callable[..., object] = split_sentences
        prefixes = [text[: capped[f"c{i}"][-1].end + 1] for i, text in enumerate(texts)]
        assert [limited(t, limit=CAP) for t in texts] == list(capped.values())
        rows["after"] = best_cpu(lambda: [limited(t, limit=CAP) for t in texts], args.repeat)
        rows["floor"] = best_cpu(lambda: [split_sentences(p)[:CAP] for p in prefixes], args.repeat)
    rows["select"] = best_cpu(select, args.repeat)
    print(
        f"{args.chunks} chunks of {args.chars:,} characters, sentences kept per chunk "
        f"{min(lengths)}-{max(lengths)} (cap {CAP}), app from {args.root}; CPU s, best of "
        f"{args.repeat}:"
    )
    print("  " + "  ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in rows.items()))
    if has_limit:
        print(
            f"  after/floor {rows['after'] / rows['floor']:.2f}x, "
            f"before/after {rows['before'] / rows['after']:.1f}x, "
            f"split+select {(rows['after'] + rows['select']) * 1000:.1f} ms "
            f"(before {(rows['before'] + rows['select']) * 1000:.1f} ms)"
        )


if __name__ == "__main__":
    main()
