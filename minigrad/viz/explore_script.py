"""The script of the page `explore` writes (plain JavaScript, no framework, no build step): it
reads the JSON blob, lays the graph out in layers, draws it as SVG, folds and opens modules, and
steps through the backward pass. Every text from user code (names, module paths) reaches the page
through `textContent`, never as markup.
"""

SCRIPT = """
"use strict";
// Written by minigrad.viz.explore: the graph of a loss (ops, tensors, the modules they ran in)
// and the steps its backward pass took, in the engine's order.
const DATA = JSON.parse(document.getElementById("minigrad-data").textContent);
const SVG = "http://www.w3.org/2000/svg";
const item = {};  // id -> op, tensor or module record
for (const op of DATA.ops) item[op.id] = op;
for (const t of DATA.tensors) item[t.id] = t;
for (const m of DATA.modules) item[m.id] = m;
const state = {
  step: -1,  // -1: forward done, backward not started
  open: new Set(DATA.modules.filter(m => m.open).map(m => m.id)),
  selected: null, timer: null, pos: null,
};

// ------------------------------------------------------------------ numbers as text

function fmt(x) {  // 4 significant digits, as minigrad's drawings print them
  return typeof x === "string" ? x : String(Number(x.toPrecision(4)));
}

function dims(shape) {  // as Python writes a shape: (3, 2), (32,), ()
  return "(" + shape.join(", ") + (shape.length === 1 ? ",)" : ")");
}

function cut(list, keep) {  // the first and last keep/2 entries around "..."
  return list.length <= keep ? list : list.slice(0, keep / 2).concat(["..."], list.slice(-keep / 2));
}

function valueLines(v) {  // small tensors as rows of the last axis; large ones as statistics
  if (!v) return [];
  if (!v.v) return [`${dims(v.shape)}: min ${fmt(v.min)}  max ${fmt(v.max)}  mean ${fmt(v.mean)}`];
  if (v.shape.length === 0) return [fmt(v.v[0])];
  const n = v.shape[v.shape.length - 1] || 1, rows = [];
  for (let i = 0; i < v.v.length; i += n) {
    rows.push("[" + cut(v.v.slice(i, i + n), 8).map(fmt).join(", ") + "]");
  }
  return rows.length ? cut(rows, 8) : ["[]"];
}

// The gradient a tensor has received by the current step (the running sum over its uses).
function gradAt(t, step) {
  let got = null;
  for (const c of t.contribs) if (c.step <= step) got = c;
  return got;
}

// ------------------------------------------------------------------ what is visible

// An op or tensor is drawn as itself unless one of its modules is folded: then the outermost
// folded module stands for it.
function rep(id) {
  for (const m of item[id].mods || []) if (!state.open.has(m)) return m;
  return id;
}

function visibleGraph() {
  const nodes = new Set(), edges = new Map();
  for (const t of DATA.tensors) nodes.add(rep(t.id));
  for (const op of DATA.ops) nodes.add(rep(op.id));
  for (const [a, b] of DATA.edges) {
    const ra = rep(a), rb = rep(b);
    if (ra !== rb) edges.set(ra + ">" + rb, [ra, rb]);
  }
  return {nodes: [...nodes], edges: [...edges.values()]};
}

// ------------------------------------------------------------------ layout

function nodeLines(id) {  // the text of a node; tensors include their final gradient, for the size
  const x = item[id];
  if (x.kind === "op") return [x.name + (x.step !== null ? `   #${x.step}` : "")];
  if (x.kind === "module") return [x.label, `${x.ops} op${x.ops === 1 ? "" : "s"}: click to open`];
  const lines = x.label ? [x.label] : [];
  lines.push(x.shape_text);
  const small = v => v && v.v && v.v.length <= DATA.on_node, g = gradAt(x, Infinity);
  if (small(x.data)) lines.push(...prefix("data ", valueLines(x.data)));
  if (g && small(g.total)) lines.push(...prefix("grad ", valueLines(g.total)));
  return lines;
}

function prefix(word, lines) {
  return lines.map((l, i) => (i ? " ".repeat(word.length) : word) + l);
}

// A topological order of the drawn graph (Kahn's algorithm). Folding a module called twice can
// close a cycle (box -> tensor -> op -> box); then the earliest node left goes next regardless.
function topological(ids, preds, succs) {
  const waiting = {}, done = new Set(), out = [];
  for (const id of ids) waiting[id] = (preds[id] || []).length;
  const ready = ids.filter(id => !waiting[id]);
  let next = 0;  // where to look for the earliest node left, when a cycle leaves none ready
  while (out.length < ids.length) {
    while (!ready.length && done.has(ids[next])) next++;
    const id = ready.length ? ready.shift() : ids[next];
    if (done.has(id)) continue;
    done.add(id);
    out.push(id);
    for (const b of succs[id] || []) if (--waiting[b] === 0 && !done.has(b)) ready.push(b);
  }
  return out;
}

// A layered layout (Sugiyama's idea, simply): rank = longest path from the inputs; within a
// rank, a few sweeps order nodes by the mean position of their neighbours.
function layout(graph) {
  const order = id => item[id].order, size = {}, rank = {}, pos = {};
  const sorted = graph.nodes.slice().sort((a, b) => order(a) - order(b));
  const preds = {}, succs = {};
  for (const [a, b] of graph.edges) {
    (succs[a] = succs[a] || []).push(b);
    (preds[b] = preds[b] || []).push(a);
  }
  const ids = topological(sorted, preds, succs), seen = new Set();
  for (const id of ids) {
    const lines = nodeLines(id);
    size[id] = {w: 14 + 6.7 * Math.max(...lines.map(l => l.length)), h: 8 + 14 * lines.length};
    rank[id] = 0;
    for (const p of preds[id] || []) if (seen.has(p)) rank[id] = Math.max(rank[id], rank[p] + 1);
    seen.add(id);
  }
  for (const id of ids) {  // an input (a weight, a constant) sits just above its first use
    if (!(preds[id] || []).length && (succs[id] || []).length) {
      rank[id] = Math.max(0, Math.min(...succs[id].map(b => rank[b])) - 1);
    }
  }
  const layers = [];
  for (const id of ids) (layers[rank[id]] = layers[rank[id]] || []).push(id);
  const where = {};
  const place = () => layers.forEach(l => l && l.forEach((id, i) => { where[id] = (i + 0.5) / l.length; }));
  place();
  for (let sweep = 0; sweep < 4; sweep++) {
    for (const l of layers) {
      if (!l) continue;
      const key = {};
      for (const id of l) {
        const near = (preds[id] || []).concat(succs[id] || []).map(n => where[n]);
        key[id] = near.length ? near.reduce((s, v) => s + v, 0) / near.length : where[id];
      }
      l.sort((a, b) => key[a] - key[b]);
      place();
    }
  }
  const widths = layers.map(l => (l || []).reduce((s, id) => s + size[id].w + 24, 0));
  const W = Math.max(...widths, 200);
  let y = 16;
  layers.forEach((l, r) => {
    if (!l) return;
    let x = (W - widths[r]) / 2 + 12;
    const h = Math.max(...l.map(id => size[id].h));
    for (const id of l) { pos[id] = {x, y, w: size[id].w, h: size[id].h}; x += size[id].w + 24; }
    y += h + 40;
  });
  return {pos, edges: graph.edges, width: W + 24, height: y};
}

// ------------------------------------------------------------------ drawing

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

const FILL = {op: "#dbe5f1", module: "#e2efda", param: "#fff2cc", leaf: "#d9ead3", const: "#f4f4f4",
              tensor: "#ffffff", output: "#f4cccc"};

function draw() {
  const L = state.pos, box = document.getElementById("graph");
  const s = DATA.steps[state.step], marks = {}, flows = {};
  if (s) {  // in a folded module all three may be the module's box: the op wins
    for (const g of s.sent) marks[rep(g.to)] = "receiving";
    marks[rep(s.out)] = "upstream";
    marks[rep(s.op)] = "current";
    flows[rep(s.op) + ">" + rep(s.out)] = "incoming";
    for (const g of s.sent) flows[rep(g.to) + ">" + rep(s.op)] = "sending";
  }
  const svg = el("svg", {width: L.width, height: L.height});
  for (const [a, b] of L.edges) {
    const p = L.pos[a], q = L.pos[b], x1 = p.x + p.w / 2, y1 = p.y + p.h, x2 = q.x + q.w / 2, y2 = q.y;
    const bend = Math.max(30, Math.abs(y2 - y1) / 2);
    el("path", {d: `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`,
                class: "edge " + (flows[a + ">" + b] || ""), "marker-end": "url(#arrow)"}, svg);
  }
  const defs = el("defs", {}, svg), marker = el("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10,
    refY: 5, markerWidth: 7, markerHeight: 7, markerUnits: "userSpaceOnUse", orient: "auto"}, defs);
  el("path", {d: "M0,0 L10,5 L0,10 z", fill: "#888"}, marker);
  for (const id in L.pos) {
    const p = L.pos[id], x = item[id];
    const cls = ["node", x.kind === "op" || x.kind === "module" ? x.kind : "tensor", marks[id] || ""];
    if (state.selected === id) cls.push("selected");
    const g = el("g", {id, class: cls.join(" "), transform: `translate(${p.x},${p.y})`}, svg);
    el("rect", {width: p.w, height: p.h, rx: x.kind === "op" || x.kind === "module" ? 3 : 12,
                fill: FILL[x.kind] || "#fff"}, g);
    let lines = nodeLines(id);
    if (x.contribs) {  // a tensor shows the gradient it has received so far
      const got = gradAt(x, state.step), keep = lines.findIndex(l => l.startsWith("grad "));
      if (keep >= 0) lines = lines.slice(0, keep).concat(got ? prefix("grad ", valueLines(got.total)) : []);
    }
    lines.forEach((line, i) => { el("text", {x: 7, y: 16 + 14 * i}, g).textContent = line; });
    el("title", {}, g).textContent = (x.label || x.name || "") + (x.module ? ` in ${x.module}` : "");
    g.addEventListener("click", () => clicked(id));
    g.addEventListener("mouseenter", () => { if (!state.selected) showNode(id); });
  }
  box.replaceChildren(svg);
  const current = s && document.getElementById(rep(s.op));
  if (current) current.scrollIntoView({block: "center", inline: "center"});
}

// ------------------------------------------------------------------ panels

function add(parent, tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  parent.appendChild(e);
  return e;
}

function values(parent, v, role) {
  const e = add(parent, "div", valueLines(v).join("\\n"), "values");
  e.dataset.role = role;
  return e;
}

function showStep() {
  const panel = document.getElementById("step-panel"), s = DATA.steps[state.step];
  panel.replaceChildren();
  panel.dataset.step = state.step;
  const where = document.getElementById("where");
  if (!s) {
    where.textContent = `forward done; ${DATA.steps.length} backward steps: press next`;
    add(panel, "p", "Backward visits each op once, the output's first, in the order of the engine.", "note");
    return;
  }
  const inside = s.module ? `  in ${s.module}` : "";
  where.textContent = `step ${s.step} of ${DATA.steps.length - 1}: ${s.name}${inside}`;
  add(panel, "h3", `#${s.step}  ${s.name}${inside}`);
  if (rep(s.op) !== s.op) add(panel, "p", "(inside a folded module: click it to open)", "note");
  add(panel, "div", `incoming gradient (dL / d its output), |g| = ${fmt(s.grad.norm)}`);
  values(panel, s.grad, "upstream");
  const out = item[s.out];
  if (out.contribs.length > 1) {
    add(panel, "div", `= the sum of the ${out.contribs.length} gradients sent to it ` +
      `(by steps ${out.contribs.map(c => "#" + c.from).join(", ")})`, "note");
  }
  if (!s.sent.length) add(panel, "p", "sends nothing on: no input needs a gradient", "note");
  const list = add(panel, "ul");
  for (const g of s.sent) {
    const li = add(list, "li", undefined, "sent");
    li.dataset.index = g.index;
    li.dataset.to = g.to;
    const to = g.to_label.endsWith(dims(g.input_shape)) ? g.to_label : `${g.to_label} ${dims(g.input_shape)}`;
    add(li, "div", `input ${g.index} -> ${to}, |g| = ${fmt(g.grad.norm)}`);
    values(li, g.grad, "sent");
    if (g.summed_axes.length) {
      add(li, "div", `summed over axes ${dims(g.summed_axes)} of ${dims(g.shape)}: ` +
        "the forward broadcast it", "note");
    }
    if (g.parts > 1) {
      add(li, "div", g.part === g.parts ? `its ${g.parts} gradients, summed:` :
        `gradient ${g.part} of ${g.parts} this tensor gets; the sum so far:`, "note");
      if (g.total) values(li, g.total, "sum");
    }
  }
  kernelSteps(panel, item[s.op]);
}

function kernelSteps(panel, op) {  // a fused kernel's steps (forward), as expand_fused draws them
  if (!op.inside) return;
  add(panel, "div", "inside the fused kernel:", "note");
  const list = add(panel, "ol", undefined, "kernel");
  for (const st of op.inside) {
    const li = add(list, "li");
    add(li, "div", `${st.op} -> ${st.result} ${dims(st.shape)}`);
    if (st.values) values(li, st.values, "kernel");
  }
}

function showNode(id) {
  const panel = document.getElementById("node-panel"), x = item[id];
  panel.replaceChildren();
  if (x.kind === "module") {
    add(panel, "h3", x.label);
    add(panel, "div", `${x.ops} op${x.ops === 1 ? "" : "s"} inside; click to open`);
    return;
  }
  add(panel, "h3", x.kind === "op" ? `${x.name} (op)` : `${x.label || "tensor"} (${x.kind})`);
  if (x.module) add(panel, "div", `in ${x.module}`, "note");
  if (x.kind === "op") {
    add(panel, "div", x.step === null ? "no gradient reached it" : `backward step #${x.step}`);
    kernelSteps(panel, x);
    return;
  }
  add(panel, "div", x.shape_text);
  add(panel, "div", x.data ? "value" : "(values not kept once backward ran: large)", "note");
  if (x.data) values(panel, x.data, "data");
  const got = gradAt(x, Infinity);
  if (got && got.total) {
    add(panel, "div", `gradient, |g| = ${fmt(got.total.norm)}`);
    values(panel, got.total, "grad");
  }
  if (x.contribs.length > 1) {
    add(panel, "div", `summed over its ${x.contribs.length} uses ` +
      `(steps ${x.contribs.map(c => "#" + c.from).join(", ")})`, "note");
  }
}

function clicked(id) {
  if (item[id].kind === "module") { toggle(id); return; }
  state.selected = state.selected === id ? null : id;
  showNode(id);
  draw();
}

function toggle(m) {  // opening a module opens the modules around it too
  if (state.open.has(m)) state.open.delete(m);
  else for (let x = m; x; x = item[x].parent) state.open.add(x);
  relayout();
}

function moduleTree() {
  const root = document.getElementById("modules"), lists = {};
  root.replaceChildren();
  if (!DATA.modules.length) add(root, "div", "(the ops ran outside any module)", "note");
  for (const m of DATA.modules) {
    const key = m.parent || "root";  // one list per parent, made at its first child
    if (!lists[key]) lists[key] = add(m.parent ? lists[m.parent + "li"] : root, "ul");
    const ul = lists[key];
    const li = lists[m.id + "li"] = add(ul, "li");
    const span = add(li, "span", (state.open.has(m.id) ? "\\u25be " : "\\u25b8 ") + m.label);
    span.dataset.module = m.id;
    span.addEventListener("click", () => toggle(m.id));
  }
}

// ------------------------------------------------------------------ the stepper

function go(step) {
  state.step = Math.max(-1, Math.min(DATA.steps.length - 1, step));
  showStep();
  draw();
}

function play() {
  const button = document.getElementById("play");
  if (state.timer) { clearInterval(state.timer); state.timer = null; button.textContent = "play"; return; }
  if (state.step >= DATA.steps.length - 1) go(-1);  // at the end: play from the start
  button.textContent = "pause";
  state.timer = setInterval(() => {
    go(state.step + 1);
    if (state.step >= DATA.steps.length - 1) play();  // the last step: stop there
  }, 900);
}

function relayout() {
  state.pos = layout(visibleGraph());
  moduleTree();
  go(state.step);
}

document.getElementById("next").addEventListener("click", () => go(state.step + 1));
document.getElementById("prev").addEventListener("click", () => go(state.step - 1));
document.getElementById("reset").addEventListener("click", () => go(-1));
document.getElementById("play").addEventListener("click", play);
document.addEventListener("keydown", e => {
  if (e.key === "ArrowRight") go(state.step + 1);
  if (e.key === "ArrowLeft") go(state.step - 1);
});
relayout();
"""
