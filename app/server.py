"""Run the app under uvicorn, with a shutdown that does not keep readers waiting.

On SIGTERM or SIGINT uvicorn stops accepting connections and waits for requests in flight; a
batch waiting on a slow LLM would hold it for the LLM's whole timeout. The service is told first,
so those batches stop waiting and answer with the lexical selector at once; whatever still runs
after ``shutdown_grace_s`` is cancelled by uvicorn.
"""

from __future__ import annotations

import logging
from types import FrameType

import uvicorn
from fastapi import FastAPI

from app.core.config import Settings

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self._app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        services = getattr(self._app.state, "services", None)
        if services is not None and not self.should_exit:
            log.info("shutting down: abandoning LLM waits of requests in flight")
            services.highlights.begin_shutdown()
        super().handle_exit(sig, frame)


def serve(app: FastAPI, settings: Settings, host: str, port: int) -> None:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        timeout_graceful_shutdown=settings.shutdown_grace_s,
        timeout_keep_alive=settings.keep_alive_s,
    )
    _Server(config, app).run()
