#include "server/page.hpp"

namespace lstmlm::server {

const std::string& page_html() {
  static const std::string html = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lstmlm</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
input[type=text] { width: 100%; font: inherit; padding: .4rem; box-sizing: border-box; }
#suggestions button { margin: .3rem .3rem 0 0; font: inherit; padding: .2rem .6rem; cursor: pointer; }
#suggestions small { color: #777; }
#generated { margin-top: .8rem; white-space: pre-wrap; }
#generated span { border-radius: 3px; }
#generated .prompt { font-weight: 600; }
.p1 { background: #b8f2b8; } .p2 { background: #fbf1a9; } .p3 { background: #f7c6a3; } .p4 { background: #e3c2f2; }
#legend span { padding: 0 .4rem; margin-right: .4rem; border-radius: 3px; }
#error { color: #b00; }
</style>
</head>
<body>
<h1>lstmlm</h1>
<p id="model">loading…</p>
<label>API key (when the server has one) <input type="password" id="key" autocomplete="off"></label>
<h2>Next word</h2>
<input type="text" id="context" placeholder="type a few words" autocomplete="off">
<div id="suggestions"></div>
<h2>Generate</h2>
<input type="text" id="prompt" placeholder="a prompt, then Enter" autocomplete="off">
<p><button id="go">Generate</button> <label>tokens <input type="number" id="n" value="30" min="1" max="500"></label>
 <label>seed <input type="number" id="seed" value="1" min="0"></label></p>
<p id="legend">probability: <span class="p1">&gt; 0.1</span><span class="p2">&gt; 0.01</span><span class="p3">&gt; 0.001</span><span class="p4">lower</span></p>
<div id="generated"></div>
<p id="error"></p>
<script>
"use strict";
const $ = id => document.getElementById(id);
function headers() {
  const h = {"Content-Type": "application/json"};
  if ($("key").value) h["Authorization"] = "Bearer " + $("key").value;
  return h;
}
async function answer(r) {
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : r.status);
  return j;
}
async function post(path, body) {
  return answer(await fetch(path, {method: "POST", headers: headers(), body: JSON.stringify(body)}));
}
function cls(p) { return p > 0.1 ? "p1" : p > 0.01 ? "p2" : p > 0.001 ? "p3" : "p4"; }
// The model, from /v1/models: its tokenizer decides how the next-word box completes (kind) and which tokens
// are never offered (the special ones).
let model = null;
async function load() {
  while (!(await fetch("/health")).ok) await new Promise(r => setTimeout(r, 200));
  try {
    model = await answer(await fetch("/v1/models", {headers: headers()}));
  } catch (e) { $("model").textContent = "model: " + e.message; return; }
  const t = model.tokenizer;
  $("model").textContent = model.model + ": a " + t.type + " model, vocabulary of " +
      model.vocab_size.toLocaleString("en") + " tokens" + (t.lowercase ? " (lowercase)" : "");
  suggest();
}
function special(token) {
  const t = model.tokenizer;
  return token === t.eos_token || token === t.bos_token || token === t.unk_token;
}
// What a keyboard completes: the word being typed (a prefix) on word and char models; at a word boundary the
// next words (a char model's: its characters up to the next boundary, from the typed space). Subword models
// complete no half-typed word: their next pieces, after the whole text.
// A model without a start token (bos, eos) predicts nothing from an empty context: a char model then takes the
// first typed letter as the context (its `lead`), other models wait for a word.
function request(text) {
  const kind = model.tokenizer.type;
  const start = model.tokenizer.bos_token !== null || model.tokenizer.eos_token !== null;
  let req = {context: text, prefix: ""};
  if (kind === "char") {
    if (text === "") return null;
    const m = /(\S*)$/.exec(text);
    req = m[1] !== "" ? {context: text.slice(0, m.index), prefix: m[1]}
                      : {context: text.slice(0, -1), prefix: text.slice(-1), boundary: true};
    if (req.context === "" && !start) {
      if (req.boundary || req.prefix.length < 2) return null;
      return {context: req.prefix[0], prefix: req.prefix.slice(1), lead: req.prefix[0]};
    }
    return req;
  }
  if (kind === "word") {
    const m = /(\S+)$/.exec(text);
    if (m) req = {context: text.slice(0, m.index), prefix: m[1]};
  }
  return req.context === "" && !start ? null : req;
}
// The text a suggestion puts in place of the word being typed, and its label.
function completion(req, token) {
  const kind = model.tokenizer.type;
  if (kind === "char") {
    if (req.lead !== undefined) return {label: req.lead + token, text: req.lead + token + " "};
    const word = req.boundary ? token.slice(req.prefix.length) : token;
    return {label: word, text: req.context + (req.boundary ? req.prefix : "") + word + " "};
  }
  if (kind === "word" || kind === "bpe") {  // a bpe model reads its pieces as words (their "@@" kept)
    const sep = req.context && !/\s$/.test(req.context) ? " " : "";
    return {label: token, text: req.context + sep + token + " "};
  }
  // SentencePiece: a piece starting with U+2581 starts a word, any other continues the last one.
  const starts = token.startsWith("\u2581");
  const body = starts ? token.slice(1) : token;
  const sep = starts && req.context && !/\s$/.test(req.context) ? " " : "";
  return {label: (starts || !req.context ? "" : "\u2026") + body, text: req.context + sep + body};
}
let pending = 0;
async function suggest() {
  if (!model) return;
  const mine = ++pending;
  const text = $("context").value;
  const box = $("suggestions");
  const req = request(text);
  try {
    if (!req) { box.textContent = ""; return; }
    const body = {context: req.context, top: 12};
    if (req.prefix) body.prefix = req.prefix;
    const r = await post("/v1/predict", body);
    if (mine !== pending) return;
    box.textContent = "";
    let shown = 0;
    for (const c of r.top) {
      if (special(c.token) || shown === 8) continue;
      const done = completion(req, c.token);
      if (done.label.trim() === "") continue;
      const b = document.createElement("button");
      b.className = "suggestion";
      b.textContent = done.label + " ";
      const s = document.createElement("small");
      s.textContent = (100 * c.prob).toFixed(1) + "%";
      b.appendChild(s);
      b.onclick = () => { $("context").value = done.text; $("context").focus(); suggest(); };
      box.appendChild(b);
      ++shown;
    }
    $("error").textContent = "";
  } catch (e) { if (mine === pending) $("error").textContent = e.message; }
}
async function generate() {
  const out = $("generated");
  out.textContent = "";
  delete out.dataset.done;
  $("error").textContent = "";
  const prompt = $("prompt").value;
  const body = {prompt: prompt, max_tokens: Number($("n").value), seed: Number($("seed").value), stream: true};
  const r = await fetch("/v1/generate", {method: "POST", headers: headers(), body: JSON.stringify(body)});
  if (!r.ok) { const j = await r.json(); $("error").textContent = j.error.message; return; }
  // The prompt, then each token's piece as the server joins it (the CLI's text); eos adds nothing.
  const p = document.createElement("span");
  p.className = "prompt";
  p.textContent = prompt;
  out.appendChild(p);
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (event.startsWith("event: error")) {
        $("error").textContent = JSON.parse(event.slice(event.indexOf("data: ") + 6)).error.message;
      } else if (event.startsWith("data: ")) {
        const t = JSON.parse(event.slice(6));
        if (t.piece === "") continue;
        const s = document.createElement("span");
        s.className = "token " + cls(t.prob);
        s.title = t.token + ": p = " + t.prob.toPrecision(3);
        s.textContent = t.piece;
        out.appendChild(s);
      }
    }
  }
  out.dataset.done = "1";
}
$("context").addEventListener("input", suggest);
$("go").addEventListener("click", generate);
$("prompt").addEventListener("keydown", e => { if (e.key === "Enter") { e.preventDefault(); generate(); } });
$("key").addEventListener("change", load);
load();
</script>
</body>
</html>
)HTML";
  return html;
}

}  // namespace lstmlm::server
