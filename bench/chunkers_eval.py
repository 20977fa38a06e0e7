"""The chat system's own chunks: are their cited sentences lit where they are? (issue 42)

The service's users store the chunks their own pipeline made beside the PDF
(``PUT /v2/documents/{id}/pdf``, then ``PUT /v2/documents/{id}`` with the chunks) and cite them.
Here each chunker is run as a new user would run it (``chunkers_make.py``):

1. LangChain: pypdf page texts (PyPDFLoader's: metadata ``page`` 0-based) +
   ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)``;
2. LlamaIndex: pypdf page texts (``page_label`` 1-based) + ``SentenceSplitter()`` (defaults);
3. PyMuPDF4LLM: ``to_markdown(pdf, page_chunks=True)`` + ``MarkdownTextSplitter`` (1000/200);
4. pdfminer.six: ``extract_text`` per page in windows of 5 sentences, stride 3;
5. the service's own chunks (``PUT …/pdf?chunk=true``), in the same run;
6. the baseline, judged alike: PyMuPDF's ``page.search_for(sentence)`` on the chunk's pages.

Not here, tried: Docling (2.143 pulls in torch 2.14 and transformers, several GB, and its PDF
pipeline, whose document its chunkers take, downloads its layout and table models from Hugging
Face at first use) and Unstructured (0.27.35's ``partition_pdf`` needs its ``[pdf]`` extra,
torch, onnxruntime, OpenCV and unstructured-inference, even with strategy "fast", and its
element classification downloads spaCy's ``en_core_web_sm`` wheel at run time).

Per (chunker, PDF), up to ``--per-doc`` chunks are drawn (seeded) and of each one sentence as
the chunker wrote it (``chunkers_judge.py``); the batch asks that sentence, and answers it with
a marker (``"<sentence> [1]"``, the citation's ``marker`` "[1]"). The real app runs in-process
over ASGI on SQLite in a temporary folder, no LLM (the word-overlap judge). The same chunks
are PUT three times, each into its own document: pages ``given`` (the chunker's, 1-based),
``missing`` (no page keys) and ``zero`` (0-based: given minus one); a refused PUT's
citations count as not lit. Judged by poppler's words under the returned rectangles (token
F1 >= 0.8 a hit, < 0.3 a wrong place). The PDFs (``../shared/pdfs``): pdfjs_tracemonkey.pdf,
pdfjs_freeculture.pdf (its first 40 pages: a copy made with PyMuPDF's ``select``),
twly_bill_LCEWA01_080202_00016_zh-hant.pdf, financebench/BESTBUY_2023_10K.pdf,
pdfplumber_federal-register-2020-17221.pdf, pymupdf_scan-ocr-layer_test_4224_de.pdf,
pymupdf_nist-sp800-223_test_3842.pdf, pdfminer_dmca-copyright-office-summary.pdf,
financebench_MGMRESORTS_2022Q4_EARNINGS.pdf, financebench/AMCOR_2023Q4_EARNINGS.pdf,
financebench/JOHNSON_JOHNSON_2023_8K_dated-2023-08-30.pdf.

The PUT-cost part (also run by default; ``--put-cost`` runs it alone, ``--no-put-cost`` skips
it): LangChain's chunks of the whole book (352 pages), 1,000 of them (repeated if fewer) in
one PUT, pages given and missing, after a one-chunk PUT that builds the PDF's text index.

    .venv/bin/python bench/chunkers_eval.py [--per-doc 50] [--seed 42] [--json PATH]
        [--put-cost | --no-put-cost] [--cache DIR] [--pdfs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psutil  # noqa: E402
import pymupdf  # noqa: E402
from chunkers_judge import Case, draw_cases, judge, poppler_words, search_for  # noqa: E402
from chunkers_make import (  # noqa: E402
    CHUNKERS,
    CORPUS,
    FULL_BOOK,
    Chunk,
    chunks,
    corpus_pdf,
    langchain,
    missing_library,
)
from chunkers_report import (  # noqa: E402
    BASELINE,
    MODES,
    placement_counts,
    print_chunker,
    print_cost_part,
    print_per_document,
    print_placements,
    put_cost,
)
from filings import work_settings  # noqa: E402

from app.db.migrate import upgrade  # noqa: E402
from tests.fixtures.app import app_client  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
RESULTS = ROOT / "bench" / "results"
SERVICE = ("service", "the service's own chunks (PUT …/pdf?chunk=true)")
PENDING = ("index_pending", "text_layer_pending")
COST_CHUNKS = 1000


def cpu_seconds() -> float:
    """CPU of this process and of its children (the PDF workers, which parse and index)."""
    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def body(title: str, source_path: str, doc_id: str, made: list[Chunk], mode: str) -> dict:
    out = []
    for i, chunk in enumerate(made):
        item: dict[str, Any] = {"id": f"{doc_id}.c{i:05d}", "text": chunk.text}
        if mode == "given":
            item |= {"page_start": chunk.page_start, "page_end": chunk.page_end}
        elif mode == "zero":
            item |= {"page_start": chunk.page_start - 1, "page_end": chunk.page_end - 1}
        out.append(item)
    return {"title": title, "source_path": source_path, "chunks": out}


async def timed_put(client: httpx.AsyncClient, url: str, **kwargs: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    response = await client.put(url, **kwargs)
    return response, time.perf_counter() - wall, cpu_seconds() - cpu


def put_record(
    doc: str, chunker: str, mode: str, response: Any, wall: float, cpu: float, count: int
) -> dict[str, Any]:
    answer = response.json() if response.status_code < 300 else {}
    placement, corrected = placement_counts(answer.get("chunks") or [])
    return {
        "doc": doc,
        "chunker": chunker,
        "mode": mode,
        "status": response.status_code,
        "chunks": count,
        "wall_s": wall,
        "cpu_s": cpu,
        "placement": placement,
        "pages_corrected": corrected,
        "summary": answer.get("placement"),
        "error": None if answer else response.text[:300],
    }


async def cite(client: httpx.AsyncClient, chunk_id: str, sentence: str) -> dict[str, Any]:
    """The batch for one case: the sentence asked, and answered with a marker of its own. A
    chat answer quotes what a reader sees: the extractor's control characters (pypdf's U+0000
    for a tick box), which a batch refuses, as spaces."""
    sentence = re.sub("[\x00-\x08\x0b-\x1f]", " ", sentence)
    label = 1
    while f"[{label}]" in sentence:
        label += 1
    request = {
        "query": sentence,
        "answer": f"{sentence} [{label}]",
        "citations": [{"chunk_id": chunk_id, "citation_id": str(label), "marker": f"[{label}]"}],
    }
    for _ in range(30):
        response = await client.post("/v2/highlights/batch", json=request)
        response.raise_for_status()
        result = response.json()["results"][0]
        if result["reason"] not in PENDING:
            return result
        await asyncio.sleep(1.0)
    return result


def rects_of(result: dict[str, Any]) -> list[tuple[int, float, float, float, float]]:
    return [
        (r["page"], r["x0"], r["y0"], r["x1"], r["y1"])
        for h in result["highlights"]
        for r in h["rects"]
    ]


async def own_chunks(
    client: httpx.AsyncClient, key: str, data: bytes, puts: list[dict[str, Any]]
) -> tuple[str, list[Chunk], list[str]]:
    """The service chunks the PDF (and stores it): its source path, chunks and their ids."""
    doc_id = f"{key}.service.given"
    response, wall, cpu = await timed_put(
        client,
        f"/v2/documents/{doc_id}/pdf",
        params={"chunk": "true", "title": key},
        content=data,
        headers={"content-type": "application/pdf"},
    )
    response.raise_for_status()
    source_path = response.json()["source_path"]
    stored = (await client.get(f"/v2/documents/{doc_id}", params={"include_text": True})).json()
    made = [Chunk(c["text"], c["page_start"], c["page_end"]) for c in stored["chunks"]]
    puts.append(put_record(key, SERVICE[0], "upload", response, wall, cpu, len(made)))
    return source_path, made, [c["id"] for c in stored["chunks"]]


async def run_document(
    client: httpx.AsyncClient,
    key: str,
    pdf: Path,
    chunker_chunks: dict[str, list[Chunk]],
    args: argparse.Namespace,
    puts: list[dict[str, Any]],
) -> list[Case]:
    """Every chunker's cases of one PDF, judged in each page mode and by search_for."""
    source_path, made, own_ids = await own_chunks(client, key, pdf.read_bytes(), puts)
    words = poppler_words(pdf)
    cases: list[Case] = []
    with pymupdf.open(pdf) as document:
        for name, mine in ((SERVICE[0], made), *chunker_chunks.items()):
            rng = random.Random(f"{args.seed}:{key}:{name}")
            drawn = draw_cases(key, name, mine, args.per_doc, rng)
            for case in drawn:
                found = search_for(document, case.sentence, case.pages)
                case.outcomes[BASELINE] = judge(case.sentence, found, words)
            for mode in MODES:
                doc_id = f"{key}.{name}.{mode}"
                if name == SERVICE[0] and mode == "given":
                    ids = own_ids
                else:
                    response, wall, cpu = await timed_put(
                        client,
                        f"/v2/documents/{doc_id}",
                        json=body(key, source_path, doc_id, mine, mode),
                    )
                    puts.append(put_record(key, name, mode, response, wall, cpu, len(mine)))
                    if response.status_code >= 300:
                        for case in drawn:
                            refused = {"status": f"put_{response.status_code}", "reason": None}
                            case.outcomes[mode] = {**judge(case.sentence, [], words), **refused}
                        continue
                    ids = [c["id"] for c in response.json()["chunks"]]
                for case in drawn:
                    result = await cite(client, ids[case.index], case.sentence)
                    judged = judge(case.sentence, rects_of(result), words)
                    judged |= {"status": result["status"], "reason": result["reason"]}
                    case.outcomes[mode] = judged
            cases.extend(drawn)
    return cases


async def cost_part(
    client: httpx.AsyncClient, shared: Path, cache: Path, puts: list[dict[str, Any]]
) -> dict[str, Any]:
    """One PUT of 1,000 LangChain chunks of the whole book, after a one-chunk PUT that builds
    the PDF's text index; pages given, then missing."""
    book = shared / FULL_BOOK
    made, _ = chunks(next(c for c in CHUNKERS if c.make is langchain), book, cache)
    thousand = [made[i % len(made)] for i in range(COST_CHUNKS)]
    upload = await client.put(
        "/v2/documents/book/pdf",
        content=book.read_bytes(),
        headers={"content-type": "application/pdf"},
    )
    upload.raise_for_status()
    source_path = upload.json()["source_path"]
    figures: dict[str, Any] = {"book": book.name, "book_chunks": len(made), "puts": {}}
    for doc_id, part, mode in (
        ("book.first", thousand[:1], "given"),
        ("book.given", thousand, "given"),
        ("book.missing", thousand, "missing"),
    ):
        response, wall, cpu = await timed_put(
            client, f"/v2/documents/{doc_id}", json=body("book", source_path, doc_id, part, mode)
        )
        record = put_record(doc_id, "cost", mode, response, wall, cpu, len(part))
        puts.append(record)
        figures["puts"][doc_id] = record
    return figures


def make_chunks(
    docs: list[tuple[str, Path]], cache: Path, ready: list[Any]
) -> dict[str, dict[str, list[Chunk]]]:
    made: dict[str, dict[str, list[Chunk]]] = {}
    for key, pdf in docs:
        made[key] = {}
        for chunker in ready:
            started = time.process_time()
            made[key][chunker.name], cached = chunks(chunker, pdf, cache)
            if not cached:
                spent = time.process_time() - started
                print(f"  chunked {key} with {chunker.name}: {spent:.1f} s CPU (now cached)")
    return made


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    started_wall, started_cpu = time.perf_counter(), cpu_seconds()
    ready = []
    for chunker in CHUNKERS:
        problem = missing_library(chunker)
        if problem:
            print(f"{chunker.name}: skipped, {problem}")
        else:
            ready.append(chunker)
    chosen = [c for c in CORPUS if not args.docs or c[0] in args.docs.split(",")]
    docs = [(key, corpus_pdf(args.pdfs, key, file, args.cache)) for key, file, _ in chosen]
    print(
        f"{len(docs)} PDFs; up to {args.per_doc} citations per chunker and PDF (seed {args.seed});"
        f" chunkers: service, {', '.join(c.name for c in ready)}"
    )
    made = make_chunks(docs, args.cache, ready) if not args.put_cost else {}
    figures: dict[str, Any] = {"per_doc": args.per_doc, "seed": args.seed}
    cases, puts, cost = await serve(args, docs, made)
    if cost:
        figures["put_cost_part"] = cost
    labels = [SERVICE, *((c.name, c.label) for c in ready)]
    if cases:
        figures["chunkers"] = {
            name: print_chunker(label, [c for c in cases if c.chunker == name], puts_of(puts, name))
            for name, label in labels
        }
        figures["per_document"] = print_per_document([k for k, _ in docs], labels, cases)
        print_placements(labels, puts)
        figures["put_cost"] = put_cost(labels, puts)
    if "put_cost_part" in figures:
        print_cost_part(figures["put_cost_part"])
    figures["wall_s"] = time.perf_counter() - started_wall
    figures["cpu_s"] = cpu_seconds() - started_cpu
    figures["puts"] = puts
    figures["cases"] = [vars(c) for c in cases]
    return figures


async def serve(
    args: argparse.Namespace, docs: list[tuple[str, Path]], made: dict[str, dict[str, list[Chunk]]]
) -> tuple[list[Case], list[dict[str, Any]], dict[str, Any]]:
    """The app on SQLite in a temporary folder: every document's cases, then the cost part."""
    cases: list[Case] = []
    puts: list[dict[str, Any]] = []
    cost: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="chunkers-eval-") as folder:
        settings = work_settings(Path(folder))
        upgrade(settings.database_url)
        async with app_client(settings) as client:
            if not args.put_cost:
                for key, pdf in docs:
                    cases += await run_document(client, key, pdf, made[key], args, puts)
            if args.put_cost or not args.no_put_cost:
                cost = await cost_part(client, args.pdfs, args.cache, puts)
    return cases, puts, cost


def puts_of(puts: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [p for p in puts if p["chunker"] == name]


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-doc", type=int, default=50, help="chunks drawn per chunker and PDF")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--docs", help="only these documents (keys, comma-separated)")
    parser.add_argument("--pdfs", type=Path, default=SHARED, help="the shared corpus")
    parser.add_argument(
        "--cache", type=Path, default=RESULTS / "chunkers-cache", help="chunkers' output cache"
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "chunkers_eval.json")
    part = parser.add_mutually_exclusive_group()
    part.add_argument("--put-cost", action="store_true", help="only the PUT-cost part")
    part.add_argument("--no-put-cost", action="store_true", help="leave the PUT-cost part out")
    return parser.parse_args()


def main() -> None:
    args = parse()
    if not (args.pdfs / "MANIFEST.tsv").is_file():
        print(f"chunkers_eval: skipped, {args.pdfs} (the shared PDF corpus) is absent")
        return
    # pypdf and pdfminer log every font they read imperfectly; the chunks are what counts.
    for name in ("pypdf", "pdfminer"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import app

    print(f"the service under test: {Path(app.__file__).parent}")
    figures = asyncio.run(main_async(args))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=1, ensure_ascii=False, default=str))
    print(
        f"\n{len(figures['cases'])} citations in {figures['wall_s']:.0f} s "
        f"(CPU {figures['cpu_s']:.0f} s); figures in {args.json}"
    )


if __name__ == "__main__":
    main()
