#!/usr/bin/env node
// ONNX Runtime's side of bench/compare, part 2: times one ONNX model with onnxruntime-node, as a user's Node
// service would run it (one InferenceSession per thread count, intra-op threads as asked, sequential
// execution, every graph optimisation), and prints one JSON line per (batch, threads) with the keys of
// `lstmlm bench -o jsonl` that bench/compare reads.
//
//   node ort_bench.js --model M.onnx --identity I.onnx --vocab V -w score|predict -b 1,64 -s T -t 1,2 [-r 3]
//                     [--min-time 0.1] [--warmup 2] [--seed 1] [--precision fp32|int8]
//   node ort_bench.js --model M.onnx --dump '[[ids...], ...]'     (the first output on those ids, as JSON)
//
// tokens_per_s_median is B*T over (the median seconds per call minus the per-call overhead): the overhead is
// the median time of the same feeds through --identity (an Identity graph on the same inputs), measured in the
// same process right before. The raw figure is beside it (tokens_per_s_raw_median, latency_p50_us).
// Inputs are made from the model's own input types: int64 ids (and targets for a score graph), or float ids for
// a graph that casts them itself (tf2onnx's Keras exports).
'use strict';
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const a = {vocab: '0', w: 'score', b: '1', s: '32', t: '1', r: 3, minTime: 0.1, warmup: 2, seed: 1, precision: 'fp32'};
  const names = {'-w': 'w', '-b': 'b', '-s': 's', '-t': 't', '-r': 'r', '--model': 'model', '--identity': 'identity',
    '--min-time': 'minTime', '--warmup': 'warmup', '--seed': 'seed', '--dump': 'dump', '--precision': 'precision', '--vocab': 'vocab'};
  for (let i = 2; i < argv.length; i += 2) {
    const k = names[argv[i]];
    if (!k || i + 1 >= argv.length) throw new Error(`ort_bench: unknown option or missing value: ${argv[i]}`);
    a[k] = argv[i + 1];
  }
  for (const k of ['r', 'warmup', 'seed', 'vocab']) a[k] = Number.parseInt(a[k], 10);
  if (!a.dump && !(a.vocab > 0)) throw new Error('ort_bench: --vocab V (the ids are drawn below it) is required');
  a.minTime = Number(a.minTime);
  return a;
}

// A small LCG: the same ids for the same seed, whatever the platform.
function rng(seed) {
  let x = BigInt(seed) & 0xffffffffn;
  return (n) => {
    x = (x * 1103515245n + 12345n) & 0x7fffffffn;
    return Number(x % BigInt(n));
  };
}

function feeds(session, rows, vocab) {
  const B = rows.length;
  const T = rows[0].length;
  const out = {};
  const meta = session.inputMetadata || [];
  session.inputNames.forEach((name, k) => {
    const flat = rows.flat();
    // Target ids: the input shifted by one, as score's targets are the next tokens.
    const vals = k === 0 ? flat : flat.map((v) => (v + 1) % vocab);
    const type = meta[k] && meta[k].type;
    out[name] = type === 'float32' ? new ort.Tensor('float32', Float32Array.from(vals), [B, T])
                                   : new ort.Tensor('int64', BigInt64Array.from(vals.map(BigInt)), [B, T]);
  });
  return out;
}

async function timeCalls(session, f, minTime, warmup, reps) {
  for (let i = 0; i < warmup; i++) await session.run(f);
  const per = [];
  for (let r = 0; r < reps; r++) {
    let n = 0;
    const t0 = process.hrtime.bigint();
    let dt = 0;
    do {
      await session.run(f);
      n++;
      dt = Number(process.hrtime.bigint() - t0) / 1e9;
    } while (dt < minTime);
    per.push(dt / n);
  }
  per.sort((x, y) => x - y);
  return per[Math.floor(per.length / 2)];
}

function options(threads) {
  return {intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all'};
}

async function dump(a) {
  const session = await ort.InferenceSession.create(a.model, options(1));
  const rows = JSON.parse(a.dump);
  const vocab = 1 + Math.max(...rows.flat());
  const res = await session.run(feeds(session, rows, vocab));
  const t = res[session.outputNames[0]];
  process.stdout.write(JSON.stringify({dims: t.dims, data: Array.from(t.data)}) + '\n');
}

async function bench(a) {
  const list = (s) => s.split(',').map((x) => Number.parseInt(x, 10));
  const T = Number.parseInt(a.s, 10);
  for (const threads of list(a.t)) {
    const session = await ort.InferenceSession.create(a.model, options(threads));
    const ident = await ort.InferenceSession.create(a.identity, options(threads));
    const vocab = a.vocab;
    for (const B of list(a.b)) {
      const draw = rng(a.seed);
      const rows = Array.from({length: B}, () => Array.from({length: T}, () => draw(vocab)));
      const f = feeds(session, rows, vocab);
      const fi = feeds(ident, rows, vocab);
      const overhead = await timeCalls(ident, fi, a.minTime, a.warmup, a.r);
      const sec = await timeCalls(session, f, a.minTime, a.warmup, a.r);
      const tokens = B * T;
      const row = {tool: 'onnxruntime', build: `onnxruntime-node ${ort.env.versions.node}`, workload: a.w,
        precision: a.precision, batch: B, seq_len: T, threads,
        tokens_per_s_median: tokens / Math.max(sec - overhead, 1e-9), tokens_per_s_raw_median: tokens / sec,
        calls_per_s: 1 / sec, latency_p50_us: sec * 1e6, overhead_us: overhead * 1e6,
        isa: 'onnxruntime CPU EP', note: `ORT ${a.precision}, ${threads} intra-op thread(s), overhead subtracted`};
      process.stdout.write(JSON.stringify(row) + '\n');
    }
  }
}

const a = parseArgs(process.argv);
(a.dump ? dump(a) : bench(a)).catch((e) => {
  process.stderr.write(`ort_bench: ${e.message.split('\n')[0]}\n`);
  process.exit(1);
});
