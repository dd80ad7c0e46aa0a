"""The project's own files agree with each other: one source of dependencies, lint, CI."""

import re
import subprocess
import sys
import tomllib

import yaml


def test_environment_yml_installs_this_project_and_nothing_else(repo):
    env = yaml.safe_load((repo / "environment.yml").read_text())
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    deps = env["dependencies"]
    pythons = [d for d in deps if isinstance(d, str) and d.startswith("python")]
    assert pythons == ["python=3.11"]
    assert "pip" in deps
    pip_lists = [d["pip"] for d in deps if isinstance(d, dict)]
    extras = sorted(project["optional-dependencies"])
    assert pip_lists == [[f"-e .[{','.join(extras)}]"]], \
        "conda users must get the pins, every extra included, from pyproject.toml"
    makefile = (repo / "Makefile").read_text()
    assert f"-e '.[{','.join(extras)}]'" in makefile, "make installs every extra too"
    assert sorted(d for d in deps if isinstance(d, str)) == ["pip", "python=3.11"], (
        "a conda package listed here would drift from pyproject.toml"
    )
    low, high = re.match(r">=(\d+\.\d+),<(\d+\.\d+)", project["requires-python"]).groups()
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    assert as_tuple(low) <= (3, 11) < as_tuple(high)


def test_pyproject_pins_the_course_stack(repo):
    deps = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = dict(d.split("==") for d in deps if "==" in d)
    assert pins["tensorflow-cpu"].startswith("2.21.")
    assert pins["keras"].startswith("3.")
    assert pins["jupyterlab"].startswith("4.6.")
    assert pins["nbgrader"] == "0.9.6"


def test_ci_runs_make_test_and_nothing_else(repo):
    commands = [line for line in (repo / ".ci/run").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert commands[-1] == "make test"
    assert all(c.startswith(("set ", "cd ")) for c in commands[:-1])


def test_code_is_ruff_clean(repo):
    result = subprocess.run([sys.executable, "-m", "ruff", "check", str(repo)],
                            capture_output=True, text=True, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr


def test_committed_notebooks_match_solutions(repo):
    result = subprocess.run([sys.executable, "-m", "autograder.cli", "build", "--check"],
                            capture_output=True, text=True, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
