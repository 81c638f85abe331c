"""Hostile sources the converters refuse: malformed pickles and archives (never a Python traceback), small
files that declare gigabytes, options and vocabularies that would produce a model lstmlm
refuses, and partial output directories. Every refusal is exit 1
and one stderr line `lstmlm-convert: error: ...` naming the file; every hostile conversion runs under a 2 GB
address-space cap, so an allocation the converter should have refused fails the test instead of the machine."""
import json
import os
import pickle
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

import pyutil
import tf1_ckpt_writer

MEMORY_CAP = 2 << 30


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


# --- pickle opcodes, for pickles no Python object would produce (protocol 2) ----------------------------------
def p_global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_int(n):
    return b"J" + struct.pack("<i", n)


def p_tuple(*items):
    return b"(" + b"".join(items) + b"t"


def p_dict(pairs):
    return b"}(" + b"".join(k + v for k, v in pairs) + b"u"


P_NONE, P_FALSE = b"N", b"\x89"


def p_tensor(key, numel, size, stride, offset=p_int(0), storage="FloatStorage"):
    """torch._utils._rebuild_tensor_v2(<persistent storage `key`>, offset, size, stride, False, {}), the way
    torch.save writes a tensor; size/stride/offset are opcode bytes, so they can be any pickled object."""
    pid = p_tuple(p_str("storage"), p_global("torch", storage), p_str(key), p_str("cpu"), p_int(numel)) + b"Q"
    return p_global("torch._utils", "_rebuild_tensor_v2") + p_tuple(pid, offset, size, stride, P_FALSE,
                                                                    p_dict([])) + b"R"


def p_program(body):
    return b"\x80\x02" + body + b"."


def write_torch_zip(path, pkl, storages=(), compression=zipfile.ZIP_STORED):
    """A torch.save-style zip: archive/data.pkl, archive/data/<key> for each (key, bytes), archive/version."""
    with zipfile.ZipFile(path, "w", compression) as z:
        z.writestr("archive/data.pkl", pkl)
        for key, raw in storages:
            z.writestr(f"archive/data/{key}", raw)
        z.writestr("archive/version", "3\n")
    return path


def patch_zip_headers(path, flag_bits=None, method=None):
    """Sets the general-purpose flags and/or the compression method of every entry, in the local headers
    and the central directory (zipfile cannot write encrypted entries or unknown methods)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    for sig, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        pos = data.find(sig)
        while pos >= 0:
            if flag_bits is not None:
                struct.pack_into("<H", data, pos + flag_at, struct.unpack_from("<H", data, pos + flag_at)[0] |
                                 flag_bits)
            if method is not None:
                struct.pack_into("<H", data, pos + method_at, method)
            pos = data.find(sig, pos + 4)
    with open(path, "wb") as f:
        f.write(data)


def tiny_state_dict(V=5, E=3, H=2, **override):
    """A valid Embedding -> LSTM -> Linear state_dict (float32 numpy), with entries replaced by `override`."""
    rng = np.random.default_rng(0)
    sd = {"encoder.weight": rng.standard_normal((V, E)), "lstm.weight_ih_l0": rng.standard_normal((4 * H, E)),
          "lstm.weight_hh_l0": rng.standard_normal((4 * H, H)), "lstm.bias_ih_l0": np.zeros(4 * H),
          "lstm.bias_hh_l0": np.zeros(4 * H), "decoder.weight": rng.standard_normal((V, H)),
          "decoder.bias": np.zeros(V)}
    sd.update(override)
    return {k: np.asarray(v, dtype=np.float32) for k, v in sd.items()}


def save_state_dict(path, sd):
    """torch.save of the state_dict as torch writes it (torch is a test dependency only)."""
    import torch
    torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, path)
    return path


class Hostile2Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_hostile2_")
        self.out = self.path("out")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run_convert(self, *args):
        return subprocess.run([sys.executable, os.path.join(pyutil.TOOLS, "convert.py"), *args, self.out],
                              capture_output=True, text=True, preexec_fn=_cap_memory, timeout=300)

    def refused(self, *args, names=(), status=1):
        """Runs convert.py and checks the refusal: exit 1, no traceback, exactly one stderr line starting
        `lstmlm-convert: error: ` holding each of `names`, and no output directory (nor a temporary one)."""
        r = self.run_convert(*args)
        self.assertEqual(r.returncode, status, f"stdout={r.stdout!r} stderr={r.stderr!r}")
        self.assertNotIn("Traceback", r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("lstmlm-convert: error: "), lines[0])
        for n in names:
            self.assertIn(n, lines[0])
        self.assertFalse(os.path.exists(self.out), "a refused conversion left an output directory")
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("out.tmp-")], [])
        return lines[0]

    def vocab_file(self, n=5):
        p = self.path("vocab.txt")
        with open(p, "w", encoding="utf-8") as f:
            f.write("".join(f"w{i}\n" for i in range(n)))
        return p


# ------------------------------------------------------------------------ 0. a --from that names another kind
class WrongFromTest(Hostile2Base):
    """`--from` naming another framework than the file's bytes: the file's kind and the option to use, not the
    wrong reader's error (h5py's `file signature not found`, torch's advice on old files)."""

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        return self.path(name)

    def test_the_bytes_say_what_the_file_is(self):
        onnx = self.write("model.onnx", b"\x08\x07\x12\x07pytorch" + bytes(64))
        h5 = self.write("model.h5", b"\x89HDF\r\n\x1a\n" + bytes(64))
        pkl = self.write("model.bin", pickle.dumps({"w": [1.0]}, protocol=2))
        pt = write_torch_zip(self.path("model.pt"), p_program(p_dict([])))
        cases = [(onnx, "keras", "an ONNX file, not a Keras one: drop --from or use --from onnx"),
                 (h5, "torch_pt", "a Keras HDF5 file, not a PyTorch one: drop --from or use --from keras"),
                 (h5, "onnx", "a Keras HDF5 file, not an ONNX one: drop --from or use --from keras"),
                 (pkl, "keras", "not a Keras one: drop --from or use --from torch_pt"),
                 (pt, "onnx", "a PyTorch file, not an ONNX one: drop --from or use --from torch_pt"),
                 (pt, "tfjs", "a PyTorch file, not a TF.js one: drop --from or use --from torch_pt")]
        for path, given, says in cases:
            line = self.refused(path, "--from", given, names=(path, says))
            self.assertEqual(line, f"lstmlm-convert: error: {path}: this is {line.split(': this is ', 1)[1]}")

    def test_real_models(self):
        onnx = pyutil.data("onnx-keras-nextword-pkrupee", "next_word_model.onnx")
        h5 = pyutil.data("keras3-ml-wordpred", "word_prediction_model.h5")
        tf1 = pyutil.data("tf1-charrnn-space")
        self.refused(onnx, "--from", "keras", names=("this is an ONNX file, not a Keras one: drop --from or use --from onnx",))
        self.refused(h5, "--from", "torch_pt",
                     names=("this is a Keras HDF5 file, not a PyTorch one: drop --from or use --from keras",))
        self.refused(tf1, "--from", "onnx", names=("this is a TF1 checkpoint, not an ONNX one: drop --from or use --from tf1",))


# ------------------------------------------------------------------------ 1. tracebacks of malformed files
class TracebackFamiliesTest(Hostile2Base):
    def test_type_error_shape_is_not_a_tuple(self):
        # A number or a dict where _rebuild_tensor_v2 expects the size / stride tuple: a TypeError inside
        # the unpickler before; now the rebuild checks its arguments.
        raw = np.zeros(4, "<f4").tobytes()
        for what, size, stride in (("int size", p_int(5), p_tuple(p_int(1))),
                                   ("dict size", p_dict([]), p_tuple(p_int(1))),
                                   ("None stride", p_tuple(p_int(4)), P_NONE)):
            with self.subTest(what):
                p = write_torch_zip(self.path("typeerr.pt"), p_program(
                    p_dict([(p_str("lstm.weight_ih_l0"), p_tensor("0", 4, size, stride))])), [("0", raw)])
                line = self.refused(p, "--from", "torch_pt", names=("typeerr.pt",))
                self.assertIn("expected a tuple of integers", line)

    def test_type_error_str_offset(self):
        raw = np.zeros(4, "<f4").tobytes()
        p = write_torch_zip(self.path("offset.pt"), p_program(p_dict([(p_str("w"), p_tensor(
            "0", 4, p_tuple(p_int(4)), p_tuple(p_int(1)), offset=p_str("0")))])), [("0", raw)])
        self.refused(p, "--from", "torch_pt", names=("offset.pt", "storage offset is str"))

    def module_pickle(self, state_pairs):
        """A pickled nn.Module (class __main__.Net, a stub) whose state dict is `state_pairs`."""
        return p_program(p_global("__main__", "Net") + b")\x81" + p_dict(state_pairs) + b"b")

    def test_attribute_error_module_dict_is_a_list(self):
        # nn.Module keeps _modules / _parameters in dicts; a file can put a list or a string there.
        for key, val in (("_modules", b"]"), ("_parameters", p_str("x"))):
            with self.subTest(key=key):
                pairs = [(p_str("_parameters"), p_dict([])), (p_str("_modules"), p_dict([]))]
                pairs = [(k, val if k == p_str(key) else v) for k, v in pairs]
                p = write_torch_zip(self.path("attr.pt"), self.module_pickle(pairs))
                self.refused(p, "--from", "torch_pt", names=("attr.pt", key, "expected a dict"))

    def test_zero_division_empty_recurrent_weight(self):
        # weight_hh [4, 0]: H = 0 was a divisor in the "which RNN is this" message.
        p = save_state_dict(self.path("zero.pt"), tiny_state_dict(**{"lstm.weight_hh_l0": np.zeros((4, 0))}))
        self.refused(p, "--vocab", self.vocab_file(), names=("zero.pt", "lstm.weight_hh_l0", "non-empty"))

    def test_deep_recursion_in_a_vocabulary_pickle(self):
        # A token that is a list nested 10^5 deep: its repr in the error message recursed.
        n = 100000
        p = self.path("deep.pkl")
        with open(p, "wb") as f:
            f.write(p_program(b"]" * n + b"a" * (n - 1)))
        model = save_state_dict(self.path("m.pt"), tiny_state_dict())
        self.refused(model, "--vocab", p, names=("deep.pkl", "entry 0", "expected a string token"))

    def test_deep_recursion_in_a_module_tree(self):
        # nn.Module stubs nested 10^5 deep (built iteratively by the pickle, walked recursively by us):
        # RecursionError is caught at the top and becomes the one line.
        n = 100000
        net = p_global("__main__", "Net") + b"q\x00"
        body = bytearray(net + b")\x81")
        for _ in range(n - 1):  # open: state dict of this level, key _modules, its dict, key m, the child
            body += b"}(" + p_str("_modules") + b"}(" + p_str("m") + b"h\x00)\x81"
        body += p_dict([(p_str("_parameters"), p_dict([])), (p_str("_modules"), p_dict([]))]) + b"b"
        for _ in range(n - 1):  # close: modules dict, then _parameters, then BUILD the level
            body += b"u" + p_str("_parameters") + p_dict([]) + b"u" + b"b"
        p = write_torch_zip(self.path("deepmod.pt"), p_program(bytes(body)))
        self.refused(p, "--from", "torch_pt", names=("deepmod.pt",))

    def test_encrypted_zip_entry(self):
        for name in ("enc.pt", "enc.keras"):
            with self.subTest(name):
                p = self.path(name)
                if name.endswith(".pt"):
                    save_state_dict(p, tiny_state_dict())
                else:
                    with zipfile.ZipFile(p, "w") as z:
                        for entry in ("config.json", "metadata.json", "model.weights.h5"):
                            z.writestr(entry, "{}")
                patch_zip_headers(p, flag_bits=1)
                self.refused(p, "--vocab", self.vocab_file(), names=(name, "is encrypted"))

    def test_unsupported_compression_method(self):
        # 6 (implode): zipfile raises NotImplementedError; 12 / 14 (bzip2 / lzma): zipfile reads them, but
        # neither torch nor Keras writes them, and their ratio makes bigger bombs: refused by name too.
        for method in (6, 12, 14, 99):
            with self.subTest(method=method):
                p = self.path(f"m{method}.pt")
                if method in (12, 14):
                    sd = tiny_state_dict()
                    save_state_dict(self.path("plain.pt"), sd)
                    with zipfile.ZipFile(self.path("plain.pt")) as src, zipfile.ZipFile(p, "w", method) as z:
                        for info in src.infolist():
                            z.writestr(info.filename, src.read(info.filename))
                else:
                    save_state_dict(p, tiny_state_dict())
                    patch_zip_headers(p, method=method)
                self.refused(p, "--from", "torch_pt", "--vocab", self.vocab_file(),
                             names=(f"m{method}.pt", "data.pkl", f"compression method {method}"))


# ------------------------------------------------------------------------------ 2. memory from small files
class DeclaredSizesTest(Hostile2Base):
    def test_stride_zero_tensor(self):
        # One stored float viewed as [10^5, 10^5] with stride 0: 40 GB once copied out of the view.
        p = write_torch_zip(self.path("stride0.pt"), p_program(p_dict([(p_str("lstm.weight_ih_l0"), p_tensor(
            "0", 1, p_tuple(p_int(100000), p_int(100000)), p_tuple(p_int(0), p_int(0))))])),
            [("0", np.zeros(1, "<f4").tobytes())])
        self.assertLess(os.path.getsize(p), 2048)
        self.refused(p, "--from", "torch_pt", names=("stride0.pt", "[100000, 100000]", "bytes"))

    def test_many_views_of_one_storage(self):
        # Each view fits (stride 1, no expansion) but 400 copies of a 4 MB storage add up: one budget.
        n = 1 << 20
        views = [(p_str(f"t{i}"), p_tensor("0", n, p_tuple(p_int(n)), p_tuple(p_int(1)))) for i in range(400)]
        p = write_torch_zip(self.path("views.pt"), p_program(p_dict(views)), [("0", bytes(4 * n))],
                            compression=zipfile.ZIP_DEFLATED)
        self.refused(p, "--from", "torch_pt", names=("views.pt", "bytes"))

    def test_storage_entry_zip_bomb(self):
        # 512 MB of zeros deflate to about 500 KB; the pickle agrees with the entry's declared size.
        n = 128 << 20
        p = self.path("bomb.pt")
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("archive/data.pkl", p_program(p_dict([(p_str("lstm.weight_ih_l0"), p_tensor(
                "0", n, p_tuple(p_int(n)), p_tuple(p_int(1))))])))
            with z.open("archive/data/0", "w", force_zip64=True) as f:
                chunk = bytes(16 << 20)
                for _ in range(4 * n // len(chunk)):
                    f.write(chunk)
        self.assertLess(os.path.getsize(p), 4 << 20)
        self.refused(p, "--from", "torch_pt", names=("bomb.pt", "archive/data/0", "zip bomb"))

    def test_storage_size_disagrees_with_the_pickle(self):
        # The pickle says 2^30 elements, the entry holds 16 bytes: refused before reading the entry.
        p = write_torch_zip(self.path("numel.pt"), p_program(p_dict([(p_str("w"), p_tensor(
            "0", 1 << 30, p_tuple(p_int(4)), p_tuple(p_int(1))))])), [("0", bytes(16))])
        self.refused(p, "--from", "torch_pt", names=("numel.pt", "storage 0", "16 bytes"))

    def h5_weights_only(self, path, make_dataset):
        """A Keras 2 save_weights file with one layer `emb` whose dataset embeddings:0 make_dataset creates."""
        import h5py
        with h5py.File(path, "w") as f:
            f.attrs["layer_names"] = [b"emb"]
            g = f.create_group("emb")
            g.attrs["weight_names"] = [b"emb/embeddings:0"]
            make_dataset(g.create_group("emb"), "embeddings:0")
        return path

    def test_h5_dataset_declared_but_never_written(self):
        p = self.h5_weights_only(self.path("unwritten.h5"),
                                 lambda g, n: g.create_dataset(n, shape=(100000, 100000), dtype="f4"))
        self.assertLess(os.path.getsize(p), 8192)
        self.refused(p, "--recurrent-activation", "sigmoid",
                     names=("unwritten.h5", "embeddings:0", "never written"))

    def test_h5_dataset_compressed_beyond_the_file(self):
        # Written, but 256 MB of zeros gzip to a few hundred KB: more than 4x the file's bytes.
        p = self.h5_weights_only(self.path("gzip.h5"), lambda g, n: g.create_dataset(
            n, data=np.zeros((8192, 8192), "f4"), chunks=(1024, 1024), compression="gzip"))
        self.assertLess(os.path.getsize(p), 4 << 20)
        self.refused(p, "--recurrent-activation", "sigmoid", names=("gzip.h5", "embeddings:0", "bytes"))

    def test_vocabulary_id_far_beyond_the_words(self):
        model = save_state_dict(self.path("m.pt"), tiny_state_dict())
        forms = {"ids.json": {"a": 1, "b": 10 ** 12},
                 "tok.json": {"class_name": "Tokenizer",
                              "config": {"word_index": json.dumps({"a": 1, "big": 2 ** 40})}},
                 "ids_limit.json": {f"w{i}": i for i in range(4)} | {"huge": 1 << 28}}
        for name, obj in forms.items():
            with self.subTest(name):
                p = self.path(name)
                with open(p, "w", encoding="utf-8") as f:
                    json.dump(obj, f)
                if name == "ids.json":
                    self.assertLess(os.path.getsize(p), 60)
                word = [w for w, i in (json.loads(obj["config"]["word_index"]) if "config" in obj else obj).items()
                        if i > 100][0]
                self.refused(model, "--vocab", p, names=(name, repr(word), "id"))


# ------------------------------------------------------------- 3. invalid output reported as success
def tf1_lstmcell_checkpoint(prefix, V=3, E=2, H=2):
    rng = np.random.default_rng(1)
    tf1_ckpt_writer.write_checkpoint(prefix, {
        "embedding": rng.standard_normal((V, E)),
        "rnnlm/multi_rnn_cell/cell_0/lstm_cell/kernel": rng.standard_normal((E + H, 4 * H)),
        "rnnlm/multi_rnn_cell/cell_0/lstm_cell/bias": rng.standard_normal(4 * H),
        "rnnlm/softmax_w": rng.standard_normal((H, V)), "rnnlm/softmax_b": rng.standard_normal(V)})
    return prefix


class InvalidOutputTest(Hostile2Base):
    def test_cell_clip_and_forget_bias_must_be_finite(self):
        prefix = tf1_lstmcell_checkpoint(self.path("model.ckpt"))
        vocab = self.vocab_file(3)
        r = self.run_convert(prefix, "--vocab", vocab, "--cell-clip", "3", "--forget-bias", "0.5")
        self.assertEqual(r.returncode, 0, r.stderr)  # the valid values still convert
        self.assertEqual(pyutil.read_config(self.out)["layers"][0]["cell_clip"], 3.0)
        shutil.rmtree(self.out)
        for opt, value in (("--cell-clip", "nan"), ("--cell-clip", "inf"), ("--cell-clip", "-inf"),
                           ("--cell-clip", "0"), ("--cell-clip", "-2"), ("--forget-bias", "nan"),
                           ("--forget-bias", "inf"), ("--forget-bias", "-inf")):
            with self.subTest(opt=opt, value=value):
                self.refused(prefix, "--vocab", vocab, f"{opt}={value}", names=(opt, repr(value)), status=2)

    def test_zero_hidden_size(self):
        sd = tiny_state_dict(**{"lstm.weight_ih_l0": np.zeros((0, 3)), "lstm.weight_hh_l0": np.zeros((0, 0)),
                                "lstm.bias_ih_l0": np.zeros(0), "lstm.bias_hh_l0": np.zeros(0),
                                "decoder.weight": np.zeros((5, 0))})
        p = save_state_dict(self.path("h0.pt"), sd)
        self.refused(p, "--vocab", self.vocab_file(), names=("h0.pt", "lstm.weight_ih_l0", "[0, 3]"))

    def test_zero_vocabulary(self):
        sd = tiny_state_dict(**{"encoder.weight": np.zeros((0, 3)), "decoder.weight": np.zeros((0, 2)),
                                "decoder.bias": np.zeros(0)})
        p = save_state_dict(self.path("v0.pt"), sd)
        self.refused(p, "--vocab", self.vocab_file(0), names=("v0.pt", "vocab_size is 0"))

    def test_keras_tokenizer_field_types(self):
        model = save_state_dict(self.path("m.pt"), tiny_state_dict())
        for field, value in (("filters", 5), ("oov_token", 7), ("num_words", "many"), ("split", ["x"])):
            with self.subTest(field=field):
                p = self.path("tok.json")
                cfg = {"word_index": json.dumps({f"w{i}": i + 1 for i in range(4)}), field: value}
                with open(p, "w", encoding="utf-8") as f:
                    json.dump({"class_name": "Tokenizer", "config": cfg}, f)
                self.refused(model, "--vocab", p, names=("tok.json", f"Tokenizer {field}"))

    def test_vocabulary_error_after_the_weights_leaves_nothing(self):
        model = save_state_dict(self.path("m.pt"), tiny_state_dict())
        self.refused(model, "--vocab", self.vocab_file(4), names=("vocab.txt", "4 ids"))


class WriterContractTest(unittest.TestCase):
    """write_model: nothing invalid written, and no half-written directory whatever fails."""

    def setUp(self):
        import lstmlm.format
        self.fmt = lstmlm.format
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_writer_")
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, tensors=None, layers=None, tokenizer=None, vocab=("a", "b", "c")):
        n = self.fmt.names
        t = {n.embedding: np.zeros((3, 2)), n.weight_ih(0): np.zeros((4, 2)), n.weight_hh(0): np.zeros((4, 1)),
             n.bias_ih(0): np.zeros(4), n.decoder_weight: np.zeros((3, 1)), n.decoder_bias: np.zeros(3)}
        t.update(tensors or {})
        self.fmt.write_model(self.out, vocab=list(vocab), embedding_dim=2, layers=layers or [self.fmt.layer(1)],
                             tied=False, tokenizer=tokenizer or self.fmt.tokenizer(), tensors=t,
                             source={"exporter": "test"})

    def leftovers(self):
        return sorted(n for n in os.listdir(self.tmp) if n != "out")

    def test_invalid_config_values_are_refused(self):
        bad = {"nan clip": dict(layers=[self.fmt.layer(1, cell_clip=float("nan"))]),
               "inf clip": dict(layers=[self.fmt.layer(1, cell_clip=float("inf"))]),
               "zero clip": dict(layers=[self.fmt.layer(1, cell_clip=0.0)]),
               "H = 0": dict(layers=[self.fmt.layer(0)]),
               "V = 0": dict(vocab=()),
               "filters 5": dict(tokenizer=self.fmt.tokenizer(filters=5)),
               "pad id out of range": dict(tokenizer=self.fmt.tokenizer(pad_id=3))}
        for what, kwargs in bad.items():
            with self.subTest(what):
                with self.assertRaises(ValueError):
                    self.write(**kwargs)
                self.assertFalse(os.path.exists(self.out))
                self.assertEqual(self.leftovers(), [])

    def test_nan_in_source_is_not_written_as_json(self):
        with self.assertRaises(ValueError):
            self.fmt.write_model(self.out, vocab=["a", "b", "c"], embedding_dim=2, layers=[self.fmt.layer(1)],
                                 tied=False, tokenizer=self.fmt.tokenizer(), tensors={},
                                 source={"forget_bias_folded": float("nan")})
        self.assertFalse(os.path.exists(self.out))
        self.assertEqual(self.leftovers(), [])

    def test_failure_while_writing_the_weights_leaves_no_directory(self):
        # config.json and vocab.json are complete when the weights fail (a tensor that is not numeric).
        with self.assertRaises(ValueError):
            self.write(tensors={self.fmt.names.decoder_bias: np.array(["x", "y", "z"])})
        self.assertFalse(os.path.exists(self.out), "a half-written model directory was left")
        self.assertEqual(self.leftovers(), [])

    def test_existing_directory_keeps_its_files_on_failure_and_is_updated_on_success(self):
        os.makedirs(self.out)
        for name, text in (("config.json", "old"), ("notes.txt", "mine")):
            with open(os.path.join(self.out, name), "w") as f:
                f.write(text)
        with self.assertRaises(ValueError):
            self.write(tensors={self.fmt.names.decoder_bias: np.array(["x", "y", "z"])})
        with open(os.path.join(self.out, "config.json")) as f:
            self.assertEqual(f.read(), "old")
        self.assertEqual(sorted(os.listdir(self.out)), ["config.json", "notes.txt"])
        self.write()
        self.assertEqual(sorted(os.listdir(self.out)), ["config.json", "notes.txt", "vocab.json",
                                                        "weights.safetensors"])
        self.assertEqual(pyutil.read_config(self.out)["vocab_size"], 3)
        self.assertEqual(self.leftovers(), [])

    def test_new_directory_has_ordinary_permissions(self):
        self.write()
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(self.out).st_mode & 0o777, 0o777 & ~mask)


# ---------------------------------------------------------------------- 4. TF1 dimensions of 2^63
class HugeDimensionsTest(Hostile2Base):
    def checkpoint_with_shape(self, shape):
        """A valid char-rnn style checkpoint whose softmax_b entry declares `shape` (its data stays 3 floats)."""
        orig = tf1_ckpt_writer._entry

        def entry(offset, raw, s, crc=True):
            return orig(offset, raw, shape if s == [3] else s, crc)
        tf1_ckpt_writer._entry = entry
        try:
            rng = np.random.default_rng(2)
            prefix = self.path("model.ckpt")
            tf1_ckpt_writer.write_checkpoint(prefix, {
                "embedding": rng.standard_normal((3, 2)),
                "rnnlm/multi_rnn_cell/cell_0/basic_lstm_cell/kernel": rng.standard_normal((4, 8)),
                "rnnlm/multi_rnn_cell/cell_0/basic_lstm_cell/bias": rng.standard_normal(8),
                "rnnlm/softmax_w": rng.standard_normal((2, 3)), "rnnlm/softmax_b": rng.standard_normal(3)})
        finally:
            tf1_ckpt_writer._entry = orig
        return prefix

    def test_dimensions_of_2_to_the_63(self):
        vocab = self.vocab_file(3)
        for shape in ([2 ** 63, 1], [2 ** 64 - 1], [2 ** 62, 4], [2 ** 32, 2 ** 32, 2 ** 32]):
            with self.subTest(shape=shape):
                prefix = self.checkpoint_with_shape(shape)
                line = self.refused(prefix, "--from", "tf1", "--vocab", vocab,
                                    names=("model.ckpt", "rnnlm/softmax_b"))
                self.assertNotIn("Warning", line)


# ----------------------------------------------------------------------- 5. third round (each builds its file)
def pb_varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_bytes(num, v):
    """A length-delimited protobuf field (wire type 2)."""
    return pb_varint(num << 3 | 2) + pb_varint(len(v)) + v


def saved_model_pb(objects):
    """saved_model.pb of a TF 2.0 - 2.4 SavedModel whose object graph holds `objects`, each a list of
    (child node id, local name): SavedModel.meta_graphs = 2 -> MetaGraphDef.object_graph_def = 7 ->
    SavedObjectGraph.nodes = 1 -> SavedObject.children = 1 -> ObjectReference {node_id = 1, local_name = 2}."""
    nodes = b"".join(pb_bytes(1, b"".join(pb_bytes(1, pb_varint(1 << 3) + pb_varint(c) + pb_bytes(2, name.encode()))
                                          for c, name in children)) for children in objects)
    return pb_bytes(2, pb_bytes(7, nodes))


def onnx_lm(W="W", V=5, E=3, H=2, extra_nodes=(), extra_inits=(), lstm_domain="", activations=None):
    """A tiny ONNX LM (ids -> Gather(emb) -> LSTM -> Squeeze -> MatMul -> Add) whose LSTM reads W from
    value `W` (an initializer of the right shape by default; extra_nodes / extra_inits may compute it)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    arrays = {"emb": (V, E), "R": (1, 4 * H, H), "B": (1, 8 * H), "dec": (H, V), "dec_b": (V,)}
    if W == "W":
        arrays["W"] = (1, 4 * H, E)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), n) for n, shape in arrays.items()]
    inits += [numpy_helper.from_array(np.array([1], np.int64), "ax1")] + list(extra_inits)
    attrs = {"hidden_size": H}
    if activations:
        attrs["activations"] = activations
    nodes = list(extra_nodes) + [
        helper.make_node("Gather", ["emb", "ids"], ["x"], axis=0, name="embedding"),
        helper.make_node("LSTM", ["x", W, "R", "B"], ["Y"], name="lstm1", domain=lstm_domain, **attrs),
        helper.make_node("Squeeze", ["Y", "ax1"], ["y"]),
        helper.make_node("MatMul", ["y", "dec"], ["logits0"]),
        helper.make_node("Add", ["logits0", "dec_b"], ["logits"])]
    g = helper.make_graph(nodes, "lm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, 1])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 1, V])], inits)
    opsets = [helper.make_opsetid("", 14)] + ([helper.make_opsetid(lstm_domain, 1)] if lstm_domain else [])
    return helper.make_model(g, opset_imports=opsets, producer_name="test")


def tfjs_model(d, layers, weights, quantization=None):
    """A TF.js layers model in directory d: model.json (Sequential of `layers`) and one shard holding
    `weights` ({name: float array}) as float32, or as uint8 codes with quantization[name] = (codes, scale,
    min)."""
    os.makedirs(d, exist_ok=True)
    quantization = quantization or {}
    blob, entries = b"", []
    for name, a in weights.items():
        e = {"name": name, "shape": list(np.shape(a)), "dtype": "float32"}
        if name in quantization:
            codes, scale, lo = quantization[name]
            e["quantization"] = {"dtype": "uint8", "scale": scale, "min": lo}
            blob += np.asarray(codes, "u1").tobytes()
        else:
            blob += np.asarray(a, "<f4").tobytes()
        entries.append(e)
    with open(os.path.join(d, "group1-shard1of1"), "wb") as f:
        f.write(blob)
    mj = {"format": "layers-model", "generatedBy": "keras v2.2.4", "convertedBy": "test",
          "modelTopology": {"keras_version": "2.2.4", "backend": "tensorflow", "model_config": {
              "class_name": "Sequential", "config": {"name": "s", "layers": layers}}},
          "weightsManifest": [{"paths": ["group1-shard1of1"], "weights": entries}] if entries else []}
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(mj, f)
    return d


def tfjs_lm_layers(V=6, E=3, H=4, lstm_class="LSTM"):
    return [{"class_name": "Embedding", "config": {"name": "emb", "input_dim": V, "output_dim": E,
                                                   "batch_input_shape": [None, None]}},
            {"class_name": lstm_class, "config": {"name": "lstm", "units": H, "activation": "tanh",
                                                  "recurrent_activation": "sigmoid", "use_bias": True}},
            {"class_name": "Dense", "config": {"name": "out", "units": V, "activation": "softmax"}}]


def tfjs_lm_weights(V=6, E=3, H=4):
    rng = np.random.default_rng(4)
    return {"emb/embeddings": rng.standard_normal((V, E)), "lstm/kernel": rng.standard_normal((E, 4 * H)),
            "lstm/recurrent_kernel": rng.standard_normal((H, 4 * H)), "lstm/bias": np.zeros(4 * H),
            "out/kernel": rng.standard_normal((H, V)), "out/bias": np.zeros(V)}


class ThirdRoundTest(Hostile2Base):
    def json_vocab(self, tokens, name="vocab.json"):
        p = self.path(name)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(tokens, f)
        return p

    def save_onnx(self, m, name):
        import onnx
        p = self.path(name)
        onnx.save(m, p)
        return p

    # 1. ONNX constant folding: every array the folder materialises counts against one budget
    def test_onnx_constant_folding_bomb(self):
        try:
            from onnx import helper, numpy_helper
        except ImportError:
            self.skipTest("python3-onnx is not installed")
        # Concat of 64 copies, three times over a 1 KB initializer: 64 KB, 4 MB, 256 MB (then 16 GB).
        concat = [helper.make_node("Concat", [src] * 64, [f"c{k}"], axis=0, name=f"bomb{k}")
                  for k, src in enumerate(["seed", "c0", "c1", "c2"])]
        seed = numpy_helper.from_array(np.zeros((1, 256), np.float32), "seed")
        # Gather of 1024 zero indices from a 4 KB row: 4 MB of zeros, cast to indices (8 MB), which then
        # gather the row again: 4 GB.
        idx = numpy_helper.from_array(np.zeros(1024, np.int64), "idx")
        row = numpy_helper.from_array(np.zeros((1, 1024), np.float32), "row")
        gather = [helper.make_node("Gather", ["row", "idx"], ["g0"], axis=0, name="gather0"),
                  helper.make_node("Cast", ["g0"], ["i0"], to=7, name="cast0"),  # INT64
                  helper.make_node("Gather", ["row", "i0"], ["g1"], axis=0, name="gather1")]
        for what, nodes, inits, out, culprit in (("concat", concat, [seed], "c3", "'bomb2'"),
                                                 ("gather", gather, [idx, row], "g1", "'gather1'")):
            with self.subTest(what):
                p = self.save_onnx(onnx_lm(W=out, extra_nodes=nodes, extra_inits=inits), f"{what}.onnx")
                self.assertLess(os.path.getsize(p), 64 << 10)
                self.refused(p, "--vocab", self.vocab_file(), names=(f"{what}.onnx", culprit, "bytes",
                                                                     "constant-folding bomb"))

    # 2. ONNX ops outside ONNX's own domain
    def test_onnx_node_in_a_custom_domain(self):
        try:
            import onnx  # noqa: F401
        except ImportError:
            self.skipTest("python3-onnx is not installed")
        vocab = self.vocab_file()
        r = self.run_convert(self.save_onnx(onnx_lm(), "plain.onnx"), "--vocab", vocab)
        self.assertEqual(r.returncode, 0, r.stderr)  # the same graph in the standard domain converts
        shutil.rmtree(self.out)
        for domain in ("com.example", "ai.onnx.ml"):
            with self.subTest(domain=domain):
                p = self.save_onnx(onnx_lm(lstm_domain=domain), "custom.onnx")
                self.refused(p, "--vocab", vocab, names=("custom.onnx", "'lstm1'", f"domain {domain!r}"))

    # 3. no converter writes a non-finite weight
    def test_tfjs_quantization_beyond_float32(self):
        weights = tfjs_lm_weights()
        vocab = self.json_vocab([f"w{i}" for i in range(6)])
        cases = {"scale 1e300": {"emb/embeddings": (np.full((6, 3), 7), 1e300, 0.0)},  # infinite in float64
                 "scale 1e38": {"emb/embeddings": (np.full((6, 3), 200), 1e38, 0.0)},  # only past float32's range
                 "min -3.4e38": {"lstm/recurrent_kernel": (np.full((4, 16), 255), -1e37, -3.4e38)}}
        d = tfjs_model(self.path("ok"), tfjs_lm_layers(), weights, {"emb/embeddings": (np.full((6, 3), 7), 0.5, -1)})
        r = self.run_convert(d, "--vocab", vocab)
        self.assertEqual(r.returncode, 0, r.stderr)  # a finite quantized model converts
        shutil.rmtree(self.out)
        for what, quant in cases.items():
            with self.subTest(what):
                shutil.rmtree(self.out, ignore_errors=True)
                d = tfjs_model(self.path(what.replace(" ", "_")), tfjs_lm_layers(), weights, quant)
                tensor = "embedding.weight" if "emb/embeddings" in quant else "lstm.weight_hh_l0"
                self.refused(d, "--vocab", vocab, names=(d, f"'{tensor}'", "non-finite", "inf"))
        with self.subTest("NaN stored as float32"):
            shutil.rmtree(self.out, ignore_errors=True)
            bad = dict(weights, **{"out/bias": np.array([0, 0, np.nan, 0, 0, 0])})
            d = tfjs_model(self.path("nan"), tfjs_lm_layers(), bad)
            self.refused(d, "--vocab", vocab, names=("'decoder.bias'", "flat index 2", "nan"))

    # 4. SavedModel object graph: bounded, and walked in linear time
    def test_savedmodel_object_graph_bounds(self):
        # The bounds of docs/errors.md: depth 64, 65,536 children, 131,072 objects, 2^24 path characters.
        depth, children, objects, chars = 64, 1 << 16, 1 << 17, 1 << 24
        cases = {
            "deep": ([[(k + 1, "a")] for k in range(1000)] + [[]], f"more than {depth} levels"),
            "wide": ([[(0, "c")] * (children + 1)], f"more than {children} children"),
            "many": ([[]] * (objects + 1), f"more than {objects} objects"),
            "long paths": ([[(k + 1, "n" * 10000)] for k in range(depth)] + [[]], f"more than {chars} characters")}
        for what, (objects, want) in cases.items():
            with self.subTest(what):
                d = self.path(what.replace(" ", "_"))
                os.makedirs(d)
                with open(os.path.join(d, "saved_model.pb"), "wb") as f:
                    f.write(saved_model_pb(objects))
                self.refused(d, "--from", "tf2", names=("saved_model.pb", want))
        # Within the bounds, breadth first through 65,793 objects (a root, 256 children, 256 grandchildren
        # each): walked, then refused for what it lacks, a Keras model config.
        d = self.path("broad")
        os.makedirs(d)
        tree = [[(1 + k, f"c{k}") for k in range(256)]]
        tree += [[(257 + 256 * k + j, f"g{j}") for j in range(256)] for k in range(256)] + [[]] * (256 * 256)
        with open(os.path.join(d, "saved_model.pb"), "wb") as f:
            f.write(saved_model_pb(tree))
        self.refused(d, "--from", "tf2", names=("saved_model.pb", "no Keras model config"))

    # 5. argparse's errors are one line too
    def test_option_errors_are_one_line(self):
        prefix = tf1_lstmcell_checkpoint(self.path("model.ckpt"))
        for args, want in ((["--frm"], "unrecognized arguments: --frm\n"),
                           (["--from", "caffe"], "argument --from: invalid choice: 'caffe' (choose from "),
                           (["--pad-id", "one"], "argument --pad-id: invalid int value: 'one'\n"),
                           (["--cell-clip", "nan"], "argument --cell-clip: 'nan' is not a finite number\n"),
                           (["--unk", "\x1b[31m", "--bos"], "argument --bos: expected one argument\n"),
                           ([], "the following arguments are required: outdir\n")):
            with self.subTest(args=args):
                r = subprocess.run([sys.executable, os.path.join(pyutil.TOOLS, "convert.py"), prefix,
                                    *([self.out] if args else []), *args], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.startswith(f"lstmlm-convert: error: {want}"), r.stderr)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        r = subprocess.run([sys.executable, os.path.join(pyutil.TOOLS, "convert.py"), "--help"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertTrue(r.stdout.startswith("usage: lstmlm-convert [-h]"), r.stdout[:200])
        self.assertIn("--cell-clip", r.stdout)

    # 6. a lone surrogate in a vocabulary
    def test_vocabulary_with_a_lone_surrogate(self):
        prefix = tf1_lstmcell_checkpoint(self.path("model.ckpt"))
        # <unk> and <eos> make the converter guess two special tokens: their notes are printed only for a
        # model written, so the refusal stays one line.
        p = self.json_vocab(["<unk>", "\ud800", "<eos>"])
        self.refused(prefix, "--vocab", p, names=("vocab.json", "token 1", "'\\ud800'", "lone surrogate"))
        p = self.json_vocab(["a", "b", "c"], "abc.json")
        self.refused(prefix, "--vocab", p, "--filters", "x\udcff", names=("tokenizer.filters", "lone surrogate"))

    # 7. names from a model file are escaped in the error line
    def assert_escaped(self, line):
        self.assertNotIn("\x1b", line)
        self.assertNotIn("\x00", line)
        self.assertIn("\\x1b[31m", line)

    def test_control_characters_in_names_are_escaped(self):
        evil = "Evil\x1b[31m\nLayer\x00"
        d = tfjs_model(self.path("tfjs"), tfjs_lm_layers(lstm_class=evil), {})
        line = self.refused(d, "--vocab", self.json_vocab([f"w{i}" for i in range(6)]),
                            names=("layer type", "Evil\\x1b[31m\\x0aLayer\\x00"))
        self.assert_escaped(line)
        try:
            import onnx  # noqa: F401
        except ImportError:
            self.skipTest("python3-onnx is not installed")
        p = self.save_onnx(onnx_lm(activations=["Sigmoid", "\x1b[31mTanh\n", "Tanh"]), "act.onnx")
        line = self.refused(p, "--vocab", self.vocab_file(), names=("cell activations", "g=\\x1b[31mtanh\\x0a,"))
        self.assert_escaped(line)
        long = self.save_onnx(onnx_lm(activations=["Sigmoid", "\x1b" * 1000, "Tanh"]), "long.onnx")
        line = self.refused(long, "--vocab", self.vocab_file(), names=("cell activations",))
        self.assertLessEqual(len(line), len("lstmlm-convert: error: ") + 500 + len("..."))
        self.assertTrue(line.endswith("..."), line[-20:])



class HostileImporterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lstmlm_hostile_")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def truncated(self, src, name, keep):
        """A copy of src cut to `keep` bytes (keep < 1: that fraction of the file)."""
        with open(src, "rb") as f:
            data = f.read()
        n = int(len(data) * keep) if keep < 1 else keep
        with open(self.path(name), "wb") as f:
            f.write(data[:n])
        return self.path(name)

    def refused(self, *args, names=()):
        """Runs convert.py and checks the refusal: exit 1, one stderr line, each of `names` in it."""
        r = pyutil.convert(*args, self.path("out"))
        self.assertEqual(r.returncode, 1, f"stdout={r.stdout!r} stderr={r.stderr!r}")
        self.assertNotIn("Traceback", r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("lstmlm-convert: error: "), lines[0])
        for n in names:
            self.assertIn(n, lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.path("out"), "weights.safetensors")))
        return lines[0]

    # --- HDF5 (Keras) ---
    def test_truncated_h5(self):
        src = pyutil.data("keras3-cs-nextword", "next_word_model1.h5")
        vocab = pyutil.data("keras3-cs-nextword", "tokenizer1.pkl")
        for keep in (0.5, 4096, 7):
            with self.subTest(keep=keep):
                p = self.truncated(src, "cut.h5", keep)
                self.refused(p, "--from", "keras", "--vocab", vocab, names=("cut.h5",))

    def test_h5_missing_dataset(self):
        import h5py
        src = pyutil.data("keras3-cs-nextword", "next_word_model1.h5")
        vocab = pyutil.data("keras3-cs-nextword", "tokenizer1.pkl")
        p = self.path("missing.h5")
        shutil.copy(src, p)
        os.chmod(p, 0o644)
        with h5py.File(p, "r+") as f:
            victims = []
            f.visititems(lambda name, obj: victims.append(name) if isinstance(obj, h5py.Dataset) and
                         "kernel" in name and "recurrent" not in name else None)
            self.assertTrue(victims)
            del f[victims[0]]
        self.refused(p, "--vocab", vocab, names=("missing.h5",))

    def test_h5_not_hdf5(self):
        p = self.path("garbage.h5")
        with open(p, "wb") as f:
            f.write(b"\x89HDF\r\n\x1a\n" + b"\x00" * 100)
        self.refused(p, "--from", "keras", names=("garbage.h5",))

    # --- TF1 checkpoints ---
    def tf1_copy(self, cut_index=None, cut_data=None):
        d = pyutil.data("tf1-charrnn-space")
        out = self.path("ckpt")
        os.makedirs(out)
        for n in os.listdir(d):
            if n.startswith("model.ckpt") and not n.endswith(".meta") or n in ("chars_vocab.pkl", "config.pkl"):
                shutil.copy(os.path.join(d, n), out)
                os.chmod(os.path.join(out, n), 0o644)
        prefix = os.path.join(out, "model.ckpt-248399")
        for suffix, keep in ((".index", cut_index), (".data-00000-of-00001", cut_data)):
            if keep is not None:
                with open(prefix + suffix, "r+b") as f:
                    size = os.path.getsize(prefix + suffix)
                    f.truncate(int(size * keep) if keep < 1 else keep)
        return prefix

    def test_truncated_tf1_data(self):
        prefix = self.tf1_copy(cut_data=0.5)
        self.refused(prefix, "--from", "tf1", names=("model.ckpt-248399",))

    def test_truncated_tf1_index(self):
        for keep in (0.5, 20):
            with self.subTest(keep=keep):
                shutil.rmtree(self.path("ckpt"), ignore_errors=True)
                prefix = self.tf1_copy(cut_index=keep)
                self.refused(prefix, "--from", "tf1", names=("model.ckpt-248399.index",))

    # --- PyTorch ---
    def test_truncated_torch_zip(self):
        src = pyutil.data("torch-charlstm-statedict", "shakespeare.pt")
        for keep in (0.5, 0.999, 100):
            with self.subTest(keep=keep):
                p = self.truncated(src, "cut.pt", keep)
                self.refused(p, "--from", "torch_pt", names=("cut.pt",))

    def test_pickle_global_outside_allow_list(self):
        class Evil:
            def __reduce__(self):
                return (os.system, ("echo pwned > " + self.marker,))
        Evil.marker = self.path("pwned")
        for proto in (2, 4):
            with self.subTest(protocol=proto):
                p = self.path(f"evil{proto}.pt")
                with zipfile.ZipFile(p, "w") as z:
                    z.writestr("archive/data.pkl", pickle.dumps({"w": Evil()}, protocol=proto))
                    z.writestr("archive/version", "3\n")
                line = self.refused(p, "--from", "torch_pt", names=("system",))
                self.assertFalse(os.path.exists(Evil.marker), "the pickle's payload ran")
                self.assertTrue("posix" in line or "os" in line, line)

    def test_pickle_vocab_global_outside_allow_list(self):
        src = pyutil.data("keras3-cs-nextword", "next_word_model1.h5")
        p = self.path("evil_vocab.pkl")
        with open(p, "wb") as f:
            # PROTO 2, GLOBAL builtins.eval, REDUCE with ("1+1",): the classic pickle exploit, by hand.
            f.write(b"\x80\x02cbuiltins\neval\nX\x03\x00\x00\x001+1\x85R.")
        self.refused(src, "--vocab", p, names=("eval",))

    def test_truncated_pickle(self):
        src = pyutil.data("keras3-cs-nextword", "next_word_model1.h5")
        p = self.truncated(pyutil.data("keras3-cs-nextword", "tokenizer1.pkl"), "cut.pkl", 0.5)
        self.refused(src, "--vocab", p, names=("cut.pkl",))


if __name__ == "__main__":
    unittest.main()
