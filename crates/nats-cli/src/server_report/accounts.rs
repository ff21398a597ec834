//! `nats server report accounts`: natscli's per-account summary of every server's connections
//! (the CONNZ answers `connections.rs` gathers): connections, messages, bytes and
//! subscriptions by account, or one account's connections.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::format::{comma, ibytes};
use crate::output::table::Table;

use super::connections::{self, flatten, Conn, ConnectionSort, ConnzQuery, StateFilter};
use super::{str_of, u64_of, FilterArgs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AccountSort {
    InBytes,
    OutBytes,
    InMsgs,
    OutMsgs,
    Conns,
    Subs,
}

#[derive(Args, Debug)]
pub struct AccountsReportArgs {
    /// Account to produce a report for
    pub account: Option<String>,
    /// Limit the responses to a certain amount of servers
    pub limit: Option<usize>,
    /// The account to produce a report for, as a flag (natscli takes it as the argument only)
    #[arg(long = "account", hide = true)]
    pub account_flag: Option<String>,
    /// Sort by a specific property (in-bytes,out-bytes,in-msgs,out-msgs,conns,subs)
    #[arg(long, value_enum, default_value = "subs")]
    pub sort: AccountSort,
    /// Limit results to the top results
    #[arg(long, default_value_t = 1000)]
    pub top: usize,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Read data from an archive file
    #[arg(long, value_name = "ARCHIVE")]
    pub archive: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

/// One account's figures over every server (natscli's `srvReportAccountInfo`).
#[derive(Default)]
struct AccountInfo<'a> {
    connections: Vec<Conn<'a>>,
    in_msgs: u64,
    out_msgs: u64,
    in_bytes: u64,
    out_bytes: u64,
    subs: u64,
    /// Each server once (by id), in the order first seen.
    servers: Vec<&'a Value>,
}

impl AccountInfo<'_> {
    fn figure(&self, sort: AccountSort) -> u64 {
        match sort {
            AccountSort::InBytes => self.in_bytes,
            AccountSort::OutBytes => self.out_bytes,
            AccountSort::InMsgs => self.in_msgs,
            AccountSort::OutMsgs => self.out_msgs,
            AccountSort::Conns => self.connections.len() as u64,
            AccountSort::Subs => self.subs,
        }
    }

    fn json(&self, name: &str) -> Value {
        json!({
            "account": name,
            "connections": self.connections.len(),
            "connection_info": self.connections.iter().map(Conn::json).collect::<Vec<_>>(),
            "in_msgs": self.in_msgs,
            "out_msgs": self.out_msgs,
            "in_bytes": self.in_bytes,
            "out_bytes": self.out_bytes,
            "subscriptions": self.subs,
            "server": self.servers,
        })
    }
}

fn accounts_of<'a>(conns: &[Conn<'a>]) -> BTreeMap<String, AccountInfo<'a>> {
    let mut accounts: BTreeMap<String, AccountInfo> = BTreeMap::new();
    for conn in conns {
        let info = conn.info;
        let account = accounts
            .entry(str_of(&info["account"]).to_string())
            .or_default();
        account.connections.push(*conn);
        account.in_msgs += u64_of(&info["in_msgs"]);
        account.out_msgs += u64_of(&info["out_msgs"]);
        account.in_bytes += u64_of(&info["in_bytes"]);
        account.out_bytes += u64_of(&info["out_bytes"]);
        account.subs += info["subscriptions_list"].as_array().map_or(0, Vec::len) as u64;
        let id = str_of(&conn.server["id"]);
        if !account
            .servers
            .iter()
            .any(|server| str_of(&server["id"]) == id)
        {
            account.servers.push(conn.server);
        }
    }
    accounts
}

pub(super) async fn report_accounts(
    args: &AccountsReportArgs,
    reverse: bool,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let account = args
        .account
        .as_deref()
        .or(args.account_flag.as_deref())
        .filter(|account| !account.is_empty());
    let query = ConnzQuery {
        limit: args.limit,
        account,
        user: None,
        subject: None,
        state: StateFilter::Open,
        filter: &args.filter,
        expression: None,
        json: args.json,
    };
    let answers = match &args.archive {
        Some(path) => connections::archive_connz(path, &query)?,
        None => connections::gather_connz(&query, options).await?,
    };
    if answers.is_empty() {
        return Err(CliError::message("did not get results from any servers"));
    }
    let conns = flatten(&answers);
    let mut accounts = accounts_of(&conns);
    let sort_name = args
        .sort
        .to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_default();

    if let Some(wanted) = account {
        if accounts.len() != 1 {
            return Err(CliError::message(format!(
                "received results for multiple accounts, expected {wanted}"
            )));
        }
        let Some(info) = accounts.get_mut(wanted) else {
            return Err(CliError::message(format!(
                "did not receive any results for account {wanted}"
            )));
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&info.json(wanted))?);
            return Ok(());
        }
        // One account: its connections, sorted as the connections report sorts (natscli's
        // `conns` falls back to subscriptions there).
        let sort = match args.sort {
            AccountSort::InBytes => ConnectionSort::InBytes,
            AccountSort::OutBytes => ConnectionSort::OutBytes,
            AccountSort::InMsgs => ConnectionSort::InMsgs,
            AccountSort::OutMsgs => ConnectionSort::OutMsgs,
            AccountSort::Conns | AccountSort::Subs => ConnectionSort::Subs,
        };
        connections::render(
            &mut info.connections,
            sort,
            &sort_name,
            args.top,
            reverse,
            StateFilter::Open,
        );
        return Ok(());
    }

    let mut rows: Vec<(String, AccountInfo)> = accounts.into_iter().collect();
    rows.sort_by(|(_, a), (_, b)| {
        let order = a.figure(args.sort).cmp(&b.figure(args.sort));
        if reverse {
            order.reverse()
        } else {
            order
        }
    });
    // natscli keeps the last `top` (the largest) ascending, the first `top` reversed.
    if args.top > 0 && args.top < rows.len() {
        if reverse {
            rows.truncate(args.top);
        } else {
            rows.drain(..rows.len() - args.top);
        }
    }
    if args.json {
        let values: Vec<Value> = rows.iter().map(|(name, info)| info.json(name)).collect();
        println!("{}", serde_json::to_string_pretty(&values)?);
        return Ok(());
    }
    let mut table = Table::new(format!("{} Accounts Overview", rows.len()));
    table.headers([
        "Account",
        "Connections",
        "In Msgs",
        "Out Msgs",
        "In Bytes",
        "Out Bytes",
        "Subs",
    ]);
    for (name, info) in &rows {
        table.row([
            name.clone(),
            comma(info.connections.len() as u64),
            comma(info.in_msgs),
            comma(info.out_msgs),
            ibytes(info.in_bytes),
            ibytes(info.out_bytes),
            comma(info.subs),
        ]);
    }
    println!("{}", table.render());
    Ok(())
}
