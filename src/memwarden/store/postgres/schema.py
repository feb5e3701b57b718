"""PostgreSQL schema: versioned migrations, the roles memwarden serves through, and row-level security.

``memwarden migrate --db postgresql://OWNER@host/db`` (:func:`migrate`) runs as the role that will own every
table and applies the migrations this code knows that the database has not seen (``meta.pg_schema_version``);
it refuses a database whose version is newer than the code. It also creates (or updates) two roles that own
nothing and cannot bypass row-level security:

* ``<db>_app`` — what ``memwarden serve`` and ``memwarden.open`` connect as. Its policies admit a row only
  when the row's ``(tenant, user_id, agent)`` is within the scope the engine set for the statement
  (``memwarden.tenant``, ``memwarden.user``, ``memwarden.agents``, ``memwarden.reach``: set with
  ``set_config(..., true)``, transaction-local, before each statement whose scope differs). A tenant is always
  exact for this role; ``reach`` widens to every agent of the user (``user``) or every user of the tenant
  (``tenant``) only when the engine's ``View`` is that wide (the operator's listings), never to another tenant.
  The audit table also admits ``reach = 'chain'``: the chain walk (A1, I5) verifies every row in order in
  every process, so the audit rows (tombstones: ids, hashes, events — never a record's content) are readable
  store-wide by the serving role, and only insertable (no UPDATE or DELETE policy or grant exists).
* ``<db>_operator`` — the same policies, and ``reach = 'all'`` (every tenant): operator maintenance (``gc``,
  ``doctor``, lookups by id) without a per-tenant loop. The application role is not a member of it, so it
  cannot ``SET ROLE`` to it.

Tables with RLS (ENABLE and FORCE): every table that holds a memory, its history, links, index rows, vector, usage,
ingest reports or audit rows. Without it: ``meta``, ``settings`` (store-wide, signed: I4), ``tokens``
(authentication looks a token up by its hash before any scope is known; rows signed: T3), ``sessions`` (state by
id, T6), ``index_log`` (integers only) and ``tenants`` (the tenant names, for per-tenant loops). Indexes lead with
the scope columns (the GIN index too, through ``btree_gin``).
"""

from __future__ import annotations

import hashlib

SCHEMA_VERSION = 3  # the newest migration this code has (2: memories_item, keyed items; 3: auto-analyze)
SCOPED = ("memories", "memory_history", "memory_links", "memory_terms", "memory_dupkeys", "memory_vectors",
          "scope_usage", "host_reports")  # scope columns: tenant, user_id, agent (NOT NULL)
AUDITED = ("audit",)  # scope columns may be NULL (system events)

_T = 'text COLLATE "C"'  # byte order, as SQLite sorts: ORDER BY id / agent agree across engines

_RECORD_COLUMNS = f"""
    tenant        {_T} NOT NULL,
    user_id       {_T} NOT NULL,
    agent         {_T} NOT NULL,
    kind          {_T} NOT NULL,
    content       text NOT NULL,
    content_hash  {_T} NOT NULL,
    size_bytes    bigint NOT NULL,
    metadata      text NOT NULL,
    confidence    double precision NOT NULL,
    sensitivity   integer NOT NULL,
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL,
    expires_at    bigint NOT NULL,
    due_at        bigint,
    status        {_T} NOT NULL,
    derived_from  text NOT NULL,
    session_id    {_T} NOT NULL,
    source_type   {_T} NOT NULL,
    sources       text NOT NULL,
    trust         {_T} NOT NULL,
    approval      {_T} NOT NULL,
    signature     {_T} NOT NULL
"""

CONFIG_EVENTS = "event IN ('token_revoked', 'settings_migrated')"

# Migration 1: every table, index, trigger and helper function. Later migrations append to MIGRATIONS; a
# database records the newest it has applied in meta.pg_schema_version.
_V1 = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    f"CREATE TABLE meta (key {_T} PRIMARY KEY, value text NOT NULL)",
    f"CREATE TABLE settings (name {_T} PRIMARY KEY, value text NOT NULL, signature text NOT NULL)",
    f"CREATE TABLE tenants (name {_T} PRIMARY KEY)",
    f"""CREATE TABLE memories (
        rk bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        id {_T} PRIMARY KEY,
        version bigint NOT NULL,
        {_RECORD_COLUMNS})""",
    "CREATE INDEX memories_scope ON memories (tenant, user_id, agent, kind, status, updated_at, id)",
    "CREATE INDEX memories_due ON memories (tenant, user_id, agent, due_at) WHERE due_at IS NOT NULL",
    "CREATE INDEX memories_derived ON memories (tenant, user_id, id) WHERE derived_from <> '[]'",
    f"""CREATE TABLE memory_history (
        id {_T} NOT NULL, version bigint NOT NULL, superseded_at bigint NOT NULL,
        {_RECORD_COLUMNS}, PRIMARY KEY (id, version))""",
    "CREATE INDEX memory_history_scope ON memory_history (tenant, user_id, agent, id)",
    # The full-text row: the record's keyed terms (never plain text) and their tsvector (the 'simple'
    # configuration: a keyed term is one lexeme, unchanged).
    f"""CREATE TABLE memory_terms (
        rk bigint PRIMARY KEY, tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL,
        content text NOT NULL, tsv tsvector NOT NULL)""",
    "CREATE INDEX memory_terms_scope ON memory_terms USING gin (tenant, user_id, agent, tsv)",
    f"""CREATE TABLE memory_dupkeys (
        rk bigint PRIMARY KEY, tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL,
        dup bigint NOT NULL)""",
    "CREATE INDEX memory_dupkeys_dup ON memory_dupkeys (tenant, user_id, agent, dup)",
    # Every change of a full-text row, in commit order (writers are serialised: backend.py).
    "CREATE TABLE index_log (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, row bigint NOT NULL)",
    f"""CREATE TABLE memory_vectors (
        rk bigint PRIMARY KEY, tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL,
        session_id {_T} NOT NULL, embedder {_T} NOT NULL, vec bytea)""",
    "CREATE INDEX memory_vectors_scope ON memory_vectors (tenant, user_id, agent, session_id)",
    f"""CREATE TABLE memory_links (
        tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL,
        derived_id {_T} NOT NULL, source_id {_T} NOT NULL, PRIMARY KEY (derived_id, source_id))""",
    "CREATE INDEX memory_links_source ON memory_links (tenant, user_id, source_id)",
    f"""CREATE TABLE scope_usage (
        tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL, kind {_T} NOT NULL,
        entries bigint NOT NULL, bytes bigint NOT NULL, PRIMARY KEY (tenant, user_id, agent, kind))""",
    """CREATE FUNCTION memwarden_usage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            UPDATE scope_usage SET entries = entries - 1, bytes = bytes - octet_length(OLD.content)
            WHERE tenant = OLD.tenant AND user_id = OLD.user_id AND agent = OLD.agent AND kind = OLD.kind;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO scope_usage VALUES (NEW.tenant, NEW.user_id, NEW.agent, NEW.kind, 1,
                                            octet_length(NEW.content))
            ON CONFLICT (tenant, user_id, agent, kind)
            DO UPDATE SET entries = scope_usage.entries + 1, bytes = scope_usage.bytes + EXCLUDED.bytes;
        END IF;
        IF TG_OP = 'INSERT' THEN
            INSERT INTO tenants VALUES (NEW.tenant) ON CONFLICT DO NOTHING;
        END IF;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER memories_usage AFTER INSERT OR DELETE OR UPDATE OF content, tenant, user_id, agent, kind"
    " ON memories FOR EACH ROW EXECUTE FUNCTION memwarden_usage()",
    f"""CREATE TABLE sessions (
        id {_T} PRIMARY KEY, tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL,
        started_at bigint NOT NULL, ended_at bigint, clearance integer NOT NULL, workspace text NOT NULL,
        snapshot_sha256 text)""",
    f"""CREATE TABLE tokens (
        id {_T} PRIMARY KEY, role {_T} NOT NULL, tenant {_T} NOT NULL, user_id {_T}, agent {_T},
        name {_T} NOT NULL, token_hash {_T} NOT NULL UNIQUE, created_at bigint NOT NULL, revoked_at bigint,
        signature text NOT NULL, host_reports_ingest integer NOT NULL DEFAULT 0, expires_at bigint)""",
    "CREATE SEQUENCE host_reports_seq",
    f"""CREATE TABLE host_reports (
        seq bigint PRIMARY KEY, tenant {_T} NOT NULL, user_id {_T} NOT NULL, agent {_T} NOT NULL,
        reported_at bigint NOT NULL, actor text NOT NULL, host_session text NOT NULL, tool text NOT NULL,
        reason text NOT NULL, sources text NOT NULL, signature text NOT NULL)""",
    "CREATE INDEX host_reports_scope ON host_reports (tenant, user_id, agent, seq)",
    f"""CREATE TABLE audit (
        seq bigint PRIMARY KEY, ts bigint NOT NULL, event {_T} NOT NULL, tenant {_T}, user_id {_T}, agent {_T},
        session_id {_T}, memory_id {_T}, actor text NOT NULL, details text NOT NULL, prev_hash text NOT NULL,
        hash text NOT NULL)""",
    "CREATE INDEX audit_memory ON audit (memory_id, seq) WHERE memory_id IS NOT NULL",
    "CREATE INDEX audit_scope ON audit (tenant, user_id, seq)",
    "CREATE INDEX audit_read_events ON audit (seq) WHERE event IN ('read', 'injected')",
    f"CREATE INDEX audit_config_events ON audit (event, seq) WHERE {CONFIG_EVENTS}",
    """CREATE FUNCTION memwarden_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'audit log is append-only'; END $$""",
    "CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit FOR EACH ROW"
    " EXECUTE FUNCTION memwarden_append_only()",
    # JSON of rows written around the API may not parse: these never raise (a malformed row matches nothing).
    """CREATE FUNCTION memwarden_json_list(doc text, key text) RETURNS SETOF text LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
        IF key IS NULL THEN
            RETURN QUERY SELECT jsonb_array_elements_text(doc::jsonb);
        ELSE
            RETURN QUERY SELECT jsonb_array_elements_text(doc::jsonb -> key);
        END IF;
    EXCEPTION WHEN others THEN RETURN;
    END $$""",
    """CREATE FUNCTION memwarden_json_get(doc text, key text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN RETURN doc::jsonb ->> key; EXCEPTION WHEN others THEN RETURN NULL; END $$""",
    # The tenants holding any of some record ids: how a lookup by id (an operator's, a delete) finds the tenant
    # whose scope the statements that follow are limited to. SECURITY DEFINER (the owner's policy admits every
    # row), and it returns tenant names only.
    """CREATE FUNCTION memwarden_id_tenants(ids text[]) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public AS $$
        SELECT DISTINCT tenant::text FROM public.memories WHERE id = ANY (ids)
    $$""",
    """CREATE FUNCTION memwarden_id_scope(mid text) RETURNS TABLE (tenant text, user_id text, agent text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        SELECT tenant, user_id, agent FROM public.memories WHERE id = mid
    $$""",
]

# Migration 2: keyed items (store/base.py ITEM_KEY; memwarden.items): a lookup by key within a scope is one probe.
# The key is in the record's signed metadata; the index is derived from it and goes with the row (D3).
_V2 = [
    "CREATE INDEX memories_item ON memories (tenant, user_id, agent, memwarden_json_get(metadata, 'mw_item_key'))"
    " WHERE memwarden_json_get(metadata, 'mw_item_key') IS NOT NULL",
]

# Migration 3: planner statistics follow the tables closely. Without them the planner read the candidates of a
# search by scanning the whole scope (it took rk = ANY (…) for one row among many), so a search of a 10k-record
# scope cost ~40 ms instead of ~5 ms until autovacuum's default (10 % of the table changed) analyzed it again.
_V3 = [f"ALTER TABLE {table} SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 200)"
       for table in ("memories", "memory_terms", "memory_dupkeys", "memory_vectors", "memory_links", "audit",
                     "index_log")]

MIGRATIONS: list[tuple[int, list[str]]] = [(1, _V1), (2, _V2), (3, _V3)]

# Tables that hold a memory's content (or rows keyed by it) and must be empty of it after delete (D3).
MEMORY_TABLES: dict[str, str] = {
    "memories": "id",
    "memory_history": "id",
    "memory_links": "derived_id",
    "memory_vectors": "rk",
    "memory_dupkeys": "rk",
    "memory_terms": "rk",
}

# The scope a statement may touch, as the policies read it (every value set by the engine: backend.py).
_REACH = "current_setting('memwarden.reach', true)"
_TENANT = "current_setting('memwarden.tenant', true)"
_USER = "current_setting('memwarden.user', true)"
_AGENTS = "coalesce(nullif(current_setting('memwarden.agents', true), ''), '{}')::text[]"


def scope_predicate(*, operator: bool, audit: bool = False) -> str:
    """The USING / WITH CHECK expression of a table's policy for one role."""
    narrow = (f"(tenant = {_TENANT} AND ({_REACH} = 'tenant' OR (user_id = {_USER} AND ({_REACH} = 'user'"
              f" OR ({_REACH} = 'agents' AND agent = ANY ({_AGENTS}))))))")
    wide = [narrow]
    if operator:
        wide.append(f"{_REACH} = 'all'")
    if audit:
        wide.append(f"{_REACH} = 'chain'")
    return "(" + " OR ".join(wide) + ")"


def role_names(database: str) -> tuple[str, str]:
    """The application and operator roles of a database. Role names are per cluster, so they must be unique per
    database: the database's name when it is a short plain identifier, else a readable head of it and a hash of
    the exact name (two databases whose names differ only after 40 characters, in case or in punctuation never
    share roles; ``migrate`` also refuses roles it made for another database)."""
    plain = "".join(c if c.isalnum() or c == "_" else "_" for c in database.lower())
    if plain == database and 0 < len(plain) <= 40:
        return f"{plain}_app", f"{plain}_operator"
    digest = hashlib.sha256(database.encode("utf-8")).hexdigest()[:10]
    base = f"{plain[:30].rstrip('_') or 'memwarden'}_{digest}"
    return f"{base}_app", f"{base}_operator"


def role_comment(database: str) -> str:
    """The comment ``migrate`` puts on the roles it creates: which database they serve."""
    return f"memwarden roles of database {database}"


def policy_statements(app: str, operator: str, quote: object) -> list[str]:
    """ENABLE + FORCE row-level security and the policies of both roles (and the owner's, for the SECURITY
    DEFINER helpers) on every scoped table; grants. ``quote``: an identifier quoter (psycopg.sql.Identifier)."""
    qa, qo = quote(app), quote(operator)  # type: ignore[operator]
    out: list[str] = []
    for table in (*SCOPED, *AUDITED):
        audit = table in AUDITED
        out += [f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY", f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY"]
        for name in (f"{table}_app", f"{table}_operator", f"{table}_owner", f"{table}_app_insert",
                     f"{table}_operator_insert"):
            out.append(f"DROP POLICY IF EXISTS {name} ON {table}")
        out.append(f"CREATE POLICY {table}_owner ON {table} TO CURRENT_USER USING (true) WITH CHECK (true)")
        for role, q, op in ((app, qa, False), (operator, qo, True)):
            suffix = "app" if role == app else "operator"
            if audit:  # read store-wide for the chain walk, insert within the statement's scope, never change
                out.append(f"CREATE POLICY {table}_{suffix} ON {table} FOR SELECT TO {q}"
                           f" USING {scope_predicate(operator=op, audit=True)}")
                out.append(f"CREATE POLICY {table}_{suffix}_insert ON {table} FOR INSERT TO {q}"
                           f" WITH CHECK (tenant IS NULL OR {scope_predicate(operator=op)})")
            else:
                pred = scope_predicate(operator=op)
                out.append(f"CREATE POLICY {table}_{suffix} ON {table} TO {q} USING {pred} WITH CHECK {pred}")
    every = ("meta", "settings", "tenants", "memories", "memory_history", "memory_terms", "memory_dupkeys",
             "index_log", "memory_vectors", "memory_links", "scope_usage", "sessions", "tokens", "host_reports")
    for q in (qa, qo):
        out.append(f"GRANT USAGE ON SCHEMA public TO {q}")
        out.append(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(every)} TO {q}")
        out.append(f"GRANT SELECT, INSERT ON audit TO {q}")
        out.append(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {q}")
        out.append(f"GRANT EXECUTE ON FUNCTION memwarden_id_tenants(text[]), memwarden_id_scope(text),"
                   f" memwarden_json_list(text, text), memwarden_json_get(text, text) TO {q}")
    return out
