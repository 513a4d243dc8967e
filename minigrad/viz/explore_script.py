"""The script of the page `explore` writes (plain JavaScript, no framework, no build step): it
reads the JSON blob, lays the graph out in layers (edges routed through the gaps between nodes),
draws it as SVG, folds and opens modules, and steps through the backward pass module by module
(stepping into a module on demand). Every text from user code (names, module paths) reaches the page
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
  step: -1,  // the step whose gradients the tensors show; -1: forward done, backward not started
  path: [], at: -1,  // where the stepper is (see "the stepper" below)
  open: new Set(DATA.modules.filter(m => m.open).map(m => m.id)),
  selected: null, timer: null, pos: null, drawn: null,
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
  if (x.kind === "op") return [x.name + (x.step !== null ? `   #${x.step + 1}` : "")];
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

// A layered layout (Sugiyama's idea, simply): rank = longest path from the inputs; an edge that
// spans layers passes each layer between its ends in a slot of its own (a box-less "dummy" node;
// one chain of them per node and direction, shared by its edges that way); within a layer, a few
// sweeps order nodes and slots by the mean position of their neighbours.
const GAP_X = 24, GAP_Y = 40, SLOT = 8;

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
  const layers = [], near = {}, routes = [];
  for (const id of ids) (layers[rank[id]] = layers[rank[id]] || []).push(id);
  const link = (u, v) => {
    (near[u] = near[u] || new Set()).add(v);
    (near[v] = near[v] || new Set()).add(u);
  };
  for (const [a, b] of graph.edges) {
    const dir = rank[b] > rank[a] ? 1 : -1, via = [];
    for (let r = rank[a] + dir; dir * (rank[b] - r) > 0; r += dir) {
      const d = a + "~" + r;  // node a's slot in layer r
      if (!(d in rank)) { rank[d] = r; size[d] = {w: SLOT, h: 0}; layers[r].push(d); }
      via.push(d);
    }
    const chain = [a, ...via, b];
    for (let i = 1; i < chain.length; i++) link(chain[i - 1], chain[i]);
    routes.push({a, b, via});
  }
  for (const id in near) near[id] = [...near[id]];
  const where = {};
  const place = l => l.forEach((id, i) => { where[id] = (i + 0.5) / l.length; });
  layers.forEach(l => l && place(l));
  for (let sweep = 0; sweep < 4; sweep++) {
    for (const l of layers) {
      if (!l) continue;
      const key = {};
      for (const id of l) {
        const n = near[id] || [];
        key[id] = n.length ? n.reduce((s, v) => s + where[v], 0) / n.length : where[id];
      }
      l.sort((a, b) => key[a] - key[b]);
      place(l);
    }
  }
  const widths = layers.map(l => (l || []).reduce((s, id) => s + size[id].w + GAP_X, 0));
  const W = Math.max(...widths, 200), top = [], bottom = [], slot = {};
  let y = 16;
  layers.forEach((l, r) => {
    if (!l) return;
    let x = (W - widths[r]) / 2 + 12;
    const h = Math.max(...l.map(id => size[id].h));
    for (const id of l) {
      if (item[id]) pos[id] = {x, y, w: size[id].w, h: size[id].h};
      else slot[id] = x + SLOT / 2;
      x += size[id].w + GAP_X;
    }
    top[r] = y;
    bottom[r] = y + h;
    y += h + GAP_Y;
  });
  const L = {pos, rank, top, bottom, slot, width: W + 24, height: y};
  // The edges of a trunk share it: the longest is drawn whole, each other one from where it
  // leaves the trunk (so a weight used at every step of a loop draws its trunk once).
  const longest = {};
  for (const e of routes) {
    const k = e.a + (e.via.length && rank[e.via[0]] < rank[e.a] ? "^" : "v");
    if (!longest[k] || e.via.length > longest[k].via.length) longest[k] = e;
    e.trunk = k;
  }
  const tenths = d => d.replace(/-?\\d+\\.\\d+/g, v => String(Math.round(v * 10) / 10));  // a smaller page
  L.edges = routes.map(e => {
    const skip = longest[e.trunk] === e ? 0 : e.via.length;
    return {a: e.a, b: e.b, d: tenths(route(L, e, skip))};
  });
  return L;
}

// The path of an edge, in the gaps between nodes only: down (or up) its own column to the edge
// of its layer, across each gap between layers as a curve that stays inside the gap, along its
// slot through each layer between, and into the target's column. Nothing but the two ends it
// joins lies on it: no two boxes of a layer share a column, and no box is in a gap.
function route(L, e, skip) {  // skip: how many slots of the trunk to leave to its longest edge
  const p = L.pos[e.a], q = L.pos[e.b], ra = L.rank[e.a], rb = L.rank[e.b];
  const xa = p.x + p.w / 2, xb = q.x + q.w / 2;
  const curve = (x0, y0, x1, y1) => {
    const m = (y1 - y0) / 2;
    return ` C${x0},${y0 + m} ${x1},${y1 - m} ${x1},${y1}`;
  };
  if (ra === rb) {  // in one layer (a folded module used twice): a dip into the gap below it
    const y = L.bottom[ra], dip = y + 0.6 * GAP_Y;
    return `M${xa},${p.y + p.h} L${xa},${y} C${xa},${dip} ${xb},${dip} ${xb},${y} L${xb},${q.y + q.h}`;
  }
  const down = rb > ra;
  let x = xa, y = down ? L.bottom[ra] : p.y;
  let d = `M${xa},${down ? p.y + p.h : p.y}` + (down && y > p.y + p.h ? ` L${x},${y}` : "");
  if (skip) {  // from the trunk's slot in the layer next to the target's
    const v = e.via[skip - 1];
    x = L.slot[v];
    y = down ? L.bottom[L.rank[v]] : L.top[L.rank[v]];
    d = `M${x},${y}`;
  }
  for (const v of e.via.slice(skip)) {
    const r = L.rank[v], enter = down ? L.top[r] : L.bottom[r], leave = down ? L.bottom[r] : L.top[r];
    d += curve(x, y, L.slot[v], enter) + (leave !== enter ? ` L${L.slot[v]},${leave}` : "");
    x = L.slot[v];
    y = leave;
  }
  if (down) return d + curve(x, y, xb, q.y);
  return d + curve(x, y, xb, L.bottom[rb]) + (q.y + q.h < L.bottom[rb] ? ` L${xb},${q.y + q.h}` : "");
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

// The SVG of the current layout, drawn once per layout; `mark` then restyles it for each step.
function draw() {
  const L = state.pos, svg = el("svg", {width: L.width, height: L.height});
  const defs = el("defs", {}, svg), marker = el("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10,
    refY: 5, markerWidth: 7, markerHeight: 7, markerUnits: "userSpaceOnUse", orient: "auto"}, defs);
  el("path", {d: "M0,0 L10,5 L0,10 z", fill: "#888"}, marker);
  state.drawn = {nodes: {}, edges: [], grads: []};
  for (const e of L.edges) {
    const path = el("path", {d: e.d, class: "edge", "marker-end": "url(#arrow)"}, svg);
    path.dataset.from = e.a;
    path.dataset.to = e.b;
    state.drawn.edges.push({key: e.a + ">" + e.b, path});
  }
  for (const id in L.pos) {
    const p = L.pos[id], x = item[id];
    const g = el("g", {id, transform: `translate(${p.x},${p.y})`}, svg);
    el("rect", {width: p.w, height: p.h, rx: x.kind === "op" || x.kind === "module" ? 3 : 12,
                fill: FILL[x.kind] || "#fff"}, g);
    const lines = nodeLines(id), texts = lines.map((line, i) => {
      const t = el("text", {x: 7, y: 16 + 14 * i}, g);
      t.textContent = line;
      return t;
    });
    const keep = lines.findIndex(l => l.startsWith("grad "));
    if (x.contribs && keep >= 0) state.drawn.grads.push({x, g, keep, texts});
    el("title", {}, g).textContent = (x.label || x.name || "") + (x.module ? ` in ${x.module}` : "");
    g.addEventListener("click", () => clicked(id));
    g.addEventListener("mouseenter", () => { if (!state.selected) showNode(id); });
    state.drawn.nodes[id] = {g, base: "node " + (x.kind === "op" || x.kind === "module" ? x.kind : "tensor")};
  }
  state.drawn.svg = svg;
}

// Highlights what the current step (or group of steps) does, and the gradient each tensor on
// the page has received by then.
function mark() {
  const at = current(), marks = {}, flows = {};
  const steps = at === null ? [] : typeof at === "number" ? [DATA.steps[at]]
    : DATA.steps.slice(at.first, at.last + 1);
  for (const s of steps) for (const g of s.sent) marks[rep(g.to)] = "receiving";
  for (const s of steps) {
    if (!marks[rep(s.out)]) marks[rep(s.out)] = "upstream";
    flows[rep(s.op) + ">" + rep(s.out)] = "incoming";
    for (const g of s.sent) flows[rep(g.to) + ">" + rep(s.op)] = "sending";
  }
  for (const s of steps) marks[rep(s.op)] = "current";  // in a folded module, the op wins
  if (steps.length > 1) {  // a group: the gradients flowing inside it are not its sends
    for (const s of steps) if (marks[rep(s.out)] === "current") flows[rep(s.op) + ">" + rep(s.out)] = "";
  }
  const D = state.drawn;
  for (const id in D.nodes) {
    const cls = [D.nodes[id].base, marks[id] || ""];
    if (state.selected === id) cls.push("selected");
    D.nodes[id].g.setAttribute("class", cls.join(" "));
  }
  for (const e of D.edges) e.path.setAttribute("class", "edge " + (flows[e.key] || ""));
  for (const {x, g, keep, texts} of D.grads) {  // a tensor shows the gradient it has received so far
    const got = gradAt(x, state.step), lines = got ? prefix("grad ", valueLines(got.total)) : [];
    texts.slice(keep).forEach((t, i) => { t.textContent = lines[i] || ""; });
    for (let i = texts.length - keep; i < lines.length; i++) {
      const t = el("text", {x: 7, y: 16 + 14 * (keep + i)}, g);
      t.textContent = lines[i];
      texts.push(t);
    }
  }
  const first = steps.length && document.getElementById(rep(steps[0].op));
  if (first) first.scrollIntoView({block: "center", inline: "center"});
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

function showStep() {  // the header and the step panel, for the current item
  const panel = document.getElementById("step-panel"), at = current(), n = DATA.steps.length;
  panel.replaceChildren();
  const where = document.getElementById("where");
  document.getElementById("in").disabled = !(at !== null && typeof at === "object");
  document.getElementById("out").disabled = !state.path.length;
  document.getElementById("level").textContent = levelText();
  panel.dataset.step = typeof at === "number" ? at : at === null ? -1 : "";
  panel.dataset.group = at !== null && typeof at === "object" ? `${at.first}-${at.last}` : "";
  if (at === null) {
    const outer = DATA.groups.length === n ? "" : `, ${DATA.groups.length} at the outer level (by module)`;
    where.textContent = `forward done; ${n} backward steps${outer}: press next`;
    add(panel, "p", "Backward visits each op once, the output's first, in the order of the engine.", "note");
    if (outer) {
      add(panel, "p", "The steps that ran inside one module come as one step: press step in " +
        "(down arrow) to follow them one by one, step out (up arrow) to come back.", "note");
    }
    return;
  }
  if (typeof at === "object") { showGroup(panel, where, at); return; }
  const s = DATA.steps[at], inside = s.module ? `  in ${s.module}` : "";
  where.textContent = `step ${s.step + 1} of ${n}: ${s.name}${inside}`;
  add(panel, "h3", `#${s.step + 1}  ${s.name}${inside}`);
  if (rep(s.op) !== s.op) add(panel, "p", "(inside a folded module: click it to open)", "note");
  add(panel, "div", `incoming gradient (dL / d its output), |g| = ${fmt(s.grad.norm)}`);
  values(panel, s.grad, "upstream");
  const out = item[s.out];
  if (out.contribs.length > 1) {
    add(panel, "div", `= the sum of the ${out.contribs.length} gradients sent to it ` +
      `(by steps ${out.contribs.map(c => "#" + (c.from + 1)).join(", ")})`, "note");
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

function showGroup(panel, where, g) {  // a run of steps inside one module, as one step
  const label = item[g.module].label, count = g.last - g.first + 1;
  where.textContent = `steps ${g.first + 1} to ${g.last + 1} of ${DATA.steps.length}: ${label}`;
  add(panel, "h3", `#${g.first + 1} to #${g.last + 1}  ${label}`);
  add(panel, "div", `${count} backward steps inside ${label}: step in (down arrow) to follow them`);
  const list = add(panel, "ol", undefined, "group");
  for (const x of cut(g.items, 40)) {
    if (x === "...") { add(list, "li", "...", "note"); continue; }
    const li = add(list, "li", typeof x === "number" ? `#${x + 1}  ${DATA.steps[x].name}` :
      `#${x.first + 1} to #${x.last + 1}  ${item[x.module].label} (${x.last - x.first + 1} steps)`);
    li.dataset.item = typeof x === "number" ? x : `${x.first}-${x.last}`;
  }
  const out = {};  // what the group sends to tensors made outside it: each one's last sum
  const made = new Set(DATA.steps.slice(g.first, g.last + 1).map(s => s.out));
  for (const s of DATA.steps.slice(g.first, g.last + 1)) {
    for (const x of s.sent) if (!made.has(x.to)) out[x.to] = x;
  }
  const sent = Object.values(out);
  if (sent.length) {
    add(panel, "div", "the gradients it gives to tensors it did not make (its weights, its inputs):");
  }
  const ul = add(panel, "ul");
  for (const x of sent) {
    const norm = x.total ? x.total.norm : x.grad.norm;
    add(ul, "li", `${x.to_label} ${dims(x.input_shape)}, |g| = ${fmt(norm)}`, "sent").dataset.to = x.to;
  }
}

function levelText() {  // where the stepper is: "outer level 3 of 30 > decoder (Decoder) 5 of 24"
  if (DATA.groups.length === DATA.steps.length) return "";  // no groups: the step number says it
  const levels = [{items: DATA.groups, at: state.path.length ? state.path[0].at : state.at}];
  state.path.forEach((p, i) => levels.push({label: item[p.group.module].label, items: p.group.items,
                                           at: i + 1 < state.path.length ? state.path[i + 1].at : state.at}));
  return levels.map(l => `${l.label || "outer level"} ${l.at + 1} of ${l.items.length}`).join(" \u203a ");
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
    add(panel, "div", x.step === null ? "no gradient reached it" : `backward step #${x.step + 1}`);
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
      `(steps ${x.contribs.map(c => "#" + (c.from + 1)).join(", ")})`, "note");
  }
}

function clicked(id) {
  if (item[id].kind === "module") { toggle(id); return; }
  state.selected = state.selected === id ? null : id;
  showNode(id);
  mark();
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

// The steps come grouped by module (DATA.groups, from explore.group_steps): an item of a level is
// a step (its index in DATA.steps) or a group {module, first, last, items}. state.path holds the
// groups stepped into, each with its index in its own level and the modules stepping in opened;
// state.at is the index in the innermost level (-1 at the outer level: before backward).

function items() { return state.path.length ? state.path[state.path.length - 1].group.items : DATA.groups; }

function current() { return state.at < 0 ? null : items()[state.at]; }

function atEnd() {
  if (state.at < items().length - 1) return false;
  return state.path.every((p, i) => p.at === (i ? state.path[i - 1].group.items : DATA.groups).length - 1);
}

function show() {
  const at = current();
  state.step = at === null ? -1 : typeof at === "number" ? at : at.last;  // the gradients so far
  showStep();
  mark();
}

function next() {  // past a group's last step: on to what follows the group
  while (state.at >= items().length - 1 && state.path.length && !atEnd()) out(false);
  if (state.at < items().length - 1) state.at++;
  refresh();
}

function prev() {
  if (state.at > (state.path.length ? 0 : -1)) state.at--;
  else if (state.path.length) out(false);  // before a group's first step: the group as a whole
  refresh();
}

function into() {  // the group at hand: its module opened, its first item next
  const g = current();
  if (g === null || typeof g !== "object") return;
  const opened = [];
  for (let m = g.module; m; m = item[m].parent) if (!state.open.has(m)) { state.open.add(m); opened.push(m); }
  state.path.push({group: g, at: state.at, opened});
  state.at = 0;
  if (opened.length) state.pos = null;
  refresh();
}

function out(redraw = true) {  // back to the group as one step, its module folded as it was
  const p = state.path.pop();
  if (!p) return;
  for (const m of p.opened) state.open.delete(m);
  state.at = p.at;
  if (p.opened.length) state.pos = null;
  if (redraw) refresh();
}

function reset() {
  while (state.path.length) out(false);
  state.at = -1;
  refresh();
}

function refresh() { if (state.pos === null) relayout(); else show(); }

function play() {
  const button = document.getElementById("play");
  if (state.timer) { clearInterval(state.timer); state.timer = null; button.textContent = "play"; return; }
  if (atEnd()) reset();  // at the end: play from the start
  button.textContent = "pause";
  state.timer = setInterval(() => {
    next();
    if (atEnd()) play();  // the last step: stop there
  }, 900);
}

// Each set of open modules is laid out and drawn once: stepping into a module and out again
// shows the drawings kept (what a step marks is set on them anew).
const drawings = new Map();

function relayout() {
  const key = [...state.open].sort().join(" ");
  if (!drawings.has(key)) {
    state.pos = layout(visibleGraph());
    draw();
    drawings.set(key, {pos: state.pos, drawn: state.drawn});
  }
  ({pos: state.pos, drawn: state.drawn} = drawings.get(key));
  document.getElementById("graph").replaceChildren(state.drawn.svg);
  moduleTree();
  show();
}

document.getElementById("next").addEventListener("click", next);
document.getElementById("prev").addEventListener("click", prev);
document.getElementById("in").addEventListener("click", into);
document.getElementById("out").addEventListener("click", () => out());
document.getElementById("reset").addEventListener("click", reset);
document.getElementById("play").addEventListener("click", play);
document.addEventListener("keydown", e => {
  const keys = {ArrowRight: next, ArrowLeft: prev, ArrowDown: into, ArrowUp: () => out()};
  if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
});
relayout();
"""
