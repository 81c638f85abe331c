"""float64 evaluation of a converted lstmlm model directory (docs/model-format.md: tensors in PyTorch layout,
the cell and projection math of the design's numerics contract, docs/architecture.md), used to check a
converter's output against a framework reference without the C++ engine."""
import json
import os

import numpy as np

import pyutil
from ref_numpy import log_softmax, sigmoid

RECURRENT = {"sigmoid": sigmoid,
             "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0.0, 1.0),
             "hard_sigmoid_keras3": lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0)}


class DirModel:
    def __init__(self, outdir):
        with open(os.path.join(outdir, "config.json"), encoding="utf-8") as f:
            self.cfg = json.load(f)
        self.w = {k: v.astype(np.float64) for k, v in
                  pyutil.read_safetensors(os.path.join(outdir, "weights.safetensors")).items()}
        self.V = self.cfg["vocab_size"]

    def next_logprobs(self, ids):
        w, layers = self.w, self.cfg["layers"]
        state = [(np.zeros(l["proj_size"] or l["hidden_size"]), np.zeros(l["hidden_size"])) for l in layers]
        for t in ids:
            if self.cfg["embedding_dim"]:
                x = w["embedding.weight"][t]
            else:
                x = np.zeros(self.V)
                x[t] = 1.0
            new = []
            for k, (l, (h, c)) in enumerate(zip(layers, state)):
                z = w[f"lstm.weight_ih_l{k}"] @ x + w[f"lstm.weight_hh_l{k}"] @ h
                z = z + w.get(f"lstm.bias_ih_l{k}", 0) + w.get(f"lstm.bias_hh_l{k}", 0)
                H, ra = l["hidden_size"], RECURRENT[l["recurrent_activation"]]
                c = ra(z[H:2 * H]) * c + ra(z[:H]) * np.tanh(z[2 * H:3 * H])
                h = ra(z[3 * H:]) * np.tanh(c)
                if l["proj_size"]:
                    h = w[f"lstm.weight_hr_l{k}"] @ h
                new.append((h, c))
                x = h
            state = new
        dec = w["embedding.weight"] if self.cfg["output"]["tied"] else w["decoder.weight"]
        return log_softmax(dec @ x + w["decoder.bias"])
