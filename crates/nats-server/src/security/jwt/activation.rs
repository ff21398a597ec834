//! Activation tokens: an import of a private (`token_req`) export carries a JWT signed by the
//! exporting account (or one of its signing keys, naming it in `issuer_account`) that lets the
//! importing account take the export's subject. Checked in two places, as nats-server does:
//! [`validate`] with the importing account's JWT (nats-jwt's `Import.Validate`: a token that
//! does not decode, names another exporter, importer or kind, or does not hold the import's
//! subject makes the whole account JWT invalid), and [`admits`] when the import is built
//! (nats-server's `checkActivation`: not expired, a trusted issuer, not revoked by the export).

use super::claims::{ActivationClaims, ActivationFields, Export, Import};
use super::resolver::{Resolver, VerifiedAccount};
use super::{check_times, decode, is_account_key};

/// nats-jwt's checks of `import`'s token inside the JWT of the account `importer`; the error
/// in its words. An import without a token passes.
pub fn validate(import: &Import, importer: &str) -> Result<(), String> {
    if import.token.is_empty() {
        return Ok(());
    }
    let subject = &import.subject;
    let Ok(token) = decode::<ActivationFields>(&import.token) else {
        return Err(format!(
            "import {subject:?} contains an invalid activation token"
        ));
    };
    let fields = &token.nats;
    if token.iss != import.account && fields.issuer_account != import.account {
        return Err(format!(
            "activation token doesn't match account for import {subject:?}"
        ));
    }
    if token.sub != importer {
        return Err(format!(
            "activation token doesn't match account it is being included in, {subject:?}"
        ));
    }
    if fields.kind != import.kind {
        return Err(format!(
            "mismatch between token import type {} and type of import {}",
            fields.kind, import.kind
        ));
    }
    if !matches!(fields.kind.as_str(), "stream" | "service") {
        return Err(format!("invalid import type: {:?}", fields.kind));
    }
    if !fields.issuer_account.is_empty() && !is_account_key(&fields.issuer_account) {
        return Err("account_id is not an account public key".into());
    }
    // nats-jwt reads a service import's deprecated `to` as its subject here.
    let imported = if import.kind == "service" && !import.to.is_empty() {
        &import.to
    } else {
        subject
    };
    if !nats_subject::is_valid_subject(&fields.subject)
        || !nats_subject::is_subset_match(imported, &fields.subject)
    {
        return Err(format!(
            "activation token import subject {:?} doesn't match import {subject:?}",
            fields.subject
        ));
    }
    Ok(())
}

/// Whether `import` (declared by the account `importer`) carries a token admitting it to the
/// private `export` of `exporter` at `now` (seconds since the epoch).
pub fn admits(
    import: &Import,
    importer: &str,
    exporter: &VerifiedAccount,
    export: &Export,
    now: i64,
) -> bool {
    if import.token.is_empty() || validate(import, importer).is_err() {
        return false;
    }
    let Ok(token) = decode::<ActivationFields>(&import.token) else {
        return false;
    };
    trusted(&token, exporter)
        && check_times(&token, now).is_ok()
        && !(token.exp > 0 && token.exp <= now)
        && !revoked(export, &token)
}

/// nats-server's `isIssuerClaimTrusted`: a token naming an `issuer_account` must name the
/// exporter and be signed by one of its keys.
fn trusted(token: &ActivationClaims, exporter: &VerifiedAccount) -> bool {
    let issuer_account = &token.nats.issuer_account;
    issuer_account.is_empty()
        || (issuer_account == exporter.key() && exporter.signer(&token.iss).is_some())
}

/// nats-server's `isRevoked`: the importer (or `*`: every importer) revoked at or after the
/// token was issued.
fn revoked(export: &Export, token: &ActivationClaims) -> bool {
    [token.sub.as_str(), "*"].iter().any(|key| {
        export
            .revocations
            .get(*key)
            .is_some_and(|&revoked| revoked >= token.iat)
    })
}

/// The earliest expiry (seconds since the epoch) after `now` of the activation tokens the
/// held accounts' imports carry, for the watcher that rebuilds their importers then (as
/// nats-server's timer from `checkActivation`).
pub fn next_expiry(resolver: &Resolver, now: i64) -> Option<i64> {
    resolver
        .accounts()
        .iter()
        .flat_map(|account| account.fields().imports.iter().map(expiry))
        .flatten()
        .filter(|&expires| expires > now)
        .min()
}

/// The accounts holding an import whose activation token expired after `since`, by `now`.
pub fn expired_importers(
    resolver: &Resolver,
    since: i64,
    now: i64,
) -> Vec<std::sync::Arc<VerifiedAccount>> {
    resolver
        .accounts()
        .into_iter()
        .filter(|account| {
            account
                .fields()
                .imports
                .iter()
                .any(|import| expiry(import).is_some_and(|at| since < at && at <= now))
        })
        .collect()
}

fn expiry(import: &Import) -> Option<i64> {
    if import.token.is_empty() {
        return None;
    }
    let token = decode::<ActivationFields>(&import.token).ok()?;
    (token.exp > 0).then_some(token.exp)
}
