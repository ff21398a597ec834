//! `nats stream cluster peer-remove`: natscli's removal of a server from a clustered stream
//! (`$JS.API.STREAM.PEER.REMOVE.<stream>`), choosing the peer on a terminal when none is named.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::api::JetStream;
use crate::error::CliError;
use crate::output::{is_interactive, log_line};
use crate::prompt;

use super::select_stream;

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Removes a peer from the Stream cluster
    #[command(name = "peer-remove", alias = "pr")]
    PeerRemove(PeerRemoveArgs),
}

#[derive(Args, Debug)]
pub struct PeerRemoveArgs {
    /// The stream to act on
    pub stream: Option<String>,
    /// The name of the peer to remove
    pub peer: Option<String>,
    /// Force sealing without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
}

pub async fn run(js: &JetStream, command: &ClusterCommand, show_all: bool) -> Result<(), CliError> {
    match command {
        ClusterCommand::PeerRemove(args) => peer_remove(js, args, show_all).await,
    }
}

async fn peer_remove(
    js: &JetStream,
    args: &PeerRemoveArgs,
    show_all: bool,
) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all).await?;
    let info = js.stream_info(&stream).await?;
    let Some(cluster) = info.cluster.as_ref() else {
        return Err(CliError::message(format!(
            "stream {stream:?} is not clustered"
        )));
    };
    let mut peers = vec![cluster.leader.clone()];
    peers.extend(cluster.replicas.iter().map(|replica| replica.name.clone()));
    if peers.len() == 1 && !args.force {
        return Err(CliError::message(
            "removing the only peer on a stream will result in data loss, use --force to force",
        ));
    }
    let peer = match args.peer.as_deref().filter(|peer| !peer.is_empty()) {
        Some(peer) => peer.to_string(),
        None if is_interactive() => prompt::select("Select a Peer", &peers, None)?,
        None => return Err(CliError::message("no peer given to remove")),
    };
    log_line(&format!("Removing peer {peer:?}"));
    let body = serde_json::to_vec(&json!({ "peer": peer }))?;
    js.request_raw(&format!("STREAM.PEER.REMOVE.{stream}"), body.into())
        .await?;
    log_line(&format!("Requested removal of peer {peer:?}"));
    Ok(())
}
