//! Where a plain `loom-app` keeps its data, through the real binary: with no
//! store flag it uses the user's data directory (`$XDG_DATA_HOME/loom` for a
//! user other than root; as root the test runs the app as `nobody`), asks
//! no named question and keeps the store at exit, so a second start
//! reopens it; `--temp-store` stores in a fresh directory deleted at exit;
//! a store directory that cannot be created is an error naming the path and
//! the flag.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

use testing::{Builder, LoomApp};

/// `nobody` on Debian.
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// loom-app with only the telemetry stream (on a free loopback port), plus `extra`.
fn app<'a>(extra: &[&str]) -> Builder<'a> {
    LoomApp::builder()
        .tcp_only()
        .args(extra.iter().map(|a| a.to_string()))
}

/// Starts loom-app (`customize` changing the command), waits until it
/// listens, stops it with SIGINT and returns every stdout line.
fn start_and_stop<'a>(app: Builder<'a>, customize: impl FnOnce(&mut Command) + 'a) -> Vec<String> {
    let end = app.customize(customize).start().stop();
    assert!(end.success(), "{}\n{}", end.all(), end.stderr);
    end.lines
}

#[test]
fn a_plain_start_keeps_its_store_in_the_users_data_directory_and_asks_nothing() {
    let xdg = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(xdg.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let want = xdg.path().join("loom");
    for round in 0..2 {
        let lines = start_and_stop(app(&[]), |cmd| {
            cmd.env("XDG_DATA_HOME", xdg.path())
                .env("HOME", "/nonexistent");
            if is_root() {
                // As root the default is /var/lib/loom; run as nobody to see the
                // per-user default without touching the host's directory.
                cmd.uid(NOBODY).gid(NOBODY);
            }
        });
        let listening = lines
            .iter()
            .find(|l| l.starts_with("loom-app listening on"))
            .expect("listening line");
        assert!(
            listening.contains(&format!("store {},", want.display())),
            "{listening}"
        );
        assert!(listening.contains("queries []"), "{listening}");
        assert!(
            !lines.iter().any(|l| l.starts_with("Query Latency")),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("store kept")), "{lines:?}");
        // Kept at exit, and reopened (not replaced) by the second start.
        let entries = std::fs::read_dir(&want).expect("store kept").count();
        assert!(entries > 0, "round {round}: empty store directory");
    }
}

#[test]
fn a_temp_store_is_deleted_at_exit_and_a_named_store_is_not() {
    let base = tempfile::tempdir().expect("tempdir");
    let lines = start_and_stop(
        app(&["--temp-store", &base.path().display().to_string()]),
        |_| {},
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("store {}/loom-app-", base.path().display()))),
        "{lines:?}"
    );
    assert_eq!(std::fs::read_dir(base.path()).expect("read").count(), 0);

    let kept = base.path().join("kept");
    let lines = start_and_stop(
        app(&["--temp-store", &kept.display().to_string(), "--keep-data"]),
        |_| {},
    );
    assert!(
        lines.iter().any(|l| l.starts_with("store kept in")),
        "{lines:?}"
    );
    assert_eq!(std::fs::read_dir(&kept).expect("read").count(), 1);

    let named = base.path().join("named");
    start_and_stop(app(&["--loom-path", &named.display().to_string()]), |_| {});
    assert!(std::fs::read_dir(&named).expect("kept").count() > 0);
}

#[test]
fn a_store_directory_that_cannot_be_created_names_the_path_and_the_flag() {
    let base = tempfile::tempdir().expect("tempdir");
    let file = base.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    for (flag, path) in [
        ("--loom-path", file.join("store")),
        ("--temp-store", file.join("scratch")),
    ] {
        let Err(out) = app(&[flag, &path.display().to_string()]).try_start() else {
            panic!("loom-app started with {flag} {}", path.display());
        };
        let err = &out.stderr;
        assert!(!out.success());
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains(&format!("with {flag} DIR")), "{err}");
    }
}
