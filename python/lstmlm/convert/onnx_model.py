"""ONNX models (read with Debian's python3-onnx): Gather(embedding) -> LSTM / GRU / RNN node x n -> MatMul+Add
or Gemm [-> Softmax / LogSoftmax], as tf2onnx writes a Keras model and torch.onnx a PyTorch one.

The LSTM op keeps W [1, 4H, in], R [1, 4H, H] with gate blocks i, o, f, c, B [1, 8H] = Wb | Rb and peepholes
P [1, 3H] in the order i, o, f; lstmlm's layout is PyTorch's (i, f, g, o, [4H, in]). The GRU op's blocks are
z, r, h (lstmlm's r, z, n) with B [1, 6H] = Wb | Rb, linear_before_reset 1 being PyTorch's nn.GRU (format v3
reset_after) and 0 the original GRU; the RNN op has one block. torch.onnx does not store its weights in the
ops' form: it re-slices PyTorch's tensors with Slice / Concat / Unsqueeze nodes before the node, so every input
is evaluated by a small numpy constant folder over the initializers and Constant nodes (no name patterns).

The ops' `clip` bounds the input of every activation (the gates' pre-activations) to [-clip, clip]; lstmlm's
cell_clip bounds the LSTM's cell state instead, so a clip is refused rather than mapped to it.
"""
import math
import os
import sys
import warnings

import numpy as np

from ..format import gru_layer as fmt_gru_layer
from ..format import layer as fmt_layer
from ..format import names as tensor_names
from ..format import rnn_layer as fmt_rnn_layer

from . import common
from .common import ConvertError

# ONNX gate blocks i, o, f, c -> canonical i, f, g(c), o.
IOFC_TO_IFGO = (0, 2, 3, 1)
# ONNX GRU gate blocks z, r, h -> canonical r, z, n(h).
ZRH_TO_RZN = (1, 0, 2)
# The recurrent ops, with the number of gate blocks of their W and the names of their outputs.
RECURRENT_OPS = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUT_NAMES = ("Y", "Y_h", "Y_c")
# Ops between the layers that only select time steps or reshape (the Dense's shape check catches a
# selection over the features).
PASS_THROUGH = {"Squeeze", "Unsqueeze", "Reshape", "Identity", "Transpose", "Slice", "Gather", "Dropout",
                "Flatten"}
# Activation functions of the LSTM op that take (alpha, beta) from activation_alpha / activation_beta.
ACT_PARAMS = {"affine": "ab", "leakyrelu": "a", "thresholdedrelu": "a", "scaledtanh": "ab",
              "hardsigmoid": "ab", "elu": "a"}
HARD_SIGMOID_DEFAULTS = (0.2, 0.5)  # the HardSigmoid op's alpha / beta defaults
# The domains of ONNX's own operators: an op of the same name in any other domain (a custom op set, a
# model-local function) computes whatever that domain defines.
STANDARD_DOMAINS = ("", "ai.onnx")


def _onnx():
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise ConvertError(f"python3-onnx is not installed for {sys.executable}: apt-get install "
                           "python3-onnx") from None
    return onnx, numpy_helper


def detect(path):
    return os.path.isfile(path) and path.lower().endswith(".onnx")


def add_arguments(p):
    """No ONNX-specific options: everything that changes inference is in the graph."""


def attrs(node):
    """{name: value} of a node's attributes (strings decoded, tensors left as TensorProto)."""
    onnx, _ = _onnx()
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode("utf-8", "replace") for s in v]
        out[a.name] = v
    return out


def describe(node):
    op = node.op_type if node.domain in STANDARD_DOMAINS else f"{node.domain}:{node.op_type}"
    return f"node {node.name or (node.output[0] if node.output else '')!r} ({op})"


# ------------------------------------------------------------------------------------- constant folding
def _axes(a, ins, k):
    """Axes from attribute `axes` (older opsets) or input k (opset 13 on)."""
    if "axes" in a:
        return list(a["axes"])
    return [int(x) for x in ins[k]] if len(ins) > k and ins[k] is not None else None


def _slice(a, ins):
    x = ins[0]
    if "starts" in a:  # opset < 10
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 else None
        steps = ins[4] if len(ins) > 4 else None
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    idx = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps):
        idx[int(ax)] = slice(int(s), int(e), int(st))  # ONNX clamps out-of-range ends, as Python does
    return x[tuple(idx)]


def _reshape(ins):
    x, shape = ins[0], [int(d) for d in ins[1]]
    shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _squeeze(a, ins):
    axes = _axes(a, ins, 1)
    return np.squeeze(ins[0]) if axes is None else np.squeeze(ins[0], axis=tuple(axes))


def _unsqueeze(a, ins):
    x = ins[0]
    for ax in sorted(ax % (x.ndim + len(_axes(a, ins, 1))) for ax in _axes(a, ins, 1)):
        x = np.expand_dims(x, ax)
    return x


def _np_type(tensor_type):
    """numpy dtype of an ONNX TensorProto data type (KeyError for an unknown one)."""
    onnx, _ = _onnx()
    convert = getattr(onnx.helper, "tensor_dtype_to_np_dtype", None)  # onnx >= 1.13; onnx.mapping before
    if convert is None:
        return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type])
    try:
        return np.dtype(convert(tensor_type))
    except (KeyError, ValueError, TypeError):
        raise KeyError(tensor_type) from None


def _cast(a, ins):
    return ins[0].astype(_np_type(a["to"]))


FOLD = {
    "Identity": lambda a, ins: ins[0],
    "Cast": _cast,
    "Slice": _slice,
    "Concat": lambda a, ins: np.concatenate([x for x in ins if x is not None], axis=a["axis"]),
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Reshape": lambda a, ins: _reshape(ins),
    "Transpose": lambda a, ins: np.transpose(ins[0], a.get("perm")),
    "Gather": lambda a, ins: np.take(ins[0], ins[1], axis=a.get("axis", 0)),
}
# Ops whose output is all zeros when their first input is (for initial states built as zeros of a shape
# computed at run time).
ZERO_PRESERVING = {"Expand", "Unsqueeze", "Squeeze", "Reshape", "Identity", "Cast", "Tile", "Transpose", "Slice",
                   "Gather"}


def _itemsize(dtype):
    """Bytes an element of `dtype` takes in memory (a Python object's for an object array: strings)."""
    return 64 if dtype.kind == "O" else dtype.itemsize


def _fold_bytes(op, a, ins):
    """The bytes FOLD[op] allocates for its result, computed from the input shapes before it runs: Gather
    and Concat multiply or add their inputs (a chain of them turns a few KB into gigabytes), Cast may widen
    each element. None for the ops that return a view of their input (or at most copy it)."""
    xs = [x for x in ins if x is not None]
    if op == "Gather" and len(xs) == 2 and np.ndim(xs[0]) >= 1:
        data, idx = np.asarray(xs[0]), np.asarray(xs[1])
        axis = int(a.get("axis", 0))
        axis = axis + data.ndim if -data.ndim <= axis < 0 else axis
        if not 0 <= axis < data.ndim:
            return None  # np.take refuses it without allocating
        return math.prod(data.shape[:axis] + data.shape[axis + 1:]) * int(idx.size) * _itemsize(data.dtype)
    if op == "Concat" and xs:
        arrays = [np.asarray(x) for x in xs]
        return sum(int(x.size) for x in arrays) * _itemsize(np.result_type(*arrays))
    if op == "Cast" and xs:
        return int(np.asarray(xs[0]).size) * _itemsize(_np_type(a["to"]))
    return None


class Graph:
    """A GraphProto's nodes by output name, with constant values folded on demand.

    Every array the folder materialises (initializers, Constant values, folded results) is counted against
    one budget, the file's common.alloc_limit: a chain of Concat / Gather nodes over a small initializer
    is refused, naming the node, before the allocation that passes it."""

    def __init__(self, graph, where, opset):
        self.graph, self.where, self.opset = graph, where, opset
        for n in graph.node:
            if n.domain not in STANDARD_DOMAINS:
                raise ConvertError(f"{where}: {describe(n)} is in domain {n.domain!r}, not ONNX's own ('' or "
                                   "ai.onnx): its op is whatever that domain defines, which the converter does "
                                   "not know")
        self.producer = {o: n for n in graph.node for o in n.output if o}
        self.init = {t.name: t for t in graph.initializer}
        self.cache = {}
        self.budget, self.spent = common.alloc_limit(where), 0

    def _spend(self, nbytes, what):
        """Counts `nbytes` about to be allocated for `what` against the budget; ConvertError past it."""
        if self.spent + nbytes > self.budget:
            raise ConvertError(f"{self.where}: {what}: its constant value needs {nbytes} bytes, and the graph's "
                               f"constants would then take {self.spent + nbytes}, more than the {self.budget} "
                               "a file of this size may make the converter allocate (max(4 x the file, 64 MiB)): "
                               "a constant-folding bomb or a corrupt graph")
        self.spent += nbytes

    def _tensor(self, t):
        _, nh = _onnx()
        if t.data_location == 1:  # TensorProto.EXTERNAL
            raise ConvertError(f"{self.where}: tensor {t.name!r} is stored in an external file; only "
                               "self-contained .onnx files are read")
        what = f"tensor {t.name!r}"
        try:
            itemsize = _itemsize(_np_type(t.data_type))
        except KeyError:
            raise ConvertError(f"{self.where}: {what}: unknown data type {t.data_type}") from None
        count = common.checked_count(list(t.dims), itemsize, self.budget, f"{self.where}: {what}")
        self._spend(count * itemsize, what)
        return nh.to_array(t)

    def const(self, name):
        """The value of `name` when it is an initializer or computed from constants only, else None."""
        if name not in self.cache:
            self.cache[name] = self._const(name)
        return self.cache[name]

    def _const(self, name):
        if name in self.init:
            return self._tensor(self.init[name])
        n = self.producer.get(name)
        if n is None:
            return None
        a = attrs(n)
        if n.op_type == "Constant":
            if "value" not in a:
                raise ConvertError(f"{self.where}: {describe(n)}: only a tensor `value` is read")
            return self._tensor(a["value"])
        if n.op_type not in FOLD:
            return None
        ins = [self.const(i) if i else None for i in n.input]
        if any(v is None for i, v in zip(n.input, ins) if i):
            return None
        need = _fold_bytes(n.op_type, a, ins)
        if need is not None:
            self._spend(need, describe(n))
        out = FOLD[n.op_type](a, ins)
        if need is None and isinstance(out, np.ndarray) and \
                not any(isinstance(x, np.ndarray) and np.may_share_memory(out, x) for x in ins):
            self._spend(out.nbytes, describe(n))  # a view op that copied (a Reshape of a transposed array)
        return out

    def known_zero(self, name):
        """True when `name` is all zeros: a zero constant, or zeros expanded to a run-time shape."""
        v = self.const(name)
        if v is not None:
            return not np.any(v)
        n = self.producer.get(name)
        if n is None:
            return False
        if n.op_type == "ConstantOfShape":
            value = attrs(n).get("value")
            return value is None or not np.any(self._tensor(value))
        return n.op_type in ZERO_PRESERVING and self.known_zero(n.input[0])


# ------------------------------------------------------------------------------------- recurrent nodes
# Each op's default activations (the spec's), and what they are called in messages.
DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
ACTIVATION_ROLES = {"LSTM": "f, g, h", "GRU": "f, g", "RNN": "f"}


def _activations(a, where, op="LSTM"):
    """[(name lowercased, alpha, beta)] for the op's functions (LSTM f, g, h; GRU f, g; RNN f): alpha / beta
    are consumed in order by the functions that take them, as the op's spec and onnxruntime read them."""
    names = a.get("activations", DEFAULT_ACTIVATIONS[op])
    if len(names) != len(DEFAULT_ACTIVATIONS[op]):
        raise ConvertError(f"{where}: {len(names)} activations; a forward {op} has {len(DEFAULT_ACTIVATIONS[op])} "
                           f"({ACTIVATION_ROLES[op]})")
    alphas, betas = list(a.get("activation_alpha", [])), list(a.get("activation_beta", []))
    out = []
    for name in names:
        key = name.lower()
        p = ACT_PARAMS.get(key, "")
        dflt = HARD_SIGMOID_DEFAULTS if key == "hardsigmoid" else (None, None)
        alpha = alphas.pop(0) if "a" in p and alphas else dflt[0]
        beta = betas.pop(0) if "b" in p and betas else dflt[1]
        out.append((key, alpha, beta))
    return out


def _recurrent_activation(f, where):
    key, alpha, beta = f
    if key == "sigmoid":
        return "sigmoid"
    if key == "hardsigmoid":
        # Attributes are float32: the one nearest 1/6 is Keras 3's hard_sigmoid, relu6(x + 3) / 6.
        if np.float32(alpha) == np.float32(0.2) and np.float32(beta) == np.float32(0.5):
            return "hard_sigmoid"
        if np.float32(alpha) == np.float32(1 / 6) and np.float32(beta) == np.float32(0.5):
            return "hard_sigmoid_keras3"
        raise ConvertError(f"{where}: HardSigmoid alpha {alpha} beta {beta}; lstmlm's hard sigmoids are "
                           "clip(0.2x + 0.5, 0, 1) (alpha 0.2, beta 0.5: Keras 2's) and clip(x/6 + 0.5, 0, 1) "
                           "(alpha 1/6, beta 0.5: Keras 3's) only")
    raise ConvertError(f"{where}: gate activation (f) {key}; lstmlm supports Sigmoid and HardSigmoid")


def _cell_activation(g, h, where):
    """The format's one cell activation (of g and of c in h = o act(c)): ONNX names one for each, lstmlm
    needs them equal. Tanh (format v1); Relu, Sigmoid and Affine with alpha 1, beta 0 (= linear), format v2."""
    ng, nh = _activation_name(g), _activation_name(h)
    if ng is None or nh is None or ng != nh:
        raise ConvertError(f"{where}: cell activations g={g[0]}, h={h[0]}; lstmlm's cell has one activation "
                           "for both, Tanh, Relu, Sigmoid or Affine(alpha 1, beta 0)")
    return ng


def _activation_name(act):
    """The format's name of an ONNX cell activation: Tanh, Relu, Sigmoid, Affine with alpha 1, beta 0 (linear);
    None for any other."""
    key, alpha, beta = act
    if key == "affine" and (alpha in (None, 1.0)) and (beta in (None, 0.0)):
        return "linear"
    return {"tanh": "tanh", "relu": "relu", "sigmoid": "sigmoid"}.get(key)


def _check_options(node, a, where):
    direction = a.get("direction", "forward")
    if direction != "forward":
        raise ConvertError(f"{where}: direction {direction}; only forward {node.op_type}s are supported")
    if a.get("input_forget", 0):
        raise ConvertError(f"{where}: input_forget={a['input_forget']} (coupled input and forget gates) is "
                           "not supported")
    if "clip" in a:
        # The spec: "Clipping bounds the elements of a tensor in the range of [-threshold, +threshold] and is
        # applied to the input of activations", i.e. every gate's pre-activation: no field of the format does
        # that (an LSTM's cell_clip bounds c, after the activations).
        what = "lstmlm's cell_clip clips the cell state, which is not the same" if node.op_type == "LSTM" else \
            f"lstmlm's {node.op_type} cell has no such clip"
        raise ConvertError(f"{where}: clip={a['clip']} clips the gates' inputs before their activations; {what}")
    if a.get("layout", 0) not in (0, 1):
        raise ConvertError(f"{where}: layout {a['layout']} (0 or 1)")


def _array(value, name, shape, where, what):
    v = value(name) if name else None
    if v is None:
        raise ConvertError(f"{where}: {what} ({name!r}) is not a constant of the graph")
    v = np.asarray(v, dtype=np.float64)
    if v.shape != shape:
        raise ConvertError(f"{where}: {what} has shape {list(v.shape)}, expected {list(shape)}")
    return v


def _reorder(x, hidden, order=IOFC_TO_IFGO):
    """Gate blocks (axis 0) in ONNX's order -> lstmlm's: i, o, f, c -> i, f, g, o (LSTM), z, r, h -> r, z, n
    (GRU with order=ZRH_TO_RZN)."""
    return np.concatenate([x[k * hidden:(k + 1) * hidden] for k in order], axis=0)


def _weights(node, a, value, is_zero, where, states):
    """(inputs padded to 8, hidden, W [G·H, in], R [G·H, H], B [2·G·H]) of a forward recurrent node, with the
    inputs lstmlm cannot run refused: sequence_lens, a non-zero initial state (`states`: the inputs' indices
    and names)."""
    _check_options(node, a, where)
    gates = RECURRENT_OPS[node.op_type]
    ins = list(node.input) + [""] * (8 - len(node.input))
    if ins[4]:
        raise ConvertError(f"{where}: sequence_lens is given; lstmlm runs every step of its input")
    for k, what in states:
        if ins[k] and not is_zero(ins[k]):
            raise ConvertError(f"{where}: {what} is not all zeros; lstmlm starts from the zero state")
    r = value(ins[2]) if ins[2] else None
    if r is None or np.ndim(r) != 3:
        raise ConvertError(f"{where}: R ({ins[2]!r}) is not a constant [1, {gates}H, H]")
    hidden = int(a.get("hidden_size", np.shape(r)[2]))
    w = value(ins[1]) if ins[1] else None
    if w is None or np.ndim(w) != 3:
        raise ConvertError(f"{where}: W ({ins[1]!r}) is not a constant [1, {gates}H, input]")
    w = _array(value, ins[1], (1, gates * hidden, np.shape(w)[2]), where, "W")[0]
    r = _array(value, ins[2], (1, gates * hidden, hidden), where, "R")[0]
    b = _array(value, ins[3], (1, 2 * gates * hidden), where, "B")[0] if ins[3] else np.zeros(2 * gates * hidden)
    return ins, hidden, w, r, b


def lstm_node(node, value, is_zero, where):
    """One forward LSTM node in canonical form: {cell "lstm", hidden_size, weight_ih [4H, in], weight_hh
    [4H, H], bias [4H] (Wb + Rb), peepholes (bool) and weight_ci / weight_cf / weight_co [H] when P is not
    zero, recurrent_activation, activation, layout}. value(name) -> array or None (not constant),
    is_zero(name) -> bool for the initial states. Refuses what lstmlm's cell does not compute."""
    where = f"{where}: {describe(node)}"
    a = attrs(node)
    ins, hidden, w, r, b = _weights(node, a, value, is_zero, where, ((5, "initial_h"), (6, "initial_c")))
    f, g, h = _activations(a, where)
    out = {"cell": "lstm", "hidden_size": hidden, "weight_ih": _reorder(w, hidden),
           "weight_hh": _reorder(r, hidden), "bias": _reorder(b[:4 * hidden] + b[4 * hidden:], hidden),
           "recurrent_activation": _recurrent_activation(f, where), "activation": _cell_activation(g, h, where),
           "layout": a.get("layout", 0), "peepholes": False}
    if ins[7] and not is_zero(ins[7]):
        # P [1, 3H] holds the input, output and forget gates' peepholes, in that order (the spec's P[iof]):
        # i and f read c_{t-1}, o reads c_t, as the format's peephole LSTM does.
        p = _array(value, ins[7], (1, 3 * hidden), where, "P (peepholes)")[0]
        out.update(peepholes=True, weight_ci=p[:hidden], weight_co=p[hidden:2 * hidden],
                   weight_cf=p[2 * hidden:])
    return out


def gru_node(node, value, is_zero, where):
    """One forward GRU node in canonical form: {cell "gru", hidden_size, weight_ih [3H, in], weight_hh [3H, H],
    bias_ih, bias_hh [3H] (Wb, Rb) in gate order r, z, n, reset_after (linear_before_reset != 0),
    recurrent_activation, activation, layout}."""
    where = f"{where}: {describe(node)}"
    a = attrs(node)
    _, hidden, w, r, b = _weights(node, a, value, is_zero, where, ((5, "initial_h"),))
    lbr = a.get("linear_before_reset", 0)
    if isinstance(lbr, bool) or not isinstance(lbr, int):
        raise ConvertError(f"{where}: linear_before_reset is {common.brief(lbr)}, expected an integer (the op's "
                           "int attribute)")
    f, g = _activations(a, where, "GRU")
    activation = _activation_name(g)
    if activation is None:
        raise ConvertError(f"{where}: activation (g) {g[0]}; lstmlm's GRU runs Tanh, Relu, Sigmoid or "
                           "Affine(alpha 1, beta 0)")
    return {"cell": "gru", "hidden_size": hidden, "weight_ih": _reorder(w, hidden, ZRH_TO_RZN),
            "weight_hh": _reorder(r, hidden, ZRH_TO_RZN), "bias_ih": _reorder(b[:3 * hidden], hidden, ZRH_TO_RZN),
            "bias_hh": _reorder(b[3 * hidden:], hidden, ZRH_TO_RZN),
            "reset_after": lbr != 0,
            "recurrent_activation": _recurrent_activation(f, where), "activation": activation,
            "layout": a.get("layout", 0)}


def rnn_node(node, value, is_zero, where):
    """One forward RNN node in canonical form: {cell "rnn", hidden_size, weight_ih [H, in], weight_hh [H, H],
    bias_ih, bias_hh [H], activation (tanh or relu), layout}."""
    where = f"{where}: {describe(node)}"
    a = attrs(node)
    _, hidden, w, r, b = _weights(node, a, value, is_zero, where, ((5, "initial_h"),))
    (f,) = _activations(a, where, "RNN")
    activation = {"tanh": "tanh", "relu": "relu"}.get(_activation_name(f))
    if activation is None:
        raise ConvertError(f"{where}: activation {f[0]}; lstmlm's simple RNN runs Tanh or Relu")
    return {"cell": "rnn", "hidden_size": hidden, "weight_ih": w, "weight_hh": r, "bias_ih": b[:hidden],
            "bias_hh": b[hidden:], "activation": activation, "layout": a.get("layout", 0)}


NODE_READERS = {"LSTM": lstm_node, "GRU": gru_node, "RNN": rnn_node}


def recurrent_node(node, value, is_zero, where):
    """The canonical form of an LSTM, GRU or RNN node (lstm_node, gru_node, rnn_node)."""
    return NODE_READERS[node.op_type](node, value, is_zero, where)


# ----------------------------------------------------------------------------------------- graph walk
class _Walker:
    """Walks back from the graph's one output: [Softmax] <- Dense <- LSTM / GRU / RNN... <- Gather(embedding)."""

    def __init__(self, g):
        self.g, self.where = g, g.where
        self.first = "LSTM"  # the first recurrent node's op, for messages

    def node(self, name, expected):
        n = self.g.producer.get(name)
        if n is None:
            raise ConvertError(f"{self.where}: value {name!r} is a graph input or constant where {expected} "
                               "was expected")
        return n

    def skip(self, name):
        """Back over selection / reshape ops to the value they come from."""
        n, seen = self.g.producer.get(name), set()
        while n is not None and n.op_type in PASS_THROUGH and self.g.const(name) is None:
            if n.op_type == "Gather" and self.g.const(n.input[1]) is None:
                break  # a Gather on a non-constant index is the embedding lookup
            self.acyclic(n, seen)
            name = n.input[0]
            n = self.g.producer.get(name)
        return name

    def acyclic(self, n, seen):
        """Adds n to seen; a node met twice walking back is a cycle (not a valid ONNX graph)."""
        if id(n) in seen:
            raise ConvertError(f"{self.where}: {describe(n)} is its own input (a cycle in the graph)")
        seen.add(id(n))

    def softmax(self, name, out_rank):
        n = self.node(name, "the output Dense")
        if n.op_type not in ("Softmax", "LogSoftmax"):
            return name
        axis = attrs(n).get("axis", 1 if self.g.opset < 13 else -1)
        if axis != -1 and not (out_rank is not None and axis == out_rank - 1):
            raise ConvertError(f"{self.where}: {describe(n)} over axis {axis}; only the last axis")
        return n.input[0]

    def dense(self, name):
        """(x name, weight [V, in], bias [V]) of MatMul [+ Add] or Gemm."""
        n = self.node(name, "the output Dense")
        bias = None
        if n.op_type == "Add":
            consts = [self.g.const(i) for i in n.input]
            k = 1 if consts[1] is not None else 0
            if consts[k] is None or consts[1 - k] is not None:
                raise ConvertError(f"{self.where}: {describe(n)} is not a bias add (one constant operand)")
            bias = np.asarray(consts[k], dtype=np.float64).reshape(-1)
            n = self.node(n.input[1 - k], "the output MatMul")
        if n.op_type == "MatMul":
            w = self.g.const(n.input[1])
            if w is None or np.ndim(w) != 2:
                raise ConvertError(f"{self.where}: {describe(n)}: the weight is not a constant matrix")
            w = np.asarray(w, dtype=np.float64).T
        elif n.op_type == "Gemm" and bias is None:
            w, bias = self._gemm(n)
        else:
            raise ConvertError(f"{self.where}: {describe(n)} where the output Dense (MatMul + Add, Gemm) was "
                               "expected; nothing else may follow the last recurrent layer")
        bias = np.zeros(w.shape[0]) if bias is None else bias
        if bias.shape != (w.shape[0],):
            raise ConvertError(f"{self.where}: {describe(n)}: bias of {bias.size} values for {w.shape[0]} outputs")
        return n.input[0], w, bias

    def _gemm(self, n):
        a = attrs(n)
        if a.get("transA", 0):
            raise ConvertError(f"{self.where}: {describe(n)}: transA=1 is not a Dense layer")
        w = self.g.const(n.input[1])
        c = self.g.const(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if w is None or np.ndim(w) != 2 or (len(n.input) > 2 and n.input[2] and c is None):
            raise ConvertError(f"{self.where}: {describe(n)}: B and C must be constants")
        w = np.asarray(w, dtype=np.float64) * a.get("alpha", 1.0)
        w = w if a.get("transB", 0) else w.T
        bias = None if c is None else np.asarray(c, dtype=np.float64).reshape(-1) * a.get("beta", 1.0)
        return w, bias

    def lstms(self, name):
        """(input name, [LSTM / GRU / RNN nodes first to last]); the last may give Y or Y_h, the others Y."""
        nodes, seen = [], set()
        while True:
            n = self.g.producer.get(name)
            if n is None or n.op_type not in RECURRENT_OPS:
                break
            self.acyclic(n, seen)
            k = list(n.output).index(name)
            if k == 2 or (k == 1 and nodes):
                raise ConvertError(f"{self.where}: {describe(n)}: its output {OUTPUT_NAMES[k]} feeds the model; "
                                   "lstmlm passes every step's h on")
            nodes.insert(0, n)
            name = self.skip(n.input[0])
        if not nodes:
            n = self.g.producer.get(name)
            what = describe(n) if n is not None else f"value {name!r}"
            raise ConvertError(f"{self.where}: {what} feeds the output Dense; expected an LSTM, GRU or RNN node")
        return name, nodes

    def embedding(self, name):
        if name not in self.g.producer:
            raise ConvertError(f"{self.where}: the first {self.first} reads {name!r}, a graph input or constant, "
                               "not token ids looked up in an embedding (Gather on a constant [V, E] matrix)")
        n = self.g.producer[name]
        data = self.g.const(n.input[0]) if n.op_type == "Gather" else None
        if data is None or np.ndim(data) != 2 or attrs(n).get("axis", 0) != 0:
            raise ConvertError(f"{self.where}: {describe(n)} feeds the first {self.first}; expected the "
                               "embedding lookup (Gather on a constant [V, E] matrix)")
        return np.asarray(data, dtype=np.float64)


def opset(m):
    """The model's ai.onnx opset version."""
    return max([o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] or [1])


def input_length(m, g, first_lstm):
    """A tf2onnx (Keras) model's fixed input window: the dimension of the id input that becomes the first
    LSTM's time axis, when fixed (Keras Input(shape=(N,))) and only Transposes lie between. None otherwise,
    and for other producers, whose fixed shapes are the traced example's (torch.onnx without dynamic_axes)."""
    if not m.producer_name.startswith("tf2onnx"):
        return None
    axis, name = attrs(first_lstm).get("layout", 0), first_lstm.input[0]
    n = g.producer.get(name)
    while n is not None and n.op_type in ("Transpose", "Identity"):
        axis = attrs(n)["perm"][axis] if n.op_type == "Transpose" and "perm" in attrs(n) else axis
        n = g.producer.get(n.input[0])
    if n is None or n.op_type != "Gather":
        return None
    name = n.input[1]
    while name in g.producer and g.producer[name].op_type in ("Cast", "Identity"):
        name = g.producer[name].input[0]
    inputs = {i.name: i for i in g.graph.input}
    dims = inputs[name].type.tensor_type.shape.dim if name in inputs else []
    if len(dims) != 2 or axis > 1 or dims[axis].dim_value < 1:
        return None
    return dims[axis].dim_value


def _check_dims(emb, layers, w_dec, where):
    in_dim = emb.shape[1]
    for k, l in enumerate(layers):
        if l["weight_ih"].shape[1] != in_dim:
            raise ConvertError(f"{where}: {l['cell'].upper()} layer {k} reads {l['weight_ih'].shape[1]} inputs, the "
                               f"layer before gives {in_dim}")
        in_dim = l["hidden_size"]
    if w_dec.shape[1] != in_dim:
        raise ConvertError(f"{where}: the output Dense reads {w_dec.shape[1]} inputs, the last "
                           f"{layers[-1]['cell'].upper()} gives {in_dim}")
    if w_dec.shape[0] != emb.shape[0]:
        raise ConvertError(f"{where}: {w_dec.shape[0]} outputs but the embedding has {emb.shape[0]} ids; lstmlm "
                           "needs one vocabulary for both")


def load(path):
    """The ModelProto of `path`; a file that is not one (or is truncated) is one ConvertError."""
    onnx, _ = _onnx()
    try:
        with warnings.catch_warnings():  # onnx warns of bytes left over: that is a damaged file too
            warnings.simplefilter("error", RuntimeWarning)
            m = onnx.load(path, load_external_data=False)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise ConvertError(f"{path}: not a readable ONNX model (protobuf decoding failed: "
                           f"{type(e).__name__}: {e}); truncated or not an .onnx file") from None
    if not m.ir_version or not m.graph.node:
        raise ConvertError(f"{path}: not an ONNX model (no IR version or no graph nodes)")
    return m


def read_graph(m, where):
    """Walks the model's graph; returns (embedding [V, E], [recurrent_node dicts], decoder weight, bias,
    input_length or None)."""
    g = Graph(m.graph, where, opset(m))
    if len(m.graph.output) != 1:
        raise ConvertError(f"{where}: the graph has {len(m.graph.output)} outputs "
                           f"({', '.join(o.name for o in m.graph.output)}); a language model has one")
    out = m.graph.output[0]
    dims = out.type.tensor_type.shape.dim if out.type.tensor_type.HasField("shape") else None
    wk = _Walker(g)
    x, w_dec, b_dec = wk.dense(wk.skip(wk.softmax(out.name, len(dims) if dims is not None else None)))
    x, nodes = wk.lstms(wk.skip(x))
    wk.first = nodes[0].op_type
    emb = wk.embedding(x)
    layers = [recurrent_node(n, g.const, g.known_zero, where) for n in nodes]
    _check_dims(emb, layers, w_dec, where)
    return emb, layers, w_dec, b_dec, input_length(m, g, nodes[0])


def convert(path, args):
    m = load(path)
    emb, layers, w_dec, b_dec, length = read_graph(m, path)
    tensors, config_layers = {tensor_names.embedding: emb}, []
    for k, l in enumerate(layers):
        cell = l["cell"]
        tensors[tensor_names.weight_ih(k, cell=cell)] = l["weight_ih"]
        tensors[tensor_names.weight_hh(k, cell=cell)] = l["weight_hh"]
        if cell == "lstm":
            tensors[tensor_names.bias_ih(k)] = l["bias"]
            if l["peepholes"]:
                for key in ("weight_ci", "weight_cf", "weight_co"):
                    tensors[getattr(tensor_names, key)(k)] = l[key]
            config_layers.append(fmt_layer(l["hidden_size"], recurrent_activation=l["recurrent_activation"],
                                           activation=l["activation"], peepholes=l["peepholes"]))
            continue
        tensors[tensor_names.bias_ih(k, cell=cell)] = l["bias_ih"]
        tensors[tensor_names.bias_hh(k, cell=cell)] = l["bias_hh"]
        if cell == "gru":
            config_layers.append(fmt_gru_layer(l["hidden_size"], reset_after=l["reset_after"],
                                               recurrent_activation=l["recurrent_activation"],
                                               activation=l["activation"]))
        else:
            config_layers.append(fmt_rnn_layer(l["hidden_size"], activation=l["activation"]))
    tensors[tensor_names.decoder_weight] = w_dec
    tensors[tensor_names.decoder_bias] = b_dec
    source = {"framework": "onnx", "file": os.path.basename(path), "exporter": "lstmlm-convert",
              "producer": f"{m.producer_name} {m.producer_version}".strip(), "opset": opset(m)}
    kwargs = common.assemble(args, size=emb.shape[0], tensors=tensors, embedding_dim=emb.shape[1],
                             layers=config_layers, tied=False, source=source, where=path)
    if length is not None:
        kwargs["input_length"] = length
    return kwargs
