#!/usr/bin/env python3
"""Writes the engine's golden test data: tests/golden/<case>/ holds a small random model in the lstmlm
format (config.json, vocab.json, weights.safetensors) and expected.json with input sequences, the full
log-softmax after every step and the final state (h, c per layer), all from a zero state.

Expected values are computed in float64 from the float32 weights actually written: by PyTorch
(nn.Embedding / nn.LSTM(proj_size=...) / nn.Linear / log_softmax) for the sigmoid cases, and by a numpy
float64 reference for what PyTorch cannot express (Keras hard_sigmoid of both kinds, TF cell_clip).
The numpy reference is checked against PyTorch on the PyTorch cases before anything is written.

Run with Debian's python3 (torch 1.13, numpy): /usr/bin/python3 tools/make_golden.py
"""
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
import lstmlm.format as fmt  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")

# (name, V, E, layers [(H, P, recurrent_activation, cell_clip)], tied, weight scale, sequence lengths)
CASES = [
    ("l1_h17", 23, 8, [(17, 0, "sigmoid", None)], False, 1.0, [5, 1, 8]),
    ("l2_h3_h1", 13, 5, [(3, 0, "sigmoid", None), (1, 0, "sigmoid", None)], False, 1.0, [6, 2]),
    ("l3_proj", 29, 6, [(17, 5, "sigmoid", None), (9, 4, "sigmoid", None), (3, 0, "sigmoid", None)], False, 1.5,
     [7, 3]),
    ("onehot_h3", 11, 0, [(3, 0, "sigmoid", None)], False, 1.0, [6, 4]),
    ("tied_h100", 37, 100, [(100, 0, "sigmoid", None)], True, 1.0, [9, 3]),
    ("keras2_hard", 19, 7, [(17, 0, "hard_sigmoid", None)], False, 2.0, [8, 2]),
    ("keras3_hard_l2", 21, 6, [(16, 0, "hard_sigmoid_keras3", None), (3, 0, "hard_sigmoid_keras3", None)], False,
     2.0, [7, 1]),
    ("clip_proj", 17, 4, [(17, 6, "sigmoid", 0.5), (5, 0, "hard_sigmoid", 0.25)], False, 3.0, [8, 3]),
]


def f32(t):
    """Rounds to float32 and back: the reference must use exactly the values written to the file."""
    return t.float().double()


def make_params(V, E, layers, tied, scale, gen):
    p = {}
    if E > 0:
        p[fmt.names.embedding] = f32(torch.randn(V, E, generator=gen, dtype=torch.float64))
    inp = E if E > 0 else V
    for k, (H, P, _, _) in enumerate(layers):
        a = scale / np.sqrt(H)
        u = lambda *shape: f32((torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * a)  # noqa: E731
        out = P if P > 0 else H
        p[fmt.names.weight_ih(k)] = u(4 * H, inp)
        p[fmt.names.weight_hh(k)] = u(4 * H, out)
        p[fmt.names.bias_ih(k)] = u(4 * H)
        p[fmt.names.bias_hh(k)] = u(4 * H)
        if P > 0:
            p[fmt.names.weight_hr(k)] = u(P, H)
        inp = out
    if not tied:
        dec = (torch.rand(V, inp, generator=gen, dtype=torch.float64) * 2 - 1) / np.sqrt(inp)
        p[fmt.names.decoder_weight] = f32(dec)
    p[fmt.names.decoder_bias] = f32((torch.rand(V, generator=gen, dtype=torch.float64) * 2 - 1) / np.sqrt(inp))
    return p


def decoder_weight(p, tied):
    return p[fmt.names.embedding] if tied else p[fmt.names.decoder_weight]


def torch_forward(p, V, E, layers, tied, seq):
    """PyTorch modules in float64; one nn.LSTM per layer (sizes may differ between layers)."""
    with torch.no_grad():
        ids = torch.tensor(seq, dtype=torch.long)
        x = torch.nn.functional.one_hot(ids, V).double() if E == 0 else \
            torch.nn.functional.embedding(ids, p[fmt.names.embedding])
        x = x.unsqueeze(1)  # [T, 1, in]
        hs, cs = [], []
        for k, (H, P, _, _) in enumerate(layers):
            lstm = torch.nn.LSTM(x.shape[-1], H, proj_size=P).double()
            sd = {n.replace(f"_l{k}", "_l0").replace("lstm.", ""): v for n, v in p.items()
                  if n.startswith("lstm.") and n.endswith(f"_l{k}")}
            lstm.load_state_dict(sd)
            x, (h, c) = lstm(x)
            hs.append(h[0, 0].tolist())
            cs.append(c[0, 0].tolist())
        logits = torch.nn.functional.linear(x[:, 0], decoder_weight(p, tied), p[fmt.names.decoder_bias])
        return torch.log_softmax(logits, dim=-1).tolist(), hs, cs


def numpy_forward(p, V, E, layers, tied, seq):
    """The same model in plain numpy float64, with Keras hard sigmoids and TF LSTMCell's cell_clip."""
    acts = {"sigmoid": lambda z: 1 / (1 + np.exp(-z)),
            "hard_sigmoid": lambda z: np.clip(0.2 * z + 0.5, 0, 1),
            "hard_sigmoid_keras3": lambda z: np.clip(z / 6 + 0.5, 0, 1)}
    n = {k: v.numpy() for k, v in p.items()}
    hs = [np.zeros(P if P > 0 else H) for H, P, _, _ in layers]
    cs = [np.zeros(H) for H, _, _, _ in layers]
    out = []
    for tok in seq:
        x = np.eye(V)[tok] if E == 0 else n[fmt.names.embedding][tok]
        for k, (H, P, act, clip) in enumerate(layers):
            z = n[fmt.names.weight_ih(k)] @ x + n[fmt.names.weight_hh(k)] @ hs[k] + n[fmt.names.bias_ih(k)] + \
                n[fmt.names.bias_hh(k)]
            i, f, g, o = z[:H], z[H:2 * H], z[2 * H:3 * H], z[3 * H:]
            sig = acts[act]
            c = sig(f) * cs[k] + sig(i) * np.tanh(g)
            if clip is not None:
                c = np.clip(c, -clip, clip)
            m = sig(o) * np.tanh(c)
            cs[k] = c
            hs[k] = n[fmt.names.weight_hr(k)] @ m if P > 0 else m
            x = hs[k]
        logits = decoder_weight(p, tied).numpy() @ x + n[fmt.names.decoder_bias]
        mx = logits.max()
        out.append((logits - mx - np.log(np.exp(logits - mx).sum())).tolist())
    return out, [h.tolist() for h in hs], [c.tolist() for c in cs]


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for ci, (name, V, E, layers, tied, scale, lengths) in enumerate(CASES):
        gen = torch.Generator().manual_seed(1000 + ci)
        p = make_params(V, E, layers, tied, scale, gen)
        seqs = [torch.randint(0, V, (n,), generator=gen).tolist() for n in lengths]
        use_torch = all(act == "sigmoid" and clip is None for _, _, act, clip in layers)
        results = []
        for s in seqs:
            ref = numpy_forward(p, V, E, layers, tied, s)
            if use_torch:
                got = torch_forward(p, V, E, layers, tied, s)
                # The numpy reference must agree with PyTorch wherever both apply.
                flat = lambda r: np.concatenate([np.ravel(np.array(x)) for part in r for x in part])  # noqa: E731
                assert np.max(np.abs(flat(got) - flat(ref))) < 1e-12, name
                ref = got
            results.append({"tokens": s, "logprobs": ref[0], "h": ref[1], "c": ref[2]})
        tensors = {k: v.numpy().astype(np.float32) for k, v in p.items()}
        d = os.path.join(OUT, name)
        fmt.write_model(
            d, vocab=[f"w{i}" for i in range(V)], embedding_dim=E,
            layers=[fmt.layer(H, P, act, clip) for H, P, act, clip in layers], tied=tied,
            tokenizer=fmt.tokenizer(), tensors=tensors,
            source={"framework": "pytorch" if use_torch else "numpy", "version": torch.__version__,
                    "exporter": "tools/make_golden.py"})
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump({"reference": ("torch" if use_torch else "numpy") + " float64", "start": "zeros",
                       "sequences": results}, f)
            f.write("\n")
        print(f"{name}: V={V} E={E} layers={layers} tied={tied} by {'torch' if use_torch else 'numpy'}")


if __name__ == "__main__":
    main()
