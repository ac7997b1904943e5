#!/usr/bin/python3
"""tok_compare.py - the C tokenizer (llm/tokenizer.c, through tests/tools/tok_encode.c) against
two independent encoders of the same vocabularies, line by line, every id identical:

  SentencePiece (Debian's python3-sentencepiece): a BPE model trained here on Debian's license
  texts (/usr/share/common-licenses) with byte fallback and llama's normalization (identity, no
  whitespace folding, a dummy prefix), turned into GGUF tokenizer metadata with gguf.py;

  byte-level BPE: a vocabulary and merges trained here (train_bpe, GPT-2's byte map) on the same
  texts, encoded by the textbook GPT-2 loop (encode_bpe) after Python's regex module splits the
  text by llama.cpp's own patterns for llama-bpe, qwen2 and gpt2.

The lines: every line of the corpus and of a few fortunes files (package fortunes, where
installed), and written ones: accented, CJK, emoji, leading, trailing and repeated spaces,
newlines inside, tabs, digits, empty. Each decoded text must equal the line (round trip).
Exit 77 when python3-sentencepiece or python3-regex is missing.

  tok_compare.py TOK_ENCODE_BINARY
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import regex
    import sentencepiece as spm
    import gguf
except ImportError as e:
    print(f'tok_compare: skipped: {e} (apt-get install python3-sentencepiece python3-regex '
          'python3-numpy)')
    sys.exit(77)

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PATTERNS = {
    'llama-bpe': LLAMA3,
    'qwen2': LLAMA3.replace(r'\p{N}{1,3}', r'\p{N}'),
    'default': r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
}
SPECIALS = ['<|begin_of_text|>', '<|end_of_text|>', '<|im_start|>', '<|im_end|>']

WRITTEN = [
    '', ' ', '  ', '\n', 'a', 'Hello world', ' Hello world', 'Hello world ', '  two  spaces  ',
    'tab\tseparated\tvalues', 'line one\nline two\n\nline four', '\n\nleading newlines',
    'trailing newlines\n\n', 'caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, na\u00efve fa\u00e7ade',
    '\u00c0 bient\u00f4t, \u00e7a va? \u00dcber Stra\u00dfe \u00f1and\u00fa',
    '\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002',
    '\u4e2d\u6587\u6d4b\u8bd5 mixed with English', '\ud55c\uad6d\uc5b4 \ud14c\uc2a4\ud2b8',
    'emoji \U0001f600\U0001f355 and \u2764\ufe0f and \U0001f468\u200d\U0001f469\u200d\U0001f467',
    'digits 1234567890 3.14159 1,000,000 2024-12-07', "don't won't I'LL we've they'RE it's",
    'Symbols: @#$%^&*()_+-=[]{}|;:\'",.<>/?`~', 'x' * 300, '   ', ' \n ', 'a\r\nb',
    '\u0394\u03b5\u03bb\u03c4\u03b1 \u0410\u0411\u0412 \u0627\u0644\u0639\u0631\u0628\u064a\u0629',
    '\u00bd \u00b2 \u2167 \u0663\u0664 numbers of other kinds', 'U+2581 itself: \u2581x',
    'nbsp\u00a0here and\u3000ideographic space', 'GNU GENERAL PUBLIC LICENSE Version 3',
]


def corpus():
    text = []
    for path in sorted(glob.glob('/usr/share/common-licenses/*')):
        if os.path.isfile(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                text.append(f.read())
    return '\n'.join(text)


def fortune_lines():
    lines = []
    for name in ('computers', 'science', 'linux', 'wisdom'):
        path = f'/usr/share/games/fortunes/{name}'
        if os.path.isfile(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                lines += f.read().split('\n')
    return lines


def run_c(tool, model, texts, flags=0):
    """The C tokenizer's ids and decoded text of each text."""
    with tempfile.NamedTemporaryFile(suffix='.rec', delete=False) as f:
        for t in texts:
            b = t.encode('utf-8')
            f.write(f'{flags} {len(b)}\n'.encode() + b)
        rec = f.name
    try:
        out = subprocess.run([tool, model, rec], check=True, capture_output=True).stdout
    finally:
        os.unlink(rec)
    lines = out.decode().split('\n')
    res = []
    for i in range(len(texts)):
        ids = [int(x) for x in lines[2 * i].split()]
        res.append((ids, bytes.fromhex(lines[2 * i + 1])))
    return res


def compare(name, texts, want, got, skip_roundtrip=False, decoded=None):
    """WANT: the expected ids of each text; the decoded text must be the text itself, or
    DECODED's where given (SentencePiece's own decoding: U+2581 in a text comes back a space)."""
    bad = 0
    for k, (t, w, (ids, dec)) in enumerate(zip(texts, want, got)):
        expect = decoded[k] if decoded else t
        if ids != w:
            bad += 1
            if bad <= 5:
                print(f'{name}: {t!r}\n  expected {w}\n  got      {ids}')
        elif not skip_roundtrip and dec != expect.encode('utf-8'):
            bad += 1
            if bad <= 5:
                print(f'{name}: {t!r} decodes to {dec!r}')
    print(f'{name}: {len(texts) - bad} of {len(texts)} lines identical')
    return bad


# ---- SentencePiece ----

def spm_model(work, text):
    src = os.path.join(work, 'corpus.txt')
    with open(src, 'w', encoding='utf-8') as f:
        f.write('\n'.join(line for line in text.split('\n') if line.strip()))
    prefix = os.path.join(work, 'spm')
    spm.SentencePieceTrainer.train(
        input=src, model_prefix=prefix, model_type='bpe', vocab_size=2000, byte_fallback=True,
        character_coverage=1.0, normalization_rule_name='identity',
        remove_extra_whitespaces=False, add_dummy_prefix=True, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + '.model')
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(float(sp.get_score(i)))
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else
                     5 if sp.is_unused(i) else 6 if sp.is_byte(i) else 1)
    w = gguf.Writer()
    w.add('general.architecture', 'llama')
    w.add('tokenizer.ggml.model', 'llama')
    w.add('tokenizer.ggml.tokens', tokens)
    w.add('tokenizer.ggml.scores', scores, gguf.ARRAY, gguf.F32)
    w.add('tokenizer.ggml.token_type', types, gguf.ARRAY, gguf.I32)
    w.add('tokenizer.ggml.bos_token_id', sp.bos_id(), gguf.U32)
    w.add('tokenizer.ggml.eos_token_id', sp.eos_id(), gguf.U32)
    w.add('tokenizer.ggml.unknown_token_id', sp.unk_id(), gguf.U32)
    path = os.path.join(work, 'spm.gguf')
    w.write(path)
    return sp, path


# ---- byte-level BPE ----

def byte_map():
    """GPT-2's bytes_to_unicode."""
    bs = list(range(0x21, 0x7f)) + list(range(0xa1, 0xad)) + list(range(0xae, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTES = byte_map()


def mapped(s):
    return ''.join(BYTES[b] for b in s.encode('utf-8'))


def train_bpe(text, pattern, nmerges):
    """Merges of the most frequent adjacent pair (ties: the smallest pair), counted over the
    pre-tokens' mapped bytes; pair counts updated only in the words a merge touches."""
    freq = {}
    for w in regex.findall(pattern, text):
        m = mapped(w)
        freq[m] = freq.get(m, 0) + 1
    words = [list(w) for w in freq]
    counts = list(freq.values())
    pairs, where = {}, {}
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pairs[p] = pairs.get(p, 0) + counts[i]
            where.setdefault(p, set()).add(i)
    merges = []
    for _ in range(nmerges):
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]), default=None)
        if not best or best[1] < 2:
            break
        (a, b), _ = best
        merges.append((a, b))
        for i in list(where.get((a, b), ())):
            w, c = words[i], counts[i]
            for p in zip(w, w[1:]):
                pairs[p] -= c
            j, out = 0, []
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pairs[p] = pairs.get(p, 0) + c
                where.setdefault(p, set()).add(i)
        pairs = {p: n for p, n in pairs.items() if n > 0}
    return merges


def encode_bpe(text, pattern, vocab, ranks, ignore_merges):
    """GPT-2's encoder: each pre-token's lowest-ranked pair merged everywhere, again and again."""
    ids = []
    for w in regex.findall(pattern, text):
        word = mapped(w)
        if ignore_merges and word in vocab:
            ids.append(vocab[word])
            continue
        parts = list(word)
        while len(parts) > 1:
            ranked = [(ranks.get(p, 1 << 30), i) for i, p in enumerate(zip(parts, parts[1:]))]
            r, _ = min(ranked)
            if r == 1 << 30:
                break
            pair = next(p for p in zip(parts, parts[1:]) if ranks.get(p) == r)
            out, j = [], 0
            while j < len(parts):
                if j + 1 < len(parts) and (parts[j], parts[j + 1]) == pair:
                    out.append(parts[j] + parts[j + 1])
                    j += 2
                else:
                    out.append(parts[j])
                    j += 1
            parts = out
        ids += [vocab[p] for p in parts]
    return ids


def encode_special(text, encode, vocab):
    """Special tokens matched whole (the longest first), the text between encoded."""
    ids, i, start = [], 0, 0
    while i < len(text):
        hit = next((s for s in sorted(SPECIALS, key=len, reverse=True)
                    if text.startswith(s, i)), None)
        if not hit:
            i += 1
            continue
        ids += encode(text[start:i]) + [vocab[hit]]
        i += len(hit)
        start = i
    return ids + encode(text[start:])


def bpe_model(work, text, pre):
    merges = train_bpe(text, PATTERNS['llama-bpe'], 1500)
    tokens = [BYTES[b] for b in range(256)] + [a + b for a, b in merges] + SPECIALS
    vocab = {t: i for i, t in enumerate(tokens)}
    ranks = {m: i for i, m in enumerate(merges)}
    w = gguf.Writer()
    w.add('general.architecture', 'llama')
    w.add('tokenizer.ggml.model', 'gpt2')
    w.add('tokenizer.ggml.pre', pre)
    w.add('tokenizer.ggml.tokens', tokens)
    w.add('tokenizer.ggml.token_type', [1] * (256 + len(merges)) + [3] * len(SPECIALS),
          gguf.ARRAY, gguf.I32)
    w.add('tokenizer.ggml.merges', [f'{a} {b}' for a, b in merges])
    w.add('tokenizer.ggml.bos_token_id', vocab['<|begin_of_text|>'], gguf.U32)
    w.add('tokenizer.ggml.eos_token_id', vocab['<|end_of_text|>'], gguf.U32)
    path = os.path.join(work, f'bpe-{pre}.gguf')
    w.write(path)
    return vocab, ranks, path


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split('\n')[-1])
        return 2
    tool = sys.argv[1]
    text = corpus()
    if len(text) < 10000:
        print('tok_compare: skipped: no texts under /usr/share/common-licenses')
        return 77
    lines = [line for line in text.split('\n')] + fortune_lines() + WRITTEN
    bad = 0
    with tempfile.TemporaryDirectory() as work:
        sp, path = spm_model(work, text)
        for name, texts in (('sentencepiece', lines),
                            # whole paragraphs: longer texts, newlines inside
                            ('sentencepiece paragraphs', text.split('\n\n'))):
            want = [sp.encode(t) for t in texts]
            # not a degenerate comparison: byte fallback (CJK, emoji) and long merges happen
            assert any(sp.is_byte(i) for w in want for i in w), 'no byte token expected'
            assert any(len(sp.id_to_piece(i)) >= 5 for w in want for i in w), 'no long piece'
            bad += compare(name, texts, want, run_c(tool, path, texts),
                           decoded=[sp.decode(w) for w in want])
        paras = text.split('\n\n')
        for pre in ('llama-bpe', 'qwen2', 'default'):
            vocab, ranks, path = bpe_model(work, text, pre)
            enc = lambda t: encode_bpe(t, PATTERNS[pre], vocab, ranks, pre == 'llama-bpe')
            # merges happen: the license texts take under a third of a token a byte
            assert sum(len(enc(t)) for t in paras[:50]) < sum(len(t) for t in paras[:50]) / 3
            bad += compare(f'bpe {pre}', lines, [enc(t) for t in lines],
                           run_c(tool, path, lines))
            bad += compare(f'bpe {pre} paragraphs', paras, [enc(t) for t in paras],
                           run_c(tool, path, paras))
            chat = ['<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n',
                    '<|begin_of_text|>GNU<|end_of_text|><|end_of_text',
                    'no specials at all', '<|im_start|><|im_start|>']
            want = [[vocab['<|begin_of_text|>']] + encode_special(t, enc, vocab) for t in chat]
            bad += compare(f'bpe {pre} special', chat, want, run_c(tool, path, chat, 3),
                           skip_roundtrip=True)
    if bad:
        print(f'tok_compare: {bad} lines differ')
        return 1
    print('tok_compare: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
