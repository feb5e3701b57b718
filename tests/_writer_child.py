"""Helper for tests/test_durability.py (I3): save records in a loop, print each acknowledged id.

Usage: ``python tests/_writer_child.py DB_PATH [LIMIT]`` with ``$MEMWARDEN_KEY`` set. Each line on stdout
is ``<index> <id>``, printed and flushed right after ``save`` returned — that is the acknowledgement the
parent holds memwarden to after it kills this process with SIGKILL.
"""

from __future__ import annotations

import sys

import memwarden

SCOPE = memwarden.Scope(tenant="acme", user="u-kill", agent="writer")


def content_for(i: int) -> str:
    return f"Durable note {i}: the build server for shard {i % 7} is kiln-{i}"


def main(argv: list[str]) -> int:
    db_path = argv[1]
    limit = int(argv[2]) if len(argv) > 2 else 1_000_000
    with memwarden.open(db_path) as store, store.session(SCOPE) as s:
        print("ready", flush=True)
        for i in range(limit):
            res = s.save(content_for(i), kind="episode")
            if res.status != "accepted":
                print(f"error {i} {res.status} {res.message}", flush=True)
                return 1
            sys.stdout.write(f"{i} {res.id}\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
