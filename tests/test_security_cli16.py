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
