"""The service as replicas behind HAProxy: a short run of bench/replicas_bench.py (two replicas,
one PostgreSQL, moto's S3 server standing in for S3 / MinIO, one `migrate`, a kill -9 under load
and a restart), and how that benchmark tells the failure a kill may cause from a real error."""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import replace
from pathlib import Path

import asyncpg
import pytest

from bench.replicas_bench import run
from tests.fixtures.haproxy import Restart, Sample, allowed_failure, haproxy_binary, render_config
from tests.fixtures.replicas import PG_ADMIN, missing_parts

KILLED = Restart("r2", killed_at=5.0, restarted_at=7.0)


# HAProxy's own 502, naming the killed replica, for a request in flight when it died.
IN_FLIGHT = Sample("batch", 4.9, 5.1, 502, "r2", "502 Bad Gateway", from_balancer=True)


def test_in_flight_on_the_killed_replica_is_the_only_allowed_failure() -> None:
    assert allowed_failure(IN_FLIGHT, KILLED)
    dropped = replace(IN_FLIGHT, status=None, served_by=None, from_balancer=False, dropped=True)
    assert allowed_failure(dropped, KILLED)
    # Anything else is an error: another replica named, the service's own 503 (JSON), a failure
    # long before the kill or long after HAProxy took the replica out, a run with no kill.
    assert not allowed_failure(replace(IN_FLIGHT, served_by="r1"), KILLED)
    assert not allowed_failure(replace(IN_FLIGHT, from_balancer=False, status=503), KILLED)
    assert not allowed_failure(replace(IN_FLIGHT, started=1.0, ended=2.0), KILLED)
    assert not allowed_failure(replace(IN_FLIGHT, started=12.0, ended=12.1), KILLED)
    assert not allowed_failure(replace(IN_FLIGHT, status=500), KILLED)
    assert not allowed_failure(dropped, None)
    assert not allowed_failure(replace(IN_FLIGHT, problem=None, status=200), KILLED)


@pytest.mark.slow  # starts another program
def test_the_haproxy_config_is_valid_and_checks_readiness(tmp_path: Path) -> None:
    haproxy = haproxy_binary()
    if haproxy is None:
        pytest.skip("haproxy is not installed (Debian: apt-get install haproxy)")
    config = render_config(8080, 8081, {"r1": 9001, "r2": 9002}, "/readyz")
    assert "server r2 127.0.0.1:9002 check" in config
    assert "uri /readyz" in config
    path = tmp_path / "haproxy.cfg"
    path.write_text(config)
    checked = subprocess.run([haproxy, "-c", "-f", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # The check above can fail: a misspelt keyword is refused.
    path.write_text(config.replace("option redispatch", "option redispatsch"))
    assert subprocess.run([haproxy, "-c", "-f", str(path)], capture_output=True).returncode != 0


async def _postgres_problem() -> str | None:
    try:
        conn = await asyncpg.connect(PG_ADMIN, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        return f"no PostgreSQL server reachable at {PG_ADMIN}: {exc}"
    await conn.close()
    return None


@pytest.mark.slow
@pytest.mark.postgres
def test_replicas_behind_haproxy_survive_a_kill_under_load(tmp_path: Path) -> None:
    missing = missing_parts() or asyncio.run(_postgres_problem())
    if missing:
        pytest.skip(missing)
    result = run(tmp_path, replicas=2, clients=8, seconds=8, llm_delay_s=0.2, kill=True)
    assert result["gates_failed"] == [], result
    assert result["acknowledged_writes"] > 1
    assert result["lost_writes"] == 0
    # The PDF was uploaded once, through the balancer; each replica has its own disk, so one of
    # them read it from the object store.
    assert result["pdf_from_every_replica"] == {"r1": True, "r2": True}
    assert result["objects_in_store"]["pdfs"] == 1  # content-addressed: uploaded twice
    for name, row in result["per_replica"].items():
        assert row["x_served_by"] > 0, name
        assert row["logged"] > 0, name
    restart = result["restart"]
    assert restart["replica"] == "r2"
    assert restart["ready_s"] is not None
    assert restart["up_s"] is not None
    assert restart["serves_s"] is not None
    assert result["rows"]["batch"]["requests"] > 0
