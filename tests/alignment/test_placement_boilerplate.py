"""A boilerplate passage printed in two documents of one issue is placed by what differs.

Two copies of a long notice (the Federal Register prints the same "Comments Invited" text for
every rule) share hundreds of characters of context; a chunk cut from one of them differs
from the other only in a sentence or two beyond the notice. That little is the whole
evidence, and it is enough when nothing in the chunk fits only the other copy.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import ChunkHint, locate
from app.pdfs.extract import build_index

NOTICE = [
    "We invite you to send any written relevant data, views, or arguments about this",
    "proposal. Send your comments to an address listed under the ADDRESSES section.",
    "Include the docket number at the beginning of your comments. We specifically invite",
    "comments on the overall regulatory, economic, environmental, and energy aspects of",
    "this proposal. We will consider all comments received by the closing date and may",
    "amend this proposal because of those comments. We will post all comments we receive,",
    "without change, to the public docket, including any personal information you provide.",
]
QUOTED = "Comments will be available in the docket shortly after receipt."
TAIL = [
    "We will also post a report summarizing each substantive verbal contact we receive",
    "about this proposal. The street address for Docket Operations is listed above.",
]
ENDINGS = [
    "For further information contact the Seattle branch office at the address above.",
    "For further information contact the Wichita branch office by telephone or by fax.",
]


@pytest.fixture(scope="module")
def notices(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    for ending in ENDINGS:
        page = doc.new_page()
        lines = [*NOTICE, QUOTED, *TAIL, ending, "Discussion follows on the next page."]
        for number, line in enumerate(lines):
            page.insert_text((60, 80 + 14 * number), line, fontsize=9)
    path: Path = tmp_path_factory.mktemp("notices") / "notices.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


@pytest.mark.parametrize("page", [1, 2])
def test_the_copy_whose_own_sentence_the_chunk_holds(notices: DocumentIndex, page: int) -> None:
    before = " ".join(NOTICE)
    chunk = " ".join([before, QUOTED, *TAIL, ENDINGS[page - 1]])
    result = locate(notices, QUOTED, None, ChunkHint(chunk, len(before) + 1))
    assert result.status == "found"
    assert result.page == page


def test_a_chunk_holding_only_the_shared_text_stays_unplaced(notices: DocumentIndex) -> None:
    before = " ".join(NOTICE)
    chunk = " ".join([before, QUOTED, *TAIL])
    assert locate(notices, QUOTED, None, ChunkHint(chunk, len(before) + 1)).status == "no_match"
