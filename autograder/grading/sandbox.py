"""The grading sandbox: bubblewrap around the runner, a boundary even when grading runs as root.

A submission runs in :mod:`autograder.kernel.runner`, started by :func:`runner_argv` inside
bubblewrap with:

- a new user namespace (unprivileged uid/gid 65534 inside) and every capability dropped, so a
  grader running as root hands the notebook no privilege (no mounts, no reading root's files);
- new PID, IPC, UTS, cgroup and network namespaces: no other process is visible or signalable,
  and the only network is the sandbox's own loopback (nothing of the host's, no internet);
- a minimal read-only file system: ``/usr`` (and the ``/lib``, ``/bin`` links), the virtual
  environment, the ``autograder`` package and a few synthetic ``/etc`` files (no host ``/etc``);
  ``solutions/``, gradebooks, other students' files and the judge's expectations
  (``autograder/judges``, an empty folder inside) are not in it at all;
- two writable places, a size-capped private ``/tmp`` and ``/dev/shm`` (POSIX shared memory),
  both RAM-backed and counted in the memory cap by :mod:`autograder.grading.execute`; the root
  and ``/dev`` are remounted read-only, so nothing else can hold uncounted memory, and nothing
  the notebook writes ever reaches the host.

The runner talks to the host over its standard input and output (pipes), so it needs no socket.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import autograder

SANDBOX_UID = 65534
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = {
    "passwd": f"root:x:0:0::/root:/bin/false\nnobody:x:{SANDBOX_UID}:{SANDBOX_UID}::/tmp:"
              "/bin/false\n",
    "group": f"root:x:0:\nnogroup:x:{SANDBOX_UID}:\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
}
_HOST_ETC = ("ld.so.cache", "localtime")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot make a sandbox on this machine."""


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or None when bubblewrap is not installed."""
    return shutil.which("bwrap")


def runner_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of the runner: minimal, with HOME on its private /tmp."""
    env = {
        "HOME": "/tmp",
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "MPLBACKEND": "Agg",
    }
    env.update(extra or {})
    return env


def write_etc(folder: Path) -> Path:
    """Write the sandbox's synthetic ``/etc`` files into ``folder`` (bound read-only)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in _ETC_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def runner_argv(env: dict[str, str], etc: Path, *, tmp_mb: int) -> list[str]:
    """The command that starts the runner inside the sandbox.

    Args:
        env: The runner's whole environment (nothing else is inherited).
        etc: A folder made by :func:`write_etc`.
        tmp_mb: Size of the private ``/tmp``, and of ``/dev/shm``.

    Raises:
        SandboxUnavailable: bubblewrap is not installed.
    """
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed; `make setup` installs it")
    venv = Path(sys.prefix)
    package = Path(autograder.__file__).resolve().parent
    argv = [bwrap, "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--unshare-cgroup-try", "--cap-drop", "ALL", "--die-with-parent",
            "--new-session", "--clearenv", "--hostname", socket.gethostname()]
    for directory in _SYSTEM_DIRS:
        if os.path.lexists(directory):
            argv += ["--ro-bind", directory, directory]
    for name in _ETC_FILES:
        argv += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    for name in _HOST_ETC:
        if Path("/etc", name).exists():
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for name, value in sorted(env.items()):
        argv += ["--setenv", name, value]
    # Mounts apply in order: the private /tmp first, so that binds below /tmp stay visible.
    argv += [
        "--dev", "/dev", "--size", str(tmp_mb * 2**20), "--tmpfs", "/dev/shm",
        "--proc", "/proc",
        "--size", str(tmp_mb * 2**20), "--tmpfs", "/tmp",
        "--ro-bind", str(venv), str(venv),
        "--ro-bind", str(package), str(package),
        # The judge's expectations stay on the host: the sandbox sees an empty folder.
        "--tmpfs", str(package / "judges"), "--remount-ro", str(package / "judges"),
        "--remount-ro", "/dev", "--remount-ro", "/",
        "--chdir", "/tmp",
        "--setenv", "PYTHONPATH", str(package.parent),
        str(venv / "bin" / "python"), "-s", "-P", "-m", "autograder.kernel.runner",
    ]
    return argv


def direct_argv() -> list[str]:
    """The runner without a sandbox (``--no-sandbox``: trusted notebooks only)."""
    return [sys.executable, "-m", "autograder.kernel.runner"]
