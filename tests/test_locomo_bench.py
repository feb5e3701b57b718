"""``memwarden bench locomo`` (issue 5): the command runs end to end on a LoCoMo-shaped file, always measures the
shipped default (no vectors) next to plain BM25, adds hybrid rows only for the embedders asked for, and rejects a
bad embedder or cut-off in one line before building anything."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memwarden.cli import app
from memwarden.retrieval import locomo


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    turns1 = [("Ann", "D1:1", "I adopted a grey cat called Pixel last week."),
              ("Bob", "D1:2", "That is lovely, how old is she?"),
              ("Ann", "D1:3", "She is two years old and sleeps on the balcony.")]
    turns2 = [("Bob", "D2:1", "I started learning the cello in March."),
              ("Ann", "D2:2", "Brave! My brother plays the violin in an orchestra.")]
    conv = {"speaker_a": "Ann", "speaker_b": "Bob",
            "session_1": [{"speaker": s, "dia_id": d, "text": t} for s, d, t in turns1],
            "session_2": [{"speaker": s, "dia_id": d, "text": t} for s, d, t in turns2]}
    qa = [{"question": "What is the name of Ann's grey cat?", "evidence": ["D1:1"], "category": 4},
          {"question": "Which instrument is Bob learning?", "evidence": ["D2:1"], "category": 4},
          {"question": "Who plays the violin?", "evidence": ["D2:02"], "category": 1},  # "D2:02" normalised
          {"question": "A question without evidence", "evidence": [], "category": 5}]
    path = tmp_path / "tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump([{"sample_id": "c1", "conversation": conv, "qa": qa}], fh)
    return path


def test_load_normalises_evidence_and_drops_unlabelled_questions(tiny: Path) -> None:
    (conv,) = locomo.load(tiny)
    assert len(conv.turns) == 5
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D2:1",), ("D2:2",)]


def test_bench_locomo_default_has_no_vector_rows(tiny: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tiny), "--k", "1,5"])
    assert result.exit_code == 0, result.output
    assert locomo.DEFAULT_LABEL in result.stdout
    assert "plain BM25" in result.stdout
    assert "embedder" not in result.stdout.split("recall@5 per category")[0].split("| configuration")[1]
    row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {locomo.DEFAULT_LABEL}"))
    recall_at_5 = float(row.split("|")[3])
    assert recall_at_5 == 1.0  # every evidence turn of this tiny set is found in the top 5


def test_bench_locomo_adds_hybrid_rows_per_embedder(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "tables.md"
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tiny), "--k", "5", "--embedder", "hash",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "memwarden hybrid + context expansion, embedder hash" in text
    assert locomo.DEFAULT_LABEL in text


@pytest.mark.parametrize(("args", "needle"), [
    (["--embedder", "bogus"], "unknown embedder 'bogus'"),
    (["--k", "0"], "--k takes numbers from 1 to 100"),
])
def test_bench_locomo_bad_options_fail_in_one_line(tiny: Path, args: list[str], needle: str) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tiny), *args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert "build none" not in result.stdout  # refused before any store was built


def test_bench_locomo_missing_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tmp_path / "nope.json.gz")])
    assert result.exit_code != 0
    assert "no LoCoMo file" in result.stderr and "Traceback" not in result.output


def test_bench_locomo_on_postgres_ranks_next_to_sqlite_and_refuses_a_used_database(
        tiny: Path, pg_database: tuple[str, str]) -> None:
    _name, url = pg_database
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tiny), "--k", "1,5", "--postgres", url])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines()
               if line.startswith(f"| {locomo.DEFAULT_LABEL}{locomo.PG} |"))
    assert float(row.split("|")[3]) == 1.0
    diff = result.stdout.split("recall@k on PostgreSQL minus recall@k on SQLite")[1]
    assert f"| {locomo.DEFAULT_LABEL} | +0.000 | +0.000 |" in diff
    again = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tiny), "--k", "5", "--postgres", url])
    assert again.exit_code != 0 and "already holds records of the tenant 'locomo'" in again.stderr


def test_bench_locomo_postgres_takes_a_postgres_url(tiny: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tiny), "--postgres", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "--postgres takes a postgresql:// URL" in result.stderr
