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
#generated span { padding: 0 1px; border-radius: 3px; }
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
<input type="text" id="prompt" placeholder="a prompt" autocomplete="off">
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
async function post(path, body) {
  const r = await fetch(path, {method: "POST", headers: headers(), body: JSON.stringify(body)});
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : r.status);
  return j;
}
function cls(p) { return p > 0.1 ? "p1" : p > 0.01 ? "p2" : p > 0.001 ? "p3" : "p4"; }
let pending = 0;
async function suggest() {
  const mine = ++pending;
  try {
    const r = await post("/v1/predict", {context: $("context").value, top: 8});
    if (mine !== pending) return;
    const box = $("suggestions");
    box.textContent = "";
    for (const c of r.top) {
      const b = document.createElement("button");
      b.className = "suggestion";
      b.textContent = c.token + " ";
      const s = document.createElement("small");
      s.textContent = (100 * c.prob).toFixed(1) + "%";
      b.appendChild(s);
      b.onclick = () => { const v = $("context").value; $("context").value = v + (v && !v.endsWith(" ") ? " " : "") + c.token + " "; suggest(); };
      box.appendChild(b);
    }
    $("error").textContent = "";
  } catch (e) { $("error").textContent = e.message; }
}
async function generate() {
  const out = $("generated");
  out.textContent = "";
  $("error").textContent = "";
  const body = {prompt: $("prompt").value, max_tokens: Number($("n").value), seed: Number($("seed").value), stream: true};
  const r = await fetch("/v1/generate", {method: "POST", headers: headers(), body: JSON.stringify(body)});
  if (!r.ok) { const j = await r.json(); $("error").textContent = j.error.message; return; }
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
      if (event.startsWith("data: ")) {
        const t = JSON.parse(event.slice(6));
        const s = document.createElement("span");
        s.className = "token " + cls(t.prob);
        s.title = "p = " + t.prob.toPrecision(3);
        s.textContent = t.token + " ";
        out.appendChild(s);
      }
    }
  }
  out.dataset.done = "1";
}
$("context").addEventListener("input", suggest);
$("go").addEventListener("click", generate);
fetch("/health").then(r => r.json()).then(j => { $("model").textContent = "model: " + j.status; });
suggest();
</script>
</body>
</html>
)HTML";
  return html;
}

}  // namespace lstmlm::server
