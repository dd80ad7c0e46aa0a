"""A hub student who plants links in their own folder: the hub, run as root, follows none.

With ``pam`` login the hub runs as root and each student's server as their own account, which
owns ``<home>/users/<name>/``. Before each start the hub makes that folder; a student who put a
link there to a folder of root's (``lab -> /etc``-like) must not get the hub to write or hand
over anything through it on their next login.
"""

import os
import pwd
from types import SimpleNamespace

import pytest

pytest.importorskip("jupyterhub")

from traitlets.config import Config  # noqa: E402

from autograder.hub.config import HubSetup, configure  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hub runs as root with pam login")


def spawn(setup: HubSetup, name: str) -> None:
    c = Config()
    configure(c, setup)
    c.Spawner.pre_spawn_hook(SimpleNamespace(user=SimpleNamespace(name=name), environment={},
                                             notebook_dir=None))


def test_links_a_student_plants_in_their_folder_lead_the_root_hub_nowhere(tmp_path):
    setup = HubSetup(tmp_path / "hub", tmp_path / "exchange", authenticator="pam")
    spawn(setup, "nobody")
    folder = tmp_path / "hub" / "users" / "nobody"
    roots = tmp_path / "roots-folder"  # stands for /etc: root's, with a file in it
    roots.mkdir(mode=0o755)
    (roots / "shadow").write_text("root's\n")
    for planted in ("lab", "work"):
        (folder / planted).symlink_to(roots, target_is_directory=True)
    spawn(setup, "nobody")  # the student logs in again
    assert sorted(p.name for p in roots.iterdir()) == ["shadow"]
    for path in (roots, roots / "shadow"):
        assert (path.stat().st_uid, path.stat().st_gid) == (0, 0), path
    assert (roots / "shadow").read_text() == "root's\n"
    assert folder.stat().st_uid == pwd.getpwnam("nobody").pw_uid
