"""``memwarden demo``: runs on its own temporary database and key, passes every check it shows, exits 0 within
a few seconds and leaves nothing behind."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from memwarden import demo
from memwarden.cli import app


def _run(workdir: Path, **kw: bool) -> tuple[int, str]:
    buf = io.StringIO()
    code = demo.run(Console(file=buf, width=120, highlight=False), workdir=workdir, **kw)
    return code, buf.getvalue()


def test_demo_passes_every_check_and_cleans_up(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    started = time.perf_counter()
    code, out = _run(work)
    assert code == 0, out
    assert time.perf_counter() - started < 10
    assert list(work.iterdir()) == []  # the temporary directory is gone
    assert "✗" not in out and "checks passed" in out


def test_demo_shows_each_scenario(tmp_path: Path) -> None:
    code, out = _run(tmp_path)
    assert code == 0
    for needle in (
        "record.empty",
        "record.control_chars",  # P1 gate step: rejected candidates with their rules
        "byte-identical after 3 writes",  # P1 frozen snapshot
        "search sees the write",  # P2 live reads
        "CapacityError",
        "lists all 3 entries",  # D1
        "the write of a tainted session is held for review",  # T1, T2
        "the agent cannot promote it",  # T3
        "still labelled untrusted",
        "UPDATE memories SET content",
        "doctor finds the edited record",
        "not served",  # I1, T6
        "memories_fts",
        "memory_history",
        "memory_links",
        "no row for the deleted memory",  # D3
        "audit verify",
        "chain is intact",  # A1
        "audit reads",  # A2
    ):
        assert needle in out, needle
    assert "\x1b[2J" not in out  # the rejected escape sequence is shown escaped, never sent to the terminal


def test_demo_never_touches_the_users_database_or_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMWARDEN_KEY")
    key_file = tmp_path / "user.key"
    monkeypatch.setenv("MEMWARDEN_KEY_FILE", str(key_file))
    code, _ = _run(tmp_path)
    assert code == 0
    assert not Path(os.environ["MEMWARDEN_URL"]).exists()
    assert not key_file.exists()


def test_demo_verbose_prints_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(tmp_path, verbose=True)
    assert code == 0
    err = capsys.readouterr().err
    assert " added " in err and " rejected " in err and " removed " in err


def test_demo_command_exits_zero() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "checks passed" in result.stdout
