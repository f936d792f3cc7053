mod common;

use assay_sandbox::{Status, UnittestJob};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_solution_passes() {
    let engine = common::engine().await;
    println!("{:#?}", engine.isolation());
    let outcome = engine
        .run_unittest(UnittestJob::new(common::DOUBLE, common::TRIVIAL_TEST))
        .await;
    println!("{outcome:#?}");
    assert_eq!(outcome.status, Status::Pass, "{}", outcome.reason);
}
