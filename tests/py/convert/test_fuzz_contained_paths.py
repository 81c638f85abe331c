"""A structured fuzzer of the converters' path handling (lstmlm.convert.contained): random directory trees with
regular files, subdirectories, FIFOs and symbolic links (relative and absolute, inside and outside the model,
dangling, chained, looping), and random names as a manifest or a checkpoint would give them ('..', absolute
paths, doubled slashes, NUL, names past NAME_MAX, non-UTF-8 bytes). Property of every call of open_contained and
read_contained with a model root:
  - it returns a file only when the name resolves inside the root to a regular file, and the file it returns is
    that file (same device and inode);
  - otherwise it raises ConvertError with a one-line message naming `what`; never another exception, never a
    block on a FIFO (the test would hang).
The suite runs a fixed number of cases from a fixed seed; scripts/fuzz runs it for a time from a random seed
(LSTMLM_FUZZ_SECONDS, LSTMLM_FUZZ_SEED) and prints the seed of a failure."""
import os
import random
import shutil
import stat
import time
import unittest

import pyutil  # noqa: F401  (puts the source tree's python/ first on sys.path)
from lstmlm.convert.contained import open_contained, read_contained
from lstmlm.convert.errors import ConvertError

TMP = pyutil.temp_root("lstmlm_fuzz_paths_")
WHAT = "fuzz: file"
NAMES = ["a", "b", "shard1", "model.json", "variables", "group1-shard1of1.bin", "é", "日本", ".hidden", "x y"]


def make_tree(rng, base):
    """A model directory `base/model` with a random tree, and `base/outside` beside it; returns (root, all paths
    created) for the names to aim at."""
    root, outside = os.path.join(base, "model"), os.path.join(base, "outside")
    os.makedirs(root)
    os.makedirs(outside)
    with open(os.path.join(outside, "secret"), "wb") as f:
        f.write(b"SECRET")
    dirs, made = [root], []
    for _ in range(rng.randrange(2, 14)):
        parent = rng.choice(dirs)
        name = rng.choice(NAMES) + str(rng.randrange(3))
        path = os.path.join(parent, name)
        if os.path.lexists(path):
            continue
        kind = rng.randrange(6)
        if kind == 0:
            os.makedirs(path)
            dirs.append(path)
        elif kind == 1:
            os.mkfifo(path)
        elif kind in (2, 3):
            with open(path, "wb") as f:
                f.write(os.urandom(rng.randrange(0, 64)))
        else:
            targets = made + [outside, os.path.join(outside, "secret"), "/dev/zero", "/", path, "..", "../..",
                              "nowhere", os.path.join("..", "outside", "secret")]
            target = rng.choice(targets)
            if rng.randrange(2) and os.path.isabs(target):
                target = os.path.relpath(target, parent)
            os.symlink(target, path)
        made.append(path)
    return root, made


def random_name(rng, root, made):
    pick = rng.randrange(10)
    if pick < 5 and made:
        name = os.path.relpath(rng.choice(made), root)
    elif pick == 5:
        name = rng.choice(["..", "../outside/secret", "/etc/passwd", "/dev/zero", ".", "", "//", "./a0/../.."])
    elif pick == 6:
        name = "a" * rng.choice([255, 256, 5000])
    elif pick == 7:
        name = rng.choice(["a\x00b", "shard\n1", "\udcff", "x/\x00"])
    else:
        name = "/".join(rng.choice(NAMES + ["..", ".", ""]) + str(rng.randrange(3)) for _ in range(rng.randrange(1, 4)))
    if rng.randrange(4) == 0:
        name = name.replace("/", "//")
    return name if rng.randrange(3) else os.path.join(root, name)


def expected_file(root, path):
    """The (device, inode) open_contained may return for `path`, or None when it must refuse."""
    try:
        real, real_root = os.path.realpath(path), os.path.realpath(root)
        if os.path.commonpath([real_root, real]) != real_root:
            return None
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def check_one(rng, root, made):
    path = random_name(rng, root, made)
    shown = repr(path)[:120]
    use_read = rng.randrange(2)
    want = expected_file(root, os.path.join(root, path))
    try:
        if use_read:
            data = read_contained(root, os.path.join(root, path), WHAT, limit=1 << 20)
            if want is None:
                return f"read_contained read {shown}, which it must refuse"
            if data == b"SECRET":
                return f"read_contained read the secret outside the model through {shown}"
        else:
            with open_contained(root, os.path.join(root, path), WHAT) as f:
                st = os.fstat(f.fileno())
                if want is None:
                    return f"open_contained opened {shown}, which it must refuse"
                if (st.st_dev, st.st_ino) != want:
                    return f"open_contained opened another file than {shown} resolves to"
    except ConvertError as e:
        message = str(e)
        if "\n" in message or not message.startswith(WHAT) or len(message) > 2048:
            return f"a refusal of {shown} that is not one short line naming the file: {message[:300]!r}"
        if want is not None:
            return f"{shown} resolves to a regular file inside the model but was refused: {message[:300]}"
    except Exception as e:  # noqa: BLE001 - the property: nothing but ConvertError escapes
        return f"{type(e).__name__} escaped for {shown}: {str(e)[:300]}"
    return None


def run_cases(seed, cases=None, seconds=None):
    rng = random.Random(seed)
    end = time.monotonic() + seconds if seconds else None
    n = 0
    while (cases is None or n < cases) and (end is None or time.monotonic() < end):
        base = os.path.join(TMP, f"t{seed}_{n}")
        root, made = make_tree(rng, base)
        for _ in range(8):
            problem = check_one(rng, root, made)
            if problem:
                return n, problem
        shutil.rmtree(base)
        n += 1
    return n, None


class FuzzContainedPaths(unittest.TestCase):
    def test_random_trees(self):
        seconds = float(os.environ.get("LSTMLM_FUZZ_SECONDS", "0"))
        seed = int(os.environ.get("LSTMLM_FUZZ_SEED", "1"))
        n, problem = run_cases(seed, seconds=seconds) if seconds else run_cases(seed, cases=400)
        self.assertIsNone(problem, f"seed {seed}, tree {n}: {problem}")
        self.assertGreater(n, 0)
        print(f"fuzz_contained_paths: {n} trees, 8 names each, seed {seed}")


if __name__ == "__main__":
    unittest.main()
