//! `nats server report connections --archive FILE` (and `health`, `jetstream`): the report read
//! from an audit archive (the
//! ZIP file natscli's `nats audit gather` writes, jsm.go's `audit/archive` format) instead of
//! asked of the servers. The archive's `capture/misc/manifest.json` maps each file to its tags;
//! the connections are the `account_connections` pages of every account (each one server's
//! `$SYS.REQ.ACCOUNT.<account>.CONNZ` answer), merged per server as jsm.go's `AuditArchive`
//! merges them; the health is each server's `health` page (its HEALTHZ answer), the JetStream
//! report each server's `jetstream_info` pages (its JSZ answer). Options an
//! archive cannot answer are refused, as there.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;

use serde::Deserialize;
use serde_json::Value;

use super::connections::{ConnzQuery, StateFilter};
use super::FilterArgs;
use crate::error::CliError;

/// The manifest's path of itself, and of nothing else.
const MANIFEST: &str = "capture/misc/manifest.json";

/// One tag of a manifest entry.
#[derive(Deserialize)]
struct Tag {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Value")]
    value: String,
}

/// An opened audit archive: its ZIP and its manifest.
struct Archive {
    zip: zip::ZipArchive<File>,
    manifest: BTreeMap<String, Vec<Tag>>,
}

impl Archive {
    /// Opens `path`, checking that every file the manifest names is in the ZIP.
    fn open(path: &str) -> Result<Archive, CliError> {
        let file = File::open(path)
            .map_err(|error| CliError::message(format!("could not open {path}: {error}")))?;
        let mut zip = zip::ZipArchive::new(file)
            .map_err(|error| CliError::message(format!("could not read {path}: {error}")))?;
        let manifest: BTreeMap<String, Vec<Tag>> =
            serde_json::from_slice(&read_entry(&mut zip, MANIFEST)?).map_err(|error| {
                CliError::message(format!("invalid manifest in {path}: {error}"))
            })?;
        for name in manifest.keys() {
            if zip.index_for_name(name).is_none() {
                return Err(CliError::message(format!(
                    "archive {path} is missing {name}, listed in its manifest"
                )));
            }
        }
        Ok(Archive { zip, manifest })
    }

    /// Every value of tag `label` in the archive, sorted.
    fn values_of(&self, label: &str) -> BTreeSet<&str> {
        self.manifest
            .values()
            .flatten()
            .filter(|tag| tag.name == label)
            .map(|tag| tag.value.as_str())
            .collect()
    }

    /// The pages (`NNNN.json`) carrying all of `tags`, in path order (server, then page).
    fn pages(&self, tags: &[(&str, &str)]) -> Vec<String> {
        self.manifest
            .iter()
            .filter(|(path, _)| is_page(path))
            .filter(|(_, carried)| {
                tags.iter().all(|(label, value)| {
                    carried
                        .iter()
                        .any(|tag| tag.name == *label && tag.value == *value)
                })
            })
            .map(|(path, _)| path.clone())
            .collect()
    }

    fn json(&mut self, name: &str) -> Result<Value, CliError> {
        serde_json::from_slice(&read_entry(&mut self.zip, name)?)
            .map_err(|error| CliError::message(format!("invalid JSON in {name}: {error}")))
    }
}

/// A page's base name is four digits and `.json`, as jsm.go's reader wants it.
fn is_page(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or_default();
    base.len() == 9
        && base.ends_with(".json")
        && base.bytes().take(4).all(|byte| byte.is_ascii_digit())
}

fn read_entry(zip: &mut zip::ZipArchive<File>, name: &str) -> Result<Vec<u8>, CliError> {
    let mut entry = zip
        .by_name(name)
        .map_err(|error| CliError::message(format!("could not read {name}: {error}")))?;
    let mut bytes = Vec::new();
    entry
        .read_to_end(&mut bytes)
        .map_err(|error| CliError::message(format!("could not read {name}: {error}")))?;
    Ok(bytes)
}

/// Whether the answer's `server` passes `--host` (name or id), `--cluster` and `--tags`.
fn server_matches(server: &Value, filter: &FilterArgs) -> bool {
    let text = |key: &str| server[key].as_str().unwrap_or_default();
    let name_ok = filter
        .host
        .as_deref()
        .is_none_or(|host| host == text("name") || host == text("id"));
    let cluster_ok = filter
        .cluster
        .as_deref()
        .is_none_or(|cluster| cluster == text("cluster"));
    let tags: Vec<String> = server["tags"]
        .as_array()
        .map(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .map(str::to_lowercase)
                .collect()
        })
        .unwrap_or_default();
    let tags_ok = filter
        .tags
        .iter()
        .all(|wanted| tags.contains(&wanted.trim().to_lowercase()));
    name_ok && cluster_ok && tags_ok
}

/// The archive's CONNZ answers (`{server, data}`), one per server, every account's
/// connections in it (an entry without an account gets the account of its page).
pub(super) fn connz(path: &str, query: &ConnzQuery<'_>) -> Result<Vec<Value>, CliError> {
    let mut unsupported = Vec::new();
    if query.account.is_some() {
        unsupported.push("account");
    }
    if query.subject.is_some() {
        unsupported.push("filter_subject");
    }
    if query.user.is_some() {
        unsupported.push("user");
    }
    if query.state != StateFilter::Open {
        unsupported.push("state");
    }
    refuse("connz", &unsupported)?;
    let mut archive = Archive::open(path)?;
    let accounts: Vec<String> = archive
        .values_of("account")
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut answers: Vec<Value> = Vec::new();
    let mut by_server: BTreeMap<String, usize> = BTreeMap::new();
    for account in &accounts {
        let pages = archive.pages(&[
            ("account", account),
            ("artifact_type", "account_connections"),
        ]);
        for page in pages {
            let mut answer = archive.json(&page)?;
            if !server_matches(&answer["server"], query.filter) || !answer["data"].is_object() {
                continue;
            }
            let server_id = answer["server"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let mut conns = match answer["data"]["connections"].take() {
                Value::Array(conns) => conns,
                _ => Vec::new(),
            };
            for conn in &mut conns {
                if conn["account"].as_str().unwrap_or_default().is_empty() {
                    conn["account"] = Value::String(account.clone());
                }
            }
            let total = answer["data"]["total"].as_u64().unwrap_or_default();
            match by_server.get(&server_id) {
                Some(&index) => {
                    let base = &mut answers[index]["data"];
                    let merged_total = base["total"].as_u64().unwrap_or_default() + total;
                    if let Value::Array(existing) = &mut base["connections"] {
                        existing.extend(conns);
                        base["num_connections"] = existing.len().into();
                    }
                    base["total"] = merged_total.into();
                }
                None => {
                    answer["data"]["num_connections"] = conns.len().into();
                    answer["data"]["connections"] = Value::Array(conns);
                    by_server.insert(server_id, answers.len());
                    answers.push(answer);
                }
            }
        }
    }
    Ok(answers)
}

/// The options natscli's HEALTHZ takes that an archive cannot answer, set.
pub(super) struct HealthOptions {
    pub js_enabled_only: bool,
    pub js_server_only: bool,
    pub account: bool,
    pub stream: bool,
    pub consumer: bool,
}

/// The archive's HEALTHZ answers (`{server, data}`), one per server page, in cluster and server
/// order.
pub(super) fn healthz(
    path: &str,
    options: &HealthOptions,
    filter: &FilterArgs,
) -> Result<Vec<Value>, CliError> {
    let unsupported: Vec<&str> = [
        (options.js_enabled_only, "js-enabled-only"),
        (options.js_server_only, "js-server-only"),
        (options.account, "account"),
        (options.stream, "stream"),
        (options.consumer, "consumer"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect();
    refuse("healthz", &unsupported)?;
    let mut archive = Archive::open(path)?;
    let mut answers = Vec::new();
    for page in archive.pages(&[("artifact_type", "health")]) {
        let answer = archive.json(&page)?;
        if server_matches(&answer["server"], filter) {
            answers.push(answer);
        }
    }
    Ok(answers)
}

/// The archive's JSZ answers (`{server, data}`), one per server: its `jetstream_info` pages,
/// the later pages' account details added to the first's, as jsm.go's `AuditArchive.Jsz`.
pub(super) fn jsz(path: &str, account: bool, filter: &FilterArgs) -> Result<Vec<Value>, CliError> {
    refuse("jsz", if account { &["account"] } else { &[] })?;
    let mut archive = Archive::open(path)?;
    let mut answers: Vec<Value> = Vec::new();
    let mut by_server: BTreeMap<String, usize> = BTreeMap::new();
    for page in archive.pages(&[("artifact_type", "jetstream_info")]) {
        let mut answer = archive.json(&page)?;
        if !server_matches(&answer["server"], filter) || !answer["data"].is_object() {
            continue;
        }
        // A server's pages share its directory (cluster and server).
        let server = page.rsplit_once('/').map_or(page.as_str(), |(dir, _)| dir);
        match by_server.get(server) {
            Some(&index) => {
                let details = match answer["data"]["account_details"].take() {
                    Value::Array(details) => details,
                    _ => Vec::new(),
                };
                let base = &mut answers[index]["data"]["account_details"];
                match base {
                    Value::Array(existing) => existing.extend(details),
                    _ => *base = Value::Array(details),
                }
            }
            None => {
                by_server.insert(server.to_string(), answers.len());
                answers.push(answer);
            }
        }
    }
    Ok(answers)
}

/// jsm.go's `ErrUnsupportedOption` for the options of `method` an archive cannot answer.
fn refuse(method: &str, unsupported: &[&str]) -> Result<(), CliError> {
    if unsupported.is_empty() {
        return Ok(());
    }
    Err(CliError::message(format!(
        "unsupported option for archive {method}: {}",
        unsupported.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_four_digits_and_json() {
        let dir = "capture/accounts/A/servers/unclustered__s1/account_connections";
        assert!(is_page(&format!("{dir}/0001.json")));
        assert!(is_page(&format!("{dir}/9999.json")));
        assert!(!is_page(&format!("{dir}/001.json")));
        assert!(!is_page(&format!("{dir}/00001.json")));
        assert!(!is_page(&format!("{dir}/abcd.json")));
        assert!(!is_page("capture/profiles/C1/s1__heap.prof"));
        assert!(!is_page(MANIFEST));
    }

    /// `--host` is the name or id, `--cluster` exact, `--tags` all present in any case.
    #[test]
    fn servers_are_selected_as_jsm_go_selects_them() {
        let server = serde_json::json!({
            "name": "n1", "id": "NID", "cluster": "east", "tags": ["Zone:A", "ssd"]
        });
        let filter = |host: Option<&str>, cluster: Option<&str>, tags: &[&str]| FilterArgs {
            host: host.map(str::to_string),
            cluster: cluster.map(str::to_string),
            tags: tags.iter().map(|tag| tag.to_string()).collect(),
            watch: None,
        };
        for (args, expected) in [
            (filter(None, None, &[]), true),
            (filter(Some("n1"), Some("east"), &["zone:a", " SSD "]), true),
            (filter(Some("NID"), None, &[]), true),
            (filter(Some("n"), None, &[]), false),
            (filter(None, Some("eas"), &[]), false),
            (filter(None, None, &["ssd", "hdd"]), false),
        ] {
            assert_eq!(server_matches(&server, &args), expected, "{args:?}");
        }
    }
}
