//! What the standard streams are connected to: a terminal (and how wide), or a pipe or file.

/// What the process's standard streams are connected to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal {
    /// The width of the terminal standard output is, or `None` for a pipe or a file.
    pub stdout_width: Option<u16>,
    /// Whether standard error is a terminal (progress bars are drawn only then).
    pub stderr_is_terminal: bool,
    /// The width of the terminal standard error is (notes and warnings wrap to it), or
    /// `None` for a pipe or a file.
    pub stderr_width: Option<u16>,
}

impl Terminal {
    /// The streams of this process.
    pub fn detect() -> Self {
        use std::io::IsTerminal;
        let stdout_width = std::io::stdout()
            .is_terminal()
            .then(|| terminal_width(window_width(std::io::stdout())))
            .map(|w| w.unwrap_or(100));
        let stderr_is_terminal = std::io::stderr().is_terminal();
        let stderr_width = stderr_is_terminal
            .then(|| terminal_width(window_width(std::io::stderr())))
            .map(|w| w.unwrap_or(100));
        Terminal {
            stdout_width,
            stderr_is_terminal,
            stderr_width,
        }
    }
}

/// The width of a terminal: its window's (`window`), else `COLUMNS`.
fn terminal_width(window: Option<u16>) -> Option<u16> {
    window.or_else(|| {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<u16>().ok())
            .filter(|w| *w > 0)
    })
}

/// The width of the window of the terminal `stream` is (TIOCGWINSZ), when it has one.
#[cfg(unix)]
fn window_width(stream: impl std::os::fd::AsFd) -> Option<u16> {
    rustix::termios::tcgetwinsize(stream)
        .ok()
        .map(|ws| ws.ws_col)
        .filter(|&w| w > 0)
}

/// No window size is read off Unix: `COLUMNS` gives the width.
#[cfg(not(unix))]
fn window_width<S>(_stream: S) -> Option<u16> {
    None
}
