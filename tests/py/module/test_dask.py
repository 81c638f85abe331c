"""lstmlm.dask (docs/distributed.md) on a LocalCluster of 2 worker processes with 1 thread each: the output
files byte for byte the CLI's (`score -v sentence --output-format jsonl`, `score --input-format jsonl`) on
multi-partition inputs, file lists and bags; one model load per worker process; a worker killed mid-run;
bad inputs. Needs the module (LSTMLM_PYTHONPATH, the build's python dir) and python3-distributed; skips
with a printed reason without them."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")


def _skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    raise unittest.SkipTest(reason)


def _import():
    """(lstmlm, lstmlm.dask, distributed, dask.bag), or SkipTest saying what is missing."""
    path = os.environ.get("LSTMLM_PYTHONPATH", "")
    if not path:
        _skip("LSTMLM_PYTHONPATH not set (the build's python dir; ctest sets it when the module is built)")
    if path not in sys.path:
        sys.path.insert(0, path)
    # The worker processes (spawned) import lstmlm.dask too.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (path, os.environ.get("PYTHONPATH", "")) if p)
    try:
        import distributed
        import dask.bag
    except ImportError as e:
        _skip(f"dask/distributed not importable ({e}): apt-get install python3-distributed")
    try:
        import lstmlm
        import lstmlm.dask
    except ImportError as e:
        _skip(f"lstmlm.dask not importable from {path} ({e})")
    return lstmlm, lstmlm.dask, distributed, dask.bag


def _words():
    with open(os.path.join(MODEL, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    return [w for w in vocab if w not in ("<unk>", "<eos>")]


def _text_lines(seed, n):
    """n lines of vocabulary words with OOV words (ASCII and not), capitalised words and empty lines."""
    rnd = random.Random(seed)
    words = _words()
    oovs = ["zzqx", "Élan", "naïve", "Kyōto", "qwertyuiop"]
    out = []
    for i in range(n):
        if i % 37 == 5:
            out.append("")
            continue
        k = rnd.randint(1, 30)
        ws = [rnd.choice(oovs) if rnd.random() < 0.08 else rnd.choice(words) for _ in range(k)]
        if rnd.random() < 0.1:
            ws[0] = ws[0].capitalize()
        out.append(" ".join(ws))
    return out


class DaskTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lstmlm, cls.ld, distributed, cls.db = _import()
        cls.cli = pyutil.CLI if pyutil.CLI and os.path.exists(pyutil.CLI) else None
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm-dask-test-")
        cls.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                               dashboard_address=None, local_directory=cls.tmp)
        try:
            cls.client = distributed.Client(cls.cluster)
            cls.client.wait_for_workers(2, timeout=60)
        except BaseException:
            cls.cluster.close()
            raise
        # Three files, 430 lines: a BOM, CRLF line ends, a last line without a line break, empty lines.
        lines = _text_lines(13, 430)
        cls.paths = []
        for name, part, raw in (("a.txt", lines[:150], False), ("b.txt", lines[150:330], True),
                                ("c.txt", lines[330:], False)):
            p = os.path.join(cls.tmp, name)
            data = "\n".join(part).encode("utf-8")
            if name == "a.txt":
                data = b"\xef\xbb\xbf" + data + b"\n"
            elif raw:
                data = data.replace(b"\n", b"\r\n") + b"\r\n"
            with open(p, "wb") as f:
                f.write(data)  # c.txt: no final line break
            cls.paths.append(p)
        cls.docs = cls._write_jsonl(os.path.join(cls.tmp, "docs.jsonl"), lines, 0)
        cls.docs2 = cls._write_jsonl(os.path.join(cls.tmp, "docs2.jsonl"), lines[100:], 1)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.client.close()
        finally:
            cls.cluster.close()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def _write_jsonl(cls, path, lines, seed):
        """JSONL documents of 1-6 lines of text each, with other fields and unicode, compact and spaced."""
        rnd = random.Random(seed)
        out, i, n = [], 0, 0
        while i < len(lines):
            k = rnd.randint(1, 6)
            text = "\n".join(lines[i:i + k])
            i += k
            n += 1
            if n % 3 == 0:
                out.append(json.dumps({"id": n, "text": text, "meta": {"ü": [1, 2]}}, ensure_ascii=False))
            else:
                out.append('{"id":%d,"text":%s}  ' % (n, json.dumps(text)))
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        return path

    def out(self, name):
        return os.path.join(self.tmp, name)

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def cli_run(self, *args, stdin=None):
        if not self.cli:
            self.skipTest("LSTMLM_CLI not set (run through ctest)")
        return subprocess.run([self.cli, *args], input=stdin, capture_output=True)

    def cli_score(self, *args, stdin=None):
        r = self.cli_run("score", "-m", MODEL, "-v", "sentence", "--output-format", "jsonl", *args, stdin=stdin)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def require_jsonl(self):
        if not hasattr(self.lstmlm.Model, "score_jsonl"):
            print("SKIP: this build's lstmlm.Model has no score_jsonl (the JSONL scorer, tasks/jsonl.hpp, is not "
                  "in it yet)", file=sys.stderr)
            self.skipTest("lstmlm.Model.score_jsonl not in this build")

    def jsonl_reference(self, paths, **kw):
        """What `score --input-format jsonl` writes, from the CLI when it has that option, else from
        Model.score_jsonl run here on each whole file (the same scorer)."""
        args = ["score", "-m", MODEL, "--input-format", "jsonl"]
        if kw.get("min_perplexity") is not None:
            args += ["--min-perplexity", repr(kw["min_perplexity"])]
        if kw.get("max_perplexity") is not None:
            args += ["--max-perplexity", repr(kw["max_perplexity"])]
        if self.cli:
            r = subprocess.run([self.cli, *args, *paths], capture_output=True)
            if r.returncode == 0:
                return r.stdout
            if b"input-format" not in r.stderr:
                self.fail(r.stderr)
        m = self.lstmlm.Model(MODEL, threads=1)
        out = b""
        for p in paths:
            with open(p, "rb") as f:
                lines = f.read().split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            for status, text in m.score_jsonl(lines, p, 1, **kw):
                self.assertNotEqual(status, "error", text)
                if status == "kept":
                    out += text.encode("utf-8") + b"\n"
        return out

    # ---------------------------------------------------------------------------------------------------

    def test_score_text_files_equal_cli(self):
        expected = self.cli_score(*self.paths)
        out = self.out("text.jsonl")
        r = self.ld.score_text(self.client, MODEL, self.paths, lines_per_partition=17, output=out)
        self.assertGreater(r.partitions, 20)
        self.assertEqual(self.read(out), expected)
        summary = json.loads(expected.splitlines()[-1])
        self.assertEqual(r.sentences, summary["sentences"])
        self.assertEqual(r.tokens, summary["tokens"])
        self.assertEqual(r.oovs, summary["oovs"])
        self.assertGreater(r.oovs, 0)
        self.assertEqual("%.9g" % r.perplexity, "%.9g" % summary["perplexity"])
        self.assertEqual("%.9g" % r.perplexity_excl_oov, "%.9g" % summary["perplexity_excl_oov"])
        self.assertEqual([(d["file"], d["line"]) for d in r.lines],
                         [(x["file"], x["line"]) for x in map(json.loads, expected.splitlines()[:-1])])

    def test_score_text_skip_empty_and_no_eos(self):
        expected = self.cli_score("--skip-empty", "--no-eos", *self.paths)
        out = self.out("text-skip.jsonl")
        r = self.ld.score_text(self.client, MODEL, self.paths, lines_per_partition=50, output=out,
                               skip_empty=True, eos=False)
        self.assertGreater(r.skipped, 0)
        self.assertEqual(self.read(out), expected)

    def test_normalize_equals_cli(self):
        expected = self.cli_score("--normalize", "ccnet", *self.paths)
        self.assertNotEqual(expected, self.cli_score(*self.paths))  # the fixtures hold what ccnet rewrites
        out = self.out("text-ccnet.jsonl")
        self.ld.score_text(self.client, MODEL, self.paths, lines_per_partition=50, output=out, normalize="ccnet")
        self.assertEqual(self.read(out), expected)
        with self.assertRaises(ValueError):
            self.ld.score_text(self.client, MODEL, self.paths, normalize="nfd")

    def test_score_text_bag_equals_cli_stdin(self):
        data = self.read(self.paths[1])  # CRLF line ends
        for name, bag in (("read_text", self.db.read_text(self.paths[1], blocksize=3000)),
                          ("bytes", self.db.from_sequence(data.split(b"\n")[:-1], npartitions=7))):
            with self.subTest(name):
                self.assertGreater(bag.npartitions, 3)
                out = self.out(f"bag-{name}.jsonl")
                r = self.ld.score_text(self.client, MODEL, bag, output=out)
                self.assertEqual(self.read(out), self.cli_score(stdin=data))
                self.assertEqual([d["line"] for d in r.lines], list(range(1, 181)))

    def test_document_mode_refused(self):
        with self.assertRaisesRegex(ValueError, "document"):
            self.ld.score_text(self.client, MODEL, self.paths, context="document")

    def test_score_jsonl_equals_cli(self):
        self.require_jsonl()
        paths = [self.docs, self.docs2]
        # Bounds from the documents' own perplexities, so that each filter keeps some and drops some.
        ppl = sorted(p for p in (json.loads(x)["perplexity"] for x in self.jsonl_reference(paths).splitlines())
                     if p is not None)
        q = [float("%.4g" % ppl[len(ppl) * k // 4]) for k in (1, 2, 3)]
        for kw in ({}, {"min_perplexity": q[1]}, {"max_perplexity": q[1]},
                   {"min_perplexity": q[0], "max_perplexity": q[2]}):
            with self.subTest(**kw):
                out = self.out("docs-out.jsonl")
                r = self.ld.score_jsonl(self.client, MODEL, paths, output=out, lines_per_partition=9, **kw)
                expected = self.jsonl_reference(paths, **kw)
                self.assertEqual(self.read(out), expected)
                self.assertEqual(r.kept, len(expected.splitlines()))
                self.assertEqual([d.encode("utf-8") for d in r.documents], expected.splitlines())
                self.assertGreater(r.partitions, 10)
                if kw:
                    self.assertGreater(r.filtered, 0)
                    self.assertGreater(r.kept, 0)
                self.assertEqual(r.errors, [])

    def test_jsonl_shards_are_the_cli_shards(self):
        """shard="K/N" cuts the files as `score --shard K/N` does: each shard's output is the CLI's, and the
        shards together are the whole output."""
        self.require_jsonl()
        paths = [self.docs, self.docs2]
        whole = b""
        for k in (1, 2, 3):
            out = self.out(f"shard{k}.jsonl")
            self.ld.score_jsonl(self.client, MODEL, paths, output=out, lines_per_partition=7, shard=f"{k}/3")
            r = self.cli_run("score", "-m", MODEL, "--input-format", "jsonl", "--shard", f"{k}/3", *paths)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.read(out), r.stdout)
            self.assertGreater(len(r.stdout), 0)
            whole += r.stdout
        self.assertEqual(whole, self.jsonl_reference(paths))
        with self.assertRaises(self.lstmlm.UsageError):
            self.ld.score_jsonl(self.client, MODEL, paths, shard="4/3")

    def _big_jsonl(self):
        big = self.out("big-docs.jsonl")
        if not os.path.exists(big):
            with open(big, "wb") as f:
                for _ in range(30):
                    f.write(self.read(self.docs))
        return big

    def test_jsonl_resume_after_a_worker_and_the_driver_are_lost(self):
        """A worker is SIGKILLed mid-run and the driver stops at partition 6 (an exception from
        on_partition, as a driver dies); the same call with the same resume directory takes partitions
        0-6 from it without submitting them, and the output is the CLI's, byte for byte."""
        self.require_jsonl()
        big = self._big_jsonl()
        rdir = self.out("resume-worker")
        out = self.out("resume-worker.jsonl")
        before = self.client.run(os.getpid)
        killed = []

        def stop(index, n):
            if index == 2 and not killed:
                busy = {w: k for w, k in self.client.processing().items() if k}
                victim = max(busy or before, key=lambda w: len(busy.get(w, ())))
                os.kill(before[victim], signal.SIGKILL)
                killed.append(victim)
            if index == 6:
                raise KeyboardInterrupt

        try:
            with self.assertRaises(KeyboardInterrupt):
                self.ld.score_jsonl(self.client, MODEL, [big], output=out, lines_per_partition=40, resume=rdir,
                                    max_in_flight=4, on_partition=stop)
        finally:
            self.client.wait_for_workers(2, timeout=60)
        self.assertEqual(len(killed), 1)
        r = self.ld.score_jsonl(self.client, MODEL, [big], output=out, lines_per_partition=40, resume=rdir)
        self.assertEqual(r.resumed, 7)
        expected = self.jsonl_reference([big])
        self.assertEqual(self.read(out), expected)
        self.assertEqual([d.encode("utf-8") for d in r.documents], expected.splitlines())
        with self.assertRaises(self.lstmlm.UsageError):  # another partition size: another run
            self.ld.score_jsonl(self.client, MODEL, [big], lines_per_partition=41, resume=rdir)

    def test_jsonl_resume_after_the_driver_is_killed(self):
        """The driver, a process of its own on the same cluster, is SIGKILLed at random points three times,
        then runs to the end: its output is the CLI's, byte for byte."""
        self.require_jsonl()
        big = self._big_jsonl()
        rdir = self.out("resume-driver")
        out = self.out("resume-driver.jsonl")
        script = ("import sys, distributed, lstmlm.dask\n"
                  "c = distributed.Client(sys.argv[1])\n"
                  "r = lstmlm.dask.score_jsonl(c, sys.argv[2], [sys.argv[3]], output=sys.argv[4], "
                  "lines_per_partition=20, resume=sys.argv[5], max_in_flight=2)\n"
                  "print(r.resumed, r.partitions)\n")
        cmd = [sys.executable, "-c", script, self.cluster.scheduler_address, MODEL, big, out, rdir]
        t0 = time.monotonic()
        first = subprocess.run(cmd, capture_output=True, text=True)
        took = time.monotonic() - t0
        self.assertEqual(first.returncode, 0, first.stderr)
        shutil.rmtree(rdir)
        rng = random.Random(3)
        for _ in range(3):
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.5, 1.0) * took)
            p.send_signal(signal.SIGKILL)
            p.wait()
        last = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(last.returncode, 0, last.stderr)
        self.assertEqual(self.read(out), self.jsonl_reference([big]))
        resumed, partitions = map(int, last.stdout.split())
        self.assertGreater(resumed, 0, "no kill came after a finished partition: nothing was resumed")
        print(f"\nthe last driver took {resumed} of {partitions} partitions from the resume directory",
              file=sys.stderr)

    def test_model_loaded_once_per_worker(self):
        self.ld.score_text(self.client, MODEL, self.paths, lines_per_partition=10, max_in_flight=8)
        if hasattr(self.lstmlm.Model, "score_jsonl"):
            self.ld.score_jsonl(self.client, MODEL, [self.docs], lines_per_partition=10)
        key = (os.path.abspath(MODEL), 1, "fp32")
        counts = self.client.run(self.ld.load_counts)
        self.assertEqual(len(counts), 2)
        for worker, c in counts.items():
            self.assertEqual(c.get(key), 1, f"{worker}: {c}")

    def test_worker_killed_mid_run(self):
        """One worker process is SIGKILLed when the first partition's result arrives, while others are in
        flight (partitions of 250 lines, tens of ms each): Dask reruns what it held elsewhere, and the
        output is still the CLI's, every line once, in order."""
        big = self.out("big.txt")
        with open(big, "wb") as f:
            for i in range(10):
                for p in self.paths:
                    f.write(self.read(p).replace(b"\xef\xbb\xbf", b"").rstrip(b"\r\n") + b"\n")
        n_lines = len(self.read(big).splitlines())
        expected = self.cli_score(big)
        killed = []
        before = self.client.run(os.getpid)

        def kill_one(index, n):
            if killed:
                return
            # A worker that has tasks of this job (running or queued there); the job is far from done, so
            # one exists: the wait is for the scheduler's view, not a timing that must be guessed.
            processing = {}
            for _ in range(500):
                processing = {w: keys for w, keys in self.client.processing().items() if keys}
                if processing:
                    break
            self.assertTrue(processing, "no worker is processing a partition")
            victim = max(processing, key=lambda w: len(processing[w]))
            os.kill(before[victim], signal.SIGKILL)
            killed.append((victim, len(processing[victim])))
            print(f"\nkilled worker {victim} (pid {before[victim]}) with {len(processing[victim])} task(s) "
                  f"assigned, after partition {index}", file=sys.stderr)

        out = self.out("killed.jsonl")
        try:
            r = self.ld.score_text(self.client, MODEL, [big], lines_per_partition=250, max_in_flight=6,
                                   output=out, on_partition=kill_one)
        finally:
            self.client.wait_for_workers(2, timeout=60)
        self.assertEqual(len(killed), 1)
        self.assertGreaterEqual(killed[0][1], 1)
        self.assertEqual(r.partitions, -(-n_lines // 250))
        self.assertEqual(len(r.lines), n_lines)
        self.assertEqual(self.read(out), expected)
        after = self.client.run(os.getpid)
        self.assertNotIn(before[killed[0][0]], after.values(), "the worker was not restarted")

    def test_on_partition_gets_index_and_line_count(self):
        # on_partition(index, n): the partition's index in input order and how many lines it held.
        calls = []
        r = self.ld.score_text(self.client, MODEL, self.paths, lines_per_partition=100,
                               on_partition=lambda index, n: calls.append((index, n)))
        # a.txt 150 lines, b.txt 180, c.txt 100: a partition never spans two files.
        self.assertEqual(calls, [(0, 100), (1, 50), (2, 100), (3, 80), (4, 100)])
        self.assertEqual(r.partitions, 5)

    def test_invalid_utf8_writes_lines_before_as_cli(self):
        p = self.out("bad-utf8.txt")
        good = _text_lines(5, 60)
        with open(p, "wb") as f:
            f.write("\n".join(good[:41]).encode() + b"\nthe king \xff\xfe said\n" + "\n".join(good[41:]).encode())
        out = self.out("bad-utf8.jsonl")
        with self.assertRaises(self.lstmlm.InputError) as cm:
            self.ld.score_text(self.client, MODEL, [self.paths[0], p], lines_per_partition=8, output=out)
        self.assertTrue(str(cm.exception).startswith(f"{p}:42:"), str(cm.exception))
        r = self.cli_run("score", "-m", MODEL, "-v", "sentence", "--output-format", "jsonl", self.paths[0], p)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(self.read(out), r.stdout)
        self.assertIn(str(cm.exception).encode(), r.stderr)
        # The same from a bag: the worker's partition-local line number is renumbered in the whole bag.
        data = self.read(p)
        bag = self.db.from_sequence(data.split(b"\n"), npartitions=6)
        with self.assertRaises(self.lstmlm.InputError) as cm:
            self.ld.score_text(self.client, MODEL, bag, output=out)
        self.assertTrue(str(cm.exception).startswith("-:42:"), str(cm.exception))
        r = self.cli_run("score", "-m", MODEL, "-v", "sentence", "--output-format", "jsonl", stdin=data)
        self.assertEqual(self.read(out), r.stdout)

    def test_bad_option(self):
        for call, path in ((self.ld.score_text, self.paths[0]), (self.ld.score_jsonl, self.docs)):
            with self.subTest(call.__name__):
                if call is self.ld.score_jsonl:
                    self.require_jsonl()
                with self.assertRaisesRegex(self.lstmlm.UsageError, "oov") as cm:
                    call(self.client, MODEL, [path], oov="bogus")
                self.assertNotIn("\n", str(cm.exception))

    def test_missing_file(self):
        missing = self.out("no-such-file.txt")
        out = self.out("missing.jsonl")
        for call in (self.ld.score_text, self.ld.score_jsonl):
            with self.subTest(call.__name__):  # before any work: no score_jsonl needed on the workers
                with self.assertRaises(self.lstmlm.InputError) as cm:
                    call(self.client, MODEL, [self.paths[0], missing], output=out)
                self.assertEqual(str(cm.exception), f"{missing}: cannot open: No such file or directory")
                self.assertFalse(os.path.exists(out))

    def test_bad_model_dir(self):
        bad = self.out("bad-model")
        os.makedirs(bad, exist_ok=True)
        with open(os.path.join(bad, "config.json"), "w") as f:
            f.write("{not json")
        for model in (bad, self.out("no-model-here")):
            for call, path in ((self.ld.score_text, self.paths[0]), (self.ld.score_jsonl, self.docs)):
                with self.subTest(model=model, call=call.__name__):
                    with self.assertRaises(self.lstmlm.ModelError) as cm:
                        call(self.client, model, [path])
                    msg = str(cm.exception)
                    self.assertIn(model, msg)
                    self.assertNotIn("\n", msg)
                    self.assertNotIn("Traceback", msg)
                    self.assertIsNone(cm.exception.__cause__)

    def test_invalid_json_fail_and_skip(self):
        self.require_jsonl()
        with open(self.docs, encoding="utf-8") as f:
            docs = f.read().splitlines()
        bad = docs[:20] + ['{"id": 999, "text": "the king" '] + docs[20:40] + ['{"id": 1000}'] + docs[40:]
        p = self.out("bad.jsonl")
        with open(p, "w", encoding="utf-8") as f:
            f.write("\n".join(bad) + "\n")
        good = self.out("good.jsonl")
        with open(good, "w", encoding="utf-8") as f:
            f.write("\n".join(docs[:20] + docs[20:40] + docs[40:]) + "\n")
        expected = self.jsonl_reference([good])
        n_before = len(self.jsonl_reference_lines(docs[:20]))

        out = self.out("bad-fail.jsonl")
        with self.assertRaises(self.lstmlm.InputError) as cm:
            self.ld.score_jsonl(self.client, MODEL, [p], output=out, lines_per_partition=7)
        self.assertTrue(str(cm.exception).startswith(f"{p}:21:"), str(cm.exception))
        self.assertEqual(self.read(out), b"".join(expected.splitlines(True)[:n_before]))

        out = self.out("bad-skip.jsonl")
        r = self.ld.score_jsonl(self.client, MODEL, [p], output=out, lines_per_partition=7, on_error="skip")
        self.assertEqual(self.read(out), expected)
        self.assertEqual(r.n_errors, 2)
        self.assertTrue(r.errors[0].startswith(f"{p}:21:"), r.errors)
        self.assertTrue(r.errors[1].startswith(f"{p}:42:"), r.errors)
        if self.cli:
            cr = subprocess.run([self.cli, "score", "-m", MODEL, "--input-format", "jsonl", p], capture_output=True)
            if b"input-format" not in cr.stderr:
                self.assertEqual(cr.returncode, 1)
                self.assertEqual(cr.stdout, self.read(self.out("bad-fail.jsonl")))

    def test_jsonl_bytes_after_the_object_are_a_bad_document(self):
        # A line is one JSON object and nothing else: a NUL byte after it (and whatever follows, valid UTF-8 or
        # not) makes the line a bad document, never a kept line with the bytes copied into it.
        self.require_jsonl()
        with open(self.docs, "rb") as f:
            docs = f.read().splitlines()
        bad = docs[:5] + [docs[5] + b"\x00 trailing"] + docs[6:12] + [docs[12] + b"\x00\xff\xfe"] + docs[13:30]
        p = self.out("nul.jsonl")
        with open(p, "wb") as f:
            f.write(b"\n".join(bad) + b"\n")
        good = self.out("nul-good.jsonl")
        with open(good, "wb") as f:
            f.write(b"\n".join(docs[:5] + docs[6:12] + docs[13:30]) + b"\n")
        out = self.out("nul-skip.jsonl")
        r = self.ld.score_jsonl(self.client, MODEL, [p], output=out, lines_per_partition=4, on_error="skip")
        self.assertEqual(self.read(out), self.jsonl_reference([good]))
        for line in self.read(out).splitlines():
            self.assertIsInstance(json.loads(line), dict)
        self.assertEqual(len(r.errors), 2, r.errors)
        for e, n in zip(r.errors, (6, 13)):
            self.assertRegex(e, rf"^{p}:{n}: invalid JSON at byte \d+: a NUL byte")
            self.assertNotIn("\n", e)
        with self.assertRaises(self.lstmlm.InputError) as cm:
            self.ld.score_jsonl(self.client, MODEL, [p], output=out, lines_per_partition=4)
        self.assertTrue(str(cm.exception).startswith(f"{p}:6: "), str(cm.exception))

    def test_negative_perplexity_bound_refused(self):
        for kw in ({"min_perplexity": -1}, {"max_perplexity": -0.5}, {"min_perplexity": float("nan")}):
            with self.subTest(**kw):
                with self.assertRaisesRegex(self.lstmlm.UsageError, r"^(min|max)_perplexity must be a perplexity >= 0"):
                    self.ld.score_jsonl(self.client, MODEL, [self.docs], **kw)

    def test_bag_str_with_a_lone_surrogate_is_an_input_error_naming_the_line(self):
        bag = self.db.from_sequence(["the king", "the \ud800 king", "the"], npartitions=2)
        with self.assertRaises(self.lstmlm.InputError) as cm:
            self.ld.score_text(self.client, MODEL, bag)
        self.assertRegex(str(cm.exception), r"^-:2: .*UTF-8")

    def jsonl_reference_lines(self, docs):
        m = self.lstmlm.Model(MODEL, threads=1)
        return [t for s, t in m.score_jsonl(docs) if s == "kept"]


if __name__ == "__main__":
    unittest.main()
