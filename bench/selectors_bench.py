"""What W3C selectors and web and text sources cost: printed numbers, no gate.

- ``selectors``: per highlight, the TextQuoteSelector (prefix and suffix widened until unique)
  and the URL text fragment, over a document text the size of a long 10-K (``--chars``), with
  spans drawn at random; the worst case is a text that repeats itself (``--repetitive``), where
  the context must grow.
- ``answer``: ``with_selectors`` on a batch answer of 50 citations with 5 highlights each (the
  service's ceiling), as every answer pays it, cached or not.
- ``extract``: HTML, Markdown and plain text to blocks and chunks, in MB/s.

    .venv/bin/python bench/selectors_bench.py [--chars 1500000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from app.alignment.selectors import quote_selector, text_fragment
from app.documents.markdown_text import markdown_to_text
from app.documents.text_extract import html_to_text, plain_to_text
from app.documents.text_sources import chunk_source
from app.highlights.schemas import CitationResult, CitationStatus, Highlight, HighlightBatchResponse
from app.highlights.sources import SourceText, with_selectors

WORDS = (
    "revenue increased percent fiscal year compared prior period primarily due higher sales "
    "segment operating income margin million billion net cash provided operating activities"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."


def _chunks(chars: int, rng: random.Random, repetitive: bool) -> list[tuple[str, str]]:
    chunks: list[tuple[str, str]] = []
    total = 0
    fixed = [" ".join(_sentence(rng) for _ in range(8)) for _ in range(3)]
    while total < chars:
        text = rng.choice(fixed) if repetitive else " ".join(_sentence(rng) for _ in range(8))
        chunks.append((f"c{len(chunks):05d}", text))
        total += len(text) + 2
    return chunks


def _best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def bench_selectors(chars: int, repeat: int, repetitive: bool) -> None:
    rng = random.Random(7)
    source = SourceText.of(_chunks(chars, rng, repetitive))
    text = source.text
    spans = []
    for _ in range(250):
        start = rng.randrange(0, len(text) - 200)
        spans.append((start, start + rng.randint(40, 200)))
    widths = [len(quote_selector(text, s, e).prefix) for s, e in spans]
    quote_s = _best(lambda: [quote_selector(text, s, e) for s, e in spans], repeat)
    fragment_s = _best(lambda: [text_fragment(text, s, e) for s, e in spans], repeat)
    kind = "repetitive" if repetitive else "varied"
    print(
        f"selectors ({kind} text, {len(text):,} chars): quote {quote_s / len(spans) * 1e6:.0f} us,"
        f" text fragment {fragment_s / len(spans) * 1e6:.1f} us per highlight; prefix length "
        f"median {statistics.median(widths):.0f}, max {max(widths)}"
    )


def bench_answer(chars: int, repeat: int) -> None:
    rng = random.Random(11)
    chunks = _chunks(chars, rng, False)
    source = SourceText.of(chunks)
    results = []
    for i in range(50):
        chunk_id, chunk_text = chunks[rng.randrange(len(chunks))]
        highlights = []
        for k in range(5):
            start = rng.randrange(0, len(chunk_text) - 100)
            highlights.append(
                Highlight(
                    highlight_id=f"h_{i}_{k}",
                    sentence_id=k + 1,
                    text=chunk_text[start : start + 100],
                    start=start,
                    end=start + 100,
                    page=1,
                    page_width=0,
                    page_height=0,
                    score=100,
                    rects=[],
                    normalized_rects=[],
                )
            )
        results.append(
            CitationResult(
                citation_id=str(i),
                chunk_id=chunk_id,
                document_id="d",
                status=CitationStatus.highlighted,
                reason=None,
                link=None,
                highlights=highlights,
            )
        )
    response = HighlightBatchResponse(
        status="complete", method="lexical", llm_tier=None, results=results
    )
    sources = {cid: source for cid, _ in chunks}
    seconds = _best(lambda: with_selectors(response, sources), repeat)
    join_s = _best(lambda: SourceText.of(chunks), repeat)
    print(
        f"answer: with_selectors on 50 citations x 5 highlights over {len(source.text):,} chars: "
        f"{seconds * 1000:.1f} ms; the document's text joined from {len(chunks):,} chunks: "
        f"{join_s * 1000:.1f} ms (once per document content, then kept)"
    )


def bench_extract(repeat: int) -> None:
    rng = random.Random(3)
    paragraphs = [_sentence(rng) + " " + _sentence(rng) for _ in range(5000)]
    html = (
        "<html><body><nav>menu</nav>"
        + "".join(
            f"<h2>Part {i}</h2><p>{p} <b>bold</b> <a href='x'>link</a></p><ul><li>{p}</li></ul>"
            for i, p in enumerate(paragraphs)
        )
        + "</body></html>"
    )
    markdown = "".join(
        f"## Part {i}\n\n{p} **bold** [link](x)\n\n- {p}\n\n" for i, p in enumerate(paragraphs)
    )
    plain = "\n\n".join(paragraphs)
    for name, source, parse in (
        ("html", html, html_to_text),
        ("markdown", markdown, markdown_to_text),
        ("text", plain, plain_to_text),
    ):
        seconds = _best(lambda: chunk_source(parse(source), "d"), repeat)  # noqa: B023
        mb = len(source) / 1e6
        print(f"extract {name}: {mb:.1f} MB in {seconds:.2f} s ({mb / seconds:.1f} MB/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=1_500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bench_selectors(args.chars, args.repeat, repetitive=False)
    bench_selectors(args.chars, args.repeat, repetitive=True)
    bench_answer(args.chars, args.repeat)
    bench_extract(args.repeat)


if __name__ == "__main__":
    main()
