"""Reading a model's files only from inside the model: every path a source names (a shard, an index, a
vocabulary next to the weights) must resolve inside the directory the user gave and be a regular file, and an
HDF5 file must hold its data itself. A crafted model must never make a converter read another file."""
import os
import stat

from .errors import ConvertError
from .unpickle import brief


def _file_kind(mode):
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _reason(e):
    """An OSError's reason without the path it repeats (the message names the path once, bounded)."""
    return e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0][:200]


def contained_path(root, path, what):
    """`path` resolved (every symbolic link followed), refused unless it ends inside the directory `root` (also
    resolved): a model file must never make a converter read a file the user did not give. `what` names the
    file in the message, e.g. "model.json: shard group1-shard1of1"."""
    try:
        real_root = os.path.realpath(root or ".")
        real = os.path.realpath(path)
    except (OSError, ValueError) as e:  # a NUL byte, a name past NAME_MAX, a directory that cannot be read
        raise ConvertError(f"{what}: {brief(path)}: {_reason(e)}") from None
    if os.path.commonpath([real_root, real]) != real_root:
        via = " (through a symbolic link)" if os.path.realpath(os.path.abspath(path)) != os.path.abspath(path) else ""
        raise ConvertError(f"{what}: {brief(path)} resolves to {brief(real)}{via}, outside the source directory "
                           f"{brief(real_root)}; a model's files are read only from inside it")
    return real


def open_contained(root, path, what):
    """A binary file object of `path`, refused (before a byte is read) unless it resolves inside `root` and is a
    regular file: a FIFO would block, /dev/zero never ends. root None: a file the user named, which may be
    anywhere, but is still read only when it is a regular file. Opened non-blocking, then checked with fstat on the
    descriptor, so what is checked is what is read."""
    real = path if root is None else contained_path(root, path, what)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConvertError(f"{what}: {brief(path)} not found") from None
    except (OSError, ValueError) as e:  # a symbolic-link loop, a name too long, no permission, a NUL byte
        raise ConvertError(f"{what}: {brief(path)}: {_reason(e)}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ConvertError(f"{what}: {brief(path)} is {_file_kind(st.st_mode)}; a model's files are regular files")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_contained(root, path, what, limit=None):
    """The bytes of `path` through open_contained; over `limit` bytes (when given) it is refused unread."""
    with open_contained(root, path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if limit is not None and size > limit:
            raise ConvertError(f"{what}: {brief(path)} has {size} bytes, more than the {limit} such a file may have")
        return f.read()


def check_hdf5_contained(f, where):
    """Refuses an HDF5 file (an open h5py.File) that would make h5py read outside it, before any dataset is read:
    no external or user-defined link anywhere in it, and no dataset that keeps its data in external files or is a
    virtual dataset (whose sources are other files). h5py follows all of these silently. A soft link is followed:
    its target is a path inside this file, and with no external link in the file every path stays inside it
    (exporters write soft links to share a dataset)."""
    import h5py
    found = []

    def link(name, info):
        if info.type not in (h5py.h5l.TYPE_HARD, h5py.h5l.TYPE_SOFT):
            kind = {h5py.h5l.TYPE_EXTERNAL: "an external link"}.get(
                info.type, f"a user-defined link (type {info.type})")
            found.append(f"{brief(_name(name))} is {kind}")
            return True
        return None

    f.id.links.visit(link, info=True)
    if not found:
        def obj(name, o):
            if isinstance(o, h5py.Dataset):
                plist = o.id.get_create_plist()
                if plist.get_layout() == h5py.h5d.VIRTUAL:
                    found.append(f"dataset {brief(_name(name))} is a virtual dataset (its data are in other files)")
                    return True
                if plist.get_external_count() > 0:
                    found.append(f"dataset {brief(_name(name))} keeps its data in external files")
                    return True
            return None
        f.visititems(obj)
    if found:
        raise ConvertError(f"{where}: HDF5 {found[0]}; a model file is read only from itself, refused before "
                           "reading any weight")


def _name(n):
    return n.decode("utf-8", "replace") if isinstance(n, bytes) else n
