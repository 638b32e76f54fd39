import os
import stat

import pytest

from nfst import CorruptCacheError
from nfst.runtime import storage


def test_roundtrip_and_corruption_detected(tmp_path):
    path = tmp_path / "sub" / "obj.bin"
    storage.save(path, {"a": [1, 2, 3]})
    assert storage.load(path) == {"a": [1, 2, 3]}
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCacheError, match="integrity"):
        storage.load(path)
    path.write_bytes(data[:10])
    with pytest.raises(CorruptCacheError):
        storage.load(path)


def test_failed_write_leaves_no_file(tmp_path):
    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    path = tmp_path / "obj.bin"
    with pytest.raises(RuntimeError):
        storage.save(path, Unpicklable())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)], ids=["022", "077"])
def test_files_get_the_umasks_permissions(tmp_path, umask, mode):
    """As a file written with open(): results.json and the models are readable by others
    under umask 022 (they were 0600 whatever the umask)."""
    old = os.umask(umask)
    try:
        storage.save(tmp_path / "model.pt", {"a": 1})
        storage.write_atomically(tmp_path / "results.json", b"{}")
    finally:
        os.umask(old)
    for name in ("model.pt", "results.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt", "results.json"]
