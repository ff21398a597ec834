//! rnats: the runtime statistics `RaftCore` keeps when the `runtime-stats` feature is off.
//!
//! Without the feature nothing can read them (`Raft::runtime_stats` exists only with it), yet the
//! full [`RuntimeStats`](super::RuntimeStats) holds 15 histograms of 252 buckets (~2 KiB each):
//! ~32 KiB per Raft group, resident in every idle group. This stand-in has the same recording
//! methods and fields, and records nothing.

use std::marker::PhantomData;

use crate::Config;
use crate::RaftTypeConfig;
use crate::core::NotificationName;
use crate::core::raft_msg::RaftMsgName;
use crate::core::stage::Stage;
use crate::engine::CommandName;
use crate::type_config::alias::InstantOf;

/// A histogram that records nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct NoHistogram;

impl NoHistogram {
    pub(crate) fn record(&mut self, _value: u64) {}
}

/// [`RuntimeStats`](super::RuntimeStats)' recording surface, recording nothing.
#[derive(Debug)]
pub(crate) struct NoRuntimeStats<C: RaftTypeConfig> {
    pub(crate) apply_batch: NoHistogram,
    pub(crate) append_batch: NoHistogram,
    pub(crate) raft_msg_per_run: NoHistogram,
    pub(crate) write_batch: NoHistogram,
    pub(crate) raft_msg_budget: NoHistogram,
    pub(crate) notification_budget: NoHistogram,
    pub(crate) raft_msg_usage_permille: NoHistogram,
    pub(crate) notification_usage_permille: NoHistogram,
    _phantom: PhantomData<C>,
}

impl<C: RaftTypeConfig> NoRuntimeStats<C> {
    pub(crate) fn new(_config: &Config) -> Self {
        Self {
            apply_batch: NoHistogram,
            append_batch: NoHistogram,
            raft_msg_per_run: NoHistogram,
            write_batch: NoHistogram,
            raft_msg_budget: NoHistogram,
            notification_budget: NoHistogram,
            raft_msg_usage_permille: NoHistogram,
            notification_usage_permille: NoHistogram,
            _phantom: PhantomData,
        }
    }

    pub(crate) fn record_command(&mut self, _name: CommandName) {}

    pub(crate) fn record_raft_msg(&mut self, _name: RaftMsgName) {}

    pub(crate) fn record_notification(&mut self, _name: NotificationName) {}

    pub(crate) fn record_log_stage_now(&mut self, _stage: Stage, _index: u64) {}

    pub(crate) fn record_log_stage(&mut self, _stage: Stage, _index: u64, _now: InstantOf<C>) {}
}
