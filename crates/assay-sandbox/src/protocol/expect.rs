//! Which events a job process may send at each point of its job.
//!
//! A job process sends `ready` (or `setup_failed`), is sent its job, answers `started` (or an
//! `internal_error` of stage `prepare`), then the events of its kind up to its final frame. An
//! event outside that order is refused where it arrives, like one that does not parse.
//!
//! Who is to blame differs with the moment (see `drive::ending`): until `started`, only the
//! harness has written on the results pipe, so a refused event is the harness's failure
//! (`infra`); from `started` on, the job's untrusted code can write on that descriptor too (it
//! is the same process), so a refused event ends the job as something the code did. Were it
//! `infra`, a sample could take its own failure out of the score by writing one bad frame.

use super::job::{Control, Event, ExecDone, Stage};

/// The job a process was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Unittest,
    Script,
    Session,
    Command,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Unittest => "unittest",
            Kind::Script => "script",
            Kind::Session => "session",
            Kind::Command => "command",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Forked: `ready` or `setup_failed` comes first.
    Forked,
    /// Ready, no job sent yet: nothing may come.
    Idle,
    /// Sent its job: `started`, or the harness failed preparing it.
    Sent(Kind),
    /// The code runs.
    Running {
        kind: Kind,
        /// A unittest job's tests were collected.
        loaded: bool,
    },
    /// A final frame came: nothing more may.
    Over,
}

/// A job process's place in the protocol.
#[derive(Debug)]
pub(crate) struct Expect {
    phase: Phase,
    /// `started` came: the code may have written anything since.
    started: bool,
    /// A session's cell awaiting its answer (sent, possibly before `started` came).
    cell: Option<u64>,
}

impl Expect {
    pub fn new() -> Self {
        Expect {
            phase: Phase::Forked,
            started: false,
            cell: None,
        }
    }

    /// Whether the untrusted code has started.
    pub fn code_started(&self) -> bool {
        self.started
    }

    /// Notes what the supervisor sent.
    pub fn sent(&mut self, control: &Control) {
        match control {
            Control::Unittest { .. } => self.phase = Phase::Sent(Kind::Unittest),
            Control::Script { .. } => self.phase = Phase::Sent(Kind::Script),
            Control::Session { .. } => self.phase = Phase::Sent(Kind::Session),
            Control::Command { .. } => self.phase = Phase::Sent(Kind::Command),
            Control::Exec { id, .. } => self.cell = Some(*id),
            Control::Close {} => self.phase = Phase::Over,
        }
    }

    /// Takes `event` if it may come now, or says why not.
    pub fn admit(&mut self, event: &Event) -> Result<(), String> {
        let next = match (self.phase, event) {
            (Phase::Forked, Event::Ready { .. }) => Some(Phase::Idle),
            (Phase::Forked, Event::SetupFailed { .. }) => Some(Phase::Over),
            // Before `ready`: confined, but rehearsing the runner failed; after the job was
            // sent: preparing it failed.
            (
                Phase::Forked | Phase::Sent(_),
                Event::InternalError {
                    stage: Stage::Prepare,
                    ..
                },
            ) => Some(Phase::Over),
            (Phase::Sent(kind), Event::Started {}) => {
                self.started = true;
                Some(Phase::Running {
                    kind,
                    loaded: false,
                })
            }
            (Phase::Running { kind, loaded }, Event::ExecDone(ExecDone { id, .. }))
                if kind == Kind::Session =>
            {
                if self.cell != Some(*id) {
                    return Err(match self.cell {
                        Some(cell) => format!("`exec_done` answers cell {id}; cell {cell} runs"),
                        None => format!("`exec_done` answers cell {id}; no cell runs"),
                    });
                }
                self.cell = None;
                Some(Phase::Running { kind, loaded })
            }
            (Phase::Running { kind, loaded }, event) => running(kind, loaded, event),
            _ => None,
        };
        match next {
            Some(phase) => {
                self.phase = phase;
                Ok(())
            }
            None => Err(format!(
                "`{}` may not come {}",
                event.tag(),
                self.where_now()
            )),
        }
    }

    fn where_now(&self) -> String {
        match self.phase {
            Phase::Forked => "before `ready`".into(),
            Phase::Idle => "before a job was sent".into(),
            Phase::Sent(kind) => format!("before `started` of a {} job", kind.name()),
            Phase::Running {
                kind: Kind::Unittest,
                loaded: false,
                ..
            } => "in a unittest job before `loaded`".into(),
            Phase::Running { kind, .. } => format!("in a {} job", kind.name()),
            Phase::Over => "after the final frame".into(),
        }
    }
}

/// The phase after `event` while the code runs, or `None` if it may not come (a session's
/// answers are `Expect::admit`'s: they depend on the cell sent).
fn running(kind: Kind, loaded: bool, event: &Event) -> Option<Phase> {
    let stay = Phase::Running { kind, loaded };
    match (kind, event) {
        // Of either stage: an interrupt can land between `started` and the worker's own
        // stage switch. Blame is `drive::ending`'s, which takes none of it as the harness's
        // once the code started.
        (_, Event::InternalError { .. }) => Some(Phase::Over),
        (Kind::Unittest, Event::Loaded { .. }) if !loaded => {
            Some(Phase::Running { kind, loaded: true })
        }
        (Kind::Unittest, Event::ModuleError { .. }) if !loaded => Some(Phase::Over),
        (
            Kind::Unittest,
            Event::TestStart { .. }
            | Event::BodyDone { .. }
            | Event::Test { .. }
            | Event::Fixture { .. },
        ) if loaded => Some(stay),
        (Kind::Unittest, Event::TestsDone(_)) if loaded => Some(Phase::Over),
        (Kind::Script, Event::ScriptDone { .. }) => Some(Phase::Over),
        (Kind::Command, Event::CommandDone { .. }) => Some(Phase::Over),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::job::{ErrorFrame, Outcome, TestsDone};
    use crate::protocol::Rusage;

    fn unittest_control() -> Control {
        serde_json::from_value(serde_json::json!({
            "op": "unittest", "env": {}, "cwd": "/ws/1/w", "make_dirs": [],
            "limits": {"cpu_seconds": null, "file_size_bytes": 1, "open_files": 1,
                       "processes": null, "data_bytes": null, "stack_bytes": null},
            "conditions": assay_records::Conditions::default(),
            "code": "", "test": "", "test_class": "TestCases", "guards": true,
            "files": [], "dirs": []
        }))
        .unwrap()
    }

    fn test_event(name: &str) -> Event {
        Event::Test {
            name: name.into(),
            outcome: Outcome::Pass,
            detail: String::new(),
            seconds: 0.0,
            ended: None,
        }
    }

    fn done() -> Event {
        Event::TestsDone(TestsDone {
            tests_run: 1,
            failures: vec![],
            errors: vec![],
            aborted: None,
            integrity: vec![],
            rusage: Rusage::default(),
        })
    }

    #[test]
    fn a_unittest_job_in_order_is_taken() {
        let mut expect = Expect::new();
        expect
            .admit(&Event::Ready {
                layers: Default::default(),
            })
            .unwrap();
        expect.sent(&unittest_control());
        assert!(!expect.code_started());
        expect.admit(&Event::Started {}).unwrap();
        assert!(expect.code_started());
        expect
            .admit(&Event::Loaded {
                tests: vec!["t".into()],
            })
            .unwrap();
        expect
            .admit(&Event::TestStart { name: "t".into() })
            .unwrap();
        expect.admit(&test_event("t")).unwrap();
        expect.admit(&done()).unwrap();
        let after = expect.admit(&test_event("t")).unwrap_err();
        assert_eq!(after, "`test` may not come after the final frame");
    }

    #[test]
    fn a_command_job_ends_on_its_own_report_only() {
        let mut expect = Expect::new();
        expect
            .admit(&Event::Ready {
                layers: Default::default(),
            })
            .unwrap();
        let command = serde_json::json!({
            "op": "command", "env": {}, "cwd": "/ws/1/w", "make_dirs": [],
            "limits": {"cpu_seconds": null, "file_size_bytes": 1, "open_files": 1,
                       "processes": null, "data_bytes": null, "stack_bytes": null},
            "conditions": assay_records::Conditions::default(),
            "argv": ["codex"], "files": [], "dirs": [], "home_files": [],
            "relay": {"port": 4000, "socket": "/tmp/.assay-relay.sock"}
        });
        expect.sent(&serde_json::from_value(command).unwrap());
        expect.admit(&Event::Started {}).unwrap();
        let rusage = Rusage {
            utime: 0.0,
            stime: 0.0,
            maxrss_kib: 0,
        };
        let script = Event::ScriptDone {
            exit_code: 0,
            error: None,
            rusage,
        };
        assert_eq!(
            expect.admit(&script).unwrap_err(),
            "`script_done` may not come in a command job"
        );
        let done = Event::CommandDone {
            exit_code: Some(0),
            signal: None,
            rusage,
        };
        expect.admit(&done).unwrap();
        assert!(expect.admit(&done).is_err());
    }

    #[test]
    fn events_out_of_order_are_refused_and_say_where() {
        let mut expect = Expect::new();
        let early = expect.admit(&Event::Started {}).unwrap_err();
        assert_eq!(early, "`started` may not come before `ready`");
        expect
            .admit(&Event::Ready {
                layers: Default::default(),
            })
            .unwrap();
        assert!(expect.admit(&test_event("t")).is_err());
        expect.sent(&unittest_control());
        let script_done = Event::ScriptDone {
            exit_code: 0,
            error: None,
            rusage: Rusage::default(),
        };
        assert!(expect.admit(&script_done).is_err(), "not before started");
        // A harness failure claimed after the code started is not the harness's.
        expect.admit(&Event::Started {}).unwrap();
        assert_eq!(
            expect.admit(&test_event("t")).unwrap_err(),
            "`test` may not come in a unittest job before `loaded`"
        );
        assert!(expect.admit(&script_done).is_err(), "not in a unittest job");
        expect.admit(&Event::Loaded { tests: vec![] }).unwrap();
        assert!(
            expect.admit(&Event::Loaded { tests: vec![] }).is_err(),
            "twice"
        );
        let module_error = Event::ModuleError {
            error: ErrorFrame {
                name: "E".into(),
                message: String::new(),
                traceback: String::new(),
            },
            integrity: vec![],
            rusage: Rusage::default(),
        };
        assert!(expect.admit(&module_error).is_err(), "not after loaded");
        // A harness failure of either stage is taken while the code runs (an interrupt can
        // land before the worker switches stage); `drive::ending` blames the code for it.
        let claimed = Event::InternalError {
            stage: Stage::Prepare,
            error: "not me".into(),
        };
        expect.admit(&claimed).unwrap();
    }

    #[test]
    fn a_session_answers_only_the_cell_it_was_sent() {
        let mut expect = Expect::new();
        expect
            .admit(&Event::Ready {
                layers: Default::default(),
            })
            .unwrap();
        let mut session = unittest_control();
        if let Control::Unittest { base, .. } = session {
            session = Control::Session {
                base,
                files: vec![],
                dirs: vec![],
            };
        }
        expect.sent(&session);
        let answer = |id| {
            Event::ExecDone(ExecDone {
                id,
                result: None,
                error: None,
                figures: vec![],
                figure_error: None,
            })
        };
        expect.admit(&Event::Started {}).unwrap();
        assert_eq!(
            expect.admit(&answer(1)).unwrap_err(),
            "`exec_done` answers cell 1; no cell runs"
        );
        expect.sent(&Control::Exec {
            id: 1,
            code: "1".into(),
            cpu_seconds: 1,
        });
        // A cell sent before `started` came is answered after it.
        let mut early = Expect::new();
        early
            .admit(&Event::Ready {
                layers: Default::default(),
            })
            .unwrap();
        early.sent(&session);
        early.sent(&Control::Exec {
            id: 1,
            code: "1".into(),
            cpu_seconds: 1,
        });
        assert!(early.admit(&answer(1)).is_err(), "not before started");
        early.admit(&Event::Started {}).unwrap();
        early.admit(&answer(1)).unwrap();
        assert_eq!(
            expect.admit(&answer(2)).unwrap_err(),
            "`exec_done` answers cell 2; cell 1 runs"
        );
        expect.admit(&answer(1)).unwrap();
        assert!(expect.admit(&answer(1)).is_err(), "answered twice");
    }
}
