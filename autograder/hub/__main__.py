"""``python -m autograder.hub``: JupyterHub for a class on this server (``make hub``).

Students log in at ``http://IP:PORT``; each gets JupyterLab as ``make lab`` gives it in class
mode, with the hub user name as the nbgrader student id: the Assignments panel fetches from
and submits to the exchange that ``racelab release --exchange DIR`` filled, and Validate gives
the grader's verdict. The instructor then runs ``racelab collect --exchange DIR`` and
``racelab grade``. Further arguments go to ``jupyterhub``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder.hub.config import (
    AUTHENTICATORS,
    PASSWORD_VARIABLE,
    HubSetup,
    students_run_as_hub_user,
    write_hub_config,
)
from autograder.lab.config import REPO


def main(argv: list[str] | None = None) -> int:
    """Write the hub's config and replace this process with ``jupyterhub``."""
    parser = argparse.ArgumentParser(prog="python -m autograder.hub", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exchange", type=Path, default=REPO / "build" / "exchange",
                        help="nbgrader exchange root (default: build/exchange)")
    parser.add_argument("--home", type=Path, default=REPO / "build" / "hub",
                        help="the hub's folder: config, database, students' labs")
    parser.add_argument("--solutions", type=Path, default=REPO / "solutions")
    parser.add_argument("--ip", default="127.0.0.1",
                        help="address students connect to (0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--hub-port", type=int, default=None, help="default: PORT + 81")
    parser.add_argument("--api-port", type=int, default=None, help="default: PORT + 1")
    parser.add_argument("--authenticator", choices=AUTHENTICATORS, default="dummy",
                        help=f"dummy: any name and password (a trial); shared-password: the "
                             f"class password in ${PASSWORD_VARIABLE}; pam: Unix accounts")
    parser.add_argument("--students-as-root", action="store_true",
                        help="run as root with dummy or shared-password login anyway: every "
                             "student's server and code then runs as root (a throwaway machine)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="Validate without bubblewrap (the grader itself uses it)")
    args, extra = parser.parse_known_args(argv)
    if args.authenticator == "shared-password" and len(os.environ.get(PASSWORD_VARIABLE, "")) < 8:
        parser.error(f"--authenticator shared-password needs ${PASSWORD_VARIABLE} "
                     "(8 characters or more)")
    if args.authenticator == "pam" and os.geteuid() != 0:
        parser.error("--authenticator pam starts each student's server as their own Unix "
                     "account: run the hub as root")
    setup = HubSetup(args.home.resolve(), args.exchange.resolve(), args.solutions.resolve(),
                     args.ip, args.port, args.hub_port or args.port + 81,
                     args.api_port or args.port + 1, args.authenticator, not args.no_sandbox)
    if students_run_as_hub_user(setup) and os.geteuid() == 0 and not args.students_as_root:
        parser.error(f"with --authenticator {setup.authenticator} every student's server runs "
                     "as the hub's Unix user, here root, and so does every student's code. "
                     "Run the hub as an unprivileged user, or use --authenticator pam (each "
                     "student as their own account), or pass --students-as-root on a "
                     "throwaway machine")
    config = write_hub_config(setup)
    if not setup.exchange.exists():
        setup.exchange.mkdir(parents=True)
        setup.exchange.chmod(0o777)  # nbgrader's exchange: every student writes submissions
    print(f"Race Lab hub on http://{setup.ip}:{setup.port} ({setup.authenticator} login), "
          f"exchange {setup.exchange}, students' labs in {setup.home / 'users'}", flush=True)
    command = [sys.executable, "-m", "jupyterhub", "-f", str(config), *extra]
    os.chdir(setup.home)
    os.umask(0o077)  # the hub's database and each student's files: their owner's alone
    os.execv(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
