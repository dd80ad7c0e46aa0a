"""Grading kernels refuse to replace the race detector's tools, and keep working."""

import subprocess
import sys
import textwrap


def run_guarded(code: str) -> subprocess.CompletedProcess:
    prelude = "from autograder.kernel.kernel_guard import install, TamperingError\ninstall()\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60)


def test_replacing_a_lock_raises_tampering_error():
    result = run_guarded("""
        import threading
        try:
            threading.Lock = object
        except TamperingError as exc:
            print("refused:", exc)
        assert threading.Lock is not object
    """)
    assert result.returncode == 0, result.stderr
    assert "refused: replacing threading.Lock is not allowed" in result.stdout


def test_every_protected_name_is_refused_and_threads_still_work():
    result = run_guarded("""
        import importlib, threading
        from autograder.kernel.kernel_guard import PROTECTED
        for module_name, names in PROTECTED.items():
            module = importlib.import_module(module_name)
            for name in names:
                for attempt in (lambda: setattr(module, name, None),
                                lambda: delattr(module, name)):
                    try:
                        attempt()
                    except TamperingError:
                        continue
                    raise SystemExit(f"{module_name}.{name} was not protected")
        threading.anything_else = 1
        done = threading.Event()
        threading.Thread(target=done.set).start()
        assert done.wait(5)
        print("ok")
    """)
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stdout.strip() == "ok"
