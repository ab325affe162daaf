//! Where a built binary of this workspace is.

use std::path::PathBuf;

/// The binary `name` of the build running this test: tests run from
/// `target/<profile>/deps/`, binaries sit in `target/<profile>/` (what
/// `CARGO_BIN_EXE_*` names for a package's own binaries, and the same place
/// for the other packages'). Panics with the command that builds it when
/// it is missing (`make test` builds every binary first).
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let bin = profile.join(name);
    let release = profile.file_name().is_some_and(|n| n == "release");
    assert!(
        bin.is_file(),
        "{} is missing: build it first (cargo build{} --bins --workspace, or make test)",
        bin.display(),
        if release { " --release" } else { "" }
    );
    bin
}
