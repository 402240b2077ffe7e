"""`metalport db`: the shared PostgreSQL state; `db migrate` copies this checkout's local runs into it."""

from __future__ import annotations

import argparse

from metalport.commands._repo import add_repo_option, checkout_root


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `db` command and its actions."""
    parser = subparsers.add_parser("db", help="the shared run database (PostgreSQL)",
                                   description="Create the shared tables, or copy this checkout's local runs and "
                                               "checkpoints into them. The URL comes from METALPORT_DATABASE_URL or "
                                               "`database: url:` in metalport.yaml; the password from the "
                                               "environment or a secret file, never from the repository.")
    parser.set_defaults(func=run, action=None)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    for name, text in (("migrate", "create the tables and copy local runs (records, plans, checkpoints) in"),
                       ("status", "where the database is and how many runs it holds for this repository")):
        action = actions.add_parser(name, help=text)
        add_repo_option(action)


def run(args: argparse.Namespace) -> int:
    """Migrate or describe the shared database."""
    from metalport.errors import UsageError
    from metalport.store import open_store, safe_url
    from metalport.store.migrate import migrate_local_runs

    if args.action is None:
        raise UsageError("name an action", hint="`metalport db migrate` or `metalport db status`")
    root = checkout_root(args)
    store = open_store(root)
    if store is None:
        raise UsageError("no database configured", hint="set METALPORT_DATABASE_URL or `database: url:` in "
                                                         "metalport.yaml")
    where = safe_url(store.settings.database_url or "")
    if args.action == "status":
        runs = store.list()
        live = sum(1 for r in runs if r.status in ("running", "awaiting-review"))
        print(f"database {where}: repository {store.repository}, {len(runs)} runs ({live} live)")
        return 0
    report = migrate_local_runs(root, store)
    print(f"copied {report.runs} runs and {report.checkpoints} checkpoints from {root} to {where} "
          f"(repository {store.repository})")
    for run_id, why in report.skipped.items():
        print(f"  left out {run_id}: {why}")
    return 0
