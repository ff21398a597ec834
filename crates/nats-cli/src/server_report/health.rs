//! `nats server report health`: every server's `$SYS.REQ.SERVER.PING.HEALTHZ` answer in
//! natscli's Health Report: a row per server by name, its errors under it, and the totals.

use std::collections::BTreeSet;

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::format::comma;
use crate::output::table::Table;

use super::archive::HealthOptions;
use super::{gather, str_of, u64_of, EventFilter, FilterArgs};

#[derive(Args, Debug)]
pub struct HealthReportArgs {
    /// Limit the responses to a certain amount of servers
    pub limit: Option<usize>,
    /// Checks that JetStream should be enabled on all servers
    #[arg(long, short = 'J')]
    pub js_enabled: bool,
    /// Restricts the health check to the JetStream server only, do not check streams and consumers
    #[arg(long, short = 'S')]
    pub server_only: bool,
    /// Check only a specific Account
    #[arg(long)]
    pub account: Option<String>,
    /// Check only a specific Stream
    #[arg(long)]
    pub stream: Option<String>,
    /// Check only a specific Consumer
    #[arg(long)]
    pub consumer: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Read data from an archive file
    #[arg(long, value_name = "ARCHIVE")]
    pub archive: Option<String>,
}

/// nats-server's `HealthzEventOptions` as natscli sends them.
#[derive(Serialize)]
struct HealthzRequest<'a> {
    #[serde(rename = "js-enabled-only", skip_serializing_if = "std::ops::Not::not")]
    js_enabled_only: bool,
    #[serde(rename = "js-server-only", skip_serializing_if = "std::ops::Not::not")]
    js_server_only: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    account: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer: Option<&'a str>,
    details: bool,
    #[serde(flatten)]
    filter: EventFilter<'a>,
}

/// Every server's HEALTHZ answer, asked as natscli asks it.
async fn gather_healthz(
    args: &HealthReportArgs,
    options: &GlobalOptions,
) -> Result<Vec<Value>, CliError> {
    let (client, effective) = options.connect().await?;
    let request = HealthzRequest {
        js_enabled_only: args.js_enabled,
        js_server_only: args.server_only,
        account: args.account.as_deref().filter(|a| !a.is_empty()),
        stream: args.stream.as_deref().filter(|s| !s.is_empty()),
        consumer: args.consumer.as_deref().filter(|c| !c.is_empty()),
        details: true,
        filter: args.filter.event_filter(options),
    };
    let answers = gather(
        &client,
        "$SYS.REQ.SERVER.PING.HEALTHZ",
        serde_json::to_vec(&request)?.into(),
        args.limit.unwrap_or(0),
        effective.timeout,
    )
    .await?;
    Ok(answers.into_iter().map(|answer| answer.value).collect())
}

/// A health error's type: nats-server names it, older answers give its number.
fn error_type(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => match number.as_u64() {
            Some(0) => "CONNECTION".into(),
            Some(1) => "BAD_REQUEST".into(),
            Some(2) => "JETSTREAM".into(),
            Some(3) => "ACCOUNT".into(),
            Some(4) => "STREAM".into(),
            Some(5) => "CONSUMER".into(),
            _ => number.to_string(),
        },
        _ => String::new(),
    }
}

pub(super) async fn report_health(
    args: &HealthReportArgs,
    reverse: bool,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let answers = match &args.archive {
        Some(path) => {
            let unsupported = HealthOptions {
                js_enabled_only: args.js_enabled,
                js_server_only: args.server_only,
                account: args.account.as_deref().is_some_and(|a| !a.is_empty()),
                stream: args.stream.as_deref().is_some_and(|s| !s.is_empty()),
                consumer: args.consumer.as_deref().is_some_and(|c| !c.is_empty()),
            };
            super::archive::healthz(path, &unsupported, &args.filter)?
        }
        None => gather_healthz(args, options).await?,
    };
    let mut servers: Vec<&Value> = Vec::new();
    for answer in &answers {
        let error = &answer["error"];
        if !error.is_null() {
            return Err(CliError::message(format!(
                "{} ({})",
                str_of(&error["description"]),
                u64_of(&error["code"])
            )));
        }
        servers.push(answer);
    }
    servers.sort_by(|a, b| {
        let order = str_of(&a["server"]["name"]).cmp(str_of(&b["server"]["name"]));
        if reverse {
            order.reverse()
        } else {
            order
        }
    });

    let mut table = Table::new("Health Report");
    table.headers(["Server", "Cluster", "Domain", "Status", "Type", "Error"]);
    let (mut ok, mut not_ok, mut total_errors) = (0u64, 0u64, 0u64);
    let mut clusters = BTreeSet::new();
    for answer in &servers {
        let (server, data) = (&answer["server"], &answer["data"]);
        let code = u64_of(&data["status_code"]);
        table.row([
            str_of(&server["name"]).to_string(),
            str_of(&server["cluster"]).to_string(),
            str_of(&server["domain"]).to_string(),
            format!("{} ({code})", str_of(&data["status"])),
            String::new(),
            String::new(),
        ]);
        if code == 200 {
            ok += 1;
        } else {
            not_ok += 1;
        }
        clusters.insert(str_of(&server["cluster"]).to_string());
        let errors = data["errors"].as_array().map_or(&[][..], Vec::as_slice);
        if errors.is_empty() {
            continue;
        }
        total_errors += errors.len() as u64;
        let show = if errors.len() > 10 { 9 } else { errors.len() };
        for error in &errors[..show] {
            table.row([
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                error_type(&error["type"]),
                str_of(&error["error"]).to_string(),
            ]);
        }
        if show != errors.len() {
            table.row([
                String::new(),
                String::new(),
                String::new(),
                format!("{} more errors", errors.len() - show),
                String::new(),
                String::new(),
            ]);
        }
    }
    table.footer([
        comma(servers.len() as u64),
        comma(clusters.len() as u64),
        String::new(),
        format!("ok: {ok} / err: {not_ok}"),
        String::new(),
        comma(total_errors),
    ]);
    println!("{}\n", table.render());
    Ok(())
}
