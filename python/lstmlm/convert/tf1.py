"""TF1 checkpoint -> lstmlm model: BasicLSTMCell / LSTMCell / GRUCell / MultiRNNCell language models (char-rnn
style).

The graph (.meta) is not read: the architecture comes from the variable names and shapes. TF1's cells
compute, for kernel K [in + H_out, 4H] and bias b [4H] over the concatenated [x, h]:
    i, j, f, o = split([x, h] @ K + b, 4)
    c' = sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j);  h' = sigmoid(o) * tanh(c')
(LSTMCell: c' clipped to +-cell_clip when set, then h' = h' @ P with the projection kernel P [H, proj]).
lstmlm stores PyTorch's layout, gates i, f, g(=j), o, with W_ih [4H, in], W_hh [4H, H_out], so K is
transposed, split after `in` columns and its gate blocks reordered; forget_bias (a constructor argument,
never stored in the checkpoint) is folded into the f slice of the bias. Likewise cell_clip and proj_clip are
not stored and must be given as options when the model used them. LSTMCell(use_peepholes=True) stores
w_i_diag, w_f_diag, w_o_diag [H]: i and f see c, o the new c (format v3 peepholes, weight_ci / cf / co).
TF 0.12's LSTMCell(num_unit_shards=n, num_proj_shards=m) stores its kernel as W_0..W_{n-1} and its projection
as W_P_0..W_P_{m-1}, row blocks concatenated along axis 0.

GRUCell (format v3 GRU, reset_after false): gates/kernel [in + H, 2H] in columns r, u; gates/bias [2H];
candidate/kernel [in + H, H], candidate/bias [H]:
    r, u = split(sigmoid([x, h] @ Kg + bg), 2);  c = tanh([x, r * h] @ Kc + bc);  h' = u * h + (1 - u) * c
which is the format's GRU with z = u: rows r, z(=u), n of W_ih from the x rows of Kg and Kc, of W_hh from the
h rows, the whole bias in bias_ih.
"""
import os
import re

import numpy as np

from ..format import GATE_ORDER
from ..format import gru_layer
from ..format import names as tensor_names

from . import common, contained
from .tf1_checkpoint import Checkpoint, ConvertError
from .vocab import load_vocab

# Last path components of optimizer slots and bookkeeping variables: never model weights.
_SLOTS = {"Adam", "Adam_1", "Momentum", "RMSProp", "RMSProp_1", "Adagrad", "Adadelta", "Adadelta_1",
          "Ftrl", "Ftrl_1", "ExponentialMovingAverage"}
_BOOKKEEPING = {"beta1_power", "beta2_power", "global_step", "Variable", "learning_rate", "lr"}

_CELL_TYPES = {"BasicLSTMCell": "basic", "basic_lstm_cell": "basic", "LSTMCell": "lstm", "lstm_cell": "lstm",
               "GRUCell": "gru", "gru_cell": "gru"}
# What follows the cell scope, per naming era: TF 0.12 (Linear/Matrix, LSTMCell's W_0/B/W_P_0),
# TF 1.0-1.2 (weights/biases), TF >= 1.3 (kernel/bias).
_PARTS = {
    "Linear/Matrix": "kernel", "Linear/Bias": "bias", "weights": "kernel", "biases": "bias",
    "kernel": "kernel", "bias": "bias", "W_0": "kernel", "B": "bias",
    "projection/kernel": "proj", "projection/weights": "proj", "projection/Linear/Matrix": "proj",
    "W_P_0": "proj",
}
# GRUCell's variables, per naming era (TF 0.12 Gates/Linear/Matrix, TF 1.0-1.2 weights/biases, >= 1.3 kernel/bias).
_GRU_PARTS = {f"{scope}/{name}": f"{kind}_{what}"
              for scope, kind in (("gates", "gates"), ("Gates", "gates"), ("candidate", "candidate"),
                                  ("Candidate", "candidate"))
              for name, what in (("kernel", "kernel"), ("bias", "bias"), ("weights", "kernel"),
                                 ("biases", "bias"), ("Linear/Matrix", "kernel"), ("Linear/Bias", "bias"))}
_PEEPHOLES = re.compile(r"^(?:w_([fio])_diag|W_([FIO])_diag)$")
# TF 0.12 LSTMCell's sharded kernel (num_unit_shards) and projection (num_proj_shards): row blocks.
_SHARD = re.compile(r"^(W|W_P)_(\d+)$")
_MULTI = re.compile(r"^(MultiRNNCell|multi_rnn_cell)$")
_CELL_INDEX = re.compile(r"^(?:Cell|cell_)(\d+)$")

# "Embedding" and "Projection/Matrix|Bias": tf.get_variable('Embedding') + a hand-made output projection
# (the seed user's graph, and TF's old PTB tutorial style).
_EMBEDDING_NAMES = ("embedding", "embeddings", "embedding_matrix", "word_embeddings", "Embedding")
_SOFTMAX_W_NAMES = ("softmax_w", "softmax/w", "softmax/weights", "softmax/kernel", "output_w", "proj_w",
                    "Projection/Matrix")
_SOFTMAX_B_NAMES = ("softmax_b", "softmax/b", "softmax/biases", "softmax/bias", "output_b", "proj_b",
                    "Projection/Bias")


# --- source detection --------------------------------------------------------------------------------------


def _prefix_of(path):
    """The checkpoint prefix for PREFIX, PREFIX.index, PREFIX.data-*, or a directory holding one checkpoint."""
    if os.path.isdir(path):
        named = _prefix_from_checkpoint_file(path)
        if named and os.path.isfile(named + ".index"):
            return named
        indexes = sorted(f[:-len(".index")] for f in os.listdir(path) if f.endswith(".index"))
        if len(indexes) == 1:
            return os.path.join(path, indexes[0])
        if not indexes:
            return None
        raise ConvertError(f"{path}: holds {len(indexes)} checkpoints ({', '.join(indexes)}); "
                           "give the prefix of one, e.g. " + os.path.join(path, indexes[-1]))
    if path.endswith(".index"):
        return path[:-len(".index")]
    m = re.match(r"^(.*)\.data-\d{5}-of-\d{5}$", path)
    if m:
        return m.group(1)
    if os.path.isfile(path + ".index"):
        return path
    return None


def _prefix_from_checkpoint_file(directory):
    """model_checkpoint_path from TF's `checkpoint` text file, if any (it may be stale)."""
    path = os.path.join(directory, "checkpoint")
    if not os.path.lexists(path):
        return None
    text = contained.read_contained(directory, path, path, limit=1 << 20).decode("utf-8", "replace")
    for line in text.splitlines():
        m = re.match(r'^model_checkpoint_path:\s*"(.*)"\s*$', line)
        if m:
            # Only the file name: TF often writes an absolute path (of the machine that trained), and the
            # checkpoint is read from the directory the user gave, never from where that file points.
            return os.path.join(directory, os.path.basename(m.group(1)))
    return None


def detect(path):
    try:
        prefix = _prefix_of(path)
    except ConvertError:
        return True  # a directory of several checkpoints: ours, convert() will explain
    return prefix is not None and os.path.isfile(prefix + ".index")


def add_arguments(parser):
    g = parser.add_argument_group("TF1 checkpoints")
    g.add_argument("--forget-bias", type=common.finite_float, default=1.0,
                   help="forget_bias the cells were built with (not stored in checkpoints; TF default 1.0)")
    g.add_argument("--cell-clip", type=common.positive_float, default=None,
                   help="LSTMCell cell_clip the model was built with (not stored in checkpoints)")
    g.add_argument("--proj-clip", type=common.positive_float, default=None,
                   help="LSTMCell proj_clip the model was built with (not stored in checkpoints; needs num_proj)")
    g.add_argument("--embedding-var", help="name of the embedding variable [V, E] (default: detected)")
    g.add_argument("--softmax-w-var", help="name of the output weight variable [H, V] (default: detected)")
    g.add_argument("--softmax-b-var", help="name of the output bias variable [V] (default: detected)")
    g.add_argument("--cell-prefix", help="variable scope of the RNN cells, e.g. rnnlm/multi_rnn_cell "
                   "(default: the only scope holding LSTM cells)")


# --- architecture from variable names -----------------------------------------------------------------------


def model_variables(ckpt):
    """Checkpoint variable names that can be model weights (optimizer slots and counters dropped)."""
    out = []
    for name in ckpt.names():
        parts = name.split("/")
        if parts[-1] in _SLOTS or parts[-1] in _BOOKKEEPING or not ckpt.shape(name):
            continue
        out.append(name)
    return out


def find_cells(ckpt, names, cell_prefix=None):
    """Returns [(index, kind, {"kernel": name, "bias": name, "proj": name?})] in layer order."""
    cells = {}
    scopes = set()
    for name in names:
        parts = name.split("/")
        at = next((k for k, p in enumerate(parts) if p in _CELL_TYPES), None)
        if at is None:
            continue
        rest = "/".join(parts[at + 1:])
        index, scope_end = 0, at
        m = _CELL_INDEX.match(parts[at - 1]) if at >= 1 else None
        if m:
            index, scope_end = int(m.group(1)), at - 1
        scope = "/".join(parts[:scope_end])
        if cell_prefix is not None and not (scope == cell_prefix.rstrip("/") or
                                            scope.startswith(cell_prefix.rstrip("/") + "/")):
            continue
        kind = _CELL_TYPES[parts[at]]
        peep, shard = _PEEPHOLES.match(rest), _SHARD.match(rest)
        if kind == "gru":
            part = _GRU_PARTS.get(rest)
            if part is None:
                raise ConvertError(f"{ckpt.index_path}: variable '{name}' of a GRU cell is not one of "
                                   "gates/kernel, gates/bias, candidate/kernel, candidate/bias; unsupported cell "
                                   "variant")
        elif peep:
            if kind == "basic":
                raise ConvertError(f"{ckpt.index_path}: variable '{name}' is a peephole weight in a "
                                   "BasicLSTMCell, which has none")
            part = "w_" + (peep.group(1) or peep.group(2).lower())
        elif shard:
            part = "kernel" if shard.group(1) == "W" else "proj"
        else:
            part = _PARTS.get(rest)
            if part is None:
                raise ConvertError(f"{ckpt.index_path}: variable '{name}' of an LSTM cell is not one of "
                                   f"{sorted(set(_PARTS))}; unsupported cell variant")
        scopes.add(scope)
        key = (scope, index)
        cell = cells.setdefault(key, {"kind": kind, "vars": {}, "shards": {}})
        if shard:
            cell["shards"].setdefault(part, {})[int(shard.group(2))] = name
        elif part in cell["vars"]:
            raise ConvertError(f"{ckpt.index_path}: cell {index} under '{scope}' has two {part} variables "
                               f"('{cell['vars'][part]}', '{name}')")
        else:
            cell["vars"][part] = name
    if not cells:
        where = f" under '{cell_prefix}'" if cell_prefix else ""
        raise ConvertError(f"{ckpt.index_path}: no BasicLSTMCell/LSTMCell variables{where} "
                           "(expected names like rnnlm/multi_rnn_cell/cell_0/lstm_cell/kernel)")
    if len(scopes) > 1:
        raise ConvertError(f"{ckpt.index_path}: LSTM cells under several scopes ({', '.join(sorted(scopes))}); "
                           "choose one with --cell-prefix")
    out = []
    for expect, (scope, index) in enumerate(sorted(cells, key=lambda k: k[1])):
        if index != expect:
            raise ConvertError(f"{ckpt.index_path}: cell {expect} missing under '{scope}' "
                               f"(found cells {sorted(i for _, i in cells)})")
        cell = cells[(scope, index)]
        for part, shards in cell["shards"].items():
            if part in cell["vars"]:
                raise ConvertError(f"{ckpt.index_path}: cell {index} under '{scope}' has both '{cell['vars'][part]}'"
                                   f" and the shards {', '.join(shards.values())}")
            if sorted(shards) != list(range(len(shards))):
                raise ConvertError(f"{ckpt.index_path}: cell {index} under '{scope}': the {part} shards "
                                   f"{', '.join(shards[i] for i in sorted(shards))} are not numbered 0..{len(shards) - 1}"
                                   " (one is missing)")
            # One name for one shard (TF 0.12's W_0); a list, in order, for a kernel sharded along its rows.
            cell["vars"][part] = shards[0] if len(shards) == 1 else [shards[i] for i in range(len(shards))]
        needs = (("gates_kernel", "gates_bias", "candidate_kernel", "candidate_bias") if cell["kind"] == "gru"
                 else ("kernel", "bias"))
        for need in needs:
            if need not in cell["vars"]:
                raise ConvertError(f"{ckpt.index_path}: cell {index} under '{scope}' has no "
                                   f"{need.replace('_', '/')} variable")
        peeps = sorted(p for p in cell["vars"] if p.startswith("w_"))
        if peeps and peeps != ["w_f", "w_i", "w_o"]:
            raise ConvertError(f"{ckpt.index_path}: cell {index} under '{scope}' has the peephole weights "
                               f"{', '.join(p + '_diag' for p in peeps)}; use_peepholes=True stores w_f_diag, "
                               "w_i_diag and w_o_diag")
        out.append((index, cell["kind"], cell["vars"]))
    return out


def _pick(ckpt, names, option, given, candidates, what, used):
    if given:
        if given not in ckpt.entries:
            raise ConvertError(f"{ckpt.index_path}: --{option} '{given}' is not a variable of the checkpoint")
        return given
    found = [n for n in names if n not in used and any(n == c or n.endswith("/" + c) for c in candidates)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConvertError(f"{ckpt.index_path}: no {what} variable found (looked for names ending in "
                           f"{', '.join(candidates)}); name it with --{option}")
    raise ConvertError(f"{ckpt.index_path}: several {what} candidates ({', '.join(found)}); "
                       f"choose one with --{option}")


# --- vocabulary ---------------------------------------------------------------------------------------------


def _vocab(prefix, args, size, where):
    """The vocabulary: --vocab, else char-rnn's chars_vocab.pkl next to the checkpoint. Its size must equal the
    embedding's rows: char-rnn folders often keep the chars_vocab.pkl of an earlier run next to a newer
    checkpoint, and placeholders for missing ids would silently shift every character."""
    path = getattr(args, "vocab", None)
    if not path:
        if getattr(args, "corpus_dir", None):
            return None  # common.assemble rebuilds it
        path = os.path.join(os.path.dirname(prefix) or ".", "chars_vocab.pkl")
        if not os.path.lexists(path):
            raise ConvertError(f"{where}: no chars_vocab.pkl next to the checkpoint; give the vocabulary "
                               "with --vocab")
    v = load_vocab(path, root=None if getattr(args, "vocab", None) else os.path.dirname(prefix))
    if len(v.tokens) != size:
        raise ConvertError(f"{path}: {len(v.tokens)} tokens, but the checkpoint's embedding has {size} rows; "
                           "this vocabulary belongs to another model (give the right one with --vocab)")
    return v


# --- conversion ---------------------------------------------------------------------------------------------


# TF1 LSTM cells store the gates as i, j, f, o; j is the cell candidate, lstmlm's g.
TF1_GATE_ORDER = ("i", "g", "f", "o")


def tf_kernel_to_torch(kernel, bias, in_size, forget_bias):
    """[in + H_out, 4H] kernel and [4H] bias in TF order i, j, f, o -> W_ih, W_hh, b in PyTorch order i, f, g, o."""
    h = kernel.shape[1] // 4
    order = np.concatenate([np.arange(h) + h * TF1_GATE_ORDER.index(g) for g in GATE_ORDER])
    w = kernel.T[order]
    b = bias[order].astype(np.float64)
    f = GATE_ORDER.index("f")
    b[f * h:(f + 1) * h] += forget_bias
    return w[:, :in_size], w[:, in_size:], b.astype(np.float32)


def _gru_cell(ckpt, f32, k, vs, in_size, tensors, layers):
    """A GRUCell as format v3 GRU layer k (reset_after false, z = u); returns its output size."""
    gk, gb, ck, cb = (f32(vs[p]) for p in ("gates_kernel", "gates_bias", "candidate_kernel", "candidate_bias"))
    if ck.ndim != 2 or gk.ndim != 2:
        raise ConvertError(f"{ckpt.index_path}: GRU cell {k} kernels '{vs['gates_kernel']}' {list(gk.shape)} / "
                           f"'{vs['candidate_kernel']}' {list(ck.shape)}: expected [in + H, 2H] and [in + H, H]")
    h = ck.shape[1]
    if gk.shape != (in_size + h, 2 * h) or ck.shape != (in_size + h, h) or gb.shape != (2 * h,) or \
            cb.shape != (h,):
        raise ConvertError(f"{ckpt.index_path}: GRU cell {k}: gates/kernel {list(gk.shape)}, gates/bias "
                           f"{list(gb.shape)}, candidate/kernel {list(ck.shape)}, candidate/bias {list(cb.shape)}; "
                           f"expected [{in_size + h}, {2 * h}], [{2 * h}], [{in_size + h}, {h}], [{h}] (input "
                           f"{in_size}, H {h})")
    # Columns r, u of the gates and the candidate's one block are the format's rows r, z, n.
    w = np.concatenate([gk.T, ck.T], axis=0)
    tensors[tensor_names.weight_ih(k, cell="gru")] = np.ascontiguousarray(w[:, :in_size])
    tensors[tensor_names.weight_hh(k, cell="gru")] = np.ascontiguousarray(w[:, in_size:])
    tensors[tensor_names.bias_ih(k, cell="gru")] = np.concatenate([gb, cb])
    layers.append(gru_layer(h, reset_after=False))
    return h


def convert(source, args):
    """Returns the keyword arguments of lstmlm.format.write_model for the checkpoint `source`."""
    prefix = _prefix_of(source)
    if prefix is None:
        raise ConvertError(f"{source}: not a TF checkpoint (no {source}.index)")
    ckpt = Checkpoint(prefix)
    # The exporter keeps this module's former path, so a conversion reproduces models/charrnn-space byte for byte.
    source = {"framework": "tensorflow1", "format": "TF V2 checkpoint", "file": os.path.basename(prefix),
              "exporter": "tools/lstmlm_convert/tf1.py"}
    # char-rnn semantics: zero initial state, no bos/eos; the tokenizer is guessed from the vocabulary
    # (char when every token is one character) unless options say otherwise.
    return convert_variables(ckpt, args, source, lambda size: _vocab(prefix, args, size, ckpt.index_path))


def convert_variables(ckpt, args, source, vocab_for):
    """write_model kwargs from TF1 variables: `ckpt` has names(), shape(name), entries, tensor(name) and
    index_path (the file named in errors) - a Checkpoint, or another store of the same variables (ml5's
    manifest); vocab_for(size) returns the Vocab (or None for --corpus-dir)."""
    names = model_variables(ckpt)
    cells = find_cells(ckpt, names, getattr(args, "cell_prefix", None))
    cell_vars = {n for _, _, vs in cells for v in vs.values() for n in ([v] if isinstance(v, str) else v)}
    emb_name = _pick(ckpt, names, "embedding-var", getattr(args, "embedding_var", None), _EMBEDDING_NAMES,
                     "embedding", cell_vars)
    sw_name = _pick(ckpt, names, "softmax-w-var", getattr(args, "softmax_w_var", None), _SOFTMAX_W_NAMES,
                    "softmax weight", cell_vars)
    sb_name = _pick(ckpt, names, "softmax-b-var", getattr(args, "softmax_b_var", None), _SOFTMAX_B_NAMES,
                    "softmax bias", cell_vars)
    forget_bias = float(getattr(args, "forget_bias", 1.0) if getattr(args, "forget_bias", None) is not None
                        else 1.0)
    cell_clip = getattr(args, "cell_clip", None)
    proj_clip = getattr(args, "proj_clip", None)

    def f32(name):
        if not isinstance(name, str):  # a kernel sharded along its rows (W_0, W_1, ...)
            parts = [f32(n) for n in name]
            if any(p.ndim != 2 or p.shape[1] != parts[0].shape[1] for p in parts):
                raise ConvertError(f"{ckpt.index_path}: shards {', '.join(name)} have shapes "
                                   f"{', '.join(str(list(p.shape)) for p in parts)}: not row blocks of one matrix")
            return np.concatenate(parts, axis=0)
        t = ckpt.tensor(name)
        if t.dtype.kind != "f":
            raise ConvertError(f"{ckpt.index_path}: variable '{name}' is {t.dtype}, expected floating point")
        return t.astype(np.float32)

    emb = f32(emb_name)
    if emb.ndim != 2:
        raise ConvertError(f"{ckpt.index_path}: embedding '{emb_name}' has shape {list(emb.shape)}, expected [V, E]")
    vocab_size, in_size = emb.shape
    tensors = {tensor_names.embedding: emb}
    layers = []
    kinds = [kind for _, kind, _ in cells]
    if cell_clip is not None and "lstm" not in kinds:
        raise ConvertError(f"{ckpt.index_path}: --cell-clip given but no cell is an LSTMCell (cells: "
                           f"{', '.join(kinds)}), which is the cell that has cell_clip")
    if proj_clip is not None and not any("proj" in vs for _, _, vs in cells):
        raise ConvertError(f"{ckpt.index_path}: --proj-clip given but no LSTMCell has a projection (num_proj), "
                           "which proj_clip clips")
    for k, kind, vs in cells:
        if kind == "gru":
            in_size = _gru_cell(ckpt, f32, k, vs, in_size, tensors, layers)
            continue
        kernel, bias = f32(vs["kernel"]), f32(vs["bias"])
        if kernel.ndim != 2 or kernel.shape[1] % 4 or bias.shape != (kernel.shape[1],):
            raise ConvertError(f"{ckpt.index_path}: cell {k} kernel {list(kernel.shape)} / bias "
                               f"{list(bias.shape)}: expected [in + H, 4H] and [4H]")
        h = kernel.shape[1] // 4
        proj = f32(vs["proj"]) if "proj" in vs else None
        if proj is not None and (proj.ndim != 2 or proj.shape[0] != h):
            raise ConvertError(f"{ckpt.index_path}: projection '{vs['proj']}' has shape {list(proj.shape)}, "
                               f"expected [{h}, num_proj]")
        out_size = proj.shape[1] if proj is not None else h
        if kernel.shape[0] != in_size + out_size:
            raise ConvertError(f"{ckpt.index_path}: cell {k} kernel '{vs['kernel']}' has {kernel.shape[0]} rows, "
                               f"expected input {in_size} + state {out_size} = {in_size + out_size}")
        w_ih, w_hh, b = tf_kernel_to_torch(kernel, bias, in_size, forget_bias)
        tensors[tensor_names.weight_ih(k)] = w_ih
        tensors[tensor_names.weight_hh(k)] = w_hh
        tensors[tensor_names.bias_ih(k)] = b
        if proj is not None:
            tensors[tensor_names.weight_hr(k)] = proj.T
        layer = {"hidden_size": h, "proj_size": int(out_size) if proj is not None else 0,
                 "activation": "tanh", "recurrent_activation": "sigmoid",
                 "cell_clip": float(cell_clip) if cell_clip is not None and kind == "lstm" else None}
        if "w_i" in vs:  # use_peepholes=True (format v3): i and f see c, o the new c
            for tf_name, key in (("w_i", "weight_ci"), ("w_f", "weight_cf"), ("w_o", "weight_co")):
                d = f32(vs[tf_name])
                if d.shape != (h,):
                    raise ConvertError(f"{ckpt.index_path}: peephole '{vs[tf_name]}' has shape {list(d.shape)}, "
                                       f"expected [{h}]")
                tensors[getattr(tensor_names, key)(k)] = d
            layer["peepholes"] = True
        if proj is not None and proj_clip is not None:
            layer["proj_clip"] = float(proj_clip)
        layers.append(layer)
        if cell_clip is not None and kind == "basic":
            raise ConvertError(f"{ckpt.index_path}: --cell-clip given but cell {k} is a BasicLSTMCell, "
                               "which has no cell_clip")
        in_size = out_size
    sw, sb = f32(sw_name), f32(sb_name)
    if sw.shape != (in_size, vocab_size) or sb.shape != (vocab_size,):
        raise ConvertError(f"{ckpt.index_path}: softmax '{sw_name}' {list(sw.shape)} / '{sb_name}' "
                           f"{list(sb.shape)}: expected [{in_size}, {vocab_size}] and [{vocab_size}]")
    tensors[tensor_names.decoder_weight] = np.ascontiguousarray(sw.T)
    tensors[tensor_names.decoder_bias] = sb

    if "gru" in kinds:
        source.setdefault("notes", []).append("GRUCell activation tanh assumed (its default; the checkpoint does "
                                              "not store it)")
    source = dict(source, cells=[kind for _, kind, _ in cells],
                  variables={"embedding": emb_name, "softmax_w": sw_name, "softmax_b": sb_name,
                             "cells": [vs for _, _, vs in cells]},
                  forget_bias_folded=forget_bias)
    v = vocab_for(vocab_size)
    return common.assemble(args, size=vocab_size, tensors=tensors, embedding_dim=int(emb.shape[1]),
                           layers=layers, tied=False, source=source, source_vocab=v, where=ckpt.index_path)
