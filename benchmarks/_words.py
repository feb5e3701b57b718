"""Word lists the benchmarks build their episodes and queries from (bench_server, search_equivalence): data only,
no imports, so a child process running another source tree can import it too."""

NAMES = ("Ana", "Ben", "Chloé", "Dmitri", "Esra", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
          "Mateo", "Nadia", "Oskar", "Priya", "Rosa", "Sven", "Tamar", "Victor", "Wen", "Yusuf")
TOPICS = ("flaky integration tests", "a slow dashboard query", "the quarterly roadmap", "the on-call rotation",
           "a failed deploy", "the migration plan", "customer churn numbers", "API rate limits",
           "the staging database", "release notes", "a memory leak in the worker", "the pricing experiment",
           "invoice rounding", "the search ranking", "backup restores", "the mobile login flow")
PROJECTS = ("billing-api", "search revamp", "mobile onboarding", "data warehouse", "auth service",
             "invoice exporter", "support dashboard", "pricing page", "nightly ETL job", "notification service")
OUTCOMES = ("it was fixed by pinning the dependency", "the user agreed to revisit it next sprint",
             "we shipped a patch the same day", "the root cause was a missing index",
             "the decision was to keep the current design", "a follow-up ticket was opened",
             "it turned out to be a timezone bug", "we rolled back and retried an hour later")
