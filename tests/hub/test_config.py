"""The hub's config: each student's lab is ``make lab`` in class mode, named by the hub user."""

import json
import os
import pwd
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("jupyterhub")

from jupyterhub.auth import DummyAuthenticator  # noqa: E402
from traitlets.config import Config  # noqa: E402

from autograder.hub.config import (  # noqa: E402
    PROXY_TIMEOUT_S,
    USERNAME_PATTERN,
    HubSetup,
    configure,
)
from autograder.hub.singleuser import write_student_lab  # noqa: E402
from autograder.lab.config import LabSetup, server_config  # noqa: E402
from autograder.lab.server import RaceLabValidate  # noqa: E402
from tests.conftest import REPO  # noqa: E402


def spawn(setup: HubSetup, name: str) -> SimpleNamespace:
    """Run the configured pre-spawn hook for hub user ``name``; returns the fake spawner."""
    c = Config()
    configure(c, setup)
    spawner = SimpleNamespace(user=SimpleNamespace(name=name), environment={},
                              notebook_dir=None)
    c.Spawner.pre_spawn_hook(spawner)
    return spawner


def start_server(spawner: SimpleNamespace) -> None:
    """What the student's server does first: write its lab from the spawner's environment."""
    write_student_lab({**spawner.environment, "JUPYTERHUB_USER": spawner.user.name})


def test_each_students_server_gets_the_class_mode_lab_with_the_hub_user_as_student_id(tmp_path):
    setup = HubSetup(tmp_path / "hub", tmp_path / "exchange")
    spawner = spawn(setup, "alice")
    start_server(spawner)
    folder = tmp_path / "hub" / "users" / "alice"
    config = folder / "lab" / "config"
    assert spawner.environment["JUPYTER_CONFIG_DIR"] == str(config)
    assert spawner.notebook_dir == str(folder / "work")
    nbgrader = json.loads((config / "nbgrader_config.json").read_text())
    assert nbgrader["CourseDirectory"] == {"course_id": "racelab", "student_id": "alice"}
    assert nbgrader["Exchange"]["root"] == str((tmp_path / "exchange").resolve())
    assert nbgrader["Exchange"]["assignment_dir"] == str((folder / "work").resolve())
    make_lab = LabSetup("student", folder / "lab", folder / "work",
                        exchange=tmp_path / "exchange", student="alice")
    assert json.loads((config / "jupyter_server_config.json").read_text()) == \
        server_config(make_lab)
    assert spawn(setup, "bob").environment["JUPYTER_CONFIG_DIR"] != str(config)


def test_the_proxy_waits_for_a_validate_as_long_as_the_validate_may_take(tmp_path):
    """The proxy's own default gave up on a request after 20 s: a slower Validate got a 503
    page instead of its verdict."""
    c = Config()
    configure(c, HubSetup(tmp_path / "hub", tmp_path / "exchange"))
    command = c.ConfigurableHTTPProxy.command
    waits_s = int(command[command.index("--proxy-timeout") + 1]) / 1000
    assert waits_s == PROXY_TIMEOUT_S > RaceLabValidate.timeout.default_value


@pytest.mark.parametrize("name", ["a+b", "../alice", "alice/x", "", "x" * 40, "-alice"])
def test_hub_users_whose_names_are_not_safe_student_ids_cannot_log_in(name):
    authenticator = DummyAuthenticator(username_pattern=USERNAME_PATTERN)
    assert not authenticator.validate_username(name)
    assert authenticator.validate_username("alice_2")


def test_a_shared_password_hub_refuses_to_start_without_the_class_password(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "autograder.hub", "--home", str(tmp_path / "hub"),
         "--authenticator", "shared-password"], cwd=REPO, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 2 and "RACELAB_HUB_PASSWORD" in done.stderr, done.stderr
    assert not (tmp_path / "hub").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a folder to another account needs root")
def test_with_pam_login_each_student_owns_a_folder_no_other_account_can_read(tmp_path):
    setup = HubSetup(tmp_path / "hub", tmp_path / "exchange", authenticator="pam")
    spawn(setup, "nobody")  # an account every Debian system has
    folder = tmp_path / "hub" / "users" / "nobody"
    nobody = pwd.getpwnam("nobody")
    assert (folder.stat().st_uid, folder.stat().st_gid) == (nobody.pw_uid, nobody.pw_gid)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert not any(folder.iterdir()), "the hub (root) wrote inside the student's folder"
    assert (tmp_path / "hub" / "users").stat().st_mode & 0o777 == 0o711


def test_a_hub_run_as_root_will_not_run_students_as_root_unless_told(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "autograder.hub", "--home", str(tmp_path / "hub")],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    if os.geteuid() == 0:
        assert done.returncode == 2 and "--students-as-root" in done.stderr, done.stderr
        assert not (tmp_path / "hub").exists()
    else:
        pytest.skip("not root: the hub would start")
