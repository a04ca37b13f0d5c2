// The replication page (docs/replication-page.md): polls cluster.json about once a second and
// redraws. No framework, no network access but to the serving broker.
//
// At scale (thousands of partitions) it draws a summary first, then the topics, the user's
// before the internal ones (folded until clicked), each as one line with a strip of one cell per
// partition; only the unhealthy partitions (cluster.json's problems) and those the reader opened
// are drawn as cards. It asks for cluster.json?brief=1, which leaves out the replica states of
// the healthy partitions but the opened ones (?open=).
"use strict";

const POLL_MS = 1000;
const MAX_EVENTS = 200;
const seenEvents = new Map(); // key -> event, kept across polls (a broker that stops answering keeps its past events)
const opened = new Set(); // "topic-partition" of the healthy partitions whose card the reader opened
const folded = new Map(); // topic -> folded, as the reader set it (default: internal topics folded)
let lastView = null; // the last cluster.json, redrawn when the filter or a fold changes

const PROBLEM_TEXT = {
  offline: "offline",
  underMinIsr: "under min ISR",
  underReplicated: "under-replicated",
  leaderNotPreferred: "leader not preferred",
};
const plural = (n, word) => (n === 1 ? word : word + "s");
const isInternal = (topic) => topic.startsWith("__");
const pname = (p) => `${p.topic}-${p.partition}`;

// normalize fills in what cluster.json omits at its zero value (false, 0, empty lists).
function normalize(cv) {
  for (const p of cv.partitions) {
    p.logStartOffset = p.logStartOffset || 0;
    p.isr = p.isr || [];
    p.osr = p.osr || [];
    p.leaderReachable = !!p.leaderReachable;
    p.problems = p.problems || [];
    for (const r of p.replicaStates || []) {
      r.inIsr = !!r.inIsr;
      r.reachable = !!r.reachable;
    }
  }
  for (const b of cv.brokers) {
    for (const f of b.fetchers) f.partitions = f.partitions || [];
  }
  return cv;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const set = (xs) => "[" + (xs || []).join(",") + "]";
const csv = (xs) => (xs || []).join(",");
const pct = (x) => Math.max(0, Math.min(100, x)).toFixed(2) + "%";

function fmtMs(ms) {
  if (ms < 0) return "never";
  if (ms < 1000) return ms + " ms";
  return (ms / 1000).toFixed(1) + " s";
}

function fmtTime(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function renderHeader(cv) {
  const c = document.getElementById("controller");
  c.dataset.controller = cv.controller.id;
  c.dataset.controllerEpoch = cv.controller.epoch;
  c.textContent = cv.controller.id >= 0
    ? `controller: broker ${cv.controller.id} · controller epoch ${cv.controller.epoch}`
    : `controller: none · controller epoch ${cv.controller.epoch}`;
  document.getElementById("lagmax").textContent = `replica.lag.time.max.ms = ${cv.replicaLagTimeMaxMs}`;
  const s = document.getElementById("status");
  const unreachable = cv.brokers.filter((b) => !b.reachable).map((b) => b.id);
  s.dataset.ok = String(cv.errors.length === 0);
  s.textContent = `served by broker ${cv.servedBy} · ${fmtTime(cv.timeMs)}` +
    (unreachable.length ? ` · unreachable: ${set(unreachable)}` : "") +
    (cv.errors.length ? ` · ${cv.errors.join("; ")}` : "");
}

function renderPartition(p, lagMax) {
  let hi = p.highWatermark;
  for (const r of p.replicaStates || []) hi = Math.max(hi, r.logEndOffset);
  const lo = p.logStartOffset;
  const span = Math.max(hi - lo, 1);
  const pos = (o) => pct(((o - lo) / span) * 100);
  const underReplicated = p.problems.includes("underReplicated");
  const rows = !p.replicaStates ? [el("div", { class: "muted" }, "loading the replica states…")] : p.replicaStates.map((r) => {
    const isLeader = r.role === "Leader" && r.broker === p.leader;
    const cls = isLeader ? "leader" : !p.leaderReachable ? "unknown" : r.inIsr ? "isr" : "osr";
    const behind = r.logEndOffset >= 0 && r.logEndOffset < p.highWatermark;
    const tags = [];
    if (isLeader) tags.push(el("span", { class: "tag leader" }, "leader"));
    else if (p.leaderReachable) tags.push(el("span", { class: "tag " + cls }, r.inIsr ? "ISR" : "OSR"));
    if (!r.reachable) tags.push(el("span", { class: "tag down", title: "this broker did not answer" }, "no answer"));
    let clock = el("span", { class: "clock muted" }, isLeader ? "" : "—");
    if (!isLeader && p.leaderReachable && r.role === "Follower") {
      const ago = r.lastCaughtUpAgoMs;
      const frac = ago < 0 ? 1 : ago / lagMax;
      clock = el("span", { class: "clock", title: "time since this follower was last caught up with the leader's LEO, against replica.lag.time.max.ms" },
        el("span", { class: "clocktrack" }, el("span", { class: "clockbar" + (frac >= 1 ? " late" : ""), style: "width:" + pct(frac * 100) })),
        `${fmtMs(ago)} / ${fmtMs(lagMax)}`);
    }
    const leoText = r.logEndOffset >= 0 ? `LEO ${r.logEndOffset}` : "LEO ?";
    return el("div", {
      class: "replica " + cls, "data-replica": r.broker, "data-role": r.role, "data-in-isr": r.inIsr,
      "data-leo": r.logEndOffset, "data-leo-source": r.leoSource, "data-behind-hw": behind,
      "data-reachable": r.reachable, "data-last-caught-up-ago-ms": r.lastCaughtUpAgoMs,
      title: (r.leoSource === "leader" ? "LEO as the leader saw it at the follower's last fetch" : "LEO reported by the replica itself") +
        (r.fetcher ? ` · ${r.fetcher} (${r.fetchState})` : ""),
    },
      el("span", { class: "rlabel" }, `broker ${r.broker}`, tags),
      el("span", { class: "track" },
        el("span", { class: "bar", style: "width:" + pos(Math.max(r.logEndOffset, lo)) }),
        el("span", { class: "mark lso", style: "left:0", title: `log start offset ${p.logStartOffset}` }),
        el("span", { class: "mark hw", style: "left:" + pos(p.highWatermark), title: `HW ${p.highWatermark}` })),
      el("span", { class: "leo" }, leoText,
        behind ? el("span", { class: cls === "osr" ? "behind" : "muted", title: "offsets below the HW" }, ` (−${p.highWatermark - r.logEndOffset})`) : ""),
      clock);
  });

  const problems = p.problems.map((x) => el("span", { class: "tag problem " + x, title: problemTitle(p, x) }, PROBLEM_TEXT[x] || x));
  return el("div", {
    class: "partition" + (underReplicated ? " under-replicated" : "") + (p.problems.length ? " unhealthy" : ""),
    "data-problems": csv(p.problems), "data-min-isr": p.minIsr,
    "data-partition": `${p.topic}-${p.partition}`, "data-topic": p.topic, "data-partition-id": p.partition,
    "data-leader": p.leader, "data-leader-epoch": p.leaderEpoch, "data-hw": p.highWatermark,
    "data-log-start": p.logStartOffset, "data-replicas": csv(p.replicas), "data-isr": csv(p.isr),
    "data-osr": csv(p.osr), "data-leader-reachable": p.leaderReachable,
  },
    el("div", { class: "ptitle" },
      el("b", {}, `${p.topic}-${p.partition}`),
      el("span", {}, el("span", { class: "k" }, "leader "), p.leader),
      el("span", {}, el("span", { class: "k" }, "leader epoch "), p.leaderEpoch),
      el("span", {}, el("span", { class: "k" }, "HW "), p.highWatermark),
      el("span", {}, el("span", { class: "k" }, "log start "), p.logStartOffset),
      el("span", { class: "set" }, el("span", { class: "k" }, "AR "), set(p.replicas)),
      el("span", { class: "set" }, el("span", { class: "k" }, "ISR "), p.leaderReachable ? set(p.isr) : "?"),
      el("span", { class: "set" }, el("span", { class: "k" }, "OSR "), p.leaderReachable ? set(p.osr) : "?"),
      p.leaderReachable ? "" : el("span", { class: "err" }, "leader did not answer"),
      problems,
      p.problems.length ? "" : el("button", { class: "close", "data-close": pname(p), title: "fold this healthy partition back into its topic's strip" }, "×")),
    rows);
}

function problemTitle(p, x) {
  switch (x) {
    case "offline": return p.leader < 0 ? "no leader" : "the leader did not answer as leader";
    case "underMinIsr": return `ISR ${set(p.isr)} smaller than min.insync.replicas ${p.minIsr}: acks=all produce is refused`;
    case "underReplicated": return `ISR ${set(p.isr)} smaller than AR ${set(p.replicas)}`;
    case "leaderNotPreferred": return `leader ${p.leader}, preferred leader (first of AR) ${p.replicas[0]}`;
    default: return x;
  }
}

// renderSummary: the counts of cluster.json's summary and each broker's fetcher lag.
function renderSummary(cv) {
  const s = cv.summary;
  const box = document.getElementById("summary");
  box.dataset.partitions = s.partitions;
  box.dataset.underReplicated = s.underReplicated;
  box.dataset.underMinIsr = s.underMinIsr;
  box.dataset.offline = s.offline;
  box.dataset.leaderNotPreferred = s.leaderNotPreferred;
  const count = (n, what, cls) => el("span", { class: "count" + (n > 0 && cls ? " " + cls : "") }, el("b", {}, n.toLocaleString("en")), " " + what);
  document.getElementById("counts").replaceChildren(
    count(s.partitions, `${plural(s.partitions, "partition")} in ${s.topics} ${plural(s.topics, "topic")} (${s.internalTopics} internal)`),
    count(s.underReplicated, "under-replicated", "bad"),
    count(s.underMinIsr, "under min ISR", "bad"),
    count(s.offline, "offline", "bad"),
    count(s.leaderNotPreferred, "leader not preferred", "warn"));
  document.getElementById("fetchlag").replaceChildren(
    el("tr", {}, el("th", {}, "fetcher lag"), ...cv.brokers.map((b) => el("th", {}, `broker ${b.id}`))),
    el("tr", {}, el("td", { class: "muted" }, "partitions fetched"), ...cv.brokers.map((b) => el("td", {}, b.reachable ? b.fetchPartitions.toLocaleString("en") : "?"))),
    el("tr", {}, el("td", { class: "muted" }, "lag: sum (max), offsets"), ...cv.brokers.map((b) => el("td", {
      class: b.fetchLag > 0 ? "bad" : "", "data-fetch-lag-broker": b.id, "data-fetch-lag": b.reachable ? b.fetchLag : undefined,
    }, b.reachable ? `${b.fetchLag.toLocaleString("en")} (${b.fetchMaxLag.toLocaleString("en")})` : "unreachable"))));
}

// renderTopics: the topics matching the filter, the user's first, each as a line with its strip
// and the cards of its unhealthy (and opened) partitions.
function renderTopics(cv, lagMax) {
  const byTopic = new Map();
  for (const p of cv.partitions) {
    if (!byTopic.has(p.topic)) byTopic.set(p.topic, []);
    byTopic.get(p.topic).push(p);
  }
  const names = [...byTopic.keys()].sort((a, b) => (isInternal(a) - isInternal(b)) || (a < b ? -1 : a > b ? 1 : 0));
  const filter = document.getElementById("filter").value.trim().toLowerCase();
  const shown = names.filter((t) => t.toLowerCase().includes(filter));
  document.getElementById("shown").textContent = filter ? `${shown.length} of ${names.length} topics` : "";
  const out = shown.map((t) => renderTopic(t, byTopic.get(t), lagMax));
  if (cv.partitions.length === 0) out.push(el("div", { class: "muted" }, "no partitions"));
  else if (shown.length === 0) out.push(el("div", { class: "muted" }, `no topic matches "${filter}"`));
  document.getElementById("partitions").replaceChildren(...out);
}

function renderTopic(topic, parts, lagMax) {
  const internal = isInternal(topic);
  const isFolded = folded.has(topic) ? folded.get(topic) : internal;
  const unhealthy = parts.filter((p) => p.problems.length > 0);
  const head = el("div", { class: "thead", "data-fold": topic, title: isFolded ? "click to open" : "click to fold" },
    el("span", { class: "caret" }, isFolded ? "▸" : "▾"),
    el("b", {}, topic),
    internal ? el("span", { class: "tag internal" }, "internal") : "",
    el("span", { class: "muted" }, `${parts.length} ${plural(parts.length, "partition")}`),
    el("span", { class: unhealthy.length ? "bad" : "ok" }, unhealthy.length ? `${unhealthy.length} unhealthy` : "all healthy"),
    el("span", { class: "muted" }, `${parts.length - unhealthy.length} healthy`));
  const attrs = { class: "topic", "data-topic": topic, "data-internal": internal, "data-folded": isFolded, "data-partitions": parts.length, "data-unhealthy": unhealthy.length };
  if (isFolded) return el("div", attrs, head);
  const strip = el("div", { class: "strip" }, parts.map((p) => el("span", {
    class: "pcell" + (p.problems.length ? (p.problems.every((x) => x === "leaderNotPreferred") ? " bad warn" : " bad") : "") +
      (opened.has(pname(p)) ? " opened" : ""),
    "data-cell": pname(p), "data-topic": p.topic, "data-partition-id": p.partition, "data-leader": p.leader,
    "data-leader-epoch": p.leaderEpoch, "data-hw": p.highWatermark, "data-replicas": csv(p.replicas), "data-isr": csv(p.isr),
    "data-osr": csv(p.osr), "data-leader-reachable": p.leaderReachable, "data-problems": csv(p.problems),
    title: `${pname(p)} · leader ${p.leader} · ISR ${set(p.isr)}` + (p.problems.length ? " · " + p.problems.map((x) => PROBLEM_TEXT[x] || x).join(", ") : ""),
  })));
  const cards = parts.filter((p) => p.problems.length > 0 || opened.has(pname(p))).map((p) => renderPartition(p, lagMax));
  return el("div", attrs, head, strip, cards);
}

function renderBroker(b, cv) {
  const head = el("div", { class: "bhead" },
    el("b", {}, `broker ${b.id}`),
    b.id === cv.controller.id ? el("span", { class: "ctl" }, "controller") : "",
    el("span", { class: "muted" }, b.pageAddress || ""),
    b.reachable ? el("span", {}, `${b.leaders} led · ${b.followers} followed`) : el("span", { class: "err" }, "unreachable"),
    b.error ? el("span", { class: "err", title: b.error }, b.error.length > 80 ? b.error.slice(0, 80) + "…" : b.error) : "");
  let body;
  if (!b.reachable) {
    body = el("div", { class: "muted" }, "no state: the broker did not answer");
  } else if (b.fetchers.length === 0) {
    body = el("div", { class: "muted" }, "no replica fetcher threads (follows nothing)");
  } else {
    body = el("table", { class: "fetchers" },
      el("tr", {}, el("th", {}, "fetcher thread"), el("th", {}, "leader"), el("th", {}, "partitions (fetch offset, state, lag)")),
      b.fetchers.map((f) => el("tr", { "data-fetcher": f.name, "data-fetcher-id": f.fetcherId, "data-leader": f.leader },
        el("td", {}, f.name),
        el("td", {}, `broker ${f.leader}`),
        el("td", { class: "parts" },
          el("div", { class: "muted" }, `${f.partitionCount} ${plural(f.partitionCount, "partition")} · lag ${f.lag}` + (f.maxLag ? ` (max ${f.maxLag})` : "")),
          f.partitions.map((fp) => el("div", { "data-fetch-partition": `${fp.topic}-${fp.partition}` },
            `${fp.topic}-${fp.partition} @${fp.fetchOffset} ${fp.state}${fp.delayed ? " (delayed)" : ""} lag ${fp.lag}`)),
          f.partitionCount > f.partitions.length ? el("div", { class: "muted" }, `${f.partitionCount - f.partitions.length} more` +
            (f.partitions.length ? "" : ", all caught up")) : ""))));
  }
  return el("div", { class: "broker", "data-broker": b.id, "data-reachable": b.reachable, "data-registered": b.registered }, head, body);
}

function eventText(e) {
  const tp = e.topic ? `${e.topic}-${e.partition}` : "";
  switch (e.kind) {
    case "IsrShrink": return `${tp}: ISR shrink, removed ${set(e.changed)} → ISR ${set(e.isr)} (leader epoch ${e.leaderEpoch || 0}, HW ${e.highWatermark || 0})`;
    case "IsrExpand": return `${tp}: ISR expand, added ${set(e.changed)} → ISR ${set(e.isr)} (leader epoch ${e.leaderEpoch || 0}, HW ${e.highWatermark || 0})`;
    case "BecomeLeader": return `${tp}: became leader at leader epoch ${e.leaderEpoch || 0} (ISR ${set(e.isr)}, LEO ${e.toOffset || 0}, HW ${e.highWatermark || 0})`;
    case "BecomeFollower": return `${tp}: became follower of broker ${e.leader} at leader epoch ${e.leaderEpoch || 0} (LEO ${e.toOffset || 0}, HW ${e.highWatermark || 0})`;
    case "Truncate": return `${tp}: truncated log from ${e.fromOffset || 0} to ${e.toOffset || 0} (leader ${e.leader}, epoch ${e.leaderEpoch || 0})`;
    case "TruncateFully": return `${tp}: emptied log (LEO ${e.fromOffset || 0}), restarting at ${e.toOffset || 0}`;
    case "ControllerElected": return `elected controller, controller epoch ${e.controllerEpoch || 0}`;
    case "ControllerResigned": return `no longer the controller (controller epoch ${e.controllerEpoch || 0})`;
    default: return `${e.kind} ${tp}`;
  }
}

function renderEvents(cv) {
  for (const e of cv.events) seenEvents.set(`${e.broker}/${e.timeMs}/${e.seq}/${e.kind}`, e);
  const all = [...seenEvents.values()].sort((a, b) => b.timeMs - a.timeMs || a.broker - b.broker || b.seq - a.seq);
  for (const e of all.slice(MAX_EVENTS)) seenEvents.delete(`${e.broker}/${e.timeMs}/${e.seq}/${e.kind}`);
  const ol = document.getElementById("events");
  ol.replaceChildren(...all.slice(0, MAX_EVENTS).map((e) => el("li", {
    "data-kind": e.kind, "data-broker": e.broker, "data-topic": e.topic, "data-partition": e.topic ? `${e.topic}-${e.partition}` : undefined,
    "data-leader-epoch": e.leaderEpoch, "data-changed": csv(e.changed),
  }, el("span", { class: "t" }, fmtTime(e.timeMs)), el("span", { class: "b" }, `broker ${e.broker}`), eventText(e))));
  if (all.length === 0) ol.replaceChildren(el("li", { class: "muted" }, "no events yet"));
}

function render(cv) {
  lastView = cv;
  renderHeader(cv);
  renderSummary(cv);
  renderTopics(cv, cv.replicaLagTimeMaxMs || 10000);
  document.getElementById("brokers").replaceChildren(...cv.brokers.map((b) => renderBroker(b, cv)));
  renderEvents(cv);
  document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
}

async function poll() {
  try {
    const open = opened.size ? "&open=" + encodeURIComponent([...opened].join(",")) : "";
    const resp = await fetch("/replication/cluster.json?brief=1" + open, { cache: "no-store" });
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
    render(normalize(await resp.json()));
  } catch (err) {
    const s = document.getElementById("status");
    s.dataset.ok = "false";
    s.textContent = `cannot read cluster.json: ${err.message}`;
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

// A click on a topic's name folds or opens it; on a strip cell opens (or closes) that
// partition's card; on a healthy card's × closes it. The filter redraws as it is typed.
function redraw() {
  if (lastView) renderTopics(lastView, lastView.replicaLagTimeMaxMs || 10000);
}
document.getElementById("partitions").addEventListener("click", (ev) => {
  const fold = ev.target.closest("[data-fold]");
  const cell = ev.target.closest("[data-cell]");
  const close = ev.target.closest("[data-close]");
  if (fold) {
    const t = fold.dataset.fold;
    folded.set(t, !(folded.has(t) ? folded.get(t) : isInternal(t)));
  } else if (cell && cell.dataset.problems) {
    const card = document.querySelector(`.partition[data-partition="${CSS.escape(cell.dataset.cell)}"]`);
    if (card) card.scrollIntoView({ block: "center" });
    return;
  } else if (cell) {
    const name = cell.dataset.cell;
    if (opened.has(name)) opened.delete(name);
    else opened.add(name);
  } else if (close) {
    opened.delete(close.dataset.close);
  } else {
    return;
  }
  redraw();
});
document.getElementById("filter").addEventListener("input", redraw);

poll();
