"""schemathesis hooks (SCHEMATHESIS_HOOKS=schemathesis_hooks, scripts/ on PYTHONPATH): bodies for
``PUT /v2/documents/{id}/pdf``, which takes raw ``application/pdf`` that schemathesis cannot
make from a schema. A mix of real PDFs (the demo's sample, and a one-page PDF with a random
sentence, so uploads create and change documents), a PDF cut short, and arbitrary bytes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pymupdf
import schemathesis
from hypothesis import strategies as st

from app.pdfs.sample import write_sample_pdf


def _sample() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return write_sample_pdf(Path(folder) / "sample.pdf").read_bytes()


def _one_page(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), f"The committee noted {text}.")
    data: bytes = doc.tobytes()
    doc.close()
    return data


SAMPLE = _sample()
PDFS = st.one_of(
    st.just(SAMPLE),
    st.text(alphabet="abcdefghij ", min_size=1, max_size=40).map(_one_page),
    st.integers(min_value=1, max_value=len(SAMPLE) - 1).map(lambda n: SAMPLE[:n]),
    st.binary(max_size=4096),
)
schemathesis.openapi.media_type("application/pdf", PDFS)
