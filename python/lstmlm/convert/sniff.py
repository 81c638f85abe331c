"""What a source is, from its first bytes (and a zip's or a folder's names), whatever its extension: so that a
`--from` that names another framework is answered with what the file is, not with the wrong reader's error."""
import os
import zipfile

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"

# --from name -> how the message calls a source of that kind ("not a Keras one").
KIND_NAMES = {"keras": "a Keras one", "torch_pt": "a PyTorch one", "onnx": "an ONNX one", "tfjs": "a TF.js one",
              "ml5": "an ml5 one", "tf1": "a TF1 checkpoint", "tf2": "a TF2 SavedModel"}


# --from name -> a folder or a checkpoint prefix it reads.
NOT_A_FILE = {"tf2": "a TF2 SavedModel folder", "ml5": "an ml5 folder", "tfjs": "a TF.js folder",
              "tf1": "a TF1 checkpoint"}


def sniff(path, mods=()):
    """(what the source is, the --from names that read it), or None when its bytes do not say. A folder or a
    TF1 checkpoint prefix (no file by that name) is what the converters' own detect() of `mods`, (name,
    module) pairs, recognise."""
    try:
        if not os.path.isfile(path):
            found = [n for n, m in mods if n in NOT_A_FILE and m.detect(path)]
            return (NOT_A_FILE[found[0]], tuple(found)) if found else None
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    if head.startswith(HDF5_MAGIC):
        return "a Keras HDF5 file", ("keras",)
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
        except (zipfile.BadZipFile, OSError, ValueError):
            return None
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            return "a PyTorch file", ("torch_pt",)
        if "config.json" in names and "model.weights.h5" in names:
            return "a Keras 3 .keras file", ("keras",)
        return None
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a pickle (a PyTorch file of torch.save's legacy format)", ("torch_pt",)
    # An ONNX ModelProto starts with its ir_version: protobuf field 1, a small varint.
    if len(head) >= 3 and head[0] == 0x08 and 1 <= head[1] <= 64 and head[2] in (0x12, 0x1a, 0x22, 0x2a, 0x3a, 0x42):
        return "an ONNX file", ("onnx",)
    if head.lstrip()[:1] in (b"{", b"["):
        name = os.path.basename(path)
        if name == "manifest.json":
            return "an ml5 manifest", ("ml5",)
        if name == "model.json":
            return "a TF.js model.json", ("tfjs",)
    return None  # any other JSON may be a TF.js model.json under another name


def wrong_from(path, source_type, mods=()):
    """The one-line explanation when `--from source_type` names another kind than the file is, else None."""
    found = sniff(path, mods)
    if found is None or source_type in found[1]:
        return None
    what, readers = found
    not_ = KIND_NAMES.get(source_type, f"a {source_type} one")
    use = " or ".join(f"--from {r}" for r in readers)
    return f"{path}: this is {what}, not {not_}: drop --from or use {use}"
