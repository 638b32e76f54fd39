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
