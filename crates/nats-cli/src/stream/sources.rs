//! Mirrors and sources of a stream, as natscli handles them: `--mirror`/`--source` given as a
//! stream name (then natscli's questions about start, filters and transforms, other domains and
//! accounts, unless defaults are taken) or as a JSON StreamSource; and their rendering in
//! `stream info` (the Replication rows of the configuration, and the Mirror Information /
//! Source Information sections with lag and last-seen).

use chrono::NaiveDateTime;
use jetstream_api::{
    ExternalStream, StreamConsumerSource, StreamSource, StreamSourceInfo, SubjectTransform,
    Timestamp,
};

use crate::api::decode_user_json;
use crate::error::{CliError, WithContext};
use crate::output::columns::Columns;
use crate::output::format::{comma_u64, go_time_string, humanize_nanos};
use crate::prompt::{self, Asker};

/// natscli's layout for start times typed at its prompts, in UTC.
const START_TIME_LAYOUT: &str = "%Y:%m:%d %H:%M:%S";

/// `--mirror`: a JSON StreamSource is taken as it is, a name leads to natscli's questions.
pub(super) fn mirror_from_flag(text: &str, asker: &Asker) -> Result<StreamSource, CliError> {
    match parse_json_source(text) {
        Some(parsed) => parsed.context("invalid mirror"),
        None => ask_mirror(text.trim(), asker),
    }
}

/// One `--source`: as [`mirror_from_flag`], with the questions naming the source.
pub(super) fn source_from_flag(text: &str, asker: &Asker) -> Result<StreamSource, CliError> {
    match parse_json_source(text) {
        Some(parsed) => parsed.context("invalid source"),
        None => ask_source(text.trim(), asker),
    }
}

fn parse_json_source(text: &str) -> Option<Result<StreamSource, CliError>> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') && trimmed.ends_with('}')) {
        return None;
    }
    Some(
        decode_user_json::<StreamSource>(trimmed).and_then(|source| {
            if source.name.is_empty() {
                Err(CliError::message("name is required"))
            } else {
                Ok(source)
            }
        }),
    )
}

fn parse_start_time(text: &str) -> Result<Option<Timestamp>, CliError> {
    if text.is_empty() {
        return Ok(None);
    }
    let parsed = NaiveDateTime::parse_from_str(text, START_TIME_LAYOUT)
        .map_err(|error| CliError::message(format!("invalid time format: {error}")))?;
    let nanos = parsed
        .and_utc()
        .timestamp_nanos_opt()
        .ok_or_else(|| CliError::message("invalid time format: out of range"))?;
    Ok(Some(Timestamp::from_unix_nanos(nanos)))
}

/// A durable consumer to read through, when the user wants one (natscli asks first).
fn ask_consumer(prompt_text: &str) -> Result<Option<StreamConsumerSource>, CliError> {
    if !prompt::confirm(prompt_text, false)? {
        return Ok(None);
    }
    Ok(Some(StreamConsumerSource {
        name: prompt::input_required("Durable consumer name")?,
        deliver_subject: prompt::input_required("Delivery subject")?,
    }))
}

/// Filter and transform pairs until an empty filter.
fn ask_transforms(filter_prompt: &str) -> Result<Vec<SubjectTransform>, CliError> {
    let mut transforms = Vec::new();
    loop {
        let source = prompt::input(filter_prompt, "").context("could not request filter")?;
        if source.is_empty() {
            return Ok(transforms);
        }
        let destination = prompt::input("Subject transform destination", "")
            .context("could not request transform destination")?;
        transforms.push(SubjectTransform {
            source,
            destination,
        });
    }
}

/// natscli's askMirror.
fn ask_mirror(name: &str, asker: &Asker) -> Result<StreamSource, CliError> {
    let mut mirror = StreamSource {
        name: name.to_string(),
        ..StreamSource::default()
    };
    if asker.accept_defaults {
        return Ok(mirror);
    }
    mirror.consumer = ask_consumer("Configure a custom durable consumer")?;
    let durable = mirror.consumer.is_some();
    if !durable && prompt::confirm("Adjust mirror start", false)? {
        mirror.opt_start_seq = asker.integer("Mirror Start Sequence", "0")?.max(0) as u64;
        if mirror.opt_start_seq == 0 {
            let text = prompt::input("Mirror Start Time (YYYY:MM:DD HH:MM:SS)", "")
                .context("could not request start time")?;
            mirror.opt_start_time = parse_start_time(&text)?;
        }
    }
    if prompt::confirm("Adjust mirror filter and transform", false)? {
        mirror.subject_transforms =
            ask_transforms("Filter mirror by subject (hit enter to finish)")?;
    }
    if prompt::confirm("Import mirror from a different JetStream domain", false)? {
        let domain = prompt::input_required("Foreign JetStream domain name")?;
        let deliver_prefix = if durable {
            String::new()
        } else {
            prompt::input("Delivery prefix", "")?
        };
        mirror.external = Some(ExternalStream {
            api_prefix: format!("$JS.{domain}.API"),
            deliver_prefix,
        });
    } else if prompt::confirm("Import mirror from a different account", false)? {
        let api_prefix = prompt::input_required("Foreign account API prefix")?;
        let deliver_prefix = if durable {
            String::new()
        } else {
            prompt::input_required("Foreign account delivery prefix")?
        };
        mirror.external = Some(ExternalStream {
            api_prefix,
            deliver_prefix,
        });
    }
    Ok(mirror)
}

/// natscli's askSource: the same questions, naming the source (`"ORDERS"`, `ORDERS Source`).
fn ask_source(name: &str, asker: &Asker) -> Result<StreamSource, CliError> {
    let mut source = StreamSource {
        name: name.to_string(),
        ..StreamSource::default()
    };
    if asker.accept_defaults {
        return Ok(source);
    }
    let quoted = format!("{name:?}");
    let prefix = format!("{name} Source");
    source.consumer = ask_consumer(&format!("Configure a custom durable consumer for {quoted}"))?;
    let durable = source.consumer.is_some();
    if !durable && prompt::confirm(&format!("Adjust source {quoted} start"), false)? {
        source.opt_start_seq = asker
            .integer(&format!("{prefix} Start Sequence"), "0")?
            .max(0) as u64;
        let text = prompt::input(
            &format!("{prefix} UTC Time Stamp (YYYY:MM:DD HH:MM:SS)"),
            "",
        )
        .context("could not request start time")?;
        source.opt_start_time = parse_start_time(&text)?;
    }
    if prompt::confirm(
        &format!("Adjust source {quoted} filter and transform"),
        false,
    )? {
        source.subject_transforms =
            ask_transforms("Filter source by subject (hit enter to finish)")?;
    }
    if prompt::confirm(
        &format!("Import {quoted} from a different JetStream domain"),
        false,
    )? {
        let domain = prompt::input_required(&format!("{prefix} foreign JetStream domain name"))?;
        let deliver_prefix = if durable {
            String::new()
        } else {
            prompt::input(
                &format!("{prefix} foreign JetStream domain delivery prefix"),
                "",
            )?
        };
        source.external = Some(ExternalStream {
            api_prefix: format!("$JS.{domain}.API"),
            deliver_prefix,
        });
    } else if prompt::confirm(&format!("Import {quoted} from a different account"), false)? {
        let api_prefix = prompt::input_required(&format!("{prefix} foreign account API prefix"))?;
        let deliver_prefix = if durable {
            String::new()
        } else {
            prompt::input_required(&format!("{prefix} foreign account delivery prefix"))?
        };
        source.external = Some(ExternalStream {
            api_prefix,
            deliver_prefix,
        });
    }
    Ok(source)
}

/// One mirror or source in the configuration's Replication rows.
pub(super) fn render_source(source: &StreamSource) -> String {
    let mut parts = vec![source.name.clone()];
    if source.opt_start_seq > 0 {
        parts.push(format!("Start Seq: {}", comma_u64(source.opt_start_seq)));
    }
    if let Some(time) = &source.opt_start_time {
        parts.push(format!("Start Time: {}", go_time_string(time)));
    }
    if let Some(external) = &source.external {
        if !external.api_prefix.is_empty() {
            parts.push(format!("API Prefix: {}", external.api_prefix));
        }
        if !external.deliver_prefix.is_empty() {
            parts.push(format!("Delivery Prefix: {}", external.deliver_prefix));
        }
    }
    if let Some(consumer) = &source.consumer {
        if consumer.deliver_subject.is_empty() {
            parts.push(format!("Consumer Name: {}", consumer.name));
        } else {
            parts.push(format!(
                "Consumer Name: {} ({})",
                consumer.name, consumer.deliver_subject
            ));
        }
    }
    parts.join(", ")
}

/// The Mirror Information / Source Information rows for one mirror or source.
pub(super) fn render_source_info(columns: &mut Columns, source: &StreamSourceInfo) {
    columns.row("Stream Name", &source.name);
    if !source.filter_subject.is_empty() {
        columns.row("Subject Filter", &source.filter_subject);
    } else {
        let count = source.subject_transforms.len();
        for (index, transform) in source.subject_transforms.iter().enumerate() {
            let label = match (index, count) {
                (0, 1) => "Subject Filter and Transform",
                (0, _) => "Subject Filters and Transforms",
                _ => "",
            };
            if transform.destination.is_empty() {
                columns.row(label, format!("{} untransformed", transform.source));
            } else {
                columns.row(
                    label,
                    format!("{} to {}", transform.source, transform.destination),
                );
            }
        }
    }
    columns.row("Lag", comma_u64(source.lag));
    let active = source.active.as_nanos();
    if active > 0 && active < i64::MAX {
        columns.row("Last Seen", humanize_nanos(source.active));
    } else {
        columns.row("Last Seen", "never");
    }
    if let Some(external) = &source.external {
        columns.row("Ext. API Prefix", &external.api_prefix);
        if !external.deliver_prefix.is_empty() {
            columns.row("Ext. Delivery Prefix", &external.deliver_prefix);
        }
    }
    if let Some(error) = &source.error {
        columns.row("Error", &error.description);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_parse_as_natscli_asks_for_them() {
        let typed = parse_start_time("2024:03:04 05:06:07").expect("parse");
        assert_eq!(
            typed.map(|time| time.to_rfc3339()),
            Some("2024-03-04T05:06:07Z".to_string())
        );
        assert_eq!(parse_start_time("").expect("empty"), None);
        assert!(parse_start_time("yesterday").is_err());
    }

    #[test]
    fn json_sources_need_a_name() {
        let parsed = parse_json_source(r#"{"name":"ORDERS","opt_start_seq":5}"#)
            .expect("json")
            .expect("valid");
        assert_eq!(parsed.name, "ORDERS");
        assert_eq!(parsed.opt_start_seq, 5);
        assert!(parse_json_source(r#"{"opt_start_seq":5}"#)
            .expect("json")
            .is_err());
        assert!(parse_json_source("ORDERS").is_none());
    }
}
