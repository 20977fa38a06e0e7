"""Files written whole, then renamed into place, with the permissions any other file the
process writes gets."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    # os.umask can only be read by setting it; read once, at import, before any thread runs.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp makes its file 0600 whatever the umask: a PDF copy the service stores, or an index
# blob, would then be readable by this user only, unlike every other file it writes (0644
# under the usual umask), and a backup job or a second service user could not read it.
FILE_MODE = 0o666 & ~_umask()


def temp_file(directory: Path, prefix: str = "", suffix: str = ".part") -> tuple[int, str]:
    """An open descriptor and the name of a new file in ``directory`` (same file system as
    its target, so ``os.replace`` is atomic), with the process's usual file mode."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=suffix)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise
    return fd, name
