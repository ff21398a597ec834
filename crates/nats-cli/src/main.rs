//! `nats`: a command line tool for NATS and JetStream that behaves like natscli (same
//! commands, flags, prompts and output layouts), built on the async-nats client only.
//!
//! `main` parses the command line (clap), runs the command on a tokio runtime and turns any
//! error into natscli's one-line `nats: error: ...` with a non-zero exit status.

// Consumer, KV and bench helpers land in the next steps.
#[allow(dead_code)]
mod api;
mod context;
mod error;
mod messaging;
mod options;
#[allow(dead_code)]
mod output;
mod prompt;
mod stream;
mod template;

use clap::{Parser, Subcommand};

use error::CliError;
use options::GlobalOptions;

#[derive(Parser, Debug)]
#[command(
    name = "nats",
    about = "NATS Utility\n\nNATS Server and JetStream administration.",
    version
)]
struct Cli {
    #[command(flatten)]
    options: GlobalOptions,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// JetStream stream management
    #[command(alias = "str", alias = "st", alias = "ms", alias = "s")]
    Stream(Box<stream::StreamArgs>),
    /// Generic data publish utility
    #[command(alias = "pub")]
    Publish(messaging::PubArgs),
    /// Generic subscription client
    #[command(alias = "sub")]
    Subscribe(messaging::SubArgs),
    /// Generic request-reply request utility
    #[command(alias = "req")]
    Request(messaging::RequestArgs),
    /// Generic service reply utility
    Reply(messaging::ReplyArgs),
    /// Manage nats configuration contexts
    #[command(alias = "ctx")]
    Context {
        #[command(subcommand)]
        command: context::ContextCommand,
    },
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let options = &cli.options;
    match &cli.command {
        Command::Stream(args) => stream::run(args, options).await,
        Command::Publish(args) => messaging::publish(args, options).await,
        Command::Subscribe(args) => messaging::subscribe(args, options).await,
        Command::Request(args) => messaging::request(args, options).await,
        Command::Reply(args) => messaging::reply(args, options).await,
        Command::Context { command } => context::run(command, options),
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            match error.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = error.print();
                    std::process::exit(0);
                }
                _ => {
                    let rendered = error.render().to_string();
                    let first = rendered
                        .lines()
                        .next()
                        .unwrap_or("invalid arguments")
                        .trim_start_matches("error: ")
                        .to_string();
                    eprintln!("nats: error: {first}, try --help");
                    std::process::exit(1);
                }
            }
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("nats: error: could not start the runtime: {error}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(run(cli));
    // Do not wait for background tasks (subscriptions, reconnect loops) on exit.
    runtime.shutdown_background();
    if let Err(error) = result {
        eprintln!("nats: error: {error}");
        std::process::exit(1);
    }
}
