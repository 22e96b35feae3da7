"""A seeded mutation fuzzer for mxtorch's file loaders (run by tests/test_loader_safety.py in a
child process, under a memory ceiling).

For every loader it writes a small valid file, then loads mutated copies of it (bit flips,
interesting integers written over 1/4/8-byte fields, cuts, insertions, duplicated spans, and for
JSON and text files mutations of their values) for a fixed time or number of cases. Each case
must load or raise MXNetError; anything else (another exception, or a MemoryError / failed
allocation when the address space is capped) is a failure and is reported.

    python tests/loader_fuzz.py [--seconds S] [--cases N] [--memory-mb M] [loader ...]

prints one JSON object: {loader: {"cases": n, "failures": [[case, "Type: message"], ...]}}.
"""
import argparse
import gzip
import json
import os
import random
import struct
import sys
import tempfile
import time

os.environ.setdefault('OMP_NUM_THREADS', '1')

import numpy as np                                                    # noqa: E402

import mxtorch as mx                                                  # noqa: E402
from mxtorch.base import MXNetError                                   # noqa: E402

INTERESTING = [0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
               2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 60000, 3000]


# ---------------------------------------------------------------------------------------------
# mutators
# ---------------------------------------------------------------------------------------------
def mutate_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        kind = rng.randrange(7)
        pos = rng.randrange(len(data) + 1) if data else 0
        if kind == 0 and data:                                       # bit flip
            pos = min(pos, len(data) - 1)
            data[pos] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:                                     # interesting integer
            size = rng.choice((1, 2, 4, 8))
            value = rng.choice(INTERESTING) & ((1 << 8 * size) - 1)
            data[pos:pos + size] = value.to_bytes(size, 'little')
        elif kind == 2:                                              # cut the tail
            del data[pos:]
        elif kind == 3:                                              # insert random bytes
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif kind == 4 and data:                                     # delete a span
            del data[pos:pos + rng.randrange(1, 17)]
        elif kind == 5 and data:                                     # duplicate a span
            start = rng.randrange(len(data))
            data[pos:pos] = data[start:start + rng.randrange(1, 33)]
        elif data:                                                   # random byte
            pos = min(pos, len(data) - 1)
            data[pos] = rng.randrange(256)
    return bytes(data)


_JSON_VALUES = [0, -1, -5, 1, 2, 3000, 10 ** 11, 2 ** 63, 1e300, '', '-5', '1e11', '100000000000',
                '(0,)', '(1000000, 1000000)', '(-1, 2)', 'abc', '[1', None, True, [], {}, [[0, 0]],
                [[0, 0, 0]], [[10 ** 9, 0, 0]], [[0, 10 ** 9, 0]]]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, prefix + (i,))


def mutate_json(text, rng):
    """A mutation of a JSON document's values (or of its bytes, one time in four)."""
    if rng.randrange(4) == 0:
        return mutate_bytes(text.encode(), rng)
    doc = json.loads(text)
    nested = None
    for _ in range(rng.choice((1, 1, 2))):
        paths = [p for p in _paths(doc) if p]
        path = rng.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        kind = rng.randrange(5)
        if kind == 0 and isinstance(parent, dict):
            del parent[key]
        elif kind == 1 and nested is None:                            # nest deeply
            depth = rng.choice((10, 3000, 100000))
            nested = '[' * depth + json.dumps(parent[key]) + ']' * depth
            parent[key] = '@nested@'
        elif kind == 2 and isinstance(parent[key], str) and parent[key].lstrip('-').isdigit():
            parent[key] = str(rng.choice((-5, 0, 10 ** 11, 2 ** 63, -2 ** 63)))
        else:
            parent[key] = rng.choice(_JSON_VALUES)
    out = json.dumps(doc)
    if nested is not None:
        out = out.replace('"@nested@"', nested)
    return out.encode()


def mutate_text(data, rng):
    """Byte mutations, or a number in the text replaced by an extreme one."""
    if rng.randrange(3):
        return mutate_bytes(data, rng)
    tokens = data.split(b',') if rng.randrange(2) else data.split(b' ')
    i = rng.randrange(len(tokens))
    tokens[i] = rng.choice([b'-1', b'1e308', b'nan', b'inf', b'99999999999999999999', b'-5:1',
                            b'4294967296:1', b'1:', b':', b'\xff\xfe', b''])
    return (b',' if b',' in data else b' ').join(tokens)


# ---------------------------------------------------------------------------------------------
# seed files and loaders
# ---------------------------------------------------------------------------------------------
def _net():
    data = mx.sym.Variable('data')
    net = mx.sym.Convolution(data, num_filter=2, kernel=(3, 3), name='conv')
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool')
    net = mx.sym.Flatten(net, name='flat')
    net = mx.sym.FullyConnected(net, num_hidden=4, name='fc')
    net = mx.sym.add_n(net, net, name='sum')
    net = mx.sym.Concat(net, net, dim=1, name='cat')
    parts = mx.sym.SliceChannel(net, num_outputs=2, name='split')
    net = mx.sym.elemwise_add(parts[0], parts[1], name='join')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def _params():
    dense = mx.nd.array(np.arange(6).reshape(2, 3), dtype='float32')
    csr = mx.nd.sparse.csr_matrix(np.array([[0, 1, 0], [2, 0, 3]], dtype=np.float32))
    rsp = mx.nd.sparse.row_sparse_array(np.array([[0, 0], [4, 5], [0, 0]], dtype=np.float32))
    return {'arg:w': dense, 'arg:c': csr, 'aux:r': rsp,
            'arg:i': mx.nd.array([1, 2], dtype='int64')}


class Seeds:
    """The seed files of every loader, in a temporary folder."""

    def __init__(self, folder):
        self.folder = folder
        j = lambda name: os.path.join(folder, name)                  # noqa: E731
        self.params, self.symbol = j('seed.params'), j('seed-symbol.json')
        mx.nd.save(self.params, _params())
        _net().save(self.symbol)
        # a bound module with an optimizer, and its states
        x = mx.sym.Variable('data')
        net = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
        net = mx.sym.SoftmaxOutput(net, name='softmax')
        self.module = mx.mod.Module(net, context=mx.cpu())
        self.module.bind(data_shapes=[('data', (2, 4))], label_shapes=[('softmax_label', (2,))])
        self.module.init_params()
        self.module.init_optimizer(optimizer='adam')
        self.states = j('seed.states')
        self.module.save_optimizer_states(self.states)
        # recordio
        self.rec, self.idx = j('seed.rec'), j('seed.idx')
        writer = mx.recordio.MXIndexedRecordIO(self.idx, self.rec, 'w')
        for i in range(3):
            header = mx.recordio.IRHeader(0 if i else 2, [1.0, 2.0] if not i else float(i), i, 0)
            writer.write_idx(i, mx.recordio.pack(header, b'payload%d' % i + b'\x0a\x23\xd7\xce'))
        writer.close()
        # MNIST: 4 images of 3x2
        self.images, self.labels = j('seed-images'), j('seed-labels')
        with open(self.images, 'wb') as f:
            f.write(struct.pack('>4I', 0x803, 4, 3, 2) + bytes(range(24)))
        with open(self.labels, 'wb') as f:
            f.write(struct.pack('>2I', 0x801, 4) + bytes([0, 1, 2, 3]))
        self.images_gz = self.images + '.gz'
        with open(self.images_gz, 'wb') as f:
            f.write(gzip.compress(open(self.images, 'rb').read()))
        self.csv = j('seed.csv')
        with open(self.csv, 'w') as f:
            f.write('1,2,3,4\n5,6,7,8\n9,10,11,12\n')
        self.libsvm = j('seed.libsvm')
        with open(self.libsvm, 'w') as f:
            f.write('1 0:1.5 3:2\n0 1:1 2:-1\n1 4:3\n')
        self.case = j('case')


def _write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def _load_params(s, data):
    _write(s.case, data)
    mx.nd.load(s.case)


def _load_params_buffer(s, data):
    mx.nd.load_frombuffer(data)


def _load_symbol(s, data):
    _write(s.case, data)
    mx.sym.load(s.case)


def _load_symbol_json(s, data):
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        return
    sym = mx.sym.load_json(text)
    sym.list_arguments()


def _load_states(s, data):
    _write(s.case, data)
    s.module.load_optimizer_states(s.case)


def _load_checkpoint(s, data, which):
    prefix = os.path.join(s.folder, 'ckpt')
    _write(prefix + '-symbol.json', data if which == 'symbol' else open(s.symbol, 'rb').read())
    _write(prefix + '-0001.params', data if which == 'params' else open(s.params, 'rb').read())
    mx.model.load_checkpoint(prefix, 1)


def _read_records(s, data, which):
    _write(s.case + '.rec', data if which == 'rec' else open(s.rec, 'rb').read())
    _write(s.case + '.idx', data if which == 'idx' else open(s.idx, 'rb').read())
    reader = mx.recordio.MXIndexedRecordIO(s.case + '.idx', s.case + '.rec', 'r')
    try:
        for key in reader.keys:
            mx.recordio.unpack(reader.read_idx(key))
    finally:
        reader.close()
    reader = mx.recordio.MXRecordIO(s.case + '.rec', 'r')
    try:
        while reader.read() is not None:
            pass
    finally:
        reader.close()


def _mnist(s, data, gz):
    path = s.case + ('.gz' if gz else '')
    _write(path, data)
    it = mx.io.MNISTIter(image=path, label=s.labels, batch_size=2, silent=True)
    for _ in it:
        pass


def _csv(s, data):
    _write(s.case, data)
    it = mx.io.CSVIter(data_csv=s.case, data_shape=(4,), batch_size=2)
    for _ in it:
        pass


def _libsvm(s, data):
    _write(s.case, data)
    it = mx.io.LibSVMIter(data_libsvm=s.case, data_shape=(5,), batch_size=2)
    for _ in it:
        pass


def _read(path):
    with open(path, 'rb') as f:
        return f.read()


def loaders(s):
    """name -> (seed bytes, mutator, load(seeds, data))."""
    sym_text = _read(s.symbol).decode()
    mnist_gz = _read(s.images_gz)
    return {
        'nd.load': (_read(s.params), mutate_bytes, _load_params),
        'nd.load_frombuffer': (_read(s.params), mutate_bytes, _load_params_buffer),
        'sym.load': (sym_text, mutate_json, _load_symbol),
        'sym.load_json': (sym_text, mutate_json, _load_symbol_json),
        'load_optimizer_states': (_read(s.states), mutate_bytes, _load_states),
        'load_checkpoint.params': (_read(s.params), mutate_bytes,
                                   lambda s, d: _load_checkpoint(s, d, 'params')),
        'load_checkpoint.symbol': (sym_text, mutate_json,
                                   lambda s, d: _load_checkpoint(s, d, 'symbol')),
        'recordio.rec': (_read(s.rec), mutate_bytes, lambda s, d: _read_records(s, d, 'rec')),
        'recordio.idx': (_read(s.idx), mutate_text, lambda s, d: _read_records(s, d, 'idx')),
        'MNISTIter': (_read(s.images), mutate_bytes, lambda s, d: _mnist(s, d, False)),
        'MNISTIter.gz': (mnist_gz, _mutate_gzip, lambda s, d: _mnist(s, d, True)),
        'CSVIter': (_read(s.csv), mutate_text, _csv),
        'LibSVMIter': (_read(s.libsvm), mutate_text, _libsvm),
    }


def _mutate_gzip(data, rng):
    """Mutations of the compressed bytes, or a well-formed gzip of mutated (or huge) content."""
    kind = rng.randrange(3)
    if kind == 0:
        return mutate_bytes(data, rng)
    raw = gzip.decompress(data)
    if kind == 1:
        return gzip.compress(mutate_bytes(raw, rng))
    dims = [rng.choice((4, 3, 2, 60000, 2 ** 31)) for _ in range(3)]
    return gzip.compress(struct.pack('>4I', 0x803, *dims) + bytes(rng.randrange(1, 1 << 22)),
                         compresslevel=1)


def _describe(err):
    text = '%s: %s' % (type(err).__name__, err)
    return text[:300]


def run(names, seconds, cases, seed):
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        seeds = Seeds(folder)
        table = loaders(seeds)
        for name in names or table:
            base, mutator, load = table[name]
            if isinstance(base, str):
                load(seeds, base.encode())               # the seed itself loads
            else:
                load(seeds, base)
            rng = random.Random('%s-%d' % (name, seed))
            failures, count, stop = [], 0, time.monotonic() + seconds
            while count < cases and time.monotonic() < stop:
                data = mutator(base, rng)
                count += 1
                try:
                    load(seeds, data)
                except MXNetError:
                    pass
                except BaseException as err:             # noqa: B902 - reported, not hidden
                    if isinstance(err, KeyboardInterrupt):
                        raise
                    failures.append((count, _describe(err), data[:200].hex()))
            results[name] = {'cases': count, 'failures': failures[:20],
                             'num_failures': len(failures)}
    return results


# ---------------------------------------------------------------------------------------------
# the audit's reproducers: tiny files that once took gigabytes or crashed
# ---------------------------------------------------------------------------------------------
def _shape(dims):
    return struct.pack('<i', len(dims)) + struct.pack('<%dq' % len(dims), *dims)


def sparse_record(stype, shape, storage_shape, aux, values=b''):
    """One V2 sparse record: aux is [(dtype code, shape, bytes)], values float32 bytes."""
    head = struct.pack('<Ii', 0xF993FAC9, stype) + _shape(storage_shape) + _shape(shape)
    head += struct.pack('<iii', 1, 0, 0)
    head += b''.join(struct.pack('<i', code) + _shape(dims) for code, dims, _ in aux)
    return head + values + b''.join(raw for _, _, raw in aux)


def params_file(records, names=None):
    out = struct.pack('<QQQ', 0x112, 0, len(records)) + b''.join(records)
    names = names or []
    out += struct.pack('<Q', len(names))
    return out + b''.join(struct.pack('<Q', len(n)) + n for n in names)


def _int64(*values):
    return struct.pack('<%dq' % len(values), *values)


def reproducers(folder):
    """name -> (file bytes or a callable(path) loading it, loader). Each must raise MXNetError
    except those named ok_*, which must load."""
    dense = struct.pack('<Iii', 0xF993FAC9, 0, 1) + _int64(1) + struct.pack('<iiif', 1, 0, 0, 1)
    rsp_huge = params_file([sparse_record(1, (60000, 60000), (0, 60000),
                                          [(6, (0,), b'')])], [b'arg:w'])
    csr_huge = params_file([sparse_record(2, (60000, 60000), (0,),
                                          [(6, (2,), _int64(0, 0)), (6, (0,), b'')])])
    csr_negative = params_file([sparse_record(2, (2, 3), (2,),
                                              [(6, (3,), _int64(0, 1, 2)),
                                               (6, (2,), _int64(0, -1))],
                                              struct.pack('<2f', 1, 2))])
    rsp_short = params_file([sparse_record(1, (3, 2), (1, 2), [(6, (2,), _int64(0, 2))],
                                           struct.pack('<2f', 1, 2))])
    add_n = json.dumps({'nodes': [{'op': 'null', 'name': 'a', 'inputs': []},
                                  {'op': 'add_n', 'name': 's', 'attrs': {'num_args': '100000000000'},
                                   'inputs': [[0, 0, 0]]}],
                        'arg_nodes': [0], 'node_row_ptr': [0, 1, 2], 'heads': [[1, 0, 0]],
                        'attrs': {'mxnet_version': ['int', 10901]}}).encode()
    negative_hidden = add_n.replace(b'"add_n"', b'"FullyConnected"').replace(
        b'"num_args": "100000000000"', b'"num_hidden": "-5"')
    deep = b'{"nodes": ' + b'[' * 3000 + b']' * 3000 + b', "arg_nodes": [], "heads": []}'
    mnist_huge = gzip.compress(struct.pack('>4I', 0x803, 60000, 200, 200) + bytes(1 << 20))
    mnist_long = gzip.compress(struct.pack('>4I', 0x803, 4, 3, 2) + bytes(1 << 24))
    return {
        'ok_rsp_60000x60000_stays_sparse': (rsp_huge, 'nd'),
        'csr_60000x60000_short_indptr': (csr_huge, 'nd'),
        'csr_negative_column': (csr_negative, 'nd'),
        'rsp_too_few_value_rows': (rsp_short, 'nd'),
        'params_name_not_utf8': (params_file([dense], [b'\xff\xfe']), 'nd'),
        'add_n_num_args_1e11': (add_n, 'sym'),
        'num_hidden_negative': (negative_hidden, 'sym'),
        'json_nested_3000': (deep, 'sym'),
        'states_cyclic_dict': (b'\x80\x02}q\x00K\x00h\x00s.', 'states'),
        'states_cyclic_list': (b'\x80\x02]q\x00h\x00a.', 'states'),
        'states_bytearray_1tb': (b'\x80\x05\x96' + (1 << 40).to_bytes(8, 'little') + b'xx.',
                                 'states'),
        'states_empty': (b'', 'states'),
        'mnist_gzip_2_4gb_header': (mnist_huge, 'mnist'),
        'mnist_gzip_longer_than_header': (mnist_long, 'mnist'),
        'idx_not_utf8': (b'0\t0\n\xff\xfe\t8\n', 'idx'),
        'idx_negative_offset': (b'0\t-8\n', 'idx'),
    }


def run_reproducers():
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        seeds = Seeds(folder)
        load = {'nd': _load_params, 'sym': _load_symbol, 'states': _load_states,
                'mnist': lambda s, d: _mnist(s, d, True),
                'idx': lambda s, d: _read_records(s, d, 'idx')}
        for name, (data, kind) in reproducers(folder).items():
            try:
                load[kind](seeds, data)
                if kind == 'nd':
                    loaded = mx.nd.load(seeds.case)
                    arr = loaded['arg:w'] if isinstance(loaded, dict) else loaded[0]
                    results[name] = 'ok: %s %s' % (arr.stype, arr.shape)
                else:
                    results[name] = 'ok'
            except MXNetError as err:
                results[name] = 'MXNetError: %s' % str(err)[:300]
            except BaseException as err:                 # noqa: B902 - reported
                if isinstance(err, KeyboardInterrupt):
                    raise
                results[name] = _describe(err)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('loaders', nargs='*')
    parser.add_argument('--seconds', type=float, default=2.0, help='per loader')
    parser.add_argument('--cases', type=int, default=100000, help='at most, per loader')
    parser.add_argument('--memory-mb', type=int, default=1024,
                        help='address space allowed beyond what the imports took')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--reproducers', action='store_true',
                        help="load the audit's reproducers instead of fuzzing")
    args = parser.parse_args()
    import torch
    torch.set_num_threads(1)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    try:                    # the memory ceiling: Linux (elsewhere the cases run without one)
        import resource
        with open('/proc/self/status') as f:
            used_kb = int(next(line.split()[1] for line in f if line.startswith('VmSize')))
        limit = (used_kb * 1024) + args.memory_mb * 2 ** 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, ValueError, StopIteration):
        pass
    if args.reproducers:
        print(json.dumps(run_reproducers()))
    else:
        print(json.dumps(run(args.loaders, args.seconds, args.cases, args.seed)))


if __name__ == '__main__':
    main()
