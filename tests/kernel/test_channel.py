"""The runner's report channel: signed lines pass, everything else is dropped."""

import os

from autograder.kernel import channel


def written_line(key: bytes, payload: dict) -> bytes:
    read, write = os.pipe()
    channel.make_sender(write, key)(payload)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        return handle.read()


def test_a_signed_line_reads_back_with_its_sequence_number():
    key = channel.new_key()
    line = written_line(key, {"t": "end", "cell": 3, "error": None})
    assert channel.verify(line, key) == {"t": "end", "cell": 3, "error": None, "seq": 0}


def test_a_line_signed_with_another_key_or_changed_is_dropped():
    key = channel.new_key()
    line = written_line(key, {"t": "end", "passed": False})
    assert channel.verify(line, channel.new_key()) is None
    mac, _ = line.rstrip(b"\n").split(b" ")
    forged = written_line(channel.new_key(), {"t": "end", "passed": True}).split(b" ")[1]
    assert channel.verify(mac + b" " + forged, key) is None


def test_garbage_is_dropped_without_raising():
    key = channel.new_key()
    for line in (b"", b"\n", b"00 11\n", b"x" * 100 + b"\n", b"ab " + b"\xff" * 10):
        assert channel.verify(line, key) is None
