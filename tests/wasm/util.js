// What the WebAssembly tests share: where the package folder and the native CLI are, the CLI run as the
// reference, and the real third-party models of ../shared/data converted once per process.
'use strict';
const {execFileSync, spawnSync} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
// The package folder (scripts/build-wasm's DIR) and the native build's CLI, the reference.
const wasmDir = path.resolve(root, process.env.LSTMLM_WASM_DIR || 'build-wasm');
const cli = path.resolve(root, process.env.LSTMLM_CLI || 'build/lstmlm');
const data = path.resolve(root, '..', 'shared', 'data');

// Paths in messages are the ones given: every run is from the source root, as the CLI's.
process.chdir(root);

function lstmlm() {
  return require(path.join(wasmDir, 'lstmlm.js'));
}

// The CLI's stdout, stderr and exit status for `args` with `input` on stdin.
function runCli(args, input = '') {
  const r = spawnSync(cli, args, {input, encoding: 'utf8', cwd: root, maxBuffer: 1 << 28});
  return {out: r.stdout, err: r.stderr, status: r.status};
}

function jsonl(text) {
  return text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

// The message the CLI prints on stderr after "lstmlm: error: " (its first line).
function cliError(args, input = '') {
  const r = runCli(args, input);
  const line = r.err.split('\n').find((l) => l.startsWith('lstmlm: error: '));
  return {message: line === undefined ? null : line.slice('lstmlm: error: '.length), status: r.status, err: r.err};
}

let converted = null;
// The TF.js and ml5 models of ../shared/data, converted with tools/convert.py into a temporary directory:
// {name: dir}; {} when the data is not there.
function realModels() {
  if (converted) return converted;
  converted = {};
  if (!fs.existsSync(data)) return converted;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lstmlm-wasm-'));
  const jobs = {
    'nyt-headlines-word': [path.join(data, 'tfjs-keras224-nyt-headlines-word', 'model.json'), '--vocab',
      path.join(data, 'tfjs-keras224-nyt-headlines-word', 'word_index.json')],
    'nietzsche-char': [path.join(data, 'tfjs-keras215-nietzsche-char', 'lstm'), '--vocab',
      path.join(data, 'tfjs-keras215-nietzsche-char', 'char_indices.json')],
    'ml5-dubois': [path.join(data, 'ml5-charrnn-tf1-basiclstm', 'models', 'charRNN', 'dubois')],
  };
  for (const [name, args] of Object.entries(jobs)) {
    const out = path.join(tmp, name);
    execFileSync('/usr/bin/python3', [path.join(root, 'tools', 'convert.py'), args[0], out, ...args.slice(1)],
      {stdio: 'pipe'});
    converted[name] = out;
  }
  process.on('exit', () => fs.rmSync(tmp, {recursive: true, force: true}));
  return converted;
}

// The WebAssembly bit set's promise (docs/web.md): every log-probability within 1e-5 of the native one, or
// 1e-6 of it relative where that is more (below -10: a logit's error grows with its size).
const TOLERANCE = 1e-5, RELATIVE = 1e-6;

// Asserts that got has want's shape and values, numbers within the tolerance: a log-probability (or a
// probability) max(TOLERANCE, RELATIVE |want|), a sum of n of them (a record with `tokens`) max(n TOLERANCE,
// RELATIVE |want|), a perplexity TOLERANCE relative (exp of a mean: its relative error is the mean's, at most
// TOLERANCE while each term's is). Integers (ids, counts) exactly.
function assertClose(got, want, where = '', n = 1) {
  if (typeof want === 'number' && typeof got === 'number') {
    if (Number.isInteger(want) && Number.isInteger(got) && !/prob|perplexity/.test(where)) {
      if (got !== want) throw new Error(`${where}: ${got} != ${want}`);
      return;
    }
    const tol = /perplexity/.test(where) ? TOLERANCE * Math.abs(want) :
      Math.max(TOLERANCE * n, RELATIVE * Math.abs(want));
    if (!(Math.abs(got - want) <= tol)) throw new Error(`${where}: ${got} not within ${tol} of ${want}`);
    return;
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) {
      throw new Error(`${where}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
    }
    want.forEach((w, i) => assertClose(got[i], w, `${where}[${i}]`, n));
    return;
  }
  if (want !== null && typeof want === 'object') {
    if (got === null || typeof got !== 'object') throw new Error(`${where}: ${JSON.stringify(got)} is not an object`);
    const keys = Object.keys(want).sort();
    if (JSON.stringify(Object.keys(got).sort()) !== JSON.stringify(keys)) {
      throw new Error(`${where}: keys ${Object.keys(got)} != ${keys}`);
    }
    // A record's own sums cover its tokens; its words are one each.
    const count = typeof want.tokens === 'number' ? Math.max(1, want.tokens) : 1;
    for (const k of keys) assertClose(got[k], want[k], `${where}.${k}`, k === 'words' || k === 'tokens' ? 1 : count);
    return;
  }
  if (got !== want) throw new Error(`${where}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
}

module.exports = {root, wasmDir, cli, data, lstmlm, runCli, jsonl, cliError, realModels, assertClose};
