#!/usr/bin/env python3
"""gen-model.py: make gpool model files for tests, and compute what a model answers.

  gen-model.py write OUT [--layers 64,32,10] [--seed N] [--input-scale F] [--extra-key]
  gen-model.py predict MODEL < {"inputs": [[...], ...]}   -> {"probabilities": ..., "classes": ...}

The format (docs/gserve.md): b"GPMODEL1\\n", one JSON line, then per layer W (out x in, row
major, little-endian f32) and b (out f32). ReLU between hidden layers, softmax at the end.
Plain Python (no numpy): the reference the server's sgemm path is checked against.
"""
import json
import math
import random
import struct
import sys


def write(path, layers, seed, scale, extra):
    rnd = random.Random(seed)
    hdr = {"kind": "mlp", "layers": layers, "activation": "relu", "dtype": "f32"}
    if scale is not None:
        hdr["input_scale"] = scale
    if extra:
        hdr["trainer"] = {"epochs": 3, "note": "ignored by the server"}
    with open(path, "wb") as f:
        f.write(b"GPMODEL1\n")
        f.write(json.dumps(hdr).encode() + b"\n")
        for i in range(len(layers) - 1):
            n_in, n_out = layers[i], layers[i + 1]
            bound = 1.0 / math.sqrt(n_in)
            w = [rnd.uniform(-bound, bound) for _ in range(n_in * n_out)]
            b = [rnd.uniform(-0.1, 0.1) for _ in range(n_out)]
            f.write(struct.pack("<%df" % len(w), *w))
            f.write(struct.pack("<%df" % len(b), *b))


def load(path):
    data = open(path, "rb").read()
    assert data.startswith(b"GPMODEL1\n")
    nl = data.index(b"\n", 9)
    hdr = json.loads(data[9:nl])
    layers = hdr["layers"]
    off = nl + 1
    ws = []
    for i in range(len(layers) - 1):
        n_in, n_out = layers[i], layers[i + 1]
        w = struct.unpack_from("<%df" % (n_in * n_out), data, off)
        off += 4 * n_in * n_out
        b = struct.unpack_from("<%df" % n_out, data, off)
        off += 4 * n_out
        ws.append((n_in, n_out, w, b))
    assert off == len(data)
    return hdr, ws


def predict(path, inputs):
    hdr, ws = load(path)
    scale = hdr.get("input_scale", 1.0)
    probs, classes = [], []
    for row in inputs:
        a = [x * scale for x in row]
        for li, (n_in, n_out, w, b) in enumerate(ws):
            y = [sum(a[k] * w[o * n_in + k] for k in range(n_in)) + b[o] for o in range(n_out)]
            if li + 1 < len(ws):
                y = [max(0.0, v) for v in y]
            a = y
        m = max(a)
        e = [math.exp(v - m) for v in a]
        s = sum(e)
        p = [v / s for v in e]
        probs.append(p)
        classes.append(max(range(len(p)), key=lambda i: p[i]))
    return {"probabilities": probs, "classes": classes}


def main(argv):
    if len(argv) >= 3 and argv[1] == "write":
        layers, seed, scale, extra = [64, 32, 10], 1, None, False
        i = 3
        while i < len(argv):
            if argv[i] == "--layers":
                layers = [int(x) for x in argv[i + 1].split(",")]
                i += 2
            elif argv[i] == "--seed":
                seed = int(argv[i + 1])
                i += 2
            elif argv[i] == "--input-scale":
                scale = float(argv[i + 1])
                i += 2
            elif argv[i] == "--extra-key":
                extra = True
                i += 1
            else:
                sys.exit("gen-model: unknown option '%s'" % argv[i])
        write(argv[2], layers, seed, scale, extra)
    elif len(argv) == 3 and argv[1] == "predict":
        json.dump(predict(argv[2], json.load(sys.stdin)["inputs"]), sys.stdout)
        print()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
