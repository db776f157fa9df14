//! What the standard streams are connected to: a terminal (and how wide), or a pipe or file.
#![allow(unsafe_code)] // one ioctl to read the terminal's width

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
            .then(|| terminal_width(1))
            .map(|w| w.unwrap_or(100));
        let stderr_is_terminal = std::io::stderr().is_terminal();
        let stderr_width = stderr_is_terminal
            .then(|| terminal_width(2))
            .map(|w| w.unwrap_or(100));
        Terminal {
            stdout_width,
            stderr_is_terminal,
            stderr_width,
        }
    }
}

/// The width of the terminal on file descriptor `fd` (its window size, else `COLUMNS`).
fn terminal_width(fd: libc::c_int) -> Option<u16> {
    #[cfg(unix)]
    {
        let mut ws = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ writes one winsize into the struct we own; `fd` is the process's
        // stdout or stderr, open for the whole call (on any other descriptor it fails).
        let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
        if rc == 0 && ws.ws_col > 0 {
            return Some(ws.ws_col);
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|w| *w > 0)
}
