//! `nats consumer cluster step-down`: natscli's consumer leader step-down
//! (`$JS.API.CONSUMER.LEADER.STEPDOWN.<stream>.<consumer>`, a preferred server with
//! `--preferred`), then the wait for a new leader and the consumer's info.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::api::JetStream;
use crate::cluster::{await_new_leader, LeaderWait};
use crate::error::CliError;
use crate::output::log_line;

use super::load_selected;
use super::show::print_info;

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Force a new leader election by standing down the current leader
    #[command(name = "step-down", alias = "elect", alias = "down", alias = "d")]
    StepDown(StepDownArgs),
}

#[derive(Args, Debug)]
pub struct StepDownArgs {
    /// Stream to act on
    pub stream: Option<String>,
    /// Consumer to act on
    pub consumer: Option<String>,
    /// Prefer placing the leader on a specific host
    #[arg(long)]
    pub preferred: Option<String>,
    /// Force leader step down ignoring current leader
    #[arg(long, short = 'f')]
    pub force: bool,
}

pub async fn run(js: &JetStream, command: &ClusterCommand, show_all: bool) -> Result<(), CliError> {
    match command {
        ClusterCommand::StepDown(args) => step_down(js, args, show_all).await,
    }
}

async fn step_down(js: &JetStream, args: &StepDownArgs, show_all: bool) -> Result<(), CliError> {
    let (stream, name, info) = load_selected(
        js,
        args.stream.as_deref(),
        args.consumer.as_deref(),
        show_all,
    )
    .await?;
    let Some(cluster) = info.cluster.as_ref() else {
        return Err(CliError::message(format!(
            "consumer {stream:?} > {name:?} is not clustered"
        )));
    };
    let mut leader = cluster.leader.clone();
    if leader.is_empty() {
        if !args.force {
            return Err(CliError::message("consumer has no current leader"));
        }
        leader = "<unknown>".to_string();
    }
    let body = match args.preferred.as_deref().filter(|p| !p.is_empty()) {
        Some(preferred) => json!({"placement": {"preferred": preferred}}),
        None => json!({}),
    };
    log_line(&format!(
        "Requesting leader step down of {leader:?} in a {} peer RAFT group",
        cluster.replicas.len() + 1
    ));
    js.request_raw(
        &format!("CONSUMER.LEADER.STEPDOWN.{stream}.{name}"),
        serde_json::to_vec(&body)?.into(),
    )
    .await?;
    let wait = LeaderWait {
        state: "Consumer",
        attempts: 5,
        timeout_error: "consumer did not elect a new leader in time".to_string(),
    };
    await_new_leader(&wait, &leader, || async {
        let info = js.consumer_info(&stream, &name).await?;
        info.cluster
            .map(|cluster| cluster.leader)
            .ok_or_else(|| CliError::message("no cluster information received"))
    })
    .await?;
    println!();
    let info = js.consumer_info(&stream, &name).await?;
    print_info(&info, false, false)
}
