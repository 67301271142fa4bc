"""A ``.pt`` is compiled once per machine (``vm.api.program_cache``): a later ``vm.load`` of
the same file reads the compiled program and never runs the compiler, gives the same
numbers, and a cache that is damaged, off, full or of another irvm never changes an answer."""

from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest

import vm
from tests.support.paths import EXAMPLES
from vm.api import program_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("IRVM_CACHE_DIR", str(folder))
    return folder / "programs"


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "cnn.pt"
    shutil.copy(EXAMPLES / "cnn.pt", path)
    return path


def _inputs():
    with np.load(EXAMPLES / "cnn.inputs.npz") as f:
        return [f["x.1"]]


def _forbid_compiling(monkeypatch):
    import compiler.torchscript as ts

    def refuse(*args, **kwargs):
        raise AssertionError("the compiler ran on a cached archive")

    monkeypatch.setattr(ts, "compile_archive", refuse)
    monkeypatch.setattr(ts, "load_torchscript", refuse)


@pytest.mark.parametrize("backend", ["static", "interp"])
def test_a_second_load_reads_the_compiled_program(cache, model_file, monkeypatch, backend) -> None:
    """The first load compiles and writes one entry; the second compiles nothing (the
    compiler's entry points raise) and gives the first one's numbers, on both backends."""
    first = vm.load(model_file, backend=backend)
    want = first(*_inputs())
    assert len(list(cache.glob("*.irbc"))) == 1 and len(list(cache.glob("*.json"))) == 1
    _forbid_compiling(monkeypatch)
    second = vm.load(model_file, backend=backend)
    np.testing.assert_array_equal(second(*_inputs()), want)
    assert second.methods == first.methods


def test_another_file_of_the_same_name_is_compiled_again(cache, model_file, tmp_path) -> None:
    """The key is the file's bytes: an archive rewritten in place (other weights, same name,
    any date) is compiled anew, and runs with its own weights."""
    before = vm.load(model_file)(*_inputs())
    changed = tmp_path / "changed.pt"
    with zipfile.ZipFile(model_file) as src, zipfile.ZipFile(changed, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if "/data/" in info.filename and len(data) >= 4 and len(data) % 4 == 0:
                data = (np.frombuffer(data, np.float32) * 2).astype(np.float32).tobytes()
            dst.writestr(info, data)
    shutil.move(changed, model_file)
    after = vm.load(model_file)(*_inputs())
    assert len(list(cache.glob("*.irbc"))) == 2
    assert not np.allclose(after, before)


def test_a_damaged_entry_is_compiled_again(cache, model_file) -> None:
    """An entry cut short (a full disk, a crash of another process) is no error: the file
    is compiled as if there were no cache, and the entry written again."""
    want = vm.load(model_file)(*_inputs())
    (entry,) = cache.glob("*.irbc")
    entry.write_bytes(entry.read_bytes()[:100])
    np.testing.assert_array_equal(vm.load(model_file)(*_inputs()), want)
    assert zipfile.is_zipfile(entry)


def test_another_irvm_never_reads_the_entry(cache, model_file, monkeypatch) -> None:
    """irvm's own code is in the key: an edited or upgraded irvm compiles the file again."""
    vm.load(model_file)
    monkeypatch.setattr(program_cache, "_CODE", "another irvm")
    vm.load(model_file)
    assert len(list(cache.glob("*.irbc"))) == 2


def test_the_cache_can_be_turned_off(tmp_path, model_file, monkeypatch) -> None:
    monkeypatch.setenv("IRVM_CACHE_DIR", "off")
    assert program_cache.cache_dir() is None
    vm.load(model_file)
    assert not any(tmp_path.rglob("*.irbc"))


def test_given_weights_are_part_of_the_key(cache, model_file) -> None:
    """Weights given over the archive's own are folded into the program as it is compiled:
    other weights, another entry (and their own numbers)."""
    own = vm.load(model_file)
    doubled = {k: v * 2 if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v for k, v in own.weights.items()}
    vm.load(model_file, weights=doubled)
    again = vm.load(model_file, weights=doubled)
    assert len(list(cache.glob("*.irbc"))) == 2
    assert not np.allclose(again(*_inputs()), own(*_inputs()))


def test_the_folder_is_kept_under_its_limit(cache, model_file, tmp_path) -> None:
    """Over ``IRVM_CACHE_MAX_MB`` the entries used least recently go first; the one just
    written stays."""
    vm.load(model_file)
    (old,) = cache.glob("*.json")
    for i in range(3):
        (cache / f"{i:064x}.json").write_text('{"format": 1}')
        (cache / f"{i:064x}.irbc").write_bytes(b"x" * 400_000)
    program_cache.evict(cache, keep=old.stem, limit_mb=0.5)
    assert old.exists() and old.with_suffix(".irbc").exists()
    assert len(list(cache.glob("*.json"))) <= 2


def test_a_folder_others_can_write_is_not_used(tmp_path, model_file, monkeypatch) -> None:
    """An entry is a program this process runs: a cache folder writable by others (where
    someone could plant an entry for a file they know) is passed over, and the file compiled."""
    folder = tmp_path / "shared"
    (folder / "programs").mkdir(parents=True)
    (folder / "programs").chmod(0o777)
    monkeypatch.setenv("IRVM_CACHE_DIR", str(folder))
    vm.load(model_file)
    assert not list((folder / "programs").glob("*.irbc"))


def test_quantized_or_other_objects_given_as_weights_are_not_cached(cache, model_file) -> None:
    """Weights that cannot be keyed by their bytes (objects) compile without the cache."""
    assert program_cache.entry_key(model_file, "forward", None, {}, {"w": object()}) is None
    assert program_cache.entry_key(model_file, "forward", None, {}, {"w": np.ones(2)}) is not None
