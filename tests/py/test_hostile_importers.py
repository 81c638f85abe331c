"""Hostile sources through tools/convert.py as a user runs it: every one must end with exit 1 and one line
`lstmlm-convert: error: ...` naming the object at fault, never a Python traceback (docs/errors.md)."""
import os
import pickle
import shutil
import tempfile
import unittest
import zipfile

import pyutil


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
