"""The grading runner's report channel: signed lines that student code cannot forge.

The runner (inside the sandbox) writes one line per event to a pipe: an HMAC-SHA256 of the
payload under a key the host gave it on standard input, then the payload (``marshal`` of plain
values, base64). Student code in the same process can write to the pipe too, but without the key
its lines fail verification and are counted as noise; it cannot alter what the runner signs,
because the signer holds its own references to C functions (``_hashlib.hmac_digest``,
``marshal.dumps``, ``os.write``) taken before any student code ran.
"""

from __future__ import annotations

import _hashlib
import binascii
import hmac
import marshal
import os
import secrets
from collections.abc import Callable

DIGEST = "sha256"
MAX_LINE = 16 * 2**20
"""Longest line the host reads (a cell's capped output plus its figures fits well within)."""


def new_key() -> bytes:
    """A fresh random key for one run of the runner."""
    return secrets.token_bytes(32)


def make_sender(fd: int, key: bytes) -> Callable[[dict], None]:
    """A function that writes one signed event to ``fd`` (for the runner, before student code).

    Args:
        fd: The pipe's write end.
        key: The run's key.
    """
    sequence = [0]

    def send(payload: dict, _dumps=marshal.dumps, _mac=_hashlib.hmac_digest,
             _b64=binascii.b2a_base64, _hex=binascii.hexlify, _write=os.write) -> None:
        payload["seq"] = sequence[0]
        sequence[0] += 1
        body = _b64(_dumps(payload), newline=False)
        line = _hex(_mac(key, body, DIGEST)) + b" " + body + b"\n"
        view = memoryview(line)
        while view:
            written = _write(fd, view)
            view = view[written:]

    return send


def verify(line: bytes, key: bytes) -> dict | None:
    """The payload of a line the runner signed with ``key``; None for anything else."""
    mac, _, body = line.rstrip(b"\n").partition(b" ")
    if not body or not hmac.compare_digest(
            mac, binascii.hexlify(hmac.digest(key, body, DIGEST))):
        return None
    try:
        payload = marshal.loads(binascii.a2b_base64(body))
    except (ValueError, EOFError, TypeError, binascii.Error):
        return None
    return payload if isinstance(payload, dict) else None
