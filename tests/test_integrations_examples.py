"""Issue 15 acceptance: each framework example runs offline against a loopback scripted model; the agent saves a
memory, a later session sees it in its block, and a run that fetched a web page gets its save held — with no taint
code in the example."""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def fake_llm() -> Iterator[object]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from fake_llm import FakeLLM

        with FakeLLM() as llm:
            yield llm
    finally:
        sys.path.remove(str(EXAMPLES))


def _example(name: str) -> ModuleType:
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))


def _check(report: dict[str, object]) -> None:
    assert [s["status"] for s in report["first_saves"]] == ["accepted"]  # type: ignore[index, union-attr]
    assert "User prefers Go for services" in str(report["second_block"])
    assert [s["status"] for s in report["fetch_saves"]] == ["review"]  # type: ignore[index, union-attr]
    assert report["fetch_session_tainted"] is True
    assert "legacy v1" not in str(report["third_block"])  # held: never replayed
    assert "User prefers Go for services" in str(report["third_block"])


def _no_taint_code(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for word in ("record_tool_call", "record_ingest", "record_messages", "ledger", "RunHooks", "AgentHooks",
                 "hooks", "on_tool_start", "on_llm_end"):
        assert not re.search(rf"\b{word}\b", text), (path.name, word)


def test_openai_agents_example_responses(fake_llm: object, tmp_path: Path) -> None:
    """The SDK's default model (the Responses API): memwarden's tools go out as strict Responses tools."""
    pytest.importorskip("agents")
    ex = _example("openai_agents_memory")
    report = asyncio.run(ex.run(fake_llm.base_url + "/v1", tmp_path))  # type: ignore[attr-defined]
    _check(report)
    first = fake_llm.requests[0]  # type: ignore[attr-defined]
    assert first["path"].endswith("/responses")
    tools = {t["name"]: t for t in first["body"]["tools"]}
    assert {"web_fetch", "memory_save", "memory_search"} <= set(tools)
    assert tools["memory_save"]["strict"] is True  # strict-mode schemas, nulls accepted by the dispatcher
    assert first["body"]["instructions"].startswith("<memwarden-memory>")
    # P1: within one session every request carries the same instructions, whatever was saved meanwhile
    sent = [r["body"]["instructions"] for r in fake_llm.requests]  # type: ignore[attr-defined]
    assert len(sent) == 5  # session 1: save, answer; session 2: fetch, save, answer
    assert len(set(sent[:2])) == 1 and len(set(sent[2:])) == 1
    assert "User prefers Go for services" not in sent[0] and "User prefers Go for services" in sent[2]
    _no_taint_code(EXAMPLES / "openai_agents_memory.py")


def test_openai_agents_example_chat_completions(fake_llm: object, tmp_path: Path) -> None:
    pytest.importorskip("agents")
    ex = _example("openai_agents_memory")
    report = asyncio.run(ex.run(fake_llm.base_url + "/v1", tmp_path, api="chat_completions"))  # type: ignore
    _check(report)
    first = fake_llm.requests[0]["body"]  # type: ignore[attr-defined]
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"web_fetch", "memory_save", "memory_search"} <= set(tools)
    assert tools["memory_save"].get("strict") is True
    system = first["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("<memwarden-memory>")


def test_anthropic_example(fake_llm: object, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    ex = _example("anthropic_tool_runner")
    _check(ex.run(fake_llm.base_url, tmp_path))  # type: ignore[attr-defined]
    first = fake_llm.requests[0]["body"]  # type: ignore[attr-defined]
    assert {"web_fetch", "memory_save"} <= {t["name"] for t in first["tools"]}
    assert first["system"].startswith("<memwarden-memory>")
    _no_taint_code(EXAMPLES / "anthropic_tool_runner.py")


@pytest.mark.parametrize("script", ["openai_agents_memory.py", "anthropic_tool_runner.py"])
def test_examples_run_as_scripts(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("agents" if "agents" in script else "anthropic")
    # main() points the key and anchor at its temporary directory with os.environ.setdefault (it is a script's
    # entry point); set them here so monkeypatch restores them and nothing leaks into later tests
    monkeypatch.delenv("MEMWARDEN_KEY", raising=False)
    monkeypatch.setenv("MEMWARDEN_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.setenv("MEMWARDEN_ANCHOR_DIR", str(tmp_path / "anchors"))
    ex = _example(script.removesuffix(".py"))
    assert ex.main([]) == 0
    out = capsys.readouterr().out
    assert "memory_save: ['accepted']" in out and "memory_save: ['review']" in out
    assert "sees it: True" in out and "replays the held one: False" in out
