"""Tables and figures of ``chunkers_eval.py``: rates per chunker and page mode, per document,
the PUTs' statuses, placements and cost."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from chunkers_judge import VERDICTS, Case

MODES = ("given", "missing", "zero")
BASELINE = "search_for"


def rates(cases: list[Case], mode: str) -> dict[str, Any]:
    """Shares of each verdict, the hit rate on prose, and the service's statuses and reasons."""
    judged = [c.outcomes[mode] for c in cases if mode in c.outcomes]
    n = len(judged)
    verdicts = Counter(j["verdict"] for j in judged)
    prose = [c.outcomes[mode] for c in cases if mode in c.outcomes and c.tag == "prose"]
    figures: dict[str, Any] = {"n": n, "n_prose": len(prose)}
    for verdict in VERDICTS:
        figures[verdict] = verdicts[verdict] / n if n else None
    figures["hit_prose"] = sum(j["verdict"] == "hit" for j in prose) / len(prose) if prose else None
    figures["recall_08"] = sum(j["recall"] >= 0.8 for j in judged) / n if n else None
    statuses = Counter(f"{j['status']}/{j['reason']}" for j in judged if "status" in j)
    figures["statuses"] = dict(statuses.most_common())
    return figures


def _cell(value: float | None) -> str:
    return "    -" if value is None else f"{value:5.3f}"


def print_chunker(label: str, cases: list[Case], puts: list[dict[str, Any]]) -> dict[str, Any]:
    """One chunker's table: rows of rates, a column per page mode and search_for's."""
    columns = [m for m in (*MODES, BASELINE) if any(m in c.outcomes for c in cases)]
    figures = {m: rates(cases, m) for m in columns}
    prose = sum(c.tag == "prose" for c in cases)
    print(f"\n{label}: {len(cases)} citations ({prose} prose)")
    print(f"  {'':24}" + "".join(f"{m:>12}" for m in columns))
    rows = (
        ("hit (F1 >= 0.8)", "hit"),
        ("hit, prose", "hit_prose"),
        ("fragment/other sentence", "fragment"),
        ("wrong place (F1 < 0.3)", "wrong_place"),
        ("not lit", "not_lit"),
        ("cited words lit >= 0.8", "recall_08"),
    )
    for title, key in rows:
        print(f"  {title:24}" + "".join(f"{_cell(figures[m][key]):>12}" for m in columns))
    for mode in MODES:
        if mode not in figures:
            continue
        # The service's own chunks, pages given: stored by the upload that chunked the PDF.
        mine = [p for p in puts if p["mode"] == mode or (mode, p["mode"]) == ("given", "upload")]
        status = Counter(str(p["status"]) for p in mine)
        answers = ", ".join(f"{k} x{v}" for k, v in figures[mode]["statuses"].items())
        print(f"  {mode}: PUT {dict(status)}; answers: {answers}")
    return figures


def print_per_document(
    docs: list[str], chunkers: list[tuple[str, str]], cases: list[Case]
) -> dict[str, dict[str, Any]]:
    """Hit rate per chunker and PDF, pages given; search_for over all the PDF's citations."""
    print("\nHit rate per document (pages given; n citations in brackets)")
    names = [name for name, _ in chunkers]
    print(f"  {'document':18}" + "".join(f"{n[:13]:>16}" for n in (*names, BASELINE)))
    table: dict[str, dict[str, Any]] = {}
    for doc in docs:
        cells, row = [], {}
        for name in (*names, BASELINE):
            mine = [c for c in cases if c.doc == doc and (c.chunker == name or name == BASELINE)]
            mode = BASELINE if name == BASELINE else "given"
            judged = [c.outcomes[mode]["verdict"] for c in mine if mode in c.outcomes]
            rate = sum(v == "hit" for v in judged) / len(judged) if judged else None
            row[name] = {"hit": rate, "n": len(judged)}
            cells.append(f"{_cell(rate)} ({len(judged):3d})")
        table[doc] = row
        print(f"  {doc:18}" + "".join(f"{c:>16}" for c in cells))
    return table


def print_placements(chunkers: list[tuple[str, str]], puts: list[dict[str, Any]]) -> None:
    """Each chunk's ``placement`` in the PUT answers, when the service gives one."""
    if not any(p["placement"] for p in puts):
        print("\nPUT answers carry no per-chunk placement (this version of the service)")
        return
    print("\nPlacement of the stored chunks (PUT answers), per chunker and page mode")
    for name, _ in chunkers:
        for mode in MODES:
            counts: Counter[str] = Counter()
            corrected = 0
            for p in puts:
                if p["chunker"] == name and p["mode"] == mode:
                    counts.update(p["placement"])
                    corrected += p["pages_corrected"]
            if counts:
                shown = ", ".join(f"{k} {v}" for k, v in counts.most_common())
                print(f"  {name:12} {mode:8} {shown}; pages corrected {corrected}")


def put_cost(chunkers: list[tuple[str, str]], puts: list[dict[str, Any]]) -> dict[str, Any]:
    """Median wall and CPU per chunk of each chunker's PUTs, and its largest PUT."""
    print("\nPUT cost (stored PUTs; CPU: this process and its PDF workers)")
    print(
        f"  {'chunker':12} {'mode':8} {'PUTs':>4} {'wall ms/chunk':>14} {'CPU ms/chunk':>13}"
        f"   largest: {'chunks':>6} {'wall s':>7} {'CPU s':>6}"
    )
    figures: dict[str, Any] = {}
    for name, _ in chunkers:
        for mode in (*MODES, "upload"):
            stored = [
                p
                for p in puts
                if p["chunker"] == name and p["mode"] == mode and p["status"] in (200, 201)
            ]
            if not stored:
                continue
            wall = statistics.median(p["wall_s"] / p["chunks"] for p in stored)
            cpu = statistics.median(p["cpu_s"] / p["chunks"] for p in stored)
            big = max(stored, key=lambda p: p["chunks"])
            figures[f"{name}/{mode}"] = {
                "puts": len(stored),
                "wall_s_per_chunk": wall,
                "cpu_s_per_chunk": cpu,
                "largest": {k: big[k] for k in ("doc", "chunks", "wall_s", "cpu_s")},
            }
            print(
                f"  {name:12} {mode:8} {len(stored):4d} {wall * 1000:14.2f} {cpu * 1000:13.2f}"
                f"   {'':9}{big['chunks']:6d} {big['wall_s']:7.2f} {big['cpu_s']:6.2f}"
            )
    return figures


def print_cost_part(figures: dict[str, Any]) -> None:
    """The PUT-cost part: one chunk (the PDF's text index is built then), then 1,000."""
    print(
        f"\nPUT cost: {figures['book_chunks']} LangChain chunks of {figures['book']} "
        "(repeated to 1,000 if fewer)"
    )
    for doc_id, p in figures["puts"].items():
        placed = ", ".join(f"{k} {v}" for k, v in p["placement"].items())
        print(
            f"  {doc_id:13} pages {p['mode']:8} {p['chunks']:5d} chunks: HTTP {p['status']}, "
            f"wall {p['wall_s']:6.2f} s, CPU {p['cpu_s']:6.2f} s, "
            f"{1000 * p['wall_s'] / p['chunks']:7.2f} ms/chunk"
            + (" (the text index is built here)" if p["chunks"] == 1 else "")
            + (f"; placement: {placed}" if placed else "")
        )


def placement_counts(chunks: list[dict[str, Any]]) -> tuple[dict[str, int], int]:
    counts: defaultdict[str, int] = defaultdict(int)
    corrected = 0
    for chunk in chunks:
        if chunk.get("placement") is not None:
            counts[str(chunk["placement"])] += 1
        corrected += bool(chunk.get("pages_corrected"))
    return dict(counts), corrected
