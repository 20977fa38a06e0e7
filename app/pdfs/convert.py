"""Office documents (DOCX, PPTX, XLSX, ODT, ODP, ODS, RTF, and the legacy DOC, PPT, XLS) to PDF,
by LibreOffice headless.

A Word file is as much a program as a PDF (a 300 KB DOCX holding one 60000x60000 picture asks
for gigabytes when it is drawn), and LibreOffice is a large C++ program reading it. So every
conversion is a child process of its own, in its own process group, with:

- a clock (``HIGHLIGHT_OFFICE_TIMEOUT_S``): past it the whole group is killed (``soffice`` is a
  shell script starting ``oosplash`` starting ``soffice.bin``; killing the first alone would
  leave the converter running). The clock, not CPU time, because a conversion is one request's
  wait: a caller would rather hear "too slow" than wait for a busy machine;
- an address-space limit (``RLIMIT_AS``, ``HIGHLIGHT_OFFICE_MEMORY_MB``): LibreOffice needs about
  256 MB for a one-line RTF and under 1 GB for a 20-page report with pictures; 2048 MB refuses
  a picture bomb in a second or two instead of taking the machine;
- a file-size limit (``RLIMIT_FSIZE``: ``HIGHLIGHT_MAX_PDF_BYTES``, at least 256 MB, since it
  holds for every file LibreOffice writes): a file past it stops it (SIGXFSZ), so the disk
  cannot be filled; a PDF over ``HIGHLIGHT_MAX_PDF_BYTES`` is refused when it is done;
- its own user profile, copied per conversion from a template made once per process: two
  conversions sharing a profile collide (the second exits at once, handing its work to the
  first through the profile's pipe), and a fresh profile costs 2-5 s of LibreOffice's start-up
  render tests (run whenever the profile's last version is older than the program; the
  template says it is this version, and a conversion takes 0.4 s);
- no network when the kernel allows it: a new network namespace (``unshare --user --net``,
  whose only interface is a loopback that is down), so a document's linked pictures or
  templates can fetch nothing, not even from the service's own network. Where user namespaces
  are refused (some container runtimes) it runs without one, with a warning logged once; the
  profile still blocks macros and untrusted links: those settings are written into every
  conversion's profile, the template's copy or, when the template could not be made (a failure
  kept for the process's life, not retried per conversion), a new one;
- ``--norestore`` and no lock files, and an environment without proxies or the service's own
  variables (no ``HIGHLIGHT_*`` secret reaches it).

A conversion past a limit, or one LibreOffice cannot do, raises a ``BadRequest`` naming the file,
what went wrong and the setting (422): a fact of the document, like ``PdfTooComplex``.
LibreOffice missing is ``ConverterMissing`` (415): this deployment does not take Office files at
all, which retrying will not change (a 503 would have clients retry forever); the message says
to install it or to send a PDF.

Conversions run at most ``slots`` at a time (the PDF workers' count): each is a process of up to
``memory_mb``. A conversion that cannot get a slot within its timeout is ``ConversionBusy`` (503).
Callers on the event loop wait for a slot there (``slot``) before taking a thread, so uploads
queued behind a conversion hold none of the executor's threads.

After a kill, the group's processes handed to this process (as PID 1 or a subreaper) are reaped
(``soffice.py``).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from app.pdfs.errors import (
    ConversionBusy,
    ConversionFailed,
    ConversionTimedOut,
    ConversionTooLarge,
    ConverterMissing,
)
from app.pdfs.soffice import ISOLATE, can_isolate, environment, kill_group, reap_group, version

log = logging.getLogger(__name__)

# The extensions LibreOffice is given (it picks its import filter by them and by the content).
OFFICE_EXTENSIONS = frozenset(
    {"docx", "pptx", "xlsx", "odt", "odp", "ods", "rtf", "doc", "ppt", "xls"}
)
# Sets the limits, then becomes the converter: a ``preexec_fn`` would do it in the forked child
# of a threaded process, which Python documents as unsafe.
_TRAMPOLINE = (
    "import os, resource, sys\n"
    "memory, fsize = int(sys.argv[1]), int(sys.argv[2])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (memory, memory))\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "os.execvp(sys.argv[3], sys.argv[3:])\n"
)
# Written into the template profile. The last version seen: no start-up render tests. Macros
# never run (security level 3 with no trusted location, execution off); links from documents
# that are not trusted are not followed.
_SETTINGS = """\
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
"""  # noqa: E501
_LAST_VERSION = (
    '<item oor:path="/org.openoffice.Setup/Product"><prop oor:name="ooSetupLastVersion" '
    'oor:op="fuse"><value>{}</value></prop></item>\n'
)
# A profile's settings file before LibreOffice has written one.
_EMPTY_XCU = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
    'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    "</oor:items>\n"
)
# The smallest file-size limit a conversion gets, whatever the PDF's cap.
_MIN_FILE_LIMIT = 256 * 1024 * 1024
# A document for the template's first start.
_TINY_RTF = b"{\\rtf1\\ansi\\pard profile\\par}"


@dataclass(frozen=True)
class ConvertLimits:
    soffice: str = "soffice"
    timeout_s: float = 120.0
    memory_mb: int = 2048
    max_output_bytes: int = 100 * 1024 * 1024
    slots: int = 2
    # None: use a network namespace when the kernel allows it; False: never try (tests of the
    # fallback).
    isolate_network: bool | None = None


T = TypeVar("T")


def _release(gate: asyncio.Semaphore, done: asyncio.Future[Any]) -> None:
    gate.release()
    if not done.cancelled():
        done.exception()  # retrieved: a caller that stopped waiting never reads it


class OfficeConverter:
    """Blocking conversions (call ``convert`` from a thread). Thread-safe; ``close`` removes the
    template profile."""

    def __init__(self, limits: ConvertLimits) -> None:
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.slots)
        self._lock = threading.Lock()
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        # Held while the template is made (a LibreOffice start); _lock guards the rest.
        self._template_lock = threading.Lock()
        self._template: Path | None = None
        self._template_failed = False
        self._isolate: bool | None = None if limits.isolate_network is None else False

    def available(self) -> str | None:
        """The converter's path, or None when it is not installed."""
        return shutil.which(self.limits.soffice)

    async def run(self, name: str, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in a thread once a conversion slot is free, waited for on the
        event loop: a thread blocked on the slots would hold one of the default executor's few
        threads (6 on 2 cores) for up to the timeout, and starve every other blocking call
        (batches, /readyz). ``ConversionBusy`` when none frees within the timeout. The slot is
        given back when the thread is done, not when the caller stops waiting: a cancelled
        upload's conversion goes on in its thread, and the gate must go on counting it."""
        gate = self._gate()
        try:
            await asyncio.wait_for(gate.acquire(), self.limits.timeout_s)
        except TimeoutError:
            raise self._busy(name) from None
        future = asyncio.ensure_future(asyncio.to_thread(function, *args))
        future.add_done_callback(lambda done: _release(gate, done))
        return await asyncio.shield(future)

    def _gate(self) -> asyncio.Semaphore:
        # One per event loop (a semaphore belongs to the loop it first waits on; tests run
        # several loops).
        loop = asyncio.get_running_loop()
        with self._lock:
            gate = self._gates.get(loop)
            if gate is None:
                gate = self._gates[loop] = asyncio.Semaphore(self.limits.slots)
            return gate

    def _busy(self, name: str) -> ConversionBusy:
        return ConversionBusy(
            f"{name} could not be converted now: every LibreOffice slot stayed taken for "
            f"{self.limits.timeout_s:g} s; try again shortly"
        )

    def convert(self, data: bytes, extension: str, name: str) -> bytes:
        """The PDF LibreOffice makes of ``data`` (a file of type ``extension``). ``name`` (the
        uploaded file's name, never a server path) is what error messages show."""
        if extension not in OFFICE_EXTENSIONS:
            raise ValueError(f"not an Office extension: {extension!r}")
        program = self.available()
        if program is None:
            raise ConverterMissing(
                f"{name} is an Office document ({extension.upper()}), which this server converts "
                f"with LibreOffice, and LibreOffice is not installed ({self.limits.soffice!r} "
                "not found, HIGHLIGHT_SOFFICE_PATH); the operator can install "
                "libreoffice-writer-nogui, libreoffice-impress-nogui and "
                "libreoffice-calc-nogui, or send the document as a PDF"
            )
        # Callers on an event loop have waited in ``slot`` already, so this is free for them;
        # it still bounds callers from threads (and several loops) together.
        if not self._slots.acquire(timeout=self.limits.timeout_s):
            raise self._busy(name)
        try:
            template = self._template_profile(program)
            return self._run(program, template, data, extension, name)
        finally:
            self._slots.release()

    def close(self) -> None:
        with self._template_lock:
            template, self._template = self._template, None
        if template is not None:
            shutil.rmtree(template.parent, ignore_errors=True)

    # -- one conversion --------------------------------------------------------------------

    def _run(
        self, program: str, template: Path | None, data: bytes, extension: str, name: str
    ) -> bytes:
        with tempfile.TemporaryDirectory(prefix="highlight-office-") as work:
            root = Path(work)
            profile = root / "profile"
            if template is not None:
                shutil.copytree(template, profile, symlinks=True)
            # Into every profile, the template's copies too: without a template (its start
            # failed) a conversion would otherwise run with macros and links at their defaults.
            _write_settings(profile)
            source = root / "in" / f"source.{extension}"
            source.parent.mkdir()
            source.write_bytes(data)
            out = root / "out"
            returncode, stderr = self._soffice(program, profile, source, out, root, name)
            pdf = out / "source.pdf"
            return self._result(pdf, returncode, stderr, name)

    def _soffice(
        self, program: str, profile: Path, source: Path, out: Path, home: Path, name: str
    ) -> tuple[int, str]:
        limits = self.limits
        command = [
            sys.executable,
            "-c",
            _TRAMPOLINE,
            str(limits.memory_mb * 1024 * 1024),
            # Every file it writes (its profile, its temporary files) is under this, so it
            # is not the PDF's cap itself, checked after: a low cap would make it fail oddly.
            str(max(limits.max_output_bytes, _MIN_FILE_LIMIT)),
            *(ISOLATE if self._network_isolation() else []),
            program,
            "--headless",
            "--norestore",
            "--nologo",
            "--nodefault",
            "--nolockcheck",
            f"-env:UserInstallation={profile.as_uri()}",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out),
            str(source),
        ]
        # A file, not a pipe: soffice.bin inherits it, and a pipe it holds open would keep the
        # wait going past a kill of the script that started it.
        errors = home / "stderr.txt"
        with errors.open("wb") as err:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=home,
                env=environment(home),
                process_group=0,
            )
        try:
            process.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait()
            raise ConversionTimedOut(
                f"{name} was not converted to PDF within {limits.timeout_s:g} s "
                "(HIGHLIGHT_OFFICE_TIMEOUT_S); split it into smaller documents or send it as a "
                "PDF"
            ) from None
        finally:
            # soffice.bin may outlive the script that started it.
            kill_group(process.pid)
            reap_group(process.pid)
        return process.returncode, errors.read_bytes()[-2000:].decode("utf-8", "replace")

    def _result(self, pdf: Path, returncode: int, stderr: str, name: str) -> bytes:
        limits = self.limits
        if returncode in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ) or (
            pdf.is_file() and pdf.stat().st_size > limits.max_output_bytes
        ):
            raise ConversionTooLarge(
                f"{name} converts to a PDF larger than this service accepts "
                f"({limits.max_output_bytes} bytes, HIGHLIGHT_MAX_PDF_BYTES); split it into "
                "smaller documents"
            )
        if not pdf.is_file() and _crashed(returncode, stderr):
            log.info("LibreOffice stopped on %s (exit %s): %s", name, returncode, stderr)
            raise ConversionTooLarge(
                f"{name} could not be converted to PDF: LibreOffice stopped (exit {returncode}); "
                f"it needs more than {limits.memory_mb} MB of memory (HIGHLIGHT_OFFICE_MEMORY_MB) "
                "or the file is damaged; make its pictures smaller or split it, or send it as a "
                "PDF"
            )
        if not pdf.is_file():
            log.info("LibreOffice did not convert %s (exit %s): %s", name, returncode, stderr)
            raise ConversionFailed(
                f"{name} could not be converted to PDF: LibreOffice cannot read it (damaged, "
                "encrypted with a password, or not the type its content claims); open and save "
                "it again, or send it as a PDF"
            )
        data = pdf.read_bytes()
        if not data.startswith(b"%PDF-"):
            raise ConversionFailed(f"{name} could not be converted to PDF (no PDF was written)")
        return data

    # -- once per process ------------------------------------------------------------------

    def _network_isolation(self) -> bool:
        with self._lock:
            if self._isolate is None:
                self._isolate = can_isolate()
                if not self._isolate:
                    log.warning(
                        "LibreOffice runs without a network namespace (unshare --user --net is "
                        "not permitted here): documents cannot run macros, but a converted "
                        "document may reach the network"
                    )
            return self._isolate

    def _template_profile(self, program: str) -> Path | None:
        """The profile copied for each conversion, made by one LibreOffice start (None when
        that failed: each conversion then starts with an empty profile, slower but working)."""
        with self._template_lock:
            if self._template is not None or self._template_failed:
                return self._template
            folder = Path(tempfile.mkdtemp(prefix="highlight-office-template-"))
            profile = folder / "profile"
            try:
                self._first_start(program, profile)
            except Exception:
                log.warning("could not prepare a LibreOffice profile", exc_info=True)
                shutil.rmtree(folder, ignore_errors=True)
                # Not tried again: each try is a LibreOffice start, per conversion, that would
                # likely fail the same way.
                self._template_failed = True
                return None
            self._template = profile
            return profile

    def _first_start(self, program: str, profile: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="highlight-office-") as work:
            root = Path(work)
            source = root / "source.rtf"
            source.write_bytes(_TINY_RTF)
            _write_settings(profile)
            self._soffice(program, profile, source, root / "out", root, "a test document")
            installed = version(program, root)
        settings = profile / "user" / "registrymodifications.xcu"
        if not settings.is_file():
            raise ConversionFailed("LibreOffice wrote no profile on its first start")
        _write_settings(profile, _LAST_VERSION.format(installed) if installed else "")


def _write_settings(profile: Path, extra: str = "") -> None:
    """``_SETTINGS`` (and ``extra``) into ``profile``'s registrymodifications.xcu, made when
    there is none (LibreOffice fills in the rest of a new profile around it). Items already
    there are left; an item written twice, the last one counts."""
    settings = profile / "user" / "registrymodifications.xcu"
    text = settings.read_text("utf-8") if settings.is_file() else _EMPTY_XCU
    wanted = "" if _SETTINGS in text else _SETTINGS
    if extra and extra not in text:
        wanted += extra
    if wanted:
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(text.replace("</oor:items>", wanted + "</oor:items>", 1), "utf-8")


def _crashed(returncode: int, stderr: str) -> bool:
    """LibreOffice over its address space aborts (std::bad_alloc) or crashes on a failed
    allocation; a crash is said as memory first (the likely cause of a crash on a document
    it could open), and the message names damage as the other."""
    signals = (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGKILL)
    died = returncode < 0 and -returncode in signals
    shell_died = returncode > 128 and returncode - 128 in signals
    # Under a low limit the program cannot even map its libraries ("failed to map segment").
    starved = "failed to map segment" in stderr or "Cannot allocate memory" in stderr
    return died or shell_died or starved or "bad_alloc" in stderr
