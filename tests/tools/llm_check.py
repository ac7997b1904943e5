#!/usr/bin/python3
"""llm_check.py - the C forward pass (llm/, the kernels' cpu backend) against the PyTorch
reference (tests/tools/llm_ref.py) on the same GGUF files, within the bounds docs/llm.md states.

  llm_check.py BIN_DIR [--model FILE ...] [--only] [--keep DIR]

BIN_DIR holds gllm-mkmodel and llm_logits. For tiny random-weight models of llama and qwen2
shapes (grouped-query attention in both; qwen2 with q/k/v biases and a tied head) in every
weight type, and for each --model (without one: models/gpool-fortunes.gguf and its q8_0 copy,
the trained demo model, when they exist; --only: the --model files alone):
  1. logits of a 24-token prompt in one prefill batch against the reference's (f32 KV cache,
     and an f16 one with its own bound)
  2. the same tokens one decode step at a time, and in prefill chunks of 5, against (1)
  3. three sequences in one batch (prefill, then a decode step) against each alone
  4. 32 greedy tokens identical, token for token, to the reference's
  5. four prompts at once through the engine and the local executor, each answer's text that of
     its greedy tokens alone (models with a tokenizer), also in a KV cache too small for all four
     (the engine preempts and feeds sequences again)
and the same on models written here with sharp attention, multi-query, partial RoPE and linear
scaling (SHARP), with also a 300-token prompt (logits, decode steps, chunks of 37).
Exit 0 if all pass, 1 if one fails, 77 if /usr/bin/python3's torch or llm_ref.py is missing.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gguf  # noqa: E402

# bounds, each relative to the largest |logit| of the reference (docs/llm.md: measured figures)
BOUND_REF = 2e-5        # C (f32 KV cache) against PyTorch
BOUND_REF_F16KV = 1e-2  # C with an f16 KV cache against PyTorch
BOUND_SELF = 1e-5     # decode steps, chunks, batches against one prefill / alone
NTOK = 24
NTOK_LONG = 300
NGREEDY = 32

# written here by gguf.py, for what the random shapes lack: weights large enough that attention
# is sharp (deviation 0.25), one kv head for four (multi-query), RoPE on half of each head (a
# rope.dimension_count below head_dim) with linear scaling; no tokenizer (no engine check)
SHARP = [('sharp-llama', 'llama', 'f32'), ('sharp-qwen2', 'qwen2', 'f32'),
         ('sharp-llama', 'llama', 'f16')]

CASES = [('test-llama', t) for t in ('f32', 'f16', 'bf16', 'q8_0', 'q4_0')] + \
        [('test-qwen2', t) for t in ('f32', 'f16', 'bf16', 'q8_0', 'q4_0')] + \
        [('test-kquant', t) for t in ('q4_K', 'q6_K')]


def write_sharp(path, arch, wtype):
    dim, n_head, n_kv, n_ff, n_vocab, n_layer = 64, 4, 1, 96, 64, 3
    hd = dim // n_head
    rng = np.random.default_rng(11)
    w = gguf.Writer()
    w.add('general.architecture', arch)
    for k, v in (('context_length', 256), ('embedding_length', dim), ('block_count', n_layer),
                 ('feed_forward_length', n_ff), ('attention.head_count', n_head),
                 ('attention.head_count_kv', n_kv), ('rope.dimension_count', hd // 2)):
        w.add(f'{arch}.{k}', v)
    w.add(f'{arch}.rope.freq_base', 5000.0)
    w.add(f'{arch}.attention.layer_norm_rms_epsilon', 1e-5)
    w.add(f'{arch}.rope.scaling.type', 'linear')
    w.add(f'{arch}.rope.scaling.factor', 2.0)
    dt = np.float16 if wtype == 'f16' else np.float32

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) * 0.25).astype(dt)

    def vec(n, base):
        return (base + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w.add_tensor('token_embd.weight', mat(n_vocab, dim))
    for l in range(n_layer):
        p = f'blk.{l}.'
        w.add_tensor(p + 'attn_norm.weight', vec(dim, 1.0))
        w.add_tensor(p + 'attn_q.weight', mat(dim, dim))
        w.add_tensor(p + 'attn_k.weight', mat(n_kv * hd, dim))
        w.add_tensor(p + 'attn_v.weight', mat(n_kv * hd, dim))
        if arch == 'qwen2':
            w.add_tensor(p + 'attn_q.bias', vec(dim, 0.0))
            w.add_tensor(p + 'attn_k.bias', vec(n_kv * hd, 0.0))
            w.add_tensor(p + 'attn_v.bias', vec(n_kv * hd, 0.0))
        w.add_tensor(p + 'attn_output.weight', mat(dim, dim))
        w.add_tensor(p + 'ffn_norm.weight', vec(dim, 1.0))
        w.add_tensor(p + 'ffn_gate.weight', mat(n_ff, dim))
        w.add_tensor(p + 'ffn_up.weight', mat(n_ff, dim))
        w.add_tensor(p + 'ffn_down.weight', mat(dim, n_ff))
    w.add_tensor('output_norm.weight', vec(dim, 1.0))
    if arch == 'llama':
        w.add_tensor('output.weight', mat(n_vocab, dim))
    w.write(path)


# LLM_CHECK_BACKEND=cuda (hip, auto): the C side on that backend (the card's bounds: see
# docs/kernels.md; the same script, the same bounds relative to max |logit|)
BACKEND = os.environ.get('LLM_CHECK_BACKEND', 'cpu')


def run(cmd):
    if os.path.basename(cmd[0]) == 'llm_logits':
        cmd = cmd + ['--backend', BACKEND]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)}: exit {p.returncode}: {p.stderr.strip()}')
    return p.stdout


def logits(path, n_vocab):
    return np.fromfile(path, dtype=np.float32).reshape(-1, n_vocab)


class Checker:
    def __init__(self, bindir, tmp):
        self.bin, self.tmp, self.failed, self.lines = bindir, tmp, 0, []

    def report(self, name, ok, text):
        self.lines.append(f'{"ok  " if ok else "FAIL"} {name}: {text}')
        print(self.lines[-1], flush=True)
        self.failed += not ok

    def rel(self, name, a, ref, bound):
        scale = float(np.abs(ref).max())
        d = float(np.abs(a.astype(np.float64) - ref).max()) if a.shape == ref.shape else np.inf
        if not np.isfinite(d):
            d = np.inf
        self.report(name, d <= bound * scale,
                    f'max diff {d:.3g} = {d / scale:.3g} of max |logit| {scale:.3g} '
                    f'(bound {bound:g})')

    def expect(self, name, path):
        """MODEL.expect.json beside a trained model: the greedy tokens its trainer recorded."""
        ej = os.path.splitext(path)[0] + '.expect.json'
        if not os.path.exists(ej):
            return
        with open(ej) as f:
            e = json.load(f)
        ll = os.path.join(self.bin, 'llm_logits')
        got = [int(x) for x in run([ll, path, '--tokens', ','.join(map(str, e['tokens'])),
                                    '--greedy', str(len(e['greedy']))]).strip().split(',')]
        self.report(f'{name} greedy of {os.path.basename(ej)}', got == e['greedy'],
                    f'{len(got)} tokens ' + ('identical' if got == e['greedy'] else
                                             f'differ: C {got} recorded {e["greedy"]}'))

    def long(self, name, path):
        """A 300-token prompt (19 blocks of the cache, many attention tiles): logits against
        the reference, and one token a step and chunks of 37 against one prefill."""
        r = gguf.Reader(path)
        n_vocab = r.tensors['token_embd.weight'].dims[1]
        rng = np.random.default_rng(8)
        toks = ','.join(str(int(t)) for t in rng.integers(3, n_vocab, NTOK_LONG))
        ll = os.path.join(self.bin, 'llm_logits')
        out = lambda tag: os.path.join(self.tmp, f'{tag}.bin')  # noqa: E731
        run([sys.executable, os.path.join(HERE, 'llm_ref.py'), path, '--tokens', toks,
             '--out', out('ref')])
        ref = logits(out('ref'), n_vocab).astype(np.float64)
        run([ll, path, '--tokens', toks, '--out', out('c')])
        c = logits(out('c'), n_vocab)
        self.rel(f'{name} {NTOK_LONG} tokens', c, ref, BOUND_REF)
        for mode in ('decode', 'chunk=37'):
            run([ll, path, '--tokens', toks, '--out', out('m'), '--mode', mode])
            self.rel(f'{name} {NTOK_LONG} tokens, {mode} = prefill', logits(out('m'), n_vocab),
                     c.astype(np.float64), BOUND_SELF)

    def model(self, name, path):
        r = gguf.Reader(path)
        n_vocab = r.tensors['token_embd.weight'].dims[1]
        rng = np.random.default_rng(7)
        toks = ','.join(str(int(t)) for t in rng.integers(3, n_vocab, NTOK))
        ll = os.path.join(self.bin, 'llm_logits')
        out = lambda tag: os.path.join(self.tmp, f'{tag}.bin')  # noqa: E731
        # one run of the reference for both (torch takes seconds to start)
        want = [int(x) for x in re.findall(r'-?\d+', run(
            [sys.executable, os.path.join(HERE, 'llm_ref.py'), path, '--tokens', toks,
             '--out', out('ref'), '--greedy', str(NGREEDY)]))]
        ref = logits(out('ref'), n_vocab).astype(np.float64)
        run([ll, path, '--tokens', toks, '--out', out('c')])
        c = logits(out('c'), n_vocab)
        self.rel(f'{name} logits', c, ref, BOUND_REF)
        run([ll, path, '--tokens', toks, '--out', out('c16'), '--kv', 'f16'])
        self.rel(f'{name} logits, f16 kv', logits(out('c16'), n_vocab), ref, BOUND_REF_F16KV)
        for mode in ('decode', 'chunk=5'):
            run([ll, path, '--tokens', toks, '--out', out('m'), '--mode', mode])
            self.rel(f'{name} {mode} = prefill', logits(out('m'), n_vocab), c.astype(np.float64),
                     BOUND_SELF)
        m = re.search(r'maxdiff (\S+) maxabs (\S+)', run([ll, path, '--tokens', toks,
                                                           '--batch', '3']))
        d, scale = float(m.group(1)), float(m.group(2))
        self.report(f'{name} batch of 3 = alone', d <= BOUND_SELF * scale,
                    f'max diff {d:.3g} of max |logit| {scale:.3g}')
        got = [int(x) for x in run([ll, path, '--tokens', toks, '--greedy',
                                    str(NGREEDY)]).strip().split(',')]
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        ok = got == want
        self.report(f'{name} greedy {NGREEDY}', ok, 'identical' if ok else
                    f'differs at {first}: C {got[first] if first is not None else got} '
                    f'ref {want[first] if first is not None else want}')
        if 'tokenizer.ggml.tokens' not in r.kv:
            return
        prompt = ','.join(toks.split(',')[:8])
        eng = run([ll, path, '--tokens', prompt, '--engine', '4', '--greedy', str(NGREEDY)]).strip()
        self.report(f'{name} engine, 4 at once', eng.startswith('engine ok'), eng)
        # 6 blocks of 16 for 4 answers of 40 tokens: sequences are preempted and fed again
        eng = run([ll, path, '--tokens', prompt, '--engine', '4', '--greedy', str(NGREEDY),
                   '--kv-blocks', '6']).strip()
        m = re.match(r'engine ok, (\d+) refusals', eng)
        self.report(f'{name} engine, 4 at once in a small cache', bool(m and int(m.group(1)) > 0),
                    eng)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    bindir, models, keep, only = args[0], [], None, False
    i = 1
    while i < len(args):
        if args[i] == '--model':
            models.append(args[i + 1])
        elif args[i] == '--keep':
            keep = args[i + 1]
        elif args[i] == '--only':  # the --model files alone, not the built-in cases
            only = True
            i -= 1
        i += 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print('llm_check: skipped: no torch for /usr/bin/python3 (python3-torch)')
        return 77
    if not os.path.exists(os.path.join(HERE, 'llm_ref.py')):
        print('llm_check: skipped: tests/tools/llm_ref.py is missing')
        return 77
    if not models:  # the trained demo model, both files
        models = [p for p in (os.path.join(ROOT, 'models', m) for m in
                              ('gpool-fortunes.gguf', 'gpool-fortunes-q8_0.gguf'))
                  if os.path.exists(p)]
    tmp = keep or tempfile.mkdtemp(prefix='llm_check.')
    os.makedirs(tmp, exist_ok=True)
    ck = Checker(bindir, tmp)
    for shape, wtype in [] if only else CASES:
        path = os.path.join(tmp, f'{shape}-{wtype}.gguf')
        run([os.path.join(bindir, 'gllm-mkmodel'), '--shape', shape, '--type', wtype, path])
        try:
            ck.model(f'{shape} {wtype}', path)
        except RuntimeError as e:
            ck.report(f'{shape} {wtype}', False, str(e))
    for name, arch, wtype in [] if only else SHARP:
        path = os.path.join(tmp, f'{name}-{wtype}.gguf')
        write_sharp(path, arch, wtype)
        try:
            ck.model(f'{name} {wtype}', path)
            ck.long(f'{name} {wtype}', path)
        except RuntimeError as e:
            ck.report(f'{name} {wtype}', False, str(e))
    for path in models:
        try:
            ck.model(os.path.basename(path), path)
            ck.expect(os.path.basename(path), path)
        except RuntimeError as e:
            ck.report(os.path.basename(path), False, str(e))
    print(f'llm_check: {len(ck.lines) - ck.failed} of {len(ck.lines)} checks passed')
    return 1 if ck.failed else 0


if __name__ == '__main__':
    sys.exit(main())
