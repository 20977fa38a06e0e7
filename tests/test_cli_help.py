"""What `highlight-service COMMAND --help` tells a newcomer: what each command reads and writes,
with an example, and for `locate` what a stdin line holds. The examples are checked against
what the commands really print, so the help cannot drift from them."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from app.cli import _parser, main
from app.pdfs.locate_cli import run

COMMANDS = ["serve", "migrate", "ingest", "locate", "demo", "openapi"]


def ingest_example_fields(capsys: pytest.CaptureFixture[str]) -> set[str]:
    """The keys of the JSON object the ingest help's example shows."""
    text = help_of("ingest", capsys=capsys)
    return set(re.findall(r'^\s+"(\w+)":', text[text.index("\nexample") :], re.M))


def help_of(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_the_command_list_is_the_one_checked_here() -> None:
    parser = _parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    assert sorted(sub.choices) == sorted(COMMANDS)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_names_its_input_and_output_with_an_example(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of(command, capsys=capsys)
    for section in ("\ninput:", "\noutput:", "\nexample"):
        assert section in text, f"{command} --help has no {section.strip()} section:\n{text}"
    example = text[text.index("\nexample") :]
    assert f"highlight-service {command}" in example


def test_the_overview_lists_every_command_and_the_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of(capsys=capsys)
    for command in COMMANDS:
        assert re.search(rf"^\s+{command}\s+\S", text, re.M), command
    assert "exit codes: 0" in text


def test_locate_help_explains_the_json_lines_and_what_pages_means(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of("locate", capsys=capsys)
    assert "one JSON object per line" in text
    assert "stdin" in text
    # The README's [1, 2] once read like a list of pages.
    assert "[first, last], the 1-based, inclusive range of pages" in text
    for field in ('"found"', '"no_match"', '"error"', "rects", "PDF points"):
        assert field in text


def test_the_locate_example_is_what_locate_prints(
    sample_pdf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of("locate", capsys=capsys)
    example = text[text.index("\nexample") :]
    request = re.search(r"echo '(.+?)'", example)
    assert request is not None
    shown = example[example.index('\n  {"id"') :].strip()
    out = io.StringIO()
    assert run(sample_pdf, io.StringIO(request.group(1) + "\n"), out) == 0
    assert json.loads(shown) == json.loads(out.getvalue())
