"""Test cases per operation and phase, and the responses' status codes, from the NDJSON report
that scripts/schemathesis.sh writes (the JSON and JUnit reports carry only the total)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

PHASES = ("examples", "coverage", "fuzzing", "stateful")


def main(reports: Path) -> None:
    cases: Counter[tuple[str, str]] = Counter()
    statuses: Counter[tuple[str, int]] = Counter()
    for path in reports.glob("*.ndjson"):
        for line in path.open():
            event = json.loads(line).get("ScenarioFinished")
            if not event:
                continue
            recorder = event["recorder"]
            for case_id, case in recorder.get("cases", {}).items():
                label = f"{case['value']['method']} {case['value']['path']}"
                cases[(label, event["phase"])] += 1
                response = (recorder.get("interactions", {}).get(case_id) or {}).get("response")
                if response:
                    statuses[(label, response["status_code"])] += 1
    labels = sorted({label for label, _ in cases})
    print(f"{'operation':42} " + " ".join(f"{p:>9}" for p in PHASES) + f" {'total':>7}  statuses")
    for label in labels:
        row = [cases[(label, phase)] for phase in PHASES]
        codes = ", ".join(
            f"{code}:{n}" for (other, code), n in sorted(statuses.items()) if other == label
        )
        print(f"{label:42} " + " ".join(f"{n:9d}" for n in row) + f" {sum(row):7d}  {codes}")
    totals = [sum(cases[(label, phase)] for label in labels) for phase in PHASES]
    print(f"{'all operations':42} " + " ".join(f"{n:9d}" for n in totals) + f" {sum(totals):7d}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
