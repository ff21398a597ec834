//! Authentication (token, single user/password, users list) and per-user publish/subscribe
//! permissions, checked by the connection reader. Knows nothing about sockets.

use crate::config::{Options, Permissions, SubjectRules};
use nats_proto::ConnectOptions;
use std::collections::HashMap;
use std::sync::Arc;

/// Compiled allow/deny rules for one direction.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// `None`: everything allowed unless denied.
    allow: Option<Vec<String>>,
    deny: Vec<String>,
}

impl Rules {
    fn compile(rules: &SubjectRules) -> Rules {
        Rules {
            allow: if rules.allow.is_empty() {
                None
            } else {
                Some(rules.allow.clone())
            },
            deny: rules.deny.clone(),
        }
    }

    /// A literal subject being published.
    fn allows_publish(&self, subject: &str) -> bool {
        let allowed = match &self.allow {
            None => true,
            Some(patterns) => patterns
                .iter()
                .any(|pattern| pattern_matches(pattern, subject)),
        };
        allowed
            && !self
                .deny
                .iter()
                .any(|pattern| pattern_matches(pattern, subject))
    }

    /// A subscription subject (may hold wildcards). Matched token by token with its wildcards
    /// taken literally, as nats-server's sublist match does: allow `sub.*` admits `sub.>`.
    fn allows_subscribe(&self, subject: &str) -> bool {
        let allowed = match &self.allow {
            None => true,
            Some(patterns) => patterns
                .iter()
                .any(|pattern| pattern_matches(pattern, subject)),
        };
        allowed
            && !self
                .deny
                .iter()
                .any(|pattern| pattern_matches(pattern, subject))
    }
}

/// A connected user's permissions.
#[derive(Clone, Debug, Default)]
pub struct UserPermissions {
    publish: Option<Rules>,
    subscribe: Option<Rules>,
    pub responses: Option<crate::config::ResponsePermission>,
}

impl UserPermissions {
    pub fn compile(permissions: &Permissions) -> UserPermissions {
        UserPermissions {
            publish: permissions.publish.as_ref().map(Rules::compile),
            subscribe: permissions.subscribe.as_ref().map(Rules::compile),
            responses: permissions.responses,
        }
    }

    pub fn can_publish(&self, subject: &str) -> bool {
        self.publish
            .as_ref()
            .is_none_or(|rules| rules.allows_publish(subject))
    }

    pub fn can_subscribe(&self, subject: &str) -> bool {
        self.subscribe
            .as_ref()
            .is_none_or(|rules| rules.allows_subscribe(subject))
    }

    /// For a wildcard subscription that passed the check: true when some deny pattern could
    /// still match a message it receives, so deliveries must be filtered (as nats-server does).
    pub fn needs_delivery_filter(&self, subject: &str) -> bool {
        !nats_subject::is_literal(subject)
            && self.subscribe.as_ref().is_some_and(|rules| {
                rules
                    .deny
                    .iter()
                    .any(|pattern| nats_subject::subjects_overlap(pattern, subject))
            })
    }

    /// Whether a message on the literal `subject` is denied to subscriptions of this user.
    pub fn denies_delivery(&self, subject: &str) -> bool {
        self.subscribe.as_ref().is_some_and(|rules| {
            rules
                .deny
                .iter()
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

struct Account {
    password: String,
    permissions: Option<Arc<UserPermissions>>,
}

/// Who may connect, built once from the options.
pub struct Authenticator {
    token: Option<String>,
    users: HashMap<String, Account>,
    no_auth_user: Option<String>,
    required: bool,
}

/// Authentication failed: the connection gets `-ERR 'Authorization Violation'` and is closed.
#[derive(Debug)]
pub struct AuthorizationViolation;

impl Authenticator {
    pub fn new(options: &Options) -> Authenticator {
        let default_permissions = options
            .default_permissions
            .as_ref()
            .map(|permissions| Arc::new(UserPermissions::compile(permissions)));
        let mut users = HashMap::new();
        if let Some(user) = &options.username {
            users.insert(
                user.clone(),
                Account {
                    password: options.password.clone().unwrap_or_default(),
                    permissions: default_permissions.clone(),
                },
            );
        }
        for user in &options.users {
            let permissions = match &user.permissions {
                Some(permissions) => Some(Arc::new(UserPermissions::compile(permissions))),
                None => default_permissions.clone(),
            };
            users.insert(
                user.user.clone(),
                Account {
                    password: user.password.clone(),
                    permissions,
                },
            );
        }
        Authenticator {
            token: options.token.clone(),
            users,
            no_auth_user: options.no_auth_user.clone(),
            required: options.auth_required(),
        }
    }

    pub fn required(&self) -> bool {
        self.required
    }

    /// Check CONNECT credentials; on success, the user's permissions (if any) and user name.
    pub fn authenticate(
        &self,
        connect: &ConnectOptions,
    ) -> Result<(Option<Arc<UserPermissions>>, Option<String>), AuthorizationViolation> {
        if !self.required {
            return Ok((None, None));
        }
        if let Some(token) = &self.token {
            if connect.auth_token.as_deref() == Some(token.as_str()) {
                return Ok((None, None));
            }
            if self.users.is_empty() {
                return Err(AuthorizationViolation);
            }
        }
        let user = match (&connect.user, &self.no_auth_user) {
            (Some(user), _) => user.clone(),
            (None, Some(default_user))
                if connect.auth_token.is_none() && connect.pass.is_none() =>
            {
                return match self.users.get(default_user) {
                    Some(account) => Ok((account.permissions.clone(), Some(default_user.clone()))),
                    None => Err(AuthorizationViolation),
                };
            }
            _ => return Err(AuthorizationViolation),
        };
        match self.users.get(&user) {
            Some(account) if connect.pass.as_deref().unwrap_or("") == account.password => {
                Ok((account.permissions.clone(), Some(user)))
            }
            _ => Err(AuthorizationViolation),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(permissions.can_subscribe("anything.>"));
    }
}
