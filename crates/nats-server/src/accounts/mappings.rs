//! Subject mappings of one account at run time, as nats-server's `selectMappedSubject`: the
//! first mapping whose source matches a published subject picks one of its destinations by
//! weight (the cluster-scoped ones when this server's cluster has some) and the subject becomes
//! that destination's transform of it. Weights below 100 in all leave the rest on the source
//! subject, unless the source is itself a listed destination: then the rest is dropped.
//!
//! Called for client publishes (`client/reader.rs`, before permissions, as nats-server checks
//! the mapped subject) and for requests forwarded through a service import into the exporting
//! account (`imports.rs`); never for route messages (the publishing server mapped them) nor
//! internal publishes. An account without mappings has none of this (`Account::mapped` is
//! false), so unmapped accounts pay one atomic load; a config reload replaces an account's
//! mappings whole. Knows nothing of sockets or routes.

use crate::config::MappingOptions;
use bytes::Bytes;
use std::cell::Cell;
use std::collections::HashMap;

/// What a destination makes of a matching subject.
enum Target {
    /// The subject unchanged (the weight nats-server leaves on the source).
    Source,
    /// Always this subject (a destination without wildcard references).
    Literal(Bytes),
    /// nats-server's subject transform of the source onto this destination, compiled when
    /// the account is built.
    Transform(nats_subject::SubjectTransform),
    /// A destination nats-server's transform refuses (the config check lets none through):
    /// matching subjects go nowhere.
    Refused,
}

struct Destination {
    target: Target,
    /// Cumulative weight: picked when the draw (0..100) is below it.
    until: u8,
}

struct Rule {
    source: String,
    wildcard: bool,
    destinations: Vec<Destination>,
    /// Cluster-scoped destinations, used on servers of that cluster.
    by_cluster: HashMap<String, Vec<Destination>>,
}

/// The mappings of one account, in config order.
pub struct Mappings {
    rules: Vec<Rule>,
    /// This server's cluster name (cluster-scoped destinations).
    cluster: Option<String>,
}

/// What a mapping made of a published subject.
#[derive(Debug, PartialEq, Eq)]
pub enum Mapped {
    /// Publish under this subject instead.
    To(Bytes),
    /// The draw fell on no destination: the message goes nowhere.
    Dropped,
}

impl Mappings {
    /// `None` when there is nothing to map (the account keeps no table).
    pub fn new(options: &[MappingOptions], cluster: Option<String>) -> Option<Mappings> {
        if options.is_empty() {
            return None;
        }
        let rules = options
            .iter()
            .map(|mapping| {
                let listed_source = mapping
                    .destinations
                    .iter()
                    .any(|destination| destination.subject == mapping.source);
                let build = |cluster: Option<&str>| {
                    let chosen = mapping
                        .destinations
                        .iter()
                        .filter(|destination| destination.cluster.as_deref() == cluster);
                    destinations(&mapping.source, chosen, listed_source)
                };
                let mut by_cluster = HashMap::new();
                for destination in &mapping.destinations {
                    if let Some(name) = &destination.cluster {
                        if !by_cluster.contains_key(name) {
                            by_cluster.insert(name.clone(), build(Some(name)));
                        }
                    }
                }
                Rule {
                    source: mapping.source.clone(),
                    wildcard: !nats_subject::is_literal(&mapping.source),
                    destinations: build(None),
                    by_cluster,
                }
            })
            .collect();
        Some(Mappings { rules, cluster })
    }

    /// The subject a publish on `subject` goes to, or `None` when no mapping matches.
    pub fn select(&self, subject: &Bytes) -> Option<Mapped> {
        let text = std::str::from_utf8(subject).ok()?;
        let rule = self.rules.iter().find(|rule| {
            if rule.wildcard {
                nats_subject::subject_matches_filter(text, &rule.source)
            } else {
                rule.source == text
            }
        })?;
        let destinations = self
            .cluster
            .as_ref()
            .and_then(|cluster| rule.by_cluster.get(cluster))
            .unwrap_or(&rule.destinations);
        let chosen = match destinations.as_slice() {
            [only] if only.until == 100 => Some(only),
            _ => {
                let draw = draw_below_100();
                destinations
                    .iter()
                    .find(|destination| draw < destination.until)
            }
        };
        let Some(destination) = chosen else {
            return Some(Mapped::Dropped);
        };
        Some(match &destination.target {
            Target::Source => Mapped::To(subject.clone()),
            Target::Literal(literal) => Mapped::To(literal.clone()),
            Target::Transform(transform) => match transform.apply_matched(text) {
                Some(mapped) => Mapped::To(Bytes::from(mapped)),
                None => Mapped::Dropped,
            },
            Target::Refused => Mapped::Dropped,
        })
    }
}

/// nats-server's `processDestinations`: the source added with the weight left (all of it when
/// no destination is left) unless the source is listed itself, sorted by weight, cumulated.
fn destinations<'a>(
    source: &str,
    chosen: impl Iterator<Item = &'a crate::config::MapDestination>,
    listed_source: bool,
) -> Vec<Destination> {
    let mut weighted: Vec<(Target, u8)> = chosen
        .map(|destination| (target(source, &destination.subject), destination.weight))
        .collect();
    let total: u32 = weighted.iter().map(|(_, weight)| u32::from(*weight)).sum();
    if total != 100 && !listed_source {
        let rest = if weighted.is_empty() {
            100
        } else {
            100u8.saturating_sub(u8::try_from(total).unwrap_or(100))
        };
        weighted.push((Target::Source, rest));
    }
    weighted.sort_by_key(|(_, weight)| *weight);
    let mut until = 0u8;
    weighted
        .into_iter()
        .map(|(target, weight)| {
            until = until.saturating_add(weight);
            Destination { target, until }
        })
        .collect()
}

fn target(source: &str, destination: &str) -> Target {
    if destination == source {
        return Target::Source;
    }
    let references = destination.split('.').any(|token| {
        token == ">"
            || (token.starts_with("{{") && token.ends_with("}}"))
            || token.strip_prefix('$').is_some_and(|number| {
                !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())
            })
    });
    if references {
        match nats_subject::SubjectTransform::new(source, destination) {
            Some(transform) => Target::Transform(transform),
            None => Target::Refused,
        }
    } else {
        Target::Literal(Bytes::copy_from_slice(destination.as_bytes()))
    }
}

thread_local! {
    static RANDOM: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9E37_79B9_7F4A_7C15);
    hasher.finish() | 1
}

/// A uniform draw in `0..100` (nats-server: `fastrand.Uint32n(100)`), per thread, no lock.
fn draw_below_100() -> u8 {
    RANDOM.with(|state| {
        let mut value = state.get();
        value ^= value << 13;
        value ^= value >> 7;
        value ^= value << 17;
        state.set(value);
        ((value >> 32) % 100) as u8
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MapDestination;

    fn mapping(source: &str, destinations: &[(&str, u8, Option<&str>)]) -> MappingOptions {
        MappingOptions {
            source: source.into(),
            destinations: destinations
                .iter()
                .map(|(subject, weight, cluster)| MapDestination {
                    subject: (*subject).into(),
                    weight: *weight,
                    cluster: cluster.map(String::from),
                })
                .collect(),
        }
    }

    fn to(text: &str) -> Option<Mapped> {
        Some(Mapped::To(Bytes::copy_from_slice(text.as_bytes())))
    }

    #[test]
    fn plain_and_wildcard_mappings() {
        let mappings = Mappings::new(
            &[
                mapping("a", &[("b", 100, None)]),
                mapping("o.*.*", &[("x.$2.{{wildcard(1)}}", 100, None)]),
                mapping("p.>", &[("q.>", 100, None)]),
            ],
            None,
        )
        .expect("mappings");
        assert_eq!(mappings.select(&Bytes::from("a")), to("b"));
        assert_eq!(mappings.select(&Bytes::from("o.1.2")), to("x.2.1"));
        assert_eq!(mappings.select(&Bytes::from("p.r.s")), to("q.r.s"));
        assert_eq!(mappings.select(&Bytes::from("z")), None);
    }

    #[test]
    fn weights_below_100_keep_the_source_unless_it_is_listed() {
        let kept = Mappings::new(&[mapping("a", &[("b", 0, None)])], None).expect("mappings");
        for _ in 0..50 {
            assert_eq!(kept.select(&Bytes::from("a")), to("a"));
        }
        let dropped = Mappings::new(&[mapping("a", &[("a", 0, None)])], None).expect("mappings");
        for _ in 0..50 {
            assert_eq!(dropped.select(&Bytes::from("a")), Some(Mapped::Dropped));
        }
        let split = Mappings::new(&[mapping("a", &[("b", 50, None)])], None).expect("mappings");
        let moved = (0..1000)
            .filter(|_| split.select(&Bytes::from("a")) == to("b"))
            .count();
        assert!((350..650).contains(&moved), "{moved} of 1000 moved");
    }

    #[test]
    fn cluster_scoped_destinations() {
        let options = [mapping("a", &[("b", 100, None), ("c", 100, Some("east"))])];
        let east = Mappings::new(&options, Some("east".into())).expect("mappings");
        assert_eq!(east.select(&Bytes::from("a")), to("c"));
        let west = Mappings::new(&options, Some("west".into())).expect("mappings");
        assert_eq!(west.select(&Bytes::from("a")), to("b"));
        let alone = Mappings::new(&options, None).expect("mappings");
        assert_eq!(alone.select(&Bytes::from("a")), to("b"));
    }
}
