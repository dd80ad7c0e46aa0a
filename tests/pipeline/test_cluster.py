"""Grading on a Dask cluster: real scheduler and worker processes, started here, killed by PID.

Three demo students (``correct``, ``racy``, ``empty``) on lesson 00 (no TensorFlow) are graded
locally once per module; each cluster run must give the same rows. One test kills the worker
grading ``racy`` while its job runs: that notebook alone is ``worker-lost``, run once, and the
same call again grades only it.
"""

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("distributed")

import psutil  # noqa: E402
from distributed import Client  # noqa: E402

from autograder.pipeline.cluster import ClusterError, check_scheduler  # noqa: E402
from autograder.pipeline.course import make_course  # noqa: E402
from autograder.pipeline.demo import make_submissions  # noqa: E402
from autograder.pipeline.grade import grade_submissions  # noqa: E402
from autograder.pipeline.spec import Limits  # noqa: E402
from tests.conftest import REPO  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LESSON = "00_anatomy"
STUDENTS = ("correct", "racy", "empty")
LIMITS = Limits(cell_timeout_s=60, memory_mb=1500, job_timeout_s=240)
BIN = Path(sys.executable).parent
#: Bound on every wait for a condition (startup, a job to start, a run to end).
WAIT_S = 120


def wait_for(condition, what: str, timeout: float = WAIT_S):
    """``condition()``'s first truthy value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def key(row) -> tuple:
    return (row.student, row.assignment, row.score, row.max_score, row.status)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Lesson 00's course, the three students' submissions and their local rows (2 workers)."""
    root = tmp_path_factory.mktemp("cluster-class")
    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(REPO / "solutions" / f"{LESSON}.py", solutions)
    course = make_course(solutions, root / "course")
    students = root / "demo"
    for student in STUDENTS:
        shutil.copytree(REPO / "demo" / student, students / student)
    make_submissions(students, course, root / "submitted")
    rows = grade_submissions(root / "submitted", course, root / "local", workers=2,
                             limits=LIMITS, progress=False)
    return {"root": root, "solutions": solutions, "course": course,
            "submitted": root / "submitted", "local": {r.student: key(r) for r in rows}}


@pytest.fixture
def cluster(tmp_path):
    """A ``dask scheduler`` (no retries) and two single-threaded ``dask worker`` processes."""
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
           "TMPDIR": str(tmp_path)}  # a job orphaned by a killed worker leaves its folder here
    file = tmp_path / "scheduler.json"
    processes = []

    def start(*argv: str) -> subprocess.Popen:
        log = (tmp_path / f"{argv[1]}-{len(processes)}.log").open("wb")
        process = subprocess.Popen([str(BIN / "dask"), *argv], env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(process)
        return process

    try:
        start("scheduler", "--scheduler-file", str(file), "--host", "127.0.0.1", "--port", "0",
              "--no-dashboard")
        wait_for(lambda: file.exists() and file.stat().st_size > 0, "the scheduler file")
        workers = [start("worker", "--scheduler-file", str(file), "--nthreads", "1",
                         "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                         "--memory-limit", "0") for _ in range(2)]
        client = Client(scheduler_file=str(file), timeout="60s")
        try:
            client.wait_for_workers(2, timeout=WAIT_S)
            pids = client.run(os.getpid)  # worker address -> its process id
            yield {"address": client.scheduler.address, "client": client,
                   "workers": {pid: address for address, pid in pids.items()},
                   "processes": workers}
        finally:
            client.close()
    finally:
        for process in processes:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def attempts(client: Client) -> dict[str, int]:
    """How many times the scheduler sent each grading task to a worker."""
    log = client.run_on_scheduler(
        lambda dask_scheduler: [(str(t[0]), t[2]) for t in dask_scheduler.transition_log])
    counts: dict[str, int] = {}
    for task, finish in log:
        if task.startswith("racelab-grade-") and finish == "processing":
            counts[task] = counts.get(task, 0) + 1
    return counts


def csv_rows(path: Path) -> dict[str, tuple]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {r["student"]: (r["student"], r["assignment"], float(r["score"]),
                               float(r["max_score"]), r["status"])
                for r in csv.DictReader(handle)}


def test_cluster_grades_as_local_workers_do(demo, cluster, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([str(BIN / "racelab"), "grade", str(demo["submitted"]), "--out",
                          str(out), "--solutions", str(demo["solutions"]), "--cluster",
                          cluster["address"], "--cell-timeout", str(LIMITS.cell_timeout_s),
                          "--memory-mb", str(LIMITS.memory_mb)],
                         capture_output=True, text=True, timeout=WAIT_S * 2, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert csv_rows(out / "grades.csv") == demo["local"]
    assert sorted(attempts(cluster["client"]).values()) == [1, 1, 1]
    for student in STUDENTS:
        feedback = out / "feedback" / student / LESSON / f"{LESSON}.html"
        assert feedback.exists()
        assert "racelab-job-" not in feedback.read_text(encoding="utf-8")  # no worker paths
        assert (out / "jobs" / student / f"{LESSON}.done.json").exists()


def job_process(worker_pid: int, student: str) -> psutil.Process | None:
    """The grading job process (``run_in_process``) a worker runs for ``student``, if any."""
    try:
        children = psutil.Process(worker_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    for child in children:
        try:
            argv = child.cmdline()
        except psutil.Error:
            continue
        if any("autograder.pipeline.job" in a for a in argv) and \
                any(f"/jobs/{student}/" in a for a in argv):
            return child
    return None


def find_job(cluster: dict, student: str) -> tuple[int, psutil.Process] | None:
    for worker_pid in cluster["workers"]:
        found = job_process(worker_pid, student)
        if found is not None:
            return worker_pid, found
    return None


def test_worker_lost_mid_job_is_reported_once_and_graded_on_the_next_run(demo, cluster,
                                                                         tmp_path):
    out = tmp_path / "out"

    def grade():
        return grade_submissions(demo["submitted"], demo["course"], out, limits=LIMITS,
                                 progress=False, cluster=cluster["address"])

    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(grade)
        worker_pid, job = wait_for(lambda: find_job(cluster, "racy"), "racy's job to start")
        os.kill(worker_pid, signal.SIGKILL)  # the worker, while its job runs
        job.kill()  # its orphaned job process (the sandbox dies with it)
        rows = {r.student: r for r in first.result(timeout=WAIT_S * 2)}

    lost = rows["racy"]
    assert lost.status == "worker-lost"
    assert cluster["workers"][worker_pid] in lost.detail
    for student in ("correct", "empty"):
        assert key(rows[student]) == demo["local"][student]
    counts = attempts(cluster["client"])
    assert [n for task, n in counts.items() if "-racy-" in task] == [1]  # never run again
    assert sum(counts.values()) == 3
    assert not (out / "jobs" / "racy" / f"{LESSON}.done.json").exists()
    assert not (out / "feedback" / "racy").exists()
    assert csv_rows(out / "grades.csv")["racy"][4] == "worker-lost"

    again = {r.student: key(r) for r in grade()}  # the same call, on the worker left
    assert again == demo["local"]
    counts = attempts(cluster["client"])
    assert sum(counts.values()) == 4  # only racy was sent again
    assert [n for task, n in counts.items() if "-racy-" in task] == [1, 1]


class _RetryingScheduler:
    class scheduler:  # noqa: N801 - mirrors Client.scheduler
        address = "tcp://127.0.0.1:1"

    @staticmethod
    def run_on_scheduler(function):
        return 3


def test_a_scheduler_that_retries_lost_tasks_is_refused():
    with pytest.raises(ClusterError, match="ALLOWED_FAILURES=0"):
        check_scheduler(_RetryingScheduler())
