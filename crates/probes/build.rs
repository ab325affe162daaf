//! Builds the eBPF programs in `src/bpf/` and their Rust skeletons.
//!
//! `vmlinux.h` is generated here from the running kernel's BTF
//! (`/sys/kernel/btf/vmlinux`, override with `LOOM_VMLINUX_BTF`) with
//! `bpftool`; it is never committed. Needs `clang` (BPF target) and `bpftool`.

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const PROBES: [&str; 4] = ["syscall_latency", "page_cache", "packet", "agent"];

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let btf =
        env::var("LOOM_VMLINUX_BTF").unwrap_or_else(|_| "/sys/kernel/btf/vmlinux".to_string());
    println!("cargo:rerun-if-env-changed=LOOM_VMLINUX_BTF");
    println!("cargo:rerun-if-changed=src/bpf/events.h");
    println!("cargo:rerun-if-changed=src/bpf/agent_events.h");

    let vmlinux = out_dir.join("vmlinux.h");
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file", &btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run bpftool ({e}); install it (Debian: apt-get install bpftool)")
        });
    if !dump.status.success() {
        panic!(
            "bpftool btf dump of {btf} failed: {}; the kernel needs CONFIG_DEBUG_INFO_BTF",
            String::from_utf8_lossy(&dump.stderr)
        );
    }
    fs::write(&vmlinux, &dump.stdout).expect("write vmlinux.h into OUT_DIR");

    for name in PROBES {
        let src = format!("src/bpf/{name}.bpf.c");
        println!("cargo:rerun-if-changed={src}");
        SkeletonBuilder::new()
            .source(&src)
            .obj(out_dir.join(format!("{name}.bpf.o")))
            .clang_args([
                "-I".into(),
                out_dir.clone().into_os_string(),
                "-Isrc/bpf".into(),
                "-D__TARGET_ARCH_x86".into(),
                "-g".into(),
                "-O2".into(),
            ])
            .build_and_generate(out_dir.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| panic!("building {src} failed: {e:#}"));
    }
}
