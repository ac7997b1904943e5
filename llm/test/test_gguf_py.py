"""test_gguf_py: the C GGUF reader and writer (llm/gguf.c) against the independent Python ones
(tests/tools/gguf.py). Both readers print the same canonical text of a file (llm/test/gguf_dump.c
in C, dump() here): every key with its type and value, every array element, every tensor's
name, type, dims and FNV-1a hash. Checked: files the C writer made (gllm-mkmodel, llama and
qwen2 shapes, plain and block types) read the same in Python; a file the Python writer made
(every metadata type, alignment 64, every tensor type) reads the same in C; gllm-mkmodel's
--list and --info show what they should, and it refuses bad options (exit 2) and a type whose
blocks the shape's rows do not fill (exit 1, no file).
Usage: test_gguf_py.py GGUF_DUMP GLLM_MKMODEL SCRATCH_DIR (run with /usr/bin/python3)."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'tests', 'tools'))
import gguf  # noqa: E402


class Reader(gguf.Reader):
    """gguf.Reader that also remembers each array's element type, in file order."""

    def __init__(self, path):
        self.etypes = []
        super().__init__(path)

    def _value(self, vtype):
        if vtype == gguf.ARRAY:
            at = self.off
            self.etypes.append(self._scalar(gguf.U32))
            self.off = at
        return super()._value(vtype)


def fnv(data):
    h = 0xcbf29ce484222325
    for b in bytes(data):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def text(s):
    return 'x' + s.encode('utf-8', errors='surrogateescape').hex()


def number(v, vtype):
    if vtype in (gguf.F32, gguf.F64):
        return '%.9g' % float(np.float32(v))
    return str(int(v))


def dump(path):
    r = Reader(path)
    out = [f'version {r.version}']
    etypes = iter(r.etypes)
    for key, v in r.kv.items():
        t = r.types[key]
        if t == gguf.STRING:
            out.append(f'kv {key} {t} {text(v)}')
        elif t == gguf.BOOL:
            out.append(f'kv {key} {t} {int(bool(v))}')
        elif t == gguf.ARRAY:
            et = next(etypes)
            out.append(f'kv {key} {t} {et} {len(v)}')
            for e in v:
                out.append('  ' + (text(e) if et == gguf.STRING else
                                   'bool' if et == gguf.BOOL else number(e, et)))
        else:
            out.append(f'kv {key} {t} {number(v, t)}')
    for name, tensor in r.tensors.items():
        dims = ' '.join(str(d) for d in tensor.dims)
        out.append(f'tensor {name} {tensor.qtype} {dims} {fnv(tensor.data):016x}')
    return '\n'.join(out) + '\n'


def same(dumper, path):
    c = subprocess.run([dumper, path], check=True, capture_output=True, text=True).stdout
    p = dump(path)
    if c != p:
        for i, (a, b) in enumerate(zip(c.splitlines(), p.splitlines())):
            if a != b:
                sys.exit(f'{path}: line {i}: C says {a!r}, Python {b!r}')
        sys.exit(f'{path}: C gives {len(c.splitlines())} lines, Python {len(p.splitlines())}')
    return p


def python_file(path):
    rng = np.random.default_rng(7)
    w = gguf.Writer(alignment=64)
    for key, value, vtype in [('u8', 200, gguf.U8), ('i8', -100, gguf.I8), ('u16', 60000, gguf.U16),
                              ('i16', -30000, gguf.I16), ('u32', 4000000000, gguf.U32),
                              ('i32', -5, gguf.I32), ('f32', 0.1, gguf.F32),
                              ('bool', True, gguf.BOOL), ('str', 'héllo ▁wörld', gguf.STRING),
                              ('u64', 2**40, gguf.U64), ('i64', -2**40, gguf.I64),
                              ('f64', 1e-6, gguf.F64)]:
        w.add(key, value, vtype)
    w.add('arr.u8', [1, 2, 255], gguf.ARRAY, gguf.U8)
    w.add('arr.i16', [-1, 7], gguf.ARRAY, gguf.I16)
    w.add('arr.i64', [-2**50, 3], gguf.ARRAY, gguf.I64)
    w.add('arr.f64', [0.5, -1e10], gguf.ARRAY, gguf.F64)
    w.add('arr.f32', [0.25, 3.0], gguf.ARRAY, gguf.F32)
    w.add('arr.bool', [True, False], gguf.ARRAY, gguf.BOOL)
    w.add('arr.str', ['<s>', '', '▁x'], gguf.ARRAY, gguf.STRING)
    w.add('arr.empty', [], gguf.ARRAY, gguf.I32)
    w.add_tensor('f32', rng.standard_normal((3, 64)).astype(np.float32))
    w.add_tensor('f16', rng.standard_normal((2, 32)).astype(np.float16))
    w.add_tensor('bf16', rng.standard_normal((2, 32)).astype(np.float32), qtype=gguf.T_BF16)
    for qt in (gguf.T_Q8_0, gguf.T_Q4_0, gguf.T_Q4_K, gguf.T_Q6_K):
        block, nbytes = gguf.QTYPES[qt]
        raw = rng.integers(0, 256, 2 * nbytes * 2, dtype=np.uint8).tobytes()
        w.add_tensor(gguf.QNAMES[qt], raw=raw, qtype=qt, dims=(2 * block, 2))
    w.write(path)


def cli(mkmodel, scratch):
    """gllm-mkmodel's --list, --info and its refusals."""
    run = lambda *a: subprocess.run([mkmodel, *a], capture_output=True, text=True)
    r = run('--list')
    assert r.returncode == 0 and 'llama2-7b' in r.stdout and 'qwen2-0.5b' in r.stdout, r
    path = os.path.join(scratch, 'cli.gguf')
    r = run('--shape', 'test-qwen2', '--type', 'q8_0', '--layers', '3', '--seed', '0x10', path)
    assert r.returncode == 0, r.stderr
    r = run('--info', path)
    assert r.returncode == 0, r.stderr
    assert 'qwen2.block_count = 3' in r.stdout and 'blk.2.attn_q.bias' in r.stdout, r.stdout
    assert 'tokenizer.ggml.tokens = [512] "<unk>", "<s>"' in r.stdout, r.stdout
    assert '\noutput.weight ' not in r.stdout and '\noutput_norm.weight ' in r.stdout  # tied
    for bad in (['--shape', 'nope', path], ['--shape', 'test-llama', '--type', 'q4_1', path],
                ['--shape', 'test-llama'], ['--list', '--info', path], ['--layers', '0']):
        r = run(*bad)
        assert r.returncode == 2 and r.stderr.startswith('gllm-mkmodel: '), (bad, r)
    r = run('--shape', 'test-llama', '--type', 'q4_K', path + '.k')  # 128 is not 256-value blocks
    assert r.returncode == 1 and 'q4_K' in r.stderr and not os.path.exists(path + '.k'), r
    r = run('--info', path + '.missing')
    assert r.returncode == 1 and 'cannot open' in r.stderr, r
    os.unlink(path)


def main():
    dumper, mkmodel, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    checked = 0
    for shape, qtype in [('test-llama', 'f16'), ('test-qwen2', 'q8_0'), ('test-kquant', 'q4_K'),
                         ('test-kquant', 'q6_K'), ('test-llama', 'bf16'), ('test-qwen2', 'q4_0')]:
        path = os.path.join(scratch, f'{shape}-{qtype}.gguf')
        subprocess.run([mkmodel, '--shape', shape, '--type', qtype, '--seed', '3', path],
                       check=True, capture_output=True)
        d = same(dumper, path)
        assert 'kv general.architecture' in d and 'tensor token_embd.weight' in d
        os.unlink(path)
        checked += 1
    cli(mkmodel, scratch)
    path = os.path.join(scratch, 'python.gguf')
    python_file(path)
    d = same(dumper, path)
    assert d.count('\ntensor ') == 7 and 'kv arr.bool 9 7 2' in d, d
    os.unlink(path)
    print(f'test_gguf_py: ok ({checked} C-written files, 1 Python-written)')


if __name__ == '__main__':
    main()
