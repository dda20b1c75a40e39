//! API keys through a real Secret Service: a private D-Bus session bus with GNOME Keyring on it (both
//! installed by scripts/setup.sh), in a temporary home, so the person's own keyring is never touched.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

use quarry_secrets::test_session::KeyringSession;
use quarry_secrets::{delete, get, is_stored, set, Secret};

#[test]
fn keys_are_stored_in_the_secret_service_and_the_environment_wins() {
    let session = KeyringSession::start();
    // Only this test binary's process talks to the bus; set before the first keyring call.
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", session.address());
    std::env::remove_var("QUARRY_TAVILY_API_KEY");
    std::env::remove_var("QUARRY_BRAVE_API_KEY");

    assert_eq!(get(Secret::TavilyApiKey).unwrap(), None);
    assert!(!is_stored(Secret::TavilyApiKey).unwrap());
    set(Secret::TavilyApiKey, "  tvly-secret-1  ").unwrap();
    assert_eq!(get(Secret::TavilyApiKey).unwrap().as_deref(), Some("tvly-secret-1"));
    assert!(is_stored(Secret::TavilyApiKey).unwrap());
    set(Secret::TavilyApiKey, "tvly-secret-2").unwrap();
    assert_eq!(get(Secret::TavilyApiKey).unwrap().as_deref(), Some("tvly-secret-2"), "a second set replaces the key");
    assert_eq!(get(Secret::BraveApiKey).unwrap(), None, "keys are separate entries");

    std::env::set_var("QUARRY_TAVILY_API_KEY", "from-the-environment");
    assert_eq!(get(Secret::TavilyApiKey).unwrap().as_deref(), Some("from-the-environment"));
    std::env::remove_var("QUARRY_TAVILY_API_KEY");

    set(Secret::TavilyApiKey, "").unwrap(); // empty = delete
    assert_eq!(get(Secret::TavilyApiKey).unwrap(), None);
    delete(Secret::TavilyApiKey).unwrap(); // deleting nothing is fine
}

#[test]
fn names_parse_and_map_to_their_variables() {
    assert_eq!(Secret::parse("LLM"), Some(Secret::LlmApiKey));
    assert_eq!(Secret::parse("brave"), Some(Secret::BraveApiKey));
    assert_eq!(Secret::parse("openai"), None);
    assert_eq!(Secret::LlmApiKey.variable(), "QUARRY_LLM_API_KEY");
}
