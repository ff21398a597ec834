//! Per-user publish/subscribe permissions compiled from the config, checked by the connection
//! reader (PUB, SUB) and the router (delivery filter for wildcard subscriptions that overlap a
//! deny entry). Subscribe entries may name a queue group (`"subject queue"`): they then apply
//! to queue subscriptions in that group only, as in nats-server. Knows nothing about sockets.

use crate::config::{Permissions, SubjectRules};

/// One entry of an allow or deny list: a subject, with a queue group for `"subject queue"`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    subject: String,
    queue: Option<String>,
}

impl Entry {
    /// `"subject"` or `"subject queue"` (fields split on white space); `None` for anything else,
    /// which nats-server logs and skips.
    fn parse(text: &str) -> Option<Entry> {
        let mut fields = text.split_whitespace();
        let subject = fields.next()?.to_string();
        let queue = fields.next().map(str::to_string);
        if fields.next().is_some() {
            tracing::error!("invalid subject-queue {text:?}");
            return None;
        }
        Some(Entry { subject, queue })
    }

    fn matches(&self, subject: &str) -> bool {
        pattern_matches(&self.subject, subject)
    }
}

/// Compiled allow/deny rules for one direction.
#[derive(Clone, Debug, Default)]
struct Rules {
    /// `None`: everything allowed unless denied.
    allow: Option<Vec<Entry>>,
    deny: Vec<Entry>,
}

impl Rules {
    fn compile(rules: &SubjectRules) -> Rules {
        let parse = |texts: &[String]| texts.iter().filter_map(|text| Entry::parse(text)).collect();
        Rules {
            allow: (!rules.allow.is_empty()).then(|| parse(&rules.allow)),
            deny: parse(&rules.deny),
        }
    }

    /// A literal subject being published. A queue group means nothing here: an allow entry
    /// with one is no subject at all (it allows nothing), a deny entry denies its subject.
    fn allows_publish(&self, subject: &str) -> bool {
        let allowed = match &self.allow {
            None => true,
            Some(entries) => entries
                .iter()
                .any(|entry| entry.queue.is_none() && entry.matches(subject)),
        };
        allowed && !self.deny.iter().any(|entry| entry.matches(subject))
    }

    /// A subscription subject (may hold wildcards, matched token by token with its wildcards
    /// taken literally, as nats-server's sublist match does: allow `sub.*` admits `sub.>`).
    /// Plain entries decide for every subscription; for a queue subscription, queue entries
    /// matching the subject decide on their own among themselves: an allow entry must name
    /// the group, a deny entry naming it refuses.
    fn allows_subscribe(&self, subject: &str, queue: Option<&str>) -> bool {
        if let Some(entries) = &self.allow {
            let mut allowed = entries
                .iter()
                .any(|entry| entry.queue.is_none() && entry.matches(subject));
            if let Some(queue) = queue {
                if let Some(group_allowed) = queue_entries_match(entries, subject, queue) {
                    allowed = group_allowed;
                }
            }
            if !allowed {
                return false;
            }
        }
        let denied = self
            .deny
            .iter()
            .any(|entry| entry.queue.is_none() && entry.matches(subject));
        if denied {
            return false;
        }
        match queue {
            Some(queue) => queue_entries_match(&self.deny, subject, queue) != Some(true),
            None => true,
        }
    }

    /// Deny entries without a queue group: the ones that can filter deliveries.
    fn plain_denies(&self) -> impl Iterator<Item = &str> {
        self.deny
            .iter()
            .filter(|entry| entry.queue.is_none())
            .map(|entry| entry.subject.as_str())
    }
}

/// Among `entries` with a queue group whose subject matches `subject`: `None` when there are
/// none, else whether one names `queue` (literally, or as a wildcard pattern covering it).
fn queue_entries_match(entries: &[Entry], subject: &str, queue: &str) -> Option<bool> {
    let mut any = false;
    for entry in entries {
        let Some(group) = &entry.queue else {
            continue;
        };
        if !entry.matches(subject) {
            continue;
        }
        any = true;
        let wildcard = group.split('.').any(|token| token == "*" || token == ">");
        if group == queue || (wildcard && is_subset(queue, group)) {
            return Some(true);
        }
    }
    any.then_some(false)
}

/// A connected user's permissions.
#[derive(Clone, Debug, Default)]
pub struct UserPermissions {
    publish: Option<Rules>,
    subscribe: Option<Rules>,
    pub responses: Option<crate::config::ResponsePermission>,
    /// The rules as configured, reported by `$SYS.REQ.USER.INFO`.
    pub source: Permissions,
}

impl UserPermissions {
    pub fn compile(permissions: &Permissions) -> UserPermissions {
        UserPermissions {
            publish: permissions.publish.as_ref().map(Rules::compile),
            subscribe: permissions.subscribe.as_ref().map(Rules::compile),
            responses: permissions.responses,
            source: permissions.clone(),
        }
    }

    /// These permissions with publishing to `subject` denied as well (nats-server's
    /// `mergeDenyPermissions`); `None` (everything allowed) becomes a deny of `subject` alone.
    pub fn with_publish_denied(
        permissions: Option<&UserPermissions>,
        subject: &str,
    ) -> UserPermissions {
        let mut source = permissions.map(|p| p.source.clone()).unwrap_or_default();
        let publish = source.publish.get_or_insert_with(SubjectRules::default);
        if !publish.deny.iter().any(|denied| denied == subject) {
            publish.deny.push(subject.to_string());
        }
        UserPermissions::compile(&source)
    }

    pub fn can_publish(&self, subject: &str) -> bool {
        self.publish
            .as_ref()
            .is_none_or(|rules| rules.allows_publish(subject))
    }

    pub fn can_subscribe(&self, subject: &str, queue: Option<&str>) -> bool {
        self.subscribe
            .as_ref()
            .is_none_or(|rules| rules.allows_subscribe(subject, queue))
    }

    /// For a wildcard subscription that passed the check: true when some deny pattern could
    /// still match a message it receives, so deliveries must be filtered (as nats-server does).
    pub fn needs_delivery_filter(&self, subject: &str) -> bool {
        !nats_subject::is_literal(subject)
            && self.subscribe.as_ref().is_some_and(|rules| {
                rules
                    .plain_denies()
                    .any(|pattern| nats_subject::subjects_overlap(pattern, subject))
            })
    }

    /// Whether a message on the literal `subject` is denied to subscriptions of this user.
    pub fn denies_delivery(&self, subject: &str) -> bool {
        self.subscribe.as_ref().is_some_and(|rules| {
            rules
                .plain_denies()
                .any(|pattern| pattern_matches(pattern, subject))
        })
    }

    /// Whether any publish restriction exists (lets the reader skip the check entirely).
    pub fn restricts_publish(&self) -> bool {
        self.publish.is_some()
    }
}

/// `subject` (literal) matches `pattern` (may hold `*` and `>`).
pub fn pattern_matches(pattern: &str, subject: &str) -> bool {
    nats_subject::subject_matches_filter(subject, pattern)
}

/// Every subject matched by `subject` (may hold wildcards) is also matched by `pattern`.
pub fn is_subset(subject: &str, pattern: &str) -> bool {
    nats_subject::is_subset_match(subject, pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscribe_rules(allow: &[&str], deny: &[&str]) -> UserPermissions {
        let list = |items: &[&str]| items.iter().map(|item| item.to_string()).collect();
        UserPermissions::compile(&Permissions {
            publish: None,
            subscribe: Some(SubjectRules {
                allow: list(allow),
                deny: list(deny),
            }),
            responses: None,
        })
    }

    #[test]
    fn matching_and_subsets() {
        assert!(pattern_matches("foo.*", "foo.bar"));
        assert!(!pattern_matches("foo.*", "foo.bar.baz"));
        assert!(pattern_matches("foo.>", "foo.bar.baz"));
        assert!(!pattern_matches("foo.>", "foo"));
        assert!(is_subset("foo.bar", "foo.*"));
        assert!(is_subset("foo.*", "foo.>"));
        assert!(!is_subset("foo.>", "foo.*"));
        assert!(!is_subset(">", "foo.>"));
        assert!(is_subset("foo.*", "foo.*"));
    }

    #[test]
    fn allow_and_deny() {
        let permissions = UserPermissions::compile(&Permissions {
            publish: Some(SubjectRules {
                allow: vec!["foo.>".into()],
                deny: vec!["foo.secret".into()],
            }),
            subscribe: None,
            responses: None,
        });
        assert!(permissions.can_publish("foo.bar"));
        assert!(!permissions.can_publish("foo.secret"));
        assert!(!permissions.can_publish("bar"));
        assert!(permissions.can_subscribe("anything.>", None));
    }

    #[test]
    fn queue_allow_entries_name_the_groups() {
        let permissions = subscribe_rules(&["foo.> workers", "bar", "baz.* v1.*"], &[]);
        assert!(permissions.can_subscribe("foo.a", Some("workers")));
        assert!(!permissions.can_subscribe("foo.a", Some("others")));
        // Only a queue entry covers foo: a plain subscription is not allowed.
        assert!(!permissions.can_subscribe("foo.a", None));
        assert!(permissions.can_subscribe("bar", None));
        assert!(permissions.can_subscribe("bar", Some("anyone")));
        assert!(permissions.can_subscribe("baz.x", Some("v1.blue")));
        assert!(!permissions.can_subscribe("baz.x", Some("v2.blue")));
    }

    #[test]
    fn queue_deny_entries_refuse_only_their_group() {
        let permissions = subscribe_rules(&[], &["foo.* secret"]);
        assert!(permissions.can_subscribe("foo.a", None));
        assert!(permissions.can_subscribe("foo.a", Some("public")));
        assert!(!permissions.can_subscribe("foo.a", Some("secret")));
        assert!(!permissions.needs_delivery_filter("foo.*"));
        assert!(!permissions.denies_delivery("foo.a"));
    }

    #[test]
    fn queue_entries_in_publish_rules() {
        let permissions = UserPermissions::compile(&Permissions {
            publish: Some(SubjectRules {
                allow: vec!["foo workers".into(), "bar".into()],
                deny: vec!["bar queue".into()],
            }),
            subscribe: None,
            responses: None,
        });
        assert!(!permissions.can_publish("foo"));
        assert!(!permissions.can_publish("bar"));
    }
}
