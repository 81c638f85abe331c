#!/usr/bin/python3
"""bench/web's ONNX Runtime Web peer: writes the predict graph of an lstmlm model directory (ids [B,T] int64 ->
log-probs [B,V] after the last step), with bench/ort/export_onnx.py's PyTorch model and export.

  predict_onnx.py MODEL_DIR OUT.onnx

The model directory must be what export_onnx.py exports (LSTM layers of one width, an embedding, an untied
decoder, no head); bench/web/bench.js checks ORT's log-probs against lstmlm's before it times anything."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "bench", "ort"), os.path.join(ROOT, "python")]

import export_onnx  # noqa: E402


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    import torch
    V, E, H, L = export_onnx.dir_shape(model_dir)
    lm, _, predict, _ = export_onnx.torch_model(V, E, H, L, 1)
    export_onnx.load_lstmlm_dir(lm, model_dir, V, E, H, L)
    x = torch.zeros(2, 3, dtype=torch.long)
    export_onnx.export(predict, (x,), out, ["ids"], ["logprobs"],
                       {"ids": {0: "batch", 1: "time"}, "logprobs": {0: "batch"}})


if __name__ == "__main__":
    main()
