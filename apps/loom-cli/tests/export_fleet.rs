//! `loom export` and `loom fleet query` (which runs `loom-fleet`, crate
//! `fleet`, its own workspace) as users run them: a store made here,
//! exported to a directory by the CLI (twice: the second run finds nothing
//! new), then asked in SQL; answers equal brute force in every output
//! format, bad input is refused with its cause. The SQL half needs
//! `loom-fleet` built (`make fleet-build`): it is `#[ignore]`d in `make
//! test` and run by `make fleet-test`.

use std::process::Command;

use loom::{FieldDef, FieldType, RecordBuilder, SourceId, SourceSchema};

fn schema(name: &str, host: Option<&str>) -> SourceSchema {
    let mut tags = vec![("name".to_string(), name.to_string())];
    if let Some(h) = host {
        tags.push(("host".into(), h.into()));
    }
    SourceSchema {
        measurement: "syscall".into(),
        tags,
        fields: vec![FieldDef {
            name: "duration_us".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: None,
    }
}

fn loom(args: &[&str]) -> (bool, String, String) {
    if args.first() == Some(&"fleet") {
        // `loom fleet` execs loom-fleet (crate `fleet`, its own workspace).
        let fleet = std::path::Path::new(env!("CARGO_BIN_EXE_loom")).with_file_name("loom-fleet");
        assert!(
            fleet.exists(),
            "{} missing: make fleet-build",
            fleet.display()
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_loom"))
        .args(args)
        .output()
        .expect("run loom");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// By host: the durations of the records exported.
type ByHost = std::collections::BTreeMap<&'static str, Vec<u64>>;

#[test]
fn export_is_resumable_and_refuses_bad_targets() {
    let dir = tempfile::tempdir().expect("tempdir");
    export_store(dir.path());
}

#[test]
#[ignore = "needs loom-fleet (DataFusion, its own workspace): make fleet-test"]
fn export_then_fleet_query_matches_brute_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut by_host = export_store(dir.path());
    let tree = dir.path().join("tree");
    fleet_queries(tree.to_str().expect("utf-8"), &mut by_host);
}

#[test]
fn fleet_query_without_loom_fleet_says_how_to_build_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let loom = dir.path().join("loom");
    std::fs::copy(env!("CARGO_BIN_EXE_loom"), &loom).expect("copy loom");
    let o = Command::new(&loom)
        .args(["fleet", "query", "--from", "/tmp", "SELECT 1"])
        .env("PATH", dir.path())
        .output()
        .expect("run loom");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("make fleet-build"), "{err}");
}

/// A store of two hosts' syscall records in `dir/store`, exported by the
/// CLI to `dir/tree`; what was exported, by host.
fn export_store(dir: &std::path::Path) -> ByHost {
    let store = dir.join("store");
    let (mut w, _r) = loom::open(&store, loom::Config::default()).expect("open");
    let a = w
        .declare(SourceId(1), schema("pread64", None))
        .expect("declare");
    let b = w
        .declare(SourceId(2), schema("pread64", Some("db-2")))
        .expect("declare");
    let mut rb = RecordBuilder::new();
    let mut by_host = ByHost::new();
    let t0 = 1_795_427_940_000_000u64;
    for i in 0..50_000u64 {
        let d = (i * 7919) % 10_007;
        rb.start(8);
        rb.u64(0, d);
        let (h, host) = if i % 3 == 0 { (b, "db-2") } else { (a, "db-1") };
        w.push(h, t0 + i * 100, rb.bytes()).expect("push");
        by_host.entry(host).or_default().push(d);
    }
    w.close().expect("close");
    let tree = dir.join("tree");
    let (s, tree) = (
        store.to_str().expect("utf-8"),
        tree.to_str().expect("utf-8"),
    );
    let (ok, out, err) = loom(&["export", "--store", s, "--to", tree, "--host", "db-1"]);
    assert!(ok, "{err}");
    assert!(out.contains("exported 50000 records"), "{out}");
    let (ok, out, _) = loom(&["export", "--store", s, "--to", tree, "--host", "db-1"]);
    assert!(ok && out.contains("exported 0 records"), "{out}");
    let (ok, _, err) = loom(&["export", "--store", s, "--to", "ftp://x/y"]);
    assert!(!ok && err.contains("unknown scheme"), "{err}");
    by_host
}

fn fleet_queries(tree: &str, by_host: &mut ByHost) {
    let sql =
        "SELECT host, count(*) AS n, max(duration_us) AS mx, percentile(duration_us, 99.99) AS p \
               FROM syscall GROUP BY host ORDER BY host";
    let (ok, csv, err) = loom(&["fleet", "query", "--from", tree, "--format", "csv", sql]);
    assert!(ok, "{err}");
    let mut want = String::from("host,n,mx,p\n");
    for (h, v) in by_host.iter_mut() {
        v.sort_unstable();
        let rank = influxql::influx_rank(v.len() as u64, 99.99).expect("rank");
        want += &format!(
            "{h},{},{},{}\n",
            v.len(),
            v[v.len() - 1],
            v[rank as usize - 1]
        );
    }
    assert_eq!(csv, want);
    let (ok, json, _) = loom(&["fleet", "query", "--from", tree, "--format", "json", sql]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v[0]["host"], "db-1");
    assert_eq!(v[0]["n"].as_u64(), Some(by_host["db-1"].len() as u64));
    let (ok, table, _) = loom(&["fleet", "query", "--from", tree, sql]);
    assert!(
        ok && table.starts_with("host") && table.contains("db-2"),
        "{table}"
    );

    // Refusals name their cause.
    let (ok, _, err) = loom(&["fleet", "query", "--from", tree, "SELECT nope FROM syscall"]);
    assert!(!ok && err.contains("nope"), "{err}");
    let (ok, _, err) = loom(&["fleet", "query", "--from", "/no/such/tree", "SELECT 1"]);
    assert!(!ok && err.contains("no such directory"), "{err}");
}
