//! Python virtual environments for tests that drive real Python clients
//! (PyPI's `influxdb`, the OpenTelemetry SDK): one pinned requirements file
//! per venv, built on first use and rebuilt when the file changes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of the venv `target/<name>` at the workspace root, with the
/// packages of `requirements` installed. A stamp file in the venv holds the
/// requirements it was built from, so a changed pin rebuilds it. Panics with
/// the missing piece named (python3-venv, PyPI access).
pub fn python(name: &str, requirements: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join("target").join(name);
    let py = venv.join("bin/python");
    let want = std::fs::read_to_string(requirements)
        .unwrap_or_else(|e| panic!("reading {}: {e}", requirements.display()));
    let stamp = venv.join("requirements.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) && py.exists() {
        return py;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let s = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap_or_else(|e| {
            panic!("python3 not runnable ({e}): install python3 and python3-venv (scripts/install-deps.sh)")
        });
    assert!(
        s.success(),
        "python3 -m venv {} failed: install python3-venv (scripts/install-deps.sh)",
        venv.display()
    );
    let o = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check", "-r"])
        .arg(requirements)
        .output()
        .expect("run pip");
    assert!(
        o.status.success(),
        "pip install -r {} failed (needs PyPI access): {}",
        requirements.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(&stamp, want).expect("write the venv stamp");
    py
}
