//! `nats`: a command line tool for NATS and JetStream that behaves like natscli (same
//! commands, flags, prompts and output layouts), built on the async-nats client only.
//!
//! `main` parses the command line (clap), runs the command on a tokio runtime and turns any
//! error into natscli's one-line `nats: error: ...` with a non-zero exit status.

mod account;
mod api;
mod bench;
mod buckets;
mod cluster;
mod connection;
mod consumer;
mod context;
mod error;
mod kv;
mod messaging;
mod object;
mod options;
mod output;
mod prompt;
mod server;
mod server_list;
mod server_raft;
mod server_report;
mod stream;
mod template;
mod tls_probe;

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
    /// JetStream consumer management
    #[command(alias = "con", alias = "obs", alias = "c")]
    Consumer(Box<consumer::ConsumerArgs>),
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
    /// Interacts with a JetStream based Key-Value store
    Kv(kv::KvArgs),
    /// Interacts with a JetStream based Object store
    #[command(alias = "obj")]
    Object(object::ObjectArgs),
    /// Server information and health checks
    Server(server::ServerArgs),
    /// Account information and status
    #[command(alias = "a")]
    Account(account::AccountArgs),
    /// Compute round-trip time to NATS server
    Rtt(server::RttArgs),
    /// Benchmark utility
    Bench(bench::BenchTopArgs),
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
        Command::Consumer(args) => consumer::run(args, options).await,
        Command::Publish(args) => messaging::publish(args, options).await,
        Command::Subscribe(args) => messaging::subscribe(args, options).await,
        Command::Request(args) => messaging::request(args, options).await,
        Command::Reply(args) => messaging::reply(args, options).await,
        Command::Kv(args) => kv::run(args, options).await,
        Command::Object(args) => object::run(args, options).await,
        Command::Server(args) => server::run_server(args, options).await,
        Command::Account(args) => account::account_info(args, options).await,
        Command::Rtt(args) => server::rtt(args, options).await,
        Command::Bench(args) => bench::run(args, options).await,
        Command::Context { command } => context::run(command, options),
    }
}

/// Like Go programs, exit quietly when the reader of our output goes away (`nats ... | head`)
/// instead of reporting a panic from `println!`; any other panic (a bug, ours or a library's,
/// e.g. on a malformed server answer) becomes natscli's one error line unless RUST_BACKTRACE
/// asks for the details.
fn install_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") {
            std::process::exit(141);
        }
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            default_hook(info);
        } else {
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            eprintln!("nats: error: unexpected failure{location}: {message}");
        }
        std::process::exit(1);
    }));
}

fn main() {
    install_panic_hook();
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
