"""The restricted unpickler: pickles that would run code are refused, naming the global; plain data, Keras
Tokenizer and nn.Module pickles load as inert stubs."""
import io
import os
import pickle
import tempfile
import unittest
import zipfile

import pyutil
from lstmlm.convert import torch_file, unpickle

MARKER = os.path.join(tempfile.gettempdir(), f"lstmlm_pwned_{os.getpid()}")
TMP = pyutil.temp_root("lstmlm_unpickle_")


class RunsCommand:
    """Pickles as os.system('touch MARKER'): loading it with the standard pickle would create the file."""

    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


class CallsEval:
    def __reduce__(self):
        return (eval, ("__import__('os').system('touch " + MARKER + "')",))


class RestrictedUnpicklerTest(unittest.TestCase):
    def setUp(self):
        if os.path.exists(MARKER):
            os.remove(MARKER)

    def tearDown(self):
        self.assertFalse(os.path.exists(MARKER), "the pickle's command ran")

    def test_os_system_is_refused_naming_the_global(self):
        data = pickle.dumps(RunsCommand())
        with self.assertRaises(unpickle.RefusedGlobal) as cm:
            unpickle.loads(data)
        # os.system pickles as posix.system on Linux (nt.system on Windows)
        self.assertRegex(str(cm.exception), r"refusing global (posix|nt|os)\.system")

    def test_eval_is_refused_at_every_protocol(self):
        for proto in range(0, pickle.HIGHEST_PROTOCOL + 1):
            with self.assertRaises(unpickle.RefusedGlobal) as cm:
                unpickle.loads(pickle.dumps(CallsEval(), protocol=proto))
            self.assertIn("builtins.eval", str(cm.exception).replace("__builtin__", "builtins"))

    def test_malicious_torch_zip_is_refused(self):
        # A torch.save-style zip whose data.pkl would run a command.
        path = os.path.join(tempfile.mkdtemp(dir=TMP), "evil.pt")
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("evil/data.pkl", pickle.dumps({"w": RunsCommand()}, protocol=2))
            z.writestr("evil/byteorder", "little")
        with self.assertRaises(unpickle.RefusedGlobal) as cm:
            torch_file.load(path)
        self.assertIn(".system", str(cm.exception))

    def test_stub_module_refuses_constructor_arguments(self):
        # REDUCE model.RNNModel("rm -rf /"): a stubbed class may only be instantiated empty.
        data = b"\x80\x02cmodel\nRNNModel\nX\x08\x00\x00\x00rm -rf /\x85R."
        with self.assertRaises(unpickle.RefusedGlobal) as cm:
            unpickle.loads(data)
        self.assertIn("model.RNNModel", str(cm.exception))

    def test_stub_module_requires_module_shaped_state(self):
        # NEWOBJ __main__.Net() then BUILD {"x": 1}: not an nn.Module's state, refused.
        data = b"\x80\x02c__main__\nNet\n)\x81}X\x01\x00\x00\x00xK\x01sb."
        with self.assertRaises(unpickle.RefusedGlobal) as cm:
            unpickle.loads(data)
        self.assertIn("not a nn.Module-shaped object", str(cm.exception))

    def test_unknown_class_in_other_module_is_refused(self):
        data = b"\x80\x02csubprocess\nPopen\n)\x81."
        with self.assertRaisesRegex(unpickle.RefusedGlobal, "subprocess.Popen"):
            unpickle.loads(data)

    def test_plain_data_loads(self):
        import collections
        obj = (["a", "b"], {"a": 0, "b": 1}, collections.OrderedDict(x=1), {1, 2}, collections.defaultdict(list))
        for proto in (2, 3, 4, 5):
            self.assertEqual(unpickle.loads(pickle.dumps(obj, protocol=proto)), obj)

    def test_module_stub_tree_gives_the_state_dict(self):
        import torch
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.LSTM(3, 4))
        buf = io.BytesIO()
        torch.save(m, buf)
        path = os.path.join(tempfile.mkdtemp(dir=TMP), "m.pt")
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        stub = torch_file.load(path)
        self.assertIsInstance(stub, unpickle.ModuleStub)
        sd = unpickle.module_state_dict(stub)
        ref = m.state_dict()
        self.assertEqual(list(sd), list(ref))
        for k in ref:
            self.assertTrue((sd[k] == ref[k].numpy()).all(), k)


class SharedSubmodules(unittest.TestCase):
    def test_a_diamond_of_shared_children_is_walked_once(self):
        # 40 levels, each module holding the next one twice (a 4 KB pickle can say this): 2^40 paths, 41 modules.
        class Stub:
            def __init__(self, child=None, param=None):
                self._parameters = {"w": param} if param is not None else {}
                self._modules = {"a": child, "b": child} if child is not None else {}
                self._lstmlm_global = "__main__.Net"
        node = Stub(param="tensor")
        for _ in range(40):
            node = Stub(child=node)
        sd = unpickle.module_state_dict(node)
        self.assertEqual(list(sd), ["a." * 40 + "w"])  # under its first path, as named_modules() lists it
        self.assertEqual(len(unpickle.module_classes(node)), 41)


if __name__ == "__main__":
    unittest.main()
