//! The writer thread: appends, syncs, advances the durable mark.

use std::path::Path;

use crossbeam_channel::Receiver;
use endpoint::DurableMark;

use super::files::Files;
use super::{FileNo, Job};

/// The writer thread: appends every commit queued since it last looked,
/// syncs once, advances the mark.
pub(super) fn write_loop(dir: &Path, spares: Vec<FileNo>, rx: &Receiver<Job>, mark: &DurableMark) {
    let mut files = Files::new(dir, spares);
    let mut errors = 0u64;
    while let Ok(first) = rx.recv() {
        let mut touched: Vec<FileNo> = Vec::new();
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        let mut result = Ok(());
        for job in std::iter::once(first).chain(rx.try_iter()) {
            match job {
                Job::Append {
                    file,
                    entry,
                    position,
                } => {
                    lo = lo.min(position);
                    hi = hi.max(position);
                    if result.is_ok() {
                        result = files.append(file, &entry);
                        if !touched.contains(&file) {
                            touched.push(file);
                        }
                    }
                }
                Job::Delete(list) => {
                    for n in list {
                        files.retire(n);
                    }
                }
            }
        }
        if hi == 0 {
            continue;
        }
        let result = result.and_then(|()| files.sync(&touched));
        match result {
            Ok(()) => mark.advance(hi),
            Err(e) => {
                errors += 1;
                if errors <= 10 {
                    log::error!(
                        "intake log {}: {e}: OTLP requests are answered \"retry later\"",
                        dir.display()
                    );
                }
                mark.fail(lo, hi);
            }
        }
    }
}
