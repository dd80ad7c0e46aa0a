"""The hub's JupyterHub configuration, and each student's lab written when it is spawned.

``python -m autograder.hub`` writes ``<home>/jupyterhub_config.py``, two lines that call
:func:`configure` with a :class:`HubSetup`. JupyterHub runs it in the hub process, so the
spawn hook below runs there too: it makes the student's folder ``<home>/users/<name>/`` and
points their server at it. The server (:mod:`autograder.hub.singleuser`, run as the student's
user) then writes its Jupyter config with :func:`autograder.lab.config.write_config`, the same
files ``make lab EXCHANGE=DIR STUDENT=<hub user>`` writes.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from autograder.lab.config import REPO, LabSetup

#: Hub user names become nbgrader student ids and folder names: lower-case letters, digits,
#: ``-`` and ``_``, starting with a letter or digit (nbgrader splits exchange files on ``+``).
USERNAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,31}$"
AUTHENTICATORS = ("dummy", "shared-password", "pam")
#: The environment variable that holds the class password of ``shared-password``.
PASSWORD_VARIABLE = "RACELAB_HUB_PASSWORD"
#: The environment variable that hands a student's server the :class:`HubSetup`.
SETUP_VARIABLE = "RACELAB_HUB_SETUP"
_BIN = Path(sys.executable).parent
#: How long the proxy waits for a student's server to answer one request: longer than a
#: Validate may take (``RaceLabValidate.timeout``, 1500 s; a test ties the two). Without it the
#: proxy gave up after tornado's default 20 s and answered a slower Validate with a 503 page,
#: which the button showed as "Cannot validate: SyntaxError: Unexpected token '<'".
PROXY_TIMEOUT_S = 1560


@dataclass(frozen=True)
class HubSetup:
    """Where and how the class's hub runs.

    Attributes:
        home: The hub's folder: its config, database, cookie secret, and each student's
            ``users/<name>/`` (lab config in ``lab/``, fetched lessons in ``work/``).
        exchange: nbgrader's exchange root that ``racelab release --exchange`` filled.
        solutions: Lesson sources; Validate grades against their hidden tests.
        ip: Address the proxy listens on (students' browsers connect there).
        port: The proxy's public port.
        hub_port: The hub's own port, on 127.0.0.1.
        api_port: The proxy's API port, on 127.0.0.1.
        authenticator: ``dummy`` (any name, any password: a trial on one machine),
            ``shared-password`` (one class password from :data:`PASSWORD_VARIABLE`) or ``pam``
            (the server's Unix accounts).
        sandbox: Validate runs the grading kernel in bubblewrap, as the grader does.

    With ``dummy`` and ``shared-password`` every student's server runs as the hub's own Unix
    user (``SimpleLocalProcessSpawner``); with ``pam`` each runs as the student's own account
    (``LocalProcessSpawner``, the hub running as root), in a folder only that account can read.
    """

    home: Path
    exchange: Path
    solutions: Path = REPO / "solutions"
    ip: str = "127.0.0.1"
    port: int = 8000
    hub_port: int = 8081
    api_port: int = 8001
    authenticator: str = "dummy"
    sandbox: bool = True

    def to_json(self) -> str:
        """The setup as JSON, paths as strings (what the config file passes back)."""
        return json.dumps({k: str(v) if isinstance(v, Path) else v
                           for k, v in asdict(self).items()})

    @classmethod
    def from_json(cls, text: str) -> HubSetup:
        """The setup :meth:`to_json` wrote."""
        values = json.loads(text)
        for name in ("home", "exchange", "solutions"):
            values[name] = Path(values[name])
        return cls(**values)

    def student_lab(self, name: str) -> LabSetup:
        """The class-mode lab of hub user ``name``: ``make lab EXCHANGE=... STUDENT=name``."""
        folder = self.home / "users" / name
        return LabSetup("student", folder / "lab", folder / "work", self.solutions,
                        exchange=self.exchange, student=name, sandbox=self.sandbox)


def write_hub_config(setup: HubSetup) -> Path:
    """Write ``<home>/jupyterhub_config.py`` for ``setup``; returns its path."""
    setup.home.mkdir(parents=True, exist_ok=True)
    path = setup.home / "jupyterhub_config.py"
    path.write_text(
        "# Written by python -m autograder.hub; rewritten at each start.\n"
        "from autograder.hub.config import HubSetup, configure\n\n"
        f"configure(c, HubSetup.from_json({setup.to_json()!r}))  # noqa: F821\n",
        encoding="utf-8")
    return path


def students_run_as_hub_user(setup: HubSetup) -> bool:
    """Every student's server runs as the hub's own Unix user (not as their own account)."""
    return setup.authenticator != "pam"


def _prepare_student(setup: HubSetup, spawner: Any) -> None:
    """JupyterHub's ``pre_spawn_hook``: the student's folder, and their server pointed at it.

    With ``pam`` login the folder is handed to the student's account, readable by it alone;
    nothing inside it is touched here (the hub runs as root, and a student could put a link
    there). Only the hub writes ``<home>`` and ``users/``, so the folder itself cannot be one.
    """
    name = spawner.user.name
    lab = setup.student_lab(name)
    folder = lab.home.parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    if not folder.exists():
        folder.mkdir(mode=0o700)
    if not students_run_as_hub_user(setup):
        for shared in (setup.home, folder.parent):
            shared.chmod(0o711)  # each student reaches their own folder, lists no other
        account = pwd.getpwnam(name)
        os.chown(folder, account.pw_uid, account.pw_gid, follow_symlinks=False)
        folder.chmod(0o700)
    spawner.environment.update(lab.environment())
    spawner.environment[SETUP_VARIABLE] = setup.to_json()
    spawner.notebook_dir = str(lab.root_dir)


def configure(c: Any, setup: HubSetup) -> None:
    """Fill JupyterHub's config object ``c`` for ``setup``: the hub and the proxy on
    ``setup``'s ports, its authenticator, and the spawner that writes each student's lab."""
    home = setup.home.resolve()
    c.JupyterHub.ip = setup.ip
    c.JupyterHub.port = setup.port
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = setup.hub_port
    c.JupyterHub.db_url = f"sqlite:///{home / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(home / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(home / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = True
    c.JupyterHub.proxy_class = "configurable-http-proxy"
    c.ConfigurableHTTPProxy.command = [str(_BIN / "configurable-http-proxy"),
                                       "--proxy-timeout", str(PROXY_TIMEOUT_S * 1000)]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{setup.api_port}"
    c.ConfigurableHTTPProxy.pid_file = str(home / "proxy.pid")

    c.JupyterHub.authenticator_class = setup.authenticator
    c.Authenticator.username_pattern = USERNAME_PATTERN
    if setup.authenticator == "shared-password":
        c.SharedPasswordAuthenticator.user_password = os.environ[PASSWORD_VARIABLE]
        c.Authenticator.allow_all = True
    elif setup.authenticator == "pam":
        c.Authenticator.allow_existing_users = True
        c.Authenticator.allow_all = True

    if students_run_as_hub_user(setup):
        c.JupyterHub.spawner_class = "simple"
        c.SimpleLocalProcessSpawner.home_dir_template = str(home / "users" / "{username}")
        c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
    else:
        c.JupyterHub.spawner_class = "localprocess"
    c.Spawner.cmd = [sys.executable, "-m", "autograder.hub.singleuser"]
    c.Spawner.default_url = "/lab"
    c.Spawner.http_timeout = 120
    c.Spawner.start_timeout = 120
    c.Spawner.pre_spawn_hook = lambda spawner: _prepare_student(setup, spawner)
