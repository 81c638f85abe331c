"""PyTorch files: a state_dict, a dict holding one (plus e.g. the char list), or a whole pickled nn.Module
(word_language_model's RNNModel, char-rnn.pytorch's CharRNN, whose classes are not importable here). Read by
torch_file (restricted unpickler, tensors as numpy); torch itself is not needed.

Layout: [Embedding] -> nn.LSTM (any layers, optional proj_size), nn.GRU or nn.RNN (tanh or relu) -> Linear.
Without an Embedding the recurrent layers read one-hot vectors of the vocabulary (input_size = V). The
modules' tensors are already lstmlm's (format v3 names them by cell: gru.weight_ih_l0, ...).

Which cell a module is: its pickled class and `mode` when the file is a whole module, else the gate count of
its tensors (4H rows: LSTM, 3H: GRU, H: simple RNN). A simple RNN's nonlinearity is not in a state_dict:
--rnn-nonlinearity names it then (a pickled module's `mode` says it, and an option contradicting it is refused).

Speech recipes' RNN LMs are recognised by their tensor names (_recipe): icefall's RnnLmModel (its sos_id = eos_id
= 1, the vocabulary its bpe.model given with --sentencepiece), ESPnet2's SequentialRNNLM (`lm.*`) and ESPnet1's
RNNLM in ClassifierWithState (`predictor.*`, a list of LSTMCell / GRUCell), both with sos = eos = the last id.
"""
import os
import re
import string
import zipfile

import numpy as np

from ..format import gru_layer as fmt_gru_layer
from ..format import layer as fmt_layer
from ..format import names as tensor_names
from ..format import rnn_layer as fmt_rnn_layer
from ..format import CELL_GATES

from . import common, torch_file, unpickle
from . import vocab as vocab_mod
from .common import ConvertError

STATE_KEYS = ("state_dict", "model_state_dict", "model", "net", "module", "model_state")
VOCAB_KEYS = ("chars", "vocab", "itos", "idx2word", "idx_to_char", "idx2char", "tokens", "word2idx",
              "stoi", "char2idx", "char_to_idx", "word_to_idx", "idx_to_word")
EMB_HINTS = ("encoder", "embed", "emb", "wte", "lookup")
DEC_HINTS = ("decoder", "fc", "linear", "out", "proj", "head", "classifier", "dense", "softmax")


def detect(path):
    if os.path.isdir(path):
        return False
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist())
    return path.endswith((".pt", ".pth"))


def add_arguments(p):
    g = p.add_argument_group("PyTorch")
    g.add_argument("--module-name", action="append", default=[], metavar="MOD",
                   help="also accept pickled nn.Module classes from module MOD (besides __main__, model, "
                        "models); their instances become inert stubs, no code is run")
    g.add_argument("--rnn-nonlinearity", choices=("tanh", "relu"),
                   help="the nonlinearity of an nn.RNN in a state_dict (which does not record it; a pickled "
                        "module does)")


def _is_array(x):
    return isinstance(x, np.ndarray)


def _find_state_dict(obj, where):
    """(state_dict, module class map or None, extras dict)."""
    if isinstance(obj, unpickle.ModuleStub):
        return unpickle.module_state_dict(obj), unpickle.module_classes(obj), {}, obj
    if isinstance(obj, dict):
        if obj and all(isinstance(k, str) and _is_array(v) for k, v in obj.items()):
            return obj, None, {}, None
        for key in STATE_KEYS:
            val = obj.get(key)
            if isinstance(val, unpickle.ModuleStub):
                return unpickle.module_state_dict(val), unpickle.module_classes(val), obj, val
            if isinstance(val, dict) and val and all(_is_array(v) for v in val.values()):
                return val, None, obj, None
    raise ConvertError(f"{where}: holds a {type(obj).__name__} that is neither a state_dict, a dict with one "
                       f"under {'/'.join(STATE_KEYS)}, nor a pickled nn.Module")


def _vocab_from_extras(extras, where):
    for key in VOCAB_KEYS:
        val = extras.get(key)
        if val is None:
            continue
        if isinstance(val, (list, tuple)):
            v = vocab_mod._from_list(list(val), where, f"checkpoint['{key}'] (token list)")
        elif isinstance(val, dict):
            if all(isinstance(k, int) for k in val):
                v = vocab_mod._from_id_map({t: i for i, t in val.items()}, where, f"checkpoint['{key}']")
            else:
                v = vocab_mod._from_id_map(val, where, f"checkpoint['{key}']")
        elif isinstance(val, str):
            v = vocab_mod._from_list(list(val), where, f"checkpoint['{key}'] (string of chars)")
        else:
            continue
        v.path = where
        return v
    return None


def _pick(cands, hints, classes, want_cls, what, where):
    if len(cands) == 1:
        return cands[0]
    if classes is not None:
        by_cls = [k for k in cands if want_cls in classes.get(k.rsplit(".", 1)[0], "")]
        if len(by_cls) == 1:
            return by_cls[0]
    by_name = [k for k in cands if any(h in k.lower() for h in hints)]
    if len(by_name) == 1:
        return by_name[0]
    raise ConvertError(f"{where}: cannot tell which of {cands} is the {what}")


# nn.RNNBase.mode -> (the lstmlm cell, a simple RNN's activation).
MODES = {"LSTM": ("lstm", None), "GRU": ("gru", None), "RNN_TANH": ("rnn", "tanh"), "RNN_RELU": ("rnn", "relu")}
# The pickled class -> its mode when the module's state names none (an nn.RNN's depends on its nonlinearity).
MODULE_CLASSES = {"LSTM": "LSTM", "GRU": "GRU", "RNN": None}
# Rows of weight_hh per hidden unit -> the cell.
GATE_CELLS = {4: "lstm", 3: "gru", 1: "rnn"}
CELL_MODULES = {"lstm": "nn.LSTM", "gru": "nn.GRU", "rnn": "nn.RNN"}
# char-rnn.pytorch (spro) keeps no vocabulary in its file: helpers.py's all_characters is string.printable,
# an id being the index in it.
CHARRNN_CHARACTERS = string.printable


def _module_mode(root, classes, prefix, where):
    """The pickled module's nn.RNNBase mode (LSTM, GRU, RNN_TANH, RNN_RELU), or None for a state_dict;
    refuses a bidirectional module and a class that is not one of nn.LSTM, nn.GRU, nn.RNN."""
    if classes is None or root is None:
        return None
    name = prefix.rstrip(".")
    cls = classes.get(name, "")
    short = cls.rsplit(".", 1)[-1]
    if cls and short not in MODULE_CLASSES:
        raise ConvertError(f"{where}: module {name!r} is {cls}; only nn.LSTM, nn.GRU and nn.RNN are supported")
    mod = root
    for part in [p for p in name.split(".") if p]:
        mod = mod._modules[part]
    d = mod.__dict__
    if d.get("bidirectional"):
        raise ConvertError(f"{where}: module {name!r}: bidirectional=True is not supported")
    # The module's state is the file's word: a value of any type may stand where nn.RNNBase keeps a string.
    mode, nonlinearity = d.get("mode"), d.get("nonlinearity")
    if mode is None and short == "RNN" and isinstance(nonlinearity, str):
        mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}.get(nonlinearity)
    if mode is None:
        mode = MODULE_CLASSES.get(short)
        if mode is None:
            return None  # an nn.RNN that names no nonlinearity: as a state_dict, --rnn-nonlinearity says it
    if not isinstance(mode, str) or mode not in MODES:
        raise ConvertError(f"{where}: module {name!r} has mode {common.brief(mode)}; expected one of "
                           f"{', '.join(MODES)}")
    return mode


def _cell_of(prefix, hidden, w_hh, w_hr, mode, args, where):
    """(cell, a simple RNN's activation) of recurrent layer tensors; mode: the pickled module's, or None."""
    gates = w_hh.shape[0] / hidden if hidden else 0
    cell = GATE_CELLS.get(gates) if w_hr is None else "lstm" if gates == 4 else None
    if cell is None:
        raise ConvertError(f"{where}: {prefix}weight_hh_l0 has shape {list(w_hh.shape)}: {gates:g} blocks of "
                           f"H={hidden} rows, which is no LSTM (4), GRU (3) or RNN (1)")
    option = getattr(args, "rnn_nonlinearity", None)
    if mode is not None:
        mode_cell, activation = MODES[mode]
        if mode_cell != cell:
            raise ConvertError(f"{where}: module {prefix.rstrip('.')!r} has mode {mode} but its "
                               f"{prefix}weight_hh_l0 {list(w_hh.shape)} has the shape of an {CELL_MODULES[cell]}")
        if cell == "rnn" and option and option != activation:
            raise ConvertError(f"{where}: --rnn-nonlinearity {option} contradicts module "
                               f"{prefix.rstrip('.')!r}, an nn.RNN with nonlinearity {activation} (mode {mode})")
        return cell, activation
    if cell != "rnn":
        return cell, None
    if not option:
        raise ConvertError(f"{where}: {prefix}weight_ih_l0 is an nn.RNN (one block of H={hidden} rows), whose "
                           "nonlinearity a state_dict does not record: give --rnn-nonlinearity tanh or relu")
    return cell, option


def _charrnn_vocab(classes, root, size, where):
    """char-rnn.pytorch's string.printable for a pickled CharRNN of that many outputs, else None."""
    if not classes or not classes.get("", "").endswith(".CharRNN") or size != len(CHARRNN_CHARACTERS):
        return None
    v = vocab_mod._from_list(list(CHARRNN_CHARACTERS), where, "char-rnn.pytorch string.printable")
    v.path, v.kind = "", "char"
    common.note("vocabulary: string.printable, char-rnn.pytorch's all_characters (the file holds none; --vocab "
                "FILE to give another)")
    return v


ICEFALL_KEYS = ("input_embedding.weight", "output_linear.weight", "rnn.weight_ih_l0")
# ESPnet1's RNNLM (espnet/nets/pytorch_backend/lm/default.py) inside ClassifierWithState: embed, rnn.{k} (an
# LSTMCell / GRUCell each), lo.
ESPNET1_CELL_KEY = re.compile(r"predictor\.rnn\.(\d+)\.(weight_ih|weight_hh|bias_ih|bias_hh)")
ESPNET1_RENAMES = {"predictor.embed.weight": "embed.weight", "predictor.lo.weight": "decoder.weight",
                   "predictor.lo.bias": "decoder.bias"}


def _int_param(extras, key, default, where):
    value = extras.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConvertError(f"{where}: checkpoint[{key!r}] is {common.brief(value)}, expected an integer id")
    return value


def _recipe(sd, extras, where):
    """(state_dict, recipe) for the RNN LMs of speech recipes, recognised by their tensor names; the state_dict
    renamed so the generic reading below finds Embedding -> LSTM/GRU -> Linear. recipe: None, or {"name",
    "specials": the start/end ids as {"bos": id, "eos": id, "why"} (None: the last id, known once the size is),
    "espnet1": True when its units file needs <blank> and <eos> added}."""
    keys = set(sd)
    if keys and all(k.startswith("module.") for k in keys) and \
            all("module." + k in keys for k in ICEFALL_KEYS):  # saved from DistributedDataParallel
        sd = {k[len("module."):]: v for k, v in sd.items()}
        keys = set(sd)
    if all(k in keys for k in ICEFALL_KEYS):
        # icefall/rnn_lm: train.py's get_params() has sos_id = eos_id = 1 and blank_id = 0 (the <blk> and <sos/eos>
        # user symbols of its bpe.model); a training checkpoint keeps them among its keys, an exported one does not.
        sos, eos = _int_param(extras, "sos_id", 1, where), _int_param(extras, "eos_id", 1, where)
        blank = _int_param(extras, "blank_id", 0, where)
        return sd, {"name": "icefall rnn_lm RnnLmModel", "blank_id": blank,
                    "specials": {"bos": sos, "eos": eos, "why": f"icefall's sos_id {sos} and eos_id {eos}"}}
    if keys and all(k.startswith("lm.") for k in keys) and "lm.encoder.weight" in keys and \
            "lm.decoder.weight" in keys:
        # ESPnet2 ESPnetLanguageModel(lm=SequentialRNNLM): lm.encoder, lm.rnn (nn.LSTM/GRU/RNN), lm.decoder.
        return {k[len("lm."):]: v for k, v in sd.items()}, {"name": "espnet2 SequentialRNNLM", "specials": None}
    if keys and all(k.startswith("predictor.") for k in keys) and "predictor.embed.weight" in keys and \
            "predictor.lo.weight" in keys:
        out = {}
        for k, v in sd.items():
            m = ESPNET1_CELL_KEY.fullmatch(k)
            if m:
                out[f"rnn.{m.group(2)}_l{int(m.group(1))}"] = v
            elif k.startswith("predictor.rnn."):
                out[k[len("predictor."):]] = v  # an nn.LSTM's own names
            else:
                out[ESPNET1_RENAMES.get(k, k)] = v
        return out, {"name": "espnet1 RNNLM (ClassifierWithState)", "specials": None, "espnet1": True}
    return sd, None


def _espnet1_vocab(size):
    """ESPnet1's lm recipe reads its units file (`token id`, ids from 1) and adds <blank> as id 0 and <eos> last."""
    def fix(v):
        missing = [i for i, t in enumerate(v.tokens) if t is None and i > 0] if v.tokens and v.tokens[0] is None \
            else []
        if missing:  # the recipe numbers its units 1..N: a gap would shift every later id (and make one eos)
            raise vocab_mod.VocabError(f"{v.path}: ESPnet1's units file numbers its units from 1 without a gap; "
                                       f"id {missing[0]} is missing")
        if v.tokens and v.tokens[0] is None and len(v.tokens) + 1 == size:
            v = vocab_mod.Vocab(["<blank>"] + list(v.tokens[1:]) + ["<eos>"], v.form + " (+ <blank> 0, <eos> last: "
                                "ESPnet1's lm recipe)", v.path, unk_token="<unk>" if "<unk>" in v.tokens else None,
                                convention="espnet", notes=list(v.notes))
            v = vocab_mod.espnet_char_spaces(v)
        return v
    return fix


def convert(path, args):
    where = path
    try:
        obj = torch_file.load(path, extra_user_modules=getattr(args, "module_name", []) or [])
    except unpickle.UnpicklingError as e:
        raise ConvertError(f"{where}: {e}") from None
    sd, classes, extras, root = _find_state_dict(obj, where)
    sd = {k: v for k, v in sd.items() if _is_array(v)}
    sd, recipe = _recipe(sd, extras, where)
    rnn_keys = {}
    for k in sd:
        m = re.match(r"^(.*?)weight_ih_l(\d+)(_reverse)?$", k)
        if m:
            if m.group(3):
                raise ConvertError(f"{where}: tensor {k}: a bidirectional recurrent layer is not supported")
            rnn_keys.setdefault(m.group(1), []).append(int(m.group(2)))
    if len(rnn_keys) != 1:
        # Several modules: their order in the forward pass is not in the file (a state_dict's order is the
        # modules' registration order), so guessing could chain them wrongly. torch.onnx records it.
        more = "; a stack of several modules converts from its torch.onnx export" if len(rnn_keys) > 1 else ""
        raise ConvertError(f"{where}: expected one nn.LSTM, nn.GRU or nn.RNN (tensors *weight_ih_l0...), found "
                           f"{len(rnn_keys)}: {sorted(rnn_keys)}{more}")
    prefix, ks = next(iter(rnn_keys.items()))
    if sorted(ks) != list(range(len(ks))):
        raise ConvertError(f"{where}: recurrent layers {sorted(ks)} are not 0..n-1")
    mode = _module_mode(root, classes, prefix, where)
    used, tensors, layers = set(), {}, []
    in_dim = cell = activation = None
    for k in range(len(ks)):
        def t(name, required=True):
            key = f"{prefix}{name}_l{k}"
            if key not in sd:
                if required:
                    raise ConvertError(f"{where}: missing tensor {key}")
                return None
            used.add(key)
            return np.asarray(sd[key], dtype=np.float32)
        w_ih, w_hh = t("weight_ih"), t("weight_hh")
        b_ih, b_hh, w_hr = t("bias_ih", False), t("bias_hh", False), t("weight_hr", False)
        for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh), ("weight_hr", w_hr)):
            if w is not None and (w.ndim != 2 or 0 in w.shape):
                raise ConvertError(f"{where}: {prefix}{name}_l{k} has shape {list(w.shape)}, expected a "
                                   "non-empty matrix")
        hidden = w_hr.shape[1] if w_hr is not None else w_hh.shape[1]
        proj = w_hr.shape[0] if w_hr is not None else 0
        if k == 0:
            cell, activation = _cell_of(prefix, hidden, w_hh, w_hr, mode, args, where)
        G = len(CELL_GATES[cell])
        if w_ih.shape[0] != G * hidden or w_hh.shape != (G * hidden, proj or hidden):
            raise ConvertError(f"{where}: {prefix}weight_ih_l{k} {list(w_ih.shape)} / weight_hh_l{k} "
                               f"{list(w_hh.shape)}: expected [{G}H, in] and [{G}H, {'P' if proj else 'H'}] of an "
                               f"{CELL_MODULES[cell]} with H={hidden}")
        if in_dim is not None and w_ih.shape[1] != in_dim:
            raise ConvertError(f"{where}: {prefix}weight_ih_l{k} has {w_ih.shape[1]} inputs, layer {k - 1} "
                               f"gives {in_dim}")
        if k == 0:
            first_in = w_ih.shape[1]
        for name, b in (("bias_ih", b_ih), ("bias_hh", b_hh)):
            if b is not None and b.shape != (G * hidden,):
                raise ConvertError(f"{where}: {prefix}{name}_l{k} {list(b.shape)} should be [{G * hidden}]")
        if b_ih is None and b_hh is None:
            # bias=False: the layer's bias is zero, and the format wants it written (a layer without any
            # bias is refused as an exporter's omission).
            b_ih = np.zeros(G * hidden, np.float32)
        tensors[tensor_names.weight_ih(k, cell=cell)] = w_ih
        tensors[tensor_names.weight_hh(k, cell=cell)] = w_hh
        if b_ih is not None:
            tensors[tensor_names.bias_ih(k, cell=cell)] = b_ih
        if b_hh is not None:
            tensors[tensor_names.bias_hh(k, cell=cell)] = b_hh
        if w_hr is not None:
            tensors[tensor_names.weight_hr(k)] = w_hr
        if cell == "gru":
            layers.append(fmt_gru_layer(hidden))  # nn.GRU applies r to W_hn h + b_hn: reset_after
        elif cell == "rnn":
            layers.append(fmt_rnn_layer(hidden, activation=activation))
        else:
            layers.append(fmt_layer(hidden, proj_size=proj))
        in_dim = proj or hidden
    if getattr(args, "rnn_nonlinearity", None) and cell != "rnn":
        raise ConvertError(f"{where}: --rnn-nonlinearity given, but {prefix.rstrip('.') or 'the model'} is an "
                           f"{CELL_MODULES[cell]}, not an nn.RNN")
    rest = {k: v for k, v in sd.items() if k not in used}
    # Decoder: a [V, H_last] weight whose bias (if any) is [V]; embedding: a [V, E=first_in] weight.
    dec_c = [k for k, v in rest.items() if k.endswith("weight") and v.ndim == 2 and v.shape[1] == in_dim]
    dec_key = _pick(dec_c, DEC_HINTS, classes, "Linear", "output projection (Linear [V, H])", where) \
        if dec_c else None
    if dec_key is None:
        raise ConvertError(f"{where}: no output projection [V, {in_dim}] among {sorted(rest)}")
    size = rest[dec_key].shape[0]
    emb_c = [k for k, v in rest.items() if k.endswith("weight") and v.ndim == 2 and v.shape == (size, first_in)
             and (k != dec_key or False)]
    emb_key = None
    if emb_c:
        emb_key = _pick(emb_c, EMB_HINTS, classes, "Embedding", "embedding [V, E]", where)
    elif first_in != size:
        raise ConvertError(f"{where}: no embedding [{size}, {first_in}] and the LSTM input ({first_in}) is not "
                           f"one-hot over the {size} outputs")
    dec_w = np.asarray(rest.pop(dec_key), dtype=np.float32)
    dec_b_key = dec_key[: -len("weight")] + "bias"
    dec_b = rest.pop(dec_b_key, None)
    dec_b = np.zeros(size, np.float32) if dec_b is None else np.asarray(dec_b, dtype=np.float32)
    if dec_b.shape != (size,):
        raise ConvertError(f"{where}: {dec_b_key} {dec_b.shape} should be [{size}]")
    tied, emb_dim, out = False, 0, {}
    if emb_key is not None:
        emb_obj = rest.pop(emb_key)
        emb = np.asarray(emb_obj, dtype=np.float32)
        tied = emb_obj is sd[dec_key] or np.array_equal(emb, dec_w)
        out[tensor_names.embedding] = emb
        emb_dim = emb.shape[1]
    leftover = sorted(rest)
    if leftover:
        raise ConvertError(f"{where}: tensors {leftover} are not part of Embedding -> {CELL_MODULES[cell]} -> "
                           "Linear")
    out.update(tensors)
    if not tied:
        out[tensor_names.decoder_weight] = dec_w
    out[tensor_names.decoder_bias] = dec_b
    source = {"framework": "pytorch", "file": os.path.basename(path), "exporter": "lstmlm-convert",
              "format": "whole-module pickle" if classes else "state_dict",
              "tensors": {"embedding": emb_key, cell: prefix.rstrip("."), "decoder": dec_key}}
    if classes:
        source["module_class"] = classes.get("")
    source_vocab, default_eos = _vocab_from_extras(extras, where), None
    if source_vocab is None and not getattr(args, "vocab", None) and not getattr(args, "corpus_dir", None):
        source_vocab = _charrnn_vocab(classes, root, size, where)
    if source_vocab is None and not getattr(args, "vocab", None) and not getattr(args, "corpus_dir", None):
        d = os.path.dirname(os.path.abspath(path))
        if all(os.path.exists(os.path.join(d, n)) for n in ("train.txt", "valid.txt", "test.txt")):
            # word_language_model keeps no vocabulary: its data.Corpus rebuilds it from the corpus files.
            source_vocab = vocab_mod.corpus_vocab(d)
            source_vocab.path = "train.txt,valid.txt,test.txt"
    if source_vocab is not None and source_vocab.form.startswith("word_language_model") or \
            getattr(args, "corpus_dir", None):
        default_eos = "<eos>"
    specials = vocab_fix = None
    if recipe is not None:
        source["recipe"] = recipe["name"]
        specials = recipe["specials"] or {"bos": size - 1, "eos": size - 1,
                                          "why": "ESPnet's sos = eos = the last id"}
        for key in ("bos", "eos"):
            if not 0 <= specials[key] < size:
                raise ConvertError(f"{where}: the {recipe['name']}'s {key} id {specials[key]} is outside its "
                                   f"{size} outputs")
        if recipe.get("espnet1"):
            vocab_fix = _espnet1_vocab(size)
        if recipe["specials"] is None and getattr(args, "sentencepiece", None) and not getattr(args, "vocab", None):
            raise ConvertError(f"{where}: an {recipe['name']}'s ids are its token list's, not the SentencePiece "
                               "model's (asr.sh puts <blank> and <unk> first and <sos/eos> last): give its token list "
                               "with --vocab FILE (config.yaml) besides --sentencepiece")
        if source_vocab is None and not getattr(args, "vocab", None) and not getattr(args, "sentencepiece", None):
            raise ConvertError(f"{where}: a {recipe['name']} holds no vocabulary: give its SentencePiece model with "
                               "--sentencepiece FILE.model (icefall's data/lang_bpe_N/bpe.model, ESPnet's bpe.model) "
                               "or its token list with --vocab FILE (ESPnet's config.yaml, tokens.txt, units file)")
    return common.assemble(args, size=size, tensors=out, embedding_dim=emb_dim, layers=layers, tied=tied,
                           source=source, source_vocab=source_vocab, default_eos=default_eos, where=where,
                           specials=specials, vocab_fix=vocab_fix)
