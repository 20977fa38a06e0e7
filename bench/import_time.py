"""Import time of the app: what each worker process of ``serve --workers N`` spends before it
can answer the supervisor's first health check (app/server_workers.py), beside the floor of
``import fastapi, uvicorn`` that no app on this stack can go below.

    .venv/bin/python bench/import_time.py [--repeat 5] [--top 15] [--root DIR] [--json FILE]

Each statement runs in a fresh interpreter ``--repeat`` times, interleaved so a burst of load
on the shared machine hits all of them alike; the table gives the best wall time (the least
disturbed), the median, and the best CPU time of the child (user + system, less sensitive to
other processes than wall time), and the app's ratio to the floor. ``--top`` lists the modules
that cost the most cumulatively under ``python -X importtime`` (one run). ``--root``: the
checkout whose ``app`` is imported (another commit's, to compare), with this virtualenv.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOOR = "import fastapi, uvicorn"
STATEMENTS = {
    "floor": FLOOR,
    "app.main": "import app.main",
    # What a spawned worker imports before its health-check thread starts: the command's module
    # (multiprocessing's __mp_main__), the factory and the config class it is sent.
    "worker": "import app.cli, app.main, app.server, uvicorn.supervisors",
}


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root)}


def one_run(statement: str, root: Path) -> tuple[float, float]:
    """Wall and CPU seconds of a fresh interpreter running ``statement``."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], cwd=root, env=_env(root), check=True)
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def heaviest(statement: str, top: int, root: Path) -> list[tuple[float, str]]:
    """(cumulative seconds, module) of the ``top`` costliest imports, nested ones included."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]) / 1e6, parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/import_time.json")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    cpus: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.repeat):
        for name, statement in STATEMENTS.items():
            wall, cpu = one_run(statement, args.root)
            walls[name].append(wall)
            cpus[name].append(cpu)
    floor = min(walls["floor"])
    print(f"{'import':<10} {'best s':>7} {'median s':>9} {'cpu s':>6} {'x floor':>8}")
    report: dict[str, dict[str, float]] = {}
    for name in STATEMENTS:
        best = min(walls[name])
        report[name] = {
            "best_s": best,
            "median_s": statistics.median(walls[name]),
            "cpu_s": min(cpus[name]),
            "ratio_to_floor": best / floor,
        }
        row = report[name]
        print(
            f"{name:<10} {best:7.2f} {row['median_s']:9.2f} {row['cpu_s']:6.2f} "
            f"{row['ratio_to_floor']:8.2f}"
        )
    print(f"\nfloor: `{FLOOR}`; heaviest imports of `import app.main` (cumulative s):")
    for seconds, module in heaviest("import app.main", args.top, args.root):
        print(f"{seconds:7.3f}  {module}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"root": str(args.root), "repeat": args.repeat, "imports": report}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
