//! docs/run-directory.md is the run directory's spec: every field a record writes is named
//! there, so a field added to a record without documenting it fails here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use assay_records::*;
use serde::Serialize;

fn spec() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/run-directory.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The keys `value` serializes with (one level), each of which the spec must name in
/// backticks.
fn undocumented(value: &impl Serialize, spec: &str) -> Vec<String> {
    let value = serde_json::to_value(value).unwrap();
    let keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    assert!(!keys.is_empty());
    keys.into_iter()
        .filter(|key| !spec.contains(&format!("`{key}`")))
        .collect()
}

fn captured() -> Captured {
    Captured {
        text: "out".into(),
        total_bytes: 3,
        truncated: false,
    }
}

fn ground_truth() -> GroundTruthSummary {
    GroundTruthSummary {
        pass_rate: 1.0,
        failed_tasks: BTreeMap::new(),
        cache: PathBuf::from("cache"),
        processes: ProcessPeaks {
            measured: 0,
            highest: Vec::new(),
        },
    }
}

fn isolation() -> IsolationReport {
    IsolationReport {
        level: IsolationLevel::Full,
        layers: Layers::default(),
        cgroup: "cgroup-v2".into(),
        memory_limit: Enforcement::Cgroup,
        tree_kill: "cgroup".into(),
    }
}

fn sample() -> SampleRecord {
    SampleRecord {
        index: 0,
        task_id: "BigCodeBench/0".into(),
        program_digest: "p".into(),
        status: Status::Pass,
        reason: "r".into(),
        official: Some(Official::new(OfficialStatus::Pass, Vec::new())),
        infra: None,
        tests: Vec::new(),
        integrity: vec![IntegrityFinding {
            kind: IntegrityKind::Skipped,
            test: Some("test_a".into()),
            what: "SkipTest raised from task_func".into(),
        }],
        wall_seconds: 0.1,
        cpu_seconds: Some(0.1),
        memory_peak_bytes: Some(1),
        processes_peak: Some(1),
        isolation: IsolationLevel::Full,
        stdout: captured(),
        stderr: captured(),
    }
}

fn generation() -> GenerationRecord {
    GenerationRecord {
        task_id: "BigCodeBench/0".into(),
        raw: Vec::new(),
        solutions: Vec::new(),
        finish_reasons: Vec::new(),
        usage: TokenUsage::default(),
        latency_seconds: 0.0,
        attempts: 1,
        error: Some("e".into()),
        wanted: 1,
        context: Some(ContextLimit {
            reason: "the prompt does not fit".into(),
            said: "HTTP 400: too long".into(),
            max_tokens: Some(100),
            empty: false,
        }),
        thinking: vec![Some(thinking())],
    }
}

fn thinking() -> Thinking {
    Thinking {
        source: ThinkingSource::Field,
        text: "hmm".into(),
        cut: true,
        redacted: 1,
    }
}

fn reasoning() -> ReasoningSettings {
    ReasoningSettings {
        effort: Some(Effort::High),
        thinking_budget: Some(2048),
        reasoning_model: Some(true),
        think_tags: Some(vec![ThinkTag {
            open: "<think>".into(),
            close: "</think>".into(),
        }]),
    }
}

fn episode() -> EpisodeRecord {
    let verdict = CheckVerdict {
        status: Status::Pass,
        reason: "r".into(),
    };
    EpisodeRecord {
        task_id: "PyBench/3".into(),
        category: Some("chart_analysis".into()),
        status: Status::Pass,
        reason: "r".into(),
        verdicts: Verdicts {
            faithful: verdict.clone(),
            fixed: verdict,
        },
        turns: 2,
        end: EpisodeEnd::Answered,
        end_reason: "the model answered without code".into(),
        cells: vec![CellRecord {
            turn: 1,
            status: Status::Pass,
            reason: "r".into(),
            seconds: 0.1,
            output_bytes: 1,
            observation_chars: 1,
            restarted: true,
            figures: vec!["figures/3-1-1.png".into()],
        }],
        tokens: TokenUsage {
            prompt_tokens: 1,
            completion_tokens: 2,
            reasoning_tokens: 1,
        },
        seconds: 1.0,
        outputs: vec!["3.csv".into()],
    }
}

fn pybench_summary() -> PybenchSummary {
    PybenchSummary {
        checks: "faithful".into(),
        tasks: 1,
        judged: 1,
        faithful: PybenchFigures::default(),
        fixed: PybenchFigures::default(),
        average_turns_raw: 1.0,
        tokens: TokenUsage::default(),
        cost_usd: Some(0.0),
        reasoning_cost_usd: Some(0.0),
        infra: BTreeMap::new(),
        context_full: BTreeMap::from([("PyBench/85".into(), "HTTP 400: too long".into())]),
        cut_while_thinking: vec!["PyBench/3".into()],
        published: Some(PublishedFigures {
            model: "m".into(),
            pass_rate: 0.5,
            categories: BTreeMap::new(),
            average_turns: 5.0,
        }),
        judges: vec![judge_figures()],
        wall_seconds: 1.0,
    }
}

fn judgement() -> JudgementRecord {
    JudgementRecord {
        task_id: "PyBench/3".into(),
        key: "k".into(),
        judge: "openai:gpt-4o".into(),
        prompt: JudgePrompt::Winlose,
        order: JudgeOrder::Paper,
        request: JudgeRequest {
            system: "s".into(),
            user: "u".into(),
        },
        ask: 1,
        reply: Some("r".into()),
        thinking: Some("t".into()),
        finish_reason: "stop".into(),
        usage: TokenUsage::default(),
        latency_seconds: 1.0,
        attempts: 1,
        error: Some("e".into()),
        verdict: Some(JudgeVerdict {
            pass: PerAgent {
                agent1: "Pass".into(),
                agent2: "Failed".into(),
            },
            decision: Some(PerAgent {
                agent1: 1,
                agent2: 0,
            }),
            reasoning_quality: Some(PerAgent {
                agent1: 1,
                agent2: 0,
            }),
            code_quality: Some(PerAgent {
                agent1: 1,
                agent2: 0,
            }),
        }),
        lenient: vec![ReplyLeniency::LanguageTag],
        unreadable: Some("u".into()),
    }
}

fn judge_figures() -> JudgeFigures {
    JudgeFigures {
        settings: JudgeSettings {
            judge: "openai:gpt-4o".into(),
            prompt: JudgePrompt::Winlose,
            reference: "data:trajectory.jsonl".into(),
            reference_digest: "d".into(),
            temperature: 0.2,
            top_p: Some(0.5),
            max_tokens: 1000,
            frequency_penalty: Some(1.02),
            presence_penalty: Some(1.0),
            reasoning: Some(reasoning()),
            reasks: 2,
            extra_body: Some(serde_json::Map::from_iter([("seed".to_string(), 7.into())])),
        },
        key: "k".into(),
        episodes_digest: "e".into(),
        both_orders: true,
        tasks: 1,
        set_apart: BTreeMap::new(),
        read: 1,
        unreadable: BTreeMap::new(),
        lenient: BTreeMap::from([("PyBench/3".into(), vec![ReplyLeniency::TrailingComma])]),
        reasked: BTreeMap::from([("PyBench/3".into(), 1)]),
        failed: BTreeMap::new(),
        passed: 1,
        pass_rate: 1.0,
        pass_rate_all: 1.0,
        categories: BTreeMap::new(),
        reference_pass_rate: 0.0,
        win_tie_lose: WinTieLose::default(),
        average_turns: 1.0,
        average_turns_checks: 1.0,
        agreement: Agreement {
            kappa: Some(0.5),
            ..Agreement::default()
        },
        position: Some(PositionBias::default()),
        answers: BTreeMap::from([(
            "PyBench/3".into(),
            AnswerKeys {
                paper: "k".into(),
                swapped: Some("k2".into()),
            },
        )]),
        requests: 1,
        tokens: TokenUsage::default(),
        cost_usd: Some(0.0),
        published: Some(PublishedJudge {
            model: "m".into(),
            pass_rate: 0.5,
            win_tie_lose: Some([1.0, 0.0, 1.0]),
            average_turns: 5.0,
        }),
    }
}

fn trajectory() -> TrajectoryRecord {
    TrajectoryRecord {
        messages: vec![Message {
            thinking: Some("hmm".into()),
            ..Message::new("assistant", "a")
        }],
        index: "3".into(),
        category1: String::new(),
        category2: String::new(),
        category3: String::new(),
        user: "q".into(),
        file_paths: vec![],
        attachments: vec![],
    }
}

fn stability() -> StabilitySummary {
    StabilitySummary {
        conditions: Conditions::default(),
        rounds: vec![RoundFigures {
            round: 1,
            change: Change::Listing,
            conditions: Conditions::default().changed(Change::Listing, 1),
            samples: 1,
            pass_at_1: 0.0,
            changed: 1,
            wall_seconds: 1.0,
        }],
        pass_at_1: PassAt1Range {
            run: 1.0,
            min: 0.0,
            max: 1.0,
        },
        changed: vec![ChangedVerdict {
            index: 0,
            task_id: "BigCodeBench/1".into(),
            status: Status::Pass,
            rounds: vec![ChangedIn {
                round: 1,
                change: Change::Listing,
                status: Status::Fail,
                reason: "1 of 1 tests failed".into(),
            }],
            changes_anyway: false,
        }],
    }
}

fn rerun() -> StabilityRecord {
    StabilityRecord {
        round: 1,
        change: Some(Change::Listing),
        conditions: Conditions::default().changed(Change::Listing, 1),
        record: sample(),
    }
}

#[test]
fn every_field_of_every_record_is_in_the_spec() {
    let spec = spec();
    let settings = GenerationSettings {
        split: Split::Complete,
        n: 1,
        temperature: 0.0,
        top_p: None,
        max_tokens: 1280,
    };
    let identity = Identity {
        benchmark: Some("bigcodebench".into()),
        dataset: Some("v0.1.4".into()),
        dataset_digest: Some("d".into()),
        tasks: Some(Vec::new()),
        shard: Some(Shard { index: 1, count: 4 }),
        model: Some("reference".into()),
        direct_completion: Some(false),
        generation: Some(settings),
        reasoning: Some(reasoning()),
        extra_body: Some(serde_json::Map::from_iter([("seed".to_string(), 7.into())])),
        prompt: Some("1".into()),
        split: Some("complete".into()),
        calibrated: Some(true),
        time_policy: Some(TimePolicy::DEFAULT),
        memory_mib: Some(8192),
        network: Some(false),
        guards: Some(true),
        gamed_as_official: Some(true),
        conditions: Some(Conditions::default()),
        environment: Some("e".into()),
        samples_digest: Some("s".into()),
        timeout_seconds: Some(240),
        memory_bytes: Some(1),
        processes: Some(1),
        protocol: Some("markdown".into()),
        agent: Some("codex (@openai/codex@0.171.0)".into()),
        checks: Some("faithful".into()),
        max_turns: Some(10),
        reply_tokens: Some(4000),
        cell_timeout_seconds: Some(120),
        observation_chars: Some(20_000),
    };
    let context = ContextCounts {
        lowered: 1,
        empty: 1,
    };
    let totals = GenerationTotals {
        cost_usd: Some(0.0),
        context,
        thinking: 1,
        cut_while_thinking: 1,
        reasoning_cost_usd: Some(0.0),
        ..GenerationTotals::default()
    };
    let outcome = GenerationOutcome {
        samples: 1,
        unanswered: Vec::new(),
        totals: totals.clone(),
    };
    let prices = Prices {
        prompt_usd_per_million: 2.5,
        completion_usd_per_million: 10.0,
    };
    let access = ModelAccess {
        base_url: None,
        concurrency: 8,
        request_timeout_seconds: 300.0,
        retries: 6,
        requests_per_minute: Some(500),
        tokens_per_minute: Some(30_000),
        prices: Some(prices),
        server: Some(StartedServer {
            command: "vllm serve m --port 8000".into(),
            models: vec!["m".into()],
            log: "server.log".into(),
        }),
    };
    let mut manifest = Manifest::new(Kind::BigcodebenchRun, identity.clone());
    manifest.extends = vec![Kind::BigcodebenchGenerate];
    manifest.samples = Some(PathBuf::from("samples.jsonl"));
    manifest.dataset = Some("v0.1.4".into());
    manifest.model_access = Some(access.clone());
    manifest.generation = Some(GenerationDone {
        outcome,
        finished_at: 0,
    });
    manifest.python = Some("3.11".into());
    manifest.isolation = Some(isolation());
    let fingerprint = Fingerprint {
        python: "3.11.7".into(),
        profile: "bigcodebench".into(),
        packages: "0123456789abcdef".into(),
        package_count: 1,
        nltk_data: vec!["punkt".into()],
        network: false,
        isolation: IsolationLevel::Full,
        memory_limit: Enforcement::Cgroup,
    };
    manifest.fingerprint = Some(fingerprint.clone());
    let sample = sample();
    let generation = generation();
    let summary = EvalSummary {
        scores: Scores {
            pass_at_k: BTreeMap::new(),
            tasks_judged: 0,
            tasks_set_apart: Vec::new(),
            samples_set_apart: 0,
            pass_at_k_infra_as_fail: BTreeMap::new(),
        },
        tasks_in_dataset: 0,
        tasks_missing: Vec::new(),
        samples: 0,
        statuses: BTreeMap::new(),
        official: BTreeMap::new(),
        infra: BTreeMap::new(),
        gamed: Gamed::default(),
        slowest: Vec::new(),
        ground_truth: ground_truth(),
        time_policy: TimePolicy::DEFAULT,
        budgets_saved: BudgetsSaved::default(),
        tokens: Some(TokenUsage::default()),
        cost_usd: Some(0.0),
        context: Some(context),
        stability: Some(stability()),
        wall_seconds: 0.0,
    };
    let check = CheckSummary {
        benchmark: "bigcodebench".into(),
        dataset: "v0.1.4".into(),
        environment: "e".into(),
        isolation: isolation(),
        tasks: 0,
        ground_truth: ground_truth(),
        wall_seconds: 0.0,
    };
    let missing: Vec<(&str, Vec<String>)> = [
        ("Manifest", undocumented(&manifest, &spec)),
        ("Identity", undocumented(&identity, &spec)),
        ("Fingerprint", undocumented(&fingerprint, &spec)),
        ("ModelAccess", undocumented(&access, &spec)),
        ("Prices", undocumented(&prices, &spec)),
        (
            "StartedServer",
            undocumented(access.server.as_ref().unwrap(), &spec),
        ),
        ("GenerationTotals", undocumented(&totals, &spec)),
        (
            "ModelLoad",
            undocumented(
                &ModelLoad {
                    per_minute: 0,
                    limit: 1,
                    concurrency: 8,
                },
                &spec,
            ),
        ),
        ("SampleRecord", undocumented(&sample, &spec)),
        ("GenerationRecord", undocumented(&generation, &spec)),
        (
            "ContextLimit",
            undocumented(generation.context.as_ref().unwrap(), &spec),
        ),
        ("ContextCounts", undocumented(&context, &spec)),
        ("Thinking", undocumented(&thinking(), &spec)),
        ("ReasoningSettings", undocumented(&reasoning(), &spec)),
        (
            "ThinkTag",
            undocumented(&reasoning().think_tags.unwrap()[0], &spec),
        ),
        ("Message", undocumented(&trajectory().messages[0], &spec)),
        ("TokenUsage", undocumented(&episode().tokens, &spec)),
        ("EvalSummary", undocumented(&summary, &spec)),
        ("GroundTruthSummary", undocumented(&ground_truth(), &spec)),
        ("CheckSummary", undocumented(&check, &spec)),
        (
            "BudgetsSaved",
            undocumented(&BudgetsSaved::default(), &spec),
        ),
        ("StabilitySummary", undocumented(&stability(), &spec)),
        ("RoundFigures", undocumented(&stability().rounds[0], &spec)),
        ("PassAt1Range", undocumented(&stability().pass_at_1, &spec)),
        (
            "ChangedVerdict",
            undocumented(&stability().changed[0], &spec),
        ),
        (
            "ChangedIn",
            undocumented(&stability().changed[0].rounds[0], &spec),
        ),
        ("StabilityRecord", undocumented(&rerun(), &spec)),
        ("Conditions", undocumented(&Conditions::default(), &spec)),
        ("EpisodeRecord", undocumented(&episode(), &spec)),
        ("CellRecord", undocumented(&episode().cells[0], &spec)),
        ("Verdicts", undocumented(&episode().verdicts, &spec)),
        (
            "CheckVerdict",
            undocumented(&episode().verdicts.fixed, &spec),
        ),
        ("TrajectoryRecord", undocumented(&trajectory(), &spec)),
        ("PybenchSummary", undocumented(&pybench_summary(), &spec)),
        (
            "PybenchFigures",
            undocumented(&pybench_summary().faithful, &spec),
        ),
        (
            "CategoryFigures",
            undocumented(&CategoryFigures::default(), &spec),
        ),
        (
            "PublishedFigures",
            undocumented(&pybench_summary().published.unwrap(), &spec),
        ),
        ("JudgementRecord", undocumented(&judgement(), &spec)),
        (
            "JudgeVerdict",
            undocumented(&judgement().verdict.unwrap(), &spec),
        ),
        ("JudgeRequest", undocumented(&judgement().request, &spec)),
        ("JudgeFigures", undocumented(&judge_figures(), &spec)),
        (
            "AnswerKeys",
            undocumented(&judge_figures().answers["PyBench/3"], &spec),
        ),
        (
            "JudgeSettings",
            undocumented(&judge_figures().settings, &spec),
        ),
        (
            "WinTieLose",
            undocumented(&judge_figures().win_tie_lose, &spec),
        ),
        ("Agreement", undocumented(&judge_figures().agreement, &spec)),
        (
            "PositionBias",
            undocumented(&judge_figures().position.unwrap(), &spec),
        ),
        (
            "PublishedJudge",
            undocumented(&judge_figures().published.unwrap(), &spec),
        ),
    ]
    .into_iter()
    .filter(|(_, keys)| !keys.is_empty())
    .collect();
    assert!(
        missing.is_empty(),
        "docs/run-directory.md does not name: {missing:?}"
    );
    assert!(spec.contains(&format!("\"schema\": {SCHEMA}")));
}

#[test]
fn every_event_is_in_the_spec() {
    let spec = spec();
    let events = [
        RunEvent::Notice {
            message: String::new(),
        },
        RunEvent::GenerationStarted {
            samples: 0,
            done: 0,
        },
        RunEvent::InFlight {
            requests: 0,
            load: Some(ModelLoad {
                per_minute: 0,
                limit: 1,
                concurrency: 8,
            }),
        },
        RunEvent::Answered {
            record: Box::new(generation()),
        },
        RunEvent::GenerationFinished {
            outcome: GenerationOutcome {
                samples: 0,
                unanswered: Vec::new(),
                totals: GenerationTotals::default(),
            },
        },
        RunEvent::JudgingStarted { samples: 0 },
        RunEvent::ReferencesStarted { references: 0 },
        RunEvent::JobStarted {
            task_id: String::new(),
            reference: false,
            expected_seconds: None,
        },
        RunEvent::SampleKept {
            task_id: String::new(),
            status: assay_records::Status::Pass,
        },
        RunEvent::SampleJudged {
            record: Box::new(sample()),
        },
        RunEvent::ReferenceJudged {
            record: Box::new(sample()),
        },
        RunEvent::StabilityRoundStarted {
            round: 1,
            change: Change::Listing,
            samples: 0,
            done: 0,
        },
        RunEvent::SampleRerun {
            record: Box::new(rerun()),
        },
        RunEvent::EpisodesStarted {
            episodes: 0,
            done: 0,
        },
        RunEvent::EpisodeEnded {
            task_id: String::new(),
        },
        RunEvent::EpisodeJudged {
            record: Box::new(episode()),
        },
        RunEvent::JudgeStarted {
            requests: 0,
            done: 0,
        },
        RunEvent::JudgeAnswered {
            record: Box::new(judgement()),
            asked_again: true,
        },
        RunEvent::JudgingFinished,
    ];
    for event in events {
        // A variant added without a place in this list fails to compile here.
        match &event {
            RunEvent::Notice { .. }
            | RunEvent::GenerationStarted { .. }
            | RunEvent::InFlight { .. }
            | RunEvent::Answered { .. }
            | RunEvent::GenerationFinished { .. }
            | RunEvent::JudgingStarted { .. }
            | RunEvent::ReferencesStarted { .. }
            | RunEvent::JobStarted { .. }
            | RunEvent::SampleKept { .. }
            | RunEvent::SampleJudged { .. }
            | RunEvent::ReferenceJudged { .. }
            | RunEvent::StabilityRoundStarted { .. }
            | RunEvent::SampleRerun { .. }
            | RunEvent::EpisodesStarted { .. }
            | RunEvent::EpisodeEnded { .. }
            | RunEvent::EpisodeJudged { .. }
            | RunEvent::JudgeStarted { .. }
            | RunEvent::JudgeAnswered { .. }
            | RunEvent::JudgingFinished => {}
        }
        let tag = serde_json::to_value(&event).unwrap()["event"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(spec.contains(&format!("`{tag}`")), "{tag}");
    }
}
