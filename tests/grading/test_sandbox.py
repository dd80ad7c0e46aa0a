"""The grading sandbox's command: a boundary as root, and the project visible wherever it is."""

import sys
from pathlib import Path

from autograder.grading import sandbox


def argv(tmp_path: Path) -> list[str]:
    return sandbox.runner_argv({"HOME": "/tmp"}, sandbox.write_etc(tmp_path / "etc"), tmp_mb=64)


def test_private_tmp_is_mounted_before_the_binds_so_a_checkout_under_tmp_stays_visible(tmp_path):
    command = argv(tmp_path)
    tmpfs = next(i for i, arg in enumerate(command) if arg == "--tmpfs"
                 and command[i + 1] == "/tmp")
    binds = [i for i, arg in enumerate(command) if arg in ("--bind", "--ro-bind")
             and command[i + 1].startswith(sys.prefix)]
    assert binds and all(i > tmpfs for i in binds)
    assert command[tmpfs - 2:tmpfs] == ["--size", str(64 * 2**20)]


def test_runner_sees_only_its_environment(tmp_path):
    command = argv(tmp_path)
    assert "--clearenv" in command
    assert command[command.index("--setenv") + 1:command.index("--setenv") + 3] == [
        "HOME", "/tmp"]


def test_no_privilege_no_network_and_nothing_writable_from_the_host(tmp_path):
    command = argv(tmp_path)
    for flag in ("--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc",
                 "--die-with-parent", "--new-session"):
        assert flag in command
    assert command[command.index("--cap-drop") + 1] == "ALL"
    assert command[command.index("--uid") + 1] == str(sandbox.SANDBOX_UID)
    assert "--bind" not in command, "only read-only binds: the host gets nothing back"


def test_host_etc_is_not_in_the_sandbox(tmp_path):
    command = argv(tmp_path)
    etc = [command[i + 1] for i, arg in enumerate(command)
           if arg == "--ro-bind" and command[i + 2].startswith("/etc")]
    assert "/etc" not in etc and "/etc/shadow" not in etc
    assert all(path.startswith(str(tmp_path)) or path in ("/etc/ld.so.cache", "/etc/localtime")
               for path in etc)


def test_root_and_dev_are_read_only_and_shared_memory_is_size_capped(tmp_path):
    command = argv(tmp_path)
    remounted = [command[i + 1] for i, arg in enumerate(command) if arg == "--remount-ro"]
    assert remounted[-2:] == ["/dev", "/"]
    shm = command.index("/dev/shm")
    assert command[shm - 3:shm] == ["--size", str(64 * 2**20), "--tmpfs"]
    assert shm < command.index("--remount-ro")


def test_the_judges_expectations_are_not_in_the_sandbox(tmp_path):
    import subprocess

    import autograder

    judges = Path(autograder.__file__).resolve().parent / "judges"
    assert (judges / "anatomy.py").is_file()
    command = argv(tmp_path)
    probe = ("import os, sys\nprint(sorted(os.listdir(sys.argv[1])))\n"
             "try:\n    import autograder.judges.anatomy\n    print('imported')\n"
             "except ImportError:\n    print('no judge')\n"
             "try:\n    open(sys.argv[1] + '/planted.py', 'w')\n    print('written')\n"
             "except OSError:\n    print('read-only')\n")
    shown = subprocess.run([*command[:-2], "-c", probe, str(judges)], capture_output=True,
                           text=True, timeout=60, check=True).stdout.split("\n")
    assert shown[:3] == ["[]", "no judge", "read-only"], shown
