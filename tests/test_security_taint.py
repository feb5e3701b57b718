"""Issue 12, taint findings 5–6: deep arguments (T1, T6) and file-read gaps (T1).

Every test performs the attack as the red team described it and fails if the attack works.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import memwarden
from memwarden.service import MemoryService
from memwarden.taint import Ledger, TaintPolicy

SCOPE = memwarden.Scope("acme", "u-42", "support")
POLICY = TaintPolicy.default()


# --- finding 5: taint fails open on deep JSON (T1, T6) --------------------------------------------------------

DEEP = 5_000


def _deep_dict(leaf: Any) -> dict[str, Any]:
    x: Any = leaf
    for _ in range(DEEP):
        x = {"a": x}
    return {"url": x}


@pytest.mark.parametrize("tool", ["web_fetch", "get_time", "read_file", "memory_search"])
@pytest.mark.parametrize("arguments", [
    "[" * DEEP + "]" * DEEP,
    '{"url": ' + "[" * DEEP + "]" * DEEP + "}",
    '{"path": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}",
])
def test_T6_deeply_nested_json_arguments_taint_instead_of_raising(tmp_path: Path, tool: str,
                                                                  arguments: str) -> None:
    ledger = Ledger(POLICY, [str(tmp_path)])
    d = ledger.record_tool_call(tool, arguments)
    assert d.tainted and ledger.tainted


def test_T6_deeply_nested_argument_objects_taint(tmp_path: Path) -> None:
    for tool in ("web_fetch", "read_file"):
        ledger = Ledger(POLICY, [str(tmp_path)])
        assert ledger.record_tool_call(tool, {"path": "x", "options": _deep_dict("/etc/passwd")}).tainted


def test_T6_any_failure_while_judging_a_tool_call_taints(tmp_path: Path) -> None:
    class Hostile(dict[str, Any]):
        def values(self) -> Any:
            raise RuntimeError("boom")

        def items(self) -> Any:
            raise RuntimeError("boom")

    ledger = Ledger(POLICY, [str(tmp_path)])
    d = ledger.record_tool_call("read_file", Hostile(path="src/app.py"))
    assert d.tainted and "could not be judged" in d.reason and ledger.tainted


def test_T6_record_turns_with_deep_tool_call_arguments_taints(store: MemoryService) -> None:
    deep = '{"url": ' + "[" * DEEP + "]" * DEEP + "}"
    with store.session(SCOPE) as s:
        out = s.record_turns([{"role": "assistant", "content": "fetching",
                               "tool_calls": [{"function": {"name": "get_time", "arguments": deep}}]},
                              {"role": "user", "content": "The user's favourite colour is green"}])
        assert s.tainted
    assert [t.status for t in out] == ["accepted", "review"]


@pytest.mark.parametrize("arguments", [
    "[" * DEEP + "]" * DEEP,
    '{"content": ' + "[" * DEEP + "]" * DEEP + "}",
    {"content": "x", "kind": _deep_dict(1)},
    {"query": _deep_dict("x")},
])
@pytest.mark.parametrize("tool", ["memory_save", "memory_search", "memory_view"])
def test_T6_call_tool_never_raises_on_deeply_nested_arguments(store: MemoryService, tool: str,
                                                              arguments: Any) -> None:
    with store.session(SCOPE) as s:
        out = s.call_tool(tool, arguments)
    assert out.get("error") == "invalid_arguments"
    json.dumps(out)


def test_T6_call_tool_turns_an_internal_failure_into_an_error(store: MemoryService,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(memwarden.tools, "dispatch", broken)
    with store.session(SCOPE) as s:
        out = s.call_tool("memory_view", {})
    assert out["error"] == "internal" and "Traceback" not in out["message"]


# --- finding 6: file-read taint gaps (T1) ----------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("attacker text\n")
    return root.resolve()


def test_T1_path_that_becomes_an_outside_symlink_after_its_first_read_taints(ws: Path) -> None:
    ledger = Ledger(POLICY, [str(ws)])
    notes = ws / "notes.txt"
    notes.write_text("mine\n")
    assert not ledger.record_tool_call("read_file", {"path": "notes.txt"}).tainted
    notes.unlink()
    notes.symlink_to(ws.parent / "outside" / "secret.txt")
    d = ledger.record_tool_call("read_file", {"path": "notes.txt"})
    assert d.tainted and "outside the workspace" in d.reason
    # the same through a directory that is swapped for a link
    ledger2 = Ledger(POLICY, [str(ws)])
    assert not ledger2.record_tool_call("cat", {"path": "src/app.py"}).tainted
    (ws / "src" / "app.py").unlink()
    (ws / "src").rmdir()
    (ws / "src").symlink_to(ws.parent / "outside")
    assert ledger2.record_tool_call("cat", {"path": "src/app.py"}).tainted


@pytest.mark.parametrize("args", [
    {"path": "src", "pattern": "../outside/*"},
    {"path": ".", "patterns": ["src/**", "../outside/*.txt"]},
    {"path": ".", "include": ["src/*.py", "../outside/**"]},
    {"path": "src", "include": "../outside/*.txt"},
    {"path": ".", "glob": "*/../../outside/*"},
    {"path": ".", "pattern": "src/*/../../../outside/secret.txt"},
    {"path": ".", "pattern": "{src,/etc}/*"},
    {"path": ".", "exclude": ["!../outside/secret.txt"]},
    {"path": "src", "glob": "/etc/*"},
    {"path": "src", "options": {"extra_paths": ["../outside/secret.txt"]}},
])
def test_T1_glob_include_and_pattern_arguments_outside_the_workspace_taint(ws: Path, args: dict[str, Any]
                                                                          ) -> None:
    for tool in ("glob", "grep", "read_many_files"):
        d = Ledger(POLICY, [str(ws)]).record_tool_call(tool, args)
        assert d.tainted, (tool, args, d)


@pytest.mark.parametrize("args", [
    {"pattern": "src/**/*.py"}, {"pattern": "*.md"}, {"pattern": "def main", "path": "src"},
    {"include": ["src/*.py", "README*"]}, {"pattern": "TODO|FIXME", "glob": "*.py", "output_mode": "content"},
])
def test_T1_patterns_inside_the_workspace_do_not_taint(ws: Path, args: dict[str, Any]) -> None:
    d = Ledger(POLICY, [str(ws)]).record_tool_call("grep", args)
    assert not d.tainted, d


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "FILE:///etc/passwd", "file://localhost/etc/passwd",
                                 "file://fileserver/share/notes.txt", "file:///etc/%70asswd",
                                 "file:{ws}/../outside/secret.txt"])
def test_T1_file_uri_arguments_outside_the_workspace_taint(ws: Path, uri: str) -> None:
    d = Ledger(POLICY, [str(ws)]).record_tool_call("read_file", {"path": uri.format(ws=ws)})
    assert d.tainted, d


def test_T1_file_uri_inside_the_workspace_does_not_taint(ws: Path) -> None:
    ledger = Ledger(POLICY, [str(ws)])
    assert not ledger.record_tool_call("read_file", {"path": (ws / "src" / "app.py").as_uri()}).tainted


@pytest.mark.parametrize("arguments", [
    '{"path": "/etc/passwd", "path": "src/app.py"}',
    '{"path": "src/app.py", "path": "src/app.py"}',
    '{"path": "src/app.py", "opts": {"file": "a", "file": "b"}}',
])
def test_T1_duplicate_json_keys_taint(ws: Path, arguments: str) -> None:
    d = Ledger(POLICY, [str(ws)]).record_tool_call("read_file", arguments)
    assert d.tainted and "twice" in d.reason


def test_T1_duplicate_json_keys_in_recorded_turns_taint(store: MemoryService, ws: Path) -> None:
    call = {"function": {"name": "read_file", "arguments": '{"path": "/etc/passwd", "path": "src/app.py"}'}}
    with store.session(SCOPE, workspace=[ws]) as s:
        s.record_turns([{"role": "assistant", "content": "reading", "tool_calls": [call]}])
        assert s.tainted


def test_T1_hard_link_to_a_file_outside_the_workspace_taints(ws: Path) -> None:
    try:
        os.link(ws.parent / "outside" / "secret.txt", ws / "src" / "innocent.txt")
    except OSError as exc:  # pragma: no cover - a filesystem without hard links
        pytest.skip(f"no hard links here: {exc}")
    for path in ("src/innocent.txt", str(ws / "src" / "innocent.txt")):
        d = Ledger(POLICY, [str(ws)]).record_tool_call("read_file", {"path": path})
        assert d.tainted and "hard-linked" in d.reason


@pytest.mark.parametrize("args", [
    {"path": "src/app.py", "also": "../outside/secret.txt"},
    {"path": "https://attacker.example/page"},
    {"path": "src/app.py", "fallback_url": "https://attacker.example/page"},
    {"paths": ["src/app.py", "~/.ssh/id_rsa"]},
])
def test_T1_every_path_like_argument_is_judged(ws: Path, args: dict[str, Any]) -> None:
    d = Ledger(POLICY, [str(ws)]).record_tool_call("read_file", args)
    assert d.tainted, d


def test_T1_result_meta_path_outside_the_workspace_taints(ws: Path) -> None:
    d = Ledger(POLICY, [str(ws)]).record_tool_call("read_file", {"path": "src/app.py"},
                                                   {"path": str(ws.parent / "outside" / "secret.txt")})
    assert d.tainted, d
