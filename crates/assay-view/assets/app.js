// assay view: the runs list, a run's samples, one sample or PyBench episode, and two runs
// side by side. Everything shown comes from the JSON API; text from runs (code, tracebacks,
// model replies) is hostile and only ever enters the page as text nodes: no innerHTML here.
"use strict";

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
const live = document.getElementById("live");
const PAGE = 100;
const POLL_MS = 3000;
let poll = null; // the timer that follows a run in progress
let route = 0; // bumped on every navigation: answers to an older view are dropped

/** An element: `attrs` are properties (`class`, `href`, `onclick`...), children are nodes
 * or strings (made text nodes), null and false are skipped. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node[key] = value;
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces `node`'s children (null and false are skipped, strings made text). */
function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

function show(...children) {
  fill(main, ...children);
}

async function api(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function failure(error) {
  return el("p", { class: "error-box" }, String(error.message || error));
}

/** Terminal colour codes (NLTK's and pytest's messages carry them) left out of shown text. */
const plain = (text) => String(text ?? "").replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
const secs = (s) => (s === null || s === undefined ? "–" : s < 10 ? s.toFixed(2) + " s" : s.toFixed(1) + " s");
const mib = (b) => (b === null || b === undefined ? "–" : (b / 1048576).toFixed(1) + " MiB");
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
const badge = (text, kind) => el("span", { class: "badge " + (kind || text) }, text);
/** Tokens in and out, those spent thinking apart where the provider said how many. */
const tokensText = (t) => `${t.prompt_tokens} in, ${t.completion_tokens} out` +
  (t.reasoning_tokens ? ` (of which ${t.reasoning_tokens} reasoning)` : "");
const STATUSES = ["pass", "fail", "error", "timeout", "oom", "infra"];

function statusBar(statuses) {
  const total = Object.values(statuses).reduce((a, b) => a + b, 0) || 1;
  const bar = el("div", { class: "bar", title: Object.entries(statuses).map(([k, v]) => `${k} ${v}`).join(", ") });
  for (const status of STATUSES) {
    if (!statuses[status]) continue;
    const part = el("span", { class: status });
    part.style.width = (100 * statuses[status]) / total + "%";
    bar.append(part);
  }
  return bar;
}

function interval(estimate) {
  if (!estimate) return "–";
  return `${pct(estimate.value)} [${pct(estimate.low)}, ${pct(estimate.high)}]`;
}

function setCrumbs(...parts) {
  crumbs.replaceChildren();
  parts.forEach((part, i) => {
    if (i) crumbs.append(" / ");
    crumbs.append(typeof part === "string" ? part : el("a", { href: part[1] }, part[0]));
  });
}

/** Calls `refresh` every few seconds while `running()` says the run is still being written. */
function follow(running, refresh) {
  clearInterval(poll);
  live.textContent = running() ? "● following a run in progress" : "";
  if (!running()) return;
  const mine = route;
  poll = setInterval(async () => {
    if (mine !== route) return clearInterval(poll);
    await refresh();
    if (!running()) {
      clearInterval(poll);
      live.textContent = "";
    }
  }, POLL_MS);
}

// ---------------------------------------------------------------- the runs list

let runsCache = [];

async function runsView() {
  setCrumbs("runs");
  const mine = route;
  const table = el("tbody");
  const pick = el("div", { class: "pick" });
  const draw = (runs) => {
    runsCache = runs;
    table.replaceChildren(...runs.map(runRow));
    drawPick(pick, runs);
  };
  show(el("h1", {}, "Runs"), el("table", { class: "runs" },
    el("thead", {}, el("tr", {}, ...["run", "benchmark", "split", "model", "state", "judged",
      "pass@1 [95% CI]", "statuses"].map((h) => el("th", { class: h === "judged" ? "num" : "" }, h)))),
    table), el("h2", {}, "Compare two runs"), pick);
  try {
    draw(await api("/api/runs"));
  } catch (e) {
    return show(failure(e));
  }
  follow(() => mine === route && runsCache.some((r) => r.state === "running"), async () => {
    try { draw(await api("/api/runs")); } catch (e) { /* the next poll tries again */ }
  });
}

function runRow(run) {
  const figures = run.figures;
  return el("tr", { class: "click", onclick: () => (location.hash = `#/run/${run.id}`) },
    el("td", {}, el("a", { href: `#/run/${run.id}` }, run.label),
      run.error ? el("div", { class: "error-box" }, run.error) : null),
    el("td", {}, run.benchmark), el("td", {}, run.split || "–"), el("td", {}, run.model || "–"),
    el("td", {}, badge(run.state)),
    el("td", { class: "num" }, judgedText(run)),
    el("td", { class: "num" }, figures ? interval(figures.pass_at_k["1"]) : "–"),
    el("td", {}, statusBar(run.statuses)));
}

/**
 * A run's "judged" as the terminal's summary says it: tasks judged of the tasks with a sample,
 * and those set apart (`infra` only: they could not run here, so no verdict), then the samples
 * read of those to come while some are still to come. A count of samples read would call an
 * `infra` sample judged.
 */
function judgedText(run) {
  const f = run.figures;
  const coming = run.expected && run.judged < run.expected ? `${run.judged} / ${run.expected} samples` : null;
  if (!f) return coming || String(run.judged);
  const tasks = `${f.judged} / ${plural(f.tasks, "task", "tasks")}` +
    (f.infra_tasks ? `, ${f.infra_tasks} set apart` : "");
  return coming ? `${tasks} (${coming})` : tasks;
}

function drawPick(pick, runs) {
  if (pick.childElementCount) return; // keep the user's choice while the list refreshes
  const select = (name, chosen) => el("select", { name },
    ...runs.map((r) => el("option", { value: r.id, selected: r.id === chosen }, `${r.id}: ${r.label}`)));
  const base = select("base", 0);
  const other = select("run", Math.min(1, runs.length - 1));
  pick.append("baseline", base, "against", other,
    el("button", { onclick: () => (location.hash = `#/diff/${base.value}/${other.value}`) }, "Compare"));
}

// ---------------------------------------------------------------- a run's samples

async function runView(id, params) {
  const mine = route;
  let summary;
  try {
    summary = (await api("/api/runs")).find((r) => r.id === id);
  } catch (e) {
    return show(failure(e));
  }
  if (!summary) return show(failure(new Error(`no run ${id}`)));
  setCrumbs(["runs", "#/"], summary.label);
  const pybench = summary.benchmark === "pybench";
  const filter = {
    status: params.get("status") || "",
    task: params.get("task") || "",
    group: params.get("group") || "",
    q: params.get("q") || "",
    sort: params.get("sort") || "index",
    offset: Number(params.get("offset") || 0),
  };
  const head = el("div");
  const statusSelect = el("select", { name: "status" });
  const groupSelect = el("select", { name: "group" });
  const taskInput = el("input", { type: "search", name: "task", value: filter.task, placeholder: pybench ? "13 or PyBench/13" : "13 or BigCodeBench/13" });
  const textInput = el("input", { type: "search", name: "q", value: filter.q, placeholder: "e.g. AssertionError" });
  const sortSelect = el("select", { name: "sort" },
    ...[["index", "sample order"], ["task", "task"], ["slowest", "slowest first"]].map(([v, t]) =>
      el("option", { value: v, selected: v === filter.sort }, t)));
  const count = el("span", { class: "muted" });
  const body = el("tbody");
  const pager = el("div", { class: "pager" });
  const columns = pybench
    ? ["task", "status", "category", "turns", "reason", "time"]
    : ["sample", "task", "status", "failing test", "reason", "time", "memory"];
  show(head,
    el("div", { class: "filters" },
      el("label", {}, "status", statusSelect),
      el("label", {}, "task", taskInput),
      el("label", {}, pybench ? "category" : "library", groupSelect),
      el("label", {}, "error text", textInput),
      el("label", {}, "order", sortSelect),
      count),
    el("table", { class: "samples" },
      el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", { class: ["time", "memory", "turns", "sample"].includes(c) ? "num" : "" }, c)))),
      body),
    pager);

  const drawHead = (s) => {
    const f = s.figures;
    fill(head, 
      el("h1", {}, s.label, " ", badge(s.state)),
      el("div", { class: "facts" },
        el("span", {}, "benchmark ", el("b", {}, s.benchmark)),
        s.split ? el("span", {}, "split ", el("b", {}, s.split)) : null,
        el("span", {}, "model ", el("b", {}, s.model || "–")),
        el("span", {}, "kind ", el("b", {}, s.kind)),
        el("span", {}, "samples read ", el("b", {}, s.expected ? `${s.judged} of ${s.expected}` : String(s.judged))),
        f && f.wall_seconds ? el("span", {}, "wall ", el("b", {}, secs(f.wall_seconds))) : null,
        f && f.tokens ? el("span", {}, "tokens ", el("b", {}, tokensText(f.tokens))) : null,
        f && f.gamed ? el("span", {}, "gamed their tests ",
          el("b", {}, `${plural(f.gamed.samples, "sample", "samples")} (${Object.entries(f.gamed.by_kind).map(([k, n]) => `${k} ${n}`).join(", ")})`)) : null,
        f && (f.thinking || f.cut_while_thinking) ? el("span", {}, "thinking ", el("b", {}, [
          f.thinking ? `${plural(f.thinking, "answer", "answers")} came with it` : null,
          f.cut_while_thinking ? `${pybench ? plural(f.cut_while_thinking, "episode", "episodes")
            : plural(f.cut_while_thinking, "answer", "answers")} cut off inside it` : null,
        ].filter(Boolean).join(", "))) : null),
      s.error ? el("p", { class: "error-box" }, s.error) : null,
      f ? el("div", { class: "figures" },
        ...Object.entries(f.pass_at_k).map(([k, e]) => el("div", { class: "figure" },
          el("div", { class: "value" }, pct(e.value)),
          el("div", { class: "label" }, `pass@${k}, 95% CI ${pct(e.low)} – ${pct(e.high)}`))),
        el("div", { class: "figure" }, el("div", { class: "value" }, `${f.judged} / ${f.tasks}`),
          el("div", { class: "label" }, `tasks judged (${f.infra_tasks} set apart)`))) : null,
      f ? judgeFigures(id, f.judges) : null);
  };
  drawHead(summary);

  const url = () => {
    const q = new URLSearchParams();
    for (const [key, value] of Object.entries(filter)) if (value && !(key === "sort" && value === "index")) q.set(key, value);
    return q.toString();
  };
  let latest = 0; // answers to a load that a newer one replaced are dropped
  const load = async () => {
    const asked = ++latest;
    const q = new URLSearchParams(url());
    q.set("offset", filter.offset);
    q.set("limit", PAGE);
    let page;
    try {
      page = await api(`/api/runs/${id}/samples?${q}`);
    } catch (e) {
      body.replaceChildren(el("tr", {}, el("td", { colSpan: columns.length }, failure(e))));
      return;
    }
    if (mine !== route || asked !== latest) return;
    // "gamed" is offered when a sample gamed its tests (or the address asks for it).
    const gamed = page.gamed || filter.status === "gamed" ? ["gamed"] : [];
    fillSelect(statusSelect, ["", "failing", ...Object.keys(page.statuses), ...gamed], filter.status,
      (v) => (v === "" ? `all (${page.total})` : v === "failing" ? "every failing"
        : v === "gamed" ? `gamed its tests (${page.gamed})` : `${v} (${page.statuses[v]})`));
    fillSelect(groupSelect, ["", ...page.groups], filter.group, (v) => (v === "" ? "all" : v));
    count.textContent = `${page.matched} of ${page.total} samples`;
    body.replaceChildren(...page.rows.map((row) => sampleRow(id, row, pybench, url())));
    if (!page.rows.length) body.append(el("tr", {}, el("td", { colSpan: columns.length, class: "muted" }, "No sample matches.")));
    fill(pager, 
      el("button", { disabled: filter.offset === 0, onclick: () => turn(-PAGE) }, "← previous"),
      el("span", { class: "muted" }, page.matched ? `${filter.offset + 1}–${Math.min(filter.offset + PAGE, page.matched)} of ${page.matched}` : ""),
      el("button", { disabled: filter.offset + PAGE >= page.matched, onclick: () => turn(PAGE) }, "next →"));
  };
  const turn = (by) => {
    filter.offset = Math.max(0, filter.offset + by);
    changed(false);
  };
  // A filter change redraws the table only (the inputs keep focus) and records itself in the
  // address, so that a view can be shared and the back button returns to it.
  const changed = (resetOffset = true) => {
    if (resetOffset) filter.offset = 0;
    history.replaceState(null, "", `#/run/${id}${url() ? "?" + url() : ""}`);
    load();
  };
  // Each field waits for a pause in its own typing (one shared timer would drop a change).
  const typed = (key, input) => {
    let typing = null;
    input.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { filter[key] = input.value; changed(); }, 200);
    });
  };
  typed("task", taskInput);
  typed("q", textInput);
  for (const [key, select] of [["status", statusSelect], ["group", groupSelect], ["sort", sortSelect]]) {
    select.addEventListener("change", () => { filter[key] = select.value; changed(); });
  }
  await load();
  follow(() => mine === route && summary.state === "running", async () => {
    try {
      summary = (await api("/api/runs")).find((r) => r.id === id) || summary;
      drawHead(summary);
      await load();
    } catch (e) { /* the next poll tries again */ }
  });
}

/** The mark of a sample that gamed its tests, naming the kinds of what it did. */
function gamedBadge(kinds) {
  return el("span", { class: "badge gamed", title: `gamed its tests: ${kinds.join(", ")}` }, "gamed");
}

function fillSelect(select, values, chosen, label) {
  select.replaceChildren(...values.map((v) => el("option", { value: v, selected: v === chosen }, label(v))));
}

function sampleRow(id, row, pybench, query) {
  const href = `#/run/${id}/sample/${row.index}${query ? "?" + query : ""}`;
  const open = () => (location.hash = href);
  if (pybench) {
    return el("tr", { class: "click", onclick: open },
      el("td", {}, el("a", { href }, row.task_id)), el("td", {}, badge(row.status)),
      el("td", {}, row.groups.join(", ")), el("td", { class: "num" }, row.turns ?? "–"),
      el("td", { class: "reason", title: row.reason }, row.reason), el("td", { class: "num" }, secs(row.seconds)));
  }
  return el("tr", { class: "click", onclick: open },
    el("td", { class: "num" }, el("a", { href }, String(row.index))), el("td", {}, row.task_id),
    el("td", {}, badge(row.status), row.gamed ? [" ", gamedBadge(row.gamed)] : null), el("td", {}, row.test || ""),
    el("td", { class: "reason", title: row.reason }, row.reason),
    el("td", { class: "num" }, secs(row.seconds)), el("td", { class: "num" }, mib(row.memory_bytes)));
}

// ---------------------------------------------------------------- one sample

async function sampleView(id, index, params) {
  let detail, summary;
  try {
    [detail, summary] = await Promise.all([api(`/api/runs/${id}/samples/${index}`), api("/api/runs")]);
  } catch (e) {
    return show(failure(e));
  }
  summary = summary.find((r) => r.id === id);
  const back = `#/run/${id}${params.toString() ? "?" + params : ""}`;
  setCrumbs(["runs", "#/"], [summary ? summary.label : `run ${id}`, back], detail.row.task_id);
  if (detail.benchmark === "pybench") return episodeView(id, detail);
  const row = detail.row;
  const record = detail.record || {};
  const tests = record.tests || detail.tests || [];
  const failing = tests.filter((t) => !["pass", "skip", "xfail"].includes(t.result));
  // Only a pass is a pass: a skip or an expected failure is counted apart, by result.
  const others = {};
  for (const t of tests) if (t.result !== "pass") others[t.result] = (others[t.result] || 0) + 1;
  const passed = tests.length - Object.values(others).reduce((a, b) => a + b, 0);
  const otherText = Object.entries(others).map(([r, n]) => `${r} ${n}`).join(", ");
  show(
    el("h1", {}, `${row.task_id} · sample ${row.index} `, badge(row.status), row.gamed ? [" ", gamedBadge(row.gamed)] : null),
    el("p", {}, row.reason),
    el("div", { class: "facts" },
      el("span", {}, "time ", el("b", {}, secs(row.seconds))),
      record.cpu_seconds !== undefined ? el("span", {}, "CPU ", el("b", {}, secs(record.cpu_seconds))) : null,
      el("span", {}, "memory ", el("b", {}, mib(row.memory_bytes))),
      record.processes_peak ? el("span", {}, "processes ", el("b", {}, String(record.processes_peak))) : null,
      record.isolation ? el("span", {}, "isolation ", el("b", {}, record.isolation)) : null,
      record.infra ? el("span", {}, "set apart: ", el("b", {}, `${record.infra.cause}: ${record.infra.detail}`)) : null,
      row.groups.length ? el("span", {}, "libraries ", el("b", {}, row.groups.join(", "))) : null),
    integrityBlock(record.integrity),
    el("h2", {}, `Tests (${passed} of ${tests.length} passed${otherText ? "; " + otherText : ""})`),
    tests.length ? el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "test"), el("th", {}, "result"), el("th", { class: "num" }, "time"))),
      el("tbody", {}, ...tests.map((t) => el("tr", {}, el("td", {}, t.name), el("td", {}, badge(t.result, t.result === "pass" ? "pass" : ["skip", "xfail"].includes(t.result) ? "infra" : "fail")),
        el("td", { class: "num" }, t.seconds === undefined ? "–" : secs(t.seconds)))))) : el("p", { class: "muted" }, "No test reported."),
    ...failing.filter((t) => t.detail).map((t) => el("div", {}, el("h2", {}, `Traceback: ${t.name}`), el("pre", { class: "trace" }, plain(t.detail)))),
    el("div", { class: "grid2" },
      el("div", {}, el("h2", {}, "Code that ran (sanitized)"), el("pre", { class: "code" }, detail.code ||
        (detail.thinking && detail.thinking.cut ? "(none: the answer ended inside its thinking)" : "(none kept)"))),
      el("div", {}, el("h2", {}, "Test"), el("pre", {}, detail.test_code || "(the task is not in the embedded dataset)"))),
    thinkingBlock(detail.thinking),
    detail.raw ? el("details", {}, el("summary", {}, "The model's raw answer"), el("pre", {}, detail.raw)) : null,
    detail.prompt ? el("details", {}, el("summary", {}, "Prompt"), el("pre", {}, detail.prompt)) : null,
    captured("Standard output", record.stdout),
    captured("Standard error", record.stderr));
}

/** What a sample did to its tests instead of passing them (its record's `integrity`): each
 * finding with its kind and test. */
function integrityBlock(findings) {
  if (!findings || !findings.length) return null;
  return el("div", { class: "integrity" },
    el("h2", {}, `Gamed its tests (${plural(findings.length, "finding", "findings")})`),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "kind"), el("th", {}, "test"), el("th", {}, "what"))),
      el("tbody", {}, ...findings.map((f) => el("tr", {}, el("td", {}, badge(f.kind, "gamed")),
        el("td", {}, f.test || "(outside any test)"), el("td", {}, f.what))))));
}

/** What a model thought before an answer or reply, `{text, cut, redacted, source}`: text in a
 * block of its own, closed until asked for (it can be long, and it is not what was judged),
 * saying where it came from when known, whether the answer was cut off inside it, and how many
 * blocks the provider returned encrypted. */
function thinkingBlock(thinking) {
  if (!thinking) return null;
  const where = { field: " (returned beside the answer)", text: " (set apart from the answer's text)" }[thinking.source] || "";
  const notes = [
    thinking.cut ? "cut off inside its thinking" : null,
    thinking.redacted ? `${plural(thinking.redacted, "block", "blocks")} returned encrypted` : null,
  ].filter(Boolean);
  return el("details", { class: "thinking" + (thinking.cut ? " cut" : "") },
    el("summary", {}, "Thinking" + where, notes.length ? el("span", { class: "muted" }, " · " + notes.join(" · ")) : null),
    el("pre", {}, thinking.text || "(no text)"));
}

function captured(title, stream) {
  if (!stream || !stream.total_bytes) return null;
  const note = stream.truncated ? ` (first ${stream.text.length} of ${stream.total_bytes} bytes)` : "";
  return el("details", { open: true }, el("summary", {}, title + note), el("pre", {}, plain(stream.text)));
}

// ---------------------------------------------------------------- a PyBench episode

function episodeView(id, detail) {
  const record = detail.record || {};
  const files = (path) => `/api/runs/${id}/files/${path.split("/").map(encodeURIComponent).join("/")}`;
  const verdicts = record.verdicts || {};
  const firstError = detail.steps.find((s) => s.cell && s.cell.status !== "pass");
  const steps = detail.steps.map((step) => {
    const bad = step.cell && step.cell.status !== "pass";
    return el("section", { class: "turn" + (bad ? " bad" : ""), id: `turn-${step.turn}` },
      el("h3", {}, `Turn ${step.turn}`, step.cell ? badge(step.cell.status)
        : el("span", { class: "muted" }, step.thinking && step.thinking.cut ? "no code: cut off inside its thinking" : "no code: the answer"),
        step.cell ? el("span", { class: "muted" }, `${step.cell.reason} · ${secs(step.cell.seconds)}${step.cell.restarted ? " · interpreter restarted" : ""}`) : null),
      thinkingBlock(step.thinking),
      ...(step.message || !step.thinking ? message(step.message) : []),
      step.observation !== null ? el("details", { open: true }, el("summary", {}, "What the interpreter said"), el("pre", { class: bad ? "trace" : "" }, plain(step.observation))) : null,
      step.cell && step.cell.figures.length ? el("div", { class: "shots" }, ...step.cell.figures.map((f) => el("img", { src: files(f), alt: f, loading: "lazy" }))) : null);
  });
  show(
    el("h1", {}, `${detail.row.task_id} `, badge(detail.row.status)),
    el("p", {}, detail.row.reason),
    // Why the episode ended, in the words it ended with (the server's, for a full context
    // window or a model that failed); set off where no code of the model's ended it.
    record.end_reason ? el("p", { class: "ended" + (["context_full", "cut_while_thinking"].includes(record.end) ? " full" : "") },
      "Ended: ", el("q", {}, record.end_reason)) : null,
    el("div", { class: "facts" },
      el("span", {}, "category ", el("b", {}, detail.row.groups.join(", ") || "–")),
      el("span", {}, "turns ", el("b", {}, String(record.turns ?? "–"))),
      el("span", {}, "ended ", el("b", {}, record.end || "–")),
      el("span", {}, "time ", el("b", {}, secs(record.seconds))),
      record.tokens ? el("span", {}, "tokens ", el("b", {}, tokensText(record.tokens))) : null,
      verdicts.faithful ? el("span", {}, "faithful check ", badge(verdicts.faithful.status)) : null,
      verdicts.fixed ? el("span", {}, "fixed check ", badge(verdicts.fixed.status)) : null),
    judgeVerdicts(detail.judgements),
    firstError ? el("button", { class: "jump", onclick: () => {
      const target = document.getElementById(`turn-${firstError.turn}`);
      target.scrollIntoView({ block: "start" });
      target.classList.add("flash");
      setTimeout(() => target.classList.remove("flash"), 1500);
    } }, `Jump to the first error (turn ${firstError.turn})`) : el("p", { class: "muted" }, "No cell raised an error."),
    ...detail.preamble.map((m) => m.role === "system"
      ? el("details", {}, el("summary", {}, "System prompt"), el("pre", {}, m.content))
      : el("div", { class: "turn" }, el("h3", {}, m.role), el("div", { class: "message" }, m.content))),
    ...steps,
    el("h2", {}, `Files written (${detail.outputs.length})`),
    detail.outputs.length ? el("div", { class: "shots" }, ...detail.outputs.map((path) => /\.(png|jpe?g|gif|webp)$/i.test(path)
      ? el("a", { href: files(path) }, el("img", { src: files(path), alt: path, loading: "lazy" }))
      : el("a", { href: files(path) }, path.split("/").slice(3).join("/")))) : el("p", { class: "muted" }, "None."));
}

/** A reply: its prose as text, and the block that ran (the first ```python one) as code. */
function message(text) {
  const match = /```python\n([\s\S]*?)```/.exec(text);
  if (!match) return [el("div", { class: "message" }, text)];
  const before = text.slice(0, match.index).trim();
  const after = text.slice(match.index + match[0].length).trim();
  return [before ? el("div", { class: "message" }, before) : null, el("pre", { class: "code" }, match[1]),
    after ? el("div", { class: "message" }, after) : null];
}

// ---------------------------------------------------------------- two runs

async function diffView(base, other, params) {
  let diff;
  try {
    diff = await api(`/api/diff?base=${base}&run=${other}`);
  } catch (e) {
    return show(failure(e));
  }
  setCrumbs(["runs", "#/"], "diff");
  const c = diff.comparison;
  let show_ = params.get("show") || "changed";
  const body = el("tbody");
  const changes = ["changed", "won", "lost", "both pass", "both fail", "only in base", "only in run", "all"];
  const choose = el("select", { name: "show" }, ...changes.map((v) => el("option", { value: v, selected: v === show_ }, v)));
  const count = el("span", { class: "muted" });
  const cell = (result) => (result && result.samples ? `${result.passed} / ${result.samples}` : "–");
  const draw = () => {
    const rows = diff.tasks.filter((t) => show_ === "all" || t.change === show_ ||
      (show_ === "changed" && (t.change === "won" || t.change === "lost")));
    count.textContent = `${rows.length} tasks`;
    body.replaceChildren(...rows.map((t) => el("tr", {},
      el("td", {}, t.task_id),
      el("td", { class: "num" }, t.base_index !== null ? el("a", { href: `#/run/${base}/sample/${t.base_index}` }, cell(t.base)) : cell(t.base)),
      el("td", { class: "num" }, t.run_index !== null ? el("a", { href: `#/run/${other}/sample/${t.run_index}` }, cell(t.run)) : cell(t.run)),
      el("td", {}, badge(t.change, t.change === "won" || t.change === "lost" ? t.change : "infra")))));
  };
  choose.addEventListener("change", () => {
    show_ = choose.value;
    history.replaceState(null, "", `#/diff/${base}/${other}?show=${encodeURIComponent(show_)}`);
    draw();
  });
  const fig = (run) => (run ? interval(run.pass_at_k["1"]) : "–");
  show(
    el("h1", {}, `${diff.run ? diff.run.label : other} against ${diff.base ? diff.base.label : base}`),
    el("div", { class: "figures" },
      el("div", { class: "figure" }, el("div", { class: "value" }, fig(diff.base)), el("div", { class: "label" }, "baseline pass@1 [95% CI]")),
      el("div", { class: "figure" }, el("div", { class: "value" }, fig(diff.run)), el("div", { class: "label" }, "run pass@1 [95% CI]")),
      c && c.difference ? el("div", { class: "figure" }, el("div", { class: "value" }, `${c.difference.value >= 0 ? "+" : ""}${pct(c.difference.value)}`),
        el("div", { class: "label" }, `difference on ${c.shared_tasks} shared tasks, 95% CI ${pct(c.difference.low)} – ${pct(c.difference.high)}`)) : null,
      c ? el("div", { class: "figure" }, el("div", { class: "value" }, `${c.won.length} won · ${c.lost.length} lost`),
        el("div", { class: "label" }, `McNemar exact ${c.mcnemar_p < 1e-4 ? "p < 0.0001" : "p = " + c.mcnemar_p.toFixed(4)}`)) : null),
    el("div", { class: "filters" }, el("label", {}, "show", choose), count),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "task"), el("th", { class: "num" }, "baseline passed"),
      el("th", { class: "num" }, "run passed"), el("th", {}, "change"))), body));
  draw();
}

// ---------------------------------------------------------------- routing

async function render() {
  route += 1;
  clearInterval(poll);
  live.textContent = "";
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "run" && parts.length === 2) return runView(Number(parts[1]), params);
  if (parts[0] === "run" && parts[2] === "sample") return sampleView(Number(parts[1]), Number(parts[3]), params);
  if (parts[0] === "diff" && parts.length === 3) return diffView(Number(parts[1]), Number(parts[2]), params);
  return runsView();
}

window.addEventListener("hashchange", render);
render();
