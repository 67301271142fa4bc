"""Large weights in an ``.npz`` are memory-mapped, not read (``vm.files.arrays.mapped_npz``,
what ``vm.load(path, "w.npz")`` and ``--weights`` use): the same arrays as numpy reads,
plain ``ndarray``s, copy-on-write (a write never reaches the file), and a damaged header
is still refused before anything is mapped."""

from __future__ import annotations

import mmap
import zipfile

import numpy as np
import pytest

from vm.command import load_npz
from vm.core.errors import RunError
from vm.files.arrays import MAP_FROM


def _mapped(a: np.ndarray) -> bool:
    base = a
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None)
    return False


def test_large_stored_arrays_are_mapped_and_equal(tmp_path) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "big": rng.standard_normal((700, 700)).astype(np.float32),
        "fortran": np.asfortranarray(rng.standard_normal((400, 500))),
        "small": np.arange(7),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / "w.npz"
    np.savez(path, **arrays)
    got = load_npz(str(path))
    for key, want in arrays.items():
        np.testing.assert_array_equal(got[key], want)
        assert type(got[key]) is np.ndarray and got[key].dtype == want.dtype
    assert arrays["big"].nbytes >= MAP_FROM and _mapped(got["big"]) and _mapped(got["fortran"])
    assert not _mapped(got["small"])
    got["big"][0, 0] = 1234.0  # copy-on-write: the process's page, not the file's
    with np.load(path) as again:
        assert again["big"][0, 0] == arrays["big"][0, 0]


def test_compressed_arrays_are_read(tmp_path) -> None:
    path = tmp_path / "w.npz"
    big = np.ones((600, 600), np.float32)
    np.savez_compressed(path, big=big)
    got = load_npz(str(path))
    np.testing.assert_array_equal(got["big"], big)
    assert not _mapped(got["big"])


def test_a_header_claiming_more_than_the_file_is_refused(tmp_path) -> None:
    """A stored member whose header claims more elements than it holds is refused by the
    check that runs before any map (a map past the end would fault at the first read)."""
    path = tmp_path / "w.npz"
    np.savez(path, big=np.ones((600, 600), np.float32))
    data = bytearray(path.read_bytes())
    at = data.find(b"(600, 600)")
    data[at : at + 10] = b"(900, 900)"
    path.write_bytes(bytes(data))
    assert zipfile.is_zipfile(path)
    with pytest.raises(RunError, match="claims|damaged|readable"):
        load_npz(str(path))


def test_a_damaged_mapped_member_is_refused(tmp_path) -> None:
    """A byte of a large stored member changed (its header intact) fails the member's
    checksum: refused as reading it would be, never mapped as a wrong weight."""
    path = tmp_path / "w.npz"
    np.savez(path, big=np.ones((600, 600), np.float32))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RunError, match="checksum"):
        load_npz(str(path))
