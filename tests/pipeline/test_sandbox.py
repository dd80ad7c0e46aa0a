"""The grading sandbox's mount order keeps the project visible wherever it is checked out."""

import sys
from pathlib import Path

from autograder.pipeline import sandbox


def test_private_tmp_is_mounted_before_the_binds_so_a_checkout_under_tmp_stays_visible():
    argv = sandbox.kernel_argv(Path("/tmp/x/work"), Path("/tmp/x/kernel.json"), {"A": "1"})
    tmpfs = argv.index("--tmpfs")
    binds = [i for i, arg in enumerate(argv) if arg in ("--bind", "--ro-bind")
             and argv[i + 1].startswith(("/tmp", sys.prefix))]
    assert binds and all(i > tmpfs for i in binds)


def test_kernel_sees_only_its_environment():
    argv = sandbox.kernel_argv(Path("/w"), Path("/w/k.json"), {"HOME": "/tmp"})
    assert "--clearenv" in argv
    assert argv[argv.index("--setenv") + 1:argv.index("--setenv") + 3] == ["HOME", "/tmp"]
