#!/usr/bin/env python3
"""torch_bench.py - the rival on the same card and the same weights: a llama-family model read
from a GGUF file (f16 weights) into PyTorch on CUDA, the forward pass a practitioner writes today
(f16 weights, a static KV cache preallocated for the context, scaled_dot_product_attention),
timed eager and under torch.compile (the default mode, and "reduce-overhead", which captures
CUDA graphs; --compile-batches says at which batch sizes, each a compile of its own). Prints
one line per measure, as llm-bench does:
  prefill N tokens: ... tokens/s
  decode batch B (eager|compile): ... tokens/s (... ms a step)
Usage: torch_bench.py MODEL.gguf [--prefill 512] [--prompt 128] [--decode 64] [--batches 1,8,32]
       [--no-compile]
Only llama-architecture files with f16/f32 tensors (a q4_0 file has no PyTorch counterpart).
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tests', 'tools'))
import gguf  # noqa: E402


def load(path, dev):
    r = gguf.Reader(path)
    arch = r.kv['general.architecture']
    hp = {k: r.kv.get(f'{arch}.{k}') for k in (
        'embedding_length', 'block_count', 'feed_forward_length', 'attention.head_count',
        'attention.head_count_kv', 'rope.freq_base', 'attention.layer_norm_rms_epsilon')}

    def t(name):
        ten = r.tensors[name]
        if ten.qtype == gguf.T_F16:
            a = np.frombuffer(ten.data, dtype=np.float16)
        elif ten.qtype == gguf.T_F32:
            a = np.frombuffer(ten.data, dtype=np.float32)
        else:
            raise SystemExit(f'{name}: {gguf.QNAMES[ten.qtype]}: torch_bench takes f16/f32 files')
        return torch.from_numpy(a.reshape(ten.shape()).copy()).to(dev, torch.float16)

    L = hp['block_count']
    layers = []
    for i in range(L):
        p = f'blk.{i}.'
        layers.append({k: t(p + k + '.weight') for k in (
            'attn_norm', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_norm', 'ffn_gate',
            'ffn_up', 'ffn_down')})
    emb = t('token_embd.weight')
    out = t('output.weight') if 'output.weight' in r.tensors else emb
    return hp, emb, layers, t('output_norm.weight'), out


class Model(torch.nn.Module):
    def __init__(self, hp, emb, layers, norm, out, max_batch, max_ctx):
        super().__init__()
        self.dim = hp['embedding_length']
        self.nh = hp['attention.head_count']
        self.nkv = hp['attention.head_count_kv'] or self.nh
        self.hd = self.dim // self.nh
        self.eps = hp['attention.layer_norm_rms_epsilon'] or 1e-5
        base = hp['rope.freq_base'] or 10000.0
        self.emb, self.layers, self.norm, self.out = emb, layers, norm, out
        dev = emb.device
        L = len(layers)
        self.k = torch.zeros(L, max_batch, self.nkv, max_ctx, self.hd, device=dev, dtype=torch.float16)
        self.v = torch.zeros_like(self.k)
        inv = 1.0 / (base ** (torch.arange(0, self.hd, 2, device=dev, dtype=torch.float32) / self.hd))
        ang = torch.arange(max_ctx, device=dev, dtype=torch.float32)[:, None] * inv[None, :]
        self.cos, self.sin = ang.cos(), ang.sin()

    def rms(self, x, w):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).half() * w

    def rope(self, x, pos):
        # GGUF's llama layout: adjacent pairs (2j, 2j+1) rotate together
        b, s, h, d = x.shape
        x2 = x.float().view(b, s, h, d // 2, 2)
        c = self.cos[pos][:, :, None, :]
        sn = self.sin[pos][:, :, None, :]
        y0 = x2[..., 0] * c - x2[..., 1] * sn
        y1 = x2[..., 0] * sn + x2[..., 1] * c
        return torch.stack((y0, y1), -1).view(b, s, h, d).half()

    def forward(self, tokens, start):
        """TOKENS [B, S] at positions start..start+S-1 (START a python int for eager, a 0-d
        tensor under compile): the last position's logits [B, V]."""
        B, S = tokens.shape
        pos = (start + torch.arange(S, device=tokens.device))[None, :].expand(B, S)
        x = self.emb[tokens]
        rep = self.nh // self.nkv
        for i, w in enumerate(self.layers):
            h = self.rms(x, w['attn_norm'])
            q = (h @ w['attn_q'].t()).view(B, S, self.nh, self.hd)
            k = (h @ w['attn_k'].t()).view(B, S, self.nkv, self.hd)
            v = (h @ w['attn_v'].t()).view(B, S, self.nkv, self.hd)
            q, k = self.rope(q, pos), self.rope(k, pos)
            self.k[i, :B, :, pos[0]] = k.transpose(1, 2)
            self.v[i, :B, :, pos[0]] = v.transpose(1, 2)
            # eager reads the cache up to the last position; compiled code reads all of it under a
            # mask, so every step has the same shapes (one graph: HF's StaticCache does the same)
            end = self.k.shape[3] if torch.is_tensor(start) else start + S
            kk = self.k[i, :B, :, :end].repeat_interleave(rep, 1)
            vv = self.v[i, :B, :, :end].repeat_interleave(rep, 1)
            mask = (torch.arange(end, device=x.device)[None, :] <= pos[0][:, None])
            a = F.scaled_dot_product_attention(q.transpose(1, 2), kk, vv, attn_mask=mask)
            x = x + a.transpose(1, 2).reshape(B, S, self.dim) @ w['attn_output'].t()
            h = self.rms(x, w['ffn_norm'])
            x = x + (F.silu(h @ w['ffn_gate'].t()) * (h @ w['ffn_up'].t())) @ w['ffn_down'].t()
        return self.rms(x[:, -1], self.norm) @ self.out.t()


def timed(fn):
    torch.cuda.synchronize()
    t = time.perf_counter()
    r = fn()
    torch.cuda.synchronize()
    return r, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('model')
    ap.add_argument('--prefill', type=int, default=512)
    ap.add_argument('--prompt', type=int, default=128)
    ap.add_argument('--decode', type=int, default=64)
    ap.add_argument('--batches', default='1,8,32')
    ap.add_argument('--no-compile', action='store_true')
    ap.add_argument('--compile-batches', default='1',
                    help='batches timed compiled (each is a compile of a minute or more)')
    a = ap.parse_args()
    batches = [int(x) for x in a.batches.split(',')]
    dev = torch.device('cuda')
    t0 = time.perf_counter()
    hp, emb, layers, norm, out = load(a.model, dev)
    max_ctx = max(a.prefill, a.prompt + a.decode + 8)
    m = Model(hp, emb, layers, norm, out, max(batches), max_ctx)
    print(f'torch {torch.__version__} on {torch.cuda.get_device_name()}: loaded in '
          f'{time.perf_counter() - t0:.1f} s')
    V = emb.shape[0]
    gen = torch.Generator(device='cpu').manual_seed(1)
    with torch.inference_mode():
        toks = torch.randint(1, V, (1, a.prefill), generator=gen).to(dev)
        best = min(timed(lambda: m(toks, 0))[1] for _ in range(4))
        print(f'prefill {a.prefill} tokens (eager): {best * 1e3:.1f} ms, {a.prefill / best:.0f} tokens/s')
        modes = [('eager', m.forward)]
        if not a.no_compile:
            modes.append(('compile', torch.compile(m.forward, dynamic=False)))
            modes.append(('compile+graphs', torch.compile(m.forward, mode='reduce-overhead', dynamic=False)))
        cbatches = [int(x) for x in a.compile_batches.split(',')]
        for name, fwd in modes:
            for B in (batches if name == 'eager' else cbatches):
                prompt = torch.randint(1, V, (B, a.prompt), generator=gen).to(dev)
                logits = m(prompt, 0)
                nxt = logits.argmax(-1, keepdim=True)
                warm = 3
                start_t = None
                for t in range(a.decode + warm):
                    if t == warm:
                        torch.cuda.synchronize()
                        start_t = time.perf_counter()
                    # the position as a tensor under compile (one graph for every step)
                    pos = a.prompt + t if name == 'eager' else torch.tensor(a.prompt + t, device=dev)
                    nxt = fwd(nxt, pos).argmax(-1, keepdim=True)
                torch.cuda.synchronize()
                el = time.perf_counter() - start_t
                print(f'decode batch {B} ({name}): {B * a.decode / el:.0f} tokens/s '
                      f'({el / a.decode * 1e3:.2f} ms a step)', flush=True)


if __name__ == '__main__':
    main()
