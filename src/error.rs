//! Exit statuses and user-facing errors.

/// How a run ended; `main` turns it into the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: done, nothing to report at or above the failure threshold.
    Clean,
    /// 1: done, with findings.
    Findings,
    /// 2: the job could not be done (bad arguments, unreadable input, invalid topology).
    Error,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Clean => 0,
            ExitStatus::Findings => 1,
            ExitStatus::Error => 2,
        }
    }
}

/// An error meant for the user: what went wrong and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("{title}")]
pub struct UserError {
    /// One line: what went wrong, naming the file, line or flag.
    pub title: String,
    /// What to do instead.
    pub help: Option<String>,
}

impl UserError {
    /// An error with a hint.
    pub fn new(title: impl Into<String>, help: impl Into<String>) -> Self {
        UserError {
            title: title.into(),
            help: Some(help.into()),
        }
    }
}
