//! `quarry models`: the language models Quarry can use — GGUF files run in-process, and OpenAI-compatible
//! servers running on this computer (found on their usual loopback ports, see
//! [`quarry_llm::find_local_servers`]). What it lists is what `--model`, and `--llm-url`/`--llm-model`
//! take; `--llm-url auto` picks the first server listed.

use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ModelsArgs {
    /// Also probe this loopback port (repeatable), beside the usual ones — 11434 (Ollama), 1234 (LM Studio),
    /// 8080 (llama.cpp server), 8000 (vLLM), 1337 (Jan) — and those in $QUARRY_LLM_PORTS (comma-separated).
    #[arg(long = "port")]
    pub ports: Vec<u16>,
    /// Print one JSON object: {"embedded": [{path, default, bytes}], "servers": [{name, url, models}]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ModelsArgs) -> anyhow::Result<()> {
    let default: Option<PathBuf> = quarry_gguf::GgufConfig::default_model().ok().map(|c| c.path);
    let embedded = quarry_gguf::installed_models();
    let servers = quarry_llm::find_local_servers_blocking(&args.ports, quarry_llm::PROBE_TIMEOUT);
    let is_default = |path: &PathBuf| default.as_ref().is_some_and(|d| same_file(d, path));
    if args.json {
        let embedded: Vec<_> = embedded
            .iter()
            .map(|path| {
                let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                json!({ "path": path, "default": is_default(path), "bytes": bytes })
            })
            .collect();
        println!("{}", json!({ "embedded": embedded, "servers": servers }));
        return Ok(());
    }
    println!("Embedded models (GGUF, run inside Quarry; --model PATH):");
    if embedded.is_empty() {
        println!("  none installed (scripts/setup.sh installs them; --model takes any .gguf file)");
    }
    for path in &embedded {
        let size = std::fs::metadata(path).map(|m| m.len() as f64 / (1u64 << 30) as f64).unwrap_or(0.0);
        let mark = if is_default(path) { "  (default)" } else { "" };
        println!("  {}  {size:.2} GiB{mark}", path.display());
    }
    println!("Servers on this computer (--llm-url URL --llm-model NAME, or --llm-url auto):");
    if servers.is_empty() {
        let mut ports: Vec<String> = quarry_llm::USUAL_PORTS.iter().map(|(p, n)| format!("{p} ({n})")).collect();
        ports.extend(args.ports.iter().map(u16::to_string));
        println!("  none answered on 127.0.0.1 ports {} (and ${})", ports.join(", "), quarry_llm::PORTS_VARIABLE);
    }
    for server in &servers {
        let models = if server.models.is_empty() { "no models loaded".to_string() } else { server.models.join(", ") };
        println!("  {}  {}  models: {models}", server.name, server.url);
    }
    Ok(())
}

fn same_file(a: &PathBuf, b: &PathBuf) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
