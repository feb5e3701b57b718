"""``memwarden`` command line: the operator's view of the store (typer + rich).

Every command reports an error as ONE line on stderr and a non-zero exit, never a traceback: the root
command class (:class:`_OneLineErrors`) catches memwarden errors, OS and database errors, bad input and usage
errors in one place. Writes made here use ``source_type="operator"`` and ``actor="operator:cli"`` and go
through the same write path as every agent write (gate → taint → sign → store → audit).

Exit codes: 0 success, 1 an error or a failed check (doctor, audit verify, import with failed lines),
2 bad usage (unknown option, missing identity), 70 an internal error (set ``MEMWARDEN_DEBUG=1`` for the
traceback).
"""

from __future__ import annotations

if __name__ == "__main__":  # `python -m memwarden.cli`: run the importable module, where every subcommand is
    from memwarden.cli import main as _main  # registered (cli_review imports it), not a second copy of it

    _main()

import json
import os
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from memwarden import audit
from memwarden.errors import CapacityError, MemwardenError, NotFound
from memwarden.events import Event
from memwarden.ids import new_id
from memwarden.policy import KEEP
from memwarden.records import SENSITIVITY_LEVELS, Kind, Record, SourceType, Status, Trust, iso
from memwarden.scope import Scope
from memwarden.service import Context, MemoryService, WriteResult
from memwarden.store import DATABASE_ERRORS

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
OPERATOR_ACTOR = "operator:cli"
OPERATOR_CLEARANCE = len(SENSITIVITY_LEVELS) - 1  # an operator sees every sensitivity in the scopes it names


# --- safe terminal output -----------------------------------------------------------------------------------

_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """Escape control, format (bidi, zero-width), private-use and line-separator characters as ``\\xNN``/
    ``\\uNNNN`` so stored or candidate text can never drive the terminal (escape sequences, bidi tricks)."""
    out: list[str] = []
    for ch in text:
        if keep_newlines and ch in "\n\t":
            out.append(ch)
        elif unicodedata.category(ch) in _UNPRINTABLE:
            o = ord(ch)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


def preview(text: str, width: int = 80) -> str:
    """One printable line of at most ``width`` characters."""
    flat = printable(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def one_line(message: object) -> str:
    return " ".join(printable(str(message)).split())


def _console(stderr: bool = False) -> Console:
    """Rich console; when output is not a terminal use a wide, fixed width so ids and previews never wrap."""
    con = Console(stderr=stderr, highlight=False)
    if not con.is_terminal and "COLUMNS" not in os.environ:
        con = Console(stderr=stderr, highlight=False, width=160)
    return con


def _echo_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False))


def _n(count: int, noun: str) -> str:
    """``1 memory``, ``2 memories``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{count} {noun if count == 1 else plural}"


def _when(ms: int | None) -> str:
    return (iso(ms) or "-").replace("T", " ").replace("Z", "")


# --- errors -------------------------------------------------------------------------------------------------


class CliError(Exception):
    """A problem to report as one line with a given exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _error_line(message: object) -> None:
    typer.echo(typer.style("error:", fg="red", bold=True) + " " + one_line(message), err=True)


def _click_exception(name: str) -> type[Exception]:
    """Click's exception class ``name`` (vendored by recent typer releases, a dependency of older ones)."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    return typer.BadParameter  # pragma: no cover


_ClickException = _click_exception("ClickException")
_UsageError = _click_exception("UsageError")


def report_error(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr (plus a capacity error's entry list, D1); return the exit code."""
    if isinstance(exc, CliError):
        _error_line(exc)
        return exc.exit_code
    if isinstance(exc, CapacityError):
        _error_line(exc)
        for e in exc.entries:
            typer.echo(f"  {e['id']}  {e['bytes']:>6} B  {preview(str(e['preview']), 90)}", err=True)
        return EXIT_ERROR
    if isinstance(exc, MemwardenError):
        _error_line(exc)
        return EXIT_ERROR
    if isinstance(exc, _ClickException):
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `memwarden` / `memwarden audit`: help was shown
            return 0
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _error_line(exc.format_message() + hint)  # type: ignore[attr-defined]
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    if isinstance(exc, typer.Abort):
        _error_line("aborted")
        return EXIT_ERROR
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        _error_line(f"{exc.strerror or exc}{where}")
        return EXIT_ERROR
    if isinstance(exc, DATABASE_ERRORS):
        _error_line(f"database error: {exc}")
        return EXIT_ERROR
    if isinstance(exc, UnicodeDecodeError):
        _error_line(f"input is not valid UTF-8 (byte {exc.start})")
        return EXIT_ERROR
    if isinstance(exc, ValueError):
        _error_line(exc)
        return EXIT_ERROR
    _error_line(f"internal error: {type(exc).__name__}: {exc} (set MEMWARDEN_DEBUG=1 to see the traceback)")
    return EXIT_INTERNAL


# What someone may write after a flag, believing it takes a value (`--json true`, `--yes no`).
_BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f"})


def _is_flag(param: Any) -> bool:
    return getattr(param, "param_type_name", None) == "option" and bool(getattr(param, "is_flag", False))


class _FlagsAreFlags:
    """Mixin of every memwarden command and group: a boolean option is shown and parsed as a flag.

    typer's rich help prints a type placeholder after every option, flags included (``--json <bool>``:
    ``TyperOption.display_type_rich`` returns one unless a metavar is set), which reads as if the flag took a
    value. ``get_params`` gives each flag (``--help`` too) an empty metavar, so help shows nothing after it.
    ``parse_args`` refuses a flag followed by a boolean word: ``--json true`` would otherwise fail with
    "unexpected extra argument", or on a command with a free argument (``save``, ``search``) silently become
    that argument, and ``--json false`` would turn the flag on.
    """

    def get_params(self, ctx: typer.Context) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if _is_flag(param) and param.metavar is None:
                param.metavar = ""
        return params

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _refuse_flag_values(ctx, self.get_params(ctx), args)
        return super().parse_args(ctx, args)  # type: ignore[misc, no-any-return]


def _refuse_flag_values(ctx: typer.Context, params: Sequence[Any], args: Sequence[str]) -> None:
    """A usage error for ``--flag true`` (or ``false``, ``yes``, ``0`` …) among ``args``."""
    flags: set[str] = set()
    valued: set[str] = set()
    for param in params:
        if getattr(param, "param_type_name", None) != "option":
            continue
        names = [*param.opts, *param.secondary_opts]
        (flags if _is_flag(param) else valued).update(names)
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            return
        if token in flags and i + 1 < len(args) and args[i + 1].lower() in _BOOLEAN_WORDS:
            word = printable(args[i + 1])
            raise _UsageError(
                f"{token} is a flag and takes no value: write {token} for on, leave it out for off (not "
                f"'{token} {word}'; a text argument '{word}' goes before the flag or after --)",
                ctx=ctx,  # type: ignore[call-arg]
            )
        if token in valued:
            i += 2  # the option's value, whatever it looks like
            continue
        if not token.startswith("-") and not ctx.allow_interspersed_args:
            return  # a group: the rest belongs to the subcommand
        i += 1


class _Command(_FlagsAreFlags, TyperCommand):
    """Every memwarden command (see :class:`_FlagsAreFlags`)."""


class _Group(_FlagsAreFlags, TyperGroup):
    """Every memwarden command group below the root (see :class:`_FlagsAreFlags`)."""


class App(typer.Typer):
    """``typer.Typer`` whose commands and groups are memwarden's: flags shown and parsed as flags."""

    def __init__(self, *, cls: type[TyperGroup] | None = None, **kwargs: Any) -> None:
        super().__init__(cls=cls or _Group, **kwargs)

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or _Command, **kwargs)


class _OneLineErrors(_FlagsAreFlags, TyperGroup):
    """Root command: runs the app in non-standalone mode and turns every exception into one stderr line."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name or "memwarden",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except Exception as exc:
            if os.environ.get("MEMWARDEN_DEBUG"):
                raise
            code = report_error(exc)
        if standalone_mode:
            sys.exit(code)
        return code


# --- shared state and options -------------------------------------------------------------------------------


@dataclass
class State:
    url: str | None = None
    verbose: bool = False
    _service: MemoryService | None = field(default=None, repr=False)

    def service(self, *, inspect: bool = False) -> MemoryService:
        """Open the store on first use (commands such as ``scan`` and ``demo`` never open it). ``inspect``
        (doctor, audit verify, audit accept-restore): open a store behind its anchor too, to report on it; it
        still serves nothing and takes no other write (I5)."""
        if self._service is None:
            import memwarden
            from memwarden.store import file_of

            path = file_of(self.url)  # None: a server database (created by `memwarden migrate`)
            existed = path is None or path.exists()
            self._service = memwarden.open(self.url, refuse_rollback=not inspect)
            if not existed:  # a mistyped --db must not pass unnoticed
                typer.echo(f"note: created a new, empty store at {printable(str(path))}", err=True)
            if self.verbose:
                self._service.events.subscribe(print_event)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None


def print_event(ev: Event) -> None:
    """A3: one line per lifecycle event on stderr (``--verbose``)."""
    scope = "/".join(x for x in (ev.tenant, ev.user, ev.agent) if x) or "-"
    details = json.dumps(ev.details, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    typer.echo(
        f"event #{ev.seq} {ev.event} memory={ev.memory_id or '-'} actor={one_line(ev.actor)} "
        f"scope={one_line(scope)} {preview(details, 200)}",
        err=True,
    )


def _state(ctx: typer.Context) -> State:
    state = ctx.find_object(State)
    if state is None:  # pragma: no cover - the root callback always sets it
        state = State()
        ctx.obj = state
        ctx.call_on_close(state.close)
    return state


def require_scope(tenant: str | None, user: str | None, agent: str | None = None) -> Scope:
    """The identity a command acts in; a missing tenant or user is one clear usage error (S2)."""
    missing = [
        f"--{name} (or ${env})"
        for name, env, value in (("tenant", "MEMWARDEN_TENANT", tenant), ("user", "MEMWARDEN_USER", user))
        if not value
    ]
    if missing:
        raise CliError(f"missing identity: pass {' and '.join(missing)}", EXIT_USAGE)
    return Scope(tenant or "", user or "", agent or None)


def operator_context(
    scope: Scope, *, sources: tuple[str, ...] = ("cli",), read_shared: bool = False
) -> Context:
    return Context(
        scope,
        session_id=new_id(),
        source_type=SourceType.OPERATOR,
        actor=OPERATOR_ACTOR,
        sources=sources,
        trust=Trust.TRUSTED,
        clearance=OPERATOR_CLEARANCE,
        read_shared=read_shared,
    )


class Sensitivity(StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    SECRET = "secret"


class ExportFormat(StrEnum):
    JSONL = "jsonl"
    MD = "md"


TenantOpt = Annotated[
    str | None,
    typer.Option("--tenant", envvar="MEMWARDEN_TENANT", show_default=False, help="Tenant of the scope."),
]
UserOpt = Annotated[
    str | None, typer.Option("--user", envvar="MEMWARDEN_USER", show_default=False, help="User of the scope.")
]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        envvar="MEMWARDEN_AGENT",
        show_default=False,
        help="Agent of the scope; omit for the user's shared memories (read by agents that opt in).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


# --- the app ------------------------------------------------------------------------------------------------

app = App(
    name="memwarden",
    cls=_OneLineErrors,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    help="memwarden: persistent memory for LLM agents where every write crosses a trust boundary.\n\n"
    "Operator tools: save, search and inspect memories, see everything held about a user (beliefs), "
    "delete on request, verify the audit chain and the store (doctor), export and import through the "
    "write gate. Start with [bold]memwarden quickstart[/bold] (a server to call) or "
    "[bold]memwarden demo[/bold] (a guided tour).",
    epilog="Identity comes from --tenant/--user/--agent or "
    "$MEMWARDEN_TENANT/$MEMWARDEN_USER/$MEMWARDEN_AGENT. The signing key comes from $MEMWARDEN_KEY, "
    "$MEMWARDEN_KEY_FILE or the key file in your config dir. Flags (--json, --yes, --all-agents, …) take no "
    "value: give one to turn it on, leave it out for off.",
)
audit_app = App(
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="The hash-chained audit log: browse it, verify it, find which sessions a memory reached.",
)
app.add_typer(audit_app, name="audit")


def _version(value: bool) -> None:
    if value:
        from memwarden import __version__

        typer.echo(f"memwarden {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            "--url",
            envvar="MEMWARDEN_URL",
            show_default=False,
            help="Database: a SQLite file path or sqlite:///path.db, or a PostgreSQL URL "
            "(postgresql://app-role@host/db, after `memwarden migrate`). Default: $MEMWARDEN_URL, else "
            "memwarden.db in your user data directory (created on first use).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Print every memory event (added, held, rejected, removed, read, …) to stderr "
            "as it happens.",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the memwarden version and exit."
        ),
    ] = False,
) -> None:
    """memwarden: persistent memory for LLM agents where every write crosses a trust boundary."""
    state = State(url=db or None, verbose=verbose)
    ctx.obj = state
    ctx.call_on_close(state.close)


# --- rendering helpers --------------------------------------------------------------------------------------


def _trust_text(trust: str) -> Text:
    return Text(trust, style="green" if trust == Trust.TRUSTED else "yellow")


def _status_text(status: str) -> Text:
    return Text(
        "held" if status == Status.REVIEW else status, style="green" if status == Status.ACTIVE else "yellow"
    )


def _source_label(rec: Record) -> str:
    p = rec.provenance
    return p.source_type + (f": {', '.join(p.sources)}" if p.sources else "")


WIDE = 140  # below this many columns, tables stack several facts per cell


def _stack(*parts: str | Text) -> Text:
    return Text("\n").join(p if isinstance(p, Text) else Text(p) for p in parts)


def records_table(
    records: Sequence[Record], *, title: str | None = None, show_agent: bool = False, width: int = WIDE
) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    table.add_column("id", no_wrap=True, style="cyan", min_width=26)
    wide = width >= WIDE
    if wide:
        if show_agent:
            table.add_column("agent", overflow="fold")
        for col in ("kind", "updated (UTC)", "trust", "sens.", "conf."):
            table.add_column(col, no_wrap=True, justify="right" if col == "conf." else "left")
    else:
        table.add_column(("agent · " if show_agent else "") + "kind / trust", overflow="fold")
    table.add_column("content", ratio=1, min_width=24, overflow="fold")
    for r in records:
        agent = printable(r.provenance.agent) or "*shared*"
        content = Text(preview(r.content, 100 if wide else 160))
        if wide:
            row: list[Any] = [r.id] + ([Text(agent)] if show_agent else [])
            row += [
                r.kind,
                _when(r.updated_at),
                _trust_text(r.provenance.trust),
                r.sensitivity_name,
                f"{r.confidence:.2f}",
                content,
            ]
        else:
            row = [
                _stack(r.id, Text(_when(r.updated_at), style="dim")),
                _stack((f"{agent} · " if show_agent else "") + r.kind, _trust_text(r.provenance.trust)),
                content,
            ]
        table.add_row(*row)
    return table


def _print_records(
    records: Sequence[Record],
    *,
    title: str,
    as_json: bool,
    show_agent: bool = False,
    empty: str = "no memories",
) -> None:
    if as_json:
        _echo_json([r.to_dict() for r in records])
        return
    con = _console()
    if not records:
        con.print(Text(f"{title}: {empty}", style="dim"))
        return
    con.print(records_table(records, title=title, show_agent=show_agent, width=con.width))


# --- memory commands ----------------------------------------------------------------------------------------


@app.command()
def save(
    ctx: typer.Context,
    text: Annotated[
        str,
        typer.Argument(
            metavar="TEXT",
            show_default=False,
            help='The memory to save, e.g. "User prefers Go for services".',
        ),
    ],
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    kind: Annotated[Kind, typer.Option(help="What sort of memory this is.")] = Kind.FACT,
    ttl_days: Annotated[
        str | None,
        typer.Option(
            "--ttl-days",
            metavar="DAYS|keep",
            show_default=False,
            help="Keep it this many days (1-365; default from the policy for the kind, 30 for most), or keep: "
            "until it is deleted (gc never purges it; the store's policy decides which kinds may be kept).",
        ),
    ] = None,
    sensitivity: Annotated[
        Sensitivity | None,
        typer.Option(show_default=False, help="Sensitivity (default: the policy's, internal)."),
    ] = None,
    due: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="Reminders only: due time, ISO-8601 such as 2026-12-01T09:00Z (at most 1.5 days ago).",
        ),
    ] = None,
    confidence: Annotated[float, typer.Option(min=0.0, max=1.0, help="How sure you are, 0 to 1.")] = 1.0,
    trigger: Annotated[
        list[str] | None,
        typer.Option("--trigger", show_default=False,
                     help="Procedures only (repeatable): a phrase that makes agents of the scope use it."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Save a memory as the operator (trusted, source_type=operator), through the write gate. A procedure
    (--kind procedure) needs at least one --trigger phrase."""
    from memwarden.procedures import check_triggers
    from memwarden.session import parse_due

    scope = require_scope(tenant, user, agent)
    if trigger and kind != Kind.PROCEDURE:
        raise CliError("--trigger is for procedures (--kind procedure)", EXIT_USAGE)
    metadata = {"triggers": check_triggers(trigger or [])} if kind == Kind.PROCEDURE else None
    service = _state(ctx).service()
    result = service.write(
        operator_context(scope),
        text,
        kind=str(kind),
        confidence=confidence,
        sensitivity=str(sensitivity) if sensitivity else None,
        ttl_days=_ttl_days(ttl_days),
        due_at=parse_due(due),
        metadata=metadata,
    )
    _report_write(result, scope, as_json)


def _ttl_days(value: str | None) -> int | str | None:
    """``--ttl-days``: a whole number of days, or ``keep`` (R3; the policy checks the range and who may keep)."""
    if value is None or value.strip().lower() == KEEP:
        return None if value is None else KEEP
    try:
        return int(value.strip())
    except ValueError:
        raise CliError(f"--ttl-days must be a whole number of days (1-365) or {KEEP}; got {printable(value)!r}",
                       EXIT_USAGE) from None


def expiry_text(rec: Record) -> str:
    """When ``rec`` expires, for people: a date, or "never (kept until deleted)"."""
    return "never (kept until deleted)" if rec.kept_until_deleted else _when(rec.expires_at)


def _report_write(result: WriteResult, scope: Scope, as_json: bool) -> None:
    if as_json:
        _echo_json(result.to_dict())
    elif result.status == "accepted" and result.message.startswith("near-duplicate"):
        _console().print(
            Text.assemble(
                ("✓ already saved: nothing new stored; ", "yellow"),
                (str(result.id), "cyan"),
                " is a near-duplicate of it",
            )
        )
    elif result.status == "accepted":
        _console().print(
            Text.assemble(
                ("✓ saved ", "green"),
                (str(result.id), "cyan"),
                f" (version {result.version}) in {printable(str(scope))}",
            )
        )
        if result.verdict.content is not None and result.record is not None:
            _console().print(
                Text(
                    f"  the write gate removed session-scoped references ({', '.join(result.verdict.rules)}); "
                    f"stored: {preview(result.record.content, 100)}",
                    style="yellow",
                )
            )
    elif result.status == "review":
        _console().print(
            Text.assemble(
                ("⚠ held for operator review: ", "yellow"),
                (str(result.id), "cyan"),
                f" - {one_line(result.message)}",
            )
        )
    if result.status == "rejected":
        raise CliError(f"rejected by the write gate: {result.verdict.reason()}")


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Words to look for.", show_default=False)],
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    k: Annotated[int, typer.Option("-k", "--k", min=1, max=100, help="How many results.")] = 5,
    kind: Annotated[Kind | None, typer.Option(show_default=False, help="Only this kind.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Full-text search of the live memories of one scope (held and expired ones never match)."""
    scope = require_scope(tenant, user, agent)
    service = _state(ctx).service()
    found = service.search(
        operator_context(scope, read_shared=service.policy.read_shared),
        query,
        k=k,
        kind=str(kind) if kind else None,
    )
    _print_records(
        found,
        title=f"search {preview(query, 40)!r} in {printable(str(scope))}",
        as_json=as_json,
        empty="nothing found",
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    kind: Annotated[Kind | None, typer.Option(show_default=False, help="Only this kind.")] = None,
    all_agents: Annotated[
        bool,
        typer.Option("--all-agents", help="List every agent's memories of the user, and the shared ones."),
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many per scope.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List the live memories of a scope, newest first.

    Memories held for operator review are not listed here; `memwarden beliefs` shows them."""
    scope = require_scope(tenant, user, agent)
    service = _state(ctx).service()
    scopes = (
        [Scope(scope.tenant, scope.user, a) for a in service.agents_of(scope.tenant, scope.user)]
        if all_agents
        else [scope]
    )
    found: list[Record] = []
    refused: list[tuple[str, str]] = []
    for s in scopes:
        found += service.list_records(operator_context(s), kind=str(kind) if kind else None, limit=limit,
                                      refused=refused)
    title = (
        f"{printable(scope.tenant)}/{printable(scope.user)} (all agents)"
        if all_agents
        else printable(str(scope))
    )
    _print_records(found, title=title, as_json=as_json, show_agent=all_agents)
    if refused:  # never served, never silent: an operator listing a scope must know rows are missing (I1)
        typer.echo(f"warning: {len(refused)} memor{'y' if len(refused) == 1 else 'ies'} of this scope failed "
                   f"verification and are not listed (first: {printable(refused[0][0])}: {refused[0][1][:120]}); "
                   "run `memwarden doctor`", err=True)
        raise typer.Exit(1)


@app.command()
def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="Memory id.", show_default=False)],
    as_json: JsonOpt = False,
) -> None:
    """Operator view of one memory: full record, provenance, version history and verification.

    Exits 1 if the record fails verification (edited outside memwarden): agents are never served it."""
    service = _state(ctx).service()
    checked = service.operator_check(memory_id)
    if checked.record is None:
        raise CliError(f"memory {memory_id} cannot be shown: {checked.refused}; run `memwarden doctor`")
    rec = checked.record
    history = service.history(memory_id)
    reads = sum(1 for _ in audit.reads_of(service.backend, memory_id))
    if as_json:
        _echo_json(
            {
                "record": rec.to_dict(),
                "verified": checked.ok,
                "refused": checked.refused,
                "reads": reads,
                "history": [{**h, "superseded_at": iso(h["superseded_at"])} for h in history],
            }
        )
    else:
        _print_show(rec, checked.refused, history, reads)
    if not checked.ok:
        raise CliError(
            f"memory {memory_id} failed verification ({checked.refused}) and is not served to agents; "
            "run `memwarden doctor`"
        )


def _print_show(rec: Record, refused: str | None, history: list[dict[str, Any]], reads: int) -> None:
    con = _console()
    p = rec.provenance
    verified = refused is None
    check = (
        Text("✓ verified", style="green")
        if verified
        else Text(f"✗ NOT SERVED: {refused} (the content below is untrusted)", style="bold red")
    )
    con.print(Text.assemble(("memory ", "bold"), (rec.id, "bold cyan"), f"  version {rec.version}  ", check))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    rows: list[tuple[str, Any]] = [
        ("status", _status_text(rec.status)),
        ("kind", rec.kind),
        ("created", _when(rec.created_at)),
        ("updated", _when(rec.updated_at)),
        ("expires", expiry_text(rec)),
        ("due", _when(rec.due_at)),
        ("sensitivity", rec.sensitivity_name),
        ("confidence", f"{rec.confidence:g}"),
        ("content hash", rec.content_hash),
        ("metadata", Text(printable(json.dumps(rec.metadata, ensure_ascii=False)))),
        ("derived from", ", ".join(rec.derived_from) or "-"),
        ("", ""),
        ("scope", Text(printable(f"{p.tenant}/{p.user}/{p.agent or '*shared*'}"))),
        ("session", p.session_id),
        ("source type", p.source_type),
        ("sources", Text(printable(", ".join(p.sources) or "-"))),
        ("trust", _trust_text(p.trust)),
        ("approval", Text(printable(p.approval))),
        ("reached", f"{reads} session read(s); see `memwarden audit reads {rec.id}`"),
    ]
    for label, value in rows:
        grid.add_row(label, value)
    con.print(grid)
    con.print(
        Panel(
            Text(printable(rec.content, keep_newlines=True)),
            title="content",
            title_align="left",
            border_style="green" if verified else "red",
        )
    )
    if history:
        table = Table(title="earlier versions", box=box.SIMPLE, title_justify="left")
        for col in ("version", "superseded (UTC)", "source type", "session", "content"):
            table.add_column(col, overflow="fold", no_wrap=col != "content")
        for h in history:
            table.add_row(
                str(h["version"]),
                _when(h["superseded_at"]),
                str(h["source_type"]),
                str(h["session_id"]),
                Text(preview(str(h["content"]), 80)),
            )
        con.print(table)


@app.command()
def forget(
    ctx: typer.Context,
    memory_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID", show_default=False, help="Memory id to delete (with everything derived from it)."
        ),
    ] = None,
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Delete every memory of the scope (or of --kind).")
    ] = False,
    kind: Annotated[Kind | None, typer.Option(show_default=False, help="With --all: only this kind.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm --all (required).")] = False,
) -> None:
    """Delete memories from every place they are stored (record, index, history, derived records).

    With an ID: delete that memory, held or not; its scope is taken from --tenant/--user/--agent when
    given, else from the record. With --all --yes: clear exactly one scope, optionally one --kind. The audit
    log keeps a tombstone (id, hash, who, when), never the content."""
    service = _state(ctx).service()
    if all_:
        if memory_id is not None:
            raise CliError("pass either an ID or --all, not both", EXIT_USAGE)
        scope = require_scope(tenant, user, agent)
        if not yes:
            raise CliError(
                f"--all deletes every {kind or 'memory'} in {scope}; add --yes to confirm", EXIT_USAGE
            )
        removed = service.clear(operator_context(scope), str(kind) if kind else None, include_held=True)
        _console().print(
            Text(
                f"✓ removed {_n(len(removed), 'memory')} from {printable(str(scope))}"
                + (f" (kind {kind})" if kind else ""),
                style="green",
            )
        )
        return
    if memory_id is None:
        raise CliError("pass the ID of the memory to forget, or --all --yes to clear a scope", EXIT_USAGE)
    if tenant or user:
        scope = require_scope(tenant, user, agent)
    else:
        found = service.operator_check(memory_id).record
        if found is None:
            raise CliError(f"memory {memory_id} is malformed; pass --tenant/--user/--agent to remove it")
        p = found.provenance
        scope = Scope(p.tenant, p.user, p.agent or None)
    try:
        removed = service.remove(operator_context(scope), memory_id, include_held=True)
    except NotFound:
        raise NotFound(f"no memory {memory_id} in {scope}") from None
    derived = [r for r in removed if r != memory_id]
    _console().print(
        Text.assemble(
            ("✓ removed ", "green"),
            (memory_id, "cyan"),
            f" from {printable(str(scope))}",
            f" and {len(derived)} derived: {', '.join(derived)}" if derived else "",
        )
    )


@app.command()
def beliefs(
    ctx: typer.Context,
    tenant: TenantOpt = None,
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Everything held about one user, with where each memory came from, its trust and who approved it.

    Covers every agent of the user and the shared scope, active and held memories; expired ones are gone."""
    scope = require_scope(tenant, user)
    service = _state(ctx).service()
    checked = service.beliefs(scope.tenant, scope.user)
    if as_json:
        out: list[dict[str, Any]] = []
        for c in checked:
            d: dict[str, Any] = c.record.to_dict() if c.record else {"id": c.id}
            if not c.ok:
                d["content"] = None  # never served: it failed verification (see `memwarden show ID`)
            out.append({**d, "verified": c.ok, "refused": c.refused})
        _echo_json({"tenant": scope.tenant, "user": scope.user, "count": len(out), "memories": out})
        return
    con = _console()
    held = sum(c.record is not None and c.record.status == Status.REVIEW for c in checked)
    bad = sum(not c.ok for c in checked)
    title = (
        f"beliefs about {printable(scope.tenant)}/{printable(scope.user)}: {_n(len(checked), 'memory')}"
        + (f", {held} held for review" if held else "")
        + (f", {bad} failed verification" if bad else "")
    )
    if not checked:
        con.print(Text(f"{title} (nothing is held about this user)", style="dim"))
        return
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    wide = con.width >= WIDE
    if wide:
        table.add_column("id", no_wrap=True, style="cyan", min_width=26)
        for col in ("agent", "kind", "status", "trust", "source", "approval"):
            table.add_column(col, overflow="fold", no_wrap=col in ("kind", "status", "trust"))
    else:
        table.add_column("id / agent · kind", no_wrap=True, min_width=26)
        table.add_column("status · trust / source / approval", overflow="fold", max_width=30)
    table.add_column("content", ratio=1, min_width=16, overflow="fold")
    for c in checked:
        if c.record is None:
            bad_row = Text(f"✗ {c.refused}", style="bold red")
            table.add_row(*([c.id] + ["?"] * 6 if wide else [c.id, "?"]), bad_row)
            continue
        r, p = c.record, c.record.provenance
        content = (
            Text(preview(r.content, 90))
            if c.ok
            else Text("✗ failed verification: content withheld (memwarden show ID)", style="bold red")
        )
        agent, source, approval = (
            printable(p.agent) or "*shared*",
            printable(_source_label(r)),
            printable(p.approval),
        )
        if wide:
            table.add_row(
                r.id,
                Text(agent),
                r.kind,
                _status_text(r.status),
                _trust_text(p.trust),
                Text(source),
                Text(approval),
                content,
            )
        else:
            table.add_row(
                _stack(Text(r.id, style="cyan"), f"{agent} · {r.kind}"),
                _stack(
                    Text.assemble(_status_text(r.status), " · ", _trust_text(p.trust)),
                    source,
                    f"approval: {approval}",
                ),
                content,
            )
    con.print(table)


# --- audit --------------------------------------------------------------------------------------------------


@audit_app.command("log")
def audit_log(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, max=100_000, help="Show the newest N events.")] = 50,
    event: Annotated[
        str | None,
        typer.Option(
            show_default=False, help="Only this event (added, held, rejected, removed, read, injected, …)."
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option("--memory", metavar="ID", show_default=False, help="Only events about this memory."),
    ] = None,
    tenant: Annotated[str | None, typer.Option(show_default=False, help="Only this tenant.")] = None,
    user: Annotated[str | None, typer.Option(show_default=False, help="Only this user.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Browse the audit log, oldest of the selection first."""
    service = _state(ctx).service()
    rows = audit.log_rows(
        service.backend, limit=limit, event=event, memory_id=memory, tenant=tenant, user=user
    )
    if not rows and event is not None and event not in (known := audit.event_names(service.backend)):
        raise CliError(f"unknown event {event!r}: events are {', '.join(known)}")
    if as_json:
        _echo_json([{**r, "ts": iso(r["ts"])} for r in rows])
        return
    con = _console()
    if not rows:
        con.print(Text("no audit events match", style="dim"))
        return
    table = Table(box=box.SIMPLE_HEAVY)
    wide = con.width >= WIDE
    table.add_column("seq", no_wrap=True, justify="right")
    if wide:
        for col in ("time (UTC)", "event", "actor", "scope"):
            table.add_column(col, no_wrap=True)
        table.add_column("memory", no_wrap=True, min_width=26)
    else:
        table.add_column("time (UTC) / event / memory", no_wrap=True, min_width=26)
        table.add_column("actor / scope", overflow="fold", max_width=24)
    table.add_column("details", overflow="fold", min_width=16, max_width=90)
    for r in rows:
        scope = "/".join(x for x in (r["tenant"], r["user"], r["agent"]) if x) or "-"
        style = (
            "red"
            if r["event"] in ("rejected", "integrity_failure")
            else ("yellow" if r["event"] == "held" else "")
        )
        details = json.dumps(
            _short_hashes(r["details"]), ensure_ascii=False, separators=(",", ":"), sort_keys=True
        )
        event_text = Text(printable(r["event"]), style=style)
        if wide:
            table.add_row(
                str(r["seq"]),
                _when(r["ts"]),
                event_text,
                Text(printable(r["actor"])),
                Text(printable(scope)),
                r["memory_id"] or "-",
                Text(preview(details, 160)),
            )
        else:
            table.add_row(
                str(r["seq"]),
                _stack(_when(r["ts"]), event_text, r["memory_id"] or "-"),
                _stack(printable(r["actor"]), printable(scope)),
                Text(preview(details, 160)),
            )
    con.print(table)


def _short_hashes(value: Any) -> Any:
    """Abbreviate sha256/HMAC hex digests so a table row stays readable (``--json`` has them in full)."""
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:12] + "…"
    if isinstance(value, dict):
        return {k: _short_hashes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short_hashes(v) for v in value]
    return value


@audit_app.command("verify")
def audit_verify(ctx: typer.Context) -> None:
    """Verify the audit hash chain, and the store against its anchor outside the database; exits 1 and lists
    the problems if a row was edited, deleted or moved, or the file is an older copy (rows truncated)."""
    service = _state(ctx).service(inspect=True)
    problems = [(str(p.seq), p.problem) for p in audit.verify(service.backend, service.signer)]
    if service.rollback is not None:
        problems.append(("anchor", service.rollback))
    with service.backend.read() as db:
        count, last = db.audit_count(), db.audit_head()[0]
    if not problems:
        _console().print(Text(f"✓ audit chain intact: {count} events (last seq {last or 0}), at its anchor",
                              style="green"))
        return
    table = Table(title="audit chain problems", box=box.SIMPLE_HEAVY, title_justify="left")
    table.add_column("seq", no_wrap=True)
    table.add_column("problem")
    for seq, problem in problems:
        table.add_row(seq, Text(printable(problem)))
    _console().print(table)
    raise CliError(f"audit chain broken: {len(problems)} problem(s) in {count} events"
                   + ("; see `memwarden audit accept-restore --help`" if service.rollback else ""))


@audit_app.command("accept-restore")
def audit_accept_restore(
    ctx: typer.Context,
    reason: Annotated[str, typer.Option(help="Why the store is accepted as it is (kept in the audit log).",
                                        show_default=False)],
    as_json: JsonOpt = False,
) -> None:
    """Accept a deliberate restore: the store is behind its anchor (an older copy of the file was put back, or
    it was moved or copied here) or its audit chain lost rows, and you mean to keep it as it is.

    Run `memwarden doctor` first and read what it says. This appends a `restore_accepted` event (who, why, the
    old anchor, every problem found), re-anchors the store, and from then on serves what the restored copy
    holds — including memories forgotten after the copy was made: forget them again. Records whose own audit
    evidence is forged stay refused."""
    out = _state(ctx).service(inspect=True).accept_restore(OPERATOR_ACTOR, reason)
    if as_json:
        _echo_json(out)
        return
    if not out["accepted"]:
        _console().print(Text(f"✓ {out['message']}", style="green"))
        return
    con = _console()
    for problem in out["problems"]:
        con.print(Text(f"accepted: {printable(problem)}", style="yellow"))
    con.print(Text(f"✓ restore accepted (audit event {out['seq']}); the store is anchored again", style="green"))


@audit_app.command("reads")
def audit_reads(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID", help="Memory id.", show_default=False)],
    as_json: JsonOpt = False,
) -> None:
    """Blast radius: every session a memory reached, through a prompt block or a tool result."""
    service = _state(ctx).service()
    rows = list(audit.reads_of(service.backend, memory_id))
    if not rows and not audit.names_memory(service.backend, memory_id):
        raise CliError(f"no memory {memory_id}: no record or audit event has that id")
    if as_json:
        _echo_json([{**r, "ts": iso(r["ts"])} for r in rows])
        return
    con = _console()
    sessions = {r["session_id"] for r in rows}
    if not rows:
        con.print(Text(f"memory {memory_id} has not reached any session", style="dim"))
        return
    table = Table(
        title=f"memory {memory_id} reached {len(sessions)} session(s)",
        box=box.SIMPLE_HEAVY,
        title_justify="left",
    )
    for col in ("session", "how", "time (UTC)", "actor", "scope", "audit seq"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        scope = "/".join(x for x in (r["tenant"], r["user"], r["agent"]) if x) or "-"
        how = "prompt block" if r["event"] == "injected" else "tool result"
        table.add_row(
            r["session_id"],
            how,
            _when(r["ts"]),
            Text(printable(r["actor"])),
            Text(printable(scope)),
            str(r["seq"]),
        )
    con.print(table)


# --- export / import ----------------------------------------------------------------------------------------


def _open_private(path: Path) -> IO[str]:
    """Exports hold personal data: create the file readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


@app.command()
def export(
    ctx: typer.Context,
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    fmt: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            "-f",
            help="jsonl: one signed record per line (re-imports losslessly into this store); md: a report a "
            "person can read.",
        ),
    ] = ExportFormat.JSONL,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            show_default=False,
            dir_okay=False,
            help="Write to this file (created with mode 0600) instead of stdout.",
        ),
    ] = None,
    include_held: Annotated[
        bool, typer.Option("--include-held", help="Also export memories held for operator review.")
    ] = False,
    all_agents: Annotated[
        bool,
        typer.Option("--all-agents", help="Export every agent's memories of the user, and the shared ones."),
    ] = False,
) -> None:
    """Export the live memories of a scope as JSONL or readable Markdown.

    Expired, deleted and unverifiable memories are never exported; held ones only with --include-held. Each
    JSONL line is signed with the store's key: `memwarden import` into the same scope restores it exactly (id,
    times, status, trust); anywhere else, or edited, it is imported as untrusted new content."""
    from memwarden.transfer import ALL_AGENTS, AgentSelector, export_jsonl, export_markdown

    scope = require_scope(tenant, user, agent)
    service = _state(ctx).service()
    selector: AgentSelector = ALL_AGENTS if all_agents else scope.agent
    skipped: list[str] = []
    if fmt == ExportFormat.JSONL:
        text = "".join(
            line + "\n"
            for line in export_jsonl(
                service, scope.tenant, scope.user, selector, include_held, skipped=skipped
            )
        )
        count = text.count("\n")
    else:
        text = export_markdown(service, scope.tenant, scope.user, selector, include_held, skipped=skipped)
        text += "" if text.endswith("\n") else "\n"
        count = text.count("\n#### ")
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with _open_private(out) as fh:
            fh.write(text)
        _console().print(Text(f"✓ exported {_n(count, 'memory')} to {printable(str(out))}", style="green"))
    if skipped:
        raise CliError(
            f"{len(skipped)} memories failed signature verification and were left out "
            f"({', '.join(skipped)}); run `memwarden doctor`"
        )


def _read_lines(source: str) -> Iterator[bytes]:
    if source == "-":
        yield from typer.get_binary_stream("stdin")
        return
    with open(source, "rb") as fh:
        yield from fh


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE|-",
            show_default=False,
            help='JSONL file, or - for stdin: an export of this store (signed lines are restored as they were), or '
            'lines {"content": …} with optional kind, confidence, sensitivity, ttl_days, due, metadata (any '
            "other field, provenance included, is ignored).",
        ),
    ],
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    trusted: Annotated[
        bool,
        typer.Option(
            "--trusted",
            help="Vouch for the file as an operator: lines not restored from this store's signature are stored "
            "trusted instead of held. Needs an operator token of the tenant (--token). Lines marked held or "
            "untrusted, and lines whose signature does not verify, are held anyway.",
        ),
    ] = False,
    untrusted: Annotated[
        bool,
        typer.Option(
            "--untrusted",
            help="The file comes from an untrusted source: hold every record for operator review, signed ones too.",
        ),
    ] = False,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="MEMWARDEN_TOKEN", show_default=False,
                     help="Operator token for --trusted (default: $MEMWARDEN_TOKEN)."),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            show_default=False, help="Source label kept in each record's provenance (default: the file path)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import JSONL memories into a scope through the write gate.

    Lines exported by this store (their signature verifies under its key) into the scope they came from are
    restored as they were: same id, times, expiry, due date, status (held stays held), trust and approval; a
    re-import changes nothing. Every other line gets source_type=import and this file as its source, and is
    held for operator review unless --trusted (with an operator token). Exits 1 if any line was rejected or
    not understood; every other line is still imported."""
    from memwarden import auth
    from memwarden.transfer import import_jsonl

    scope = require_scope(tenant, user, agent)
    if trusted and untrusted:
        raise CliError("--trusted and --untrusted contradict each other; pass one", EXIT_USAGE)
    label = source or ("stdin" if file == "-" else str(Path(file).expanduser().resolve()))
    if file != "-" and not Path(file).is_file():
        raise CliError(f"no such file: {file}")
    service = _state(ctx).service()
    principal = auth.authenticate(service, token) if trusted else None
    report = import_jsonl(service, scope, _read_lines(file), source_label=label,
                          trusted=True if trusted else False if untrusted else None, principal=principal)
    if as_json:
        _echo_json(report.to_dict())
    else:
        con = _console()
        con.print(Text(f"import into {printable(str(scope))} from {printable(label)}", style="italic"))
        summary = Table(box=box.SIMPLE_HEAVY)
        summary.add_column("outcome")
        summary.add_column("lines", justify="right")
        summary.add_row(Text("accepted", style="green"), str(report.accepted))
        summary.add_row(Text("held for operator review", style="yellow"), str(report.review))
        summary.add_row(Text("rejected by the write gate", style="red"), str(report.rejected))
        summary.add_row(Text("not understood", style="red"), str(len(report.errors)))
        if report.restored:
            summary.add_row(Text("… of them restored from this store's signature", style="dim"), str(report.restored))
        if report.blank_lines:
            summary.add_row(Text("blank (skipped)", style="dim"), str(report.blank_lines))
        con.print(summary)
        if report.failed:
            table = Table(title="lines not imported", box=box.SIMPLE, title_justify="left")
            table.add_column("line", justify="right", no_wrap=True)
            table.add_column("outcome", no_wrap=True)
            table.add_column("why", overflow="fold")
            for o in report.failed:
                table.add_row(str(o.line), o.status, Text(one_line(o.message)))
            con.print(table)
        if report.unverified:
            con.print(Text(f"{_n(len(report.unverified), 'line')} carried a signature this store cannot verify "
                           f"(lines {', '.join(str(o.line) for o in report.unverified[:20])}): held for review",
                           style="yellow"))
        if report.ignored_fields:
            con.print(
                Text(
                    "ignored fields (provenance is never taken from an unsigned file): "
                    + ", ".join(printable(f) for f in sorted(report.ignored_fields)),
                    style="dim",
                )
            )
        if not trusted and not untrusted and any(o.status == "review" and not o.restored for o in report.outcomes):
            con.print(Text("unsigned lines are held for review: promote them with `memwarden review`, or import "
                           "with --trusted and an operator token", style="dim"))
    if report.failed:
        total = len(report.outcomes)
        raise CliError(
            f"{len(report.failed)} of {total} lines were not imported "
            f"({report.rejected} rejected, {len(report.errors)} not understood)"
        )


# --- maintenance --------------------------------------------------------------------------------------------


@app.command()
def migrate(ctx: typer.Context, as_json: JsonOpt = False,
            db: Annotated[str | None, typer.Option("--db", help="The owner's URL (the same as memwarden's own "
                                                   "--db before the command).")] = None) -> None:
    """PostgreSQL: create or upgrade the schema, the two roles memwarden serves through and their row-level
    security policies. Run it with the database owner's URL (memwarden migrate --db postgresql://owner@host/db);
    it prints the application URL to serve with. (A SQLite store migrates itself when it is opened.)"""
    from memwarden.store import is_postgres

    url = db if db is not None else _state(ctx).url
    if not is_postgres(url):
        raise CliError("migrate is for PostgreSQL: pass the owner's URL with --db postgresql://owner@host/db "
                       "(a SQLite store migrates itself when it is opened)")
    from memwarden.store.postgres.migrate import migrate as run_migrate

    done = run_migrate(str(url))
    if as_json:
        _echo_json({"version_before": done.version_before, "version": done.version, "applied": done.applied,
                    "app_role": done.app_role, "operator_role": done.operator_role, "app_url": done.app_url,
                    "operator_url": done.operator_url, "created_roles": done.created_roles})
        return
    applied = ", ".join(map(str, done.applied)) or "none (already current)"
    typer.echo(f"schema version {done.version} (migrations applied: {applied})")
    typer.echo(f"application role {done.app_role}, operator role {done.operator_role}"
               + (f" (created: {', '.join(done.created_roles)})" if done.created_roles else ""))
    typer.echo(f"serve with: memwarden serve --db '{done.app_url}'")
    typer.echo(f"operator maintenance (gc, doctor): --db '{done.operator_url}'")
    if not done.created_roles:
        typer.echo("the roles existed already: their passwords are unchanged", err=True)


@app.command()
def gc(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Purge expired memories from every table (they were already invisible to every read)."""
    removed = _state(ctx).service().gc(actor=OPERATOR_ACTOR)
    if as_json:
        _echo_json({"purged": len(removed), "ids": removed})
        return
    _console().print(Text(f"✓ purged {_n(len(removed), 'expired memory')}", style="green"))


@app.command()
def doctor(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Check the store: integrity, zombie index rows, signatures, derivation links, usage counters, audit
    chain, and the anchor outside the database (an older copy put back, a truncated audit log).

    Exits 1 if anything is wrong."""
    from memwarden import doctor as doctor_mod

    service = _state(ctx).service(inspect=True)
    findings = doctor_mod.run(service)
    if as_json:
        _echo_json(
            {
                "ok": not findings,
                "database": service.location,
                "findings": [
                    {"check": f.check, "subject": f.subject, "problem": f.problem} for f in findings
                ],
            }
        )
    elif not findings:
        _console().print(
            Text(
                f"✓ no problems found in {printable(service.location)}: "
                f"{'SQLite integrity, ' if getattr(service.backend, 'path', None) is not None else ''}no "
                "zombie rows, every signature valid, audit chain intact and at its anchor",
                style="green",
            )
        )
    else:
        table = Table(
            title=f"doctor: {printable(service.location)}", box=box.SIMPLE_HEAVY, title_justify="left"
        )
        for col in ("check", "subject", "problem"):
            table.add_column(col, no_wrap=col != "problem", overflow="fold")
        for f in findings:
            table.add_row(Text(f.check, style="red"), Text(printable(f.subject)), Text(printable(f.problem)))
        _console().print(table)
    if findings:
        raise CliError(f"doctor found {len(findings)} problem(s)")


@app.command()
def demo(ctx: typer.Context) -> None:
    """A guided tour on a fresh temporary database with its own key.

    Shows the write gate, the frozen prompt snapshot, a capacity error, tamper detection by doctor, deletion
    reaching every index and audit verification. Your database and key are never touched."""
    from memwarden import demo as demo_mod

    code = demo_mod.run(_console(), verbose=_state(ctx).verbose)
    if code:
        raise CliError("the demo found a problem (see the ✗ above)")


SERVER_HINT = "memwarden serve needs the server extra: pip install 'memwarden[server]'"


_OAUTH = "External OAuth issuer (JWT access tokens)"
_LIMITS = "Logs, limits and timeouts"


class LogFormat(StrEnum):
    json = "json"
    text = "text"


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8750,
    db: Annotated[
        str | None, typer.Option("--db", show_default=False, help="Database URL (default: the global --db).")
    ] = None,
    write_rate: Annotated[
        int, typer.Option(min=0, help="Writes per minute per token before 429 (0: no limit).")
    ] = 120,
    public_url: Annotated[
        str | None, typer.Option(show_default=False,
                                 help="Base URL clients reach the server at, e.g. behind a TLS proxy "
                                      "(default: http://<host>:<port>); the MCP resource is <url>/mcp.")
    ] = None,
    oauth_issuer: Annotated[
        str | None, typer.Option(envvar="MEMWARDEN_OAUTH_ISSUER", show_default=False, rich_help_panel=_OAUTH,
                                 help="Also accept JWT access tokens of this issuer (its exact `iss`).")
    ] = None,
    oauth_audience: Annotated[
        str | None, typer.Option(envvar="MEMWARDEN_OAUTH_AUDIENCE", show_default=False, rich_help_panel=_OAUTH,
                                 help="The `aud` a token must contain (default: the MCP resource URL, "
                                      "<public url>/mcp).")
    ] = None,
    oauth_jwks: Annotated[
        str | None, typer.Option(envvar="MEMWARDEN_OAUTH_JWKS", show_default=False, rich_help_panel=_OAUTH,
                                 help="The issuer's JWK Set: a URL or a file (default: the jwks_uri of the "
                                      "issuer's metadata).")
    ] = None,
    oauth_algorithms: Annotated[
        str, typer.Option(envvar="MEMWARDEN_OAUTH_ALGORITHMS", rich_help_panel=_OAUTH,
                          help="Accepted signature algorithms, comma-separated (asymmetric only).")
    ] = "RS256,PS256,ES256,EdDSA",
    oauth_tenant_claim: Annotated[
        str, typer.Option(envvar="MEMWARDEN_OAUTH_TENANT_CLAIM", rich_help_panel=_OAUTH,
                          help="Claim naming the tenant (comma-separated: the first present).")
    ] = "tenant",
    oauth_user_claim: Annotated[
        str, typer.Option(envvar="MEMWARDEN_OAUTH_USER_CLAIM", rich_help_panel=_OAUTH,
                          help="Claim naming the user.")
    ] = "sub",
    oauth_agent_claim: Annotated[
        str, typer.Option(envvar="MEMWARDEN_OAUTH_AGENT_CLAIM", rich_help_panel=_OAUTH,
                          help="Claim naming the agent.")
    ] = "client_id,azp",
    oauth_operator_scope: Annotated[
        str | None, typer.Option(envvar="MEMWARDEN_OAUTH_OPERATOR_SCOPE", show_default=False,
                                 rich_help_panel=_OAUTH,
                                 help="A token whose scope holds this is an operator of its tenant (default: "
                                      "none is; every token of the issuer is an agent).")
    ] = None,
    oauth_ingest_scope: Annotated[
        str | None, typer.Option(envvar="MEMWARDEN_OAUTH_INGEST_SCOPE", show_default=False,
                                 rich_help_panel=_OAUTH,
                                 help="An agent token whose scope holds this declares that its host reports "
                                      "ingest (memwarden hook); without it, every save is held for review.")
    ] = None,
    memwarden_tokens: Annotated[
        bool, typer.Option("--memwarden-tokens/--no-memwarden-tokens", envvar="MEMWARDEN_OWN_TOKENS",
                           rich_help_panel=_OAUTH,
                           help="Accept memwarden's own tokens (`memwarden token create`) too.")
    ] = True,
    log_format: Annotated[
        LogFormat | None, typer.Option(envvar="MEMWARDEN_LOG_FORMAT", show_default=False, rich_help_panel=_LIMITS,
                                       help="Log lines on stderr (default: text at a terminal, else json).")
    ] = None,
    keep_alive_timeout: Annotated[
        int, typer.Option(min=1, max=3600, rich_help_panel=_LIMITS,
                          help="Seconds an idle keep-alive connection stays open.")
    ] = 5,
    body_timeout: Annotated[
        float, typer.Option(min=0, max=3600, rich_help_panel=_LIMITS,
                            help="Seconds a request has to send its body before 408 (0: no limit).")
    ] = 30.0,
    shutdown_timeout: Annotated[
        int, typer.Option(min=0, max=3600, rich_help_panel=_LIMITS,
                          help="On SIGINT/SIGTERM, seconds requests in flight get to finish.")
    ] = 30,
    access_log: Annotated[
        bool, typer.Option("--access-log/--no-access-log", rich_help_panel=_LIMITS,
                           help="One log line per request (route template, status, duration, token id; never a "
                                "body, a query or a token).")
    ] = True,
) -> None:
    """Serve the REST API under /v1 (OpenAPI at /openapi.json, docs at /docs) and MCP over streamable HTTP at
    /mcp until Ctrl-C.

    Agents call it with an agent token, operators with an operator token (`memwarden token create`), or with
    access tokens of an external OAuth issuer (--oauth-issuer); see docs/server.md."""
    try:
        from memwarden import oauth, rest
    except ImportError as exc:
        raise CliError(f"{SERVER_HINT} ({exc.name or exc} is missing)") from None
    issuer_config = None
    if oauth_issuer:
        issuer_config = oauth.OAuthConfig(
            oauth_issuer, audience=oauth_audience, jwks=oauth_jwks,
            algorithms=tuple(a.strip() for a in oauth_algorithms.split(",") if a.strip()),
            tenant_claim=oauth_tenant_claim, user_claim=oauth_user_claim, agent_claim=oauth_agent_claim,
            operator_scope=oauth_operator_scope, ingest_scope=oauth_ingest_scope)
    elif oauth_audience or oauth_jwks or oauth_operator_scope or oauth_ingest_scope:
        raise CliError("--oauth-audience, --oauth-jwks, --oauth-operator-scope and --oauth-ingest-scope need "
                       "--oauth-issuer", EXIT_USAGE)
    if not memwarden_tokens and issuer_config is None:
        raise CliError("--no-memwarden-tokens needs --oauth-issuer (else no token would be accepted)", EXIT_USAGE)
    from memwarden import serving
    from memwarden.gate import semantic
    from memwarden.policy import Policy

    if Policy().semantic_gate:  # MEMWARDEN_GATE_SEMANTIC=1: refuse to start rather than fail every write
        try:
            semantic.ensure_available()
        except semantic.SemanticUnavailable as exc:
            raise CliError(str(exc)) from None
    serving.check_port(host, port)  # before the store is opened (or created)
    state = _state(ctx)
    if db is not None:
        state.url = db
    config = rest.ServerConfig(write_rate=write_rate, public_url=public_url, oauth=issuer_config,
                               memwarden_tokens=memwarden_tokens, keep_alive_timeout=keep_alive_timeout,
                               body_timeout=body_timeout, shutdown_timeout=shutdown_timeout)
    rest.serve(state.service(), host, port, config=config, log_format=log_format.value if log_format else None,
               access_log=access_log)


@app.command()
def quickstart(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port (a free one is chosen if it is busy).")] = 8750,
    directory: Annotated[
        str | None, typer.Option("--dir", show_default=False,
                                 help="An empty or new directory for the store (default: a new temporary one).")
    ] = None,
) -> None:
    """`make run`: `memwarden serve` on a fresh data directory with its own key, an operator token and two agent
    tokens (an application's, whose host reports its ingest, and an MCP client's), and the lines to call it (curl,
    MCP over HTTP and stdio, the CLI), until Ctrl-C. `--dir` puts the data in a directory of your choosing.

    Your own store and key are not touched; the directory is kept afterwards. The guided tour is `memwarden demo`."""
    try:
        from memwarden import rest
    except ImportError as exc:
        raise CliError(f"{SERVER_HINT} ({exc.name or exc} is missing)") from None
    from memwarden import quickstart as qs_mod

    chosen = qs_mod.free_port(host, port)
    qs = qs_mod.prepare(directory, host, chosen)
    out = _console()
    for heading, text in qs_mod.summary(qs, moved_from=None if chosen == port else port):
        out.print(Text(heading, style="bold"))
        out.print(Text(text), soft_wrap=True)
        out.print()
    out.print(Text("Serving until Ctrl-C …", style="bold green"))
    from memwarden.service import open_store

    service = open_store(qs.env["MEMWARDEN_URL"])
    try:
        rest.serve(service, host, chosen, config=rest.ServerConfig())
    finally:
        service.close()
    out.print(Text(f"Stopped. The data directory is kept: {qs.directory}"))


# --- scan ---------------------------------------------------------------------------------------------------


_SOURCES = tuple(str(x) for x in SourceType)
_KINDS = tuple(str(x) for x in Kind)


def _scan_candidates(
    lines: Iterable[bytes], source: str, kind: str
) -> Iterator[tuple[int, str | None, str, str, str | None]]:
    """(line, text, source, kind, error) per non-blank line: plain text, or a JSON object with ``text``."""
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            yield number, None, source, kind, f"not valid UTF-8 (byte {exc.start})"
            continue
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                obj = None
            if isinstance(obj, dict) and "text" in obj:
                src, knd = obj.get("source", source), obj.get("kind", kind)
                if not isinstance(src, str) or not isinstance(knd, str):
                    yield number, None, source, kind, "'source' and 'kind' must be strings"
                    continue
                if src not in _SOURCES or knd not in _KINDS:
                    bad = f"source {src[:40]!r}" if src not in _SOURCES else f"kind {knd[:40]!r}"
                    yield number, None, source, kind, (f"unknown {bad}: sources are {', '.join(_SOURCES)}; kinds "
                                                       f"are {', '.join(_KINDS)}")
                    continue
                if not isinstance(obj["text"], str):
                    yield number, None, src, knd, "'text' must be a string"
                    continue
                yield number, obj["text"], src, knd, None
                continue
        yield number, line, source, kind, None


@app.command()
def scan(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE|-",
            help='One candidate per line, or JSONL objects {"text", "source"?, "kind"?}; '
            "- (default) reads stdin.",
        ),
    ] = "-",
    source: Annotated[
        str, typer.Option(help="Who said the plain-text candidates: user, model, tool, import, operator or "
                               "consolidation (the gate is sized to kind and source, docs/gate.md).")
    ] = "model",
    kind: Annotated[str, typer.Option(help="Kind of plain-text candidates: fact, preference, episode, "
                                           "procedure, reminder or task_state.")] = "fact",
    summary: Annotated[
        bool,
        typer.Option(
            "--summary", help="Print counts per verdict and per rule instead of one line per candidate."
        ),
    ] = False,
) -> None:
    """Run the write gate on candidates without storing anything; one JSON verdict per line."""
    from memwarden.gate import scan as gate_scan

    if source not in _SOURCES:
        raise CliError(f"unknown --source {source!r}: use one of {', '.join(_SOURCES)}")
    if kind not in _KINDS:
        raise CliError(f"unknown --kind {kind!r}: use one of {', '.join(_KINDS)}")
    if file != "-" and not Path(file).is_file():
        raise CliError(f"no such file: {file}")
    verdicts: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    errors = 0
    for number, text, src, knd, error in _scan_candidates(_read_lines(file), source, kind):
        if error is not None:
            errors += 1
            if not summary:
                typer.echo(json.dumps({"line": number, "error": error}))
            continue
        verdict = gate_scan(text, source=src, kind=knd)
        verdicts[verdict.verdict] += 1
        rules.update(set(verdict.rules))
        if not summary:
            typer.echo(json.dumps({"line": number, **verdict.to_dict()}, ensure_ascii=False))
    if summary:
        con = _console()
        table = Table(
            title=f"scan: {sum(verdicts.values())} candidates", box=box.SIMPLE_HEAVY, title_justify="left"
        )
        table.add_column("verdict / rule")
        table.add_column("candidates", justify="right")
        for name in ("accept", "review", "reject"):
            table.add_row(Text(name, style="bold"), str(verdicts.get(name, 0)))
        for rule, n in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(f"  {rule}", str(n))
        if errors:
            table.add_row(Text("unreadable lines", style="red"), str(errors))
        con.print(table)


McpAgentOpt = Annotated[
    str | None,
    typer.Option("--agent", envvar="MEMWARDEN_AGENT", show_default=False,
                 help="Agent of the scope (needed without a token: one scope, as an agent token binds)."),
]


HostReportsOpt = Annotated[
    bool,
    typer.Option("--host-reports-ingest",
                 help="Local set-up without a token: the host reports what the model reads (`memwarden hook`), so "
                      "the session starts clean. With a token, its signed profile decides (token create "
                      "--host-reports-ingest); this flag cannot give a token the profile."),
]


@app.command()
def mcp(ctx: typer.Context, tenant: TenantOpt = None, user: UserOpt = None, agent: McpAgentOpt = None,
        host_reports_ingest: HostReportsOpt = False) -> None:
    """Serve the memory tools over MCP stdio to one local client (Claude Desktop, Claude Code, IDE agents).

    Identity: $MEMWARDEN_TOKEN (an agent token), or --tenant/--user/--agent for a single-user set-up; never the model.

    The server cannot see the host's other tool calls: unless the token's profile (or --host-reports-ingest) says
    the host reports them with `memwarden hook`, every save is held for review (memwarden review list).

    Needs the MCP SDK: pip install 'memwarden\\[server]'. Set-up for clients: docs/server.md."""
    try:
        from memwarden import mcp_server
    except ImportError as exc:
        if exc.name is None or not (exc.name == "mcp" or exc.name.startswith(("mcp.", "mcp_types"))):
            raise
        raise CliError("memwarden mcp needs the MCP Python SDK, which is not installed: "
                       "pip install 'memwarden[server]'") from None
    from memwarden.identity import local_identity, token_identity

    token = os.environ.get("MEMWARDEN_TOKEN", "").strip()
    if not token:  # checked before the store is opened: a missing identity creates nothing
        try:
            identity = local_identity(tenant, user, agent, host_reports_ingest)
        except MemwardenError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
    if token:  # a token comes from an existing store: a missing one is the wrong $MEMWARDEN_URL, not a new store
        from memwarden.store import file_of

        path = file_of(_state(ctx).url)
        if path is not None and not path.exists():
            raise CliError(f"no store at {printable(str(path))}, so $MEMWARDEN_TOKEN cannot be one of its tokens: "
                           "set $MEMWARDEN_URL (and $MEMWARDEN_KEY_FILE, $MEMWARDEN_ANCHOR_DIR) to the store that "
                           "issued it")
    service = _state(ctx).service()
    if token:
        identity = token_identity(service, token, tenant, user, agent, host_reports_ingest)
    session = mcp_server.start_session(service, identity)
    trust = ("the host reports its ingest (memwarden hook): saves are held once it reports untrusted content"
             if identity.reports_ingest else "saves are held for review (the host does not report its ingest)")
    typer.echo(f"memwarden mcp: serving {identity.scope} ({identity.via}) over stdio, session {session.id}; {trust}",
               err=True)
    mcp_server.serve_stdio(session, identity)


@app.command()
def hook(
    ctx: typer.Context,
    tenant: TenantOpt = None,
    user: UserOpt = None,
    agent: McpAgentOpt = None,
    workspace: Annotated[list[str] | None, typer.Option(
        "--workspace", show_default=False,
        help="A workspace root (repeatable): reads of files below it do not taint. Default: $CLAUDE_PROJECT_DIR, "
             "else the hook input's cwd.")] = None,
    server: Annotated[str | None, typer.Option(
        "--server", envvar="MEMWARDEN_SERVER", show_default=False,
        help="Report to a running `memwarden serve` at this base URL (POST /v1/ingest) with $MEMWARDEN_TOKEN, "
             "instead of writing to the store (the root --db/--url names the database, not the server).")] = None,
    own_server: Annotated[str, typer.Option(
        "--self", help="The name the host gives memwarden's MCP server: its own tools (mcp__<name>__memory_*) "
                       "are not ingest.")] = "memwarden",
) -> None:
    """Report one tool call of the host to memwarden: a tool-use hook's JSON on stdin (Claude Code's PreToolUse
    and PostToolUse hooks), judged by the taint policy; one that taints taints every session of the scope.

    Identity: $MEMWARDEN_TOKEN (an agent token: its own scope only), or --tenant/--user/--agent.

    Fail closed: input it cannot judge taints the scope, and any problem exits 2 with one line on stderr (Claude
    Code then blocks the tool). Settings for Claude Code: docs/server.md."""
    try:
        _hook(ctx, tenant, user, agent, workspace or [], server, own_server)
    except typer.Exit:
        raise
    except Exception as exc:  # every failure is one line and exit 2: the host must not run the tool unreported
        from memwarden import hook as hook_mod

        known = (hook_mod.HookError, MemwardenError, CliError, OSError, *DATABASE_ERRORS, ValueError)
        message = str(exc) if isinstance(exc, known) else f"internal error: {type(exc).__name__}"
        _error_line(f"memwarden hook: {message}")
        raise typer.Exit(hook_mod.EXIT_BLOCK) from None


def _hook(ctx: typer.Context, tenant: str | None, user: str | None, agent: str | None, workspace: list[str],
          server: str | None, own_server: str) -> None:
    from memwarden import hook as hook_mod
    from memwarden.host_ingest import is_own_tool
    from memwarden.identity import local_identity, token_identity

    call: hook_mod.HookCall | None = None
    problem: str | None = None
    try:
        call = hook_mod.parse(hook_mod.read_input(sys.stdin.buffer))
        roots = hook_mod.workspace_roots(workspace, call)
        if is_own_tool(call.tool, own_server):
            return  # memwarden's own tools return its own memories: nothing to report
        hook_mod.reported_arguments(call)
    except hook_mod.HookError as exc:  # reported as unjudged ingest, which taints (T6), then exit 2
        call, problem, roots = None, str(exc), []
    token = os.environ.get("MEMWARDEN_TOKEN", "").strip()
    if server:
        if not token:
            raise CliError("--server needs $MEMWARDEN_TOKEN (an agent token) to report with", EXIT_USAGE)
        hook_mod.report_remote(server, token, call, problem, roots)
    else:
        identity = None if token else local_identity(tenant, user, agent, command="hook")
        service = _state(ctx).service()
        if identity is None:
            identity = token_identity(service, token, tenant, user, agent, command="hook")
            if not identity.reports_ingest:  # a likely misconfiguration: say so, but still report (fail closed)
                typer.echo(f"memwarden hook: note: {identity.via} has no host-reports-ingest profile, so its "
                           "sessions are untrusted from their start whatever is reported; give the MCP server and "
                           "the hook a token created with --host-reports-ingest", err=True)
        hook_mod.report_local(service, identity, call, problem, roots)
    if problem is not None:
        raise hook_mod.HookError(f"{problem}; recorded as unjudged ingest: this scope's sessions are untrusted")


# Operator review and credentials (T3) live in their own module; registered here, after every helper they use.
from memwarden.cli_review import review_app, token_app  # noqa: E402

app.add_typer(review_app, name="review")
app.add_typer(token_app, name="token")

from memwarden import cli_retrieval  # noqa: E402 - reindex, consolidate, bench locomo (issue 5)

cli_retrieval.register(app, sys.modules[__name__])


def main() -> NoReturn:
    """Console-script entry point (``memwarden``)."""
    app(prog_name="memwarden")
    raise SystemExit(0)  # pragma: no cover - app() always exits

