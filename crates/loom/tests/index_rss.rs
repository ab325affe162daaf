//! Index memory bounded by configuration, measured as the process's
//! resident set: a store whose summaries are over ten times the index
//! budget is reopened by a child process with that budget; it answers
//! P1-style questions over old windows and over the whole store exactly
//! (brute force, rebuilt here from every record's number) with its peak
//! resident set within the budget + 64 MB.

mod common;
#[path = "support/rss_workload.rs"]
mod rss_workload;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use rss_workload::{nth, windows, BEYOND_BUDGET, INDEX_BUDGET, Q, RECORDS, SOURCES};

/// Runs the child in `mode` on `dir` and returns its standard output.
fn child(mode: &str, dir: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let out = Command::new(env!("CARGO_BIN_EXE_loom-rss-child"))
        .arg(mode)
        .arg(dir)
        .output()?;
    let text = String::from_utf8(out.stdout)?;
    if !out.status.success() {
        return Err(format!(
            "loom-rss-child {mode} failed ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(text)
}

/// The `key=value` fields of the output line starting with `tag`.
fn fields(text: &str, tag: &str) -> Result<HashMap<String, u64>, Box<dyn std::error::Error>> {
    let line = text
        .lines()
        .find(|l| l.starts_with(tag))
        .ok_or_else(|| format!("no `{tag}` line in {text}"))?;
    let mut m = HashMap::new();
    for kv in line.split_whitespace().skip(1) {
        let (k, v) = kv.split_once('=').ok_or("a key=value field")?;
        m.insert(k.to_string(), v.parse()?);
    }
    Ok(m)
}

/// Count, max and nearest-rank `Q` quantile of every (source, window),
/// from value counts (values are below 90 000), formatted as the child
/// prints them.
fn brute_force() -> Vec<String> {
    let ws = windows();
    let mut counts = vec![vec![0u64; 90_000]; ws.len() * SOURCES as usize];
    for i in 0..RECORDS {
        let (s, t, v) = nth(i);
        for (k, &(t0, t1)) in ws.iter().enumerate() {
            if (t0..=t1).contains(&t) {
                counts[k * SOURCES as usize + s.0 as usize][v as usize] += 1;
            }
        }
    }
    let mut lines = Vec::new();
    for (k, &(t0, t1)) in ws.iter().enumerate() {
        for s in 0..SOURCES {
            let c = &counts[k * SOURCES as usize + s as usize];
            let n: u64 = c.iter().sum();
            let max = c.iter().rposition(|&x| x > 0);
            let p = (n > 0).then(|| {
                let rank = loom::nearest_rank(Q, n);
                let mut seen = 0;
                c.iter()
                    .position(|&x| {
                        seen += x;
                        seen >= rank
                    })
                    .unwrap_or(0)
            });
            let show = |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
            lines.push(format!(
                "answer {s} {t0} {t1} {n} {} {}",
                show(max),
                show(p)
            ));
        }
    }
    lines
}

#[test]
fn a_store_ten_times_the_index_budget_answers_exactly_within_budget_plus_64_mb(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let written = fields(&child("write", dir.path())?, "written")?;
    eprintln!("{written:?}");
    assert!(
        written["summaries"] >= 10 * INDEX_BUDGET as u64,
        "the store's summaries ({} bytes) must be at least ten times the budget {INDEX_BUDGET}",
        written["summaries"]
    );

    let out = child("reopen", dir.path())?;
    let memory = fields(&out, "memory")?;
    eprintln!("{memory:?}");
    let answers: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("answer"))
        .map(str::to_string)
        .collect();
    assert_eq!(answers, brute_force(), "answers against brute force");
    assert!(
        answers.iter().all(|a| !a.ends_with(" 0 - -")),
        "every window holds records: {answers:?}"
    );
    assert!(
        memory["page_loads"] > 0,
        "the questions read summaries back from the segment index files"
    );
    let peak = memory["hwm_kb"] * 1024;
    assert!(
        peak <= (INDEX_BUDGET + BEYOND_BUDGET) as u64,
        "peak resident set {peak} bytes above the index budget {INDEX_BUDGET} + {BEYOND_BUDGET}; the store's summaries are {} bytes",
        written["summaries"]
    );
    Ok(())
}
