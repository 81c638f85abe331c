"""Reads torch.save files (the zip format of torch >= 1.6) into numpy arrays,
through the restricted unpickler only: no torch import, no code of the file run."""
import io
import zipfile

import numpy as np

from . import common, unpickle


def _storage_array(raw, dtype):
    if dtype == "bfloat16":  # upper half of a float32
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, dtype=dtype)


def _storage_type(obj, where):
    if not isinstance(obj, unpickle.TorchStorageType):
        raise unpickle.UnpicklingError(f"{where}: storage of unknown type {common.brief(obj)}")
    return obj


def _read(z, name, path, budget):
    """A zip member's bytes; torch.save stores entries uncompressed, so a declared size over the budget
    (see common.read_zip_entry) is refused before zipfile allocates it."""
    try:
        return common.read_zip_entry(z, name, path, budget.left)
    except common.ConvertError as e:
        raise unpickle.UnpicklingError(str(e)) from None


def _storage(z, prefix, key, stype, numel, path, budget):
    """The storage `key` as a 1-D array, its size checked against what the pickle declares before reading."""
    if not isinstance(numel, int) or isinstance(numel, bool) or numel < 0:
        raise unpickle.UnpicklingError(f"{path}: storage {key}: size {common.brief(numel)} is not a "
                                       "non-negative integer")
    name = f"{prefix}data/{key}"
    try:
        info = z.getinfo(name)
    except KeyError:
        raise unpickle.UnpicklingError(f"{path}: storage {key}: no entry {name} in the archive") from None
    raw_item = 2 if stype.dtype == "bfloat16" else np.dtype(stype.dtype).itemsize
    if stype.name != "UntypedStorage" and info.file_size != numel * raw_item:
        raise unpickle.UnpicklingError(f"{path}: storage {key} holds {info.file_size} bytes, the pickle says "
                                       f"{numel} elements of {raw_item} bytes")
    if info.file_size % raw_item:
        raise unpickle.UnpicklingError(f"{path}: storage {key}: {info.file_size} bytes is not a whole number "
                                       f"of {raw_item}-byte elements")
    arr = _storage_array(_read(z, name, path, budget), stype.dtype)
    budget.take(arr.nbytes, f"{path}: storage {key}")
    return arr


def _load_zip(path, extra_user_modules):
    budget = unpickle.Budget(common.alloc_limit(path))
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pkls = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pkls) != 1:
            raise unpickle.UnpicklingError(f"{path}: expected one data.pkl in the torch zip, found {len(pkls)}")
        prefix = pkls[0][: -len("data.pkl")]
        if prefix + "constants.pkl" in names:
            raise unpickle.UnpicklingError(f"{path}: is a TorchScript archive (torch.jit.save); save the "
                                           "model's state_dict with torch.save instead")
        byteorder = "little"
        if prefix + "byteorder" in names:
            byteorder = _read(z, prefix + "byteorder", path, budget).decode("utf-8", "replace").strip()
        if byteorder != "little":
            raise unpickle.UnpicklingError(f"{path}: byteorder {common.brief(byteorder)} is not supported "
                                           "(little only)")
        storages = {}

        def persistent_load(pid):
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
                raise unpickle.UnpicklingError(f"{path}: unexpected persistent id {common.brief(pid)}")
            _, stype, key, _location, numel = pid
            stype = _storage_type(stype, path)
            if not isinstance(key, str):  # also keeps an unhashable key out of the dict lookup
                raise unpickle.UnpicklingError(f"{path}: storage key {common.brief(key)} is not a string")
            if key not in storages:
                storages[key] = _storage(z, prefix, key, stype, numel, path, budget)
            return storages[key]

        up = unpickle.Unpickler(io.BytesIO(_read(z, pkls[0], path, budget)), encoding="utf-8")
        up.extra_user_modules = extra_user_modules
        up.persistent_load = persistent_load
        up.budget = budget
        return up.load()


def load(path, extra_user_modules=()):
    """The object torch.save wrote, with tensors as numpy arrays and nn.Modules as ModuleStub trees."""
    if zipfile.is_zipfile(path):
        return _load_zip(path, tuple(extra_user_modules))
    # The pre-1.6 stream format (magic number pickle, then the object, then raw storages) is not read.
    raise unpickle.UnpicklingError(f"{path}: not a torch zip archive (torch.save of torch >= 1.6); legacy "
                                   "torch files are not supported: load and re-save them with a current torch")
