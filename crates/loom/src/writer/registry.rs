//! Declaring sources: declarative schemas (persisted in the catalog) and
//! Rust-extractor range indexes (this process only).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::index::indexer::IndexMsg;
use crate::index::state::IndexState;
use crate::index::summaries::SourceSummaries;
use crate::schema::SourceSchema;
use crate::source::{RangeIndexSpec, SourceHandle, SourceId};
use crate::storage::catalog;

use super::open::new_source;
use super::Writer;

impl Writer {
    pub(super) fn state_for(&mut self, id: SourceId) -> usize {
        if let Some(&i) = self.ids.get(&id) {
            return i;
        }
        let i = self.sources.len();
        self.sources.push(new_source(
            id,
            super::first_payload(&self.config, &self.layout),
        ));
        Arc::make_mut(&mut self.ids).insert(id, i);
        i
    }

    /// Declares a source by its schema and returns its handle. The first
    /// declaration stores the schema in the store's catalog (durably, before
    /// this returns) and starts its range index (records the source already
    /// has, e.g. from a store written without schemas, are indexed in the
    /// background); declaring it again with the
    /// same schema (in this or a later process) returns the same handle, a
    /// different schema is [`Error::SchemaMismatch`].
    pub fn declare(&mut self, id: SourceId, schema: SourceSchema) -> Result<SourceHandle> {
        let schema = schema.validated()?;
        let idx = self.state_for(id);
        let handle = SourceHandle(idx as u32);
        match &self.sources[idx].schema {
            Some(existing) if **existing == schema => return Ok(handle),
            Some(_) => return Err(Error::SchemaMismatch(id)),
            None => {}
        }
        if self.sources[idx].index.is_some() {
            // An extractor index of this process cannot be checked against
            // the schema's field.
            return Err(Error::SchemaMismatch(id));
        }
        let mut next = self.catalog.clone();
        next.push((id, schema.clone()));
        catalog::store(&self.dir, &next)?;
        self.catalog = next;
        if let Some(state) = IndexState::from_schema(&schema) {
            self.attach_index(idx, state)?;
        }
        self.sources[idx].schema = Some(Arc::new(schema));
        self.sync();
        Ok(handle)
    }

    /// Declares several sources at once: each as [`Writer::declare`] would
    /// (same handle for a known schema, [`Error::SchemaMismatch`] for a
    /// different one), but the catalog is written once for all the new ones,
    /// so declaring many sources costs one durable catalog write, not one
    /// each. The outer error is that write's (no new source is declared
    /// then); the inner ones are per source.
    pub fn declare_all(
        &mut self,
        sources: Vec<(SourceId, SourceSchema)>,
    ) -> Result<Vec<Result<SourceHandle>>> {
        let mut out: Vec<Result<SourceHandle>> = Vec::with_capacity(sources.len());
        let mut fresh: Vec<(usize, SourceId, SourceSchema)> = Vec::new();
        for (id, schema) in sources {
            let schema = match schema.validated() {
                Ok(s) => s,
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            };
            let idx = self.state_for(id);
            let handle = SourceHandle(idx as u32);
            let pending = fresh.iter().find(|(_, fid, _)| *fid == id);
            let known = self.sources[idx]
                .schema
                .as_deref()
                .or(pending.map(|p| &p.2));
            match known {
                Some(existing) if *existing == schema => out.push(Ok(handle)),
                Some(_) => out.push(Err(Error::SchemaMismatch(id))),
                None if self.sources[idx].index.is_some() => {
                    out.push(Err(Error::SchemaMismatch(id)))
                }
                None => {
                    out.push(Ok(handle));
                    fresh.push((idx, id, schema));
                }
            }
        }
        if fresh.is_empty() {
            return Ok(out);
        }
        let mut next = self.catalog.clone();
        next.extend(fresh.iter().map(|(_, id, s)| (*id, s.clone())));
        catalog::store(&self.dir, &next)?;
        self.catalog = next;
        for (idx, _, schema) in fresh {
            if let Some(state) = IndexState::from_schema(&schema) {
                self.attach_index(idx, state)?;
            }
            self.sources[idx].schema = Some(Arc::new(schema));
        }
        self.sync();
        Ok(out)
    }

    /// Declares a source (and optionally a range index computed by a Rust
    /// function) for this process only, and returns its handle. Declaring
    /// an existing source returns the same handle; adding an index to a
    /// source that has records (e.g. recovered ones) indexes them in the
    /// background without slowing ingest. A different index than the
    /// declared one is [`Error::IndexMismatch`].
    pub fn declare_source(
        &mut self,
        id: SourceId,
        index: Option<RangeIndexSpec>,
    ) -> Result<SourceHandle> {
        let idx = self.state_for(id);
        let handle = SourceHandle(idx as u32);
        match (&self.sources[idx].index, index) {
            (Some(existing), Some(spec))
                if !existing.same_bins(spec.min, spec.interval, spec.n_bins) =>
            {
                return Err(Error::IndexMismatch(id));
            }
            (None, Some(spec)) => self.attach_index(idx, IndexState::from_spec(spec))?,
            _ => {}
        }
        self.sync();
        Ok(handle)
    }

    /// The handle of a source the store already knows (declared in this or
    /// an earlier process, or recovered), `None` for an unknown id.
    pub fn handle_of(&self, id: SourceId) -> Option<SourceHandle> {
        self.ids.get(&id).map(|&i| SourceHandle(i as u32))
    }

    /// Starts indexing a source; its existing chunks are queued for the
    /// indexer in order (read from disk: they do not count toward the lag
    /// bound, so ingest never waits for history).
    fn attach_index(&mut self, idx: usize, state: IndexState) -> Result<()> {
        let state = Arc::new(state);
        // Chunks retention dropped are neither read nor summarised.
        let s = &self.sources[idx];
        let dir = s
            .dir
            .view(self.retained_from, Some(&self.indexer.pages), s.id.0);
        let first = dir.start;
        self.send_index(IndexMsg::Declare {
            source: idx,
            state: Arc::clone(&state),
            summaries: Box::new(SourceSummaries::starting_at(
                first,
                if state.persistable() {
                    self.layout.segment_size
                } else {
                    0
                },
            )),
        })?;
        for chunk_no in first..dir.len() {
            // A paged-out entry that cannot be read back leaves its chunk
            // and the later ones unsummarised: queries scan them.
            let Ok(Some(c)) = dir.get(chunk_no) else {
                break;
            };
            self.stats.chunks_reindexed += 1;
            let block = self.block_holding(c.addr);
            self.send_index(IndexMsg::Reindex {
                source: idx,
                chunk_no,
                addr: c.addr,
                block,
            })?;
        }
        self.sources[idx].index = Some(state);
        Ok(())
    }
}
