//! A connecting user's JWT checked as nats-server checks it at CONNECT: signature and issuer
//! (the account or one of its signing keys; `issuer_account` for a signing key), times,
//! revocation, the signature of the INFO nonce (unless a bearer token), connection type, source
//! network and time-of-day windows; then the permissions and limits the connection gets
//! (a scoped signing key's template replaces the user's own).

use super::claims::{UserClaims, UserLimits};
use super::resolver::{Resolver, VerifiedAccount};
use super::{check_times, decode, is_account_key, is_user_key, now};
use crate::config::{Permissions, ResponsePermission, SubjectRules};
use nats_schedule::time_zone::{self, Zone};
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Why a user JWT was refused (all are `Authorization Violation` on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Invalid,
    UnknownAccount,
    Expired,
    Revoked,
    Signature,
    Restricted,
}

/// A user admitted by its JWT.
#[derive(Debug, Clone)]
pub struct JwtUser {
    /// The account's public key.
    pub account: String,
    /// The user's public key.
    pub user: String,
    pub name: String,
    pub issued_at: i64,
    /// Seconds since the epoch when the user must be disconnected (JWT expiry, or the end of
    /// the current time window).
    pub expires: Option<i64>,
    /// `None`: everything allowed.
    pub permissions: Option<Permissions>,
    /// Limits (-1: none).
    pub subscriptions: i64,
    pub payload: i64,
}

/// Check `jwt` for a connection whose INFO carried `nonce`, signed in `signature`, coming from
/// `address`.
pub fn authenticate(
    resolver: &Resolver,
    jwt: &str,
    nonce: Option<&str>,
    signature: Option<&str>,
    address: Option<IpAddr>,
) -> Result<JwtUser, Refusal> {
    let claims: UserClaims = decode(jwt).map_err(|_| Refusal::Invalid)?;
    if (!claims.nats.kind.is_empty() && claims.nats.kind != "user") || !is_user_key(&claims.sub) {
        return Err(Refusal::Invalid);
    }
    let now = now();
    check_times(&claims, now).map_err(|_| Refusal::Expired)?;
    let account_key = if claims.nats.issuer_account.is_empty() {
        claims.iss.as_str()
    } else {
        claims.nats.issuer_account.as_str()
    };
    if !is_account_key(account_key) {
        return Err(Refusal::UnknownAccount);
    }
    let account = resolver
        .account(account_key)
        .ok_or(Refusal::UnknownAccount)?;
    if let Some(directory) = resolver.directory() {
        directory.used(account_key);
    }
    let template = account.signer(&claims.iss).ok_or(Refusal::UnknownAccount)?;
    if check_times(&account.claims, now).is_err() {
        return Err(Refusal::Expired);
    }
    if account.revoked(&claims.sub, claims.iat) {
        return Err(Refusal::Revoked);
    }
    let limits = template.unwrap_or(&claims.nats.limits);
    if !limits.bearer_token {
        let signature = signature.ok_or(Refusal::Signature)?;
        if !crate::security::auth::signature_verifies(
            &claims.sub,
            nonce.unwrap_or_default(),
            signature,
        ) {
            return Err(Refusal::Signature);
        }
    }
    if !limits.allowed_connection_types.is_empty()
        && !limits
            .allowed_connection_types
            .iter()
            .any(|kind| kind.eq_ignore_ascii_case("STANDARD"))
    {
        return Err(Refusal::Restricted);
    }
    let sources = limits.src.entries();
    if !sources.is_empty()
        && !address.is_some_and(|address| sources.iter().any(|cidr| cidr_contains(cidr, address)))
    {
        return Err(Refusal::Restricted);
    }
    let window_end = if limits.times.is_empty() {
        None
    } else {
        Some(current_window_end(limits, now).ok_or(Refusal::Restricted)?)
    };
    let expires = [(claims.exp > 0).then_some(claims.exp), window_end]
        .into_iter()
        .flatten()
        .min();
    Ok(JwtUser {
        account: account.key().to_string(),
        user: claims.sub.clone(),
        name: claims.name.clone(),
        issued_at: claims.iat,
        expires,
        permissions: permissions(limits, &account),
        subscriptions: limits.subs,
        payload: limits.payload,
    })
}

/// The user's permissions; the account's `default_permissions` when the user has none.
pub fn permissions(limits: &UserLimits, account: &Arc<VerifiedAccount>) -> Option<Permissions> {
    let own = &limits.permissions;
    if *own == super::claims::Permissions::default() {
        user_permissions(&account.fields().default_permissions)
    } else {
        user_permissions(own)
    }
}

/// A JWT's permissions as the server's (`None`: everything allowed).
pub fn user_permissions(chosen: &super::claims::Permissions) -> Option<Permissions> {
    let rules = |permission: &super::claims::SubjectPermission| {
        (!permission.allow.is_empty() || !permission.deny.is_empty()).then(|| SubjectRules {
            allow: permission.allow.clone(),
            deny: permission.deny.clone(),
        })
    };
    let permissions = Permissions {
        publish: rules(&chosen.publish),
        subscribe: rules(&chosen.subscribe),
        responses: chosen.response.as_ref().map(|response| {
            let default = ResponsePermission::default();
            ResponsePermission {
                max: if response.max_messages > 0 {
                    response.max_messages as u64
                } else {
                    default.max
                },
                expires: if response.ttl > 0 {
                    Duration::from_nanos(response.ttl as u64)
                } else {
                    default.expires
                },
            }
        }),
    };
    (permissions != Permissions::default()).then_some(permissions)
}

/// `a.b.c.d/n` or `x::y/n` (a bare address is a /32 or /128) holding `address`.
fn cidr_contains(cidr: &str, address: IpAddr) -> bool {
    let (network, bits) = match cidr.split_once('/') {
        Some((network, bits)) => (network, bits.parse::<u32>().ok()),
        None => (cidr, None),
    };
    let Ok(network) = network.trim().parse::<IpAddr>() else {
        return false;
    };
    let address = match (network, address) {
        (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        _ => address,
    };
    match (network, address) {
        (IpAddr::V4(network), IpAddr::V4(address)) => {
            let bits = bits.unwrap_or(32).min(32);
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(network) & mask == u32::from(address) & mask
        }
        (IpAddr::V6(network), IpAddr::V6(address)) => {
            let bits = bits.unwrap_or(128).min(128);
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(network) & mask == u128::from(address) & mask
        }
        _ => false,
    }
}

/// The end (seconds since the epoch) of the `times` window holding `now`, read on the wall clock
/// of the user's `times_location` (the server's local zone without one), as nats-server's
/// `validateTimes`: of several windows holding `now`, the one ending last; `None` outside every
/// window, or when the location is not a zone the system knows (nats-jwt's validation refuses it).
pub(crate) fn current_window_end(limits: &UserLimits, now: i64) -> Option<i64> {
    let zone = if limits.times_location.is_empty() {
        local_zone()?
    } else {
        Arc::new(time_zone::load(&limits.times_location)?)
    };
    window_end_in(limits, &zone, now)
}

fn window_end_in(limits: &UserLimits, zone: &Zone, now: i64) -> Option<i64> {
    let wall = now + i64::from(zone.offset_at(now));
    let day_start = wall - wall.rem_euclid(86_400);
    let second_of_day = wall - day_start;
    let wall_end = limits
        .times
        .iter()
        .filter_map(|window| {
            let start = seconds_of_day(&window.start)?;
            let end = seconds_of_day(&window.end)?;
            if second_of_day < end && (start < second_of_day || start > end) {
                Some(day_start + end)
            } else if start > end && start < second_of_day {
                Some(day_start + 86_400 + end)
            } else {
                None
            }
        })
        .max()?;
    // Back from the zone's wall clock to an instant, with the offset in force then.
    Some(wall_end - i64::from(zone.offset_at(wall_end - (wall - now))))
}

/// The server's local zone, as Go's `time.Local`: `$TZ` (empty: UTC), else `/etc/localtime`,
/// UTC when neither loads. Read once.
fn local_zone() -> Option<Arc<Zone>> {
    static LOCAL: OnceLock<Option<Arc<Zone>>> = OnceLock::new();
    LOCAL
        .get_or_init(|| {
            let zone = match std::env::var("TZ") {
                Ok(name) if name.is_empty() => None,
                Ok(name) => time_zone::load(name.trim_start_matches(':')),
                Err(_) => time_zone::load("Local"),
            };
            zone.or_else(|| time_zone::load("UTC")).map(Arc::new)
        })
        .clone()
}

fn seconds_of_day(text: &str) -> Option<i64> {
    let mut parts = text.split(':').map(|part| part.parse::<i64>().ok());
    let (Some(Some(hours)), Some(Some(minutes)), Some(Some(seconds)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some(hours * 3600 + minutes * 60 + seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(cidr_contains("127.0.0.0/8", local));
        assert!(cidr_contains("127.0.0.1", local));
        assert!(!cidr_contains("10.0.0.0/8", local));
        assert!(cidr_contains("0.0.0.0/0", local));
        assert!(cidr_contains("::1/128", "::1".parse().unwrap()));
        assert!(cidr_contains(
            "127.0.0.0/8",
            "::ffff:127.0.0.1".parse().unwrap()
        ));
        assert!(!cidr_contains("junk", local));
    }

    #[test]
    fn time_windows() {
        let limits = UserLimits {
            times: vec![super::super::claims::TimeRange {
                start: "01:00:00".into(),
                end: "02:00:00".into(),
            }],
            ..UserLimits::default()
        };
        let utc = time_zone::load("UTC").unwrap();
        let day = 86_400 * 100;
        assert_eq!(
            window_end_in(&limits, &utc, day + 3600 + 5),
            Some(day + 7200)
        );
        assert_eq!(window_end_in(&limits, &utc, day + 7200), None);
        let overnight = UserLimits {
            times: vec![super::super::claims::TimeRange {
                start: "23:00:00".into(),
                end: "01:00:00".into(),
            }],
            ..UserLimits::default()
        };
        assert_eq!(
            window_end_in(&overnight, &utc, day + 23 * 3600 + 1),
            Some(day + 86_400 + 3600)
        );
        assert_eq!(window_end_in(&overnight, &utc, day + 60), Some(day + 3600));
        assert_eq!(window_end_in(&overnight, &utc, day + 12 * 3600), None);
    }

    /// Tokyo is nine hours ahead of UTC all year: 10:00-11:00 there is 01:00-02:00 UTC.
    #[test]
    fn time_windows_in_a_location() {
        let limits = UserLimits {
            times: vec![super::super::claims::TimeRange {
                start: "10:00:00".into(),
                end: "11:00:00".into(),
            }],
            times_location: "Asia/Tokyo".into(),
            ..UserLimits::default()
        };
        let day = 86_400 * 20_000;
        assert_eq!(
            current_window_end(&limits, day + 3600 + 5),
            Some(day + 7200)
        );
        assert_eq!(current_window_end(&limits, day + 10 * 3600 + 5), None);
        let unknown = UserLimits {
            times_location: "Mars/Olympus".into(),
            ..limits
        };
        assert_eq!(current_window_end(&unknown, day + 3600 + 5), None);
    }
}
