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


# -- dequantization and quantization (numpy, vectorised over blocks) ----------------------------
# The block layouts are kernels/gk_qblock.h's (the C definition, ggml's): each function below
# mirrors one gk_*_value() there, over every block at once, computing in f32 in the same order.

def _blocks(raw, qtype):
    block, nbytes = QTYPES[qtype]
    b = np.frombuffer(raw, dtype=np.uint8)
    if b.size % nbytes:
        raise ValueError(f'{b.size} bytes are not whole {QNAMES[qtype]} blocks')
    return b.reshape(-1, nbytes)


def _f16(b):
    """uint8 columns (n, 2) holding little-endian f16 -> f32 (n, 1)."""
    return np.ascontiguousarray(b).view('<f2').astype(np.float32)


def _deq_q8_0(raw):
    b = _blocks(raw, T_Q8_0)
    return _f16(b[:, 0:2]) * b[:, 2:].view(np.int8).astype(np.float32)


def _deq_q4_0(raw):
    b = _blocks(raw, T_Q4_0)
    qs = b[:, 2:]
    # byte j: value j in the low nibble, value j + 16 in the high one
    q = np.concatenate((qs & 0xF, qs >> 4), axis=1).astype(np.float32)
    return (q - 8.0) * _f16(b[:, 0:2])


def q4k_scale_min(s):
    """q4_K's 6-bit scales and mins of the 8 sub-blocks from the packed bytes S (n, 12):
    gk_q4k_scale_min() for every j. Returns two (n, 8) uint8 arrays."""
    lo_sc, lo_m = s[:, 0:4] & 63, s[:, 4:8] & 63
    hi_sc = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    hi_m = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return (np.concatenate((lo_sc, hi_sc), axis=1), np.concatenate((lo_m, hi_m), axis=1))


def _deq_q4_K(raw):
    b = _blocks(raw, T_Q4_K)
    n = b.shape[0]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    sc, m = q4k_scale_min(b[:, 4:16])
    qs = b[:, 16:144].reshape(n, 4, 32)
    # group g of 64 values: low nibbles are sub-block 2g, high nibbles sub-block 2g + 1
    q = np.stack((qs & 0xF, qs >> 4), axis=2).reshape(n, 8, 32).astype(np.float32)
    scale = (d * sc.astype(np.float32))[:, :, None]
    offset = (dmin * m.astype(np.float32))[:, :, None]
    return (scale * q - offset).reshape(n, 256)


def _deq_q6_K(raw):
    b = _blocks(raw, T_Q6_K)
    n = b.shape[0]
    ql = b[:, 0:128].reshape(n, 2, 2, 32)        # half, k & 1, l
    qh = b[:, 128:192].reshape(n, 2, 1, 32)      # half, -, l
    sc = b[:, 192:208].view(np.int8).reshape(n, 2, 4, 2)  # half, k, l / 16
    d = _f16(b[:, 208:210]).reshape(n, 1, 1, 1)
    # value 128 h + 32 k + l: low 4 bits from ql[l + 32 (k & 1)] (low nibble for k < 2, high
    # for k >= 2), high 2 bits from qh[l] >> 2k, scale scales[l / 16 + 2k]
    lo = np.concatenate((ql & 0xF, ql >> 4), axis=2)                  # (n, 2, 4, 32)
    hi = (qh >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)) & 3
    q = (lo | (hi << 4)).astype(np.float32) - 32.0
    scale = np.repeat(sc, 16, axis=3).astype(np.float32)              # (n, 2, 4, 32)
    return (d * scale * q).reshape(n, 256)


def _deq_f32(raw):
    return np.frombuffer(raw, dtype='<f4').astype(np.float32)


def _deq_f16(raw):
    return np.frombuffer(raw, dtype='<f2').astype(np.float32)


def _deq_bf16(raw):
    return bf16_to_f32(np.frombuffer(raw, dtype='<u2'))


DEQUANTIZE = {T_F32: _deq_f32, T_F16: _deq_f16, T_BF16: _deq_bf16, T_Q8_0: _deq_q8_0,
              T_Q4_0: _deq_q4_0, T_Q4_K: _deq_q4_K, T_Q6_K: _deq_q6_K}


def dequantize_raw(raw, qtype):
    """The f32 values of RAW bytes in QTYPE's layout, flat."""
    return np.ascontiguousarray(DEQUANTIZE[qtype](raw), dtype=np.float32).reshape(-1)


def dequantize(t):
    """Tensor T's values as an f32 array of t.shape() (slowest dimension first)."""
    return dequantize_raw(t.data, t.qtype).reshape(t.shape())


def _rows_of_blocks(a, block):
    a = np.ascontiguousarray(a, dtype=np.float32)
    if a.shape[-1] % block:
        raise ValueError(f'rows of {a.shape[-1]} values are not whole blocks of {block}')
    return a.reshape(-1, block)


def _roundf(x):
    """C's roundf: halves away from zero (numpy's rint rounds them to even)."""
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def _quant_q8_0(a):
    x = _rows_of_blocks(a, 32)
    # ggml's quantize_row_q8_0_ref: d = absmax / 127, q = roundf(x * (1 / d))
    d = np.abs(x).max(axis=1, keepdims=True) / np.float32(127)
    with np.errstate(divide='ignore'):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _roundf(x * inv).astype(np.int8)
    out = np.empty((x.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = d.astype('<f2').view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def _quant_q4_0(a):
    x = _rows_of_blocks(a, 32)
    # ggml's quantize_row_q4_0_ref: MAX the value of largest magnitude (signed, the first one on
    # a tie), d = MAX / -8, q = min(15, (int)(x / d + 8.5)), truncated
    idx = np.abs(x).argmax(axis=1)
    mx = x[np.arange(x.shape[0]), idx][:, None]
    d = (mx / np.float32(-8)).astype(np.float32)
    with np.errstate(divide='ignore'):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = np.minimum(15, np.trunc(x * inv + np.float32(8.5)).astype(np.int32)).astype(np.uint8)
    out = np.empty((x.shape[0], 18), dtype=np.uint8)
    out[:, 0:2] = d.astype('<f2').view(np.uint8)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


QUANTIZE = {T_F32: lambda a: np.ascontiguousarray(a, dtype='<f4').tobytes(),
            T_F16: lambda a: np.ascontiguousarray(a, dtype='<f2').tobytes(),
            T_BF16: lambda a: f32_to_bf16(np.asarray(a, dtype=np.float32)).tobytes(),
            T_Q8_0: _quant_q8_0, T_Q4_0: _quant_q4_0}


def quantize(a, qtype):
    """Array A (its last axis the rows, GGUF's dims[0]) as raw bytes in QTYPE's layout, with
    ggml's reference rounding. q4_K and q6_K have no quantizer here (tests write random blocks)."""
    if qtype not in QUANTIZE:
        raise ValueError(f'no quantizer for {QNAMES.get(qtype, qtype)}')
    return QUANTIZE[qtype](a)
