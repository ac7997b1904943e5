#!/usr/bin/python3
"""train.py - train gpool's small demo language model ("gpool-fortunes") on the CPU and export
it as a GGUF file that gpool's engine serves.

The corpus is Debian's `fortunes` package (/usr/share/games/fortunes, ~2.5 MB of quips, one
per '%'-separated record); the tokenizer a SentencePiece BPE trained on it (python3-
sentencepiece, byte fallback so any text encodes); the model a llama-architecture transformer
(RMSNorm, RoPE, grouped-query attention, SwiGLU) in python3-torch, trained on one CPU thread.

RoPE here rotates adjacent pairs (2j, 2j+1) of each head: that is the layout llama's GGUF files
use (llama.cpp's converter permutes Hugging Face's q/k weights into it), so the weights are
exported as trained, with no permutation, and any llama GGUF engine reads them right.

    nice -n 10 /usr/bin/python3 tools/llm/train.py --work build/llm-train \
        --out models/gpool-fortunes.gguf --q8-out models/gpool-fortunes-q8_0.gguf

Checkpoints go to WORK/ckpt.pt every --save-every steps; rerunning the same command resumes from
the last one. Training runs for a time budget (--minutes), not a step count: the machine's cores
are shared, so the steps a budget buys vary. tools/llm/README.md has the time taken, the loss
and samples.
"""
import argparse
import glob
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'tests', 'tools'))
import gguf  # noqa: E402

FORTUNES = '/usr/share/games/fortunes'
# pictures, not prose: they would teach the model to draw rather than write
SKIP = {'ascii-art'}


class Config:
    vocab = 2048
    dim = 256
    layers = 6
    heads = 8
    kv_heads = 4
    ff = 704
    ctx = 256
    rope_base = 10000.0
    eps = 1e-5


def read_corpus():
    """The fortunes, one string per record, in a fixed order."""
    records = []
    for path in sorted(glob.glob(os.path.join(FORTUNES, '*'))):
        name = os.path.basename(path)
        if '.' in name or name in SKIP or not os.path.isfile(path):
            continue
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        # a few records carry overstrike (x\bx) from the days of line printers
        text = text.replace('\b', '')
        for rec in text.split('\n%\n'):
            rec = rec.strip('%\n').rstrip()
            if rec.strip():
                records.append(rec)
    return records


def train_tokenizer(records, work, vocab):
    import sentencepiece as spm
    prefix = os.path.join(work, 'tok')
    if os.path.exists(prefix + '.model'):
        return spm.SentencePieceProcessor(model_file=prefix + '.model')
    txt = os.path.join(work, 'corpus.txt')
    with open(txt, 'w', encoding='utf-8') as f:
        for r in records:
            # SentencePiece trains on lines: a record's lines are its sentences
            f.write(r + '\n')
    # llama's tokenizer settings: BPE, byte fallback, identity normalisation (the engine does
    # none), whitespace kept as it is, a space prefix, unk/bos/eos = 0/1/2
    spm.SentencePieceTrainer.train(
        input=txt, model_prefix=prefix, model_type='bpe', vocab_size=vocab,
        byte_fallback=True, normalization_rule_name='identity', remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True, character_coverage=0.9995,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, minloglevel=2,
        max_sentence_length=8192)
    return spm.SentencePieceProcessor(model_file=prefix + '.model')


def encode_corpus(sp, records):
    """One stream of tokens: each record as BOS, its text (newlines included), EOS."""
    ids = []
    for r in records:
        ids.append(sp.bos_id())
        ids.extend(sp.encode(r))
        ids.append(sp.eos_id())
    return np.array(ids, dtype=np.int64)


def rope_tables(cfg, n):
    hd = cfg.dim // cfg.heads
    inv = 1.0 / (cfg.rope_base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope(x, cos, sin):
    """x: (B, T, H, hd); rotate each adjacent pair (2j, 2j+1) by angle pos * base^(-2j/hd)."""
    xr = x.float().reshape(*x.shape[:-1], -1, 2)
    a, b = xr[..., 0], xr[..., 1]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        hd = cfg.dim // cfg.heads
        self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.wq = nn.Linear(cfg.dim, cfg.heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.heads * hd, cfg.dim, bias=False)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ff, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ff, bias=False)
        self.w_down = nn.Linear(cfg.ff, cfg.dim, bias=False)

    def forward(self, x, cos, sin):
        cfg = self.cfg
        B, T, _ = x.shape
        hd = cfg.dim // cfg.heads
        h = self.attn_norm(x)
        q = rope(self.wq(h).view(B, T, cfg.heads, hd), cos, sin)
        k = rope(self.wk(h).view(B, T, cfg.kv_heads, hd), cos, sin)
        v = self.wv(h).view(B, T, cfg.kv_heads, hd)
        rep = cfg.heads // cfg.kv_heads
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True) \
            if hasattr(F, 'scaled_dot_product_attention') else \
            _attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.wo(o.transpose(1, 2).reshape(B, T, cfg.dim))
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


def _attention(q, k, v):
    T = q.shape[2]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    return torch.softmax(s.masked_fill(mask, float('-inf')), dim=-1) @ v


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        self.head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        cos, sin = rope_tables(cfg, cfg.ctx)
        self.register_buffer('cos', cos, persistent=False)
        self.register_buffer('sin', sin, persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02
                if name.endswith('wo.weight') or name.endswith('w_down.weight'):
                    std = 0.02 / math.sqrt(2 * cfg.layers)
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x, self.cos[:T], self.sin[:T])
        return self.head(self.norm(x))

    @torch.no_grad()
    def greedy(self, ids, n):
        """IDS continued by N greedy tokens (full recompute: short prompts only)."""
        ids = list(ids)
        for _ in range(n):
            logits = self(torch.tensor([ids[-self.cfg.ctx:]]))
            ids.append(int(logits[0, -1].argmax()))
        return ids[-n:]

    @torch.no_grad()
    def sample(self, ids, n, temp, eos, gen):
        ids = list(ids)
        out = []
        for _ in range(n):
            logits = self(torch.tensor([ids[-self.cfg.ctx:]]))[0, -1] / temp
            t = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))
            if t == eos:
                break
            ids.append(t)
            out.append(t)
        return out


def lr_at(step, frac, peak, warmup):
    """Linear warmup over WARMUP steps, then a cosine from PEAK down to PEAK/10 as FRAC (the
    share of the time budget spent) goes from 0 to 1. The schedule runs on time, not steps,
    because this machine's cores are shared: the steps a budget buys vary from run to run."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def evaluate(model, data, cfg, batches, batch):
    model.eval()
    g = torch.Generator().manual_seed(1234)
    tot = 0.0
    with torch.no_grad():
        for _ in range(batches):
            x, y = get_batch(data, cfg.ctx, batch, g)
            tot += F.cross_entropy(model(x).view(-1, cfg.vocab), y.view(-1)).item()
    model.train()
    return tot / batches


def get_batch(data, ctx, batch, gen):
    starts = torch.randint(0, len(data) - ctx - 1, (batch,), generator=gen)
    x = torch.stack([torch.from_numpy(data[s:s + ctx]) for s in starts.tolist()])
    y = torch.stack([torch.from_numpy(data[s + 1:s + ctx + 1]) for s in starts.tolist()])
    return x, y


def train(args, cfg, model, train_data, val_data):
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                            weight_decay=0.1)
    ckpt = os.path.join(args.work, 'ckpt.pt')
    step, elapsed, gen = 0, 0.0, torch.Generator().manual_seed(args.seed)
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state['model'])
        opt.load_state_dict(state['opt'])
        step, elapsed = state['step'], state['elapsed']
        gen.set_state(state['gen'])
        print(f'resumed at step {step} ({elapsed / 60:.1f} min trained)', flush=True)
    t0 = time.time() - elapsed
    avg = None
    budget = args.minutes * 60
    while time.time() - t0 < budget:
        lr = lr_at(step, (time.time() - t0) / budget, args.lr, args.warmup)
        for g in opt.param_groups:
            g['lr'] = lr
        x, y = get_batch(train_data, cfg.ctx, args.batch, gen)
        loss = F.cross_entropy(model(x).view(-1, cfg.vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        avg = loss.item() if avg is None else 0.95 * avg + 0.05 * loss.item()
        last = time.time() - t0 >= budget
        if step % args.log_every == 0 or last:
            print(f'step {step:5d}  loss {avg:.3f}  lr {lr:.2e}  {(time.time() - t0) / 60:.1f} min',
                  flush=True)
        if step % args.save_every == 0 or last:
            if args.eval_batches:
                val = evaluate(model, val_data, cfg, args.eval_batches, args.batch)
                print(f'step {step:5d}  val loss {val:.3f}', flush=True)
            torch.save({'model': model.state_dict(), 'opt': opt.state_dict(), 'step': step,
                        'elapsed': time.time() - t0, 'gen': gen.get_state()}, ckpt + '.tmp')
            os.replace(ckpt + '.tmp', ckpt)
    return step, time.time() - t0


def export(path, cfg, model, sp, ftype):
    """The model as a llama GGUF: weights in FTYPE (gguf.T_F16 or gguf.T_Q8_0), norms in f32."""
    w = gguf.Writer()
    hd = cfg.dim // cfg.heads
    w.add('general.architecture', 'llama')
    w.add('general.name', 'gpool-fortunes')
    w.add('general.file_type', {gguf.T_F16: 1, gguf.T_Q8_0: 7}[ftype], gguf.U32)
    w.add('llama.context_length', cfg.ctx, gguf.U32)
    w.add('llama.embedding_length', cfg.dim, gguf.U32)
    w.add('llama.block_count', cfg.layers, gguf.U32)
    w.add('llama.feed_forward_length', cfg.ff, gguf.U32)
    w.add('llama.attention.head_count', cfg.heads, gguf.U32)
    w.add('llama.attention.head_count_kv', cfg.kv_heads, gguf.U32)
    w.add('llama.rope.freq_base', float(cfg.rope_base), gguf.F32)
    w.add('llama.rope.dimension_count', hd, gguf.U32)
    w.add('llama.attention.layer_norm_rms_epsilon', float(cfg.eps), gguf.F32)
    w.add('llama.vocab_size', cfg.vocab, gguf.U32)
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(float(sp.get_score(i)))
        # llama.cpp's token types: 1 normal, 2 unknown, 3 control, 6 byte
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else
                     6 if sp.is_byte(i) else 1)
    w.add('tokenizer.ggml.model', 'llama')
    w.add('tokenizer.ggml.tokens', tokens, gguf.ARRAY, gguf.STRING)
    w.add('tokenizer.ggml.scores', scores, gguf.ARRAY, gguf.F32)
    w.add('tokenizer.ggml.token_type', types, gguf.ARRAY, gguf.I32)
    w.add('tokenizer.ggml.bos_token_id', sp.bos_id(), gguf.U32)
    w.add('tokenizer.ggml.eos_token_id', sp.eos_id(), gguf.U32)
    w.add('tokenizer.ggml.unknown_token_id', sp.unk_id(), gguf.U32)
    w.add('tokenizer.ggml.add_bos_token', True, gguf.BOOL)
    w.add('tokenizer.ggml.add_eos_token', False, gguf.BOOL)
    w.add('tokenizer.ggml.add_space_prefix', True, gguf.BOOL)

    def mat(name, t):
        a = t.detach().float().numpy()
        if ftype == gguf.T_F16:
            w.add_tensor(name, a.astype(np.float16))
        else:
            w.add_tensor(name, raw=gguf.quantize(a, ftype), qtype=ftype,
                         dims=tuple(reversed(a.shape)))

    def vec(name, t):
        w.add_tensor(name, t.detach().float().numpy())

    mat('token_embd.weight', model.embed.weight)
    for i, b in enumerate(model.blocks):
        p = f'blk.{i}.'
        vec(p + 'attn_norm.weight', b.attn_norm.weight)
        mat(p + 'attn_q.weight', b.wq.weight)
        mat(p + 'attn_k.weight', b.wk.weight)
        mat(p + 'attn_v.weight', b.wv.weight)
        mat(p + 'attn_output.weight', b.wo.weight)
        vec(p + 'ffn_norm.weight', b.ffn_norm.weight)
        mat(p + 'ffn_gate.weight', b.w_gate.weight)
        mat(p + 'ffn_up.weight', b.w_up.weight)
        mat(p + 'ffn_down.weight', b.w_down.weight)
    vec('output_norm.weight', model.norm.weight)
    mat('output.weight', model.head.weight)
    w.write(path)


def as_exported(model, path):
    """A copy of MODEL whose weights are those stored in the GGUF at PATH (dequantized): the
    model the file holds, to check an engine's greedy output against token for token."""
    import copy
    m = copy.deepcopy(model)
    r = gguf.Reader(path)
    names = {'token_embd.weight': m.embed.weight, 'output_norm.weight': m.norm.weight,
             'output.weight': m.head.weight}
    for i, b in enumerate(m.blocks):
        for gname, p in (('attn_norm', b.attn_norm.weight), ('attn_q', b.wq.weight),
                         ('attn_k', b.wk.weight), ('attn_v', b.wv.weight),
                         ('attn_output', b.wo.weight), ('ffn_norm', b.ffn_norm.weight),
                         ('ffn_gate', b.w_gate.weight), ('ffn_up', b.w_up.weight),
                         ('ffn_down', b.w_down.weight)):
            names[f'blk.{i}.{gname}.weight'] = p
    with torch.no_grad():
        for name, p in names.items():
            p.copy_(torch.from_numpy(gguf.dequantize(r.tensors[name]).reshape(p.shape)))
    return m


def check_export(path, model, sp, prompt, n):
    """llm_ref.py's greedy continuation of PROMPT from the file at PATH must equal this script's
    own model's (with the file's weights) token for token: proof that the file's layout (RoPE
    pairs, tensor orientation, metadata) is the one the model was trained in."""
    import llm_ref
    ids = [sp.bos_id()] + sp.encode(prompt)
    mine, ref_model = as_exported(model, path), llm_ref.Model(gguf.Reader(path))
    ours = mine.greedy(ids, n)
    ref = ref_model.greedy(ids, n)
    print(f'{os.path.basename(path)}: ours {ours}')
    print(f'{os.path.basename(path)}: ref  {ref}')
    if ours != ref:
        raise SystemExit(f'{path}: llm_ref.py greedy continuation differs from the model\'s')
    # and every position's logits, which a greedy run that falls into a loop checks little of
    with torch.no_grad():
        a = mine(torch.tensor([ids + ours]))[0]
        b = ref_model.forward(ids + ours)
    err = float((a - b).abs().max() / a.abs().max())
    print(f'{os.path.basename(path)}: logits of {len(ids) + n} positions within {err:.1e} '
          f'(relative to the largest)')
    if err > 1e-4:
        raise SystemExit(f'{path}: llm_ref.py logits differ from the model\'s by {err:.1e}')
    print(f'{os.path.basename(path)}: greedy continuation matches llm_ref.py ({n} tokens): '
          f'{prompt!r} -> {sp.decode(ours)!r}')
    # what the file must answer, for the tests of the reference and of the C engine
    with open(os.path.splitext(path)[0] + '.expect.json', 'w') as f:
        json.dump({'prompt': prompt, 'tokens': ids, 'greedy': ours,
                   'text': sp.decode(ours)}, f)
        f.write('\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--work', default='build/llm-train', help='tokenizer, checkpoints')
    ap.add_argument('--out', default='models/gpool-fortunes.gguf')
    ap.add_argument('--q8-out', default='', help='also a q8_0 copy here')
    ap.add_argument('--minutes', type=float, default=45, help='training time budget')
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--lr', type=float, default=2e-3)
    ap.add_argument('--warmup', type=int, default=30)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--log-every', type=int, default=20)
    ap.add_argument('--save-every', type=int, default=100)
    ap.add_argument('--eval-batches', type=int, default=8)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--layers', type=int, default=Config.layers)
    ap.add_argument('--dim', type=int, default=Config.dim)
    ap.add_argument('--ff', type=int, default=Config.ff)
    ap.add_argument('--export-only', action='store_true', help='export the last checkpoint')
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    cfg = Config()
    cfg.layers, cfg.dim, cfg.ff = args.layers, args.dim, args.ff
    os.makedirs(args.work, exist_ok=True)

    records = read_corpus()
    print(f'corpus: {len(records)} fortunes, {sum(len(r) for r in records)} characters')
    sp = train_tokenizer(records, args.work, cfg.vocab)
    # a fixed 2 % of the fortunes held out for the validation loss
    rnd = random.Random(7)
    held = set(rnd.sample(range(len(records)), len(records) // 50))
    train_data = encode_corpus(sp, [r for i, r in enumerate(records) if i not in held])
    val_data = encode_corpus(sp, [r for i, r in enumerate(records) if i in held])
    print(f'tokens: {len(train_data)} train, {len(val_data)} validation, '
          f'vocab {sp.get_piece_size()}')

    model = Model(cfg)
    print(f'model: {sum(p.numel() for p in model.parameters())} parameters', flush=True)
    if args.export_only:
        model.load_state_dict(torch.load(os.path.join(args.work, 'ckpt.pt'))['model'])
    else:
        steps, took = train(args, cfg, model, train_data, val_data)
        print(f'trained {steps} steps ({steps * args.batch * cfg.ctx} tokens) in '
              f'{took / 60:.1f} min', flush=True)
    model.eval()

    gen = torch.Generator().manual_seed(args.seed)
    for prompt in ('', 'The ', 'A computer ', 'Q: What'):
        ids = [sp.bos_id()] + (sp.encode(prompt) if prompt else [])
        out = model.sample(ids, 80, 0.8, sp.eos_id(), gen)
        print(f'--- sample ({prompt!r}):\n{sp.decode(sp.encode(prompt) + out)}')

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    export(args.out, cfg, model, sp, gguf.T_F16)
    check_export(args.out, model, sp, 'The trouble with computers is', 24)
    if args.q8_out:
        export(args.q8_out, cfg, model, sp, gguf.T_Q8_0)
        check_export(args.q8_out, model, sp, 'The trouble with computers is', 24)


if __name__ == '__main__':
    main()
