"""``highlight-service`` command line: serve, migrate, ingest, locate, demo, openapi."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import sys
from pathlib import Path

from app.core.config import ConfigurationError, Settings, get_settings
from app.core.errors import AppError, DatabaseUnavailable

log = logging.getLogger("highlight-service")
SAMPLE_DOCUMENT_ID = "sample-assembly-2025-11-20"


def _configure_logging(settings: Settings) -> None:
    from app.core.logs import configure_logging, redaction_of

    # JSON lines unless stderr is a terminal (HIGHLIGHT_LOG_FORMAT); no secret, no server folder.
    secrets, folders = redaction_of(settings)
    configure_logging(
        settings.log_level, settings.log_format, secrets=secrets, private_paths=folders
    )
    # Alembic announces each of its plugins at INFO, before every migration; httpx logs every
    # LLM request at INFO, which the client's own line already says.
    for noisy in ("alembic.runtime.plugins", "httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _database_problem(settings: Settings, exc: BaseException) -> DatabaseUnavailable | None:
    """One line for an error that says the database cannot be reached or used (never the
    password), or None when ``exc`` says something else."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, DBAPIError):
        reason = str(exc.orig)
    elif isinstance(exc, ConnectionError | TimeoutError | socket.gaierror):
        reason = str(exc) or type(exc).__name__
    else:
        return None
    log.debug("database unusable", exc_info=exc)
    where = make_url(settings.database_url).render_as_string(hide_password=True)
    return DatabaseUnavailable(
        f"cannot use the database at {where}: {reason.strip().splitlines()[0]}; check "
        "HIGHLIGHT_DATABASE_URL and that the database server is running"
    )


def _migrate(settings: Settings, *, announce: bool = True) -> list[str]:
    """The revisions applied, oldest first (logged in one line when ``announce``)."""
    from app.db.migrate import upgrade
    from app.db.session import describe_database

    try:
        applied = upgrade(settings.database_url)
    except Exception as exc:
        problem = _database_problem(settings, exc)
        if problem is None:
            raise
        raise problem from exc
    if applied and announce:
        log.info(
            "database %s migrated to %s (%s)",
            describe_database(settings.database_url),
            applied[-1],
            ", ".join(applied),
        )
    return applied


def _start_up_problem(settings: Settings, exc: BaseException) -> str:
    """The one line for a worker process whose start-up failed (the parent prints it)."""
    problem = _database_problem(settings, exc)
    if problem is not None:
        return problem.message
    if isinstance(exc, AppError):
        return exc.message
    return f"a worker did not start: {type(exc).__name__}: {exc}"


def _serve(settings: Settings, host: str, port: int, workers: int | None = None) -> None:
    from app.main import create_app, describe_service
    from app.server import serve
    from app.server_workers import serve_workers

    summary = describe_service(settings)
    workers = workers or settings.workers
    if workers > 1:
        serve_workers(
            create_app,
            settings,
            host,
            port,
            workers,
            setup_logging=_configure_logging,
            describe=_start_up_problem,
            summary=summary,
        )
        return
    try:
        serve(create_app(settings), settings, host, port, summary)
    except Exception as exc:  # the lifespan's start-up failed
        problem = _database_problem(settings, exc)
        if problem is None:
            raise
        raise problem from exc


def _cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    # Before anything else: a server whose LLM is half set would fail every batch's LLM call.
    settings.require_llm_settings()
    # With several replicas a release runs `migrate` once (a Job) and serve does not
    # (HIGHLIGHT_MIGRATE_ON_START=false); /readyz says when the schema is behind.
    if settings.migrate_on_start and not args.no_migrate:
        _migrate(settings)
    _serve(settings, args.host, args.port, args.workers)
    return 0


def _cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    from app.db.session import describe_database

    applied = _migrate(settings, announce=False)
    done = f" (applied {', '.join(applied)})" if applied else ""
    print(f"database {describe_database(settings.database_url)} is up to date{done}")
    return 0


def _cmd_ingest(settings: Settings, args: argparse.Namespace) -> int:
    from app.services import ingest_file

    _migrate(settings)
    result = asyncio.run(ingest_file(settings, args.pdf, args.document_id, args.title))
    print(json.dumps(result, indent=2))
    return 0


def _cmd_locate(settings: Settings, args: argparse.Namespace) -> int:
    from app.alignment.index import DocumentIndex
    from app.pdfs.indexing import build_in_workers, ocr_options
    from app.pdfs.locate_cli import run
    from app.pdfs.workers import pdf_workers

    workers = pdf_workers(settings)
    # The index the service builds: scanned pages read by Tesseract in the bounded workers,
    # with the same settings (HIGHLIGHT_OCR_*), so the command and a batch agree.
    ocr = ocr_options(settings, command=True)

    def build(path: Path) -> DocumentIndex:
        return build_in_workers(workers, path.read_bytes(), path.name, ocr)

    try:
        return run(args.pdf, sys.stdin, sys.stdout, build)
    finally:
        workers.close()


def _cmd_demo(settings: Settings, args: argparse.Namespace) -> int:
    from app.pdfs.sample import write_sample_pdf
    from app.services import ingest_file

    settings.require_llm_settings()

    _migrate(settings)
    pdf = write_sample_pdf(settings.pdf_root / "sample" / "sample-assembly.pdf")
    result = asyncio.run(ingest_file(settings, pdf, SAMPLE_DOCUMENT_ID))
    log.info("sample document %s ingested: chunks %s", SAMPLE_DOCUMENT_ID, result["chunks"])
    _serve(settings, args.host, args.port)
    return 0


def _cmd_openapi(settings: Settings, args: argparse.Namespace) -> int:
    from app.main import create_app

    text = json.dumps(create_app(settings).openapi(), indent=2, sort_keys=True) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _title(text: str) -> str:
    # The bounds DocumentUpsert.title has, said here as an argument error rather than later
    # as a validation error.
    title = " ".join(text.split())
    if not title or len(title) > 500 or "\x00" in title:
        raise argparse.ArgumentTypeError("a title is 1 to 500 characters of text")
    return title


def _worker_count(text: str) -> int:
    # The same bounds as Settings.workers.
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers from 1 to 64")
    return int(text)


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
    example: str,
) -> argparse.ArgumentParser:
    # Raw text: the help lays out input, output and an example as written (cli_help.py).
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _parser() -> argparse.ArgumentParser:
    from app import cli_help

    parser = argparse.ArgumentParser(
        prog="highlight-service",
        description="Citation highlights for a RAG chat: which sentences of the cited chunks\n"
        "support an answer, and where they are in the PDF (page numbers and rectangles).",
        epilog=cli_help.MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = _command(sub, "serve", "run the HTTP API", cli_help.SERVE, cli_help.SERVE_EXAMPLE)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (8000)")
    serve.add_argument("--no-migrate", action="store_true", help="do not run migrations first")
    serve.add_argument(
        "--workers",
        type=_worker_count,
        help="worker processes sharing the port, each with its own PDF workers and caches "
        "(default HIGHLIGHT_WORKERS, 1: one process)",
    )
    serve.set_defaults(func=_cmd_serve)

    _command(
        sub,
        "migrate",
        "bring the database schema up to date",
        cli_help.MIGRATE,
        cli_help.MIGRATE_EXAMPLE,
    ).set_defaults(func=_cmd_migrate)

    ingest = _command(
        sub,
        "ingest",
        "PDF or Office file -> chunks stored in the database (JSON summary on stdout)",
        cli_help.INGEST,
        cli_help.INGEST_EXAMPLE,
    )
    ingest.add_argument(
        "pdf", type=Path, metavar="FILE", help="the PDF or Office file (DOCX, PPTX, ...) to ingest"
    )
    ingest.add_argument(
        "--document-id", help="the document's id (default: the file name, slugified)"
    )
    ingest.add_argument(
        "--title",
        type=_title,
        help="the title the viewer and results show (default: the PDF's own title, else "
        "the file name)",
    )
    ingest.set_defaults(func=_cmd_ingest)

    locate = _command(
        sub,
        "locate",
        "JSON lines of quotes on stdin -> JSON lines of rectangles on stdout",
        cli_help.LOCATE,
        cli_help.LOCATE_EXAMPLE,
    )
    locate.add_argument("pdf", type=Path, metavar="PDF", help="the PDF to search")
    locate.set_defaults(func=_cmd_locate)

    demo = _command(
        sub,
        "demo",
        "ingest a generated sample PDF, then serve (no LLM key needed)",
        cli_help.DEMO,
        cli_help.DEMO_EXAMPLE,
    )
    demo.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    demo.add_argument("--port", type=int, default=8000, help="port to listen on (8000)")
    demo.set_defaults(func=_cmd_demo)

    openapi = _command(
        sub,
        "openapi",
        "print the OpenAPI document (JSON)",
        cli_help.OPENAPI,
        cli_help.OPENAPI_EXAMPLE,
    )
    openapi.add_argument("--output", type=Path, help="write to this file instead of stdout")
    openapi.set_defaults(func=_cmd_openapi)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = get_settings()
    except ConfigurationError as exc:  # names the variable, never shows a value
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    _configure_logging(settings)
    try:
        code: int = args.func(settings, args)
    except ConfigurationError as exc:  # a setting checked where it is used (the LLM's, storage)
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except AppError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    except Exception as exc:  # one line for a person; the traceback only when asked for
        log.debug("unexpected failure", exc_info=True)
        print(
            f"error: unexpected {type(exc).__name__}: {exc} (HIGHLIGHT_LOG_LEVEL=DEBUG shows "
            "where)",
            file=sys.stderr,
        )
        return 1
    return code


if __name__ == "__main__":
    raise SystemExit(main())
