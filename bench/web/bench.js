// lstmlm's WebAssembly build against the native build, in Node, one thread, the same model files (docs/web.md):
//   node bench/web/bench.js [WASM_DIR] [CLI]          (default build-wasm, build/lstmlm)
// next-word predict at batch 1 (one call per context, --top 1), predict at batch 64 (an array of 64
// contexts per call: one engine batch) and scoring (score of the lines, every token, 64 lines to an engine
// batch), on the converted TF.js models of ../shared/data (NYT headlines, word, windows of 18 ids; Nietzsche,
// char, windows of 40) and MEDIUM (V 10,000, E 650, two LSTMs of 650, random weights, bench/beam_search.py's
// write_model; lines of 18 of its words, stateful); on NYT headlines also full windows (18 words of its
// vocabulary, no pad: fullWindows), which the peers' figures are set against. The native figures are the CLI's wall time over the same
// contexts or lines in one process (--batch-size 1 or 64; its start and model load included, spread over
// them). Each figure is the median of REPEATS (5; 3 on MEDIUM) runs, with the range: the machine may be
// shared. Prints Markdown tables. With TFJS=1, TensorFlow.js 4.22 (@tensorflow/tfjs with
// @tensorflow/tfjs-backend-wasm, npm-installed here with --ignore-scripts into a scratch folder, TFJS_DIR to
// keep one) runs the same TF.js model.json on its wasm and cpu backends: model.predict at batch 1 and at batch
// 64 (next-word prediction of 64 windows, per window), the same work as lstmlm's predict rows. With ORT=1,
// ONNX Runtime Web 1.30 (onnxruntime-web, its WebAssembly backend, one thread; npm-installed the same way,
// ORT_DIR to keep one) runs the predict graph bench/web/predict_onnx.py writes from the same model directory
// (NYT headlines and MEDIUM: Nietzsche's one-hot input is not what that exporter takes), the same windows,
// after a check that its log-probability of lstmlm's best token is lstmlm's within 1e-4. The exporter's
// nn.LSTM has sigmoid gates: a model with others (NYT headlines: Keras 2's hard_sigmoid) is a function of
// the same shapes and work but not the same values, so it is timed unchecked, and the table says so.
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
const repeats = Number(process.env.REPEATS || 5);
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

// V8 first runs WebAssembly through its baseline compiler (Liftoff) and optimizes a function once it has run
// enough, in the background: on a busy machine lstmlm's first ~2,500 predictions ran at half speed. Every
// engine (lstmlm, TF.js, ONNX Runtime Web) runs each timed task for WARMUP seconds (3) first, so that the
// figures are the optimized code's; COLD=1 skips that.
const warmup = process.env.COLD === '1' ? 0 : Number(process.env.WARMUP || 3);
function warm(fn) {
  const end = process.hrtime.bigint() + BigInt(Math.round(warmup * 1e9));
  do fn(); while (process.hrtime.bigint() < end);
}
async function warmAsync(fn) {
  const end = process.hrtime.bigint() + BigInt(Math.round(warmup * 1e9));
  do await fn(); while (process.hrtime.bigint() < end);
}

// `n` windows of `width` words of the PTB validation text that are in the model's vocabulary (the others
// skipped, as the model's tokenizer skips them), in text order: full windows, no pad, which is what TF.js
// and ONNX Runtime Web compute for every window (lstmlm's PTB contexts hold fewer words: it then runs only
// those, from the model's states after the pads).
function fullWindows(dir, n, width) {
  const vocab = new Set(JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8')).slice(1));
  const text = fs.readFileSync(path.join(data, 'corpora-ptb', 'ptb.valid.txt'), 'utf8');
  const words = text.split(/\s+/).filter((w) => vocab.has(w));
  return Array.from({length: n}, (_, i) => words.slice((i * width) % (words.length - width)).slice(0, width)
    .join(' '));
}

// fn() run `reps` times: {median, min, max} of its results.
function timed(fn, reps = repeats) {
  const t = [];
  for (let r = 0; r < reps; r++) t.push(fn());
  t.sort((a, b) => a - b);
  return {median: t[Math.floor(t.length / 2)], min: t[0], max: t[t.length - 1]};
}

// "median (min-max)" of a timing in µs per unit (n units per run).
function us(t, n) {
  const f = (x) => (x / n * 1e6).toFixed(x / n * 1e6 < 100 ? 1 : 0);
  return `${f(t.median)} (${f(t.min)}–${f(t.max)})`;
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

// TensorFlow.js on the model.json of `dir`: {backend: [s per predict at batch 1, s per window at batch 64]}.
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
      warm(() => m.predict(input).dataSync());
      return timed(() => seconds(() => { for (let i = 0; i < reps; i++) m.predict(input).dataSync(); }) / reps / n);
    };
    out[backend] = [time(1, 30), time(64, 3)];
  }
  if (!process.env.TFJS_DIR) fs.rmSync(scratch, {recursive: true, force: true});
  return out;
}

// MEDIUM's model directory in tmp, and `n` lines of 18 of its words (a fixed LCG).
function medium(tmp, n) {
  const dir = path.join(tmp, 'medium');
  execFileSync('/usr/bin/python3', ['-c', 'import sys; sys.path[:0] = sys.argv[2:]; ' +
    'from beam_search import write_model; write_model(sys.argv[1], 10000, 650, 650, 2, 1)', dir,
  path.join(root, 'bench'), path.join(root, 'python')], {stdio: 'pipe'});
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  let x = 1;
  const pick = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return vocab[2 + x % (vocab.length - 2)];
  };
  return [dir, Array.from({length: n}, () => Array.from({length: 18}, pick).join(' '))];
}

// ONNX Runtime Web on the predict graph of model directory `dir`, windows of `width` ids: [s per predict at
// batch 1, s per window at batch 64]; `check` is [[fed ids], logprob of a token, that token] from lstmlm.
async function ortWeb(tmp, dir, width, check) {
  const scratch = process.env.ORT_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'lstmlm-ortweb-'));
  if (!fs.existsSync(path.join(scratch, 'node_modules', 'onnxruntime-web'))) {
    fs.writeFileSync(path.join(scratch, 'package.json'), '{"private": true}');
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', 'onnxruntime-web@1.30.0'],
      {cwd: scratch, stdio: 'pipe'});
  }
  const ort = require(path.join(scratch, 'node_modules', 'onnxruntime-web'));
  ort.env.wasm.numThreads = 1;
  const file = path.join(tmp, path.basename(dir) + '.onnx');
  execFileSync('/usr/bin/python3', [path.join(root, 'bench', 'web', 'predict_onnx.py'), dir, file], {stdio: 'pipe'});
  const session = await ort.InferenceSession.create(fs.readFileSync(file), {executionProviders: ['wasm']});
  const tensor = (rows) => new ort.Tensor('int64', BigInt64Array.from(rows.flat(), BigInt),
    [rows.length, rows[0].length]);
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const same = cfg.layers.every((l) => (l.recurrent_activation || 'sigmoid') === 'sigmoid' &&
    (l.activation || 'tanh') === 'tanh');
  for (const [ids, logprob, token] of same ? check : []) {
    const got = (await session.run({ids: tensor([ids])})).logprobs.data[token];
    if (!(Math.abs(got - logprob) <= 1e-4)) throw new Error(`ONNX Runtime Web: ${got} where lstmlm has ${logprob}`);
  }
  const input = (n) => tensor(Array.from({length: n}, (_, r) => Array.from({length: width}, (_, k) => 1 + (r + k) % 50)));
  const time = async (n, reps) => {
    const x = input(n);
    await warmAsync(() => session.run({ids: x}));
    const t = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < reps; i++) await session.run({ids: x});
      t.push(Number(process.hrtime.bigint() - t0) / 1e9 / reps / n);
    }
    t.sort((a, b) => a - b);
    return {median: t[Math.floor(t.length / 2)], min: t[0], max: t[t.length - 1]};
  };
  const out = [await time(1, 10), await time(64, 2)];
  if (!process.env.ORT_DIR) fs.rmSync(scratch, {recursive: true, force: true});
  return {times: out, checked: same};
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lstmlm-web-bench-'));
  try {
    const nyt = path.join(data, 'tfjs-keras224-nyt-headlines-word');
    const nie = path.join(data, 'tfjs-keras215-nietzsche-char');
    const n = Number(process.env.CONTEXTS || 512);
    const nMedium = Number(process.env.CONTEXTS_MEDIUM || 128);
    const [mediumDir, mediumLines] = medium(tmp, nMedium);
    const nytDir = convert(tmp, 'nyt', [path.join(nyt, 'model.json'), '--vocab', path.join(nyt, 'word_index.json')]);
    const models = [
      ['NYT headlines (word, TF.js)', nytDir, contexts(n, {words: 18}), nyt, repeats, 18, fullWindows(nytDir, n, 18)],
      ['Nietzsche (char, TF.js)', convert(tmp, 'nie', [path.join(nie, 'lstm'), '--vocab',
        path.join(nie, 'char_indices.json')]), contexts(n, {chars: 40}), path.join(nie, 'lstm'), repeats, 0],
      ['MEDIUM (word, random)', mediumDir, mediumLines, null, Math.min(repeats, 3), 19],
    ];
    const tfRows = [], ortRows = [];
    console.log(`lstmlm ${await lstmlm.version()}, Node ${process.version}, ${os.cpus()[0].model}, 1 thread, ` +
      `${n} contexts (MEDIUM ${nMedium}), median (range) of ${repeats} runs (MEDIUM ${Math.min(repeats, 3)})\n`);
    console.log('| model | task | WASM µs | native µs | WASM / native |');
    console.log('|---|---|---:|---:|---:|');
    for (const [name, dir, ctx, tfdir, reps, ortWidth, full] of models) {
      // [model, task, lstmlm WASM timing, contexts] of this model's predict rows at batch 1 and 64 that the
      // peers' are set against: the full windows' when the contexts have pads.
      const mine = [];
      const m = await lstmlm.load(dir);
      const input = ctx.join('\n') + '\n';
      const predictArgs = ['predict', '-m', dir, '-t', '1', '--top', '1', '--output-format', 'jsonl'];
      const predictRows = (texts, what) => {
        const batches = [];
        for (let i = 0; i < texts.length; i += 64) batches.push(texts.slice(i, i + 64));
        const lines = texts.join('\n') + '\n';
        return [
          ['predict, batch 1' + what,
            () => seconds(() => { for (const c of texts) m.predict(c, {top: 1}); }),
            () => native([...predictArgs, '--batch-size', '1'], lines)],
          ['predict, batch 64' + what,
            () => seconds(() => { for (const b of batches) m.predict(b, {top: 1}); }),
            () => native([...predictArgs, '--batch-size', '64'], lines)],
        ];
      };
      const rows = [
        ...predictRows(ctx, ''),
        ['score a line, batch 64',
          () => seconds(() => m.score(input)),
          () => native(['score', '-m', dir, '-t', '1', '-v', 'word', '--output-format', 'jsonl'], input)],
        ...(full ? predictRows(full, ', full windows') : []),
      ];
      for (const [task, wasm, nat] of rows) {
        warm(wasm);
        const w = timed(wasm, reps), v = timed(nat, reps);
        console.log(`| ${name} | ${task} | ${us(w, ctx.length)} | ${us(v, ctx.length)} | ` +
          `${(w.median / v.median).toFixed(2)} |`);
        if (task.startsWith('predict') && task.endsWith(full ? 'windows' : '')) mine.push([name, task, w, ctx.length]);
      }
      if (ortWidth && process.env.ORT === '1') {
        // The check: lstmlm's best token after 3 contexts, with the ids it fed (pads first).
        const check = ctx.slice(0, 3).map((c) => {
          const p = m.predict(c, {top: 1});
          return [[...Array(p.pads || 0).fill(0), ...p.ids], p.top[0].logprob, p.top[0].id];
        });
        const o = await ortWeb(tmp, dir, ortWidth, check);
        mine.forEach((row, i) => ortRows.push([...row, o.times[i], o.checked]));
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
      for (const [name, task, w, count, tw, tc] of tfRows) {
        console.log(`| ${name} | ${task} | ${us(w, count)} | ${us(tw, 1)} | ${us(tc, 1)} | ` +
          `${(tw.median / (w.median / count)).toFixed(1)} |`);
      }
    }
    if (process.env.ORT === '1') {
      console.log('\n| model | task | lstmlm WASM µs | ONNX Runtime Web µs | ORT Web / lstmlm WASM |');
      console.log('|---|---|---:|---:|---:|');
      for (const [name, task, w, count, o, checked] of ortRows) {
        console.log(`| ${name}${checked ? '' : ' (sigmoid gates: unchecked)'} | ${task} | ${us(w, count)} | ` +
          `${us(o, 1)} | ${(o.median / (w.median / count)).toFixed(1)} |`);
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
