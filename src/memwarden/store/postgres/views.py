"""A :class:`~memwarden.store.base.View` on PostgreSQL: the SQL predicate of a query (S3: scope, clearance,
status and expiry are bound parameters of its ``WHERE``, as on SQLite) and the scope the row-level security
policies are given for the statement (:func:`reach`). Both come from the same ``View``: a query whose text
lost its scope filter (a bug; :func:`dropped_scope_filter` makes one on purpose for the tests) still returns
only rows of the scope the policies were given."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from memwarden.store.base import ACTIVE, ITEM_KEY, ITEM_NS, ORDER_KEYS, RECORD_COLUMNS, REVIEW, Order, View

SELECT_COLS = ", ".join(f"m.{c}" for c in RECORD_COLUMNS)

ORDER_SQL = {
    Order.ANY: "",
    Order.NEWEST: " ORDER BY m.updated_at DESC, m.id DESC",
    Order.OLDEST: " ORDER BY m.updated_at, m.id",
    Order.DUE: " ORDER BY m.due_at, m.id",
    Order.CREATED: " ORDER BY m.created_at, m.id",
    Order.OPERATOR: " ORDER BY m.agent, m.kind, m.created_at, m.id",
    Order.ID: " ORDER BY m.id",
}
_STATUS = {ACTIVE: "'active'", REVIEW: "'review'"}
# Q4: records folded into an active, live consolidation record are represented by it. Uncorrelated (NOT IN, one
# hashed subplan per statement; source_id is NOT NULL): as a correlated NOT EXISTS, the planner (whose estimates
# the policies' current_setting() predicates flatten to one row) probed the scope's memories once per candidate,
# which made a search of a 1,000-record scope ~10 ms of SQL per candidate read (bench_search --postgres)
_UNFOLDED = ("{a}.id NOT IN (SELECT l.source_id FROM memory_links l JOIN memories d ON d.id = l.derived_id"
             " WHERE d.source_type = 'consolidation' AND d.status = 'active' AND d.expires_at > %s)")

# (reach, tenant, user, agents): what backend.Handle.use sets for the policies (schema.scope_predicate)
Reach = tuple[str, str, str, tuple[str, ...]]
CHAIN: Reach = ("chain", "", "", ())  # the audit chain walk (audit rows only)
ALL: Reach = ("all", "", "", ())  # every tenant (the operator role's policies only)


class _Hook:
    drop_scope = False  # tests only: every scope predicate left out of the SQL text (RLS must still hold)


HOOK = _Hook()


@contextmanager
def dropped_scope_filter() -> Iterator[None]:
    """Tests only: build queries without their scope filter (and writes by id without their id filter), as a
    bug would — row-level security is then all that limits what they touch."""
    HOOK.drop_scope = True
    _compiled.cache_clear()
    try:
        yield
    finally:
        HOOK.drop_scope = False
        _compiled.cache_clear()


def reach(view: View) -> Reach | None:
    """The policies' scope for ``view``; ``None`` for an unscoped view (the caller loops over tenants)."""
    if view.tenant is None:
        return None
    if view.user is None:
        return ("tenant", view.tenant, "", ())
    if view.agents is None:
        return ("user", view.tenant, view.user, ())
    return ("agents", view.tenant, view.user, view.agents)


def scope_reach(tenant: str, user: str, agents: tuple[str, ...] | list[str]) -> Reach:
    return ("agents", tenant, user, tuple(agents))


def by_id(column: str = "id") -> str:
    """``column = %s`` — or, under :func:`dropped_scope_filter`, a predicate true for every row."""
    return "(%s::text IS NOT NULL)" if HOOK.drop_scope else f"{column} = %s"


def after_key(order: Order, key: tuple[object, ...]) -> tuple[str, list[object]]:
    cols = ORDER_KEYS[order]
    if len(key) != len(cols):
        raise ValueError(f"a page key of {order.value} order has {len(cols)} values")
    op = "<" if order is Order.NEWEST else ">"
    return f"({', '.join('m.' + c for c in cols)}) {op} ({marks(len(cols))})", list(key)


# Keyed items (base.ITEM_KEY / ITEM_NS), read from the record's metadata text
ITEM_KEY_SQL = "memwarden_json_get({a}.metadata, '" + ITEM_KEY + "')"
ITEM_NS_SQL = "memwarden_json_get({a}.metadata, '" + ITEM_NS + "')"


def marks(n: int) -> str:
    return ",".join(["%s"] * n)


def where(view: View, alias: str = "m") -> tuple[str, list[object]]:
    sql, params = _compiled(view, alias)
    return sql, list(params)


@lru_cache(maxsize=1024)
def _compiled(view: View, alias: str) -> tuple[str, tuple[object, ...]]:
    a = alias
    scope, params = scope_where_of(view, a)
    parts: list[str] = [] if scope == "true" else [scope]
    if view.ids is not None:
        parts.append(f"{a}.id = ANY (%s)")
        params.append(list(view.ids))
    if view.kind is not None:
        parts.append(f"{a}.kind = %s")
        params.append(view.kind)
    if view.status is not None:
        parts.append(f"{a}.status = {_STATUS[view.status]}")
    if view.live_at is not None:
        parts.append(f"{a}.expires_at > %s")
        params.append(view.live_at)
    if view.expired_at is not None:
        parts.append(f"{a}.expires_at <= %s")
        params.append(view.expired_at)
    if view.clearance is not None:
        parts.append(f"{a}.sensitivity <= %s")
        params.append(view.clearance)
    if view.due is not None:
        parts.append(f"{a}.due_at BETWEEN %s AND %s")
        params += view.due
    if view.vouched:
        parts.append(f"({a}.trust = 'trusted' OR {a}.approval LIKE 'operator:%%')")
    if view.unfolded_at is not None:
        parts.append(_UNFOLDED.format(a=a))
        params.append(view.unfolded_at)
    if view.item_key is not None:  # the expression of the index memories_item (schema.py, migration 2)
        parts.append(f"{ITEM_KEY_SQL.format(a=a)} = %s")
        params.append(view.item_key)
    if view.item_prefix is not None:  # a text prefix as a byte-order range: [prefix, prefix + U+10FFFF)
        ns = ITEM_NS_SQL.format(a=a)
        parts.append(f'{ns} COLLATE "C" >= %s AND {ns} COLLATE "C" < %s')
        params += [view.item_prefix, view.item_prefix + "\U0010ffff"]
    return " AND ".join(parts) or "true", tuple(params)


def scope_where(tenant: str, user: str, agents: tuple[str, ...], alias: str) -> tuple[str, list[object]]:
    if HOOK.drop_scope:
        return "true", []
    return (f"{alias}.tenant = %s AND {alias}.user_id = %s AND {alias}.agent = ANY (%s)",
            [tenant, user, list(agents)])


def scope_where_of(view: View, alias: str) -> tuple[str, list[object]]:
    """The scope part of ``view`` (whichever levels it names) on another table's own scope columns."""
    if HOOK.drop_scope:
        return "true", []
    parts: list[str] = []
    params: list[object] = []
    for column, value in (("tenant", view.tenant), ("user_id", view.user)):
        if value is not None:
            parts.append(f"{alias}.{column} = %s")
            params.append(value)
    if view.agents is not None:
        parts.append(f"{alias}.agent = ANY (%s)")
        params.append(list(view.agents))
    return " AND ".join(parts) or "true", params
