"""Independent float64 numpy implementation of TF1's LSTM language model math (char-rnn style), for tests.

Written from TF1's rnn_cell_impl.py (BasicLSTMCell.call / LSTMCell.call), not from the converter:
    i, j, f, o = split(concat([x, h]) @ kernel + bias, 4, axis=1)
    c = sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j)      (LSTMCell: then clip to +-cell_clip)
    h = sigmoid(o) * tanh(c)                                      (LSTMCell: then h = h @ projection)
char-rnn: x = embedding[id]; zero initial state; logits = h_last @ softmax_w + softmax_b.
Weights are TF's own tensors in TF's own layout (kernel [in + h, 4H], softmax_w [H, V]).
"""
import numpy as np


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _log_softmax(z):
    m = z.max()
    return z - m - np.log(np.exp(z - m).sum())


class TF1CharRNN:
    def __init__(self, embedding, cells, softmax_w, softmax_b, forget_bias=1.0, cell_clip=None):
        """cells: list of dicts {"kernel", "bias", optional "proj"} holding TF tensors."""
        self.embedding = np.asarray(embedding, np.float64)
        self.cells = [{k: np.asarray(v, np.float64) for k, v in c.items()} for c in cells]
        self.softmax_w = np.asarray(softmax_w, np.float64)
        self.softmax_b = np.asarray(softmax_b, np.float64)
        self.forget_bias, self.cell_clip = forget_bias, cell_clip

    def next_logprobs(self, ids):
        """Log-probabilities of the next token after each prefix ids[:1], ids[:2], ...: [len(ids), V]."""
        c = [np.zeros(cell["kernel"].shape[1] // 4) for cell in self.cells]
        h = [np.zeros(cell["proj"].shape[1] if "proj" in cell else cell["kernel"].shape[1] // 4)
             for cell in self.cells]
        out = []
        for t in ids:
            x = self.embedding[t]
            for k, cell in enumerate(self.cells):
                z = np.concatenate([x, h[k]]) @ cell["kernel"] + cell["bias"]
                i, j, f, o = np.split(z, 4)
                c[k] = _sigmoid(f + self.forget_bias) * c[k] + _sigmoid(i) * np.tanh(j)
                if self.cell_clip is not None:
                    c[k] = np.clip(c[k], -self.cell_clip, self.cell_clip)
                m = _sigmoid(o) * np.tanh(c[k])
                if "proj" in cell:
                    m = m @ cell["proj"]
                h[k] = m
                x = m
            out.append(_log_softmax(x @ self.softmax_w + self.softmax_b))
        return np.array(out)
