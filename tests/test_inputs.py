"""infra/inputs.py: the files a user names on the command line are read whole, within a size limit, from a
regular file or a pipe, and never from a device or a folder."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gpupolicy.errors import ToolError
from gpupolicy.infra.inputs import read_given


def test_a_regular_file_and_a_pipe_with_a_writer_are_read(tmp_path: Path) -> None:
    plain = tmp_path / "job.yaml"
    plain.write_bytes(b"kind: Job\n")
    assert read_given(plain, 100) == b"kind: Job\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # what `explain <(kubectl get job x -o yaml)` hands over

    def write() -> None:
        with open(fifo, "wb") as handle:
            handle.write(b"kind: Pod\n")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert read_given(fifo, 100) == b"kind: Pod\n"
    finally:
        writer.join(10)


@pytest.mark.parametrize(
    "given, why",
    [
        ("/dev/zero", "is a device or socket, not a file to read"),
        ("folder", "is a folder, not a file"),
        ("missing.yaml", "cannot read: No such file or directory"),
        ("big.yaml", "larger than 100 bytes"),
    ],
)
def test_what_is_no_file_to_read_is_refused_with_the_path(tmp_path: Path, given: str, why: str) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "big.yaml").write_bytes(b"x" * 101)
    path = given if given.startswith("/") else tmp_path / given
    with pytest.raises(ToolError) as refused:
        read_given(path, 100, "a shard report")
    assert str(refused.value) == f"{path} (a shard report): {why}"
