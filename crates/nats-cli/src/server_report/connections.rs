//! `nats server report connections`: every server's connections, from its
//! `$SYS.REQ.SERVER.PING.CONNZ` answer (paged as natscli pages it), in natscli's table with the
//! totals row and the connections per server, filtered by `--filter` / `--closed-reason`
//! (`conn_filter.rs`); also the CONNZ gathering `accounts.rs` reports from.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Write;

use bytes::Bytes;
use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::format::{comma, ibytes};
use crate::output::table::Table;

use super::conn_filter::{self, ConnFilter};
use super::{gather, str_of, u64_of, EventFilter, FilterArgs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConnectionSort {
    InBytes,
    OutBytes,
    InMsgs,
    OutMsgs,
    Uptime,
    Cid,
    Subs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StateFilter {
    Open,
    Closed,
    All,
}

impl StateFilter {
    /// nats-server's `ConnState` number.
    fn number(self) -> u8 {
        match self {
            StateFilter::Open => 0,
            StateFilter::Closed => 1,
            StateFilter::All => 2,
        }
    }
}

#[derive(Args, Debug)]
pub struct ConnectionsReportArgs {
    /// Limit the responses to a certain amount of servers
    pub limit: Option<usize>,
    /// Limit report to a specific account
    #[arg(long)]
    pub account: Option<String>,
    /// Sort by a specific property (in-bytes,out-bytes,in-msgs,out-msgs,uptime,cid,subs)
    #[arg(long, value_enum, default_value = "subs")]
    pub sort: ConnectionSort,
    /// Limit results to the top results
    #[arg(long, default_value_t = 1000)]
    pub top: usize,
    /// Limits responses only to those connections with matching subscription interest
    #[arg(long)]
    pub subject: Option<String>,
    /// Limits responses only to those connections for a specific authentication username
    #[arg(long)]
    pub username: Option<String>,
    /// Limits responses only to those connections that are in a specific state (open, closed, all)
    #[arg(long, value_enum, default_value = "open")]
    pub state: StateFilter,
    /// Filter results based on a closed reason
    #[arg(long = "closed-reason", value_name = "REASON")]
    pub closed_reason: Option<String>,
    /// Expression based filter for connections
    #[arg(long = "filter", value_name = "FILTER")]
    pub expression: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Read data from an archive file
    #[arg(long, value_name = "ARCHIVE")]
    pub archive: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

/// What a CONNZ gathering asks every server (nats-server's `ConnzOptions`).
pub(super) struct ConnzQuery<'a> {
    pub limit: Option<usize>,
    pub account: Option<&'a str>,
    pub user: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub state: StateFilter,
    pub filter: &'a FilterArgs,
    /// `--filter` / `--closed-reason`: the connections kept of each answer.
    pub expression: Option<&'a ConnFilter>,
    pub json: bool,
}

/// nats-server's `ConnzEventOptions` as natscli marshals them (no `omitempty` on the connz
/// options).
#[derive(Serialize)]
struct ConnzRequest<'a> {
    sort: &'a str,
    auth: bool,
    subscriptions: bool,
    subscriptions_detail: bool,
    offset: usize,
    limit: usize,
    cid: u64,
    mqtt_client: &'a str,
    state: u8,
    user: &'a str,
    acc: &'a str,
    filter_subject: &'a str,
    #[serde(flatten)]
    filter: EventFilter<'a>,
}

/// One page size, natscli's.
const PAGE: usize = 1024;

/// One server's answer checked as natscli checks it: its error, or its connections.
fn connections_of(answer: &Value) -> Result<&[Value], CliError> {
    let error = &answer["error"];
    if !error.is_null() {
        return Err(CliError::message(format!(
            "invalid response received: {} ({})",
            str_of(&error["description"]),
            u64_of(&error["code"])
        )));
    }
    let data = &answer["data"];
    if !data.is_object() {
        return Err(CliError::message("no data received in response"));
    }
    Ok(data["connections"].as_array().map_or(&[], Vec::as_slice))
}

/// Whether a server has connections after this page.
fn has_more(answer: &Value) -> bool {
    let data = &answer["data"];
    u64_of(&data["offset"]) + u64_of(&data["limit"]) < u64_of(&data["total"])
}

/// The CONNZ answers of every server that has connections (each `{server, data}`), every page
/// of them. Without a server count, as natscli: the first server's `active_servers`.
pub(super) async fn gather_connz(
    query: &ConnzQuery<'_>,
    options: &GlobalOptions,
) -> Result<Vec<Value>, CliError> {
    let (client, effective) = options.connect().await?;
    let wait_for = match query.limit.filter(|limit| *limit > 0) {
        Some(limit) => limit,
        None => {
            let answers = gather(
                &client,
                "$SYS.REQ.SERVER.PING",
                Bytes::from_static(b"{}"),
                1,
                effective.timeout,
            )
            .await?;
            answers.first().map_or(0, |answer| {
                u64_of(&answer.value["statsz"]["active_servers"])
            }) as usize
        }
    };
    let mut request = ConnzRequest {
        sort: "",
        auth: true,
        subscriptions: true,
        subscriptions_detail: false,
        offset: 0,
        limit: PAGE,
        cid: 0,
        mqtt_client: "",
        state: query.state.number(),
        user: query.user.unwrap_or_default(),
        acc: query.account.unwrap_or_default(),
        filter_subject: query.subject.unwrap_or_default(),
        filter: query.filter.event_filter(options),
    };
    let mut result = Vec::new();
    let mut first = true;
    loop {
        let body = serde_json::to_vec(&request)?;
        let answers = gather(
            &client,
            "$SYS.REQ.SERVER.PING.CONNZ",
            body.into(),
            wait_for,
            effective.timeout,
        )
        .await?;
        let mut more = false;
        for mut answer in answers {
            if connections_of(&answer.value)?.is_empty() {
                continue;
            }
            more |= has_more(&answer.value);
            if let Some(expression) = query.expression {
                conn_filter::retain(expression, &mut answer.value)?;
                if connections_of(&answer.value)?.is_empty() {
                    continue;
                }
            }
            result.push(answer.value);
        }
        if !more {
            break;
        }
        if !query.json {
            if first {
                print!("Gathering paged connection information");
            }
            print!(".");
            let _ = std::io::stdout().flush();
        }
        first = false;
        // natscli steps by 1025 and so skips one connection a page; we step by the page.
        request.offset += PAGE;
    }
    if !query.json {
        println!();
    }
    Ok(result)
}

/// The archive's CONNZ answers, `--filter` applied, those left with connections.
pub(super) fn archive_connz(path: &str, query: &ConnzQuery<'_>) -> Result<Vec<Value>, CliError> {
    let mut answers = super::archive::connz(path, query)?;
    if let Some(expression) = query.expression {
        for answer in &mut answers {
            conn_filter::retain(expression, answer)?;
        }
    }
    answers.retain(|answer| connections_of(answer).is_ok_and(|conns| !conns.is_empty()));
    Ok(answers)
}

/// One connection with the server it is on (natscli's `connInfo`).
#[derive(Clone, Copy)]
pub(super) struct Conn<'a> {
    pub info: &'a Value,
    pub server: &'a Value,
}

impl Conn<'_> {
    fn figure(&self, key: &str) -> u64 {
        u64_of(&self.info[key])
    }

    fn subs(&self) -> usize {
        self.info["subscriptions_list"]
            .as_array()
            .map_or(0, Vec::len)
    }

    fn start(&self) -> Option<chrono::DateTime<chrono::FixedOffset>> {
        chrono::DateTime::parse_from_rfc3339(self.info["start"].as_str()?).ok()
    }

    /// The connection as natscli's JSON shows it: its CONNZ entry with its `server`.
    pub fn json(&self) -> Value {
        let mut value = self.info.clone();
        if let Some(object) = value.as_object_mut() {
            object.insert("server".into(), self.server.clone());
        }
        value
    }
}

/// Every connection of the answers, in the order received.
pub(super) fn flatten(answers: &[Value]) -> Vec<Conn<'_>> {
    answers
        .iter()
        .flat_map(|answer| {
            answer["data"]["connections"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|info| Conn {
                    info,
                    server: &answer["server"],
                })
        })
        .collect()
}

fn compare(sort: ConnectionSort, a: &Conn, b: &Conn) -> Ordering {
    match sort {
        ConnectionSort::InBytes => a.figure("in_bytes").cmp(&b.figure("in_bytes")),
        ConnectionSort::OutBytes => a.figure("out_bytes").cmp(&b.figure("out_bytes")),
        ConnectionSort::InMsgs => a.figure("in_msgs").cmp(&b.figure("in_msgs")),
        ConnectionSort::OutMsgs => a.figure("out_msgs").cmp(&b.figure("out_msgs")),
        // The newest connection (the shortest uptime) first.
        ConnectionSort::Uptime => b.start().cmp(&a.start()),
        ConnectionSort::Cid => a.figure("cid").cmp(&b.figure("cid")),
        ConnectionSort::Subs => a.subs().cmp(&b.subs()),
    }
}

/// `text` cut to `keep` characters and " .." when longer than `limit`.
fn shorten(text: &str, limit: usize, keep: usize) -> String {
    if text.chars().count() > limit {
        let kept: String = text.chars().take(keep).collect();
        format!("{kept} ..")
    } else {
        text.to_string()
    }
}

/// natscli's connections table (sorted, the first `top`, ascending unless reversed), its
/// totals row over all of them, then the connections per server.
pub(super) fn render(
    conns: &mut [Conn],
    sort: ConnectionSort,
    sort_name: &str,
    top: usize,
    reverse: bool,
    state: StateFilter,
) {
    conns.sort_by(|a, b| {
        let order = compare(sort, a, b);
        if reverse {
            order.reverse()
        } else {
            order
        }
    });
    let total = conns.len();
    let limit = if top > 0 && top <= total { top } else { total };
    let show_reason = state != StateFilter::Open;
    let mut table = Table::new(format!(
        "Top {limit} Connections out of {} by {sort_name}",
        comma(total as u64)
    ));
    let mut headers = vec![
        "CID",
        "Name",
        "Server",
        "Cluster",
        "IP",
        "Account",
        "Uptime",
        "In Msgs",
        "Out Msgs",
        "In Bytes",
        "Out Bytes",
        "Subs",
    ];
    if show_reason {
        headers.push("Reason");
    }
    table.headers(headers);
    let (mut in_msgs, mut out_msgs, mut in_bytes, mut out_bytes, mut subs) = (0, 0, 0, 0, 0);
    // Servers in the order first seen, with their cluster and count.
    let mut servers: Vec<(String, String, u64)> = Vec::new();
    let mut server_index: HashMap<String, usize> = HashMap::new();
    for (index, conn) in conns.iter().enumerate() {
        let info = conn.info;
        let mut name = str_of(&info["name"]);
        if name.is_empty() {
            name = str_of(&info["mqtt_client"]);
        }
        in_msgs += conn.figure("in_msgs");
        out_msgs += conn.figure("out_msgs");
        in_bytes += conn.figure("in_bytes");
        out_bytes += conn.figure("out_bytes");
        subs += conn.figure("subscriptions");
        let server_name = str_of(&conn.server["name"]).to_string();
        let cluster = str_of(&conn.server["cluster"]).to_string();
        let slot = *server_index.entry(server_name.clone()).or_insert_with(|| {
            servers.push((server_name.clone(), cluster.clone(), 0));
            servers.len() - 1
        });
        servers[slot].2 += 1;
        if index >= limit {
            continue;
        }
        let cid = match str_of(&info["kind"]) {
            "" | "Client" => conn.figure("cid").to_string(),
            kind => format!(
                "{}{}",
                kind.chars().next().unwrap_or_default(),
                conn.figure("cid")
            ),
        };
        let mut cells = vec![
            cid,
            shorten(name, 40, 40),
            server_name,
            cluster,
            format!("{}:{}", str_of(&info["ip"]), conn.figure("port")),
            shorten(str_of(&info["account"]), 46, 12),
            str_of(&info["uptime"]).to_string(),
            comma(conn.figure("in_msgs")),
            comma(conn.figure("out_msgs")),
            ibytes(conn.figure("in_bytes")),
            ibytes(conn.figure("out_bytes")),
            comma(conn.subs() as u64),
        ];
        if show_reason {
            cells.push(str_of(&info["reason"]).to_string());
        }
        table.row(cells);
    }
    if total > 1 {
        let mut cells = vec![
            String::new(),
            format!("Totals for {} connections", comma(total as u64)),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            comma(in_msgs),
            comma(out_msgs),
            ibytes(in_bytes),
            ibytes(out_bytes),
            comma(subs),
        ];
        if show_reason {
            cells.push(String::new());
        }
        table.footer(cells);
    }
    println!("{}", table.render());

    if !servers.is_empty() {
        println!();
        servers.sort_by_key(|(_, _, count)| *count);
        let mut table = Table::new("Connections per server");
        table.headers(["Server", "Cluster", "Connections"]);
        // natscli hands go-pretty the count as a number, which it right-aligns.
        table.align_right(2);
        for (name, cluster, count) in servers {
            table.row([name, cluster, count.to_string()]);
        }
        println!("{}", table.render());
    }
}

pub(super) async fn report_connections(
    args: &ConnectionsReportArgs,
    reverse: bool,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let expression =
        ConnFilter::from_flags(args.expression.as_deref(), args.closed_reason.as_deref())?;
    let query = ConnzQuery {
        limit: args.limit,
        account: args.account.as_deref(),
        user: args.username.as_deref(),
        subject: args.subject.as_deref(),
        state: args.state,
        filter: &args.filter,
        expression: expression.as_ref(),
        json: args.json,
    };
    let answers = match &args.archive {
        Some(path) => archive_connz(path, &query)?,
        None => gather_connz(&query, options).await?,
    };
    if answers.is_empty() {
        return Err(CliError::message("did not get results from any servers"));
    }
    let mut conns = flatten(&answers);
    if args.json {
        let values: Vec<Value> = conns.iter().map(Conn::json).collect();
        println!("{}", serde_json::to_string_pretty(&values)?);
        return Ok(());
    }
    let sort_name = args
        .sort
        .to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_default();
    render(
        &mut conns, args.sort, &sort_name, args.top, reverse, args.state,
    );
    Ok(())
}
