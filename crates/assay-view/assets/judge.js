// assay view: what an LLM judge said of a PyBench run (`assay judge pybench`). On the run's
// page, each judging's figures (the paper's, and the judge against the unit checks and against
// itself in the other order), with the tasks they single out linked to their episodes; on an
// episode's page, each judging's verdict on it, with the judge's reply. Loaded before app.js,
// whose helpers (`el`, `pct`, `badge`...) it uses when called. The reply is the judge's text:
// it only ever enters the page as text nodes, like everything else.
"use strict";

/** Lists of tasks longer than this start closed. */
const OPEN_LIST = 20;

const kappaText = (a) => (a.kappa === undefined || a.kappa === null ? "undefined" : a.kappa.toFixed(2));
const dollars = (usd) => (usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`);
const orderText = (f) => (f.both_orders ? "both orders" : "the paper's order");

/** A task's episode page: a PyBench row's key is its task's number. */
function episodeLink(id, task) {
  return el("a", { href: `#/run/${id}/sample/${encodeURIComponent(task.split("/").pop())}` }, task);
}

function figure(value, label) {
  return el("div", { class: "figure" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

/** Tasks under a title, each a link to its episode; open when short. */
function taskList(id, title, tasks) {
  if (!tasks || !tasks.length) return null;
  return el("details", { class: "judge-tasks", open: tasks.length <= OPEN_LIST },
    el("summary", {}, `${title} (${tasks.length})`),
    el("div", { class: "chips" }, ...tasks.map((t) => episodeLink(id, t))));
}

/** Tasks and why (unreadable replies, failed requests), closed: reasons can be long. */
function taskReasons(id, title, map) {
  const entries = Object.entries(map || {});
  if (!entries.length) return null;
  entries.sort(([a], [b]) => Number(a.split("/").pop()) - Number(b.split("/").pop()));
  return el("details", { class: "judge-tasks" }, el("summary", {}, `${title} (${entries.length})`),
    el("table", {}, el("tbody", {}, ...entries.map(([task, why]) =>
      el("tr", {}, el("td", {}, episodeLink(id, task)), el("td", {}, why))))));
}

/** The judge against the checks, 2 × 2. */
function confusion(a) {
  const row = (name, pass, fail) => el("tr", {}, el("td", { class: "rowhead" }, name), el("td", { class: "num" }, String(pass)), el("td", { class: "num" }, String(fail)));
  return el("table", { class: "confusion" },
    el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", { class: "num" }, `${a.checks} checks pass`), el("th", { class: "num" }, `${a.checks} checks fail`))),
    el("tbody", {}, row("judge pass", a.both_pass, a.judge_only), row("judge fail", a.checks_only, a.both_fail)));
}

function categoryTable(f) {
  const rows = Object.entries(f.categories || {});
  if (!rows.length) return null;
  return el("table", { class: "judge-categories" },
    el("thead", {}, el("tr", {}, el("th", {}, "category"), el("th", { class: "num" }, "passed"),
      el("th", { class: "num" }, "verdicts read"), el("th", { class: "num" }, "Pass Rate (LLM)"))),
    el("tbody", {}, ...rows.map(([c, x]) => el("tr", {}, el("td", {}, c), el("td", { class: "num" }, String(x.passed)),
      el("td", { class: "num" }, String(x.tasks)), el("td", { class: "num" }, pct(x.pass_rate))))));
}

function positionText(p) {
  return `Position: over ${p.pairs} pairs judged both ways, the preference changed with the order in ` +
    `${p.changed_tasks.length} (${pct(p.rate)} followed the position: ${p.follows_first} Agent1 both times, ` +
    `${p.follows_second} Agent2; ${p.other} a tie one way); the run's Pass changed in ` +
    `${p.pass_changed_tasks.length} (${p.pass_only_second} only as Agent2, ${p.pass_only_first} only as Agent1).`;
}

function paperText(paper) {
  const wtl = paper.win_tie_lose ? `, win/tie/lose ${paper.win_tie_lose.join("/")} against GPT-3.5` : "";
  return `The paper (${paper.model}): Pass Rate (LLM) ${pct(paper.pass_rate)}${wtl}, average turns ${paper.average_turns.toFixed(1)}.`;
}

/** One judging of the run, as its summary keeps it. */
function judging(id, f) {
  const s = f.settings, a = f.agreement, w = f.win_tie_lose, p = f.position;
  const unreadable = Object.keys(f.unreadable || {}).length, failed = Object.keys(f.failed || {}).length;
  const apart = Object.keys(f.set_apart || {}).length;
  return el("details", { class: "judging", open: true },
    el("summary", {}, `LLM judge ${s.judge} `, el("span", { class: "muted" },
      `${s.prompt} prompt · reference ${s.reference} · ${orderText(f)} · ${f.tasks} tasks, ${apart} set apart, ${f.read} verdicts read, ` +
      `${unreadable} unreadable, ${failed} not answered`)),
    el("div", { class: "figures" },
      figure(pct(f.pass_rate), `Pass Rate (LLM): ${f.passed} of ${f.read} verdicts read (${pct(f.pass_rate_all)} of all ${f.tasks}); the reference ${pct(f.reference_pass_rate)}`),
      figure(`${w.win} / ${w.tie} / ${w.lose}`, `win / tie / lose against the reference (by ${w.by})`),
      figure(f.average_turns.toFixed(1), `average turns as the paper counts them; ${f.average_turns_checks.toFixed(1)} by the ${a.checks} checks`),
      figure(kappaText(a), `Cohen's kappa against the ${a.checks} checks; agree ${pct(a.observed)} over ${a.tasks} tasks`),
      p ? figure(pct(p.rate), `followed the position, over ${p.pairs} pairs judged both ways`) : null),
    f.published ? el("p", { class: "paper" }, paperText(f.published)) : null,
    el("div", { class: "judge-tables" }, confusion(a), categoryTable(f)),
    taskList(id, "passed by the judge only", a.judge_only_tasks),
    taskList(id, "passed by the checks only", a.checks_only_tasks),
    p ? el("p", {}, positionText(p)) : null,
    p ? taskList(id, "preference changed with the order", p.changed_tasks) : null,
    p ? taskList(id, "the run's Pass changed with the order", p.pass_changed_tasks) : null,
    taskReasons(id, "unreadable, counted in no rate", f.unreadable),
    taskReasons(id, "not answered, a rerun asks again", f.failed),
    taskReasons(id, "set apart, nothing to judge", f.set_apart),
    el("p", { class: "muted" }, `The judge: ${plural(f.requests, "request", "requests")}, tokens ${tokensText(f.tokens)}` +
      (f.cost_usd !== undefined && f.cost_usd !== null ? `, ${dollars(f.cost_usd)}` : "")));
}

/** The run page's judgings (none for a run no judge saw). */
function judgeFigures(id, judges) {
  if (!judges || !judges.length) return null;
  return el("section", { class: "judges" }, el("h2", {}, "LLM judges"), ...judges.map((f) => judging(id, f)));
}

// ---------------------------------------------------------------- one episode's verdicts

const VERDICT_FIELDS = [["pass", "Pass"], ["decision", "Decision"], ["reasoning_quality", "ReasoningQuality"], ["code_quality", "CodeQuality"]];

/** A verdict as read, each agent named for what it was in that order. */
function verdictTable(verdict, order) {
  const [first, second] = order === "paper" ? ["the reference", "this run"] : ["this run", "the reference"];
  const cell = (field, value) => (field === "pass" ? badge(String(value), value === "Pass" ? "pass" : "fail") : String(value));
  return el("table", { class: "verdict" },
    el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, `Agent1 (${first})`), el("th", {}, `Agent2 (${second})`))),
    el("tbody", {}, ...VERDICT_FIELDS.filter(([field]) => verdict[field]).map(([field, name]) =>
      el("tr", {}, el("td", { class: "rowhead" }, name), el("td", {}, cell(field, verdict[field].agent1)), el("td", {}, cell(field, verdict[field].agent2))))));
}

/** One order of a judging: what was read of the reply, the reply, the judge's thinking. */
function orderVerdict(o) {
  const title = o.order === "paper" ? "The paper's order (Agent1 the reference, Agent2 this run)" : "Swapped (Agent1 this run, Agent2 the reference)";
  const r = o.record;
  if (!r) {
    return el("div", { class: "verdict-order" }, el("h4", {}, title), el("p", { class: "muted" }, o.same_as_paper
      ? "The same request as the paper's order (this run's trajectory and the reference's are the same), asked once."
      : "The judge was not asked about this task in this order."));
  }
  return el("div", { class: "verdict-order" }, el("h4", {}, title),
    r.error ? el("p", { class: "error-box" }, `The request failed (a rerun asks again): ${r.error}`) : null,
    r.unreadable ? el("p", { class: "error-box" }, `Unreadable (counted in no rate): ${r.unreadable}`) : null,
    r.verdict ? verdictTable(r.verdict, o.order) : null,
    el("div", { class: "facts" },
      r.finish_reason ? el("span", {}, "finish ", el("b", {}, r.finish_reason)) : null,
      el("span", {}, "tokens ", el("b", {}, tokensText(r.usage))),
      el("span", {}, "time ", el("b", {}, secs(r.latency_seconds))),
      el("span", {}, "attempts ", el("b", {}, String(r.attempts)))),
    r.thinking ? thinkingBlock({ text: r.thinking }) : null,
    r.reply !== undefined && r.reply !== null
      ? el("details", { class: "judge-reply" }, el("summary", {}, "The judge's reply"), el("pre", {}, r.reply)) : null);
}

/** What each judging said of one episode (none when no judge saw the run). */
function judgeVerdicts(judgings) {
  if (!judgings || !judgings.length) return null;
  return el("section", { class: "judgements" }, el("h2", {}, "The LLM judge"),
    ...judgings.map((j) => el("div", { class: "judgement" },
      el("h3", {}, `${j.judge} `, el("span", { class: "muted" }, `${j.prompt} prompt · reference ${j.reference}`)),
      j.disagreement ? el("p", { class: "ended full" }, j.disagreement === "judge_only"
        ? `The judge passed this task and the ${j.checks} checks failed it.`
        : `The ${j.checks} checks passed this task and the judge failed it.`) : null,
      j.changed ? el("p", { class: "ended full" }, "The judge's preference changed with the order.") : null,
      j.pass_changed ? el("p", { class: "ended full" }, "The judge's Pass for this run changed with the order.") : null,
      ...j.orders.map(orderVerdict))));
}
