// The JavaScript API of the WebAssembly build (docs/web.md, lstmlm.d.ts), appended to emscripten's loader
// (--extern-post-js): `lstmlmModule` is the loader's factory. Every call goes through the C API
// (include/lstmlm/lstmlm.h): a status other than LSTMLM_OK becomes an LstmlmError whose message is the one
// line the CLI prints after "lstmlm: error: ". One module instance serves every model; an engine runs on
// one thread (the build has none).
(function (factory) {
  'use strict';
  const isNode = typeof process === 'object' && !!(process.versions && process.versions.node);
  const STATUS = ['LSTMLM_OK', 'LSTMLM_ERR_USAGE', 'LSTMLM_ERR_INPUT', 'LSTMLM_ERR_MODEL', 'LSTMLM_ERR_NOMEM',
    'LSTMLM_ERR_INTERNAL'];
  // The CLI's exit statuses (docs/errors.md): usage errors 2, the others 1.
  const EXIT = [0, 2, 1, 1, 1, 1];

  class LstmlmError extends Error {
    constructor(message, status) {
      super(message);
      this.name = 'LstmlmError';
      this.status = STATUS[status] || 'LSTMLM_ERR_UNKNOWN';  // the C API's status name
      this.exitCode = EXIT[status] === undefined ? 1 : EXIT[status];  // the CLI's for the same error
    }
  }

  // One encoder and one decoder for every call (making them per call cost as much as a small record).
  const utf8 = new TextEncoder();
  const utf8Text = new TextDecoder();

  let modulePromise = null;
  let scriptDir = '';
  if (!isNode && typeof document !== 'undefined' && document.currentScript) {
    scriptDir = document.currentScript.src.replace(/[^/]*$/, '');
  }

  // The module, made once. wasm: the module's bytes or URL (default: lstmlm.wasm beside lstmlm.js).
  function instance(wasm) {
    if (modulePromise) return modulePromise;
    const init = {print: () => {}, printErr: () => {}};
    if (wasm instanceof ArrayBuffer || ArrayBuffer.isView(wasm)) {
      init.wasmBinary = wasm;
    } else if (isNode && !wasm) {
      // Node's fetch takes no file path: the bytes are read here.
      init.wasmBinary = require('fs').readFileSync(require('path').join(__dirname, 'lstmlm.wasm'));
    } else {
      const url = wasm || scriptDir + 'lstmlm.wasm';
      init.locateFile = (file) => file.endsWith('.wasm') ? url : scriptDir + file;
    }
    modulePromise = factory(init).then((M) => {
      if (isNode) {
        // Relative model paths resolve as in the CLI run from the same directory, so messages name the same
        // files: the module's file system mirrors the working directory's path.
        M.FS.mkdirTree(process.cwd());
        M.FS.chdir(process.cwd());
      }
      return M;
    });
    return modulePromise;
  }

  function check(M, status) {
    if (status === 0) return;
    const msg = M.UTF8ToString(M._lstmlm_last_error());
    // "lstmlm_function: message": the CLI prints the message alone.
    throw new LstmlmError(msg.replace(/^lstmlm_[a-z0-9_]+: /, ''), status);
  }

  // A text's bytes: a string as UTF-8 (a lone surrogate as U+FFFD, as TextEncoder writes it), a Uint8Array
  // as its bytes (which may be invalid UTF-8, an error).
  function bytesOf(s) {
    return s instanceof Uint8Array ? s : utf8.encode(String(s));
  }

  // A text in the module's memory for the length of `body(ptr, bytes)`, NUL-terminated.
  function withString(M, s, body) {
    const bytes = bytesOf(s);
    const p = M._malloc(bytes.length + 1);
    try {
      M.HEAPU8.set(bytes, p);
      M.HEAPU8[p + bytes.length] = 0;
      return body(p, bytes.length);
    } finally {
      M._free(p);
    }
  }

  // Texts (strings or Uint8Arrays) in the module's memory for the length of `body(ptrs, lens, n)`: two
  // arrays of n pointers and n lengths, as withString writes one.
  function withStrings(M, texts, body) {
    const encoded = texts.map((s) => s instanceof Uint8Array ? s : utf8.encode(String(s)));
    const total = encoded.reduce((a, b) => a + b.length, 0);
    const block = M._malloc(total + 1), ptrs = M._malloc(4 * texts.length + 4), lens = M._malloc(4 * texts.length + 4);
    try {
      let at = block;
      encoded.forEach((bytes, i) => {
        M.HEAPU8.set(bytes, at);
        M.HEAPU32[(ptrs >> 2) + i] = at;
        M.HEAPU32[(lens >> 2) + i] = bytes.length;
        at += bytes.length;
      });
      return body(ptrs, lens, texts.length);
    } finally {
      M._free(block);
      M._free(ptrs);
      M._free(lens);
    }
  }

  // Calls fn(outPtr, lenPtr) of a C function that gives a string (lstmlm_*_jsonl); returns it.
  function takeString(M, fn) {
    const slots = M._malloc(8);
    try {
      M.HEAPU32[slots >> 2] = 0;
      check(M, fn(slots, slots + 4));
      const p = M.HEAPU32[slots >> 2], n = M.HEAPU32[(slots + 4) >> 2];
      const text = utf8Text.decode(M.HEAPU8.subarray(p, p + n));
      M._lstmlm_string_free(p);
      return text;
    } finally {
      M._free(slots);
    }
  }

  function records(text) {
    return text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  }

  function int32(M, v, name) {
    if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647) {
      throw new LstmlmError(name + ': expected an integer, got ' + JSON.stringify(v), 1);
    }
    return v;
  }

  // Writes a model's files into the module's file system: Node reads a directory's regular files; a browser
  // gives {name: ArrayBuffer | Uint8Array | URL string}.
  let nextDir = 0;
  async function stage(M, source, options) {
    if (typeof source === 'string') {
      if (!isNode) throw new LstmlmError('load: a path needs Node; in a browser give the files', 1);
      const fs = require('fs'), path = require('path');
      const dir = path.resolve(source);
      let names = [];
      try {
        if (fs.statSync(dir).isDirectory()) names = fs.readdirSync(dir);
      } catch (e) {
        // Not there: the library says so, in the CLI's words.
      }
      const staged = [];
      for (const name of names) {
        const file = path.join(dir, name);
        let st;
        try {
          st = fs.statSync(file);
        } catch (e) {
          continue;
        }
        M.FS.mkdirTree(dir);
        if (st.isDirectory()) {
          M.FS.mkdirTree(file);  // the library names it: "DIR/config.json: not a regular file"
          continue;
        }
        if (!st.isFile()) continue;
        M.FS.writeFile(file, fs.readFileSync(file));
        staged.push(file);
      }
      if (names.length === 0 && fs.existsSync(dir) && fs.statSync(dir).isDirectory()) M.FS.mkdirTree(dir);
      return {path: source, files: staged};
    }
    if (source === null || typeof source !== 'object') {
      throw new LstmlmError('load: give a model directory\'s path (Node) or its files {name: ArrayBuffer}', 1);
    }
    const dir = '/models/' + (options.name || 'model' + nextDir++);
    M.FS.mkdirTree(dir);
    const staged = [];
    for (const [name, value] of Object.entries(source)) {
      if (name.includes('/')) throw new LstmlmError('load: ' + JSON.stringify(name) + ' is not a file name', 1);
      let bytes = value;
      if (typeof value === 'string') bytes = await (await fetch(value)).arrayBuffer();
      const data = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) :
        new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      M.FS.writeFile(dir + '/' + name, data);
      staged.push(dir + '/' + name);
    }
    return {path: dir, files: staged};
  }

  const registry = typeof FinalizationRegistry === 'function' ?
    new FinalizationRegistry((free) => free()) : null;

  class State {
    constructor(model, ptr) {
      this._model = model;
      this._ptr = ptr;
      this.tokens = 0;
      const M = model._M;
      if (registry) registry.register(this, () => M._lstmlm_state_free(ptr), this);
    }
    _live() {
      if (!this._ptr) throw new LstmlmError('state: used after free()', 1);
      return this._ptr;
    }
    // Feeds token ids (an array) or a text (tokenized as score tokenizes a line); returns this.
    advance(input) {
      const M = this._model._M;
      const ids = typeof input === 'string' ? this._model.tokenize(input) : Array.from(input);
      const slots = M._malloc(8);
      try {
        M.HEAPU32[slots >> 2] = this._live();
        for (const id of ids) {
          M.HEAP32[(slots + 4) >> 2] = int32(M, id, 'advance');
          check(M, M._lstmlm_step_batch(this._model._live(), slots, slots + 4, 1, 0));
          this.tokens++;
        }
      } finally {
        M._free(slots);
      }
      return this;
    }
    // ln p of the next token `id`.
    logprob(id) {
      const M = this._model._M;
      const slot = M._malloc(4);
      try {
        check(M, M._lstmlm_state_logprob(this._model._live(), this._live(), int32(M, id, 'id'), slot));
        return M.HEAPF32[slot >> 2];
      } finally {
        M._free(slot);
      }
    }
    // The k most probable next tokens, as `lstmlm predict --top k`: [{token, id, prob, logprob}].
    top(k = 10) {
      return this._ranked(k, (M, ids, lps, n) =>
        M._lstmlm_state_top(this._model._live(), this._live(), k, ids, lps, n));
    }
    // A word model's completions of a half-typed word, as `lstmlm predict --prefix`.
    complete(prefix, k = 10) {
      const M = this._model._M;
      return withString(M, prefix, (p, len) => this._ranked(k, (M2, ids, lps, n) =>
        M2._lstmlm_state_complete(this._model._live(), this._live(), p, len, 0, 0, 0, k, ids, lps, n)));
    }
    _ranked(k, call) {
      const M = this._model._M;
      int32(M, k, 'k');
      if (k < 0) throw new LstmlmError('k: must be >= 0, got ' + k, 1);
      const ids = M._malloc(4 * k + 4), lps = M._malloc(4 * k + 4), n = M._malloc(4);
      try {
        check(M, call(M, ids, lps, n));
        const out = [];
        for (let i = 0; i < M.HEAPU32[n >> 2]; i++) {
          const id = M.HEAP32[(ids >> 2) + i], logprob = M.HEAPF32[(lps >> 2) + i];
          out.push({token: this._model.token(id), id, prob: Math.exp(logprob), logprob});
        }
        return out;
      } finally {
        M._free(ids);
        M._free(lps);
        M._free(n);
      }
    }
    clone() {
      const M = this._model._M;
      const slot = M._malloc(4);
      try {
        check(M, M._lstmlm_state_clone(this._live(), slot));
        const s = new State(this._model, M.HEAPU32[slot >> 2]);
        s.tokens = this.tokens;
        return s;
      } finally {
        M._free(slot);
      }
    }
    free() {
      if (!this._ptr) return;
      if (registry) registry.unregister(this);
      this._model._M._lstmlm_state_free(this._ptr);
      this._ptr = 0;
    }
  }

  class Model {
    constructor(M, ptr, path) {
      this._M = M;
      this._ptr = ptr;
      this.path = path;
      if (registry) registry.register(this, () => M._lstmlm_model_free(ptr), this);
    }
    _live() {
      if (!this._ptr) throw new LstmlmError('model: used after free()', 1);
      return this._ptr;
    }
    // The kernels that run, e.g. "fp32/scalar".
    get kernels() {
      const M = this._M;
      const slot = M._malloc(4);
      try {
        check(M, M._lstmlm_model_kernels(this._live(), slot));
        return M.UTF8ToString(M.HEAPU32[slot >> 2]);
      } finally {
        M._free(slot);
      }
    }
    get vocabSize() {
      const M = this._M;
      const slot = M._malloc(4);
      try {
        check(M, M._lstmlm_model_vocab_size(this._live(), slot));
        return M.HEAP32[slot >> 2];
      } finally {
        M._free(slot);
      }
    }
    token(id) {
      const M = this._M;
      const slots = M._malloc(8);
      try {
        check(M, M._lstmlm_model_token(this._live(), int32(M, id, 'id'), slots, slots + 4));
        const p = M.HEAPU32[slots >> 2], n = M.HEAPU32[(slots + 4) >> 2];
        return utf8Text.decode(M.HEAPU8.subarray(p, p + n));
      } finally {
        M._free(slots);
      }
    }
    // A line's token ids, as score reads it (an OOV word: unk, or skipped without one).
    tokenize(text) {
      const M = this._M;
      return withString(M, text, (p, len) => {
        const need = M._malloc(4);
        try {
          check(M, M._lstmlm_tokenize(this._live(), p, len, 0, 0, need));
          const n = M.HEAPU32[need >> 2];
          const ids = M._malloc(4 * n + 4);
          try {
            check(M, M._lstmlm_tokenize(this._live(), p, len, ids, n, need));
            return Array.from(M.HEAP32.subarray(ids >> 2, (ids >> 2) + n));
          } finally {
            M._free(ids);
          }
        } finally {
          M._free(need);
        }
      });
    }
    // The records of `lstmlm score -v word --output-format jsonl` (each line a sentence; the summary last).
    score(text) {
      const M = this._M;
      return records(withString(M, text, (p, len) =>
        takeString(M, (out, n) => M._lstmlm_score_jsonl(this._live(), p, len, out, n))));
    }
    // The record of `lstmlm predict --top TOP [--prefix PREFIX] --output-format jsonl CONTEXT`; given an
    // array of contexts, their records in engine batches of 64 (as the CLI's of the contexts on stdin, one
    // per line), each the bits of the context's own.
    predict(context, options = {}) {
      const M = this._M;
      const top = options.top === undefined ? 10 : int32(M, options.top, 'top');
      const prefix = options.prefix === undefined ? '' : options.prefix;
      if (Array.isArray(context)) {
        return withStrings(M, context, (ptrs, lens, n) => withString(M, prefix, (pp, plen) =>
          records(takeString(M, (out, len) =>
            M._lstmlm_predict_batch_jsonl(this._live(), ptrs, lens, n, top, pp, plen, out, len)))));
      }
      // One block for the context, the prefix and the result's two slots: each malloc and free is a call
      // into the module, a few per cent of a prediction at batch 1.
      const c = bytesOf(context), p = bytesOf(prefix);
      const slots = (c.length + p.length + 2 + 3) & ~3;
      const block = M._malloc(slots + 8);
      try {
        M.HEAPU8.set(c, block);
        M.HEAPU8[block + c.length] = 0;
        M.HEAPU8.set(p, block + c.length + 1);
        M.HEAPU8[block + c.length + 1 + p.length] = 0;
        M.HEAPU32[(block + slots) >> 2] = 0;
        check(M, M._lstmlm_predict_jsonl(this._live(), block, c.length, top, block + c.length + 1, p.length,
          block + slots, block + slots + 4));
        const out = M.HEAPU32[(block + slots) >> 2], n = M.HEAPU32[(block + slots + 4) >> 2];
        const text = utf8Text.decode(M.HEAPU8.subarray(out, out + n));
        M._lstmlm_string_free(out);
        return records(text)[0];
      } finally {
        M._free(block);
      }
    }
    // The sample record of `lstmlm generate -p PROMPT -n N --seed SEED ... --output-format jsonl`.
    generate(prompt = '', options = {}) {
      const M = this._M;
      const known = ['n', 'temperature', 'top_k', 'top_p', 'seed'];
      for (const key of Object.keys(options)) {
        if (!known.includes(key)) {
          throw new LstmlmError('generate: unknown option ' + JSON.stringify(key) + ' (the options are ' +
            known.join(', ') + ')', 1);
        }
      }
      const seed = BigInt(options.seed === undefined ? 0 : options.seed);
      if (seed < 0n || seed >= (1n << 64n)) throw new LstmlmError('seed: must be in [0, 2^64), got ' + seed, 1);
      const o = M._malloc(32);  // lstmlm_generate_options on wasm32: 4 + 4 * 5 + pad 4 + 8 bytes
      try {
        M.HEAPU8.fill(0, o, o + 32);
        M.HEAPU32[o >> 2] = 32;
        M.HEAP32[(o + 4) >> 2] = options.n === undefined ? 100 : int32(M, options.n, 'n');
        M.HEAP32[(o + 8) >> 2] = 1;
        M.HEAPF32[(o + 12) >> 2] = options.temperature === undefined ? 1 : Number(options.temperature);
        M.HEAP32[(o + 16) >> 2] = options.top_k === undefined ? 0 : int32(M, options.top_k, 'top_k');
        M.HEAPF32[(o + 20) >> 2] = options.top_p === undefined ? 1 : Number(options.top_p);
        M.HEAPU32[(o + 24) >> 2] = Number(seed & 0xffffffffn);
        M.HEAPU32[(o + 28) >> 2] = Number(seed >> 32n);
        return withString(M, prompt, (p, len) =>
          records(takeString(M, (out, n) => M._lstmlm_generate_jsonl(this._live(), p, len, o, out, n)))[0]);
      } finally {
        M._free(o);
      }
    }
    // A stream's state: bos (default true) feeds the start token first, as score and predict begin a text.
    state(bos = true) {
      const M = this._M;
      const slot = M._malloc(4);
      try {
        check(M, M._lstmlm_state_new(this._live(), bos ? 1 : 0, slot));
        return new State(this, M.HEAPU32[slot >> 2]);
      } finally {
        M._free(slot);
      }
    }
    free() {
      if (!this._ptr) return;
      if (registry) registry.unregister(this);
      this._M._lstmlm_model_free(this._ptr);
      this._ptr = 0;
    }
  }

  // body() with LSTMLM_ISA set to isa in the module's environment (unset again after), or as it is.
  function withIsa(M, isa, body) {
    if (isa === undefined) return body();
    return withString(M, 'LSTMLM_ISA', (name) => {
      withString(M, isa, (value) => M._setenv(name, value, 1));
      try {
        return body();
      } finally {
        M._unsetenv(name);
      }
    });
  }

  // Loads a model: in Node a model directory's path; anywhere its files as {name: ArrayBuffer | Uint8Array |
  // URL}. options.wasm: the module's bytes or URL (the first load makes the module); options.name: the
  // directory the files are given in messages (default "model0", "model1", ...); options.isa: the kernel
  // level, as LSTMLM_ISA ("simd128", the default; "scalar": the native build's bits, slower); options.precision:
  // the CLI's --precision ("fp32", the default; "int8"; "bf16"). A model keeps the kernels it was loaded with.
  async function load(source, options = {}) {
    const M = await instance(options.wasm);
    if (options.isa !== undefined && typeof options.isa !== 'string') {
      throw new LstmlmError('isa: expected a string, got ' + JSON.stringify(options.isa), 1);
    }
    // lstmlm_precision's values, by the CLI's --precision names.
    const precision = ['fp32', 'bf16', 'int8'].indexOf(options.precision === undefined ? 'fp32' : options.precision);
    if (precision < 0) {
      throw new LstmlmError('precision: expected fp32, bf16 or int8, got ' + JSON.stringify(options.precision), 1);
    }
    const staged = await stage(M, source, options);
    const opts = M._malloc(12);  // lstmlm_model_options on wasm32
    const slot = M._malloc(4);
    try {
      M.HEAPU32[opts >> 2] = 12;
      M.HEAP32[(opts + 4) >> 2] = 1;  // threads: the build has one
      M.HEAP32[(opts + 8) >> 2] = precision;
      const status = withIsa(M, options.isa, () =>
        withString(M, staged.path, (p) => M._lstmlm_model_load(p, opts, slot)));
      check(M, status);
      return new Model(M, M.HEAPU32[slot >> 2], staged.path);
    } finally {
      M._free(opts);
      M._free(slot);
      // The model holds its weights: the staged copies are not read again.
      for (const f of staged.files) M.FS.unlink(f);
    }
  }

  async function version(options = {}) {
    const M = await instance(options.wasm);
    return M.UTF8ToString(M._lstmlm_version());
  }

  const api = {load, version, LstmlmError, Model, State};
  if (typeof module === 'object' && module.exports) module.exports = api;
  if (typeof globalThis === 'object') globalThis.lstmlm = api;
})(lstmlmModule);
