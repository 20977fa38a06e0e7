"""Whether a PDF's metadata title names the document, and the title of one whose title does not.
Pure.

A converter writes its own placeholder into /Title as often as the author's title: "Microsoft
Word - budget_2024.doc", "PowerPoint Presentation", "untitled", "Document1", the source file's
name or path. Shown as a citation's document title, that reads as a mistake; the file name the
document was ingested from says more.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath

# "Microsoft Word - x.doc", "Microsoft PowerPoint - deck.pptx", "Microsoft Excel - Book1.xlsx".
_OFFICE_PREFIX = re.compile(
    r"^microsoft\s+(?:office\s+)?(?:word|powerpoint|excel|visio|publisher|outlook)\s*[-–—:]",
    re.IGNORECASE,
)
# A whole title that is a program's default name for a new file, possibly numbered.
_PLACEHOLDER = re.compile(
    r"^(?:untitled(?:\s*document)?|document|doc|book|sheet|slide|presentation|"
    r"powerpoint[\s-]+pr[eäé]sentation|pr[eé]sentation\s+powerpoint|new\s+document|new\s+microsoft\s+word\s+document|"
    r"microsoft\s+word\s+document|title|no\s+title|default|temp|tmp|"
    r"unbenannt|sans\s+titre|sin\s+t[ií]tulo|senza\s+titolo|"
    r"无标题|無標題|未命名|無題)"
    r"(?:[\s_-]*\(?\d+\)?)?$",
    re.IGNORECASE,
)
# A file name: "report_final.docx", "scan0001.pdf", "deck.key".
_FILE_NAME = re.compile(
    r"^[^\s/\\]*\.(?:pdf|docx?|dotx?|rtf|odt|odp|ods|pptx?|xlsx?|xlsm|csv|txt|html?|tex|dvi|ps|"
    r"indd|pages|key|numbers|pub|vsdx?|wpd|xps|tiff?|jpe?g|png)$",
    re.IGNORECASE,
)
# What follows an Office prefix when it is the converter's: the file's name (spaces allowed).
_NAMED_FILE = re.compile(_FILE_NAME.pattern.replace(r"^[^\s/\\]*", r"^.*"), re.IGNORECASE)
# "C:\Users\...", "/home/x/...", "\\server\share\...", "file:///...".
_PATH = re.compile(r"^(?:[a-z]:[\\/]|\\\\|/|file:/|~/)", re.IGNORECASE)
# The name an upload is stored under (storage.content_key): its hash, which names nothing.
_CONTENT_NAME = re.compile(r"[0-9a-f]{64}\.pdf")


def usable_title(title: str | None) -> str | None:
    """``title`` (a PDF's metadata title) with its white space collapsed when it names the
    document, else None: empty, a converter's placeholder, a file name or a path."""
    if title is None:
        return None
    cleaned = " ".join(title.split())
    if not any(c.isalnum() for c in cleaned):  # "", "---"; "1984" is a title
        return None
    if converter_placeholder(cleaned) or _PLACEHOLDER.match(cleaned):
        return None
    if _PATH.match(cleaned) or _FILE_NAME.match(cleaned):
        return None
    return cleaned


def converter_placeholder(title: str) -> bool:
    """Word's, PowerPoint's or Excel's own /Title: "Microsoft Word - " and the file's name or a
    default name ("Microsoft Word - Document1"). Nobody names a document so on purpose;
    "Microsoft Excel - the missing manual" is a book."""
    cleaned = " ".join(title.split())
    prefix = _OFFICE_PREFIX.match(cleaned)
    if prefix is None:
        return False
    rest = cleaned[prefix.end() :].strip()
    return not rest or bool(_NAMED_FILE.match(rest) or _PLACEHOLDER.match(rest))


def title_from_name(name: str) -> str:
    """A readable title from a file name or path: its stem, with underscores as spaces
    ("reports/budget_2024.pdf" -> "budget 2024"). Hyphens and case are left as they are."""
    stem = PureWindowsPath(PurePosixPath(name).name).stem if name else ""
    return " ".join(stem.replace("_", " ").split()) or name


def shown_title(stored: str, source_path: str, document_id: str) -> str:
    """The title to show for a stored document: its title unless that is an Office converter's
    (a document ingested before metadata placeholders were refused), else its file's name, else
    its id. Only the converter's form is replaced here: any other title may be the caller's own
    ("1984", "Title", "Book 2"), which is shown as given. A PDF uploaded through the API is
    stored by its hash, whose name says nothing."""
    if not converter_placeholder(stored):
        return stored
    return name_title(source_path, document_id)


def name_title(source_path: str, document_id: str) -> str:
    """The title a document without a usable one gets: its file's name made readable, or its id
    when the file is named by its hash (uploads, and ingested files copied under the root)."""
    name = PurePosixPath(source_path).name
    if name and not _CONTENT_NAME.fullmatch(name):
        return title_from_name(name)
    return document_id
