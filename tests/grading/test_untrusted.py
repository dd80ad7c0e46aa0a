"""Host-side reads of student-controlled files: regular files only, no link, capped, no block."""

from __future__ import annotations

import os

import pytest

from autograder.course.exchange import remove_special_files
from autograder.grading.untrusted import UntrustedFileError, read_untrusted


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "a.ipynb").write_bytes(b"{}")
    assert read_untrusted(tmp_path / "a.ipynb") == b"{}"


def test_a_link_is_refused_even_to_a_readable_file(tmp_path):
    (tmp_path / "real.ipynb").write_bytes(b"{}")
    (tmp_path / "a.ipynb").symlink_to(tmp_path / "real.ipynb")
    with pytest.raises(UntrustedFileError, match="symbolic link"):
        read_untrusted(tmp_path / "a.ipynb")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "a.ipynb")
    with pytest.raises(UntrustedFileError, match="a FIFO"):
        read_untrusted(tmp_path / "a.ipynb")


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "a.ipynb").mkdir()
    with pytest.raises(UntrustedFileError, match="a folder"):
        read_untrusted(tmp_path / "a.ipynb")


def test_a_file_over_the_limit_is_refused(tmp_path):
    (tmp_path / "a.ipynb").write_bytes(b"x" * 2049)
    with pytest.raises(UntrustedFileError, match="larger than"):
        read_untrusted(tmp_path / "a.ipynb", limit=2048)


def test_collect_removes_links_and_fifos_a_student_left_in_the_exchange(tmp_path):
    inbound = tmp_path / "inbound" / "mallory+00_anatomy+2026"
    inbound.mkdir(parents=True)
    (inbound / "00_anatomy.ipynb").symlink_to("/etc/shadow")
    (inbound / "linked_folder").symlink_to(tmp_path)
    os.mkfifo(inbound / "pipe")
    (inbound / "notes.txt").write_text("kept")
    removed = remove_special_files(tmp_path / "inbound")
    assert sorted(p.name for p in removed) == ["00_anatomy.ipynb", "linked_folder", "pipe"]
    assert sorted(p.name for p in inbound.iterdir()) == ["notes.txt"]
