#!/usr/bin/python3
"""The server users write today, for bench/serve_load.py to compare with: FastAPI + uvicorn + PyTorch
(Debian's python3-fastapi, python3-uvicorn, python3-torch) answering POST /v1/predict {"context": "...",
"top": N} with the top-N next words, on an lstmlm model directory loaded into nn.Embedding + nn.LSTM +
nn.Linear (fp32, eager, torch.inference_mode, one request per forward pass, as the hand-written Flask and
FastAPI wrappers of Keras/PyTorch LSTMs do).

    bench/fastapi_predict.py MODEL_DIR [--port 0] [--threads N]

Prints "listening on http://127.0.0.1:PORT" and then "ready" on stderr, as `lstmlm serve` does."""
import argparse
import json
import os
import socket
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, h in header.items():
            if name == "__metadata__":
                continue
            a, b = h["data_offsets"]
            f.seek(base + a)
            out[name] = np.frombuffer(f.read(b - a), dtype="<f4").reshape(h["shape"]).copy()
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    import torch
    import uvicorn
    from fastapi import FastAPI
    from pydantic import BaseModel

    torch.set_num_threads(a.threads)
    with open(os.path.join(a.model, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(a.model, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    w = read_safetensors(os.path.join(a.model, "weights.safetensors"))
    V, E = cfg["vocab_size"], cfg["embedding_dim"]
    H, L = cfg["layers"][0]["hidden_size"], len(cfg["layers"])
    emb = torch.nn.Embedding(V, E)
    lstm = torch.nn.LSTM(E, H, L, batch_first=True)
    dec = torch.nn.Linear(H, V)
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(w["embedding.weight"]))
        for k in range(L):
            for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                param = getattr(lstm, f"{p}_l{k}")
                # a model may keep one bias (the format's bias_hh is optional): the other is zero
                value = w.get(f"lstm.{p}_l{k}", np.zeros(tuple(param.shape), np.float32))
                param.copy_(torch.from_numpy(value))
        dec.weight.copy_(torch.from_numpy(w["decoder.weight"]))
        dec.bias.copy_(torch.from_numpy(w["decoder.bias"]))
    index = {t: i for i, t in enumerate(vocab)}
    tok = cfg["tokenizer"]
    unk = index.get(tok.get("unk_token") or "", 0)
    start = index.get(tok.get("bos_token") or tok.get("eos_token") or "", None)

    app = FastAPI()

    class Predict(BaseModel):
        context: str
        top: int = 10

    @app.post("/v1/predict")
    def predict(req: Predict):
        ids = ([start] if start is not None else []) + [index.get(t, unk) for t in req.context.lower().split()]
        with torch.inference_mode():
            out, _ = lstm(emb(torch.tensor([ids])))
            logp = torch.log_softmax(dec(out[0, -1]), -1)
            vals, idx = torch.topk(logp, req.top)
        return {"context": req.context,
                "top": [{"token": vocab[i], "id": int(i), "prob": float(np.exp(v)), "logprob": float(v)}
                        for v, i in zip(vals.tolist(), idx.tolist())]}

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", a.port))
    sock.listen(1024)  # connections wait in the backlog until uvicorn accepts them
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
    print("ready", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
