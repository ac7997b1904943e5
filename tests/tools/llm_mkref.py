#!/usr/bin/python3
"""llm_mkref.py - tiny random-weight GGUF language models for the tests, and the self-check of
llm_ref.py (the reference forward pass) and gguf.py's dequantization against independent
formulations of the same arithmetic.

    llm_mkref.py OUT.gguf [--arch llama|qwen2] [--qtype q8_0] [--seed N] [--rope-scale F]
    llm_mkref.py --self-check        (what `llm_ref.py --self-check` and ctest run; it also
                                      checks the committed models/*.gguf against their
                                      models/*.expect.json, written by tools/llm/train.py)

The models have real structure at a tiny size: n_embd 256 and n_ff 512 (whole q4_K/q6_K blocks
of 256), 2 layers, grouped-query attention (4 query heads on 2 kv heads for llama, 8 on 2 for
qwen2), a SentencePiece-style vocabulary for llama (<unk> <s> </s>, the 256 byte tokens <0xXX>,
some merged pieces) and a GPT-2-style byte-level one for qwen2 (its specials, bytes, merges).
Every 2-D weight is in the chosen type; norms and biases are f32. q8_0/q4_0/f16/bf16 weights are
random normals quantized by gguf.py; q4_K/q6_K weights are random blocks (random bytes, a scale
picked so the values are of the right size).
"""
import argparse
import glob
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402
import llm_ref  # noqa: E402

QTYPE_BY_NAME = {v: k for k, v in gguf.QNAMES.items()}

# per architecture: heads, kv heads, q/k/v biases, the output head tied to the embedding
SHAPES = {'llama': dict(n_head=4, n_head_kv=2, bias=False, tied=False),
          'qwen2': dict(n_head=8, n_head_kv=2, bias=True, tied=True)}
N_EMBD, N_FF, N_LAYER, CTX = 256, 512, 2, 128


def spm_vocab():
    """llama-style: unk, bos, eos, the 256 byte tokens, then merged pieces (▁ is the space)."""
    tokens = ['<unk>', '<s>', '</s>'] + [f'<0x{b:02X}>' for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    pieces = ['▁'] + [chr(c) for c in range(ord('a'), ord('z') + 1)] + \
        ['▁t', '▁a', 'he', 'in', 'er', 'an', '▁the', 'on', 're', '▁s', 'en', 'at', '▁w', 'or',
         'nd', '▁h', 'es', '▁o', 'it', 'ed', '▁and', '▁of', '▁to', 'ing', '▁i', 'is', '▁c']
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    return tokens + pieces, scores, types + [1] * len(pieces)


def gpt2_bytes():
    """GPT-2's byte -> printable character table (bytes_to_unicode)."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def gpt2_vocab():
    """qwen2-style byte-level BPE: the 256 byte characters, merges, then the specials."""
    table = gpt2_bytes()
    tokens = [table[b] for b in range(256)]
    merges = ['Ġ t', 'h e', 'i n', 'Ġ a', 'e r', 'o n', 'Ġt he', 'r e', 'a n', 'Ġ s', 'e n',
              'a t', 'Ġ w', 'o r', 'n d', 'Ġ h']
    tokens += [m.replace(' ', '') for m in merges]
    specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
    types = [1] * len(tokens) + [3] * len(specials)
    return tokens + specials, merges, types


def random_blocks(rng, qtype, shape, std):
    """Random raw blocks of QTYPE for a weight of numpy SHAPE whose values have about STD."""
    block, nbytes = gguf.QTYPES[qtype]
    nblocks = int(np.prod(shape)) // block
    b = rng.integers(0, 256, size=(nblocks, nbytes), dtype=np.uint8)
    if qtype == gguf.T_Q4_K:
        # d * sc * q - dmin * m with sc, m in 0..63, q in 0..15: dmin = 7.5 d centres it, and
        # the spread is then about 258 d
        d = np.float32(std / 258.0)
        b[:, 0:2] = np.array([d], dtype='<f2').view(np.uint8)
        b[:, 2:4] = np.array([7.5 * d], dtype='<f2').view(np.uint8)
    elif qtype == gguf.T_Q6_K:
        # d * scale * (q - 32), scale int8, q in 0..63: about 1370 d
        b[:, 208:210] = np.array([std / 1370.0], dtype='<f2').view(np.uint8)
    else:
        raise ValueError(f'no random blocks for {gguf.QNAMES[qtype]}')
    return b.tobytes()


def make_test_model(path, arch='llama', qtype='q8_0', seed=0, rope_scale=None):
    """A tiny random ARCH model with its 2-D weights in QTYPE (a name: 'f32', 'q4_K', ...)
    written to PATH. ROPE_SCALE: a linear RoPE scaling factor in the metadata."""
    qt = QTYPE_BY_NAME[qtype]
    shape = SHAPES[arch]
    rng = np.random.default_rng(seed)
    hd = N_EMBD // shape['n_head']
    kvd = hd * shape['n_head_kv']
    w = gguf.Writer()
    w.add('general.architecture', arch)
    w.add('general.name', f'tiny-{arch}-{qtype}')
    w.add(f'{arch}.context_length', CTX, gguf.U32)
    w.add(f'{arch}.embedding_length', N_EMBD, gguf.U32)
    w.add(f'{arch}.block_count', N_LAYER, gguf.U32)
    w.add(f'{arch}.feed_forward_length', N_FF, gguf.U32)
    w.add(f'{arch}.attention.head_count', shape['n_head'], gguf.U32)
    w.add(f'{arch}.attention.head_count_kv', shape['n_head_kv'], gguf.U32)
    w.add(f'{arch}.rope.freq_base', 10000.0 if arch == 'llama' else 1000000.0, gguf.F32)
    w.add(f'{arch}.rope.dimension_count', hd, gguf.U32)
    w.add(f'{arch}.attention.layer_norm_rms_epsilon', 1e-5 if arch == 'llama' else 1e-6,
          gguf.F32)
    if rope_scale:
        w.add(f'{arch}.rope.scaling.type', 'linear')
        w.add(f'{arch}.rope.scaling.factor', float(rope_scale), gguf.F32)
    if arch == 'llama':
        tokens, scores, types = spm_vocab()
        w.add('tokenizer.ggml.model', 'llama')
        w.add('tokenizer.ggml.tokens', tokens, gguf.ARRAY, gguf.STRING)
        w.add('tokenizer.ggml.scores', scores, gguf.ARRAY, gguf.F32)
        w.add('tokenizer.ggml.token_type', types, gguf.ARRAY, gguf.I32)
        w.add('tokenizer.ggml.bos_token_id', 1, gguf.U32)
        w.add('tokenizer.ggml.eos_token_id', 2, gguf.U32)
        w.add('tokenizer.ggml.unknown_token_id', 0, gguf.U32)
        w.add('tokenizer.ggml.add_bos_token', True, gguf.BOOL)
        w.add('tokenizer.ggml.add_space_prefix', True, gguf.BOOL)
    else:
        tokens, merges, types = gpt2_vocab()
        w.add('tokenizer.ggml.model', 'gpt2')
        w.add('tokenizer.ggml.pre', 'qwen2')
        w.add('tokenizer.ggml.tokens', tokens, gguf.ARRAY, gguf.STRING)
        w.add('tokenizer.ggml.token_type', types, gguf.ARRAY, gguf.I32)
        w.add('tokenizer.ggml.merges', merges, gguf.ARRAY, gguf.STRING)
        w.add('tokenizer.ggml.eos_token_id', len(tokens) - 3, gguf.U32)
        w.add('tokenizer.ggml.add_bos_token', False, gguf.BOOL)
    n_vocab = len(tokens)

    def mat(name, out_dim, in_dim, std=None):
        std = std if std is not None else 1.0 / math.sqrt(in_dim)
        numpy_shape = (out_dim, in_dim)
        if qt in (gguf.T_Q4_K, gguf.T_Q6_K):
            raw = random_blocks(rng, qt, numpy_shape, std)
        else:
            raw = gguf.quantize(rng.normal(0.0, std, numpy_shape).astype(np.float32), qt)
        w.add_tensor(name, raw=raw, qtype=qt, dims=(in_dim, out_dim))

    def vec(name, n, mean, std):
        w.add_tensor(name, rng.normal(mean, std, n).astype(np.float32))

    # a tied head reads the embedding back: small there, or each position's own token, still
    # in the residual stream, would win every argmax
    mat('token_embd.weight', n_vocab, N_EMBD, std=0.1 if shape['tied'] else 1.0)
    for i in range(N_LAYER):
        p = f'blk.{i}.'
        vec(p + 'attn_norm.weight', N_EMBD, 1.0, 0.1)
        mat(p + 'attn_q.weight', N_EMBD, N_EMBD)
        mat(p + 'attn_k.weight', kvd, N_EMBD)
        mat(p + 'attn_v.weight', kvd, N_EMBD)
        if shape['bias']:
            vec(p + 'attn_q.bias', N_EMBD, 0.0, 0.1)
            vec(p + 'attn_k.bias', kvd, 0.0, 0.1)
            vec(p + 'attn_v.bias', kvd, 0.0, 0.1)
        mat(p + 'attn_output.weight', N_EMBD, N_EMBD)
        vec(p + 'ffn_norm.weight', N_EMBD, 1.0, 0.1)
        mat(p + 'ffn_gate.weight', N_FF, N_EMBD)
        mat(p + 'ffn_up.weight', N_FF, N_EMBD)
        mat(p + 'ffn_down.weight', N_EMBD, N_FF)
    vec('output_norm.weight', N_EMBD, 1.0, 0.1)
    if not shape['tied']:
        mat('output.weight', n_vocab, N_EMBD)
    w.write(path)
    return path


# -- the self-check: the same numbers by other roads ----------------------------------------------

def f16_scalar(lo, hi):
    h = lo | (hi << 8)
    sign = -1.0 if h & 0x8000 else 1.0
    e, m = (h >> 10) & 0x1f, h & 0x3ff
    if e == 0:
        return sign * m * 2.0 ** -24
    assert e != 0x1f, 'test blocks hold finite scales'
    return sign * (1 + m / 1024.0) * 2.0 ** (e - 15)


def scalar_value(qtype, b, i):
    """Element I of one block B (bytes), transcribed line by line from kernels/gk_qblock.h's
    gk_*_value(): one element at a time, where gguf.py works on whole arrays."""
    if qtype == gguf.T_Q4_0:
        q = (b[2 + i] & 0xF) if i < 16 else (b[2 + i - 16] >> 4)
        return (q - 8) * f16_scalar(b[0], b[1])
    if qtype == gguf.T_Q8_0:
        q = b[2 + i] - 256 if b[2 + i] > 127 else b[2 + i]
        return q * f16_scalar(b[0], b[1])
    if qtype == gguf.T_Q4_K:
        g, r = i // 64, i % 64
        sub = 2 * g + (r >= 32)
        byte = b[16 + 32 * g + r % 32]
        q = (byte & 0xF) if r < 32 else (byte >> 4)
        s = b[4:16]
        if sub < 4:
            sc, m = s[sub] & 63, s[sub + 4] & 63
        else:
            sc = (s[sub + 4] & 0xF) | ((s[sub - 4] >> 6) << 4)
            m = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4)
        return f16_scalar(b[0], b[1]) * sc * q - f16_scalar(b[2], b[3]) * m
    if qtype == gguf.T_Q6_K:
        h, r = i // 128, i % 128
        k, l = r // 32, r % 32
        ql, qh, sc = b[64 * h:], b[128 + 32 * h:], b[192 + 8 * h:]
        byte = ql[l + 32 * (k & 1)]
        lo = (byte >> 4) if k & 2 else (byte & 0xF)
        hi = (qh[l] >> (2 * k)) & 3
        s = sc[l // 16 + 2 * k]
        s = s - 256 if s > 127 else s
        return f16_scalar(b[208], b[209]) * s * ((lo | (hi << 4)) - 32)
    raise ValueError(qtype)


def check_dequantize(rng):
    """gguf.py's vectorised dequantization against scalar_value() on random blocks, and its
    quantizers' round trips within half a step."""
    fails = 0
    for qt in (gguf.T_Q4_0, gguf.T_Q8_0, gguf.T_Q4_K, gguf.T_Q6_K):
        block, nbytes = gguf.QTYPES[qt]
        raw = bytearray(rng.integers(0, 256, size=3 * nbytes, dtype=np.uint8).tobytes())
        # finite, modest scales: the f16 fields get exponents well inside range
        for k in range(3):
            b = k * nbytes
            for off in ((208,) if qt == gguf.T_Q6_K else (0, 2) if qt == gguf.T_Q4_K else (0,)):
                raw[b + off + 1] = 0x20 | (raw[b + off + 1] & 0x83)
        got = gguf.dequantize_raw(bytes(raw), qt)
        want = np.array([scalar_value(qt, raw[k * nbytes:(k + 1) * nbytes], i)
                         for k in range(3) for i in range(block)])
        err = float(np.max(np.abs(got - want) / (np.abs(want) + 1e-3)))
        ok = err < 1e-5
        fails += not ok
        print(f'{"ok" if ok else "FAIL"}  dequantize {gguf.QNAMES[qt]}: {3 * block} values '
              f'against the scalar transcription, max rel err {err:.1e}')
    x = rng.normal(0.0, 1.0, (8, 64)).astype(np.float32)
    x[0, :32] = 0.0  # an all-zero block: d = 0
    # q8_0 rounds to the nearest of +-127 steps: half a step. q4_0 rounds to the nearest of
    # 16 levels from -8 (the largest magnitude, exact) to +7 steps: a value at the other end,
    # +8 steps, is clamped to 7, a whole step off
    for qt, steps, most in ((gguf.T_Q8_0, 127, 0.5), (gguf.T_Q4_0, 8, 1.0)):
        y = gguf.dequantize_raw(gguf.quantize(x, qt), qt).reshape(x.shape)
        amax = np.abs(x.reshape(-1, 32)).max(axis=1, keepdims=True)
        # plus the f16 rounding of d over the whole range
        bound = amax / steps * (most + steps * 2.0 ** -10) + 1e-7
        err = np.abs((y - x).reshape(-1, 32))
        ok = bool(np.all(err <= bound)) and bool(np.all(y[0, :32] == 0))
        fails += not ok
        print(f'{"ok" if ok else "FAIL"}  quantize {gguf.QNAMES[qt]} round trip within {most} '
              f'step (max err {err.max():.3g})')
    return fails


def naive_logits(model, tokens):
    """The logits of every position by another road: one position and one head at a time,
    RoPE as complex multiplication, attention as explicit dot products and a softmax over the
    positions up to and including its own. Slow; tiny models only."""
    hp = model.hp
    hd, half = hp.head_dim, hp.n_rot // 2
    group = hp.n_head // hp.n_head_kv
    freqs = torch.tensor([hp.rope_base ** (-2.0 * j / hp.n_rot) for j in range(half)],
                         dtype=torch.float64)

    def rotate(vec, p):
        r, rest = vec[:hp.n_rot], vec[hp.n_rot:]
        if hp.rope_layout == 'adjacent':
            z = torch.complex(r[0::2].double(), r[1::2].double())
        else:
            z = torch.complex(r[:half].double(), r[half:].double())
        z = z * torch.polar(torch.ones(half, dtype=torch.float64), freqs * (p / hp.rope_scale))
        if hp.rope_layout == 'adjacent':
            r = torch.stack((z.real, z.imag), dim=1).reshape(-1)
        else:
            r = torch.cat((z.real, z.imag))
        return torch.cat((r.float(), rest))

    def norm(vec, w):
        return vec / torch.sqrt(torch.sum(vec * vec) / vec.numel() + hp.eps) * w

    def lin(w, vec, b=None):
        y = torch.mv(w, vec)
        return y if b is None else y + b

    xs = [model.tok_embd[t].clone() for t in tokens]
    for L in model.layers:
        ks, vs, qs = [], [], []
        for p, x in enumerate(xs):
            h = norm(x, L['attn_norm'])
            q = lin(L['wq'], h, L['bq']).view(hp.n_head, hd)
            k = lin(L['wk'], h, L['bk']).view(hp.n_head_kv, hd)
            qs.append(torch.stack([rotate(q[i], p) for i in range(hp.n_head)]))
            ks.append(torch.stack([rotate(k[i], p) for i in range(hp.n_head_kv)]))
            vs.append(lin(L['wv'], h, L['bv']).view(hp.n_head_kv, hd))
        new = []
        for p, x in enumerate(xs):
            heads = []
            for i in range(hp.n_head):
                kv = i // group
                s = torch.stack([torch.dot(qs[p][i], ks[t][kv]) for t in range(p + 1)])
                a = torch.exp(s / math.sqrt(hd) - torch.max(s / math.sqrt(hd)))
                a = a / a.sum()
                heads.append(sum(a[t] * vs[t][kv] for t in range(p + 1)))
            x = x + lin(L['wo'], torch.cat(heads))
            h = norm(x, L['ffn_norm'])
            g = lin(L['w_gate'], h)
            x = x + lin(L['w_down'], g / (1 + torch.exp(-g)) * lin(L['w_up'], h))
            new.append(x)
        xs = new
    return torch.stack([lin(model.output, norm(x, model.output_norm)) for x in xs])


def check_model(path, tokens):
    """Full-sequence logits against the KV-cache decode (1e-5) and against naive_logits()
    (1e-4: the order of the sums differs); greedy decode against argmax of a full forward."""
    model = llm_ref.Model(gguf.Reader(path))
    with torch.no_grad():
        full = model.forward(tokens)
        cache = model.new_cache()
        first = model.forward(tokens[:3], cache)
        steps = torch.cat([first] + [model.forward([t], cache) for t in tokens[3:]])
        naive = naive_logits(model, tokens)
        cont = model.greedy(tokens, 4)
        seq = list(tokens)
        for _ in range(4):
            seq.append(int(torch.argmax(model.forward(seq)[-1])))
    scale = float(full.abs().max())
    e_inc = float((full - steps).abs().max()) / scale
    e_naive = float((full - naive).abs().max()) / scale
    ok = e_inc <= 1e-5 and e_naive <= 1e-4 and cont == seq[len(tokens):] and \
        bool(torch.isfinite(full).all()) and float(full.std()) > 1e-3
    name = os.path.basename(path)
    print(f'{"ok" if ok else "FAIL"}  {name}: {len(tokens)} tokens, incremental {e_inc:.1e}, '
          f'naive {e_naive:.1e} (of max |logit| {scale:.3g}), greedy {cont}')
    return 0 if ok else 1


def check_committed():
    """The committed demo models (models/*.gguf) continue their recorded prompt as they did
    when tools/llm/train.py exported and checked them (models/NAME.expect.json)."""
    models = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'models')
    fails = 0
    for exp in sorted(glob.glob(os.path.join(models, '*.expect.json'))):
        path = exp[:-len('.expect.json')] + '.gguf'
        with open(exp) as f:
            want = json.load(f)
        with torch.no_grad():
            got = llm_ref.Model(gguf.Reader(path)).greedy(want['tokens'], len(want['greedy']))
        ok = got == want['greedy']
        fails += not ok
        print(f'{"ok" if ok else "FAIL"}  {os.path.basename(path)}: greedy continuation of '
              f'{want["prompt"]!r} as recorded ({len(got)} tokens)')
    return fails


def self_check():
    torch.set_num_threads(1)
    rng = np.random.default_rng(11)
    fails = check_dequantize(rng)
    tokens = [1, 270, 5, 77, 260, 2, 42, 250, 9, 128, 64, 3]
    with tempfile.TemporaryDirectory() as d:
        cases = [(arch, q, None) for arch in ('llama', 'qwen2')
                 for q in ('f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_K', 'q6_K')]
        cases.append(('llama', 'q8_0', 4.0))
        for seed, (arch, q, scale) in enumerate(cases):
            tag = f'-rope{scale:g}' if scale else ''
            path = make_test_model(os.path.join(d, f'{arch}-{q}{tag}.gguf'), arch, q, seed,
                                   rope_scale=scale)
            fails += check_model(path, tokens)
        # the RoPE layout and scaling are read from the file: changing them changes the logits
        a = llm_ref.Model(gguf.Reader(os.path.join(d, 'llama-q8_0.gguf')))
        b = llm_ref.Model(gguf.Reader(os.path.join(d, 'llama-q8_0.gguf')))
        b.hp.rope_layout = 'neox'
        with torch.no_grad():
            differ = float((a.forward(tokens) - b.forward(tokens)).abs().max())
        ok = differ > 1e-3
        fails += not ok
        print(f'{"ok" if ok else "FAIL"}  the RoPE layout matters: max logit change {differ:.3g}')
    fails += check_committed()
    print(f'llm_ref self-check: {"FAILED " + str(fails) if fails else "all passed"}')
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description='tiny random GGUF models; the self-check')
    ap.add_argument('out', nargs='?')
    ap.add_argument('--arch', default='llama', choices=sorted(SHAPES))
    ap.add_argument('--qtype', default='q8_0', choices=sorted(QTYPE_BY_NAME))
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--rope-scale', type=float)
    ap.add_argument('--self-check', action='store_true')
    args = ap.parse_args()
    if args.self_check:
        return self_check()
    if not args.out:
        ap.error('OUT or --self-check')
    make_test_model(args.out, args.arch, args.qtype, args.seed, args.rope_scale)
    return 0


if __name__ == '__main__':
    sys.exit(main())
