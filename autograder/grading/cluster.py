"""Grading jobs on a Dask cluster: each job's inputs shipped as bytes, its result and files back.

``racelab grade --cluster ADDRESS|local:N`` grades through a :class:`ClusterExecutor` instead
of local threads. The head packs a job's inputs (:func:`pack`: the submission as
:func:`~autograder.grading.untrusted.read_untrusted` reads it, the release notebook, the
course's ``gradebook.db`` and the lesson's ``source/`` folder), so workers need no shared
storage and no course folder. A worker writes them into a fresh temporary folder and grades
there with :func:`~autograder.grading.grade.run_in_interpreter` (a new Python process per job, as
locally: :func:`run_shipped`); the head writes the result and the files it reads afterwards
(feedback, executed notebook, logs) under the job's own folder (:func:`unpack`).

A grade is never retried. The scheduler must not retry a task whose worker died
(``distributed.scheduler.allowed-failures`` = 0; :func:`check_scheduler` refuses one that
does), and the head sends each job to one idle worker of its choosing, one job per worker
thread at a time, so a worker lost mid-job costs exactly the jobs it was running: each becomes
a ``worker-lost`` result naming the worker, which the caller does not mark finished.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError, Executor, Future
from pathlib import Path, PurePosixPath

from autograder.grading.spec import Job, JobFolder, JobResult, Status
from autograder.grading.untrusted import UntrustedFileError, read_untrusted

#: The scheduler setting that must be 0: a job whose worker died is never run again.
ALLOWED_FAILURES = "distributed.scheduler.allowed-failures"

#: The most bytes of files a worker sends back for one job (the executed notebook's outputs
#: are capped per cell, so a real job stays far below it).
MAX_RETURNED_BYTES = 64 * 2**20

#: Seconds the head waits for a worker when the cluster has none before the jobs still
#: waiting become ``worker-lost``.
NO_WORKER_TIMEOUT_S = 300.0

#: Seconds between two looks at the scheduler's workers while jobs wait for one.
_POLL_S = 0.25


class ClusterError(RuntimeError):
    """The cluster cannot grade: unreachable, or its scheduler would retry a lost job."""


@dataclasses.dataclass(frozen=True)
class Shipment:
    """A job and its inputs, as bytes: everything a worker needs to grade it.

    Attributes:
        job: The job, with the head's paths.
        submission: The submitted notebook's bytes.
        release: The release notebook's bytes.
        gradebook: The course's ``gradebook.db``.
        source: The lesson's ``source/<assignment>/`` files by relative POSIX path.
    """

    job: Job
    submission: bytes
    release: bytes
    gradebook: bytes
    source: dict[str, bytes]


@dataclasses.dataclass(frozen=True)
class Returned:
    """What a worker sends back for one job.

    Attributes:
        result: The job's result, with the worker's paths in its messages.
        files: The job folder's files the head reads, by relative POSIX path.
        log: The job process's log.
        workdir: The job folder on the worker (rewritten to the head's in messages).
        log_path: The log's path on the worker (likewise).
        left_out: Files not sent because of :data:`MAX_RETURNED_BYTES`.
    """

    result: JobResult
    files: dict[str, bytes]
    log: bytes
    workdir: str
    log_path: str
    left_out: list[str]


def pack(job: Job, course_files: Callable[[Job], tuple[bytes, bytes, dict[str, bytes]]]
         ) -> Shipment | None:
    """The job's inputs as bytes, or None when the submission is not a readable regular file.

    Args:
        job: The job, with the head's paths.
        course_files: The release, gradebook and source files of ``job`` (cached per lesson
            by the caller; see :func:`read_course_files`).
    """
    path = Path(job.submission)
    if path.parent.is_symlink():
        return None
    try:
        submission = read_untrusted(path)
    except UntrustedFileError:
        return None
    release, gradebook, source = course_files(job)
    return Shipment(job, submission, release, gradebook, source)


def read_course_files(job: Job) -> tuple[bytes, bytes, dict[str, bytes]]:
    """The course files a job reads (see ``job._job_course``): release, gradebook, source."""
    folder = Path(job.course) / "source" / job.assignment
    source = {path.relative_to(folder).as_posix(): path.read_bytes()
              for path in sorted(folder.rglob("*")) if path.is_file()}
    return (Path(job.release).read_bytes(), (Path(job.course) / "gradebook.db").read_bytes(),
            source)


def run_shipped(shipment: Shipment, run: Callable[[Job], JobResult]) -> Returned:
    """On a worker: grade ``shipment`` in a fresh temporary folder with ``run``.

    Args:
        shipment: The job and its inputs.
        run: How to run a job (``grade.run_in_interpreter``: a new interpreter per job).
    """
    job = shipment.job
    with tempfile.TemporaryDirectory(prefix="racelab-job-") as tmp:
        root = Path(tmp)
        submission = root / "submitted" / job.student / job.assignment / Path(job.submission).name
        release = root / "release" / job.assignment / Path(job.release).name
        course = root / "course"
        workdir = root / "jobs" / job.student / job.assignment
        _write(submission, shipment.submission)
        _write(release, shipment.release)
        _write(course / "gradebook.db", shipment.gradebook)
        for name, data in shipment.source.items():
            _write(_inside(course / "source" / job.assignment, name), data)
        local = dataclasses.replace(job, submission=str(submission), release=str(release),
                                    course=str(course), workdir=str(workdir))
        result = run(local)
        files, left_out = _gather(workdir)
        log_path = JobFolder(workdir).log
        log = log_path.read_bytes()[-MAX_RETURNED_BYTES // 8:] if log_path.exists() else b""
        return Returned(result, files, log, str(workdir), str(log_path), left_out)


def unpack(job: Job, returned: Returned) -> JobResult:
    """On the head: write ``returned``'s files into ``job.workdir``; the result, paths fixed."""
    workdir = Path(job.workdir)
    _clear(job)
    for name, data in returned.files.items():
        _write(_inside(workdir, name), data)
    log = JobFolder(workdir).log
    extra = "".join(f"\n[racelab] not sent back (over {MAX_RETURNED_BYTES} bytes): {name}"
                    for name in returned.left_out)
    log.write_bytes(returned.log + extra.encode())

    def here(text: str) -> str:
        return text.replace(returned.log_path, str(log)).replace(returned.workdir, job.workdir)

    result = returned.result
    return dataclasses.replace(result, detail=here(result.detail),
                               notes=[here(note) for note in result.notes])


def lost(job: Job, worker: str | None, error: BaseException) -> JobResult:
    """The result of a job the cluster lost: status ``worker-lost``, the worker named.

    Args:
        job: The job.
        worker: The address of the worker it was sent to (None: it was never sent).
        error: What the cluster reported.
    """
    _clear(job)
    if _died(error):
        cause = "the worker died or left the cluster"
    else:
        cause = f"{type(error).__name__}: {str(error)[:300]}"
    where = (f"the Dask worker {worker} was lost while it graded this notebook"
             if worker else "no Dask worker could grade this notebook")
    reason = (f"{where} ({cause}); it was not graded again: run the same command to grade "
              "it")
    return JobResult(job.student, job.assignment, Path(job.submission).stem,
                     Status.WORKER_LOST.value, detail=reason, notes=[reason])


def _died(error: BaseException) -> bool:
    """Whether ``error`` says the task's worker went away (rather than the task failing)."""
    from distributed.scheduler import KilledWorker

    return isinstance(error, KilledWorker | CancelledError | asyncio.CancelledError)


def _clear(job: Job) -> None:
    """Empty the head's job folder, so nothing of an earlier run is read as this run's."""
    workdir = Path(job.workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _inside(folder: Path, name: str) -> Path:
    """``folder / name`` for a relative POSIX ``name`` that stays inside ``folder``."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a relative path inside the job folder: {name!r}")
    return folder.joinpath(*parts)


def _gather(workdir: Path) -> tuple[dict[str, bytes], list[str]]:
    """The job folder's files the head reads (``grade._collect_feedback``,
    ``grade._record_in_course``), up to :data:`MAX_RETURNED_BYTES` in all."""
    wanted = JobFolder(workdir).returned()
    wanted += sorted(p for p in (workdir / "course" / "autograded").rglob("*") if p.is_file())
    files, left_out, total = {}, [], 0
    for path in wanted:
        if not path.is_file() or path.is_symlink():
            continue
        name = path.relative_to(workdir).as_posix()
        size = path.stat().st_size
        if total + size > MAX_RETURNED_BYTES:
            left_out.append(name)
            continue
        files[name] = path.read_bytes()
        total += size
    return files, left_out


def check_scheduler(client) -> None:
    """Refuse a scheduler that would run a job again after its worker died.

    Raises:
        ClusterError: Its ``allowed-failures`` is not 0, or it does not say.
    """
    try:
        allowed = client.run_on_scheduler(_allowed_failures)
    except Exception as error:  # noqa: BLE001 - any refusal means we cannot know
        raise ClusterError(f"could not read the scheduler's {ALLOWED_FAILURES} ({error})") \
            from None
    if allowed != 0:
        raise ClusterError(
            f"the scheduler at {client.scheduler.address} retries a task whose worker died "
            f"({ALLOWED_FAILURES} = {allowed}); a grade must never run twice. Start it with "
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0 dask scheduler ...")


def _allowed_failures(dask_scheduler) -> int:
    return dask_scheduler.allowed_failures


def _connect(address: str):
    """A client on ``address``, or on a new local cluster for ``local:N``; and that cluster."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as error:
        raise ClusterError(f"--cluster needs Dask: pip install -e '.[cluster]' ({error})") \
            from None

    if address.startswith("local:"):
        try:
            n = int(address.removeprefix("local:"))
        except ValueError:
            n = 0
        if n < 1:
            raise ClusterError(f"--cluster local:N needs N >= 1 workers, not {address!r}")
        with dask.config.set({ALLOWED_FAILURES: 0}):
            # memory_limit=0: the nanny sees only the worker, never the job's processes;
            # the grader's own --memory-mb cap on each sandbox is the real one.
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   memory_limit=0, dashboard_address=":0")
        return cluster, Client(cluster)
    try:
        return None, Client(address, timeout="30s")
    except (OSError, TimeoutError) as error:
        raise ClusterError(f"no Dask scheduler answers at {address} ({error})") from None


class ClusterExecutor(Executor):
    """Runs ``submit(fn, job)`` as a Dask task on one idle worker, ``fn`` inside the task.

    A job whose submission the head cannot read as a regular file runs on the head instead
    (its job only records why; no student code runs). Results are written back under the
    head's ``job.workdir`` before the returned future completes.

    Args:
        address: A running scheduler's address, or ``local:N`` for a local cluster of N
            single-threaded worker processes, started here and closed on shutdown.
    """

    def __init__(self, address: str) -> None:
        self._cluster, self.client = _connect(address)
        try:
            check_scheduler(self.client)
        except ClusterError:
            self._close_client()
            raise
        self._cond = threading.Condition()
        self._queue: deque[tuple[Callable[[Job], JobResult], Job, Future]] = deque()
        self._busy: dict[str, int] = {}
        self._running: dict[str, tuple[object, Job, str, Future]] = {}
        self._course_files: dict[tuple[str, str], tuple[bytes, bytes, dict[str, bytes]]] = {}
        self._local = None
        self._closed = False
        self._dispatcher = threading.Thread(target=self._dispatch, name="racelab-cluster",
                                            daemon=True)
        self._dispatcher.start()

    def submit(self, fn: Callable[[Job], JobResult], /, *args, **kwargs) -> Future:
        """Queue ``fn(job)``; the future's result is the job's (or a ``worker-lost``) result."""
        (job,) = args
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot submit to a closed ClusterExecutor")
            self._queue.append((fn, job, future))
            self._cond.notify_all()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop dispatching, cancel what still runs, close the client and any local cluster."""
        with self._cond:
            if wait and not cancel_futures:
                while self._queue or self._running:
                    self._cond.wait(1.0)
            self._closed = True
            for _, _, future in self._queue:
                future.cancel()
            self._queue.clear()
            self._cond.notify_all()
        self._dispatcher.join(timeout=10)
        if self._local is not None:
            self._local.shutdown(wait=wait)
        self._close_client()

    def _close_client(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def _dispatch(self) -> None:
        """Send each queued job to a worker with a free thread; one job per thread."""
        no_worker_since = None
        while True:
            with self._cond:
                while not self._closed and not self._queue:
                    self._cond.wait()
                if self._closed:
                    return
            try:
                workers = self.client.nthreads()
            except Exception:  # noqa: BLE001 - no answer now: no worker to send a job to
                workers = {}
            else:
                self._drop_orphans(workers)
            with self._cond:
                free = [address for address, n in sorted(workers.items())
                        for _ in range(n - self._busy.get(address, 0))]
            if not workers:
                no_worker_since = no_worker_since or time.monotonic()
                if time.monotonic() - no_worker_since > NO_WORKER_TIMEOUT_S:
                    self._fail_waiting(f"no worker was connected to the scheduler for "
                                       f"{NO_WORKER_TIMEOUT_S:g} s")
            else:
                no_worker_since = None
            for address in free:
                with self._cond:
                    if not self._queue:
                        break
                    fn, job, future = self._queue.popleft()
                self._start(fn, job, future, address)
            with self._cond:
                self._cond.wait(_POLL_S)

    def _start(self, fn: Callable[[Job], JobResult], job: Job, future: Future,
               address: str) -> None:
        if not future.set_running_or_notify_cancel():
            return
        key = f"racelab-grade-{job.student}-{job.assignment}-{uuid.uuid4().hex}"
        try:
            shipment = pack(job, self._files_of)
        except Exception as error:  # noqa: BLE001 - the head's course folder is unreadable
            future.set_exception(error)
            return
        if shipment is None:
            self._run_on_head(fn, job, future)
            return
        with self._cond:
            try:
                task = self.client.submit(run_shipped, shipment, fn, key=key, pure=False,
                                          workers=[address], allow_other_workers=False,
                                          retries=0)
            except Exception as error:  # noqa: BLE001 - the client lost its scheduler
                future.set_result(lost(job, address, error))
                return
            self._busy[address] = self._busy.get(address, 0) + 1
            self._running[key] = (task, job, address, future)
        task.add_done_callback(lambda done: self._settle(key, done))

    def _settle(self, key: str, task) -> None:
        """A task ended: write its files back, or make its ``worker-lost`` result."""
        with self._cond:
            entry = self._running.pop(key, None)
        if entry is None:
            return
        _, job, address, future = entry
        try:
            try:
                returned = task.result()
            except (Exception, asyncio.CancelledError, CancelledError) as error:
                result = lost(job, address, error)
            else:
                result = unpack(job, returned)
        except Exception as error:  # noqa: BLE001 - the head could not write: say so
            future.set_exception(error)
        else:
            future.set_result(result)
        finally:
            with self._cond:
                self._busy[address] -= 1
                self._cond.notify_all()

    def _drop_orphans(self, workers: dict[str, int]) -> None:
        """Cancel jobs sent to a worker that has left before the scheduler placed them."""
        with self._cond:
            orphans = [task for task, _, address, _ in self._running.values()
                       if address not in workers]
        for task in orphans:
            task.cancel()

    def _fail_waiting(self, why: str) -> None:
        with self._cond:
            waiting = list(self._queue)
            self._queue.clear()
        for _, job, future in waiting:
            if future.set_running_or_notify_cancel():
                future.set_result(lost(job, None, ClusterError(why)))

    def _files_of(self, job: Job) -> tuple[bytes, bytes, dict[str, bytes]]:
        key = (job.course, job.assignment)
        if key not in self._course_files:
            self._course_files[key] = read_course_files(job)
        return self._course_files[key]

    def _run_on_head(self, fn: Callable[[Job], JobResult], job: Job, future: Future) -> None:
        from concurrent.futures import ThreadPoolExecutor

        if self._local is None:
            self._local = ThreadPoolExecutor(max_workers=1)

        def run() -> None:
            try:
                future.set_result(fn(job))
            except Exception as error:  # noqa: BLE001 - handed to the caller
                future.set_exception(error)

        self._local.submit(run)

