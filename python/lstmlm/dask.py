"""Scoring text and JSONL documents across machines with Dask (docs/distributed.md).

    from distributed import Client
    import lstmlm.dask
    client = Client("tcp://scheduler:8786")
    r = lstmlm.dask.score_text(client, "/shared/models/fairytales-word", ["a.txt", "b.txt"], output="scores.jsonl")
    print(r.perplexity, r.tokens)

The driver cuts the input into partitions of consecutive lines (never across files), submits them to the
workers and takes the results back in input order, whatever order they finish in. Each worker process loads
the model once, from the directory path (the model is never pickled): `model_dir` must name the same
directory on every worker. The numbers are exactly those of `lstmlm score`: the engine is batch-invariant,
so where a line is scored does not change a bit of its result.

Fault tolerance is Dask's: a partition lost with its worker is recomputed elsewhere (up to the scheduler's
`distributed.scheduler.allowed-failures`), and since the driver takes one result per partition index, no
line is lost or written twice.
"""
import collections
import os
import threading
import uuid

from . import InputError, Model, ModelError, UsageError, line_jsonl

__all__ = ["score_text", "score_jsonl", "warm", "TextResult", "JsonlResult", "load_counts"]

_BOM = b"\xef\xbb\xbf"

# ---------------------------------------------------------------------------------------------------------
# Worker side: one model per (absolute path, threads, precision) and process, loaded on first use.

_MODELS = {}
_LOADS = collections.Counter()
_LOCK = threading.Lock()


def _model(key):
    with _LOCK:
        m = _MODELS.get(key)
        if m is None:
            path, threads, precision = key
            m = Model(path, threads=threads, precision=precision)
            _MODELS[key] = m
            _LOADS[key] += 1
        return m


def load_counts():
    """{(path, threads, precision): loads} of this process: run it on the workers with
    `client.run(lstmlm.dask.load_counts)` to see that each loaded its model once."""
    with _LOCK:
        return dict(_LOADS)


def _warm(key):
    try:
        _model(key)
    except ModelError as e:
        return _one_line(e)
    return None


def _one_line(e):
    return " ".join(str(e).split("\n")).strip() or type(e).__name__


def _probe(key, kind, opts):
    """Loads the model and runs an empty call with the options, so a bad model directory or option is one
    message in the driver before any partition runs."""
    try:
        m = _model(key)
    except ModelError as e:
        return ("model_error", _one_line(e))
    try:
        if kind == "text":
            m.score_lines([], "-", 1, **opts)
        elif not hasattr(m, "score_jsonl"):
            return ("missing", "the lstmlm module on the workers has no Model.score_jsonl (a build without "
                               "the JSONL scorer): install the same lstmlm on every worker")
        else:
            m.score_jsonl([], "-", 1, **opts)
    except (ValueError, TypeError) as e:
        return ("usage_error", _one_line(e))
    return ("ok",)


def _clean(line, first):
    """A bag element as the CLI's line reader leaves a line: without its line end ("\\n", then one "\\r")
    and, on the first line of the input, without a UTF-8 BOM."""
    if isinstance(line, str):
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        if first and line.startswith("\ufeff"):
            line = line[1:]
        try:  # a str read with errors="surrogateescape": its bytes
            return line.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # another lone surrogate: invalid UTF-8, an InputError naming the line
            return line.encode("utf-8", "surrogatepass")
    line = bytes(line)
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    if first and line.startswith(_BOM):
        line = line[3:]
    return line


def _pack(scores):
    return [(s.line, bool(s.skipped), float(s.logprob), float(s.log10prob), int(s.tokens), int(s.oovs),
             int(s.oov_tokens), int(s.nonfinite), float(s.oov_logprob)) for s in scores]


def _score_text_part(key, lines, source, first_line, opts, bag_first=None):
    """Scores one partition. Returns ("ok", rows), ("model_error", message) or ("input_error", rows, index,
    message): the rows before the bad line (scored one by one, as the CLI writes the lines before an error)
    and the bad line's index in the partition. bag_first: the lines are bag elements (None: file lines);
    True on the bag's first partition (its BOM is stripped)."""
    try:
        m = _model(key)
    except ModelError as e:
        return ("model_error", _one_line(e))
    if bag_first is not None:
        lines = [_clean(x, bag_first and i == 0) for i, x in enumerate(lines)]
    try:
        return ("ok", _pack(m.score_lines(lines, source, first_line, **opts)))
    except UsageError as e:
        return ("usage_error", _one_line(e))
    except InputError as e:
        rows = []
        for i, line in enumerate(lines):
            try:
                rows.extend(_pack(m.score_lines([line], source, first_line + i, **opts)))
            except InputError as e1:
                return ("input_error", rows, i, _one_line(e1))
        return ("input_error", rows, len(lines), _one_line(e))


def _score_jsonl_part(key, lines, source, first_line, opts):
    """Scores one partition of JSONL documents: ("ok", [(status, text)]) or ("model_error", message)."""
    try:
        m = _model(key)
    except ModelError as e:
        return ("model_error", _one_line(e))
    try:
        return ("ok", [(str(s), str(t)) for s, t in m.score_jsonl(lines, source, first_line, **opts)])
    except UsageError as e:
        return ("usage_error", _one_line(e))


# ---------------------------------------------------------------------------------------------------------
# Driver side.

def _check_paths(paths):
    """Every input readable, before any work: InputError "PATH: cannot open: REASON" (the CLI's message)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError("paths: a list of file paths (got one path; wrap it in a list)")
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("paths: no input file")
    for p in paths:
        try:
            os.stat(p)
        except OSError as e:
            raise InputError(f"{p}: cannot open: {e.strerror}") from None
        if os.path.isdir(p):
            raise InputError(f"{p}: cannot open: is a directory")
        if not os.access(p, os.R_OK):
            raise InputError(f"{p}: cannot open: Permission denied")
    return paths


def _file_partitions(paths, lines_per_partition):
    """(source, first_line, [line bytes]) of at most lines_per_partition consecutive lines of one file,
    split as the CLI reads a file: at "\\n", one "\\r" before it removed, a last line without "\\n" kept,
    a BOM at the start of the file removed."""
    for p in paths:
        with open(p, "rb") as f:
            block, first, n = [], 1, 0
            for raw in f:
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                n += 1
                if n == 1 and raw.startswith(_BOM):
                    raw = raw[3:]
                block.append(raw)
                if len(block) == lines_per_partition:
                    yield p, first, block
                    block, first = [], n + 1
            if block:
                yield p, first, block


def _range_partitions(ranges, lines_per_partition, begins):
    """As _file_partitions, over byte ranges (path, file index, begin, end) that start and end at line
    starts: lines numbered from 1 at each range's start; `begins` gets each partition's range start."""
    for path, _, begin, end in ranges:
        with open(path, "rb") as f:
            f.seek(begin)
            at, block, first, n = begin, [], 1, 0
            while at < end:
                raw = f.readline()
                if not raw:
                    break
                at += len(raw)
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                n += 1
                if n == 1 and begin == 0 and raw.startswith(_BOM):
                    raw = raw[3:]
                block.append(raw)
                if len(block) == lines_per_partition:
                    begins.append((path, begin))
                    yield path, first, block
                    block, first = [], n + 1
            if block:
                begins.append((path, begin))
                yield path, first, block


def _renumber(message, path, begin, counted):
    """A message "PATH:LINE: ..." of a line numbered within a range that starts at byte `begin`: the line
    of the file (the lines before the range counted once per range, only when a message needs them)."""
    prefix = f"{path}:"
    if begin == 0 or not message.startswith(prefix):
        return message
    digits = len(prefix)
    while digits < len(message) and message[digits].isdigit():
        digits += 1
    if digits == len(prefix):
        return message
    if (path, begin) not in counted:
        from ._lstmlm import _lines_before
        counted[(path, begin)] = _lines_before(path, begin)
    return f"{prefix}{counted[(path, begin)] + int(message[len(prefix):digits])}{message[digits:]}"


def _manifest(kind, key, paths, shard, lines_per_partition, opts):
    """What a resume directory's output depends on (tasks::ResumeDir refuses a directory of another)."""
    inputs = []
    for p in paths:
        st = os.stat(p)
        inputs.append({"path": os.path.abspath(p), "size": st.st_size, "mtime": st.st_mtime_ns})
    return {"command": f"lstmlm.dask.{kind}", "format": 1, "model": key[0], "precision": key[2], "inputs": inputs,
            "shard": shard or "1/1", "lines_per_partition": lines_per_partition,
            "options": {k: opts[k] for k in sorted(opts)}}


def _client(client):
    if client is None:
        from distributed import default_client
        return default_client()
    return client


def _key(model_dir, threads, precision):
    return (os.path.abspath(os.fspath(model_dir)), int(threads), str(precision))


def _run_probe(client, key, kind, opts):
    r = client.submit(_probe, key, kind, opts, pure=False, key=f"lstmlm-probe-{uuid.uuid4().hex}").result()
    if r[0] == "model_error":
        raise ModelError(r[1]) from None
    if r[0] == "usage_error":
        raise UsageError(r[1]) from None
    if r[0] == "missing":
        raise RuntimeError(r[1]) from None


def warm(client, model_dir, *, threads=1, precision="fp32"):
    """Loads the model on every worker now (client.run), so the first partitions do not wait for it; a new
    worker loads it on its first partition. Raises ModelError with the first worker's message."""
    client = _client(client)
    key = _key(model_dir, threads, precision)
    for message in client.run(_warm, key).values():
        if message is not None:
            raise ModelError(message) from None


def _check_perplexity_bounds(**bounds):
    """A bound is None or a perplexity >= 0 (inf allowed), as Model.score_jsonl and the CLI require."""
    for name, b in bounds.items():
        if b is None:
            continue
        try:
            ok = float(b) >= 0
        except (TypeError, ValueError):
            raise UsageError(f"{name} must be a perplexity >= 0, got {b!r}") from None
        if not ok:  # negative or NaN
            raise UsageError(f"{name} must be a perplexity >= 0, got {float(b)!r}")


def _window(client, max_in_flight):
    if max_in_flight is not None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight: at least 1")
        return int(max_in_flight)
    threads = sum(client.nthreads().values()) or 1
    return max(4 * threads, 8)


def _ordered(client, func, key, parts, opts, window, name, stored=None):
    """Submits func(key, lines, source, first, opts) per partition, at most `window` in flight, and yields
    (source, first, lines, result) in partition order. stored(index): a result kept by an earlier run
    (("resumed", output, record)), yielded without submitting the partition, or None. Pending futures are
    cancelled when the consumer stops early (an error)."""
    prefix = f"lstmlm-{name}-{uuid.uuid4().hex[:12]}"
    it = enumerate(parts)
    pending = collections.deque()

    def refill():
        while len(pending) < window:
            try:
                i, (source, first, lines) = next(it)
            except StopIteration:
                return
            kept = stored(i) if stored is not None else None
            if kept is not None:
                pending.append((source, first, len(lines), None, kept))
                continue
            fut = client.submit(func, key, lines, source, first, opts, key=f"{prefix}-{i}", priority=-i,
                                pure=False)
            pending.append((source, first, len(lines), fut, None))

    refill()
    try:
        while pending:
            source, first, n, fut, kept = pending.popleft()
            refill()
            if fut is None:
                yield source, first, n, kept
                continue
            result = fut.result()
            fut.release()
            yield source, first, n, result
    finally:
        futures = [p[3] for p in pending if p[3] is not None]
        if futures:
            client.cancel(futures)


class TextResult:
    """What score_text returns: `lines` (a dict per input line, in input order, unless collect=False: file,
    line, skipped, logprob, log10prob, tokens, oovs, oov_tokens, oov_logprob, nonfinite) and the summary of
    `lstmlm score`: sentences (lines not skipped), skipped, tokens (scored, eos included), oovs,
    oov_tokens (OOVs scored as unk), logprob (natural log), log10prob, perplexity (including OOVs),
    perplexity_excl_oov, nonfinite; `partitions`: how many tasks ran. The totals are the library's
    ScoreSummary, summed in input order as the CLI sums them."""

    _SUMMARY = ("sentences", "skipped", "tokens", "oovs", "oov_tokens", "nonfinite", "logprob", "oov_logprob",
                "log10prob", "perplexity", "perplexity_excl_oov")

    def __init__(self):
        from . import ScoreSummary
        self.lines = []
        self.partitions = 0
        self._summary = ScoreSummary()

    def __getattr__(self, name):
        if name in TextResult._SUMMARY:
            return getattr(self.__dict__["_summary"], name)
        raise AttributeError(f"'TextResult' object has no attribute {name!r}")

    def summary(self):
        """The summary as a dict with the fields of the CLI's jsonl summary record."""
        d = {"sentences": self.sentences, "skipped": self.skipped, "tokens": self.tokens, "oovs": self.oovs,
             "logprob": self.logprob, "log10prob": self.log10prob, "perplexity": self.perplexity,
             "perplexity_excl_oov": self.perplexity_excl_oov}
        if self.nonfinite:
            d["nonfinite"] = self.nonfinite
        return d

    def summary_record(self):
        """The CLI's jsonl summary line (without the newline)."""
        return self._summary.jsonl().rstrip("\n")

    def __repr__(self):
        return (f"TextResult(sentences={self.sentences}, skipped={self.skipped}, tokens={self.tokens}, "
                f"oovs={self.oovs}, logprob={self.logprob!r}, perplexity={self.perplexity!r}, "
                f"perplexity_excl_oov={self.perplexity_excl_oov!r}, partitions={self.partitions})")


def score_text(client, model_dir, paths_or_bag, *, lines_per_partition=2000, threads=1, precision="fp32",
               context="sentence", eos=True, oov="skip", skip_empty=False, normalize="none", output=None,
               source="-", collect=True, max_in_flight=None, on_partition=None):
    """Scores text, one sentence per line, on the Dask cluster of `client` (None: the default client), with
    the numbers of `lstmlm score -m MODEL_DIR`.

    paths_or_bag: a list of text file paths, read by the driver and cut into partitions of
    `lines_per_partition` consecutive lines (line numbers per file, "file" the path as given); or a
    dask.bag.Bag of lines (str or bytes; a trailing "\\n" or "\\r\\n" is removed, as dask.bag.read_text
    leaves it), scored partition by partition where the bag lives, numbered 1.. across the bag as one input
    named `source` (the CLI's "-" for stdin by default).
    threads, precision: Model(threads=..., precision=...) on each worker (one model per worker process).
    normalize: "none", "lower", "nfkc" or "ccnet", applied to each line before it is tokenized (as
    `lstmlm score --normalize`; score_jsonl too).
    context="document" is refused (ValueError): it carries the state from line to line, so the input
    cannot be split; run `lstmlm score --context document` or Model.score_lines on one machine.
    output: a path; gets exactly what `lstmlm score -v sentence --output-format jsonl FILES...` writes,
    written in input order as the partitions arrive. collect=False keeps no per-line dicts in memory.
    max_in_flight: partitions submitted at once (default 4 per worker thread); on_partition(index, n)
    is called in the driver as each partition's result is taken, in order: its index (0, 1, ...) and the
    number of lines it held.

    Returns a TextResult. Raises lstmlm.InputError before any work for a path that cannot be read, and with
    the first bad line's message "SOURCE:LINE: ..." (after writing the lines before it, as the CLI does);
    lstmlm.ModelError with the worker's message when the model cannot load; lstmlm.UsageError (a
    ValueError) for an option the model refuses, ValueError for others.
    """
    if context == "document":
        raise ValueError("context='document' carries the state across lines and files, so it cannot be split "
                         "into partitions: use lstmlm.Model.score_lines or `lstmlm score --context document` "
                         "on one machine")
    if context != "sentence":
        raise ValueError(f"context: 'sentence' (got {context!r})")
    if int(lines_per_partition) < 1:
        raise ValueError("lines_per_partition: at least 1")
    lines_per_partition = int(lines_per_partition)
    try:
        import dask.bag as dbag
        is_bag = isinstance(paths_or_bag, dbag.Bag)
    except ImportError:
        is_bag = False
    paths = None if is_bag else _check_paths(paths_or_bag)
    client = _client(client)
    key = _key(model_dir, threads, precision)
    opts = {"context": context, "eos": bool(eos), "oov": oov, "skip_empty": bool(skip_empty),
            "normalize": normalize}
    _run_probe(client, key, "text", opts)

    result = TextResult()
    out = open(output, "wb") if output is not None else None
    stream = None
    try:
        if is_bag:
            stream = _bag_results(client, key, paths_or_bag, source, opts)
        else:
            stream = _ordered(client, _score_text_part, key, _file_partitions(paths, lines_per_partition),
                              opts, _window(client, max_in_flight), "score")
        offsets = collections.defaultdict(int)  # bag: lines before the partition
        for index, (src, first, n, r) in enumerate(stream):
            if r[0] == "model_error":
                raise ModelError(r[1]) from None
            if r[0] == "usage_error":
                raise UsageError(r[1]) from None
            rows = r[1]
            if is_bag:
                first = offsets[src] + 1
                rows = [(first + j,) + row[1:] for j, row in enumerate(rows)]
                offsets[src] += n
            buf = []
            for (line, skipped, logprob, log10prob, tokens, oovs, oov_tokens, nonfinite, oov_logprob) in rows:
                result._summary.add(skipped, logprob, tokens, oovs, oov_tokens, nonfinite, oov_logprob)
                if out is not None:
                    buf.append(line_jsonl(src, line, skipped, logprob, tokens, oovs, nonfinite))
                if collect:
                    result.lines.append({"file": src, "line": line, "skipped": skipped, "logprob": logprob,
                                         "log10prob": log10prob, "tokens": tokens, "oovs": oovs,
                                         "oov_tokens": oov_tokens, "oov_logprob": oov_logprob,
                                         "nonfinite": nonfinite})
            if out is not None:
                out.write("".join(buf).encode("utf-8"))
            result.partitions += 1
            if r[0] == "input_error":
                message = r[3]
                if is_bag:  # the worker numbered the partition from 1: renumber in the whole bag
                    local = f"{src}:{r[2] + 1}:"
                    if message.startswith(local):
                        message = f"{src}:{first + r[2]}:" + message[len(local):]
                raise InputError(message) from None
            if on_partition is not None:
                on_partition(index, n)
        if out is not None:
            out.write((result.summary_record() + "\n").encode("utf-8"))
    finally:
        if stream is not None:
            stream.close()  # cancels the partitions still in flight after an error
        if out is not None:
            out.close()
    return result


def _bag_results(client, key, bag, source, opts):
    """Each partition of the bag scored where it is computed (numbered from 1; the driver renumbers),
    results taken in partition order."""
    import dask
    parts = bag.to_delayed()
    tasks = [dask.delayed(_score_text_part, pure=False)(key, p, source, 1, opts, i == 0)
             for i, p in enumerate(parts)]
    futures = client.compute(tasks)
    try:
        for fut in futures:
            r = fut.result()
            fut.release()
            # A partition's length is its number of results, or the rows before the error + the bad line.
            n = len(r[1]) if r[0] == "ok" else (r[2] + 1 if r[0] == "input_error" else 0)
            yield source, 1, n, r
    finally:
        client.cancel([f for f in futures if f.status == "pending"])


class JsonlResult:
    """What score_jsonl returns: `documents` (the kept output lines, without newline, in input order, unless
    collect=False), kept, filtered, `errors` (the messages "SOURCE:LINE: ..." of the documents dropped under
    on_error="skip"), `partitions` and `resumed` (the partitions taken from a resume directory)."""

    def __init__(self):
        self.documents = []
        self.kept = self.filtered = 0
        self.errors = []
        self.partitions = 0
        self.resumed = 0

    @property
    def n_errors(self):
        return len(self.errors)

    def __repr__(self):
        return (f"JsonlResult(kept={self.kept}, filtered={self.filtered}, errors={len(self.errors)}, "
                f"partitions={self.partitions}, resumed={self.resumed})")


def score_jsonl(client, model_dir, paths, *, text_field="text", min_perplexity=None, max_perplexity=None,
                on_error="fail", output=None, lines_per_partition=1000, threads=1, precision="fp32",
                context="sentence", eos=True, oov="skip", normalize="none", collect=True, max_in_flight=None,
                on_partition=None, shard=None, resume=None):
    """Scores JSONL documents (one JSON object per line, its text in the string field `text_field`) on the
    cluster, as `lstmlm score --input-format jsonl --text-field F [--min-perplexity X] [--max-perplexity Y]`
    does: each kept document is its input line with `, "logprob": L, "tokens": N, "oovs": K,
    "perplexity": P` added before the final "}"; documents outside [min_perplexity, max_perplexity] are
    filtered out. context="document" scores each document as one stream (documents stay independent, so
    the input can be split). output: a path that gets the kept lines, byte for byte the CLI's stdout.

    A line is one JSON object and nothing else (whitespace aside): bytes after the object, a NUL byte
    included, make it a bad document. A negative (or NaN) perplexity bound is a UsageError.
    on_error="fail": the first bad document (invalid JSON, no text field, invalid UTF-8, ...) raises
    lstmlm.InputError with its message "SOURCE:LINE: ...", after the documents before it are written;
    "skip": bad documents are dropped, their messages in JsonlResult.errors.
    shard="K/N": only the K-th of N contiguous parts of the files, cut by bytes on line boundaries as
    `lstmlm score --shard K/N` cuts them (the driver reads only that part; N drivers split a corpus).
    resume=DIR: each partition's output and counts are kept in DIR as `lstmlm score --resume DIR` keeps its
    blocks; a run stopped at any point (the driver killed, the cluster lost) and started again with the same
    arguments takes the finished partitions from DIR without submitting them (JsonlResult.resumed counts
    them) and writes the same output; DIR of other inputs or options is refused (UsageError).
    Returns a JsonlResult. Paths, model and option errors as score_text.
    """
    if on_error not in ("fail", "skip"):
        raise ValueError(f"on_error: 'fail' or 'skip' (got {on_error!r})")
    if context not in ("sentence", "document"):
        raise ValueError(f"context: 'sentence' or 'document' (got {context!r})")
    if int(lines_per_partition) < 1:
        raise ValueError("lines_per_partition: at least 1")
    _check_perplexity_bounds(min_perplexity=min_perplexity, max_perplexity=max_perplexity)
    paths = _check_paths(paths)
    client = _client(client)
    key = _key(model_dir, threads, precision)
    opts = {"text_field": text_field, "min_perplexity": min_perplexity, "max_perplexity": max_perplexity,
            "context": context, "eos": bool(eos), "oov": oov, "normalize": normalize}
    lines_per_partition = int(lines_per_partition)
    begins = []  # (path, range start) per partition, in order
    if shard is not None:
        from ._lstmlm import _shard_ranges
        parts = _range_partitions(_shard_ranges(paths, shard), lines_per_partition, begins)
    else:
        parts = (begins.append((p[0], 0)) or p for p in _file_partitions(paths, lines_per_partition))
    store = None
    if resume is not None:
        from ._lstmlm import _ResumeDir
        store = _ResumeDir(os.fspath(resume), _manifest("score_jsonl", key, paths, shard, lines_per_partition,
                                                          {**opts, "on_error": on_error}))
    _run_probe(client, key, "jsonl", opts)

    def stored(index):
        kept = store.finished(f"p-{index:09d}") if store is not None else None
        return None if kept is None else ("resumed", kept[0], kept[1])

    result = JsonlResult()
    out = open(output, "wb") if output is not None else None
    stream = None
    counted = {}
    try:
        stream = _ordered(client, _score_jsonl_part, key, parts, opts, _window(client, max_in_flight), "jsonl",
                          stored)
        for index, (src, first, n, r) in enumerate(stream):
            if r[0] == "model_error":
                raise ModelError(r[1]) from None
            if r[0] == "usage_error":
                raise UsageError(r[1]) from None
            path, begin = begins[index]
            if r[0] == "resumed":
                data, record = r[1], r[2]
                if out is not None:
                    out.write(data)
                result.kept += record["kept"]
                result.filtered += record["filtered"]
                result.errors.extend(record["errors"])
                if collect:
                    result.documents.extend(x.decode("utf-8", "surrogateescape") for x in data.split(b"\n")[:-1])
                result.partitions += 1
                result.resumed += 1
                if on_partition is not None:
                    on_partition(index, n)
                continue
            buf = []
            error = None
            kept = filtered = 0
            errors = []
            for status, text in r[1]:
                if status == "kept":
                    kept += 1
                    buf.append(text)
                    if collect:
                        result.documents.append(text)
                elif status == "filtered":
                    filtered += 1
                elif on_error == "skip":
                    errors.append(_renumber(text, path, begin, counted))
                else:
                    error = _renumber(text, path, begin, counted)
                    break
            result.kept += kept
            result.filtered += filtered
            result.errors.extend(errors)
            data = ("\n".join(buf) + "\n").encode("utf-8", "surrogateescape") if buf else b""
            if store is not None and error is None:
                store.commit(f"p-{index:09d}", data, {"kept": kept, "filtered": filtered, "errors": errors})
            if out is not None and buf:
                out.write(data)
            result.partitions += 1
            if error is not None:
                raise InputError(error) from None
            if on_partition is not None:
                on_partition(index, n)
    finally:
        if stream is not None:
            stream.close()  # cancels the partitions still in flight after an error
        if out is not None:
            out.close()
    return result
