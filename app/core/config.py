"""One typed settings object, read from the environment (prefix ``HIGHLIGHT_``) and ``.env``."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

LLMProvider = Literal["vllm", "openrouter", "openai", "none"]
LLMTier = Literal["json_schema", "structured_outputs", "prompted"]
ALL_TIERS: list[LLMTier] = ["json_schema", "structured_outputs", "prompted"]
# An index signing key: "id:secret", the id short and plain (it is written into every blob it
# signs and may be logged), the secret 32 characters or more (pdfs/index_signing.py).
SIGNING_KEY = re.compile(r"([A-Za-z0-9._-]{1,32}):(\S{32,1024})")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HIGHLIGHT_", env_file=".env", extra="ignore")

    database_url: str = "sqlite+aiosqlite:///./var/highlight.db"
    pdf_root: Path = Path("./var/pdfs")
    index_cache_dir: Path | None = Path("./var/index-cache")

    llm_provider: LLMProvider = "none"
    llm_base_url: str = ""
    llm_model: str = ""
    # SecretStr: never printed, not even in a start-up error about this very setting.
    llm_api_key: SecretStr = SecretStr("")
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_max_tokens: int = Field(default=1024, ge=16)
    llm_temperature: float = Field(default=0.0, ge=0, le=2)
    # How hard a reasoning model may think before it answers (its reasoning counts against
    # llm_max_tokens): auto, the lowest effort the model takes (learned per model); none to
    # high, sent as is (left out with a warning where refused); off, never sent (llm/providers.py).
    llm_reasoning_effort: Literal["auto", "none", "minimal", "low", "medium", "high", "off"] = (
        "auto"
    )
    # Merged into vLLM's chat_template_kwargs, e.g. {"enable_thinking": false} for Qwen3.
    llm_chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    # Tiers to try, in order; a deployment can drop one it knows is broken.
    llm_tiers: list[LLMTier] = Field(default_factory=lambda: list(ALL_TIERS))

    # Defaults are the ceilings the OpenAPI document publishes (highlights/schemas.py); lower
    # values make this deployment stricter than its published contract, higher ones are refused.
    max_citations: int = Field(default=50, ge=1, le=50)
    max_query_chars: int = Field(default=4_000, ge=1, le=4_000)
    max_answer_chars: int = Field(default=20_000, ge=1, le=20_000)
    max_sentences_per_chunk: int = Field(default=200, ge=1)
    max_highlights_per_chunk: int = Field(default=5, ge=1)
    # A document PUT larger than this gets a 413 before anything is parsed (a 180 MB PUT once
    # took the server from 213 to 850 MB); 8 MiB is 8x the largest real document seen (a 352-page
    # book, 0.9 MB of chunks). Batches have their own, smaller limit (api/body_limit.py).
    max_request_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    # Past this, a batch stops waiting for the LLM and answers with the lexical selector.
    batch_deadline_s: float = Field(default=30.0, gt=0)
    # On SIGTERM, requests in flight get this long to finish (LLM waits are cut short at once).
    shutdown_grace_s: int = Field(default=5, ge=0)
    # Idle keep-alive connections are closed after this. Longer than the idle timeout of the
    # proxy or client in front (60 s for most load balancers), or a request sent on a connection
    # the service is closing at that moment fails with a reset (seen under load at uvicorn's 5 s).
    keep_alive_s: int = Field(default=75, ge=1)

    # Bearer tokens. Empty (the default): no auth. Any token set: every API route needs a token,
    # a read token for reads (the batch included), a write token for PUT (it also reads).
    auth_read_tokens: list[SecretStr] = Field(default_factory=list)
    auth_write_tokens: list[SecretStr] = Field(default_factory=list)
    # With auth on, PDF links in batch results carry a signature valid this long, so a reader's
    # browser can open them without a token.
    auth_link_ttl_s: int = Field(default=24 * 3600, ge=60)
    # With auth on, /docs and /openapi.json need a read token unless this is true.
    public_docs: bool = False
    # Origins of the chat frontend allowed to call the API from a browser (CORS); empty: none.
    cors_allow_origins: list[str] = Field(default_factory=list)

    # Makes PDF links absolute, e.g. https://highlights.example.org (no trailing slash).
    public_base_url: str = Field(default="", pattern=r"^(https?://[^/\s]+(/[^\s]*[^/\s])?)?$")
    # A repeated batch answers from the database this long (0: no result cache).
    result_cache_ttl_s: int = Field(default=7 * 24 * 3600, ge=0)
    # The stream sends the lexical answer as provisional events when the LLM is slower than this.
    stream_provisional_after_s: float = Field(default=1.5, ge=0)

    # PyMuPDF work on PDFs (page check, chunking, text index, previews) runs in this many
    # worker processes, each job within this memory and CPU time; a PDF over either gets
    # pdf_too_complex instead of taking the service with it (pdfs/workers.py). The CPU budget is
    # pdf_job_timeout_s, plus pdf_job_page_s per page for work on the whole document, at most
    # pdf_job_max_s: CPU time, not the clock, so a job that is slow because the machine is busy
    # is not taken for a hostile PDF (the AMEX 2022 10-K: 11 s of CPU, 66 s on a busy machine).
    # A job still running after pdf_job_wall_factor times its budget by the clock (a stuck
    # worker) is abandoned as "busy" (503) and tried again by the next request, never
    # remembered as the PDF's fault.
    pdf_workers: int = Field(default=2, ge=1, le=64)
    pdf_worker_memory_mb: int = Field(default=2048, ge=256)
    pdf_job_timeout_s: float = Field(default=60.0, gt=0)
    pdf_job_page_s: float = Field(default=0.5, ge=0)
    pdf_job_max_s: float = Field(default=600.0, gt=0)
    pdf_job_wall_factor: float = Field(default=10.0, ge=1)
    # A page preview is rendered at a smaller scale than asked when it would have more pixels
    # (a 200-inch page at scale 1 is 207 million); at most this many render at once.
    preview_max_pixels: int = Field(default=8_000_000, ge=100_000)
    # Scanned pages (no usable text layer, mostly image) are read by Tesseract when their
    # document's index is built: auto (those pages), force (every page, replacing its text
    # layer) or off. Languages as Tesseract names them, joined by "+" (eng, fra, deu, chi_tra,
    # chi_sim: each needs its tesseract-ocr-<lang> package). At most ocr_max_pages pages per
    # document; the rest keep no_text_layer. Without Tesseract installed OCR is off.
    ocr_mode: Literal["off", "auto", "force"] = "auto"
    ocr_languages: str = Field(default="eng", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    ocr_dpi: int = Field(default=300, ge=72, le=600)
    ocr_max_pages: int = Field(default=100, ge=0, le=10_000)
    # How long a batch waits for a PDF's index being built before answering index_pending (text
    # layer being read) or text_layer_pending (scanned pages being read by OCR) for its
    # citations; the build goes on for the next request. While a text layer is read, the wait
    # grows by index_wait_page_s per page (a build costs about 5 ms of CPU a page: the 260-page
    # AMEX 10-K 1.2-1.6 s, bench/index_cache_bench.py; the rest covers a loaded host), never past
    # index_wait_max_s.
    index_wait_s: float = Field(default=10.0, ge=0)
    index_wait_page_s: float = Field(default=0.05, ge=0)
    index_wait_max_s: float = Field(default=60.0, ge=0)
    max_concurrent_previews: int = Field(default=2, ge=1)

    log_level: str = "INFO"
    # json: one JSON object per line (what a log pipeline wants); text: for a terminal; auto:
    # json unless stderr is a terminal.
    log_format: Literal["auto", "json", "text"] = "auto"

    # Where PDFs (and shared index blobs) live. Empty: the local folder HIGHLIGHT_PDF_ROOT, as
    # before. s3://bucket/prefix: an S3-compatible object store (credentials and endpoint from the
    # standard AWS_* variables), shared by every replica; file:///abs/path: a local object store
    # (tests, one machine). Objects are named by their SHA-256.
    storage_url: str = Field(default="", pattern=r"^((s3|file|memory)://\S*)?$")
    # Keys that sign the text index blobs replicas share through the object store, a JSON list
    # of "id:secret": the first signs, every one verifies (rotation: add the new key first, drop
    # the old one later). Empty: blobs in the shared store are neither trusted nor written.
    index_signing_keys: list[SecretStr] = Field(default_factory=list)
    # Each replica's read-through copy of the object store's PDFs (and index blobs).
    storage_cache_dir: Path = Path("./var/storage-cache")
    # PUT /v2/documents/{id}/pdf larger than this gets a 413 before it is stored.
    max_pdf_bytes: int = Field(default=100 * 1024 * 1024, ge=1024)
    # PUT /v2/documents/{id}/file and `ingest`: an Office file (DOCX, PPTX, XLSX, ODT, ODP,
    # ODS, RTF, DOC, PPT, XLS) larger than this, or an HTML, Markdown or text file larger than
    # max_text_bytes, gets a 413 (a PDF: max_pdf_bytes).
    max_office_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    max_text_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    # Office files are converted to PDF by LibreOffice (pdfs/convert.py): this program, each
    # conversion stopped after office_timeout_s by the clock and limited to office_memory_mb of
    # address space (and its PDF to max_pdf_bytes); as many at once as pdf_workers.
    soffice_path: str = Field(default="soffice", min_length=1)
    office_timeout_s: float = Field(default=120.0, gt=0)
    office_memory_mb: int = Field(default=2048, ge=256)

    # Run the migrations when `serve` starts. Convenient on one machine; a deployment with
    # several replicas runs `highlight-service migrate` once per release (a Job or init
    # container) and sets this to false, as the image does.
    migrate_on_start: bool = True
    # Worker processes of `serve` (each with its own PDF workers and caches); 1 is one process.
    workers: int = Field(default=1, ge=1, le=64)
    # A worker of `serve --workers N` that does not answer the supervisor's health check within
    # this is killed and replaced. Its first answer comes only once it has imported the app:
    # uvicorn's 5 s killed every worker of a busy host before that, again and again.
    worker_healthcheck_timeout_s: int = Field(default=60, ge=1, le=3600)
    # LLM calls in flight at once from this replica; a batch that cannot get a slot within
    # llm_queue_timeout_s (or its deadline) answers with the lexical selector (reason llm_busy).
    llm_max_in_flight: int = Field(default=16, ge=1, le=1024)
    llm_queue_timeout_s: float = Field(default=2.0, ge=0)
    # Database connections each process keeps open, and how many more it may open under a burst
    # (closed again when returned). A pool smaller than the requests in flight that use the
    # database made every burst open and close connections: on PostgreSQL a backend process
    # each, 12% of the CPU per request at 64 clients. PostgreSQL's max_connections (100 by
    # default) must cover replicas x workers x (pool + overflow).
    db_pool_size: int = Field(default=10, ge=1, le=1000)
    db_max_overflow: int = Field(default=10, ge=0, le=1000)
    # Prometheus metrics at /metrics (a read route: it needs a read token when auth is on).
    metrics_enabled: bool = True

    @field_validator("database_url")
    @classmethod
    def _usable_database_url(cls, value: str) -> str:
        # At start-up, as a configuration error, rather than as a traceback from the first
        # connection. The message never shows the URL: it may hold a password.
        from sqlalchemy.engine import make_url

        try:
            make_url(value).get_dialect()
        except Exception:
            raise ValueError(
                "not a database URL this service can use, e.g. postgresql+asyncpg://user:pass@"
                "host/db or sqlite+aiosqlite:///./var/highlight.db"
            ) from None
        return value

    @field_validator("index_signing_keys")
    @classmethod
    def _usable_signing_keys(cls, value: list[SecretStr]) -> list[SecretStr]:
        # Says which entry is wrong by its position, never by its value (it is a secret).
        ids = []
        for number, key in enumerate(value, 1):
            found = SIGNING_KEY.fullmatch(key.get_secret_value())
            if found is None:
                raise ValueError(
                    f"key {number} is not id:secret (id: 1-32 of A-Z a-z 0-9 . _ -; secret: 32 "
                    "or more characters without spaces)"
                )
            ids.append(found[1])
        if len(set(ids)) != len(ids):
            raise ValueError("two keys have the same id")
        return value

    def llm_problem(self) -> str | None:
        """What an LLM provider set without its base URL, model or key lacks, or None. Checked
        where the LLM is used (``serve``, ``demo``, the app), not when settings load: ``ingest``,
        ``locate`` and ``migrate`` never call the LLM and must not be blocked by its settings."""
        if self.llm_provider == "none":
            return None
        missing = [
            f"HIGHLIGHT_LLM_{name.upper()}"
            for name in ("base_url", "model")
            if not getattr(self, f"llm_{name}")
        ]
        if (
            self.llm_provider in ("openrouter", "openai")
            and not self.llm_api_key.get_secret_value()
        ):
            missing.append("HIGHLIGHT_LLM_API_KEY")
        if not missing:
            return None
        return (
            f"HIGHLIGHT_LLM_PROVIDER={self.llm_provider} needs {', '.join(missing)} "
            "(or HIGHLIGHT_LLM_PROVIDER=none for the lexical selector)"
        )

    def require_llm_settings(self) -> None:
        """Raise a ConfigurationError (names the variables, never a value) when the LLM is
        half set; the service refuses to start rather than fail on the first batch."""
        problem = self.llm_problem()
        if problem is not None:
            raise ConfigurationError(problem)

    @property
    def auth_enabled(self) -> bool:
        return bool(self.auth_read_tokens or self.auth_write_tokens)


class ConfigurationError(ValueError):
    """Settings that cannot work, described without echoing any value (a value may be a secret)."""


def describe(exc: ValidationError) -> str:
    """One line per problem: the variable and what is wrong, never the input (pydantic's own
    message shows the input, which for a model-level check is every setting, secrets included)."""
    lines = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(p) for p in error["loc"])
        name = f"HIGHLIGHT_{where.upper()}: " if where else ""
        lines.append(f"{name}{error['msg'].removeprefix('Value error, ')}")
    return "; ".join(lines)


def describe_unparsable(exc: SettingsError) -> str:
    """pydantic-settings' error for a value it could not even decode (JSON for a list), named by
    its variable; the value itself is never shown."""
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None or found.group(1) not in Settings.model_fields:
        return "a setting could not be read"
    name = found.group(1)
    shape = str(Settings.model_fields[name].annotation)
    expected = "a JSON list" if "list" in shape else "a JSON object" if "dict" in shape else "JSON"
    cause = exc.__cause__
    at = (
        f" ({cause.msg} at column {cause.colno})" if isinstance(cause, json.JSONDecodeError) else ""
    )
    return f"HIGHLIGHT_{name.upper()} is not valid JSON{at}; it must be {expected}"


@lru_cache
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise ConfigurationError(describe(exc)) from None
    except SettingsError as exc:
        raise ConfigurationError(describe_unparsable(exc)) from None
