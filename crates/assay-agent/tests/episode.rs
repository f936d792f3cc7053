//! Episodes against a real session: upstream's conversation, observations and end reasons.

use std::sync::OnceLock;
use std::time::Duration;

use assay_agent::pybench::replay::Replay;
use assay_agent::pybench::{run_episode, EpisodeSettings};
use assay_pyenv::{Environment, Interpreter, Profile, SilentObserver};
use assay_records::{EpisodeEnd, Message, TrajectoryRecord};
use assay_sandbox::{Engine, EngineConfig, InputFile, IsolationMode, SessionSpec, Status};
use assay_tasks::pybench::Task;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// An engine on the `test` profile (set up on first use), strictly isolated.
fn engine() -> Engine {
    let profile = Profile::by_name("test").unwrap();
    let interpreter = Interpreter::discover(None).expect("a Python 3.11 interpreter");
    let env = Environment::locate(profile, interpreter).expect("locate the test environment");
    env.ensure(&SilentObserver)
        .expect("set up the test environment");
    let mut config = EngineConfig::new(env.python());
    config.preload = profile.preload_modules();
    config.isolation = IsolationMode::Strict;
    config.runtime_dir =
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("assay-runtime"));
    runtime()
        .block_on(Engine::start(config))
        .expect("engine starts")
}

fn task() -> Task {
    Task {
        index: "3".into(),
        category1: String::new(),
        category2: String::new(),
        category3: String::new(),
        user: "Count the rows of ./data/a.csv and save them to ./output/3.txt".into(),
        file_paths: vec!["./data/a.csv".into()],
        attachments: vec![],
        category: None,
    }
}

fn replay(replies: &[&str]) -> Replay {
    Replay::new(&[TrajectoryRecord {
        messages: replies
            .iter()
            .map(|r| Message::new("assistant", *r))
            .collect(),
        index: "3".into(),
        category1: String::new(),
        category2: String::new(),
        category3: String::new(),
        user: String::new(),
        file_paths: vec![],
        attachments: vec![],
    }])
}

fn block(code: &str) -> String {
    format!("Analyse: go\nAction:\n```python\n{code}\n```")
}

#[test]
fn an_episode_is_upstreams_conversation_over_a_real_session() {
    let engine = engine();
    runtime().block_on(async move {
        let spec = SessionSpec {
            files: vec![InputFile {
                path: "data/a.csv".into(),
                data: b"x\n1\n2\n3\n".to_vec(),
            }],
            dirs: vec!["output".into()],
            ..SessionSpec::default()
        };
        let session = engine.open_session(spec).await.expect("session");
        let replies = [
            block("import pandas as pd\ndf = pd.read_csv('./data/a.csv')\nprint('read')\nlen(df)"),
            block("df['missing']"),
            block("open('./output/3.txt', 'w').write(str(len(df)))"),
            "Finished: the file has 3 rows.".to_string(),
        ];
        let replier = replay(&replies.iter().map(String::as_str).collect::<Vec<_>>());
        let mut turns = Vec::new();
        let episode = run_episode(
            &task(),
            &session,
            &replier,
            &EpisodeSettings::default(),
            |t| turns.push(t),
        )
        .await;
        assert_eq!(turns, [1, 2, 3, 4]);
        assert_eq!((episode.turns, episode.end), (4, EpisodeEnd::Answered));
        let m = &episode.messages;
        assert_eq!(m.len(), 3 + 3 * 2 + 1);
        assert_eq!(m[1].content, "[INFO]The data is uploaded to ./data/a.csv");
        assert_eq!(m[3].content, replies[0]);
        assert_eq!(
            m[4].content,
            "[INFO]This is a Code Interpreter Message:\nread\n3"
        );
        assert_eq!(
            m[6].content,
            "[INFO]This is a Code Interpreter Message:\nThere are some errors in the code. \
             All variables in this cell should be redefined. Please Debug:\nError: KeyError\n\
             'missing'\n"
        );
        assert_eq!(m[8].content, "[INFO]This is a Code Interpreter Message:\n1");
        assert_eq!(m[9].content, "Finished: the file has 3 rows.");
        let statuses: Vec<Status> = episode.cells.iter().map(|(c, _)| c.status).collect();
        assert_eq!(statuses, [Status::Pass, Status::Error, Status::Pass]);
        let files = session.files().await.unwrap();
        let out = files
            .iter()
            .find(|f| f.path == "output/3.txt")
            .expect("output file");
        assert_eq!(out.data, b"3");
    });
}

#[test]
fn turns_run_out_and_so_do_replays() {
    let engine = engine();
    runtime().block_on(async move {
        let session = engine.open_session(SessionSpec::default()).await.unwrap();
        let many: Vec<String> = (0..5).map(|i| block(&format!("{i}"))).collect();
        let replier = replay(&many.iter().map(String::as_str).collect::<Vec<_>>());
        let settings = EpisodeSettings {
            max_turns: 3,
            ..EpisodeSettings::default()
        };
        let capped = run_episode(&task(), &session, &replier, &settings, |_| {}).await;
        assert_eq!((capped.turns, capped.end), (3, EpisodeEnd::MaxTurns));
        assert_eq!(capped.messages.last().unwrap().role, "user");
        let short = replay(&[&block("1")]);
        let exhausted = run_episode(
            &task(),
            &session,
            &short,
            &EpisodeSettings::default(),
            |_| {},
        )
        .await;
        assert_eq!(
            (exhausted.turns, exhausted.end),
            (1, EpisodeEnd::ReplayExhausted)
        );
    });
}

#[test]
fn a_cell_that_will_not_stop_costs_the_state_and_says_so() {
    let engine = engine();
    runtime().block_on(async move {
        let session = engine.open_session(SessionSpec::default()).await.unwrap();
        let replies = [
            block("kept = 1\nimport time\nwhile True:\n    time.sleep(0.01)"),
            block("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.01)"),
            block("'kept' in globals()"),
        ];
        let replier = replay(&replies.iter().map(String::as_str).collect::<Vec<_>>());
        let settings = EpisodeSettings {
            cell_timeout: Duration::from_secs(1),
            ..EpisodeSettings::default()
        };
        let episode = run_episode(&task(), &session, &replier, &settings, |_| {}).await;
        let m = &episode.messages;
        assert!(
            m[4].content.ends_with("Error: KeyboardInterrupt\n\n"),
            "an interrupted cell reads as upstream shows it: {}",
            m[4].content
        );
        assert!(m[6].content.contains("so it was restarted"), "{}", m[6].content);
        assert!(episode.cells[1].0.restarted);
        assert_eq!(m[8].content, "[INFO]This is a Code Interpreter Message:\nFalse");
    });
}
