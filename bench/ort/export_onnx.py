#!/usr/bin/python3
"""ONNX Runtime's side of bench/compare, part 1: the models it runs, written once per shape and seed.

For a shape V,E,H,L (an Embedding, L LSTM layers, a Linear decoder) and a seed, or the weights of an lstmlm model
directory (--from-dir: LSTM layers, untied), writes into --out:
  model/              the lstmlm model directory of those weights (vocabulary <unk>, <eos>, w2 ... w{V-1})
  score.onnx          ids [B,T] int64, targets [B,T] int64 -> the targets' log-probs [B,T] (log_softmax at every
                      step, gathered): what `lstmlm bench -w score` computes
  predict.onnx        ids [B,T] -> log-probs [B,V] after the last step: `lstmlm bench -w predict`
  logprobs.onnx       ids [B,T] -> log-probs [B,T,V] (for the check only)
  *-int8.onnx         the same graphs as ORT's quantize_dynamic writes them: each LSTM a com.microsoft
                      DynamicQuantizeLSTM (int8 weights, one symmetric scale per gate row, transposed to
                      [dir, in, 4H]), the decoder DynamicQuantizeLinear + MatMulInteger (int8 weights, one scale
                      per output column) + Cast + Mul by the two scales; embedding and log_softmax stay fp32
  identity-{score,predict}.onnx   the same inputs through Identity: ORT's per-call overhead, subtracted
The graphs come from torch.onnx.export (opset 14) of the PyTorch model whose weights the model directory
holds; the int8 rewrite uses Debian's python3-onnx (ORT's Python tools are not a Debian package).

Then checks them before anything is timed (a wrong peer is no peer): ORT's log-probs (bench/ort/ort_bench.js
--dump) on 3 rows of 7 random ids against lstmlm's (lstmlm.Model.logprobs, the Python module of the build) must
agree to 1e-4, and the int8 graphs' probabilities against the fp32 ones' to 0.02 (a quantized model's error: on
models/fairytales-word ORT int8 is off by 0.005 at most, lstmlm int8 by 0.003; a broken rewrite is off by whole
probabilities). Prints one JSON line: the files and the largest differences. Exit status 1 when a
check fails.

With --onnx FILE (a user's ONNX model, e.g. tf2onnx's) the model is taken as it is: converted with
`python3 -m lstmlm.convert` (with --vocab FILE), and checked the same way on its own input and output (its input fed as float
ids when the graph says so, its softmax output compared as probabilities to 1e-4)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 14


def log(msg):
    print(f"export_onnx: {msg}", file=sys.stderr, flush=True)


def torch_model(V, E, H, L, seed):
    import torch
    from torch import nn

    torch.manual_seed(seed)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(V, E)
            self.lstm = nn.LSTM(E, H, L, batch_first=True)
            # A MatMul + Add (not nn.Linear, which exports as Gemm on 2-D inputs): ORT's quantize_dynamic turns
            # MatMul into MatMulInteger.
            self.w = nn.Parameter(torch.empty(H, V).uniform_(-H ** -0.5, H ** -0.5))
            self.b = nn.Parameter(torch.empty(V).uniform_(-H ** -0.5, H ** -0.5))

        def logprobs(self, ids):
            out, _ = self.lstm(self.embedding(ids))
            return torch.log_softmax(torch.matmul(out, self.w) + self.b, dim=-1)

    class Score(nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, ids, targets):
            return torch.gather(self.lm.logprobs(ids), 2, targets.unsqueeze(-1)).squeeze(-1)

    class Predict(nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, ids):
            out, _ = self.lm.lstm(self.lm.embedding(ids))
            return torch.log_softmax(torch.matmul(out[:, -1], self.lm.w) + self.lm.b, dim=-1)

    class Logprobs(nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, ids):
            return self.lm.logprobs(ids)

    lm = LM().eval()
    return lm, Score(lm).eval(), Predict(lm).eval(), Logprobs(lm).eval()


def read_safetensors(path):
    """{name: float32 array} of an lstmlm weights.safetensors (every tensor F32, as lstmlm.format writes them)."""
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base, out = 8 + n, {}
        for name, h in header.items():
            if name == "__metadata__":
                continue
            if h["dtype"] != "F32":
                sys.exit(f"export_onnx: {path}: tensor {name} is {h['dtype']}, only F32 is read here")
            a, b = h["data_offsets"]
            f.seek(base + a)
            out[name] = np.frombuffer(f.read(b - a), dtype="<f4").reshape(h["shape"]).copy()
    return out


def load_lstmlm_dir(lm, path, V, E, H, L):
    """lm's weights set from an lstmlm model directory of plain LSTM layers and an untied decoder."""
    import torch
    w = read_safetensors(os.path.join(path, "weights.safetensors"))
    sd = {"embedding.weight": w["embedding.weight"], "w": np.ascontiguousarray(w["decoder.weight"].T),
          "b": w["decoder.bias"]}
    for k in range(L):
        for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            shape = (4 * H,) if p.startswith("bias") else (4 * H, E if (k == 0 and p == "weight_ih") else H)
            sd[f"lstm.{p}_l{k}"] = w.get(f"lstm.{p}_l{k}", np.zeros(shape, np.float32))  # a bias may be absent
    lm.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})


def dir_shape(path):
    """(V, E, H, L) of an lstmlm model directory this script can export: LSTM layers of one width, no
    projection, an untied decoder, no head."""
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    layers = cfg["layers"]
    hs = {l.get("hidden_size") for l in layers}
    if len(hs) != 1 or any(l.get("proj_size") or l.get("cell", "lstm") != "lstm" for l in layers) \
            or cfg["output"].get("tied") or cfg["output"].get("head"):
        sys.exit(f"export_onnx: {path}: only LSTM layers of one width, untied, without a projection or head")
    return cfg["vocab_size"], cfg["embedding_dim"], hs.pop(), len(layers)


def write_lstmlm_dir(lm, V, E, H, L, path):
    import lstmlm.format as lf
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in lm.state_dict().items()}
    t = {lf.names.embedding: sd["embedding.weight"]}
    for k in range(L):
        t[lf.names.weight_ih(k)] = sd[f"lstm.weight_ih_l{k}"]
        t[lf.names.weight_hh(k)] = sd[f"lstm.weight_hh_l{k}"]
        t[lf.names.bias_ih(k)] = sd[f"lstm.bias_ih_l{k}"]
        t[lf.names.bias_hh(k)] = sd[f"lstm.bias_hh_l{k}"]
    t[lf.names.decoder_weight] = np.ascontiguousarray(sd["w"].T)
    t[lf.names.decoder_bias] = sd["b"]
    vocab = ["<unk>", "<eos>"] + [f"w{i}" for i in range(2, V)]
    lf.write_model(path, vocab=vocab[:V], embedding_dim=E, layers=[lf.layer(H) for _ in range(L)], tied=False,
                   tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="<eos>"), tensors=t,
                   source={"framework": "pytorch", "exporter": "bench/ort/export_onnx.py"})


def export(module, args, path, inputs, outputs, dynamic):
    import torch
    with warnings.catch_warnings():  # the tracer's notes on LSTM shapes and on shape inference
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, opset_version=OPSET, input_names=inputs, output_names=outputs,
                          dynamic_axes=dynamic, do_constant_folding=True)


def symmetric_int8(w, axis):
    """int8 values and one scale per slice along axis (zero point 0): round(w / (max|w| / 127))."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    scale = np.abs(w).max(axis=red, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, np.squeeze(scale, axis=red).astype(np.float32)


def quantize(src, dst):
    """The graph ORT's quantize_dynamic(per_channel=True, weight_type=QInt8) writes for an LSTM LM."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    m = onnx.load(src)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    # Constant nodes too: torch.onnx may put a weight in a Constant rather than an initializer.
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}

    def weight(name):
        if name in inits:
            return numpy_helper.to_array(inits[name])
        if name in consts:
            return numpy_helper.to_array(consts[name].attribute[0].t)
        return None

    new_nodes, new_inits, dropped = [], [], set()
    for n in g.node:
        if n.op_type == "LSTM":
            W, R = weight(n.input[1]), weight(n.input[2])
            ins = list(n.input) + [""] * (8 - len(n.input))
            qs = []
            for tag, w in (("W", W), ("R", R)):
                # scales per (direction, gate row); the int8 weights transposed to [dir, in, 4H]
                q, s = symmetric_int8(w.reshape(-1, w.shape[2]), 0)
                q = q.reshape(w.shape).transpose(0, 2, 1).copy()
                s = s.reshape(w.shape[0], w.shape[1])
                zp = np.zeros_like(s, dtype=np.int8)
                base = f"{n.name or n.output[0]}_{tag}"
                new_inits += [numpy_helper.from_array(q, base + "_quantized"),
                              numpy_helper.from_array(s, base + "_scale"),
                              numpy_helper.from_array(zp, base + "_zero_point")]
                qs.append(base)
                dropped.add(n.input[1] if tag == "W" else n.input[2])
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            new_nodes.append(helper.make_node(
                "DynamicQuantizeLSTM",
                [ins[0], qs[0] + "_quantized", qs[1] + "_quantized", *ins[3:8],
                 qs[0] + "_scale", qs[0] + "_zero_point", qs[1] + "_scale", qs[1] + "_zero_point"],
                list(n.output), (n.name or "lstm") + "_quant", domain="com.microsoft", **attrs))
        elif n.op_type == "MatMul" and weight(n.input[1]) is not None:
            B = weight(n.input[1])
            q, s = symmetric_int8(B, 1)  # one scale per output column
            base = n.input[1].replace("/", "_").replace(".", "_") or "decoder"
            new_inits += [numpy_helper.from_array(q, base + "_quantized"),
                          numpy_helper.from_array(s, base + "_scale"),
                          numpy_helper.from_array(np.zeros(s.shape, np.int8), base + "_zero_point")]
            dropped.add(n.input[1])
            a = n.input[0]
            new_nodes += [
                helper.make_node("DynamicQuantizeLinear", [a], [a + "_q", a + "_scale", a + "_zp"]),
                helper.make_node("MatMulInteger", [a + "_q", base + "_quantized", a + "_zp", base + "_zero_point"],
                                 [a + "_mmi"]),
                helper.make_node("Cast", [a + "_mmi"], [a + "_mmi_f"], to=TensorProto.FLOAT),
                helper.make_node("Mul", [a + "_scale", base + "_scale"], [a + "_ab_scale"]),
                helper.make_node("Mul", [a + "_mmi_f", a + "_ab_scale"], list(n.output)),
            ]
        else:
            new_nodes.append(n)
    still_used = {i for n in new_nodes for i in n.input}
    kept = [i for i in g.initializer if i.name not in dropped or i.name in still_used]
    kept_nodes = [n for n in new_nodes if not (n.op_type == "Constant" and n.output[0] in dropped
                                                and n.output[0] not in still_used)]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    del g.node[:]
    g.node.extend(kept_nodes)
    if not any(o.domain == "com.microsoft" for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def identity(src, dst):
    """src's inputs, each passed through Identity: the cost of a run() call with the same feeds."""
    import onnx
    from onnx import helper
    m = onnx.load(src)
    ins = list(m.graph.input)
    nodes = [helper.make_node("Identity", [i.name], [i.name + "_out"]) for i in ins]
    outs = [helper.make_tensor_value_info(i.name + "_out", i.type.tensor_type.elem_type, None) for i in ins]
    g = helper.make_graph(nodes, "identity", ins, outs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]), dst)


def ort_dump(model, ids, node_path):
    """ORT's first output on ids (through bench/ort/ort_bench.js --dump), as float64."""
    res = subprocess.run(["node", os.path.join(HERE, "ort_bench.js"), "--model", model, "--dump",
                          json.dumps(ids.tolist())], capture_output=True, text=True,
                         env={**os.environ, "NODE_PATH": node_path})
    if res.returncode != 0:
        sys.exit(f"export_onnx: ort_bench.js --dump {model} failed: {res.stderr.strip()[-400:]}")
    d = json.loads(res.stdout)
    return np.array(d["data"], np.float64).reshape(d["dims"])


def lstmlm_logprobs(model_dir, ids):
    """lstmlm's log-probs [B,T,V] of the rows of ids: Model.logprobs, one row at a time (a fresh state each)."""
    import lstmlm
    m = lstmlm.Model(model_dir, threads=1)
    return np.stack([np.asarray(m.logprobs([int(i) for i in row]), np.float64) for row in ids])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", help="V,E,H,L")
    ap.add_argument("--onnx", help="a user's ONNX model instead of --shape")
    ap.add_argument("--from-dir", help="an lstmlm model directory (LSTM, untied) instead of --shape: its weights")
    ap.add_argument("--vocab", help="with --onnx: the vocabulary file lstmlm.convert takes (--vocab)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lstmlm-python", required=True, help="the folder holding the built lstmlm Python module")
    ap.add_argument("--node-path", required=True, help="NODE_PATH with onnxruntime-node")
    a = ap.parse_args()
    # The build's module (with the compiled part) before anything imports lstmlm.format.
    sys.path.insert(0, os.path.abspath(a.lstmlm_python))
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    report = {"out": a.out}
    if a.onnx:
        model_dir = os.path.join(a.out, "model")
        subprocess.run([sys.executable, "-m", "lstmlm.convert", a.onnx, model_dir,
                        *(["--vocab", a.vocab] if a.vocab else [])], check=True,
                       env={**os.environ, "PYTHONPATH": a.lstmlm_python + os.pathsep + os.path.join(ROOT, "python")},
                       stdout=subprocess.DEVNULL)
        import onnx
        g = onnx.load(a.onnx).graph
        T = g.input[0].type.tensor_type.shape.dim[1].dim_value
        V = g.output[0].type.tensor_type.shape.dim[1].dim_value
        ids = rng.integers(1, V, (3, T))
        got = ort_dump(a.onnx, ids, a.node_path)  # probabilities after the last step
        ref = np.exp(lstmlm_logprobs(model_dir, ids)[:, -1])
        identity(a.onnx, os.path.join(a.out, "identity-predict.onnx"))
        report.update(model=model_dir, onnx=a.onnx, seq_len=T, vocab=V, max_abs_diff=float(np.abs(got - ref).max()))
        ok = report["max_abs_diff"] <= 1e-4
    else:
        V, E, H, L = dir_shape(a.from_dir) if a.from_dir else (int(x) for x in a.shape.split(","))
        lm, score, predict, logprobs = torch_model(V, E, H, L, a.seed)
        if a.from_dir:
            load_lstmlm_dir(lm, a.from_dir, V, E, H, L)
            if os.path.abspath(a.from_dir) != os.path.abspath(os.path.join(a.out, "model")):
                shutil.copytree(a.from_dir, os.path.join(a.out, "model"), dirs_exist_ok=True)
        else:
            write_lstmlm_dir(lm, V, E, H, L, os.path.join(a.out, "model"))
        import torch
        x = torch.zeros(2, 3, dtype=torch.long)
        dyn = {"ids": {0: "batch", 1: "time"}, "targets": {0: "batch", 1: "time"}}
        export(score, (x, x), os.path.join(a.out, "score.onnx"), ["ids", "targets"], ["logprob"],
               {**dyn, "logprob": {0: "batch", 1: "time"}})
        export(predict, (x,), os.path.join(a.out, "predict.onnx"), ["ids"], ["logprobs"],
               {"ids": dyn["ids"], "logprobs": {0: "batch"}})
        export(logprobs, (x,), os.path.join(a.out, "logprobs.onnx"), ["ids"], ["logprobs"],
               {"ids": dyn["ids"], "logprobs": {0: "batch", 1: "time"}})
        for w in ("score", "predict", "logprobs"):
            quantize(os.path.join(a.out, f"{w}.onnx"), os.path.join(a.out, f"{w}-int8.onnx"))
        for w in ("score", "predict"):
            identity(os.path.join(a.out, f"{w}.onnx"), os.path.join(a.out, f"identity-{w}.onnx"))
        ids = rng.integers(0, V, (3, 7))
        ref = lstmlm_logprobs(os.path.join(a.out, "model"), ids)
        got = ort_dump(os.path.join(a.out, "logprobs.onnx"), ids, a.node_path)
        got8 = ort_dump(os.path.join(a.out, "logprobs-int8.onnx"), ids, a.node_path)
        report.update(model=os.path.join(a.out, "model"), shape=[V, E, H, L], seed=a.seed,
                      max_abs_diff=float(np.abs(got - ref).max()),
                      int8_max_abs_diff=float(np.abs(np.exp(got8) - np.exp(got)).max()),
                      int8_max_abs_logprob_diff=float(np.abs(got8 - got).max()))
        ok = report["max_abs_diff"] <= 1e-4 and report["int8_max_abs_diff"] <= 0.02
    report["ok"] = ok
    print(json.dumps(report))
    if not ok:
        sys.exit(f"export_onnx: ORT's outputs differ from lstmlm's beyond the bound: {json.dumps(report)}")


if __name__ == "__main__":
    main()
