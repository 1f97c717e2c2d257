import type * as crypto from 'node:crypto';
import { nodeBuiltin } from '../shell/host.js';

/**
 * The dashboard the admin handler serves at `GET /` (SPEC 11): one self-contained page, inline
 * style and script, no build step, no request but to its own origin. Every second it fetches
 * `overview` (relative, so the handler may be mounted under a prefix ending in `/`) and keeps
 * five minutes of history itself: the server holds no timer for it. Worker and source names are
 * user text: the script only ever puts them in `textContent` and attributes, never in HTML.
 *
 * @internal
 */

const STYLE = `
:root {
  color-scheme: light;
  --ink: #1d2430; --muted: #667085; --line: #e4e7ec; --panel: #ffffff; --page: #f4f6f9;
  --ok: #12b76a; --warn: #f79009; --bad: #f04438; --idle: #98a2b3; --accent: #2e6be6;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { display: flex; align-items: baseline; gap: 12px; padding: 18px 28px 6px; }
header h1 { font-size: 20px; margin: 0; letter-spacing: -0.01em; }
header .sub { color: var(--muted); }
#live { margin-left: auto; color: var(--muted); font-variant-numeric: tabular-nums; }
#live::before { content: ""; display: inline-block; width: 8px; height: 8px; border-radius: 50%;
  background: var(--ok); margin-right: 6px; vertical-align: 1px; }
#live.offline::before { background: var(--bad); }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 18px; padding: 12px 28px 28px; }
.empty { color: var(--muted); padding: 12px 28px; }
footer { color: var(--muted); font-size: 12px; padding: 0 28px 24px; }
.worker { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px;
  box-shadow: 0 1px 2px rgba(16, 24, 40, 0.04); }
.top { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; }
.top h2 { font-size: 16px; margin: 0 6px 0 0; overflow-wrap: anywhere; }
.badge { border-radius: 999px; padding: 1px 10px; font-size: 12px; font-weight: 600; background: #eef2f6; color: #344054; }
.badge::before { content: ""; display: inline-block; width: 7px; height: 7px; border-radius: 50%; margin-right: 6px;
  vertical-align: 1px; background: currentColor; }
.s-running, .h-healthy { color: #067647; background: #ecfdf3; }
.s-idle, .s-initiated { color: #475467; background: #f2f4f7; }
.s-pausing, .s-paused, .h-degraded { color: #b54708; background: #fffaeb; }
.s-stopping, .s-stopped { color: #344054; background: #eaecf0; }
.s-halted, .h-halted { color: #b42318; background: #fef3f2; }
.slots { margin-left: auto; text-align: right; }
.slots .label { color: var(--muted); font-size: 12px; margin-right: 6px; }
.slots b { font-size: 18px; font-variant-numeric: tabular-nums; }
.bar { height: 4px; background: var(--line); border-radius: 2px; margin-top: 4px; width: 140px; overflow: hidden; }
.bar i { display: block; height: 100%; background: var(--accent); width: 0; transition: width 0.3s; }
.controls { display: flex; gap: 6px; align-items: center; margin-top: 12px; flex-wrap: wrap; }
button, input { font: inherit; }
button { border: 1px solid #d0d5dd; background: #fff; border-radius: 6px; padding: 3px 12px; cursor: pointer; color: var(--ink); }
button:hover { background: #f9fafb; border-color: #98a2b3; }
.controls label { margin-left: 10px; color: var(--muted); }
.controls input { width: 90px; border: 1px solid #d0d5dd; border-radius: 6px; padding: 3px 8px; }
.message { color: var(--muted); font-size: 12px; min-height: 1.45em; margin-top: 4px; }
.message.error { color: var(--bad); }
table { border-collapse: collapse; width: 100%; margin-top: 10px; font-variant-numeric: tabular-nums; }
th { text-align: right; color: var(--muted); font-weight: 500; font-size: 12px; padding: 4px 8px; border-bottom: 1px solid var(--line); }
td { text-align: right; padding: 5px 8px; border-bottom: 1px solid #f2f4f7; }
th:first-child, td:first-child { text-align: left; padding-left: 0; }
td:first-child { overflow-wrap: anywhere; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 8px; vertical-align: -1px; }
svg.chart { display: block; width: 100%; height: auto; margin-top: 12px; }
svg.chart text { font-size: 10px; fill: var(--muted); }
svg.chart .grid { stroke: var(--line); stroke-width: 1; }
svg.chart polyline { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
`;

const SCRIPT = `
"use strict";
const READ_ONLY = document.body.dataset.readOnly === "true";
const HISTORY_MS = 5 * 60 * 1000;
const RATE_WINDOW_MS = 5000; // starts per second are averaged over this long
const COLORS = ["#2e6be6", "#12b76a", "#f79009", "#7a5af8", "#ee46bc", "#06aed4", "#f04438", "#667085"];
const SVG = "http://www.w3.org/2000/svg";
const W = 600, PANEL = 64, GAP = 26, TOP = 14, LEFT = 34;

/** Per worker: its card's elements, and per source its history [{ t, waiting, rate, started }]. */
const cards = new Map();

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

function limit(n) {
  return n === "Infinity" || n === Infinity ? "\\u221e" : String(n);
}

/** Calls the admin API for one worker, then shows what it answered and refreshes. */
async function act(worker, card, method, path, body) {
  card.message.className = "message";
  card.message.textContent = "\\u2026";
  try {
    const init = { method, headers: { "content-type": "application/json" } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch("workers/" + encodeURIComponent(worker) + "/" + path, init);
    const json = await response.json();
    if (!response.ok) throw new Error(json.error || response.statusText);
    card.message.textContent = json.status !== undefined ? "now " + json.status : "concurrency " + limit(json.concurrency);
  } catch (error) {
    card.message.className = "message error";
    card.message.textContent = error.message;
  }
  refresh();
}

function buildControls(name, card) {
  const controls = el("div", { class: "controls" });
  for (const action of ["pause", "resume", "start", "stop"]) {
    const button = el("button", { type: "button", "data-worker": name, "data-action": action }, action[0].toUpperCase() + action.slice(1));
    button.addEventListener("click", () => act(name, card, "POST", action));
    controls.append(button);
  }
  const label = el("label", {}, "concurrency");
  const input = el("input", { type: "text", inputmode: "numeric", "data-worker": name, "data-control": "concurrency", "aria-label": "concurrency of " + name });
  const set = el("button", { type: "button", "data-worker": name, "data-action": "concurrency" }, "Set");
  const submit = () => {
    const text = input.value.trim();
    if (text === "") return;
    const value = /^(infinity|inf|\\u221e)$/i.test(text) ? "Infinity" : Number(text);
    input.value = "";
    act(name, card, "PUT", "concurrency", { concurrency: value });
  };
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") submit(); });
  set.addEventListener("click", submit);
  controls.append(label, input, set);
  card.input = input;
  return controls;
}

function buildChart(name) {
  const chart = svg("svg", { class: "chart", viewBox: "0 0 " + (W + LEFT) + " " + (TOP + 2 * PANEL + GAP + 16), "data-worker": name, role: "img" });
  const panels = {};
  ["waiting", "starts/s"].forEach((title, i) => {
    const y0 = TOP + i * (PANEL + GAP);
    const group = svg("g", { "data-panel": i === 0 ? "waiting" : "starts" });
    group.append(svg("line", { class: "grid", x1: LEFT, x2: LEFT + W, y1: y0 + PANEL, y2: y0 + PANEL }));
    group.append(svg("line", { class: "grid", x1: LEFT, x2: LEFT + W, y1: y0, y2: y0, "stroke-dasharray": "2 3" }));
    const caption = svg("text", { x: LEFT, y: y0 - 4 });
    caption.textContent = title;
    const max = svg("text", { x: LEFT - 4, y: y0 + 4, "text-anchor": "end" });
    const zero = svg("text", { x: LEFT - 4, y: y0 + PANEL + 3, "text-anchor": "end" });
    zero.textContent = "0";
    group.append(caption, max, zero);
    chart.append(group);
    panels[i === 0 ? "waiting" : "starts"] = { group, max, y0, lines: new Map() };
  });
  const axis = TOP + 2 * PANEL + GAP + 12;
  for (const [x, text, anchor] of [[LEFT, "\\u22125 min", "start"], [LEFT + W / 2, "\\u22122.5 min", "middle"], [LEFT + W, "now", "end"]]) {
    const label = svg("text", { x, y: axis, "text-anchor": anchor });
    label.textContent = text;
    chart.append(label);
  }
  return { chart, panels };
}

function buildCard(worker) {
  const name = worker.name;
  const root = el("section", { class: "worker", "data-worker": name });
  const top = el("div", { class: "top" });
  const title = el("h2", {}, name);
  const status = el("span", { class: "badge", "data-field": "status" });
  const health = el("span", { class: "badge", "data-field": "health" });
  const slotsBox = el("div", { class: "slots" });
  const slots = el("b", { "data-field": "slots" });
  const bar = el("div", { class: "bar" });
  const fill = el("i");
  bar.append(fill);
  slotsBox.append(el("span", { class: "label" }, "slots"), slots, bar);
  top.append(title, status, health, slotsBox);
  root.append(top);
  const card = { root, status, health, slots, fill, sources: new Map(), history: new Map() };
  card.message = el("div", { class: "message", role: "status" });
  if (!READ_ONLY) root.append(buildControls(name, card));
  root.append(card.message);
  const table = el("table");
  const head = el("tr");
  for (const text of ["source", "due", "delayed", "running", "starts/s"]) head.append(el("th", {}, text));
  table.append(el("thead"), el("tbody"));
  table.tHead.append(head);
  card.tbody = table.tBodies[0];
  root.append(table);
  const { chart, panels } = buildChart(name);
  card.chart = chart;
  card.panels = panels;
  root.append(chart);
  return card;
}

function sourceRow(card, worker, source, index) {
  const row = el("tr", { "data-worker": worker, "data-source": source });
  const nameCell = el("td");
  const swatch = el("span", { class: "swatch" });
  swatch.style.background = COLORS[index % COLORS.length];
  nameCell.append(swatch, document.createTextNode(source));
  const cells = {};
  row.append(nameCell);
  for (const field of ["due", "delayed", "running", "rate"]) {
    cells[field] = el("td", { "data-field": field });
    row.append(cells[field]);
  }
  card.tbody.append(row);
  for (const key of ["waiting", "starts"]) {
    const line = svg("polyline", { stroke: COLORS[index % COLORS.length], "data-worker": worker, "data-source": source, "data-series": key });
    card.panels[key].group.append(line);
    card.panels[key].lines.set(source, line);
  }
  return cells;
}

/** A round ceiling for an axis: 1, 2, 5 times a power of ten. */
function niceMax(value) {
  if (value <= 1) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function draw(card, now) {
  for (const key of ["waiting", "starts"]) {
    const panel = card.panels[key];
    let top = 0;
    for (const history of card.history.values()) for (const point of history) top = Math.max(top, key === "waiting" ? point.waiting : point.rate);
    const max = niceMax(top);
    panel.max.textContent = String(max);
    for (const [source, line] of panel.lines) {
      const history = card.history.get(source) || [];
      const points = history.map((point) => {
        const x = LEFT + W - ((now - point.t) / HISTORY_MS) * W;
        const y = panel.y0 + PANEL - ((key === "waiting" ? point.waiting : point.rate) / max) * PANEL;
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      line.setAttribute("points", points.join(" "));
    }
  }
}

function update(overview, now) {
  const main = document.querySelector("main");
  const names = overview.workers.map((w) => w.name);
  if (names.join("\\u0000") !== [...cards.keys()].join("\\u0000")) {
    // A worker that joins or leaves changes no other card: each keeps its history.
    const shown = new Map(cards);
    cards.clear();
    for (const worker of overview.workers) cards.set(worker.name, shown.get(worker.name) || buildCard(worker));
    main.replaceChildren(...[...cards.values()].map((card) => card.root));
    if (names.length === 0) main.append(el("p", { class: "empty" }, "No workers in this registry."));
  }
  for (const worker of overview.workers) {
    const card = cards.get(worker.name);
    const stats = worker.stats;
    card.status.textContent = worker.status;
    card.status.className = "badge s-" + worker.status;
    card.health.textContent = worker.health.status;
    card.health.className = "badge h-" + worker.health.status;
    card.health.title = worker.health.reason || "";
    card.slots.textContent = stats.running + " / " + limit(worker.concurrency);
    const share = worker.concurrency === "Infinity" ? 0 : stats.running / worker.concurrency;
    card.fill.style.width = Math.min(100, share * 100).toFixed(1) + "%";
    if (card.input) card.input.placeholder = limit(worker.concurrency);
    const sourceNames = Object.keys(stats.sources);
    if (sourceNames.join("\\u0000") !== [...card.sources.keys()].join("\\u0000")) {
      card.tbody.replaceChildren();
      for (const panel of Object.values(card.panels)) {
        for (const line of panel.lines.values()) line.remove();
        panel.lines.clear();
      }
      card.sources.clear();
      sourceNames.forEach((source, index) => card.sources.set(source, sourceRow(card, worker.name, source, index)));
      for (const source of [...card.history.keys()]) if (!card.sources.has(source)) card.history.delete(source);
    }
    for (const source of sourceNames) {
      const s = stats.sources[source];
      const cells = card.sources.get(source);
      const history = card.history.get(source) || [];
      const from = history.find((point) => point.t >= now - RATE_WINDOW_MS);
      const rate = from && now > from.t ? Math.max(0, s.counters.started - from.started) / ((now - from.t) / 1000) : 0;
      cells.due.textContent = String(s.due);
      cells.delayed.textContent = String(s.delayed);
      cells.running.textContent = String(s.running);
      cells.rate.textContent = rate.toFixed(1);
      history.push({ t: now, waiting: s.waiting, rate, started: s.counters.started });
      while (history.length > 0 && history[0].t < now - HISTORY_MS) history.shift();
      card.history.set(source, history);
    }
    draw(card, now);
  }
}

let timer = 0;
async function refresh() {
  clearTimeout(timer);
  const live = document.getElementById("live");
  try {
    const response = await fetch("overview", { cache: "no-store" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    update(await response.json(), Date.now());
    live.className = "";
    live.textContent = "live \\u00b7 " + new Date().toLocaleTimeString();
  } catch (error) {
    live.className = "offline";
    live.textContent = "offline (" + error.message + "), retrying";
  }
  timer = setTimeout(refresh, 1000);
}
refresh();
`;

function sha256(text: string): string {
  const { createHash } = nodeBuiltin<typeof crypto>('node:crypto', 'the admin dashboard');
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}

/**
 * What the page may load: its own inline style and script (by hash), and requests to its own
 * origin. So even a page someone tampered with on the way could not reach elsewhere.
 *
 * @internal
 */
export function dashboardCsp(): string {
  cspText ??= [
    "default-src 'none'",
    `script-src ${sha256(SCRIPT)}`,
    `style-src ${sha256(STYLE)}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return cspText;
}
/** Computed on first use: hashing needs node:crypto, which the root entry must not load (SPEC 14). */
let cspText: string | undefined;

/** The page, with or without its controls. @internal */
export function dashboardPage(readOnly: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>qmux dashboard</title>
<style>${STYLE}</style>
</head>
<body data-read-only="${readOnly}">
<header><h1>qmux</h1><span class="sub">workers${readOnly ? ' (read-only)' : ''}</span><span id="live">connecting</span></header>
<main></main>
<footer>Every second from this page: waiting jobs (due and delayed) and starts per second (over 5 s) per source; the chart shows the last five minutes.</footer>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
