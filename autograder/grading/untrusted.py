"""Reading a file a student controls, on the host: a regular file only, no link, capped, never
blocking.

The grader often runs as root, and a submission folder is whatever the student (or whoever
assembled ``SUBMITTED``) put there: a link to ``/etc/shadow`` or to another student's notebook,
a FIFO that blocks a reader forever, a folder named like a notebook, a file of many gigabytes.
Every host-side read of such a file goes through :func:`read_untrusted`, which refuses all of
them with a :class:`UntrustedFileError` saying what the file is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: The largest submitted notebook read (a lesson notebook with outputs is well under 5 MB).
MAX_NOTEBOOK_BYTES = 64 * 2**20


class UntrustedFileError(ValueError):
    """A student-controlled file that is not a regular file of acceptable size."""


def read_untrusted(path: Path | str, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of ``path`` when it is a regular file (not a link) of at most ``limit`` bytes.

    Args:
        path: The file; its last component must not be a symbolic link.
        limit: The most bytes accepted.

    Raises:
        UntrustedFileError: Naming what the file is instead (a link, a FIFO, a folder, too
            large, missing).
    """
    name = Path(path).name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if Path(path).is_symlink():
            raise UntrustedFileError(f"{name} is a symbolic link, not a notebook file") from None
        raise UntrustedFileError(f"{name} could not be opened ({error.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(f"{name} is not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise UntrustedFileError(f"{name} is larger than {limit // 2**20} MB")
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise UntrustedFileError(f"{name} is larger than {limit // 2**20} MB")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device")):
        if test(mode):
            return kind
    return "not a file"
