"""One typed settings object, read from the environment (prefix ``HIGHLIGHT_``) and ``.env``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LLMProvider = Literal["vllm", "openrouter", "openai", "none"]
LLMTier = Literal["json_schema", "structured_outputs", "prompted"]
ALL_TIERS: list[LLMTier] = ["json_schema", "structured_outputs", "prompted"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HIGHLIGHT_", env_file=".env", extra="ignore")

    database_url: str = "sqlite+aiosqlite:///./var/highlight.db"
    pdf_root: Path = Path("./var/pdfs")
    index_cache_dir: Path | None = Path("./var/index-cache")

    llm_provider: LLMProvider = "none"
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_max_tokens: int = Field(default=1024, ge=16)
    llm_temperature: float = Field(default=0.0, ge=0, le=2)
    # Merged into vLLM's chat_template_kwargs, e.g. {"enable_thinking": false} for Qwen3.
    llm_chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    # Tiers to try, in order; a deployment can drop one it knows is broken.
    llm_tiers: list[LLMTier] = Field(default_factory=lambda: list(ALL_TIERS))

    max_citations: int = Field(default=20, ge=1)
    max_query_chars: int = Field(default=4_000, ge=1)
    max_answer_chars: int = Field(default=20_000, ge=1)
    max_sentences_per_chunk: int = Field(default=200, ge=1)
    max_highlights_per_chunk: int = Field(default=5, ge=1)
    max_upload_bytes: int = Field(default=200 * 1024 * 1024, ge=1)

    log_level: str = "INFO"

    @model_validator(mode="after")
    def _llm_needs_endpoint(self) -> Settings:
        # Fail at start-up, not on the first user request, when an LLM is asked for but not wired.
        if self.llm_provider != "none":
            missing = [
                f"HIGHLIGHT_LLM_{name.upper()}"
                for name in ("base_url", "model")
                if not getattr(self, f"llm_{name}")
            ]
            if missing:
                raise ValueError(
                    f"HIGHLIGHT_LLM_PROVIDER={self.llm_provider} needs {', '.join(missing)}"
                )
        if self.llm_provider in ("openrouter", "openai") and not self.llm_api_key:
            raise ValueError(
                f"HIGHLIGHT_LLM_PROVIDER={self.llm_provider} needs HIGHLIGHT_LLM_API_KEY"
            )
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()
