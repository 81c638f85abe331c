"""Reads torch.save files (the zip format of torch >= 1.6) into numpy arrays,
through the restricted unpickler only: no torch import, no code of the file run."""
import io
import zipfile

import numpy as np

from . import unpickle


def _storage_array(raw, dtype):
    if dtype == "bfloat16":  # upper half of a float32
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, dtype=dtype)


def _storage_type(obj, where):
    if not isinstance(obj, unpickle.TorchStorageType):
        raise unpickle.UnpicklingError(f"{where}: storage of unknown type {obj!r}")
    return obj


def _load_zip(path, extra_user_modules):
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pkls = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pkls) != 1:
            raise unpickle.UnpicklingError(f"{path}: expected one data.pkl in the torch zip, found {len(pkls)}")
        prefix = pkls[0][: -len("data.pkl")]
        if prefix + "constants.pkl" in names:
            raise unpickle.UnpicklingError(f"{path}: is a TorchScript archive (torch.jit.save); save the "
                                           "model's state_dict with torch.save instead")
        byteorder = z.read(prefix + "byteorder").decode().strip() if prefix + "byteorder" in names else "little"
        if byteorder != "little":
            raise unpickle.UnpicklingError(f"{path}: byteorder '{byteorder}' is not supported (little only)")
        storages = {}

        def persistent_load(pid):
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
                raise unpickle.UnpicklingError(f"{path}: unexpected persistent id {pid!r}")
            _, stype, key, _location, numel = pid
            stype = _storage_type(stype, path)
            if key not in storages:
                raw = z.read(f"{prefix}data/{key}")
                arr = _storage_array(raw, stype.dtype)
                if stype.name != "UntypedStorage" and arr.size != numel:
                    raise unpickle.UnpicklingError(f"{path}: storage {key} holds {arr.size} elements, "
                                                   f"the pickle says {numel}")
                storages[key] = arr
            return storages[key]

        up = unpickle.Unpickler(io.BytesIO(z.read(pkls[0])), encoding="utf-8")
        up.extra_user_modules = extra_user_modules
        up.persistent_load = persistent_load
        return up.load()


def load(path, extra_user_modules=()):
    """The object torch.save wrote, with tensors as numpy arrays and nn.Modules as ModuleStub trees."""
    if zipfile.is_zipfile(path):
        return _load_zip(path, tuple(extra_user_modules))
    # The pre-1.6 stream format (magic number pickle, then the object, then raw storages) is not read.
    raise unpickle.UnpicklingError(f"{path}: not a torch zip archive (torch.save of torch >= 1.6); legacy "
                                   "torch files are not supported: load and re-save them with a current torch")
