"""The PDF file response: Starlette's FileResponse (Range requests, which PDF.js uses), with its
range errors brought into the service's error contract instead of plain text."""

from __future__ import annotations

from starlette.responses import FileResponse, MalformedRangeHeader, RangeNotSatisfiable

from app.core.errors import AppError, ErrorCode


class RangeNotInFile(AppError):
    status_code = 416
    code = ErrorCode.range_not_satisfiable


class PdfFileResponse(FileResponse):
    @classmethod
    def _parse_range_header(cls, http_range: str, file_size: int) -> list[tuple[int, int]]:
        try:
            return super()._parse_range_header(http_range, file_size)
        except MalformedRangeHeader:
            # RFC 9110 lets a server ignore a Range it cannot parse: the whole file is sent.
            return []
        except RangeNotSatisfiable as exc:
            error = RangeNotInFile(f"the range {http_range!r} starts past the end of the file")
            error.headers = {"Content-Range": f"bytes */{file_size}"}
            raise error from exc
