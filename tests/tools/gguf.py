"""gguf.py - GGUF files from Python (numpy): a reader and a writer of the container, for the
tests, the PyTorch reference forward pass and the training script. No package outside Debian's
python3-numpy. The C side's reader and writer are llm/gguf.c; this one is kept independent of it
on purpose, so each checks the other.

Layout (GGUF v3): magic "GGUF", u32 version, u64 tensor count, u64 key/value count, the
key/value pairs (string key, u32 type, value), the tensor descriptions (string name, u32 ndims,
u64 dims (dims[0] fastest), u32 type, u64 offset in the data section), padding to the alignment
(general.alignment, default 32), the data section (each tensor at an aligned offset).
"""
import mmap
import struct

import numpy as np

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f',
          BOOL: '<?', U64: '<Q', I64: '<q', F64: '<d'}

# tensor types (ggml_type numbering): values per block, bytes per block
T_F32, T_F16, T_Q4_0, T_Q8_0, T_Q4_K, T_Q6_K, T_BF16 = 0, 1, 2, 8, 12, 14, 30
QTYPES = {T_F32: (1, 4), T_F16: (1, 2), T_BF16: (1, 2), T_Q4_0: (32, 18), T_Q8_0: (32, 34),
          T_Q4_K: (256, 144), T_Q6_K: (256, 210)}
QNAMES = {T_F32: 'f32', T_F16: 'f16', T_BF16: 'bf16', T_Q4_0: 'q4_0', T_Q8_0: 'q8_0',
          T_Q4_K: 'q4_K', T_Q6_K: 'q6_K'}


def row_bytes(qtype, n):
    block, nbytes = QTYPES[qtype]
    assert n % block == 0, f'{n} values are not whole {QNAMES[qtype]} blocks'
    return n // block * nbytes


class Tensor:
    def __init__(self, name, dims, qtype, data):
        self.name, self.dims, self.qtype, self.data = name, tuple(dims), qtype, data

    def nelem(self):
        n = 1
        for d in self.dims:
            n *= d
        return n

    def shape(self):
        """numpy order: the slowest dimension first (dims reversed)."""
        return tuple(reversed(self.dims))


class Reader:
    """GGUF file at PATH: .version, .kv (key -> value: ints, floats, str, lists), .types
    (key -> value type), .tensors (name -> Tensor whose .data is the raw bytes, a memoryview)."""

    def __init__(self, path):
        with open(path, 'rb') as f:
            # mapped, not read: a 7B model's 13 GB are paged in only where a tensor is used
            self.buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.off = 0
        magic = self._take(4)
        if magic != b'GGUF':
            raise ValueError(f'{path}: not a GGUF file')
        self.version = self._scalar(U32)
        if self.version not in (2, 3):
            raise ValueError(f'{path}: GGUF version {self.version}')
        ntensors, nkv = self._scalar(U64), self._scalar(U64)
        self.kv, self.types = {}, {}
        for _ in range(nkv):
            key = self._string()
            vtype = self._scalar(U32)
            self.types[key] = vtype
            self.kv[key] = self._value(vtype)
        infos = []
        for _ in range(ntensors):
            name = self._string()
            ndims = self._scalar(U32)
            dims = [self._scalar(U64) for _ in range(ndims)]
            qtype = self._scalar(U32)
            off = self._scalar(U64)
            infos.append((name, dims, qtype, off))
        align = int(self.kv.get('general.alignment', 32))
        self.data_offset = (self.off + align - 1) // align * align
        self.tensors = {}
        view = memoryview(self.buf)
        for name, dims, qtype, off in infos:
            t = Tensor(name, dims, qtype, None)
            nbytes = row_bytes(qtype, dims[0]) * (t.nelem() // dims[0])
            start = self.data_offset + off
            if start + nbytes > len(self.buf):
                raise ValueError(f'tensor {name} lies outside the file')
            t.data = view[start:start + nbytes]
            self.tensors[name] = t

    def _take(self, n):
        if self.off + n > len(self.buf):
            raise ValueError('truncated file')
        b = self.buf[self.off:self.off + n]
        self.off += n
        return b

    def _scalar(self, vtype):
        fmt = SCALAR[vtype]
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def _string(self):
        n = self._scalar(U64)
        return self._take(n).decode('utf-8', errors='surrogateescape')

    def _value(self, vtype):
        if vtype == STRING:
            return self._string()
        if vtype == ARRAY:
            etype, n = self._scalar(U32), self._scalar(U64)
            if etype in SCALAR and etype != BOOL:
                dt = np.dtype(SCALAR[etype])
                arr = np.frombuffer(self._take(n * dt.itemsize), dtype=dt)
                return arr.tolist()
            return [self._value(etype) for _ in range(n)]
        return self._scalar(vtype)


class Writer:
    """Collects metadata and tensors, then write(path)."""

    def __init__(self, alignment=32):
        self.kv = []  # (key, vtype, value, elem type for arrays)
        self.tensors = []
        self.alignment = alignment
        if alignment != 32:
            self.add('general.alignment', alignment, U32)

    def add(self, key, value, vtype=None, etype=None):
        """A key; VTYPE guessed from VALUE where not given (str, bool, int as I32/U64, float as
        F32, a list of str/float/int)."""
        if vtype is None:
            if isinstance(value, str):
                vtype = STRING
            elif isinstance(value, bool):
                vtype = BOOL
            elif isinstance(value, int):
                vtype = U32 if 0 <= value < 2**32 else I64
            elif isinstance(value, float):
                vtype = F32
            elif isinstance(value, (list, tuple, np.ndarray)):
                vtype = ARRAY
            else:
                raise TypeError(f'{key}: cannot guess the type of {value!r}')
        if vtype == ARRAY and etype is None:
            first = value[0] if len(value) else ''
            etype = (STRING if isinstance(first, str) else
                     F32 if isinstance(first, (float, np.floating)) else I32)
        self.kv.append((key, vtype, value, etype))

    def add_tensor(self, name, array=None, qtype=None, raw=None, dims=None):
        """A tensor: a numpy ARRAY (f32 -> F32, f16 -> F16; QTYPE T_BF16 rounds an f32 array to
        bf16), or RAW bytes already in QTYPE's layout with DIMS (GGUF order)."""
        if raw is None:
            a = np.ascontiguousarray(array)
            dims = tuple(reversed(a.shape))
            if qtype is None:
                qtype = T_F16 if a.dtype == np.float16 else T_F32
            if qtype == T_F32:
                raw = a.astype('<f4').tobytes()
            elif qtype == T_F16:
                raw = a.astype('<f2').tobytes()
            elif qtype == T_BF16:
                raw = f32_to_bf16(a.astype(np.float32)).tobytes()
            else:
                raise ValueError('quantized tensors are passed as raw blocks')
        expect = row_bytes(qtype, dims[0])
        for d in dims[1:]:
            expect *= d
        if len(raw) != expect:
            raise ValueError(f'{name}: {len(raw)} bytes, its shape needs {expect}')
        self.tensors.append(Tensor(name, dims, qtype, bytes(raw)))

    def write(self, path):
        out = bytearray(b'GGUF')
        out += struct.pack('<IQQ', 3, len(self.tensors), len(self.kv))
        for key, vtype, value, etype in self.kv:
            out += _string(key) + struct.pack('<I', vtype) + _value(vtype, value, etype)
        off = 0
        offsets = []
        for t in self.tensors:
            off = (off + self.alignment - 1) // self.alignment * self.alignment
            offsets.append(off)
            off += len(t.data)
        for t, o in zip(self.tensors, offsets):
            out += _string(t.name) + struct.pack('<I', len(t.dims))
            out += b''.join(struct.pack('<Q', d) for d in t.dims)
            out += struct.pack('<IQ', t.qtype, o)
        out += b'\0' * (-len(out) % self.alignment)
        base = len(out)
        for t, o in zip(self.tensors, offsets):
            out += b'\0' * (base + o - len(out))
            out += t.data
        with open(path, 'wb') as f:
            f.write(out)


def _string(s):
    b = s.encode('utf-8', errors='surrogateescape')
    return struct.pack('<Q', len(b)) + b


def _value(vtype, value, etype=None):
    if vtype == STRING:
        return _string(value)
    if vtype == ARRAY:
        head = struct.pack('<IQ', etype, len(value))
        if etype == STRING:
            return head + b''.join(_string(v) for v in value)
        return head + np.asarray(value, dtype=np.dtype(SCALAR[etype])).tobytes()
    return struct.pack(SCALAR[vtype], value)


def f32_to_bf16(a):
    """Round to nearest even, as the C side (kernels/gk_scalar.h) does: uint16 patterns."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_to_f32(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
