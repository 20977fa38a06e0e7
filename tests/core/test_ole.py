"""The compound-file reader: streams read as written (big ones in sectors, small ones in the mini
stream), and hostile files refused with work bounded by the file's size, counted in sectors read
and bytes held, whatever the file claims."""

from __future__ import annotations

import tracemalloc

import pytest

from app.core.ole import ROOT, STORAGE, STREAM, CompoundFile, OleError
from tests.fixtures import hostile_ole
from tests.fixtures.ole import SECTOR, Tree, compound_file

TREE: Tree = {
    "WordDocument": bytes(range(256)) * 40,  # 10 KB: in sectors
    "1Table": b"table " * 100,  # 600 bytes: in the mini stream
    "Ole": b"",
    "ObjectPool": {"WordDocument": b"an embedded object's own stream"},
}


def test_streams_read_as_written_and_only_the_roots_own_entries_count() -> None:
    ole = CompoundFile(compound_file(TREE))
    assert ole.root.kind == ROOT
    assert sorted(ole.entries) == ["1TABLE", "OBJECTPOOL", "OLE", "WORDDOCUMENT"]
    assert ole.entries["OBJECTPOOL"].kind == STORAGE
    for name in ("WordDocument", "1Table", "Ole"):
        entry = ole.entries[name.upper()]
        assert entry.kind == STREAM
        data = TREE[name]
        assert isinstance(data, bytes)
        assert ole.read(entry, 0, 1 << 20) == data
        # Any piece, across sector and mini-sector boundaries, and past the end.
        for offset, size in ((0, 12), (500, 100), (4090, 20), (max(0, len(data) - 3), 10)):
            assert ole.read(entry, offset, size) == data[offset : offset + size]
        assert ole.read(entry, len(data) + 5, 10) == b""
    # The embedded object's WordDocument is not the root's: it is under ObjectPool.
    assert ole.entries["WORDDOCUMENT"].size == 10240


def test_names_are_found_whatever_their_case() -> None:
    ole = CompoundFile(compound_file({"WORKBOOK": b"\x09\x08" + bytes(30)}))
    assert ole.read(ole.entries["WORKBOOK"], 0, 2) == b"\x09\x08"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504), "byte order or sector sizes"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "no compound file header"),
        (
            hostile_ole.looping_fat_list(),
            r"claims 127000109 table sectors \(listed in 1000000 more\) in a file of 3",
        ),
        (hostile_ole.looping_directory(), "a chain of sectors loops"),
        (hostile_ole.looping_tree(), "tree comes back to an entry"),
    ],
    ids=["zeros", "header cut", "fat list loop", "directory loop", "tree loop"],
)
def test_what_cannot_be_read_is_an_ole_error_saying_why(data: bytes, said: str) -> None:
    with pytest.raises(OleError, match=said):
        CompoundFile(data)


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.5, 0.9])
def test_a_cut_file_is_an_error_once_a_sector_it_needs_is_missing(fraction: float) -> None:
    data = hostile_ole.cut(compound_file(TREE), fraction)
    with pytest.raises(OleError, match="it was cut short|tree comes back|chain of sectors"):
        _read_every_stream(data)


def _read_every_stream(data: bytes) -> None:
    ole = CompoundFile(data)
    for entry in ole.entries.values():
        ole.read(entry, 0, entry.size)


def test_a_stream_read_past_where_its_chain_loops_is_an_error() -> None:
    ole = CompoundFile(hostile_ole.looping_slides())
    slides = ole.entries["POWERPOINT DOCUMENT"]
    assert slides.size == 0xFFFFFFFF
    with pytest.raises(OleError, match="a chain of sectors loops"):
        ole.read(slides, 0xFFFFFFF0, 8)


def test_claimed_sizes_are_not_believed() -> None:
    # 4 GB streams, a 4 GB mini stream, 2**32 directory and mini-table sectors: what is there
    # is read, what is not is not looked for.
    ole = CompoundFile(hostile_ole.huge_claims())
    word = ole.entries["WORDDOCUMENT"]
    assert ole.read(word, 0, 4) == hostile_ole.WORD_FIB[:4]
    with pytest.raises(OleError, match="sector"):
        ole.read(ole.entries["1TABLE"], 0xFFFFFF00, 16)


class _Counted(CompoundFile):
    """The reader, counting the sectors it reads (its work: a sector is the unit of both)."""

    reads = 0

    def _sector(self, number: int) -> bytes:
        _Counted.reads += 1
        return super()._sector(number)


@pytest.mark.parametrize(
    "make",
    [
        hostile_ole.looping_fat_list,
        hostile_ole.looping_directory,
        hostile_ole.looping_tree,
        hostile_ole.looping_slides,
        hostile_ole.huge_claims,
        lambda: hostile_ole.wide_directory(3),
    ],
    ids=["fat list loop", "directory loop", "tree loop", "slides loop", "huge claims", "wide"],
)
def test_hostile_files_cost_work_and_memory_bounded_by_their_size(make: object) -> None:
    assert callable(make)
    data: bytes = make()
    sectors = len(data) // SECTOR
    _Counted.reads = 0
    tracemalloc.start()
    try:
        ole = _Counted(data)
        for entry in ole.entries.values():
            if entry.kind == STREAM:
                ole.read(entry, max(0, entry.size - 64), 64)  # the far end of each stream
    except OleError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # Each sector read a few times at most (the FAT once, each chain walked once per read),
    # and nothing held much larger than the file, whatever its header says.
    assert _Counted.reads <= 4 * sectors + 16, (_Counted.reads, sectors)
    assert peak <= 2 * len(data) + 1_000_000, (peak, len(data))


def test_a_wide_root_is_looked_at_up_to_its_first_ten_thousand_entries() -> None:
    data = hostile_ole.wide_directory(3)  # 23,435 streams at the root
    assert len(data) // 128 > 23_000
    assert len(CompoundFile(data).entries) == 10_000
