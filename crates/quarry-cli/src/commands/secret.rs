//! `quarry secret set|delete|status llm|tavily|brave`: API keys in the OS keyring. `set` reads the key
//! from stdin (never from the command line, where it would land in shell history and `ps`).

use anyhow::Context;
use quarry_secrets::Secret;
use std::io::Read;

#[derive(clap::Subcommand)]
pub enum SecretCommand {
    /// Store a key read from stdin (e.g. `quarry secret set tavily < key.txt`); an empty input deletes it.
    Set { name: String },
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
        SecretCommand::Set { name } => {
            let secret = parse(&name)?;
            let mut value = String::new();
            std::io::stdin().read_to_string(&mut value).context("reading the key from stdin")?;
            quarry_secrets::set(secret, value.trim())?;
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
