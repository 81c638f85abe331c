"""Restricted unpickler: loads pickles (vocabularies, torch checkpoints) without running any code of the file.

A pickle can name any importable callable (os.system, builtins.eval, ...) and have it called while loading.
This unpickler resolves only an allow-list of plain data constructors and torch's tensor rebuilders; every
other global is refused with an error naming it. Classes whose instances are plain state (nn.Module
subclasses, the Keras Tokenizer, argparse.Namespace) are replaced by inert stub classes that only store the
state dict they are given and refuse constructor arguments, so a file can never make them do anything.

Tensors of torch checkpoints are rebuilt as numpy arrays by our own code (torch_file.py reads the archive):
torch.load is not used because torch 1.13.0's torch.load silently replaces an explicit pickle_module with
the standard pickle (`else: pickle_module = pickle`), which would run the file's code.
"""
import collections
import io
import math
import pickle
import reprlib

UnpicklingError = pickle.UnpicklingError

_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother = 3, 80, 80


def brief(obj):
    """repr() of an object from a file, bounded in depth and length: a plain repr of a list nested 10^5 deep
    raises RecursionError, and a 1 GB string would make a 1 GB error line."""
    return _BRIEF.repr(obj)


class RefusedGlobal(pickle.UnpicklingError):
    """Raised for a global outside the allow-list; the message names it."""


def _path(*parts):
    """pathlib.PosixPath / PurePosixPath / WindowsPath, as a training script's checkpoint holds them (icefall's
    params.exp_dir): the joined string, never a path object, and only from strings."""
    if any(not isinstance(p, str) for p in parts):
        raise pickle.UnpicklingError(f"pathlib path from {brief(parts)}: expected strings")
    return "/".join(p.rstrip("/") if i < len(parts) - 1 else p for i, p in enumerate(parts)) if parts else "."


def _plain_globals():
    g = {
        ("pathlib", "PosixPath"): _path,
        ("pathlib", "PurePosixPath"): _path,
        ("pathlib", "WindowsPath"): _path,
        ("pathlib", "PureWindowsPath"): _path,
        ("collections", "OrderedDict"): collections.OrderedDict,
        # defaultdict(list) in the Keras Tokenizer; its factory must itself be an allowed global.
        ("collections", "defaultdict"): collections.defaultdict,
        ("builtins", "list"): list,
        ("builtins", "dict"): dict,
        ("builtins", "int"): int,
        ("builtins", "float"): float,
        ("builtins", "str"): str,
        ("builtins", "tuple"): tuple,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "slice"): slice,
        ("builtins", "complex"): complex,
    }
    # Protocol 0-2 pickles written by Python 2 name builtins as __builtin__.
    for (mod, name), obj in list(g.items()):
        if mod == "builtins":
            g[("__builtin__", name)] = obj
    return g


class TorchStorageType:
    """What a pickled torch.<X>Storage global resolves to: only its element dtype is used."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"<torch.{self.name}>"


# bfloat16 has no numpy dtype: read as uint16 and widen (see _storage_array).
_TORCH_STORAGE_DTYPES = {
    "FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2", "BFloat16Storage": "bfloat16",
    "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1",
    "ByteStorage": "u1", "BoolStorage": "?", "UntypedStorage": "u1",
}


class Budget:
    """Bytes of arrays a file may still make us allocate: a few KB of pickle can declare a tensor of 2^40
    elements (a stride-0 view of one element), and copying it out would exhaust memory."""

    def __init__(self, limit):
        self.limit = self.left = limit

    def take(self, nbytes, what):
        if nbytes > self.left:
            raise pickle.UnpicklingError(f"{what} needs {nbytes} bytes, more than the {self.limit} bytes of "
                                         "arrays a file of this size can hold (with what was already read)")
        self.left -= nbytes


# Without a budget from the file's size (a pickle read on its own): no legitimate tensor is larger.
DEFAULT_BUDGET_BYTES = 1 << 31


def _ints(value, what):
    if not isinstance(value, (tuple, list)) or \
            any(not isinstance(n, int) or isinstance(n, bool) for n in value):
        raise pickle.UnpicklingError(f"tensor rebuild: {what} is {type(value).__name__}, expected a tuple of "
                                     "integers")
    return tuple(value)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None, budget=None):
    """torch._utils._rebuild_tensor_v2 re-implemented on numpy: a strided view of the storage, copied.
    Every argument comes from the file: types, bounds and the copy's size are checked before numpy sees them."""
    import numpy as np
    if not isinstance(storage, np.ndarray):
        raise pickle.UnpicklingError("tensor rebuild without a storage from the checkpoint")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if not isinstance(storage_offset, int) or isinstance(storage_offset, bool):
        raise pickle.UnpicklingError(f"tensor rebuild: storage offset is {type(storage_offset).__name__}, "
                                     "expected an integer")
    if len(size) != len(stride) or any(n < 0 for n in size):
        raise pickle.UnpicklingError(f"tensor rebuild: size {size} and stride {stride} do not describe a tensor")
    numel = math.prod(size)
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if numel else 0
    if storage_offset < 0 or need > storage.size or any(s < 0 for s in stride):
        raise pickle.UnpicklingError(f"tensor of size {size} stride {stride} offset {storage_offset} does "
                                     f"not fit its storage of {storage.size} elements")
    item = storage.itemsize
    # Stride 0 (an expanded tensor) fits any storage but materialises every element: counted here.
    (budget or Budget(DEFAULT_BUDGET_BYTES)).take(numel * item, f"tensor of size {list(size)}")
    if numel == 0:
        return np.zeros(size, dtype=storage.dtype)
    view = np.lib.stride_tricks.as_strided(storage[storage_offset:], shape=size,
                                           strides=tuple(s * item for s in stride))
    return np.array(view)


def _rebuild_tensor(storage, storage_offset, size, stride, budget=None):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, budget=budget)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, state=None):
    # A Parameter is its tensor for our purposes; tied weights stay the same object through the memo.
    return data


def _torch_globals():
    g = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
         ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
         ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
         ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
         ("torch", "Size"): tuple}
    for name, dtype in _TORCH_STORAGE_DTYPES.items():
        g[("torch", name)] = TorchStorageType(name, dtype)
    return g


class StateStub:
    """Inert stand-in for a class whose pickled instances are just a state dict.

    NEWOBJ with no arguments and BUILD with a dict are accepted; any constructor argument is refused,
    because calling a class with file-chosen arguments is exactly how a malicious pickle runs code.
    """
    _lstmlm_global = "?"
    _lstmlm_required_keys = ()

    def __new__(cls, *args, **kwargs):
        if args or kwargs:
            raise RefusedGlobal(f"refusing to call {cls._lstmlm_global} with arguments (only its state is "
                                "read from a pickle)")
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        # Module pickles made with __getstate__ defaults arrive as a dict; (dict, slots) tuples also occur.
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[0], dict):
            state = state[0]
        if not isinstance(state, dict):
            raise RefusedGlobal(f"{self._lstmlm_global}: expected a state dict, got {type(state).__name__}")
        missing = [k for k in self._lstmlm_required_keys if k not in state]
        if missing:
            raise RefusedGlobal(f"{self._lstmlm_global} is not a {self._lstmlm_kind}-shaped object "
                                f"(its state lacks {', '.join(missing)})")
        self.__dict__.update(state)

    def __repr__(self):
        return f"<stub {self._lstmlm_global}>"


class ModuleStub(StateStub):
    """Stand-in for a torch nn.Module subclass (including classes of the user's own code)."""
    _lstmlm_kind = "nn.Module"
    _lstmlm_required_keys = ("_parameters", "_modules")


class TokenizerStub(StateStub):
    """Stand-in for the Keras preprocessing Tokenizer."""
    _lstmlm_kind = "Keras Tokenizer"
    _lstmlm_required_keys = ("word_index",)


class NamespaceStub(StateStub):
    """Stand-in for argparse.Namespace (char-rnn's config.pkl)."""
    _lstmlm_kind = "argparse.Namespace"


# Modules whose classes may be stubbed as nn.Modules: torch's own layers, and the module names under which
# training scripts define their model class (word_language_model's model.py, a script's __main__).
USER_MODULE_NAMES = {"__main__", "model", "models", "net", "network"}
KERAS_TOKENIZER_MODULES = {"keras.src.legacy.preprocessing.text", "keras.preprocessing.text",
                           "keras_preprocessing.text", "keras.src.preprocessing.text",
                           "tensorflow.python.keras.preprocessing.text", "tf_keras.src.preprocessing.text"}

_stub_cache = {}


def _stub(base, module, name):
    key = (base, module, name)
    if key not in _stub_cache:
        _stub_cache[key] = type(name, (base,), {"_lstmlm_global": f"{module}.{name}"})
    return _stub_cache[key]


def resolve_global(module, name, extra_user_modules=()):
    """The object the pickle may use for `module.name`, or RefusedGlobal naming it."""
    allowed = _plain_globals()
    allowed.update(_torch_globals())
    if (module, name) in allowed:
        return allowed[(module, name)]
    top = module.split(".")[0]
    is_class_name = name.isidentifier() and name[:1].isupper()
    if is_class_name and name == "Tokenizer" and module in KERAS_TOKENIZER_MODULES:
        return _stub(TokenizerStub, module, name)
    if module == "argparse" and name == "Namespace":
        return _stub(NamespaceStub, module, name)
    if is_class_name and (module.startswith("torch.nn.modules.") or module in USER_MODULE_NAMES
                          or top in USER_MODULE_NAMES or module in extra_user_modules):
        return _stub(ModuleStub, module, name)
    raise RefusedGlobal(f"refusing global {module}.{name}: not in the allow-list of the restricted "
                        "unpickler (no code from a model or vocabulary file is ever run)")


class Unpickler(pickle.Unpickler):
    extra_user_modules = ()
    budget = None  # a Budget shared by every tensor of the file (torch_file sets it)

    def find_class(self, module, name):
        obj = resolve_global(module, name, self.extra_user_modules)
        if obj in (_rebuild_tensor_v2, _rebuild_tensor):
            budget = self.budget
            return lambda *a, **k: obj(*a, **dict(k, budget=budget))
        return obj


def load(file, **kwargs):
    return Unpickler(file, **kwargs).load()


def loads(data, **kwargs):
    return Unpickler(io.BytesIO(data), **kwargs).load()


def load_path(path, **kwargs):
    with open(path, "rb") as f:
        return load(f, **kwargs)


def _module_dict(obj, key):
    """obj.<key> (_parameters, _buffers, _modules) of a module stub: a dict, or UnpicklingError naming it
    (a stub's state is whatever the file says, e.g. a list where nn.Module keeps a dict)."""
    d = getattr(obj, key, None)
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise pickle.UnpicklingError(f"{getattr(obj, '_lstmlm_global', type(obj).__name__)}: {key} is a "
                                     f"{type(d).__name__}, expected a dict as in nn.Module")
    return d


def module_state_dict(obj, prefix="", _seen=None):
    """Flattens a ModuleStub tree into {name: tensor} like nn.Module.state_dict() (parameters, buffers). A
    submodule reached by several paths is walked once, under its first (as named_modules() lists it): a small
    pickle whose modules share children in a diamond would otherwise take exponential time."""
    seen = set() if _seen is None else _seen
    out = collections.OrderedDict()
    if id(obj) in seen:
        return out
    seen.add(id(obj))
    for key in ("_parameters", "_buffers"):
        for name, t in _module_dict(obj, key).items():
            if t is not None:
                out[f"{prefix}{name}"] = t
    for name, child in _module_dict(obj, "_modules").items():
        if child is not None:
            out.update(module_state_dict(child, f"{prefix}{name}.", seen))
    return out


def module_classes(obj, prefix="", _seen=None):
    """{submodule path: pickled class name} of a ModuleStub tree (root is ''), each module once."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return {}
    seen.add(id(obj))
    out = {prefix.rstrip("."): getattr(obj, "_lstmlm_global", type(obj).__name__)}
    for name, child in _module_dict(obj, "_modules").items():
        if child is not None:
            out.update(module_classes(child, f"{prefix}{name}.", seen))
    return out
