//! What a job's code ought not to depend on is fixed on purpose, and changes only when asked:
//! the order directory listings come in, the seeds of unseeded randomness, and the errors a
//! non-root user meets writing where it may not.

mod common;

use assay_sandbox::{Conditions, Engine, ListingOrder, ScriptJob, UnittestJob};
use common::{assert_passed, config, json_report, run};
use serde_json::Value;

/// Lists a directory of ten files, made in name order, every way Python can.
const LISTINGS: &str = r#"
import glob, json, os, pathlib
os.mkdir("d")
names = [f"f{i:02}.txt" for i in range(10)]
for name in names:
    open(os.path.join("d", name), "w").close()
with os.scandir("d") as entries:
    scanned = [e.name for e in entries]
print(json.dumps({
    "made": names,
    "listdir": os.listdir("d"),
    "listdir_bytes": [n.decode() for n in os.listdir(b"d")],
    "scandir": scanned,
    "glob": [os.path.basename(p) for p in glob.glob("d/*")],
    "walk": next(os.walk("d"))[2],
    "pathlib": [p.name for p in pathlib.Path("d").iterdir()],
    "fd": os.listdir(os.open("d", os.O_RDONLY)),
    "cwd": os.listdir() == os.listdir("."),
}))
"#;

/// Draws from every unseeded source the conditions seed.
const DRAWS: &str = r#"
import json, os, random
import numpy as np
from faker import Faker
print(json.dumps({
    "random": random.random(),
    "numpy": float(np.random.rand()),
    "faker": Faker().random_int(1, 10**9),
    "set": list({f"k{i}" for i in range(20)}),
    "hash": hash("k"),
    "hash_seed": os.environ.get("PYTHONHASHSEED"),
}))
"#;

fn engine_with(conditions: Conditions) -> Engine {
    let mut config = config();
    config.conditions = conditions;
    run(Engine::start(config)).expect("engine starts")
}

/// Refusals at `/` for a job: what creating a folder and a file there raise.
const AT_THE_ROOT: &str = r#"
import errno, json, os
def attempt(action):
    try:
        action()
        return "done"
    except OSError as e:
        return f"{type(e).__name__} {errno.errorcode[e.errno]}"
def write_file():
    with open("/result.txt", "w") as f:
        f.write("x")
print(json.dumps({
    "mkdir": attempt(lambda: os.makedirs("/target/out")),
    "open": attempt(write_file),
    "access": os.access("/", os.W_OK),
    "tmp": attempt(lambda: os.makedirs("/tmp/target/out")),
    "workspaces": os.path.exists("/ws"),
}))
"#;

fn assert_refused_at_the_root(out: &Value) {
    assert_eq!(out["mkdir"], "PermissionError EACCES");
    assert_eq!(out["open"], "PermissionError EACCES");
    assert_eq!(out["access"], false);
    assert_eq!(out["tmp"], "done");
    assert_eq!(
        out["workspaces"], false,
        "no other job's workspace in sight"
    );
}

fn report(engine: &Engine, code: &str) -> Value {
    json_report(&run(engine.run_script(ScriptJob::new(code))))
}

fn names(value: &Value) -> Vec<String> {
    serde_json::from_value(value.clone()).unwrap()
}

/// Every way of listing gives one order; returns it.
fn one_order(listed: &Value) -> Vec<String> {
    let order = names(&listed["listdir"]);
    for way in ["listdir_bytes", "scandir", "glob", "walk", "pathlib", "fd"] {
        assert_eq!(names(&listed[way]), order, "{way} lists in another order");
    }
    assert_eq!(listed["cwd"], true);
    order
}

#[test]
fn listings_come_in_the_chosen_order_every_way_python_lists() {
    let hashed = |key| Conditions {
        listing: ListingOrder::Hashed,
        listing_key: key,
        seed: 0,
    };
    let default = engine_with(Conditions::default());
    let first = report(&default, LISTINGS);
    let made = names(&first["made"]);
    let order = one_order(&first);
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, made, "every file listed once");
    assert_ne!(order, made, "the default order is not creation order");
    let mut newest_first = made.clone();
    newest_first.reverse();
    assert_ne!(order, newest_first, "the default order is not tmpfs's");
    assert_eq!(
        one_order(&report(&default, LISTINGS)),
        order,
        "the same order in every job"
    );
    assert_eq!(Conditions::default(), hashed(0));
    assert_eq!(
        one_order(&report(&engine_with(hashed(0)), LISTINGS)),
        order,
        "the same order from another engine with the same key"
    );
    assert_ne!(
        one_order(&report(&engine_with(hashed(1)), LISTINGS)),
        order,
        "another key, another order"
    );
    let by_name = engine_with(Conditions {
        listing: ListingOrder::Name,
        ..Conditions::default()
    });
    assert_eq!(one_order(&report(&by_name, LISTINGS)), made);
    let kernel = engine_with(Conditions {
        listing: ListingOrder::Kernel,
        ..Conditions::default()
    });
    assert_eq!(
        one_order(&report(&kernel, LISTINGS)),
        newest_first,
        "a tmpfs lists newest first"
    );
}

#[test]
fn unseeded_randomness_is_seeded_by_the_conditions() {
    let default = engine_with(Conditions::default());
    let first = report(&default, DRAWS);
    assert_eq!(first["hash_seed"], "0");
    let again = report(&default, DRAWS);
    assert_eq!(first, again, "every job draws the same");
    // Another worker with the same seed: the same hash secret, so the same set order.
    assert_eq!(
        report(&engine_with(Conditions::default()), DRAWS),
        first,
        "every engine draws the same"
    );
    let other = report(
        &engine_with(Conditions {
            seed: 7,
            ..Conditions::default()
        }),
        DRAWS,
    );
    assert_eq!(other["hash_seed"], "7");
    for source in ["random", "numpy", "faker", "set", "hash"] {
        assert_ne!(first[source], other[source], "{source} follows the seed");
    }
}

#[test]
fn writing_where_a_non_root_user_may_not_is_a_permission_error() {
    let engine = engine_with(Conditions::default());
    assert_refused_at_the_root(&report(&engine, AT_THE_ROOT));

    // A job owns its root, so it can make it writable (Landlock still keeps it from writing
    // there): whatever it does, it does to its own root only.
    let planted = report(
        &engine,
        "import json, os\nos.chmod('/', 0o755)\ntry:\n    open('/planted', 'w').write('x')\nexcept PermissionError:\n    pass\nprint(json.dumps(oct(os.stat('/').st_mode & 0o777)))",
    );
    assert_eq!(planted, "0o755");
    let next = report(
        &engine,
        "import json, os\nprint(json.dumps([os.path.exists('/planted'), oct(os.stat('/').st_mode & 0o777)]))",
    );
    assert_eq!(next, serde_json::json!([false, "0o555"]));
}

/// A sample as the official image judges it: it catches `PermissionError` where it may not
/// write, and its test expects that (a read-only file system error would escape it).
#[test]
fn a_sample_that_catches_permission_errors_passes_as_officially() {
    let engine = engine_with(Conditions::default());
    let code = r#"
import os
def task_func(path):
    try:
        os.makedirs(path, exist_ok=True)
        return "made"
    except PermissionError:
        return "refused"
"#;
    let test = r#"
import unittest
class TestCases(unittest.TestCase):
    def test_outside_the_workspace(self):
        self.assertEqual(task_func("/target/out"), "refused")
    def test_inside_it(self):
        self.assertEqual(task_func("out"), "made")
"#;
    assert_passed(&run(engine.run_unittest(UnittestJob::new(code, test))));
}

/// The refusal comes from the root's mode, not only from Landlock: the same without it.
#[test]
fn the_root_refuses_writes_without_landlock_too() {
    let mut config = config();
    config.landlock = false;
    config.isolation = assay_sandbox::IsolationMode::Auto;
    let engine = run(Engine::start(config)).expect("engine starts");
    assert_refused_at_the_root(&report(&engine, AT_THE_ROOT));
}

/// The devices' folder, shared by a worker's jobs, is mounted read-only: where assay runs
/// unprivileged a job owns it, and could otherwise chmod it for every job after it. Its
/// devices still work.
#[test]
fn the_devices_folder_is_read_only_and_its_devices_work() {
    let engine = engine_with(Conditions::default());
    let out = report(
        &engine,
        "import json, os\nopen('/dev/null', 'w').write('x')\nprint(json.dumps([bool(os.statvfs('/dev').f_flag & os.ST_RDONLY), len(open('/dev/urandom', 'rb').read(8))]))",
    );
    assert_eq!(out, serde_json::json!([true, 8]));
}
