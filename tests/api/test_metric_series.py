"""No request can grow the metrics: 10,000 requests with random methods and random paths, the
series on /metrics counted before and after. Each label takes values from a closed set (route
templates, known methods or ``_OTHER``, statuses), so the growth is bounded by a constant the
request count does not enter; when a method or a path became a label value, every new one made
a counter series and a histogram's 16, and the scrape grew without end."""

from __future__ import annotations

import random
import shutil
import string
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.api.test_observability import scrape
from tests.fixtures.app import app_client, make_settings

REQUESTS = 10_000
KNOWN = ["GET", "HEAD", "DELETE", "OPTIONS", "PATCH", "TRACE"]


def series(text: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every sample's name and labels: one per line of the text format."""
    return {
        (found.name, tuple(sorted(found.labels.items())))
        for family in text_string_to_metric_families(text)
        for found in family.samples
    }


def sample_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def random_request(rng: random.Random) -> tuple[str, str]:
    # Mostly methods no server knows (a client may send any token), some known ones.
    if rng.random() < 0.8:
        method = "".join(rng.choices(string.ascii_uppercase, k=rng.randint(3, 12)))
    else:
        method = rng.choice(KNOWN)
    word = "".join(rng.choices(string.ascii_lowercase + string.digits, k=rng.randint(1, 16)))
    path = rng.choice(
        [
            f"/{word}",
            f"/{word}/{rng.randint(0, 10**9)}",
            f"/v2/documents/{word}",
            f"/v2/highlights/{word}",
            f"/viewer/assets/{word}.css",
        ]
    )
    return method, path


async def test_random_methods_and_paths_do_not_grow_the_series(
    sqlite_template: Path, tmp_path: Path, pdf_root: Path
) -> None:
    database = tmp_path / "highlight.db"
    shutil.copyfile(sqlite_template, database)
    settings = make_settings(f"sqlite+aiosqlite:///{database}", pdf_root)
    rng = random.Random(20261127)
    async with app_client(settings) as client:
        before = await scrape(client)
        for _ in range(REQUESTS):
            method, path = random_request(rng)
            response = await client.request(method, path)
            assert response.status_code < 500, (method, path, response.text)
        after = await scrape(client)
    added = series(after) - series(before)
    # Five route shapes (three templates, the viewer's mount, <unmatched>) times seven method
    # labels, each a histogram of 16 samples and a counter per status: a few hundred at most,
    # whatever the number of requests.
    bound = 5 * 7 * (16 + 4)
    assert len(added) <= bound, f"{len(added)} new series, e.g. {sorted(added)[:5]}"
    assert sample_lines(after) - sample_lines(before) <= bound
    methods = {
        dict(labels).get("method") for name, labels in added if name.startswith("highlight_http")
    }
    assert methods <= {*KNOWN, "_OTHER"}
    assert "_OTHER" in methods
