"""Helper for tests/test_durability.py (I3): save records in a loop, print each acknowledged id.

Usage: ``python tests/_writer_child.py DB_PATH [LIMIT [THREADS]]`` with ``$MEMWARDEN_KEY`` set. Each line on
stdout is ``<index> <id>``, printed and flushed right after ``save`` returned — that is the acknowledgement the
parent holds memwarden to after it kills this process with SIGKILL. With THREADS > 1, that many threads save
at once (their writes are group-committed), thread ``t`` writing the indexes ``t, t + THREADS, …``.
"""

from __future__ import annotations

import sys
import threading

import memwarden

SCOPE = memwarden.Scope(tenant="acme", user="u-kill", agent="writer")


def content_for(i: int) -> str:
    return f"Durable note {i}: the build server for shard {i % 7} is kiln-{i}"


def main(argv: list[str]) -> int:
    db_path = argv[1]
    limit = int(argv[2]) if len(argv) > 2 else 1_000_000
    threads = int(argv[3]) if len(argv) > 3 else 1
    out = threading.Lock()
    failed: list[int] = []

    def write(first: int, s: memwarden.Session) -> None:
        for i in range(first, limit, threads):
            res = s.save(content_for(i), kind="episode")
            with out:
                if res.status != "accepted":
                    print(f"error {i} {res.status} {res.message}", flush=True)
                    failed.append(i)
                    return
                sys.stdout.write(f"{i} {res.id}\n")
                sys.stdout.flush()

    with memwarden.open(db_path) as store, store.session(SCOPE) as s:
        print("ready", flush=True)
        workers = [threading.Thread(target=write, args=(t, s), daemon=True) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
