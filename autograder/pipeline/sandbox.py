"""Grading kernels in a bubblewrap sandbox.

A student's notebook runs in a kernel that sees the system read-only (``/usr``, ``/etc``, ...),
the project's virtual environment and the ``autograder`` package read-only, a private ``/tmp``,
and one writable folder: its own working directory (plus, for the grader's cell marks, a folder
of the grader's choosing). It cannot see ``solutions/``, the
gradebook, the demo class or any other student's files, because they are not in its mount
namespace; it cannot see other processes (own PID namespace), and it gets no capabilities.
The kernel is interrupted by message (``interrupt_mode: message``), which crosses the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import autograder

KERNEL_NAME = "racelab-sandbox"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot make a sandbox on this machine."""


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or None when bubblewrap is not installed."""
    return shutil.which("bwrap")


def kernel_argv(workdir: Path, connection_file: Path, env: dict[str, str],
                writable: tuple[Path, ...] = ()) -> list[str]:
    """The command that starts an ipykernel inside the sandbox.

    Args:
        workdir: The writable working directory (the notebook's folder).
        connection_file: The kernel's connection file (bound read-only).
        env: The kernel's whole environment (nothing else is inherited).
        writable: More folders the kernel may write, bound at their own paths.
    """
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed; `make setup` installs it")
    venv = Path(sys.prefix)
    package = Path(autograder.__file__).resolve().parent
    argv = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--new-session", "--clearenv"]
    for directory in _SYSTEM_DIRS:
        if Path(directory).exists():
            argv += ["--ro-bind", directory, directory]
    for name, value in sorted(env.items()):
        argv += ["--setenv", name, value]
    # Mounts apply in order: the private /tmp first, so that binds below /tmp stay visible.
    argv += [
        "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--ro-bind", str(venv), str(venv),
        "--ro-bind", str(package), str(package),
        "--bind", str(workdir), str(workdir),
        *[arg for folder in writable for arg in ("--bind", str(folder), str(folder))],
        "--ro-bind", str(connection_file), str(connection_file),
        "--chdir", str(workdir),
        str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", str(connection_file),
    ]
    return argv


def install_kernelspec(jupyter_data_dir: Path, workdir: Path, env: dict[str, str],
                       writable: tuple[Path, ...] = ()) -> None:
    """Write the sandboxed kernelspec ``racelab-sandbox`` under ``jupyter_data_dir/kernels``.

    The kernelspec runs this module, which builds the bubblewrap command once the connection
    file's path is known (``{connection_file}`` is only filled in at launch).
    """
    spec_dir = jupyter_data_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    settings = spec_dir / "sandbox.json"
    settings.write_text(json.dumps({"workdir": str(workdir), "env": env,
                                    "writable": [str(folder) for folder in writable]}),
                        encoding="utf-8")
    spec = {
        "argv": [sys.executable, "-m", "autograder.pipeline.sandbox", str(settings),
                 "{connection_file}"],
        "display_name": "Race Lab grading sandbox",
        "language": "python",
        "interrupt_mode": "message",
        "metadata": {"debugger": False},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")


def kernel_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a grading kernel gets: minimal, with HOME on its private /tmp."""
    env = {
        "HOME": "/tmp",
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "PYTHONSTARTUP": str(Path(__file__).with_name("kernel_startup.py")),
    }
    env.update(extra or {})
    return env


def main(argv: list[str]) -> None:
    """Kernelspec entry point: ``python -m autograder.pipeline.sandbox SETTINGS CONNECTION``."""
    settings = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    command = kernel_argv(Path(settings["workdir"]), Path(argv[1]).resolve(), settings["env"],
                          tuple(Path(folder) for folder in settings.get("writable", ())))
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
