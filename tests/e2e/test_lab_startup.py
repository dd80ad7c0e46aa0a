"""When JupyterLab or the browser cannot start, the browser test says which, with the log."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e import lab


def test_a_lab_that_exits_is_named_with_its_log(tmp_path):
    with pytest.raises(pytest.fail.Exception) as failure:
        lab.start_lab(["student", "--home", str(tmp_path / "home"), "--root", str(tmp_path),
                       "--ServerApp.port_retries=not-a-number"], tmp_path / "server.log",
                      tmp_path)
    message = str(failure.value)
    assert message.startswith("JupyterLab did not start: the server exited")
    assert "--- server log" in message and "port_retries" in message


def test_a_browser_that_cannot_start_is_named_with_the_server_log(tmp_path, monkeypatch):
    log = tmp_path / "server.log"
    log.write_text("[I ServerApp] Jupyter Server is running\n")
    server = lab.LabServer("http://127.0.0.1:9", "token", subprocess.Popen(["true"]), log)
    server.process.wait()
    monkeypatch.setattr(lab.shutil, "which", lambda name: "/bin/false")
    with pytest.raises(pytest.fail.Exception) as failure:
        with lab.chromium(server):
            pass
    message = str(failure.value)
    assert message.startswith("The browser did not start: /bin/false")
    assert "Jupyter Server is running" in message
