"""A :class:`~memwarden.store.base.View` as the SQL predicate of a query (S3): the scope, clearance, status and
expiry of every record read are bound parameters of its ``WHERE``. Statuses are inlined as literals (a closed set,
checked by ``View``) so the planner sees them as it always did; every other value is a parameter."""

from __future__ import annotations

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
# Keyed items (base.ITEM_KEY / ITEM_NS): the same expressions as the index memories_item (schema.py), so a lookup
# by key is an index probe; json_valid first, so a row whose metadata does not parse matches nothing, never raises
ITEM_KEY_SQL = "(CASE WHEN json_valid({a}.metadata) THEN json_extract({a}.metadata, '$." + ITEM_KEY + "') END)"
ITEM_NS_SQL = "(CASE WHEN json_valid({a}.metadata) THEN json_extract({a}.metadata, '$." + ITEM_NS + "') END)"
_STATUS = {ACTIVE: "'active'", REVIEW: "'review'"}
# Q4: records folded into an active, live consolidation record are represented by it
_UNFOLDED = ("NOT EXISTS (SELECT 1 FROM memory_links l JOIN memories d ON d.id = l.derived_id"
             " WHERE l.source_id = {a}.id AND d.source_type = 'consolidation' AND d.status = 'active'"
             " AND d.expires_at > ?)")


def after_key(order: Order, key: tuple[object, ...]) -> tuple[str, list[object]]:
    """Keyset paging: rows that sort after the row whose ``ORDER_KEYS[order]`` values are ``key``."""
    cols = ORDER_KEYS[order]
    if len(key) != len(cols):
        raise ValueError(f"a page key of {order.value} order has {len(cols)} values")
    op = "<" if order is Order.NEWEST else ">"
    return f"({', '.join('m.' + c for c in cols)}) {op} ({marks(len(cols))})", list(key)


def marks(n: int) -> str:
    return ",".join("?" * n)


def where(view: View, alias: str = "m") -> tuple[str, list[object]]:
    """``(predicate, params)`` restricting rows of ``memories`` (as ``alias``) to what ``view`` lets through.
    Compiled once per distinct view (a search asks with the same one dozens of times)."""
    sql, params = _compiled(view, alias)
    return sql, list(params)


@lru_cache(maxsize=1024)
def _compiled(view: View, alias: str) -> tuple[str, tuple[object, ...]]:
    a = alias
    parts: list[str] = []
    params: list[object] = []
    if view.tenant is not None:
        parts.append(f"{a}.tenant = ?")
        params.append(view.tenant)
    if view.user is not None:
        parts.append(f"{a}.user_id = ?")
        params.append(view.user)
    if view.agents is not None:
        agent, params_ = _agents(view.agents, a)
        parts.append(agent)
        params += params_
    if view.ids is not None:
        parts.append(f"{a}.id = ?" if len(view.ids) == 1 else f"{a}.id IN ({marks(len(view.ids))})")
        params += view.ids
    if view.kind is not None:
        parts.append(f"{a}.kind = ?")
        params.append(view.kind)
    if view.status is not None:
        parts.append(f"{a}.status = {_STATUS[view.status]}")
    if view.live_at is not None:
        parts.append(f"{a}.expires_at > ?")
        params.append(view.live_at)
    if view.expired_at is not None:
        parts.append(f"{a}.expires_at <= ?")
        params.append(view.expired_at)
    if view.clearance is not None:
        parts.append(f"{a}.sensitivity <= ?")
        params.append(view.clearance)
    if view.due is not None:
        parts.append(f"{a}.due_at BETWEEN ? AND ?")
        params += view.due
    if view.vouched:
        parts.append(f"({a}.trust = 'trusted' OR {a}.approval LIKE 'operator:%')")
    if view.unfolded_at is not None:
        parts.append(_UNFOLDED.format(a=a))
        params.append(view.unfolded_at)
    if view.item_key is not None:
        parts.append(f"{ITEM_KEY_SQL.format(a=a)} = ?")
        params.append(view.item_key)
    if view.item_prefix is not None:  # a text prefix as a range: [prefix, prefix + U+10FFFF)
        parts.append(f"{ITEM_NS_SQL.format(a=a)} >= ? AND {ITEM_NS_SQL.format(a=a)} < ?")
        params += [view.item_prefix, view.item_prefix + "\U0010ffff"]
    return " AND ".join(parts) or "1", tuple(params)


def _agents(agents: tuple[str, ...], a: str) -> tuple[str, list[object]]:
    """One agent's scope; or (the common pair) an agent's and its user's shared records, the shared key ''
    inlined."""
    if len(agents) == 1:
        return f"{a}.agent = ?", [agents[0]]
    if len(agents) == 2 and agents[1] == "":
        return f"{a}.agent IN (?, '')", [agents[0]]
    return f"{a}.agent IN ({marks(len(agents))})", list(agents)


def scope_where(tenant: str, user: str, agents: tuple[str, ...], alias: str) -> tuple[str, list[object]]:
    """The scope part alone, on another table's own scope columns (``memory_vectors``)."""
    agent, params = _agents(agents, alias)
    return f"{alias}.tenant = ? AND {alias}.user_id = ? AND {agent}", [tenant, user, *params]
