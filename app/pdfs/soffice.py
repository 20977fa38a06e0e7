"""The LibreOffice process of a conversion (``convert.py``): its environment, its network
isolation, and killing and reaping its process group.

When the service is PID 1 (a container without an init) or a subreaper, an orphaned
``soffice.bin`` (its ``oosplash`` killed first) is handed to it; unreaped it would stay a zombie
for good. So after a group is killed its members that became the service's children are
waited for, by process group only: a wait for any child would take another conversion's exit
status from ``Popen``. The image runs the service under tini too (Dockerfile).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

ISOLATE = ["unshare", "--user", "--map-root-user", "--net", "--"]
# The variables LibreOffice is given; nothing else of the service's environment.
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
_VERSION = re.compile(rb"LibreOffice (\d+)\.(\d+)")
# How long the processes of a killed conversion are waited for to be reaped.
_REAP_S = 5.0
_PR_GET_CHILD_SUBREAPER = 37


def environment(home: Path) -> dict[str, str]:
    env = {key: os.environ[key] for key in _KEEP_ENV if key in os.environ}
    env.update(HOME=str(home), TMPDIR=str(home), SAL_USE_VCLPLUGIN="svp")
    return env


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap_group(pgid: int) -> None:
    """Wait for the killed group's processes that became this process's children: when the
    service is PID 1 (a container without an init) or a subreaper, an orphaned soffice.bin
    is handed to it, and unreaped would stay a zombie for good. Only this group's: a wait for
    any child would take the exit status of another conversion's process from ``Popen``.
    Bounded: a member that is not this process's child is left to whoever it belongs to.
    Nothing to do in a process that orphans are not handed to: waiting there for the group
    to vanish would wait on another reaper (1.3 s a conversion on a quiet machine)."""
    if not receives_orphans():
        return
    deadline = time.monotonic() + _REAP_S
    while True:
        try:
            while os.waitpid(-pgid, os.WNOHANG) != (0, 0):
                pass
        except ChildProcessError:
            pass  # none of the group is (or is yet) a child of this process
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return  # the group is gone, zombies included
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)  # a member still dying, or about to be handed over on its parent's exit


def receives_orphans() -> bool:
    """Is this process PID 1 or a child subreaper (prctl PR_GET_CHILD_SUBREAPER), which the
    kernel hands orphaned descendants to?"""
    if os.getpid() == 1:
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
            return True  # cannot tell: reap, as before
        return flag.value != 0
    except (OSError, AttributeError):
        return True


def can_isolate() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(
            [*ISOLATE, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def version(program: str, home: Path) -> str | None:
    """major.minor of the installed LibreOffice ("7.4"), as its profile records it."""
    try:
        done = subprocess.run(
            [program, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            env=environment(home),
            cwd=home,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _VERSION.search(done.stdout)
    return f"{int(found[1])}.{int(found[2])}" if found else None
