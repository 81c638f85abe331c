"""Independent float64 numpy references of the frameworks' LSTM language models, written from each framework's
documented math (not from lstmlm's converter), and readers that take the weights straight from the source
files with h5py / torch.

Keras LSTMCell (keras/src/layers/rnn/lstm.py): z = x·kernel + h·recurrent_kernel + bias, kernel [in, 4H]
with gate blocks i, f, c, o; i = ra(z_i), f = ra(z_f), c' = f·c + i·a(z_c), o = ra(z_o), h' = o·a(c'), zero
initial state; Dense: softmax(h·kernel + bias). Keras 2 hard_sigmoid = clip(0.2x + 0.5, 0, 1) (keras backend),
Keras 3 hard_sigmoid = relu6(x + 3) / 6 = clip(x/6 + 0.5, 0, 1) (keras.ops.hard_sigmoid).

PyTorch nn.LSTM (torch docs): gates = W_ih x + b_ih + W_hh h + b_hh, rows i, f, g, o; c' = σ(f)c + σ(i)tanh(g);
h' = σ(o)tanh(c'); with proj_size h' = W_hr h'. nn.Linear: x Wᵀ + b.
"""
import io
import json
import sys
import types
import zipfile

import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    "sigmoid": sigmoid,
    "tanh": np.tanh,
    "hard_sigmoid_keras2": lambda x: np.clip(0.2 * x + 0.5, 0.0, 1.0),
    "hard_sigmoid_keras3": lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    "relu": lambda x: np.maximum(x, 0.0),  # keras.activations.relu (alpha 0, no max_value)
    "linear": lambda x: x,
}


def log_softmax(z):
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


# ------------------------------------------------------------------------------------------------- Keras
class KerasLM:
    """Embedding (or one-hot) -> Keras LSTMs -> Dense(act)... -> Dense(softmax), in float64. head: the Dense
    layers between the last LSTM and the output, [(kernel [in, units], bias [units], activation name)]:
    y = act(x·kernel + bias) (keras Dense)."""

    def __init__(self, embeddings, lstms, dense_kernel, dense_bias, vocab_size, head=()):
        self.head = [(np.asarray(k, np.float64), np.asarray(b, np.float64), a) for k, b, a in head]
        self.emb = None if embeddings is None else np.asarray(embeddings, np.float64)
        self.lstms = [{k: (np.asarray(v, np.float64) if isinstance(v, np.ndarray) else v) for k, v in l.items()}
                      for l in lstms]
        self.wk = np.asarray(dense_kernel, np.float64)
        self.wb = np.asarray(dense_bias, np.float64)
        self.V = vocab_size

    def next_logprobs(self, ids):
        """log p(next | ids) after reading ids from the zero state (what model.predict gives for that
        unpadded sequence)."""
        hs = [np.zeros(l["recurrent_kernel"].shape[0]) for l in self.lstms]
        cs = [np.zeros_like(h) for h in hs]
        for t in ids:
            if self.emb is not None:
                x = self.emb[t]
            else:
                x = np.zeros(self.V)
                x[t] = 1.0
            for k, l in enumerate(self.lstms):
                H = hs[k].shape[0]
                z = x @ l["kernel"] + hs[k] @ l["recurrent_kernel"] + l["bias"]
                ra, a = ACTIVATIONS[l["recurrent_activation"]], ACTIVATIONS[l["activation"]]
                i, f, c_, o = ra(z[:H]), ra(z[H:2 * H]), a(z[2 * H:3 * H]), ra(z[3 * H:])
                cs[k] = f * cs[k] + i * c_
                hs[k] = o * a(cs[k])
                x = hs[k]
        for kern, bias, act in self.head:
            x = ACTIVATIONS[act](x @ kern + bias)
        return log_softmax(x @ self.wk + self.wb)


def _keras_activation(name, keras_version):
    if name == "hard_sigmoid":
        return "hard_sigmoid_keras3" if keras_version.startswith("3") else "hard_sigmoid_keras2"
    return name


def keras_h5(path):
    """KerasLM from a model.save .h5: the layer list from model_config, weights from model_weights."""
    import h5py
    with h5py.File(path, "r") as f:
        version = f.attrs["keras_version"]
        version = version.decode() if isinstance(version, bytes) else version
        cfg = json.loads(f.attrs["model_config"])
        layers = cfg["config"]["layers"]
        emb, lstms, denses = None, [], []

        def weights(layer_name):
            g = f["model_weights"][layer_name]
            out = {}
            for wn in g.attrs["weight_names"]:
                wn = wn.decode() if isinstance(wn, bytes) else wn
                out[wn.split("/")[-1].split(":")[0]] = g[wn][()]
            return out
        for layer in layers:
            c = layer["config"]
            if layer["class_name"] == "Embedding":
                emb = weights(c["name"])["embeddings"]
            elif layer["class_name"] == "LSTM":
                w = weights(c["name"])
                lstms.append(dict(w, activation=c["activation"],
                                  recurrent_activation=_keras_activation(c["recurrent_activation"], version)))
            elif layer["class_name"] == "Dense":
                denses.append(dict(weights(c["name"]), activation=c.get("activation", "linear")))
    dense = denses[-1]
    V = dense["kernel"].shape[1]
    return KerasLM(emb, lstms, dense["kernel"], dense["bias"], V,
                   head=[(d["kernel"], d["bias"], d["activation"]) for d in denses[:-1]])


def keras_zip(path):
    """KerasLM from a Keras 3 .keras zip of Embedding -> LSTM -> Dense (paths of Keras 3's saving_lib)."""
    import h5py
    with zipfile.ZipFile(path) as z:
        cfg = json.loads(z.read("config.json"))
        f = h5py.File(io.BytesIO(z.read("model.weights.h5")), "r")
    layers = {l["class_name"]: l["config"] for l in cfg["config"]["layers"]}
    emb = f["layers/embedding/vars/0"][()]
    cell = f["layers/lstm/cell/vars"]
    lstm = {"kernel": cell["0"][()], "recurrent_kernel": cell["1"][()], "bias": cell["2"][()],
            "activation": layers["LSTM"]["activation"],
            "recurrent_activation": _keras_activation(layers["LSTM"]["recurrent_activation"], "3")}
    return KerasLM(emb, [lstm], f["layers/dense/vars/0"][()], f["layers/dense/vars/1"][()],
                   f["layers/dense/vars/1"].shape[0])


# ----------------------------------------------------------------------------------------------- PyTorch
class TorchLM:
    """[Embedding] -> nn.LSTM -> Linear from a state_dict, in float64."""

    def __init__(self, sd, emb_key, lstm_prefix, dec_key, num_layers):
        g = {k: np.asarray(v.detach().cpu().double().numpy() if hasattr(v, "detach") else v, np.float64)
             for k, v in sd.items()}
        self.emb = g[emb_key] if emb_key else None
        self.layers = []
        for k in range(num_layers):
            p = f"{lstm_prefix}"
            self.layers.append({n: g.get(f"{p}{n}_l{k}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                                                    "weight_hr")})
        self.dec_w, self.dec_b = g[dec_key + ".weight"], g[dec_key + ".bias"]
        self.V = self.dec_w.shape[0]

    def run(self, ids, state=None):
        """(list of log p(next) after each id, final state)."""
        if state is None:
            state = [(np.zeros(l["weight_hh"].shape[1]), np.zeros(l["weight_hh"].shape[0] // 4))
                     for l in self.layers]
        out = []
        for t in ids:
            if self.emb is not None:
                x = self.emb[t]
            else:
                x = np.zeros(self.V)
                x[t] = 1.0
            new = []
            for l, (h, c) in zip(self.layers, state):
                z = l["weight_ih"] @ x + l["weight_hh"] @ h
                for b in (l["bias_ih"], l["bias_hh"]):
                    if b is not None:
                        z = z + b
                H = c.shape[0]
                i, f, gg, o = sigmoid(z[:H]), sigmoid(z[H:2 * H]), np.tanh(z[2 * H:3 * H]), sigmoid(z[3 * H:])
                c = f * c + i * gg
                h = o * np.tanh(c)
                if l["weight_hr"] is not None:
                    h = l["weight_hr"] @ h
                new.append((h, c))
                x = h
            state = new
            out.append(log_softmax(self.dec_w @ x + self.dec_b))
        return out, state

    def next_logprobs(self, ids):
        return self.run(ids)[0][-1]


def torch_load_trusted(path):
    """torch.load of the shared test files (trusted), with a placeholder for word_language_model's class
    model.RNNModel so its whole-module pickle can be read."""
    import torch
    if "model" not in sys.modules:
        mod = types.ModuleType("model")

        class RNNModel(torch.nn.Module):
            pass
        RNNModel.__module__ = "model"
        mod.RNNModel = RNNModel
        sys.modules["model"] = mod
    return torch.load(path, map_location="cpu")
