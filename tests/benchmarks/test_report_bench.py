"""The report benchmark grows a graded class to N notebooks without touching the original."""

import csv
import importlib.util
import json
import sys

from autograder.grading.spec import JobFolder
from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("report_bench",
                                               REPO / "benchmarks" / "report_bench.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("report_bench", bench)
_spec.loader.exec_module(bench)


def test_a_class_grows_to_n_notebooks_each_with_its_result(tmp_path):
    graded = tmp_path / "graded"
    rows = [{"student": "ada", "assignment": "00_anatomy", "score": "5", "max_score": "8",
             "status": "graded", "detail": ""},
            {"student": "bo", "assignment": "01_warmup", "score": "3", "max_score": "10",
             "status": "graded", "detail": ""}]
    graded.mkdir()
    with (graded / "grades.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        done = JobFolder(graded / "jobs" / row["student"] / row["assignment"]).done
        done.parent.mkdir(parents=True)
        done.write_text(json.dumps({"result": {"student": row["student"]}}), encoding="utf-8")
    out = tmp_path / "out"
    assert bench.grown_class(graded, 5, out) == 5
    with (out / "grades.csv").open(encoding="utf-8", newline="") as handle:
        grown = list(csv.DictReader(handle))
    assert len({(r["student"], r["assignment"]) for r in grown}) == 5
    assert [r["assignment"] for r in grown] == ["00_anatomy", "01_warmup"] * 2 + ["00_anatomy"]
    for row in grown:
        assert JobFolder(out / "jobs" / row["student"] / row["assignment"]).done.exists()
    assert len(list((graded / "jobs").rglob("*.done.json"))) == 2  # the original is untouched
