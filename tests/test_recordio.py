"""mx.recordio against .rec/.idx files written by MXNet 1.9.1 (tests/fixtures/gen_mnist_recordio.py)
and on corrupt files."""
import json
import pickle
import struct
import sys

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import recordio
from mxtorch.base import MXNetError

from conftest import FIXTURES

REC, IDX = FIXTURES / 'recordio.rec', FIXTURES / 'recordio.idx'
MAGIC = struct.pack('<I', 0xced7230a)


@pytest.fixture(scope='module')
def ref():
    return json.loads((FIXTURES / 'recordio.json').read_text())


def _record(entry):
    """The bytes MXNet wrote for a fixture record, rebuilt with mxtorch's pack."""
    if 'header' not in entry:
        return bytes.fromhex(entry['raw_hex'])
    return recordio.pack(recordio.IRHeader(*entry['header']), bytes.fromhex(entry['payload_hex']))


def _read_all(reader):
    out = []
    while True:
        buf = reader.read()
        if buf is None:
            return out
        out.append(buf)


def test_exposed_as_mx_recordio():
    assert mx.recordio is recordio
    assert recordio.IRHeader._fields == ('flag', 'label', 'id', 'id2')


def test_reads_mxnet_files(ref):
    reader = recordio.MXIndexedRecordIO(str(IDX), str(REC), 'r')
    assert reader.keys == ref['keys'] and reader.idx == dict(zip(ref['keys'], ref['tells']))
    for entry in reversed(ref['records']):
        buf = reader.read_idx(entry['key'])
        assert buf.hex() == entry['raw_hex']
        if 'header' in entry:
            header, payload = recordio.unpack(buf)
            flag, label, id1, id2 = entry['header']
            assert (header.flag, header.id, header.id2) == (flag, id1, id2)
            if flag:
                assert header.label.dtype == np.float32 and header.label.tolist() == label
            else:
                assert isinstance(header.label, float) and header.label == label
            assert payload.hex() == entry['payload_hex']
    reader.seek(ref['keys'][2])
    assert reader.tell() == ref['tells'][2]
    reader.close()
    reader.close()

    plain = recordio.MXRecordIO(str(REC), 'r')
    assert [b.hex() for b in _read_all(plain)] == ref['sequential_hex']
    assert plain.read() is None and plain.tell() == REC.stat().st_size
    plain.reset()
    assert plain.read().hex() == ref['sequential_hex'][0]


def test_writes_byte_identical_files(ref, tmp_path):
    rec, idx = tmp_path / 'o.rec', tmp_path / 'o.idx'
    writer = recordio.MXIndexedRecordIO(str(idx), str(rec), 'w')
    tells = []
    for entry in ref['records']:
        tells.append(writer.tell())
        assert _record(entry).hex() == entry['raw_hex']
        writer.write_idx(entry['key'], _record(entry))
    tells.append(writer.tell())
    writer.close()
    assert tells == ref['tells']
    assert rec.read_bytes() == REC.read_bytes() and idx.read_bytes() == IDX.read_bytes()

    plain = recordio.MXRecordIO(str(tmp_path / 'p.rec'), 'w')
    for entry in ref['records']:
        plain.write(_record(entry))
    plain.close()
    assert (tmp_path / 'p.rec').read_bytes() == REC.read_bytes()


def test_round_trip_with_magic_numbers_anywhere(tmp_path):
    rng = np.random.RandomState(0)
    records = [b'', MAGIC, MAGIC * 3, b'a' + MAGIC, b'ab' + MAGIC + b'c', b'abcd' + MAGIC]
    for _ in range(40):
        parts = [rng.bytes(rng.randint(0, 9)) for _ in range(rng.randint(1, 5))]
        records.append(MAGIC.join(parts))
    writer = recordio.MXRecordIO(str(tmp_path / 'r.rec'), 'w')
    for record in records:
        writer.write(bytearray(record))
    writer.close()
    raw = (tmp_path / 'r.rec').read_bytes()
    assert len(raw) % 4 == 0
    assert _read_all(recordio.MXRecordIO(str(tmp_path / 'r.rec'), 'r')) == records
    # a record whose magic numbers all sit at unaligned offsets is stored in one chunk
    assert raw.count(MAGIC) > len(records)


def _corrupt(tmp_path, data):
    path = tmp_path / 'bad.rec'
    path.write_bytes(data)
    return recordio.MXRecordIO(str(path), 'r')


def test_corrupt_and_truncated_files(ref, tmp_path):
    good = REC.read_bytes()
    split_at = ref['tells'][2]           # key 5: stored as chunks of flag 1, 2 and 3
    cases = [
        (b'\0' + good[1:], r'bad.rec.* corrupt: magic number 0xced72300 at byte 0'),
        (good[:5], r'truncated: 5 bytes of a chunk header at byte 0'),
        (good[:20], r'truncated: the chunk at byte 0 announces 29 bytes but only 12 follow'),
        (good[split_at:split_at + 32], r'record at byte 0 is cut off by the end of the file'),
        (good[split_at + 32:], r'record at byte 0 has a chunk of flag 2'),
        (good[split_at + 40:], r'record at byte 0 has a chunk of flag 3'),
        (MAGIC + struct.pack('<I', 5 << 29), r'record at byte 0 has a chunk of flag 5'),
    ]
    for data, match in cases:
        with pytest.raises(MXNetError, match=match):
            _read_all(_corrupt(tmp_path, data))
    with pytest.raises(MXNetError, match=r'magic number 0x00000000 at byte 40'):
        _read_all(_corrupt(tmp_path, good[:40] + bytes(4) + good[44:]))

    (tmp_path / 'bad.idx').write_text('0\t0\nfive\t40\n')
    with pytest.raises(MXNetError, match=r"line 2 of index file .*bad.idx.* 'five\\t40\\n'"):
        recordio.MXIndexedRecordIO(str(tmp_path / 'bad.idx'), str(REC), 'r')


def test_pack_and_unpack():
    header = recordio.IRHeader(7, 2.5, 3, 4)
    packed = recordio.pack(header, b'xyz')
    assert len(packed) == 27 and recordio.unpack(packed) == ((0, 2.5, 3, 4), b'xyz')
    head, rest = recordio.unpack(recordio.pack((0, np.array([1, 2]), 5, 6), b''))
    assert head.flag == 2 and head.label.tolist() == [1.0, 2.0] and rest == b''
    assert recordio.unpack(recordio.pack((0, np.float32(1.5), 0, 0), b''))[0].label == 1.5
    with pytest.raises(MXNetError, match='too short for the 24-byte IRHeader'):
        recordio.unpack(b'\0' * 23)
    with pytest.raises(MXNetError, match='announces 3 labels but only 8 bytes follow'):
        recordio.unpack(struct.pack('<IfQQ', 3, 0, 0, 0) + b'\0' * 8)


def test_modes_keys_and_pickling(tmp_path):
    rec, idx = str(tmp_path / 's.rec'), str(tmp_path / 's.idx')
    with pytest.raises(ValueError, match='Invalid flag'):
        recordio.MXRecordIO(rec, 'a')
    writer = recordio.MXIndexedRecordIO(idx, rec, 'w', key_type=str)
    writer.write_idx('a', b'first')
    writer.write_idx(7, b'second')
    with pytest.raises(TypeError, match='records are bytes'):
        writer.write('text')
    with pytest.raises(AssertionError):
        writer.read()
    assert writer.keys == ['a', '7']
    writer.close()
    reader = recordio.MXIndexedRecordIO(idx, rec, 'r', key_type=str)
    with pytest.raises(AssertionError):
        reader.write(b'x')
    assert reader.keys == ['a', '7'] and reader.read_idx('7') == b'second'
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read() == b'first' and clone.read_idx('7') == b'second'
    assert reader.read() is None

    writer = recordio.MXRecordIO(rec, 'w')
    writer.write(b'new')
    writer.reset()                                   # a writer starts its file anew
    writer.write(b'only')
    writer.close()
    assert _read_all(recordio.MXRecordIO(rec, 'r')) == [b'only']


def test_image_helpers_need_an_image_library(monkeypatch):
    monkeypatch.setitem(sys.modules, 'cv2', None)
    monkeypatch.setitem(sys.modules, 'PIL', None)
    with pytest.raises(ImportError, match='OpenCV or Pillow: pip install opencv-python'):
        recordio.pack_img((0, 1, 2, 3), np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ImportError, match='OpenCV or Pillow'):
        recordio.unpack_img(recordio.pack((0, 1, 2, 3), b''))


def test_png_round_trip_if_an_image_library_is_installed():
    try:
        recordio._image_library()
    except ImportError:
        pytest.skip('neither OpenCV nor Pillow is installed')
    img = np.random.RandomState(0).randint(0, 256, size=(5, 4, 3)).astype(np.uint8)
    header, out = recordio.unpack_img(recordio.pack_img((0, 3.0, 1, 2), img, img_fmt='.png'))
    assert header == (0, 3.0, 1, 2)
    np.testing.assert_array_equal(out, img)
    _, gray = recordio.unpack_img(recordio.pack_img((0, 3.0, 1, 2), img, img_fmt='.png'), 0)
    assert gray.shape == (5, 4)
