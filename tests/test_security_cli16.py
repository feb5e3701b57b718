"""Issue 12 item 16, the rest of it: CLI flags, the build's license metadata, the scope of a created token, and
retention that keeps a memory until it is deleted. Each test sends the bad input or exercises the case as the
finding describes it; docs/security.md lists them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memwarden.cli import _FlagsAreFlags, app
from memwarden.service import MemoryService

ID = ["--tenant", "acme", "--user", "u-42", "--agent", "support"]


@pytest.fixture(autouse=True)
def _no_ambient_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMWARDEN_TENANT", "MEMWARDEN_USER", "MEMWARDEN_AGENT", "MEMWARDEN_DEBUG", "MEMWARDEN_TOKEN",
                 "COLUMNS"):
        monkeypatch.delenv(name, raising=False)


def _cli(db: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the CLI on ``db``; a traceback or an exception escaping the one-line handler fails the test."""
    result = CliRunner().invoke(app, ["--db", str(db), *args], input=input, env=env)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group of the CLI, with the words that name it."""
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


# --- (a) help showed `--json <bool>`, and `--json true` failed ------------------------------------------------


def test_cli_help_shows_flags_as_flags(tmp_path: Path) -> None:
    """No SPEC id (SPEC §4, CLI): `--help` of every command shows a flag with no value placeholder."""
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 25
    for path, command in commands:
        assert isinstance(command, _FlagsAreFlags), f"memwarden {' '.join(path)} is a plain typer command"
        code, out, _ = _cli(tmp_path / "m.db", *path, "--help")
        assert code == 0, (path, out)
        assert "<bool>" not in out, f"memwarden {' '.join(path)} --help:\n{out}"
    code, out, _ = _cli(tmp_path / "m.db", "list", "--help")
    assert "--json" in out and "<int range>" in out  # options that take a value still show it


@pytest.mark.parametrize("word", ["true", "false", "True", "0", "yes"])
def test_R2_cli_flag_given_a_value_is_a_usage_error_and_stores_nothing(store: MemoryService, word: str) -> None:
    """`save --json true` stored the text "true" (a memory nobody said, R2); `list --json false` printed JSON
    or failed with "unexpected extra argument". A flag followed by a boolean word is now a usage error."""
    db = store.path
    code, out, err = _cli(db, "save", *ID, "--json", word)
    assert code == 2 and out == ""
    assert "--json is a flag and takes no value" in err and f"not '--json {word}'" in err
    code, out, err = _cli(db, "list", *ID, "--json", word)
    assert code == 2 and "is a flag and takes no value" in err
    code, out, err = _cli(db, "search", *ID, "--json", word)
    assert code == 2 and "is a flag and takes no value" in err
    code, _, err = _cli(db, "--verbose", word, "list", *ID)  # a flag of the root group
    assert code == 2 and "--verbose is a flag" in err
    code, out, _ = _cli(db, "list", *ID, "--json")
    assert code == 0 and json.loads(out) == []  # nothing was stored by the refused saves
    code, _, err = _cli(db, "list", *ID, "--json=true")
    assert code == 2 and "does not take a value" in err


def test_R2_cli_text_that_reads_like_a_boolean_is_still_saved(store: MemoryService) -> None:
    """The text "true" can still be saved: before the flag, or after `--`."""
    code, out, _ = _cli(store.path, "save", *ID, "true", "--json")
    assert code == 0 and json.loads(out)["status"] == "accepted"
    code, out, _ = _cli(store.path, "save", *ID, "--json", "--", "no")
    assert code == 0 and json.loads(out)["status"] == "accepted"
    code, out, _ = _cli(store.path, "list", *ID, "--kind", "fact", "--json")  # a value option before a flag
    assert sorted(r["content"] for r in json.loads(out)) == ["no", "true"]


# --- (b) the build printed a `project.license` deprecation warning ----------------------------------------------


def test_build_license_is_an_spdx_expression_and_needs_setuptools_77() -> None:
    """No SPEC id (packaging): `project.license` as a table (`{ text = "Apache-2.0" }`) makes setuptools warn on
    every build and stops building after 2027-02-18; an SPDX string needs setuptools >= 77 in the build
    requirements, or older setuptools refuse it. (Verified by building the wheel: docs/security.md.)"""
    import re
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    license_ = pyproject["project"]["license"]
    assert isinstance(license_, str) and license_ == "Apache-2.0"
    assert not any(c.startswith("License ::") for c in pyproject["project"].get("classifiers", []))  # PEP 639
    floors = [m for r in pyproject["build-system"]["requires"]
              if (m := re.fullmatch(r"setuptools\s*>=\s*(\d+)(?:\.\d+)*", r.strip()))]
    assert len(floors) == 1 and int(floors[0].group(1)) >= 77


# --- (c) a set MEMWARDEN_USER narrowed `token create --role operator --tenant acme` to one user ---------------


def _tokens(store: MemoryService) -> list[dict[str, Any]]:
    from memwarden import auth

    return auth.list_tokens(store, "acme")


def test_T3_operator_token_user_is_never_taken_from_memwarden_user(store: MemoryService) -> None:
    """The finding: with `MEMWARDEN_USER=u-42` set for everyday commands, `token create --role operator
    --tenant acme` made a token for u-42 only, and said nothing. Now the user must be said on the command line."""
    from memwarden import auth

    env = {"MEMWARDEN_USER": "u-42"}
    code, out, err = _cli(store.path, "token", "create", "--role", "operator", "--tenant", "acme", env=env)
    assert code == 2 and out == "" and _tokens(store) == []
    assert "--user USER for one user, or --all-users" in err and "$MEMWARDEN_USER=u-42 is not read" in err

    code, out, err = _cli(store.path, "token", "create", "--role", "operator", "--tenant", "acme", "--all-users",
                          env=env)
    assert code == 0, err
    assert "scope: tenant acme, every user" in out
    assert auth.authenticate(store, out.strip().splitlines()[-1]).user is None  # the whole tenant, as it says

    code, out, _ = _cli(store.path, "token", "create", "--role", "operator", "--tenant", "acme", "--user", "u-7",
                        "--json", env=env)
    made = json.loads(out)
    assert code == 0 and made["user"] == "u-7" and made["scope"] == "tenant acme, user u-7 only"
    assert auth.authenticate(store, made["token"]).user == "u-7"  # the flag, not the environment

    code, _, err = _cli(store.path, "token", "create", "--role", "agent", "--tenant", "acme", "--agent", "support",
                        env=env)  # an agent token is not bound to the ambient user either
    assert code == 2 and "pass --user and --agent" in err
    code, _, err = _cli(store.path, "token", "create", "--role", "operator", "--tenant", "acme", "--user", "u-7",
                        "--all-users")
    assert code == 2 and "--all-users is for operator tokens without --user" in err
    assert len(_tokens(store)) == 2


def test_T3_created_token_says_its_scope_and_an_ambient_tenant(store: MemoryService) -> None:
    """Without MEMWARDEN_USER an operator token still covers the tenant (as before), and says so; a tenant from
    $MEMWARDEN_TENANT is named on stderr."""
    code, out, err = _cli(store.path, "token", "create", "--role", "operator", env={"MEMWARDEN_TENANT": "acme"})
    assert code == 0 and "scope: tenant acme, every user" in out
    assert "note: tenant acme is from $MEMWARDEN_TENANT" in err
    code, out, err = _cli(store.path, "token", "create", "--role", "agent", "--tenant", "acme", "--user", "u-42",
                          "--agent", "support")
    assert code == 0 and "scope: tenant acme, user u-42, agent support" in out and "note:" not in err


# --- (d) retention had no "keep until deleted" for facts a user wants kept (R3) ------------------------------


class _Later:
    """memwarden's one clock (``records.now_ms``) moved ``days`` ahead."""

    def __init__(self, days: int) -> None:
        self.offset_ns = days * 86_400 * 10**9

    def time_ns(self) -> int:
        import time

        return time.time_ns() + self.offset_ns


def test_R3_keep_until_deleted_fact_never_expires(store: MemoryService, scope: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator keeps a fact until it is deleted (`save --ttl-days keep`): 400 days on, past the 365-day
    maximum, it is still served in the block, search and listings, `gc` keeps it, and every reader says it does
    not expire; a 365-day fact saved with it is gone."""
    import memwarden.records
    from memwarden.timevalues import NEVER_EXPIRES

    db = store.path
    code, out, err = _cli(db, "save", "User's blood type is AB negative", *ID, "--ttl-days", "keep", "--json")
    assert code == 0, err
    kept_id = json.loads(out)["id"]
    code, out, err = _cli(db, "save", "User's current project is the billing rewrite", *ID, "--ttl-days", "365",
                          "--json")
    dated_id = json.loads(out)["id"]
    assert store.operator_get(kept_id).expires_at == NEVER_EXPIRES and store.operator_get(kept_id).kept_until_deleted
    code, out, _ = _cli(db, "show", kept_id)
    assert code == 0 and "never (kept until deleted)" in out

    monkeypatch.setattr(memwarden.records, "time", _Later(400))
    with store.session(scope) as s:
        assert kept_id in s.system_block() and dated_id not in s.system_block()
        assert [r.id for r in s.search("blood type")] == [kept_id]
        assert s.call_tool("memory_view", {"id": kept_id})["memory"]["expires_at"] is None
        assert dated_id not in {r.id for r in s.view()}
    code, out, _ = _cli(db, "list", *ID, "--json")
    assert [(r["id"], r["expires_at"]) for r in json.loads(out)] == [(kept_id, None)]
    assert store.gc() == [dated_id]
    code, out, _ = _cli(db, "export", *ID, "--format", "md")
    assert code == 0 and "kept until deleted" in out and "9999" not in out
    assert _cli(db, "doctor")[0] == 0
    code, _, _ = _cli(db, "forget", kept_id)  # "until deleted": deleting it still deletes it
    assert code == 0 and _cli(db, "list", *ID, "--json")[1].strip() == "[]"


def test_R3_model_cannot_choose_keep_unless_the_policy_allows_it(tmp_path: Path, scope: Any) -> None:
    """`memory_save {"ttl_days": "keep"}` from the agent, or a library save by the user, is refused under the
    default policy (only the operator may keep); `Policy.allow_keep(kind, source)` opens it for one kind."""
    import memwarden
    from memwarden.timevalues import NEVER_EXPIRES

    with memwarden.open(tmp_path / "a.db") as store, store.session(scope) as s:
        out = s.call_tool("memory_save", {"content": "User's passport number ends in 4411", "ttl_days": "keep"})
        assert out["error"] == "invalid_input" and "not allowed for a fact written by model" in out["message"]
        with pytest.raises(memwarden.InvalidInput, match="lets operator keep a fact"):
            s.save("User's anniversary is 12 May", source="user", ttl_days="keep")
        with pytest.raises(memwarden.InvalidInput, match="from 1 to 365"):
            s.save("User's anniversary is 12 May", source="user", ttl_days="forever")
        assert s.view() == []
        schema = next(t for t in s.tool_schemas() if t["function"]["name"] == "memory_save")
        assert {"enum": ["keep"], "type": "string"} in schema["function"]["parameters"]["properties"]["ttl_days"][
            "anyOf"]

    policy = memwarden.Policy().allow_keep("fact", "user", "model")
    with memwarden.open(tmp_path / "b.db", policy=policy) as store, store.session(scope) as s:
        out = s.call_tool("memory_save", {"content": "User's passport number ends in 4411", "ttl_days": "keep"})
        assert out["status"] == "accepted", out
        assert store.operator_get(out["id"]).expires_at == NEVER_EXPIRES
        assert s.save("User's anniversary is 12 May", source="user", ttl_days="keep").record.kept_until_deleted
        with pytest.raises(memwarden.InvalidInput, match="not allowed for a preference written by model"):
            s.save("User prefers tea", kind="preference", ttl_days="keep")  # only the kind the policy names
        r = s.save("User prefers short answers", kind="preference")  # no ttl: the kind's default still applies
        assert not r.record.kept_until_deleted
    with pytest.raises(memwarden.InvalidInput, match="unknown source type"):
        memwarden.Policy().allow_keep("fact", "root")


def test_R3_policy_default_keep_and_update_keep_the_record(tmp_path: Path, scope: Any) -> None:
    """A kind whose policy retention is "keep" keeps every record of it; an update without ttl_days keeps a
    kept record kept, and one with a number of days gives it an expiry again."""
    from dataclasses import replace

    import memwarden
    from memwarden.policy import DEFAULT_LIMITS, KEEP

    policy = memwarden.Policy(limits={**DEFAULT_LIMITS, "fact": replace(DEFAULT_LIMITS["fact"], retention_days=KEEP)})
    with memwarden.open(tmp_path / "c.db", policy=policy) as store, store.session(scope) as s:
        r = s.save("User's employer is Initech")
        assert r.record is not None and r.record.kept_until_deleted
        u = s.update(r.id or "", "User's employer is Initech, since 2024", expected_version=1)
        assert u.record is not None and u.record.kept_until_deleted
        v = s.update(r.id or "", "User's employer is Initech (contractor)", expected_version=2, ttl_days=30)
        assert v.record is not None and not v.record.kept_until_deleted


def test_R3_signed_export_restores_a_kept_record_and_unsigned_keep_is_refused(store: MemoryService,
                                                                              tmp_path: Path) -> None:
    """A kept record survives the signed round trip (restored into a copy with the same key, still kept); an
    unsigned import line asking for "keep" is refused under the default policy (import is not the operator)."""
    from memwarden.timevalues import NEVER_EXPIRES

    code, out, _ = _cli(store.path, "save", "User is allergic to penicillin", *ID, "--ttl-days", "keep", "--json")
    kept_id = json.loads(out)["id"]
    code, dump, _ = _cli(store.path, "export", *ID, "--format", "jsonl")
    assert code == 0 and json.loads(dump.splitlines()[0])["expires_at"] is None
    copy = tmp_path / "copy.db"
    code, out, err = _cli(copy, "import", "-", *ID, "--json", input=dump)
    assert code == 0, err
    import memwarden

    with memwarden.open(copy) as other:
        assert other.operator_get(kept_id).expires_at == NEVER_EXPIRES
    line = json.dumps({"content": "User is allergic to latex", "ttl_days": "keep"}) + "\n"
    code, out, err = _cli(copy, "import", "-", *ID, "--json", input=line)
    assert code == 1 and "not allowed for a fact written by import" in out + err
    bad = json.dumps({"content": "User is allergic to latex", "ttl_days": "forever"}) + "\n"
    code, out, err = _cli(copy, "import", "-", *ID, "--json", input=bad)
    assert code == 1 and "whole number of days or" in out + err


def test_R3_cli_ttl_days_takes_days_or_keep(store: MemoryService) -> None:
    code, _, err = _cli(store.path, "save", "User's desk is 4B", *ID, "--ttl-days", "soon")
    assert code == 2 and "--ttl-days must be a whole number of days (1-365) or keep" in err
    code, _, err = _cli(store.path, "save", "User's desk is 4B", *ID, "--ttl-days", "366")
    assert code == 1 and "from 1 to 365" in err
    code, out, _ = _cli(store.path, "save", "--help")
    assert "DAYS|keep" in out
