// The Jet dashboard: a one-page app over the member's JSON API (/api/...), polled every second.
// Pages: #/ (the cluster: members, their load, jobs) and #/jobs/<id> (a job: its DAG with each
// vertex's rate, counts, backpressure, watermark lag and late events; snapshots, restarts, error,
// and the job's actions). Plain JavaScript, the DAG in inline SVG.
"use strict";

const POLL_MS = 1000;
const SVG_NS = "http://www.w3.org/2000/svg";
const BOX = { width: 200, height: 84, columnGap: 100, rowGap: 26, margin: 24 };

let timer = null;
let pageToken = 0; // a page's polls stop when another page starts
const previous = { job: null, loads: {} }; // the last look, for rates and CPU shares

const app = () => document.getElementById("app");
const number = (value) => (value === null || value === undefined ? "-" : Number(value).toLocaleString("en-US"));
const bytes = (value) => (value === null || value === undefined ? "-" :
  value >= 1 << 20 ? `${(value / (1 << 20)).toFixed(1)} MiB` : value >= 1024 ? `${(value / 1024).toFixed(1)} KiB` : `${value} B`);
const time = (iso) => (iso ? new Date(iso).toLocaleString() : "-");

function element(tag, attributes = {}, ...children) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) { window.location.reload(); throw new Error("signed out"); }
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw Object.assign(new Error(body.error || `HTTP ${response.status}`), { status: response.status });
  return body;
}

function connection(ok, text) {
  const node = document.getElementById("connection");
  node.textContent = text;
  node.className = ok ? "" : "stale";
}

// -- routing --------------------------------------------------------------------------------
function route() {
  pageToken += 1;
  clearTimeout(timer);
  previous.job = null;
  const match = window.location.hash.match(/^#\/jobs\/([^/]+)$/);
  if (match) showJob(decodeURIComponent(match[1]), pageToken);
  else showCluster(pageToken);
}

function poll(token, look) {
  if (token !== pageToken) return;
  look().then(() => connection(true, `updated ${new Date().toLocaleTimeString()}`),
              (error) => connection(false, `not updated: ${error.message}`))
    .finally(() => { if (token === pageToken) timer = setTimeout(() => poll(token, look), POLL_MS); });
}

// -- the cluster page -------------------------------------------------------------------------
function showCluster(token) {
  app().replaceChildren(element("h1", { text: "Cluster" }),
    element("section", { class: "panel" }, element("h2", { text: "Members" }), element("div", { id: "members" })),
    element("section", { class: "panel" }, element("h2", { text: "Jobs" }), element("div", { id: "jobs" })));
  poll(token, async () => {
    const cluster = await api("/api/cluster");
    if (token !== pageToken) return;
    renderMembers(cluster);
    renderJobs(cluster);
  });
}

function cpuShare(index, load) {
  const before = previous.loads[index];
  previous.loads[index] = load;
  if (!before || load.wallSeconds <= before.wallSeconds) return null;
  return Math.max(0, (load.cpuSeconds - before.cpuSeconds) / (load.wallSeconds - before.wallSeconds));
}

function renderMembers(cluster) {
  const rows = cluster.members.map((member) => {
    const load = member.load;
    const share = load ? cpuShare(member.index, load) : null;
    return element("tr", { "data-testid": "member-row", "data-member": member.index },
      element("td", { text: `${member.index}${member.self ? " (this one)" : ""}${member.index === 0 ? " coordinator" : ""}` }),
      element("td", { text: member.address }), element("td", { text: member.state }),
      element("td", { class: "num", "data-cpu": load ? load.cpuSeconds : "", text: load ? `${load.cpuSeconds.toFixed(1)} s` : "-" }),
      element("td", { class: "num", text: share === null ? "-" : `${(share * 100).toFixed(0)} %` }),
      element("td", { class: "num", text: load ? bytes(load.rssBytes) : "-" }),
      element("td", { class: "num", text: load ? number(load.executions) : "-" }));
  });
  const head = element("tr", {}, ...["member", "address", "state", "CPU time", "CPU now", "memory (RSS)", "executions"]
    .map((title, i) => element("th", { class: i >= 3 ? "num" : "", text: title })));
  document.getElementById("members").replaceChildren(element("table", { "data-testid": "members" }, head, ...rows));
}

function renderJobs(cluster) {
  const holder = document.getElementById("jobs");
  if (!cluster.coordinator) {
    holder.replaceChildren(element("p", { text: "Only member 0, the coordinator, has the jobs: open its dashboard." }));
    return;
  }
  const head = element("tr", {}, ...["name", "id", "status", "submitted", "completed", "restarts"].map((t) => element("th", { text: t })));
  const rows = cluster.jobs.map((job) => element("tr", { "data-testid": "job-row", "data-job": job.jobId },
    element("td", {}, element("a", { href: `#/jobs/${encodeURIComponent(job.jobId)}`, text: job.name })),
    element("td", { text: job.jobId }), element("td", {}, element("span", { class: `status ${job.status}`, text: job.status })),
    element("td", { text: time(job.submissionTime) }), element("td", { text: time(job.completionTime) }),
    element("td", { class: "num", text: number(job.restarts) })));
  holder.replaceChildren(rows.length ? element("table", { "data-testid": "jobs" }, head, ...rows) : element("p", { text: "No jobs yet." }));
}

// -- the job page -----------------------------------------------------------------------------
const ACTIONS = [["suspend", "Suspend"], ["resume", "Resume"], ["restart", "Restart"], ["cancel", "Cancel"],
                 ["export-snapshot", "Export snapshot"]];

function showJob(jobId, token) {
  const buttons = ACTIONS.map(([action, label]) =>
    element("button", { type: "button", "data-testid": `action-${action}`, "data-action": action, text: label,
                        onclick: () => act(jobId, action) }));
  app().replaceChildren(
    element("h1", {}, element("span", { id: "job-name", "data-testid": "job-name" }), " ",
            element("span", { id: "job-status", "data-testid": "job-status", class: "status" })),
    element("div", { class: "actions" }, ...buttons),
    element("div", { id: "action-message", "data-testid": "action-message" }),
    element("section", { class: "panel" }, element("h2", { text: "DAG" }), element("div", { id: "dag" }),
      element("div", { class: "legend" }, "backpressure:", element("span", { class: "swatch", style: `background:${pressureColour(0)}` }), "0 %",
        element("span", { class: "swatch", style: `background:${pressureColour(0.5)}` }), "50 %",
        element("span", { class: "swatch", style: `background:${pressureColour(1)}` }), "100 % of the last interval")),
    element("div", { id: "job-error-panel" }),
    element("div", { class: "grid" },
      element("section", { class: "panel" }, element("h2", { text: "Job" }), element("dl", { class: "facts", id: "job-facts" })),
      element("section", { class: "panel" }, element("h2", { text: "Snapshots" }), element("dl", { class: "facts", id: "snapshot-facts" }))),
    element("section", { class: "panel" }, element("h2", { text: "Vertices" }), element("div", { id: "vertex-table" })));
  let drawn = null;
  poll(token, async () => {
    const job = await api(`/api/jobs/${encodeURIComponent(jobId)}`);
    if (token !== pageToken) return;
    const shape = JSON.stringify(job.dag);
    if (shape !== drawn) { drawDag(job.dag); drawn = shape; }
    renderJob(job);
  });
}

async function act(jobId, action) {
  const message = document.getElementById("action-message");
  let body = {};
  if (action === "export-snapshot") {
    const name = window.prompt("Name of the exported snapshot:");
    if (!name) return;
    body = { name, cancel: false };
  } else if (action === "cancel" && !window.confirm("Cancel the job for good?")) {
    return;
  }
  message.className = "";
  message.textContent = `${action}…`;
  try {
    await api(`/api/jobs/${encodeURIComponent(jobId)}/${action}`, {
      method: "POST", headers: { "Content-Type": "application/json", "X-Jet-Dashboard": "1" }, body: JSON.stringify(body) });
    message.textContent = `${action}: requested`;
  } catch (error) {
    message.className = "error";
    message.textContent = `${action} refused: ${error.message}`;
  }
}

function facts(id, pairs) {
  document.getElementById(id).replaceChildren(...pairs.flatMap(([term, value, testid]) =>
    [element("dt", { text: term }), element("dd", testid ? { "data-testid": testid, text: value } : { text: value })]));
}

function renderJob(job) {
  document.getElementById("job-name").textContent = `${job.name} (${job.jobId})`;
  const status = document.getElementById("job-status");
  status.textContent = job.status;
  status.className = `status ${job.status}`;
  const terminal = job.status === "COMPLETED" || job.status === "FAILED";
  const allowed = { suspend: job.status === "RUNNING", resume: job.status === "SUSPENDED", restart: job.status === "RUNNING",
                    cancel: !terminal, "export-snapshot": !terminal && job.processingGuarantee !== "NONE" };
  for (const [action] of ACTIONS) document.querySelector(`[data-action="${action}"]`).disabled = !allowed[action];
  facts("job-facts", [["guarantee", job.processingGuarantee], ["submitted", time(job.submissionTime)],
    ["started", time(job.startTime)], ["completed", time(job.completionTime)], ["members", (job.members || []).join(", ") || "-"],
    ["restarts", number(job.restarts), "restarts"], ["last restart cause", job.lastRestartCause || "-"],
    ["suspension cause", job.suspensionCause || "-"]]);
  const snapshots = job.snapshots || {};
  const last = snapshots.last;
  facts("snapshot-facts", [["taken", number(snapshots.count), "snapshot-count"], ["failed", number(snapshots.failures)],
    ["last id", last ? last.id : "-"], ["last at", last ? time(last.time) : "-"], ["last size", last ? bytes(last.bytes) : "-"],
    ["last keys", last ? number(last.keys) : "-"], ["last duration", last ? `${number(last.durationMs)} ms` : "-"],
    ["last failure", snapshots.lastFailure || "-"]]);
  const errorPanel = document.getElementById("job-error-panel");
  errorPanel.replaceChildren(...(job.error ? [element("section", { class: "panel" }, element("h2", { text: "Error" }),
    element("pre", { class: "error", "data-testid": "job-error", text: job.error }))] : []));
  const figures = vertexFigures(job);
  updateDag(figures);
  renderVertexTable(job.dag, figures);
}

// Each vertex's figures with its rate and backpressure share since the previous look.
function vertexFigures(job) {
  const before = previous.job;
  previous.job = { wallMs: job.wallMs, metrics: job.metrics || {} };
  const intervalMs = before ? job.wallMs - before.wallMs : 0;
  const sinks = new Set(job.dag.vertices.map((v) => v.name).filter((name) => !job.dag.edges.some((e) => e.source === name)));
  const result = {};
  for (const vertex of job.dag.vertices) {
    const now = (job.metrics || {})[vertex.name] || {};
    const then = before ? before.metrics[vertex.name] : undefined;
    const counted = sinks.has(vertex.name) ? "in" : "out";
    let rate = 0;
    let pressure = 0;
    if (then && intervalMs > 0) {
      rate = Math.max(0, ((now[counted] || 0) - (then[counted] || 0)) * 1000 / intervalMs);
      const blocked = (now.backPressuredTimeMs || 0) - (then.backPressuredTimeMs || 0);
      pressure = Math.min(1, Math.max(0, blocked / (intervalMs * Math.max(1, vertex.totalParallelism))));
    }
    result[vertex.name] = { ...now, rate, pressure };
  }
  return result;
}

function pressureColour(share) {
  return `hsl(${Math.round(130 * (1 - share))}, 65%, ${Math.round(88 - 18 * share)}%)`;
}

const lag = (figures) => (figures.watermarkLagMs === null || figures.watermarkLagMs === undefined ? "-" : `${number(figures.watermarkLagMs)} ms`);

function drawDag(dag) {
  const columns = {};
  const place = {};
  for (const vertex of dag.vertices) {
    const row = (columns[vertex.depth] = (columns[vertex.depth] || 0) + 1) - 1;
    place[vertex.name] = { x: BOX.margin + vertex.depth * (BOX.width + BOX.columnGap), y: BOX.margin + row * (BOX.height + BOX.rowGap) };
  }
  const depth = Math.max(0, ...dag.vertices.map((v) => v.depth));
  const rows = Math.max(1, ...Object.values(columns));
  const width = 2 * BOX.margin + (depth + 1) * BOX.width + depth * BOX.columnGap;
  const height = 2 * BOX.margin + rows * BOX.height + (rows - 1) * BOX.rowGap;
  const svg = element("svg:svg", { class: "dag", "data-testid": "dag", viewBox: `0 0 ${width} ${height}`, style: `max-width:${width}px` },
    element("svg:defs", {}, element("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" },
      element("svg:path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a99a8" }))));
  for (const edge of dag.edges) {
    const from = place[edge.source];
    const to = place[edge.dest];
    const [x1, y1, x2, y2] = [from.x + BOX.width, from.y + BOX.height / 2, to.x, to.y + BOX.height / 2];
    const bend = Math.max(30, (x2 - x1) / 2);
    // "distributed-partitioned" on two lines: one is wider than the gap between two columns
    const label = edge.kind.split(/-(.*)/s).filter(Boolean);
    const [mx, my] = [(x1 + x2) / 2, (y1 + y2) / 2 - 6 - 11 * (label.length - 1)];
    svg.append(element("svg:path", { class: "edge", "data-edge": `${edge.source}->${edge.dest}`, "marker-end": "url(#arrow)",
                                     d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}` }),
               element("svg:text", { class: "edge-label", x: mx, y: my, "text-anchor": "middle" },
                 ...label.map((part, i) => element("svg:tspan", { x: mx, dy: i ? "11" : "0", text: part }))));
  }
  for (const vertex of dag.vertices) {
    const { x, y } = place[vertex.name];
    const text = (line, cls, attributes = {}) => element("svg:text", { x: x + 8, y: y + 16 + 15 * line, class: cls, ...attributes });
    const shown = vertex.name.length > 22 ? `${vertex.name.slice(0, 21)}…` : vertex.name;
    svg.append(element("svg:g", { class: "vertex", "data-vertex": vertex.name, "data-rate": "0", "data-in": "0", "data-out": "0" },
      element("svg:title", { text: vertex.name }),
      element("svg:rect", { x, y, width: BOX.width, height: BOX.height, fill: pressureColour(0) }),
      text(0, "name", { text: `${shown} ×${vertex.totalParallelism}` }), text(1, "rate"), text(2, "counts"), text(3, "watermark"), text(4, "pressure")));
  }
  document.getElementById("dag").replaceChildren(svg);
}

function updateDag(figures) {
  for (const group of document.querySelectorAll("#dag [data-vertex]")) {
    const f = figures[group.getAttribute("data-vertex")] || {};
    group.setAttribute("data-rate", f.rate.toFixed(1));
    group.setAttribute("data-in", f.in || 0);
    group.setAttribute("data-out", f.out || 0);
    group.setAttribute("data-backpressure", f.pressure.toFixed(3));
    group.querySelector("rect").setAttribute("fill", pressureColour(f.pressure));
    group.querySelector(".rate").textContent = `${number(Math.round(f.rate))} items/s`;
    group.querySelector(".counts").textContent = `in ${number(f.in || 0)} · out ${number(f.out || 0)}`;
    group.querySelector(".watermark").textContent = `wm lag ${lag(f)} · late ${number(f.lateEventsDropped || 0)}`;
    group.querySelector(".pressure").textContent = `backpressure ${(f.pressure * 100).toFixed(0)} %`;
  }
}

function renderVertexTable(dag, figures) {
  const columns = [["vertex", (v) => v.name], ["rate/s", (v, f) => number(Math.round(f.rate))], ["in", (v, f) => number(f.in || 0)],
    ["out", (v, f) => number(f.out || 0)], ["batches", (v, f) => number(f.receivedBatches)],
    ["backpressure", (v, f) => `${(f.pressure * 100).toFixed(0)} %`],
    ["queues", (v, f) => (f.queuesCapacity ? `${number(f.queuesSize || 0)} / ${number(f.queuesCapacity)}` : "-")],
    ["wm lag", (v, f) => lag(f)], ["late", (v, f) => number(f.lateEventsDropped || 0)],
    ["net in", (v, f) => bytes(f.distributedBytesIn)], ["net out", (v, f) => bytes(f.distributedBytesOut)],
    ["snapshot", (v, f) => (f.snapshotKeys === undefined ? "-" : `${number(f.snapshotKeys)} keys, ${bytes(f.snapshotBytes)}`)]];
  const head = element("tr", {}, ...columns.map(([title], i) => element("th", { class: i ? "num" : "", text: title })));
  const ordered = [...dag.vertices].sort((a, b) => a.depth - b.depth); // upstream first, as drawn
  const rows = ordered.map((vertex) => element("tr", { "data-testid": "vertex-row", "data-vertex-row": vertex.name },
    ...columns.map(([, value], i) => element("td", { class: i ? "num" : "", text: value(vertex, figures[vertex.name] || { rate: 0, pressure: 0 }) }))));
  document.getElementById("vertex-table").replaceChildren(element("table", {}, head, ...rows));
}

window.addEventListener("hashchange", route);
route();
