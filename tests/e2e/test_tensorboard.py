"""``make tensorboard``: TensorBoard with the profile plugin reads a TF 2.21 trace."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.lab import free_port

TRACE = textwrap.dedent("""
    import sys
    import tensorflow as tf

    logdir = sys.argv[1]
    writer = tf.summary.create_file_writer(logdir)

    @tf.function
    def square(x):
        return tf.matmul(x, x)

    tf.summary.trace_on(graph=True, profiler=True, profiler_outdir=logdir)
    square(tf.ones((32, 32)))
    with writer.as_default():
        tf.summary.trace_export(name="square", step=0)
""")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = answer.read()
    return (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).decode()


@pytest.mark.slow
def test_tensorboard_shows_the_profile_of_a_trace(tmp_path):
    logdir = tmp_path / "logs" / "06_tracing"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    made = subprocess.run([sys.executable, "-c", TRACE, str(logdir)], env=env, timeout=300,
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-2000:]
    assert list(logdir.glob("plugins/profile/*/*.xplane.pb")), "no profile was written"
    port = free_port()
    tensorboard = Path(sys.executable).parent / "tensorboard"
    log = tmp_path / "tensorboard.log"
    with log.open("wb") as handle:  # the arguments of `make tensorboard`
        server = subprocess.Popen([str(tensorboard), "--logdir", str(tmp_path / "logs"),
                                   "--host", "127.0.0.1", "--port", str(port)],
                                  stdout=handle, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    try:
        deadline, runs, plugins = time.monotonic() + 120, [], {}
        while time.monotonic() < deadline and not runs:
            assert server.poll() is None, f"tensorboard exited:\n{log.read_text()[-3000:]}"
            try:
                plugins = json.loads(_get(f"http://127.0.0.1:{port}/data/plugins_listing"))
                runs = json.loads(_get(f"http://127.0.0.1:{port}/data/plugin/profile/runs"))
            except OSError:
                time.sleep(1)
        assert runs, f"no profile run listed within 120 s:\n{log.read_text()[-3000:]}"
        assert plugins["profile"]["enabled"] and plugins["graphs"]["enabled"]
        assert all(run.startswith("06_tracing/") for run in runs), runs
    finally:
        server.terminate()
        server.wait(timeout=20)
