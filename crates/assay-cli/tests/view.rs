//! `assay view` on real run directories (a BigCodeBench evaluation with a hostile sample, a
//! PyBench run of a hostile recorded episode, the official results files), opened in a real
//! headless chromium and used as a user does: the runs list, filters typed into, a sample's
//! tests and traceback, an episode turn by turn, a diff; nothing the runs hold runs as markup,
//! the console stays silent, and the server gives out nothing but what the runs show.
//! Screenshots are written where `common::browser::screenshots` says (the documentation shows
//! some of them).

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_tasks::bigcodebench::{Dataset, Subset};
use common::browser::{assert_contains, screenshots, Browser};
use common::viewer::Server;
use common::{assay_command, official_results, pybench_data, pybench_env, text};
use serde_json::{json, Value};

/// What hostile samples write: markup that would run if the page took it as markup.
const ATTACK: &str = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"></textarea><b>bold</b>";

fn dataset() -> Dataset {
    Dataset::embedded("v0.1.4", Subset::Full).unwrap()
}

/// An evaluation of four samples: two reference solutions, a wrong answer, and one whose code,
/// output and failure message are markup.
fn bigcodebench_run(dir: &Path) -> PathBuf {
    let data = dataset();
    let task = |n: u32| data.get(&format!("BigCodeBench/{n}")).unwrap().clone();
    let hostile = task(3);
    let samples = [
        json!({"task_id": "BigCodeBench/1", "solution": task(1).reference_solution()}),
        json!({"task_id": "BigCodeBench/2", "solution": task(2).reference_solution()}),
        json!({"task_id": "BigCodeBench/3", "solution": format!(
            "{}\n    # {ATTACK}\n    import sys\n    print({ATTACK:?})\n    print({ATTACK:?}, file=sys.stderr)\n    raise AssertionError({ATTACK:?})\n",
            hostile.complete_prompt)}),
        json!({"task_id": "BigCodeBench/4", "solution": format!("{}\n    return None\n", task(4).complete_prompt)}),
    ];
    let file = dir.join("samples.jsonl");
    let lines: Vec<String> = samples.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = assay_command(dir)
        .args(["eval", "bigcodebench", "--samples", "samples.jsonl"])
        .args([
            "--tasks",
            "BigCodeBench/1,BigCodeBench/2,BigCodeBench/3,BigCodeBench/4",
        ])
        .args(["--profile", "test", "--jobs", "2", "--out", "bcb"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir.join("bcb")
}

/// A PyBench run of one recorded episode: a cell that draws a figure and writes an `.html`
/// that would run script, a cell that fails with markup in its error, and a final answer
/// that is markup.
fn pybench_run(dir: &Path) -> PathBuf {
    pybench_env();
    let reply = |prose: &str, code: &str| json!({"role": "assistant", "content": format!("Analyse: {prose}\n```python\n{code}\n```")});
    let episode = json!({"index": "2", "messages": [
        reply(&format!("draw it {ATTACK}"), "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\nopen('output/evil.html', 'w').write('<script>parent.document.title=\"pwned\"</script>')\nprint('drawn')"),
        reply("now fail", &format!("raise ValueError({ATTACK:?})")),
        {"role": "assistant", "content": format!("Finished: {ATTACK}")},
    ]});
    let trajectory = dir.join("episode.jsonl");
    std::fs::write(&trajectory, episode.to_string() + "\n").unwrap();
    let out = assay_command(dir)
        .args(["run", "pybench", "--model"])
        .arg(format!("replay:{}", trajectory.display()))
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", "2", "--out", "pybench"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The same recording judged as it stands, without running it.
    let judged = assay_command(dir)
        .args(["eval", "pybench", "--trajectories"])
        .arg(&trajectory)
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", "2", "--out", "pybench-eval"])
        .output()
        .unwrap();
    assert!(judged.status.success(), "{}", text(&judged.stderr));
    dir.join("pybench")
}

/// The samples of an official results file whose failure text contains `needle` (case
/// ignored), counted from the file itself.
fn official_matching(path: &Path, needle: &str) -> usize {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["eval"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|samples| samples.as_array().unwrap())
        .filter(|s| {
            s["details"].as_object().is_some_and(|d| {
                d.iter().any(|(name, detail)| {
                    (name.to_lowercase() + detail.as_str().unwrap_or_default())
                        .to_lowercase()
                        .contains(needle)
                })
            })
        })
        .count()
}

fn assert_not_injected(browser: &mut Browser) {
    assert_eq!(browser.eval("document.title"), json!("assay view"));
    let injected = "document.querySelectorAll('main script, main img[src=\"x\"]').length + \
         [...document.querySelectorAll('main b')].filter(b => b.textContent === 'bold').length";
    assert_eq!(
        browser.eval(injected),
        json!(0),
        "markup from the run became elements"
    );
}

#[test]
fn the_viewer_shows_runs_filters_samples_episodes_and_diffs_and_keeps_hostile_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let bcb = bigcodebench_run(dir.path());
    let pybench = pybench_run(dir.path());
    let (c200, c400) = (
        official_results("checkpoint-200"),
        official_results("checkpoint-400"),
    );
    let pybench_eval = dir.path().join("pybench-eval");
    let server = Server::start(dir.path(), &[&bcb, &pybench, &c200, &c400, &pybench_eval]);
    let mut browser = Browser::start(1400, 1000);

    // The runs list, with each run's pass@1 and interval.
    browser.goto(&format!("{}/", server.url));
    browser.wait_for("document.querySelectorAll('table.runs tbody tr').length === 5");
    let page = browser.text();
    assert_contains(
        &page,
        &[
            "bcb",
            "pybench",
            "checkpoint-200",
            "18.2% [12.2%, 24.3%]",
            "10.8% [6.1%, 16.2%]",
            "50.0%",
        ],
    );
    browser.screenshot(&screenshots().join("view-runs.png"));

    // Filters, typed and chosen as a user does, against counts made from the file itself.
    browser.goto(&format!("{}/#/run/2", server.url));
    browser.wait_for("document.body.innerText.includes('148 of 148 samples')");
    browser.choose("select[name=status]", "pass");
    browser.wait_for("document.body.innerText.includes('27 of 148 samples')");
    browser.choose("select[name=status]", "");
    let asserting = official_matching(&c200, "assertionerror");
    browser.type_into("input[name=q]", "AssertionError");
    browser.wait_for(&format!(
        "document.body.innerText.includes('{asserting} of 148 samples')"
    ));
    browser.type_into("input[name=q]", "");
    browser.type_into("input[name=task]", "15");
    browser.wait_for("document.body.innerText.includes('1 of 148 samples')");
    assert_eq!(
        browser.eval("document.querySelector('table.samples tbody td:nth-child(2)').innerText"),
        json!("BigCodeBench/15")
    );
    browser.type_into("input[name=task]", "");
    let data = dataset();
    let with_numpy = serde_json::from_str::<Value>(&std::fs::read_to_string(&c200).unwrap())
        .unwrap()["eval"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(id, _)| data.get(id).unwrap().libs.iter().any(|l| l == "numpy"))
        .map(|(_, s)| s.as_array().unwrap().len())
        .sum::<usize>();
    browser.choose("select[name=group]", "numpy");
    browser.wait_for(&format!(
        "document.body.innerText.includes('{with_numpy} of 148 samples')"
    ));
    // The filters are in the address: the view can be shared and reloaded.
    let address = browser.eval("location.hash");
    assert_eq!(address, json!("#/run/2?group=numpy"));
    browser.choose("select[name=group]", "");
    browser.wait_for("document.querySelectorAll('table.samples tbody tr').length === 100");
    browser.eval("document.querySelector('.pager button:last-child').click(), true");
    browser.wait_for("document.body.innerText.includes('101–148 of 148')");
    browser.screenshot(&screenshots().join("view-run.png"));

    // The hostile sample: its tests, traceback, code and output, all as text.
    browser.goto(&format!("{}/#/run/0/sample/2", server.url));
    browser.wait_for("document.body.innerText.includes('Traceback')");
    let page = browser.text();
    assert_contains(
        &page,
        &[
            "BigCodeBench/3",
            "Code that ran (sanitized)",
            "Standard output",
            "<script>document.title='pwned'</script>",
            "</textarea><b>bold</b>",
            "AssertionError",
        ],
    );
    assert_not_injected(&mut browser);
    browser.screenshot(&screenshots().join("view-sample.png"));

    // The episode, turn by turn: the figure drawn, the failing cell, the files written.
    browser.goto(&format!("{}/#/run/1/sample/2", server.url));
    browser.wait_for("document.querySelectorAll('section.turn').length === 3");
    browser.wait_for(
        "[...document.querySelectorAll('.shots img')].some(i => i.complete && i.naturalWidth > 0)",
    );
    let page = browser.text();
    assert_contains(
        &page,
        &[
            "Turn 1",
            "Turn 2",
            "Turn 3",
            "drawn",
            "ValueError",
            "Jump to the first error (turn 2)",
            "evil.html",
            "Finished: <script>",
        ],
    );
    assert_not_injected(&mut browser);
    browser.eval("document.querySelector('button.jump').click(), true");
    browser.wait_for("window.scrollY > 0 && document.getElementById('turn-2').getBoundingClientRect().top >= 0 && document.getElementById('turn-2').getBoundingClientRect().top < innerHeight && document.getElementById('turn-2').classList.contains('flash')");
    browser.screenshot(&screenshots().join("view-episode.png"));
    // What the episode wrote is served as text in a sandbox, never as a page of the viewer.
    let (status, headers, body) =
        server.get("/api/runs/1/files/tasks/2/output/evil.html", "127.0.0.1");
    assert_eq!(status, 200);
    assert!(headers.contains("content-type: text/plain"), "{headers}");
    assert!(
        headers.contains("content-security-policy: sandbox"),
        "{headers}"
    );
    assert!(body.contains("<script>"));

    // An evaluation of the recording shows the conversation it judged.
    let judged = server.json("/api/runs/4/samples/2");
    assert_eq!(judged["steps"].as_array().unwrap().len(), 3, "{judged}");
    assert_eq!(judged["record"]["end"], "recorded");

    // Two runs: the paired difference, the test, the flipped tasks.
    browser.goto(&format!("{}/#/diff/2/3", server.url));
    browser.wait_for("document.body.innerText.includes('McNemar')");
    let page = browser.text();
    assert_contains(
        &page,
        &[
            "7 won · 18 lost",
            "McNemar exact p = 0.0433",
            "-7.4%",
            "25 tasks",
        ],
    );
    browser.screenshot(&screenshots().join("view-diff.png"));
    browser.assert_silent();

    // The check above hears the page: a page that logs is caught.
    browser.eval("console.error('heard'), true");
    browser.eval("1");
    assert!(
        browser.console.iter().any(|l| l.contains("heard")),
        "{:?}",
        browser.console
    );
}

#[test]
fn the_viewer_serves_nothing_outside_its_runs_and_answers_loopback_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "the harness's secret").unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(run.join("tasks/2/output")).unwrap();
    std::fs::create_dir_all(run.join("figures")).unwrap();
    std::fs::write(
        run.join("manifest.json"),
        json!({"assay_version": "0", "kind": "pybench-run", "identity": {"benchmark": "pybench"}, "started_at": 0}).to_string(),
    )
    .unwrap();
    std::fs::write(run.join("results.jsonl"), "").unwrap();
    std::fs::write(run.join("tasks/2/output/ok.csv"), "a,b\n").unwrap();
    std::os::unix::fs::symlink(&secret, run.join("tasks/2/output/link.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), run.join("figures/up")).unwrap();
    let server = Server::start(dir.path(), &[&run]);

    let (status, _, body) = server.get("/api/runs/0/files/tasks/2/output/ok.csv", "127.0.0.1");
    assert_eq!((status, body.as_str()), (200, "a,b\n"));
    for target in [
        "/api/runs/0/files/manifest.json",
        "/api/runs/0/files/results.jsonl",
        "/api/runs/0/files/tasks/2/output/link.txt",
        "/api/runs/0/files/figures/up/secret.txt",
        "/api/runs/0/files/tasks/2/output/../../../../secret.txt",
        "/api/runs/0/files/tasks/2/output/%2e%2e/%2e%2e/%2e%2e/manifest.json",
        "/api/runs/0/files/%2e%2e/secret.txt",
        "/api/runs/0/files//etc/passwd",
        "/api/runs/1/files/figures/x.png",
        "/../secret.txt",
        "/secret.txt",
    ] {
        let (status, _, body) = server.get(target, "127.0.0.1");
        assert!(
            status == 404 || status == 400,
            "{target} answered {status}: {body}"
        );
        assert!(!body.contains("the harness's secret"), "{target}: {body}");
    }
    // A page elsewhere that rebinds its name to 127.0.0.1 is refused.
    let (status, _, _) = server.get("/api/runs", "attacker.example:8765");
    assert_eq!(status, 403);
    let (status, _, _) = server.get("/api/runs", "localhost:8765");
    assert_eq!(status, 200);
}

#[test]
fn the_viewer_follows_a_run_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let finished = bigcodebench_run(dir.path());
    let records: Vec<String> = std::fs::read_to_string(finished.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // A run being judged: its manifest and samples, and a journal that grows.
    let live = dir.path().join("live");
    std::fs::create_dir_all(&live).unwrap();
    for file in ["manifest.json", "samples.jsonl"] {
        std::fs::copy(finished.join(file), live.join(file)).unwrap();
    }
    std::fs::write(live.join("results.jsonl"), format!("{}\n", records[0])).unwrap();
    let server = Server::start(dir.path(), &[&live]);
    let mut browser = Browser::start(1200, 800);
    browser.goto(&format!("{}/#/run/0", server.url));
    browser.wait_for("document.body.innerText.includes('1 of 1 samples')");
    assert!(browser.text().contains("running"));
    // Records arrive; the last one torn mid-line, as a kill leaves it, waits for its end.
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(live.join("results.jsonl"))
        .unwrap();
    write!(journal, "{}\n{}", records[1], &records[2][..20]).unwrap();
    browser.wait_for("document.body.innerText.includes('2 of 2 samples')");
    // The runs list and a diff read the report's way, and wait for the torn line too: the
    // figures come to the two whole records (within the seconds a changing run's figures
    // are kept), never an error.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let runs = loop {
        let runs = server.json("/api/runs");
        assert_eq!(runs[0]["error"], Value::Null, "{runs}");
        if runs[0]["figures"]["judged"] == 2 {
            break runs;
        }
        assert!(std::time::Instant::now() < deadline, "{runs}");
        std::thread::sleep(Duration::from_millis(250));
    };
    let diff = server.json("/api/diff?base=0&run=0");
    assert_eq!(diff["comparison"]["shared_tasks"], 2, "{diff}");
    assert_eq!(diff["tasks"].as_array().unwrap().len(), 2, "{diff}");
    // The diff shows the figures the runs list shows (the ones cached with the run).
    assert_eq!(diff["base"], runs[0]["figures"], "{diff}");
    assert_eq!(diff["run"], runs[0]["figures"], "{diff}");
    write!(journal, "{}\n{}\n", &records[2][20..], records[3]).unwrap();
    browser.wait_for("document.body.innerText.includes('4 of 4 samples')");
    // A sample judged again (as a resumed run does) with another status: its last record wins.
    let mut finished_counts = json!({});
    for record in &records {
        let status = serde_json::from_str::<Value>(record).unwrap()["status"].clone();
        let count = &mut finished_counts[status.as_str().unwrap()];
        *count = json!(count.as_u64().unwrap_or(0) + 1);
    }
    let mut again: Value = serde_json::from_str(&records[1]).unwrap();
    let other = if again["status"] == "error" {
        "timeout"
    } else {
        "error"
    };
    again["status"] = json!(other);
    writeln!(journal, "{again}").unwrap();
    let runs = server.json("/api/runs");
    assert_eq!(runs[0]["judged"], 4);
    assert_eq!(runs[0]["statuses"][other], 1, "{runs}");
    assert_ne!(runs[0]["statuses"], finished_counts, "{runs}");
    // The run ends: its summary is written and the journal rewritten whole, one record a
    // sample: the viewer reads the new file, not on from the old one.
    std::fs::copy(finished.join("results.jsonl"), live.join("results.new")).unwrap();
    std::fs::rename(live.join("results.new"), live.join("results.jsonl")).unwrap();
    std::fs::copy(finished.join("summary.json"), live.join("summary.json")).unwrap();
    let runs = server.json("/api/runs");
    assert_eq!(runs[0]["state"], "finished");
    assert_eq!(runs[0]["judged"], 4);
    assert_eq!(runs[0]["statuses"], finished_counts, "{runs}");
    // The runs list says what the terminal's summary says: tasks judged, and those set apart
    // (once the figures, kept a few seconds while a run changes, are the new file's).
    let judged_cell = "document.querySelector('table.runs tbody td.num').innerText";
    let figures_come_to = |field: &str, value: u64| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let runs = server.json("/api/runs");
            if runs[0]["figures"][field] == value {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{field} never {value}: {runs}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    figures_come_to("judged", 4);
    browser.goto(&format!("{}/#/", server.url));
    browser.wait_for(&format!("{judged_cell} === '4 / 4 tasks'"));
    // A task whose only sample could not run here (`infra`) is set apart, not judged: the
    // run as it would have ended with the last sample `infra`.
    let mut infra: Value = serde_json::from_str(&records[3]).unwrap();
    infra["status"] = json!("infra");
    let journal = [&records[0], &records[1], &records[2], &infra.to_string()]
        .map(|r| format!("{r}\n"))
        .concat();
    std::fs::write(live.join("results.new"), journal).unwrap();
    std::fs::rename(live.join("results.new"), live.join("results.jsonl")).unwrap();
    figures_come_to("infra_tasks", 1);
    browser.eval("location.reload(), true");
    browser.wait_for(&format!("{judged_cell} === '3 / 4 tasks, 1 set apart'"));
    browser.assert_silent();
}

/// A PyBench episode ended by a server that refused a conversation too long for the model's
/// window: the episode page says how it ended in the server's own words, as text (these are
/// a hostile server's, markup and all).
#[test]
fn the_viewer_quotes_the_server_that_ended_an_episode() {
    use mock::{MockServer, Reply, Route};
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        if body["messages"].as_array().unwrap().len() == 3 {
            Reply::chat(&["Analyse: look\n```python\nprint('looked')\n```"])
        } else {
            Reply::anthropic_error(
                400,
                "invalid_request_error",
                &format!("prompt is too long: 9000 tokens > 8192 maximum {ATTACK}"),
            )
        }
    });
    let out = assay_command(dir.path())
        .args(["run", "pybench", "--model", "openai:mock", "--base-url"])
        .arg(server.openai_base())
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", "2", "--out", "short"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let viewer = Server::start(dir.path(), &[&dir.path().join("short")]);
    let mut browser = Browser::start(1200, 900);
    browser.goto(&format!("{}/#/run/0/sample/2", viewer.url));
    browser.wait_for("document.querySelector('p.ended.full') !== null");
    let said = browser.eval("document.querySelector('p.ended.full').textContent");
    let said = said.as_str().unwrap();
    assert!(
        said.starts_with(
            "Ended: the conversation outgrew the model's context window: HTTP 400: prompt is \
             too long: 9000 tokens > 8192 maximum <script>"
        ),
        "{said}"
    );
    assert!(browser.text().contains("context_full"));
    assert_not_injected(&mut browser);
    browser.assert_silent();
    browser.screenshot(&screenshots().join("view-context-full.png"));
}
