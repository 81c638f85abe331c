"""float64 evaluation of a converted lstmlm model directory, used to check a converter's output against a
framework reference without the C++ engine. Written from docs/model-format.md (format v1 to v3: tensors in
PyTorch layout, each cell's equations) and the frameworks' documented formulas, not from lstmlm's C++:

- LSTM (torch.nn.LSTM; peepholes and clips as TF1 LSTMCell): z = W_ih x + b_ih + W_hh h + b_hh, rows i f g o;
  i = ra(z_i + w_ci c), f = ra(z_f + w_cf c), g = act(z_g), c' = clip(f c + i g, cell_clip),
  o = ra(z_o + w_co c'), m = o act(c'), h' = clip(W_hr m, proj_clip) (W_hr when projected); no peepholes: the
  w_c* terms are absent.
- GRU (torch.nn.GRU, rows r z n): gi = W_ih x + b_ih; reset_after: gh = W_hh h + b_hh, r = ra(gi_r + gh_r),
  z = ra(gi_z + gh_z), n = act(gi_n + r gh_n); without it (Keras reset_after=False, TF1 GRUCell, ONNX
  linear_before_reset=0) n = act(gi_n + W_hn (r h) + b_hn); h' = (1 - z) n + z h.
- RNN (torch.nn.RNN): h' = act(W_ih x + b_ih + W_hh h + b_hh).
- head (format v2): y = act(W y + b) per Dense layer; output log_softmax(decoder.weight y + decoder.bias), the
  embedding as decoder when tied.
"""
import json
import os

import numpy as np

import pyutil
from ref_numpy import log_softmax, sigmoid

RECURRENT = {"sigmoid": sigmoid,
             "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0.0, 1.0),
             "hard_sigmoid_keras3": lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0)}
ACTIVATION = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "linear": lambda x: x, "sigmoid": sigmoid}


def clip(x, bound):
    return x if bound is None else np.clip(x, -bound, bound)


def lstm_step(w, l, x, h, c):
    """One LSTM step; w holds the layer's tensors under their short names (weight_ih, ..., weight_ci)."""
    H, ra, act = l["hidden_size"], RECURRENT[l["recurrent_activation"]], ACTIVATION[l.get("activation", "tanh")]
    z = w["weight_ih"] @ x + w["weight_hh"] @ h + w.get("bias_ih", 0) + w.get("bias_hh", 0)
    zi, zf, zg, zo = z[:H], z[H:2 * H], z[2 * H:3 * H], z[3 * H:]
    if l.get("peepholes"):
        zi, zf = zi + w["weight_ci"] * c, zf + w["weight_cf"] * c
    c = clip(ra(zf) * c + ra(zi) * act(zg), l.get("cell_clip"))
    if l.get("peepholes"):
        zo = zo + w["weight_co"] * c
    h = ra(zo) * act(c)
    if l.get("proj_size"):
        h = clip(w["weight_hr"] @ h, l.get("proj_clip"))
    return h, c


def gru_step(w, l, x, h):
    H = l["hidden_size"]
    ra, act = RECURRENT[l.get("recurrent_activation", "sigmoid")], ACTIVATION[l.get("activation", "tanh")]
    zeros = np.zeros(3 * H)
    b_ih, b_hh = w.get("bias_ih", zeros), w.get("bias_hh", zeros)
    gi = w["weight_ih"] @ x + b_ih
    W_hh = w["weight_hh"]
    if l.get("reset_after", True):
        gh = W_hh @ h + b_hh
        r = ra(gi[:H] + gh[:H])
        z = ra(gi[H:2 * H] + gh[H:2 * H])
        n = act(gi[2 * H:] + r * gh[2 * H:])
    else:
        r = ra(gi[:H] + W_hh[:H] @ h + b_hh[:H])
        z = ra(gi[H:2 * H] + W_hh[H:2 * H] @ h + b_hh[H:2 * H])
        n = act(gi[2 * H:] + W_hh[2 * H:] @ (r * h) + b_hh[2 * H:])
    return (1.0 - z) * n + z * h


def rnn_step(w, l, x, h):
    z = w["weight_ih"] @ x + w["weight_hh"] @ h + w.get("bias_ih", 0) + w.get("bias_hh", 0)
    return ACTIVATION[l.get("activation", "tanh")](z)


class DirModel:
    def __init__(self, outdir):
        with open(os.path.join(outdir, "config.json"), encoding="utf-8") as f:
            self.cfg = json.load(f)
        self.w = {k: v.astype(np.float64) for k, v in
                  pyutil.read_safetensors(os.path.join(outdir, "weights.safetensors")).items()}
        self.V = self.cfg["vocab_size"]
        self.layers = []
        for k, l in enumerate(self.cfg["layers"]):
            cell = l.get("cell", "lstm")
            prefix, suffix = cell + ".", f"_l{k}"
            lw = {name[len(prefix):-len(suffix)]: v for name, v in self.w.items()
                  if name.startswith(prefix) and name.endswith(suffix)}
            self.layers.append((cell, l, lw))

    def initial_state(self):
        """Per layer (h, c): c is None for a GRU or RNN layer, which has none."""
        out = []
        for cell, l, _ in self.layers:
            H = l["hidden_size"]
            out.append((np.zeros(l.get("proj_size") or H), np.zeros(H) if cell == "lstm" else None))
        return out

    def step(self, state, token):
        """The state after reading token, and the last recurrent layer's output."""
        if self.cfg["embedding_dim"]:
            x = self.w["embedding.weight"][token]
        else:
            x = np.zeros(self.V)
            x[token] = 1.0
        new = []
        for (cell, l, lw), (h, c) in zip(self.layers, state):
            if cell == "lstm":
                h, c = lstm_step(lw, l, x, h, c)
            elif cell == "gru":
                h = gru_step(lw, l, x, h)
            else:
                h = rnn_step(lw, l, x, h)
            new.append((h, c))
            x = h
        return new, x

    def logits(self, y):
        """The output layer's logits from the last recurrent layer's output y (through the head)."""
        for k, d in enumerate(self.cfg["output"].get("head", [])):
            y = ACTIVATION[d["activation"]](self.w[f"head.{k}.weight"] @ y + self.w[f"head.{k}.bias"])
        dec = self.w["embedding.weight"] if self.cfg["output"]["tied"] else self.w["decoder.weight"]
        return dec @ y + self.w["decoder.bias"]

    def output(self, y):
        """log p over the vocabulary from the last recurrent layer's output y."""
        return log_softmax(self.logits(y))

    def next_logprobs(self, ids):
        """log p(next | ids) from the zero state."""
        state, y = self.initial_state(), None
        for t in ids:
            state, y = self.step(state, t)
        return self.output(y)

    def token_logprobs(self, ids):
        """log p(ids[t] | ids[:t]) for t >= 1, from the zero state in one pass."""
        state, out = self.initial_state(), []
        for t, nxt in zip(ids[:-1], ids[1:]):
            state, y = self.step(state, t)
            out.append(self.output(y)[nxt])
        return np.array(out)
