"""Where sentences are cut, against peers' own test suite (issue 41): pySBD's golden rules (62
texts in English, French, German, Chinese and Japanese, ``tests/fixtures/golden_rules.json``)
and the cases chat systems' chunkers write.

1. The splitter alone (``split_sentences``, which is told no language) against pySBD told each
   text's language and sentencex (told it too) in the same run: texts cut exactly as the golden
   rules say, per language.
2. Through the HTTP API (in-process over ASGI, real SQLite), each golden text uploaded as a
   plain-text file and each of its sentences cited verbatim by its own marker: texts whose every
   sentence is its marker's claim and is lit whole, when a model picks the quoted sentence (the
   scripted OpenAI-protocol server, ``choose_the_claims_sentence``: it can only pick what the
   service cut), and with the word-overlap judge (whole, and: nothing lit is a piece).
3. The chunkers' cases (pdfminer's blank lines, a long wrapped sentence, numbers before capitals,
   reference brackets, citation lists, abbreviations) as a caller's chunks of a generated PDF:
   each cited sentence lit whole with its rectangles, by the word-overlap judge.
4. Cost: CPU to split generated prose and list text (10 KB, 40 KB, 1 MB), this splitter
   against pySBD's segmenter (English; not at 1 MB: quadratic in list items, it took over ten
   minutes) and a floor that only finds terminators (``re.finditer``, no decisions: what any
   splitter must at least do), and the ratio of 40 KB to 10 KB (linear: about 4).

    .venv/bin/python bench/sentence_bench.py
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from long_chunks import best_cpu  # noqa: E402

from app.core.config import Settings  # noqa: E402
from app.db.migrate import upgrade  # noqa: E402
from app.selection.sentences import split_sentences  # noqa: E402
from tests.fixtures.app import app_client, make_settings  # noqa: E402
from tests.fixtures.llm_server import ScriptedLLM  # noqa: E402
from tests.fixtures.sentence_cuts import (  # noqa: E402
    CHUNKER_CASES,
    GOLDEN,
    choose_the_claims_sentence,
    chunker_results,
    golden_results,
    lit_whole,
    lit_whole_on_the_pdf,
    no_piece_lit,
)

Splitter = Callable[[str, str], list[str]]


def _ours(_language: str, text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


def _peers() -> dict[str, Splitter]:
    found: dict[str, Splitter] = {"this service": _ours}
    try:
        import pysbd

        def by_pysbd(language: str, text: str) -> list[str]:
            segmenter = pysbd.Segmenter(language=language, clean=False)
            return [s.strip() for s in segmenter.segment(text) if s.strip()]

        found["pySBD (told the language)"] = by_pysbd
    except ImportError:
        pass
    try:
        import sentencex

        def by_sentencex(language: str, text: str) -> list[str]:
            return [s.strip() for s in sentencex.segment(language, text) if s.strip()]

        found["sentencex (told the language)"] = by_sentencex
    except ImportError:
        print("(sentencex is not installed: pip install sentencex to compare with it)")
    return found


def golden_table() -> None:
    languages = sorted({c["language"] for c in GOLDEN}, key=["en", "fr", "de", "zh", "ja"].index)
    counts = {lang: sum(c["language"] == lang for c in GOLDEN) for lang in languages}
    print(f"{'splitter':32} {'all':>7} " + " ".join(f"{lang:>6}" for lang in languages))
    print(f"{'(texts)':32} {len(GOLDEN):>7} " + " ".join(f"{counts[x]:>6}" for x in languages))
    for name, split in _peers().items():
        right = dict.fromkeys(languages, 0)
        for case in GOLDEN:
            right[case["language"]] += split(case["language"], case["text"]) == case["sentences"]
        total = sum(right.values())
        print(f"{name:32} {total:>4}/62 " + " ".join(f"{right[x]:>6}" for x in languages))


async def api_figures(folder: Path) -> None:
    template = folder / "template.db"
    upgrade(f"sqlite+aiosqlite:///{template}")

    def settings(name: str, **extra: object) -> Settings:
        path = folder / f"{name}.db"
        shutil.copyfile(template, path)
        return make_settings(f"sqlite+aiosqlite:///{path}", folder / name, **extra)

    server = ScriptedLLM().start()
    server.chooser = choose_the_claims_sentence
    try:
        model = settings(
            "model", llm_provider="vllm", llm_base_url=server.base_url, llm_model="scripted"
        )
        async with app_client(model) as client:
            by_model = await golden_results(client)
            cases_model = await chunker_results(client, folder)
    finally:
        server.stop()
    async with app_client(settings("overlap")) as client:
        by_overlap = await golden_results(client)
        cases_overlap = await chunker_results(client, folder)
    whole_model = sum(lit_whole(c, rs) for c, rs in by_model)
    whole_overlap = sum(lit_whole(c, rs) for c, rs in by_overlap)
    no_piece = sum(no_piece_lit(c, rs) for c, rs in by_overlap)
    print(f"golden texts lit whole, a model picking the quoted sentence: {whole_model}/62")
    print(f"golden texts lit whole, word-overlap judge:                  {whole_overlap}/62")
    print(f"golden texts with whole claims and no piece lit, word overlap: {no_piece}/62")
    print()
    print(f"{'chunker case, on a PDF':52} {'model':>6} {'overlap':>8}")
    for name, (_, sentence) in CHUNKER_CASES.items():
        model_ok = lit_whole_on_the_pdf(cases_model[name], sentence)
        overlap_ok = lit_whole_on_the_pdf(cases_overlap[name], sentence)
        print(
            f"{name:52} {'whole' if model_ok else 'NOT':>6} {'whole' if overlap_ok else 'NOT':>8}"
        )


def _generated_megabyte() -> str:
    prose = (
        "Mr. Speaker, the hon. Member for Kisumu asked what the programme costs. It costs KSh "
        "12.5 billion (see p. 4, para. 3) over three years, e.g. in 2025 and 2026. The U.S. "
        "Government and the E.U. have agreed! Did they? Yes: 1. The first item 2. The second "
        "item. Revenue rose 12% to $3.8 billion . . . as expected.\n\n"
    )
    listing = "".join(f"Schedule {n} Amendments to the Water Act\n" for n in range(20))
    unit = prose * 4 + listing
    return unit * (1_000_000 // len(unit))


def cost_table() -> None:
    """CPU at 10 KB, 40 KB and 1 MB (pySBD at the first two only: it is quadratic in a text's
    list items, and took over ten minutes on the megabyte), and the 4x-the-input ratio."""
    text = _generated_megabyte()
    floor = re.compile(r"[.!?…]+\s")
    splitters: dict[str, Callable[[str], object]] = {
        "floor: terminators found (re.finditer)": lambda t: sum(1 for _ in floor.finditer(t)),
        "this service": split_sentences,
    }
    try:
        import pysbd

        segmenter = pysbd.Segmenter(language="en", clean=False)
        splitters["pySBD (English)"] = segmenter.segment
    except ImportError:
        pass
    sizes = (10_000, 40_000, len(text))
    print(f"{'CPU seconds':40} {'10 KB':>8} {'40 KB':>8} {'1 MB':>8} {'40/10 KB':>9}")
    for name, split in splitters.items():
        times = [
            best_cpu(lambda n=n, split=split: split(text[:n]), 3)
            if n < 100_000 or "pySBD" not in name
            else None
            for n in sizes
        ]
        cells = [f"{t:>8.3f}" if t is not None else f"{'-':>8}" for t in times]
        small, large = times[0] or 0.0, times[1] or 0.0
        print(f"{name:40} {' '.join(cells)} {large / max(small, 1e-6):>9.1f}")


def main() -> None:
    print("--- pySBD's golden rules, the splitter alone")
    golden_table()
    print()
    print("--- through the HTTP API (a text file per golden text; a PDF with a caller's chunks)")
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(api_figures(Path(folder)))
    print()
    print("--- cost")
    cost_table()


if __name__ == "__main__":
    main()
