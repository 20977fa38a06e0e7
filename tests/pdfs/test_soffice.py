"""Whether a killed conversion's orphans are this process's to reap: only in PID 1 or a child
subreaper. Anywhere else the wait for the group to vanish waited on another reaper, 1.3 s a
conversion."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from app.pdfs.soffice import receives_orphans

_SUBREAPER = (
    "import ctypes; ctypes.CDLL(None).prctl(36, 1, 0, 0, 0); "  # PR_SET_CHILD_SUBREAPER
    "from app.pdfs.soffice import receives_orphans; print(receives_orphans())"
)


@pytest.mark.slow  # starts a Python process
def test_only_pid_1_or_a_subreaper_receives_orphans() -> None:
    assert receives_orphans() is (os.getpid() == 1)
    done = subprocess.run(
        [sys.executable, "-c", _SUBREAPER], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "True"
