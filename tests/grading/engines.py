"""Real engines for the pipeline's tests, started as processes here and stopped by their PIDs.

:func:`postgres_server` runs a private PostgreSQL server on a Unix socket; :func:`dask_cluster`
runs a ``dask scheduler`` and single-threaded ``dask worker`` processes. Both stop every process
they started when their block ends, also when a test in it fails. :func:`csv_rows` and
:func:`gradebook_rows` read a run's grades back from ``grades.csv`` and from a gradebook.
"""

from __future__ import annotations

import contextlib
import csv
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from autograder.course.course import nbgrader_environment

#: Where Debian's ``postgresql`` package puts the server's programs.
PG_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
#: Bound on the wait for PostgreSQL to accept connections, and for it to stop.
PG_WAIT_S = 60
#: The virtual environment's programs (``dask``, ``racelab``).
BIN = Path(sys.executable).parent
#: Bound on every wait for a Dask condition (startup, a job to start, a run to end).
DASK_WAIT_S = 120


def wait_for(condition: Callable[[], object], what: str, timeout: float = DASK_WAIT_S):
    """Poll ``condition`` until it returns a truthy value.

    Args:
        condition: Called every 50 ms; it may raise to stop the wait at once.
        what: What is awaited, for the error message.
        timeout: Seconds to wait at most.

    Returns:
        ``condition()``'s first truthy value.

    Raises:
        AssertionError: ``timeout`` seconds passed first.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def server_ready(data: Path) -> bool:
    """Whether the postmaster in ``data`` says it accepts connections.

    The status line of ``postmaster.pid``, which ``pg_ctl start --wait`` reads too: the socket
    opens while the server still refuses sessions as starting up.
    """
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return False
    return len(lines) > 7 and lines[7].strip() == "ready"


@contextlib.contextmanager
def postgres_server() -> Iterator[Callable[[str], str]]:
    """A PostgreSQL server on a private Unix socket, stopped by its PID when the block ends.

    ``initdb`` and ``postgres`` run as the ``postgres`` user when the tests run as root (initdb
    refuses root). The server listens on no TCP port and trusts its one role, ``racelab``.
    Skips the test when the server's programs or psycopg are not installed.

    Yields:
        A function that creates the database ``name`` and returns its SQLAlchemy URL.
    """
    if not PG_BIN:
        pytest.skip("PostgreSQL's server programs are not installed "
                    "(Debian: apt-get install postgresql)")
    pytest.importorskip("psycopg", reason="needs the gradebook extra: pip install -e .[gradebook]")
    import psycopg

    bin_dir = PG_BIN[-1].parent
    folder = Path(tempfile.mkdtemp(prefix="rl-pg-", dir="/tmp"))  # a socket path is short
    try:
        as_user = {}
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(folder, account.pw_uid, account.pw_gid)
            as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        subprocess.run([str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "racelab",
                        "--auth=trust", "--no-sync", "--no-instructions"], cwd=folder,
                       check=True, stdout=subprocess.DEVNULL, **as_user)
        with (folder / "server.log").open("wb") as log:
            server = subprocess.Popen([str(bin_dir / "postgres"), "-D", str(folder / "data"),
                                       "-c", "listen_addresses=",
                                       "-c", f"unix_socket_directories={folder}",
                                       "-c", "fsync=off"], cwd=folder, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True,
                                      **as_user)
            try:
                def ready() -> bool:
                    assert server.poll() is None, (folder / "server.log").read_text()
                    return server_ready(folder / "data")

                wait_for(ready, "PostgreSQL to accept connections", PG_WAIT_S)
                with psycopg.connect(host=str(folder), user="racelab", dbname="postgres",
                                     autocommit=True, connect_timeout=PG_WAIT_S) as admin:
                    def database(name: str) -> str:
                        admin.execute(f'CREATE DATABASE "{name}"')
                        return f"postgresql+psycopg://racelab@/{name}?host={folder}"

                    yield database
            finally:
                server.send_signal(signal.SIGINT)  # fast shutdown: ends every session, exits
                try:
                    server.wait(timeout=PG_WAIT_S)
                except subprocess.TimeoutExpired:
                    os.kill(server.pid, signal.SIGKILL)
                    server.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2) -> Iterator[dict]:
    """A ``dask scheduler`` that never retries a task and ``workers`` single-threaded workers.

    Every process is killed by its PID when the block ends. Their logs go to ``folder``, which
    is also their ``TMPDIR``: a job orphaned by a killed worker leaves its folder there.

    Args:
        folder: A folder for the scheduler file, the logs and temporary files.
        workers: How many ``dask worker`` processes to start (no nanny, one thread each).

    Yields:
        ``address``: the scheduler's; ``client``: a ``distributed.Client`` connected to it;
        ``workers``: each worker's PID -> its address; ``processes``: the workers' ``Popen``.
    """
    from distributed import Client

    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
           "TMPDIR": str(folder)}
    file = folder / "scheduler.json"
    processes: list[subprocess.Popen] = []

    def start(*argv: str) -> subprocess.Popen:
        with (folder / f"{argv[0]}-{len(processes)}.log").open("wb") as log:
            process = subprocess.Popen([str(BIN / "dask"), *argv], env=env, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(process)
        return process

    try:
        start("scheduler", "--scheduler-file", str(file), "--host", "127.0.0.1", "--port", "0",
              "--no-dashboard")
        wait_for(lambda: file.exists() and file.stat().st_size > 0, "the scheduler file")
        started = [start("worker", "--scheduler-file", str(file), "--nthreads", "1",
                         "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                         "--memory-limit", "0") for _ in range(workers)]
        client = Client(scheduler_file=str(file), timeout="60s")
        try:
            client.wait_for_workers(workers, timeout=DASK_WAIT_S)
            pids = client.run(os.getpid)  # worker address -> its process id
            yield {"address": client.scheduler.address, "client": client,
                   "workers": {pid: address for address, pid in pids.items()},
                   "processes": started}
        finally:
            client.close()
    finally:
        for process in processes:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def csv_rows(path: Path) -> set[tuple]:
    """The rows of a ``grades.csv``, as ``(student, assignment, score, max_score, status)``."""
    with path.open(newline="", encoding="utf-8") as handle:
        return {(r["student"], r["assignment"], float(r["score"]), float(r["max_score"]),
                 r["status"]) for r in csv.DictReader(handle)}


def gradebook_rows(url: str) -> set[tuple]:
    """Every submission in the gradebook at ``url``, as nbgrader's ``Gradebook`` reads it.

    Returns:
        ``(student, assignment, score, max_score)`` per submission.
    """
    from nbgrader.api import Gradebook

    with nbgrader_environment(), Gradebook(url) as gb:
        return {(s.student.id, a.name, float(s.score), float(s.max_score))
                for a in gb.assignments for s in a.submissions}
