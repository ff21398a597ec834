//! `nats server raft step-down` and `nats server raft peer-remove`: natscli's meta group
//! operations, for a system account user. Both first ask the meta leader's `/jsz`
//! (`$SYS.REQ.SERVER.PING.JSZ` with `leader_only`); step-down sends
//! `$JS.API.META.LEADER.STEPDOWN` and waits for a new leader, peer-remove removes an offline
//! server with `$JS.API.SERVER.REMOVE` (after a confirmation unless `--force`).

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::api::JetStream;
use crate::cluster::{await_new_leader, LeaderWait};
use crate::error::{CliError, WithContext};
use crate::options::GlobalOptions;
use crate::output::log_line;
use crate::prompt;

#[derive(Args, Debug)]
pub struct RaftArgs {
    /// Produce JSON output
    #[arg(long, short = 'j', global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: RaftCommand,
}

#[derive(Subcommand, Debug)]
pub enum RaftCommand {
    /// Force a new leader election by standing down the current meta leader
    #[command(
        name = "step-down",
        alias = "stepdown",
        alias = "sd",
        alias = "elect",
        alias = "down",
        alias = "d"
    )]
    StepDown {
        /// Request placement of the leader in a specific cluster
        #[arg(long)]
        cluster: Option<String>,
    },
    /// Removes a server from a JetStream cluster
    #[command(name = "peer-remove", alias = "rm", alias = "pr")]
    PeerRemove {
        /// The Server Name to remove from the JetStream cluster
        name: Option<String>,
        /// Force removal without prompting
        #[arg(long, short = 'f')]
        force: bool,
    },
}

pub async fn run(args: &RaftArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await.context("setup failed")?;
    let js = JetStream::new(client, &effective);
    let result = match &args.command {
        RaftCommand::StepDown { cluster } => step_down(&js, cluster.as_deref()).await,
        RaftCommand::PeerRemove { name, force } => {
            peer_remove(&js, name.as_deref().unwrap_or_default(), *force).await
        }
    };
    let _ = js.client.flush().await;
    result
}

/// The meta leader's `/jsz` `meta_cluster`, asked of the whole system.
async fn meta_cluster(js: &JetStream) -> Result<Value, CliError> {
    let body = serde_json::to_vec(&json!({"leader_only": true}))?;
    let request = async_nats::Request::new()
        .payload(body.into())
        .timeout(Some(js.timeout));
    let reply = js
        .client
        .send_request("$SYS.REQ.SERVER.PING.JSZ".to_string(), request)
        .await?;
    let answer: Value = serde_json::from_slice(&reply.payload)?;
    let data = answer
        .get("data")
        .ok_or_else(|| CliError::message("no data received"))?;
    Ok(data["meta_cluster"].clone())
}

async fn step_down(js: &JetStream, cluster: Option<&str>) -> Result<(), CliError> {
    let meta = meta_cluster(js).await.map_err(|error| {
        CliError::message(format!("could not obtain cluster information: {error}"))
    })?;
    let leader = meta["leader"].as_str().unwrap_or_default().to_string();
    if leader.is_empty() {
        return Err(CliError::message("cluster has no current leader"));
    }
    let replicas = meta["replicas"].as_array().map_or(0, Vec::len);
    log_line(&format!(
        "Requesting leader step down of {leader:?} in a {} peer RAFT group",
        replicas + 1
    ));
    let body = match cluster.filter(|cluster| !cluster.is_empty()) {
        Some(cluster) => json!({"placement": {"cluster": cluster}}),
        None => json!({}),
    };
    js.request_raw("META.LEADER.STEPDOWN", serde_json::to_vec(&body)?.into())
        .await?;
    let wait = LeaderWait {
        state: "Cluster",
        attempts: 5,
        timeout_error: "stream did not elect a new leader in time".to_string(),
    };
    await_new_leader(&wait, &leader, || async {
        let meta = meta_cluster(js).await?;
        Ok(meta["leader"].as_str().unwrap_or_default().to_string())
    })
    .await?;
    Ok(())
}

async fn peer_remove(js: &JetStream, peer: &str, force: bool) -> Result<(), CliError> {
    let meta = meta_cluster(js).await.map_err(|_| {
        CliError::message("did not receive a response from the meta leader, ensure the account used has system privileges and appropriate permissions")
    })?;
    let replica = meta["replicas"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|replica| replica["name"] == peer)
        .ok_or_else(|| CliError::message(format!("did not find a replica named {peer}")))?;
    if replica["offline"] != true {
        return Err(CliError::message("can only remove offline nodes"));
    }
    if !force {
        println!(
            "Removing {peer} can not be reversed, data on this node will be\ninaccessible and another one called {peer} can not join again.\n"
        );
        let remove = prompt::confirm(&format!("Really remove peer {peer}"), false)
            .context("Could not prompt for confirmation")?;
        if !remove {
            println!("Removal canceled");
            return Ok(());
        }
    }
    let body = serde_json::to_vec(&json!({ "peer": peer }))?;
    js.request_raw("SERVER.REMOVE", body.into())
        .await
        .context(&format!("Could not remove {peer}"))?;
    Ok(())
}
