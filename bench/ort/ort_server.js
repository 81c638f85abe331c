#!/usr/bin/env node
// The server a user writes around ONNX Runtime, for bench/ort/serve_vs_ort.py to load beside `lstmlm serve`:
// Node's http module and onnxruntime-node answering POST /v1/predict {"context": "...", "top": N} with the
// top-N next words, as lstmlm serve's record does (token, id, prob, logprob). One InferenceSession (intra-op
// threads as asked), one request per run() call, the context tokenized as the lstmlm model directory says for
// a word model (lowercased when its tokenizer says so, split on white space, unknown words to its unk token,
// its eos token first when it has no bos token: what lstmlm predict feeds).
//
//   node ort_server.js MODEL_DIR PREDICT.onnx [--port 0] [--threads 2]
//
// Prints "listening on http://127.0.0.1:PORT" and then "ready" on stderr, as lstmlm serve does.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const ort = require('onnxruntime-node');

async function main() {
  const args = process.argv.slice(2);
  const opt = {port: 0, threads: 2};
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--port' || args[i] === '--threads') opt[args[i].slice(2)] = Number(args[++i]);
    else pos.push(args[i]);
  }
  if (pos.length !== 2) throw new Error('usage: ort_server.js MODEL_DIR PREDICT.onnx [--port 0] [--threads 2]');
  const [dir, onnx] = pos;
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  const index = new Map(vocab.map((w, i) => [w, i]));
  const tok = cfg.tokenizer;
  const unk = index.get(tok.unk_token) ?? 0;
  const start = index.get(tok.bos_token ?? tok.eos_token);
  const session = await ort.InferenceSession.create(onnx, {intraOpNumThreads: opt.threads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all'});

  async function predict(body) {
    const req = JSON.parse(body);
    if (typeof req.context !== 'string') throw new Error('context: a string is required');
    const top = Math.min(Number.isInteger(req.top) ? req.top : 10, vocab.length);
    const text = tok.lowercase ? req.context.toLowerCase() : req.context;
    const ids = (start === undefined ? [] : [start]).concat(
        text.split(/\s+/).filter((w) => w).map((w) => index.get(w) ?? unk));
    const feed = {[session.inputNames[0]]: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)),
      [1, ids.length])};
    const out = (await session.run(feed))[session.outputNames[0]].data;
    // The top N by a partial selection: keep the best N seen so far, sorted.
    const best = [];
    for (let i = 0; i < out.length; i++) {
      if (best.length < top || out[i] > out[best[best.length - 1]]) {
        let k = best.length < top ? best.length : best.length - 1;
        if (best.length < top) best.push(i);
        while (k > 0 && out[best[k - 1]] < out[i]) {
          best[k] = best[k - 1];
          k--;
        }
        best[k] = i;
      }
    }
    return {type: 'prediction', context: req.context, ids,
      top: best.map((i) => ({token: vocab[i], id: i, prob: Math.exp(out[i]), logprob: out[i]}))};
  }

  const server = http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/predict') {
      res.writeHead(404, {'Content-Type': 'application/json'});
      res.end('{"error": "not found"}');
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      predict(Buffer.concat(chunks).toString('utf8')).then((r) => {
        res.writeHead(200, {'Content-Type': 'application/json'});
        res.end(JSON.stringify(r));
      }, (e) => {
        res.writeHead(400, {'Content-Type': 'application/json'});
        res.end(JSON.stringify({error: e.message}));
      });
    });
  });
  server.listen(opt.port, '127.0.0.1', () => {
    process.stderr.write(`listening on http://127.0.0.1:${server.address().port}\nready\n`);
  });
}

main().catch((e) => {
  process.stderr.write(`ort_server: ${e.message.split('\n')[0]}\n`);
  process.exit(1);
});
