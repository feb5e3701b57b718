"""Issue 12, items 2, 10 and 11: unsigned settings (I1, I4), token rows with their revocation (T3) and file modes
(I6) — each attack performed as the red team did, by editing the database file with sqlite3 and no key — and the
one-time upgrade of a store made before these rows were signed. ``doctor`` must find each tampering and exit 1."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import memwarden
from json_server import Reply, Request, json_server
from memwarden import audit, auth, doctor, upgrade
from memwarden.cli import app
from memwarden.retrieval import EMBEDDER_SETTING, TOKENIZER_SETTING
from memwarden.retrieval.tokenize import TOKENIZER_VERSION
from memwarden.service import MemoryService
from memwarden.settings import EMBEDDER, MIGRATED, TOKENIZER
from raw_sql import raw_sql

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")
API_KEY = "sk-test-0123456789abcdef0123456789abcdef"


class Endpoint:
    """A local OpenAI-compatible embeddings endpoint that records every request it gets (the attacker's)."""

    def __init__(self, url: str, requests: list[dict[str, Any]]) -> None:
        self.url = url
        self.spec = f"openai:{url}#m#8"
        self.requests = requests

    def texts(self) -> list[str]:
        return [t for r in self.requests for t in r["body"].get("input", [])]


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    requests: list[dict[str, Any]] = []

    def answer(req: Request) -> Reply:
        body = req.body if isinstance(req.body, dict) else {}
        requests.append({"path": req.path, "authorization": req.headers.get("Authorization"), "body": body})
        texts = body.get("input") or []
        return Reply(body={"data": [{"index": i, "embedding": [1.0] + [0.0] * 7} for i in range(len(texts))]})

    monkeypatch.delenv("MEMWARDEN_EMBEDDER", raising=False)
    monkeypatch.delenv("MEMWARDEN_EMBEDDINGS_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)  # the bearer the attack would carry away
    with json_server(answer) as url:
        yield Endpoint(url, requests)


def _use(store: MemoryService, text: str) -> None:
    """What every later session does: save a memory and search."""
    with store.session(SCOPE) as s:
        assert s.save(text, kind="fact").status == "accepted"
        s.search("deploy schedule", k=5)


def _checks(store: MemoryService) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in doctor.run(store):
        out.setdefault(f.check, []).append(f"{f.subject}: {f.problem}")
    return out


def _doctor_cli(db: Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["--db", str(db), "doctor"], env={"COLUMNS": "400"})
    return res.exit_code, " ".join((res.stdout + res.stderr).split())


def _legacy(store: MemoryService, db: Path, meta: dict[str, str]) -> None:
    """Turn ``db`` into a store as versions before issue 12 left it: no signed settings (``meta`` rows instead)
    and token rows signed without ``revoked_at``."""
    rows = store.backend.query("SELECT id, role, tenant, user_id, agent, name, token_hash, created_at FROM tokens")
    old = [(store.signer.mac_fields(b"memwarden.token-row.v1", r), r[0]) for r in rows]
    raw_sql(db, "DROP TABLE settings", *[("UPDATE tokens SET signature = ? WHERE id = ?", o) for o in old],
            *[("INSERT OR REPLACE INTO meta VALUES (?, ?)", kv) for kv in meta.items()])


def test_I4_settings_names_agree_with_the_retrieval_package() -> None:
    assert (EMBEDDER_SETTING, TOKENIZER_SETTING) == (EMBEDDER, TOKENIZER)


# --- item 2: an unsigned setting turns the store into an exfiltration channel (I1, I4, threat 4) ------------------


@pytest.mark.parametrize("attack", ["meta_row", "forged_settings_row", "row_signed_by_another_key"])
def test_I1_embedder_setting_edited_in_file_sends_nothing(attack: str, endpoint: Endpoint, db_path: Path,
                                                          tmp_path: Path) -> None:
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule moved to Thursdays")
    if attack == "meta_row":  # exactly the finding: the meta row that named the embedder
        raw_sql(db_path, ("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (endpoint.spec,)))
    elif attack == "forged_settings_row":
        raw_sql(db_path, ("INSERT OR REPLACE INTO settings VALUES ('embedder', ?, ?)", (endpoint.spec, "0" * 64)))
    else:  # a genuinely signed row, copied from a store whose key the attacker has
        with memwarden.open(tmp_path / "mine.db", key="k" * 64) as mine:
            mine.retrieval.reindex(spec=endpoint.spec)
            row = mine.backend.query("SELECT value, signature FROM settings WHERE name = 'embedder'")[0]
        raw_sql(db_path, ("INSERT OR REPLACE INTO settings VALUES ('embedder', ?, ?)", row))
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule is confidential")
        assert store.retrieval.embedder.fingerprint == "none"
        checks = _checks(store)
    assert endpoint.requests == []  # no memory, no query, no API key reached the endpoint
    assert "settings" in checks, checks
    code, out = _doctor_cli(db_path)
    assert code == 1
    assert ("written outside memwarden" in out or "fails verification" in out), out


@pytest.mark.parametrize("forged", ["meta", "settings"])
def test_I4_local_embedder_setting_forged_in_file_changes_nothing(forged: str, db_path: Path) -> None:
    """Even a setting that sends nothing anywhere (``hash``: local vectors) is not taken from an unsigned row."""
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule moved to Thursdays")
    raw_sql(db_path, "INSERT OR REPLACE INTO meta VALUES ('embedder', 'hash')" if forged == "meta" else
            ("INSERT OR REPLACE INTO settings VALUES ('embedder', 'hash', ?)", ("0" * 64,)))
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule is confidential")
        assert store.retrieval.embedder.fingerprint == "none"
        assert store.backend.query("SELECT count(*) FROM memory_vectors") == [(0,)]
        assert "settings" in _checks(store)


def test_I4_signed_embedder_endpoint_is_used_only_where_the_process_names_it(
        endpoint: Endpoint, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with memwarden.open(db_path) as store:  # the operator chose this endpoint, in this process
        _use(store, "The deploy schedule moved to Thursdays")
        store.retrieval.set_embedder(memwarden.retrieval.from_spec(endpoint.spec))
        store.retrieval.reindex(spec=endpoint.spec)
        assert audit.log_rows(store.backend, event="setting_changed")[-1]["details"] == {
            "name": "embedder", "value": endpoint.spec}
    assert endpoint.texts() == ["The deploy schedule moved to Thursdays"]
    endpoint.requests.clear()
    with memwarden.open(db_path) as store:  # a later process whose configuration does not name it
        _use(store, "The deploy schedule is confidential")
        assert store.retrieval.embedder.fingerprint == "none"
        assert any(endpoint.url in p and "MEMWARDEN_EMBEDDINGS_URL" in p for p in _checks(store)["settings"])
    assert endpoint.requests == []
    monkeypatch.setenv("MEMWARDEN_EMBEDDINGS_URL", endpoint.url + "/")  # the process configuration names it
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule is public again")
        assert "settings" not in _checks(store)
    assert "The deploy schedule is public again" in endpoint.texts()
    assert {r["authorization"] for r in endpoint.requests} == {f"Bearer {API_KEY}"}


def test_I4_tokenizer_mark_edited_in_file_is_ignored_and_the_index_rebuilt(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        _use(store, "The kestrel deploy schedule moved")
    raw_sql(db_path, "DELETE FROM memories_fts",  # a damaged index the forged mark would keep in use
            ("UPDATE settings SET signature = ? WHERE name = 'fts_tokenizer'", ("0" * 64,)))
    with memwarden.open(db_path) as store:
        with store.session(SCOPE) as s:
            assert [r.content for r in s.search("kestrel deploy")] == ["The kestrel deploy schedule moved"]
        assert any("fts_tokenizer" in p for p in _checks(store)["settings"])  # refused at open, reported
    with memwarden.open(db_path) as store:
        assert doctor.run(store) == []  # the rebuilt index carries a signed mark again


# --- item 10: revoked tokens come back (T3) -------------------------------------------------------------------------


def test_T3_revoked_token_revived_by_clearing_revoked_at_is_refused(store: MemoryService, db_path: Path) -> None:
    token, who = auth.create_token(store, "operator", "acme", name="alice")
    auth.revoke_token(store, who.token_id)
    raw_sql(db_path, ("UPDATE tokens SET revoked_at = NULL WHERE id = ?", (who.token_id,)))
    with pytest.raises(auth.AuthError, match="fails verification"):
        auth.authenticate(store, token)
    assert any("fails verification" in p for p in _checks(store)["token"])
    code, out = _doctor_cli(db_path)
    assert code == 1 and f"memwarden token revoke {who.token_id}" in out
    auth.revoke_token(store, "alice")  # what doctor says to run: signed as revoked, audited as a failed row
    assert audit.log_rows(store.backend, event="token_revoked")[-1]["details"]["row_verified"] is False
    assert "token" not in _checks(store)
    with pytest.raises(auth.AuthError, match="revoked"):
        auth.authenticate(store, token)


def test_T3_revoked_token_row_put_back_with_its_old_signature_is_refused(store: MemoryService,
                                                                         db_path: Path) -> None:
    token, who = auth.create_token(store, "operator", "acme", name="alice")
    before = store.backend.query("SELECT revoked_at, signature FROM tokens WHERE id = ?", (who.token_id,))[0]
    auth.revoke_token(store, who.token_id)
    raw_sql(db_path, ("UPDATE tokens SET revoked_at = ?, signature = ? WHERE id = ?", (*before, who.token_id)))
    with pytest.raises(auth.AuthError, match="revoked"):
        auth.authenticate(store, token)
    assert any("put back as live" in p for p in _checks(store)["token"])
    assert [t["revoked_at"] is not None for t in auth.list_tokens(store)] == [True]
    auth.revoke_token(store, who.token_id)  # what doctor says to run: the row is signed as revoked again
    assert "token" not in _checks(store)
    with pytest.raises(auth.AuthError, match="revoked"):
        auth.authenticate(store, token)


@pytest.mark.parametrize(("column", "value"), [
    ("role", "operator"), ("tenant", "globex"), ("user_id", None), ("agent", "other"), ("name", "root"),
    ("created_at", 1), ("revoked_at", 1)])
def test_T3_every_token_field_is_signed(store: MemoryService, db_path: Path, column: str, value: object) -> None:
    token, who = auth.create_token(store, "agent", "acme", user="u-42", agent="support")
    raw_sql(db_path, (f"UPDATE tokens SET {column} = ? WHERE id = ?", (value, who.token_id)))
    with pytest.raises(auth.AuthError, match="fails verification"):
        auth.authenticate(store, token)
    assert [t["verified"] for t in auth.list_tokens(store)] == [False]
    assert "token" in _checks(store)


# --- item 11: world-readable store (I6) -----------------------------------------------------------------------------


def test_I6_new_store_directory_is_0700_and_its_files_0600(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # the default data directory is the one memwarden creates (a named --db must have an existing directory)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.delenv("MEMWARDEN_URL", raising=False)
    from memwarden.store.sqlite import default_db_path

    db = default_db_path()
    assert str(db).startswith(str(tmp_path)) and not db.parent.exists()
    old = os.umask(0o022)  # the usual umask, which made the database 0644 in a 0755 directory
    try:
        with memwarden.open(None) as store:
            _use(store, "User prefers tea")
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (db.parent, *db.parent.iterdir())}
            assert "files" not in _checks(store)
    finally:
        os.umask(old)
    assert modes == {db.parent.name: 0o700, db.name: 0o600, f"{db.name}-wal": 0o600, f"{db.name}-shm": 0o600}


def test_I6_doctor_reports_a_world_readable_store(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        _use(store, "User prefers tea")
    db_path.chmod(0o644)
    db_path.parent.chmod(0o755)
    try:
        with memwarden.open(db_path) as store:
            files = _checks(store)["files"]
        assert any(f"chmod 600 {db_path}" in p for p in files) and any(f"chmod 700 {db_path.parent}" in p
                                                                       for p in files)
        code, out = _doctor_cli(db_path)
        assert code == 1 and "group or others can read it" in out
    finally:
        db_path.parent.chmod(0o700)


# --- the upgrade of a store made before these rows were signed -------------------------------------------------------


def test_I4_T3_store_of_an_earlier_version_is_signed_once_and_audited(db_path: Path, endpoint: Endpoint) -> None:
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule moved to Thursdays")
        live, lv = auth.create_token(store, "operator", "acme", name="live")
        revoked, r = auth.create_token(store, "operator", "acme", name="revoked")
        revived, v = auth.create_token(store, "operator", "acme", name="revived")
        edited, e = auth.create_token(store, "agent", "acme", user="u-42", agent="support", name="edited")
        auth.revoke_token(store, r.token_id)
        auth.revoke_token(store, v.token_id)
        store.retrieval.set_embedder(memwarden.retrieval.HashEmbedder())
        store.retrieval.reindex(spec="hash")  # vectors, as the old store had them
        _legacy(store, db_path, {"embedder": "hash", "fts_tokenizer": TOKENIZER_VERSION})
    # before the upgrade, an attacker revives one revoked token (the old signature did not cover revoked_at)
    # and promotes an agent token (which the old signature did cover)
    raw_sql(db_path, ("UPDATE tokens SET revoked_at = NULL WHERE id = ?", (v.token_id,)),
            ("UPDATE tokens SET role = 'operator', agent = NULL WHERE id = ?", (e.token_id,)))
    with memwarden.open(db_path) as store:
        assert store.retrieval.embedder.fingerprint == memwarden.retrieval.HashEmbedder().fingerprint
        assert store.backend.query("SELECT key FROM meta WHERE key IN ('embedder', 'fts_tokenizer')") == []
        migrated = audit.log_rows(store.backend, event="settings_migrated")
        assert len(migrated) == 1 and migrated[0]["actor"] == "system:upgrade"
        assert migrated[0]["details"] == {
            "settings": {"embedder": "hash", "fts_tokenizer": TOKENIZER_VERSION},
            "tokens_signed": [lv.token_id, r.token_id, v.token_id],
            "tokens_refused": [e.token_id], "tokens_kept_revoked": [v.token_id], "token_rows": upgrade.TOKEN_ROWS}
        assert auth.authenticate(store, live).name == "live"
        for tok, why in ((revoked, "revoked"), (revived, "revoked"), (edited, "fails verification")):
            with pytest.raises(auth.AuthError, match=why):
                auth.authenticate(store, tok)
        assert set(_checks(store)) == {"token"}  # only the row edited before the upgrade
        _use(store, "The deploy schedule is confidential")
    with memwarden.open(db_path) as store:  # done once
        assert len(audit.log_rows(store.backend, event="settings_migrated")) == 1
        assert audit.verify(store.backend, store.signer) == []
    assert endpoint.requests == []


def test_I4_legacy_meta_row_naming_an_endpoint_is_signed_by_the_upgrade_but_sends_nothing(
        db_path: Path, endpoint: Endpoint) -> None:
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule moved to Thursdays")
        _legacy(store, db_path, {"embedder": endpoint.spec})  # planted before the upgrade
    with memwarden.open(db_path) as store:
        assert audit.log_rows(store.backend, event="settings_migrated")[0]["details"]["settings"] == {
            "embedder": endpoint.spec}  # the operator can see what was signed
        _use(store, "The deploy schedule is confidential")
        assert any(endpoint.url in p for p in _checks(store)["settings"])
    assert endpoint.requests == []


def test_I4_upgrade_is_not_repeated_when_its_mark_is_deleted_in_file(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        _use(store, "The deploy schedule moved to Thursdays")
        _legacy(store, db_path, {})
    with memwarden.open(db_path) as store:
        assert len(audit.log_rows(store.backend, event="settings_migrated")) == 1
    raw_sql(db_path, ("DELETE FROM settings WHERE name = ?", (MIGRATED,)),
            "INSERT OR REPLACE INTO meta VALUES ('embedder', 'hash')")  # to be signed by a second upgrade
    with memwarden.open(db_path) as store:
        assert store.retrieval.embedder.fingerprint == "none"
        assert len(audit.log_rows(store.backend, event="settings_migrated")) == 1
        assert any("meta.embedder" in p for p in _checks(store)["settings"])


def test_I4_new_store_is_marked_without_an_audit_event(store: MemoryService) -> None:
    # its only event is the anchor's (I5): no settings_migrated
    assert [r["event"] for r in audit.log_rows(store.backend, limit=10)] == ["anchor_created"]
    with store.backend.read() as conn:
        assert store.settings.get(conn, MIGRATED) == upgrade.DONE
        assert store.settings.get(conn, TOKENIZER) == TOKENIZER_VERSION
    assert doctor.run(store) == []


def _issue12(store: MemoryService, db: Path) -> None:
    """Turn ``db`` into a store as issue 12 left it: token rows signed over their first nine fields (no profile,
    no expiry) and the upgrade mark ``1``."""
    rows = store.backend.query("SELECT id, role, tenant, user_id, agent, name, token_hash, created_at, revoked_at"
                               " FROM tokens")
    old = [(store.signer.mac_fields(b"memwarden.token-row.v2", r), r[0]) for r in rows]
    store.backend.run_write(lambda tx: store.settings.put(tx, MIGRATED, upgrade.SIGNED_SETTINGS))
    raw_sql(db, *[("UPDATE tokens SET signature = ? WHERE id = ?", o) for o in old])


def test_I4_T3_token_rows_of_issue_12_are_resigned_without_a_profile_and_a_planted_profile_is_refused(
        db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        plain, p = auth.create_token(store, "agent", "acme", user="u-42", agent="support", name="plain")
        planted, q = auth.create_token(store, "agent", "acme", user="u-42", agent="support", name="planted")
        revoked, r = auth.create_token(store, "operator", "acme", name="revoked")
        auth.revoke_token(store, r.token_id)
        _issue12(store, db_path)
    # before the upgrade, an attacker gives one token the profile (no earlier version could set it)
    raw_sql(db_path, ("UPDATE tokens SET host_reports_ingest = 1 WHERE id = ?", (q.token_id,)))
    with memwarden.open(db_path) as store:
        (migrated,) = audit.log_rows(store.backend, event="settings_migrated")
        assert migrated["details"] == {"settings": {}, "tokens_signed": [p.token_id, r.token_id],
                                       "tokens_refused": [q.token_id], "tokens_kept_revoked": [],
                                       "token_rows": upgrade.TOKEN_ROWS}
        who = auth.authenticate(store, plain)
        assert (who.name, who.host_reports_ingest, who.expires_at) == ("plain", False, None)
        with pytest.raises(auth.AuthError, match="fails verification"):
            auth.authenticate(store, planted)
        with pytest.raises(auth.AuthError, match="revoked"):
            auth.authenticate(store, revoked)
    with memwarden.open(db_path) as store:  # done once, even with its mark deleted
        raw_sql(db_path, ("DELETE FROM settings WHERE name = ?", (MIGRATED,)))
    with memwarden.open(db_path) as store:
        assert len(audit.log_rows(store.backend, event="settings_migrated")) == 1
        with store.backend.read() as conn:
            assert store.settings.get(conn, MIGRATED) == upgrade.DONE
        assert audit.verify(store.backend, store.signer) == []
