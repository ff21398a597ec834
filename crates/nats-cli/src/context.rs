//! natscli's configuration contexts: one JSON file per context in
//! `$XDG_CONFIG_HOME/nats/context/<name>.json` (default `~/.config/nats/context`) and the
//! selected name in `nats/context.txt`, field for field as natscli writes them so both tools
//! share one set. Also the `nats context add|select|unselect|ls|info|rm` commands.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::columns::Columns;
use crate::output::table::Table;
use crate::prompt;

/// The saved settings, in natscli's field order (its JSON is written with 2-space indent).
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
#[serde(default)]
pub struct ContextSettings {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub description: String,
    pub url: String,
    pub socks_proxy: String,
    pub token: String,
    pub user: String,
    pub password: String,
    pub creds: String,
    pub nkey: String,
    pub cert: String,
    pub key: String,
    pub ca: String,
    pub nsc: String,
    pub jetstream_domain: String,
    pub jetstream_api_prefix: String,
    pub jetstream_event_prefix: String,
    pub inbox_prefix: String,
    pub user_jwt: String,
    pub user_seed: String,
    pub color_scheme: String,
    pub tls_first: bool,
    pub windows_cert_store: String,
    pub windows_cert_match_by: String,
    pub windows_cert_match: String,
    pub windows_ca_certs_match: Option<Vec<String>>,
}

/// `~/.config/nats` or `$XDG_CONFIG_HOME/nats`.
pub fn config_root() -> Result<PathBuf, CliError> {
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("nats"));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| CliError::message("cannot determine the home directory"))?;
    Ok(PathBuf::from(home).join(".config").join("nats"))
}

fn context_dir() -> Result<PathBuf, CliError> {
    Ok(config_root()?.join("context"))
}

fn validate_name(name: &str) -> Result<(), CliError> {
    if name.is_empty()
        || name.contains("..")
        || name.contains('/')
        || name.contains('\\')
        || name.starts_with('.')
    {
        return Err(CliError::message(format!("invalid context name {name:?}")));
    }
    Ok(())
}

pub fn context_path(name: &str) -> Result<PathBuf, CliError> {
    validate_name(name)?;
    Ok(context_dir()?.join(format!("{name}.json")))
}

pub fn known_contexts() -> Vec<String> {
    let Ok(dir) = context_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let file_name = entry.file_name().to_string_lossy().to_string();
            file_name.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

pub fn is_known(name: &str) -> bool {
    context_path(name).map(|p| p.exists()).unwrap_or(false)
}

/// The selected context name, or empty when none is selected.
pub fn selected_context() -> String {
    let Ok(root) = config_root() else {
        return String::new();
    };
    std::fs::read_to_string(root.join("context.txt"))
        .map(|text| text.trim().to_string())
        .unwrap_or_default()
}

pub fn load_context(name: &str) -> Result<ContextSettings, CliError> {
    let path = context_path(name)?;
    let text = std::fs::read_to_string(&path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            CliError::message(format!("unknown context {name:?}"))
        } else {
            CliError::Io(error)
        }
    })?;
    let mut settings: ContextSettings = serde_json::from_str(&text)?;
    settings.name = name.to_string();
    Ok(settings)
}

fn save_context(name: &str, settings: &ContextSettings) -> Result<(), CliError> {
    let path = context_path(name)?;
    if let Some(parent) = path.parent() {
        create_private_dir(parent)?;
    }
    let mut stored = settings.clone();
    stored.name = String::new();
    let text = serde_json::to_string_pretty(&stored)?;
    write_private(&path, text.as_bytes())
}

/// natscli keeps its context directories private (0700).
fn create_private_dir(path: &std::path::Path) -> Result<(), CliError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)?;
    Ok(())
}

fn write_private(path: &std::path::Path, contents: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    Ok(())
}

fn select_context(name: &str) -> Result<(), CliError> {
    if !is_known(name) {
        return Err(CliError::message(format!("unknown context {name:?}")));
    }
    let root = config_root()?;
    create_private_dir(&root)?;
    write_private(&root.join("context.txt"), name.as_bytes())
}

fn unselect_context() -> Result<(), CliError> {
    let path = config_root()?.join("context.txt");
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[derive(Subcommand, Debug)]
pub enum ContextCommand {
    /// Update or create a context
    #[command(alias = "create", alias = "save")]
    Add(ContextAddArgs),
    /// Select the default context
    #[command(alias = "switch", alias = "set")]
    Select { name: Option<String> },
    /// Ensures that no context is the default context
    Unselect,
    /// List known contexts
    #[command(alias = "list", alias = "l")]
    Ls {
        /// Show the list in JSON format
        #[arg(long, short = 'j')]
        json: bool,
        /// List just the names of known contexts
        #[arg(long)]
        names: bool,
    },
    /// Display information on the current or named context
    #[command(alias = "show", alias = "v", alias = "view")]
    Info {
        name: Option<String>,
        /// Show the context in JSON format
        #[arg(long, short = 'j')]
        json: bool,
    },
    /// Remove a context
    #[command(alias = "remove")]
    Rm {
        name: String,
        /// Force remove without prompting
        #[arg(long, short = 'f')]
        force: bool,
    },
}

#[derive(Args, Debug)]
pub struct ContextAddArgs {
    /// The context name to act on
    pub name: String,
    /// Set a friendly description for this context
    #[arg(long)]
    pub description: Option<String>,
    /// Select the saved context as the default one
    #[arg(long)]
    pub select: bool,
}

pub fn run(command: &ContextCommand, options: &GlobalOptions) -> Result<(), CliError> {
    match command {
        ContextCommand::Add(args) => add(args, options),
        ContextCommand::Select { name } => {
            let known = known_contexts();
            if known.is_empty() {
                return Err(CliError::message("no context defined"));
            }
            let name = match name {
                Some(name) => name.clone(),
                None => prompt::select("Select a Context", &known, None)?,
            };
            select_context(&name)?;
            show(Some(&name), false)
        }
        ContextCommand::Unselect => {
            let current = selected_context();
            if current.is_empty() {
                println!("No context currently selected");
                return Ok(());
            }
            unselect_context()?;
            println!("Unselected the {current:?} context");
            Ok(())
        }
        ContextCommand::Ls { json, names } => list(*json, *names),
        ContextCommand::Info { name, json } => show(name.as_deref(), *json),
        ContextCommand::Rm { name, force } => remove(name, *force),
    }
}

fn add(args: &ContextAddArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let base_name = if is_known(&args.name) {
        Some(args.name.clone())
    } else {
        options.context.clone().filter(|n| !n.is_empty())
    };
    let mut settings = match &base_name {
        Some(name) => load_context(name)?,
        None => ContextSettings::default(),
    };
    // natscli stores a lone --user as a token (its --user flag doubles as token).
    let (user, token) = match (&options.user, &options.password) {
        (Some(user), None) => (None, Some(user.clone())),
        (user, _) => (user.clone(), options.token.clone()),
    };
    let overrides: [(&mut String, &Option<String>); 16] = [
        (&mut settings.url, &options.server),
        (&mut settings.user, &user),
        (&mut settings.password, &options.password),
        (&mut settings.token, &token),
        (&mut settings.creds, &options.creds),
        (&mut settings.nkey, &options.nkey),
        (&mut settings.user_jwt, &options.jwt),
        (&mut settings.user_seed, &options.seed),
        (&mut settings.cert, &options.tlscert),
        (&mut settings.key, &options.tlskey),
        (&mut settings.ca, &options.tlsca),
        (&mut settings.description, &args.description),
        (&mut settings.jetstream_domain, &options.js_domain),
        (&mut settings.jetstream_api_prefix, &options.js_api_prefix),
        (
            &mut settings.jetstream_event_prefix,
            &options.js_event_prefix,
        ),
        (&mut settings.inbox_prefix, &options.inbox_prefix),
    ];
    // natscli's `With...` options ignore empty values.
    for (field, value) in overrides {
        if let Some(value) = value.as_ref().filter(|value| !value.is_empty()) {
            *field = value.clone();
        }
    }
    if options.tlsfirst {
        settings.tls_first = true;
    }
    save_context(&args.name, &settings)?;
    if args.select {
        select_context(&args.name)?;
    }
    show(Some(&args.name), false)
}

fn list(json: bool, names_only: bool) -> Result<(), CliError> {
    let current = selected_context();
    let mut contexts = Vec::new();
    for name in known_contexts() {
        match load_context(&name) {
            Ok(settings) => contexts.push(settings),
            Err(error) => {
                crate::output::log_line(&format!("Could not load context {name}: {error}"))
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&contexts)?);
        return Ok(());
    }
    if names_only {
        for settings in &contexts {
            println!("{}", settings.name);
        }
        return Ok(());
    }
    if contexts.is_empty() {
        println!("No known contexts");
        return Ok(());
    }
    let mut table = Table::new("Known Contexts");
    table.headers(["Name", "Description"]);
    for settings in &contexts {
        let name = if settings.name == current {
            format!("{}*", settings.name)
        } else {
            settings.name.clone()
        };
        table.row([name, settings.description.clone()]);
    }
    println!("{}\n", table.render());
    Ok(())
}

fn show(name: Option<&str>, json: bool) -> Result<(), CliError> {
    let name = match name {
        Some(name) => name.to_string(),
        None => selected_context(),
    };
    if name.is_empty() {
        return Err(CliError::message("no default context and no name supplied"));
    }
    let settings = load_context(&name)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&settings)?);
        return Ok(());
    }
    let check_file = |file: &str| -> String {
        let expanded = match (file.strip_prefix('~'), std::env::var("HOME")) {
            (Some(rest), Ok(home)) => format!("{home}{rest}"),
            _ => file.trim_start_matches("file://").to_string(),
        };
        if std::path::Path::new(&expanded).is_file() {
            "OK".to_string()
        } else {
            "ERROR".to_string()
        }
    };
    let mut columns = Columns::new(format!("NATS Configuration Context {name:?}"));
    columns.row_if_not_empty("Description", &settings.description);
    columns.row_if_not_empty("Server URLs", &settings.url);
    columns.row_if_not_empty("SOCKS5 Proxy", &settings.socks_proxy);
    columns.row_if_not_empty("Username", &settings.user);
    columns.row_if_not_empty("Password", &"*".repeat(settings.password.len()));
    columns.row_if_not_empty("Token", &settings.token);
    // natscli shows embedded credentials without their contents.
    let credentials = [
        ("Credentials", &settings.creds),
        ("User JWT", &settings.user_jwt),
        ("User Seed", &settings.user_seed),
        ("NKey", &settings.nkey),
    ];
    for (label, value) in credentials {
        if value.starts_with("data:;base64,") {
            columns.row(label, "embedded data");
        } else if !value.is_empty() {
            columns.row(label, format!("{value} ({})", check_file(value)));
        }
    }
    let files = [
        ("Certificate", &settings.cert),
        ("Key", &settings.key),
        ("CA", &settings.ca),
    ];
    for (label, value) in files {
        if !value.is_empty() {
            columns.row(label, format!("{value} ({})", check_file(value)));
        }
    }
    columns.row_if("TLS First", true, settings.tls_first);
    columns.row_if_not_empty("JS API Prefix", &settings.jetstream_api_prefix);
    columns.row_if_not_empty("JS Event Prefix", &settings.jetstream_event_prefix);
    columns.row_if_not_empty("JS Domain", &settings.jetstream_domain);
    columns.row_if_not_empty("Inbox Prefix", &settings.inbox_prefix);
    let path = context_path(&name)?;
    columns.row("Path", path.display());
    columns.row_if_not_empty("Color Scheme", &settings.color_scheme);
    print!("{}", columns.render());
    println!();
    Ok(())
}

fn remove(name: &str, force: bool) -> Result<(), CliError> {
    if selected_context() == name {
        if !force {
            return Err(CliError::message(
                "cannot remove the selected context, select another one or use the unselect command",
            ));
        }
        unselect_context()?;
    }
    if !force {
        let confirmed = prompt::confirm(&format!("Really delete context {name:?}"), false)
            .map_err(|e| CliError::message(format!("could not obtain confirmation: {e}")))?;
        if !confirmed {
            return Ok(());
        }
    }
    let path = context_path(name)?;
    std::fs::remove_file(&path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            CliError::message(format!("unknown context {name:?}"))
        } else {
            CliError::Io(error)
        }
    })
}
