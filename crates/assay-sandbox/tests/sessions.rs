//! Persistent sessions: state, output per cell, figures, interrupts, time limits, restarts,
//! files, and many sessions side by side.

mod common;

use std::time::Duration;

use assay_sandbox::{Engine, InputFile, Session, SessionSpec, Status};
use common::{engine, marker, name_process, run, until_running};

async fn open(engine: &Engine, spec: SessionSpec) -> Session {
    engine.open_session(spec).await.expect("session opens")
}

#[test]
fn state_persists_and_each_cell_gets_its_own_output() {
    let engine = engine();
    run(async move {
        let s = engine.open_session(SessionSpec::default()).await.unwrap();
        let first = s
            .exec("import numpy as np\nx = np.arange(4)\nprint('first')")
            .await;
        assert_eq!(first.status, Status::Pass, "{}", first.reason);
        assert_eq!(first.output.text, "first\n");
        assert_eq!(first.result, None);
        let second = s.exec("print('second')\nx.sum() * 10").await;
        assert_eq!(second.output.text, "second\n");
        assert_eq!(second.result.as_deref(), Some("60"));
        let third = s
            .exec("import sys\nprint('oops', file=sys.stderr)\n1/0")
            .await;
        assert_eq!(third.status, Status::Error);
        assert_eq!(third.error.as_ref().unwrap().name, "ZeroDivisionError");
        assert_eq!(third.output.text, "oops\n");
        assert!(third.session_alive);
        let fourth = s.exec("x.tolist()").await;
        assert_eq!(fourth.result.as_deref(), Some("[0, 1, 2, 3]"));
        s.close().await;
    });
}

#[test]
fn cells_are_notebook_cells() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        // Both streams, and a program the cell starts, in the order written.
        let out = s
            .exec("import sys\nprint('one')\nsys.stderr.write('two\\n')\n!echo three\nprint('four', end='')")
            .await;
        assert_eq!(out.status, Status::Pass, "{}", out.reason);
        assert_eq!(out.output.text, "one\ntwo\nthree\nfour");
        // The last value as IPython shows it; `;` silences it; magics work.
        let out = s.exec("{'b': list(range(30)), 'a': 'x' * 70}").await;
        let shown = out.result.unwrap();
        assert!(
            shown.starts_with("{'b': [0,\n  1,"),
            "pretty-printed: {shown}"
        );
        assert_eq!(s.exec("40 + 2;").await.result, None);
        let out = s.exec("%time y = 1\ny").await;
        assert!(out.output.text.contains("Wall time"), "{}", out.output.text);
        assert_eq!(out.result.as_deref(), Some("1"));
        // Installing is refused, and said so.
        let out = s.exec("!pip install --quiet requests\n_exit_code").await;
        assert!(out.output.text.contains("read-only"), "{}", out.output.text);
        assert_eq!(out.result.as_deref(), Some("1"));
        // A notebook's error: name and message, the state kept.
        let out = s.exec("undefined_name").await;
        let error = out.error.unwrap();
        assert_eq!(
            (error.name.as_str(), error.message.as_str()),
            ("NameError", "name 'undefined_name' is not defined")
        );
        s.close().await;
    });
}

#[test]
fn figures_come_back_as_png() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        let out = s
            .exec("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.title('t')")
            .await;
        assert_eq!(out.status, Status::Pass, "{}", out.reason);
        assert_eq!(out.figures.len(), 1);
        assert_eq!(out.result.as_deref(), Some("Text(0.5, 1.0, 't')"));
        // `plt.show()` prints nothing, as in a notebook: the figure is shown, then closed.
        let shown = s
            .exec("plt.plot([1, 2]); plt.show()\nplt.figure(); plt.bar([1], [2])\nprint('done')")
            .await;
        assert_eq!(shown.output.text, "done\n", "{}", shown.reason);
        assert_eq!(shown.figures.len(), 2);
        assert!(out.figures[0].starts_with(b"\x89PNG\r\n\x1a\n"));
        let next = s.exec("len(plt.get_fignums())").await;
        assert_eq!(
            next.result.as_deref(),
            Some("0"),
            "figures are closed after a cell"
        );
        s.close().await;
    });
}

#[test]
fn an_interrupt_stops_the_cell_and_keeps_the_state() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        s.exec("kept = 42").await;
        // Interrupted once the cell is seen running, not after a guess at how long it takes to
        // start.
        let mark = marker("int");
        let code = format!(
            "{}\nimport time\nwhile True:\n    time.sleep(0.01)",
            name_process(&mark)
        );
        let mut cell = Box::pin(s.exec(&code));
        until_running(&mark, 1, &mut cell).await;
        assert!(s.interrupt(), "the interrupt was delivered");
        let out = cell.await;
        // `Error`, not `Timeout`: the interrupt ended the cell, not its time limit (which
        // interrupts too, and says so).
        assert_eq!(out.status, Status::Error, "{}", out.reason);
        assert_eq!(out.error.as_ref().unwrap().name, "KeyboardInterrupt");
        assert_eq!(s.exec("kept").await.result.as_deref(), Some("42"));
        assert!(!s.interrupt() || s.exec("1").await.status == Status::Pass);
    });
}

#[test]
fn a_cell_over_its_time_limit_is_interrupted_and_the_session_survives() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        s.exec("kept = 'yes'").await;
        let out = s
            .exec_with(
                "while True:\n    pass",
                Duration::from_secs(1),
                Duration::from_secs(30),
            )
            .await;
        assert_eq!(out.status, Status::Timeout, "{}", out.reason);
        assert!(out.session_alive);
        assert_eq!(out.error.as_ref().unwrap().name, "KeyboardInterrupt");
        assert_eq!(s.exec("kept").await.result.as_deref(), Some("'yes'"));
        s.close().await;
    });
}

#[test]
fn a_cell_over_its_cpu_budget_is_stopped_inside_the_session() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        let out = s
            .exec_with(
                "while True:\n    pass",
                Duration::from_secs(30),
                Duration::from_secs(1),
            )
            .await;
        // The CPU budget stopped it, not the 30 s wall-clock limit (whose reason differs).
        assert_eq!(out.status, Status::Timeout, "{}", out.reason);
        assert_eq!(out.reason, "the cell's CPU-time limit was reached");
        assert!(out.session_alive);
        assert_eq!(s.exec("1 + 1").await.result.as_deref(), Some("2"));
    });
}

#[test]
fn an_unstoppable_cell_kills_the_session_and_restart_brings_it_back() {
    let engine = engine();
    run(async move {
        let spec = SessionSpec {
            files: vec![InputFile {
                path: "input.txt".into(),
                data: b"data".to_vec(),
            }],
            ..SessionSpec::default()
        };
        let s = open(&engine, spec).await;
        s.exec("open('made.txt', 'w').write('made'); state = 1")
            .await;
        let stubborn =
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass";
        let out = s
            .exec_with(stubborn, Duration::from_secs(1), Duration::from_secs(60))
            .await;
        assert_eq!(out.status, Status::Timeout);
        assert!(!out.session_alive);
        assert!(!s.is_alive().await);
        let dead = s.exec("1").await;
        assert_eq!(dead.status, Status::Error);
        assert!(dead.reason.contains("restart"), "{}", dead.reason);
        s.restart().await.expect("restart");
        let after = s
            .exec("import os\n(sorted(os.listdir('.')), 'state' in globals())")
            .await;
        assert_eq!(
            after.result.as_deref(),
            Some("(['input.txt', 'made.txt'], False)"),
            "files survive a restart, variables don't"
        );
        s.close().await;
    });
}

#[test]
fn a_session_that_exits_is_reported_dead() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        let out = s.exec("import os\nos._exit(3)").await;
        assert_eq!(out.status, Status::Error);
        assert!(!out.session_alive);
        assert!(out.reason.contains("exited with code 3"), "{}", out.reason);
    });
}

#[test]
fn files_written_in_cells_are_listed() {
    let engine = engine();
    run(async move {
        let spec = SessionSpec {
            dirs: vec!["output".into(), "data/in".into()],
            ..SessionSpec::default()
        };
        let s = open(&engine, spec).await;
        let out = s
            .exec("import os\nopen('output/r.txt','w').write('result')\nos.path.isdir('data/in')")
            .await;
        assert_eq!(out.result.as_deref(), Some("True"), "{}", out.reason);
        let files = s.files().await.unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(
            (files[0].path.as_str(), files[0].data.as_slice()),
            ("output/r.txt", &b"result"[..])
        );
        s.close().await;
    });
}

#[test]
fn sessions_side_by_side_are_isolated_from_each_other() {
    let engine = engine();
    run(async move {
        let mut sessions = Vec::new();
        for i in 0..4 {
            let s = open(&engine, SessionSpec::default()).await;
            let out = s
                .exec(&format!("me = {i}\nopen('/tmp/owner', 'w').write(str(me))"))
                .await;
            assert_eq!(out.status, Status::Pass, "{}", out.reason);
            sessions.push(s);
        }
        for (i, s) in sessions.iter().enumerate() {
            let out = s.exec("(me, open('/tmp/owner').read())").await;
            assert_eq!(out.result, Some(format!("({i}, '{i}')")));
        }
        for s in sessions {
            s.close().await;
        }
    });
}

#[test]
fn a_cancelled_exec_kills_the_session_instead_of_haunting_the_next_cell() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        // Cancelled (dropped) once the cell is seen running, having printed: its output is
        // then on its way, and must not reach the next cell.
        let mark = marker("can");
        let code = format!(
            "print('old cell', flush=True)\n{}\nimport time\ntime.sleep(30)",
            name_process(&mark)
        );
        let mut slow = Box::pin(s.exec(&code));
        until_running(&mark, 1, &mut slow).await;
        drop(slow);
        let next = s.exec("print('new cell')\n1 + 1").await;
        assert_eq!(next.status, Status::Error);
        assert!(next.reason.contains("cancelled"), "{}", next.reason);
        assert!(!next.output.text.contains("old cell"));
        s.restart().await.unwrap();
        let fresh = s.exec("print('new cell')\n1 + 1").await;
        assert_eq!(
            (fresh.output.text.as_str(), fresh.result.as_deref()),
            ("new cell\n", Some("2"))
        );
    });
}

#[test]
fn exceptions_that_break_while_being_described_do_not_kill_the_session() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        s.exec("kept = 7").await;
        let code = "class Nasty(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise Nasty()";
        let out = s.exec(code).await;
        assert_eq!(out.status, Status::Error, "{}", out.reason);
        assert!(out.session_alive);
        assert_eq!(out.error.unwrap().name, "Nasty");
        let repr = s
            .exec("class R:\n    def __repr__(self):\n        raise ValueError()\nR()")
            .await;
        // As in a notebook: the broken display shows as the cell's error.
        assert_eq!(repr.error.unwrap().name, "ValueError", "{}", repr.reason);
        assert!(repr.session_alive);
        assert_eq!(s.exec("kept").await.result.as_deref(), Some("7"));
    });
}

#[test]
fn every_cell_gets_exactly_its_own_output() {
    let engine = engine();
    run(async move {
        let s = open(&engine, SessionSpec::default()).await;
        for i in 0..60 {
            let out = s.exec(&format!("print('cell {i}')")).await;
            assert_eq!(out.output.text, format!("cell {i}\n"), "{}", out.reason);
        }
        s.close().await;
    });
}
