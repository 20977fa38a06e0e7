"""A reader of OLE compound files ([MS-CFB]), the container of legacy Office files (``.doc``,
``.ppt``, ``.xls``) and of many other Windows files (``.msg``, ``.vsd``, ``.msi``, Thumbs.db).

It reads what telling them apart needs: the header, the sector table (FAT), the root storage's
entries (names, kinds, sizes) and a bounded piece of one stream. Not the whole file: a legacy
file's type and its password protection are in a few bytes of one or two streams
(``legacy_office.py``).

Written here rather than taken from olefile because the file comes from strangers and olefile
is not bounded on what they can send: olefile 0.47 (its latest release) rebuilds its table on
every sector that its header's count names (``self.fat = self.fat + nextfat``), a count of up to
2**32 that it does not hold to the file's size, so a 2 KB file whose sector list loops cost it
85 s of CPU (200 turns; four times that at 400). msoffcrypto-tool, which would tell encryption,
reads the file with olefile. And ``app.core`` takes the standard library only.

Bounds, for a file of S sectors already in memory (the upload's body):

- every sector read is in the file: a chain pointing past its end, or a table marking sectors
  past its end in use, is damage (a cut file);
- a chain is followed at most S steps (the table has S entries: a longer chain has looped);
- the header's FAT count is at most S, its list of FAT sectors read once (at most S sectors);
- each directory entry is visited once, and at most 10,000 of the root storage's: a tree that
  comes back to an entry is damage;
- what it holds (the FAT, the directory's sector numbers, the mini stream) is each at most the
  file's size.

So time and memory are linear in the file, whatever its header, table or tree claim. What it
cannot read raises ``OleError`` (the caller's 422: damaged or cut short).
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass

SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
STORAGE, STREAM, ROOT = 1, 2, 5
# Chain markers (MS-CFB 2.1): the last sector of a chain, and the highest real sector number.
_END_OF_CHAIN = 0xFFFFFFFE
_MAX_SECTOR = 0xFFFFFFFA
_NO_STREAM = 0xFFFFFFFF
_FREE = 0xFFFFFFFF
_NOT_A_SECTOR = frozenset({0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFC})
_HEADER_DIFAT = 109  # FAT sector numbers in the header itself
_ENTRY = 128
_ENTRY_FIELDS = struct.Struct("<64sHBBIII16s")  # name, its length, kind, colour, left, right, child
_ENTRY_PLACE = struct.Struct("<II")  # first sector (offset 116), size (low 32 bits, offset 120)
# Streams under this size are in the mini stream, in 64-byte sectors (MS-CFB 2.2: the cutoff
# MUST be 4096; a header saying otherwise is read as 4096, as Office does).
_MINI_CUTOFF = 4096
_MINI_SECTOR = 64
# How many entries of the root storage are looked at. A legacy Office file has a few dozen
# (its streams; embedded objects are storages with their own entries below); a Thumbs.db or an
# MSI may have thousands. Past this a file is told by the entries seen: it is no Office file.
_MAX_ENTRIES = 10_000


class OleError(ValueError):
    """The compound file cannot be read: cut short, damaged, or made to make a reader loop."""


@dataclass(frozen=True)
class Entry:
    name: str
    kind: int  # STORAGE or STREAM
    start: int  # its first sector (a mini sector when size < 4096)
    size: int
    clsid: bytes


class CompoundFile:
    """The compound file in ``data``: ``root`` (the root entry), ``entries`` (the root
    storage's own streams and storages, by upper-cased name: MS-CFB compares names without
    case), ``read`` (a stream's bytes). Raises OleError for what it cannot read."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 512 or not data.startswith(SIGNATURE):
            raise OleError("no compound file header")
        # The header's fields, by their offsets (MS-CFB 2.2).
        order, shift, mini_shift = struct.unpack_from("<HHH", data, 28)
        fat_count, directory = struct.unpack_from("<II", data, 44)
        (minifat_start,) = struct.unpack_from("<I", data, 60)
        difat_start, difat_count = struct.unpack_from("<II", data, 68)
        if order != 0xFFFE or shift not in (9, 12) or mini_shift != 6:
            raise OleError("the header's byte order or sector sizes are not a compound file's")
        self._data = data
        self._size = 1 << shift
        # Sector n starts at (n + 1) * size; a short last sector is read padded with zeros.
        self._sectors = max(0, -(-(len(data) - self._size) // self._size))
        self._fat = self._load_fat(fat_count, difat_start, difat_count)
        self._directory = _walk(self._fat, directory)
        self._per_sector = self._size // _ENTRY
        self.root, _, _, child = self._entry(self._entry_bytes(0))
        if self.root.kind != ROOT:
            raise OleError("the directory has no root entry")
        self.entries = self._children(child)
        self._minifat_start = minifat_start
        self._mini: tuple[array[int], bytes] | None = None

    def read(self, entry: Entry, offset: int = 0, size: int = _MINI_CUTOFF) -> bytes:
        """At most ``size`` bytes of the stream ``entry`` from ``offset`` (fewer where the
        stream ends). Reads only the sectors that hold them, after walking the chain to them."""
        end = min(entry.size, offset + size)
        if offset >= end:
            return b""
        fat, unit, sector = self._fat, self._size, self._sector
        if entry.size < _MINI_CUTOFF:
            fat, unit, sector = self._mini_stream_parts()[0], _MINI_SECTOR, self._mini_sector
        first, last = offset // unit, (end - 1) // unit
        numbers = _walk(fat, entry.start, first, last - first + 1)
        if len(numbers) < last - first + 1:
            raise OleError(f"stream {entry.name!r} ends before its size ({entry.size} bytes)")
        blob = b"".join(map(sector, numbers))
        return blob[offset - first * unit : end - first * unit]

    # -- the container -----------------------------------------------------------------------

    def _sector(self, number: int) -> bytes:
        start = (number + 1) * self._size
        if number >= self._sectors:
            raise OleError(f"sector {number} is past the end of the file: it was cut short")
        return self._data[start : start + self._size].ljust(self._size, b"\0")

    def _load_fat(self, count: int, difat_start: int, difat_count: int) -> array[int]:
        if count > self._sectors or difat_count > self._sectors:
            raise OleError(
                f"the header claims {count} table sectors (listed in {difat_count} more) in a "
                f"file of {self._sectors}"
            )
        numbers = list(struct.unpack_from(f"<{_HEADER_DIFAT}I", self._data, 76))
        per_block = self._size // 4 - 1
        block = difat_start
        # At most difat_count (<= the file's sectors) blocks, and none once the list is full:
        # a list that loops re-reads sectors of the file, never more than it has.
        for _ in range(difat_count):
            if len(numbers) >= count or block in _NOT_A_SECTOR:
                break
            ints = _ints(self._sector(block))
            numbers.extend(ints[:per_block])
            block = ints[per_block]
        numbers = numbers[:count]
        if len(numbers) < count or any(n > _MAX_SECTOR for n in numbers):
            raise OleError("the list of table sectors is shorter than the header says")
        fat = _ints(b"".join(map(self._sector, numbers)))
        # The table maps sectors past the file's end that are in use: the file was cut short
        # (found here, before the sectors it lost are needed, or LibreOffice finds it later).
        beyond = fat[self._sectors :]
        if beyond.count(_FREE) != len(beyond):
            raise OleError(
                "the file ends before sectors its table says are in use: it was cut short"
            )
        return fat[: self._sectors]

    def _chain_bytes(self, start: int) -> bytes:
        """A whole chain's bytes (the mini table, the mini stream)."""
        return b"".join(map(self._sector, _walk(self._fat, start)))

    def _mini_stream_parts(self) -> tuple[array[int], bytes]:
        if self._mini is None:
            table = self._chain_bytes(self._minifat_start)
            stream = self._chain_bytes(self.root.start)
            minifat = _ints(table)
            # Mini sectors past the mini stream's bytes point nowhere (as for the FAT).
            self._mini = minifat[: len(stream) // _MINI_SECTOR], stream
        return self._mini

    def _mini_sector(self, number: int) -> bytes:
        stream = self._mini_stream_parts()[1]
        return stream[number * _MINI_SECTOR : (number + 1) * _MINI_SECTOR]

    # -- the directory -----------------------------------------------------------------------

    def _entry_bytes(self, sid: int) -> bytes:
        """Directory entry ``sid``'s 128 bytes, from the one sector that holds it."""
        if sid >= len(self._directory) * self._per_sector:
            raise OleError(f"directory entry {sid} is past the end of the directory")
        sector = self._directory[sid // self._per_sector]
        if sector >= self._sectors:
            raise OleError(f"sector {sector} is past the end of the file: it was cut short")
        start = (sector + 1) * self._size + (sid % self._per_sector) * _ENTRY
        return self._data[start : start + _ENTRY].ljust(_ENTRY, b"\0")

    def _entry(self, raw: bytes) -> tuple[Entry, int, int, int]:
        """The entry, and its left sibling, right sibling and first child."""
        name, length, kind, _, left, right, child, clsid = _ENTRY_FIELDS.unpack_from(raw)
        start, size = _ENTRY_PLACE.unpack_from(raw, 116)
        # The length counts the closing NUL; one over 64 bytes is read as 64.
        text = name[: max(0, min(length, 64) - 2)].decode("utf-16-le", "replace")
        return Entry(text, kind, start, size, clsid), left, right, child

    def _children(self, first: int) -> dict[str, Entry]:
        """The entries of one storage: the tree of siblings under it, each visited once, the
        first ``_MAX_ENTRIES`` of them."""
        found: dict[str, Entry] = {}
        seen: set[int] = set()
        stack = [first]
        while stack and len(seen) < _MAX_ENTRIES:
            sid = stack.pop()
            if sid == _NO_STREAM:
                continue
            if sid in seen:
                raise OleError("the directory's tree comes back to an entry it has visited")
            seen.add(sid)
            entry, left, right, _ = self._entry(self._entry_bytes(sid))
            stack += (left, right)
            if entry.kind in (STORAGE, STREAM):
                found.setdefault(entry.name.upper(), entry)
        return found


def _ints(data: bytes) -> array[int]:
    """``data`` as little-endian 32-bit numbers (the format's, whatever the machine's)."""
    table = array("I")
    table.frombytes(data[: len(data) - len(data) % 4])
    if sys.byteorder == "big":
        table.byteswap()
    return table


def _walk(fat: array[int], start: int, skip: int = 0, take: int | None = None) -> list[int]:
    """Sectors ``skip`` to ``skip + take`` of the chain from ``start`` (fewer where it ends;
    all of them when ``take`` is None). A chain longer than the table has looped; one leaving
    the table points past the file."""
    numbers: list[int] = []
    sector = start
    for step in range(len(fat) + 1):
        if sector == _END_OF_CHAIN or len(numbers) == take:
            return numbers
        if sector >= len(fat):
            raise OleError(f"a chain of sectors points at sector {sector}, past the file's end")
        if step >= skip:
            numbers.append(sector)
        sector = fat[sector]
    raise OleError("a chain of sectors loops")
