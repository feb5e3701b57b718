"""``memwarden review …`` and ``memwarden token …`` (T3): the operator's side of untrusted memory.

Review commands need an operator token (``--token`` or ``$MEMWARDEN_TOKEN``); an agent token is refused and
the attempt is written to the audit log. Tokens are administered by whoever holds the signing key.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from memwarden import auth, review
from memwarden.cli import (
    EXIT_USAGE,
    OPERATOR_ACTOR,
    App,
    CliError,
    JsonOpt,
    TenantOpt,
    UserOpt,
    _console,
    _echo_json,
    _n,
    _state,
    _when,
    expiry_text,
    preview,
    printable,
)
from memwarden.errors import InvalidInput
from memwarden.records import now_ms
from memwarden.timevalues import iso, parse_expiry

TokenOpt = Annotated[
    str | None,
    typer.Option("--token", envvar="MEMWARDEN_TOKEN", show_default=False,
                 help="Operator token (default: $MEMWARDEN_TOKEN). Create one with `memwarden token create`."),
]

review_app = App(
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Memories held for review (written by sessions that ingested untrusted content): list, inspect, "
    "promote or reject them. Needs an operator token.",
)
token_app = App(
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Operator and agent credentials. Tokens are shown once and stored hashed.",
)


def _principal(ctx: typer.Context, token: str | None) -> tuple[Any, auth.Principal]:
    service = _state(ctx).service()
    return service, auth.authenticate(service, token)


def _why(item: review.HeldItem) -> str:
    parts = [item.why] if item.why else []
    if item.rules:
        parts.append("rules: " + ", ".join(item.rules))
    return "; ".join(parts) or "held"


@review_app.command("list")
def review_list(
    ctx: typer.Context,
    token: TokenOpt = None,
    user: UserOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many.")] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Held memories of your tenant (or of one --user), oldest first, with why each was held."""
    service, who = _principal(ctx, token)
    items = review.queue(service, who, user=user, limit=limit)
    if as_json:
        _echo_json({"count": len(items), "held": [i.to_dict() for i in items]})
        return
    con = _console()
    if not items:
        con.print(Text(f"nothing is held for review in tenant {printable(who.tenant)}", style="dim"))
        return
    table = Table(title=f"held for review in {printable(who.tenant)}: {_n(len(items), 'memory')}",
                  box=box.SIMPLE_HEAVY, title_justify="left")
    table.add_column("id", style="cyan", no_wrap=True, min_width=26)
    table.add_column("scope · kind", overflow="fold")
    table.add_column("held (UTC)", no_wrap=True)
    table.add_column("content", ratio=1, overflow="fold")
    table.add_column("why", ratio=1, overflow="fold")
    for item in items:
        rec = item.record
        if rec is None:
            table.add_row(item.id, "?", "?", Text("(malformed row)", style="red"), item.checked.refused or "")
            continue
        p = rec.provenance
        content = Text(preview(rec.content, 100))
        if not item.checked.ok:
            content = Text(f"(fails verification: {item.checked.refused})", style="red")
        table.add_row(item.id, Text(f"{printable(p.user)}/{printable(p.agent or '*shared*')} · {rec.kind}"),
                      _when(rec.created_at), content, Text(preview(_why(item), 140)))
    con.print(table)


@review_app.command("show")
def review_show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", show_default=False, help="A held memory's id.")],
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One held memory in full: content, provenance (session, sources), why it was held, what it revises."""
    service, who = _principal(ctx, token)
    item = review.show(service, who, memory_id)
    if as_json:
        _echo_json(item.to_dict())
        return
    rec = item.record
    assert rec is not None
    p = rec.provenance
    con = _console()
    table = Table(box=box.SIMPLE, show_header=False, title=f"held memory {item.id}", title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, str | Text]] = [
        ("content", Text(printable(rec.content, keep_newlines=True))),
        ("scope", f"{p.tenant}/{p.user}/{p.agent or '*shared*'}"),
        ("kind", rec.kind),
        ("verified", Text("yes", style="green") if item.checked.ok
         else Text(f"NO: {item.checked.refused}", style="red")),
        ("why held", _why(item)),
        ("session taint", "; ".join(item.taint) or "-"),
        ("written by", f"{p.source_type} in session {p.session_id}"),
        ("sources", ", ".join(p.sources) or "-"),
        ("trust", p.trust),
        ("created", _when(rec.created_at)),
        ("expires", expiry_text(rec)),
    ]
    if item.revises:
        current = item.current.content if item.current is not None else "(gone or fails verification)"
        rows.append(("revises", Text(f"{item.revises}: {preview(current, 200)}")))
    for k, v in rows:
        table.add_row(k, v if isinstance(v, Text) else Text(printable(v)))
    con.print(table)
    con.print(Text("promote: memwarden review promote " + item.id + ("  [--replace]" if item.revises else "")
                   + "    reject: memwarden review reject " + item.id, style="dim"))


@review_app.command("promote")
def review_promote(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", show_default=False, help="A held memory's id.")],
    token: TokenOpt = None,
    note: Annotated[str | None, typer.Option(show_default=False, help="Why you approved it (kept in the "
                                                                      "audit log).")] = None,
    replace_current: Annotated[bool, typer.Option("--replace", help="For a proposed revision: also remove the "
                                                                    "memory it revises.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Approve a held memory: it is recalled from the next session on, still marked untrusted, with you as
    the approver. The write gate checks it again."""
    service, who = _principal(ctx, token)
    result = review.promote(service, who, memory_id, note=note, replace_current=replace_current)
    if as_json:
        _echo_json({**result.to_dict(), "approval": f"operator:{who.name}"})
        return
    _console().print(Text.assemble(("✓ promoted ", "green"), (memory_id, "cyan"),
                                   f" (version {result.version}, approval operator:{printable(who.name)}, "
                                   "trust stays untrusted)"))


@review_app.command("reject")
def review_reject(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", show_default=False, help="A held memory's id.")],
    token: TokenOpt = None,
    reason: Annotated[str | None, typer.Option(show_default=False, help="Why (kept in the audit log).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Reject a held memory: it is deleted everywhere; the audit log keeps a tombstone (id, hash, who, when)."""
    service, who = _principal(ctx, token)
    removed = review.reject(service, who, memory_id, reason=reason)
    if as_json:
        _echo_json({"status": "rejected", "ids": removed})
        return
    _console().print(Text.assemble(("✓ rejected ", "green"), (memory_id, "cyan"),
                                   f" ({_n(len(removed), 'record')} deleted; tombstone in the audit log)"))


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    role: Annotated[str, typer.Option(help="operator (reviews its tenant) or agent (one scope).",
                                      show_default=False)],
    tenant: TenantOpt = None,
    user: Annotated[str | None, typer.Option(
        "--user", show_default=False,
        help="Operator tokens: narrow the token to this one user (else pass --all-users). Agent tokens: the user "
        "of the scope. Never read from $MEMWARDEN_USER: a token's scope is given here.")] = None,
    all_users: Annotated[bool, typer.Option(
        "--all-users", help="Operator tokens: every user of the tenant (the default when $MEMWARDEN_USER is "
        "unset; required when it is set and no --user is given).")] = False,
    agent: Annotated[str | None, typer.Option("--agent", show_default=False,
                                              help="Agent tokens: the agent of the scope.")] = None,
    name: Annotated[str | None, typer.Option(show_default=False, help="A name for the audit log (default: "
                                                                      "generated).")] = None,
    host_reports_ingest: Annotated[bool, typer.Option(
        "--host-reports-ingest",
        help="Agent tokens: the host reports what its sessions ingest (the REST ingest route, `memwarden hook`), "
             "so they start clean and are tainted by what it reports. Without it every session of the token is "
             "untrusted from its start: its saves of facts, preferences and procedures are held for review.")
    ] = False,
    expires: Annotated[str | None, typer.Option(
        "--expires", show_default=False,
        help="Refuse the token from this time on: a duration (90d, 12h, 30m, 2w) or an ISO-8601 time "
             "(2030-06-30T09:00Z). Default: until revoked.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a token and print it once (it is stored only hashed), with the scope it covers.

    Operators need --tenant and cover every user of it, or one --user. Agents need --tenant, --user and --agent.

    A token's user is never taken from $MEMWARDEN_USER (a shell set up for one user narrows no credential).

    While $MEMWARDEN_USER is set, an operator token needs --user USER or --all-users, said on the command line.

    A tenant taken from $MEMWARDEN_TENANT is named on stderr."""
    if role not in auth.ROLES:
        raise CliError(f"--role must be one of {', '.join(auth.ROLES)}", EXIT_USAGE)
    if not tenant:
        raise CliError("missing --tenant (or $MEMWARDEN_TENANT)", EXIT_USAGE)
    ambient_user = os.environ.get("MEMWARDEN_USER")
    ignored = f" ($MEMWARDEN_USER={printable(ambient_user)} is not read for tokens)" if ambient_user else ""
    if all_users and (user or role != auth.OPERATOR):
        raise CliError("--all-users is for operator tokens without --user", EXIT_USAGE)
    if role == auth.OPERATOR and not user and not all_users and ambient_user:
        raise CliError("say which users the operator token covers: --user USER for one user, or --all-users for "
                       f"every user of {printable(tenant)}{ignored}", EXIT_USAGE)
    if role == auth.AGENT and not user:
        raise CliError(f"an agent token is bound to one scope: pass --user and --agent{ignored}", EXIT_USAGE)
    if getattr(ctx.get_parameter_source("tenant"), "name", None) == "ENVIRONMENT":  # click's ParameterSource
        typer.echo(f"note: tenant {printable(tenant)} is from $MEMWARDEN_TENANT", err=True)
    if host_reports_ingest and role != auth.AGENT:
        raise CliError("--host-reports-ingest is for agent tokens", EXIT_USAGE)
    expires_at = None
    if expires is not None:
        try:
            expires_at = parse_expiry(expires, now_ms())
        except InvalidInput as exc:
            raise CliError(f"--expires: {exc}", EXIT_USAGE) from None
    service = _state(ctx).service()
    token, principal = auth.create_token(service, role, tenant, user=user, agent=agent, name=name,
                                         actor=OPERATOR_ACTOR, host_reports_ingest=host_reports_ingest,
                                         expires_at=expires_at)
    if as_json:
        _echo_json({"token": token, **principal.to_dict()})
        return
    con = _console()
    con.print(Text.assemble(("✓ created ", "green"), f"{role} token ", (principal.name, "cyan"),
                            f" ({principal.token_id})"))
    con.print(Text.assemble("  scope: ", (printable(principal.scope_text), "bold")))
    if role == auth.AGENT:
        con.print("  profile: " + ("the host reports its ingest: sessions start clean" if host_reports_ingest else
                                   "the host does not report its ingest: every session is untrusted from its "
                                   "start (saves held for review)"))
    con.print(f"  expires: {iso(expires_at)}" if expires_at is not None else "  expires: never (until revoked)")
    con.print(Text("it is shown only now; store it like a password:", style="dim"))
    typer.echo(token)


@token_app.command("list")
def token_list(ctx: typer.Context, tenant: TenantOpt = None, as_json: JsonOpt = False) -> None:
    """Tokens (never their secret), optionally of one tenant."""
    rows = auth.list_tokens(_state(ctx).service(), tenant)
    if as_json:
        _echo_json(rows)
        return
    table = Table(title=f"{_n(len(rows), 'token')}", box=box.SIMPLE_HEAVY, title_justify="left")
    for col in ("id", "name", "role", "scope", "host reports ingest", "created (UTC)", "expires", "revoked", "row"):
        # the id is copied into `token revoke`: never wrapped over two lines (the other columns fold instead)
        table.add_column(col, overflow="fold", no_wrap=col == "id", min_width=26 if col == "id" else None)
    now = now_ms()
    for r in rows:
        scope = "/".join(str(x) for x in (r["tenant"], r["user"], r["agent"]) if x)
        profile = "-" if r["role"] != auth.AGENT else ("yes" if r["host_reports_ingest"] else "no (saves held)")
        exp = r["expires_at"]
        expiry = "-" if not isinstance(exp, int) else (
            _when(exp) + (" (expired)" if exp <= now else ""))
        table.add_row(r["id"], Text(printable(r["name"])), r["role"], Text(printable(scope)), profile,
                      _when(r["created_at"]), expiry, _when(r["revoked_at"]) if r["revoked_at"] else "-",
                      "signed" if r["verified"] else Text("edited: refused", style="red"))
    _console().print(table)


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(metavar="ID|NAME", show_default=False, help="Token id or name.")],
    as_json: JsonOpt = False,
) -> None:
    """Revoke a token: it is refused from now on."""
    row = auth.revoke_token(_state(ctx).service(), token_id, actor=OPERATOR_ACTOR)
    if as_json:
        _echo_json(row)
        return
    _console().print(Text.assemble(("✓ revoked ", "green"), (printable(row["name"]), "cyan"), f" ({row['id']})"))
