// gpool's dashboard: plain JavaScript, no libraries, no external URLs. It reads gschedd's REST
// API (docs/api.md) with a token (Authorization: Bearer), refreshes itself every 2 s, draws
// the last hour from /api/v1/history on canvases and follows a job's output by long poll.
"use strict";

const REFRESH_MS = 2000;
const HISTORY_MS = 10000;
let token = null;
let detailJob = 0;      // the job whose detail is open, 0: none
let detailGen = 0;      // bumps when the detail changes, to stop an old output poll

const hashJob = /(?:^|[#&])job=(\d+)/.exec(location.hash);

function takeToken() {
  const m = /(?:^|[#&])token=([0-9a-f]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("gpool-token", m[1]);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("gpool-token");
}

async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  const body = await r.json();
  if (!r.ok) {
    const e = new Error(body.error ? body.error.message : "HTTP " + r.status);
    e.status = r.status;
    throw e;
  }
  return body;
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "onclick") e.addEventListener("click", v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function fill(id, rows) {
  const tb = document.querySelector("#" + id + " tbody");
  tb.replaceChildren(...rows);
}

const bytes = (n) => {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
};
const when = (t) => (t > 0 ? new Date(t * 1000).toLocaleTimeString() : "");
const bar = (frac) => el("span", { class: "bar" }, el("span", { style: "width:" + Math.round(Math.min(1, Math.max(0, frac)) * 100) + "%" }));

function showNodes(nodes) {
  fill("nodes", nodes.map((n) => el("tr", { "data-node": n.name },
    el("td", {}, n.name), el("td", { class: "state-" + n.state }, n.state + (n.reason ? " (" + n.reason + ")" : "")),
    el("td", {}, n.addr), el("td", {}, bar(n.cpus ? n.cpus_used / n.cpus : 0), n.cpus_used + "/" + n.cpus),
    el("td", {}, n.mem_used_mb + "/" + n.mem_mb + " MiB"), el("td", {}, n.cards.length),
    el("td", {}, n.jobs.join(" ")), el("td", {}, when(n.last_heard)))));
  const cards = nodes.flatMap((n) => n.cards);
  fill("cards", cards.map((c) => el("tr", { "data-card": c.node + ":" + c.index },
    el("td", {}, c.node), el("td", {}, c.index), el("td", {}, c.name), el("td", {}, c.vendor),
    el("td", { class: "grade-" + (c.grade || "none") }, c.grade || "not screened"),
    el("td", { class: "state-" + c.state }, c.state + (c.state_reason ? " (" + c.state_reason + ")" : "")),
    el("td", {}, bytes(c.vram_total)), el("td", {}, bar(c.utilization_pct / 100), c.utilization_pct + " %"),
    el("td", {}, c.power_w ? c.power_w.toFixed(0) + " W" : "–"), el("td", {}, c.power_limit_w + " W"),
    el("td", {}, c.temperature_c ? c.temperature_c + " °C" : "–"))));
  const up = nodes.filter((n) => n.state === "up").length;
  document.getElementById("summary").textContent =
    up + "/" + nodes.length + " nodes up, " + cards.length + " cards, " +
    cards.reduce((a, c) => a + (c.power_w || 0), 0).toFixed(0) + " W";
}

function jobRow(j, cells) {
  return el("tr", { class: "clickable", "data-job": j.id, onclick: () => openDetail(j.id) }, ...cells.map((c) => el("td", {}, c)));
}

function showJobs(jobs) {
  const running = jobs.filter((j) => j.state === "RUNNING" || j.state === "COMPLETING");
  const queued = jobs.filter((j) => j.state === "PENDING" || j.state === "REQUEUED");
  const done = jobs.filter((j) => !running.includes(j) && !queued.includes(j)).sort((a, b) => b.end_time - a.end_time).slice(0, 20);
  fill("running", running.map((j) => jobRow(j, [j.id, j.name, j.user, j.ntasks, j.nodelist, when(j.start_time), j.energy_j.toFixed(0) + " J"])));
  fill("queued", queued.map((j) => jobRow(j, [j.id, j.name, j.user, j.ntasks, j.priority, j.reason, when(j.submit_time)])));
  fill("finished", done.map((j) => {
    const r = jobRow(j, [j.id, j.name, j.user, j.state, j.exit_code, when(j.end_time)]);
    r.children[3].className = "state-" + j.state;
    return r;
  }));
}

function chart(id, samples, value, max, unit) {
  const cv = document.getElementById(id);
  const g = cv.getContext("2d");
  const W = cv.width, H = cv.height, L = 44, B = 18;
  g.clearRect(0, 0, W, H);
  g.font = "11px sans-serif";
  g.fillStyle = "#888";
  g.strokeStyle = "#e4e4e4";
  const top = Math.max(max || 0, ...samples.map(value), 1e-9);
  for (let i = 0; i <= 4; i++) {
    const y = H - B - (H - B - 6) * i / 4;
    g.beginPath(); g.moveTo(L, y); g.lineTo(W, y); g.stroke();
    g.fillText((top * i / 4).toFixed(top * i / 4 < 10 ? 1 : 0) + unit, 2, y + 4);
  }
  const now = Date.now() / 1000, span = 3600;
  g.fillText("-60 min", L, H - 4);
  g.fillText("now", W - 24, H - 4);
  if (!samples.length) return;
  g.strokeStyle = "#3b73d9";
  g.lineWidth = 2;
  g.beginPath();
  samples.forEach((s, i) => {
    const x = L + (W - L) * (1 - Math.min(span, now - s.time) / span);
    const y = H - B - (H - B - 6) * value(s) / top;
    if (i) g.lineTo(x, y); else g.moveTo(x, y);
  });
  g.stroke();
}

async function refreshHistory() {
  try {
    const h = await api("/api/v1/history");
    chart("chart-util", h.samples, (s) => s.utilization * 100, 100, "%");
    chart("chart-power", h.samples, (s) => s.watts, 0, "W");
  } catch (e) {
    status(e);
  }
}

function status(e) {
  document.getElementById("status").textContent = e ? "error: " + e.message : "updated " + new Date().toLocaleTimeString();
  if (e && e.status === 401) {
    sessionStorage.removeItem("gpool-token");
    document.getElementById("main").hidden = true;
    document.getElementById("login").hidden = false;
  }
}

async function refresh() {
  try {
    const [n, j] = await Promise.all([api("/api/v1/nodes"), api("/api/v1/jobs?all=1&limit=200")]);
    showNodes(n.nodes);
    showJobs(j.jobs);
    if (detailJob) showDetailFields(await api("/api/v1/jobs/" + detailJob));
    status(null);
  } catch (e) {
    status(e);
  }
}

function fmt(k, v) {
  if (k.endsWith("_time")) return when(v);
  if (Array.isArray(v)) return v.join(" ");
  if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(2);
  return v === undefined ? "" : v;
}

function showDetailFields(j) {
  const f = ["state", "user", "name", "argv", "ntasks", "nodelist", "attempt", "reason", "exit_code", "submit_time", "start_time", "end_time", "cpu_sec", "energy_j"];
  document.getElementById("detail-fields").replaceChildren(...f.flatMap((k) => [
    el("dt", {}, k),
    el("dd", { "data-field": k }, fmt(k, j[k])),
  ]));
}

async function followOutput(id, gen) {
  const pre = document.getElementById("detail-out");
  let off = 0, offErr = 0;
  while (gen === detailGen) {
    let o;
    try {
      o = await api("/api/v1/jobs/" + id + "/output?offset=" + off + "&offset_err=" + offErr + "&wait=1");
    } catch (e) {
      status(e);
      await new Promise((r) => setTimeout(r, 2000));
      continue;
    }
    if (gen !== detailGen) return;
    if (o.out || o.err) pre.append(o.out + o.err);
    off = o.next_offset;
    offErr = o.next_offset_err;
    pre.scrollTop = pre.scrollHeight;
    if (o.done) return;
  }
}

async function openDetail(id) {
  detailJob = id;
  const gen = ++detailGen;
  document.getElementById("detail-id").textContent = id;
  document.getElementById("detail-out").textContent = "";
  document.getElementById("detail").hidden = false;
  try {
    showDetailFields(await api("/api/v1/jobs/" + id));
  } catch (e) {
    status(e);
  }
  followOutput(id, gen);
}

function start() {
  token = takeToken();
  if (!token) {
    document.getElementById("login").hidden = false;
    return;
  }
  document.getElementById("main").hidden = false;
  document.getElementById("detail-close").addEventListener("click", () => {
    detailJob = 0;
    detailGen++;
    document.getElementById("detail").hidden = true;
  });
  refresh();
  refreshHistory();
  setInterval(refresh, REFRESH_MS);
  setInterval(refreshHistory, HISTORY_MS);
  if (hashJob) openDetail(Number(hashJob[1]));
}

start();
