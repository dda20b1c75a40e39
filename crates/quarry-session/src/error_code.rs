//! The [`ErrorCode`] of an error that went through `anyhow` on its way to a front end.

use quarry_core::{Coded, ErrorCode};

/// The kind of a failure: the first cause in `error`'s chain that is one of the library crates' errors
/// (or an I/O error of a full disk) and says more than [`ErrorCode::Other`]; `Other` when none does.
/// The CLI prints advice by it; the app replies it to the front end as `code`.
pub fn error_code(error: &anyhow::Error) -> ErrorCode {
    error.chain().map(cause_code).find(|code| *code != ErrorCode::Other).unwrap_or(ErrorCode::Other)
}

/// The code of one error, whichever library crate's type it is.
pub fn cause_code(cause: &(dyn std::error::Error + 'static)) -> ErrorCode {
    if let Some(e) = cause.downcast_ref::<quarry_store::StoreError>() {
        e.code()
    } else if let Some(e) = cause.downcast_ref::<quarry_core::ChatError>() {
        e.code()
    } else if let Some(e) = cause.downcast_ref::<quarry_agents::AgentError>() {
        e.code()
    } else if let Some(e) = cause.downcast_ref::<quarry_index::IndexError>() {
        e.code()
    } else if let Some(e) = cause.downcast_ref::<crate::SettingsError>() {
        e.code()
    } else if let Some(e) = cause.downcast_ref::<quarry_agents::ConversationError>() {
        e.code()
    } else if let Some(quarry_net::NetError::Offline { .. }) = cause.downcast_ref::<quarry_net::NetError>() {
        ErrorCode::Offline
    } else if cause.downcast_ref::<std::io::Error>().is_some_and(quarry_store::is_disk_full_io) {
        ErrorCode::DiskFull
    } else {
        ErrorCode::Other
    }
}
