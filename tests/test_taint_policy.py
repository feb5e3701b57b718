"""T1: the taint policy table, path resolution against the workspace, and the ledger's bookkeeping."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import memwarden
from memwarden.errors import InvalidInput
from memwarden.service import MemoryService
from memwarden.taint import MAX_SOURCES, Ledger, TaintPolicy, clean_url

POLICY = TaintPolicy.default()


@pytest.mark.parametrize(("tool", "category"), [
    ("web_fetch", "always"), ("WebFetch", "always"), ("WebSearch", "always"), ("web_search", "always"),
    ("browser_navigate", "always"),
    ("http_get", "always"), ("fetch_url", "always"), ("curl", "always"), ("session_search", "always"),
    ("delegate_task", "always"), ("spawn_agent", "always"), ("task", "always"), ("run_subagent", "always"),
    ("google_search", "always"), ("read_email", "always"),
    ("github__get_issue", "mcp"), ("filesystem__read_file", "mcp"), ("brave__web_search", "mcp"),
    ("memory_save", "never"), ("memory_search", "never"), ("get_time", "never"), ("calculator", "never"),
    ("read_file", "path"), ("cat", "path"), ("grep", "path"), ("list_dir", "path"),
    ("Read", "path"), ("Edit", "path"), ("Glob", "path"), ("TodoWrite", "never"), ("Bash", "unknown"),
    ("send_email", "unknown"), ("deploy", "unknown"), ("python", "unknown"), ("__init__", "unknown"),
])
def test_t1_policy_table_categories(tool: str, category: str) -> None:
    assert POLICY.category(tool) == category


def test_t1_policy_is_case_insensitive_and_never_wins() -> None:
    assert POLICY.category("WEB_FETCH") == "always"
    assert POLICY.category("Memory_Search") == "never"
    custom = TaintPolicy.from_toml('[taint]\nalways = ["web_*"]\nnever = ["web_time"]\npath_tools = []\n'
                                   'path_arguments = []\n')
    assert custom.category("web_time") == "never" and custom.category("web_page") == "always"


def test_t1_policy_loads_from_toml_file_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "taint.toml"
    f.write_text('[taint]\nalways = ["scrape"]\nnever = ["web_fetch"]\npath_tools = ["cat"]\n'
                 'path_arguments = ["path"]\nmcp = false\ntrusted_ingest = ["user", "paste"]\n')
    p = TaintPolicy.load(f)
    assert (p.category("web_fetch"), p.category("scrape"), p.category("a__b")) == ("never", "always", "unknown")
    monkeypatch.setenv("MEMWARDEN_TAINT_POLICY", str(f))
    assert memwarden.Policy().taint.category("web_fetch") == "never"


@pytest.mark.parametrize(("text", "message"), [
    ("not toml [", "not valid TOML"),
    ("[other]\nx = 1", "needs a [taint] table"),
    ("[taint]\nalways = 'web_*'", "always must be a list"),
    ("[taint]\nalways = ['']", "always must be a list"),
    ("[taint]\nmcp = 'yes'", "mcp must be true or false"),
    ("[taint]\nalwayz = []", "unknown setting"),
])
def test_t1_policy_bad_toml_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        TaintPolicy.from_toml(text)


def test_t1_policy_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read taint policy"):
        TaintPolicy.load(tmp_path / "missing.toml")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return ws.resolve()


def _ledger(ws: Path) -> Ledger:
    return Ledger(POLICY, [str(ws)])


def test_t1_read_inside_the_workspace_does_not_taint(workspace: Path) -> None:
    ledger = _ledger(workspace)
    for args in ({"path": str(workspace / "src" / "app.py")}, {"path": "src/app.py"}, {"paths": ["src", "."]},
                 {"file_path": str(workspace)}):
        d = ledger.record_tool_call("read_file", args)
        assert not d.tainted, d
    assert not ledger.tainted
    assert str(workspace / "src" / "app.py") in ledger.sources


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../outside.txt", "~/.ssh/id_rsa"])
def test_t1_read_outside_the_workspace_taints(workspace: Path, path: str) -> None:
    d = _ledger(workspace).record_tool_call("read_file", {"path": path})
    assert d.tainted and "outside the workspace" in d.reason


def test_t1_symlink_inside_workspace_pointing_outside_taints(workspace: Path) -> None:
    (workspace / "etc-link").symlink_to("/etc")
    ledger = _ledger(workspace)
    d = ledger.record_tool_call("cat", {"path": "etc-link/hostname"})
    assert d.tainted and "/etc/hostname" in d.reason
    inner = workspace / "src" / "inner-link"
    inner.symlink_to(workspace / "src" / "app.py")
    assert not _ledger(workspace).record_tool_call("cat", {"path": str(inner)}).tainted  # stays inside


@pytest.mark.parametrize("args", [{}, {"query": "x"}, {"path": 7}, {"path": ""}, {"path": "a\x00b"},
                                  {"paths": ["src", None]}])
def test_t1_path_tool_without_a_usable_path_taints(workspace: Path, args: dict[str, object]) -> None:
    assert _ledger(workspace).record_tool_call("read_file", args).tainted


def test_t1_no_workspace_roots_means_every_path_is_outside(tmp_path: Path) -> None:
    d = Ledger(POLICY, []).record_tool_call("read_file", {"path": str(tmp_path)})
    assert d.tainted and "not in a workspace (none was set)" in d.reason


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", b"\xff\xfe", 42])
def test_t1_unparseable_arguments_taint(workspace: Path, arguments: object) -> None:
    d = _ledger(workspace).record_tool_call("get_time", arguments)
    assert d.tainted and "unparseable" in d.reason


def test_t1_json_string_arguments_are_parsed(workspace: Path) -> None:
    assert not _ledger(workspace).record_tool_call("read_file", '{"path": "src/app.py"}').tainted


@pytest.mark.parametrize("name", [None, "", "   ", 3])
def test_t1_tool_call_without_a_name_taints(workspace: Path, name: object) -> None:
    assert _ledger(workspace).record_tool_call(name).tainted


def test_t1_unknown_tool_taints_fail_closed(workspace: Path) -> None:
    d = _ledger(workspace).record_tool_call("frobnicate", {})
    assert d.tainted and "does not know" in d.reason


def test_t1_result_meta_can_only_make_it_stricter(workspace: Path) -> None:
    ledger = _ledger(workspace)
    assert ledger.record_tool_call("get_time", {}, {"untrusted": True}).tainted
    ledger2 = _ledger(workspace)
    assert ledger2.record_tool_call("web_fetch", {"url": "https://a.example/"}, {"untrusted": False}).tainted


def test_t1_taint_is_monotonic_and_reasons_are_kept(workspace: Path) -> None:
    ledger = _ledger(workspace)
    ledger.record_tool_call("web_search", {"q": "memwarden"})
    for _ in range(5):
        ledger.record_tool_call("get_time", {})
    assert ledger.tainted and ledger.reasons == ["web_search: a tool whose results are outside content"]


def test_t1_urls_are_recorded_without_credentials_or_query(workspace: Path) -> None:
    ledger = _ledger(workspace)
    ledger.record_tool_call("web_fetch", {"url": "https://bob:hunter2@evil.example:8443/p/a?token=SECRET#frag"})
    assert "https://evil.example:8443/p/a" in ledger.sources
    assert not any("SECRET" in s or "hunter2" in s for s in ledger.sources)
    assert clean_url("not a url at all?x=1") == "not a url at all"


def test_t1_sources_are_capped(workspace: Path) -> None:
    ledger = _ledger(workspace)
    for i in range(100):
        ledger.record_tool_call("web_fetch", {"url": f"https://site{i}.example/"})
    assert len(ledger.sources) == MAX_SOURCES + 1 and ledger.sources[-1].startswith("(+")


@pytest.mark.parametrize(("kind", "tainted"), [("user", False), ("paste", True), ("attachment", True),
                                               ("document", True), ("email", True), ("", True), (None, True)])
def test_t1_record_ingest_kinds(workspace: Path, kind: object, tainted: bool) -> None:
    assert _ledger(workspace).record_ingest("report.pdf", kind).tainted is tainted


def test_t1_session_taint_reaches_the_written_memory(store: MemoryService, workspace: Path,
                                                     scope: memwarden.Scope) -> None:
    with store.session(scope, workspace=[workspace]) as s:
        assert not s.tainted
        s.record_tool_call("read_file", {"path": "src/app.py"})
        ok = s.save("User's service is written in Python", kind="fact")
        assert ok.status == "accepted" and ok.record is not None
        assert ok.record.provenance.trust == "trusted"
        assert "tool:read_file" in ok.record.provenance.sources
        s.record_tool_call("web_fetch", {"url": "https://blog.example/post?id=3"})
        held = s.save("User's deploy target is blue-green on Fridays", kind="fact")
        assert held.status == "review" and held.record is not None
        p = held.record.provenance
        assert p.trust == "untrusted" and "https://blog.example/post" in p.sources and "tool:web_fetch" in p.sources
        assert "web_fetch" in held.message


def test_t1_workspace_relative_paths_resolve_against_the_first_root(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "f").write_text("x")
    ledger = Ledger(POLICY, [str(a.resolve()), str(b.resolve())])
    assert not ledger.record_tool_call("cat", {"path": str(b / "f")}).tainted
    assert not ledger.record_tool_call("cat", {"path": "f"}).tainted  # a/f: inside a (need not exist)
    monkeypatch.chdir(tmp_path)
    assert ledger.record_tool_call("cat", {"path": "../f"}).tainted
