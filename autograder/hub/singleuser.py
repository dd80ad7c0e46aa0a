"""A student's server on the hub: write their lab's config, then become ``jupyterhub-singleuser``.

The spawner starts ``python -m autograder.hub.singleuser`` as the user the student's server runs
as (with ``pam`` login, the student's own account), so the lab is written with that user's
rights: the hub, which may run as root, never writes inside a folder a student can change.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder.hub.config import SETUP_VARIABLE, HubSetup
from autograder.lab.config import write_config


def write_student_lab(environment: dict[str, str]) -> None:
    """Write the lab of the hub user the spawner named (``JUPYTERHUB_USER``)."""
    setup = HubSetup.from_json(environment[SETUP_VARIABLE])
    write_config(setup.student_lab(environment["JUPYTERHUB_USER"]))


def main() -> None:
    """Write the lab, then replace this process with ``jupyterhub-singleuser ARGS``."""
    write_student_lab(dict(os.environ))
    command = [str(Path(sys.executable).parent / "jupyterhub-singleuser"), *sys.argv[1:]]
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
