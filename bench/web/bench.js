// lstmlm's WebAssembly build against the native build, in Node, one thread, the same model files (docs/web.md):
//   node bench/web/bench.js [WASM_DIR] [CLI]          (default build-wasm, build/lstmlm)
// next-word predict at batch 1 (one call per context, --top 1) and scoring at batch 64 (score of N lines,
// sentence mode), on the converted TF.js models of ../shared/data (NYT headlines, word, windows of 18 ids;
// Nietzsche, char, windows of 40) and the bundled fairytales word model (stateful). The native figures are the
// CLI's wall time over the same N contexts or lines in one process (its start and model load included,
// spread over N). Each figure is the best of REPEATS (3) runs: the machine may be shared. Prints a Markdown
// table. With TFJS=1, TensorFlow.js 4.22 (@tensorflow/tfjs with @tensorflow/tfjs-backend-wasm, npm-installed
// here with --ignore-scripts into a scratch folder, TFJS_DIR to keep one) runs the same TF.js model.json on its
// wasm and cpu backends: model.predict at batch 1 and at batch 64 (next-word prediction of 64 windows, per
// window), against lstmlm's predict (batch 1) and score (every token of each line scored, per line).
'use strict';
const {execFileSync, spawnSync} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
process.chdir(root);
const wasmDir = path.resolve(process.argv[2] || 'build-wasm');
const cli = path.resolve(process.argv[3] || 'build/lstmlm');
const data = path.resolve(root, '..', 'shared', 'data');
const repeats = Number(process.env.REPEATS || 3);
const lstmlm = require(path.join(wasmDir, 'lstmlm.js'));

function convert(tmp, name, args) {
  const out = path.join(tmp, name);
  execFileSync('/usr/bin/python3', [path.join(root, 'tools', 'convert.py'), ...args.slice(0, 1), out,
    ...args.slice(1)], {stdio: 'pipe'});
  return out;
}

// Lines of the PTB validation text (lowercase words), each cut to `words` words or `chars` characters.
function contexts(n, {words, chars}) {
  const text = fs.readFileSync(path.join(data, 'corpora-ptb', 'ptb.valid.txt'), 'utf8');
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  const out = [];
  for (let i = 0; out.length < n; i++) {
    const l = lines[i % lines.length];
    out.push(words ? l.split(' ').slice(0, words).join(' ') : l.slice(0, chars));
  }
  return out;
}

function best(fn) {
  let t = Infinity;
  for (let r = 0; r < repeats; r++) t = Math.min(t, fn());
  return t;
}

function seconds(fn) {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

function native(args, input) {
  return seconds(() => {
    const r = spawnSync(cli, args, {input, maxBuffer: 1 << 30});
    if (r.status !== 0) throw new Error(`${cli} ${args.join(' ')}: ${r.stderr}`);
  });
}

// TensorFlow.js on the model.json of `dir`: {backend: [µs per predict at batch 1, µs per window at batch 64]}.
async function tfjs(dir) {
  const scratch = process.env.TFJS_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'lstmlm-tfjs-'));
  if (!fs.existsSync(path.join(scratch, 'node_modules', '@tensorflow', 'tfjs-backend-wasm'))) {
    fs.writeFileSync(path.join(scratch, 'package.json'), '{"private": true}');
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '@tensorflow/tfjs@4.22.0',
      '@tensorflow/tfjs-backend-wasm@4.22.0'], {cwd: scratch, stdio: 'pipe'});
  }
  const tf = require(path.join(scratch, 'node_modules', '@tensorflow', 'tfjs'));
  const wasm = require(path.join(scratch, 'node_modules', '@tensorflow', 'tfjs-backend-wasm'));
  wasm.setWasmPaths(path.join(scratch, 'node_modules', '@tensorflow', 'tfjs-backend-wasm', 'dist') + '/');
  const mj = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const specs = [], bufs = [];
  for (const g of mj.weightsManifest) {
    specs.push(...g.weights);
    for (const p of g.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(bufs);
  const out = {};
  for (const backend of ['wasm', 'cpu']) {
    await tf.setBackend(backend);
    await tf.ready();
    const m = await tf.loadLayersModel(tf.io.fromMemory({modelTopology: mj.modelTopology, weightSpecs: specs,
      weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength)}));
    const shape = m.inputs[0].shape.slice(1);  // [18] (ids) or [40, 57] (one-hot characters)
    const x = (n) => tf.zeros([n, ...shape]);
    const time = (n, reps) => {
      const input = x(n);
      m.predict(input).dataSync();
      return best(() => seconds(() => { for (let i = 0; i < reps; i++) m.predict(input).dataSync(); })) / reps / n;
    };
    out[backend] = [time(1, 30) * 1e6, time(64, 3) * 1e6];
  }
  if (!process.env.TFJS_DIR) fs.rmSync(scratch, {recursive: true, force: true});
  return out;
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lstmlm-web-bench-'));
  try {
    const nyt = path.join(data, 'tfjs-keras224-nyt-headlines-word');
    const nie = path.join(data, 'tfjs-keras215-nietzsche-char');
    const models = [
      ['NYT headlines (word, TF.js)', convert(tmp, 'nyt', [path.join(nyt, 'model.json'), '--vocab',
        path.join(nyt, 'word_index.json')]), {words: 18}, nyt],
      ['Nietzsche (char, TF.js)', convert(tmp, 'nie', [path.join(nie, 'lstm'), '--vocab',
        path.join(nie, 'char_indices.json')]), {chars: 40}, path.join(nie, 'lstm')],
      ['fairytales (word, bundled)', 'models/fairytales-word', {words: 18}, null],
    ];
    const tfRows = [];
    const n = Number(process.env.CONTEXTS || 1000);
    console.log(`lstmlm ${await lstmlm.version()}, Node ${process.version}, ${os.cpus()[0].model}, 1 thread, ` +
      `${n} contexts, best of ${repeats}\n`);
    console.log('| model | task | WASM µs | native µs | WASM / native |');
    console.log('|---|---|---:|---:|---:|');
    for (const [name, dir, cut, tfdir] of models) {
      const mine = [];  // [model, task, lstmlm WASM µs] of this model's rows
      const m = await lstmlm.load(dir);
      const ctx = contexts(n, cut);
      const input = ctx.join('\n') + '\n';
      const rows = [
        ['predict, batch 1',
          () => seconds(() => { for (const c of ctx) m.predict(c, {top: 1}); }),
          () => native(['predict', '-m', dir, '-t', '1', '--top', '1', '--batch-size', '1', '--output-format',
            'jsonl'], input)],
        ['score, batch 64',
          () => seconds(() => m.score(input)),
          () => native(['score', '-m', dir, '-t', '1', '-v', 'word', '--output-format', 'jsonl'], input)],
      ];
      for (const [task, wasm, nat] of rows) {
        const w = best(wasm) / n * 1e6, v = best(nat) / n * 1e6;
        console.log(`| ${name} | ${task} | ${w.toFixed(1)} | ${v.toFixed(1)} | ${(w / v).toFixed(2)} |`);
        mine.push([name, task, w]);
      }
      m.free();
      if (tfdir && process.env.TFJS === '1') {
        const t = await tfjs(tfdir);
        mine.forEach((row, i) => tfRows.push([...row, t.wasm[i], t.cpu[i]]));
      }
    }
    if (process.env.TFJS === '1') {
      console.log('\n| model | task | lstmlm WASM µs | TF.js wasm µs | TF.js cpu µs | TF.js wasm / lstmlm WASM |');
      console.log('|---|---|---:|---:|---:|---:|');
      for (const [name, task, w, tw, tc] of tfRows) {
        console.log(`| ${name} | ${task} | ${w.toFixed(1)} | ${tw.toFixed(1)} | ${tc.toFixed(1)} | ${(tw / w).toFixed(2)} |`);
      }
    }
    const gz = execFileSync('gzip', ['-9', '-c', path.join(wasmDir, 'lstmlm.wasm')]).length;
    console.log(`\nlstmlm.wasm: ${fs.statSync(path.join(wasmDir, 'lstmlm.wasm')).size} bytes, ${gz} gzip -9`);
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
