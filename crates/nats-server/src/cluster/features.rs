//! What the rnats servers of a group can read ([`Feature`], [`Meta::reads`]): the version gate
//! for rolling upgrades of rnats itself.
//!
//! A log form added later (the meta log's `member` entries, the binary consumer records) cannot
//! be applied by an older build: its group would stop there. So each server announces the
//! feature level of its build ([`LEVEL`]) in its meta hello (`level`; builds from before it
//! announce none: 0), and a writer uses a newer form only when every member of the group that
//! applies it announced a level that reads it; otherwise it writes the older form (for the
//! consumer records the JSON array, which every build reads) or, for a record that has no older
//! form (`member`), nothing. The route INFO's `version` cannot tell one rnats build from another:
//! it is nats-server's (2.15.1) for all of them. nats-server peers never read these records.
//!
//! A member not heard from since this server started (a leader that just restarted) counts as
//! reading level 1 when the meta log holds a `member` record of it: those are only written while
//! every member reads them. Downgrades are not covered: a server announcing a lower level again
//! is taken at its word, but entries written before it came back are not rewritten.

use nats_raft::NodeId;

use super::meta::Meta;
use super::peer;

/// This build's feature level, announced in its meta hello.
pub(super) const LEVEL: u32 = 1;

/// A log form that older rnats builds cannot read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// `member` entries in the meta log (`Operation::Member`, `incarnation.rs`).
    MemberRecords,
    /// Replicated consumer records in the binary form (nats-jetstream's
    /// `consumer/replicated/codec.rs`) rather than a JSON array.
    BinaryConsumerRecords,
}

impl Feature {
    /// The first level that reads it.
    const fn level(self) -> u32 {
        match self {
            Feature::MemberRecords | Feature::BinaryConsumerRecords => 1,
        }
    }
}

/// The level to count for a member: what it announced, else (not heard from here) level 1 when
/// the meta log recorded it (`member` records are written only while every member reads them),
/// else unknown.
fn member_level(announced: Option<u32>, recorded: bool) -> Option<u32> {
    announced.or(recorded.then_some(Feature::MemberRecords.level()))
}

/// Whether every member, by the level counted for it (`None`: unknown), reads `feature`.
fn all_read(feature: Feature, levels: impl IntoIterator<Item = Option<u32>>) -> bool {
    levels
        .into_iter()
        .all(|level| level.is_some_and(|level| level >= feature.level()))
}

impl Meta {
    /// Whether every one of `members` (node ids of the meta group or of a stream's group) reads
    /// `feature`, as far as this server knows.
    pub(super) fn reads(
        &self,
        feature: Feature,
        members: impl IntoIterator<Item = NodeId>,
    ) -> bool {
        let own = self.group.node_id();
        let peers: Vec<(NodeId, String)> = members
            .into_iter()
            .map(|node| (node, peer::peer_of(node)))
            .collect();
        // `known` and `assignments` one after the other, never nested (see `Meta::assigned`).
        let announced: Vec<Option<u32>> = {
            let known = self.known.lock();
            peers
                .iter()
                .map(|(node, peer)| {
                    if *node == own {
                        Some(LEVEL)
                    } else {
                        known.get(peer).map(|known| known.level)
                    }
                })
                .collect()
        };
        let assignments = self.assignments.lock();
        let levels = peers.iter().zip(announced).map(|((_, peer), announced)| {
            member_level(announced, assignments.member(peer).is_some())
        });
        all_read(feature, levels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_form_is_written_only_when_every_member_reads_it() {
        let feature = Feature::BinaryConsumerRecords;
        assert!(all_read(feature, [Some(LEVEL), Some(1), Some(2)]));
        // One member of an older build (no level announced: 0), or not heard from at all.
        assert!(!all_read(feature, [Some(LEVEL), Some(0), Some(1)]));
        assert!(!all_read(feature, [Some(LEVEL), None, Some(1)]));
        assert!(!all_read(Feature::MemberRecords, [Some(0)]));
        assert!(all_read(Feature::MemberRecords, [Some(LEVEL)]));
    }

    #[test]
    fn a_member_not_heard_from_counts_by_its_record() {
        // Heard: its announcement decides, a record notwithstanding (a downgraded server).
        assert_eq!(member_level(Some(0), true), Some(0));
        assert_eq!(member_level(Some(3), false), Some(3));
        // Not heard: recorded members were written while every member read level 1.
        assert_eq!(member_level(None, true), Some(1));
        assert_eq!(member_level(None, false), None);
        assert!(all_read(
            Feature::BinaryConsumerRecords,
            [member_level(None, true), Some(LEVEL)]
        ));
        assert!(!all_read(
            Feature::MemberRecords,
            [member_level(None, false), Some(LEVEL)]
        ));
    }
}
