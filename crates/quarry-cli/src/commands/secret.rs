//! `quarry secret set|delete|status llm|tavily|brave`: API keys in the OS keyring. `set` reads the key
//! from stdin (never from the command line, where it would land in shell history and `ps`).

use anyhow::Context;
use quarry_secrets::Secret;
use std::io::Read;

#[derive(clap::Subcommand)]
pub enum SecretCommand {
    /// Store a key read from stdin (e.g. `quarry secret set tavily < key.txt`); an empty input deletes it.
    /// The llm key is kept for one server: give its URL (`--url https://api.example.com/v1`); it is sent
    /// to that origin (scheme, host, port) only, never to another --llm-url.
    Set {
        name: String,
        /// The server the llm key is for (required for llm).
        #[arg(long)]
        url: Option<String>,
    },
    /// Remove a stored key.
    Delete { name: String },
    /// Say, for every key, whether it comes from the environment, the keyring or nowhere.
    Status,
}

fn parse(name: &str) -> anyhow::Result<Secret> {
    Secret::parse(name).with_context(|| format!("unknown key {name:?}: expected llm, tavily or brave"))
}

pub fn run(command: SecretCommand) -> anyhow::Result<()> {
    match command {
        SecretCommand::Set { name, url } => {
            let secret = parse(&name)?;
            if secret == Secret::LlmApiKey && url.is_none() {
                anyhow::bail!(
                    "the llm key is kept for one server: give its URL with --url (e.g. --url https://api.example.com/v1)"
                );
            }
            let mut value = String::new();
            std::io::stdin().read_to_string(&mut value).context("reading the key from stdin")?;
            match (secret, &url) {
                (Secret::LlmApiKey, Some(url)) => quarry_secrets::set_for(secret, url, value.trim())?,
                _ => quarry_secrets::set(secret, value.trim())?,
            }
            eprintln!("{}", if value.trim().is_empty() { "deleted" } else { "stored in the OS keyring" });
        }
        SecretCommand::Delete { name } => {
            quarry_secrets::delete(parse(&name)?)?;
            eprintln!("deleted");
        }
        SecretCommand::Status => {
            for secret in [Secret::LlmApiKey, Secret::TavilyApiKey, Secret::BraveApiKey] {
                let from_env = std::env::var(secret.variable()).ok().is_some_and(|v| !v.trim().is_empty());
                let source = if from_env {
                    format!("from {}", secret.variable())
                } else {
                    match quarry_secrets::is_stored(secret) {
                        Ok(true) if secret == Secret::LlmApiKey => match quarry_secrets::bound_origin(secret) {
                            Ok(Some(origin)) => format!("in the OS keyring, for {origin}"),
                            _ => "in the OS keyring, for no server (not sent: set it again with --url)".to_string(),
                        },
                        Ok(true) => "in the OS keyring".to_string(),
                        Ok(false) => "not set".to_string(),
                        Err(e) => format!("unknown: {e}"),
                    }
                };
                println!("{}\t{source}", secret.name());
            }
        }
    }
    Ok(())
}
