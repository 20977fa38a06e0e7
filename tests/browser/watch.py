"""What a page in the browser tests must never do: throw, log an error, or fail a request."""

from __future__ import annotations

from typing import Any


def watch_for_failures(page: Any, problems: list[str]) -> None:
    """Puts in ``problems`` what ``page`` throws, logs as an error, or asks for and does not
    get: a decoder pdf.js asks for and is not served (jbig2.wasm for a scan) is a 404 here."""

    def console(message: Any) -> None:
        if message.type == "error":
            problems.append(f"console: {message.text}")

    def response(answer: Any) -> None:
        if answer.status >= 400:
            problems.append(f"{answer.status}: {answer.url}")

    page.on("pageerror", lambda e: problems.append(f"thrown: {e}"))
    page.on("console", console)
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url} {r.failure}"))
    page.on("response", response)
