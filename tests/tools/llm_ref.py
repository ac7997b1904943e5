#!/usr/bin/python3
"""llm_ref.py - the reference forward pass of a GGUF language model, in PyTorch (Debian's
python3-torch, f32 on the CPU), that gpool's C engine (llm/) is checked against.

    llm_ref.py MODEL.gguf --tokens 1,2,3 [--out FILE]   logits of every position, raw
                                                        little-endian f32 (ntok x n_vocab), to
                                                        FILE; without --out, each position's
                                                        argmax, comma-separated
    llm_ref.py MODEL.gguf --tokens 1,2,3 --greedy N     the N greedy tokens that follow,
                                                        comma-separated
    llm_ref.py --self-check                             llm_mkref.py's tiny models through two
                                                        formulations that must agree

Architectures: "llama" (Llama 2/3, Mistral, TinyLlama) and "qwen2" (q/k/v biases, the token
embedding as the output head when output.weight is absent). Grouped-query attention, RMSNorm,
RoPE (freq_base, dimension_count, linear scaling), SwiGLU. Written to be read and trusted, not
to be fast: every weight is dequantized to f32 by gguf.py, then plain torch ops.

RoPE layouts: llama's GGUF files rotate adjacent pairs (2j, 2j+1) of each head (llama.cpp's
converter permutes q/k so that this is right); qwen2's rotate (j, j + n_rot/2) ("NEOX"). Pair j
turns by pos / scale * freq_base^(-2j / n_rot); dimensions past n_rot are left as they are.
"""
import argparse
import math
import os
import sys

try:
    import torch
except ImportError:
    print('llm_ref: no torch here (Debian: python3-torch; run with /usr/bin/python3)',
          file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

# architecture -> RoPE pairs: 'adjacent' (2j, 2j+1) or 'neox' (j, j + n_rot/2)
ROPE_LAYOUT = {'llama': 'adjacent', 'qwen2': 'neox'}


class Hparams:
    """The shape of the model from the file's ARCH.* keys."""

    def __init__(self, kv):
        arch = kv['general.architecture']
        if arch not in ROPE_LAYOUT:
            raise ValueError(f'architecture {arch!r} is not one of {sorted(ROPE_LAYOUT)}')

        def key(name, default=None):
            v = kv.get(f'{arch}.{name}', default)
            if v is None:
                raise ValueError(f'the file has no {arch}.{name}')
            return v

        self.arch = arch
        self.n_embd = int(key('embedding_length'))
        self.n_layer = int(key('block_count'))
        self.n_ff = int(key('feed_forward_length'))
        self.n_head = int(key('attention.head_count'))
        self.n_head_kv = int(key('attention.head_count_kv', self.n_head))
        # a head is n_embd / n_head wide unless the file says otherwise (Mistral Nemo)
        self.head_dim = int(key('attention.key_length', self.n_embd // self.n_head))
        if int(key('attention.value_length', self.head_dim)) != self.head_dim:
            raise ValueError('keys and values of different widths are not supported')
        self.eps = float(key('attention.layer_norm_rms_epsilon'))
        self.rope_base = float(key('rope.freq_base', 10000.0))
        self.n_rot = int(key('rope.dimension_count', self.head_dim))
        self.rope_layout = ROPE_LAYOUT[arch]
        # linear scaling divides the position by the factor (ggml's freq_scale = 1 / factor)
        # (older files say rope.scale_linear)
        self.rope_scale = float(key('rope.scale_linear', 1.0))
        stype = kv.get(f'{arch}.rope.scaling.type', 'none')
        if stype == 'linear':
            self.rope_scale = float(key('rope.scaling.factor'))
        elif stype not in ('none', ''):
            raise ValueError(f'rope scaling {stype!r} is not supported (linear only)')
        if self.n_head % self.n_head_kv or self.n_rot % 2 or self.n_rot > self.head_dim:
            raise ValueError('inconsistent head counts or rope dimension')


class Model:
    """A GGUF model (a gguf.Reader) with its weights as f32 torch tensors."""

    def __init__(self, reader):
        self.hp = hp = Hparams(reader.kv)
        t = reader.tensors

        def w(name, required=True):
            if name not in t:
                if required:
                    raise ValueError(f'the file has no tensor {name}')
                return None
            return torch.from_numpy(gguf.dequantize(t[name]).copy())

        # numpy shapes: a matrix with GGUF dims (in, out) is (out, in), as torch's Linear
        self.tok_embd = w('token_embd.weight')
        self.n_vocab = self.tok_embd.shape[0]
        out = w('output.weight', required=False)
        self.output = out if out is not None else self.tok_embd
        self.output_norm = w('output_norm.weight')
        self.layers = []
        for i in range(hp.n_layer):
            p = f'blk.{i}.'
            self.layers.append({
                'attn_norm': w(p + 'attn_norm.weight'),
                'wq': w(p + 'attn_q.weight'), 'bq': w(p + 'attn_q.bias', False),
                'wk': w(p + 'attn_k.weight'), 'bk': w(p + 'attn_k.bias', False),
                'wv': w(p + 'attn_v.weight'), 'bv': w(p + 'attn_v.bias', False),
                'wo': w(p + 'attn_output.weight'),
                'ffn_norm': w(p + 'ffn_norm.weight'),
                'w_gate': w(p + 'ffn_gate.weight'),
                'w_up': w(p + 'ffn_up.weight'),
                'w_down': w(p + 'ffn_down.weight'),
            })

    # -- the main path: a chunk of tokens after the KV cache's ---------------------------------

    def new_cache(self):
        """Per layer, the keys and values so far (after RoPE): (n_head_kv, n, head_dim) each."""
        hp = self.hp
        empty = torch.zeros(hp.n_head_kv, 0, hp.head_dim)
        return [[empty, empty] for _ in range(hp.n_layer)]

    def forward(self, tokens, cache=None):
        """Logits (len(tokens), n_vocab) of TOKENS placed after the CACHE's positions (none when
        CACHE is None); CACHE is extended with their keys and values."""
        hp = self.hp
        if cache is None:
            cache = self.new_cache()
        start = cache[0][0].shape[1]
        n = len(tokens)
        pos = torch.arange(start, start + n, dtype=torch.float64)
        cos, sin = rope_angles(hp, pos)
        x = self.tok_embd[torch.tensor(tokens, dtype=torch.long)]
        for L, c in zip(self.layers, cache):
            h = rms_norm(x, L['attn_norm'], hp.eps)
            q = linear(h, L['wq'], L['bq']).view(n, hp.n_head, hp.head_dim).transpose(0, 1)
            k = linear(h, L['wk'], L['bk']).view(n, hp.n_head_kv, hp.head_dim).transpose(0, 1)
            v = linear(h, L['wv'], L['bv']).view(n, hp.n_head_kv, hp.head_dim).transpose(0, 1)
            q = rope(q, cos, sin, hp)
            k = rope(k, cos, sin, hp)
            c[0] = torch.cat((c[0], k), dim=1)
            c[1] = torch.cat((c[1], v), dim=1)
            o = attention(q, c[0], c[1], start, hp)            # (n_head, n, head_dim)
            x = x + linear(o.transpose(0, 1).reshape(n, hp.n_head * hp.head_dim), L['wo'])
            h = rms_norm(x, L['ffn_norm'], hp.eps)
            x = x + linear(torch.nn.functional.silu(linear(h, L['w_gate'])) *
                           linear(h, L['w_up']), L['w_down'])
        return linear(rms_norm(x, self.output_norm, hp.eps), self.output)

    def greedy(self, tokens, n):
        """The N tokens that follow TOKENS, each the argmax (the lowest id on a tie)."""
        cache = self.new_cache()
        logits = self.forward(list(tokens), cache)
        out = []
        for _ in range(n):
            nxt = int(torch.argmax(logits[-1]))
            out.append(nxt)
            logits = self.forward([nxt], cache)
        return out


def linear(x, w, b=None):
    y = x @ w.t()
    return y + b if b is not None else y


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


def rope_angles(hp, pos):
    """cos and sin (n, n_rot/2) of pair j at each position: (pos / scale) * base^(-2j/n_rot),
    computed in f64 and rounded once to f32."""
    j = torch.arange(0, hp.n_rot // 2, dtype=torch.float64)
    inv_freq = hp.rope_base ** (-2.0 * j / hp.n_rot)
    ang = (pos / hp.rope_scale)[:, None] * inv_freq[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope(x, cos, sin, hp):
    """X (heads, n, head_dim) with each pair turned by its angle, in the file's layout."""
    half = hp.n_rot // 2
    rot, rest = x[..., :hp.n_rot], x[..., hp.n_rot:]
    if hp.rope_layout == 'adjacent':
        a, b = rot[..., 0::2], rot[..., 1::2]
    else:
        a, b = rot[..., :half], rot[..., half:]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if hp.rope_layout == 'adjacent':
        rot = torch.stack((ra, rb), dim=-1).flatten(-2)
    else:
        rot = torch.cat((ra, rb), dim=-1)
    return torch.cat((rot, rest), dim=-1)


def attention(q, k, v, start, hp):
    """Causal attention of the queries Q (n_head, n, hd) at positions START.. over all keys and
    values K, V (n_head_kv, start + n, hd): query head h reads kv head h / (n_head / n_head_kv)."""
    group = hp.n_head // hp.n_head_kv
    k = k.repeat_interleave(group, dim=0)
    v = v.repeat_interleave(group, dim=0)
    n, total = q.shape[1], k.shape[1]
    scores = (q @ k.transpose(1, 2)) / math.sqrt(hp.head_dim)
    qpos = torch.arange(start, start + n)[:, None]
    kpos = torch.arange(total)[None, :]
    scores = scores.masked_fill(kpos > qpos, float('-inf'))
    return torch.softmax(scores, dim=-1) @ v


# -- the command line ----------------------------------------------------------------------------

def parse_tokens(s):
    try:
        ids = [int(x) for x in s.split(',') if x.strip()]
    except ValueError:
        raise SystemExit(f'llm_ref: invalid token list {s!r}')
    if not ids:
        raise SystemExit('llm_ref: no tokens')
    return ids


def main(argv=None):
    ap = argparse.ArgumentParser(description='reference forward pass of a GGUF model')
    ap.add_argument('model', nargs='?')
    ap.add_argument('--tokens', help='comma-separated token ids')
    ap.add_argument('--out', help='write the logits (ntok x n_vocab f32, little-endian) here')
    ap.add_argument('--greedy', type=int, default=0, metavar='N',
                    help='print the N greedy tokens after --tokens')
    ap.add_argument('--self-check', action='store_true',
                    help='check this file against independent formulations on tiny models')
    ap.add_argument('--threads', type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.self_check:
        import llm_mkref
        return llm_mkref.self_check()
    if not args.model or not args.tokens:
        ap.error('MODEL and --tokens are needed')
    ids = parse_tokens(args.tokens)
    try:
        model = Model(gguf.Reader(args.model))
    except (OSError, ValueError) as e:
        raise SystemExit(f'llm_ref: {args.model}: {e}')
    bad = [t for t in ids if not 0 <= t < model.n_vocab]
    if bad:
        raise SystemExit(f'llm_ref: token {bad[0]} is outside the vocabulary ({model.n_vocab})')
    with torch.no_grad():
        if args.greedy:
            print(','.join(str(t) for t in model.greedy(ids, args.greedy)))
            if args.out:
                logits = model.forward(ids)
        else:
            logits = model.forward(ids)
        if args.out:
            with open(args.out, 'wb') as f:
                f.write(logits.numpy().astype('<f4').tobytes())
        elif not args.greedy:
            print(','.join(str(int(t)) for t in logits.argmax(dim=-1)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
