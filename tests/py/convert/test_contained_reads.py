"""A model file never makes a converter read outside the model: HDF5 external storage, external and soft links
and virtual datasets; tensor-bundle entries without a checksum; symbolic links that leave the directory the user
gave; FIFOs and devices where a model's file should be. Each hostile model is built here from a real one, with a
"secret" file outside it that the crafted model points to; every one must be refused (exit 1, one stderr line
naming the file) before a byte of the secret reaches the weights, and each is paired with the same construction
kept inside the model, which still converts."""
import json
import os
import shutil
import subprocess
import sys
import unittest
import zipfile

import numpy as np

import pyutil
import tf1_ckpt_writer

TMP = pyutil.temp_root("lstmlm_contained_")
# A refusal happens before anything is read: a converter that opened the FIFO would block, so a hang is a failure.
TIMEOUT = 120


class ContainedBase(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(TMP, self.id().rsplit(".", 1)[-1])
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.outside = os.path.join(self.dir, "outside")
        os.makedirs(self.outside)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def secret(self, nbytes, name="secret.bin"):
        """A file outside every model, of float32 bytes that no model here holds."""
        p = os.path.join(self.outside, name)
        np.full(nbytes // 4, 1234.5, "<f4").tofile(p)
        return p

    def run_convert(self, *args):
        out = self.path("out")
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run([sys.executable, os.path.join(pyutil.TOOLS, "convert.py"), *args, out],
                           capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        return r, out

    def refused(self, *args, names=()):
        r, out = self.run_convert(*args)
        self.assertEqual(r.returncode, 1, f"stdout={r.stdout!r} stderr={r.stderr!r}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("lstmlm-convert: error: "), lines[0])
        for n in names:
            self.assertIn(n, lines[0])
        self.assertFalse(os.path.exists(os.path.join(out, "weights.safetensors")))
        return lines[0]

    def converts(self, *args):
        r, out = self.run_convert(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out


# ---------------------------------------------------------------------------------------------- HDF5 (Keras)
def first_weight(f):
    """(group, name, dataset) of the first dataset under model_weights (or the root of a weights-only file)."""
    import h5py
    found = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.size > 1:
            found.append(name)
            return True
        return None
    f.visititems(visit)
    name = found[0]
    group, leaf = name.rsplit("/", 1)
    return f[group], leaf, f[name]


def redirect(kind, h5path, secret_path):
    """Replaces the first weight of h5path by a dataset or link of `kind` whose bytes live in `secret_path`."""
    import h5py
    with h5py.File(h5path, "r+") as f:
        group, leaf, ds = first_weight(f)
        shape, dtype, full = ds.shape, ds.dtype, ds.name
        del group[leaf]
        if kind == "external-storage":
            group.create_dataset(leaf, shape=shape, dtype=dtype,
                                 external=[(secret_path, 0, int(np.prod(shape)) * dtype.itemsize)])
        elif kind == "external-link":
            with h5py.File(secret_path + ".h5", "w") as s:
                s.create_dataset("w", data=np.full(shape, 1234.5, dtype))
            group[leaf] = h5py.ExternalLink(secret_path + ".h5", "/w")
        elif kind == "virtual":
            with h5py.File(secret_path + ".h5", "w") as s:
                s.create_dataset("w", data=np.full(shape, 1234.5, dtype))
            layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
            layout[...] = h5py.VirtualSource(secret_path + ".h5", "w", shape=shape)
            group.create_virtual_dataset(leaf, layout)
        elif kind == "soft-link":
            with h5py.File(secret_path + ".h5", "w"):
                pass
            f.create_dataset("/stash", data=np.full(shape, 1234.5, dtype))
            group[leaf] = h5py.SoftLink("/stash")
        else:
            raise ValueError(kind)
        return full


KINDS = ("external-storage", "external-link", "virtual")
KIND_WORDS = {"external-storage": "external files", "external-link": "external link", "virtual": "virtual dataset",
              "soft-link": "soft link"}


class Hdf5Test(ContainedBase):
    def model(self):
        return (pyutil.data("keras3-cs-nextword", "next_word_model1.h5"),
                pyutil.data("keras3-cs-nextword", "tokenizer1.pkl"))

    def test_full_model_file(self):
        src, vocab = self.model()
        for kind in KINDS:
            with self.subTest(kind=kind):
                p = self.path(f"{kind}.h5")
                shutil.copy(src, p)
                os.chmod(p, 0o644)
                redirect(kind, p, self.secret(1 << 20))
                line = self.refused(p, "--vocab", vocab, names=(f"{kind}.h5", KIND_WORDS[kind]))
                self.assertIn("HDF5", line)

    def test_a_soft_link_inside_the_file_is_followed(self):
        # Exporters share a dataset through a soft link: its target is inside the file, so it is read.
        import numpy as np
        src, vocab = self.model()
        p = self.path("soft-link.h5")
        shutil.copy(src, p)
        os.chmod(p, 0o644)
        redirect("soft-link", p, self.secret(1 << 20))
        out = self.converts(p, "--vocab", vocab)
        tensors = pyutil.read_safetensors(os.path.join(out, "weights.safetensors"))
        self.assertTrue(any(np.all(t == 1234.5) for t in tensors.values()), "the linked dataset was not read")

    def test_external_storage_on_a_fifo_does_not_block(self):
        src, vocab = self.model()
        fifo = os.path.join(self.outside, "fifo")
        os.mkfifo(fifo)
        p = self.path("fifo.h5")
        shutil.copy(src, p)
        os.chmod(p, 0o644)
        redirect("external-storage", p, fifo)
        self.refused(p, "--vocab", vocab, names=("fifo.h5", "external files"))

    def test_keras_v3_zip(self):
        src = pyutil.data("keras3-cs-nextword", "next_word_model1.keras")
        vocab = pyutil.data("keras3-cs-nextword", "tokenizer1.pkl")
        self.converts(src, "--vocab", vocab)  # the pristine archive converts
        with zipfile.ZipFile(src) as z:
            members = {n: z.read(n) for n in z.namelist()}
        for kind in KINDS:
            with self.subTest(kind=kind):
                h5 = self.path(f"{kind}.weights.h5")
                with open(h5, "wb") as f:
                    f.write(members["model.weights.h5"])
                redirect(kind, h5, self.secret(1 << 20))
                p = self.path(f"{kind}.keras")
                with zipfile.ZipFile(p, "w") as z:
                    for n, b in members.items():
                        if n == "model.weights.h5":
                            with open(h5, "rb") as f:
                                b = f.read()
                        z.writestr(n, b)
                self.refused(p, "--vocab", vocab, names=(f"{kind}.keras", "model.weights.h5", KIND_WORDS[kind]))

    def test_weights_only_file_and_architecture(self):
        import h5py
        src, vocab = self.model()
        clean = self.path("weights.h5")
        with h5py.File(src, "r") as s, h5py.File(clean, "w") as d:  # model.save_weights' layout
            for k in s["model_weights"]:
                s.copy(s["model_weights"][k], d, k)
            for k, v in s["model_weights"].attrs.items():
                d.attrs[k] = v
        self.converts(clean, "--architecture", src, "--vocab", vocab)
        for kind in KINDS:
            with self.subTest(kind=kind):
                p = self.path(f"{kind}-weights.h5")
                shutil.copy(clean, p)
                redirect(kind, p, self.secret(1 << 20))
                self.refused(p, "--architecture", src, "--vocab", vocab, names=(f"{kind}-weights.h5",))
        # The architecture file is HDF5 too: a link in it is refused as well.
        arch = self.path("arch.h5")
        shutil.copy(src, arch)
        os.chmod(arch, 0o644)
        redirect("external-link", arch, self.secret(1 << 20))
        self.refused(clean, "--architecture", arch, "--vocab", vocab, names=("arch.h5", "external link"))


# ------------------------------------------------------------------------------ tensor bundles (TF1, TF2)
class BundleChecksumTest(ContainedBase):
    def checkpoint(self, crc):
        rng = np.random.default_rng(3)
        prefix = self.path("crc" if crc else "nocrc", "model.ckpt")
        os.makedirs(os.path.dirname(prefix))
        tf1_ckpt_writer.write_checkpoint(prefix, {
            "embedding": rng.standard_normal((3, 2)),
            "rnnlm/multi_rnn_cell/cell_0/lstm_cell/kernel": rng.standard_normal((4, 8)),
            "rnnlm/multi_rnn_cell/cell_0/lstm_cell/bias": rng.standard_normal(8),
            "rnnlm/softmax_w": rng.standard_normal((2, 3)), "rnnlm/softmax_b": rng.standard_normal(3)}, crc=crc)
        vocab = self.path("vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("a\nb\nc\n")
        return prefix, vocab

    def test_entry_without_crc32c_is_refused(self):
        prefix, vocab = self.checkpoint(crc=True)
        self.converts(prefix, "--from", "tf1", "--vocab", vocab)
        prefix, vocab = self.checkpoint(crc=False)
        self.refused(prefix, "--from", "tf1", "--vocab", vocab, names=("model.ckpt.index", "no crc32c"))

    def test_unchecked_shard_behind_a_symlink(self):
        # The attack the checksum closes: without one, a data shard linked to any file of the right size
        # became weights. Here the link leaves the directory, so it is refused on both counts.
        prefix, vocab = self.checkpoint(crc=False)
        shard = prefix + ".data-00000-of-00001"
        size = os.path.getsize(shard)
        os.remove(shard)
        os.symlink(self.secret(size), shard)
        self.refused(prefix, "--from", "tf1", "--vocab", vocab, names=("model.ckpt",))


# ----------------------------------------------------------------------------------- symbolic links, FIFOs
def copy_tree(src, dst):
    """A copy of a model directory whose files are regular files (the shared data may hold links)."""
    shutil.copytree(src, dst, symlinks=False)
    for root, dirs, files in os.walk(dst):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return dst


class SymlinkTest(ContainedBase):
    def move_out(self, inside, name=None):
        """Moves a file or folder of the model outside it and leaves a symbolic link in its place."""
        target = os.path.join(self.outside, name or os.path.basename(inside))
        shutil.move(inside, target)
        os.symlink(target, inside)
        return target

    def link_inside(self, inside):
        """Moves a file of the model to a folder inside it and links to it: a link that stays inside converts."""
        keep = os.path.join(os.path.dirname(inside), "kept")
        os.makedirs(keep, exist_ok=True)
        target = os.path.join(keep, os.path.basename(inside))
        shutil.move(inside, target)
        os.symlink(os.path.relpath(target, os.path.dirname(inside)), inside)

    def savedmodel(self, name):
        return copy_tree(pyutil.data("tf2-savedmodel-sc2-nextunit", "trained_nns", "rnn"), self.path(name))

    def sc2_vocab(self):
        return pyutil.data("tf2-savedmodel-sc2-nextunit", "classes.json")

    def test_savedmodel(self):
        vocab = self.sc2_vocab()
        d = self.savedmodel("inside")
        for f in ("variables/variables.index", "variables/variables.data-00000-of-00001", "keras_metadata.pb"):
            self.link_inside(os.path.join(d, f))
        self.converts(d, "--vocab", vocab)
        for rel in ("variables", "variables/variables.index", "variables/variables.data-00000-of-00001",
                    "keras_metadata.pb", "saved_model.pb"):
            with self.subTest(moved=rel):
                d = self.savedmodel("sm-" + rel.replace("/", "-"))
                self.move_out(os.path.join(d, rel), rel.replace("/", "-"))
                if rel == "saved_model.pb":  # read only by the TF 2.0-2.4 path: without keras_metadata.pb
                    os.remove(os.path.join(d, "keras_metadata.pb"))
                self.refused(d, "--from", "tf2", "--vocab", vocab, names=("outside the source directory",))

    def test_savedmodel_shard_is_a_device_or_fifo(self):
        vocab = self.sc2_vocab()
        d = self.savedmodel("fifo")
        shard = os.path.join(d, "variables", "variables.data-00000-of-00001")
        os.remove(shard)
        os.mkfifo(shard)
        self.refused(d, "--from", "tf2", "--vocab", vocab, names=("variables.data-00000-of-00001", "FIFO"))
        d = self.savedmodel("zero")
        shard = os.path.join(d, "variables", "variables.data-00000-of-00001")
        os.remove(shard)
        os.symlink("/dev/zero", shard)
        self.refused(d, "--from", "tf2", "--vocab", vocab, names=("variables.data-00000-of-00001",))

    def test_tf1_checkpoint(self):
        src = pyutil.data("tf1-charrnn-space")
        d = copy_tree(src, self.path("tf1"))
        self.link_inside(os.path.join(d, "chars_vocab.pkl"))
        self.converts(d)
        for rel in ("model.ckpt-248399.data-00000-of-00001", "model.ckpt-248399.index", "chars_vocab.pkl",
                    "checkpoint"):
            with self.subTest(moved=rel):
                d = copy_tree(src, self.path("tf1-" + rel))
                self.move_out(os.path.join(d, rel))
                self.refused(d, names=("outside the source directory",))

    def test_tf1_checkpoint_file_naming_another_directory(self):
        # TF's `checkpoint` file may name an absolute path: only its file name is taken, in the directory given.
        src = pyutil.data("tf1-charrnn-space")
        elsewhere = copy_tree(src, os.path.join(self.outside, "elsewhere"))
        d = copy_tree(src, self.path("tf1"))
        for f in os.listdir(d):
            if f.startswith("model.ckpt"):
                os.rename(os.path.join(d, f), os.path.join(d, f.replace("248399", "1")))
        with open(os.path.join(d, "checkpoint"), "w", encoding="utf-8") as f:
            f.write(f'model_checkpoint_path: "{os.path.join(elsewhere, "model.ckpt-248399")}"\n')
        out = self.converts(d)
        self.assertEqual(pyutil.read_config(out)["source"]["file"], "model.ckpt-1")

    def test_ml5(self):
        src = pyutil.data("ml5-charrnn-tf1-basiclstm", "models", "charRNN", "dubois")
        d = copy_tree(src, self.path("ml5"))
        self.link_inside(os.path.join(d, "embedding"))
        self.converts(d)
        for rel in ("vocab.json", "manifest.json", "embedding", "rnnlm_softmax_w"):
            with self.subTest(moved=rel):
                d = copy_tree(src, self.path("ml5-" + rel))
                self.move_out(os.path.join(d, rel))
                self.refused(d, "--from", "ml5", names=("outside the source directory",))

    def test_tfjs(self):
        src = pyutil.data("tfjs-keras224-nyt-headlines-word")
        vocab = os.path.join(src, "word_index.json")
        d = copy_tree(src, self.path("tfjs"))
        self.link_inside(os.path.join(d, "group1-shard1of1.bin"))
        self.converts(d, "--vocab", vocab)
        for rel in ("group1-shard1of1.bin", "model.json"):
            with self.subTest(moved=rel):
                d = copy_tree(src, self.path("tfjs-" + rel))
                self.move_out(os.path.join(d, rel))
                self.refused(d, "--from", "tfjs", "--vocab", vocab, names=("outside the source directory",))

    def test_tfjs_shard_listed_twice(self):
        src = pyutil.data("tfjs-keras224-nyt-headlines-word")
        d = copy_tree(src, self.path("tfjs-twice"))
        with open(os.path.join(d, "model.json"), encoding="utf-8") as f:
            model = json.load(f)
        paths = model["weightsManifest"][0]["paths"]
        model["weightsManifest"][0]["paths"] = paths + paths
        with open(os.path.join(d, "model.json"), "w", encoding="utf-8") as f:
            json.dump(model, f)
        self.refused(d, "--from", "tfjs", "--vocab", os.path.join(src, "word_index.json"),
                     names=("listed twice",))


if __name__ == "__main__":
    unittest.main()
