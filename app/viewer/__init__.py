"""The reference viewer's built files (``static/``, made by scripts/build_viewer.sh from
frontend-contract/viewer/; never edited by hand)."""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
