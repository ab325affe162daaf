//! Exporting a store's durable records: batches of log positions, each
//! turned into one Parquet file per measurement, host and hour, the
//! manifest rewritten after every file; then a tail batch of the records
//! still in open chunks (durable in the store's journal, not sealed yet:
//! see `manifest`), so a slow series is not held back until its chunk seals.

use std::collections::BTreeMap;
use std::sync::Arc;

use loom::{Snapshot, SourceId};

use crate::error::Result;
use crate::file::{self, Encoding, Slice};
use crate::layout::Partition;
use crate::manifest::{Manifest, Mark, Pending, TailBatch};
use crate::series::Series;
use crate::target::Target;

/// Export settings.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// `host` of series without a `host` tag of their own; also the
    /// exporter's name in the target (its manifest).
    pub host: String,
    /// Most log bytes one batch covers: bounds the memory a batch holds
    /// (about the same again in decoded columns).
    pub max_batch_log_bytes: u64,
    /// Parquet encoding.
    pub encoding: Encoding,
}

impl ExportConfig {
    /// Defaults for exporting as `host`.
    pub fn new(host: impl Into<String>) -> ExportConfig {
        ExportConfig {
            host: host.into(),
            max_batch_log_bytes: 64 << 20,
            encoding: Encoding::default(),
        }
    }
}

/// What one `export` call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Records written to files.
    pub records: u64,
    /// Files written.
    pub files: u64,
    /// Parquet bytes written.
    pub bytes: u64,
    /// Batches committed.
    pub batches: u64,
    /// Records of sources without a schema (not exportable), skipped.
    pub records_without_schema: u64,
    /// Records found dropped by retention before they were exported.
    pub records_lost_to_retention: u64,
    /// The log position reached.
    pub position: u64,
}

/// How far behind the store an exporter is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Durable records not exported yet.
    pub records: u64,
    /// Log bytes between the position and the snapshot's end.
    pub log_bytes: u64,
}

/// Exports one store's records to one target, resuming where its manifest
/// says the last run stopped.
pub struct Exporter {
    target: Target,
    cfg: ExportConfig,
    manifest: Manifest,
    /// The last snapshot exported from: it still lists chunks retention
    /// drops later, so their records can be counted as lost.
    prev: Option<Snapshot>,
}

impl Exporter {
    /// An exporter to `target`; reads (or starts) its manifest.
    pub fn open(target: Target, cfg: ExportConfig) -> Result<Exporter> {
        let manifest = Manifest::load(&target, &cfg.host)?;
        Ok(Exporter {
            target,
            cfg,
            manifest,
            prev: None,
        })
    }

    /// The manifest as last written.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Records of `snap` not exported yet.
    pub fn backlog(&self, snap: &Snapshot) -> Backlog {
        let (from, end) = (self.manifest.position, snap.log_end());
        Backlog {
            records: snap
                .sources()
                .into_iter()
                .map(|id| snap.count_log(id, from, end))
                .sum(),
            log_bytes: end.saturating_sub(from),
        }
    }

    /// Exports every record of `snap` (which must be a durable snapshot:
    /// see `loom::Reader::durable_snapshot`) above the manifest's position,
    /// finishing a batch a previous run left half done first. On error
    /// the manifest holds what was completed; call again to go on.
    pub fn export(&mut self, snap: &Snapshot) -> Result<Round> {
        let mut round = Round::default();
        self.account_retention(snap, &mut round)?;
        // Seen from here on: what retention drops of it later is counted.
        self.prev = Some(snap.clone());
        if let Some(p) = self.manifest.pending.clone() {
            self.batch(snap, p, &mut round)?;
        }
        let end = snap.log_end();
        while self.manifest.position < end {
            let from = self.manifest.position;
            let to = end.min(from.saturating_add(self.cfg.max_batch_log_bytes.max(1)));
            let p = Pending {
                from,
                to,
                done: Vec::new(),
                tail: None,
            };
            self.manifest.pending = Some(p.clone());
            self.manifest.save(&self.target)?;
            self.batch(snap, p, &mut round)?;
        }
        self.export_open_chunks(snap, &mut round)?;
        round.position = self.manifest.position;
        Ok(round)
    }

    /// A tail batch of what open chunks hold beyond the manifest's marks,
    /// when they hold anything new. Runs once every sealed chunk of `snap`
    /// is exported: a source's records after the position are then its
    /// open chunk alone.
    fn export_open_chunks(&mut self, snap: &Snapshot, round: &mut Round) -> Result<()> {
        let mut upto = BTreeMap::new();
        for id in snap.sources() {
            if snap.open_tail_count(id) == 0 || snap.schema(id).is_none() {
                continue;
            }
            let mut last = Mark::default();
            snap.scan_open_tail(id, |ts, _| last = last.next(ts))?;
            if self.manifest.tails.get(&id.0) != Some(&last) {
                upto.insert(id.0, last);
            }
        }
        if upto.is_empty() {
            return Ok(());
        }
        let position = self.manifest.position;
        let p = Pending {
            from: position,
            to: position,
            done: Vec::new(),
            tail: Some(TailBatch {
                number: self.manifest.tail_batches,
                upto,
            }),
        };
        self.manifest.pending = Some(p.clone());
        self.manifest.save(&self.target)?;
        self.batch(snap, p, round)
    }

    /// Counts (and records in the manifest) what retention dropped above
    /// the position before it was exported: records of chunks a snapshot
    /// seen earlier listed, and the log bytes no snapshot seen showed.
    fn account_retention(&mut self, snap: &Snapshot, round: &mut Round) -> Result<()> {
        let (pos, kept) = (self.manifest.position, snap.retained_from());
        if kept <= pos {
            return Ok(());
        }
        let seen_end = self
            .prev
            .as_ref()
            .map_or(pos, |p| p.log_end())
            .clamp(pos, kept);
        let lost: u64 = self.prev.as_ref().map_or(0, |prev| {
            prev.sources()
                .into_iter()
                .map(|id| prev.count_log(id, pos, seen_end))
                .sum()
        });
        let unseen = kept - seen_end;
        log::error!(
            "export to {}: retention dropped log {pos}..{kept} before it was exported: {lost} records counted, {unseen} bytes of log never seen",
            self.target.url()
        );
        self.manifest.records_lost_to_retention += lost;
        self.manifest.log_bytes_lost_to_retention += unseen;
        round.records_lost_to_retention += lost;
        self.manifest.position = kept;
        if let Some(p) = &mut self.manifest.pending {
            p.from = p.from.max(kept);
            p.to = p.to.max(kept);
        }
        self.manifest.save(&self.target)
    }

    /// Writes the files of one batch not written yet, then commits it.
    fn batch(&mut self, snap: &Snapshot, p: Pending, round: &mut Round) -> Result<()> {
        let mut series = Vec::new();
        for id in snap.sources() {
            let n = match &p.tail {
                Some(t) if !t.upto.contains_key(&id.0) => 0,
                // Whatever the count, the marks say what goes out.
                Some(_) => 1,
                None => snap.count_log(id, p.from, p.to),
            };
            if n == 0 {
                continue;
            }
            let Some(schema) = snap.schema(id) else {
                round.records_without_schema += n;
                continue;
            };
            series.push((id, schema.clone()));
        }
        // Series order: measurement, then tag values, so every file's rows
        // come sorted by series and then time.
        series.sort_by(|a, b| {
            (&a.1.measurement, &a.1.tags, a.0).cmp(&(&b.1.measurement, &b.1.tags, b.0))
        });
        let mut decoded: Vec<Series> = Vec::with_capacity(series.len());
        for (id, schema) in series {
            decoded.push(self.read_series(snap, id, Arc::new(schema), &p)?);
        }
        let mut parts: BTreeMap<Partition, Vec<Slice>> = BTreeMap::new();
        for (idx, s) in decoded.iter().enumerate() {
            for (hour, a, b) in s.hour_runs() {
                let key = Partition {
                    measurement: s.schema.measurement.clone(),
                    host: s.host.clone(),
                    hour,
                };
                parts.entry(key).or_default().push(Slice { idx, a, b });
            }
        }
        for (part, slices) in parts {
            if p.done.contains(&part.dir()) {
                continue;
            }
            let first = slices.iter().map(|s| decoded[s.idx].times[s.a]).min();
            let last = slices.iter().map(|s| decoded[s.idx].times[s.b - 1]).max();
            let (first, last) = (first.unwrap_or(0), last.unwrap_or(0));
            let name = match &p.tail {
                None => part.file(first, last, p.from),
                Some(t) => part.tail_file(first, last, p.from, t.number),
            };
            let batch = file::batch(&decoded, &slices)?;
            let bytes = file::encode(&batch, self.cfg.encoding, &name)?;
            let (rows, len) = (batch.num_rows() as u64, bytes.len() as u64);
            self.target.put(&name, bytes.into())?;
            let m = &mut self.manifest;
            if let Some(pending) = &mut m.pending {
                pending.done.push(part.dir());
            }
            m.records_exported += rows;
            m.files_written += 1;
            m.bytes_written += len;
            m.save(&self.target)?;
            round.records += rows;
            round.files += 1;
            round.bytes += len;
        }
        let m = &mut self.manifest;
        match &p.tail {
            Some(t) => {
                m.tails.extend(t.upto.iter().map(|(&id, &mark)| (id, mark)));
                m.tail_batches = t.number + 1;
            }
            // A marked source's first chunk in this batch is the one its
            // open chunk sealed into: its mark is spent.
            None => m
                .tails
                .retain(|&id, _| snap.count_log(SourceId(id), p.from, p.to) == 0),
        }
        m.position = p.to;
        m.pending = None;
        m.save(&self.target)?;
        round.batches += 1;
        Ok(())
    }

    fn read_series(
        &self,
        snap: &Snapshot,
        id: SourceId,
        schema: Arc<loom::SourceSchema>,
        p: &Pending,
    ) -> Result<Series> {
        let host = schema
            .tag("host")
            .map_or_else(|| self.cfg.host.clone(), str::to_string);
        let mut s = Series::new(schema, host);
        // Records up to `after` went out in a tail batch; a tail batch
        // takes them up to its own mark.
        let after = self.manifest.tails.get(&id.0).copied();
        let upto = p.tail.as_ref().and_then(|t| t.upto.get(&id.0).copied());
        let mut at = Mark::default();
        let mut push = |ts: u64, bytes: &[u8]| {
            at = at.next(ts);
            if after.is_none_or(|a| at > a) && upto.is_none_or(|u| at <= u) {
                s.push(ts, bytes);
            }
        };
        match p.tail {
            None => {
                snap.scan_log(id, p.from, p.to, &mut push)?;
            }
            // The records after the position: the open chunk, or (a tail
            // batch redone after a restart) the chunk it sealed into.
            Some(_) => {
                snap.scan_log(id, p.from, u64::MAX, &mut push)?;
                snap.scan_open_tail(id, &mut push)?;
            }
        }
        Ok(s)
    }
}
