//! `exports [ ... ]` and `imports [ ... ]` inside an account of `accounts { }`: parsed into
//! [`ExportOptions`] / [`ImportOptions`], then checked once every account of the block is
//! known ([`check_imports`]) as nats-server checks them: named accounts exist, the exporter
//! allows the importer, prefixes are literal, transforms are valid, no duplicates and no cycles;
//! with nats-server's messages.
//!
//! Called by `accounts.rs`; knows nothing of routing (the runtime side is `accounts/imports.rs`).

use super::accounts::AccountOptions;
use super::options::{position, string};
use super::value::{ConfigError, Entry, Value};
use nats_subject::{is_subset_match, is_valid_subject, subjects_overlap};
use std::time::Duration;

/// nats-server's default time a service export's responses may take (`threshold`).
pub const DEFAULT_RESPONSE_THRESHOLD: Duration = Duration::from_secs(120);

/// How many responses a service request may get through the import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResponseType {
    /// One response, then the mapping is gone.
    #[default]
    Singleton,
    /// Any number of responses until the threshold passes.
    Stream,
    /// As `Stream` (nats-server's chunked responses).
    Chunked,
}

/// One entry of an account's `exports`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportOptions {
    pub subject: String,
    /// `None`: a stream export; `Some`: a service export with its response type.
    pub service: Option<ResponseType>,
    /// How long responses are let through (service exports).
    pub threshold: Duration,
    /// `accounts: [...]`: only these may import (`None`: public).
    pub accounts: Option<Vec<String>>,
}

/// One entry of an account's `imports`, with `to` already worked out (`prefix` applied, or the
/// subject itself when neither `prefix` nor `to` is given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    pub service: bool,
    /// The exporting account.
    pub account: String,
    /// The subject in the exporting account.
    pub subject: String,
    /// The subject in the importing account.
    pub to: String,
}

pub(super) fn parse_exports(
    account: &str,
    entry: &Entry,
    warnings: &mut Vec<String>,
) -> Result<Vec<ExportOptions>, ConfigError> {
    let Value::Array(items) = &entry.value else {
        return Err(entry.error(format!(
            "Exports should be an array, got {}",
            entry.value.go_type_name()
        )));
    };
    let mut exports = Vec::new();
    for item in items {
        let Value::Map(keys) = &item.value else {
            return Err(item.error(format!(
                "Export Items should be a map with type entry, got {}",
                item.value.go_type_name()
            )));
        };
        let mut export = ExportOptions {
            subject: String::new(),
            service: None,
            threshold: DEFAULT_RESPONSE_THRESHOLD,
            accounts: None,
        };
        let (mut stream_seen, mut response) = (false, None);
        for (key, value) in keys {
            match key.to_ascii_lowercase().as_str() {
                "stream" => {
                    if export.service.is_some() {
                        return Err(value.error(format!(
                            "Detected stream {:?} but already saw a service",
                            string(value)?
                        )));
                    }
                    stream_seen = true;
                    export.subject = expect_string(value, "stream name")?;
                }
                "service" => {
                    if stream_seen {
                        return Err(value.error(format!(
                            "Detected service {:?} but already saw a stream",
                            string(value)?
                        )));
                    }
                    export.subject = expect_string(value, "service name")?;
                    export.service = Some(ResponseType::Singleton);
                }
                "response" | "response_type" => {
                    let text = expect_string(value, "response type")?;
                    response = Some(match text.to_ascii_lowercase().as_str() {
                        "single" | "singleton" => ResponseType::Singleton,
                        "stream" => ResponseType::Stream,
                        "chunk" | "chunked" => ResponseType::Chunked,
                        _ => return Err(value.error(format!("Unknown response type: {text:?}"))),
                    });
                }
                "threshold" | "response_threshold" | "response_max_time" | "response_time" => {
                    let text = string(value)?;
                    export.threshold = go_compat::duration::parse_std(&text).map_err(|_| {
                        value.error(format!(
                            "Expected response threshold to be a parseable time duration, got {text:?}"
                        ))
                    })?;
                }
                "accounts" => {
                    let Value::Array(names) = &value.value else {
                        return Err(value.error("accounts must be an array"));
                    };
                    export.accounts = Some(names.iter().map(string).collect::<Result<_, _>>()?);
                }
                "latency" | "allow_trace" | "account_token_position" => warnings.push(format!(
                    "{}: account {account:?}: export \"{key}\" is not supported by rnats and is \
                     ignored",
                    position(value)
                )),
                _ if value.used_as_variable => {}
                _ => return Err(value.error(format!("unknown field \"{key}\""))),
            }
        }
        if response.is_some() && stream_seen {
            return Err(item.error("Detected response directive on non-service"));
        }
        if let (Some(service), Some(response)) = (&mut export.service, response) {
            *service = response;
        }
        if export.subject.is_empty() {
            continue;
        }
        exports.push(export);
    }
    Ok(exports)
}

pub(super) fn parse_imports(entry: &Entry) -> Result<Vec<ImportOptions>, ConfigError> {
    let Value::Array(items) = &entry.value else {
        return Err(entry.error(format!(
            "Imports should be an array, got {}",
            entry.value.go_type_name()
        )));
    };
    let mut imports: Vec<ImportOptions> = Vec::new();
    for item in items {
        let Value::Map(keys) = &item.value else {
            return Err(item.error(format!(
                "Import Items should be a map with type entry, got {}",
                item.value.go_type_name()
            )));
        };
        let (mut source, mut service) = (None, false);
        let (mut prefix, mut to) = (None, None);
        for (key, value) in keys {
            match key.to_ascii_lowercase().as_str() {
                kind @ ("stream" | "service") => {
                    if source.is_some() {
                        return Err(value.error(if kind == "stream" {
                            "Detected stream but already saw a service"
                        } else {
                            "Detected service but already saw a stream"
                        }));
                    }
                    service = kind == "service";
                    source = Some(parse_source(value, kind)?);
                }
                "prefix" => prefix = Some(string(value)?),
                "to" => {
                    if prefix.is_some() && !service {
                        return Err(value
                            .error("Stream import can not have a 'prefix' and a 'to' property"));
                    }
                    to = Some(string(value)?);
                }
                "share" | "allow_trace" => {}
                _ if value.used_as_variable => {}
                _ => return Err(value.error(format!("unknown field \"{key}\""))),
            }
        }
        let Some((account, subject)) = source else {
            continue;
        };
        let to = match (service, prefix, to) {
            (false, Some(prefix), _) if !prefix.is_empty() => {
                if !nats_subject::is_literal(&prefix) {
                    return Err(entry.error(format!(
                        "Error adding stream import {subject:?}: stream import prefix can not \
                         contain wildcard tokens"
                    )));
                }
                let separator = if prefix.ends_with('.') { "" } else { "." };
                format!("{prefix}{separator}{subject}")
            }
            (_, _, Some(to)) if !to.is_empty() => to,
            _ => subject.clone(),
        };
        if service {
            if let Some(duplicate) = imports
                .iter()
                .find(|other| other.service && other.to == to && other.account == account)
            {
                return Err(item.error(format!(
                    "Duplicate service import subject {to:?}, previously used in import for \
                     account {:?}, subject {:?}",
                    duplicate.account, duplicate.subject
                )));
            }
        }
        imports.push(ImportOptions {
            service,
            account,
            subject,
            to,
        });
    }
    Ok(imports)
}

/// `{ account: A, subject: "x.>" }` of an import.
fn parse_source(entry: &Entry, kind: &str) -> Result<(String, String), ConfigError> {
    let Value::Map(keys) = &entry.value else {
        let what = if kind == "stream" {
            "Stream"
        } else {
            "Service"
        };
        return Err(entry.error(format!(
            "{what} entry should be an account map, got {}",
            entry.value.go_type_name()
        )));
    };
    let (mut account, mut subject) = (String::new(), String::new());
    for (key, value) in keys {
        match key.to_ascii_lowercase().as_str() {
            "account" => account = string(value)?,
            "subject" => subject = string(value)?,
            _ if value.used_as_variable => {}
            _ => return Err(value.error(format!("unknown field \"{key}\""))),
        }
    }
    if account.is_empty() || subject.is_empty() {
        return Err(entry.error("Expect an account name and a subject"));
    }
    Ok((account, subject))
}

fn expect_string(entry: &Entry, what: &str) -> Result<String, ConfigError> {
    match &entry.value {
        Value::String(text) => Ok(text.clone()),
        other => Err(entry.error(format!(
            "Expected {what} to be string, got {}",
            other.go_type_name()
        ))),
    }
}

/// nats-server's checks once every account is known, in its order: stream exports, service
/// exports, stream imports, service imports; the first failure is returned, positioned at the
/// `accounts` block as nats-server positions it.
pub(super) fn check_imports(accounts: &[AccountOptions], block: &Entry) -> Result<(), ConfigError> {
    let fail = |message: String| Err(block.error(message));
    let find = |name: &str| accounts.iter().find(|account| account.name == name);
    for account in accounts {
        for export in &account.exports {
            for name in export.accounts.iter().flatten() {
                if find(name).is_none() {
                    let kind = if export.service.is_some() {
                        "service"
                    } else {
                        "stream"
                    };
                    return fail(format!("{name:?} account not defined for {kind} export"));
                }
            }
        }
    }
    // Imports are added one by one; cycles are checked against the ones added before.
    let mut added: Vec<(&str, &ImportOptions)> = Vec::new();
    for service in [false, true] {
        for account in accounts {
            for import in account
                .imports
                .iter()
                .filter(|import| import.service == service)
            {
                let kind = if service { "service" } else { "stream" };
                let Some(exporter) = find(&import.account) else {
                    return fail(format!(
                        "{:?} account not defined for {kind} import",
                        import.account
                    ));
                };
                let error = |reason: &str| {
                    fail(format!(
                        "Error adding {kind} import {:?}: {reason}",
                        import.subject
                    ))
                };
                if !is_valid_subject(&import.subject) || !is_valid_subject(&import.to) {
                    return error("invalid subject");
                }
                if !export_allows(exporter, service, &account.name, &import.subject) {
                    return error(&format!("{kind} import not authorized"));
                }
                if !transform_is_valid(import) {
                    return error(&format!(
                        "failed to create mapping transform for {kind} import subject from {:?} \
                         to {:?}",
                        import.subject, import.to
                    ));
                }
                let cycle = import_cycle(
                    accounts,
                    &added,
                    service,
                    &account.name,
                    &import.account,
                    &import.to,
                ) || (!service
                    && import_cycle(
                        accounts,
                        &added,
                        false,
                        &account.name,
                        &import.account,
                        &import.subject,
                    ));
                if cycle {
                    return error("import forms a cycle");
                }
                if !service
                    && added.iter().any(|(importer, other)| {
                        !other.service
                            && *importer == account.name
                            && other.account == import.account
                            && other.subject == import.subject
                    })
                {
                    return error("stream import already exists");
                }
                added.push((&account.name, import));
            }
        }
    }
    Ok(())
}

/// Whether `exporter` lets `importer` import `subject`: an export of exactly that subject, or
/// else one the subject falls within; public without an `accounts` list.
fn export_allows(exporter: &AccountOptions, service: bool, importer: &str, subject: &str) -> bool {
    let exports = || {
        exporter
            .exports
            .iter()
            .filter(move |export| export.service.is_some() == service)
    };
    let export = exports()
        .find(|export| export.subject == subject)
        .or_else(|| exports().find(|export| is_subset_match(subject, &export.subject)));
    match export {
        None => false,
        Some(export) => export
            .accounts
            .as_ref()
            .is_none_or(|names| names.iter().any(|name| name == importer)),
    }
}

/// A wildcard import mapped to another subject needs a transform nats-server accepts.
fn transform_is_valid(import: &ImportOptions) -> bool {
    if import.to == import.subject {
        return true;
    }
    let (source, destination) = if import.service {
        (&import.to, &import.subject)
    } else {
        (&import.subject, &import.to)
    };
    if nats_subject::is_literal(source) {
        return true;
    }
    nats_subject::is_valid_transform(source, &number_wildcards(destination))
}

/// `*` tokens of a destination written as wildcards become `$1`, `$2`, ... in order (nats-server's
/// `transformTokenize`); a trailing `>` stays.
pub fn number_wildcards(destination: &str) -> String {
    let mut number = 0;
    destination
        .split('.')
        .map(|token| {
            if token == "*" {
                number += 1;
                format!("${number}")
            } else {
                token.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// nats-server's `checkServiceImportsForCycles` (`service`) and `checkStreamImportsForCycles`:
/// follow the exporter's imports of the same kind whose subject collides with `subject` (a
/// stream walk only through accounts exporting the subject); reaching an account already visited
/// is a cycle.
fn import_cycle(
    accounts: &[AccountOptions],
    added: &[(&str, &ImportOptions)],
    service: bool,
    importer: &str,
    exporter: &str,
    subject: &str,
) -> bool {
    let mut visited = vec![importer.to_string()];
    let mut stack = vec![(exporter.to_string(), subject.to_string())];
    while let Some((account, subject)) = stack.pop() {
        if visited.len() > 1024 {
            return true;
        }
        let exports_it = service
            || accounts
                .iter()
                .find(|options| options.name == account)
                .is_some_and(|options| {
                    options.exports.iter().any(|export| {
                        export.service.is_none() && is_subset_match(&subject, &export.subject)
                    })
                });
        if !exports_it {
            continue;
        }
        for (owner, import) in added {
            let collides_with = if service { &import.subject } else { &import.to };
            if import.service != service
                || *owner != account
                || !subjects_overlap(&subject, collides_with)
            {
                continue;
            }
            if visited.contains(&import.account) {
                return true;
            }
            visited.push(account.clone());
            let next = if is_subset_match(&import.to, &subject) {
                import.to.clone()
            } else {
                subject.clone()
            };
            stack.push((import.account.clone(), next));
        }
    }
    false
}
