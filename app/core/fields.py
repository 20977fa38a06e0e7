"""Field types shared by the API models.

Text that reaches the database must be storable everywhere: PostgreSQL refuses NUL characters in
text, and a lone surrogate (a JSON ``"\\ud800"`` escape) cannot be encoded as UTF-8 by either
database or by the JSON response that echoes it. Such input gets a 422 naming the field, instead
of a 500 from deep inside a driver. The pattern is also published in the OpenAPI document, so
generated clients and fuzzers know the rule.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

NO_NUL_PATTERN = r"^[^\x00]*$"
# Ids: the database columns (and the migrations that made them) are this wide.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-]*$"
DOCUMENT_ID_MAX = 128
CHUNK_ID_MAX = 256
CITATION_ID_MAX = 128
# PostgreSQL's and SQLite's INTEGER: larger numbers cannot be stored.
MAX_INT32 = 2**31 - 1


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000) characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone surrogate)") from None
    return value


StorableText = Annotated[
    str, AfterValidator(_storable), Field(json_schema_extra={"pattern": NO_NUL_PATTERN})
]
# Storable text with something visible in it (a marker to look for in an answer): one pattern, so
# the published schema and the service refuse the same strings.
NON_BLANK_PATTERN = r"^[^\x00]*[^\x00\s][^\x00]*$"
VisibleText = Annotated[str, Field(pattern=NON_BLANK_PATTERN), AfterValidator(_storable)]


class ResponseModel(BaseModel):
    """A model the service only sends. A field with a default is still sent every time (the
    service never drops unset or null fields from these), so the OpenAPI document lists it as
    required (nullable when it may be null): generated clients then type it as always there.
    Pydantic applies this to the serialization schema only, which is the one FastAPI publishes
    for responses; parsing (a cached answer, a stored highlight) still fills in the defaults.
    Not for a model whose fields may be left out (``ErrorDetail.details``)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)
