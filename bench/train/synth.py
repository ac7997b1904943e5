#!/usr/bin/env python3
"""synth.py ROWS FEATURES CLASSES OUT.csv - a learnable synthetic CSV for bench/train/: integer
features 0..255 (MNIST-like), label = argmax of a fixed random projection. numpy only."""
import sys

import numpy as np

rows, feats, classes, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(1)
x = rng.integers(0, 256, size=(rows, feats), dtype=np.int64)
w = rng.standard_normal((feats, classes))
y = np.argmax((x - 127.5) @ w, axis=1)
np.savetxt(out, np.concatenate([x, y[:, None]], axis=1), fmt="%d", delimiter=",")
