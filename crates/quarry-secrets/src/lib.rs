//! API keys kept in the operating system's keyring — the Secret Service (GNOME Keyring, KWallet,
//! KeePassXC) on Linux, the Keychain on macOS, the Credential Manager on Windows — through the `keyring`
//! crate, never in Quarry's files. Each key has an environment variable that wins when set, so scripts
//! and CI need no keyring.

/// The keys Quarry stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secret {
    /// The OpenAI-compatible server's API key.
    LlmApiKey,
    /// The Tavily web search API key.
    TavilyApiKey,
    /// The Brave Search API key.
    BraveApiKey,
}

/// The keyring's service name for every Quarry entry.
pub const SERVICE: &str = "org.quarry.app";

impl Secret {
    /// The entry's user name in the keyring (`llm-api-key`, …).
    pub fn name(self) -> &'static str {
        match self {
            Secret::LlmApiKey => "llm-api-key",
            Secret::TavilyApiKey => "tavily-api-key",
            Secret::BraveApiKey => "brave-api-key",
        }
    }

    /// The environment variable that overrides the keyring (`QUARRY_LLM_API_KEY`, …).
    pub fn variable(self) -> &'static str {
        match self {
            Secret::LlmApiKey => "QUARRY_LLM_API_KEY",
            Secret::TavilyApiKey => "QUARRY_TAVILY_API_KEY",
            Secret::BraveApiKey => "QUARRY_BRAVE_API_KEY",
        }
    }

    /// `llm`, `tavily`, `brave` (as the CLI names them).
    pub fn parse(name: &str) -> Option<Secret> {
        match name.trim().to_ascii_lowercase().as_str() {
            "llm" | "llm-api-key" => Some(Secret::LlmApiKey),
            "tavily" | "tavily-api-key" => Some(Secret::TavilyApiKey),
            "brave" | "brave-api-key" => Some(Secret::BraveApiKey),
            _ => None,
        }
    }
}

/// Keyring failures, with what to do about them.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// No keyring answers (the reason, and the environment variable that can hold the key instead).
    #[error("the OS keyring is not available ({0}); on Linux a Secret Service (GNOME Keyring, KWallet or KeePassXC) must be running in your session — or set the key in the environment variable {1}")]
    Unavailable(String, &'static str),
    /// The keyring did not store the key (its entry name, and the keyring's reason).
    #[error("the OS keyring refused to store {0}: {1}")]
    Store(&'static str, String),
    /// A key to be bound to a server was given no server URL with a host (its entry name, the URL).
    #[error("{0} is kept for one server only, and {1:?} names none: give the server's URL (https://host[:port]/...)")]
    NoServer(&'static str, String),
}

fn entry(secret: Secret) -> Result<keyring::Entry, SecretError> {
    keyring::Entry::new(SERVICE, secret.name()).map_err(|e| SecretError::Unavailable(e.to_string(), secret.variable()))
}

/// The key: its environment variable when set and not empty, else the keyring's entry, else `None`.
///
/// Errors: the keyring cannot be reached (the message says how to fix it or use the variable).
pub fn get(secret: Secret) -> Result<Option<String>, SecretError> {
    if let Some(value) = std::env::var(secret.variable()).ok().filter(|v| !v.trim().is_empty()) {
        return Ok(Some(value));
    }
    // A key bound to a server is only given for that server (`get_for`).
    Ok(stored(secret)?.filter(|value| !value.starts_with(BOUND_PREFIX)))
}

/// Stores `value` in the keyring (replacing an earlier one); an empty value deletes the entry.
///
/// Errors: the keyring cannot be reached or refuses the write.
pub fn set(secret: Secret, value: &str) -> Result<(), SecretError> {
    let value = value.trim();
    if value.is_empty() {
        return delete(secret);
    }
    entry(secret)?.set_password(value).map_err(|e| match e {
        keyring::Error::NoStorageAccess(inner) | keyring::Error::PlatformFailure(inner) => {
            SecretError::Unavailable(inner.to_string(), secret.variable())
        }
        other => SecretError::Store(secret.name(), other.to_string()),
    })
}

/// Removes the keyring entry (nothing to remove is not an error).
pub fn delete(secret: Secret) -> Result<(), SecretError> {
    match entry(secret)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(SecretError::Unavailable(e.to_string(), secret.variable())),
    }
}

/// What a key bound to a server starts with in the keyring: `quarry-key-for <origin>`, a newline, the key.
const BOUND_PREFIX: &str = "quarry-key-for ";

/// The origin of `url` — scheme, host and port, lower case, the scheme's default port left out
/// (`https://api.example.com`, `http://127.0.0.1:8080`) — as browsers compare origins (RFC 6454). User
/// name, password, path and query are not part of it. `None`: not an absolute URL with a host.
pub fn origin(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    parsed.host_str()?;
    match parsed.origin() {
        origin @ url::Origin::Tuple(..) => Some(origin.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// Stores `value` as the key for the server at `url` only ([`get_for`] gives it for that origin and no
/// other), replacing an earlier key; an empty value deletes the entry.
///
/// Errors: `url` has no origin ([`SecretError::NoServer`]); the keyring cannot be reached or refuses.
pub fn set_for(secret: Secret, url: &str, value: &str) -> Result<(), SecretError> {
    let value = value.trim();
    if value.is_empty() {
        return delete(secret);
    }
    let origin = origin(url).ok_or_else(|| SecretError::NoServer(secret.name(), url.to_string()))?;
    set(secret, &format!("{BOUND_PREFIX}{origin}\n{value}"))
}

/// The key to send to the server at `url`: the environment variable when set (the person gave it for this
/// run), else the keyring's key when it was stored for `url`'s origin ([`set_for`]). A key stored for
/// another server, or stored before keys were bound to a server, is not given (enter it again).
///
/// Errors: as [`get`].
pub fn get_for(secret: Secret, url: &str) -> Result<Option<String>, SecretError> {
    if let Some(value) = std::env::var(secret.variable()).ok().filter(|v| !v.trim().is_empty()) {
        return Ok(Some(value));
    }
    let Some(wanted) = origin(url) else { return Ok(None) };
    Ok(stored(secret)?.and_then(|value| {
        let (bound, key) = value.strip_prefix(BOUND_PREFIX)?.split_once('\n')?;
        (bound == wanted && !key.is_empty()).then(|| key.to_string())
    }))
}

/// The origin the keyring's key was stored for with [`set_for`]; `None` when no key is stored or it was
/// stored unbound. Errors: as [`get`].
pub fn bound_origin(secret: Secret) -> Result<Option<String>, SecretError> {
    Ok(stored(secret)?.and_then(|value| Some(value.strip_prefix(BOUND_PREFIX)?.split_once('\n')?.0.to_string())))
}

/// The keyring's raw entry (the environment ignored).
fn stored(secret: Secret) -> Result<Option<String>, SecretError> {
    match entry(secret)?.get_password() {
        Ok(value) => Ok(Some(value).filter(|v| !v.is_empty())),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(SecretError::Unavailable(e.to_string(), secret.variable())),
    }
}

/// Whether the key is in the keyring itself (ignoring the environment), for a settings screen that
/// shows "stored" without ever showing the key. Errors: as [`get`].
pub fn is_stored(secret: Secret) -> Result<bool, SecretError> {
    match entry(secret)?.get_password() {
        Ok(value) => Ok(!value.is_empty()),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(SecretError::Unavailable(e.to_string(), secret.variable())),
    }
}

/// Test support: a private Secret Service (a D-Bus session bus with GNOME Keyring on it, both from
/// Debian packages that scripts/setup.sh installs), so tests never touch the person's own keyring.
#[cfg(feature = "test-session")]
#[allow(clippy::unwrap_used)] // test support: a failed step is the test failing
pub mod test_session {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, Command, Stdio};

    /// A session bus with an unlocked GNOME Keyring; both stop when this is dropped.
    pub struct KeyringSession {
        bus: Child,
        address: String,
        _home: tempfile::TempDir,
    }

    impl KeyringSession {
        /// Starts a private session bus and an unlocked `gnome-keyring-daemon` on it, in a temporary home, and
        /// returns once the keyring answers with its default collection.
        ///
        /// The bus starts no service on demand (its configuration names no service directories): a client
        /// that asked before the keyring had registered would otherwise have the bus start a second, locked
        /// keyring from `/usr/share/dbus-1/services` — "Secret Service: no result found" in CI.
        ///
        /// Panics (it is test support) when a program is missing or the keyring is not ready within 20 s.
        pub fn start() -> KeyringSession {
            let home = tempfile::tempdir().unwrap();
            let config = home.path().join("bus.conf");
            std::fs::write(&config, bus_config(home.path())).unwrap();
            let mut bus = Command::new("dbus-daemon")
                .arg(format!("--config-file={}", config.display()))
                .args(["--nofork", "--print-address=1"])
                .stdout(Stdio::piped())
                .spawn()
                .expect("dbus-daemon (scripts/setup.sh installs dbus-daemon)");
            let mut address = String::new();
            BufReader::new(bus.stdout.take().unwrap()).read_line(&mut address).unwrap();
            let address = address.trim().to_string();
            assert!(!address.is_empty(), "dbus-daemon printed no address");
            let mut keyring = Command::new("gnome-keyring-daemon")
                .args(["--unlock", "--components=secrets"])
                .env("DBUS_SESSION_BUS_ADDRESS", &address)
                .env("HOME", home.path())
                .env("XDG_DATA_HOME", home.path().join("data"))
                .env("XDG_RUNTIME_DIR", home.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("gnome-keyring-daemon (scripts/setup.sh installs gnome-keyring)");
            // The login keyring's password, on stdin: the daemon creates the keyring and unlocks it.
            keyring.stdin.take().unwrap().write_all(b"quarry-test").unwrap();
            assert!(keyring.wait().unwrap().success(), "gnome-keyring-daemon --unlock failed");
            let session = KeyringSession { bus, address, _home: home };
            session.wait_for_default_collection();
            session
        }

        /// Polls `ReadAlias("default")` (with `dbus-send`, from dbus-bin) until it names a collection.
        fn wait_for_default_collection(&self) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            loop {
                let reply = Command::new("dbus-send")
                    .args([
                        "--session",
                        "--print-reply",
                        "--dest=org.freedesktop.secrets",
                        "/org/freedesktop/secrets",
                        "org.freedesktop.Secret.Service.ReadAlias",
                        "string:default",
                    ])
                    .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
                    .stderr(Stdio::null())
                    .output()
                    .expect("dbus-send (scripts/setup.sh installs dbus-bin)");
                if String::from_utf8_lossy(&reply.stdout).contains("/org/freedesktop/secrets/collection/") {
                    return;
                }
                assert!(std::time::Instant::now() < deadline, "GNOME Keyring has no default collection after 20 s");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }

        /// The bus address, for `DBUS_SESSION_BUS_ADDRESS`.
        pub fn address(&self) -> &str {
            &self.address
        }
    }

    /// A session bus configuration like Debian's `session.conf` without service directories: it listens in
    /// `dir` and starts nothing on demand.
    fn bus_config(dir: &std::path::Path) -> String {
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
            dir.display()
        )
    }

    impl Drop for KeyringSession {
        fn drop(&mut self) {
            // GNOME Keyring leaves when its session bus goes away.
            let _ = self.bus.kill();
            let _ = self.bus.wait();
        }
    }
}
