//! Measures the stack the query path needs per level of nesting, in the
//! build at hand (debug or release): for a statement `d` levels deep, the
//! smallest thread stack on which parsing, planning, executing, printing
//! and dropping it all succeed, found by bisection over child processes (a
//! stack overflow aborts the process, so each try runs in a child).
//!
//!   cargo run [--release] -p influxql --example stack_per_level
//!
//! Prints one line per depth and per step of the path
//! (`stack depth=<d> step=<s> min_stack_kib=<k>`), then per step
//! `bytes_per_level=<b>` and how many times over the full depth
//! (`MAX_DEPTH`) fits into the smallest stack queries run on.

#[path = "../tests/support/hostile.rs"]
mod hostile;

use std::process::{Command, Stdio};

use influxql::parse::depth::SMALLEST_QUERY_STACK;
use influxql::parse::{parse_statement, MAX_DEPTH};
use influxql::Limits;

/// Steps measured apart (each includes parsing).
const STEPS: [&str; 4] = ["parse", "print", "plan-and-run", "run-or"];

/// Runs `step` on a statement `depth` levels deep; panics if it fails.
fn step(r: &loom::Reader, step: &str, depth: usize) {
    match step {
        "parse" => {
            parse_statement(&hostile::nested_and(depth)).expect("parses");
        }
        "print" => {
            let ast = parse_statement(&hostile::nested_and(depth)).expect("parses");
            assert!(ast.to_string().len() > depth);
        }
        "plan-and-run" => {
            let q = hostile::nested_and(depth);
            let out = influxql::run(&r.snapshot(), &q, 0, &Limits::default()).expect("runs");
            assert!(out[0].is_ok());
        }
        "run-or" => {
            let q = hostile::nested_and_or(depth);
            let out = influxql::run(&r.snapshot(), &q, 0, &Limits::default()).expect("runs");
            assert!(out[0].is_ok());
        }
        s => panic!("unknown step {s}"),
    }
}

/// Child: `--child STEP DEPTH STACK_BYTES`; exits 0 when the step ran.
fn child(args: &[String]) {
    let (name, depth, stack) = (
        args[0].clone(),
        args[1].parse::<usize>().expect("depth"),
        args[2].parse::<usize>().expect("stack bytes"),
    );
    let (_dir, _w, r) = hostile::store(5);
    let t = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || step(&r, &name, depth))
        .expect("spawn");
    std::process::exit(if t.join().is_ok() { 0 } else { 2 });
}

fn runs(name: &str, depth: usize, stack: usize) -> bool {
    let exe = std::env::current_exe().expect("current exe");
    Command::new(exe)
        .args(["--child", name, &depth.to_string(), &stack.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Smallest stack (4 KiB steps) on which `name` runs at `depth`.
fn min_stack(name: &str, depth: usize) -> usize {
    let (mut lo, mut hi) = (16 << 10, 64 << 20);
    assert!(
        runs(name, depth, hi),
        "{name} fails at depth {depth} even on {hi} bytes"
    );
    while hi - lo > 4096 {
        let mid = (lo + hi) / 2 / 4096 * 4096;
        if runs(name, depth, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]);
    }
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let low = 10;
    for name in STEPS {
        let a = min_stack(name, low);
        let b = min_stack(name, MAX_DEPTH);
        println!(
            "stack build={build} step={name} depth={low} min_stack_kib={}",
            a >> 10
        );
        println!(
            "stack build={build} step={name} depth={MAX_DEPTH} min_stack_kib={}",
            b >> 10
        );
        let per_level = (b.saturating_sub(a)) as f64 / (MAX_DEPTH - low) as f64;
        println!(
            "stack build={build} step={name} bytes_per_level={per_level:.0} \
             full_depth_fits_smallest_stack_times={:.1}",
            SMALLEST_QUERY_STACK as f64 / b as f64
        );
    }
}
